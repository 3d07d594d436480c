//! The peer's frames, handled by whoever holds the link's inbound half: the consumer's thread
//! as it polls, or the progress engine. Nothing here blocks: a frame whose payload has only
//! partly arrived is kept (`Partial`) with where its bytes go, and the next holder continues
//! it with what the socket has then.
//!
//! Handling delivers messages into posted receives, carries out the peer's RDMA writes and
//! reads after checking them against our registered regions, and completes our requests as
//! their answers come back. Answers come back in request order, so completions are too.
//!
//! By job:
//! - `payload`: a frame whose payload arrives in pieces, and where its bytes go;
//! - `messages`: the peer's messages and immediates, into posted receives, or kept until one
//!   is posted;
//! - `remote_access`: the peer's RDMA writes, reads and atomics on our registered memory;
//! - `replies`: the peer's answers to our requests (acknowledgements, read data, refusals);
//! - `peer_checks`: every check against a peer that breaks the rules, and its limit.

mod messages;
mod payload;
pub(super) mod peer_checks;
mod remote_access;
mod replies;

use std::sync::Arc;

use super::answers::Answer;
use super::conn::{payload_len, ConnError, Reader, LARGE_PAYLOAD};
use super::direct::Offer;
use super::link::TcpLink;
use super::wire::{flags, Header, Op, ATOMIC_OPERANDS, OFFER_COOKIE};
use crate::abi::*;
use crate::objects::ep::Ep;
use crate::objects::evd::Catch;

use messages::immediate;
pub use messages::land_early;
pub(super) use messages::place;
pub(crate) use messages::{take_filled, take_filled_numbers, take_filled_of};
use payload::{feed_arriving, finish, start, Partial, Sink};
use peer_checks::Share;
use replies::acknowledged;

/// Why a connection ends, as its frames tell.
#[derive(Debug)]
pub enum Stop {
    /// The peer said goodbye.
    Goodbye,
    /// The stream ended or failed, or the peer broke the protocol.
    Lost,
    /// An access failed: the connection is broken (the peer is told when it was theirs).
    Broken,
}

/// The receiving half of a link and the frame it is in the middle of.
pub struct Inbound {
    pub reader: Reader,
    partial: Option<Partial>,
    /// The RDMA write just carried out announced its immediate (`flags::IMMEDIATE`): the next
    /// frame must be that immediate, for that write (its number and length).
    immediate_due: Option<(u64, u64)>,
    /// The last look stopped at its share (see `Share`) with frames buffered or arriving: the
    /// next look must come without waiting for the socket to report (it may have nothing
    /// more to say).
    pub more: bool,
    /// The last look stopped at an acknowledgement that came ahead of our write of what it
    /// acknowledges (`Sent::ack_ahead_of_write`): the writer has the connection looked at as
    /// its write returns, and so does a lease that ends meanwhile.
    pub awaits_write: bool,
}

impl Inbound {
    pub fn new(reader: Reader) -> Inbound {
        Inbound {
            reader,
            partial: None,
            immediate_due: None,
            more: false,
            awaits_write: false,
        }
    }

    /// The connection ended with a frame half in: what it was filling completes as flushed.
    pub fn abandon(&mut self, ep: &Ep) {
        match self.partial.take().map(|p| p.sink) {
            Some(Sink::Receive { recv, evd, .. }) => ep.complete_recv_on(
                evd.as_deref(),
                recv.cookie,
                dat_dto_completion_status::DAT_DTO_ERR_FLUSHED,
                0,
            ),
            Some(Sink::Read { request, .. }) => {
                ep.complete_request(&request, dat_dto_completion_status::DAT_DTO_ERR_FLUSHED, 0)
            }
            _ => {}
        }
    }
}

/// Handles the frames the socket has, without blocking: all of them for the engine (until the
/// socket is empty), those of one look at the socket for a consumer's poll (`in_caller`, so a
/// poll stays short, with the out-parameter its dequeue lends, `catch`, for the first
/// message or acknowledgement it completes). Returns whether any frame was handled, and
/// Some(stop) or an error when the connection ends.
pub fn advance(
    ep: &Arc<Ep>,
    link: &TcpLink,
    inb: &mut Inbound,
    in_caller: bool,
    catch: &mut Catch<'_>,
) -> Result<(bool, Option<Stop>), ConnError> {
    // Messages the peer put in our receives directly came before anything in the socket.
    let mut handled = link.take_direct();
    let mut looked = false;
    // A read that takes less than it could finds the socket empty: the engine stops there
    // (its poll, armed again, reports what comes later) instead of asking once more.
    inb.reader.expect_data();
    let mut share = Share::new();
    inb.more = false;
    inb.awaits_write = false;
    loop {
        if share.spent() {
            inb.more = true; // the rest at the next look
            return Ok((handled, None));
        }
        if let Some(p) = inb.partial.as_mut() {
            if !feed_arriving(&mut inb.reader, p, in_caller, &mut share)? {
                inb.more = share.spent();
                return Ok((handled, None));
            }
            let p = inb.partial.take().expect("a partial frame");
            handled = true;
            if p.h.op == Op::RdmaWrite && p.h.flags & flags::IMMEDIATE != 0 && p.refused.is_none() {
                inb.immediate_due = Some((p.h.id, u64::from(p.h.payload_len)));
            }
            if let Some(stop) = finish(ep, link, p, in_caller) {
                return Ok((handled, Some(stop)));
            }
            continue;
        }
        let h = match inb.reader.peek() {
            Some(Ok(h)) => h,
            Some(Err(e)) => return Err(ConnError::Protocol(e)),
            None => {
                // A poll leaves the socket alone while the peer says it wrote nothing there.
                let quiet = in_caller && !looked && link.socket_quiet();
                if (looked && in_caller) || inb.reader.drained() || quiet {
                    return Ok((handled, None));
                }
                looked = true;
                if inb.reader.fill_for_header()? == 0 {
                    return Ok((handled, None));
                }
                continue;
            }
        };
        // A small frame only begun in the buffer may be complete in the socket: one more look.
        if !inb.reader.whole(&h)
            && payload_len(&h) < LARGE_PAYLOAD
            && !looked
            && !inb.reader.drained()
        {
            looked = true;
            if inb.reader.fill(usize::MAX)? > 0 {
                continue;
            }
        }
        // An acknowledgement that came ahead of our write of what it acknowledges waits,
        // unread, for that write: its writer has the connection looked at as it returns.
        if replies::acknowledgement_in(&h).is_some_and(|last| link.ack_ahead_of_write(last)) {
            inb.awaits_write = true;
            return Ok((handled, None));
        }
        inb.reader.take_header(&h);
        handled = true;
        share.frame();
        let due = inb.immediate_due.take();
        if !peer_checks::immediate_in_place(due, &h) {
            return Ok((handled, Some(Stop::Lost)));
        }
        if let Some(stop) = step(ep, link, inb, h, in_caller, catch)? {
            return Ok((handled, Some(stop)));
        }
    }
}

/// Handles one frame whose header was taken: at once when it carries no payload, or when its
/// payload is buffered and it is a message (the usual one, landed under one lock of the EP);
/// else its payload starts filling its sink.
fn step(
    ep: &Arc<Ep>,
    link: &TcpLink,
    inb: &mut Inbound,
    h: Header,
    in_caller: bool,
    catch: &mut Catch<'_>,
) -> Result<Option<Stop>, ConnError> {
    match h.op {
        Op::Ready if h.flags & flags::DIRECT == 0 => {
            if !peer_checks::ready_length_fits(&h) {
                return Ok(Some(Stop::Lost));
            }
            return Ok(established(link, None));
        }
        // The peer's confirmation with its direct offer: the cookie follows.
        Op::Ready => {
            const _: () = assert!(
                OFFER_COOKIE == ATOMIC_OPERANDS,
                "an offer's cookie fills an operands sink"
            );
            if !peer_checks::ready_length_fits(&h) {
                return Ok(Some(Stop::Lost));
            }
            if inb.reader.buffered() >= OFFER_COOKIE as usize {
                let mut cookie = [0u8; OFFER_COOKIE as usize];
                inb.reader.take_buffered(&mut cookie);
                return Ok(established(
                    link,
                    Offer::from_ready(&h, &cookie).ok().flatten(),
                ));
            }
            return Ok(start(
                inb,
                h,
                Sink::Operands {
                    data: [0; ATOMIC_OPERANDS as usize],
                    filled: 0,
                },
            ));
        }
        Op::Send => return Ok(messages::on_send(ep, link, inb, h, in_caller, catch)),
        Op::RdmaWrite => {
            let sink = remote_access::write_sink(ep, link, &h);
            return Ok(start(inb, h, sink));
        }
        // Beyond the reads and atomics the EP answers at once (its `max_rdma_read_in`, which
        // the handshake told the peer): the peer broke the rules, and hears so, as a verbs
        // responder refuses such a request.
        Op::RdmaReadRequest | Op::FetchAdd | Op::CompareSwap
            if !peer_checks::may_answer_read(link) =>
        {
            refuse(
                link,
                h.id,
                dat_dto_completion_status::DAT_DTO_ERR_REMOTE_RESPONDER,
            );
            return Ok(Some(Stop::Broken));
        }
        Op::RdmaReadRequest => return Ok(remote_access::on_read_request(ep, link, &h)),
        Op::Ack => {
            if let Some(stop) = acknowledged(ep, link, h.id, catch) {
                return Ok(Some(stop));
            }
        }
        Op::Immediate => {
            let Some(length) = peer_checks::immediate_length(&h) else {
                return Ok(Some(Stop::Lost));
            };
            return Ok(immediate(ep, link, h.id, h.rkey, length, in_caller));
        }
        Op::FetchAdd | Op::CompareSwap => return Ok(remote_access::on_atomic(ep, link, inb, h)),
        Op::RdmaReadResponse => return Ok(replies::on_read_response(ep, inb, h)),
        Op::RemoteAccessError => return Ok(replies::on_refusal(ep, link, &h)),
        Op::Disconnect => return Ok(Some(Stop::Goodbye)),
        // Messages that landed directly before it: an advance takes them as it begins, but
        // this one may have begun before the last of them was in.
        Op::Doorbell => {
            link.take_direct();
        }
        Op::ConnectRequest | Op::Accept | Op::Reject => return Ok(Some(Stop::Lost)),
    }
    Ok(None)
}

/// The peer's confirmation (with its direct offer, if any): ESTABLISHED, or the end of a
/// connection that was not waiting for it.
fn established(link: &TcpLink, offer: Option<Offer>) -> Option<Stop> {
    (!link.confirm_established(offer)).then_some(Stop::Lost)
}

/// The peer's request `seq` failed here with `status`: it hears so, and the connection ends.
fn refuse(link: &TcpLink, seq: u64, status: dat_dto_completion_status) {
    link.answer(Answer::Refuse { seq, status });
}
