//! The peer's messages (sends) and the immediates of its RDMA writes: landed in the next
//! posted receive (the EP's own, its SRQ's, or one the peer filled directly), in order, or
//! kept until a receive is posted (the sender hears of a kept one only once it lands).

use std::collections::VecDeque;
use std::sync::Arc;

use super::payload::{start, Sink, Walk};
use super::peer_checks;
use super::replies::{acknowledged, settle};
use super::{refuse, Inbound, Stop};
use crate::abi::*;
use crate::objects::ep::{Ep, EpInner};
use crate::objects::evd::{Catch, Evd};
use crate::objects::lmr::SegmentHold;
use crate::objects::pz::Pz;
use crate::objects::rmr::Window;
use crate::objects::srq::PostedRecv;
use crate::transport::tcp::answers::Answer;
use crate::transport::tcp::conn::Reader;
use crate::transport::tcp::direct::Filled;
use crate::transport::tcp::ep_wire::{EarlyMessage, TcpEp, TcpWire};
use crate::transport::tcp::link::TcpLink;
use crate::transport::tcp::wire::{flags, Header};

/// The segments a message lands in, each held registered until its bytes are in.
#[allow(dead_code, reason = "held, never read: their drop lets the regions go")]
enum Holds {
    /// The usual receive's one segment (no collection to build).
    One(SegmentHold),
    Many(smallvec::SmallVec<[SegmentHold; 4]>),
}

/// Holds the `parts` a message fills (segment, bytes), or the first refusal.
#[inline(always)]
fn hold_parts<'s>(
    mut parts: impl Iterator<Item = (&'s DAT_LMR_TRIPLET, usize)> + Clone,
    pz: &Arc<Pz>,
) -> Result<Holds, crate::objects::lmr::AccessError> {
    let hold = |(s, n): (&DAT_LMR_TRIPLET, usize)| {
        peer_checks::hold_landing(s.lmr_context, s.virtual_address, n as u64, pz)
    };
    let mut rest = parts.clone();
    match (parts.next(), parts.next()) {
        (None, _) => Ok(Holds::Many(smallvec::SmallVec::new())),
        (Some(only), None) => hold(only).map(Holds::One),
        _ => rest
            .try_fold(smallvec::SmallVec::new(), |mut all, part| {
                all.push(hold(part)?);
                Ok(all)
            })
            .map(Holds::Many),
    }
}

/// The peer's message (a send, and the acknowledgement of our requests it may carry): landed
/// at once when its payload is buffered and a receive takes it; else its payload starts into
/// where it goes (`message_sink`).
#[inline]
pub(super) fn on_send(
    ep: &Arc<Ep>,
    link: &TcpLink,
    inb: &mut Inbound,
    h: Header,
    in_caller: bool,
    catch: &mut Catch<'_>,
) -> Option<Stop> {
    link.before_socket_message();
    let ack = (h.flags & flags::ACK != 0).then_some(h.remote_addr);
    if inb.reader.buffered() >= h.payload_len as usize {
        if let Some(done) = deliver_buffered(ep, link, &mut inb.reader, &h, ack, in_caller, catch) {
            return done;
        }
    } else if let Some(stop) = ack.and_then(|last| acknowledged(ep, link, last, catch)) {
        // The header's acknowledgement broke the rules: the connection ends now, not once the
        // payload came (a peer that stops sending, or closes, kept it up with the cause lost).
        return Some(stop);
    }
    let sink = message_sink(ep, link, &h);
    start(inb, h, sink)
}

/// A message whose payload is buffered whole: the acknowledgement it carries (`ack`: our
/// requests it covers complete first), then its payload into the next posted receive, all
/// under one lock of the EP, which holds its zone and EVDs: nothing on the way blocks. The
/// receive is chosen and completed under that lock, as `land_early` does. None when no
/// receive can take it now (the caller keeps it, or refuses it).
///
/// The acknowledgement of the message is owed before the receive completes: a consumer that
/// reacts to the message by disconnecting must not overtake it.
#[inline(always)]
pub(super) fn deliver_buffered(
    ep: &Ep,
    link: &TcpLink,
    reader: &mut Reader,
    h: &Header,
    ack: Option<u64>,
    in_caller: bool,
    catch: &mut Catch<'_>,
) -> Option<Option<Stop>> {
    let len = h.payload_len as usize;
    let mut inner = ep.inner.lock();
    if let Some(last) = ack {
        if let Err(stop) = settle(ep, link, &mut inner, last, catch) {
            drop(inner);
            reader.skip_buffered(len);
            return Some(Some(stop));
        }
    }
    // The receive it lands in (the SRQ's, or the EP's own) when no earlier message of this EP
    // waits for one (a message must not overtake those); else it waits too.
    let recv = receive_in_order(ep, &mut inner);
    let Some(recv) = recv else {
        // No receive yet: the message is kept (its acknowledgement is settled).
        return None;
    };
    let evd = inner.recv_evd.as_deref();
    let mut complete =
        |status, n| ep.complete_recv_catching(evd, recv.cookie, status, n, &mut *catch);
    if !peer_checks::fits_receive(len, &recv.segments) {
        reader.skip_buffered(len);
        complete(dat_dto_completion_status::DAT_DTO_ERR_LOCAL_LENGTH, 0);
        refuse(
            link,
            h.id,
            dat_dto_completion_status::DAT_DTO_ERR_REMOTE_RESPONDER,
        );
        return Some(Some(Stop::Broken));
    }
    let Some(pz) = inner.pz.as_ref().map(|p| p.arc()) else {
        reader.skip_buffered(len);
        complete(dat_dto_completion_status::DAT_DTO_ERR_LOCAL_PROTECTION, 0);
        refuse(
            link,
            h.id,
            dat_dto_completion_status::DAT_DTO_ERR_REMOTE_RESPONDER,
        );
        return Some(Some(Stop::Broken));
    };
    // Every segment it fills is checked before any byte lands, and the acknowledgement is
    // due before then: a program that polls the receive buffer and answers at once finds it
    // ready to ride with its answer.
    let parts = || {
        recv.segments.iter().scan(len, |rest, s| {
            let n = (*rest > 0).then(|| (*rest).min(s.segment_length as usize))?;
            *rest -= n;
            Some((s, n))
        })
    };
    // Each held registered until its bytes are in (`dat_lmr_free` waits for the holds).
    let Ok(holds) = hold_parts(parts(), pz) else {
        reader.skip_buffered(len);
        complete(dat_dto_completion_status::DAT_DTO_ERR_LOCAL_PROTECTION, 0);
        refuse(
            link,
            h.id,
            dat_dto_completion_status::DAT_DTO_ERR_REMOTE_RESPONDER,
        );
        return Some(Some(Stop::Broken));
    };
    link.acknowledge(h.id, in_caller);
    for (s, n) in parts() {
        // SAFETY: checked above, and held registered (`holds`): inside a live region with
        // local write privilege in the EP's zone, which the consumer keeps until the receive
        // completes.
        let dst = unsafe { std::slice::from_raw_parts_mut(s.virtual_address as *mut u8, n) };
        reader.take_buffered(dst);
    }
    drop(holds);
    invalidate(ep, invalidated_context(h));
    ep.complete_received(evd, &recv, len as u32, solicited(h), catch);
    Some(None)
}

/// Where a message's payload goes when it cannot land at once: a posted receive (the payload
/// still coming in), or kept for a receive posted later, or refused.
pub(super) fn message_sink(ep: &Ep, link: &TcpLink, h: &Header) -> Sink {
    let len = h.payload_len as usize;
    let mut inner = ep.inner.lock();
    let recv = receive_in_order(ep, &mut inner);
    match recv {
        Some(recv) => {
            let evd = inner.recv_evd.as_ref().map(|e| e.arc().clone());
            let pz = inner.pz.as_ref().map(|p| p.arc().clone());
            drop(inner);
            if !peer_checks::fits_receive(len, &recv.segments) || pz.is_none() {
                let status = if pz.is_none() {
                    dat_dto_completion_status::DAT_DTO_ERR_LOCAL_PROTECTION
                } else {
                    dat_dto_completion_status::DAT_DTO_ERR_LOCAL_LENGTH
                };
                ep.complete_recv_on(evd.as_deref(), recv.cookie, status, 0);
                refuse(
                    link,
                    h.id,
                    dat_dto_completion_status::DAT_DTO_ERR_REMOTE_RESPONDER,
                );
                return Sink::Refused;
            }
            Sink::Receive {
                recv,
                pz: pz.expect("checked"),
                evd,
                walk: Walk::default(),
            }
        }
        // Counted now, so several arriving at once stay under the bounds; beyond them the
        // sender hears "receiver not ready", as a verbs sender whose retries ran out.
        None if !inner.wire.tcp().kept.reserve(len) => {
            drop(inner);
            refuse(
                link,
                h.id,
                dat_dto_completion_status::DAT_DTO_ERR_RECEIVER_NOT_READY,
            );
            Sink::Refused
        }
        None => Sink::Early {
            data: vec![0u8; len],
            filled: 0,
        },
    }
}

/// A message's payload filled its receive (or a segment failed its check, `failed`): the
/// receive completes, and the peer's send is acknowledged, or refused (the connection
/// breaks).
#[inline]
pub(super) fn receive_landed(
    ep: &Ep,
    link: &TcpLink,
    h: &Header,
    recv: PostedRecv,
    evd: Option<Arc<Evd>>,
    failed: Option<dat_dto_completion_status>,
    in_caller: bool,
) -> Option<Stop> {
    match failed {
        None => {
            link.acknowledge(h.id, in_caller);
            invalidate(ep, invalidated_context(h));
            ep.complete_received(
                evd.as_deref(),
                &recv,
                h.payload_len,
                solicited(h),
                &mut Catch::none(),
            );
            None
        }
        Some(status) => {
            ep.complete_recv_on(evd.as_deref(), recv.cookie, status, 0);
            refuse(
                link,
                h.id,
                dat_dto_completion_status::DAT_DTO_ERR_REMOTE_RESPONDER,
            );
            Some(Stop::Broken)
        }
    }
}

/// A message that came before its receive is in: kept.
#[inline]
pub(super) fn keep_arrived(ep: &Arc<Ep>, link: &TcpLink, h: &Header, data: Vec<u8>) {
    keep(
        ep,
        link,
        EarlyMessage {
            seq: h.id,
            data,
            immediate: None,
            invalidate: invalidated_context(h),
            solicited: solicited(h),
        },
    );
}

/// Whether a message's sender solicited its receive's notification
/// (DAT_COMPLETION_SOLICITED_WAIT_FLAG).
pub(super) fn solicited(h: &Header) -> bool {
    h.flags & flags::SOLICITED != 0
}

/// The `rmr_context` a send with invalidate names.
pub(super) fn invalidated_context(h: &Header) -> Option<u32> {
    (h.flags & flags::INVALIDATE != 0).then_some(h.rkey)
}

/// A send with invalidate of `context` landed: the RMR it names, bound through this EP, is
/// unbound before the receive completes (the consumer that sees the message finds the window
/// closed).
pub(super) fn invalidate(ep: &Ep, context: Option<u32>) {
    if let Some(context) = context {
        Window::invalidate(context, ep);
    }
}

/// A message that arrived before a receive: kept (its bytes were counted as it began), and
/// the sender hears of it only once it lands.
pub(super) fn keep(ep: &Arc<Ep>, link: &TcpLink, message: EarlyMessage) {
    link.answer(Answer::Kept(message.seq));
    let srq = {
        let mut inner = ep.inner.lock();
        inner.wire.tcp().unexpected.push_back(message);
        inner.srq.as_ref().map(|s| s.arc().clone())
    };
    if let Some(srq) = srq {
        srq.wait_for_receive(ep); // its next receive lands this EP's kept messages
    }
    // A receive may have been posted while the payload came in.
    land_early(ep, link);
}

/// Pairs messages that arrived early with receives posted since, in order, and tells the
/// sender they landed (the caller writes the answers). Called as a message is kept and as the
/// consumer posts a receive. Each receive is chosen and completed under the EP's lock, as a
/// direct delivery's is, and `receiving` orders these with a flush: the completions keep the
/// order of the messages.
pub fn land_early(ep: &Ep, link: &TcpLink) {
    let _in_order = ep.receiving.lock();
    let mut inner = ep.inner.lock();
    let Some(pz) = inner.pz.as_ref().map(|p| p.arc().clone()) else {
        return;
    };
    while !inner.wire.tcp().unexpected.is_empty() {
        let Some(recv) = next_receive(ep, &mut inner) else {
            break;
        };
        let state = inner.wire.tcp();
        let message = state.unexpected.pop_front().expect("not empty");
        state.kept.release(message.data.len());
        let status = place(&recv.segments, &message.data, &pz);
        // The sender hears first: a consumer that answers the message must not overtake it.
        link.landed(message.seq, status);
        let evd = inner.recv_evd.as_deref();
        match message.immediate {
            Some((data, length)) => {
                ep.complete_immediate_on(evd, recv.cookie, status, length, data)
            }
            None => {
                let landed = status == dat_dto_completion_status::DAT_DTO_SUCCESS;
                invalidate(ep, message.invalidate.filter(|_| landed));
                let len = if landed { message.data.len() as u32 } else { 0 };
                let solicited = message.solicited;
                ep.complete_recv_with(evd, &recv, status, len, solicited, &mut Catch::none());
            }
        }
    }
}

/// The receive an arriving message (or immediate) lands in, when no earlier one of this EP
/// waits for one: it must not overtake those.
fn receive_in_order(ep: &Ep, inner: &mut EpInner) -> Option<PostedRecv> {
    if inner.wire.tcp().unexpected.is_empty() {
        next_receive(ep, inner)
    } else {
        None
    }
}

/// The next receive a message of this EP lands in: its SRQ's, or its own (claimed from the
/// peer when the EP publishes its receives to it, after those its messages filled directly).
fn next_receive(ep: &Ep, inner: &mut EpInner) -> Option<PostedRecv> {
    if let Some(srq) = &inner.srq {
        return srq.take();
    }
    let EpInner {
        wire,
        recvs,
        recv_evd,
        ..
    } = inner;
    let state = wire.tcp();
    let waiting = !state.unexpected.is_empty();
    match state.receives.as_mut() {
        Some(receives) => receives.take_for_socket(recvs, waiting, |r, filled| {
            complete_filled(ep, recv_evd.as_deref(), r, filled)
        }),
        None => recvs.pop_front(),
    }
}

/// Takes the receives the connection's peer filled directly (`direct`), completing them in
/// order, under the EP's lock the caller holds.
pub(crate) fn take_filled(ep: &Ep, inner: &mut EpInner) {
    let EpInner {
        wire,
        recvs,
        recv_evd,
        ..
    } = inner;
    take_filled_of(ep, wire.tcp(), recvs, recv_evd.as_deref());
}

/// [`take_filled`], for the EP's parts borrowed apart (its TCP state, its receives and their
/// EVD).
pub(crate) fn take_filled_of(
    ep: &Ep,
    state: &mut TcpEp,
    recvs: &mut VecDeque<PostedRecv>,
    recv_evd: Option<&Evd>,
) {
    let waiting = !state.unexpected.is_empty();
    if let Some(receives) = state.receives.as_mut() {
        receives.take_filled(recvs, waiting, |r, filled| {
            complete_filled(ep, recv_evd, r, filled)
        });
    }
}

/// Takes receives `numbers` the connection's peer filled directly, in order, as far as each
/// is the next and filled (`direct::FillOrder`): how many it took.
pub(crate) fn take_filled_numbers(ep: &Arc<Ep>, numbers: &[u64]) -> usize {
    let mut inner = ep.inner.lock();
    let EpInner {
        wire,
        recvs,
        recv_evd,
        ..
    } = &mut *inner;
    let state = wire.tcp();
    let waiting = !state.unexpected.is_empty();
    let Some(receives) = state.receives.as_mut() else {
        return 0;
    };
    numbers
        .iter()
        .take_while(|&&n| {
            receives.take_filled_number(n, recvs, waiting, |r, filled| {
                complete_filled(ep, recv_evd.as_deref(), r, filled)
            })
        })
        .count()
}

/// A receive the peer filled directly completes: with its message, or in error where the
/// peer's copy failed (the peer breaks the connection then, as the socket path would for a
/// receive whose memory is not ours).
fn complete_filled(ep: &Ep, evd: Option<&Evd>, r: PostedRecv, filled: Filled) {
    match filled {
        Filled::Landed { length, solicited } => {
            ep.complete_received(evd, &r, length, solicited, &mut Catch::none())
        }
        Filled::Failed => ep.complete_recv_on(
            evd,
            r.cookie,
            dat_dto_completion_status::DAT_DTO_ERR_LOCAL_PROTECTION,
            0,
        ),
    }
}

/// Copies a kept message into a receive's segments, each checked against its live region.
pub(in crate::transport::tcp) fn place(
    segments: &[DAT_LMR_TRIPLET],
    message: &[u8],
    pz: &Arc<Pz>,
) -> dat_dto_completion_status {
    if !peer_checks::fits_receive(message.len(), segments) {
        return dat_dto_completion_status::DAT_DTO_ERR_LOCAL_LENGTH;
    }
    let mut rest = message;
    for s in segments {
        if rest.is_empty() {
            break;
        }
        let n = rest.len().min(s.segment_length as usize);
        let Ok(hold) = peer_checks::hold_landing(s.lmr_context, s.virtual_address, n as u64, pz)
        else {
            return dat_dto_completion_status::DAT_DTO_ERR_LOCAL_PROTECTION;
        };
        // SAFETY: just checked, and held registered while the bytes land: inside a live region
        // with local write privilege in the EP's zone, which the consumer keeps until the
        // receive completes.
        let dst = unsafe { std::slice::from_raw_parts_mut(s.virtual_address as *mut u8, n) };
        dst.copy_from_slice(&rest[..n]);
        drop(hold);
        rest = &rest[n..];
    }
    dat_dto_completion_status::DAT_DTO_SUCCESS
}

/// The immediate data of the peer's RDMA write `seq` of `length` bytes (landed already): the
/// next posted receive reports it, and the write is acknowledged; with no receive posted (or
/// messages waiting for one before it), it is kept as a message is.
pub(super) fn immediate(
    ep: &Arc<Ep>,
    link: &TcpLink,
    seq: u64,
    data: u32,
    length: u32,
    in_caller: bool,
) -> Option<Stop> {
    link.before_socket_message();
    let mut inner = ep.inner.lock();
    let recv = receive_in_order(ep, &mut inner);
    if let Some(recv) = recv {
        link.acknowledge(seq, in_caller);
        let success = dat_dto_completion_status::DAT_DTO_SUCCESS;
        ep.complete_immediate_on(
            inner.recv_evd.as_deref(),
            recv.cookie,
            success,
            length,
            data,
        );
        return None;
    }
    // Kept as a message of no bytes is (counted, so a peer's stream of them is bounded).
    if !inner.wire.tcp().kept.reserve(0) {
        drop(inner);
        refuse(
            link,
            seq,
            dat_dto_completion_status::DAT_DTO_ERR_RECEIVER_NOT_READY,
        );
        return Some(Stop::Broken);
    }
    drop(inner);
    keep(
        ep,
        link,
        EarlyMessage {
            seq,
            data: Vec::new(),
            immediate: Some((data, length)),
            invalidate: None,
            solicited: false,
        },
    );
    None
}
