//! The peer's RDMA accesses to our registered memory, each checked before a byte moves
//! (`peer_checks`): its writes, landed piece by piece as they arrive (the final byte stored
//! last); its reads, answered with the region's bytes; its atomics, carried out on our word.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::payload::{start, Sink};
use super::peer_checks;
use super::{refuse, Inbound, Stop};
use crate::abi::*;
use crate::objects::ep::Ep;
use crate::objects::extension::ATOMIC_LEN;
use crate::objects::lmr::{self, Lmr};
use crate::transport::tcp::answers::Answer;
use crate::transport::tcp::conn::{ConnError, Reader};
use crate::transport::tcp::link::TcpLink;
use crate::transport::tcp::wire::{flags, Header, Op, ATOMIC_OPERANDS, HEADER_LEN};

/// Where the peer's RDMA write lands: its region, checked (`peer_checks::accessible_region`).
/// A write the EP may not take is refused, and the connection breaks as its header arrives.
#[inline]
pub(super) fn write_sink(ep: &Arc<Ep>, link: &TcpLink, h: &Header) -> Sink {
    match peer_checks::accessible_region(ep, h, lmr::PRIV_REMOTE_WRITE) {
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
            Sink::Refused
        }
    }
}

/// Lands what the socket has of the peer's RDMA write at `at`, all but its final byte, of the
/// `left` bytes to come. None when its region was freed under the write.
#[inline]
pub(super) fn land_write_piece(
    reader: &mut Reader,
    at: &mut u64,
    region: Option<&Arc<Lmr>>,
    left: usize,
) -> Result<Option<usize>, ConnError> {
    match region.map(|r| r.access()) {
        Some(None) => Ok(None),
        gate => {
            // SAFETY: checked when the frame began (`peer_checks::accessible_region`): inside a
            // region registered with remote write privilege in the EP's zone, registered still
            // (its gate is held while the piece lands). All but the final byte.
            let dst = unsafe { std::slice::from_raw_parts_mut(*at as *mut u8, left - 1) };
            let n = reader.read_some(dst, 1)?;
            *at += n as u64;
            drop(gate);
            Ok(Some(n))
        }
    }
}

/// The final byte of the peer's RDMA write, read aside (stored by `write_landed`): through the
/// buffer, with the next frame's header when it is there. Returns the bytes taken (0: none
/// were there).
#[inline]
pub(super) fn take_last_byte(
    reader: &mut Reader,
    last: &mut Option<u8>,
) -> Result<usize, ConnError> {
    if reader.buffered() == 0 && reader.fill(HEADER_LEN + 1)? == 0 {
        Ok(0)
    } else {
        let mut b = [0u8];
        reader.take_buffered(&mut b);
        *last = Some(b[0]);
        Ok(1)
    }
}

/// The peer's RDMA write is in but for its final byte (`last`; none for a write of nothing),
/// which is stored, and then the write acknowledged: once queued, the acknowledgement may be
/// written by another thread at once (a poll that found the frames taken writes the answers
/// they made; a post carries them), and it completes the peer's write, which must find every
/// byte in place. Acknowledged first (so that a program polling that byte found it ready to
/// ride with its answer), a write whose handler lost its CPU between the two was completed
/// with its last byte still the previous write's (`tests/lock_order.rs`, the RDMA-write
/// scenario, about one run in ten). A region freed under the write refuses it.
#[inline]
pub(super) fn write_landed(
    link: &TcpLink,
    h: &Header,
    at: u64,
    region: Option<Arc<Lmr>>,
    last: Option<u8>,
    in_caller: bool,
) -> Option<Stop> {
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
    // The bytes before it are stored first (a poller that sees it sees them).
    std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
    // SAFETY: the frame's last byte, inside the region checked when the frame began
    // (`peer_checks::accessible_region`), registered still (its gate is held).
    unsafe { (at as *mut u8).write_volatile(byte) };
    drop(gate);
    // The acknowledgement's writer, whichever thread it is, sees the byte stored.
    std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
    acknowledge(in_caller);
    None
}

/// The peer's RDMA read request: the data is sent back from its region, checked
/// (`peer_checks::accessible_region`); a read the EP may not answer is refused, and the
/// connection breaks.
#[inline]
pub(super) fn on_read_request(ep: &Arc<Ep>, link: &TcpLink, h: &Header) -> Option<Stop> {
    match peer_checks::accessible_region(ep, h, lmr::PRIV_REMOTE_READ) {
        Some((lmr, address)) => {
            link.answer(Answer::ReadData {
                seq: h.id,
                lmr,
                address,
                length: h.payload_len,
            });
            None
        }
        None => {
            refuse(
                link,
                h.id,
                dat_dto_completion_status::DAT_DTO_ERR_REMOTE_ACCESS,
            );
            Some(Stop::Broken)
        }
    }
}

/// The peer's atomic: carried out once its operands are in (buffered already, or arriving).
#[inline]
pub(super) fn on_atomic(
    ep: &Arc<Ep>,
    link: &TcpLink,
    inb: &mut Inbound,
    h: Header,
) -> Option<Stop> {
    if !peer_checks::operands_length_fits(&h) {
        return Some(Stop::Lost);
    }
    if inb.reader.buffered() >= ATOMIC_OPERANDS as usize {
        let mut operands = [0u8; ATOMIC_OPERANDS as usize];
        inb.reader.take_buffered(&mut operands);
        return atomic(ep, link, &h, operands);
    }
    start(
        inb,
        h,
        Sink::Operands {
            data: [0; ATOMIC_OPERANDS as usize],
            filled: 0,
        },
    )
}

/// The peer's atomic (`FetchAdd` or `CompareSwap`, with its two operands), carried out on our
/// word atomically (concurrent atomics of any connection on it never lose an update), its
/// original value sent back as a read's data. A word the EP may not reach this way ends the
/// connection: a bad key, bounds, zone or privilege as an access error, a word not aligned to
/// 8 bytes as an invalid request (as a verbs responder answers them).
pub(super) fn atomic(
    ep: &Arc<Ep>,
    link: &TcpLink,
    h: &Header,
    operands: [u8; ATOMIC_OPERANDS as usize],
) -> Option<Stop> {
    let [first, second] =
        [0, 8].map(|at| u64::from_le_bytes(operands[at..at + 8].try_into().expect("8 bytes")));
    let access_error = dat_dto_completion_status::DAT_DTO_ERR_REMOTE_ACCESS;
    let region = peer_checks::permitted_region(
        ep,
        h.rkey,
        h.remote_addr,
        ATOMIC_LEN,
        lmr::PRIV_REMOTE_ATOMIC,
    );
    let status = match &region {
        None => access_error,
        Some(_) if !peer_checks::atomic_aligned(h.remote_addr) => {
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
