//! What the TCP transport keeps in each EP, under the EP's lock: the messages that came before
//! a receive, where each RDMA read's data goes, and the receives published to a peer on this
//! host (`direct`). The objects hold it as the EP's provider state (`objects::seam::EpWire`);
//! this provider reaches it through [`TcpWire::tcp`].

use std::any::Any;
use std::collections::VecDeque;
use std::sync::Arc;

use super::datagram::DatagramPort;
use super::direct::Receives;
use super::inbound::peer_checks::KeptBudget;

use crate::abi::{dat_dtos, DAT_LMR_TRIPLET};
use crate::error::DatResult;
use crate::objects::ep::{Ep, Request};
use crate::objects::evd::Evd;
use crate::objects::seam::{EpTransportState, EpWire};
use crate::objects::srq::{PostedRecv, Segments};

#[derive(Default)]
pub struct TcpEp {
    /// Messages that arrived before a receive was posted for them, oldest first (a verbs QP
    /// retries such a send until a receive is there; we keep a copy instead, and the sender
    /// hears of it only once it lands).
    pub unexpected: VecDeque<EarlyMessage>,
    /// What `unexpected` (and the messages still arriving that will join it) counts against
    /// the bounds on what a peer makes us keep.
    pub(in crate::transport::tcp) kept: KeptBudget,
    /// Where the data of each RDMA read in the EP's `outstanding` goes, in the same order
    /// (kept apart: every other request would carry the room for them).
    pub read_targets: VecDeque<Segments>,
    /// A UD EP's socket.
    pub datagram: Option<Arc<DatagramPort>>,
    /// The front of the EP's queue of receives, as the connection's peer on this host sees it
    /// (`direct`): its messages land there directly.
    pub receives: Option<Receives>,
}

/// A message kept until a receive is posted for it.
pub struct EarlyMessage {
    /// The sender's sequence number: acknowledged when the message lands.
    pub seq: u64,
    pub data: Vec<u8>,
    /// An RDMA write's immediate data and length, which the receive reports (no data then).
    pub immediate: Option<(u32, u32)>,
    /// A send with invalidate's `rmr_context`, unbound as the message lands.
    pub invalidate: Option<u32>,
    /// Its sender solicited the receive's notification (DAT_COMPLETION_SOLICITED_WAIT_FLAG).
    pub solicited: bool,
}

impl EpTransportState for TcpEp {
    #[inline]
    fn messages_waiting(&self) -> bool {
        !self.unexpected.is_empty()
    }

    #[inline]
    fn receive_posted(
        &mut self,
        recvs: &VecDeque<PostedRecv>,
        _segments: &[DAT_LMR_TRIPLET],
    ) -> DatResult {
        if let Some(receives) = self.receives.as_mut() {
            receives.publish(recvs, !self.unexpected.is_empty());
        }
        Ok(())
    }

    fn take_landed(&mut self, ep: &Ep, recvs: &mut VecDeque<PostedRecv>, recv_evd: Option<&Evd>) {
        super::inbound::take_filled_of(ep, self, recvs, recv_evd);
    }

    fn clear(&mut self) {
        self.unexpected.clear();
        self.kept.clear();
        self.read_targets.clear();
        self.datagram = None;
        self.receives = None;
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// This provider's state in an EP's [`EpWire`].
pub trait TcpWire {
    /// The EP's TCP state: the one it was made with, or, for an EP of another provider's IA
    /// whose connection is ours (accepted on it), one made now (`EpWire::adopt`).
    fn tcp(&mut self) -> &mut TcpEp;
}

impl TcpWire for EpWire {
    #[inline]
    fn tcp(&mut self) -> &mut TcpEp {
        self.adopt()
    }
}

impl Drop for TcpEp {
    fn drop(&mut self) {
        self.clear(); // what it counted against the process's bound goes with it
    }
}

/// The oldest request in flight, as its answer arrives, and where its data goes (an RDMA
/// read's; none for the others).
pub fn pop_request(ep: &Ep) -> Option<(Request, Segments)> {
    let mut inner = ep.inner.lock();
    let r = inner.outstanding.take_oldest()?;
    let targets = match r.operation {
        dat_dtos::DAT_DTO_RDMA_READ => inner
            .wire
            .tcp()
            .read_targets
            .pop_front()
            .unwrap_or_default(),
        _ => Segments::new(),
    };
    Some((r, targets))
}
