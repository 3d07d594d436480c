//! Direct access between processes of one host: a peer's RDMA writes and reads reach our
//! registered memory by cross-memory attach (`process_vm_writev`/`readv`), carried out by the
//! peer's posting thread alone, with no thread of ours involved, as an RDMA device places
//! them while the target computes, polls memory, or is not scheduled at all; and its messages
//! land in the receives we publish to it the same way. Connections to other hosts (and peers
//! that cannot reach us this way) keep the socket and the engine.
//!
//! What the peer may reach is ours to say, and it says it in shared memory: each process that
//! is a target keeps an export table in a `memfd`, which a peer maps after taking the file
//! from us with `pidfd_getfd` (allowed only to a process that could trace ours anyway, so the
//! table grants nothing a peer did not have). The table holds:
//!
//! - every registered region (context, zone, bounds, privileges), each slot a sequence lock,
//!   as `objects::region_table` keeps them;
//! - one slot per connection offered: open or not, the EP's protection zone, both ends'
//!   addresses (so a peer uses only the slot of its own connection), two counters of the
//!   peer's accesses through it, begun and finished, and the front of the EP's queue of
//!   receives (a ring), which the peer's messages and ours by the socket take in order.
//!
//! The peer checks each access against the table as our inbound path would (key, bounds,
//! privilege, zone, connection open), and anything it cannot settle (a key the table lacks, a
//! refusal, a window's key, no receive published, a message longer than the receive, a failed
//! copy) goes by the socket instead, where our checks give the refusal its usual status. A
//! message that lands directly is found by our thread polling the connection, or, when none
//! polls, by the progress thread, which the peer rings with a `Doorbell` frame. A region being
//! freed is first taken out of the table, then every access begun before waits to finish (the
//! counters): once `dat_lmr_free` returns, no peer writes there, as deregistering a verbs
//! region waits for its accesses; a connection that ends waits so too, before its receives
//! flush.
//!
//! - `table`: the shared layout; `exports`: ours (regions, connection slots, the receives an
//!   EP publishes); `peer`: a peer's, and a connection's accesses through it; `order`: the
//!   order in which receives of several connections complete on one EVD (as they were
//!   filled).
//!
//! The offer rides in the handshake's `Ready` frame of a side whose peer asked for it (its
//! connect request or accept flagged `DIRECT`: the peer runs on this host), so each side has
//! its direct path before its ESTABLISHED event; it names our process, the table's descriptor,
//! the connection's slot and a random cookie that the mapped table must hold.
//! `LIBDAT_DIRECT=0` turns the whole path off.

mod exports;
mod order;
mod peer;
mod table;

use std::net::SocketAddrV4;

pub use exports::{offer, publish, withdraw, ExportedSlot, Filled, Receives};
pub use order::FillOrder;
pub use peer::{attach, Direct, Outcome};

use super::wire::{flags, Header, Op, OFFER_COOKIE};

/// Whether the direct path is on (`LIBDAT_DIRECT=0` turns it off).
pub fn enabled() -> bool {
    crate::runtime::settings::DIRECT.get()
}

/// Whether a connection between these two ends may use the direct path: the peer runs on this
/// host (a loopback address, or our own). The table check proves it later; this only spares
/// other hosts the offer.
pub fn wanted(local: SocketAddrV4, remote: SocketAddrV4) -> bool {
    enabled() && (remote.ip().is_loopback() || remote.ip() == local.ip())
}

/// An offer of direct access, as a `Ready` flagged `DIRECT` carries it.
#[derive(Clone, Copy, Debug)]
pub struct Offer {
    pub pid: u32,
    pub fd: u32,
    pub slot: u32,
    pub generation: u32,
    pub cookie: [u8; OFFER_COOKIE as usize],
}

impl Offer {
    /// The `Ready` frame that carries the offer (its payload is the cookie).
    pub fn ready(&self) -> Header {
        let mut h = Header::new(Op::Ready);
        h.flags = flags::DIRECT;
        h.id = u64::from(self.pid);
        h.rkey = self.slot;
        h.remote_addr = (u64::from(self.fd) << 32) | u64::from(self.generation);
        h.payload_len = OFFER_COOKIE;
        h
    }

    /// The offer a `Ready` frame carries with its payload, if any.
    pub fn from_ready(h: &Header, payload: &[u8]) -> Result<Option<Offer>, MalformedOffer> {
        if h.flags & flags::DIRECT == 0 {
            return if payload.is_empty() {
                Ok(None)
            } else {
                Err(MalformedOffer)
            };
        }
        let cookie = payload.try_into().map_err(|_| MalformedOffer)?;
        Ok(Some(Offer {
            pid: u32::try_from(h.id).unwrap_or(0),
            fd: (h.remote_addr >> 32) as u32,
            slot: h.rkey,
            generation: h.remote_addr as u32,
            cookie,
        }))
    }
}

/// A `Ready` flagged `DIRECT` without its cookie, or with a payload and no flag.
#[derive(Debug)]
pub struct MalformedOffer;
