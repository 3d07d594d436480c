//! A thread that streams sends over a socket (many in flight, reaped as the window fills, as
//! `datperf -m send` and storage programs do) completes them itself: the progress thread is
//! not woken for each acknowledgement. It once was: the stream's waits found their
//! completions queued already (the progress thread had read the acknowledgements), so they
//! never polled the connection and never took it on lease; each wake-up took a CPU from a
//! thread that runs and met the posting thread's next write on the socket's lock (64 KiB
//! sends between two hosts ran at 0.6x a raw socket's rate). Now a post with others in
//! flight looks at the connection as a poll does, and a stream's posts, close together, take
//! it on lease.
//!
//! The receiver and the sender are child processes (this test binary run again,
//! `LIBDAT_DIRECT=0`: the socket path a peer on another host gets), so the progress thread
//! the sender counts is its own alone.

use dat::abi::*;
use dat::api::ep::dat_ep_post_send;
use dat::api::evd::dat_evd_wait;

mod common;
use common::*;

/// Taken by each test that streams: run side by side, they would count each other's load.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Sends in a stream, at most `WINDOW` in flight, of `SIZE` bytes each.
const MESSAGES: u64 = 4000;
const WINDOW: u64 = 16;
const SIZE: u32 = 1024;

/// Streams, one after another on the connection: the best counts (see `WAKE_UPS`).
const ROUNDS: u64 = 3;

/// How long the sender takes to prepare each message: longer than the receiver takes to take
/// one, so acknowledgements come back before the sender reaps (a stream that the sender's
/// work paces, as 64 KiB sends are paced by their copies).
const PREPARE: std::time::Duration = std::time::Duration::from_micros(20);

/// Wake-ups of the sender's progress thread a stream may cost: a handful until the thread
/// takes the connection on lease (2 to 22 here). The sender runs with a 10 s lease
/// (`beside_receiver`): on a busy machine a sender that loses its CPU posts further apart
/// than a stream (its lease then lapses, rightly, and the progress thread handles what comes:
/// thousands of wake-ups with two busy loops beside the test, 7 runs in 10 with the default
/// lease), and the test is about the stream taking the lease, not about the scheduler. The
/// best of `ROUNDS` streams counts. Woken for each acknowledgement, it took 1400-4100 of them.
const WAKE_UPS: u64 = MESSAGES / 10;

/// The child's side: accepts one connection, keeps `WINDOW` receives posted, checks each of
/// the `ROUNDS` x `MESSAGES` messages, and exits with 0 when all were whole and in order.
#[test]
fn stream_receiver_child() {
    if std::env::var_os("LIBDAT_TEST_STREAM_CHILD").is_none() {
        return; // only the child does anything
    }
    let p = Side::with_buffer(ALL_PRIV, (WINDOW * u64::from(SIZE)) as usize);
    let (_psp, port) = p.listen();
    let slot = |n: u64| ((n % WINDOW) * u64::from(SIZE)) as usize;
    for n in 0..WINDOW {
        p.post_recv(&[p.iov(slot(n), SIZE)], n);
    }
    p.tell_parent_and_accept(&format!("PEER {port}"));
    assert_eq!(
        p.conn_event().0,
        dat_event_number::DAT_CONNECTION_EVENT_ESTABLISHED
    );
    let mut whole = true;
    for n in 0..ROUNDS * MESSAGES {
        let (c, status, length, _) = dto(p.recv_evd);
        let at = slot(n);
        whole &= c == n
            && status == dat_dto_completion_status::DAT_DTO_SUCCESS
            && length == SIZE
            && p.buf[at..at + SIZE as usize].iter().all(|&b| b == n as u8);
        if n + WINDOW < ROUNDS * MESSAGES {
            p.post_recv(&[p.iov(at, SIZE)], n + WINDOW);
        }
    }
    std::process::exit(if whole { 0 } else { 3 });
}

/// Starts the receiver child (`stream_receiver_child`) over the socket path: it, and the port
/// it listens on.
fn start_receiver() -> (std::process::Child, String) {
    let mut child = test_child("stream_receiver_child")
        .env("LIBDAT_TEST_STREAM_CHILD", "1")
        .env("LIBDAT_DIRECT", "0")
        .spawn()
        .unwrap();
    let port = child_says(&mut child, "PEER ");
    (child, port)
}

/// The calling process's progress thread: its context switches so far (it sleeps in
/// `epoll_wait` between wake-ups, one voluntary switch each).
fn progress_thread_switches() -> u64 {
    let mut found = None;
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let status = std::fs::read_to_string(task.path().join("status")).unwrap_or_default();
        if status.lines().next() != Some("Name:\tdat-progress") {
            continue;
        }
        let count = |key: &str| -> u64 {
            status
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|v| v.trim().parse().ok())
                .unwrap()
        };
        assert!(found.is_none(), "one progress thread");
        found = Some(count("voluntary_ctxt_switches:") + count("nonvoluntary_ctxt_switches:"));
    }
    found.expect("the progress thread runs")
}

/// The calling thread's involuntary context switches so far: times the scheduler took its CPU.
fn preemptions() -> u64 {
    // SAFETY: getrusage writes one rusage, which is plain data.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid rusage to fill.
    assert_eq!(
        unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) },
        0
    );
    usage.ru_nivcsw as u64
}

/// Spins for `how_long`, as a program busy preparing its next message.
fn compute(how_long: std::time::Duration) {
    let start = std::time::Instant::now();
    while start.elapsed() < how_long {
        std::hint::spin_loop();
    }
}

/// The child that streams and polls: connects to the receiver child at the port that
/// `LIBDAT_TEST_STREAM_POLLER` names, streams `ROUNDS` x `MESSAGES` sends, `WINDOW` in flight,
/// preparing each (`PREPARE`) and polling for a completion when its window is full, and
/// counts its progress thread's wake-ups in each round: it panics (exit 101) when even the
/// best round took more than `WAKE_UPS`.
#[test]
fn stream_poller_child() {
    let Some(mut a) = connect_to_receiver("LIBDAT_TEST_STREAM_POLLER") else {
        return; // only the child does anything
    };
    // Each stream of the round begins where the last ended (the receiver counts on).
    let mut posted = 0;
    let mut done = 0;
    let mut rounds = Vec::new();
    for round in 1..=ROUNDS {
        let before = progress_thread_switches();
        let preempted_before = preemptions();
        let end = round * MESSAGES;
        while done < end {
            while posted < end && posted - done < WINDOW {
                let at = ((posted % WINDOW) * u64::from(SIZE)) as usize;
                a.buf[at..at + SIZE as usize].fill(posted as u8);
                assert_eq!(a.post_send(&[a.iov(at, SIZE)], posted), OK);
                posted += 1;
                compute(PREPARE);
            }
            // When its window is full. Polled: a blocking wait that sleeps (the receiver
            // lagging) would rightly need the progress thread to wake it.
            let (c, status, _) = polled(a.req_evd);
            assert_eq!(
                (c, status),
                (done, dat_dto_completion_status::DAT_DTO_SUCCESS)
            );
            done += 1;
        }
        rounds.push((
            progress_thread_switches() - before,
            preemptions() - preempted_before,
        ));
    }
    // The best round: one the machine's other work disturbed shows the scheduler, not us.
    let wake_ups = rounds.iter().map(|r| r.0).min().unwrap();
    assert!(
        wake_ups <= WAKE_UPS,
        "the progress thread woke at least {wake_ups} times in each stream of {MESSAGES} sends \
         (at most {WAKE_UPS}; per round, its wake-ups and the times the sending thread lost \
         its CPU: {rounds:?})"
    );
    std::process::exit(0);
}

#[test]
fn a_thread_that_streams_sends_completes_them_without_waking_the_progress_thread() {
    if on_rdma() {
        return; // a device acknowledges: there is no progress thread to wake
    }
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    beside_receiver(
        "stream_poller_child",
        "LIBDAT_TEST_STREAM_POLLER",
        &format!("the progress thread woke at most {WAKE_UPS} times in a stream"),
    );
}

/// How long the submitter child's completion thread waits for each completion: far less than
/// the lease it runs with (`LIBDAT_LEASE_US`, 10 s), far more than a completion takes.
const COMPLETION_WAIT_US: DAT_TIMEOUT = 2_000_000;

/// A child's side: connected to the receiver child at the port its variable `var` names, or
/// None in any other process (the test then does nothing).
fn connect_to_receiver(var: &str) -> Option<Side> {
    let port: DAT_CONN_QUAL = std::env::var_os(var)?.to_str().unwrap().parse().unwrap();
    let a = Side::with_buffer(ALL_PRIV, (WINDOW * u64::from(SIZE)) as usize);
    assert_eq!(a.connect(port, b"", WAIT_US), OK);
    assert_eq!(
        a.conn_event().0,
        dat_event_number::DAT_CONNECTION_EVENT_ESTABLISHED
    );
    Some(a)
}

/// The next event of `evd` (a handle, as any thread may hold it), slept for in `dat_evd_wait`
/// at most `COMPLETION_WAIT_US`; a child that does not get it in time exits with 3, saying
/// which (`what`).
fn completion_within_bound(evd: usize, what: &str) -> DAT_EVENT {
    let mut e: DAT_EVENT = zero();
    let mut more = 0;
    // SAFETY: a live EVD, and valid out-pointers.
    let rc = unsafe {
        dat_evd_wait(
            evd as DAT_EVD_HANDLE,
            COMPLETION_WAIT_US,
            1,
            &mut e,
            &mut more,
        )
    };
    if rc != OK {
        eprintln!("{what}: {rc:#x} after {COMPLETION_WAIT_US} us");
        std::process::exit(3);
    }
    e
}

/// Runs child test `name` (its variable `var` naming the receiver's port) beside the receiver
/// child, both over the socket path, with a 10 s lease and waits that sleep at once; asserts
/// that it exits with 0 (`why`) and that the receiver got every message.
fn beside_receiver(name: &str, var: &str, why: &str) {
    let (mut receiver, port) = start_receiver();
    let child = test_child(name)
        .env(var, &port)
        .env("LIBDAT_DIRECT", "0")
        .env("LIBDAT_LEASE_US", "10000000")
        .env("LIBDAT_SPIN_US", "0")
        .status()
        .unwrap();
    assert_eq!(child.code(), Some(0), "{why}");
    assert_eq!(
        receiver.wait().unwrap().code(),
        Some(0),
        "the receiver got every message whole, in order"
    );
}

/// The child that submits: connects to the receiver child at the port that
/// `LIBDAT_TEST_STREAM_SUBMITTER` names and streams `ROUNDS` x `MESSAGES` sends, `WINDOW` in
/// flight, from this thread, which blocks outside the library (on a condition variable) while
/// its window is full; another thread reaps the completions with `dat_evd_wait`. Exits with 0
/// when every completion came in order within `COMPLETION_WAIT_US`, 3 when one did not.
#[test]
fn stream_submitter_child() {
    let Some(mut a) = connect_to_receiver("LIBDAT_TEST_STREAM_SUBMITTER") else {
        return; // only the child does anything
    };
    let total = ROUNDS * MESSAGES;
    let reaped = std::sync::Arc::new((std::sync::Mutex::new(0u64), std::sync::Condvar::new()));
    let req_evd = a.req_evd as usize; // a handle: plain data, any thread may use it
    let completer = {
        let reaped = reaped.clone();
        std::thread::spawn(move || {
            for n in 0..total {
                let e = completion_within_bound(req_evd, &format!("completion {n}"));
                // SAFETY: a DTO EVD's events are DTO completions.
                let d = unsafe { e.event_data.dto_completion_event_data };
                // SAFETY: the cookie's 64 bits are what the post gave.
                assert_eq!(unsafe { d.user_cookie.as_64 }, n);
                let (count, turn) = &*reaped;
                *count.lock().unwrap() = n + 1;
                turn.notify_one();
            }
        })
    };
    for posted in 0..total {
        let (count, turn) = &*reaped;
        let mut done = count.lock().unwrap();
        while posted - *done >= WINDOW {
            done = turn.wait(done).unwrap();
        }
        drop(done);
        let at = ((posted % WINDOW) * u64::from(SIZE)) as usize;
        a.buf[at..at + SIZE as usize].fill(posted as u8);
        assert_eq!(a.post_send(&[a.iov(at, SIZE)], posted), OK);
    }
    completer.join().unwrap();
    std::process::exit(0);
}

/// A stream whose completions another thread reaps: the submitting thread blocks outside the
/// library while its window is full, and the reaping thread sleeps in `dat_evd_wait` until
/// the progress thread, woken by the acknowledgements, wakes it. The submitting thread must
/// not hold the connection on lease: nobody would read those acknowledgements until the lease
/// ran out (it once did: with the lease made 10 s long and waits that sleep at once, the
/// stream stalled 10 s at a time; 0.2 s in all now).
#[test]
fn a_stream_that_another_thread_reaps_leaves_the_connection_to_the_progress_thread() {
    if on_rdma() {
        return; // a device acknowledges: no lease, no progress thread
    }
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    beside_receiver(
        "stream_submitter_child",
        "LIBDAT_TEST_STREAM_SUBMITTER",
        &format!("every completion came within {COMPLETION_WAIT_US} us"),
    );
}

/// The child whose polling thread goes elsewhere holding its lease: connects to the receiver
/// child at the port `LIBDAT_TEST_LEASE_HOLDER` names. Another thread sends all but the last
/// of the `ROUNDS` x `MESSAGES` messages, one at a time, polling for each completion with
/// `dat_evd_dequeue` (so it takes the connection on lease), then blocks outside the library;
/// this thread then sends the last and sleeps in `dat_evd_wait` for its completion. Exits
/// with 0 when it came within `COMPLETION_WAIT_US`, 3 when it did not.
#[test]
fn lease_holder_child() {
    let Some(mut a) = connect_to_receiver("LIBDAT_TEST_LEASE_HOLDER") else {
        return; // only the child does anything
    };
    let total = ROUNDS * MESSAGES;
    let slot = |n: u64| ((n % WINDOW) * u64::from(SIZE)) as usize;
    let iovs: Vec<DAT_LMR_TRIPLET> = (0..WINDOW).map(|n| a.iov(slot(n), SIZE)).collect();
    // Handles and the buffer's address: plain data, any thread may use them.
    let (ep, req_evd, buf) = (
        a.ep as usize,
        a.req_evd as usize,
        a.buf.as_mut_ptr() as usize,
    );
    let send = move |n: u64| {
        let mut iov = iovs[(n % WINDOW) as usize];
        // SAFETY: the slot lies inside the registered buffer, which outlives the process's
        // threads (the process exits before `a` drops), and no send of it is in flight.
        unsafe { std::ptr::write_bytes((buf + slot(n)) as *mut u8, n as u8, SIZE as usize) };
        let flags = dat_completion_flags::DAT_COMPLETION_DEFAULT_FLAG as DAT_COMPLETION_FLAGS;
        // SAFETY: a live EP, and one valid triplet.
        let rc = unsafe { dat_ep_post_send(ep as DAT_EP_HANDLE, 1, &mut iov, cookie(n), flags) };
        assert_eq!(rc, OK, "send {n}");
    };
    let (gone, went) = std::sync::mpsc::channel();
    let (_stay, stays) = std::sync::mpsc::channel::<()>();
    let holder_send = send.clone();
    std::thread::spawn(move || {
        for n in 0..total - 1 {
            holder_send(n);
            let (c, status, _) = polled(req_evd as DAT_EVD_HANDLE);
            assert_eq!((c, status), (n, dat_dto_completion_status::DAT_DTO_SUCCESS));
        }
        gone.send(()).unwrap();
        let _ = stays.recv(); // outside the library, its lease held, until the process exits
    });
    went.recv().unwrap();
    send(total - 1);
    completion_within_bound(req_evd, "the last send's completion");
    std::process::exit(0);
}

/// A thread that sleeps in `dat_evd_wait` for a connection's events while another thread
/// holds the connection on lease and went elsewhere (it blocks outside the library) gets
/// them: the engine looks whether the holder still polls, and takes the connection back from
/// one that stopped. The sleeper once waited for the lease to run out (here 10 s, the wait's
/// 2 s bound passed).
#[test]
fn a_wait_takes_the_connection_back_from_a_lease_holder_gone_elsewhere() {
    if on_rdma() {
        return; // a device acknowledges: no lease, no progress thread
    }
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    beside_receiver(
        "lease_holder_child",
        "LIBDAT_TEST_LEASE_HOLDER",
        &format!("the sleeping waiter's completion came within {COMPLETION_WAIT_US} us"),
    );
}
