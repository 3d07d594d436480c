//! The peer's RDMA accesses to our registered memory: its atomics, carried out on our word.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::peer_checks::permitted_region;
use super::{refuse, Stop};
use crate::abi::*;
use crate::objects::ep::Ep;
use crate::objects::extension::ATOMIC_LEN;
use crate::objects::lmr;
use crate::transport::tcp::answers::Answer;
use crate::transport::tcp::link::TcpLink;
use crate::transport::tcp::wire::{Header, Op, ATOMIC_OPERANDS};

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
