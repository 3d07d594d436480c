//! The consumer's requests (sends, RDMA writes and reads, atomics): numbered and recorded as
//! outstanding under the writer's lock, then written as one frame, acknowledgements riding
//! on it, without blocking; or held (`held`) behind a frame the socket has not taken, behind
//! requests held already, or fenced behind our RDMA reads in flight. The direct path takes a
//! request first when it can (`direct_path`).

use std::sync::atomic::{fence, Ordering};

use parking_lot::MutexGuard;

use super::acks::{ACK_HOLD_MAX_US, ACK_HOLD_MIN_US, ACK_HOLD_POLLS};
use super::stats::count;
use super::TcpLink;
use crate::abi::*;
use crate::error::{DatError, DatResult};
use crate::objects::ep::{Ep, EpInner, Outgoing, Posted, Request};
use crate::objects::extension::Extended;
use crate::objects::srq::Segments;
use crate::transport::sys;
use crate::transport::tcp::answers::Answer;
use crate::transport::tcp::conn::{ConnError, Frame, Wrote, MAX_PARTS};
use crate::transport::tcp::direct::Outcome;
use crate::transport::tcp::held::{HeldRequest, Reads};
use crate::transport::tcp::inbound::Stop;
use crate::transport::tcp::wire::{flags, Header, Op, ATOMIC_OPERANDS};
use crate::transport::tcp::wire_limits;

impl TcpLink {
    /// Whether every request of ours up to `seq` went out whole: the peer may answer only
    /// those.
    pub(in crate::transport::tcp) fn sent_through(&self, seq: u64) -> bool {
        self.writer.sent().through(seq)
    }

    /// How many reads of ours are in flight, and how many may be.
    pub(super) fn reads(&self) -> Reads<'_> {
        Reads {
            in_flight: &self.reads_in_flight,
            depth: self.read_depth,
        }
    }

    /// One of our RDMA reads has its data in place: requests fenced behind it may go.
    pub(in crate::transport::tcp) fn read_landed(&self) {
        self.reads_in_flight.fetch_sub(1, Ordering::AcqRel);
        // Against `post`: it holds a request, then looks at the count.
        fence(Ordering::SeqCst);
        if self.held.any() {
            self.flush_answers();
        }
    }

    /// Posts a request (`Link::post`).
    #[inline]
    pub(super) fn post_request(
        &self,
        ep: &Ep,
        inner: MutexGuard<'_, EpInner>,
        out: &Outgoing<'_>,
    ) -> DatResult<Posted> {
        if out.segments.len() >= MAX_PARTS {
            return Err(DatError::invalid_arg(2));
        }
        let total = out.length;
        if total > u64::from(wire_limits().max_message) {
            return Err(DatError::invalid_arg(3));
        }
        let op = match (out.extended, out.operation) {
            (Some(Extended::FetchAdd(_)), _) => Op::FetchAdd,
            (Some(Extended::CompareSwap { .. }), _) => Op::CompareSwap,
            (_, dat_dtos::DAT_DTO_RDMA_WRITE) => Op::RdmaWrite,
            (_, dat_dtos::DAT_DTO_RDMA_READ) => Op::RdmaReadRequest,
            _ => Op::Send,
        };
        // An atomic's payload is its operands; its segments are where the answer lands.
        let operands = match out.extended {
            Some(Extended::FetchAdd(add)) => Some((add, 0)),
            Some(Extended::CompareSwap { compare, swap }) => Some((compare, swap)),
            _ => None,
        }
        .map(|(a, b)| {
            let mut bytes = [0u8; ATOMIC_OPERANDS as usize];
            bytes[..8].copy_from_slice(&a.to_le_bytes());
            bytes[8..].copy_from_slice(&b.to_le_bytes());
            bytes
        });
        // The writer is taken before the EP as a rule; the EP's lock the caller holds is kept
        // when the writer is free at once (the usual post), else let go and taken again.
        let mut inner = inner;
        let mut w = match self.writer.try_lock() {
            Some(w) => w,
            None => {
                drop(inner);
                let w = self.writer.lock();
                inner = ep.inner.lock();
                if inner.link.is_none() {
                    return Ok(Posted::Flush); // the connection ended: the caller flushes
                }
                w
            }
        };
        if inner.outstanding.len() >= inner.attr.max_request_dtos.max(1) as usize {
            return Err(DatError::resources(crate::error::Sub::DAT_RESOURCE_TEP));
        }
        // A send, RDMA write or read straight into the peer's memory (see `direct`), when
        // nothing of ours is still on its way there (it would land after this one) and the
        // peer's table settles it; otherwise, or if the peer's table refuses it, the socket
        // carries it.
        let direct = self.direct.get().filter(|_| {
            out.extended.is_none()
                && out.invalidate.is_none()
                && inner.outstanding.is_empty()
                && !self.held.any()
                && !self.direct_off.load(Ordering::Relaxed)
                && !self.ending.load(Ordering::Relaxed)
        });
        if let Some(d) = direct {
            drop(inner);
            let outcome = match (op, out.remote) {
                (Op::RdmaWrite, Some(r)) => {
                    d.write(r.rmr_context, r.virtual_address, out.segments, total)
                }
                (Op::RdmaReadRequest, Some(r)) => {
                    d.read(r.rmr_context, r.virtual_address, out.segments, total)
                }
                (Op::Send, _) => d.send(out.segments, total),
                _ => Outcome::Socket,
            };
            match outcome {
                Outcome::Done { doorbell } => {
                    count(&self.stats.direct);
                    // Completed before the writer goes: a request posted after it completes
                    // after it.
                    let request = Request {
                        seq: 0,
                        cookie: out.cookie,
                        operation: out.operation,
                        length: total as u32,
                        report: out.report,
                        extended: None,
                        bind: None,
                    };
                    ep.complete_request(
                        &request,
                        dat_dto_completion_status::DAT_DTO_SUCCESS,
                        total as u32,
                    );
                    drop(w);
                    if doorbell {
                        self.answers.push(Answer::Doorbell);
                    }
                    // Acknowledgements held for this request to carry, and answers queued
                    // while we held the writer, go now.
                    let engine_held = self.answers.ack_due() != 0;
                    fence(Ordering::SeqCst);
                    if self.answers.pending() || self.write_wanted.load(Ordering::Relaxed) {
                        self.flush_answers();
                    }
                    if engine_held {
                        self.set_timer();
                    }
                    return Ok(Posted::Queued);
                }
                Outcome::Failed => {
                    // The peer's receive took the message and its memory failed the copy: as
                    // the socket path's refusal (the receiver's memory), the connection breaks.
                    let request = Request {
                        seq: 0,
                        cookie: out.cookie,
                        operation: out.operation,
                        length: 0,
                        report: out.report,
                        extended: None,
                        bind: None,
                    };
                    ep.complete_request(
                        &request,
                        dat_dto_completion_status::DAT_DTO_ERR_REMOTE_RESPONDER,
                        0,
                    );
                    drop(w);
                    self.stop(Ok(Stop::Broken));
                    return Ok(Posted::Queued);
                }
                Outcome::Off => self.direct_off.store(true, Ordering::Relaxed),
                Outcome::Socket => {}
            }
            inner = ep.inner.lock();
            if inner.link.is_none() {
                return Ok(Posted::Flush); // the connection ended: the caller flushes
            }
        }
        // Numbered under the writer's lock: requests go out, and are acknowledged, in the
        // order of their numbers.
        let seq = self.next_seq.load(Ordering::Relaxed);
        self.next_seq.store(seq + 1, Ordering::Relaxed);
        inner.outstanding.push_back(Request {
            seq,
            cookie: out.cookie,
            operation: out.operation,
            length: total as u32,
            report: out.report,
            extended: out.extended.map(Extended::kind),
            bind: None,
        });
        // The only request in flight: a ping-pong's, not a stream's (see the yield below).
        let alone_in_flight = inner.outstanding.len() == 1;
        if op.answered_with_data() {
            inner
                .wire
                .tcp
                .read_targets
                .push_back(Segments::from_slice(out.segments));
        }
        drop(inner);
        let mut h = Header::new(op);
        h.id = seq;
        h.payload_len = if operands.is_some() {
            ATOMIC_OPERANDS
        } else {
            total as u32
        };
        // A write with immediate data: the immediate follows it, in the same system call.
        let immediate = match out.extended {
            Some(Extended::WriteImmediate(data)) => {
                h.flags |= flags::IMMEDIATE;
                let mut i = Header::new(Op::Immediate);
                i.id = seq;
                i.rkey = data;
                i.remote_addr = total;
                Some(i)
            }
            _ => None,
        };
        if out.solicited {
            h.flags |= flags::SOLICITED;
        }
        if let Some(context) = out.invalidate {
            h.flags |= flags::INVALIDATE;
            h.rkey = context;
        }
        if let Some(r) = out.remote {
            h.rkey = r.rmr_context;
            h.remote_addr = r.virtual_address;
        }
        // A request answered with data carries none of its segments: they are where the
        // answer lands.
        let payload = if op.answered_with_data() {
            &[][..]
        } else {
            out.segments
        };
        let copied = operands.as_ref().map_or(&[][..], |o| &o[..]);
        let pieces = payload
            .iter()
            .map(|s| (s.virtual_address as *const u8, s.segment_length as usize));
        let frame = |headers: &[&Header]| {
            // SAFETY: each segment was checked against a live LMR with local read privilege,
            // and the consumer keeps the memory until the DTO completes, which it does only
            // after the frame is written (or the connection ended, which drops it unwritten).
            let f =
                unsafe { Frame::new(headers, copied).with_pieces(pieces.clone()) }.for_request(seq);
            match &immediate {
                Some(i) => f.with_tail(i),
                None => f,
            }
        };
        let read = op.answered_with_data();
        // Behind a frame the socket has not taken, behind held requests, fenced behind reads
        // in flight, or a read beyond what the peer takes at once: it waits (see `held`).
        if w.has_rest() || self.held.any() || !self.reads().may_start(out.fence, read) {
            self.held
                .push(&w, HeldRequest::new(frame(&[&h]), out.fence, read));
            drop(w);
            // The reads may have landed meanwhile (against `read_landed`).
            fence(Ordering::SeqCst);
            self.flush_answers();
            return Ok(Posted::Queued);
        }
        if read {
            self.reads_in_flight.fetch_add(1, Ordering::AcqRel);
        }
        // Waiting acknowledgements (and only those: answers keep their order) go out with the
        // request: inside a send's header, else as a frame ahead of it in the same system call.
        let mut ack = None;
        let poll_lone_at = self.poll_lone_at.swap(0, Ordering::Relaxed);
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
        let lone_at = self.lone_acks_held_at.swap(0, Ordering::Relaxed);
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
        let frame = match &ack {
            Some(a) => frame(&[a, &h]),
            None => frame(&[&h]),
        };
        // A failed write is the connection's end: whoever reads next finds it.
        let wrote = match w.write_now(frame) {
            Ok(wrote) => wrote,
            Err(_) => {
                drop(w);
                self.stop(Err(ConnError::Closed));
                return Ok(Posted::Queued);
            }
        };
        drop(w);
        self.wrote_frames();
        if wrote != Wrote::All {
            // The rest goes as the socket drains: the engine watches for room (or the thread
            // that holds the connection on lease writes it as it polls).
            if !self.out_blocked.swap(true, Ordering::AcqRel) && !self.lent.load(Ordering::Acquire)
            {
                self.rearm();
            }
            // Answers queued while we held the writer wait behind the rest, as it goes.
            fence(Ordering::SeqCst);
            if self.write_wanted.load(Ordering::Relaxed) {
                self.flush_answers();
            }
            return Ok(Posted::Queued);
        }
        // Answers queued while we held the writer are ours to write (see `flush_answers`).
        fence(Ordering::SeqCst);
        if self.write_wanted.load(Ordering::Relaxed) {
            self.flush_answers();
        }
        if alone_in_flight && self.peer_on_this_host && !self.lent.load(Ordering::Relaxed) {
            // The peer's engine, woken by this write, was queued on this CPU (the kernel puts
            // a thread woken by a socket next to its waker, expecting the waker to sleep): a
            // thread that goes on running, polling memory or computing, keeps it off the CPU
            // until the scheduler's tick, milliseconds. Yielding lets it land the data now.
            // A thread that polls this connection itself (it holds it on lease) woke nobody,
            // and one that streams requests keeps the peer busy anyway (a system call per
            // message would cost it a fifth of its small-message rate).
            sys::yield_now();
        }
        Ok(Posted::Queued)
    }
}
