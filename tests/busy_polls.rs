//! A program that polls its EVDs in a loop (MPI progress engines do) keeps its speed on a busy
//! machine: an empty `dat_evd_dequeue` never gives up the CPU. It once yielded it on every poll
//! of an EVD that only the progress thread fills (a connection EVD): 1.5 ms a poll with a busy
//! loop on each core, where a poll takes a fraction of a microsecond (before the fix, this test
//! took 40 s and 9000 context switches for the polls of the connection EVD; now 1 ms and none).
//! In its own test binary: the busy loops would slow every other test of the process.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod common;
use common::{connected, empty, ALL_PRIV};

/// Polls of each EVD: a fraction of a millisecond in all when no poll gives up the CPU; with a
/// time slice lost to a busy loop per poll, seconds to minutes.
const POLLS: usize = 20_000;

/// The bound on all of them, with a machine's other load in mind: thousands of times what they
/// take, a tenth of what yielding polls took.
const BOUND: Duration = Duration::from_secs(5);

/// Times the polling thread may lose the CPU during them: the scheduler's ticks take it from
/// time to time beside the busy loops; a poll that gives it up loses it once per poll.
const SWITCHES: i64 = 200;

/// The calling thread's context switches so far, voluntary and not (a `sched_yield` that lets
/// another thread run counts as one of them).
fn switches() -> i64 {
    // SAFETY: getrusage writes one rusage, which is plain data.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid rusage to fill.
    assert_eq!(
        unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) },
        0
    );
    usage.ru_nvcsw + usage.ru_nivcsw
}

#[test]
fn empty_polls_never_give_up_the_cpu_beside_two_busy_loops_per_core() {
    let (a, _p) = connected(ALL_PRIV);
    // The connection's events are taken: its connection EVD and receive EVD are empty now.
    while !empty(a.conn_evd) {}
    let stop = Arc::new(AtomicBool::new(false));
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let spinning = 2 * cores; // the polling thread shares a core with one of them at least
    let spinners: Vec<_> = (0..spinning)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            })
        })
        .collect();
    let mut took = Vec::new();
    for (name, evd) in [("connection", a.conn_evd), ("receive", a.recv_evd)] {
        let (start, switched) = (Instant::now(), switches());
        for _ in 0..POLLS {
            assert!(empty(evd), "the {name} EVD got an event");
        }
        took.push((name, start.elapsed(), switches() - switched));
    }
    stop.store(true, Ordering::Relaxed);
    for s in spinners {
        s.join().unwrap();
    }
    for (name, elapsed, switched) in took {
        eprintln!("busy_polls: {POLLS} empty polls of the {name} EVD beside {spinning} busy loops: {elapsed:?}, {switched} context switches");
        assert!(switched < SWITCHES, "{POLLS} empty polls of the {name} EVD gave up the CPU {switched} times beside {spinning} busy loops");
        assert!(
            elapsed < BOUND,
            "{POLLS} empty polls of the {name} EVD took {elapsed:?} beside {spinning} busy loops"
        );
    }
}
