//! The progress thread asks the scheduler for a short slice and keeps the program's own
//! priority: a program run under `nice` must not find our thread scheduled ahead of it.
//! In its own test binary, because the thread starts once per process (from the thread that
//! first needs it, whose nice value it inherits).

mod common;
use common::{connected, ALL_PRIV};

/// Each thread of this process whose name is `name`: (nice value, scheduler slice in ns, when
/// the kernel shows it).
fn threads_named(name: &str) -> Vec<(i64, Option<u64>)> {
    let mut found = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let dir = task.path();
        let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        if comm.trim() != name {
            continue;
        }
        let stat = std::fs::read_to_string(dir.join("stat")).unwrap();
        // After the name's closing parenthesis: state is field 3, nice field 19.
        let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..]
            .split_whitespace()
            .collect();
        let nice = fields[16].parse().unwrap();
        let slice = std::fs::read_to_string(dir.join("sched"))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("se.slice"))
                    .and_then(|l| l.split(':').nth(1))
                    .and_then(|v| v.trim().parse().ok())
            });
        found.push((nice, slice));
    }
    found
}

#[test]
fn the_progress_thread_keeps_the_programs_nice_value() {
    // Linux sets nice per thread; threads inherit their creator's.
    // SAFETY: setpriority on the calling thread (who = 0) with a lower priority is always allowed.
    assert_eq!(unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 5) }, 0);
    let (_a, _p) = connected(ALL_PRIV); // starts the progress thread, from this thread
    let engines = threads_named("dat-progress");
    assert_eq!(engines.len(), 1, "one progress thread: {engines:?}");
    let (nice, slice) = engines[0];
    assert_eq!(
        nice, 5,
        "the progress thread runs at the program's nice value"
    );
    // Kernels that show the slice (those with EEVDF) grant the short one it asks for; older
    // ones ignore the request.
    if let Some(slice) = slice {
        assert_eq!(slice, 100_000, "the progress thread's slice");
    }
}
