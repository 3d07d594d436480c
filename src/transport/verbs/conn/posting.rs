//! Posting on the QP: requests (numbered from the connection's own range of work request
//! ids, signalled or not), receives, and memory window binds.

use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::MutexGuard;

use super::Conn;
use crate::abi::*;
use crate::error::{DatError, DatResult, Sub, Type};
use crate::objects::ep::{Ep, EpInner, Outgoing, Posted, Report, Request as Outstanding};
use crate::objects::extension::Extended;
use crate::objects::requests::Requests;
use crate::objects::seam::WindowBind;
use crate::runtime::sys::debug;
use crate::transport::verbs::completions::{CqSource, RECV_ID};
use crate::transport::verbs::datagram;
use crate::transport::verbs::device::{access, Mr, Mw};
use crate::transport::verbs::qp::{Qp, SendFlags, SendOp, Sge, MAX_SGE};
use crate::transport::verbs::srq::SRQ_RECV_ID;

/// A work request's scatter/gather list: room for the most a request may have, of which only
/// the request's entries are written (most requests have one). Filled where it lives, on the
/// poster's stack: a list returned by value would be copied whole on every post.
pub(in crate::transport::verbs) struct SgList {
    entries: [MaybeUninit<Sge>; MAX_SGE],
}

impl SgList {
    #[inline(always)]
    pub(in crate::transport::verbs) fn new() -> SgList {
        SgList {
            entries: [MaybeUninit::uninit(); MAX_SGE],
        }
    }

    /// The pieces of a DAT segment list, as the work request carries them: the empty ones
    /// left out (no byte of them moves; the objects checked none of them).
    #[inline(always)]
    pub(in crate::transport::verbs) fn fill(
        &mut self,
        segments: &[DAT_LMR_TRIPLET],
    ) -> DatResult<&[Sge]> {
        if segments.len() > MAX_SGE {
            return Err(DatError::invalid_arg(2));
        }
        let mut n = 0;
        for s in segments.iter().filter(|s| s.segment_length != 0) {
            self.entries[n].write(Sge {
                addr: s.virtual_address,
                length: s.segment_length,
                lkey: s.lmr_context,
            });
            n += 1;
        }
        // SAFETY: the first `n` entries were just written.
        Ok(unsafe { std::slice::from_raw_parts(self.entries.as_ptr().cast(), n) })
    }
}

/// Each connection numbers its requests from a block of 2^40 ids of its own, below the
/// receives' ids (a connection that posts more runs on into the next block: its own range
/// stays whole).
const SEQ_BLOCK_BITS: u32 = 40;

pub(super) fn first_seq() -> u64 {
    static BLOCKS: AtomicU64 = AtomicU64::new(0);
    let block = 1 + BLOCKS.fetch_add(1, Ordering::Relaxed) % ((SRQ_RECV_ID >> SEQ_BLOCK_BITS) - 1);
    block << SEQ_BLOCK_BITS
}

impl Conn {
    /// Posts a receive to the QP, if it is made (else it goes as the QP is). Under the EP's
    /// lock, as the receive joins the EP's list.
    #[inline]
    pub fn post_recv(&self, segments: &[DAT_LMR_TRIPLET]) -> DatResult {
        let Some(qp) = self.qp.get() else {
            return Ok(());
        };
        qp.post_recv(RECV_ID, SgList::new().fill(segments)?)
            .map_err(|_| DatError::resources(Sub::DAT_RESOURCE_TEP))
    }

    /// Posts a request on the QP under the EP's lock, held by the caller throughout (the
    /// EP's parts borrowed apart): `None` where the QP is not made or the send queue is full,
    /// which `Link::post` handles (it may let go of the lock to reap completions). The data
    /// path's direct call (`VerbsEp::post_direct`, through `EpWire::post_direct`): no reference
    /// to the link taken, inlined into the provider's state.
    #[inline(always)]
    pub fn post_ready(
        &self,
        outstanding: &mut Requests,
        max_request_dtos: DAT_COUNT,
        out: &Outgoing<'_>,
    ) -> Option<DatResult<Posted>> {
        let qp = self.qp.get()?;
        if outstanding.is_full(max_request_dtos) {
            return None;
        }
        Some(self.post_on(qp, outstanding, max_request_dtos, out))
    }

    /// Posts a request on `qp`, the send queue having room, recording it among `outstanding`.
    #[inline(always)]
    fn post_on(
        &self,
        qp: &Qp,
        outstanding: &mut Requests,
        max_request_dtos: DAT_COUNT,
        out: &Outgoing<'_>,
    ) -> DatResult<Posted> {
        let mut sg = SgList::new();
        let list = sg.fill(out.segments)?;
        let total = out.length;
        // A datagram's address handle is held through the post (the consumer may free it
        // meanwhile).
        let mut held = None;
        let op = match (out.extended, out.operation, out.remote) {
            (Some(Extended::Datagram { ah, qpn }), _, _) => {
                let ah = held.insert(datagram::address_handle(ah).ok_or(DatError::invalid_arg(4))?);
                SendOp::Datagram {
                    ah: ah.raw(),
                    qpn,
                    qkey: datagram::QKEY,
                }
            }
            (Some(x), _, Some(r)) => {
                let (remote_address, rkey) = (r.virtual_address, r.rmr_context);
                match x {
                    Extended::WriteImmediate(data) => SendOp::WriteImmediate {
                        remote_address,
                        rkey,
                        data,
                    },
                    Extended::FetchAdd(add) => SendOp::FetchAdd {
                        remote_address,
                        rkey,
                        add,
                    },
                    Extended::CompareSwap { compare, swap } => SendOp::CompareSwap {
                        remote_address,
                        rkey,
                        compare,
                        swap,
                    },
                    // Matched above: a datagram names no remote region.
                    Extended::Datagram { .. } => return Err(DatError::invalid_arg(4)),
                }
            }
            (_, dat_dtos::DAT_DTO_RDMA_WRITE, Some(r)) => SendOp::Write {
                remote_address: r.virtual_address,
                rkey: r.rmr_context,
            },
            (_, dat_dtos::DAT_DTO_RDMA_READ, Some(r)) => SendOp::Read {
                remote_address: r.virtual_address,
                rkey: r.rmr_context,
            },
            _ => match out.invalidate {
                Some(rkey) => SendOp::SendWithInvalidate { rkey },
                None => SendOp::Send,
            },
        };
        let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
        outstanding.push(Outstanding {
            seq,
            cookie: out.cookie,
            operation: out.operation,
            length: total as u32,
            report: out.report,
            extended: out.extended.map(Extended::kind),
            bind: None,
        });
        // A suppressed request goes unsignalled, as OpenFabrics posts it: the device writes no
        // completion for its success, and its send-queue slot comes free with the completion
        // of a signalled request behind it (a failure has a completion of its own). One in
        // every half queue is signalled anyway, so a program that suppresses every request
        // still frees its slots.
        let run = self.unsignalled_run.load(Ordering::Relaxed) + 1;
        let signalled = out.report.reports_success() || run >= (max_request_dtos.max(2) as u32) / 2;
        let flags = SendFlags {
            signalled,
            solicited: out.solicited,
            fence: out.fence,
        };
        if qp.post_send_sized(seq, op, list, total, flags).is_err() {
            outstanding.unpush();
            return Err(DatError::resources(Sub::DAT_RESOURCE_TEP));
        }
        if signalled {
            self.unsignalled_run.store(0, Ordering::Relaxed);
            self.last_signalled.store(seq, Ordering::Relaxed);
        } else {
            self.unsignalled_run.store(run, Ordering::Relaxed);
        }
        drop(held);
        Ok(Posted::Queued)
    }

    /// Posts a request (`Link::post`).
    #[inline]
    pub(super) fn post_request(
        &self,
        ep: &Ep,
        inner: MutexGuard<'_, EpInner>,
        out: &Outgoing<'_>,
    ) -> DatResult<Posted> {
        let Some(qp) = self.qp.get() else {
            return Ok(Posted::Flush);
        };
        let mut inner = inner;
        let full = |inner: &EpInner| inner.outstanding.is_full(inner.attr.max_request_dtos);
        if full(&inner) {
            // Completions of requests the program does not reap (suppressed ones) may wait in
            // the request CQ: take them here, as a verbs provider frees unsignalled work
            // requests when the queue's next completion is polled.
            let source = inner.request_evd.as_deref().and_then(CqSource::of);
            if let Some(source) = source {
                drop(inner);
                source.poll();
                inner = ep.inner.lock();
                if inner.link.is_none() {
                    return Ok(Posted::Flush);
                }
            }
            if full(&inner) {
                return Err(DatError::resources(Sub::DAT_RESOURCE_TEP));
            }
        }
        let EpInner {
            outstanding, attr, ..
        } = &mut *inner;
        self.post_on(qp, outstanding, attr.max_request_dtos, out)
    }

    /// Binds or unbinds a memory window (`Link::bind_window`).
    pub(super) fn post_bind(
        &self,
        inner: MutexGuard<'_, EpInner>,
        bind: &WindowBind,
    ) -> DatResult<u32> {
        let Some(qp) = self.qp.get() else {
            return Err(DatError::invalid_state(
                Sub::DAT_INVALID_STATE_EP_DISCONNECTED,
            ));
        };
        let mw =
            Mw::of(&bind.window).ok_or(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_RMR))?;
        let region = match &bind.region {
            Some(r) => {
                Some(Mr::of(r).ok_or(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_LMR))?)
            }
            None => None,
        };
        if region.as_ref().is_some_and(|mr| !mr.window_binds) {
            // Read-only memory, pinned without MW_BIND: the device would fail the bind and
            // break the connection.
            return Err(DatError::bare(Type::DAT_MODEL_NOT_SUPPORTED));
        }
        let mut inner = inner;
        // Room for two: a bind may post an invalidation before it.
        if inner
            .outstanding
            .lacks_room(2, inner.attr.max_request_dtos.max(2))
        {
            return Err(DatError::resources(Sub::DAT_RESOURCE_TEP));
        }
        let access = access::remote(bind.privileges);
        // A type 2 window binds only when free: a bound one is invalidated first (an unbind is
        // that alone), by a request of the bind's that reports only a failure.
        if bind.bound && region.is_some() {
            let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
            inner.outstanding.push(Outstanding {
                seq,
                report: Report::FailureOnly,
                ..bind.request
            });
            if qp.post_window(seq, &mw, None, mw.rkey()).is_err() {
                inner.outstanding.unpush();
                return Err(DatError::resources(Sub::DAT_RESOURCE_TEP));
            }
            self.last_signalled.store(seq, Ordering::Relaxed);
        }
        // A bind takes the window's next key; an unbind invalidates the one it has.
        let rkey = if region.is_some() {
            mw.next_rkey()
        } else {
            mw.rkey()
        };
        let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
        inner.outstanding.push(Outstanding {
            seq,
            ..bind.request
        });
        let target = region
            .as_deref()
            .map(|mr| (mr, bind.address, bind.length, access));
        if let Err(e) = qp.post_window(seq, &mw, target, rkey) {
            inner.outstanding.unpush();
            if debug() {
                eprintln!("libdat: binding a memory window: {e}");
            }
            return Err(DatError::resources(Sub::DAT_RESOURCE_TEP));
        }
        self.last_signalled.store(seq, Ordering::Relaxed);
        if region.is_some() {
            mw.set_rkey(rkey);
        }
        Ok(rkey)
    }
}
