//! When acknowledgements of the peer's requests go: a consumer's poll owes them to its next
//! request (a ping-pong's reply carries them), the engine holds them a moment for company
//! and sends them alone when none came, adapting how long it holds them to how the program
//! answers.

use std::sync::atomic::Ordering;

use super::TcpLink;
use crate::transport::sys;
use crate::transport::tcp::answers::Answer;

/// How long the engine's acknowledgements wait for company (more of them, or a request of the
/// consumer's to ride on), in microseconds, at least and at most. Each connection adapts: the
/// wait doubles when the consumer's request took them (a program that answers what arrives:
/// a longer wait costs nothing, and an expiry the engine would wake for goes), and falls back
/// to the least when none came (a program that only receives: its peer's requests complete
/// soon).
pub(super) const ACK_HOLD_MIN_US: u64 = 20;
pub(super) const ACK_HOLD_MAX_US: u64 = 1000;

/// After this many holds in a row that nothing came for, the engine holds acknowledgements no
/// more (hold 0) until a request comes soon after one went: a program that sends and waits
/// for each completion, and never answers, would wait out every hold.
pub(super) const LONE_ACKS_BEFORE_NO_HOLD: u32 = 3;

/// How many of its polls a thread that holds the connection on lease holds acknowledgements
/// for its next request to carry (a ping-pong's reply): counted, not timed, so the poll reads
/// no clock. About the engine's `ACK_HOLD_MIN_US` at the usual half microsecond a poll.
pub(super) const ACK_HOLD_POLLS: u64 = 32;

impl TcpLink {
    /// Acknowledges a request the peer made: a consumer's poll owes it (written as it finishes
    /// its progress, or carried by its next request); the engine holds it a moment.
    pub(in crate::transport::tcp) fn acknowledge(&self, seq: u64, in_caller: bool) {
        if in_caller {
            self.answers.owe_ack(seq);
            return;
        }
        let now = sys::monotonic_micros();
        let hold = self.ack_hold_us.load(Ordering::Relaxed);
        if hold == 0 {
            // Nothing has come to carry them for a while (a program that sends and waits for
            // each completion, and never answers): they go at once, as the frame's handling
            // ends, and a request that comes soon after makes the next ones wait (see `post`).
            self.answers.push(Answer::Ack(seq));
            self.lone_acks_held_at.store(now, Ordering::Relaxed);
        } else if self.answers.hold_ack(seq, now + hold) {
            self.set_timer();
        }
    }

    /// Writes answers after a consumer's poll handled frames: acknowledgements alone wait for
    /// the thread's next request to carry them (a ping-pong's reply), for a few polls when it
    /// holds the connection on lease, else with the engine, whose timer sends them if no
    /// request came; anything else goes now.
    pub(super) fn answer_soon(&self, polls: u64) {
        if !self.answers.pending() && !self.out_blocked.load(Ordering::Relaxed) {
            return;
        }
        if self.only_acks_wait() {
            if !self.lent.load(Ordering::Relaxed) {
                // Sent alone, they would complete the peer's request before our answer comes;
                // a peer that then polls memory, holding its lease, would leave that answer
                // in its socket until the lease ran out.
                self.hold_with_engine();
                return;
            }
            if self.poll_lone_streak.load(Ordering::Relaxed) < LONE_ACKS_BEFORE_NO_HOLD {
                let since = self.answers.held_since(polls);
                if since == 0 || polls.wrapping_sub(since) < ACK_HOLD_POLLS {
                    return;
                }
                // Nothing came for them: after a few in a row, the thread holds them no more
                // (a program that receives and never answers: its peer's sends complete as
                // soon as they land) until a request comes soon after one went (see `post`).
                self.poll_lone_streak.fetch_add(1, Ordering::Relaxed);
            }
            self.poll_lone_at.store(polls.max(1), Ordering::Relaxed);
        }
        self.flush_answers();
    }

    /// Whether nothing but acknowledgements waits to be written (no request held behind a
    /// read, no frame waiting for room): those may wait for a ride.
    pub(super) fn only_acks_wait(&self) -> bool {
        !self.out_blocked.load(Ordering::Acquire) && !self.held.any() && self.answers.only_acks()
    }

    /// The acknowledgements a consumer's thread held wait with the engine (its timer sends
    /// them if no request carries them first).
    pub(super) fn hold_with_engine(&self) {
        let due = sys::monotonic_micros() + self.ack_hold_us.load(Ordering::Relaxed);
        if self.answers.hand_to_engine(due) {
            self.set_timer();
        }
    }
}
