//! The Endpoint's data-transfer rules: a request DTO (send, RDMA write and read, the IB
//! extension's) and a receive are checked against the EP's attributes, state, zone and EVDs,
//! counted, and handed to its connection's transport, or flushed at once on a DISCONNECTED EP.
//! The API converts the C arguments only: the segment array and the remote triplet are read
//! through the closures it passes, called where the checks before them passed, so the codes
//! come in the order they always did.

use std::sync::Arc;

use super::counters::{Tally, EP_COUNTERS};
use super::ep::{Ep, EpInner, Outgoing, Posted, Report, Request};
use super::ep_state::{self, Post};
use super::extension::Extended;
use super::lmr::{self, AccessError, Lmr};
use super::pz::Pz;
use super::seam::EpWire;
use super::srq::{PostedRecv, RecvWake, Segments};
use crate::abi::*;
use crate::error::{DatError, DatResult, Sub, Type};

/// Every bit of `DAT_COMPLETION_FLAGS`.
pub const COMPLETION_FLAGS: u32 = dat_completion_flags::DAT_COMPLETION_SUPPRESS_FLAG as u32
    | dat_completion_flags::DAT_COMPLETION_SOLICITED_WAIT_FLAG as u32
    | dat_completion_flags::DAT_COMPLETION_UNSIGNALLED_FLAG as u32
    | dat_completion_flags::DAT_COMPLETION_BARRIER_FENCE_FLAG as u32
    | dat_completion_flags::DAT_COMPLETION_EVD_THRESHOLD_FLAG as u32
    | dat_completion_flags::DAT_COMPLETION_LMR_INVALIDATE_FENCE_FLAG as u32;

/// A request DTO as the consumer posts it, its C arguments aside.
pub struct RequestPost {
    pub num_segments: DAT_COUNT,
    pub cookie: u64,
    pub completion_flags: DAT_COMPLETION_FLAGS,
    /// Where the completion flags are among the call's arguments (for the error's subtype).
    pub flags_position: u8,
    pub operation: dat_dtos,
    pub extended: Option<Extended>,
    /// A send with invalidate: the peer's RMR of this context.
    pub invalidate: Option<u32>,
}

impl Ep {
    /// Posts a request DTO: `local` reads its `num_segments` local segments (position 3),
    /// `remote` its remote triplet where it has one.
    // Inlined into the API's one copy of the post path.
    #[inline(always)]
    pub fn post_request<'a>(
        &self,
        post: RequestPost,
        local: impl FnOnce(DAT_COUNT) -> DatResult<&'a [DAT_LMR_TRIPLET]>,
        remote: impl FnOnce() -> DatResult<Option<DAT_RMR_TRIPLET>>,
    ) -> DatResult {
        let RequestPost {
            num_segments,
            cookie,
            completion_flags,
            flags_position,
            operation,
            extended,
            invalidate,
        } = post;
        let mut inner = self.inner.lock();
        live(&inner)?;
        let max_iov = match operation {
            dat_dtos::DAT_DTO_RDMA_READ => inner.attr.max_rdma_read_iov,
            dat_dtos::DAT_DTO_RDMA_WRITE => inner.attr.max_rdma_write_iov,
            _ => inner.attr.max_request_iov,
        };
        if num_segments < 0 || num_segments > max_iov.max(1) {
            return Err(DatError::invalid_arg(2));
        }
        let segments = local(num_segments)?;
        let remote = remote()?;
        check_completion_flags(
            completion_flags,
            inner.attr.request_completion_flags,
            flags_position,
        )?;
        let privilege = if operation == dat_dtos::DAT_DTO_RDMA_READ {
            lmr::PRIV_LOCAL_WRITE
        } else {
            lmr::PRIV_LOCAL_READ
        };
        let length = check_local_segments(
            segments,
            inner.pz.as_ref().map(|p| p.arc()),
            privilege,
            3,
            Empty::Skip,
        )?;
        // The largest message (RDMA transfer) is the transport's, which the EP's attributes
        // report (`ep::check_attr`): a larger one would fail on the wire, refused here instead.
        // A datagram's size is its transport's to refuse.
        let largest = if matches!(
            operation,
            dat_dtos::DAT_DTO_RDMA_READ | dat_dtos::DAT_DTO_RDMA_WRITE
        ) {
            inner.attr.max_rdma_size
        } else {
            inner.attr.max_message_size
        };
        if length > u64::from(largest) && !matches!(extended, Some(Extended::Datagram { .. })) {
            return Err(DatError::invalid_arg(3));
        }
        if inner.request_evd.is_none() {
            return Err(DatError::invalid_state(
                Sub::DAT_INVALID_STATE_EP_EVD_REQUEST,
            ));
        }
        // A UD EP sends datagrams only, each to an address handle, in any state (its QP is
        // ready from the start); a datagram needs a UD EP.
        let datagram = Ep::is_datagram(&inner);
        if datagram != matches!(extended, Some(Extended::Datagram { .. })) {
            return Err(DatError::bare(Type::DAT_MODEL_NOT_SUPPORTED));
        }
        let post = if datagram {
            Post::Run
        } else {
            ep_state::post_request(inner.state)?
        };
        let posted = match post {
            Post::Run => {
                // Made once, for whichever path takes it (the direct post, inlined, reads
                // its fields where they are).
                let request = Outgoing {
                    operation,
                    segments,
                    length,
                    remote,
                    cookie,
                    report: Report::of(completion_flags),
                    solicited: completion_flags
                        & dat_completion_flags::DAT_COMPLETION_SOLICITED_WAIT_FLAG as u32
                        != 0,
                    fence: completion_flags
                        & dat_completion_flags::DAT_COMPLETION_BARRIER_FENCE_FLAG as u32
                        != 0,
                    extended,
                    invalidate,
                };
                let counted = post_counters(operation, extended);
                let EpInner {
                    wire,
                    link,
                    outstanding,
                    attr,
                    posted,
                    ..
                } = &mut *inner;
                if let Some(result) =
                    wire.post_direct(link.as_ref(), outstanding, attr.max_request_dtos, &request)
                {
                    let queued = result?;
                    count_post(posted, counted, length, Tally::add);
                    drop(inner);
                    queued
                } else if let Some(link) = inner.link.clone() {
                    // Counted under the lock the transport takes over; taken back if the
                    // request does not go out.
                    count_post(&mut inner.posted, counted, length, Tally::add);
                    match link.post(self, inner, &request) {
                        Ok(posted) => posted,
                        Err(e) => {
                            count_post(&mut self.inner.lock().posted, counted, length, Tally::sub);
                            return Err(e);
                        }
                    }
                } else {
                    drop(inner);
                    Posted::Flush
                }
            }
            Post::Flush => {
                drop(inner);
                Posted::Flush
            }
        };
        if posted == Posted::Flush {
            let evd = self
                .inner
                .lock()
                .request_evd
                .as_ref()
                .map(|e| e.arc().clone());
            if let Some(evd) = evd {
                let flushed = dat_dto_completion_status::DAT_DTO_ERR_FLUSHED;
                let request = Request {
                    seq: 0,
                    cookie,
                    operation,
                    length: 0,
                    report: Report::Notify,
                    extended: extended.map(Extended::kind),
                    bind: None,
                };
                self.complete_request_on(Some(&evd), &request, flushed, 0);
            }
        }
        Ok(())
    }

    /// Posts a receive of `num_segments` segments (read by `local`, position 3).
    // Inlined: a data-transfer call makes one call of its own, not two.
    #[inline(always)]
    pub fn post_recv<'a>(
        &self,
        num_segments: DAT_COUNT,
        local: impl FnOnce(DAT_COUNT) -> DatResult<&'a [DAT_LMR_TRIPLET]>,
        cookie: u64,
        completion_flags: DAT_COMPLETION_FLAGS,
    ) -> DatResult {
        let mut inner = self.inner.lock();
        live(&inner)?;
        if inner.srq.is_some() {
            // Receives of an SRQ EP are posted to the SRQ (the man page).
            return Err(DatError::bare(Type::DAT_MODEL_NOT_SUPPORTED));
        }
        if num_segments < 0 || num_segments > inner.attr.max_recv_iov.max(1) {
            return Err(DatError::invalid_arg(2));
        }
        let segments = local(num_segments)?;
        check_completion_flags(completion_flags, inner.attr.recv_completion_flags, 5)?;
        let length = check_local_segments(
            segments,
            inner.pz.as_ref().map(|p| p.arc()),
            lmr::PRIV_LOCAL_WRITE,
            3,
            Empty::Check,
        )?;
        if inner.recv_evd.is_none() {
            return Err(DatError::invalid_state(Sub::DAT_INVALID_STATE_EP_EVD_RECV));
        }
        let post = if Ep::is_datagram(&inner) {
            Post::Run
        } else {
            ep_state::post_recv(inner.state)?
        };
        match post {
            Post::Flush => {
                drop(inner);
                self.complete_recv(cookie, dat_dto_completion_status::DAT_DTO_ERR_FLUSHED, 0);
            }
            Post::Run => {
                if inner.recvs.len() >= inner.attr.max_recv_dtos.max(1) as usize {
                    // Receives a peer filled and the EP has not heard of yet are done.
                    EpWire::take_landed(self, &mut inner);
                }
                if inner.recvs.len() >= inner.attr.max_recv_dtos.max(1) as usize {
                    return Err(DatError::resources(Sub::DAT_RESOURCE_TEP));
                }
                let kept = if inner.wire.keeps_receive_segments() {
                    Segments::from_slice(segments)
                } else {
                    Segments::new()
                };
                let wakes = RecvWake::of(completion_flags, inner.attr.recv_completion_flags);
                inner.recvs.push_back(PostedRecv {
                    cookie,
                    segments: kept,
                    wakes,
                });
                let EpInner { wire, recvs, .. } = &mut *inner;
                if let Err(e) = wire.receive_posted(recvs, segments) {
                    inner.recvs.pop_back();
                    return Err(e);
                }
                inner
                    .posted
                    .add(dat_ep_counters::DCNT_EP_POST_RECV as u32, 1);
                inner
                    .posted
                    .add(dat_ep_counters::DCNT_EP_POST_RECV_DATA as u32, length);
                if inner.wire.messages_waiting() {
                    let link = inner.link.clone();
                    drop(inner);
                    if let Some(link) = link {
                        link.receive_posted(self);
                    }
                }
            }
        }
        Ok(())
    }
}

/// Checks a DTO's local segments (a request's, a receive's, an SRQ's receive's): each names a
/// region of the EP's (or SRQ's) protection zone, with `privilege`, and stays inside it; the
/// errors name read or write by the privilege asked. Returns the bytes the segments hold
/// together (counted here, as each is checked, for the transport and the counters).
// Inlined: one call fewer in every post.
#[inline]
pub fn check_local_segments(
    segments: &[DAT_LMR_TRIPLET],
    pz: Option<&Arc<Pz>>,
    privilege: u32,
    position: u8,
    empty: Empty,
) -> DatResult<u64> {
    let Some(pz) = pz else {
        return Err(DatError::invalid_state(Sub::DAT_INVALID_STATE_EP_PZ));
    };
    let (protection, privileges) = if privilege == lmr::PRIV_LOCAL_WRITE {
        (Sub::DAT_PROTECTION_WRITE, Sub::DAT_PRIVILEGES_WRITE)
    } else {
        (Sub::DAT_PROTECTION_READ, Sub::DAT_PRIVILEGES_READ)
    };
    let mut total = 0;
    for s in segments {
        let length = u64::from(s.segment_length);
        if length == 0 && empty == Empty::Skip {
            continue;
        }
        match Lmr::check_segment(s.lmr_context, s.virtual_address, length, privilege, pz) {
            Ok(_) => total += length,
            Err(AccessError::Bounds) => return Err(DatError::invalid_arg(position)),
            Err(AccessError::Protection) => {
                return Err(DatError::new(Type::DAT_PROTECTION_VIOLATION, protection))
            }
            Err(AccessError::UnknownContext | AccessError::Privilege) => {
                return Err(DatError::new(Type::DAT_PRIVILEGES_VIOLATION, privileges))
            }
        }
    }
    Ok(total)
}

/// What [`check_local_segments`] does with a segment of no bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Empty {
    /// Nothing of it is read: its triplet is not checked (a request's; OpenFabrics' requests
    /// hand such a segment to the device, which skips it, zeroed triplet included).
    Skip,
    /// Checked as any other (a receive's).
    Check,
}

/// Completion flags of one DTO: known bits only, and UNSIGNALLED only where the EP's
/// attributes allow it.
pub fn check_completion_flags(
    flags: DAT_COMPLETION_FLAGS,
    ep_flags: u32,
    position: u8,
) -> DatResult {
    if flags & !COMPLETION_FLAGS != 0 {
        return Err(DatError::invalid_arg(position));
    }
    let unsignalled = dat_completion_flags::DAT_COMPLETION_UNSIGNALLED_FLAG as u32;
    if flags & unsignalled != 0 && ep_flags & unsignalled == 0 {
        return Err(DatError::invalid_arg(position));
    }
    Ok(())
}

/// A post that found the EP before `dat_ep_free` let go of it, and its lock after: the handle
/// is dead (what was posted before was flushed, and nothing would flush this one).
#[inline(always)]
fn live(inner: &EpInner) -> DatResult {
    if inner.released {
        return Err(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_EP));
    }
    Ok(())
}

/// Counts a request posted on its way out (`Tally::add`), or takes it back (`Tally::sub`):
/// the IB extension's EP counters, kept under the EP's lock.
#[inline]
fn count_post(
    posted: &mut Tally<EP_COUNTERS>,
    (posts, bytes): PostCounters,
    length: u64,
    op: fn(&mut Tally<EP_COUNTERS>, u32, u64),
) {
    op(posted, posts as u32, 1);
    if let Some(bytes) = bytes {
        op(posted, bytes as u32, length);
    }
}

/// The counters a request counts in: its posts, and its bytes where they are counted.
type PostCounters = (dat_ep_counters, Option<dat_ep_counters>);

#[inline]
fn post_counters(operation: dat_dtos, extended: Option<Extended>) -> PostCounters {
    use dat_ep_counters as C;
    match (extended, operation) {
        (Some(Extended::FetchAdd(_)), _) => (C::DCNT_EP_POST_FETCH_ADD, None),
        (Some(Extended::CompareSwap { .. }), _) => (C::DCNT_EP_POST_CMP_SWAP, None),
        (Some(Extended::WriteImmediate(_)), _) => (
            C::DCNT_EP_POST_WRITE_IMM,
            Some(C::DCNT_EP_POST_WRITE_IMM_DATA),
        ),
        (Some(Extended::Datagram { .. }), _) => {
            (C::DCNT_EP_POST_SEND_UD, Some(C::DCNT_EP_POST_SEND_UD_DATA))
        }
        (None, dat_dtos::DAT_DTO_RDMA_WRITE) => {
            (C::DCNT_EP_POST_WRITE, Some(C::DCNT_EP_POST_WRITE_DATA))
        }
        (None, dat_dtos::DAT_DTO_RDMA_READ) => {
            (C::DCNT_EP_POST_READ, Some(C::DCNT_EP_POST_READ_DATA))
        }
        (None, _) => (C::DCNT_EP_POST_SEND, Some(C::DCNT_EP_POST_SEND_DATA)),
    }
}
