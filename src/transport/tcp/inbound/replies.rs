//! The peer's answers to our requests, which complete them in order: acknowledgements (every
//! request up to the one they name, under the EP's lock, on its request EVD), the data of our
//! RDMA reads, and refusals.

use std::sync::Arc;

use super::payload::{start, Sink, Walk};
use super::peer_checks;
use super::{Inbound, Stop};
use crate::abi::*;
use crate::objects::ep::{Ep, EpInner, Request};
use crate::objects::evd::Catch;
use crate::transport::tcp::ep_wire::pop_request;
use crate::transport::tcp::link::TcpLink;
use crate::transport::tcp::wire::{flags, Header, Op};

/// The last of our requests a frame acknowledges: an acknowledgement's, or a send's that
/// carries one.
#[inline]
pub(super) fn acknowledgement_in(h: &Header) -> Option<u64> {
    match h.op {
        Op::Ack => Some(h.id),
        Op::Send if h.flags & flags::ACK != 0 => Some(h.remote_addr),
        _ => None,
    }
}

/// The peer carried out every request of ours up to `last`: they complete. Some(stop) when
/// the acknowledgement covers a read, which only its data may answer.
pub(super) fn acknowledged(
    ep: &Ep,
    link: &TcpLink,
    last: u64,
    catch: &mut Catch<'_>,
) -> Option<Stop> {
    settle(ep, link, &mut ep.inner.lock(), last, catch).err()
}

/// [`acknowledged`], under the EP's lock the caller holds: the covered requests leave the
/// queue, and those signalled complete on the request EVD the EP holds (the first into a
/// dequeue's out-parameter, `catch`, where it is that EVD's).
pub(super) fn settle(
    ep: &Ep,
    link: &TcpLink,
    inner: &mut EpInner,
    last: u64,
    catch: &mut Catch<'_>,
) -> Result<(), Stop> {
    // A peer that acknowledges more than went out whole lies: the connection ends before
    // anything completes.
    if !peer_checks::acknowledges_sent(inner, link, last) {
        return Err(Stop::Lost);
    }
    while let Some(r) = inner.outstanding.oldest().filter(|r| r.seq <= last) {
        if !peer_checks::acknowledgeable(r) {
            return Err(Stop::Lost);
        }
        let Some(r) = inner.outstanding.take_oldest() else {
            break;
        };
        ep.complete_request_catching(
            inner.request_evd.as_deref(),
            &r,
            dat_dto_completion_status::DAT_DTO_SUCCESS,
            r.length,
            catch,
        );
    }
    link.answered(|| inner.outstanding.is_empty());
    Ok(())
}

/// The data of one of our RDMA reads: it answers the oldest request in flight
/// (`peer_checks::answers_read`), and fills that read's targets as it arrives.
#[inline]
pub(super) fn on_read_response(ep: &Arc<Ep>, inb: &mut Inbound, h: Header) -> Option<Stop> {
    let Some((request, targets)) = pop_request(ep) else {
        return Some(Stop::Lost);
    };
    if !peer_checks::answers_read(&request, &h) {
        ep.complete_request(
            &request,
            dat_dto_completion_status::DAT_DTO_ERR_BAD_RESPONSE,
            0,
        );
        return Some(Stop::Lost);
    }
    let sink = Sink::Read {
        request,
        targets,
        pz: ep.pz(),
        walk: Walk::default(),
    };
    start(inb, h, sink)
}

/// The data of our RDMA read `request` is in (or its targets failed their checks, `failed`):
/// it completes, and requests fenced behind it may go.
#[inline]
pub(super) fn read_data_landed(
    ep: &Ep,
    link: &TcpLink,
    request: Request,
    failed: Option<dat_dto_completion_status>,
) -> Option<Stop> {
    match failed {
        None => {
            ep.complete_request(
                &request,
                dat_dto_completion_status::DAT_DTO_SUCCESS,
                request.length,
            );
            link.read_landed();
            link.answered(|| ep.inner.lock().outstanding.is_empty());
            None
        }
        Some(status) => {
            ep.complete_request(&request, status, 0);
            Some(Stop::Broken)
        }
    }
}

/// The peer refused our oldest request: it completes with the peer's status, and the
/// connection breaks.
pub(super) fn on_refusal(ep: &Ep, link: &TcpLink, h: &Header) -> Option<Stop> {
    // Only a request that went out whole can have been refused (see `settle`): the oldest,
    // which the refusal completes.
    let front = ep.inner.lock().outstanding.oldest().map(|r| r.seq);
    if !peer_checks::refusal_for_sent(front, link) {
        return Some(Stop::Lost);
    }
    if let Some((r, _)) = pop_request(ep) {
        let status = u32::try_from(h.remote_addr)
            .ok()
            .and_then(|s| dat_dto_completion_status::try_from(s).ok())
            .filter(|s| *s != dat_dto_completion_status::DAT_DTO_SUCCESS)
            .unwrap_or(dat_dto_completion_status::DAT_DTO_ERR_REMOTE_RESPONDER);
        ep.complete_request(&r, status, 0);
    }
    Some(Stop::Broken)
}
