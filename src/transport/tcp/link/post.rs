//! The consumer's requests (sends, RDMA writes and reads, atomics), posted in steps: checked,
//! the writer taken, then carried out by the direct path when it can (`direct_path`), else
//! numbered and recorded as outstanding under the writer's lock and written as one frame,
//! acknowledgements riding on it, without blocking; or held (`held`) behind a frame the socket
//! has not taken, behind requests held already, or fenced behind our RDMA reads in flight.

use std::sync::atomic::{fence, Ordering};

use parking_lot::MutexGuard;

use super::direct_path::DirectPost;
use super::TcpLink;
use crate::abi::*;
use crate::error::{DatError, DatResult};
use crate::objects::ep::{Ep, EpInner, Outgoing, Posted, Request};
use crate::objects::extension::Extended;
use crate::objects::srq::Segments;
use crate::runtime::sys;
use crate::transport::tcp::conn::{
    ConnError, Frame, SmallFrame, WriterGuard, Wrote, MAX_PARTS, SMALL_FRAME,
};
use crate::transport::tcp::ep_wire::TcpWire;
use crate::transport::tcp::held::{HeldRequest, Reads};
use crate::transport::tcp::wire::{flags, Header, Op, ATOMIC_OPERANDS, HEADER_LEN};
use crate::transport::tcp::wire_limits;

/// An atomic's payload: its two operands, little-endian.
type Operands = [u8; ATOMIC_OPERANDS as usize];

impl TcpLink {
    /// Whether every request of ours up to `seq` went out whole: the peer may answer only
    /// those.
    pub(in crate::transport::tcp) fn sent_through(&self, seq: u64) -> bool {
        self.writer.sent().through(seq)
    }

    /// Whether an acknowledgement of our requests up to `last` came while the write of one of
    /// them has not returned yet: it waits, unread (see `Sent::ack_ahead_of_write`).
    pub(in crate::transport::tcp) fn ack_ahead_of_write(&self, last: u64) -> bool {
        let ahead = self.writer.sent().ack_ahead_of_write(last);
        if ahead {
            super::stats::count(&self.stats.acks_ahead_of_write);
        }
        ahead
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
        let total = checked_length(out)?;
        let op = wire_op(out);
        let operands = atomic_operands(out);
        let Some((mut inner, mut w)) = self.writer_then_ep(ep, inner) else {
            return Ok(Posted::Flush); // the connection ended: the caller flushes
        };
        if inner.outstanding.is_full(inner.attr.max_request_dtos) {
            return Err(DatError::resources(crate::error::Sub::DAT_RESOURCE_TEP));
        }
        if let Some(d) = self.direct_for(&inner, out) {
            drop(inner);
            w = match self.post_direct(d, ep, w, op, out, total) {
                DirectPost::Done => return Ok(Posted::Queued),
                DirectPost::BySocket(w) => w,
            };
            inner = ep.inner.lock();
            if inner.link.is_none() {
                return Ok(Posted::Flush); // the connection ended: the caller flushes
            }
        }
        let (seq, alone_in_flight) = self.record_outstanding(&mut inner, op, out, total);
        // A stream whose completions no other thread reaps (see `look_after_post`).
        let look_after = !alone_in_flight && !inner.reaped_elsewhere();
        drop(inner);
        let (mut h, immediate) = request_headers(op, seq, out, total, operands.is_some());
        let copied = operands.as_ref().map_or(&[][..], |o| &o[..]);
        // A request answered with data carries none of its segments: they are where the
        // answer lands.
        let payload = if op.answered_with_data() {
            &[][..]
        } else {
            out.segments
        };
        let frame =
            |headers: &[&Header]| request_frame(headers, copied, payload, seq, immediate.as_ref());
        let read = op.answered_with_data();
        if self.must_hold(&w, out.fence, read) {
            self.hold(w, frame(&[&h]), out.fence, read);
            return Ok(Posted::Queued);
        }
        if read {
            self.reads_in_flight.fetch_add(1, Ordering::AcqRel);
        }
        let ack = self.acks_to_ride(op, &mut h);
        let size = HEADER_LEN * (1 + usize::from(ack.is_some()) + usize::from(immediate.is_some()))
            + copied.len()
            + if read { 0 } else { total as usize };
        if size <= SMALL_FRAME {
            let write = |w: &mut WriterGuard<'_>| {
                // Filled where it lies: a frame returned by value is a 264-byte copy.
                let mut small = SmallFrame::default();
                encode_small_request(
                    &mut small,
                    ack.as_ref(),
                    &h,
                    copied,
                    payload,
                    immediate.as_ref(),
                );
                w.write_small(&small, seq)
            };
            self.write_request(w, write, alone_in_flight);
        } else {
            let frame = match &ack {
                Some(a) => frame(&[a, &h]),
                None => frame(&[&h]),
            };
            self.write_request(w, |w| w.write_now(frame), alone_in_flight);
        }
        if look_after {
            self.look_after_post();
        }
        Ok(Posted::Queued)
    }

    /// Takes the writer, then the EP: the writer is taken before the EP as a rule; the EP's
    /// lock the caller holds is kept when the writer is free at once (the usual post), else
    /// let go and taken again. None when the connection ended meanwhile.
    #[inline]
    fn writer_then_ep<'a, 'e>(
        &'a self,
        ep: &'e Ep,
        inner: MutexGuard<'e, EpInner>,
    ) -> Option<(MutexGuard<'e, EpInner>, WriterGuard<'a>)> {
        let mut inner = inner;
        let w = match self.writer.try_lock() {
            Some(w) => w,
            None => {
                drop(inner);
                let w = self.writer.lock();
                inner = ep.inner.lock();
                if inner.link.is_none() {
                    drop(w); // the writer first, then the EP's lock as this returns
                    return None;
                }
                w
            }
        };
        Some((inner, w))
    }

    /// Numbers the request and records it as outstanding (with where a read's data lands).
    /// Numbered under the writer's lock: requests go out, and are acknowledged, in the order
    /// of their numbers. Returns its number, and whether it is the only request in flight.
    #[inline]
    fn record_outstanding(
        &self,
        inner: &mut EpInner,
        op: Op,
        out: &Outgoing<'_>,
        total: u64,
    ) -> (u64, bool) {
        let seq = self.next_seq.load(Ordering::Relaxed);
        self.next_seq.store(seq + 1, Ordering::Relaxed);
        // The only request in flight: a ping-pong's, not a stream's (see `write_request`).
        let alone_in_flight = inner.outstanding.push(Request {
            seq,
            cookie: out.cookie,
            operation: out.operation,
            length: total as u32,
            report: out.report,
            extended: out.extended.map(Extended::kind),
            bind: None,
        });
        if op.answered_with_data() {
            inner
                .wire
                .tcp()
                .read_targets
                .push_back(Segments::from_slice(out.segments));
        }
        (seq, alone_in_flight)
    }

    /// Whether the request must wait (see `held`): behind a frame the socket has not taken,
    /// behind held requests, fenced behind reads in flight, or a read beyond what the peer
    /// takes at once.
    #[inline]
    fn must_hold(&self, w: &WriterGuard<'_>, fenced: bool, read: bool) -> bool {
        w.has_rest() || self.held.any() || !self.reads().may_start(fenced, read)
    }

    /// Holds the request's frame: whoever finds room, or lands the last read, writes it.
    #[inline]
    fn hold(&self, w: WriterGuard<'_>, frame: Frame, fenced: bool, read: bool) {
        self.held.push(&w, HeldRequest::new(frame, fenced, read));
        drop(w);
        // The reads may have landed meanwhile (against `read_landed`).
        fence(Ordering::SeqCst);
        self.flush_answers();
    }

    /// Writes the request's frame without blocking (`write`, with the writer), and lets the
    /// writer go: what the socket has no room for goes as it drains; answers queued meanwhile
    /// are written.
    #[inline]
    fn write_request(
        &self,
        mut w: WriterGuard<'_>,
        write: impl FnOnce(&mut WriterGuard<'_>) -> std::io::Result<Wrote>,
        alone_in_flight: bool,
    ) {
        // A failed write is the connection's end: whoever reads next finds it.
        let wrote = match write(&mut w) {
            Ok(wrote) => wrote,
            Err(_) => {
                drop(w);
                self.stop(Err(ConnError::Closed));
                return;
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
            self.look_again_if_awaited();
            if self.write_wanted.load(Ordering::Relaxed) {
                self.flush_answers();
            }
            return;
        }
        // Answers queued while we held the writer are ours to write (see `flush_answers`).
        fence(Ordering::SeqCst);
        self.look_again_if_awaited();
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
    }
}

/// The request's length, checked against what a frame carries: its segments, and the
/// largest message.
#[inline]
fn checked_length(out: &Outgoing<'_>) -> DatResult<u64> {
    if out.segments.len() >= MAX_PARTS {
        return Err(DatError::invalid_arg(2));
    }
    let total = out.length;
    if total > u64::from(wire_limits().max_message) {
        return Err(DatError::invalid_arg(3));
    }
    Ok(total)
}

/// The frame's operation for the request.
#[inline]
fn wire_op(out: &Outgoing<'_>) -> Op {
    match (out.extended, out.operation) {
        (Some(Extended::FetchAdd(_)), _) => Op::FetchAdd,
        (Some(Extended::CompareSwap { .. }), _) => Op::CompareSwap,
        (_, dat_dtos::DAT_DTO_RDMA_WRITE) => Op::RdmaWrite,
        (_, dat_dtos::DAT_DTO_RDMA_READ) => Op::RdmaReadRequest,
        _ => Op::Send,
    }
}

/// An atomic's payload, its operands; its segments are where the answer lands.
#[inline]
fn atomic_operands(out: &Outgoing<'_>) -> Option<Operands> {
    match out.extended {
        Some(Extended::FetchAdd(add)) => Some((add, 0)),
        Some(Extended::CompareSwap { compare, swap }) => Some((compare, swap)),
        _ => None,
    }
    .map(|(a, b)| {
        let mut bytes = [0u8; ATOMIC_OPERANDS as usize];
        bytes[..8].copy_from_slice(&a.to_le_bytes());
        bytes[8..].copy_from_slice(&b.to_le_bytes());
        bytes
    })
}

/// The request's header, and the immediate's that follows a write with immediate data (in
/// the same system call).
#[inline]
fn request_headers(
    op: Op,
    seq: u64,
    out: &Outgoing<'_>,
    total: u64,
    atomic: bool,
) -> (Header, Option<Header>) {
    let mut h = Header::new(op);
    h.id = seq;
    h.payload_len = if atomic {
        ATOMIC_OPERANDS
    } else {
        total as u32
    };
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
    (h, immediate)
}

/// A small request's frame, as `request_frame` makes a large one's, encoded in place into
/// `f` (empty).
#[inline(always)]
fn encode_small_request(
    f: &mut SmallFrame,
    ack: Option<&Header>,
    h: &Header,
    copied: &[u8],
    payload: &[DAT_LMR_TRIPLET],
    immediate: Option<&Header>,
) {
    if let Some(a) = ack {
        f.header(a);
    }
    f.header(h);
    f.bytes(copied);
    for s in payload {
        // SAFETY: each segment was checked against a live LMR with local read privilege, and
        // the consumer keeps the memory until the DTO completes (after this copy).
        unsafe { f.piece(s.virtual_address as *const u8, s.segment_length as usize) };
    }
    if let Some(i) = immediate {
        f.header(i);
    }
}

/// The request's frame: `headers` (an acknowledgement's, then the request's), the `copied`
/// payload (an atomic's operands), the `payload` read in place from the consumer's segments,
/// and the immediate's header after it.
#[inline]
fn request_frame(
    headers: &[&Header],
    copied: &[u8],
    payload: &[DAT_LMR_TRIPLET],
    seq: u64,
    immediate: Option<&Header>,
) -> Frame {
    let pieces = payload
        .iter()
        .map(|s| (s.virtual_address as *const u8, s.segment_length as usize));
    // SAFETY: each segment was checked against a live LMR with local read privilege, and the
    // consumer keeps the memory until the DTO completes, which it does only after the frame
    // is written (or the connection ended, which drops it unwritten).
    let f = unsafe { Frame::new(headers, copied).with_pieces(pieces) }.for_request(seq);
    match immediate {
        Some(i) => f.with_tail(i),
        None => f,
    }
}
