//! One EP's connection over rdma-cm and an RC QP: the active connect's steps, the passive
//! accept, the connection events mapped to DAT's (as OpenFabrics' openib_cma maps them, so
//! either side may be OpenFabrics), and the requests posted on the QP.
//!
//! The QP is made with the EP (`Prepared`), in its PZ, on its EVDs' CQs, and moved to the id
//! that connects (after the route, or at the accept); one is made then if the EP changed its
//! zone, EVDs or sizes since, or had none. Receives posted before go to it then.
//!
//! By job:
//! - `cm_events`: the connect's steps and the connection's events, mapped to DAT's;
//! - `qp_setup`: the QP made with the EP (`Prepared`), or with the connection;
//! - `posting`: requests and receives posted on the QP, and memory window binds;
//! - `ending`: the connection's end (what the CQs still hold, requests posted unsignalled);
//! - `request`: a connect request waiting for the consumer, accepted or rejected;
//! - `ep_wire`: what an EP keeps for its connection (the QP made with it, the connection).

mod cm_events;
mod ending;
mod ep_wire;
mod posting;
mod qp_setup;
mod request;

use std::io;
use std::net::SocketAddrV4;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};

use parking_lot::{Mutex, MutexGuard};

use super::cm::{CmHandler, CmId};
use super::completions::CqSource;
use super::datagram;
use super::device::Pd;
use super::qp::Qp;
use super::transport::Verbs;
use crate::error::DatResult;
use crate::objects::ep::{Close, Ep, EpInner, Outgoing, Posted};
use crate::objects::seam::{Link, Progress, WindowBind};
use crate::runtime::engine::{Engine, Token};
use crate::runtime::sys::debug;

pub use ep_wire::{VerbsEp, VerbsWire};
use posting::first_seq;
pub(super) use posting::SgList;
pub use qp_setup::Prepared;
pub use request::Request;

pub struct Conn {
    /// First: dropping it destroys the QP, before the QP's CQs may go.
    id: CmId,
    qp: OnceLock<Qp>,
    verbs: Arc<Verbs>,
    ep: Weak<Ep>,
    active: bool,
    /// The EP's connect number this active connection carries out (0: passive).
    attempt: u64,
    /// The active side's connect request went out (its address and route were found).
    requested: AtomicBool,
    /// The connect's private data, sent once the route is there.
    private_data: Vec<u8>,
    /// The number of the next request, from `first_seq` up: the connection's own range of
    /// work request ids, so a completion left from an earlier connection of the EP names none
    /// of its requests.
    next_seq: AtomicU64,
    first_seq: u64,
    /// Suppressed requests posted unsignalled since the last signalled one.
    unsignalled_run: AtomicU32,
    /// The number of the last request posted signalled: those after it may finish without
    /// a completion.
    last_signalled: AtomicU64,
    /// A work request failed: the end is BROKEN.
    broken: AtomicBool,
    /// A request of ours was flushed (the QP went to its error state under it).
    request_flushed: AtomicBool,
    /// The engine's timer of a connect with a timeout.
    timer: OnceLock<Token>,
    /// A graceful close waits for the send queue to drain (see `begin_drain`), watching the
    /// request EVD's CQ meanwhile.
    draining: AtomicBool,
    drain_cq: Mutex<Option<Arc<CqSource>>>,
    /// The connection was established (its EP heard ESTABLISHED).
    up: AtomicBool,
    /// Its end was reported to the EP: an end reports once, whatever rdma-cm says after.
    end_reported: AtomicBool,
}

impl Conn {
    fn new(
        verbs: &Arc<Verbs>,
        id: CmId,
        ep: &Arc<Ep>,
        attempt: Option<u64>,
        private_data: Vec<u8>,
    ) -> io::Result<Arc<Conn>> {
        let first_seq = first_seq();
        let conn = Arc::new(Conn {
            id,
            qp: OnceLock::new(),
            verbs: verbs.clone(),
            ep: Arc::downgrade(ep),
            active: attempt.is_some(),
            attempt: attempt.unwrap_or(0),
            requested: AtomicBool::new(false),
            private_data,
            next_seq: AtomicU64::new(first_seq),
            first_seq,
            unsignalled_run: AtomicU32::new(0),
            last_signalled: AtomicU64::new(0),
            broken: AtomicBool::new(false),
            request_flushed: AtomicBool::new(false),
            timer: OnceLock::new(),
            draining: AtomicBool::new(false),
            drain_cq: Mutex::new(None),
            up: AtomicBool::new(false),
            end_reported: AtomicBool::new(false),
        });
        let handler: Arc<dyn CmHandler> = conn.clone();
        conn.id.set_handler(Arc::downgrade(&handler))?;
        // The EP holds its connection from now on (its events find it through a weak link).
        ep.inner.lock().wire.verbs().conn = Some(conn.clone());
        Ok(conn)
    }

    /// A UD EP's datagram endpoint: an id of rdma-cm's datagram space bound to the IA's
    /// address, and its UD QP, ready at once; the EP's link from now on.
    pub fn open_datagram(verbs: &Arc<Verbs>, ep: &Arc<Ep>) -> io::Result<Arc<Conn>> {
        let quiet: Weak<dyn CmHandler> = Weak::<Conn>::new();
        let id = CmId::datagram(quiet)?;
        id.bind(SocketAddrV4::new(verbs.device.ip, 0))?;
        let conn = Conn::new(verbs, id, ep, None, Vec::new())?;
        if let Err(e) = conn.make_qp(ep) {
            ep.inner.lock().wire.verbs().conn = None;
            return Err(e);
        }
        Ok(conn)
    }

    pub fn ep(&self) -> Option<Arc<Ep>> {
        self.ep.upgrade()
    }

    /// Its EP, held as the connection holds it (weakly).
    pub fn ep_link(&self) -> Weak<Ep> {
        self.ep.clone()
    }

    /// The transport (the device) of its EP's IA.
    pub fn transport(&self) -> &Arc<Verbs> {
        &self.verbs
    }

    /// Whether its QP is made.
    pub fn has_qp(&self) -> bool {
        self.qp.get().is_some()
    }

    /// Its QP's number, once made.
    pub fn qp_number(&self) -> Option<u32> {
        self.qp.get().map(Qp::number)
    }

    /// The protection domain of its QP, once made.
    pub fn protection_domain(&self) -> Option<Arc<Pd>> {
        self.qp.get().map(|q| q.pd.clone())
    }

    /// A work request failed: the connection breaks (the peer hears of it).
    pub fn fail(&self) {
        if !self.broken.swap(true, Ordering::AcqRel) {
            if debug() {
                eprintln!("libdat: a work request failed: the connection breaks");
            }
            let _ = self.id.disconnect();
        }
    }

    /// A request's retries ran out (`IBV_WC_RETRY_EXC_ERR`): the peer is gone, and the
    /// connection ends as a disconnect (see `disconnected`), not broken.
    pub fn peer_lost(&self) {
        if debug() {
            eprintln!("libdat: the peer does not answer: the connection ends");
        }
        let _ = self.id.disconnect();
    }

    /// A request completed flushed.
    pub fn request_flushed(&self) {
        self.request_flushed.store(true, Ordering::Release);
    }

    /// Whether work request id `wr_id` is one of this connection's requests.
    pub fn owns(&self, wr_id: u64) -> bool {
        (self.first_seq..self.next_seq.load(Ordering::Relaxed)).contains(&wr_id)
    }
}

impl Progress for Conn {
    // The EVDs' completion queues move the data; the connection has nothing of its own.
    fn progress(&self) {}
}

/// The objects' calls, each carried out where its job is.
impl Link for Conn {
    fn close(&self, how: Close) {
        self.begin_close(how);
    }

    fn post(
        &self,
        ep: &Ep,
        inner: MutexGuard<'_, EpInner>,
        out: &Outgoing<'_>,
    ) -> DatResult<Posted> {
        self.post_request(ep, inner, out)
    }

    fn receive_posted(&self, _ep: &Ep) {}

    fn bind_window(&self, inner: MutexGuard<'_, EpInner>, bind: &WindowBind) -> DatResult<u32> {
        self.post_bind(inner, bind)
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.stop_draining();
        datagram::forget_endpoint(self);
        if let Some(qp) = self.qp.get() {
            self.verbs.remove_qp(qp.number(), self);
        }
        if let Some(token) = self.timer.get() {
            Engine::get().deregister(*token, None);
        }
    }
}
