//! The glue to the direct path (`direct`) with a peer on this host that took up our offer
//! (and we its): the offers taken up and made, the receives the peer fills directly, and the
//! peer's count of its frames, which lets a poll leave a quiet socket alone.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::TcpLink;
use crate::objects::ep::EpInner;
use crate::transport::sys::debug;
use crate::transport::tcp::direct::{self, ExportedSlot, Offer, Receives};
use crate::transport::tcp::inbound;

impl TcpLink {
    /// The peer offered us direct access to its memory: taken up if it is what it says (its
    /// table, open for this connection) and we asked for it.
    pub(super) fn direct_offered(&self, offer: Offer) {
        let Some((local, remote)) = self.ends.filter(|(l, r)| direct::wanted(*l, *r)) else {
            return;
        };
        if let Some(d) = direct::attach(&offer, local, remote) {
            let _ = self.direct.set(d);
        } else if debug() {
            eprintln!("libdat: EP {:p}: the peer's direct offer could not be taken up (pid {}): its accesses go by the socket", self.ep.handle(), offer.pid);
        }
    }

    /// Our offer was made (`slot`): the EP's receives are published to the peer from now on
    /// (an SRQ's are not: they are the SRQ's EPs', in any order).
    pub(super) fn export(&self, slot: Arc<ExportedSlot>) {
        {
            let mut inner = self.ep.inner.lock();
            if inner.srq.is_none() {
                let EpInner { wire, recvs, .. } = &mut *inner;
                let mut receives = Receives::new(slot.clone());
                receives.publish(recvs, !wire.tcp.unexpected.is_empty());
                wire.tcp.receives = Some(receives);
            }
        }
        let _ = self.exported.set(slot);
    }

    /// Takes the receives the peer filled directly (they complete). Returns whether it found
    /// any (no lock is taken to look).
    pub(in crate::transport::tcp) fn take_direct(&self) -> bool {
        match self.exported.get() {
            Some(slot) if slot.peer_filled() => {
                inbound::take_filled(&self.ep, &mut self.ep.inner.lock());
                true
            }
            _ => false,
        }
    }

    /// Frames of ours went into the socket: a peer that reads our counts of them (`direct`)
    /// looks there.
    pub(super) fn wrote_frames(&self) {
        if let Some(d) = self.direct.get() {
            d.wrote_frame();
        }
    }

    /// Whether a polling thread may leave the socket alone this poll: the peer counts the
    /// frames it writes (`direct`), and the count has not moved since a poll last looked.
    /// Every 16th poll looks anyway: for a frame the kernel queued after its count moved, and
    /// for the peer's end of stream, which no count tells.
    pub(in crate::transport::tcp) fn socket_quiet(&self) -> bool {
        let Some(frames) = self.exported.get().and_then(|slot| slot.peer_frames()) else {
            return false;
        };
        if frames != self.frames_seen.load(Ordering::Relaxed) {
            self.frames_seen.store(frames, Ordering::Relaxed);
            return false;
        }
        !self.polls.load(Ordering::Relaxed).is_multiple_of(16)
    }

    /// The connection ends: the peer's direct accesses stop (its next one goes by the socket),
    /// those it began finish, and the messages it put in our receives complete (before the
    /// rest flush).
    pub(super) fn close_direct(&self) {
        if let Some(slot) = self.exported.get() {
            slot.close();
            self.take_direct();
        }
    }
}
