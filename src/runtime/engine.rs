//! The progress engine: one thread per process that the kernel wakes when a descriptor a
//! transport registered is ready, or when a timer falls due. It is what makes a connection
//! move while no thread of the program calls the library: an RDMA write lands while the
//! target computes or polls memory, as it would on RDMA hardware.
//!
//! A source registers its descriptor once and arms it for one report at a time
//! (`EPOLLONESHOT`): a report disarms it until the source arms it again, so the engine never
//! handles one source twice at once, and a source whose frames a consumer's polling thread
//! handles (see `lease`) stays disarmed and costs the engine nothing.
//!
//! Each source may also keep one timer (an acknowledgement held for a ride, a handshake's
//! deadline). The engine sleeps until the earliest one (`epoll_pwait2`, to the microsecond).
//! A consumer's thread that sets an earlier one while the engine sleeps sets an alarm (a
//! `timerfd` in the engine's poll) for it, and wakes nobody: a wake-up to say "sleep less"
//! took a CPU from the threads that run, and on a small machine whose threads all spin (a
//! polling ping-pong) cost one of them its turn.

use std::cell::Cell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Once};
use std::time::Duration;

use parking_lot::Mutex;
use slab::Slab;

use super::sys;

/// Something the engine reports to.
pub trait Source: Send + Sync {
    /// Called on the engine's thread with the `EPOLL*` bits the kernel reported; the source is
    /// disarmed until it arms itself again. `events` is 0 when the source's timer fell due.
    fn on_event(self: Arc<Self>, events: u32);

    /// The process exits (`exit`, or a return from `main`) while the source is registered:
    /// what it owes its peer and only holds back for a moment goes now, without blocking.
    fn on_exit(&self) {}
}

/// A source's place in the engine: what the kernel's reports carry (slot and generation, so a
/// report for a source that left and whose slot was reused reaches nobody).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Token(u64);

impl Token {
    fn new(slot: usize, generation: u32) -> Token {
        Token(((generation as u64) << 32) | slot as u64)
    }
    fn slot(self) -> usize {
        (self.0 & 0xffff_ffff) as usize
    }
    fn generation(self) -> u32 {
        (self.0 >> 32) as u32
    }
}

struct Entry {
    generation: u32,
    /// Held until the source deregisters: a connection lives on in the engine while it ends.
    source: Arc<dyn Source>,
    /// The deadline of the source's timer (monotonic microseconds), 0 when none.
    deadline: u64,
}

struct Sources {
    slab: Slab<Entry>,
    /// Bumped for every slot that is vacated, so each registration has its own generation.
    generation: u32,
}

impl Sources {
    /// Whether `token` names a registered source.
    fn current(&self, token: Token) -> bool {
        self.slab
            .get(token.slot())
            .is_some_and(|e| e.generation == token.generation())
    }

    /// Takes the source `token` names out (the caller drops it outside the lock).
    fn remove(&mut self, token: Token) -> Option<Entry> {
        if !self.current(token) {
            return None;
        }
        self.generation = self.generation.wrapping_add(1).max(1);
        Some(self.slab.remove(token.slot()))
    }
}

pub struct Engine {
    epoll: OwnedFd,
    /// Rung to make the engine look at its timers again (one became earlier).
    waker: OwnedFd,
    /// Fires when a timer a consumer's thread set, earlier than the engine's sleep, falls due.
    alarm: OwnedFd,
    /// When `alarm` fires (monotonic microseconds; past or 0: it is not set). Its lock orders
    /// the threads that set it.
    alarm_at: Mutex<u64>,
    sources: Mutex<Sources>,
    timers: Mutex<BinaryHeap<Reverse<(u64, Token)>>>,
    /// The deadline the engine sleeps until (`u64::MAX`: none; 0: awake): a new timer rings
    /// only if earlier.
    sleeping_until: AtomicU64,
    /// Calls to make on the engine's thread, holding nothing (see `defer`).
    deferred: Mutex<Vec<Deferred>>,
    has_deferred: AtomicBool,
}

/// A call `Engine::defer` hands to the engine's thread.
pub type Deferred = Box<dyn FnOnce() + Send>;

thread_local! {
    /// Set on the engine's thread.
    static ON_ENGINE: Cell<bool> = const { Cell::new(false) };
    /// Set on the engine's thread by a source that handled part of a stream of large
    /// messages, whose next one is probably on its way (see `expect_more_soon`).
    static MORE_SOON: Cell<bool> = const { Cell::new(false) };
}

/// How long the engine polls for what comes next before it sleeps, after a source handled
/// part of a stream of large messages (microseconds).
const STREAM_LINGER_US: u64 = 50;

/// A source on the engine's thread handled part of a stream of large messages: the engine
/// polls for the next one a moment (`STREAM_LINGER_US`, yielding its CPU to any thread that
/// wants it) before it sleeps. Woken for each message instead, it made a 64 KiB RDMA-write
/// stream between two hosts run at 0.6-0.75x a raw socket's rate on a 2-core machine, though
/// it ran at raw's rate with the two processes pinned to a CPU each: a thread woken by the
/// sender's system call is drawn to the sender's CPU.
pub fn expect_more_soon() {
    MORE_SOON.with(|c| c.set(true));
}

/// Whether the calling thread is the engine's.
pub fn on_engine() -> bool {
    ON_ENGINE.with(Cell::get)
}

/// The process's engine and the process that started it (a forked child starts its own).
static ENGINE: Mutex<Option<(u32, Arc<Engine>)>> = Mutex::new(None);

/// How long the exiting thread waits for a lock another thread holds (see `process_exits`).
const EXIT_LOCK_WAIT: Duration = Duration::from_millis(20);

/// Run by the C library at exit (registered in `Engine::get`). No panic crosses into it.
extern "C" fn on_process_exit() {
    let _ = std::panic::catch_unwind(Engine::process_exits);
}

/// The report that means "the waker rang" (no source has slot `u32::MAX`).
const WAKER: u64 = u32::MAX as u64;

/// The report that means "the alarm fired" (no source has generation 0).
const ALARM: u64 = u32::MAX as u64 - 1;

/// The most reports one wait takes.
const BATCH: usize = 64;

impl Engine {
    /// The process's engine, started on first use (and again in a child after `fork`, whose
    /// copy of the parent's has no thread).
    pub fn get() -> Arc<Engine> {
        let pid = sys::current_pid();
        let mut engine = ENGINE.lock();
        if let Some(e) = engine
            .as_ref()
            .filter(|(owner, _)| *owner == pid)
            .map(|(_, e)| e.clone())
        {
            return e;
        }
        let e = Engine::start().expect("the progress engine needs an epoll and a thread");
        *engine = Some((pid, e.clone()));
        // Once per address space: a child forked later inherits the registration.
        static AT_EXIT: Once = Once::new();
        // SAFETY: `on_process_exit` is a plain function of this library; the C library runs
        // it at exit, or as the library is unloaded (the registration is the library's own).
        AT_EXIT.call_once(|| unsafe {
            libc::atexit(on_process_exit);
        });
        e
    }

    /// The process exits: every source says what it still owes (`Source::on_exit`). A lock
    /// some thread holds as the process exits is waited for briefly, then given up on.
    fn process_exits() {
        let engine = {
            let Some(current) = ENGINE.try_lock_for(EXIT_LOCK_WAIT) else {
                return;
            };
            match current
                .as_ref()
                .filter(|(owner, _)| *owner == sys::current_pid())
            {
                Some((_, e)) => e.clone(),
                None => return,
            }
        };
        // Taken out of the lock: a source that writes may arm its descriptor, which locks it.
        let sources: Vec<Arc<dyn Source>> = {
            let Some(s) = engine.sources.try_lock_for(EXIT_LOCK_WAIT) else {
                return;
            };
            s.slab.iter().map(|(_, e)| e.source.clone()).collect()
        };
        for source in sources {
            source.on_exit();
        }
    }

    fn start() -> std::io::Result<Arc<Engine>> {
        // SAFETY: epoll_create1 and eventfd take flags and return a new descriptor or -1.
        let (ep, ev) = unsafe {
            (
                libc::epoll_create1(libc::EPOLL_CLOEXEC),
                libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC),
            )
        };
        if ep < 0 || ev < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: fresh descriptors nobody else owns.
        let (epoll, waker) = unsafe { (OwnedFd::from_raw_fd(ep), OwnedFd::from_raw_fd(ev)) };
        let mut e = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: WAKER,
        };
        // SAFETY: both descriptors are ours and `e` is a valid event for the call.
        if unsafe { libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, ev, &mut e) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let alarm = sys::timerfd()?;
        let mut e = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: ALARM,
        };
        // SAFETY: our epoll and our timerfd, a valid event for the call.
        if unsafe { libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, alarm.as_raw_fd(), &mut e) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let engine = Arc::new(Engine {
            epoll,
            waker,
            alarm,
            alarm_at: Mutex::new(0),
            sources: Mutex::new(Sources {
                slab: Slab::new(),
                generation: 1,
            }),
            timers: Mutex::new(BinaryHeap::new()),
            sleeping_until: AtomicU64::new(0),
            deferred: Mutex::new(Vec::new()),
            has_deferred: AtomicBool::new(false),
        });
        let runner = engine.clone();
        std::thread::Builder::new()
            .name("dat-progress".into())
            .stack_size(256 * 1024)
            .spawn(move || runner.run())?;
        Ok(engine)
    }

    /// Registers `fd` for `source`, disarmed; the source arms it when it wants reports. The
    /// engine holds the source until it deregisters.
    pub fn register(&self, fd: RawFd, source: Arc<dyn Source>) -> std::io::Result<Token> {
        let token = {
            let mut s = self.sources.lock();
            let generation = s.generation;
            let slot = s.slab.insert(Entry {
                generation,
                source,
                deadline: 0,
            });
            Token::new(slot, generation)
        };
        let mut e = libc::epoll_event {
            events: libc::EPOLLONESHOT as u32,
            u64: token.0,
        };
        // SAFETY: our epoll, the caller's open descriptor, a valid event.
        if unsafe { libc::epoll_ctl(self.epoll.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut e) } < 0 {
            let err = std::io::Error::last_os_error();
            self.forget(token);
            return Err(err);
        }
        Ok(token)
    }

    /// Registers a source that has no descriptor, only a timer.
    pub fn register_timer_only(&self, source: Arc<dyn Source>) -> Token {
        let mut s = self.sources.lock();
        let generation = s.generation;
        let slot = s.slab.insert(Entry {
            generation,
            source,
            deadline: 0,
        });
        Token::new(slot, generation)
    }

    /// Arms `fd` for one report of `events` (`EPOLLIN`, `EPOLLOUT`...; errors and hang-ups are
    /// always reported). A condition already true is reported at once. Nothing happens if the
    /// source left: its descriptor number may belong to another source by now.
    pub fn arm(&self, token: Token, fd: RawFd, events: u32) {
        let s = self.sources.lock();
        if !s.current(token) {
            return;
        }
        let mut e = libc::epoll_event {
            events: events | libc::EPOLLONESHOT as u32,
            u64: token.0,
        };
        // SAFETY: our epoll, a descriptor registered under `token` (still registered: checked
        // under the lock deregistering takes), a valid event. A parked descriptor is added
        // back.
        unsafe {
            if libc::epoll_ctl(self.epoll.as_raw_fd(), libc::EPOLL_CTL_MOD, fd, &mut e) < 0
                && std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOENT)
            {
                libc::epoll_ctl(self.epoll.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut e);
            }
        }
    }

    /// Takes `fd` out of the poll while nothing should be reported for it (its source stays;
    /// `arm` puts the descriptor back).
    pub fn park(&self, token: Token, fd: RawFd) {
        let s = self.sources.lock();
        if s.current(token) {
            self.unwatch(fd);
        }
    }

    /// Takes `fd` out of the epoll set; the caller holds the sources' lock and checked that
    /// `fd` is the descriptor of a current source.
    fn unwatch(&self, fd: RawFd) {
        let mut e = libc::epoll_event { events: 0, u64: 0 };
        // SAFETY: our epoll, a registered descriptor (see above); the event argument is
        // ignored for DEL but must be non-NULL on old kernels.
        unsafe { libc::epoll_ctl(self.epoll.as_raw_fd(), libc::EPOLL_CTL_DEL, fd, &mut e) };
    }

    /// Removes `fd` and the source: no report or timer reaches it afterwards.
    pub fn deregister(&self, token: Token, fd: Option<RawFd>) {
        let gone = {
            let mut s = self.sources.lock();
            if !s.current(token) {
                return;
            }
            if let Some(fd) = fd {
                self.unwatch(fd);
            }
            s.remove(token)
        };
        drop(gone); // outside the lock: it may be the source's last holder
    }

    fn forget(&self, token: Token) {
        let gone = self.sources.lock().remove(token);
        drop(gone);
    }

    /// Sets the source's timer to `deadline` (monotonic microseconds; 0 cancels it). A later
    /// call replaces an earlier one.
    pub fn set_timer(&self, token: Token, deadline: u64) {
        {
            let mut s = self.sources.lock();
            match s.slab.get_mut(token.slot()) {
                Some(e) if e.generation == token.generation() => e.deadline = deadline,
                _ => return,
            }
        }
        if deadline == 0 {
            return; // the stale heap entry is dropped when it falls due
        }
        self.timers.lock().push(Reverse((deadline, token)));
        let until = self.sleeping_until.load(Ordering::SeqCst);
        if until == 0 {
            self.wake(); // awake: it looks at the heap before it sleeps (or is about to)
        } else if deadline < until && !ON_ENGINE.with(Cell::get) {
            self.set_alarm(deadline);
        }
    }

    /// Has the sleeping engine woken by `deadline` at the latest, without waking it now.
    fn set_alarm(&self, deadline: u64) {
        let mut at = self.alarm_at.lock();
        if *at > sys::monotonic_micros() && *at <= deadline {
            return; // it wakes earlier anyway, and then sleeps until the earliest timer
        }
        sys::timerfd_at(self.alarm.as_raw_fd(), deadline.max(1));
        *at = deadline;
    }

    /// Has the engine's thread make `call` soon, holding no lock of the library: for what may
    /// call back into the consumer's code (which may call the library again), from a thread
    /// that may hold locks.
    pub fn defer(&self, call: Deferred) {
        self.deferred.lock().push(call);
        self.has_deferred.store(true, Ordering::SeqCst);
        self.wake();
    }

    /// Makes the deferred calls, each behind a panic boundary.
    fn run_deferred(&self) {
        if !self.has_deferred.swap(false, Ordering::SeqCst) {
            return;
        }
        let calls = std::mem::take(&mut *self.deferred.lock());
        for call in calls {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(call));
        }
    }

    fn wake(&self) {
        // The engine's own thread looks at its timers before it sleeps again.
        if ON_ENGINE.with(Cell::get) {
            return;
        }
        // A full counter means a wake is already pending. No cancellation point: a consumer's
        // thread wakes the engine as it sets a timer (see `sys`).
        sys::eventfd_signal(self.waker.as_raw_fd());
    }

    fn source(&self, token: Token) -> Option<Arc<dyn Source>> {
        let s = self.sources.lock();
        s.slab
            .get(token.slot())
            .filter(|e| e.generation == token.generation())
            .map(|e| e.source.clone())
    }

    /// The timers due by `now`, taken.
    fn due_timers(&self, now: u64, due: &mut Vec<Token>) {
        let mut heap = self.timers.lock();
        while let Some(Reverse((deadline, token))) = heap.peek().copied() {
            if deadline > now {
                return;
            }
            heap.pop();
            // A timer replaced or cancelled since leaves a stale entry: only the current one
            // fires.
            let current = {
                let mut s = self.sources.lock();
                match s.slab.get_mut(token.slot()) {
                    Some(e) if e.generation == token.generation() && e.deadline == deadline => {
                        e.deadline = 0;
                        true
                    }
                    _ => false,
                }
            };
            if current {
                due.push(token);
            }
        }
    }

    /// The earliest deadline of a timer still set (entries of timers replaced or cancelled
    /// since are dropped, so the engine does not wake for them), 0 when none.
    fn next_deadline(&self) -> u64 {
        let mut heap = self.timers.lock();
        while let Some(Reverse((deadline, token))) = heap.peek().copied() {
            let current = {
                let s = self.sources.lock();
                s.slab
                    .get(token.slot())
                    .is_some_and(|e| e.generation == token.generation() && e.deadline == deadline)
            };
            if current {
                return deadline;
            }
            heap.pop();
        }
        0
    }

    fn run(self: Arc<Self>) {
        ON_ENGINE.with(|c| c.set(true));
        // Woken for every incoming frame while the consumer's threads may hold every CPU
        // (spinning on memory an RDMA write changes): a short slice lets the scheduler run it
        // at once instead of at the end of a spinner's slice, milliseconds later.
        sys::request_short_slice();
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; BATCH];
        let mut due = Vec::new();
        loop {
            self.run_deferred();
            self.due_timers(sys::monotonic_micros(), &mut due);
            for token in due.drain(..) {
                if let Some(source) = self.source(token) {
                    self.report(token, source, 0);
                }
            }
            // What the engine will sleep until, stated before it looks at the heap for the last
            // time: a timer set later sees a deadline the engine keeps (and wakes it when its
            // own is earlier), one set earlier is in the heap for that look.
            let mut next = self.next_deadline();
            loop {
                self.sleeping_until
                    .store(if next == 0 { u64::MAX } else { next }, Ordering::SeqCst);
                let again = self.next_deadline();
                if again == next {
                    break;
                }
                next = again;
            }
            let n = if MORE_SOON.with(|c| c.replace(false)) {
                self.linger(&mut events, next)
            } else {
                self.wait(&mut events, next)
            };
            self.sleeping_until.store(0, Ordering::SeqCst);
            for e in &events[..n] {
                let (bits, data) = (e.events, e.u64);
                if data == WAKER {
                    sys::drain_counter(self.waker.as_raw_fd());
                    continue;
                }
                if data == ALARM {
                    sys::drain_counter(self.alarm.as_raw_fd());
                    continue;
                }
                if let Some(source) = self.source(Token(data)) {
                    self.report(Token(data), source, bits);
                }
            }
        }
    }

    /// Reports `events` to a source. A source that panics is dropped (its descriptor with it,
    /// once nothing else holds it): the engine goes on for every other one.
    fn report(&self, token: Token, source: Arc<dyn Source>, events: u32) {
        let outcome =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| source.on_event(events)));
        if outcome.is_err() {
            self.forget(token);
        }
    }

    /// Polls for reports for `STREAM_LINGER_US` (or until `deadline`, if sooner), then waits
    /// for them until `deadline` as `wait` does.
    fn linger(&self, events: &mut [libc::epoll_event; BATCH], deadline: u64) -> usize {
        let start = sys::monotonic_micros();
        let until = match deadline {
            0 => start + STREAM_LINGER_US,
            d => d.min(start + STREAM_LINGER_US),
        };
        loop {
            let now = sys::monotonic_micros();
            // A deadline of now: a look that does not block.
            let n = self.wait(events, now.max(1));
            if n > 0 || now >= until {
                return if n > 0 {
                    n
                } else {
                    self.wait(events, deadline)
                };
            }
            // A thread of the program's that the stream woke (a receive's waiter) may want
            // this CPU.
            sys::yield_now();
        }
    }

    /// Waits for reports until `deadline` (monotonic microseconds; 0: no deadline).
    fn wait(&self, events: &mut [libc::epoll_event; BATCH], deadline: u64) -> usize {
        let ts;
        let timeout = if deadline == 0 {
            std::ptr::null()
        } else {
            let us = deadline.saturating_sub(sys::monotonic_micros());
            ts = libc::timespec {
                tv_sec: (us / 1_000_000) as libc::time_t,
                tv_nsec: ((us % 1_000_000) * 1000) as libc::c_long,
            };
            &ts as *const libc::timespec
        };
        // SAFETY: our epoll, a buffer of BATCH events, a timespec that outlives the call (or
        // NULL: no timeout) and no signal mask.
        let n = unsafe {
            libc::syscall(
                libc::SYS_epoll_pwait2,
                self.epoll.as_raw_fd(),
                events.as_mut_ptr(),
                BATCH as libc::c_int,
                timeout,
                std::ptr::null::<libc::sigset_t>(),
                0usize,
            )
        };
        if n >= 0 {
            return n as usize;
        }
        // SAFETY: errno of this thread.
        match unsafe { *libc::__errno_location() } {
            libc::ENOSYS => {
                // A kernel before 5.11: milliseconds, rounded up so a timer is never early.
                let ms = if deadline == 0 {
                    -1
                } else {
                    deadline
                        .saturating_sub(sys::monotonic_micros())
                        .div_ceil(1000)
                        .min(i32::MAX as u64) as i32
                };
                // SAFETY: as above.
                let n = unsafe {
                    libc::epoll_wait(
                        self.epoll.as_raw_fd(),
                        events.as_mut_ptr(),
                        BATCH as i32,
                        ms,
                    )
                };
                n.max(0) as usize
            }
            _ => 0, // interrupted: look at the timers and wait again
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    struct Probe {
        tx: Mutex<mpsc::Sender<u32>>,
    }

    impl Source for Probe {
        fn on_event(self: Arc<Self>, events: u32) {
            let _ = self.tx.lock().send(events);
        }
    }

    fn probe() -> (Arc<Probe>, mpsc::Receiver<u32>) {
        let (tx, rx) = mpsc::channel();
        (Arc::new(Probe { tx: Mutex::new(tx) }), rx)
    }

    /// A probe registered with a timer only: its token, what it hears, and the probe (held by
    /// the test, so that what it hears after it left the engine is still heard).
    fn timer_probe(engine: &Engine) -> (Token, mpsc::Receiver<u32>, Arc<Probe>) {
        let (p, rx) = probe();
        (engine.register_timer_only(p.clone()), rx, p)
    }

    #[test]
    fn a_readable_descriptor_is_reported_once_per_arming() {
        let engine = Engine::get();
        let (p, rx) = probe();
        let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        let token = engine.register(b.as_raw_fd(), p.clone()).unwrap();
        use std::io::Write;
        (&a).write_all(b"x").unwrap();
        // Disarmed until armed: nothing yet.
        assert!(rx.recv_timeout(Duration::from_millis(50)).is_err());
        engine.arm(token, b.as_raw_fd(), libc::EPOLLIN as u32);
        let bits = rx.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_ne!(bits & libc::EPOLLIN as u32, 0);
        // One report per arming, although the byte is still unread.
        assert!(rx.recv_timeout(Duration::from_millis(50)).is_err());
        engine.arm(token, b.as_raw_fd(), libc::EPOLLIN as u32);
        assert!(rx.recv_timeout(Duration::from_secs(5)).is_ok());
        engine.deregister(token, Some(b.as_raw_fd()));
    }

    #[test]
    fn timers_fire_in_order_and_a_replaced_one_does_not() {
        let engine = Engine::get();
        let (tp, rx, _p) = timer_probe(&engine);
        let (tq, rq, _q) = timer_probe(&engine);
        let now = sys::monotonic_micros();
        engine.set_timer(tp, now + 50_000);
        engine.set_timer(tp, now + 2_000); // replaces the first
        engine.set_timer(tq, now + 20_000);
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), 0);
        assert!(sys::monotonic_micros() >= now + 2_000);
        assert_eq!(rq.recv_timeout(Duration::from_secs(5)).unwrap(), 0);
        assert!(sys::monotonic_micros() >= now + 20_000);
        // The replaced deadline never fires.
        assert!(rx.recv_timeout(Duration::from_millis(100)).is_err());
        engine.set_timer(tq, now + 10_000_000);
        engine.set_timer(tq, 0); // cancelled
        engine.deregister(tp, None);
        engine.deregister(tq, None);
    }

    #[test]
    fn a_timer_set_while_the_engine_sleeps_past_a_replaced_one_rings() {
        // The engine once stated the deadline of a replaced timer as the one it slept until,
        // while it slept until a later one: a timer set past the first went unheard.
        let engine = Engine::get();
        let (tp, _rx, _p) = timer_probe(&engine);
        let (tq, rq, _q) = timer_probe(&engine);
        for _ in 0..200 {
            let now = sys::monotonic_micros();
            engine.set_timer(tp, now + 300);
            engine.set_timer(tp, now + 60_000_000); // the first is left in the heap, stale
            engine.set_timer(tq, now);
            rq.recv_timeout(Duration::from_secs(5))
                .expect("a due timer rings");
            std::thread::sleep(Duration::from_micros(500)); // past the stale deadline
            engine.set_timer(tq, sys::monotonic_micros());
            rq.recv_timeout(Duration::from_secs(5))
                .expect("a timer set while the engine sleeps rings");
        }
        engine.deregister(tp, None);
        engine.deregister(tq, None);
    }

    #[test]
    fn timers_set_from_another_thread_while_the_engine_sleeps_ring() {
        // Set from this thread, they arm the engine's alarm instead of waking it: a later one
        // leaves an earlier alarm alone, an earlier one moves it; either way both ring.
        let engine = Engine::get();
        let (ta, ra, _a) = timer_probe(&engine);
        let (tb, rb, _b) = timer_probe(&engine);
        for round in 0..100 {
            let now = sys::monotonic_micros();
            let (first, second) = if round % 2 == 0 { (ta, tb) } else { (tb, ta) };
            if round % 4 < 2 {
                engine.set_timer(first, now + 300);
                engine.set_timer(second, now + 1500);
            } else {
                engine.set_timer(second, now + 1500);
                engine.set_timer(first, now + 300);
            }
            let (rf, rs) = if first == ta { (&ra, &rb) } else { (&rb, &ra) };
            rf.recv_timeout(Duration::from_secs(5))
                .expect("the earlier timer rings");
            rs.recv_timeout(Duration::from_secs(5))
                .expect("the later timer rings");
        }
        engine.deregister(ta, None);
        engine.deregister(tb, None);
    }

    /// A source that asks the engine to linger (`expect_more_soon`) each time it hears
    /// something, and tells the thread it heard it on.
    struct Lingering {
        tx: Mutex<mpsc::Sender<libc::pid_t>>,
    }

    impl Source for Lingering {
        fn on_event(self: Arc<Self>, _events: u32) {
            expect_more_soon();
            // SAFETY: gettid takes no arguments and cannot fail.
            let _ = self.tx.lock().send(unsafe { libc::gettid() });
        }
    }

    /// Nanoseconds thread `tid` of this process has run so far.
    fn on_cpu_ns(tid: libc::pid_t) -> u64 {
        let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")).unwrap();
        stat.split_whitespace().next().unwrap().parse().unwrap()
    }

    #[test]
    fn an_engine_that_lingers_keeps_its_timers_and_sleeps_again() {
        let engine = Engine::get();
        let (tx, rx) = mpsc::channel();
        let lingering = Arc::new(Lingering { tx: Mutex::new(tx) });
        let tl = engine.register_timer_only(lingering.clone());
        let (tq, rq, _q) = timer_probe(&engine);
        let now = sys::monotonic_micros();
        engine.set_timer(tl, now);
        // Due while the engine lingers.
        engine.set_timer(tq, now + 20);
        let tid = rx.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(rq.recv_timeout(Duration::from_secs(5)).unwrap(), 0);
        assert!(sys::monotonic_micros() >= now + 20);
        // Lingering again with no timer due: the linger ends by itself, and the engine
        // sleeps (one that never ended would spin the whole time).
        engine.set_timer(tl, sys::monotonic_micros());
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), tid);
        let before = on_cpu_ns(tid);
        std::thread::sleep(Duration::from_millis(200));
        let spent = on_cpu_ns(tid) - before;
        assert!(spent < 100_000_000, "the engine ran {spent} ns of 200 ms");
        engine.deregister(tl, None);
        engine.deregister(tq, None);
    }

    #[test]
    fn a_source_that_left_hears_nothing() {
        let engine = Engine::get();
        let (t, rx, _p) = timer_probe(&engine);
        engine.set_timer(t, sys::monotonic_micros() + 1_000);
        engine.deregister(t, None);
        assert!(rx.recv_timeout(Duration::from_millis(50)).is_err());
    }
}
