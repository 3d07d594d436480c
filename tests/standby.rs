//! A thread that polls a connection takes it on lease, and the engine leaves it alone until the
//! thread hands it back or its lease runs out. Here a lease lasts an hour (`LIBDAT_LEASE_US`),
//! so a connection moves only if the thread keeps it moving while it polls other EVDs, or hands
//! it back when it goes to sleep. Each step fails after 10 s if neither happens.

use std::ptr::null_mut;

use dat::abi::*;
use dat::api::{cno::*, evd::*};

mod common;
use common::*;

const ROUNDS: u64 = 100;

/// `a` sends to `p` (each side polled in turn: `a`'s completion needs the acknowledgement `p`
/// holds), then `p` replies and the thread waits on `a`'s receive EVD: `a` handles the reply
/// while it spins and holds the acknowledgement for a request to ride on. The thread then polls
/// only `p`'s request EVD, whose completion needs that acknowledgement.
fn polls_elsewhere(a: &Side, p: &Side, n: u64) {
    let ok = dat_dto_completion_status::DAT_DTO_SUCCESS;
    a.post_recv(&[a.iov(0, 64)], n);
    p.post_recv(&[p.iov(0, 64)], n);
    assert_eq!(a.post_send(&[a.iov(64, 8)], n), OK);
    assert_eq!(polled(p.recv_evd), (n, ok, 8));
    assert_eq!(polled(a.req_evd), (n, ok, 8));
    assert_eq!(p.post_send(&[p.iov(64, 8)], n), OK);
    assert_eq!(dto(a.recv_evd).0, n);
    assert_eq!(polled(p.req_evd), (n, ok, 8));
}

/// `p` polls in `a`'s send and holds the acknowledgement; the thread then sleeps on a CNO that
/// only `a`'s send completion triggers.
fn sleeps_elsewhere(a: &Side, p: &Side, cno: DAT_CNO_HANDLE, n: u64) {
    let ok = dat_dto_completion_status::DAT_DTO_SUCCESS;
    p.post_recv(&[p.iov(0, 64)], n);
    assert_eq!(a.post_send(&[a.iov(64, 8)], n), OK);
    assert_eq!(polled(p.recv_evd), (n, ok, 8));
    let mut triggered = null_mut();
    assert_eq!(unsafe { dat_cno_wait(cno, WAIT_US, &mut triggered) }, OK);
    assert_eq!(triggered, a.req_evd);
    assert_eq!(polled(a.req_evd), (n, ok, 8));
}

#[test]
fn a_polling_thread_keeps_its_connections_moving_or_hands_them_back() {
    // Read once, as the first lease starts.
    std::env::set_var("LIBDAT_LEASE_US", "3600000000");
    let (a, p) = connected(ALL_PRIV);
    for n in 0..ROUNDS {
        polls_elsewhere(&a, &p, n);
    }
    let mut cno = null_mut();
    assert_eq!(unsafe { dat_cno_create(a.ia, zero(), &mut cno) }, OK);
    assert_eq!(unsafe { dat_evd_modify_cno(a.req_evd, cno) }, OK);
    for n in 0..ROUNDS {
        sleeps_elsewhere(&a, &p, cno, n);
    }
}
