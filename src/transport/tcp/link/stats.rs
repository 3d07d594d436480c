//! What happened to a connection, counted as it goes and printed as it ends when
//! `LIBDAT_DEBUG` is set.

use std::sync::atomic::{AtomicU64, Ordering};

use super::TcpLink;
use crate::runtime::sys;
use crate::transport::tcp::conn::ConnError;
use crate::transport::tcp::inbound::Stop;

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
    /// Acknowledgements written at once, not held: the peer made a request while the
    /// acknowledgement of an earlier one was held (it pipelines).
    pub(super) pipelined_acks: AtomicU64,
    /// Acknowledgements that came while our write of what they acknowledge had not returned
    /// yet, left to that write's thread (`Sent::ack_ahead_of_write`).
    pub(super) acks_ahead_of_write: AtomicU64,
    /// Leases that ended with data waiting in the socket.
    pub(super) taken_back_waiting: AtomicU64,
    /// Leases taken back for a thread that sleeps waiting for the connection's events, its
    /// holder having stopped polling (`reclaim_soon`).
    pub(super) reclaimed: AtomicU64,
    /// Our requests (sends, RDMA writes and reads) carried out directly in the peer's memory.
    pub(super) direct: AtomicU64,
}

pub(super) fn count(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

impl TcpLink {
    /// Says how the connection ended, and how it was moved (`LIBDAT_DEBUG`).
    pub(super) fn report_end(&self, outcome: &Result<Stop, ConnError>) {
        let s = &self.stats;
        let (local, remote) = {
            let inb = self.inbound.lock();
            (inb.reader.local_addr(), inb.reader.peer_addr())
        };
        eprintln!(
            "libdat: connection of EP {:p} ({local:?} -> {remote:?}) ends after {} ms: {outcome:?} ({} consumer polls; engine: {} reports, handled frames {} times; {} offers, {} leases, {} taken back ({} with data waiting, {} for a sleeping waiter); {} acknowledgements alone, {} at once (pipelined), held {} us now; {} acknowledgements ahead of our write; {} requests carried out directly)",
            self.ep.handle(),
            (sys::monotonic_micros() - self.started) / 1000,
            self.polls.load(Ordering::Relaxed),
            s.engine_events.load(Ordering::Relaxed),
            s.engine_reads.load(Ordering::Relaxed),
            s.offers.load(Ordering::Relaxed),
            s.leases.load(Ordering::Relaxed),
            s.taken_back.load(Ordering::Relaxed),
            s.taken_back_waiting.load(Ordering::Relaxed),
            s.reclaimed.load(Ordering::Relaxed),
            s.lone_acks.load(Ordering::Relaxed),
            s.pipelined_acks.load(Ordering::Relaxed),
            self.ack_hold_us.load(Ordering::Relaxed),
            s.acks_ahead_of_write.load(Ordering::Relaxed),
            s.direct.load(Ordering::Relaxed),
        );
    }
}
