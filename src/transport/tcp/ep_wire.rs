//! What the TCP transport keeps in each EP, under the EP's lock: the messages that came before
//! a receive, where each RDMA read's data goes, and the receives published to a peer on this
//! host (`direct`).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use super::datagram::DatagramPort;
use super::direct::Receives;

use crate::abi::dat_dtos;
use crate::objects::ep::{Ep, Request};
use crate::objects::srq::Segments;

#[derive(Default)]
pub struct EpWire {
    /// Messages that arrived before a receive was posted for them, oldest first (a verbs QP
    /// retries such a send until a receive is there; we keep a copy instead, and the sender
    /// hears of it only once it lands).
    pub unexpected: VecDeque<EarlyMessage>,
    /// The bytes and the number of messages counted for `unexpected` (and for those still
    /// arriving that will join it), against the bounds (`reserve_kept`).
    unexpected_bytes: usize,
    unexpected_count: usize,
    /// Where the data of each RDMA read in the EP's `outstanding` goes, in the same order
    /// (kept apart: every other request would carry the room for them).
    pub read_targets: VecDeque<Segments>,
    /// A UD EP's socket.
    pub datagram: Option<Arc<DatagramPort>>,
    /// The front of the EP's queue of receives, as the connection's peer on this host sees it
    /// (`direct`): its messages land there directly.
    pub receives: Option<Receives>,
}

/// The most messages one EP keeps for receives not yet posted (a peer that respects our
/// `max_request_dtos`-like limits never has as many outstanding), and the most bytes.
const MAX_KEPT_PER_EP: usize = crate::objects::limits::MAX_DTO_PER_EP as usize;
const MAX_KEPT_BYTES_PER_EP: usize = 64 << 20;

/// What the process holds for its peers' kept messages, every EP's together: their bytes and
/// `KEPT_OVERHEAD` each (a message of no bytes costs its record).
static KEPT: AtomicUsize = AtomicUsize::new(0);
const KEPT_OVERHEAD: usize = 64;

/// A message kept until a receive is posted for it.
pub struct EarlyMessage {
    /// The sender's sequence number: acknowledged when the message lands.
    pub seq: u64,
    pub data: Vec<u8>,
    /// An RDMA write's immediate data and length, which the receive reports (no data then).
    pub immediate: Option<(u32, u32)>,
    /// A send with invalidate's `rmr_context`, unbound as the message lands.
    pub invalidate: Option<u32>,
}

impl EpWire {
    pub fn messages_waiting(&self) -> bool {
        !self.unexpected.is_empty()
    }

    /// Counts a message of `len` bytes about to be kept for a receive not yet posted: false
    /// when the EP keeps as many messages or bytes as it may, or the process holds as much for
    /// its peers as it may (`LIBDAT_PEER_MEMORY`).
    pub fn reserve_kept(&mut self, len: usize) -> bool {
        if self.unexpected_count >= MAX_KEPT_PER_EP
            || self.unexpected_bytes + len > MAX_KEPT_BYTES_PER_EP
        {
            return false;
        }
        let charge = len + KEPT_OVERHEAD;
        if KEPT.fetch_add(charge, Ordering::AcqRel) + charge
            > crate::runtime::settings::PEER_MEMORY.get()
        {
            KEPT.fetch_sub(charge, Ordering::AcqRel);
            return false;
        }
        self.unexpected_bytes += len;
        self.unexpected_count += 1;
        true
    }

    /// A kept message of `len` bytes landed (or was dropped).
    pub fn release_kept(&mut self, len: usize) {
        self.unexpected_bytes -= len;
        self.unexpected_count -= 1;
        KEPT.fetch_sub(len + KEPT_OVERHEAD, Ordering::AcqRel);
    }

    pub fn clear(&mut self) {
        self.unexpected.clear();
        KEPT.fetch_sub(
            self.unexpected_bytes + self.unexpected_count * KEPT_OVERHEAD,
            Ordering::AcqRel,
        );
        self.unexpected_bytes = 0;
        self.unexpected_count = 0;
        self.read_targets.clear();
        self.datagram = None;
        self.receives = None;
    }
}

impl Drop for EpWire {
    fn drop(&mut self) {
        self.clear(); // what it counted against the process's bound goes with it
    }
}

/// The oldest request in flight, as its answer arrives, and where its data goes (an RDMA
/// read's; none for the others).
pub fn pop_request(ep: &Ep) -> Option<(Request, Segments)> {
    let mut inner = ep.inner.lock();
    let r = inner.outstanding.pop_front()?;
    let targets = match r.operation {
        dat_dtos::DAT_DTO_RDMA_READ => inner.wire.tcp.read_targets.pop_front().unwrap_or_default(),
        _ => Segments::new(),
    };
    Some((r, targets))
}
