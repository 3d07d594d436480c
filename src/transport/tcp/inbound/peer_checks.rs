//! The checks against an untrusted peer: nothing it sends may make us hold memory without a
//! bound, do work that grows with a queue's length per frame, starve other connections, or
//! touch memory it may not. Every check the inbound frames meet, and the limit it enforces:
//!
//! Before a frame is handled (`wire::Header::decode`, as the reader peeks at it): the magic,
//! the protocol version, a known operation, only the flags that operation uses, and a payload
//! no longer than the operation carries (private data: `max_private_data`; a message, an RDMA
//! write, a read's data or size: `max_message`; an atomic: `ATOMIC_OPERANDS`; a confirmation:
//! `OFFER_COOKIE`; any other frame: none). A header that fails ends the connection.
//!
//! Here, as frames are handled ("lost": the connection ends; "refused": the peer hears the
//! status, and the connection breaks):
//! - [`Share`]: one look at a connection handles at most `SHARE_FRAMES` frames and
//!   `SHARE_BYTES` payload bytes; the other connections get theirs before it comes back.
//! - [`KeptBudget`]: messages (and immediates) kept for receives not yet posted, at most
//!   `MAX_KEPT_PER_EP` of them and `MAX_KEPT_BYTES_PER_EP` bytes per EP, and
//!   `LIBDAT_PEER_MEMORY` MiB (256) in the process, each counting `KEPT_OVERHEAD` bytes more;
//!   beyond, refused (`DAT_DTO_ERR_RECEIVER_NOT_READY`).
//! - [`may_answer_read`]: the peer's reads and atomics whose answers wait number at most the
//!   EP's `max_rdma_read_in` (which the handshake told the peer); one more is refused
//!   (`DAT_DTO_ERR_REMOTE_RESPONDER`).
//! - [`accessible_region`], [`permitted_region`]: an RDMA write, read or atomic reaches only a
//!   live region by its `rmr_context` (or an RMR bound through this EP, with the bind's
//!   privileges), within its bounds, with the privilege the access needs, in the EP's
//!   protection zone; else refused (`DAT_DTO_ERR_REMOTE_ACCESS`).
//! - [`atomic_aligned`]: an atomic's word is aligned to 8 bytes; else refused
//!   (`DAT_DTO_ERR_REMOTE_RESPONDER`).
//! - [`fits_receive`]: a message is no longer than the receive it lands in; else the receive
//!   completes with `DAT_DTO_ERR_LOCAL_LENGTH`, and the message is refused.
//! - [`hold_landing`]: each piece of a message or of a read's data lands only in a live region
//!   with local write privilege in the EP's zone, held registered while its bytes land; else
//!   `DAT_DTO_ERR_LOCAL_PROTECTION` here (a message is refused).
//! - [`immediate_in_place`]: an immediate comes right after the RDMA write that announced it,
//!   with that write's number and length, and only then; else lost.
//! - [`immediate_length`]: an immediate's write length fits 32 bits; else lost.
//! - [`ready_length_fits`], [`operands_length_fits`]: a confirmation carries nothing or
//!   exactly an offer's cookie, an atomic exactly its two operands; else lost.
//! - [`acknowledges_sent`]: an acknowledgement covers only requests of ours that went out
//!   whole, and [`acknowledgeable`]: no RDMA read (its data answers it); else lost.
//! - [`answers_read`]: a read's data answers the oldest request in flight, a read, with its
//!   number and length; else that read completes with `DAT_DTO_ERR_BAD_RESPONSE`, and lost.
//! - [`refusal_for_sent`]: a refusal names the oldest request, which went out whole; else lost.
//! - A handshake's frame after the handshake, or a confirmation nobody waits for: lost.
//!
//! Around the connection: a listener reads at most `cm::MAX_HANDSHAKES` handshakes at once,
//! each within `cm::HANDSHAKE_TIMEOUT`; a peer unheard while something is owed ends the
//! connection after the peer timeout (`conn::watch_peer`), and a graceful close waits no
//! longer (`link::life`); what we owe the peer is counted as it changes, so no frame walks
//! that queue (`answers`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::abi::*;
use crate::objects::ep::{Ep, EpInner, Request};
use crate::objects::extension::ATOMIC_LEN;
use crate::objects::lmr::{self, AccessError, Lmr, SegmentHold};
use crate::objects::pz::Pz;
use crate::objects::rmr::Window;
use crate::transport::tcp::link::TcpLink;
use crate::transport::tcp::wire::{flags, Header, Op, ATOMIC_OPERANDS, OFFER_COOKIE};

/// How much one look at a connection handles at most (frames, payload bytes): a peer that
/// floods its connection gets its share, then the other connections theirs (the engine's
/// poll reports it again after the others), before anyone comes back to it.
const SHARE_FRAMES: usize = 256;
const SHARE_BYTES: usize = 1 << 20;

/// What is left of one look's share.
pub(super) struct Share {
    frames: usize,
    bytes: usize,
}

impl Share {
    pub(super) fn new() -> Share {
        Share {
            frames: SHARE_FRAMES,
            bytes: SHARE_BYTES,
        }
    }

    pub(super) fn spent(&self) -> bool {
        self.frames == 0 || self.bytes == 0
    }

    pub(super) fn frame(&mut self) {
        self.frames = self.frames.saturating_sub(1);
    }

    pub(super) fn bytes(&mut self, n: usize) {
        self.bytes = self.bytes.saturating_sub(n);
    }
}

/// The most messages one EP keeps for receives not yet posted (a peer that respects our
/// `max_request_dtos`-like limits never has as many outstanding), and the most bytes.
const MAX_KEPT_PER_EP: usize = crate::objects::limits::MAX_DTO_PER_EP as usize;
const MAX_KEPT_BYTES_PER_EP: usize = 64 << 20;

/// What the process holds for its peers' kept messages, every EP's together: their bytes and
/// `KEPT_OVERHEAD` each (a message of no bytes costs its record).
static KEPT: AtomicUsize = AtomicUsize::new(0);
const KEPT_OVERHEAD: usize = 64;

/// The bytes and the number of the messages an EP keeps (`EpWire::unexpected`, and those still
/// arriving that will join it), counted against the bounds.
#[derive(Default)]
pub(in crate::transport::tcp) struct KeptBudget {
    bytes: usize,
    count: usize,
}

impl KeptBudget {
    /// Counts a message of `len` bytes about to be kept for a receive not yet posted: false
    /// when the EP keeps as many messages or bytes as it may, or the process holds as much for
    /// its peers as it may (`LIBDAT_PEER_MEMORY`).
    pub(in crate::transport::tcp) fn reserve(&mut self, len: usize) -> bool {
        if self.count >= MAX_KEPT_PER_EP || self.bytes + len > MAX_KEPT_BYTES_PER_EP {
            return false;
        }
        let charge = len + KEPT_OVERHEAD;
        if KEPT.fetch_add(charge, Ordering::AcqRel) + charge
            > crate::runtime::settings::PEER_MEMORY.get()
        {
            KEPT.fetch_sub(charge, Ordering::AcqRel);
            return false;
        }
        self.bytes += len;
        self.count += 1;
        true
    }

    /// A kept message of `len` bytes landed (or was dropped).
    pub(in crate::transport::tcp) fn release(&mut self, len: usize) {
        self.bytes -= len;
        self.count -= 1;
        KEPT.fetch_sub(len + KEPT_OVERHEAD, Ordering::AcqRel);
    }

    /// Every kept message was dropped: what they counted against the process's bound goes.
    pub(in crate::transport::tcp) fn clear(&mut self) {
        KEPT.fetch_sub(self.bytes + self.count * KEPT_OVERHEAD, Ordering::AcqRel);
        self.bytes = 0;
        self.count = 0;
    }
}

/// Whether the peer may ask for one more read (or atomic) now.
#[inline]
pub(super) fn may_answer_read(link: &TcpLink) -> bool {
    link.may_answer_read()
}

/// The region a peer's RDMA names, if the access is allowed: its key, bounds, privilege and
/// our EP's protection zone. A zero-length access needs no region.
#[inline]
pub(super) fn accessible_region(
    ep: &Arc<Ep>,
    h: &Header,
    privilege: u32,
) -> Option<(Option<Arc<Lmr>>, u64)> {
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
pub(super) fn permitted_region(
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

/// Whether an atomic's word at `address` is aligned to its size.
#[inline]
pub(super) fn atomic_aligned(address: u64) -> bool {
    address.is_multiple_of(u64::from(ATOMIC_LEN))
}

/// Whether a message of `len` bytes fits the receive of these segments.
#[inline]
pub(super) fn fits_receive(len: usize, segments: &[DAT_LMR_TRIPLET]) -> bool {
    len as u64 <= lmr::total_length(segments)
}

/// `length` bytes at `address` of the region `context` names, where a peer's bytes are about
/// to land: checked (a live region with local write privilege in the zone `pz`), and held
/// registered until the hold is dropped (a region freed meanwhile takes no byte after its free
/// returned).
#[inline]
pub(super) fn hold_landing(
    context: u32,
    address: u64,
    length: u64,
    pz: &Arc<Pz>,
) -> Result<SegmentHold, AccessError> {
    Lmr::hold_segment(context, address, length, lmr::PRIV_LOCAL_WRITE, pz)
}

/// Whether frame `h` keeps the place of immediates: one comes right after the RDMA write that
/// announced it (`due`: that write's number and length), and only then.
#[inline]
pub(super) fn immediate_in_place(due: Option<(u64, u64)>, h: &Header) -> bool {
    (h.op == Op::Immediate) == due.is_some()
        && due.is_none_or(|(id, len)| h.id == id && h.remote_addr == len)
}

/// The length of the write an immediate follows, if it fits 32 bits.
#[inline]
pub(super) fn immediate_length(h: &Header) -> Option<u32> {
    u32::try_from(h.remote_addr).ok()
}

/// Whether a confirmation's payload is what it says: nothing, or a direct offer's cookie.
#[inline]
pub(super) fn ready_length_fits(h: &Header) -> bool {
    if h.flags & flags::DIRECT == 0 {
        h.payload_len == 0
    } else {
        h.payload_len == OFFER_COOKIE
    }
}

/// Whether an atomic carries exactly its two operands.
#[inline]
pub(super) fn operands_length_fits(h: &Header) -> bool {
    h.payload_len == ATOMIC_OPERANDS
}

/// Whether an acknowledgement of every request up to `last` covers only requests that went
/// out whole: the rest of a request's frame still reads the consumer's memory, which a
/// completion hands back.
#[inline]
pub(super) fn acknowledges_sent(inner: &EpInner, link: &TcpLink, last: u64) -> bool {
    inner.outstanding.oldest().is_none_or(|r| r.seq > last) || link.sent_through(last)
}

/// Whether an acknowledgement may complete request `r`: not an RDMA read, which only its data
/// answers.
#[inline]
pub(super) fn acknowledgeable(r: &Request) -> bool {
    r.operation != dat_dtos::DAT_DTO_RDMA_READ
}

/// Whether read data `h` answers `request`, the oldest in flight: a read, of its number and
/// length.
#[inline]
pub(super) fn answers_read(request: &Request, h: &Header) -> bool {
    request.seq == h.id
        && request.operation == dat_dtos::DAT_DTO_RDMA_READ
        && h.payload_len == request.length
}

/// Whether a refusal may name the oldest request in flight (`front`, its number): it went out
/// whole (or none is in flight, and the refusal completes nothing).
#[inline]
pub(super) fn refusal_for_sent(front: Option<u64>, link: &TcpLink) -> bool {
    front.is_none_or(|seq| link.sent_through(seq))
}
