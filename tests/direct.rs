//! Direct access between processes of one host (`transport::tcp::direct`): a peer's RDMA
//! writes and reads, and its messages into our posted receives, land in our memory with no
//! thread of ours running, as on RDMA hardware; every access is checked as the socket path
//! checks it; messages keep their order whichever way each comes; and a region being freed is
//! reached by no peer once `dat_lmr_free` returns.
//!
//! The stopped peer is a child process (this test binary run again) stopped with SIGSTOP.

use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use dat::abi::*;
use dat::api::{cm::*, ep::*, lmr::*, pz::*};

mod common;
use common::*;

const DEFAULT: DAT_COMPLETION_FLAGS =
    dat_completion_flags::DAT_COMPLETION_DEFAULT_FLAG as DAT_COMPLETION_FLAGS;

fn pattern(i: usize) -> u8 {
    (i.wrapping_mul(7) + 3) as u8
}

/// What the stopped child is written: an odd length at an odd offset, over many pages.
const LEN: usize = 200_003;
const AT: usize = 7;
/// And the message it is sent, into a receive of two segments.
const MESSAGE: usize = 70_001;
const MESSAGE_AT: usize = 600_000;

/// Runs as the child of `writes_and_reads_land_in_a_peer_process_that_is_stopped`: accepts
/// one connection, prints its port and region, and once a message comes (after it was stopped
/// and continued) checks the bytes its peer wrote: exit status 0 when they are all there.
#[test]
fn stopped_peer_child() {
    if std::env::var_os("LIBDAT_TEST_STOPPED_CHILD").is_none() {
        return; // only the child does anything
    }
    let p = Side::with_buffer(ALL_PRIV, 1 << 20);
    let (_psp, port) = p.listen();
    // The message its parent sends while it is stopped, then the one after.
    p.post_recv(
        &[
            p.iov(MESSAGE_AT, 1),
            p.iov(MESSAGE_AT + 1, (MESSAGE - 1) as u32),
        ],
        1,
    );
    p.post_recv(&[p.iov(0, 16)], 2);
    p.tell_parent_and_accept(&format!("PEER {port} {} {}", p.addr(0), p.rmr_ctx));
    assert_eq!(
        p.conn_event().0,
        dat_event_number::DAT_CONNECTION_EVENT_ESTABLISHED
    );
    // The parent stops us here, writes and reads our memory, sends, continues us, and sends
    // again.
    assert_eq!(
        dto(p.recv_evd),
        (
            1,
            dat_dto_completion_status::DAT_DTO_SUCCESS,
            MESSAGE as u32,
            dat_dtos::DAT_DTO_RECEIVE
        )
    );
    assert_eq!(
        dto(p.recv_evd),
        (
            2,
            dat_dto_completion_status::DAT_DTO_SUCCESS,
            4,
            dat_dtos::DAT_DTO_RECEIVE
        )
    );
    let intact = (0..LEN).all(|i| p.buf[16 + AT + i] == pattern(i))
        && (0..MESSAGE).all(|i| p.buf[MESSAGE_AT + i] == pattern(i + 1));
    // The parent disconnects once its message completed.
    assert_eq!(
        p.conn_event().0,
        dat_event_number::DAT_CONNECTION_EVENT_DISCONNECTED
    );
    std::process::exit(if intact { 0 } else { 3 });
}

/// Kills the child if the test fails while it is stopped.
struct Child(std::process::Child);

impl Child {
    /// Stops the child (SIGSTOP): none of its threads runs until it is continued. Its pid.
    fn stop(&self) -> libc::pid_t {
        let pid = self.0.id() as libc::pid_t;
        let mut status = 0;
        unsafe {
            assert_eq!(libc::kill(pid, libc::SIGSTOP), 0);
            assert_eq!(libc::waitpid(pid, &mut status, libc::WUNTRACED), pid);
        }
        assert!(libc::WIFSTOPPED(status), "the child stopped");
        pid
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn writes_and_reads_land_in_a_peer_process_that_is_stopped() {
    if on_rdma() {
        return; // the TCP transport's alone
    }
    let mut child = Child(
        test_child("stopped_peer_child")
            .env("LIBDAT_TEST_STOPPED_CHILD", "1")
            .spawn()
            .unwrap(),
    );
    let said: Vec<u64> = child_says(&mut child.0, "PEER ")
        .split_whitespace()
        .map(|v| v.parse().unwrap())
        .collect();
    let (port, addr, rkey): (DAT_CONN_QUAL, DAT_VADDR, DAT_RMR_CONTEXT) =
        (said[0], said[1], said[2] as DAT_RMR_CONTEXT);
    let mut a = Side::with_buffer(ALL_PRIV, 1 << 20);
    assert_eq!(a.connect(port, b"", WAIT_US), OK);
    assert_eq!(
        a.conn_event().0,
        dat_event_number::DAT_CONNECTION_EVENT_ESTABLISHED
    );

    // The peer process stops: none of its threads runs until it is continued.
    let pid = child.stop();

    for i in 0..LEN {
        a.buf[i] = pattern(i);
    }
    // Three segments of odd lengths, written at an odd offset of the peer's region.
    let local = [
        a.iov(0, 1),
        a.iov(1, 65_535),
        a.iov(65_536, (LEN - 65_536) as u32),
    ];
    let remote = DAT_RMR_TRIPLET {
        rmr_context: rkey,
        virtual_address: addr + (16 + AT) as u64,
        segment_length: LEN as u32,
    };
    assert_eq!(
        unsafe {
            dat_ep_post_rdma_write(
                a.ep,
                3,
                local.as_ptr() as *mut _,
                cookie(1),
                &remote,
                DEFAULT,
            )
        },
        OK
    );
    assert_eq!(
        dto(a.req_evd),
        (
            1,
            dat_dto_completion_status::DAT_DTO_SUCCESS,
            LEN as u32,
            dat_dtos::DAT_DTO_RDMA_WRITE
        )
    );
    // And back, still stopped, into another part of our region.
    let into = [a.iov(300_000, LEN as u32)];
    assert_eq!(
        unsafe {
            dat_ep_post_rdma_read(
                a.ep,
                1,
                into.as_ptr() as *mut _,
                cookie(2),
                &remote,
                DEFAULT,
            )
        },
        OK
    );
    assert_eq!(
        dto(a.req_evd),
        (
            2,
            dat_dto_completion_status::DAT_DTO_SUCCESS,
            LEN as u32,
            dat_dtos::DAT_DTO_RDMA_READ
        )
    );
    assert!(
        (0..LEN).all(|i| a.buf[300_000 + i] == pattern(i)),
        "the read brought back what the write put there"
    );
    // A message, still stopped: it completes once it is in the child's receive.
    assert_eq!(
        unsafe {
            dat_ep_post_send(
                a.ep,
                1,
                [a.iov(1, MESSAGE as u32)].as_ptr() as *mut _,
                cookie(4),
                DEFAULT,
            )
        },
        OK
    );
    assert_eq!(
        dto(a.req_evd),
        (
            4,
            dat_dto_completion_status::DAT_DTO_SUCCESS,
            MESSAGE as u32,
            dat_dtos::DAT_DTO_SEND
        )
    );

    // Continued, the child finds its receive complete and the bytes in its memory when our
    // second message tells it to look.
    unsafe { assert_eq!(libc::kill(pid, libc::SIGCONT), 0) };
    assert_eq!(a.post_send(&[a.iov(0, 4)], 3), OK);
    assert_eq!(dto(a.req_evd).1, dat_dto_completion_status::DAT_DTO_SUCCESS);
    assert_eq!(
        unsafe {
            dat_ep_disconnect(
                a.ep,
                dat_close_flags::DAT_CLOSE_GRACEFUL_FLAG as DAT_CLOSE_FLAGS,
            )
        },
        OK
    );
    assert_eq!(
        a.conn_event().0,
        dat_event_number::DAT_CONNECTION_EVENT_DISCONNECTED
    );
    let exit = child.0.wait().unwrap();
    assert_eq!(exit.code(), Some(0), "the child found every byte written");
    a.buf[0] = 0;
}

#[test]
fn a_region_in_another_zone_of_the_peer_is_refused_and_untouched() {
    if on_rdma() {
        return;
    }
    let (mut a, mut p) = connected(ALL_PRIV);
    // A region of the peer's IA in a second protection zone: its EP may not reach it.
    let mut pz2 = null_mut();
    assert_eq!(unsafe { dat_pz_create(p.ia, &mut pz2) }, OK);
    let mut other = vec![0u8; 4096];
    let (mut lmr, mut lmr_ctx, mut rmr_ctx) = (null_mut(), 0, 0);
    let region = DAT_REGION_DESCRIPTION {
        for_va: other.as_mut_ptr() as DAT_PVOID,
    };
    let rc = unsafe {
        dat_lmr_create(
            p.ia,
            0,
            region,
            4096,
            pz2,
            ALL_PRIV,
            0,
            &mut lmr,
            &mut lmr_ctx,
            &mut rmr_ctx,
            null_mut(),
            null_mut(),
        )
    };
    assert_eq!(rc, OK);
    // The same EP reaches its own zone's region (the connection is usable)...
    a.buf[..8].fill(0xEE);
    let local = [a.iov(0, 8)];
    let mine = p.rmr(0, 8);
    assert_eq!(
        unsafe {
            dat_ep_post_rdma_write(a.ep, 1, local.as_ptr() as *mut _, cookie(1), &mine, DEFAULT)
        },
        OK
    );
    assert_eq!(dto(a.req_evd).1, dat_dto_completion_status::DAT_DTO_SUCCESS);
    assert_eq!(&p.buf[..8], &[0xEE; 8]);
    // ...and not the other zone's.
    let theirs = DAT_RMR_TRIPLET {
        rmr_context: rmr_ctx,
        virtual_address: other.as_ptr() as DAT_VADDR,
        segment_length: 8,
    };
    assert_eq!(
        unsafe {
            dat_ep_post_rdma_write(
                a.ep,
                1,
                local.as_ptr() as *mut _,
                cookie(2),
                &theirs,
                DEFAULT,
            )
        },
        OK
    );
    assert_eq!(
        dto(a.req_evd),
        (
            2,
            dat_dto_completion_status::DAT_DTO_ERR_REMOTE_ACCESS,
            0,
            dat_dtos::DAT_DTO_RDMA_WRITE
        )
    );
    assert_eq!(
        a.conn_event().0,
        dat_event_number::DAT_CONNECTION_EVENT_BROKEN
    );
    assert!(other.iter().all(|&b| b == 0), "nothing was written");
    assert_eq!(unsafe { dat_lmr_free(lmr) }, OK);
    assert_eq!(unsafe { dat_pz_free(pz2) }, OK);
    p.buf[0] = 0;
}

/// A handle moved to another thread (DAT handles are thread-safe).
#[derive(Clone, Copy)]
struct Handle(usize);
// SAFETY: a DAT handle is an opaque value the library checks on every call.
unsafe impl Send for Handle {}

#[test]
fn a_region_freed_while_its_peer_writes_to_it_is_never_written_after_the_free_returns() {
    if on_rdma() {
        return;
    }
    // Writes of the whole region: a free most likely comes in the middle of one's copy.
    const REGION: usize = 1 << 20;
    for _round in 0..20 {
        let (mut a, mut p) = connected_with_buffers(ALL_PRIV, REGION);
        a.buf.fill(0xAB);
        let written = Arc::new(AtomicU64::new(0));
        let freed = Arc::new(AtomicBool::new(false));
        let (ep, evd, local, remote) = (
            Handle(a.ep as usize),
            Handle(a.req_evd as usize),
            a.iov(0, REGION as u32),
            p.rmr(0, REGION as u32),
        );
        let (counter, after_free) = (written.clone(), freed.clone());
        // Writes, each waited for, until one fails (or, were the free not to stop them, a
        // thousand after it).
        let writer = std::thread::spawn(move || {
            let (ep, evd) = (ep.0 as DAT_EP_HANDLE, evd.0 as DAT_EVD_HANDLE);
            let mut landed_after_free = 0;
            for i in 0u64.. {
                if after_free.load(Ordering::Acquire) {
                    landed_after_free += 1;
                    if landed_after_free > 1000 {
                        return Some(dat_dto_completion_status::DAT_DTO_SUCCESS);
                    }
                }
                let iov = [local];
                if unsafe {
                    dat_ep_post_rdma_write(
                        ep,
                        1,
                        iov.as_ptr() as *mut _,
                        cookie(i),
                        &remote,
                        DEFAULT,
                    )
                } != OK
                {
                    return None;
                }
                let (_, status, _, _) = dto(evd);
                if status != dat_dto_completion_status::DAT_DTO_SUCCESS {
                    return Some(status);
                }
                counter.fetch_add(1, Ordering::Release);
            }
            None
        });
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while written.load(Ordering::Acquire) < 100 {
            assert!(std::time::Instant::now() < deadline, "the writes go on");
            std::thread::yield_now();
        }
        assert_eq!(unsafe { dat_lmr_free(p.lmr) }, OK);
        // From here on no write may land: whatever the peer does, these bytes stay.
        p.buf.fill(0x5A);
        freed.store(true, Ordering::Release);
        let ended = writer.join().unwrap();
        assert_eq!(
            ended,
            Some(dat_dto_completion_status::DAT_DTO_ERR_REMOTE_ACCESS),
            "a write after the free is refused"
        );
        assert!(
            p.buf.iter().all(|&b| b == 0x5A),
            "a write landed in a freed region"
        );
        a.buf[0] = 0;
    }
}

/// Messages land in the receives in the order they were sent, whichever way each comes: those
/// for the receives the peer published (the first 16 of its queue, while it does not poll) go
/// directly, the next ones by the socket, and those sent before their receive was posted wait
/// for it.
#[test]
fn messages_keep_their_order_whether_they_come_directly_or_by_the_socket() {
    if on_rdma() {
        return;
    }
    const N: usize = 48; // within the EVDs and the EP's default receive queue
    const SLOT: usize = 64;
    let (mut a, p) = connected_with_buffers(ALL_PRIV, N * SLOT);
    let posted = |from: usize, to: usize| {
        for i in from..to {
            let base = i * SLOT;
            // Every third receive in four segments, the rest in one.
            if i % 3 == 0 {
                let iov: Vec<_> = (0..4).map(|k| p.iov(base + k * 16, 16)).collect();
                p.post_recv(&iov, i as u64);
            } else {
                p.post_recv(&[p.iov(base, SLOT as u32)], i as u64);
            }
        }
    };
    // Receives for the first half only: the rest of the messages come before theirs.
    posted(0, N / 2);
    for i in 0..N {
        let len = 1 + i % 59;
        for k in 0..len {
            a.buf[i * SLOT + k] = (i * 31 + k) as u8;
        }
        assert_eq!(a.post_send(&[a.iov(i * SLOT, len as u32)], i as u64), OK);
        if i == N * 3 / 4 {
            posted(N / 2, N);
        }
    }
    for i in 0..N {
        let (c, status, len, _) = dto(p.recv_evd);
        assert_eq!(
            (c, status, len as usize),
            (
                i as u64,
                dat_dto_completion_status::DAT_DTO_SUCCESS,
                1 + i % 59
            ),
            "receive {i}"
        );
        assert!(
            (0..len as usize).all(|k| p.buf[i * SLOT + k] == (i * 31 + k) as u8),
            "message {i}'s bytes"
        );
    }
    for _ in 0..N {
        assert_eq!(dto(a.req_evd).1, dat_dto_completion_status::DAT_DTO_SUCCESS);
    }
    a.buf[0] = 0;
}

/// Runs as the child of `receives_of_two_connections_on_one_evd_complete_in_the_order_filled`:
/// two EPs whose receives complete on one EVD accept its parent's two connections (its first
/// EP the first); stopped meanwhile, it then prints the order its receives completed in.
#[test]
fn shared_receive_evd_child() {
    if std::env::var_os("LIBDAT_TEST_SHARED_EVD_CHILD").is_none() {
        return; // only the child does anything
    }
    use std::io::Write;
    let p = Side::new(ALL_PRIV);
    let conn_evd = create_evd(p.ia, 8, dat_evd_flags::DAT_EVD_CONNECTION_FLAG);
    let req_evd = create_evd(p.ia, 8, dat_evd_flags::DAT_EVD_DTO_FLAG);
    let second = p.ep_sharing_receives(req_evd, conn_evd);
    for i in 0..2 {
        p.post_recv(&[p.iov(i * 16, 16)], 1 + i as u64);
        let iov = [p.iov(64 + i * 16, 16)];
        let posted = unsafe {
            dat_ep_post_recv(
                second,
                1,
                iov.as_ptr() as *mut _,
                cookie(11 + i as u64),
                DEFAULT,
            )
        };
        assert_eq!(posted, OK);
    }
    let (_psp, port) = p.listen();
    println!("PEER {port}");
    std::io::stdout().flush().unwrap();
    for ep in [p.ep, second] {
        let (cr, _) = p.request();
        assert_eq!(unsafe { dat_cr_accept(cr, ep, 0, null_mut()) }, OK);
    }
    // The parent stops us once both are established, sends, and continues us.
    let order: Vec<String> = (0..4).map(|_| dto(p.recv_evd).0.to_string()).collect();
    println!("ORDER {}", order.join(" "));
    std::io::stdout().flush().unwrap();
    std::process::exit(0);
}

/// Two connections whose receives complete on one EVD, their messages put directly in a
/// stopped process's receives, each sent once the one before it completed (so its sender
/// knew the one before had arrived): the receives complete in that order, as a device's
/// completion queue has them, not one connection's after the other's.
#[test]
fn receives_of_two_connections_on_one_evd_complete_in_the_order_filled() {
    if on_rdma() {
        return; // the TCP transport's alone
    }
    let mut child = Child(
        test_child("shared_receive_evd_child")
            .env("LIBDAT_TEST_SHARED_EVD_CHILD", "1")
            .spawn()
            .unwrap(),
    );
    let port: DAT_CONN_QUAL = child_says(&mut child.0, "PEER ").parse().unwrap();
    let mut senders = [Side::new(ALL_PRIV), Side::new(ALL_PRIV)];
    for a in &senders {
        assert_eq!(a.connect(port, b"", WAIT_US), OK);
        assert_eq!(
            a.conn_event().0,
            dat_event_number::DAT_CONNECTION_EVENT_ESTABLISHED
        );
    }
    let pid = child.stop();
    // First, second, first, second: each completes while the child is stopped (the direct
    // path), before the next is posted.
    for (i, which) in [0, 1, 0, 1].into_iter().enumerate() {
        let a = &mut senders[which];
        a.buf[..4].copy_from_slice(&(i as u32).to_le_bytes());
        assert_eq!(a.post_send(&[a.iov(0, 4)], i as u64), OK);
        assert_eq!(dto(a.req_evd).1, dat_dto_completion_status::DAT_DTO_SUCCESS);
    }
    unsafe { assert_eq!(libc::kill(pid, libc::SIGCONT), 0) };
    assert_eq!(
        child_says(&mut child.0, "ORDER "),
        "1 11 2 12",
        "the order the child's receives completed in (cookies 1 and 2 the first \
         connection's, 11 and 12 the second's)"
    );
    assert_eq!(child.0.wait().unwrap().code(), Some(0));
}

/// A message that landed directly completes with its bytes when the connection ends right
/// behind it; the receives after it flush.
#[test]
fn messages_that_landed_directly_complete_before_the_rest_flush() {
    if on_rdma() {
        return;
    }
    let (mut a, p) = connected(ALL_PRIV);
    for i in 0..4 {
        p.post_recv(&[p.iov(i * 16, 16)], i as u64);
    }
    a.buf[..32].copy_from_slice(&[7u8; 32]);
    assert_eq!(a.post_send(&[a.iov(0, 16)], 10), OK);
    assert_eq!(a.post_send(&[a.iov(16, 16)], 11), OK);
    assert_eq!(dto(a.req_evd).1, dat_dto_completion_status::DAT_DTO_SUCCESS);
    assert_eq!(dto(a.req_evd).1, dat_dto_completion_status::DAT_DTO_SUCCESS);
    assert_eq!(
        unsafe {
            dat_ep_disconnect(
                a.ep,
                dat_close_flags::DAT_CLOSE_ABRUPT_FLAG as DAT_CLOSE_FLAGS,
            )
        },
        OK
    );
    assert_eq!(
        p.conn_event().0,
        dat_event_number::DAT_CONNECTION_EVENT_DISCONNECTED
    );
    for i in 0..2 {
        assert_eq!(
            dto(p.recv_evd),
            (
                i,
                dat_dto_completion_status::DAT_DTO_SUCCESS,
                16,
                dat_dtos::DAT_DTO_RECEIVE
            )
        );
    }
    for i in 2..4 {
        assert_eq!(
            dto(p.recv_evd),
            (
                i,
                dat_dto_completion_status::DAT_DTO_ERR_FLUSHED,
                0,
                dat_dtos::DAT_DTO_RECEIVE
            )
        );
    }
    assert_eq!(&p.buf[..32], &[7u8; 32]);
    a.buf[0] = 0;
}

/// Runs as the child of `a_peer_that_may_not_reach_us_falls_back_to_the_socket`, as another
/// user: it may not trace its parent (root), so it cannot take up its parent's offer, while its
/// parent may reach it. It accepts, takes a message naming a region of its parent's, writes
/// the message back there, and answers with a message of its own.
#[test]
fn other_user_child() {
    if std::env::var_os("LIBDAT_TEST_OTHER_USER_CHILD").is_none() {
        return;
    }
    let mut p = Side::new(ALL_PRIV);
    let (_psp, port) = p.listen();
    p.post_recv(&[p.iov(0, 64)], 1);
    p.tell_parent_and_accept(&format!("PORT {port}"));
    assert_eq!(
        p.conn_event().0,
        dat_event_number::DAT_CONNECTION_EVENT_ESTABLISHED
    );
    assert_eq!(
        dto(p.recv_evd),
        (
            1,
            dat_dto_completion_status::DAT_DTO_SUCCESS,
            64,
            dat_dtos::DAT_DTO_RECEIVE
        )
    );
    let word = |i: usize| u64::from_le_bytes(p.buf[i * 8..i * 8 + 8].try_into().unwrap());
    let remote = DAT_RMR_TRIPLET {
        rmr_context: word(0) as u32,
        virtual_address: word(1),
        segment_length: 64,
    };
    let iov = [p.iov(0, 64)];
    assert_eq!(
        unsafe {
            dat_ep_post_rdma_write(p.ep, 1, iov.as_ptr() as *mut _, cookie(2), &remote, DEFAULT)
        },
        OK
    );
    assert_eq!(dto(p.req_evd).1, dat_dto_completion_status::DAT_DTO_SUCCESS);
    p.buf[64..72].copy_from_slice(b"answered");
    assert_eq!(p.post_send(&[p.iov(64, 8)], 3), OK);
    assert_eq!(dto(p.req_evd).1, dat_dto_completion_status::DAT_DTO_SUCCESS);
    assert_eq!(
        p.conn_event().0,
        dat_event_number::DAT_CONNECTION_EVENT_DISCONNECTED
    );
    std::process::exit(0);
}

/// A peer that may not trace us (another user; Yama or seccomp refuse it the same way) cannot
/// take up our offer: its requests go by the socket, ours to it directly, and both arrive.
#[test]
fn a_peer_that_may_not_reach_us_falls_back_to_the_socket() {
    use std::os::unix::process::CommandExt;
    if on_rdma() || unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root, to run its peer as another user");
        return;
    }
    let mut child = Child(
        test_child("other_user_child")
            .env("LIBDAT_TEST_OTHER_USER_CHILD", "1")
            .uid(65534)
            .gid(65534)
            .spawn()
            .unwrap(),
    );
    let port: DAT_CONN_QUAL = child_says(&mut child.0, "PORT ").parse().unwrap();
    let mut a = Side::new(ALL_PRIV);
    a.post_recv(&[a.iov(1024, 8)], 1);
    assert_eq!(a.connect(port, b"", WAIT_US), OK);
    assert_eq!(
        a.conn_event().0,
        dat_event_number::DAT_CONNECTION_EVENT_ESTABLISHED
    );
    // Our region's key and address, and the rest of the message: what the child writes back.
    let (key, at) = (u64::from(a.rmr_ctx), a.addr(512));
    a.buf[..8].copy_from_slice(&key.to_le_bytes());
    a.buf[8..16].copy_from_slice(&at.to_le_bytes());
    for i in 16..64 {
        a.buf[i] = i as u8;
    }
    assert_eq!(a.post_send(&[a.iov(0, 64)], 2), OK);
    assert_eq!(dto(a.req_evd).1, dat_dto_completion_status::DAT_DTO_SUCCESS);
    assert_eq!(
        dto(a.recv_evd),
        (
            1,
            dat_dto_completion_status::DAT_DTO_SUCCESS,
            8,
            dat_dtos::DAT_DTO_RECEIVE
        )
    );
    assert_eq!(&a.buf[1024..1032], b"answered");
    assert_eq!(
        &a.buf[512..576],
        &a.buf[..64].to_vec()[..],
        "the child's write landed before its answer"
    );
    assert_eq!(
        unsafe {
            dat_ep_disconnect(
                a.ep,
                dat_close_flags::DAT_CLOSE_GRACEFUL_FLAG as DAT_CLOSE_FLAGS,
            )
        },
        OK
    );
    assert_eq!(
        a.conn_event().0,
        dat_event_number::DAT_CONNECTION_EVENT_DISCONNECTED
    );
    assert_eq!(child.0.wait().unwrap().code(), Some(0));
}
