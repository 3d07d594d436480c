//! The consumer's poll (`Progress`): a thread that polls or waits on an EVD the EP feeds
//! handles the frames the socket has, one look, never blocking, and writes the answers they
//! made; as it goes to sleep, what it held for a ride goes.

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::TcpLink;
use crate::objects::evd::Catch;
use crate::objects::seam::Progress;
use crate::runtime::{lease, sys};
use crate::transport::tcp::inbound;

/// How long a consumer's poll waits at most for the thread handling the connection's frames
/// (see `progress`): that thread's share of work, or its time off its CPU on a busy machine
/// (the waiting poll lets it run).
const LANDING_WAIT: Duration = Duration::from_millis(20);

/// Posts at most this far apart (microseconds) make a stream (see `look_after_post`): about
/// a lease's shortest length.
const STREAM_GAP_US: u64 = 100;

impl TcpLink {
    /// A thread that streams requests (others of its own in flight behind the one it just
    /// wrote) looks at the connection after each post, as a poll does: acknowledgements that
    /// came meanwhile complete its requests here. While its posts come close together
    /// (`STREAM_GAP_US`), it takes the engine's offer (`lending`) and holds the connection on
    /// lease, so the engine is not woken for each acknowledgement: each such wake-up took a
    /// CPU from a thread that runs, and met the posting thread's next write on the socket's
    /// lock (a stream's waits find their completions queued already and poll nothing, so
    /// they never took the connection). Posts further apart leave it to the engine: what
    /// the peer sends for another thread's receives would wait for the next post. Not
    /// called (`post_request`) for a ping-pong's request, alone in flight, which has no
    /// answer yet to look for, nor when another thread reaps the EP's completions
    /// (`EpInner::reaped_elsewhere`): that thread may sleep in a wait while this one blocks
    /// outside the library, and the acknowledgements would wait for the lease to run out.
    pub(super) fn look_after_post(&self) {
        let now = sys::monotonic_micros();
        let last = self.looked_after_post.load(Ordering::Relaxed);
        self.looked_after_post.store(now, Ordering::Relaxed);
        let streaming = now.saturating_sub(last) <= STREAM_GAP_US;
        let lent = self.lent.load(Ordering::Relaxed);
        if streaming && !lent && !self.streaming.load(Ordering::Relaxed) {
            self.streaming.store(true, Ordering::Relaxed);
        }
        self.progress();
        if streaming && lent {
            // The connection stays this thread's while it streams (its waits may never poll).
            lease::keep_alive(Some(now));
        }
    }
}

impl Progress for TcpLink {
    fn progress(&self) {
        self.progress_catching(&mut Catch::none());
    }

    /// The consumer's thread handles the frames the socket has (one look), then writes the
    /// answers they produced; it never blocks. The first message or acknowledgement it
    /// completes for the dequeue's EVD goes into the out-parameter `catch` lends.
    fn progress_catching(&self, catch: &mut Catch<'_>) {
        // Only "a poll happened" counts: a lost count between two polling threads is
        // harmless, and a plain store is cheaper than an atomic add every poll.
        let polls = self.polls.load(Ordering::Relaxed).wrapping_add(1);
        self.polls.store(polls, Ordering::Relaxed);
        if self.resting.load(Ordering::Relaxed) {
            self.resting.store(false, Ordering::Release);
        }
        let offer = self.offer.load(Ordering::Relaxed);
        if offer != 0 && polls >= offer {
            self.accept_offer(offer);
        }
        // Most polls find nothing: they take no lock beyond the inbound's.
        let mut handled = false;
        let inbound = self.inbound.try_lock().or_else(|| {
            // Another thread handles the frames (the engine, woken as they came): it may be
            // between landing a message where this thread sees it and posting its
            // completion. A program that saw the message in memory and polls once expects the
            // completion there, as a device has it: the poll waits for that thread, briefly,
            // and takes what the peer put in our receives directly meanwhile (when it found
            // some, that is what the program saw: no wait).
            // A wait's poll does not: the thread landing the message wakes the waiter as it
            // posts the completion (waiting here, it spun and yielded its CPU to that thread,
            // a 64 KiB receive at a time).
            if self.take_direct() || !catch.for_dequeue() {
                return None;
            }
            self.inbound.try_lock_for(LANDING_WAIT)
        });
        if let Some(mut inb) = inbound {
            if !self.ending.load(Ordering::Relaxed) {
                // The end is recorded before the inbound half goes: nobody handles a frame
                // behind it.
                match inbound::advance(&self.ep, self, &mut inb, true, catch) {
                    Ok((h, stop)) => {
                        handled = h;
                        if let Some(stop) = stop {
                            self.stop(Ok(stop));
                        }
                    }
                    Err(e) => self.stop(Err(e)),
                }
                // Its share spent: a thread that holds the connection comes back at its next
                // poll (or hands it back, see `take_back`); else the engine looks.
                if inb.more && !self.lent.load(Ordering::Relaxed) {
                    drop(inb);
                    self.kick();
                }
            }
        }
        if handled {
            self.active.store(true, Ordering::Relaxed);
        }
        // Answers this round made, or acknowledgements held for a ride whose time may be up;
        // not those the engine holds, whose timer sends them: a program that reaps its
        // completions now and then, between a write's arrival and its answer, would send them
        // alone (and wake the peer a second time for that message).
        let held = self.answers.acks_held() && !self.answers.only_engine_holds();
        if handled || held || self.out_blocked.load(Ordering::Relaxed) {
            self.answer_soon(polls);
        }
    }

    /// The consumer's thread is about to sleep: what it held for a ride goes now, and a lease
    /// another thread holds is looked at soon (`reclaim_soon`).
    fn flush(&self) {
        self.withdraw_offer();
        self.reclaim_soon();
        self.answers.acks_gone();
        self.flush_answers();
    }
}
