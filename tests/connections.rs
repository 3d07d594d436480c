//! Connections and DTOs over the TCP transport on loopback, through the exported functions:
//! every connection event (ESTABLISHED, PEER_REJECTED, NON_PEER_REJECTED, TIMED_OUT,
//! ACCEPT_COMPLETION_ERROR, DISCONNECTED, BROKEN), the states they lead to, the flush of
//! posted DTOs, and the DTO error cases (remote access, receive too small, freed LMR).
//!
//! A peer process that dies is a child process (this test binary run again) killed with
//! SIGKILL; a peer that breaks the protocol is a raw TCP socket.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::ptr::null_mut;

use dat::abi::*;
use dat::api::{cm::*, ep::*, evd::*, ia::*, lmr::*, rmr::*, srq::*};
use dat::error::{DatError, Sub, Type};
use dat::objects::lmr::{PRIV_REMOTE_READ, PRIV_REMOTE_WRITE};
use dat::transport::tcp::wire::{Header, Op, HEADER_LEN};

mod common;
use common::*;

#[test]
fn send_lands_in_a_multi_segment_receive_and_zero_length_messages_arrive() {
    let (mut a, mut p) = connected(ALL_PRIV);
    p.post_recv(&[p.iov(0, 3), p.iov(100, 20)], 1);
    p.post_recv(&[p.iov(200, 8)], 2);
    a.buf[..11].copy_from_slice(b"hello world");
    assert_eq!(a.post_send(&[a.iov(0, 5), a.iov(5, 6)], 10), OK);
    assert_eq!(a.post_send(&[], 11), OK);
    assert_eq!(
        dto(a.req_evd),
        (
            10,
            dat_dto_completion_status::DAT_DTO_SUCCESS,
            11,
            dat_dtos::DAT_DTO_SEND
        )
    );
    assert_eq!(
        dto(a.req_evd),
        (
            11,
            dat_dto_completion_status::DAT_DTO_SUCCESS,
            0,
            dat_dtos::DAT_DTO_SEND
        )
    );
    assert_eq!(
        dto(p.recv_evd),
        (
            1,
            dat_dto_completion_status::DAT_DTO_SUCCESS,
            11,
            dat_dtos::DAT_DTO_RECEIVE
        )
    );
    assert_eq!(
        dto(p.recv_evd),
        (
            2,
            dat_dto_completion_status::DAT_DTO_SUCCESS,
            0,
            dat_dtos::DAT_DTO_RECEIVE
        )
    );
    assert_eq!(&p.buf[..3], b"hel");
    assert_eq!(&p.buf[100..108], b"lo world");
    p.buf[0] = 0; // the buffers stay ours
    a.buf[0] = 0;
}

/// Writes a's byte at `src` into p's byte 3000 by an RDMA write posted behind what a sent
/// before, and waits until it is there: then all of that is in p's hands too (one stream, in
/// order), received or kept.
fn mark_arrival(a: &Side, p: &Side, src: usize, write_cookie: u64) {
    let flags = dat_completion_flags::DAT_COMPLETION_DEFAULT_FLAG as DAT_COMPLETION_FLAGS;
    let (local, remote) = ([a.iov(src, 1)], p.rmr(3000, 1));
    assert_eq!(
        unsafe {
            dat_ep_post_rdma_write(
                a.ep,
                1,
                local.as_ptr() as *mut _,
                cookie(write_cookie),
                &remote,
                flags,
            )
        },
        OK
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    // SAFETY: a byte of p's registered buffer, written by the transport; read as memory.
    while unsafe { std::ptr::read_volatile(p.buf.as_ptr().add(3000)) } != a.buf[src] {
        assert!(
            std::time::Instant::now() < deadline,
            "the RDMA write never landed"
        );
        std::hint::spin_loop();
    }
}

#[test]
fn a_message_sent_before_its_receive_is_posted_waits_for_it_and_so_does_its_sender() {
    let (mut a, mut p) = connected(ALL_PRIV);
    a.buf[..4].copy_from_slice(b"late");
    a.buf[8] = 0xab;
    assert_eq!(a.post_send(&[a.iov(0, 4)], 1), OK);
    mark_arrival(&a, &p, 8, 2);
    // p answers with a message of its own, which leaves behind every acknowledgement p could
    // give by then: once a has it, a would also know of the kept message had p acknowledged it.
    a.post_recv(&[a.iov(100, 16)], 3);
    p.buf[2000..2002].copy_from_slice(b"ok");
    assert_eq!(p.post_send(&[p.iov(2000, 2)], 4), OK);
    assert_eq!(
        dto(a.recv_evd),
        (
            3,
            dat_dto_completion_status::DAT_DTO_SUCCESS,
            2,
            dat_dtos::DAT_DTO_RECEIVE
        )
    );
    // A verbs QP retries a send until a receive takes it: neither it nor the write behind it
    // has completed.
    assert!(empty(a.req_evd));
    assert!(empty(p.recv_evd));
    p.post_recv(&[p.iov(64, 16)], 5);
    assert_eq!(
        dto(p.recv_evd),
        (
            5,
            dat_dto_completion_status::DAT_DTO_SUCCESS,
            4,
            dat_dtos::DAT_DTO_RECEIVE
        )
    );
    assert_eq!(&p.buf[64..68], b"late");
    assert_eq!(
        dto(a.req_evd),
        (
            1,
            dat_dto_completion_status::DAT_DTO_SUCCESS,
            4,
            dat_dtos::DAT_DTO_SEND
        )
    );
    assert_eq!(
        dto(a.req_evd),
        (
            2,
            dat_dto_completion_status::DAT_DTO_SUCCESS,
            1,
            dat_dtos::DAT_DTO_RDMA_WRITE
        )
    );
    assert_eq!(dto(p.req_evd).0, 4);
    a.buf[0] = 0;
}

#[test]
fn a_message_that_arrives_before_any_shared_receive_waits_for_one() {
    let (a, mut p) = (Side::new(ALL_PRIV), Side::new(ALL_PRIV));
    // p's EP draws its receives from an SRQ.
    let srq = p.move_to_srq(8, 2);
    let (mut a, mut p) = connect_pair(a, p);
    a.buf[..5].copy_from_slice(b"early");
    a.buf[8] = 0xcd;
    assert_eq!(a.post_send(&[a.iov(0, 5)], 1), OK);
    mark_arrival(&a, &p, 8, 2);
    // The message waits for a shared receive (it used to break the connection).
    let iov = [p.iov(64, 16)];
    assert_eq!(
        unsafe { dat_srq_post_recv(srq, 1, iov.as_ptr() as *mut _, cookie(5)) },
        OK
    );
    assert_eq!(
        dto(p.recv_evd),
        (
            5,
            dat_dto_completion_status::DAT_DTO_SUCCESS,
            5,
            dat_dtos::DAT_DTO_RECEIVE
        )
    );
    assert_eq!(&p.buf[64..69], b"early");
    assert_eq!(
        dto(a.req_evd),
        (
            1,
            dat_dto_completion_status::DAT_DTO_SUCCESS,
            5,
            dat_dtos::DAT_DTO_SEND
        )
    );
    assert_eq!(dto(a.req_evd).1, dat_dto_completion_status::DAT_DTO_SUCCESS);
    // Later messages take the shared receives directly.
    assert_eq!(
        unsafe { dat_srq_post_recv(srq, 1, iov.as_ptr() as *mut _, cookie(6)) },
        OK
    );
    assert_eq!(a.post_send(&[a.iov(0, 3)], 3), OK);
    assert_eq!(
        dto(p.recv_evd),
        (
            6,
            dat_dto_completion_status::DAT_DTO_SUCCESS,
            3,
            dat_dtos::DAT_DTO_RECEIVE
        )
    );
    p.buf[0] = 0;
    a.buf[0] = 0;
}

#[test]
fn a_stream_of_messages_lands_in_order_while_receives_are_posted_behind_it() {
    // The receiver sleeps in dat_evd_wait and reposts each receive as it completes, so
    // messages often arrive before their receive: kept ones land from the consumer's thread
    // as it posts, the others from the progress engine.
    const WINDOW: u64 = 16;
    const SLOT: usize = 64 << 10;
    const MESSAGES: u64 = 2000;
    let (a, mut p) = connected_with_buffers(ALL_PRIV, 2 * WINDOW as usize * SLOT);
    let byte = |n: u64| (n % 251) as u8;
    for n in 0..WINDOW {
        p.post_recv(&[p.iov(n as usize * SLOT, SLOT as u32)], n);
    }
    // The sender in its own thread; handles and addresses cross as integers.
    let (ep, req_evd, lmr_ctx, base) = (
        a.ep as usize,
        a.req_evd as usize,
        a.lmr_ctx,
        a.addr(WINDOW as usize * SLOT) as usize,
    );
    let sender = std::thread::spawn(move || {
        let flags = dat_completion_flags::DAT_COMPLETION_DEFAULT_FLAG as DAT_COMPLETION_FLAGS;
        let mut done = 0;
        for n in 0..MESSAGES {
            if n >= WINDOW {
                let (c, status, ..) = dto(req_evd as DAT_EVD_HANDLE);
                assert_eq!(
                    (c, status),
                    (done, dat_dto_completion_status::DAT_DTO_SUCCESS)
                );
                done += 1;
            }
            let at = base + (n % WINDOW) as usize * SLOT;
            // SAFETY: a slot of a's registered buffer that no send in flight uses.
            unsafe { std::slice::from_raw_parts_mut(at as *mut u8, SLOT) }.fill(byte(n));
            let iov = [DAT_LMR_TRIPLET {
                lmr_context: lmr_ctx,
                virtual_address: at as DAT_VADDR,
                segment_length: SLOT as u32,
            }];
            assert_eq!(
                unsafe {
                    dat_ep_post_send(
                        ep as DAT_EP_HANDLE,
                        1,
                        iov.as_ptr() as *mut _,
                        cookie(n),
                        flags,
                    )
                },
                OK
            );
        }
        while done < MESSAGES {
            assert_eq!(dto(req_evd as DAT_EVD_HANDLE).0, done);
            done += 1;
        }
    });
    for n in 0..MESSAGES {
        assert_eq!(
            dto(p.recv_evd),
            (
                n,
                dat_dto_completion_status::DAT_DTO_SUCCESS,
                SLOT as u32,
                dat_dtos::DAT_DTO_RECEIVE
            )
        );
        let slot = (n % WINDOW) as usize * SLOT;
        // A slice comparison (memcmp) keeps the debug build quick.
        assert!(
            p.buf[slot..slot + SLOT] == [byte(n); SLOT][..],
            "message {n} arrived wrong"
        );
        p.post_recv(&[p.iov(slot, SLOT as u32)], n + WINDOW);
    }
    sender.join().unwrap();
    p.buf[0] = 0;
    drop(a);
}

#[test]
fn messages_polled_with_dequeue_complete_in_order_however_many_a_poll_finds() {
    // The receiver polls: each dequeue handles every frame waiting in the socket, hands the
    // first completion straight back and queues the rest. The sender keeps a window of small
    // messages in flight, so polls often find several.
    const WINDOW: u64 = 16;
    const SLOT: usize = 64;
    const MESSAGES: u64 = 5000;
    let (a, p) = connected_with_buffers(ALL_PRIV, 2 * WINDOW as usize * SLOT);
    for n in 0..WINDOW {
        p.post_recv(&[p.iov(n as usize * SLOT, SLOT as u32)], n);
    }
    let (ep, req_evd, lmr_ctx, base) = (
        a.ep as usize,
        a.req_evd as usize,
        a.lmr_ctx,
        a.addr(WINDOW as usize * SLOT) as usize,
    );
    let sender = std::thread::spawn(move || {
        let flags = dat_completion_flags::DAT_COMPLETION_DEFAULT_FLAG as DAT_COMPLETION_FLAGS;
        for n in 0..MESSAGES {
            if n >= WINDOW {
                assert_eq!(dto(req_evd as DAT_EVD_HANDLE).0, n - WINDOW);
            }
            let at = base + (n % WINDOW) as usize * SLOT;
            // SAFETY: a slot of a's registered buffer that no send in flight uses.
            unsafe { std::slice::from_raw_parts_mut(at as *mut u8, SLOT) }.fill((n % 251) as u8);
            let iov = [DAT_LMR_TRIPLET {
                lmr_context: lmr_ctx,
                virtual_address: at as DAT_VADDR,
                segment_length: SLOT as u32,
            }];
            assert_eq!(
                unsafe {
                    dat_ep_post_send(
                        ep as DAT_EP_HANDLE,
                        1,
                        iov.as_ptr() as *mut _,
                        cookie(n),
                        flags,
                    )
                },
                OK
            );
        }
        for n in MESSAGES - WINDOW..MESSAGES {
            assert_eq!(dto(req_evd as DAT_EVD_HANDLE).0, n);
        }
    });
    for n in 0..MESSAGES {
        assert_eq!(
            polled(p.recv_evd),
            (n, dat_dto_completion_status::DAT_DTO_SUCCESS, SLOT as u32),
            "message {n}"
        );
        let slot = (n % WINDOW) as usize * SLOT;
        assert!(
            p.buf[slot..slot + SLOT]
                .iter()
                .all(|b| *b == (n % 251) as u8),
            "message {n} arrived wrong"
        );
        p.post_recv(&[p.iov(slot, SLOT as u32)], n + WINDOW);
    }
    sender.join().unwrap();
    drop(a);
}

/// A connected pair whose first side sent 8 bytes with its completion suppressed (cookie 9),
/// received by the other.
fn suppressed_send_received() -> (Side, Side) {
    let (a, p) = connected(ALL_PRIV);
    p.post_recv(&[p.iov(0, 64)], 1);
    let flags = dat_completion_flags::DAT_COMPLETION_SUPPRESS_FLAG as DAT_COMPLETION_FLAGS;
    let iov = [a.iov(0, 8)];
    assert_eq!(
        unsafe { dat_ep_post_send(a.ep, 1, iov.as_ptr() as *mut _, cookie(9), flags) },
        OK
    );
    assert_eq!(
        dto(p.recv_evd).1,
        dat_dto_completion_status::DAT_DTO_SUCCESS
    );
    (a, p)
}

#[test]
fn suppressed_completions_are_not_reported_but_errors_are() {
    let (a, p) = suppressed_send_received();
    let iov = [a.iov(0, 8)];
    // A signalled send after it completes after it: the suppressed one left no event.
    p.post_recv(&[p.iov(0, 64)], 2);
    assert_eq!(a.post_send(&iov, 10), OK);
    assert_eq!(dto(a.req_evd).0, 10);
    // UNSIGNALLED needs the EP's permission.
    let unsignalled = dat_completion_flags::DAT_COMPLETION_UNSIGNALLED_FLAG as DAT_COMPLETION_FLAGS;
    let rc = unsafe { dat_ep_post_send(a.ep, 1, iov.as_ptr() as *mut _, cookie(11), unsignalled) };
    assert_eq!(rc, DatError::invalid_arg(5).code());
}

#[test]
fn a_suppressed_send_that_landed_is_not_flushed_by_the_disconnect_after_it() {
    // A verbs device reports nothing of a suppressed success (OpenFabrics posts it
    // unsignalled): the end of the connection must still learn it finished, not flush it.
    let (a, p) = suppressed_send_received();
    let graceful = dat_close_flags::DAT_CLOSE_GRACEFUL_FLAG as DAT_CLOSE_FLAGS;
    assert_eq!(unsafe { dat_ep_disconnect(p.ep, graceful) }, OK);
    assert_eq!(
        p.conn_event().0,
        dat_event_number::DAT_CONNECTION_EVENT_DISCONNECTED
    );
    assert_eq!(
        a.conn_event().0,
        dat_event_number::DAT_CONNECTION_EVENT_DISCONNECTED
    );
    let mut e: DAT_EVENT = zero();
    assert_eq!(
        unsafe { dat_evd_dequeue(a.req_evd, &mut e) },
        DatError::bare(Type::DAT_QUEUE_EMPTY).code()
    );
}

#[test]
fn unsignalled_completions_are_queued_for_the_next_dequeue() {
    // UNSIGNALLED is "non-notification completion": the event is queued (it wakes no
    // waiter), unlike SUPPRESS, which drops a success.
    let mut a = Side::with_buffer(ALL_PRIV, 4096);
    let unsignalled = dat_completion_flags::DAT_COMPLETION_UNSIGNALLED_FLAG as DAT_COMPLETION_FLAGS;
    let mut param: DAT_EP_PARAM = zero();
    param.ep_attr = dat::objects::ep::default_attr();
    param.ep_attr.request_completion_flags = unsignalled;
    assert_eq!(
        unsafe {
            dat_ep_modify(
                a.ep,
                DAT_EP_FIELD_EP_ATTR_REQUEST_COMPLETION_FLAGS as DAT_EP_PARAM_MASK,
                &param,
            )
        },
        OK
    );
    a.buf[..4].copy_from_slice(b"ping");
    let (a, p) = connect_pair(a, Side::with_buffer(ALL_PRIV, 4096));
    p.post_recv(&[p.iov(0, 64)], 1);
    let iov = [a.iov(0, 4)];
    assert_eq!(
        unsafe { dat_ep_post_send(a.ep, 1, iov.as_ptr() as *mut _, cookie(11), unsignalled) },
        OK
    );
    assert_eq!(
        dto(p.recv_evd),
        (
            1,
            dat_dto_completion_status::DAT_DTO_SUCCESS,
            4,
            dat_dtos::DAT_DTO_RECEIVE
        )
    );
    assert_eq!(&p.buf[..4], b"ping");
    let deadline = std::time::Instant::now() + std::time::Duration::from_micros(WAIT_US as u64);
    let mut e: DAT_EVENT = zero();
    loop {
        let rc = unsafe { dat_evd_dequeue(a.req_evd, &mut e) };
        if rc == OK {
            break;
        }
        assert_eq!(rc, DatError::bare(Type::DAT_QUEUE_EMPTY).code());
        assert!(
            std::time::Instant::now() < deadline,
            "the unsignalled send's completion never came"
        );
    }
    let d = unsafe { e.event_data.dto_completion_event_data };
    assert_eq!(unsafe { d.user_cookie.as_64 }, 11);
    assert_eq!(
        d.status,
        dat_dto_completion_status::DAT_DTO_SUCCESS as DAT_DTO_COMPLETION_STATUS
    );
    assert_eq!(d.operation, dat_dtos::DAT_DTO_SEND as DAT_DTOS);
}

#[test]
fn rdma_write_and_read_move_data_within_the_remote_region() {
    let (mut a, mut p) = connected(ALL_PRIV);
    a.buf[..6].copy_from_slice(b"abcdef");
    p.buf[1000..1004].copy_from_slice(b"WXYZ");
    let flags = dat_completion_flags::DAT_COMPLETION_DEFAULT_FLAG as DAT_COMPLETION_FLAGS;
    let local = [a.iov(0, 3), a.iov(3, 3)];
    let remote = p.rmr(500, 6);
    assert_eq!(
        unsafe {
            dat_ep_post_rdma_write(a.ep, 2, local.as_ptr() as *mut _, cookie(1), &remote, flags)
        },
        OK
    );
    assert_eq!(
        dto(a.req_evd),
        (
            1,
            dat_dto_completion_status::DAT_DTO_SUCCESS,
            6,
            dat_dtos::DAT_DTO_RDMA_WRITE
        )
    );
    assert_eq!(&p.buf[500..506], b"abcdef");
    let into = [a.iov(2000, 4)];
    let from = p.rmr(1000, 4);
    assert_eq!(
        unsafe { dat_ep_post_rdma_read(a.ep, 1, into.as_ptr() as *mut _, cookie(2), &from, flags) },
        OK
    );
    assert_eq!(
        dto(a.req_evd),
        (
            2,
            dat_dto_completion_status::DAT_DTO_SUCCESS,
            4,
            dat_dtos::DAT_DTO_RDMA_READ
        )
    );
    assert_eq!(&a.buf[2000..2004], b"WXYZ");
    a.buf[0] = 0;
    p.buf[0] = 0;
}

/// A fenced request waits for the RDMA reads posted before it, and the requests behind it
/// wait for it: a write and a send of what a read brought carry the read's bytes, a fenced
/// read comes after the write it follows, and a graceful disconnect goes after all of them.
#[test]
fn fenced_requests_carry_what_the_reads_before_them_brought() {
    const MB: usize = 1 << 20;
    const TAIL: usize = 4096;
    let (mut a, mut p) = connected_with_buffers(ALL_PRIV, 3 * MB);
    for (i, b) in p.buf[..MB].iter_mut().enumerate() {
        *b = (i % 251) as u8 + 1;
    }
    let default = dat_completion_flags::DAT_COMPLETION_DEFAULT_FLAG as DAT_COMPLETION_FLAGS;
    let fence = dat_completion_flags::DAT_COMPLETION_BARRIER_FENCE_FLAG as DAT_COMPLETION_FLAGS;
    p.post_recv(&[p.iov(MB, TAIL as u32)], 7);
    // A read long enough to be in flight while the others are posted.
    let (into, from) = ([a.iov(0, MB as u32)], p.rmr(0, MB as u32));
    assert_eq!(
        unsafe {
            dat_ep_post_rdma_read(a.ep, 1, into.as_ptr() as *mut _, cookie(1), &from, default)
        },
        OK
    );
    // Its last bytes: written back fenced, then sent plainly behind the fenced write.
    let (tail, to) = ([a.iov(MB - TAIL, TAIL as u32)], p.rmr(2 * MB, TAIL as u32));
    assert_eq!(
        unsafe { dat_ep_post_rdma_write(a.ep, 1, tail.as_ptr() as *mut _, cookie(2), &to, fence) },
        OK
    );
    assert_eq!(a.post_send(&tail, 3), OK);
    // A fenced read of what the write put there.
    let (back, written) = ([a.iov(2 * MB, TAIL as u32)], p.rmr(2 * MB, TAIL as u32));
    assert_eq!(
        unsafe {
            dat_ep_post_rdma_read(a.ep, 1, back.as_ptr() as *mut _, cookie(4), &written, fence)
        },
        OK
    );
    let graceful = dat_close_flags::DAT_CLOSE_GRACEFUL_FLAG as DAT_CLOSE_FLAGS;
    assert_eq!(unsafe { dat_ep_disconnect(a.ep, graceful) }, OK);
    let ok = dat_dto_completion_status::DAT_DTO_SUCCESS;
    assert_eq!(
        dto(a.req_evd),
        (1, ok, MB as u32, dat_dtos::DAT_DTO_RDMA_READ)
    );
    assert_eq!(
        dto(a.req_evd),
        (2, ok, TAIL as u32, dat_dtos::DAT_DTO_RDMA_WRITE)
    );
    assert_eq!(dto(a.req_evd), (3, ok, TAIL as u32, dat_dtos::DAT_DTO_SEND));
    assert_eq!(
        dto(a.req_evd),
        (4, ok, TAIL as u32, dat_dtos::DAT_DTO_RDMA_READ)
    );
    assert_eq!(
        dto(p.recv_evd),
        (7, ok, TAIL as u32, dat_dtos::DAT_DTO_RECEIVE)
    );
    assert_eq!(
        a.conn_event().0,
        dat_event_number::DAT_CONNECTION_EVENT_DISCONNECTED
    );
    let expected = &p.buf[MB - TAIL..MB];
    assert!(
        a.buf[..MB] == p.buf[..MB],
        "the read brought the peer's bytes"
    );
    assert!(
        &p.buf[2 * MB..2 * MB + TAIL] == expected,
        "the fenced write carried what the read brought"
    );
    assert!(
        &p.buf[MB..MB + TAIL] == expected,
        "the send behind it carried the same"
    );
    assert!(
        &a.buf[2 * MB..2 * MB + TAIL] == expected,
        "the fenced read came after the write"
    );
    a.buf[0] = 0;
}

#[test]
fn rdma_write_past_the_end_of_the_remote_region_is_a_remote_access_error_and_breaks_the_connection()
{
    let (mut a, p) = connected(ALL_PRIV);
    p.post_recv(&[p.iov(0, 64)], 7);
    a.buf[..16].fill(0xEE);
    let flags = dat_completion_flags::DAT_COMPLETION_DEFAULT_FLAG as DAT_COMPLETION_FLAGS;
    let local = [a.iov(0, 16)];
    let remote = p.rmr(4090, 16); // 10 bytes beyond the 4096-byte region
    assert_eq!(
        unsafe {
            dat_ep_post_rdma_write(a.ep, 1, local.as_ptr() as *mut _, cookie(3), &remote, flags)
        },
        OK
    );
    assert_eq!(
        dto(a.req_evd),
        (
            3,
            dat_dto_completion_status::DAT_DTO_ERR_REMOTE_ACCESS,
            0,
            dat_dtos::DAT_DTO_RDMA_WRITE
        )
    );
    assert_eq!(
        a.conn_event().0,
        dat_event_number::DAT_CONNECTION_EVENT_BROKEN
    );
    let target_end = p.conn_event().0;
    // Over RDMA the target hears BROKEN where its device reports the access error to it (an
    // async event); soft-RoCE reports none, and the initiator's disconnect ends it.
    if on_rdma() && target_end == dat_event_number::DAT_CONNECTION_EVENT_DISCONNECTED {
        eprintln!("the target's device reported no access error: DISCONNECTED");
    } else {
        assert_eq!(target_end, dat_event_number::DAT_CONNECTION_EVENT_BROKEN);
    }
    assert_eq!(
        dto(p.recv_evd),
        (
            7,
            dat_dto_completion_status::DAT_DTO_ERR_FLUSHED,
            0,
            dat_dtos::DAT_DTO_RECEIVE
        )
    );
    assert!(p.buf[4090..].iter().all(|&b| b == 0), "nothing was written");
    assert_eq!(a.state(), dat_ep_state::DAT_EP_STATE_DISCONNECTED);
    a.buf[0] = 0;
}

#[test]
fn a_region_without_remote_privilege_refuses_rdma() {
    let (a, p) = connected(LOCAL_PRIV);
    let flags = dat_completion_flags::DAT_COMPLETION_DEFAULT_FLAG as DAT_COMPLETION_FLAGS;
    let into = [a.iov(0, 8)];
    // The LMR has no rmr_context; the peer names the lmr_context instead.
    let from = DAT_RMR_TRIPLET {
        rmr_context: p.lmr_ctx,
        virtual_address: p.addr(0),
        segment_length: 8,
    };
    assert_eq!(
        unsafe { dat_ep_post_rdma_read(a.ep, 1, into.as_ptr() as *mut _, cookie(4), &from, flags) },
        OK
    );
    assert_eq!(
        dto(a.req_evd).1,
        dat_dto_completion_status::DAT_DTO_ERR_REMOTE_ACCESS
    );
    assert_eq!(
        a.conn_event().0,
        dat_event_number::DAT_CONNECTION_EVENT_BROKEN
    );
}

#[test]
fn a_receive_too_small_completes_with_a_length_error() {
    let (a, p) = connected(ALL_PRIV);
    p.post_recv(&[p.iov(0, 4)], 1);
    assert_eq!(a.post_send(&[a.iov(0, 100)], 2), OK);
    let (cookie, status, length, op) = dto(p.recv_evd);
    assert_eq!((cookie, length, op), (1, 0, dat_dtos::DAT_DTO_RECEIVE));
    // A length error; soft-RoCE reports it as a local QP operation error (DAT_DTO_ERR_LOCAL_EP).
    let rxe_status = on_rdma() && status == dat_dto_completion_status::DAT_DTO_ERR_LOCAL_EP;
    assert!(
        status == dat_dto_completion_status::DAT_DTO_ERR_LOCAL_LENGTH || rxe_status,
        "{status:?}"
    );
    let (_, status, _, _) = dto(a.req_evd);
    assert_ne!(status, dat_dto_completion_status::DAT_DTO_SUCCESS);
    assert_eq!(
        p.conn_event().0,
        dat_event_number::DAT_CONNECTION_EVENT_BROKEN
    );
}

#[test]
fn posting_from_a_freed_lmr_is_refused() {
    let (a, _p) = connected(ALL_PRIV);
    let iov = [a.iov(0, 8)];
    assert_eq!(unsafe { dat_lmr_free(a.lmr) }, OK);
    let rc = a.post_send(&iov, 1);
    assert_eq!(
        rc,
        DatError::new(Type::DAT_PRIVILEGES_VIOLATION, Sub::DAT_PRIVILEGES_READ).code()
    );
}

#[test]
fn graceful_disconnect_ends_both_sides_and_flushes_receives() {
    let (a, p) = connected(ALL_PRIV);
    a.post_recv(&[a.iov(0, 8)], 1);
    p.post_recv(&[p.iov(0, 8)], 2);
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
    assert_eq!(
        dto(a.recv_evd),
        (
            1,
            dat_dto_completion_status::DAT_DTO_ERR_FLUSHED,
            0,
            dat_dtos::DAT_DTO_RECEIVE
        )
    );
    assert_eq!(
        dto(p.recv_evd),
        (
            2,
            dat_dto_completion_status::DAT_DTO_ERR_FLUSHED,
            0,
            dat_dtos::DAT_DTO_RECEIVE
        )
    );
    assert_eq!(a.state(), dat_ep_state::DAT_EP_STATE_DISCONNECTED);
    assert_eq!(p.state(), dat_ep_state::DAT_EP_STATE_DISCONNECTED);
    // On a DISCONNECTED EP a send is flushed at once, and a second disconnect does nothing.
    assert_eq!(a.post_send(&[a.iov(0, 8)], 3), OK);
    assert_eq!(
        dto(a.req_evd),
        (
            3,
            dat_dto_completion_status::DAT_DTO_ERR_FLUSHED,
            0,
            dat_dtos::DAT_DTO_SEND
        )
    );
    assert_eq!(unsafe { dat_ep_disconnect(a.ep, graceful) }, OK);
    assert!(empty(a.conn_evd));
    // Reset makes it connectable again.
    assert_eq!(unsafe { dat_ep_reset(a.ep) }, OK);
    assert_eq!(a.state(), dat_ep_state::DAT_EP_STATE_UNCONNECTED);
}

#[test]
fn graceful_disconnect_completes_the_sends_posted_before_it() {
    let (a, p) = connected(ALL_PRIV);
    for i in 0..8 {
        p.post_recv(&[p.iov(i * 8, 8)], i as u64);
        assert_eq!(a.post_send(&[a.iov(0, 8)], 100 + i as u64), OK);
    }
    let graceful = dat_close_flags::DAT_CLOSE_GRACEFUL_FLAG as DAT_CLOSE_FLAGS;
    assert_eq!(unsafe { dat_ep_disconnect(a.ep, graceful) }, OK);
    for i in 0..8 {
        assert_eq!(
            dto(a.req_evd),
            (
                100 + i,
                dat_dto_completion_status::DAT_DTO_SUCCESS,
                8,
                dat_dtos::DAT_DTO_SEND
            )
        );
        assert_eq!(
            dto(p.recv_evd).1,
            dat_dto_completion_status::DAT_DTO_SUCCESS
        );
    }
    assert_eq!(
        a.conn_event().0,
        dat_event_number::DAT_CONNECTION_EVENT_DISCONNECTED
    );
}

#[test]
fn abrupt_disconnect_and_free_tell_the_peer() {
    let (a, p) = connected(ALL_PRIV);
    p.post_recv(&[p.iov(0, 8)], 2);
    let abrupt = dat_close_flags::DAT_CLOSE_ABRUPT_FLAG as DAT_CLOSE_FLAGS;
    assert_eq!(unsafe { dat_ep_disconnect(a.ep, abrupt) }, OK);
    assert_eq!(a.state(), dat_ep_state::DAT_EP_STATE_DISCONNECTED);
    assert_eq!(
        a.conn_event().0,
        dat_event_number::DAT_CONNECTION_EVENT_DISCONNECTED
    );
    assert_eq!(
        p.conn_event().0,
        dat_event_number::DAT_CONNECTION_EVENT_DISCONNECTED
    );
    assert_eq!(
        dto(p.recv_evd).1,
        dat_dto_completion_status::DAT_DTO_ERR_FLUSHED
    );

    let (a, p) = connected(ALL_PRIV);
    assert_eq!(unsafe { dat_ep_free(a.ep) }, OK);
    assert_eq!(
        p.conn_event().0,
        dat_event_number::DAT_CONNECTION_EVENT_DISCONNECTED
    );
    // The freed EP let go of its EVDs.
    assert_eq!(unsafe { dat_evd_free(a.conn_evd) }, OK);
}

/// A server's teardown with a request it never answered (dtest's server, when a stray client
/// reached its PSP): it frees the PSP, then the PSP's EVD. The CR outlives the PSP ("no effect
/// on previously generated Connection Requested Events", dat_psp_free), but no event stream
/// feeds the EVD any more, so the EVD frees (dat_evd_free); the CR is still the consumer's to
/// answer.
#[test]
fn a_psps_evd_frees_after_the_psp_though_a_request_is_unanswered() {
    let (a, p) = (Side::new(ALL_PRIV), Side::new(ALL_PRIV));
    let (psp, port) = p.listen();
    assert_eq!(a.connect(port, b"stray", WAIT_US), OK);
    let (cr, pd) = p.request();
    assert_private_data(&pd, b"stray");
    let in_use = DatError::invalid_state(Sub::DAT_INVALID_STATE_EVD_IN_USE).code();
    unsafe {
        // The PSP feeds it.
        assert_eq!(dat_evd_free(p.cr_evd), in_use);
        assert_eq!(dat_psp_free(psp), OK);
        assert_eq!(dat_evd_free(p.cr_evd), OK);
        assert_eq!(dat_cr_reject(cr, 2, b"no".as_ptr() as DAT_PVOID), OK);
    }
    let (event, pd) = a.conn_event();
    assert_eq!(event, dat_event_number::DAT_CONNECTION_EVENT_PEER_REJECTED);
    assert_private_data(&pd, b"no");
}

#[test]
fn a_rejected_request_is_peer_rejected_with_the_private_data() {
    let (a, p) = (Side::new(ALL_PRIV), Side::new(ALL_PRIV));
    let (_psp, port) = p.listen();
    assert_eq!(a.connect(port, b"let me in", WAIT_US), OK);
    let (cr, pd) = p.request();
    assert_private_data(&pd, b"let me in");
    assert_eq!(
        unsafe { dat_cr_reject(cr, 2, b"no".as_ptr() as DAT_PVOID) },
        OK
    );
    let (event, pd) = a.conn_event();
    assert_eq!(event, dat_event_number::DAT_CONNECTION_EVENT_PEER_REJECTED);
    assert_private_data(&pd, b"no");
    assert_eq!(a.state(), dat_ep_state::DAT_EP_STATE_DISCONNECTED);
    // The CR is gone.
    assert_eq!(
        unsafe { dat_cr_reject(cr, 0, null_mut()) },
        DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_CR).code()
    );
}

#[test]
fn a_port_nobody_listens_on_is_non_peer_rejected() {
    let a = Side::new(ALL_PRIV);
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    assert_eq!(a.connect(DAT_CONN_QUAL::from(port), b"", WAIT_US), OK);
    assert_eq!(
        a.conn_event().0,
        dat_event_number::DAT_CONNECTION_EVENT_NON_PEER_REJECTED
    );
    assert_eq!(a.state(), dat_ep_state::DAT_EP_STATE_DISCONNECTED);
}

#[test]
fn peers_of_another_frame_version_do_not_connect() {
    // A listener that answers in version 1 frames: our connect is refused.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let old_listener = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let request = read_frame(&mut s);
        let pd_len = u32::from_le_bytes(request[8..12].try_into().unwrap()) as usize;
        let mut pd = vec![0u8; pd_len];
        s.read_exact(&mut pd).unwrap();
        let mut accept = Header::new(Op::Accept).encode();
        accept[2] = 1;
        s.write_all(&accept).unwrap();
        let mut rest = Vec::new();
        let _ = s.read_to_end(&mut rest); // until our side lets go
    });
    let a = Side::new(ALL_PRIV);
    assert_eq!(a.connect(DAT_CONN_QUAL::from(port), b"hi", WAIT_US), OK);
    assert_eq!(
        a.conn_event().0,
        dat_event_number::DAT_CONNECTION_EVENT_NON_PEER_REJECTED
    );
    drop(a);
    old_listener.join().unwrap();

    // A version 1 request to our listener: no connection request event, the socket closes.
    let p = Side::new(ALL_PRIV);
    let (_psp, port) = p.listen();
    let mut s = TcpStream::connect(("127.0.0.1", port as u16)).unwrap();
    let mut h = Header::new(Op::ConnectRequest);
    h.id = port;
    let mut old = h.encode();
    old[2] = 1;
    s.write_all(&old).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let closed = match s.read(&mut [0u8; 64]) {
        Ok(0) => true,
        Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
        Ok(_) => false,
    };
    assert!(closed, "the listener answered a version 1 request");
    assert!(empty(p.cr_evd));
}

#[test]
fn a_request_nobody_answers_times_out() {
    let (a, p) = (Side::new(ALL_PRIV), Side::new(ALL_PRIV));
    let (_psp, port) = p.listen();
    assert_eq!(a.connect(port, b"", 200_000), OK);
    let _unanswered = p.request();
    assert_eq!(
        a.conn_event().0,
        dat_event_number::DAT_CONNECTION_EVENT_TIMED_OUT
    );
    assert_eq!(a.state(), dat_ep_state::DAT_EP_STATE_DISCONNECTED);
}

fn raw_request(port: DAT_CONN_QUAL) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", port as u16)).unwrap();
    let mut h = Header::new(Op::ConnectRequest);
    h.id = port;
    s.write_all(&h.encode()).unwrap();
    s
}

fn read_frame(s: &mut TcpStream) -> [u8; HEADER_LEN] {
    let mut b = [0u8; HEADER_LEN];
    s.read_exact(&mut b).unwrap();
    b
}

#[test]
fn a_requester_that_vanishes_after_the_accept_is_an_accept_completion_error() {
    let p = Side::new(ALL_PRIV);
    let (_psp, port) = p.listen();
    let mut raw = raw_request(port);
    let (cr, _) = p.request();
    assert_eq!(unsafe { dat_cr_accept(cr, p.ep, 0, null_mut()) }, OK);
    assert_eq!(p.state(), dat_ep_state::DAT_EP_STATE_COMPLETION_PENDING);
    read_frame(&mut raw); // the accept
    drop(raw);
    assert_eq!(
        p.conn_event().0,
        dat_event_number::DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR
    );
    assert_eq!(p.state(), dat_ep_state::DAT_EP_STATE_DISCONNECTED);
}

#[test]
fn a_malformed_frame_breaks_only_that_connection() {
    let p = Side::new(ALL_PRIV);
    let (_psp, port) = p.listen();
    let mut raw = raw_request(port);
    let (cr, _) = p.request();
    p.post_recv(&[p.iov(0, 8)], 1);
    assert_eq!(unsafe { dat_cr_accept(cr, p.ep, 0, null_mut()) }, OK);
    read_frame(&mut raw);
    raw.write_all(&Header::new(Op::Ready).encode()).unwrap();
    assert_eq!(
        p.conn_event().0,
        dat_event_number::DAT_CONNECTION_EVENT_ESTABLISHED
    );
    raw.write_all(&[0xAB; HEADER_LEN]).unwrap();
    assert_eq!(
        p.conn_event().0,
        dat_event_number::DAT_CONNECTION_EVENT_BROKEN
    );
    assert_eq!(
        dto(p.recv_evd).1,
        dat_dto_completion_status::DAT_DTO_ERR_FLUSHED
    );
}

#[test]
fn a_peer_writing_with_a_guessed_key_moves_no_byte() {
    let p = Side::new(ALL_PRIV);
    let (_psp, port) = p.listen();
    let mut raw = raw_request(port);
    let (cr, _) = p.request();
    assert_eq!(unsafe { dat_cr_accept(cr, p.ep, 0, null_mut()) }, OK);
    read_frame(&mut raw);
    raw.write_all(&Header::new(Op::Ready).encode()).unwrap();
    assert_eq!(
        p.conn_event().0,
        dat_event_number::DAT_CONNECTION_EVENT_ESTABLISHED
    );
    let mut h = Header::new(Op::RdmaWrite);
    h.rkey = p.rmr_ctx.wrapping_add(1);
    h.remote_addr = p.addr(0);
    h.payload_len = 4;
    h.id = 1;
    raw.write_all(&h.encode()).unwrap();
    raw.write_all(b"evil").unwrap();
    read_frame(&mut raw); // our confirmation of the Ready
    let answer = Header::decode(&read_frame(&mut raw), dat::transport::tcp::wire_limits()).unwrap();
    assert_eq!(answer.op, Op::RemoteAccessError);
    assert_eq!(
        p.conn_event().0,
        dat_event_number::DAT_CONNECTION_EVENT_BROKEN
    );
    assert!(p.buf[..4].iter().all(|&b| b == 0));
}

/// Runs as the child of `a_peer_process_that_dies_ends_the_connection`: accepts one
/// connection, prints the port first, and then waits to be killed.
#[test]
fn peer_process_child() {
    if std::env::var_os("LIBDAT_TEST_CHILD").is_none() {
        return; // only the killed child does anything
    }
    let p = Side::new(ALL_PRIV);
    let (_psp, port) = p.listen();
    p.tell_parent_and_accept(&format!("PORT {port}"));
    loop {
        std::thread::park();
    }
}

#[test]
fn a_peer_process_that_dies_ends_the_connection() {
    let mut child = test_child("peer_process_child")
        .env("LIBDAT_TEST_CHILD", "1")
        .spawn()
        .unwrap();
    let port: DAT_CONN_QUAL = child_says(&mut child, "PORT ").parse().unwrap();
    let a = Side::new(ALL_PRIV);
    assert_eq!(a.connect(port, b"", WAIT_US), OK);
    assert_eq!(
        a.conn_event().0,
        dat_event_number::DAT_CONNECTION_EVENT_ESTABLISHED
    );
    a.post_recv(&[a.iov(0, 8)], 1);
    // Mid-transfer: a message the child never posts a receive for stays in flight.
    assert_eq!(a.post_send(&[a.iov(8, 8)], 2), OK);
    child.kill().unwrap();
    child.wait().unwrap();
    // Within the wait's bound: DISCONNECTED (a peer that went away, as OpenFabrics reports
    // it) and the flushes, no hang.
    assert_eq!(
        a.conn_event().0,
        dat_event_number::DAT_CONNECTION_EVENT_DISCONNECTED
    );
    let (cookie, status, _, op) = dto(a.req_evd);
    assert_eq!(
        (cookie, status, op),
        (
            2,
            dat_dto_completion_status::DAT_DTO_ERR_FLUSHED,
            dat_dtos::DAT_DTO_SEND
        )
    );
    assert_eq!(
        dto(a.recv_evd),
        (
            1,
            dat_dto_completion_status::DAT_DTO_ERR_FLUSHED,
            0,
            dat_dtos::DAT_DTO_RECEIVE
        )
    );
    assert_eq!(a.state(), dat_ep_state::DAT_EP_STATE_DISCONNECTED);
}

#[test]
fn connect_checks_its_arguments_and_the_ep_state() {
    let (a, _p) = connected(ALL_PRIV);
    // A connected EP cannot connect again.
    assert_eq!(
        a.connect(1234, b"", WAIT_US),
        DatError::invalid_state(Sub::DAT_INVALID_STATE_EP_CONNECTED).code()
    );
    let b = Side::new(ALL_PRIV);
    assert_eq!(b.connect(0, b"", WAIT_US), DatError::invalid_arg(3).code());
    let too_much = [0u8; 57];
    assert_eq!(
        b.connect(1234, &too_much, WAIT_US),
        DatError::invalid_arg(5).code()
    );
    assert_eq!(b.state(), dat_ep_state::DAT_EP_STATE_UNCONNECTED);
    // dat_ep_dup_connect: a QoS the transport does not give is "not supported", as for
    // dat_ep_connect; an unknown value is an invalid parameter.
    let premium = dat_qos::DAT_QOS_PREMIUM as DAT_QOS;
    let rc = unsafe { dat_ep_dup_connect(b.ep, a.ep, WAIT_US, 0, null_mut(), premium) };
    assert_eq!(rc, DatError::bare(Type::DAT_MODEL_NOT_SUPPORTED).code());
    let rc = unsafe { dat_ep_dup_connect(b.ep, a.ep, WAIT_US, 0, null_mut(), 0x40) };
    assert_eq!(rc, DatError::invalid_arg(6).code());
    assert_eq!(b.state(), dat_ep_state::DAT_EP_STATE_UNCONNECTED);
}

/// Binds `rmr` to `len` bytes at `offset` of `side`'s buffer for `ep`'s peer (a zero length
/// unbinds): the new context, after the bind's completion on the request EVD.
fn bind(
    side: &Side,
    rmr: DAT_RMR_HANDLE,
    ep: DAT_EP_HANDLE,
    offset: usize,
    len: u32,
    privileges: u32,
    c: u64,
) -> DAT_RMR_CONTEXT {
    let triplet = side.iov(offset, len);
    let mut context = 0;
    let flags = dat_completion_flags::DAT_COMPLETION_DEFAULT_FLAG as DAT_COMPLETION_FLAGS;
    let va = dat_va_type::DAT_VA_TYPE_VA as DAT_VA_TYPE;
    assert_eq!(
        unsafe {
            dat_rmr_bind(
                rmr,
                side.lmr,
                &triplet,
                privileges,
                va,
                ep,
                cookie(c),
                flags,
                &mut context,
            )
        },
        OK
    );
    let e = wait(side.req_evd);
    assert_eq!(
        e.event_number,
        dat_event_number::DAT_RMR_BIND_COMPLETION_EVENT as u32
    );
    let data = unsafe { e.event_data.rmr_completion_event_data };
    assert_eq!(
        (
            data.rmr_handle,
            unsafe { data.user_cookie.as_64 },
            data.status
        ),
        (rmr, c, 0)
    );
    context
}

/// RMRs over the wire: a bind exposes part of a region its LMR does not expose (the LMR grants
/// no remote access) to the EP's peer, with the bind's privileges; a send with invalidate
/// unbinds it as it lands; each bind gives a new context; a read lands in an RMR of the
/// reader's (`dat_ep_post_rdma_read_to_rmr`); and a context that is no longer bound fails on
/// the initiator. Over TCP the windows are ours; over RDMA they are type 2 memory windows.
#[test]
fn rmrs_bound_over_the_wire_expose_invalidate_and_go_stale() {
    let (mut a, mut p) = connect_pair(Side::new(ALL_PRIV), Side::new(LOCAL_PRIV));
    let mut rmr = null_mut();
    assert_eq!(unsafe { dat_rmr_create(p.pz, &mut rmr) }, OK);
    let rw = PRIV_REMOTE_READ | PRIV_REMOTE_WRITE;
    let flags = dat_completion_flags::DAT_COMPLETION_DEFAULT_FLAG as DAT_COMPLETION_FLAGS;
    let (f, t) = (
        dat_boolean::DAT_FALSE as DAT_BOOLEAN,
        dat_boolean::DAT_TRUE as DAT_BOOLEAN,
    );
    // The window: p's bytes 1024..1280, read and write.
    let window = bind(&p, rmr, p.ep, 1024, 256, rw, 1);
    let base = p.addr(0);
    let remote = |context, offset: usize, len| DAT_RMR_TRIPLET {
        rmr_context: context,
        virtual_address: base + offset as u64,
        segment_length: len,
    };
    a.buf[..5].copy_from_slice(b"bound");
    let (local, at) = ([a.iov(0, 5)], remote(window, 1100, 5));
    assert_eq!(
        unsafe {
            dat_ep_post_rdma_write(a.ep, 1, local.as_ptr() as *mut _, cookie(10), &at, flags)
        },
        OK
    );
    assert_eq!(
        dto(a.req_evd),
        (
            10,
            dat_dto_completion_status::DAT_DTO_SUCCESS,
            5,
            dat_dtos::DAT_DTO_RDMA_WRITE
        )
    );
    assert_eq!(&p.buf[1100..1105], b"bound");
    p.buf[1200..1204].copy_from_slice(b"back");
    let (into, from) = ([a.iov(64, 4)], remote(window, 1200, 4));
    assert_eq!(
        unsafe {
            dat_ep_post_rdma_read(a.ep, 1, into.as_ptr() as *mut _, cookie(11), &from, flags)
        },
        OK
    );
    assert_eq!(
        dto(a.req_evd),
        (
            11,
            dat_dto_completion_status::DAT_DTO_SUCCESS,
            4,
            dat_dtos::DAT_DTO_RDMA_READ
        )
    );
    assert_eq!(&a.buf[64..68], b"back");
    // A send with invalidate FALSE is a plain send; TRUE unbinds the window as it lands.
    p.post_recv(&[p.iov(0, 16)], 20);
    p.post_recv(&[p.iov(16, 16)], 21);
    let iov = [a.iov(0, 8)];
    assert_eq!(
        unsafe {
            dat_ep_post_send_with_invalidate(
                a.ep,
                1,
                iov.as_ptr() as *mut _,
                cookie(12),
                flags,
                f,
                0,
            )
        },
        OK
    );
    assert_eq!(
        unsafe {
            dat_ep_post_send_with_invalidate(
                a.ep,
                1,
                iov.as_ptr() as *mut _,
                cookie(13),
                flags,
                t,
                window,
            )
        },
        OK
    );
    assert_eq!(dto(p.recv_evd).0, 20);
    assert_eq!(dto(p.recv_evd).0, 21);
    assert_eq!(dto(a.req_evd).0, 12);
    assert_eq!(dto(a.req_evd).0, 13);
    let mut param: DAT_RMR_PARAM = zero();
    assert_eq!(
        unsafe {
            dat_rmr_query(
                rmr,
                dat_rmr_param_mask::DAT_RMR_FIELD_ALL as u32,
                &mut param,
            )
        },
        OK
    );
    assert_eq!(param.rmr_context, 0, "the invalidated RMR is unbound");
    // A new bind, a new context; then an unbind.
    let again = bind(&p, rmr, p.ep, 2048, 64, PRIV_REMOTE_WRITE, 2);
    assert_ne!(again, window);
    let at = remote(again, 2048, 5);
    assert_eq!(
        unsafe {
            dat_ep_post_rdma_write(a.ep, 1, local.as_ptr() as *mut _, cookie(14), &at, flags)
        },
        OK
    );
    assert_eq!(dto(a.req_evd).1, dat_dto_completion_status::DAT_DTO_SUCCESS);
    assert_eq!(&p.buf[2048..2053], b"bound");
    // A read lands in an RMR of the reader's: a's bytes 512..768, bound through a's EP.
    let mut own = null_mut();
    assert_eq!(unsafe { dat_rmr_create(a.pz, &mut own) }, OK);
    let target = bind(&a, own, a.ep, 512, 256, PRIV_REMOTE_WRITE, 3);
    p.buf[1500..1504].copy_from_slice(b"read");
    // p's own region grants no remote read: the peer reads through a window of p's.
    let readable = bind(&p, rmr, p.ep, 1500, 4, PRIV_REMOTE_READ, 4);
    let into = DAT_RMR_TRIPLET {
        rmr_context: target,
        virtual_address: a.addr(600),
        segment_length: 4,
    };
    let from = remote(readable, 1500, 4);
    assert_eq!(
        unsafe { dat_ep_post_rdma_read_to_rmr(a.ep, &into, cookie(15), &from, flags) },
        OK
    );
    assert_eq!(
        dto(a.req_evd),
        (
            15,
            dat_dto_completion_status::DAT_DTO_SUCCESS,
            4,
            dat_dtos::DAT_DTO_RDMA_READ
        )
    );
    assert_eq!(&a.buf[600..604], b"read");
    // Reading into a part of a's buffer no RMR of a's covers is refused before it starts.
    let outside = DAT_RMR_TRIPLET {
        rmr_context: target,
        virtual_address: a.addr(100),
        segment_length: 4,
    };
    assert_eq!(
        unsafe { dat_ep_post_rdma_read_to_rmr(a.ep, &outside, cookie(16), &from, flags) },
        DatError::new(
            Type::DAT_PRIVILEGES_VIOLATION,
            Sub::DAT_PRIVILEGES_RDMA_WRITE
        )
        .code()
    );
    // Rebound since, then unbound: the write window's context is stale, and a write through
    // it (which succeeded above) fails on the initiator.
    bind(&p, rmr, p.ep, 0, 0, 0, 5);
    assert_eq!(
        unsafe {
            dat_ep_post_rdma_write(a.ep, 1, local.as_ptr() as *mut _, cookie(17), &at, flags)
        },
        OK
    );
    assert_eq!(
        dto(a.req_evd),
        (
            17,
            dat_dto_completion_status::DAT_DTO_ERR_REMOTE_ACCESS,
            0,
            dat_dtos::DAT_DTO_RDMA_WRITE
        )
    );
    assert_eq!(
        a.conn_event().0,
        dat_event_number::DAT_CONNECTION_EVENT_BROKEN
    );
    assert_eq!(unsafe { dat_rmr_free(own) }, OK);
    assert_eq!(unsafe { dat_rmr_free(rmr) }, OK);
    a.buf[0] = 0;
    p.buf[0] = 0;
}

/// Posts an IB extension operation as the `dat_ib_*` macros do (through the shim's entry).
fn extension_op(ep: DAT_EP_HANDLE, op: dat_ib_op, args: &[u64]) -> DAT_RETURN {
    let mut a = dat::api::ext::ExtArgs {
        count: args.len() as i32,
        v: [0; 8],
    };
    a.v[..args.len()].copy_from_slice(args);
    unsafe { dat::api::ext::libdat_extension_op(ep, op as i32, &a) }
}

/// An extension's DTO completion: (cookie, status, length, operation, extension type,
/// immediate data).
fn ib_dto(evd: DAT_EVD_HANDLE) -> (u64, dat_dto_completion_status, u32, u32, u32, u32) {
    let e = wait(evd);
    assert_eq!(
        e.event_number,
        dat_ib_event_number::DAT_IB_DTO_EVENT as u32,
        "an extension's completion"
    );
    let d = unsafe { e.event_data.dto_completion_event_data };
    let x =
        unsafe { (e.event_extension_data.as_ptr() as *const DAT_IB_EXTENSION_EVENT_DATA).read() };
    let status = dat_dto_completion_status::try_from(d.status).unwrap();
    (
        unsafe { d.user_cookie.as_64 },
        status,
        d.transfered_length,
        d.operation,
        x.r#type,
        unsafe { x.val.immed.data },
    )
}

const ATOMIC_PRIV: u32 = ALL_PRIV | dat_ib_mem_priv_flags::DAT_IB_MEM_PRIV_REMOTE_ATOMIC as u32;

/// An RDMA write with immediate data lands its bytes and consumes one of the peer's
/// receives, which reports the write's length and the immediate, also when the receive is
/// posted only after the write arrived; the writer's completion names the extension.
#[test]
fn a_write_with_immediate_data_completes_a_receive_with_its_data() {
    let (mut a, mut p) = connected(ALL_PRIV);
    let flags = dat_completion_flags::DAT_COMPLETION_DEFAULT_FLAG as u64;
    let ok = dat_dto_completion_status::DAT_DTO_SUCCESS;
    let (write_immed, recv_immed) = (
        dat_ib_dtos::DAT_IB_DTO_RDMA_WRITE_IMMED as u32,
        dat_ib_dtos::DAT_IB_DTO_RECV_IMMED as u32,
    );
    for (round, receive_first) in [(0u64, true), (1, false)] {
        let at = 100 * round as usize;
        a.buf[at..at + 5].copy_from_slice(b"hello");
        if receive_first {
            p.post_recv(&[p.iov(3000, 16)], 50 + round);
        }
        let (local, remote) = (a.iov(at, 5), p.rmr(1000 + at, 5));
        let args = [
            1,
            &local as *const _ as u64,
            10 + round,
            &remote as *const _ as u64,
            0x7777 + round,
            flags,
        ];
        assert_eq!(
            extension_op(a.ep, dat_ib_op::DAT_IB_RDMA_WRITE_IMMED_OP, &args),
            OK
        );
        if !receive_first {
            // Kept for the receive: neither side completes before it is posted.
            std::thread::sleep(std::time::Duration::from_millis(50));
            assert!(empty(a.req_evd) && empty(p.recv_evd));
            p.post_recv(&[p.iov(3000, 16)], 50 + round);
        }
        let expected = (
            50 + round,
            ok,
            5,
            recv_immed,
            dat_ib_ext_type::DAT_IB_RDMA_WRITE_IMMED_DATA as u32,
            0x7777 + round as u32,
        );
        assert_eq!(ib_dto(p.recv_evd), expected);
        assert_eq!(&p.buf[1000 + at..1005 + at], b"hello");
        assert_eq!(
            ib_dto(a.req_evd),
            (
                10 + round,
                ok,
                5,
                write_immed,
                dat_ib_ext_type::DAT_IB_RDMA_WRITE_IMMED as u32,
                0
            )
        );
    }
    a.buf[0] = 0;
    p.buf[0] = 0;
}

/// The initiators of fetch-and-add and compare-and-swap on one 64-bit word of a target,
/// each over its own connection, from its own thread at once: no update is lost (each
/// original value is seen exactly once), and a compare-and-swap swaps only what it compares.
#[test]
fn atomics_from_several_peers_on_one_word_lose_no_update() {
    const PEERS: usize = 3;
    const ADDS: u64 = 200;
    let p = Side::with_buffer(ATOMIC_PRIV, 4096);
    let (psp, port) = p.listen();
    let mut initiators = Vec::new();
    for i in 0..PEERS {
        let a = Side::with_buffer(ALL_PRIV, 4096);
        let ep = if i == 0 {
            p.ep
        } else {
            p.ep_sharing_receives(p.req_evd, p.conn_evd)
        };
        assert_eq!(a.connect(port, b"", WAIT_US), OK);
        let (cr, _) = p.request();
        assert_eq!(unsafe { dat_cr_accept(cr, ep, 0, null_mut()) }, OK);
        let e = wait(p.conn_evd);
        assert_eq!(
            e.event_number,
            dat_event_number::DAT_CONNECTION_EVENT_ESTABLISHED as u32
        );
        assert_eq!(unsafe { e.event_data.connect_event_data.ep_handle }, ep);
        assert_eq!(
            a.conn_event().0,
            dat_event_number::DAT_CONNECTION_EVENT_ESTABLISHED
        );
        initiators.push(a);
    }
    assert_eq!(unsafe { dat_psp_free(psp) }, OK);
    let word = p.rmr(8, 8);
    struct Peer(Side);
    // SAFETY: each thread uses only its own side's handles and buffer.
    unsafe impl Send for Peer {}
    let flags = dat_completion_flags::DAT_COMPLETION_DEFAULT_FLAG as u64;
    let threads: Vec<_> = initiators
        .into_iter()
        .map(|a| {
            let peer = Peer(a);
            std::thread::spawn(move || {
                let a = &peer.0;
                let mut originals = Vec::new();
                for n in 0..ADDS {
                    let result = a.iov(64, 8);
                    let args = [
                        1,
                        &result as *const _ as u64,
                        n,
                        &word as *const _ as u64,
                        flags,
                    ];
                    assert_eq!(
                        extension_op(a.ep, dat_ib_op::DAT_IB_FETCH_AND_ADD_OP, &args),
                        OK
                    );
                    let (c, status, len, op, ty, _) = ib_dto(a.req_evd);
                    assert_eq!(
                        (c, status, len),
                        (n, dat_dto_completion_status::DAT_DTO_SUCCESS, 8)
                    );
                    assert_eq!(
                        (op, ty),
                        (
                            dat_ib_dtos::DAT_IB_DTO_FETCH_ADD as u32,
                            dat_ib_ext_type::DAT_IB_FETCH_AND_ADD as u32
                        )
                    );
                    originals.push(u64::from_ne_bytes(a.buf[64..72].try_into().unwrap()));
                }
                (peer, originals)
            })
        })
        .collect();
    let mut seen = Vec::new();
    let mut peers = Vec::new();
    for t in threads {
        let (peer, originals) = t.join().unwrap();
        seen.extend(originals);
        peers.push(peer);
    }
    seen.sort();
    assert_eq!(
        seen,
        (0..PEERS as u64 * ADDS).collect::<Vec<_>>(),
        "every update once"
    );
    let total = PEERS as u64 * ADDS;
    assert_eq!(u64::from_ne_bytes(p.buf[8..16].try_into().unwrap()), total);
    // Compare-and-swap: a wrong guess leaves the word, a right one swaps it; both bring back
    // the original.
    let a = &peers[0].0;
    for (guess, after) in [(total + 1, total), (total, 42)] {
        let result = a.iov(64, 8);
        let args = [
            guess,
            42,
            &result as *const _ as u64,
            9,
            &word as *const _ as u64,
            flags,
        ];
        assert_eq!(
            extension_op(a.ep, dat_ib_op::DAT_IB_CMP_AND_SWAP_OP, &args),
            OK
        );
        let (_, status, _, _, ty, _) = ib_dto(a.req_evd);
        assert_eq!(
            (status, ty),
            (
                dat_dto_completion_status::DAT_DTO_SUCCESS,
                dat_ib_ext_type::DAT_IB_CMP_AND_SWAP as u32
            )
        );
        assert_eq!(u64::from_ne_bytes(a.buf[64..72].try_into().unwrap()), total);
        assert_eq!(u64::from_ne_bytes(p.buf[8..16].try_into().unwrap()), after);
    }
}

/// An atomic on a region registered without remote atomic privilege is a remote access
/// error that breaks the connection, and the word is left alone.
#[test]
fn an_atomic_without_the_atomic_privilege_is_a_remote_access_error() {
    let (a, mut p) = connected(ALL_PRIV);
    p.buf[8..16].copy_from_slice(&5u64.to_ne_bytes());
    let (result, word) = (a.iov(64, 8), p.rmr(8, 8));
    let flags = dat_completion_flags::DAT_COMPLETION_DEFAULT_FLAG as u64;
    let args = [
        1,
        &result as *const _ as u64,
        3,
        &word as *const _ as u64,
        flags,
    ];
    assert_eq!(
        extension_op(a.ep, dat_ib_op::DAT_IB_FETCH_AND_ADD_OP, &args),
        OK
    );
    let (c, status, ..) = ib_dto(a.req_evd);
    assert_eq!(
        (c, status),
        (3, dat_dto_completion_status::DAT_DTO_ERR_REMOTE_ACCESS)
    );
    assert_eq!(
        a.conn_event().0,
        dat_event_number::DAT_CONNECTION_EVENT_BROKEN
    );
    assert_eq!(u64::from_ne_bytes(p.buf[8..16].try_into().unwrap()), 5);
    p.buf[0] = 0;
}

/// Three EPs of a target draw their receives from one SRQ, each connected to its own
/// initiator: a message sent before any receive is posted waits for one (kept, over TCP;
/// retried by the initiator's QP, over RDMA), every later message lands in the receive posted
/// next whichever EP it reaches, and an EP's end is followed by `DAT_ASYNC_ERROR_EP_BROKEN`
/// on the IA's async EVD (as OpenFabrics reports the QP's last work request).
#[test]
fn eps_sharing_one_srq_take_its_receives_and_report_their_end() {
    const PEERS: usize = 3;
    let mut p = Side::new(ALL_PRIV);
    let srq = p.move_to_srq(16, 2);
    let mut eps = vec![p.ep];
    eps.extend((1..PEERS).map(|_| p.srq_ep(srq)));
    let (psp, port) = p.listen();
    let mut initiators = Vec::new();
    for &ep in &eps {
        let a = Side::new(ALL_PRIV);
        assert_eq!(a.connect(port, b"", WAIT_US), OK);
        let (cr, _) = p.request();
        assert_eq!(unsafe { dat_cr_accept(cr, ep, 0, null_mut()) }, OK);
        p.ep = ep;
        assert_eq!(
            p.conn_event().0,
            dat_event_number::DAT_CONNECTION_EVENT_ESTABLISHED
        );
        assert_eq!(
            a.conn_event().0,
            dat_event_number::DAT_CONNECTION_EVENT_ESTABLISHED
        );
        initiators.push(a);
    }
    assert_eq!(unsafe { dat_psp_free(psp) }, OK);
    let srq_available = || {
        let mut param: DAT_SRQ_PARAM = zero();
        assert_eq!(
            unsafe {
                dat_srq_query(
                    srq,
                    dat_srq_param_mask::DAT_SRQ_FIELD_ALL as u32,
                    &mut param,
                )
            },
            OK
        );
        param.available_dto_count
    };
    // Before any receive: the message waits, and so does its sender's completion.
    initiators[1].buf[..5].copy_from_slice(b"early");
    assert_eq!(initiators[1].post_send(&[initiators[1].iov(0, 5)], 1), OK);
    assert!(empty(p.recv_evd));
    let first = [p.iov(0, 64)];
    assert_eq!(
        unsafe { dat_srq_post_recv(srq, 1, first.as_ptr() as *mut _, cookie(100)) },
        OK
    );
    let e = wait(p.recv_evd);
    let d = unsafe { e.event_data.dto_completion_event_data };
    assert_eq!(
        (
            unsafe { d.user_cookie.as_64 },
            d.transfered_length,
            d.ep_handle
        ),
        (100, 5, eps[1])
    );
    assert_eq!(&p.buf[..5], b"early");
    assert_eq!(
        dto(initiators[1].req_evd),
        (
            1,
            dat_dto_completion_status::DAT_DTO_SUCCESS,
            5,
            dat_dtos::DAT_DTO_SEND
        )
    );
    // Two messages from each peer, into six receives: each lands whole, and the SRQ empties.
    for slot in 0..2 * PEERS {
        let iov = [p.iov(64 * (slot + 1), 64)];
        assert_eq!(
            unsafe { dat_srq_post_recv(srq, 1, iov.as_ptr() as *mut _, cookie(200 + slot as u64)) },
            OK
        );
    }
    assert_eq!(srq_available(), 2 * PEERS as DAT_COUNT);
    for (i, a) in initiators.iter_mut().enumerate() {
        for m in 0..2 {
            let at = 64 * (2 * i + m);
            a.buf[at..at + 8].copy_from_slice(&[
                b'p',
                b'0' + i as u8,
                b'm',
                b'0' + m as u8,
                0,
                0,
                0,
                0,
            ]);
            assert_eq!(a.post_send(&[a.iov(at, 8)], 10 + m as u64), OK);
        }
    }
    let mut landed = Vec::new();
    for _ in 0..2 * PEERS {
        let e = wait(p.recv_evd);
        let d = unsafe { e.event_data.dto_completion_event_data };
        assert_eq!(
            (d.status, d.transfered_length),
            (dat_dto_completion_status::DAT_DTO_SUCCESS as u32, 8)
        );
        let slot = (unsafe { d.user_cookie.as_64 } - 200) as usize;
        let at = 64 * (slot + 1);
        let peer = eps
            .iter()
            .position(|&ep| ep == d.ep_handle)
            .expect("one of the SRQ's EPs");
        assert_eq!(
            &p.buf[at..at + 2],
            &[b'p', b'0' + peer as u8],
            "the message of the EP that reported it"
        );
        landed.push(p.buf[at..at + 4].to_vec());
    }
    landed.sort();
    let expected: Vec<Vec<u8>> = (0..PEERS as u8)
        .flat_map(|i| (0..2u8).map(move |m| vec![b'p', b'0' + i, b'm', b'0' + m]))
        .collect();
    assert_eq!(landed, expected, "every message once");
    assert_eq!(srq_available(), 0);
    for a in &initiators {
        assert_eq!(dto(a.req_evd).1, dat_dto_completion_status::DAT_DTO_SUCCESS);
        assert_eq!(dto(a.req_evd).1, dat_dto_completion_status::DAT_DTO_SUCCESS);
    }
    // The end of an SRQ EP's connection: DISCONNECTED, then the async event names the EP.
    assert_eq!(
        unsafe {
            dat_ep_disconnect(
                initiators[2].ep,
                dat_close_flags::DAT_CLOSE_ABRUPT_FLAG as u32,
            )
        },
        OK
    );
    let e = wait(p.conn_evd);
    assert_eq!(
        e.event_number,
        dat_event_number::DAT_CONNECTION_EVENT_DISCONNECTED as u32
    );
    assert_eq!(unsafe { e.event_data.connect_event_data.ep_handle }, eps[2]);
    let mut async_evd = null_mut();
    let mut ia_attr: DAT_IA_ATTR = zero();
    assert_eq!(
        unsafe { dat_ia_query(p.ia, &mut async_evd, 0, &mut ia_attr, 0, null_mut()) },
        OK
    );
    let e = wait(async_evd);
    assert_eq!(
        e.event_number,
        dat_event_number::DAT_ASYNC_ERROR_EP_BROKEN as u32
    );
    assert_eq!(
        unsafe { e.event_data.asynch_error_event_data.dat_handle },
        eps[2] as DAT_HANDLE
    );
    assert!(empty(async_evd), "one event for the one EP that ended");
    p.buf[0] = 0;
}

/// The IB extension's counters (`dat_ib_query_counters`): an EP counts its posts and
/// receives with their bytes, the IA the objects it made and its connections, an EVD its
/// waits; one counter can be read alone, and reading with reset zeroes what was read.
#[test]
fn counters_count_posts_receives_objects_and_waits() {
    let query = |h: DAT_HANDLE, which: u64, out: &mut [u64], reset: u64| {
        extension_op(
            h,
            dat_ib_op::DAT_IB_QUERY_COUNTERS_OP,
            &[which, out.as_mut_ptr() as u64, reset],
        )
    };
    use dat_ep_counters as E;
    let (a, p) = connected(ALL_PRIV);
    p.post_recv(&[p.iov(0, 64)], 1);
    p.post_recv(&[p.iov(64, 64)], 2);
    assert_eq!(a.post_send(&[a.iov(0, 10)], 3), OK);
    assert_eq!(a.post_send(&[a.iov(0, 20)], 4), OK);
    for _ in 0..2 {
        assert_eq!(
            dto(p.recv_evd).1,
            dat_dto_completion_status::DAT_DTO_SUCCESS
        );
        assert_eq!(dto(a.req_evd).1, dat_dto_completion_status::DAT_DTO_SUCCESS);
    }
    let mut ep = [0u64; E::DCNT_EP_ALL_COUNTERS as usize];
    assert_eq!(query(a.ep, E::DCNT_EP_ALL_COUNTERS as u64, &mut ep, 0), OK);
    assert_eq!(
        (
            ep[E::DCNT_EP_CONNECT as usize],
            ep[E::DCNT_EP_POST_SEND as usize],
            ep[E::DCNT_EP_POST_SEND_DATA as usize]
        ),
        (1, 2, 30)
    );
    let mut ep = [0u64; E::DCNT_EP_ALL_COUNTERS as usize];
    assert_eq!(query(p.ep, E::DCNT_EP_ALL_COUNTERS as u64, &mut ep, 0), OK);
    assert_eq!(
        (
            ep[E::DCNT_EP_POST_RECV as usize],
            ep[E::DCNT_EP_POST_RECV_DATA as usize]
        ),
        (2, 128)
    );
    assert_eq!(
        (
            ep[E::DCNT_EP_RECV as usize],
            ep[E::DCNT_EP_RECV_DATA as usize]
        ),
        (2, 30)
    );
    // One counter alone lands at its index; a reset zeroes it.
    let mut one = [u64::MAX; E::DCNT_EP_ALL_COUNTERS as usize];
    assert_eq!(query(p.ep, E::DCNT_EP_RECV as u64, &mut one, 1), OK);
    assert_eq!(one[E::DCNT_EP_RECV as usize], 2);
    assert_eq!(
        one[E::DCNT_EP_POST_RECV as usize],
        u64::MAX,
        "only the counter asked for is written"
    );
    assert_eq!(query(p.ep, E::DCNT_EP_RECV as u64, &mut one, 0), OK);
    assert_eq!(one[E::DCNT_EP_RECV as usize], 0);
    // The post counters (kept under the EP's lock) reset alike, and count on from zero.
    assert_eq!(query(p.ep, E::DCNT_EP_POST_RECV as u64, &mut one, 1), OK);
    assert_eq!(one[E::DCNT_EP_POST_RECV as usize], 2);
    p.post_recv(&[p.iov(0, 64)], 5);
    assert_eq!(query(p.ep, E::DCNT_EP_POST_RECV as u64, &mut one, 0), OK);
    assert_eq!(one[E::DCNT_EP_POST_RECV as usize], 1);
    use dat_ia_counters as I;
    let mut ia = [0u64; I::DCNT_IA_ALL_COUNTERS as usize];
    assert_eq!(query(p.ia, I::DCNT_IA_ALL_COUNTERS as u64, &mut ia, 0), OK);
    assert_eq!(
        (
            ia[I::DCNT_IA_EP_CREATE as usize],
            ia[I::DCNT_IA_PZ_CREATE as usize],
            ia[I::DCNT_IA_LMR_CREATE as usize]
        ),
        (1, 1, 1)
    );
    assert_eq!(
        (
            ia[I::DCNT_IA_SP_CR as usize],
            ia[I::DCNT_IA_SP_CR_ACCEPTED as usize],
            ia[I::DCNT_IA_CM_PASSIVE_EST as usize]
        ),
        (1, 1, 1)
    );
    assert_eq!(
        (
            ia[I::DCNT_IA_PSP_CREATE_ANY as usize],
            ia[I::DCNT_IA_PSP_FREE as usize],
            ia[I::DCNT_IA_CM_LISTEN as usize]
        ),
        (1, 1, 1)
    );
    use dat_evd_counters as V;
    let mut evd = [0u64; V::DCNT_EVD_ALL_COUNTERS as usize];
    assert_eq!(
        query(p.recv_evd, V::DCNT_EVD_ALL_COUNTERS as u64, &mut evd, 0),
        OK
    );
    assert_eq!(evd[V::DCNT_EVD_WAIT as usize], 2);
    // A counter the object does not have, and an object without counters.
    assert_eq!(
        query(p.ep, E::DCNT_EP_ALL_COUNTERS as u64 + 1, &mut ep, 0),
        DatError::invalid_arg(3).code()
    );
    assert_eq!(
        query(p.pz, 0, &mut ep, 0),
        DatError::bare(Type::DAT_INVALID_HANDLE).code()
    );
}

/// `dat_cr_handoff`: a request handed to another conn_qual of the IA arrives there as a new
/// CR (its service point's, its qualifier, the requester's private data), the old CR is
/// gone, and the new one accepts as any does; a qualifier nobody listens on is refused and
/// leaves the CR as it was.
#[test]
fn a_handed_off_request_arrives_at_the_other_service_point_and_connects() {
    let (a, p) = (Side::new(ALL_PRIV), Side::new(ALL_PRIV));
    let (first, first_qual) = p.listen();
    let (second, second_qual) = p.listen();
    assert_eq!(a.connect(first_qual, b"hand me", WAIT_US), OK);
    let e = wait(p.cr_evd);
    let cr = unsafe { e.event_data.cr_arrival_event_data.cr_handle };
    assert_eq!(
        unsafe { e.event_data.cr_arrival_event_data.sp_handle.psp_handle },
        first
    );
    let unused = second_qual.wrapping_add(1).max(1);
    assert_eq!(
        unsafe { dat_cr_handoff(cr, unused) },
        DatError::invalid_arg(2).code()
    );
    assert_eq!(
        unsafe { dat_cr_handoff(cr, 0) },
        DatError::invalid_arg(2).code()
    );
    assert_eq!(unsafe { dat_cr_handoff(cr, second_qual) }, OK);
    let mut param: DAT_CR_PARAM = zero();
    assert_eq!(
        unsafe { dat_cr_query(cr, dat_cr_param_mask::DAT_CR_FIELD_ALL as u32, &mut param) },
        DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_CR).code()
    );
    let e = wait(p.cr_evd);
    assert_eq!(
        e.event_number,
        dat_event_number::DAT_CONNECTION_REQUEST_EVENT as u32
    );
    let arrival = unsafe { e.event_data.cr_arrival_event_data };
    assert_eq!(
        (unsafe { arrival.sp_handle.psp_handle }, arrival.conn_qual),
        (second, second_qual)
    );
    assert_private_data(&cr_private_data(arrival.cr_handle), b"hand me");
    let (mut a, mut p) = (a, p);
    accept_and_exchange(&mut a, &mut p, arrival.cr_handle, b"move");
    unsafe {
        assert_eq!(dat_psp_free(first), OK);
        assert_eq!(dat_psp_free(second), OK);
    }
    a.buf[0] = 0;
    p.buf[0] = 0;
}

/// The common connection model: a CSP listens at the IA's address on the port of the address
/// it is given, `dat_ep_common_connect` reaches it by that address, and the request accepted
/// connects as any other.
#[test]
fn a_common_connect_reaches_the_csp_of_its_address_and_connects() {
    let (a, p) = (Side::new(ALL_PRIV), Side::new(ALL_PRIV));
    // A port free for the CSP: one a PSP held a moment ago.
    let (psp, port) = p.listen();
    assert_eq!(unsafe { dat_psp_free(psp) }, OK);
    let mut comm = DAT_COMM {
        domain: libc::AF_INET,
        r#type: libc::SOCK_STREAM,
        protocol: 0,
    };
    let mut address = loopback();
    address.sin_port = (port as u16).to_be();
    let mut csp = null_mut();
    let at = &mut address as *mut libc::sockaddr_in as DAT_IA_ADDRESS_PTR;
    assert_eq!(
        unsafe { dat_csp_create(p.ia, &mut comm, at, p.cr_evd, &mut csp) },
        OK
    );
    let mut param: DAT_CSP_PARAM = zero();
    assert_eq!(
        unsafe {
            dat_csp_query(
                csp,
                dat_csp_param_mask::DAT_CSP_FIELD_ALL as u32,
                &mut param,
            )
        },
        OK
    );
    assert_eq!((param.ia_handle, param.evd_handle), (p.ia, p.cr_evd));
    assert_eq!(unsafe { (*param.comm).r#type }, libc::SOCK_STREAM);
    // Another CSP on that port: the qualifier is in use.
    let mut other = null_mut();
    assert_eq!(
        unsafe { dat_csp_create(p.ia, &mut comm, at, p.cr_evd, &mut other) },
        DatError::unclassed(Type::DAT_CONN_QUAL_IN_USE).code()
    );
    assert_eq!(
        unsafe { dat_ep_common_connect(a.ep, at, WAIT_US, 6, b"common".as_ptr() as DAT_PVOID) },
        OK
    );
    let e = wait(p.cr_evd);
    let arrival = unsafe { e.event_data.cr_arrival_event_data };
    assert_eq!(unsafe { arrival.sp_handle.csp_handle }, csp);
    assert_private_data(&cr_private_data(arrival.cr_handle), b"common");
    let (mut a, mut p) = (a, p);
    accept_and_exchange(&mut a, &mut p, arrival.cr_handle, b"joined");
    assert_eq!(unsafe { dat_csp_free(csp) }, OK);
    assert_eq!(
        unsafe { dat_csp_free(csp) },
        DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_CSP).code()
    );
    a.buf[0] = 0;
    p.buf[0] = 0;
}

/// The SRQ's low watermark: once the receives left fall below it, one event on the IA's async
/// EVD names the SRQ with reason DAT_SRQ_LOW_WATERMARK_EVENT; it comes once per setting, and
/// at once when the SRQ is below it as it is set.
#[test]
fn an_srq_below_its_low_watermark_reports_it_once_per_setting() {
    let mut p = Side::new(ALL_PRIV);
    let srq = p.move_to_srq(8, 1);
    let (mut a, p) = connect_pair(Side::new(ALL_PRIV), p);
    let mut async_evd = null_mut();
    let mut ia_attr: DAT_IA_ATTR = zero();
    assert_eq!(
        unsafe { dat_ia_query(p.ia, &mut async_evd, 0, &mut ia_attr, 0, null_mut()) },
        OK
    );
    for slot in 0..4u64 {
        let iov = [p.iov(64 * slot as usize, 64)];
        assert_eq!(
            unsafe { dat_srq_post_recv(srq, 1, iov.as_ptr() as *mut _, cookie(slot)) },
            OK
        );
    }
    assert_eq!(unsafe { dat_srq_set_lw(srq, 3) }, OK);
    assert!(empty(async_evd), "4 receives are not below 3");
    let mut send = |n: u64| {
        a.buf[0] = n as u8;
        assert_eq!(a.post_send(&[a.iov(0, 1)], n), OK);
        assert_eq!(
            dto(p.recv_evd).1,
            dat_dto_completion_status::DAT_DTO_SUCCESS
        );
        assert_eq!(dto(a.req_evd).1, dat_dto_completion_status::DAT_DTO_SUCCESS);
    };
    send(1);
    assert!(empty(async_evd), "3 receives are not below 3");
    send(2);
    let low = |e: DAT_EVENT| {
        let data = unsafe { e.event_data.asynch_error_event_data };
        (e.event_number, data.dat_handle, data.reason)
    };
    let expected = (
        dat_event_number::DAT_ASYNC_ERROR_EP_BROKEN as u32,
        srq as DAT_HANDLE,
        srq_async_error_reason::DAT_SRQ_LOW_WATERMARK_EVENT as DAT_COUNT,
    );
    assert_eq!(low(wait(async_evd)), expected);
    send(3);
    assert!(empty(async_evd), "once per setting");
    // Set again while below it: the event comes at once.
    assert_eq!(unsafe { dat_srq_set_lw(srq, 3) }, OK);
    assert_eq!(low(wait(async_evd)), expected);
    assert_eq!(
        p.state(),
        dat_ep_state::DAT_EP_STATE_CONNECTED,
        "the EP is not broken for it"
    );
    a.buf[0] = 0;
}

/// A UD EP of `s`'s IA, zone and EVDs (the IB extension's unreliable datagrams).
fn ud_ep(s: &Side) -> DAT_EP_HANDLE {
    let mut attr = common::default_ep_attr(s.ia);
    attr.service_type = dat_ib_service_type::DAT_IB_SERVICE_TYPE_UD as DAT_SERVICE_TYPE;
    attr.max_message_size = 4096;
    attr.max_rdma_read_in = 0;
    attr.max_rdma_read_out = 0;
    let mut ep = null_mut();
    assert_eq!(
        unsafe {
            dat_ep_create(
                s.ia, s.pz, s.recv_evd, s.req_evd, s.conn_evd, &attr, &mut ep,
            )
        },
        OK
    );
    ep
}

/// A UD connection event of `ep`: its number, private data and extension data.
fn ud_conn_event(s: &Side, ep: DAT_EP_HANDLE) -> (u32, Vec<u8>, DAT_IB_EXTENSION_EVENT_DATA) {
    let e = wait(s.conn_evd);
    let data = unsafe { e.event_data.connect_event_data };
    assert_eq!(data.ep_handle, ep);
    let pd = unsafe {
        std::slice::from_raw_parts(
            data.private_data as *const u8,
            data.private_data_size as usize,
        )
    }
    .to_vec();
    let x =
        unsafe { (e.event_extension_data.as_ptr() as *const DAT_IB_EXTENSION_EVENT_DATA).read() };
    (e.event_number, pd, x)
}

/// `dat_ib_post_send_ud` of `iov` from `ep` to the EP `ah` reaches.
fn post_datagram(
    ep: DAT_EP_HANDLE,
    iov: &DAT_LMR_TRIPLET,
    ah: &DAT_IB_ADDR_HANDLE,
    c: u64,
) -> DAT_RETURN {
    let args = [1, iov as *const _ as u64, ah as *const _ as u64, c, 0];
    extension_op(ep, dat_ib_op::DAT_IB_UD_SEND_OP, &args)
}

/// UD EPs reach each other through the address handles of their UD connection events: the
/// requester's names the EP that accepted, the acceptor's the requester; each datagram lands
/// behind the 40 bytes of a routing header, in order, every byte. A freed or made-up handle is
/// refused, a UD EP sends nothing else and an RC EP no datagram, and a refused request
/// brings the acceptor's private data.
#[test]
fn ud_eps_exchange_datagrams_through_the_address_handles_of_their_connection_events() {
    use dat_ib_event_number as X;
    let mut a = Side::new(ALL_PRIV);
    let mut p = Side::new(ALL_PRIV);
    let (ua, up) = (ud_ep(&a), ud_ep(&p));
    let recv = |s: &Side, ep: DAT_EP_HANDLE, offset: usize, c: u64| {
        let iov = [s.iov(offset, 1024)];
        assert_eq!(
            unsafe { dat_ep_post_recv(ep, 1, iov.as_ptr() as *mut _, cookie(c), 0) },
            OK
        );
    };
    // Receives go first, before any exchange.
    for i in 0..3 {
        recv(&p, up, 1024 * i, i as u64);
    }
    recv(&a, ua, 2048, 9);
    let (psp, port) = p.listen();
    let connect = |pd: &[u8]| {
        let mut sin = loopback();
        let rc = unsafe {
            dat_ep_connect(
                ua,
                &mut sin as *mut _ as DAT_IA_ADDRESS_PTR,
                port,
                WAIT_US,
                pd.len() as DAT_COUNT,
                pd.as_ptr() as DAT_PVOID,
                0,
                0,
            )
        };
        assert_eq!(rc, OK);
        let e = wait(p.cr_evd);
        assert_eq!(e.event_number, X::DAT_IB_UD_CONNECTION_REQUEST_EVENT as u32);
        let cr = unsafe { e.event_data.cr_arrival_event_data.cr_handle };
        assert_eq!(cr_private_data(cr), pd);
        cr
    };
    let cr = connect(b"hello");
    // An RC EP cannot take a UD EP's request.
    assert_eq!(
        unsafe { dat_cr_accept(cr, p.ep, 0, null_mut()) },
        DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_EP).code()
    );
    assert_eq!(
        unsafe { dat_cr_accept(cr, up, 3, b"yes".as_ptr() as DAT_PVOID) },
        OK
    );
    let (number, pd, passive) = ud_conn_event(&p, up);
    assert_eq!(
        (number, &pd[..], passive.r#type),
        (
            X::DAT_IB_UD_CONNECTION_EVENT_ESTABLISHED as u32,
            &b"hello"[..],
            dat_ib_ext_type::DAT_IB_UD_PASSIVE_REMOTE_AH as u32
        )
    );
    let (number, pd, active) = ud_conn_event(&a, ua);
    assert_eq!(
        (number, &pd[..], active.r#type),
        (
            X::DAT_IB_UD_CONNECTION_EVENT_ESTABLISHED as u32,
            &b"yes"[..],
            dat_ib_ext_type::DAT_IB_UD_REMOTE_AH as u32
        )
    );
    let (to_p, to_a) = unsafe { (active.anon3.remote_ah, passive.anon3.remote_ah) };
    assert!(!to_p.ah.is_null() && !to_a.ah.is_null());
    // Odd sizes, each byte checked, behind the routing header.
    for (i, n) in [1usize, 7, 333].into_iter().enumerate() {
        for (k, b) in a.buf[..n].iter_mut().enumerate() {
            *b = (k * 7 + i) as u8;
        }
        assert_eq!(
            post_datagram(ua, &a.iov(0, n as u32), &to_p, 20 + i as u64),
            OK
        );
        let (c, st, len, op, ty, _) = ib_dto(a.req_evd);
        assert_eq!(
            (c, st, len, op, ty),
            (
                20 + i as u64,
                dat_dto_completion_status::DAT_DTO_SUCCESS,
                n as u32,
                dat_ib_dtos::DAT_IB_DTO_SEND_UD as u32,
                dat_ib_ext_type::DAT_IB_UD_SEND as u32
            )
        );
        let (c, st, len, op, ty, _) = ib_dto(p.recv_evd);
        assert_eq!(
            (c, st, len, op, ty),
            (
                i as u64,
                dat_dto_completion_status::DAT_DTO_SUCCESS,
                40 + n as u32,
                dat_ib_dtos::DAT_IB_DTO_RECV_UD as u32,
                dat_ib_ext_type::DAT_IB_UD_RECV as u32
            )
        );
        let landed = &p.buf[1024 * i + 40..1024 * i + 40 + n];
        assert!(
            landed
                .iter()
                .enumerate()
                .all(|(k, &b)| b == (k * 7 + i) as u8),
            "datagram {i}"
        );
    }
    // And back, through the acceptor's handle.
    p.buf[3000..3005].copy_from_slice(b"reply");
    assert_eq!(post_datagram(up, &p.iov(3000, 5), &to_a, 30), OK);
    assert_eq!(
        ib_dto(p.req_evd).1,
        dat_dto_completion_status::DAT_DTO_SUCCESS
    );
    assert_eq!(ib_dto(a.recv_evd).2, 45);
    assert_eq!(&a.buf[2048 + 40..2048 + 45], b"reply");
    // A UD EP sends datagrams only; an RC EP none.
    let model = DatError::bare(Type::DAT_MODEL_NOT_SUPPORTED).code();
    let iov = [a.iov(0, 1)];
    assert_eq!(
        unsafe { dat_ep_post_send(ua, 1, iov.as_ptr() as *mut _, cookie(1), 0) },
        model
    );
    assert_eq!(post_datagram(a.ep, &a.iov(0, 1), &to_p, 1), model);
    // Freed, a handle is refused; so is one never handed out.
    let free = |ep, ah: &DAT_IB_ADDR_HANDLE| {
        extension_op(
            ep,
            dat_ib_op::DAT_IB_UD_AH_FREE_OP,
            &[ah as *const _ as u64],
        )
    };
    assert_eq!(free(ua, &to_p), OK);
    assert_eq!(free(ua, &to_p), DatError::invalid_arg(2).code());
    assert_eq!(
        post_datagram(ua, &a.iov(0, 1), &to_p, 1),
        DatError::invalid_arg(4).code()
    );
    let made_up = DAT_IB_ADDR_HANDLE {
        ah: 0x1234 as *mut _,
        ..to_a
    };
    assert_eq!(
        post_datagram(up, &p.iov(0, 1), &made_up, 1),
        DatError::invalid_arg(4).code()
    );
    assert!(empty(a.req_evd) && empty(p.req_evd));
    // A refused request brings the acceptor's private data.
    let cr = connect(b"again");
    assert_eq!(
        unsafe { dat_cr_reject(cr, 2, b"no".as_ptr() as DAT_PVOID) },
        OK
    );
    let (number, pd, _) = ud_conn_event(&a, ua);
    assert_eq!(
        (number, &pd[..]),
        (X::DAT_IB_UD_CONNECTION_REJECT_EVENT as u32, &b"no"[..])
    );
    // A receive still posted is flushed with its EP.
    recv(&a, ua, 0, 77);
    assert_eq!(unsafe { dat_psp_free(psp) }, OK);
    assert_eq!(unsafe { dat_ep_free(ua) }, OK);
    assert_eq!(unsafe { dat_ep_free(up) }, OK);
    let (c, st, _, op, _, _) = ib_dto(a.recv_evd);
    assert_eq!(
        (c, st, op),
        (
            77,
            dat_dto_completion_status::DAT_DTO_ERR_FLUSHED,
            dat_ib_dtos::DAT_IB_DTO_RECV_UD as u32
        )
    );
    a.buf[0] = 0;
    p.buf[0] = 0;
}

/// `dat_ib_start_counter` / `dat_ib_stop_counter` sample the IA's device counters over an
/// interval: on RDMA the IB CM's messages of a connect (the request sent, where the kernel
/// keeps the CM's counters), on TCP nothing (no device: each counts 0, counters of other kinds
/// untouched). An unknown kind, or a handle other than an IA's, is refused.
#[test]
fn device_counters_sampled_between_start_and_stop_count_a_connects_messages() {
    use dat_ia_counters as C;
    let kind = dat_ia_counter_type::DCNT_IA_CM as u64;
    let a = Side::new(ALL_PRIV);
    let p = Side::new(ALL_PRIV);
    assert_eq!(
        extension_op(a.ia, dat_ib_op::DAT_IB_START_COUNTERS_OP, &[kind]),
        OK
    );
    assert_eq!(
        extension_op(a.ia, dat_ib_op::DAT_IB_START_COUNTERS_OP, &[7]),
        DatError::invalid_arg(2).code()
    );
    assert_eq!(
        extension_op(a.ep, dat_ib_op::DAT_IB_STOP_COUNTERS_OP, &[kind]),
        DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_IA).code()
    );
    let (a, _p) = connect_pair(a, p);
    assert_eq!(
        extension_op(a.ia, dat_ib_op::DAT_IB_STOP_COUNTERS_OP, &[kind]),
        OK
    );
    let mut ia = [0u64; C::DCNT_IA_ALL_COUNTERS as usize];
    let all = C::DCNT_IA_ALL_COUNTERS as u64;
    assert_eq!(
        extension_op(
            a.ia,
            dat_ib_op::DAT_IB_QUERY_COUNTERS_OP,
            &[all, ia.as_mut_ptr() as u64, 0]
        ),
        OK
    );
    let requests = ia[C::DCNT_IA_CM_REQ_TX as usize];
    if on_rdma() && std::path::Path::new("/sys/class/infiniband_cm").exists() {
        assert!(requests >= 1, "the connect's request counted: {requests}");
    } else if !on_rdma() {
        assert_eq!(requests, 0);
    }
    assert_eq!(
        ia[C::DCNT_IA_CM_ACTIVE_EST as usize],
        1,
        "the IA's own counters are kept"
    );
}

/// A CR EVD can be freed as soon as its service point and its request are gone: the thread
/// that delivered the request holds nothing once the event is out (dtestx -U 3 -m, whose
/// client frees its CR EVD right after, once in 10 to 20 runs found it still in use).
#[test]
fn a_cr_evd_is_free_to_go_once_its_request_and_service_point_are() {
    let a = Side::new(ALL_PRIV);
    let p = Side::new(ALL_PRIV);
    // (Fewer on the emulated RDMA guest, where a connect takes milliseconds.)
    for _ in 0..if on_rdma() { 20 } else { 200 } {
        let cr_evd = create_evd(p.ia, 4, dat_evd_flags::DAT_EVD_CR_FLAG);
        let mut psp = null_mut();
        let mut port = 0;
        let flags = dat_psp_flags::DAT_PSP_CONSUMER_FLAG as DAT_PSP_FLAGS;
        assert_eq!(
            unsafe { dat_psp_create_any(p.ia, &mut port, cr_evd, flags, &mut psp) },
            OK
        );
        assert_eq!(a.connect(port, b"", WAIT_US), OK);
        let e = wait(cr_evd);
        let cr = unsafe { e.event_data.cr_arrival_event_data.cr_handle };
        assert_eq!(unsafe { dat_cr_reject(cr, 0, null_mut()) }, OK);
        assert_eq!(unsafe { dat_psp_free(psp) }, OK);
        assert_eq!(
            unsafe { dat_evd_free(cr_evd) },
            OK,
            "the CR EVD is in use no more"
        );
        assert_eq!(
            a.conn_event().0,
            dat_event_number::DAT_CONNECTION_EVENT_PEER_REJECTED
        );
        assert_eq!(unsafe { dat_ep_reset(a.ep) }, OK);
    }
}

/// `dat_ep_query`'s port qualifiers on both sides of a connection: the active EP's remote one
/// is the conn qual it connected to, its local one its connection's own port; the passive
/// EP's are the same two the other way round (its local one the service point's, as
/// OpenFabrics reports it; it once reported 0).
#[test]
fn both_sides_of_a_connection_name_its_port_qualifiers() {
    let (a, p) = (Side::new(ALL_PRIV), Side::new(ALL_PRIV));
    let (psp, port) = p.listen();
    assert_eq!(a.connect(port, b"", WAIT_US), OK);
    let (cr, _) = p.request();
    accept_established(&a, &p, cr);
    let ports = |s: &Side| {
        let mut param: DAT_EP_PARAM = zero();
        let mask =
            (DAT_EP_FIELD_LOCAL_PORT_QUAL | DAT_EP_FIELD_REMOTE_PORT_QUAL) as DAT_EP_PARAM_MASK;
        assert_eq!(unsafe { dat_ep_query(s.ep, mask, &mut param) }, OK);
        (param.local_port_qual, param.remote_port_qual)
    };
    let (a_local, a_remote) = ports(&a);
    assert_eq!(a_remote, port, "the active EP's remote port qualifier");
    assert_ne!(a_local, 0, "the active EP's local port qualifier");
    assert_eq!(
        ports(&p),
        (port, a_local),
        "the passive EP's local and remote port qualifiers"
    );
    assert_eq!(unsafe { dat_psp_free(psp) }, OK);
}

/// A conn qual is a TCP port on this transport, and the local port the kernel picks for a
/// connection comes from the same range: a service point of this host must still listen on
/// a port one of its connections holds as its local end (dapltest's server once waited for
/// ever on a test thread whose PSP failed so, `DAT_CONN_QUAL_IN_USE`), and a request to that
/// conn qual must reach it. Up to `ATTEMPTS` connections are tried: the kernel lets
/// connections to different peers share a local port, and a socket without `SO_REUSEADDR`
/// that shares it (another test's plain `TcpStream`, alive or in TIME_WAIT) keeps the port
/// truly in use (1 run in about 100 with the other tests of this file beside it under load;
/// before `SO_REUSEADDR` on our connecting sockets, every attempt failed).
#[test]
fn a_psp_listens_on_a_port_a_connection_of_this_host_holds_locally() {
    const ATTEMPTS: usize = 3;
    if on_rdma() {
        return; // rdma-cm's port space holds no connection's local end
    }
    let mut tried = Vec::new();
    // `_a` holds the port while the PSP listens on it and a request comes.
    let (_a, p, held, psp) = loop {
        let (a, p) = connected(ALL_PRIV);
        let mut param: DAT_EP_PARAM = zero();
        let mask = DAT_EP_FIELD_LOCAL_PORT_QUAL as DAT_EP_PARAM_MASK;
        assert_eq!(unsafe { dat_ep_query(a.ep, mask, &mut param) }, OK);
        let held = param.local_port_qual;
        assert_ne!(held, 0, "the active EP names its connection's local port");
        let mut psp = null_mut();
        let flags = dat_psp_flags::DAT_PSP_CONSUMER_FLAG as DAT_PSP_FLAGS;
        let rc = unsafe { dat_psp_create(p.ia, held, p.cr_evd, flags, &mut psp) };
        if rc == OK {
            break (a, p, held, psp);
        }
        tried.push(format!("port {held}: {rc:#x}"));
        assert!(
            tried.len() < ATTEMPTS,
            "a PSP on the local port of a connection of this host: {tried:?}"
        );
    };
    let other = Side::new(ALL_PRIV);
    assert_eq!(other.connect(held, b"to the PSP", WAIT_US), OK);
    let (cr, pd) = p.request();
    assert_private_data(&pd, b"to the PSP");
    assert_eq!(unsafe { dat_cr_reject(cr, 0, null_mut()) }, OK);
    assert_eq!(
        other.conn_event().0,
        dat_event_number::DAT_CONNECTION_EVENT_PEER_REJECTED
    );
    assert_eq!(unsafe { dat_psp_free(psp) }, OK);
}
