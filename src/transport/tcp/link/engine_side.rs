//! The engine's side of the connection: its reports (data, room to write, a hang-up) and its
//! timer (deadlines, held acknowledgements, offers to settle, a look again), what the socket
//! is armed for, and the connection's last answers as the process exits.

use std::sync::atomic::{fence, Ordering};
use std::sync::Arc;

use parking_lot::MutexGuard;

use super::life::{Phase, LINGER};
use super::stats::count;
use super::TcpLink;
use crate::objects::evd::Catch;
use crate::runtime::engine::{self, Source};
use crate::runtime::sys;
use crate::transport::tcp::inbound::{self, Inbound};

/// How many times the exiting thread tries a lock another thread holds (see `on_exit`).
const EXIT_FLUSH_TRIES: usize = 100;

/// How soon the engine looks again when it found a consumer's poll handling the connection
/// (microseconds): that poll handles what woke the engine; this catches what came after it.
const BUSY_RETRY_US: u64 = 20;

impl TcpLink {
    /// Has the engine look at this connection as soon as it can (its timer, due now).
    pub(super) fn kick(&self) {
        self.kicked.store(true, Ordering::Release);
        self.set_timer();
    }

    /// Arms the socket in the engine for what it should hear of: incoming data unless a
    /// polling thread holds the connection, room to write while answers wait for it.
    pub(super) fn rearm(&self) {
        let _w = self.watch.lock();
        let phase = self.phase();
        if phase == Phase::Closed {
            return;
        }
        let mut events = 0;
        if !self.lent.load(Ordering::Acquire)
            || phase != Phase::Open
            || self.ending.load(Ordering::Acquire)
        {
            events |= (libc::EPOLLIN | libc::EPOLLRDHUP) as u32;
        }
        if self.out_blocked.load(Ordering::Acquire) {
            events |= libc::EPOLLOUT as u32;
        }
        if events != 0 {
            self.engine.arm(self.token(), self.fd, events);
        }
    }

    /// Arms the socket again, unless the engine waits on its timer to look (a consumer's poll
    /// was handling the connection): then the timer re-arms it.
    pub(super) fn rearm_unless_waiting(&self) {
        if self.retry_at.load(Ordering::Acquire) != 0 {
            if self.out_blocked.load(Ordering::Acquire) {
                let _w = self.watch.lock();
                self.engine
                    .arm(self.token(), self.fd, libc::EPOLLOUT as u32);
            }
            return;
        }
        self.rearm();
    }

    /// Sets the engine's timer for this connection to its earliest deadline. A thread that
    /// finds another one setting it leaves the setting to that one, which works it out again
    /// as it lets go: waiting for it, the engine's thread, which had preempted the holder on
    /// its CPU, yielded that CPU over and over (a 64 KiB stream, a thousand times a second).
    pub(super) fn set_timer(&self) {
        loop {
            let Some(t) = self.timer.try_lock() else {
                self.timer_wanted.store(true, Ordering::SeqCst);
                fence(Ordering::SeqCst);
                if self.timer.is_locked() {
                    return; // its holder sees `timer_wanted` after it lets go
                }
                continue;
            };
            // Read with Acquire: what the thread that asked did before asking is seen here.
            if self.timer_wanted.load(Ordering::Acquire) {
                self.timer_wanted.store(false, Ordering::Relaxed);
            }
            self.set_timer_now();
            drop(t);
            fence(Ordering::SeqCst);
            if !self.timer_wanted.load(Ordering::Relaxed) {
                return;
            }
        }
    }

    /// Works out the earliest deadline and sets the engine's timer to it; the caller holds
    /// `timer`.
    fn set_timer_now(&self) {
        let mut next = self.answers.ack_due();
        let mut due = |d: u64| {
            if d != 0 && (next == 0 || d < next) {
                next = d;
            }
        };
        due(self.retry_at.load(Ordering::Acquire));
        due(self.reclaim_at.load(Ordering::Acquire));
        if self.kicked.load(Ordering::Acquire) {
            due(sys::monotonic_micros());
        }
        let offered = self.offered.load(Ordering::Acquire);
        if offered != 0 {
            due(self.offer_deadline.load(Ordering::Acquire));
        }
        match self.phase() {
            Phase::Handshake { deadline } | Phase::Lingering { deadline } => due(deadline),
            Phase::Open => {}
            Phase::Closed => return,
        }
        if self.draining.load(Ordering::Acquire) {
            due(self.drain_deadline.load(Ordering::Acquire));
        }
        let closed = self.closed_at.load(Ordering::Acquire);
        if closed != 0 {
            due(closed + LINGER.as_micros() as u64);
            due(self.close_deadline.load(Ordering::Acquire));
        }
        self.engine.set_timer(self.token(), next);
    }

    /// Data arrived for a connection the engine watches: a thread that polls it is offered
    /// it, and the engine handles what came.
    pub(super) fn incoming(&self) {
        match self.inbound.try_lock() {
            Some(inb) => {
                self.offer_lease(false);
                self.engine_reads_with(inb);
            }
            // A consumer's poll is at it, and handles what woke us.
            None => {
                self.offer_lease(true);
                self.busy_retry();
            }
        }
    }

    /// A consumer's poll was handling the connection: the engine looks again in a moment for
    /// what came after that poll (armed again now, the socket would report at once, over and
    /// over, while the poll runs).
    pub(super) fn busy_retry(&self) {
        self.retry_at
            .store(sys::monotonic_micros() + BUSY_RETRY_US, Ordering::Release);
        self.set_timer();
    }

    /// Handles what the socket has, on the engine's thread.
    pub(super) fn engine_reads(&self) {
        match self.inbound.try_lock() {
            Some(inb) => self.engine_reads_with(inb),
            None => self.busy_retry(),
        }
    }

    fn engine_reads_with(&self, mut inb: MutexGuard<'_, Inbound>) {
        count(&self.stats.engine_reads);
        if self.ending.load(Ordering::Acquire) {
            return;
        }
        // The end is recorded before the inbound half goes: no poll handles a frame behind it.
        match inbound::advance(&self.ep, self, &mut inb, false, &mut Catch::none()) {
            Ok((handled, stop)) => {
                if handled {
                    self.active.store(true, Ordering::Relaxed);
                    // A stream of large messages: the next is probably on its way. Not while
                    // a thread of the program's polls the connection: one that spins (on
                    // memory an RDMA write changes) on the engine's CPU would get it from the
                    // engine's yield for its whole time slice, and the next write's pieces,
                    // which it waits for, with it (a 64 KiB memory-polling ping-pong between
                    // two hosts: 50 us -> 2 ms a message).
                    if inb.reader.large_frames() && self.resting.load(Ordering::Acquire) {
                        engine::expect_more_soon();
                    }
                }
                if let Some(stop) = stop {
                    self.stop(Ok(stop));
                }
            }
            Err(e) => self.stop(Err(e)),
        }
        let (more, awaits_write) = (inb.more, inb.awaits_write);
        drop(inb);
        if more {
            self.kick(); // its share was spent: the engine comes back after the others
        } else if awaits_write {
            // An acknowledgement waits for our write (its thread kicks as it returns): the
            // socket stays unarmed until the engine looks again, else it would report what
            // is behind that acknowledgement at once, over and over.
            self.busy_retry();
        }
        // Acknowledgements alone wait for a ride, or for their timer (see `acknowledge`):
        // written now, each would wake the peer a second time per message.
        if self.answers.ack_due() != 0
            && !self.out_blocked.load(Ordering::Acquire)
            && self.answers.only_acks()
        {
            return;
        }
        self.flush_answers();
    }

    /// The engine's timer for this connection.
    pub(super) fn on_timer(&self) {
        // Whatever a kick asked for, this look does (read and cleared: what the kicker did
        // before its kick is seen here).
        self.kicked.swap(false, Ordering::AcqRel);
        let now = sys::monotonic_micros();
        if self.life_ends_this_look(now) {
            return;
        }
        self.send_lone_acks_if_due(now);
        let offer_settled = self.settle_offer_if_due(now);
        self.reclaim_if_due(now);
        let retry_due = self.retry_if_due(now);
        let rearm = offer_settled || retry_due;
        // A kick (the first frames read ahead, or a consumer's late answers) looks at all.
        if !self.lent.load(Ordering::Acquire) {
            self.engine_reads();
        }
        if self.ending.load(Ordering::Acquire) {
            return self.end_now();
        }
        if rearm && !self.lent.load(Ordering::Acquire) {
            self.rearm_unless_waiting();
        }
        self.set_timer();
    }

    /// The look again a consumer's poll put off (`busy_retry`), when it is due: true when it
    /// was, and the socket is to be armed again.
    #[inline]
    fn retry_if_due(&self, now: u64) -> bool {
        let retry = self.retry_at.load(Ordering::Acquire);
        if retry != 0 && now >= retry {
            self.retry_at.store(0, Ordering::Release);
            return true;
        }
        false
    }
}

impl Source for TcpLink {
    /// Acknowledgements held for a ride (and any answer queued) go now: the peer's requests
    /// landed, and a device would have acknowledged them as they did; unsent, the peer's
    /// requests would flush as our socket closes (a receiver that exits as soon as its last
    /// message came).
    fn on_exit(&self) {
        // Tried a few times, not waited for: the engine's thread holds it for a moment as it
        // handles a report (an exit then left the acknowledgements unwritten, now and then),
        // and a thread that called `exit` from a signal handler may have been holding it.
        let open = (0..EXIT_FLUSH_TRIES)
            .find_map(|_| {
                let open = self.phase.try_lock().map(|p| *p == Phase::Open);
                if open.is_none() {
                    sys::yield_now();
                }
                open
            })
            .unwrap_or(false);
        if !open || self.ending.load(Ordering::Acquire) || !self.answers.pending() {
            return;
        }
        self.answers.acks_gone();
        // A thread that holds the writer writes them as it lets go; it may be one the exit
        // stops first, so the writer is tried a few times.
        for _ in 0..EXIT_FLUSH_TRIES {
            self.flush_answers();
            if !self.answers.pending() || self.out_blocked.load(Ordering::Acquire) {
                return;
            }
            sys::yield_now();
        }
    }

    fn on_event(self: Arc<Self>, events: u32) {
        if self.token.get().is_none() {
            // A socket the peer already reset reports its hang-up as it is registered, before
            // `start` knows the token: `begin` arms it next, and the hang-up is reported again.
            return;
        }
        count(&self.stats.engine_events);
        if events == 0 {
            return self.on_timer();
        }
        match self.phase() {
            Phase::Closed => return,
            Phase::Lingering { .. } => {
                self.flush_answers();
                self.linger_reads();
                return self.rearm();
            }
            _ => {}
        }
        if events & libc::EPOLLOUT as u32 != 0 {
            self.flush_answers();
        }
        let incoming = (libc::EPOLLIN | libc::EPOLLRDHUP | libc::EPOLLHUP | libc::EPOLLERR) as u32;
        if events & incoming != 0 && !self.lent.load(Ordering::Acquire) {
            self.incoming();
        }
        if self.ending.load(Ordering::Acquire) {
            return self.end_now();
        }
        self.rearm_unless_waiting();
    }
}
