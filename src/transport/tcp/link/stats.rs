//! What happened to a connection, counted as it goes and printed as it ends when
//! `LIBDAT_DEBUG` is set.

use std::sync::atomic::{AtomicU64, Ordering};

/// Counts of how a connection was moved, printed as it ends when `LIBDAT_DEBUG` is set.
#[derive(Default, Debug)]
pub(super) struct Stats {
    /// Reports of the engine's (data, room, timer).
    pub(super) engine_events: AtomicU64,
    /// Times the engine handled frames itself.
    pub(super) engine_reads: AtomicU64,
    pub(super) offers: AtomicU64,
    pub(super) leases: AtomicU64,
    pub(super) taken_back: AtomicU64,
    /// Acknowledgements the engine held that then went alone (no request came to carry them).
    pub(super) lone_acks: AtomicU64,
    /// Leases that ended with data waiting in the socket.
    pub(super) taken_back_waiting: AtomicU64,
    /// Our requests (sends, RDMA writes and reads) carried out directly in the peer's memory.
    pub(super) direct: AtomicU64,
}

pub(super) fn count(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}
