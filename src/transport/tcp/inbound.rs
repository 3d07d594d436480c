//! The peer's frames, handled by whoever holds the link's inbound half: the consumer's thread
//! as it polls, or the progress engine. Nothing here blocks: a frame whose payload has only
//! partly arrived is kept (`Partial`) with where its bytes go, and the next holder continues
//! it with what the socket has then.
//!
//! Handling delivers messages into posted receives, carries out the peer's RDMA writes and
//! reads after checking them against our registered regions, and completes our requests as
//! their answers come back. Answers come back in request order, so completions are too.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::answers::Answer;
use super::conn::{payload_len, ConnError, Reader, LARGE_PAYLOAD};
use super::direct::{Filled, Offer};
use super::ep_wire::{pop_request, EarlyMessage};
use super::link::TcpLink;
use super::wire::{flags, Header, Op, ATOMIC_OPERANDS, HEADER_LEN, OFFER_COOKIE};
use crate::abi::*;
use crate::objects::ep::{Ep, EpInner, Request};
use crate::objects::evd::Evd;
use crate::objects::extension::ATOMIC_LEN;
use crate::objects::lmr::{self, Lmr, SegmentHold};
use crate::objects::pz::Pz;
use crate::objects::rmr::Window;
use crate::objects::srq::{PostedRecv, Segments};

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
}

/// How much one look at a connection handles at most (frames, payload bytes): a peer that
/// floods its connection gets its share, then the other connections theirs (the engine's
/// poll reports it again after the others), before anyone comes back to it.
const SHARE_FRAMES: usize = 256;
const SHARE_BYTES: usize = 1 << 20;

/// What is left of one look's share.
struct Share {
    frames: usize,
    bytes: usize,
}

impl Share {
    fn new() -> Share {
        Share {
            frames: SHARE_FRAMES,
            bytes: SHARE_BYTES,
        }
    }

    fn spent(&self) -> bool {
        self.frames == 0 || self.bytes == 0
    }

    fn frame(&mut self) {
        self.frames = self.frames.saturating_sub(1);
    }

    fn bytes(&mut self, n: usize) {
        self.bytes = self.bytes.saturating_sub(n);
    }
}

/// A frame whose payload is still arriving.
struct Partial {
    h: Header,
    /// Payload bytes not yet read.
    left: usize,
    sink: Sink,
    /// Set when the access failed as the payload came in (its region was freed meanwhile):
    /// the peer hears this status as the frame ends.
    refused: Option<dat_dto_completion_status>,
}

/// Where a payload's bytes go.
enum Sink {
    /// An RDMA write, into registered memory already checked, which stays registered while
    /// each piece lands (`Lmr::access`; none for a write of nothing). Its final byte is read
    /// aside (`last`) and stored once the acknowledgement is due: a program that polls that
    /// byte and answers at once finds the acknowledgement ready to ride with its answer,
    /// instead of the engine sending it alone (a second wake-up of the peer per message).
    Memory {
        at: u64,
        region: Option<Arc<Lmr>>,
        last: Option<u8>,
    },
    /// A message, into a posted receive (its segments checked one by one as they fill).
    Receive {
        recv: PostedRecv,
        pz: Arc<Pz>,
        evd: Option<Arc<Evd>>,
        walk: Walk,
    },
    /// A message nobody posted a receive for yet: kept until one is (`filled` of its bytes
    /// are in).
    Early { data: Vec<u8>, filled: usize },
    /// The data of one of our RDMA reads.
    Read {
        request: Request,
        targets: Segments,
        pz: Option<Arc<Pz>>,
        walk: Walk,
    },
    /// A small payload of fixed length: an atomic's operands, or a direct offer's cookie
    /// (`filled` of its bytes are in).
    Operands {
        data: [u8; ATOMIC_OPERANDS as usize],
        filled: usize,
    },
    /// Bytes to drop, then the end of the connection (the cause was answered already).
    Drop { then: Option<Stop> },
}

/// How far a payload has filled a list of segments.
#[derive(Default)]
struct Walk {
    segment: usize,
    within: usize,
    /// The local status of a segment that failed its check: the rest is dropped.
    failed: Option<dat_dto_completion_status>,
}

impl Inbound {
    pub fn new(reader: Reader) -> Inbound {
        Inbound {
            reader,
            partial: None,
            immediate_due: None,
            more: false,
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
/// poll stays short). Returns whether any frame was handled, and Some(stop) or an error when
/// the connection ends.
pub fn advance(
    ep: &Arc<Ep>,
    link: &TcpLink,
    inb: &mut Inbound,
    in_caller: bool,
) -> Result<(bool, Option<Stop>), ConnError> {
    // Messages the peer put in our receives directly came before anything in the socket.
    let mut handled = link.take_direct();
    let mut looked = false;
    // A read that takes less than it could finds the socket empty: the engine stops there
    // (its poll, armed again, reports what comes later) instead of asking once more.
    inb.reader.expect_data();
    let mut share = Share::new();
    inb.more = false;
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
        inb.reader.take_header(&h);
        handled = true;
        share.frame();
        // An immediate comes right after its write, and only then.
        let due = inb.immediate_due.take();
        if (h.op == Op::Immediate) != due.is_some()
            || due.is_some_and(|(id, len)| h.id != id || h.remote_addr != len)
        {
            return Ok((handled, Some(Stop::Lost)));
        }
        if let Some(stop) = step(ep, link, inb, h, in_caller)? {
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
) -> Result<Option<Stop>, ConnError> {
    match h.op {
        Op::Ready if h.flags & flags::DIRECT == 0 => {
            if h.payload_len != 0 {
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
            if h.payload_len != OFFER_COOKIE {
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
        Op::Send => {
            let ack = (h.flags & flags::ACK != 0).then_some(h.remote_addr);
            if inb.reader.buffered() >= h.payload_len as usize {
                if let Some(done) = deliver_buffered(ep, link, &mut inb.reader, &h, ack, in_caller)
                {
                    return Ok(done);
                }
            } else if let Some(stop) = ack.and_then(|last| acknowledged(ep, link, last)) {
                return Ok(start(inb, h, Sink::Drop { then: Some(stop) }));
            }
            let sink = message_sink(ep, link, &h);
            return Ok(start(inb, h, sink));
        }
        Op::RdmaWrite => {
            let sink = match remote_access(ep, &h, lmr::PRIV_REMOTE_WRITE) {
                Some((region, at)) => Sink::Memory {
                    at,
                    region,
                    last: None,
                },
                None => {
                    refuse(
                        link,
                        h.id,
                        dat_dto_completion_status::DAT_DTO_ERR_REMOTE_ACCESS,
                    );
                    Sink::Drop {
                        then: Some(Stop::Broken),
                    }
                }
            };
            return Ok(start(inb, h, sink));
        }
        // Beyond the reads and atomics the EP answers at once (its `max_rdma_read_in`, which
        // the handshake told the peer): the peer broke the rules, and hears so, as a verbs
        // responder refuses such a request.
        Op::RdmaReadRequest | Op::FetchAdd | Op::CompareSwap if !link.may_answer_read() => {
            refuse(
                link,
                h.id,
                dat_dto_completion_status::DAT_DTO_ERR_REMOTE_RESPONDER,
            );
            return Ok(Some(Stop::Broken));
        }
        Op::RdmaReadRequest => match remote_access(ep, &h, lmr::PRIV_REMOTE_READ) {
            Some((lmr, address)) => link.answer(Answer::ReadData {
                seq: h.id,
                lmr,
                address,
                length: h.payload_len,
            }),
            None => {
                refuse(
                    link,
                    h.id,
                    dat_dto_completion_status::DAT_DTO_ERR_REMOTE_ACCESS,
                );
                return Ok(Some(Stop::Broken));
            }
        },
        Op::Ack => {
            if let Some(stop) = acknowledged(ep, link, h.id) {
                return Ok(Some(stop));
            }
        }
        Op::Immediate => {
            let Ok(length) = u32::try_from(h.remote_addr) else {
                return Ok(Some(Stop::Lost));
            };
            return Ok(immediate(ep, link, h.id, h.rkey, length, in_caller));
        }
        Op::FetchAdd | Op::CompareSwap => {
            if h.payload_len != ATOMIC_OPERANDS {
                return Ok(Some(Stop::Lost));
            }
            if inb.reader.buffered() >= ATOMIC_OPERANDS as usize {
                let mut operands = [0u8; ATOMIC_OPERANDS as usize];
                inb.reader.take_buffered(&mut operands);
                return Ok(atomic(ep, link, &h, operands));
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
        Op::RdmaReadResponse => {
            let Some((request, targets)) = pop_request(ep) else {
                return Ok(Some(Stop::Lost));
            };
            if request.seq != h.id
                || request.operation != dat_dtos::DAT_DTO_RDMA_READ
                || h.payload_len != request.length
            {
                ep.complete_request(
                    &request,
                    dat_dto_completion_status::DAT_DTO_ERR_BAD_RESPONSE,
                    0,
                );
                return Ok(Some(Stop::Lost));
            }
            let sink = Sink::Read {
                request,
                targets,
                pz: ep.pz(),
                walk: Walk::default(),
            };
            return Ok(start(inb, h, sink));
        }
        Op::RemoteAccessError => {
            // Only a request that went out whole can have been refused (see `settle`): the
            // oldest, which the refusal completes.
            let front = ep.inner.lock().outstanding.front().map(|r| r.seq);
            if front.is_some_and(|seq| !link.sent_through(seq)) {
                return Ok(Some(Stop::Lost));
            }
            if let Some((r, _)) = pop_request(ep) {
                let status = u32::try_from(h.remote_addr)
                    .ok()
                    .and_then(|s| dat_dto_completion_status::try_from(s).ok())
                    .filter(|s| *s != dat_dto_completion_status::DAT_DTO_SUCCESS)
                    .unwrap_or(dat_dto_completion_status::DAT_DTO_ERR_REMOTE_RESPONDER);
                ep.complete_request(&r, status, 0);
            }
            return Ok(Some(Stop::Broken));
        }
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

/// Starts a frame's payload into `sink`; a payload of nothing finishes at once.
fn start(inb: &mut Inbound, h: Header, sink: Sink) -> Option<Stop> {
    inb.partial = Some(Partial {
        left: h.payload_len as usize,
        h,
        sink,
        refused: None,
    });
    None
}

/// How long a consumer's poll waits for the rest of a frame that is arriving as it reads.
const ARRIVING_US: u64 = 50;

/// [`feed`]; a consumer's poll that took part of a payload waits up to `ARRIVING_US` for the
/// rest while it keeps coming (a local peer is still writing it). A thread that returns with
/// the completion it polled for may go off to poll memory, holding the connection on lease:
/// the rest of a frame behind that completion (a write's data behind its acknowledgement)
/// would wait for the lease to run out.
fn feed_arriving(
    reader: &mut Reader,
    p: &mut Partial,
    in_caller: bool,
    share: &mut Share,
) -> Result<bool, ConnError> {
    // Until when bytes that stop coming are waited for (0: none came yet).
    let mut until = 0;
    loop {
        let left = p.left;
        if feed(reader, p, share)? {
            return Ok(true);
        }
        if !in_caller || share.spent() {
            return Ok(false);
        }
        let now = crate::runtime::sys::monotonic_micros();
        if p.left < left {
            until = now + ARRIVING_US;
        } else if now >= until {
            return Ok(false);
        }
        std::hint::spin_loop();
    }
}

/// Reads what the socket has of a partial frame's payload into its sink. True when the
/// payload is complete.
fn feed(reader: &mut Reader, p: &mut Partial, share: &mut Share) -> Result<bool, ConnError> {
    while p.left > 0 {
        if share.spent() {
            return Ok(false);
        }
        let got = match &mut p.sink {
            Sink::Memory { last, .. } if p.left == 1 => {
                // The final byte, aside (stored by `finish`): through the buffer, with the
                // next frame's header when it is there.
                if reader.buffered() == 0 && reader.fill(HEADER_LEN + 1)? == 0 {
                    Some(0)
                } else {
                    let mut b = [0u8];
                    reader.take_buffered(&mut b);
                    *last = Some(b[0]);
                    Some(1)
                }
            }
            Sink::Memory { at, region, .. } => match region.as_ref().map(|r| r.access()) {
                // Freed under the write: the rest is dropped, the peer refused (below).
                Some(None) => None,
                gate => {
                    // SAFETY: checked when the frame began (`remote_access`): inside a region
                    // registered with remote write privilege in the EP's zone, registered
                    // still (its gate is held while the piece lands). All but the final byte.
                    let dst = unsafe { std::slice::from_raw_parts_mut(*at as *mut u8, p.left - 1) };
                    let n = reader.read_some(dst, 1)?;
                    *at += n as u64;
                    drop(gate);
                    Some(n)
                }
            },
            Sink::Early { data, filled } => {
                let n = reader.read_some(&mut data[*filled..], 0)?;
                *filled += n;
                Some(n)
            }
            Sink::Operands { data, filled } => {
                let n = reader.read_some(&mut data[*filled..], 0)?;
                *filled += n;
                Some(n)
            }
            Sink::Receive { recv, pz, walk, .. } => {
                Some(walk.fill(&recv.segments, p.left, Some(pz), reader)?)
            }
            Sink::Read {
                targets, pz, walk, ..
            } => Some(walk.fill(targets, p.left, pz.as_ref(), reader)?),
            Sink::Drop { .. } => Some(reader.skip_some(p.left)?),
        };
        let Some(got) = got else {
            p.refused = Some(dat_dto_completion_status::DAT_DTO_ERR_REMOTE_ACCESS);
            p.sink = Sink::Drop {
                then: Some(Stop::Broken),
            };
            continue;
        };
        if got == 0 {
            return Ok(false);
        }
        share.bytes(got);
        p.left -= got;
        if p.left > 0 && reader.buffered() == 0 && reader.drained() {
            return Ok(false);
        }
    }
    Ok(true)
}

impl Walk {
    /// Reads up to `left` payload bytes into `segments` from where the walk stands: each
    /// segment is checked against its live region (local write privilege, the EP's zone) as
    /// it begins to fill; after a failed check the rest is dropped. Returns the bytes taken
    /// (0: none were there).
    fn fill(
        &mut self,
        segments: &[DAT_LMR_TRIPLET],
        left: usize,
        pz: Option<&Arc<Pz>>,
        reader: &mut Reader,
    ) -> Result<usize, ConnError> {
        while self.failed.is_none() {
            let (Some(s), Some(pz)) = (segments.get(self.segment), pz) else {
                // No zone to check against (the caller checked the room).
                self.failed = Some(dat_dto_completion_status::DAT_DTO_ERR_LOCAL_PROTECTION);
                break;
            };
            let length = s.segment_length as usize;
            if self.within == length {
                // Full (or empty): the next one.
                self.segment += 1;
                self.within = 0;
                continue;
            }
            let n = (length - self.within).min(left);
            let at = s.virtual_address + self.within as u64;
            // Checked, and held registered while this piece lands (a region freed between two
            // pieces of a message takes no byte after its free returned).
            let Ok(hold) =
                Lmr::hold_segment(s.lmr_context, at, n as u64, lmr::PRIV_LOCAL_WRITE, pz)
            else {
                self.failed = Some(dat_dto_completion_status::DAT_DTO_ERR_LOCAL_PROTECTION);
                break;
            };
            // SAFETY: just checked and held: inside a live region with local write privilege
            // in the EP's zone, which the consumer keeps until the receive (or read) completes.
            let dst = unsafe { std::slice::from_raw_parts_mut(at as *mut u8, n) };
            let got = reader.read_some(dst, left - n)?;
            drop(hold);
            self.within += got;
            return Ok(got);
        }
        reader.skip_some(left)
    }
}

/// A whole frame's payload is in: what it was for is done.
fn finish(ep: &Arc<Ep>, link: &TcpLink, p: Partial, in_caller: bool) -> Option<Stop> {
    let h = p.h;
    if let Some(status) = p.refused {
        refuse(link, h.id, status);
    }
    match p.sink {
        Sink::Memory { at, region, last } => {
            // A write whose immediate follows is acknowledged with it.
            let acknowledge = |in_caller| {
                if h.flags & flags::IMMEDIATE == 0 {
                    link.acknowledge(h.id, in_caller)
                }
            };
            let Some(byte) = last else {
                acknowledge(in_caller); // a write of nothing
                return None;
            };
            let gate = region.as_ref().map(|r| r.access());
            if matches!(gate, Some(None)) {
                // Freed under the write.
                refuse(
                    link,
                    h.id,
                    dat_dto_completion_status::DAT_DTO_ERR_REMOTE_ACCESS,
                );
                return Some(Stop::Broken);
            }
            acknowledge(in_caller);
            // The bytes before it are stored first (a poller that sees it sees them).
            std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
            // SAFETY: the frame's last byte, inside the region checked when the frame began
            // (`remote_access`), registered still (its gate is held).
            unsafe { (at as *mut u8).write_volatile(byte) };
            drop(gate);
            None
        }
        Sink::Receive {
            recv, evd, walk, ..
        } => match walk.failed {
            None => {
                link.acknowledge(h.id, in_caller);
                invalidate(ep, invalidated_context(&h));
                ep.complete_recv_on(
                    evd.as_deref(),
                    recv.cookie,
                    dat_dto_completion_status::DAT_DTO_SUCCESS,
                    h.payload_len,
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
        },
        Sink::Early { data, .. } => {
            keep(
                ep,
                link,
                EarlyMessage {
                    seq: h.id,
                    data,
                    immediate: None,
                    invalidate: invalidated_context(&h),
                },
            );
            None
        }
        Sink::Operands { data, .. } if h.op == Op::Ready => {
            established(link, Offer::from_ready(&h, &data).ok().flatten())
        }
        Sink::Operands { data, .. } => atomic(ep, link, &h, data),
        Sink::Read { request, walk, .. } => match walk.failed {
            None => {
                ep.complete_request(
                    &request,
                    dat_dto_completion_status::DAT_DTO_SUCCESS,
                    request.length,
                );
                link.read_landed();
                None
            }
            Some(status) => {
                ep.complete_request(&request, status, 0);
                Some(Stop::Broken)
            }
        },
        Sink::Drop { then } => then,
    }
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

/// The peer carried out every request of ours up to `last`: they complete. Some(stop) when
/// the acknowledgement covers a read, which only its data may answer.
fn acknowledged(ep: &Ep, link: &TcpLink, last: u64) -> Option<Stop> {
    settle(ep, link, &mut ep.inner.lock(), last).err()
}

/// [`acknowledged`], under the EP's lock the caller holds: the covered requests leave the
/// queue, and those signalled complete on the request EVD the EP holds.
fn settle(ep: &Ep, link: &TcpLink, inner: &mut EpInner, last: u64) -> Result<(), Stop> {
    // Only what went out whole may be acknowledged: a peer that acknowledges more lies (the
    // rest of a request's frame still reads the consumer's memory, which a completion hands
    // back), and the connection ends before anything completes.
    if inner.outstanding.front().is_some_and(|r| r.seq <= last) && !link.sent_through(last) {
        return Err(Stop::Lost);
    }
    while let Some(r) = inner.outstanding.front().filter(|r| r.seq <= last) {
        if r.operation == dat_dtos::DAT_DTO_RDMA_READ {
            return Err(Stop::Lost);
        }
        let Some(r) = inner.outstanding.pop_front() else {
            break;
        };
        ep.complete_request_on(
            inner.request_evd.as_deref(),
            &r,
            dat_dto_completion_status::DAT_DTO_SUCCESS,
            r.length,
        );
    }
    Ok(())
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
fn deliver_buffered(
    ep: &Ep,
    link: &TcpLink,
    reader: &mut Reader,
    h: &Header,
    ack: Option<u64>,
    in_caller: bool,
) -> Option<Option<Stop>> {
    let len = h.payload_len as usize;
    let mut inner = ep.inner.lock();
    if let Some(last) = ack {
        if let Err(stop) = settle(ep, link, &mut inner, last) {
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
    let complete = |status, n| ep.complete_recv_on(evd, recv.cookie, status, n);
    if len as u64 > lmr::total_length(&recv.segments) {
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
    let holds: Result<smallvec::SmallVec<[SegmentHold; 4]>, _> = parts()
        .map(|(s, n)| {
            Lmr::hold_segment(
                s.lmr_context,
                s.virtual_address,
                n as u64,
                lmr::PRIV_LOCAL_WRITE,
                pz,
            )
        })
        .collect();
    let Ok(holds) = holds else {
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
    complete(dat_dto_completion_status::DAT_DTO_SUCCESS, len as u32);
    Some(None)
}

/// The `rmr_context` a send with invalidate names.
fn invalidated_context(h: &Header) -> Option<u32> {
    (h.flags & flags::INVALIDATE != 0).then_some(h.rkey)
}

/// A send with invalidate of `context` landed: the RMR it names, bound through this EP, is
/// unbound before the receive completes (the consumer that sees the message finds the window
/// closed).
fn invalidate(ep: &Ep, context: Option<u32>) {
    if let Some(context) = context {
        Window::invalidate(context, ep);
    }
}

/// Where a message's payload goes when it cannot land at once: a posted receive (the payload
/// still coming in), or kept for a receive posted later, or refused.
fn message_sink(ep: &Ep, link: &TcpLink, h: &Header) -> Sink {
    let len = h.payload_len as usize;
    let mut inner = ep.inner.lock();
    let recv = receive_in_order(ep, &mut inner);
    match recv {
        Some(recv) => {
            let evd = inner.recv_evd.as_ref().map(|e| e.arc().clone());
            let pz = inner.pz.as_ref().map(|p| p.arc().clone());
            drop(inner);
            if len as u64 > lmr::total_length(&recv.segments) || pz.is_none() {
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
                return Sink::Drop {
                    then: Some(Stop::Broken),
                };
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
        None if !inner.wire.tcp.reserve_kept(len) => {
            drop(inner);
            refuse(
                link,
                h.id,
                dat_dto_completion_status::DAT_DTO_ERR_RECEIVER_NOT_READY,
            );
            Sink::Drop {
                then: Some(Stop::Broken),
            }
        }
        None => Sink::Early {
            data: vec![0u8; len],
            filled: 0,
        },
    }
}

/// A message that arrived before a receive: kept (its bytes were counted as it began), and
/// the sender hears of it only once it lands.
fn keep(ep: &Arc<Ep>, link: &TcpLink, message: EarlyMessage) {
    link.answer(Answer::Kept(message.seq));
    let srq = {
        let mut inner = ep.inner.lock();
        inner.wire.tcp.unexpected.push_back(message);
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
    while !inner.wire.tcp.unexpected.is_empty() {
        let Some(recv) = next_receive(ep, &mut inner) else {
            break;
        };
        let message = inner.wire.tcp.unexpected.pop_front().expect("not empty");
        inner.wire.tcp.release_kept(message.data.len());
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
                ep.complete_recv_on(evd, recv.cookie, status, len);
            }
        }
    }
}

/// The receive an arriving message (or immediate) lands in, when no earlier one of this EP
/// waits for one: it must not overtake those.
fn receive_in_order(ep: &Ep, inner: &mut EpInner) -> Option<PostedRecv> {
    if inner.wire.tcp.unexpected.is_empty() {
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
    let waiting = !wire.tcp.unexpected.is_empty();
    match wire.tcp.receives.as_mut() {
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
    let waiting = !wire.tcp.unexpected.is_empty();
    if let Some(receives) = wire.tcp.receives.as_mut() {
        receives.take_filled(recvs, waiting, |r, filled| {
            complete_filled(ep, recv_evd.as_deref(), r, filled)
        });
    }
}

/// A receive the peer filled directly completes: with its message, or in error where the
/// peer's copy failed (the peer breaks the connection then, as the socket path would for a
/// receive whose memory is not ours).
fn complete_filled(ep: &Ep, evd: Option<&Evd>, r: PostedRecv, filled: Filled) {
    match filled {
        Filled::Landed(length) => ep.complete_recv_on(
            evd,
            r.cookie,
            dat_dto_completion_status::DAT_DTO_SUCCESS,
            length,
        ),
        Filled::Failed => ep.complete_recv_on(
            evd,
            r.cookie,
            dat_dto_completion_status::DAT_DTO_ERR_LOCAL_PROTECTION,
            0,
        ),
    }
}

/// Copies a kept message into a receive's segments, each checked against its live region.
pub(super) fn place(
    segments: &[DAT_LMR_TRIPLET],
    message: &[u8],
    pz: &Arc<Pz>,
) -> dat_dto_completion_status {
    if message.len() as u64 > lmr::total_length(segments) {
        return dat_dto_completion_status::DAT_DTO_ERR_LOCAL_LENGTH;
    }
    let mut rest = message;
    for s in segments {
        if rest.is_empty() {
            break;
        }
        let n = rest.len().min(s.segment_length as usize);
        let Ok(hold) = Lmr::hold_segment(
            s.lmr_context,
            s.virtual_address,
            n as u64,
            lmr::PRIV_LOCAL_WRITE,
            pz,
        ) else {
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
fn immediate(
    ep: &Arc<Ep>,
    link: &TcpLink,
    seq: u64,
    data: u32,
    length: u32,
    in_caller: bool,
) -> Option<Stop> {
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
    if !inner.wire.tcp.reserve_kept(0) {
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
        },
    );
    None
}

/// The peer's atomic (`FetchAdd` or `CompareSwap`, with its two operands), carried out on our
/// word atomically (concurrent atomics of any connection on it never lose an update), its
/// original value sent back as a read's data. A word the EP may not reach this way ends the
/// connection: a bad key, bounds, zone or privilege as an access error, a word not aligned to
/// 8 bytes as an invalid request (as a verbs responder answers them).
fn atomic(
    ep: &Arc<Ep>,
    link: &TcpLink,
    h: &Header,
    operands: [u8; ATOMIC_OPERANDS as usize],
) -> Option<Stop> {
    let [first, second] =
        [0, 8].map(|at| u64::from_le_bytes(operands[at..at + 8].try_into().expect("8 bytes")));
    let access_error = dat_dto_completion_status::DAT_DTO_ERR_REMOTE_ACCESS;
    let region = permitted_region(
        ep,
        h.rkey,
        h.remote_addr,
        ATOMIC_LEN,
        lmr::PRIV_REMOTE_ATOMIC,
    );
    let status = match &region {
        None => access_error,
        Some(_) if !h.remote_addr.is_multiple_of(u64::from(ATOMIC_LEN)) => {
            dat_dto_completion_status::DAT_DTO_ERR_REMOTE_RESPONDER
        }
        Some(lmr) => match lmr.access() {
            None => access_error, // freed meanwhile
            Some(_registered) => {
                // SAFETY: an aligned 64-bit word inside a region the consumer registered with
                // remote atomic privilege in the EP's zone, registered still (its gate is
                // held); others reach it only by atomics (a peer's, through any connection)
                // or by the consumer, as with an RDMA device.
                let word = unsafe { AtomicU64::from_ptr(h.remote_addr as *mut u64) };
                let original = match h.op {
                    Op::CompareSwap => word
                        .compare_exchange(first, second, Ordering::SeqCst, Ordering::SeqCst)
                        .unwrap_or_else(|v| v),
                    _ => word.fetch_add(first, Ordering::SeqCst),
                };
                link.answer(Answer::AtomicResult {
                    seq: h.id,
                    original,
                });
                return None;
            }
        },
    };
    refuse(link, h.id, status);
    Some(Stop::Broken)
}

/// The region a peer's RDMA names, if the access is allowed: its key, bounds, privilege and
/// our EP's protection zone. A zero-length access needs no region.
fn remote_access(ep: &Arc<Ep>, h: &Header, privilege: u32) -> Option<(Option<Arc<Lmr>>, u64)> {
    if h.payload_len == 0 {
        return Some((None, h.remote_addr));
    }
    let lmr = permitted_region(ep, h.rkey, h.remote_addr, h.payload_len, privilege)?;
    Some((Some(lmr), h.remote_addr))
}

/// The live region `rkey` names, if `length` bytes at `address` in it may be reached with
/// `privilege` through our EP (its key, bounds, privilege and the EP's protection zone).
///
/// `rkey` is a region's `rmr_context`, or that of an RMR bound through this EP (a window onto
/// a region, with the bind's privileges).
fn permitted_region(
    ep: &Ep,
    rkey: u32,
    address: u64,
    length: u32,
    privilege: u32,
) -> Option<Arc<Lmr>> {
    let Some(lmr) = Lmr::lookup_rmr_context(rkey) else {
        return Window::lookup(ep, rkey)?.reach(address, u64::from(length), privilege);
    };
    let pz = ep.pz()?;
    lmr.check_remote(address, u64::from(length), privilege, &pz)
        .ok()?;
    Some(lmr)
}
