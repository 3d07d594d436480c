//! When acknowledgements of the peer's requests go: a consumer's poll owes them to its next
//! request (a ping-pong's reply carries them), the engine holds them a moment for company
//! and sends them alone when none came, adapting how long it holds them to how the program
//! answers.

use std::sync::atomic::{AtomicU64, Ordering};

use super::stats::count;
use super::TcpLink;
use crate::runtime::sys;
use crate::transport::tcp::answers::Answer;
use crate::transport::tcp::wire::{flags, Header, Op};

/// How long the engine's acknowledgements wait for company (a request of the consumer's to
/// ride on), in microseconds, at least and at most. Each connection adapts: the wait doubles
/// when the consumer's request took them (a program that answers what arrives: a longer wait
/// costs nothing, and an expiry the engine would wake for goes), and falls back to the least
/// when none came (a program that only receives: its peer's requests complete soon).
pub(super) const ACK_HOLD_MIN_US: u64 = 20;
const ACK_HOLD_MAX_US: u64 = 1000;

/// After this many holds in a row that nothing came for, the engine holds acknowledgements no
/// more (hold 0) until a request comes soon after one went: a program that sends and waits
/// for each completion, and never answers, would wait out every hold.
const LONE_ACKS_BEFORE_NO_HOLD: u32 = 3;

/// How many of its polls a thread that holds the connection on lease holds acknowledgements
/// for its next request to carry (a ping-pong's reply): counted, not timed, so the poll reads
/// no clock. About the engine's `ACK_HOLD_MIN_US` at the usual half microsecond a poll.
const ACK_HOLD_POLLS: u64 = 32;

impl TcpLink {
    /// Acknowledges a request the peer made: a consumer's poll owes it (written as it finishes
    /// its progress, or carried by its next request); the engine holds it a moment. Not when
    /// the acknowledgement of an earlier request is held still: a peer that makes requests
    /// without waiting for our answer (a stream, 16 sends in flight) goes on only as they
    /// complete, and waiting for a ride that a ping-pong's reply would give stalls it (its
    /// window full, a hold at a time: 64 KiB sends between two hosts ran at half a raw
    /// socket's rate). Both go at once, as a device acknowledges what arrives.
    pub(in crate::transport::tcp) fn acknowledge(&self, seq: u64, in_caller: bool) {
        if in_caller {
            if self.answers.owe_ack(seq) {
                self.pipelined.store(true, Ordering::Relaxed);
            }
            return;
        }
        if self.answers.acks_held() {
            // The engine writes them as it finishes handling frames (`engine_reads_with`).
            count(&self.stats.pipelined_acks);
            self.answers.push(Answer::Ack(seq));
            self.answers.acks_gone();
            return;
        }
        let now = sys::monotonic_micros();
        let hold = self.ack_hold_us.load(Ordering::Relaxed);
        if hold == 0 {
            // Nothing has come to carry them for a while (a program that sends and waits for
            // each completion, and never answers): they go at once, as the frame's handling
            // ends, and a request that comes soon after makes the next ones wait (see
            // `acks_to_ride`).
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
        // The peer pipelines (see `acknowledge`): they go now.
        let pipelined = self.pipelined.load(Ordering::Relaxed);
        if pipelined {
            self.pipelined.store(false, Ordering::Relaxed);
            count(&self.stats.pipelined_acks);
        }
        if !pipelined && self.only_acks_wait() {
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
                // soon as they land) until a request comes soon after one went (see
                // `acks_to_ride`).
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

    /// The acknowledgements a request about to go carries (they wait, and only those: answers
    /// keep their order): inside a send's header (`h`), else as a frame ahead of it in the
    /// same system call (returned). A request coming soon after acknowledgements went alone
    /// makes the next ones wait again.
    #[inline]
    pub(super) fn acks_to_ride(&self, op: Op, h: &mut Header) -> Option<Header> {
        let mut ack = None;
        let poll_lone_at = take(&self.poll_lone_at);
        if poll_lone_at != 0
            && self
                .polls
                .load(Ordering::Relaxed)
                .wrapping_sub(poll_lone_at)
                < ACK_HOLD_POLLS
        {
            // A polling thread's acknowledgements went alone and this request came within
            // their hold: it would have carried them (a ping-pong's reply), so they wait again.
            self.poll_lone_streak.store(0, Ordering::Relaxed);
        }
        let engine_held = self.answers.ack_due() != 0;
        let lone_at = take(&self.lone_acks_held_at);
        if lone_at != 0 && !engine_held {
            // The engine's acknowledgements went alone, and this request came after them: a
            // program that takes a while to answer (it checks what landed, or computes). The
            // next ones wait twice its answer's time, and ride.
            let answered_after = sys::monotonic_micros().saturating_sub(lone_at);
            if answered_after < ACK_HOLD_MAX_US / 2 {
                self.lone_streak.store(0, Ordering::Relaxed);
                self.ack_hold_us
                    .store((answered_after * 2).max(ACK_HOLD_MIN_US), Ordering::Relaxed);
            }
        }
        if let Some(last) = self.answers.take_acks() {
            if engine_held {
                // They rode: the engine may hold the next ones longer.
                self.lone_streak.store(0, Ordering::Relaxed);
                let hold = self.ack_hold_us.load(Ordering::Relaxed);
                self.ack_hold_us
                    .store((hold * 2).min(ACK_HOLD_MAX_US), Ordering::Relaxed);
                // Nothing left for the engine's timer to send (its own wake-up would take a
                // CPU from the threads that run).
                self.set_timer();
            }
            if op == Op::Send {
                h.flags |= flags::ACK;
                h.remote_addr = last;
            } else {
                let mut a = Header::new(Op::Ack);
                a.id = last;
                ack = Some(a);
            }
        }
        ack
    }

    /// The engine's held acknowledgements whose time is up go alone (nothing came for them),
    /// and the next ones wait less (unless the consumer's request comes soon after: see
    /// `acks_to_ride`).
    #[inline]
    pub(super) fn send_lone_acks_if_due(&self, now: u64) {
        let due = self.answers.ack_due();
        if due != 0 && now >= due {
            count(&self.stats.lone_acks);
            // After a few in a row that nothing came for, the engine holds them no more.
            let streak = self.lone_streak.fetch_add(1, Ordering::Relaxed) + 1;
            let next = if streak >= LONE_ACKS_BEFORE_NO_HOLD {
                0
            } else {
                ACK_HOLD_MIN_US
            };
            let hold = self.ack_hold_us.swap(next, Ordering::Relaxed);
            self.lone_acks_held_at
                .store(due.saturating_sub(hold).max(1), Ordering::Relaxed);
            self.answers.acks_gone();
            self.flush_answers();
        }
    }
}

/// Takes a mark, leaving 0: a swap only when one is set (the usual post finds none, and a swap
/// is a locked instruction, as dear as a lock on a post's path).
#[inline]
fn take(mark: &AtomicU64) -> u64 {
    if mark.load(Ordering::Relaxed) == 0 {
        return 0;
    }
    mark.swap(0, Ordering::Relaxed)
}
