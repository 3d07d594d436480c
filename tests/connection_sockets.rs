//! A connection that ends closes its sockets while the EPs and EVDs it used live on: the EVDs
//! a connection fed hold it only until it ends. In its own test binary, because it counts the
//! process's open sockets.

use dat::abi::*;
use dat::api::{ep::*, evd::*};

mod common;
use common::*;

/// The process's open sockets (the progress engine's own descriptors, made as the first
/// connection starts, are no sockets).
fn open_files() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .expect("/proc/self/fd")
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|target| target.to_string_lossy().starts_with("socket:"))
        .count()
}

#[test]
fn a_connection_that_ends_closes_its_sockets_while_its_evds_live_on() {
    let (a, p) = (Side::new(ALL_PRIV), Side::new(ALL_PRIV));
    let before = open_files();
    let (a, p) = connect_pair(a, p);
    // A message each way, polled: the connection is progressed from the EVDs it feeds.
    p.post_recv(&[p.iov(0, 8)], 1);
    a.post_recv(&[a.iov(0, 8)], 2);
    assert_eq!(a.post_send(&[a.iov(8, 8)], 3), OK);
    assert_eq!(polled(p.recv_evd).0, 1);
    assert_eq!(p.post_send(&[p.iov(8, 8)], 4), OK);
    assert_eq!(polled(a.recv_evd).0, 2);
    assert!(open_files() > before, "the connection has sockets");
    let graceful = dat_close_flags::DAT_CLOSE_GRACEFUL_FLAG as DAT_CLOSE_FLAGS;
    assert_eq!(unsafe { dat_ep_disconnect(a.ep, graceful) }, OK);
    assert_eq!(
        a.conn_event().0,
        dat_event_number::DAT_CONNECTION_EVENT_DISCONNECTED
    );
    assert_eq!(
        p.conn_event().0,
        dat_event_number::DAT_CONNECTION_EVENT_DISCONNECTED
    );
    // The connection finishes on its own time (a closing side reads the peer's last frames for
    // up to a second): wait for the sockets to close, boundedly.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while open_files() > before {
        assert!(
            std::time::Instant::now() < deadline,
            "{} sockets open, {before} before the connection",
            open_files()
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    // The EVDs are alive and usable.
    assert!(empty(a.recv_evd) && empty(p.recv_evd));
    let mut e: DAT_EVENT = zero();
    assert_eq!(unsafe { dat_evd_dequeue(a.req_evd, &mut e) }, OK);
}
