//! The checks against a peer that breaks the rules.

use std::sync::Arc;

use crate::objects::ep::Ep;
use crate::objects::lmr::Lmr;
use crate::objects::rmr::Window;
use crate::transport::tcp::wire::Header;

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

/// The region a peer's RDMA names, if the access is allowed: its key, bounds, privilege and
/// our EP's protection zone. A zero-length access needs no region.
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
