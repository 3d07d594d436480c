//! A process that receives a message and exits at once, without disconnecting or closing
//! anything: its peer's send completes successfully, as on RDMA hardware, whose device
//! acknowledged the message as it landed. Over the socket (the receiving child runs with
//! `LIBDAT_DIRECT=0`), where an acknowledgement waits a moment for a request to carry it, the
//! library writes the ones it holds as the process exits.
//!
//! The receiver is a child process (this test binary run again).

use dat::abi::*;

mod common;
use common::*;

/// How many receivers exit: each did so within the acknowledgement's wait in most runs
/// before the library wrote held acknowledgements at exit.
const ROUNDS: usize = 10;

/// Runs as the child of `a_message_received_just_before_its_receiver_exits_completes_at_its_sender`:
/// accepts one connection, prints its port, and exits as soon as one message has come, found
/// by `dat_evd_dequeue` (the thread polls the connection itself) or by `dat_evd_wait`.
#[test]
fn exiting_receiver_child() {
    if std::env::var_os("LIBDAT_TEST_EXITING_CHILD").is_none() {
        return; // only the child does anything
    }
    let p = Side::new(ALL_PRIV);
    let (_psp, port) = p.listen();
    p.post_recv(&[p.iov(0, 16)], 1);
    p.tell_parent_and_accept(&format!("PEER {port}"));
    assert_eq!(
        p.conn_event().0,
        dat_event_number::DAT_CONNECTION_EVENT_ESTABLISHED
    );
    let (status, length) = if std::env::var_os("LIBDAT_TEST_EXIT_POLLING").is_some() {
        let (_, status, length) = polled(p.recv_evd);
        (status, length)
    } else {
        let (_, status, length, _) = dto(p.recv_evd);
        (status, length)
    };
    let whole = status == dat_dto_completion_status::DAT_DTO_SUCCESS
        && length == 16
        && p.buf[..16] == *b"the last message";
    // No disconnect, no close: the process ends here.
    std::process::exit(if whole { 0 } else { 3 });
}

#[test]
fn a_message_received_just_before_its_receiver_exits_completes_at_its_sender() {
    for round in 0..ROUNDS {
        let mut child = test_child("exiting_receiver_child")
            .env("LIBDAT_TEST_EXITING_CHILD", "1")
            .env("LIBDAT_DIRECT", "0")
            .env(
                if round % 2 == 0 {
                    "LIBDAT_TEST_EXIT_POLLING"
                } else {
                    "LIBDAT_TEST_EXIT_WAITING"
                },
                "1",
            )
            .spawn()
            .unwrap();
        let port: DAT_CONN_QUAL = child_says(&mut child, "PEER ").parse().unwrap();
        let mut a = Side::new(ALL_PRIV);
        assert_eq!(a.connect(port, b"", WAIT_US), OK);
        assert_eq!(
            a.conn_event().0,
            dat_event_number::DAT_CONNECTION_EVENT_ESTABLISHED
        );
        a.buf[..16].copy_from_slice(b"the last message");
        assert_eq!(a.post_send(&[a.iov(0, 16)], 1), OK);
        let (_, status, _, _) = dto(a.req_evd);
        let exit = child.wait().unwrap();
        assert_eq!(
            exit.code(),
            Some(0),
            "round {round}: the child received the message whole"
        );
        assert_eq!(
            status,
            dat_dto_completion_status::DAT_DTO_SUCCESS,
            "round {round}: the send the child received completed"
        );
    }
}
