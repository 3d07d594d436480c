//! Leases: who handles a connection while a consumer's thread polls it.
//!
//! A thread that polls an EVD in a loop handles the frames of the connections that feed it
//! itself, faster than a hand-off to the engine would, and the engine's thread, woken for the
//! same data, would only take a CPU from the threads that are running (on a two-core machine,
//! a wake-up per message made a polling ping-pong three to five times slower). So when the
//! engine is woken for a connection that a thread has been polling, it offers that thread the
//! connection; the thread takes it on its next poll, and from then on the engine is not woken
//! for it at all.
//!
//! The thread does not say when it stops polling: it may go off to compute, or to poll memory
//! an RDMA write changes. So its lease runs out unless kept alive: a timer (a `timerfd` in
//! the engine's poll) that the thread pushes back as it polls, now and then, without waking
//! anybody. When the thread stops, the timer fires within the lease's length (at most
//! `LIBDAT_LEASE_US`, 2 ms unless set) and the engine takes its connections back. A thread
//! that goes to sleep in the library returns them at once, and so does one that exits.
//!
//! A thread that polls its EVD until an event comes, then polls memory for the peer's RDMA
//! write (a memory-polling ping-pong that waits for its writes' completions) holds the
//! connection while the write arrives, and the write waits for the lease to run out. So each
//! thread's lease lasts as long as its habits allow: a lease that ran out with data waiting
//! in a socket makes the next ones shorter (down to `LEASE_MIN_US`), one that ran out with
//! nothing waiting makes them longer again (up to `LIBDAT_LEASE_US`). A thread that only
//! polls its EVD keeps the longest.

use std::cell::RefCell;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

use super::engine::{Engine, Source, Token};
use super::sys;

/// Something a thread may hold on lease.
pub trait Lent: Send + Sync {
    /// The lease ended: the engine watches it again. Returns whether data was waiting for it.
    fn take_back(&self) -> bool;
}

/// The shortest a thread's lease becomes (see the module's documentation).
const LEASE_MIN_US: u64 = 100;

/// A polling thread pushes its lease's timer back once less than this fraction of the lease
/// remains (a thread that pauses between polls for less than that keeps its lease). Each push
/// is a `timerfd_settime`, which reprograms the CPU's timer when the lease's is the next to
/// fire (shorter than the scheduler's tick), and that is dear in a virtual machine: 6-7 us on
/// average on a 2-core KVM guest, a third of them over 10 us. With a 500 us lease pushed back
/// at half, a polling ping-pong between two hosts spent a tenth of its time in them.
const PUSH_BACK_FRACTION: u64 = 4;

/// One polling thread's lease.
pub struct Lease {
    engine: Arc<Engine>,
    token: OnceLock<Token>,
    timer: OwnedFd,
    lent: Mutex<Vec<Arc<dyn Lent>>>,
    has_lent: AtomicBool,
    /// When the lease runs out (monotonic microseconds), as last pushed back.
    deadline: AtomicU64,
    /// How long this thread's lease lasts now (`LEASE_MIN_US` to `settings::LEASE_US`).
    length: AtomicU64,
}

impl Lease {
    fn new() -> std::io::Result<Arc<Lease>> {
        let timer = sys::timerfd()?;
        let fd = timer.as_raw_fd();
        let lease = Arc::new(Lease {
            engine: Engine::get(),
            token: OnceLock::new(),
            timer,
            lent: Mutex::new(Vec::new()),
            has_lent: AtomicBool::new(false),
            deadline: AtomicU64::new(0),
            length: AtomicU64::new(crate::runtime::settings::LEASE_US.get()),
        });
        let token = lease.engine.register(fd, lease.clone())?;
        let _ = lease.token.set(token);
        lease.engine.arm(token, fd, libc::EPOLLIN as u32);
        Ok(lease)
    }

    /// Sets the timer to fire at `deadline` (0: disarmed).
    fn set(&self, deadline: u64) {
        self.deadline.store(deadline, Ordering::Release);
        sys::timerfd_at(self.timer.as_raw_fd(), deadline);
    }

    fn lend(&self, what: Arc<dyn Lent>) {
        let mut lent = self.lent.lock();
        // Taken back without the lease ending (for a sleeping waiter) and lent again: listed
        // once.
        if !lent.iter().any(|l| same(l, &*what)) {
            lent.push(what);
        }
        if !self.has_lent.swap(true, Ordering::AcqRel) {
            self.set(sys::monotonic_micros() + self.length.load(Ordering::Relaxed));
        }
    }

    /// The lease ran out: everything lent goes back, and the next lease lasts shorter when
    /// data was waiting meanwhile, longer when none was.
    fn expire(&self) {
        let waited = self.end();
        let length = self.length.load(Ordering::Relaxed);
        let next = if waited {
            (length / 2).max(LEASE_MIN_US.min(crate::runtime::settings::LEASE_US.get()))
        } else {
            (length * 2).min(crate::runtime::settings::LEASE_US.get())
        };
        self.length.store(next, Ordering::Relaxed);
    }

    /// Everything lent goes back; the timer stops. Returns whether data was waiting for any.
    fn end(&self) -> bool {
        // Drained, not taken: the list keeps its room for the next lease (a thread that waits
        // in turn with its polls ends one every wait, and the data path allocates nothing).
        let lent: smallvec::SmallVec<[Arc<dyn Lent>; 8]> = {
            let mut lent = self.lent.lock();
            if !self.has_lent.swap(false, Ordering::AcqRel) && lent.is_empty() {
                return false;
            }
            self.set(0);
            lent.drain(..).collect()
        };
        // Every lent thing is taken back, whether or not one before it waited.
        let mut waited = false;
        for l in &lent {
            waited |= l.take_back();
        }
        waited
    }

    /// The thread still polls: the lease goes on, the timer pushed back once little of it
    /// remains (`PUSH_BACK_FRACTION`; `now`: see the function `keep_alive`).
    fn keep_alive(&self, now: Option<u64>) {
        if !self.has_lent.load(Ordering::Relaxed) {
            return;
        }
        let now = now.unwrap_or_else(sys::monotonic_micros);
        let deadline = self.deadline.load(Ordering::Relaxed);
        let length = self.length.load(Ordering::Relaxed);
        if deadline.saturating_sub(now) < length / PUSH_BACK_FRACTION {
            let lent = self.lent.lock();
            if !lent.is_empty() && self.has_lent.load(Ordering::Acquire) {
                self.set(now + length);
            }
        }
    }
}

impl Source for Lease {
    fn on_event(self: Arc<Self>, _events: u32) {
        sys::drain_counter(self.timer.as_raw_fd());
        // Pushed back after the timer fired: the thread still polls.
        let deadline = self.deadline.load(Ordering::Acquire);
        if deadline == 0 || sys::monotonic_micros() >= deadline {
            self.expire();
        }
        if let Some(token) = self.token.get() {
            self.engine
                .arm(*token, self.timer.as_raw_fd(), libc::EPOLLIN as u32);
        }
    }
}

/// The calling thread's lease, made on first use; it ends as the thread does.
struct Held(Arc<Lease>);

impl Drop for Held {
    fn drop(&mut self) {
        self.0.end();
        if let Some(token) = self.0.token.get() {
            self.0
                .engine
                .deregister(*token, Some(self.0.timer.as_raw_fd()));
        }
    }
}

thread_local! {
    static LEASE: RefCell<Option<Held>> = const { RefCell::new(None) };
}

/// The calling thread takes `what` on lease (it accepted the engine's offer).
pub fn lend(what: Arc<dyn Lent>) {
    let lease = LEASE.with(|l| {
        let mut l = l.borrow_mut();
        if l.is_none() {
            *l = Lease::new().ok().map(Held);
        }
        l.as_ref().map(|h| h.0.clone())
    });
    match lease {
        Some(lease) => lease.lend(what),
        None => {
            what.take_back(); // no timer to be had: the engine keeps it
        }
    }
}

/// Whether the calling thread holds `what` on lease.
pub fn held_here(what: &dyn Lent) -> bool {
    LEASE
        .try_with(|l| {
            l.borrow()
                .as_ref()
                .is_some_and(|h| h.0.lent.lock().iter().any(|l| same(l, what)))
        })
        .unwrap_or(false)
}

/// Whether `a` and `b` are the same lent thing (compared by address alone: the same object
/// seen through different vtables is still itself).
fn same(a: &Arc<dyn Lent>, b: &dyn Lent) -> bool {
    std::ptr::addr_eq(Arc::as_ptr(a), b as *const dyn Lent)
}

/// The calling thread polls on: its lease goes on (called every few dozen polls). `now`: the
/// monotonic clock in microseconds when the caller read it already (else read here, and only
/// when the thread holds something on lease).
pub fn keep_alive(now: Option<u64>) {
    let _ = LEASE.try_with(|l| {
        if let Some(h) = l.borrow().as_ref() {
            h.0.keep_alive(now);
        }
    });
}

/// The calling thread stops polling (it is about to sleep): what it holds goes back.
pub fn return_all() {
    let lease = LEASE
        .try_with(|l| l.borrow().as_ref().map(|h| h.0.clone()))
        .ok()
        .flatten();
    if let Some(lease) = lease {
        lease.end();
    }
}
