//! The connection lent to a thread that polls it: the engine, woken for its data, offers it
//! to a thread that polls often; a later poll takes the offer, and the engine leaves the
//! connection alone (out of its poll) until the thread sleeps, or stops polling and the lease
//! runs out (`Lent::take_back`).

use std::sync::atomic::{fence, Ordering};

use super::life::Phase;
use super::stats::count;
use super::TcpLink;
use crate::runtime::engine;
use crate::runtime::lease::{self, Lent};
use crate::runtime::sys;

/// How many polls since the engine last looked make a thread worth offering the connection:
/// a thread in a polling loop makes dozens between two messages; one that reaps completions
/// now and then between other work makes a few.
const LEND_AFTER_POLLS: u64 = 16;

/// How many more polls take an offer (see `offer_lease`).
const ACCEPT_AFTER_POLLS: u64 = 4;

/// How long the engine's offer of the connection stands (microseconds): a thread in a polling
/// loop takes it within a poll or two of running again (the engine's own wake-up may have put
/// it off its CPU for a moment). Meanwhile that thread handles the data that woke the engine.
const OFFER_US: u64 = 100;

/// How long the thread holding the connection on lease may go without polling it while
/// another thread sleeps waiting for its events, before the engine takes it back
/// (microseconds; see `reclaim_soon`).
const RECLAIM_AFTER_US: u64 = 100;

impl TcpLink {
    /// The consumer's thread takes the engine's offer, if it still stands.
    #[cold]
    pub(super) fn accept_offer(&self, offer: u64) {
        if self
            .offer
            .compare_exchange(offer, 0, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            count(&self.stats.leases);
            self.lent.store(true, Ordering::Release);
            if let Some(slot) = self.exported.get() {
                slot.set_polled(true); // the peer's messages need no doorbell now
            }
            // Out of the engine's poll while lent: the kernel then runs no poll callback for
            // each message that arrives (3-4% of a polling ping-pong's latency). `rearm` puts
            // it back.
            let _w = self.watch.lock();
            self.engine.park(self.token(), self.fd);
            if let Some(me) = self.me.upgrade() {
                lease::lend(me);
            }
        }
    }

    /// The engine, woken for data, offers the connection to the thread polling it, if one
    /// polled often since the engine last looked. The offer stands for `OFFER_US`; meanwhile
    /// the engine goes on handling what comes (the thread may have polled its last: it got
    /// the completion it waited for, and went off to poll memory for the peer's next write).
    /// True when an offer was made.
    pub(super) fn offer_lease(&self, polling_now: bool) -> bool {
        let polls = self.polls.load(Ordering::Relaxed);
        let seen = self.polls_seen.swap(polls, Ordering::Relaxed);
        // A thread that streams requests looks once a post, and the engine, woken for each
        // acknowledgement, would rarely see many looks since its last.
        let streaming =
            self.streaming.load(Ordering::Relaxed) && self.streaming.swap(false, Ordering::Relaxed);
        let often = polling_now || streaming || polls.wrapping_sub(seen) >= LEND_AFTER_POLLS;
        if !often
            || self.resting.load(Ordering::Acquire)
            || self.phase() != Phase::Open
            || self.offered.load(Ordering::Relaxed) != 0
        {
            return false;
        }
        // Taken by a poll a few polls on: a thread that goes on polling, not one that
        // happened to be in its last poll (a program that reaps now and then between other
        // work drains its EVD in a poll or two).
        // (A streaming thread's next look takes it: its posts may be many microseconds
        // apart.)
        let after = if streaming { 1 } else { ACCEPT_AFTER_POLLS };
        let offer = polls.wrapping_add(after).max(1);
        self.offer.store(offer, Ordering::SeqCst);
        // The thread may have gone to sleep meanwhile: either it saw the offer and withdrew
        // it (`withdraw_offer`), or we see it resting now and withdraw it ourselves.
        fence(Ordering::SeqCst);
        if self.resting.load(Ordering::SeqCst) {
            let _ = self
                .offer
                .compare_exchange(offer, 0, Ordering::AcqRel, Ordering::Relaxed);
        }
        if self.offer.load(Ordering::Acquire) != offer {
            return self.lent.load(Ordering::Acquire); // withdrawn (or, rarely, taken already)
        }
        count(&self.stats.offers);
        self.offer_deadline
            .store(sys::monotonic_micros() + OFFER_US, Ordering::Release);
        self.offered.store(offer, Ordering::Release);
        self.set_timer();
        true
    }

    /// The polling thread goes to sleep: an offer it has not taken is withdrawn (the engine
    /// settles it when its time runs out).
    pub(super) fn withdraw_offer(&self) {
        self.resting.store(true, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        let offer = self.offer.load(Ordering::SeqCst);
        if offer != 0 {
            let _ = self
                .offer
                .compare_exchange(offer, 0, Ordering::AcqRel, Ordering::Relaxed);
        }
    }

    /// A thread is about to sleep waiting for events this connection brings. If another thread
    /// holds it on lease, the engine looks in `RECLAIM_AFTER_US` whether that thread polled it
    /// meanwhile, and takes it back if not: the holder may have gone off to compute or to block
    /// elsewhere, and the sleeper's events would wait for its lease to run out (up to
    /// `LIBDAT_LEASE_US`). A holder that polls on keeps it.
    pub(super) fn reclaim_soon(&self) {
        if !self.lent.load(Ordering::Acquire) || lease::held_here(self) {
            return;
        }
        self.reclaim_polls
            .store(self.polls.load(Ordering::Relaxed), Ordering::Relaxed);
        self.reclaim_at.store(
            sys::monotonic_micros() + RECLAIM_AFTER_US,
            Ordering::Release,
        );
        self.set_timer();
    }

    /// The engine's look that `reclaim_soon` asked for, when it is due: a holder that has not
    /// polled since gives the connection back.
    pub(super) fn reclaim_if_due(&self, now: u64) {
        let at = self.reclaim_at.load(Ordering::Acquire);
        if at == 0 || now < at {
            return;
        }
        self.reclaim_at.store(0, Ordering::Release);
        let idle = self.polls.load(Ordering::Relaxed) == self.reclaim_polls.load(Ordering::Relaxed);
        if idle && self.lent.load(Ordering::Acquire) {
            count(&self.stats.reclaimed);
            self.take_back();
        }
    }

    /// The engine settles its offer when it runs out: taken, the connection is the thread's;
    /// not taken, the engine withdraws it.
    pub(super) fn settle_offer(&self) {
        let offered = self.offered.swap(0, Ordering::AcqRel);
        if offered != 0 {
            let _ = self
                .offer
                .compare_exchange(offered, 0, Ordering::AcqRel, Ordering::Relaxed);
        }
    }

    /// The engine's offer, once taken, withdrawn (by the thread as it went to sleep), or run
    /// out, is settled, and the engine may offer the connection again: true when it was, and
    /// the socket is to be armed again.
    #[inline]
    pub(super) fn settle_offer_if_due(&self, now: u64) -> bool {
        if self.offered.load(Ordering::Acquire) != 0
            && (now >= self.offer_deadline.load(Ordering::Acquire)
                || self.offer.load(Ordering::Acquire) == 0)
        {
            self.settle_offer();
            self.polls_seen
                .store(self.polls.load(Ordering::Relaxed), Ordering::Relaxed);
            return true;
        }
        false
    }
}

impl Lent for TcpLink {
    fn take_back(&self) -> bool {
        let mut waited = false;
        if self.lent.swap(false, Ordering::AcqRel) {
            count(&self.stats.taken_back);
            if let Some(slot) = self.exported.get() {
                // Cleared before the last look: a message the peer puts in a receive from now
                // on comes with a doorbell.
                slot.set_polled(false);
                waited |= self.take_direct();
            }
            waited |= sys::bytes_waiting(self.fd) > 0;
            // Frames the thread's last look left in the buffer (its share was spent, or an
            // acknowledgement waits for our write): the socket will not report them.
            let buffered = self
                .inbound
                .try_lock()
                .is_none_or(|inb| inb.more || inb.awaits_write);
            waited |= buffered;
            if waited {
                count(&self.stats.taken_back_waiting);
            }
            self.polls_seen
                .store(self.polls.load(Ordering::Relaxed), Ordering::Relaxed);
            self.rearm();
            if buffered {
                self.kick();
            }
        }
        if engine::on_engine() && self.only_acks_wait() {
            // The lease ran out while the thread computes or polls memory: acknowledgements
            // it held for a ride wait on for its next request, as the engine's own do. Sent
            // alone now, they would complete the peer's request early, and a peer that then
            // polls memory, holding its own lease, leaves our next request waiting in its
            // socket until that lease runs out too (dtest -D, whose client computes for
            // 500 us every fifth message, lost a lease's length to each such round).
            self.hold_with_engine();
            return waited;
        }
        // The thread sleeps or exits, or answers other than acknowledgements wait: what it
        // held goes now, since nobody polls to send it.
        self.flush_answers();
        waited
    }
}
