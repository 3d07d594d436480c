//! The Event Dispatcher: a bounded queue of `DAT_EVENT`s sized by the creation qlen, fed by
//! software events, connection events and transport completions, drained by dequeue and wait.

use std::collections::VecDeque;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::{Mutex, MutexGuard};

use super::cno::Cno;
use super::counters::{Counters, EVD_COUNTERS};
use super::ia::Ia;
use super::wakeup::{WaitStep, Wakeup};
use super::{Counted, Held, Users};
use crate::abi::*;
use crate::error::{DatError, DatResult, Sub, Type};
use crate::handle::{Kind, Object};
use crate::objects::seam::Progress;

mod catch;
mod polling;

pub use catch::Catch;
pub use polling::before_sleep;
use polling::polling;

/// The stream bits of `DAT_EVD_FLAGS` we know.
pub const KNOWN_FLAGS: u32 = dat_evd_flags::DAT_EVD_SOFTWARE_FLAG as u32
    | dat_evd_flags::DAT_EVD_CR_FLAG as u32
    | dat_evd_flags::DAT_EVD_DTO_FLAG as u32
    | dat_evd_flags::DAT_EVD_CONNECTION_FLAG as u32
    | dat_evd_flags::DAT_EVD_RMR_BIND_FLAG as u32
    | dat_evd_flags::DAT_EVD_ASYNC_FLAG as u32;

/// The most an EVD's spin budget grows to, in multiples of the base budget.
const SPIN_GROWTH: u32 = 4;

/// The spin budget after a wait that slept for `slept` with budget `spin`. An event that came
/// soon after the sleep began would have been caught by a longer spin, and a sleeping waiter
/// answers late, which can put the peer to sleep in turn (two sides of a ping-pong then each
/// pay two thread wake-ups per message): the budget doubles. One that came long after means the
/// spin was wasted: it halves, never below `base`.
fn next_spin(spin: Duration, slept: Duration, base: Duration) -> Duration {
    if slept < spin {
        (spin * 2).min(base * SPIN_GROWTH)
    } else if slept > spin * 4 {
        (spin / 2).max(base)
    } else {
        spin
    }
}

/// A queued event. `DAT_EVENT` holds raw pointers the consumer owns; we only carry them.
#[derive(Clone, Copy)]
pub struct Event(pub DAT_EVENT);
// SAFETY: the pointers inside are opaque consumer values (cookies, handles) we never
// dereference, so moving them between threads is sound.
unsafe impl Send for Event {}

struct Queue {
    events: VecDeque<Event>,
    qlen: usize,
    enabled: bool,
    waitable: bool,
    waiter: Option<Waiter>,
    /// Wakes the waiter while it sleeps.
    wakeup: Wakeup,
    cno: Option<Held<Cno>>,
    /// Bumped to wake a waiter that must give up (unwaitable, freed).
    epoch: u64,
    /// Notification events queued so far (those that wake a waiter; see `Waiter::notices`).
    notices: u64,
}

/// The thread in `dat_evd_wait` (one at most), kept here between the steps of its wait: it
/// sleeps outside the library, where it may be cancelled (see `wakeup`).
struct Waiter {
    threshold: usize,
    /// The queue's epoch as the wait began: the wait outlives no change of it.
    epoch: u64,
    deadline: Option<Instant>,
    /// The spin budget it spun, and when it went to sleep, for the next budget (`next_spin`).
    spin: Duration,
    slept_at: Option<Instant>,
    /// The queue's `notices` as the wait began, and whether the events queued then were
    /// enough: a wait ends with the events it found, or once a notification event came
    /// (dat_evd_wait(3DAT): "By default, all completions are Notification events"); events
    /// queued without one (an unsignalled completion, an unsolicited receive of a Solicited
    /// Wait EP) wait for the next notification, a dequeue, or the next wait.
    notices: u64,
    found_enough: bool,
}

impl Waiter {
    /// Whether the wait has what it waits for.
    fn satisfied(&self, q: &Queue) -> bool {
        q.events.len() >= self.threshold && (self.found_enough || q.notices != self.notices)
    }
}

/// How a step of `dat_evd_wait` ends it: with the oldest event (in the wait's out-parameter), or
/// why none; and how many remain.
pub type WaitResult = (DatResult, usize);

impl Queue {
    /// Takes the oldest event. A queue left empty starts again at the front of its buffer
    /// (`VecDeque::clear` puts its head back at 0; a test holds it to that): a queue that
    /// holds an event or two at a time then keeps to its first cache lines, instead of walking
    /// its whole capacity and faulting in each page of it for the first time on the way.
    fn pop(&mut self) -> Option<Event> {
        let event = self.events.pop_front();
        if self.events.is_empty() {
            self.events.clear();
        }
        event
    }

    /// [`Queue::pop`] into `out`: the event is copied once, from the queue to the caller.
    #[inline(always)]
    fn pop_into(&mut self, out: &mut MaybeUninit<DAT_EVENT>) -> bool {
        let Some(oldest) = self.events.front() else {
            return false;
        };
        out.write(oldest.0);
        self.pop();
        true
    }
}

pub struct Evd {
    pub ia: Arc<Ia>,
    /// This EVD, for a wait to hold while it sleeps outside the library.
    me: Weak<Evd>,
    flags: u32,
    handle: AtomicUsize,
    users: Users,
    queue: Mutex<Queue>,
    /// The connections that feed this EVD, progressed by whoever dequeues or waits. Held
    /// until they end (`detach`): a poll calls them without taking a reference. A poll holds
    /// this lock while its sources take their EPs' locks, so it is taken before any EP's
    /// (the lock order: docs/architecture.md).
    sources: Mutex<Vec<Arc<dyn Progress>>>,
    /// Connections attached and not yet moved into `sources`: an EP attaches its new link
    /// under its own lock, which a poll holding `sources` may be waiting for, so attaching
    /// takes only this lock, which nobody holds while taking another.
    joining: Mutex<Vec<Arc<dyn Progress>>>,
    /// Whether `joining` holds any (a poll looks here, without its lock).
    has_joining: AtomicBool,
    /// How long a wait spins before it sleeps, in microseconds (adapted by `next_spin`).
    spin_us: AtomicU64,
    /// Copies of the queue's length and `waiter`, kept under its lock: a poll that finds the
    /// queue empty takes no lock.
    queued: AtomicUsize,
    waiting: AtomicBool,
    /// Whether a CNO is attached (a copy of the queue's, read by `may_hand_over`).
    has_cno: AtomicBool,
    /// The transport's completion queue of a DTO EVD (for TCP, the order in which receives
    /// its connections' peers filled directly complete).
    pub completion_queue: std::sync::OnceLock<crate::objects::seam::Resource>,
    /// That queue as a source, when it alone completes the EVD's DTOs and needs nothing of a
    /// polling thread (verbs: the device moves the data): a dequeue polls it and no more, with
    /// no lease to keep, no other EVDs to move and no sources' lock to take.
    sole_source: std::sync::OnceLock<Arc<dyn Progress>>,
    /// The IB extension's counters of this EVD (waits and dequeues).
    pub counters: Counters<EVD_COUNTERS>,
    /// Connections' DTO streams that feed this EVD: receive streams of EPs whose Recv
    /// Completion Flags ask for Solicited Wait, and all others (see `solicited_only`).
    solicited_streams: AtomicUsize,
    other_streams: AtomicUsize,
    /// The thread that last polled this EVD empty or waited on it (`polling::thread_token`;
    /// 0: none yet): a thread that streams requests reads their answers itself only when
    /// no other thread reaps them (see `reaped_elsewhere`).
    reaper: AtomicUsize,
}

impl Object for Evd {
    const KIND: Kind = Kind::Evd;
    fn on_release(&self) {
        self.abort_waiters();
        // The CNO is free to go with the handle, whoever still holds this object.
        let mut q = self.queue.lock();
        self.has_cno.store(false, Ordering::Relaxed);
        q.cno = None;
    }
}

impl Counted for Evd {
    fn users(&self) -> &Users {
        &self.users
    }
}

/// What `dat_evd_query` reports.
pub struct EvdParam {
    pub qlen: usize,
    pub enabled: bool,
    pub waitable: bool,
    pub cno: DAT_CNO_HANDLE,
    pub flags: u32,
}

impl Evd {
    /// Creates an EVD and registers it under its IA.
    pub fn create(
        ia: &Arc<Ia>,
        qlen: usize,
        cno: Option<Arc<Cno>>,
        flags: u32,
    ) -> DatResult<(Arc<Evd>, DAT_EVD_HANDLE)> {
        let has_cno = cno.is_some();
        let evd = Arc::new_cyclic(|me| Evd {
            ia: ia.clone(),
            me: me.clone(),
            flags,
            handle: AtomicUsize::new(0),
            users: Users::default(),
            queue: Mutex::new(Queue {
                events: VecDeque::with_capacity(qlen),
                qlen,
                enabled: true,
                waitable: true,
                waiter: None,
                wakeup: Wakeup::default(),
                cno: cno.map(Held::new),
                epoch: 0,
                notices: 0,
            }),
            sources: Mutex::new(Vec::new()),
            joining: Mutex::new(Vec::new()),
            has_joining: AtomicBool::new(false),
            queued: AtomicUsize::new(0),
            waiting: AtomicBool::new(false),
            has_cno: AtomicBool::new(has_cno),
            spin_us: AtomicU64::new(crate::runtime::settings::SPIN_US.get().as_micros() as u64),
            completion_queue: std::sync::OnceLock::new(),
            sole_source: std::sync::OnceLock::new(),
            counters: Counters::default(),
            solicited_streams: AtomicUsize::new(0),
            other_streams: AtomicUsize::new(0),
            reaper: AtomicUsize::new(0),
        });
        if flags & dat_evd_flags::DAT_EVD_DTO_FLAG as u32 != 0 {
            if let Some(cq) = ia.transport.completion_queue(&evd)? {
                let _ = evd.completion_queue.set(cq);
            }
        }
        let h = ia.adopt(evd.clone())?;
        evd.handle.store(h as usize, Ordering::Release);
        Ok((evd, h))
    }

    pub fn flags(&self) -> u32 {
        self.flags
    }

    /// A connection's DTO stream now feeds this EVD: a Solicited Wait receive stream or
    /// another.
    pub fn stream_joins(&self, solicited: bool) {
        self.streams(solicited).fetch_add(1, Ordering::AcqRel);
        if let Some(source) = self.sole_source.get() {
            source.streams_changed();
        }
    }

    /// A stream that [`Evd::stream_joins`] no longer feeds it.
    pub fn stream_leaves(&self, solicited: bool) {
        let _ = self
            .streams(solicited)
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
        if let Some(source) = self.sole_source.get() {
            source.streams_changed();
        }
    }

    fn streams(&self, solicited: bool) -> &AtomicUsize {
        if solicited {
            &self.solicited_streams
        } else {
            &self.other_streams
        }
    }

    /// Whether every DTO stream that feeds this EVD is a Solicited Wait receive stream (and
    /// one does): only a solicited receive, or a failure, is worth waking its sleepers for.
    /// A transport that cannot tell a solicited receive from another as it completes asks its
    /// completion queue to report solicited ones only then. An EVD that Solicited Wait
    /// receive streams share with other DTO streams (dat_ep_create(3DAT) forbids it: "the EVD
    /// cannot be used for any other event stream types") reports every completion: the
    /// others' completions must still wake.
    pub fn solicited_only(&self) -> bool {
        self.solicited_streams.load(Ordering::Acquire) > 0
            && self.other_streams.load(Ordering::Acquire) == 0
    }

    /// Whether someone waits for this EVD's events without polling it: a thread asleep in
    /// `dat_evd_wait`, or a CNO (whose waiters, and `dat_cno_fd_create`'s, poll nothing).
    pub fn has_sleeper(&self) -> bool {
        self.waiting.load(Ordering::Acquire) || self.has_cno.load(Ordering::Acquire)
    }

    pub fn handle(&self) -> DAT_EVD_HANDLE {
        self.handle.load(Ordering::Acquire) as DAT_EVD_HANDLE
    }

    pub fn has_stream(&self, flag: dat_evd_flags) -> bool {
        self.flags & flag as u32 != 0
    }

    pub fn param(&self) -> EvdParam {
        let q = self.queue.lock();
        EvdParam {
            qlen: q.qlen,
            enabled: q.enabled,
            waitable: q.waitable,
            cno: q.cno.as_ref().map_or(std::ptr::null_mut(), |c| c.handle()),
            flags: self.flags,
        }
    }

    pub fn qlen(&self) -> usize {
        self.queue.lock().qlen
    }

    /// Queues an event; a full queue loses it and reports the overflow on the IA's async EVD.
    pub fn post(&self, event: DAT_EVENT) -> DatResult {
        self.enqueue(event, true)
    }

    /// Queues an event as [`Evd::post`] does (`notify`) or quietly, waking no waiter and
    /// triggering no CNO (an unsignalled completion); or puts it into the out-parameter `catch`
    /// lends when that is the same as queueing it and taking it back: the catch is for this
    /// EVD and still empty, the queue is empty, and no CNO is to hear of the event.
    pub fn post_catching(
        &self,
        mut event: DAT_EVENT,
        notify: bool,
        catch: &mut Catch<'_>,
    ) -> DatResult {
        if catch.open_for(self) && self.may_hand_over() {
            event.evd_handle = self.handle();
            catch.put(event);
            return Ok(());
        }
        self.enqueue(event, notify)
    }

    /// An event a dequeue caught and did not return goes back ahead of the events queued since
    /// (it came first): the queue may hold one more than its length for that moment.
    #[cold]
    pub(super) fn requeue_first(&self, event: DAT_EVENT) {
        let mut q = self.queue.lock();
        q.events.push_front(Event(event));
        self.queued.store(q.events.len(), Ordering::Release);
    }

    /// Whether an event may go straight to a dequeue's out-parameter (`Catch`)
    /// rather than through the queue: the same for the consumer only while nothing is queued
    /// before it and no CNO is to hear of it.
    #[inline]
    fn may_hand_over(&self) -> bool {
        self.queued.load(Ordering::Acquire) == 0 && !self.has_cno.load(Ordering::Relaxed)
    }

    fn enqueue(&self, mut event: DAT_EVENT, notify: bool) -> DatResult {
        event.evd_handle = self.handle();
        let cno = {
            let mut q = self.queue.lock();
            if q.events.len() >= q.qlen {
                drop(q);
                self.report_overflow();
                return Err(DatError::bare(Type::DAT_QUEUE_FULL));
            }
            q.events.push_back(Event(event));
            self.queued.store(q.events.len(), Ordering::Release);
            if !notify {
                return Ok(());
            }
            q.notices += 1;
            let q = &mut *q;
            let notify_cno = q.enabled && q.waiter.is_none();
            if q.waiter.as_ref().is_some_and(|w| w.satisfied(q)) {
                q.wakeup.wake();
            }
            notify_cno
                .then(|| q.cno.as_ref().map(|c| c.arc().clone()))
                .flatten()
        };
        if let Some(cno) = cno {
            cno.trigger(self.handle());
        }
        Ok(())
    }

    /// Reports the EVD's overflow on the IA's async EVD: its own queue lost an event, or the
    /// transport's queue behind it (a verbs CQ) overran.
    pub fn report_overflow(&self) {
        if self.flags & dat_evd_flags::DAT_EVD_ASYNC_FLAG as u32 != 0 {
            return; // the async EVD itself overflowed: nowhere left to report
        }
        self.ia
            .counters
            .bump(dat_ia_counters::DCNT_IA_ASYNC_CQ_ERROR as u32);
        if let Some(async_evd) = self.ia.async_evd_object() {
            async_evd.post_async_error(
                dat_event_number::DAT_ASYNC_ERROR_EVD_OVERFLOW,
                self.handle(),
            );
        }
    }

    /// Posts an asynchronous error about the object `handle` to this (async) EVD.
    pub fn post_async_error(&self, number: dat_event_number, handle: DAT_HANDLE) {
        self.post_async_event(number, handle, 0);
    }

    /// Posts an asynchronous event about the object `handle` with the object-specific
    /// `reason` (dat.h's `*_ASYNC_ERROR_REASON`) to this (async) EVD.
    pub fn post_async_event(
        &self,
        number: dat_event_number,
        handle: DAT_HANDLE,
        reason: DAT_COUNT,
    ) {
        let mut e = DAT_EVENT::zeroed();
        e.event_number = number as DAT_EVENT_NUMBER;
        e.event_data.asynch_error_event_data.dat_handle = handle;
        e.event_data.asynch_error_event_data.reason = reason;
        self.ia
            .counters
            .bump(dat_ia_counters::DCNT_IA_ASYNC_ERROR as u32);
        let _ = self.post(e);
    }

    /// A connection now feeds this EVD. May be called under an EP's lock: it waits for no
    /// poll (the connection joins `sources` at the next one).
    pub fn attach(&self, source: Arc<dyn Progress>) {
        self.joining.lock().push(source);
        self.has_joining.store(true, Ordering::Release);
    }

    /// The transport's completion queue feeds this EVD, and alone moves its DTOs (see
    /// `sole_source`).
    pub fn attach_sole_source(&self, source: Arc<dyn Progress>) {
        if self.sole_source.set(source.clone()).is_ok() {
            self.attach(source);
        }
    }

    /// The sources, held, with the connections that joined since moved in.
    #[inline(always)]
    fn joined<'a>(
        &self,
        mut sources: MutexGuard<'a, Vec<Arc<dyn Progress>>>,
    ) -> MutexGuard<'a, Vec<Arc<dyn Progress>>> {
        if self.has_joining.load(Ordering::Acquire) {
            self.move_joining(&mut sources);
        }
        sources
    }

    #[cold]
    fn move_joining(&self, sources: &mut Vec<Arc<dyn Progress>>) {
        let mut joining = self.joining.lock();
        self.has_joining.store(false, Ordering::Release);
        sources.append(&mut joining);
    }

    /// A connection no longer feeds this EVD. The caller holds no lock a poll takes.
    pub fn detach<S: Progress + ?Sized>(&self, source: &Arc<S>) {
        let gone = Arc::as_ptr(source) as *const u8;
        let left = {
            let mut sources = self.joined(self.sources.lock());
            let at = sources
                .iter()
                .position(|s| Arc::as_ptr(s) as *const u8 == gone);
            at.map(|i| sources.remove(i))
        };
        drop(left); // outside the lock: it may be the last reference
    }

    /// Lets every source send what it left for later; its own threads take over.
    pub(super) fn flush_sources(&self) {
        let Some(sources) = self.sources.try_lock() else {
            return;
        };
        for s in self.joined(sources).iter() {
            s.flush();
        }
    }

    /// Lets every source make progress in this thread.
    pub(super) fn progress(&self) {
        self.progress_catching(&mut Catch::none());
    }

    /// [`Evd::progress`] for a dequeue that lends its out-parameter (`catch`) to the first
    /// event the sources complete for this EVD.
    #[inline]
    fn progress_catching(&self, catch: &mut Catch<'_>) {
        // Another thread progressing the same sources is as good as this one.
        let Some(sources) = self.sources.try_lock() else {
            return;
        };
        for s in self.joined(sources).iter() {
            s.progress_catching(catch);
        }
    }

    /// The calling thread (`me`, its `thread_token`) reaps this EVD (a store only when
    /// another thread did last).
    #[inline(always)]
    fn note_reaper(&self, me: usize) {
        if self.reaper.load(Ordering::Relaxed) != me {
            self.reaper.store(me, Ordering::Relaxed);
        }
    }

    /// Whether a thread other than the caller reaps this EVD (polled it empty or waited on it
    /// last): one that may sleep in a wait, counting on the engine to wake it.
    pub fn reaped_elsewhere(&self) -> bool {
        let reaper = self.reaper.load(Ordering::Relaxed);
        reaper != 0 && reaper != polling::thread_token()
    }

    /// `dat_evd_dequeue`: the oldest event, into `out`, or `DAT_QUEUE_EMPTY`.
    // Inlined: one frame fewer above a poll's system call (see `runtime::sys`).
    #[inline(always)]
    pub fn dequeue(&self, out: &mut MaybeUninit<DAT_EVENT>) -> DatResult {
        let waiter = || Err(DatError::invalid_state(Sub::DAT_INVALID_STATE_EVD_WAITER));
        // Most polls find nothing, before and after progress: they look without the lock.
        if self.queued.load(Ordering::Acquire) == 0 {
            if self.waiting.load(Ordering::Acquire) {
                return waiter();
            }
            let mut catch = Catch::new(self, out);
            match self.sole_source.get() {
                Some(source) => source.progress_catching(&mut catch),
                None => {
                    // A dequeue that finds events queued notes nothing: a thread that reaps
                    // a stream polls whenever it catches up with it.
                    self.note_reaper(polling(self.handle()));
                    self.progress_catching(&mut catch);
                }
            }
            if catch.take() {
                return Ok(());
            }
            if self.queued.load(Ordering::Acquire) == 0 {
                // Never a yield here: a program that polls several EVDs in a loop would lose
                // a time slice per empty poll on a busy machine (the engine's thread, which
                // brings connection events, asks the scheduler for short slices instead).
                return Err(DatError::bare(Type::DAT_QUEUE_EMPTY));
            }
        }
        let mut q = self.queue.lock();
        if q.waiter.is_some() {
            return waiter();
        }
        if q.pop_into(out) {
            self.queued.store(q.events.len(), Ordering::Relaxed);
            Ok(())
        } else {
            Err(DatError::bare(Type::DAT_QUEUE_EMPTY))
        }
    }

    /// `dat_evd_wait`'s first step: the checks, then progress made here for a moment (no thread
    /// hand-off when the events are near), then the result (the event into `out`), or a sleep
    /// until `threshold` events are queued or `timeout` passes (`None`: no bound), after which
    /// the waiter takes [`Evd::wait_resume`] (or [`Evd::wait_abandon`], cancelled).
    pub fn wait_begin(
        &self,
        timeout: Option<Duration>,
        threshold: usize,
        out: &mut MaybeUninit<DAT_EVENT>,
    ) -> WaitStep<WaitResult> {
        self.note_reaper(polling::thread_token());
        let mut q = self.queue.lock();
        let refused = if !q.waitable {
            Some(DatError::invalid_state(
                Sub::DAT_INVALID_STATE_EVD_UNWAITABLE,
            ))
        } else if q.waiter.is_some() {
            Some(DatError::invalid_state(Sub::DAT_INVALID_STATE_EVD_WAITER))
        } else if threshold > q.qlen {
            Some(DatError::invalid_arg(3))
        } else {
            None
        };
        if let Some(e) = refused {
            return WaitStep::Done((Err(e), q.events.len()));
        }
        let epoch = q.epoch;
        // A Solicited Wait EVD's waiter sleeps at once: the receives its own polls would
        // complete are not all known to be solicited or not (see `solicited_only`).
        let solicited_only = self.solicited_only();
        let spin = match solicited_only {
            true => Duration::ZERO,
            false => Duration::from_micros(self.spin_us.load(Ordering::Relaxed)),
        };
        let deadline = timeout.map(|t| Instant::now() + t);
        let waiter = Waiter {
            threshold,
            epoch,
            deadline,
            spin,
            slept_at: None,
            notices: q.notices,
            found_enough: q.events.len() >= threshold,
        };
        q.waiter = Some(waiter);
        self.waiting.store(true, Ordering::Release);
        let unsatisfied = |q: &Queue| q.waiter.as_ref().is_some_and(|w| !w.satisfied(q));
        let spin_until = Instant::now() + spin.min(timeout.unwrap_or(Duration::MAX));
        // Once at least, however short the spin: a wait of no time is a poll through the
        // wait call (OpenFabrics' looks at its CQ first), and nothing else may ever look (a
        // verbs CQ reports to the engine only while somebody sleeps on its EVD). A Solicited
        // Wait EVD's too, when the wait is of no time: what its poll completes without a
        // notice, the next call finds queued; one that sleeps could miss that notice.
        let mut polled = solicited_only && timeout != Some(Duration::ZERO);
        while unsatisfied(&q) && q.epoch == epoch && (!polled || Instant::now() < spin_until) {
            polled = true;
            MutexGuard::unlocked(&mut q, || {
                polling(self.handle());
                self.progress();
                std::hint::spin_loop();
            });
        }
        if unsatisfied(&q) {
            if let Some(w) = q.waiter.as_mut() {
                w.slept_at = Some(Instant::now());
            }
            // A wait that may sleep hands its connections back (one of no time is a poll).
            if timeout != Some(Duration::ZERO) {
                self.counters
                    .bump(dat_evd_counters::DCNT_EVD_WAIT_BLOCKED as u32);
                MutexGuard::unlocked(&mut q, || {
                    self.flush_sources();
                    before_sleep();
                });
            }
        }
        self.settle(q, out)
    }

    /// The next step of the wait [`Evd::wait_begin`] began, after its sleep.
    pub fn wait_resume(&self, out: &mut MaybeUninit<DAT_EVENT>) -> WaitStep<WaitResult> {
        let mut q = self.queue.lock();
        q.wakeup.awake();
        self.settle(q, out)
    }

    /// The waiter was cancelled as it slept: the wait ends, and another may begin. The events
    /// stay queued.
    pub fn wait_abandon(&self) {
        let mut q = self.queue.lock();
        q.wakeup.awake();
        if q.waiter.take().is_some() {
            self.waiting.store(false, Ordering::Release);
        }
    }

    /// The wait ends with what it waited for (the oldest event into `out`), or why not, or
    /// sleeps on.
    fn settle(
        &self,
        mut q: MutexGuard<'_, Queue>,
        out: &mut MaybeUninit<DAT_EVENT>,
    ) -> WaitStep<WaitResult> {
        let Some(w) = q.waiter.as_ref() else {
            return WaitStep::Done((Err(DatError::internal()), q.events.len()));
        };
        let result = if w.satisfied(&q) {
            Ok(())
        } else if q.epoch != w.epoch {
            Err(if q.waitable {
                DatError::bare(Type::DAT_ABORT)
            } else {
                DatError::invalid_state(Sub::DAT_INVALID_STATE_EVD_UNWAITABLE)
            })
        } else {
            let now = Instant::now();
            match w.deadline {
                Some(d) if now >= d => Err(DatError::bare(Type::DAT_TIMEOUT_EXPIRED)),
                deadline => return WaitStep::Sleep(q.wakeup.sleep(deadline.map(|d| d - now))),
            }
        };
        let w = q.waiter.take();
        self.waiting.store(false, Ordering::Release);
        if let (
            Some(Waiter {
                spin,
                slept_at: Some(at),
                ..
            }),
            Ok(()),
        ) = (w, &result)
        {
            let next = next_spin(spin, at.elapsed(), crate::runtime::settings::SPIN_US.get());
            self.spin_us
                .store(next.as_micros() as u64, Ordering::Relaxed);
        }
        let outcome = result.and_then(|()| {
            if q.pop_into(out) {
                Ok(())
            } else {
                Err(DatError::internal())
            }
        });
        self.queued.store(q.events.len(), Ordering::Relaxed);
        WaitStep::Done((outcome, q.events.len()))
    }

    /// This EVD, held (for a wait that sleeps outside the library).
    pub fn held(&self) -> Option<Arc<Evd>> {
        self.me.upgrade()
    }
    pub fn set_enabled(&self, enabled: bool) {
        self.queue.lock().enabled = enabled;
    }

    /// `dat_evd_set_unwaitable` wakes a blocked waiter, which then fails.
    pub fn set_waitable(&self, waitable: bool) {
        let mut q = self.queue.lock();
        q.waitable = waitable;
        if !waitable {
            q.epoch += 1;
            q.wakeup.wake();
        }
    }

    pub fn resize(&self, qlen: usize) -> DatResult {
        let mut q = self.queue.lock();
        if qlen < q.events.len() {
            return Err(DatError::invalid_state(Sub::DAT_NO_SUBTYPE));
        }
        q.qlen = qlen;
        Ok(())
    }

    pub fn set_cno(&self, cno: Option<Arc<Cno>>) {
        let attached = cno.is_some();
        {
            let mut q = self.queue.lock();
            self.has_cno.store(attached, Ordering::Relaxed);
            q.cno = cno.map(Held::new);
        }
        if attached {
            // The CNO's waiters poll nothing: sources that report only to sleepers start now.
            for s in self.joined(self.sources.lock()).iter() {
                s.unpolled_waiter();
            }
        }
    }

    /// Called as the EVD's handle dies: a blocked waiter returns `DAT_ABORT`.
    pub fn abort_waiters(&self) {
        let mut q = self.queue.lock();
        q.epoch += 1;
        q.wakeup.wake();
    }

    pub fn has_waiter(&self) -> bool {
        self.queue.lock().waiter.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: Duration = Duration::from_micros(50);

    #[test]
    fn a_queue_emptied_starts_again_at_the_front_of_its_buffer() {
        let mut q = Queue {
            events: VecDeque::with_capacity(4096),
            qlen: 4096,
            enabled: true,
            waitable: true,
            waiter: None,
            wakeup: Wakeup::default(),
            cno: None,
            epoch: 0,
            notices: 0,
        };
        let event = Event(DAT_EVENT::zeroed());
        q.events.push_back(event);
        let front = q.events.as_slices().0.as_ptr();
        for round in 0..1000 {
            assert!(q.pop().is_some());
            q.events.push_back(event);
            q.events.push_back(event);
            assert!(q.pop().is_some());
            assert_eq!(
                q.events.as_slices().0.as_ptr(),
                front.wrapping_add(1),
                "round {round}"
            );
            assert!(q.pop().is_some());
            assert!(q.pop().is_none());
            q.events.push_back(event);
            assert_eq!(q.events.as_slices().0.as_ptr(), front, "round {round}");
        }
    }

    #[test]
    fn the_spin_grows_when_the_event_came_soon_after_the_sleep_and_stays_bounded() {
        let us = Duration::from_micros;
        assert_eq!(next_spin(BASE, us(30), BASE), us(100));
        assert_eq!(next_spin(us(100), us(60), BASE), us(200));
        let mut spin = BASE;
        for _ in 0..20 {
            spin = next_spin(spin, us(1), BASE);
        }
        assert_eq!(spin, BASE * SPIN_GROWTH);
    }

    #[test]
    fn the_spin_shrinks_back_when_sleeps_are_long_and_holds_in_between() {
        let us = Duration::from_micros;
        assert_eq!(next_spin(us(800), us(10_000), BASE), us(400));
        assert_eq!(next_spin(us(60), us(10_000), BASE), BASE);
        assert_eq!(next_spin(BASE, us(10_000), BASE), BASE);
        assert_eq!(next_spin(us(200), us(500), BASE), us(200));
    }
}
