//! The glue to the direct path (`direct`) with a peer on this host that took up our offer
//! (and we its): the offers taken up and made, the receives the peer fills directly, and the
//! peer's count of its frames, which lets a poll leave a quiet socket alone.

use std::sync::atomic::{fence, Ordering};
use std::sync::Arc;

use super::stats::count;
use super::TcpLink;
use crate::abi::*;
use crate::objects::ep::{Ep, EpInner, Outgoing, Request};
use crate::runtime::sys::debug;
use crate::transport::tcp::answers::Answer;
use crate::transport::tcp::conn::WriterGuard;
use crate::transport::tcp::direct::{self, Direct, ExportedSlot, Offer, Outcome, Receives};
use crate::transport::tcp::ep_wire::TcpWire;
use crate::transport::tcp::inbound::{self, Stop};
use crate::transport::tcp::wire::Op;

/// What became of a request offered to the direct path.
pub(super) enum DirectPost<'a> {
    /// Carried out, or failed, and completed: the post is over.
    Done,
    /// The peer's table did not settle it: the socket carries it, under this writer.
    BySocket(WriterGuard<'a>),
}

impl TcpLink {
    /// The peer offered us direct access to its memory: taken up if it is what it says (its
    /// table, open for this connection) and we asked for it.
    pub(super) fn direct_offered(&self, offer: Offer) {
        let Some((local, remote)) = self.ends.filter(|(l, r)| direct::wanted(*l, *r)) else {
            return;
        };
        if let Some(d) = direct::attach(&offer, local, remote) {
            let _ = self.direct.set(d);
        } else if debug() {
            eprintln!("libdat: EP {:p}: the peer's direct offer could not be taken up (pid {}): its accesses go by the socket", self.ep.handle(), offer.pid);
        }
    }

    /// Our offer was made (`slot`): the EP's receives are published to the peer from now on
    /// (an SRQ's are not: they are the SRQ's EPs', in any order).
    pub(super) fn export(&self, slot: Arc<ExportedSlot>) {
        {
            let mut inner = self.ep.inner.lock();
            if inner.srq.is_none() {
                let EpInner { wire, recvs, .. } = &mut *inner;
                let mut receives = Receives::new(slot.clone());
                let state = wire.tcp();
                receives.publish(recvs, !state.unexpected.is_empty());
                state.receives = Some(receives);
                // Before the offer goes: the peer fills nothing before its order is known.
                if let Some(order) = &self.fill_order {
                    order.join(&slot, &self.ep);
                }
            }
        }
        let _ = self.exported.set(slot);
    }

    /// Takes the receives the peer filled directly (they complete): with those of the other
    /// connections completing on the same EVD, in the order they were filled, where there are
    /// any. Returns whether it found any (no lock is taken to look).
    pub(in crate::transport::tcp) fn take_direct(&self) -> bool {
        match self.exported.get() {
            Some(slot) if slot.peer_filled() => {
                match self.fill_order.as_ref().filter(|o| o.shared_beyond(1)) {
                    Some(order) => order.take(Some(slot), inbound::take_filled_numbers),
                    None => inbound::take_filled(&self.ep, &mut self.ep.inner.lock()),
                }
                true
            }
            _ => false,
        }
    }

    /// A message (or immediate) came by the socket: what other connections' peers put
    /// directly in receives completing on the same EVD before it was sent completes before
    /// it (it came after them: its sender may have known of them).
    #[inline]
    pub(in crate::transport::tcp) fn before_socket_message(&self) {
        if let Some(order) = &self.fill_order {
            if order.shared_beyond(usize::from(self.exported.get().is_some())) {
                order.take(None, inbound::take_filled_numbers);
            }
        }
    }

    /// Frames of ours went into the socket: a peer that reads our counts of them (`direct`)
    /// looks there.
    pub(super) fn wrote_frames(&self) {
        if let Some(d) = self.direct.get() {
            d.wrote_frame();
        }
    }

    /// Whether a polling thread may leave the socket alone this poll: the peer counts the
    /// frames it writes (`direct`), and the count has not moved since a poll last looked.
    /// Every 16th poll looks anyway: for a frame the kernel queued after its count moved, and
    /// for the peer's end of stream, which no count tells.
    pub(in crate::transport::tcp) fn socket_quiet(&self) -> bool {
        let Some(frames) = self.exported.get().and_then(|slot| slot.peer_frames()) else {
            return false;
        };
        if frames != self.frames_seen.load(Ordering::Relaxed) {
            self.frames_seen.store(frames, Ordering::Relaxed);
            return false;
        }
        !self.polls.load(Ordering::Relaxed).is_multiple_of(16)
    }

    /// The connection ends: the peer's direct accesses stop (its next one goes by the socket),
    /// those it began finish, and the messages it put in our receives complete (before the
    /// rest flush).
    pub(super) fn close_direct(&self) {
        if let Some(slot) = self.exported.get() {
            slot.close();
            self.take_direct();
            if let Some(order) = &self.fill_order {
                order.leave(slot);
            }
        }
    }

    /// The direct path, if it may carry this request: nothing of ours is still on its way to
    /// the peer by the socket (it would land after this one), and the request is a send, RDMA
    /// write or read.
    #[inline]
    pub(super) fn direct_for(&self, inner: &EpInner, out: &Outgoing<'_>) -> Option<&Direct> {
        self.direct.get().filter(|_| {
            out.extended.is_none()
                && out.invalidate.is_none()
                && inner.outstanding.is_empty()
                && !self.held.any()
                && !self.direct_off.load(Ordering::Relaxed)
                && !self.ending.load(Ordering::Relaxed)
        })
    }

    /// Carries out a send, RDMA write or read straight in the peer's memory, and completes it
    /// before the writer goes (a request posted after it completes after it); where the
    /// peer's table refuses it, the writer comes back and the socket carries it.
    #[inline]
    pub(super) fn post_direct<'a>(
        &'a self,
        d: &Direct,
        ep: &Ep,
        w: WriterGuard<'a>,
        op: Op,
        out: &Outgoing<'_>,
        total: u64,
    ) -> DirectPost<'a> {
        let outcome = match (op, out.remote) {
            (Op::RdmaWrite, Some(r)) => {
                d.write(r.rmr_context, r.virtual_address, out.segments, total)
            }
            (Op::RdmaReadRequest, Some(r)) => {
                d.read(r.rmr_context, r.virtual_address, out.segments, total)
            }
            (Op::Send, _) => d.send(out.segments, total, out.solicited),
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
                DirectPost::Done
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
                DirectPost::Done
            }
            Outcome::Off => {
                self.direct_off.store(true, Ordering::Relaxed);
                DirectPost::BySocket(w)
            }
            Outcome::Socket => DirectPost::BySocket(w),
        }
    }
}
