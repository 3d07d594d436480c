//! The connection's rdma-cm events, mapped to DAT's as OpenFabrics' openib_cma maps them (so
//! either side may be OpenFabrics): the active connect's steps (address, route, QP, request),
//! its deadline, the connection established, rejected, unreachable or disconnected.

use std::io;
use std::net::SocketAddrV4;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use super::{Conn, VerbsWire};
use crate::abi::*;
use crate::objects::ep::{End, Ep};
use crate::objects::seam::{Link, PendingConnect};
use crate::runtime::engine::{Engine, Source};
use crate::runtime::sys::{self, debug};
use crate::transport::verbs::cm::{self, CmEvent, CmHandler, CmId, ConnParam, EventType};
use crate::transport::verbs::qp::Qp;
use crate::transport::verbs::transport::Verbs;

/// How long address and route resolution may take, in milliseconds.
const RESOLVE_MS: i32 = 4000;
/// The transport's retries of a lost packet, and of a receiver without a receive posted
/// (7: for ever), as OpenFabrics sets them.
pub(super) const RETRY: u8 = 7;
pub(super) const RNR_RETRY: u8 = 7;
/// Rejects carry this 4-byte header before the consumer's private data (OpenFabrics' DAT
/// and provider versions, big-endian), so a peer tells a consumer's reject from others.
pub(super) const REJECT_HEADER: [u8; 4] = [2, 0, 2, 0];
/// The status of a reject the consumer made (IB CM's "consumer defined").
const CONSUMER_REJECT: i32 = 28;

/// What the engine's timer of a connect reports to (a weak link: the connection goes with
/// its EP).
struct Deadline(Weak<Conn>);

impl Source for Deadline {
    fn on_event(self: Arc<Self>, _events: u32) {
        let Some(conn) = self.0.upgrade() else { return };
        let Some(ep) = conn.ep() else { return };
        if !ep.attempt_is_pending(conn.attempt) {
            return;
        }
        if debug() {
            eprintln!("libdat: EP {:p}: the connect timed out", ep.handle());
        }
        // "the remote host does not respond within the Consumer requested Timeout":
        // UNREACHABLE while its address and route are being found (no request went out);
        // TIMED_OUT once the request is out (the peer's consumer did not answer in time).
        let failure = if conn.requested.load(Ordering::Acquire) {
            dat_event_number::DAT_CONNECTION_EVENT_TIMED_OUT
        } else {
            dat_event_number::DAT_CONNECTION_EVENT_UNREACHABLE
        };
        conn.end(&ep, End::Broken, failure, &[]);
        // The attempt goes: its id is destroyed (rdma-cm rejects the request toward the
        // peer), so a late accept fails there and reaches nobody here.
        conn.give_up(&ep);
    }
}

/// How an EP gives up its active connect (`PendingConnect`): its connection leaves the EP and
/// goes, and with it the rdma-cm id.
struct Abandon(Weak<Conn>);

impl PendingConnect for Abandon {
    fn cancel(&self) {
        let Some(conn) = self.0.upgrade() else { return };
        if let Some(ep) = conn.ep() {
            conn.give_up(&ep);
        }
    }
}

impl Conn {
    /// Starts an active connect: address, route, QP, then the request; TIMED_OUT if it is
    /// not established within `timeout`.
    pub fn connect(
        verbs: &Arc<Verbs>,
        ep: Arc<Ep>,
        attempt: u64,
        remote: SocketAddrV4,
        private_data: Vec<u8>,
        timeout: Option<Duration>,
    ) -> io::Result<()> {
        let quiet: Weak<dyn CmHandler> = Weak::<Conn>::new();
        let id = CmId::new(quiet)?;
        let conn = Conn::new(verbs, id, &ep, Some(attempt), private_data)?;
        ep.attempt_started(attempt, Arc::new(Abandon(Arc::downgrade(&conn))));
        if let Some(t) = timeout {
            let engine = Engine::get();
            let token = engine.register_timer_only(Arc::new(Deadline(Arc::downgrade(&conn))));
            let _ = conn.timer.set(token);
            engine.set_timer(
                token,
                sys::monotonic_micros().saturating_add(t.as_micros().min(u64::MAX as u128) as u64),
            );
        }
        conn.id
            .resolve_addr(Some(verbs.device.ip), remote, RESOLVE_MS)
    }

    /// This active connection leaves `ep` (if it is still the EP's) and goes once nothing
    /// else holds it: its id is destroyed, its events reach nobody.
    pub(super) fn give_up(&self, ep: &Ep) {
        let gone = {
            let mut inner = ep.inner.lock();
            let wire = inner.wire.verbs();
            match &wire.conn {
                Some(c) if std::ptr::eq(Arc::as_ptr(c), self) => wire.conn.take(),
                _ => None,
            }
        };
        drop(gone);
    }
}

impl CmHandler for Conn {
    // An arm's rdma-cm call stays in its body, not in a guard.
    #[allow(clippy::collapsible_match)]
    fn on_cm_event(&self, event: CmEvent) {
        let Some(ep) = self.ep.upgrade() else {
            let _ = self.id.disconnect();
            return;
        };
        let me = ep.inner.lock().wire.verbs_conn();
        let Some(me) = me.filter(|c| std::ptr::eq(Arc::as_ptr(c), self)) else {
            return; // an old connection of this EP
        };
        use dat_event_number as E;
        use EventType as T;
        let unreachable = if self.active {
            E::DAT_CONNECTION_EVENT_UNREACHABLE
        } else {
            E::DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR
        };
        if debug() {
            eprintln!(
                "libdat: EP {:p}: {} (status {})",
                ep.handle(),
                cm::event_name(event.kind),
                event.status
            );
        }
        match event.kind {
            T::RDMA_CM_EVENT_ADDR_RESOLVED => {
                if self.id.resolve_route(RESOLVE_MS).is_err() {
                    self.end(&ep, End::Broken, unreachable, &[]);
                }
            }
            T::RDMA_CM_EVENT_ROUTE_RESOLVED => self.route_resolved(&me, &ep),
            T::RDMA_CM_EVENT_ADDR_ERROR
            | T::RDMA_CM_EVENT_ROUTE_ERROR
            | T::RDMA_CM_EVENT_UNREACHABLE
            | T::RDMA_CM_EVENT_CONNECT_ERROR => {
                self.end(&ep, End::Broken, unreachable, &[]);
            }
            T::RDMA_CM_EVENT_REJECTED => self.rejected(&ep, &event, unreachable),
            T::RDMA_CM_EVENT_ESTABLISHED => self.established(&me, &ep, &event),
            T::RDMA_CM_EVENT_DISCONNECTED => self.disconnected(&ep),
            T::RDMA_CM_EVENT_DEVICE_REMOVAL => {
                self.broken.store(true, Ordering::Release);
                self.end(&ep, End::Broken, E::DAT_CONNECTION_EVENT_BROKEN, &[]);
            }
            _ => {}
        }
    }
}

impl Conn {
    /// The route to the peer is there: the QP, then the connect request with the read depths.
    fn route_resolved(&self, me: &Arc<Conn>, ep: &Arc<Ep>) {
        let (inbound, outbound) = self.read_depths(ep);
        let param = ConnParam {
            private_data: self.private_data.clone(),
            responder_resources: inbound,
            initiator_depth: outbound,
            retry_count: RETRY,
            rnr_retry_count: RNR_RETRY,
            ..ConnParam::default()
        };
        if debug() {
            eprintln!(
                "libdat: connecting: responder resources {inbound}, initiator depth {outbound}"
            );
        }
        self.requested.store(true, Ordering::Release);
        if me.make_qp(ep).is_err() || self.id.connect(&param).is_err() {
            self.end(
                ep,
                End::Broken,
                dat_event_number::DAT_CONNECTION_EVENT_NON_PEER_REJECTED,
                &[],
            );
        }
    }

    /// The connection was rejected: by the peer's consumer (its private data follows the
    /// reject header), or by anything else on the way.
    fn rejected(&self, ep: &Arc<Ep>, event: &CmEvent, unreachable: dat_event_number) {
        let consumer = self.active
            && event.status == CONSUMER_REJECT
            && event.private_data.len() >= REJECT_HEADER.len();
        if consumer {
            self.end(
                ep,
                End::Broken,
                dat_event_number::DAT_CONNECTION_EVENT_PEER_REJECTED,
                &event.private_data[REJECT_HEADER.len()..],
            );
        } else if self.active {
            self.end(
                ep,
                End::Broken,
                dat_event_number::DAT_CONNECTION_EVENT_NON_PEER_REJECTED,
                &[],
            );
        } else {
            self.end(ep, End::Broken, unreachable, &[]);
        }
    }

    /// The connection is up: ESTABLISHED (the active side's with the peer's private data), or,
    /// for an EP that left its pending state meanwhile, the connection ends.
    fn established(&self, me: &Arc<Conn>, ep: &Arc<Ep>, event: &CmEvent) {
        if debug() {
            if let Some((out, inb, timeout, retry)) =
                self.qp.get().and_then(Qp::connected_attributes)
            {
                eprintln!("libdat: EP {:p}: connected, RDMA reads in flight: {out} out, {inb} in; timeout exponent {timeout}, retries {retry}", ep.handle());
            }
        }
        let link: Arc<dyn Link> = me.clone();
        let up = if self.active {
            let remote = self
                .id
                .remote()
                .unwrap_or(SocketAddrV4::new(std::net::Ipv4Addr::UNSPECIFIED, 0));
            let local_port = self.id.local().map_or(0, |a| a.port());
            ep.attempt_established(self.attempt, link, remote, local_port, &event.private_data)
        } else {
            ep.established(None, &[])
        };
        self.up.store(up, Ordering::Release);
        if !up {
            if debug() {
                eprintln!(
                    "libdat: EP {:p} left its pending state: the connection ends",
                    ep.handle()
                );
            }
            let _ = self.id.disconnect();
        }
    }

    /// The connection is down: DISCONNECTED, or BROKEN when a work request of ours failed
    /// (an access refused, a protocol error). A peer that went away (its process ended: the
    /// kernel disconnects for it; its host gone: our request's retries ran out, completed
    /// `DAT_DTO_ERR_TRANSPORT`) is DISCONNECTED, as OpenFabrics reports it and as programs
    /// expect after a disconnect (dapltest takes BROKEN for a failure there); a request it
    /// flushed says so on the request EVD.
    fn disconnected(&self, ep: &Arc<Ep>) {
        // The answer the side that ended waits for.
        let _ = self.id.disconnect();
        self.stop_draining();
        if self.end_reported.swap(true, Ordering::AcqRel) {
            return;
        }
        self.drain(ep);
        let end = if self.broken.load(Ordering::Acquire) {
            End::Broken
        } else {
            End::Orderly
        };
        // Only the EP's own connection: one it gave up, or never took, ends unheard.
        ep.link_ended(
            (self as *const Conn).cast(),
            end,
            dat_event_number::DAT_CONNECTION_EVENT_BROKEN,
            &[],
        );
    }
}
