//! The peer's answers to our requests: acknowledgements complete every request up to the one
//! they name, in order (under the EP's lock, on its request EVD).

use super::Stop;
use crate::abi::*;
use crate::objects::ep::{Ep, EpInner};
use crate::transport::tcp::link::TcpLink;

/// The peer carried out every request of ours up to `last`: they complete. Some(stop) when
/// the acknowledgement covers a read, which only its data may answer.
pub(super) fn acknowledged(ep: &Ep, link: &TcpLink, last: u64) -> Option<Stop> {
    settle(ep, link, &mut ep.inner.lock(), last).err()
}

/// [`acknowledged`], under the EP's lock the caller holds: the covered requests leave the
/// queue, and those signalled complete on the request EVD the EP holds.
pub(super) fn settle(ep: &Ep, link: &TcpLink, inner: &mut EpInner, last: u64) -> Result<(), Stop> {
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
