//! The Endpoint: its attributes, what it holds (PZ, EVDs, SRQ), its state machine and its
//! posted receives. Its connection's transport plugs in below (`transport::Link`); every rule
//! lives here.

use std::collections::VecDeque;
use std::num::NonZeroUsize;
use std::sync::Arc;

use parking_lot::Mutex;

use super::conn_qual;
use super::counters::{Counters, Tally, EP_COUNTERS};
use super::ep_state::{self, State};
use super::evd::{Catch, Evd};
use super::extension::{self, DatagramPeer, Extended, ExtendedKind};
use super::ia::Ia;
use super::limits::{self, Limits};
use super::pz::Pz;
use super::requests::Requests;
use super::srq::{PostedRecv, Srq};
use super::{make_room, Held};
use crate::abi::*;
use crate::error::{DatError, DatResult, Sub};
use crate::handle::{Kind, Object, SelfHandle};
use crate::objects::seam::{EpWire, Link, PendingConnect};
use crate::runtime::sys::sockaddr_in;

/// What the EP holds and its state, under one lock.
pub struct EpInner {
    pub state: State,
    pub pz: Option<Held<Pz>>,
    pub recv_evd: Option<Held<Evd>>,
    pub request_evd: Option<Held<Evd>>,
    pub connect_evd: Option<Held<Evd>>,
    pub srq: Option<Held<Srq>>,
    pub attr: DAT_EP_ATTR,
    pub recvs: VecDeque<PostedRecv>,
    pub remote_port: u64,
    pub local_port: u64,
    /// The peer's address once connected (queried through a pointer, so boxed).
    pub remote_addr: Option<Box<libc::sockaddr_in>>,
    /// The transport link while a connection exists or is being made.
    pub link: Option<Arc<dyn Link>>,
    /// The number of the EP's latest active connect: a provider's report about an earlier
    /// one (given up, timed out) finds another number here and changes nothing.
    pub attempt: u64,
    /// How to cancel the active connect under way, while it is pending.
    pub pending_connect: Option<Arc<dyn PendingConnect>>,
    /// Requests handed to the transport and not yet completed, in posting order.
    pub outstanding: Requests,
    /// Private data of each connection event (its pointer is in the event): kept until the EP
    /// is freed or reset to UNCONNECTED, as `dat_evd_dequeue` promises of event data.
    pub event_private_data: Vec<Box<[u8]>>,
    /// Set when this side ends the connection, so the end is DISCONNECTED, not BROKEN.
    pub closing: bool,
    /// Set as the handle dies: no more connection events.
    pub released: bool,
    /// What the IA's provider keeps with the EP.
    pub wire: EpWire,
    /// The IB extension's counters of posted requests and receives (DCNT_EP_POST_*), counted
    /// under this lock as they are posted; the EP's other counters are `Ep::counters`.
    pub posted: Tally<EP_COUNTERS>,
    /// Whether the receive stream the link feeds its receive EVD is a Solicited Wait one
    /// (as counted by the EVD when the link came).
    pub solicited_stream: bool,
}

/// A request DTO (send, RDMA write or read) the peer has not yet answered.
pub struct Request {
    /// The transport's number for it, rising in posting order.
    pub seq: u64,
    pub cookie: u64,
    pub operation: dat_dtos,
    pub length: u32,
    /// What its completion tells the consumer.
    pub report: Report,
    /// An IB extension's request: `operation` is what it moves data as.
    pub extended: Option<ExtendedKind>,
    /// An RMR's bind (the RMR's handle): it completes as a bind, not as a DTO.
    pub bind: Option<NonZeroUsize>,
}

#[cfg(test)]
impl Request {
    /// An 8-byte send numbered `seq` (its cookie `seq * 10`), for the tests of the queues that
    /// hold requests.
    pub fn test_send(seq: u64) -> Request {
        Request {
            seq,
            cookie: seq * 10,
            operation: dat_dtos::DAT_DTO_SEND,
            length: 8,
            report: Report::Notify,
            extended: None,
            bind: None,
        }
    }
}

/// How this side ends a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Close {
    /// After every request posted so far has completed (the EP is DISCONNECT_PENDING
    /// meanwhile; an abrupt close may follow and ends the wait).
    Graceful,
    /// At once; the peer is told.
    Abrupt,
    /// At once, because the EP's handle died: no events follow.
    Released,
}

/// A request DTO as the consumer posted it, checked.
pub struct Outgoing<'a> {
    pub operation: dat_dtos,
    pub segments: &'a [DAT_LMR_TRIPLET],
    /// The bytes `segments` hold together.
    pub length: u64,
    /// RDMA write and read: the peer's region.
    pub remote: Option<DAT_RMR_TRIPLET>,
    pub cookie: u64,
    pub report: Report,
    pub solicited: bool,
    /// Starts only after the EP's RDMA reads posted before it have completed, so it may
    /// carry what they brought (DAT_COMPLETION_BARRIER_FENCE_FLAG); those posted after it
    /// start after it.
    pub fence: bool,
    /// An IB extension's request: `operation` is what it moves data as.
    pub extended: Option<Extended>,
    /// A send with invalidate: the peer's RMR of this context is unbound as it lands.
    pub invalidate: Option<u32>,
}

/// What a request's completion tells the consumer, by its completion flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Report {
    /// Queued on the request EVD, waking a waiter (the default).
    Notify,
    /// Queued without waking a waiter or a CNO (DAT_COMPLETION_UNSIGNALLED_FLAG, "non-
    /// notification completion"): the consumer finds it as it dequeues, or as it wakes for
    /// another event. A failure still wakes.
    Quietly,
    /// Only a failure is queued (DAT_COMPLETION_SUPPRESS_FLAG).
    FailureOnly,
}

impl Report {
    /// The report a request's `flags` ask for (SUPPRESS over UNSIGNALLED where both are set).
    pub fn of(flags: DAT_COMPLETION_FLAGS) -> Report {
        if flags & dat_completion_flags::DAT_COMPLETION_SUPPRESS_FLAG as DAT_COMPLETION_FLAGS != 0 {
            Report::FailureOnly
        } else if flags
            & dat_completion_flags::DAT_COMPLETION_UNSIGNALLED_FLAG as DAT_COMPLETION_FLAGS
            != 0
        {
            Report::Quietly
        } else {
            Report::Notify
        }
    }

    /// Whether a success is reported at all (a verbs request is signalled to its CQ).
    pub fn reports_success(self) -> bool {
        self != Report::FailureOnly
    }

    /// Whether a completion with `status` is reported: a failure always.
    pub fn reports(self, status: dat_dto_completion_status) -> bool {
        status != dat_dto_completion_status::DAT_DTO_SUCCESS || self.reports_success()
    }

    /// Queues `event`, the completion of a request with `status`, on `evd` as the request
    /// asked: not at all for a suppressed success, quietly for an unsignalled one.
    pub fn deliver(self, evd: &Evd, event: DAT_EVENT, status: dat_dto_completion_status) {
        self.deliver_catching(evd, event, status, &mut Catch::none());
    }

    /// [`Report::deliver`], into the dequeue's out-parameter that `catch` lends if it may.
    pub fn deliver_catching(
        self,
        evd: &Evd,
        event: DAT_EVENT,
        status: dat_dto_completion_status,
        catch: &mut Catch<'_>,
    ) {
        if !self.reports(status) {
            return;
        }
        // A full EVD reports its own overflow on the async EVD; the completion is lost as a
        // CQ overrun loses it.
        let notify =
            self != Report::Quietly || status != dat_dto_completion_status::DAT_DTO_SUCCESS;
        let _ = evd.post_catching(event, notify, catch);
    }
}

/// Whether the transport took a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Posted {
    /// In flight; it completes later.
    Queued,
    /// The connection ended before it went out: the caller flushes it.
    Flush,
}

/// How a connection ended, as the transport saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// The peer said goodbye, or this side closed.
    Orderly,
    /// The peer vanished, broke the protocol, or a remote access failed.
    Broken,
}

// SAFETY: the attribute's named-attribute pointers are always NULL in our copy (we report no
// transport- or provider-specific attributes); the rest is plain data.
unsafe impl Send for EpInner {}

pub struct Ep {
    pub ia: Arc<Ia>,
    handle: SelfHandle,
    pub inner: Mutex<EpInner>,
    /// Held from the choice of a receive for a message until its completion is posted, where
    /// the EP's lock cannot be held throughout (a payload still coming in, a flush), taken
    /// before `inner`: receives complete in the order their messages arrived.
    pub receiving: Mutex<()>,
    /// The IB extension's counters of this EP.
    pub counters: Counters<EP_COUNTERS>,
}

impl Object for Ep {
    const KIND: Kind = Kind::Ep;
    fn self_handle(&self) -> Option<&SelfHandle> {
        Some(&self.handle)
    }
    /// A freed EP (or one of an IA closed abruptly) drops its connection at once, flushes what
    /// was posted, and lets go of what it held, so the consumer can free those next.
    fn on_release(&self) {
        let (link, evds, pending) = {
            let mut inner = self.inner.lock();
            inner.closing = true;
            inner.released = true;
            inner.attempt += 1;
            (
                inner.link.take(),
                dto_evds(&inner),
                inner.pending_connect.take(),
            )
        };
        if let Some(pending) = pending {
            pending.cancel();
        }
        if let Some(link) = link {
            detach(&link, &evds);
            link.close(Close::Released);
        }
        self.flush_all();
        let mut inner = self.inner.lock();
        inner.pz = None;
        inner.recv_evd = None;
        inner.request_evd = None;
        inner.connect_evd = None;
        inner.srq = None;
    }
}

/// The EP's DTO EVDs learn of its link, so polling or waiting on them makes progress. They
/// hold it until it ends ([`detach`]), and count the stream it feeds them (see
/// [`Evd::solicited_only`]).
fn attach(inner: &mut EpInner, link: &Arc<dyn Link>) {
    inner.solicited_stream = solicited_wait(inner.attr.recv_completion_flags);
    if let Some(evd) = &inner.recv_evd {
        evd.attach(link.clone());
        evd.stream_joins(inner.solicited_stream);
    }
    if let Some(evd) = &inner.request_evd {
        evd.attach(link.clone());
        evd.stream_joins(false);
    }
}

/// Whether Recv Completion Flags ask for Solicited Wait.
fn solicited_wait(recv_completion_flags: u32) -> bool {
    recv_completion_flags & dat_completion_flags::DAT_COMPLETION_SOLICITED_WAIT_FLAG as u32 != 0
}

/// The EP's DTO EVDs, taken along to [`detach`] its link from them outside the EP's lock (a
/// poll holds an EVD's sources while it takes the EP's lock).
/// What connects, accepts and their events need: the EP's connect EVD.
fn has_connect_evd(inner: &EpInner) -> DatResult {
    if inner.connect_evd.is_none() {
        return Err(DatError::invalid_state(
            Sub::DAT_INVALID_STATE_EP_EVD_CONNECT,
        ));
    }
    Ok(())
}

fn dto_evds(inner: &EpInner) -> DtoEvds {
    let [recv, request] =
        [&inner.recv_evd, &inner.request_evd].map(|e| e.as_ref().map(|e| e.arc().clone()));
    DtoEvds {
        recv,
        request,
        solicited: inner.solicited_stream,
    }
}

/// The EVDs a link fed, and whether its receive stream was a Solicited Wait one.
struct DtoEvds {
    recv: Option<Arc<Evd>>,
    request: Option<Arc<Evd>>,
    solicited: bool,
}

/// The link ended: the EVDs it fed let go of it, and of its streams.
fn detach(link: &Arc<dyn Link>, evds: &DtoEvds) {
    if let Some(evd) = &evds.recv {
        evd.detach(link);
        evd.stream_leaves(evds.solicited);
    }
    if let Some(evd) = &evds.request {
        evd.detach(link);
        evd.stream_leaves(false);
    }
}

/// The attributes an EP gets when the consumer gives none (on a transport of the table's
/// limits).
pub fn default_attr() -> DAT_EP_ATTR {
    default_attr_for(&Limits::TABLE)
}

/// The attributes an EP gets when the consumer gives none, on a transport of `own` limits.
pub fn default_attr_for(own: &Limits) -> DAT_EP_ATTR {
    let mut a = DAT_EP_ATTR::zeroed();
    a.service_type = dat_service_type::DAT_SERVICE_TYPE_RC as DAT_SERVICE_TYPE;
    a.max_message_size = own.max_message_size;
    a.max_rdma_size = own.max_rdma_size;
    a.qos = dat_qos::DAT_QOS_BEST_EFFORT as DAT_QOS;
    a.recv_completion_flags = dat_completion_flags::DAT_COMPLETION_DEFAULT_FLAG as u32;
    a.request_completion_flags = dat_completion_flags::DAT_COMPLETION_DEFAULT_FLAG as u32;
    a.max_recv_dtos = limits::DEFAULT_DTOS;
    a.max_request_dtos = limits::DEFAULT_DTOS;
    a.max_recv_iov = limits::DEFAULT_IOV;
    a.max_request_iov = limits::DEFAULT_IOV;
    a.max_rdma_read_in = limits::DEFAULT_RDMA_READ;
    a.max_rdma_read_out = limits::DEFAULT_RDMA_READ;
    a.srq_soft_hw = DAT_HW_DEFAULT as DAT_COUNT;
    a.max_rdma_read_iov = limits::DEFAULT_IOV;
    a.max_rdma_write_iov = limits::DEFAULT_IOV;
    a
}

/// Completion flags an EP attribute may carry for its receive or request queue.
const ATTR_COMPLETION_FLAGS: u32 = dat_completion_flags::DAT_COMPLETION_SUPPRESS_FLAG as u32
    | dat_completion_flags::DAT_COMPLETION_SOLICITED_WAIT_FLAG as u32
    | dat_completion_flags::DAT_COMPLETION_UNSIGNALLED_FLAG as u32
    | dat_completion_flags::DAT_COMPLETION_EVD_THRESHOLD_FLAG as u32;

/// Checks consumer attributes against what the IA's transport carries (`own`); the attributes
/// we report ignore the consumer's named-attribute lists.
///
/// A connected EP's largest message and RDMA are the transport's, whatever the consumer asked
/// within them: programs written for OpenFabrics leave them 0 or below what they transfer (its
/// library never holds a transfer to them), and a post above them is refused
/// (`DAT_INVALID_PARAMETER`), so the attributes report what an EP carries and holds to.
///
/// `datagrams`: whether the IA's transport carries the IB extension's UD EPs (a known model
/// that the others do not: `DAT_MODEL_NOT_SUPPORTED`).
pub fn check_attr(
    a: &DAT_EP_ATTR,
    position: u8,
    datagrams: bool,
    own: &Limits,
) -> DatResult<DAT_EP_ATTR> {
    let bad = || DatError::invalid_arg(position);
    let datagram =
        a.service_type == dat_ib_service_type::DAT_IB_SERVICE_TYPE_UD as DAT_SERVICE_TYPE;
    if datagram && !datagrams {
        return Err(DatError::bare(crate::error::Type::DAT_MODEL_NOT_SUPPORTED));
    }
    if !datagram && a.service_type != dat_service_type::DAT_SERVICE_TYPE_RC as DAT_SERVICE_TYPE {
        return Err(bad());
    }
    if a.max_message_size > own.max_message_size || a.max_rdma_size > own.max_rdma_size {
        return Err(bad());
    }
    if dat_qos::try_from(a.qos).is_err() {
        return Err(bad());
    }
    if a.recv_completion_flags & !ATTR_COMPLETION_FLAGS != 0
        || a.request_completion_flags & !ATTR_COMPLETION_FLAGS != 0
    {
        return Err(bad());
    }
    let dtos = 0..=own.max_dto_per_ep;
    let iov = 0..=own.max_iov;
    let reads = 0..=limits::MAX_RDMA_READ_PER_EP;
    let ok = dtos.contains(&a.max_recv_dtos)
        && dtos.contains(&a.max_request_dtos)
        && iov.contains(&a.max_recv_iov)
        && iov.contains(&a.max_request_iov)
        && (0..=own.max_read_iov).contains(&a.max_rdma_read_iov)
        && iov.contains(&a.max_rdma_write_iov)
        && reads.contains(&a.max_rdma_read_in)
        && reads.contains(&a.max_rdma_read_out)
        && a.ep_transport_specific_count >= 0
        && a.ep_provider_specific_count >= 0;
    if !ok {
        return Err(bad());
    }
    let mut copy = *a;
    if !datagram {
        copy.max_message_size = own.max_message_size;
        copy.max_rdma_size = own.max_rdma_size;
    }
    // No RDMA segment count given: the request's, as OpenFabrics' providers bound every request
    // by it (DAT 1.2 programs, whose providers never read these two, leave them 0).
    if copy.max_rdma_write_iov == 0 {
        copy.max_rdma_write_iov = copy.max_request_iov;
    }
    if copy.max_rdma_read_iov == 0 {
        copy.max_rdma_read_iov = copy.max_request_iov.min(own.max_read_iov);
    }
    copy.ep_transport_specific_count = 0;
    copy.ep_transport_specific = std::ptr::null_mut();
    copy.ep_provider_specific_count = 0;
    copy.ep_provider_specific = std::ptr::null_mut();
    Ok(copy)
}

/// The EVDs and other objects an EP is made with.
pub struct Parts {
    pub pz: Option<Arc<Pz>>,
    pub recv_evd: Option<Arc<Evd>>,
    pub request_evd: Option<Arc<Evd>>,
    pub connect_evd: Option<Arc<Evd>>,
    pub srq: Option<Arc<Srq>>,
}

impl EpInner {
    /// Whether another thread than the caller reaps this EP's DTO completions (it polled its
    /// request or receive EVD empty or waited on it last), and may sleep in a wait that only
    /// the progress engine would end: a thread that streams requests then leaves the
    /// connection to the engine (`TcpLink::look_after_post`).
    pub fn reaped_elsewhere(&self) -> bool {
        [&self.request_evd, &self.recv_evd]
            .into_iter()
            .flatten()
            .any(|e| e.reaped_elsewhere())
    }

    /// A new EP's state, unconnected, with room for its DTOs already made.
    fn new(parts: Parts, attr: DAT_EP_ATTR, wire: EpWire) -> EpInner {
        let mut inner = EpInner {
            state: dat_ep_state::DAT_EP_STATE_UNCONNECTED,
            pz: parts.pz.map(Held::new),
            recv_evd: parts.recv_evd.map(Held::new),
            request_evd: parts.request_evd.map(Held::new),
            connect_evd: parts.connect_evd.map(Held::new),
            srq: parts.srq.map(Held::new),
            attr,
            recvs: VecDeque::new(),
            remote_port: 0,
            local_port: 0,
            remote_addr: None,
            link: None,
            attempt: 0,
            pending_connect: None,
            outstanding: Requests::default(),
            event_private_data: Vec::new(),
            closing: false,
            released: false,
            wire,
            posted: Tally::default(),
            solicited_stream: false,
        };
        inner.size_queues();
        inner
    }

    /// Makes room, now, for as many requests and receives as the attributes allow: a post
    /// then never grows its queue, as a verbs provider sizes its work queues when the QP is
    /// made.
    pub fn size_queues(&mut self) {
        self.outstanding
            .make_room(self.attr.max_request_dtos.max(1) as usize);
        if self.srq.is_none() {
            make_room(&mut self.recvs, self.attr.max_recv_dtos.max(1) as usize);
        }
    }
}

impl Ep {
    pub fn new(ia: Arc<Ia>, parts: Parts, attr: DAT_EP_ATTR) -> Ep {
        Ep {
            handle: SelfHandle::default(),
            receiving: Mutex::new(()),
            counters: Counters::default(),
            inner: Mutex::new(EpInner::new(
                parts,
                attr,
                EpWire::new(ia.transport.endpoint_state()),
            )),
            ia,
        }
    }

    pub fn handle(&self) -> DAT_EP_HANDLE {
        self.handle.get()
    }

    pub fn state(&self) -> State {
        self.inner.lock().state
    }

    /// The completion event of a DTO.
    fn dto_event(
        &self,
        cookie: DAT_DTO_COOKIE,
        status: dat_dto_completion_status,
        operation: dat_dtos,
        length: u32,
    ) -> DAT_EVENT {
        let mut e = DAT_EVENT::zeroed();
        e.event_number = dat_event_number::DAT_DTO_COMPLETION_EVENT as DAT_EVENT_NUMBER;
        e.event_data.dto_completion_event_data = DAT_DTO_COMPLETION_EVENT_DATA {
            ep_handle: self.handle(),
            user_cookie: cookie,
            status: status as DAT_DTO_COMPLETION_STATUS,
            transfered_length: length,
            operation: operation as DAT_DTOS,
            rmr_context: 0,
        };
        e
    }

    /// Posts a connection event with the given private data on the connect EVD.
    pub fn connection_event(&self, number: dat_event_number, private_data: &[u8]) {
        self.post_connection_event(number as DAT_EVENT_NUMBER, private_data, None);
    }

    /// A UD EP's connection event (the IB extension's): `peer` says how to reach the peer
    /// (ESTABLISHED), none for a reject or an error.
    pub fn datagram_event(
        &self,
        number: dat_ib_event_number,
        private_data: &[u8],
        peer: Option<&DatagramPeer>,
    ) {
        if number == dat_ib_event_number::DAT_IB_UD_CONNECTION_EVENT_ESTABLISHED {
            let side = if peer.is_some_and(|p| p.passive) {
                dat_ia_counters::DCNT_IA_CM_PASSIVE_EST
            } else {
                dat_ia_counters::DCNT_IA_CM_ACTIVE_EST
            };
            self.ia.counters.bump(side as u32);
        }
        let data = peer.map(extension::datagram_connection_data);
        self.post_connection_event(number as DAT_EVENT_NUMBER, private_data, data);
    }

    fn post_connection_event(
        &self,
        number: DAT_EVENT_NUMBER,
        private_data: &[u8],
        extension_data: Option<DAT_IB_EXTENSION_EVENT_DATA>,
    ) {
        use dat_event_number as E;
        use dat_ia_counters as C;
        let outcome = match dat_event_number::try_from(number).ok() {
            Some(E::DAT_CONNECTION_EVENT_PEER_REJECTED) => Some(C::DCNT_IA_CM_USER_REJ_RX),
            Some(E::DAT_CONNECTION_EVENT_NON_PEER_REJECTED) => Some(C::DCNT_IA_CM_ERR_REFUSED),
            Some(E::DAT_CONNECTION_EVENT_TIMED_OUT) => Some(C::DCNT_IA_CM_ERR_TIMEOUT),
            Some(E::DAT_CONNECTION_EVENT_BROKEN) => Some(C::DCNT_IA_CM_ERR_RESET),
            Some(
                E::DAT_CONNECTION_EVENT_UNREACHABLE
                | E::DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR,
            ) => Some(C::DCNT_IA_CM_ERR),
            _ => None,
        };
        if let Some(counter) = outcome {
            self.ia.counters.bump(counter as u32);
        }
        let mut inner = self.inner.lock();
        if inner.released {
            return;
        }
        let Some(evd) = inner.connect_evd.as_ref().map(|e| e.arc().clone()) else {
            return;
        };
        // The event points into a buffer of its own, never NULL (programs read it whatever the
        // event, as OpenFabrics allows), which a later event leaves alone.
        let mut buffer = vec![0u8; limits::MAX_PRIVATE_DATA_SIZE as usize].into_boxed_slice();
        let n = private_data.len().min(buffer.len());
        buffer[..n].copy_from_slice(&private_data[..n]);
        let mut e = DAT_EVENT::zeroed();
        e.event_number = number;
        e.event_data.connect_event_data = DAT_CONNECTION_EVENT_DATA {
            ep_handle: self.handle(),
            private_data_size: n as DAT_COUNT,
            private_data: buffer.as_mut_ptr() as DAT_PVOID,
        };
        if let Some(x) = extension_data {
            extension::set_extension_data(&mut e, x);
        }
        inner.event_private_data.push(buffer);
        drop(inner);
        let _ = evd.post(e);
    }

    /// A connect needs the EP's PZ and connect EVD, besides an UNCONNECTED state.
    pub fn check_connectable(&self) -> DatResult {
        let inner = self.inner.lock();
        ep_state::connect(inner.state)?;
        has_connect_evd(&inner)?;
        if inner.pz.is_none() {
            return Err(DatError::invalid_state(Sub::DAT_INVALID_STATE_EP_PZ));
        }
        Ok(())
    }

    /// `dat_ep_connect` and the like: an UNCONNECTED EP becomes ACTIVE_CONNECTION_PENDING and
    /// its IA's transport starts connecting to `conn_qual` at `ip` (None: no time limit);
    /// ESTABLISHED or the failure's event follows. A connect the transport refuses at once
    /// leaves the EP UNCONNECTED.
    pub fn connect(
        self: &Arc<Self>,
        ip: std::net::Ipv4Addr,
        conn_qual: u64,
        timeout: Option<std::time::Duration>,
        private_data: &[u8],
    ) -> DatResult {
        let attempt = {
            let mut inner = self.inner.lock();
            inner.state = ep_state::connect(inner.state)?;
            inner.remote_port = conn_qual;
            inner.local_port = 0;
            inner.closing = false;
            inner.attempt += 1;
            inner.pending_connect = None;
            inner.attempt
        };
        let remote = std::net::SocketAddrV4::new(ip, conn_qual::port(conn_qual));
        let started = self.ia.transport.connect(
            self.clone(),
            attempt,
            remote,
            conn_qual,
            private_data.to_vec(),
            timeout,
        );
        self.counters.bump(dat_ep_counters::DCNT_EP_CONNECT as u32);
        if started.is_err() {
            let mut inner = self.inner.lock();
            if inner.attempt == attempt {
                inner.state = ep_state::connect_not_started(inner.state);
                inner.pending_connect = None;
            }
        }
        started
    }

    /// Whether `attempt` is the EP's connect under way (the latest, still pending).
    fn attempt_pending(inner: &EpInner, attempt: u64) -> bool {
        inner.attempt == attempt
            && inner.state == dat_ep_state::DAT_EP_STATE_ACTIVE_CONNECTION_PENDING
            && !inner.released
    }

    /// The provider's way to cancel connect `attempt`: kept while the attempt is pending, or
    /// used at once when the EP gave it up already.
    pub fn attempt_started(&self, attempt: u64, cancel: Arc<dyn PendingConnect>) {
        let mut inner = self.inner.lock();
        if Self::attempt_pending(&inner, attempt) {
            inner.pending_connect = Some(cancel);
            return;
        }
        drop(inner);
        cancel.cancel();
    }

    /// Connect `attempt` is up ([`Ep::established`]), with `link` to the peer at `remote`
    /// from our port `local_port`; false when the EP gave the attempt up (the provider then
    /// ends the link without a word to the EP).
    pub fn attempt_established(
        &self,
        attempt: u64,
        link: Arc<dyn Link>,
        remote: std::net::SocketAddrV4,
        local_port: u16,
        private_data: &[u8],
    ) -> bool {
        {
            let mut inner = self.inner.lock();
            if !Self::attempt_pending(&inner, attempt) {
                return false;
            }
            inner.pending_connect = None;
            // "the local Endpoint is bound to a Port Qualifier of the local IA": its port.
            inner.local_port = u64::from(local_port);
        }
        self.established(Some((link, remote)), private_data)
    }

    /// Connect `attempt` failed with connection event `failure` (DISCONNECTED, every posted
    /// DTO flushed); nothing when the EP gave the attempt up.
    pub fn attempt_failed(&self, attempt: u64, failure: dat_event_number, private_data: &[u8]) {
        {
            let mut inner = self.inner.lock();
            if !Self::attempt_pending(&inner, attempt) {
                return;
            }
            inner.pending_connect = None;
        }
        self.ended(End::Broken, failure, private_data);
    }

    /// Whether `attempt` is still the EP's pending connect (a provider asks before it makes
    /// what the connection needs).
    pub fn attempt_is_pending(&self, attempt: u64) -> bool {
        Self::attempt_pending(&self.inner.lock(), attempt)
    }

    /// A UD EP's connect: an exchange with the service point of `conn_qual` at `ip`, in any
    /// state (a UD EP reaches any number of peers, each through an address handle its UD
    /// connection event brings); it needs its connect EVD.
    pub fn connect_datagram(
        self: &Arc<Self>,
        ip: std::net::Ipv4Addr,
        conn_qual: u64,
        private_data: &[u8],
    ) -> DatResult {
        has_connect_evd(&self.inner.lock())?;
        let remote = std::net::SocketAddrV4::new(ip, conn_qual::port(conn_qual));
        self.counters.bump(dat_ep_counters::DCNT_EP_CONNECT as u32);
        self.ia
            .transport
            .connect_datagram(self.clone(), remote, conn_qual, private_data.to_vec())
    }

    /// `dat_ep_disconnect`: a connection is closed gracefully (DISCONNECT_PENDING until the
    /// transport has seen every request posted so far complete, then closed) or abruptly
    /// (DISCONNECTED at once, what was posted flushed), a pending connect abandoned (its
    /// DISCONNECTED event posted now), a DISCONNECTED EP left as it is; a graceful disconnect
    /// while one is under way changes nothing, an abrupt one ends the wait.
    pub fn disconnect(&self, graceful: bool) -> DatResult {
        self.counters
            .bump(dat_ep_counters::DCNT_EP_DISCONNECT as u32);
        let (link, how, given_up) = {
            let mut inner = self.inner.lock();
            let (next, how) = match ep_state::disconnect(inner.state, graceful)? {
                ep_state::Disconnect::Nothing => return Ok(()),
                ep_state::Disconnect::Graceful => (
                    dat_ep_state::DAT_EP_STATE_DISCONNECT_PENDING,
                    Close::Graceful,
                ),
                ep_state::Disconnect::Abrupt => {
                    (dat_ep_state::DAT_EP_STATE_DISCONNECTED, Close::Abrupt)
                }
            };
            inner.closing = true;
            let link = inner.link.clone();
            if link.is_some() {
                inner.state = next;
            }
            // A pending active connect has no link yet: it is cancelled, and its number
            // retired, so nothing of it reaches the EP any more.
            let given_up = if inner.state == dat_ep_state::DAT_EP_STATE_ACTIVE_CONNECTION_PENDING {
                inner.attempt += 1;
                inner.pending_connect.take()
            } else {
                None
            };
            (link, how, given_up)
        };
        if let Some(pending) = given_up {
            pending.cancel();
        }
        match link {
            Some(link) => link.close(how),
            None => self.ended(
                End::Orderly,
                dat_event_number::DAT_CONNECTION_EVENT_DISCONNECTED,
                &[],
            ),
        }
        Ok(())
    }

    /// `dat_ep_reset`: a DISCONNECTED EP is UNCONNECTED again, its last connection forgotten
    /// (the private data of its connection events may go).
    pub fn reset(&self) -> DatResult {
        let mut inner = self.inner.lock();
        inner.state = ep_state::reset(inner.state)?;
        inner.event_private_data.clear();
        inner.remote_addr = None;
        inner.remote_port = 0;
        inner.local_port = 0;
        inner.closing = false;
        Ok(())
    }

    /// `dat_rsp_create` reserves the EP for the RSP's request, once `listen` (the RSP's
    /// listener, started under the EP's lock so no connect takes the EP meanwhile) succeeded.
    pub fn reserve<T>(&self, listen: impl FnOnce() -> DatResult<T>) -> DatResult<T> {
        let mut inner = self.inner.lock();
        let next = ep_state::reserve(inner.state)?;
        let listening = listen()?;
        inner.state = next;
        Ok(listening)
    }

    /// The RSP is freed: a still RESERVED EP is UNCONNECTED again.
    pub fn unreserve(&self) {
        let mut inner = self.inner.lock();
        inner.state = ep_state::unreserve(inner.state);
    }

    /// The request of the RSP that reserved this EP arrived: PASSIVE_CONNECTION_PENDING.
    /// False when the EP is no longer RESERVED (freed meanwhile), and the request is refused.
    pub fn request_arrived(&self) -> bool {
        let mut inner = self.inner.lock();
        match ep_state::request_arrived(inner.state) {
            Some(next) if !inner.released => {
                inner.state = next;
                true
            }
            _ => false,
        }
    }

    /// The RSP's request was rejected or went elsewhere: UNCONNECTED again.
    pub fn request_gone(&self) {
        let mut inner = self.inner.lock();
        inner.state = ep_state::request_gone(inner.state);
    }

    /// What every accepting EP needs, checked before anything changes ("If the provided local
    /// Endpoint does not satisfy the requested Connection Request, the operation fails without
    /// any effect", dat_cr_accept): a live EP with a PZ and a connect EVD. The page's codes
    /// for it are `DAT_INVALID_HANDLE` (of the EP) or `DAT_INVALID_PARAMETER`; OpenFabrics
    /// refuses either with `DAT_INVALID_HANDLE_EP` at once, which a verbs QP needs anyway.
    fn check_accepting(inner: &EpInner) -> DatResult {
        if inner.released || inner.pz.is_none() || inner.connect_evd.is_none() {
            return Err(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_EP));
        }
        Ok(())
    }

    /// `dat_cr_accept` onto this (RC) EP, named as `on` says, of a request that came to conn
    /// qual `local_port`: `take` takes the request from its CR once the EP may accept it, and
    /// the EP is COMPLETION_PENDING until the transport confirms (`accepting`, then
    /// `established`).
    pub fn begin_accept<R>(
        &self,
        on: ep_state::AcceptOn,
        local_port: u64,
        take: impl FnOnce() -> DatResult<R>,
    ) -> DatResult<R> {
        let mut inner = self.inner.lock();
        Self::check_accepting(&inner)?;
        let next = ep_state::accept(inner.state, on)?;
        let request = take()?;
        inner.state = next;
        inner.closing = false;
        // The port qualifier the EP is bound to on this side: the service point's, which the
        // peer connected to (its EP reports it as the remote one); OpenFabrics reports the
        // same, the listening port.
        inner.local_port = local_port;
        Ok(request)
    }

    /// A UD EP accepts any number of requests, in any state; it needs what every accepting EP
    /// needs.
    pub fn check_accepts_datagrams(&self) -> DatResult {
        Self::check_accepting(&self.inner.lock())
    }

    /// The passive side accepted: the link carries the handshake until the peer confirms.
    /// False when the EP left COMPLETION_PENDING meanwhile.
    pub fn accepting(&self, link: Arc<dyn Link>, remote: std::net::SocketAddrV4) -> bool {
        let mut inner = self.inner.lock();
        if inner.state != dat_ep_state::DAT_EP_STATE_COMPLETION_PENDING || inner.released {
            return false;
        }
        attach(&mut inner, &link);
        inner.link = Some(link);
        inner.remote_addr = Some(Box::new(sockaddr_in(remote)));
        inner.remote_port = u64::from(remote.port());
        true
    }

    /// A UD EP's datagram queue pair is ready: its link carries every post from now on
    /// (the EP's state stays as it is: a UD EP has no connection).
    pub fn datagram_ready(&self, link: Arc<dyn Link>) {
        let mut inner = self.inner.lock();
        attach(&mut inner, &link);
        inner.link = Some(link);
    }

    /// A pending connection is up: CONNECTED and the ESTABLISHED event. The active side hands
    /// its link and peer here. False when the EP was disconnected or freed meanwhile.
    pub fn established(
        &self,
        link: Option<(Arc<dyn Link>, std::net::SocketAddrV4)>,
        private_data: &[u8],
    ) -> bool {
        {
            let mut inner = self.inner.lock();
            let Some(next) = ep_state::settle(inner.state, ep_state::Outcome::Established) else {
                return false;
            };
            if inner.released {
                return false;
            }
            let side = if inner.state == dat_ep_state::DAT_EP_STATE_ACTIVE_CONNECTION_PENDING {
                dat_ia_counters::DCNT_IA_CM_ACTIVE_EST
            } else {
                dat_ia_counters::DCNT_IA_CM_PASSIVE_EST
            };
            self.ia.counters.bump(side as u32);
            inner.state = next;
            inner.closing = false;
            if let Some((link, remote)) = link {
                attach(&mut inner, &link);
                inner.link = Some(link);
                inner.remote_addr = Some(Box::new(sockaddr_in(remote)));
            }
        }
        self.connection_event(
            dat_event_number::DAT_CONNECTION_EVENT_ESTABLISHED,
            private_data,
        );
        true
    }

    /// A connection (or an attempt at one) is over: DISCONNECTED, every posted DTO flushed,
    /// and the event: `failure` for a pending attempt, else DISCONNECTED when orderly and
    /// BROKEN when not.
    ///
    /// An EP of an SRQ whose connection was up also posts `DAT_ASYNC_ERROR_EP_BROKEN` to its
    /// IA's async EVD, after the connection event: OpenFabrics reports the QP's "last work
    /// request reached" so, and programs (`dtestsrq`) wait for it before freeing the EP.
    pub fn ended(&self, end: End, failure: dat_event_number, private_data: &[u8]) {
        self.end_of(None, end, failure, private_data);
    }

    /// [`Ep::ended`] for the end of connection `link` (the provider's object behind the EP's
    /// `Link`): nothing when it is not the EP's link (one the EP never took, or let go).
    pub fn link_ended(
        &self,
        link: *const (),
        end: End,
        failure: dat_event_number,
        private_data: &[u8],
    ) {
        self.end_of(Some(link), end, failure, private_data);
    }

    fn end_of(
        &self,
        only_link: Option<*const ()>,
        end: End,
        failure: dat_event_number,
        private_data: &[u8],
    ) {
        let (event, gone, last_of_srq) = {
            let mut inner = self.inner.lock();
            if let Some(link) = only_link {
                let ours = inner
                    .link
                    .as_ref()
                    .is_some_and(|l| std::ptr::addr_eq(Arc::as_ptr(l), link));
                if !ours {
                    return;
                }
            }
            let pending = matches!(
                inner.state,
                dat_ep_state::DAT_EP_STATE_ACTIVE_CONNECTION_PENDING
                    | dat_ep_state::DAT_EP_STATE_COMPLETION_PENDING
            );
            // The link is there until the first end of an established connection (an abrupt
            // disconnect has made the EP DISCONNECTED already).
            let last_of_srq =
                !pending && inner.link.is_some() && inner.srq.is_some() && !inner.released;
            let event = if pending {
                failure
            } else if end == End::Orderly || inner.closing {
                dat_event_number::DAT_CONNECTION_EVENT_DISCONNECTED
            } else {
                dat_event_number::DAT_CONNECTION_EVENT_BROKEN
            };
            inner.state = ep_state::end(inner.state);
            inner.pending_connect = None;
            let gone = inner.link.take().map(|link| (link, dto_evds(&inner)));
            (event, gone, last_of_srq)
        };
        if let Some((link, evds)) = gone {
            detach(&link, &evds);
        }
        self.flush_all();
        self.connection_event(event, private_data);
        if last_of_srq {
            if let Some(evd) = self.ia.async_evd_object() {
                evd.post_async_error(dat_event_number::DAT_ASYNC_ERROR_EP_BROKEN, self.handle());
            }
        }
    }

    /// Reports a finished request: errors always, success only when signalled.
    pub fn complete_request(
        &self,
        request: &Request,
        status: dat_dto_completion_status,
        length: u32,
    ) {
        if !request.report.reports(status) {
            return;
        }
        let evd = self
            .inner
            .lock()
            .request_evd
            .as_ref()
            .map(|e| e.arc().clone());
        self.complete_request_on(evd.as_deref(), request, status, length);
    }

    /// [`Ep::complete_request`] on the request EVD the caller took from the EP (under its
    /// lock, where the caller holds it).
    pub fn complete_request_on(
        &self,
        evd: Option<&Evd>,
        request: &Request,
        status: dat_dto_completion_status,
        length: u32,
    ) {
        self.complete_request_catching(evd, request, status, length, &mut Catch::none());
    }

    /// [`Ep::complete_request_on`], into the dequeue's out-parameter that `catch` lends if it
    /// may.
    pub fn complete_request_catching(
        &self,
        evd: Option<&Evd>,
        request: &Request,
        status: dat_dto_completion_status,
        length: u32,
        catch: &mut Catch<'_>,
    ) {
        let Some(evd) = evd.filter(|_| request.report.reports(status)) else {
            return;
        };
        let cookie = DAT_DTO_COOKIE::from_u64(request.cookie);
        let event = match (request.bind, request.extended) {
            (Some(rmr), _) => super::rmr::bind_event(rmr.get() as DAT_RMR_HANDLE, cookie, status),
            (None, Some(op)) => {
                extension::request_event(self.handle(), request.cookie, status, length, op)
            }
            (None, None) => self.dto_event(cookie, status, request.operation, length),
        };
        request.report.deliver_catching(evd, event, status, catch);
    }

    /// Reports a finished receive (a UD EP's as the IB extension's).
    pub fn complete_recv(&self, cookie: u64, status: dat_dto_completion_status, length: u32) {
        let (evd, datagram) = {
            let inner = self.inner.lock();
            (
                inner.recv_evd.as_ref().map(|e| e.arc().clone()),
                Ep::is_datagram(&inner),
            )
        };
        if datagram {
            self.complete_datagram_on(evd.as_deref(), cookie, status, length);
        } else {
            self.complete_recv_on(evd.as_deref(), cookie, status, length);
        }
    }

    /// [`Ep::complete_recv`] on the receive EVD the caller took from the EP (under its lock,
    /// where the caller holds it).
    pub fn complete_recv_on(
        &self,
        evd: Option<&Evd>,
        cookie: u64,
        status: dat_dto_completion_status,
        length: u32,
    ) {
        self.complete_recv_catching(evd, cookie, status, length, &mut Catch::none());
    }

    /// [`Ep::complete_recv_on`], into the dequeue's out-parameter that `catch` lends if it
    /// may.
    pub fn complete_recv_catching(
        &self,
        evd: Option<&Evd>,
        cookie: u64,
        status: dat_dto_completion_status,
        length: u32,
        catch: &mut Catch<'_>,
    ) {
        self.finish_recv(evd, cookie, status, length, true, catch);
    }

    /// Reports a receive its message filled, `length` bytes: a notification event or not, as
    /// the receive asked (`recv.wakes`) of a message sent `solicited` (see
    /// [`RecvWake`](super::srq::RecvWake)).
    pub fn complete_received(
        &self,
        evd: Option<&Evd>,
        recv: &PostedRecv,
        length: u32,
        solicited: bool,
        catch: &mut Catch<'_>,
    ) {
        let success = dat_dto_completion_status::DAT_DTO_SUCCESS;
        let notify = recv.wakes.wakes(solicited);
        self.finish_recv(evd, recv.cookie, success, length, notify, catch);
    }

    /// [`Ep::complete_received`] for a receive that may have failed (`status`): a failure
    /// wakes.
    pub fn complete_recv_with(
        &self,
        evd: Option<&Evd>,
        recv: &PostedRecv,
        status: dat_dto_completion_status,
        length: u32,
        solicited: bool,
        catch: &mut Catch<'_>,
    ) {
        if status == dat_dto_completion_status::DAT_DTO_SUCCESS {
            self.complete_received(evd, recv, length, solicited, catch);
        } else {
            self.finish_recv(evd, recv.cookie, status, length, true, catch);
        }
    }

    fn finish_recv(
        &self,
        evd: Option<&Evd>,
        cookie: u64,
        status: dat_dto_completion_status,
        length: u32,
        notify: bool,
        catch: &mut Catch<'_>,
    ) {
        if status == dat_dto_completion_status::DAT_DTO_SUCCESS {
            self.counters.bump(dat_ep_counters::DCNT_EP_RECV as u32);
            self.counters
                .add(dat_ep_counters::DCNT_EP_RECV_DATA as u32, u64::from(length));
        }
        if let Some(evd) = evd {
            // A full EVD reports its own overflow on the async EVD; the completion is lost as
            // a CQ overrun loses it.
            let event = self.dto_event(
                DAT_DTO_COOKIE::from_u64(cookie),
                status,
                dat_dtos::DAT_DTO_RECEIVE,
                length,
            );
            let _ = evd.post_catching(event, notify, catch);
        }
    }

    /// Reports a UD EP's receive (a datagram of `length` bytes with its routing header), on
    /// the receive EVD the caller took from the EP.
    pub fn complete_datagram_on(
        &self,
        evd: Option<&Evd>,
        cookie: u64,
        status: dat_dto_completion_status,
        length: u32,
    ) {
        if status == dat_dto_completion_status::DAT_DTO_SUCCESS {
            self.counters.bump(dat_ep_counters::DCNT_EP_RECV_UD as u32);
            self.counters.add(
                dat_ep_counters::DCNT_EP_RECV_UD_DATA as u32,
                u64::from(length),
            );
        }
        if let Some(evd) = evd {
            let _ = evd.post(extension::datagram_event(
                self.handle(),
                cookie,
                status,
                length,
            ));
        }
    }

    /// Whether the EP is the IB extension's unreliable datagram EP.
    pub fn is_datagram(inner: &EpInner) -> bool {
        inner.attr.service_type == dat_ib_service_type::DAT_IB_SERVICE_TYPE_UD as DAT_SERVICE_TYPE
    }

    /// Reports the receive an RDMA write with immediate `data` of `length` bytes consumed, on
    /// the receive EVD the caller took from the EP.
    pub fn complete_immediate_on(
        &self,
        evd: Option<&Evd>,
        cookie: u64,
        status: dat_dto_completion_status,
        length: u32,
        data: u32,
    ) {
        if status == dat_dto_completion_status::DAT_DTO_SUCCESS {
            self.counters
                .bump(dat_ep_counters::DCNT_EP_RECV_RDMA_IMM as u32);
            self.counters.add(
                dat_ep_counters::DCNT_EP_RECV_RDMA_IMM_DATA as u32,
                u64::from(length),
            );
        }
        if let Some(evd) = evd {
            let _ = evd.post(extension::immediate_event(
                self.handle(),
                cookie,
                status,
                length,
                data,
            ));
        }
    }

    /// The EP's protection zone.
    pub fn pz(&self) -> Option<Arc<Pz>> {
        self.inner.lock().pz.as_ref().map(|p| p.arc().clone())
    }

    /// Flushes every posted receive and outstanding request (the connection is gone), and
    /// drops the messages that waited for a receive.
    pub fn flush_all(&self) {
        let _in_order = self.receiving.lock();
        let (requests, recvs) = {
            let mut inner = self.inner.lock();
            inner.wire.clear();
            let taken = (
                inner.outstanding.take_all(),
                std::mem::take(&mut inner.recvs),
            );
            inner.size_queues(); // for a connection after this one
            taken
        };
        for r in &requests {
            self.complete_request(r, dat_dto_completion_status::DAT_DTO_ERR_FLUSHED, 0);
        }
        for r in recvs {
            self.complete_recv(r.cookie, dat_dto_completion_status::DAT_DTO_ERR_FLUSHED, 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inner(requests: i32, recvs: i32) -> EpInner {
        let mut attr = DAT_EP_ATTR::zeroed();
        attr.max_request_dtos = requests;
        attr.max_recv_dtos = recvs;
        EpInner::new(
            Parts {
                pz: None,
                recv_evd: None,
                request_evd: None,
                connect_evd: None,
                srq: None,
            },
            attr,
            EpWire::new(Box::new(crate::objects::seam::NoEpState)),
        )
    }

    #[test]
    fn rdma_segment_counts_not_given_are_the_requests() {
        let own = Limits {
            max_read_iov: 3,
            ..Limits::TABLE
        };
        let mut a = DAT_EP_ATTR::zeroed();
        a.service_type = dat_service_type::DAT_SERVICE_TYPE_RC as DAT_SERVICE_TYPE;
        a.max_request_iov = 4;
        let c = check_attr(&a, 6, false, &own).unwrap();
        // The read's within what the transport scatters into.
        assert_eq!((c.max_rdma_write_iov, c.max_rdma_read_iov), (4, 3));
        (a.max_rdma_write_iov, a.max_rdma_read_iov) = (1, 2);
        let c = check_attr(&a, 6, false, &own).unwrap();
        assert_eq!((c.max_rdma_write_iov, c.max_rdma_read_iov), (1, 2));
    }

    #[test]
    fn a_full_queue_of_posts_fits_in_the_room_made_for_it() {
        let mut i = inner(100, 60);
        let (requests, recvs) = (i.outstanding.capacity(), i.recvs.capacity());
        assert!(requests >= 100 && recvs >= 60);
        for round in 0..3u64 {
            for n in 0..100 {
                i.outstanding.push(Request::test_send(round * 100 + n));
            }
            for n in 0..60 {
                i.recvs.push_back(PostedRecv {
                    cookie: n,
                    segments: Default::default(),
                    wakes: Default::default(),
                });
            }
            assert_eq!(
                (i.outstanding.capacity(), i.recvs.capacity()),
                (requests, recvs)
            );
            i.recvs.clear();
            i.outstanding.clear();
        }
        // Larger limits (dat_ep_modify) make more room at once.
        i.attr.max_request_dtos = 500;
        i.outstanding.push(Request::test_send(0));
        i.size_queues();
        assert!(i.outstanding.capacity() >= 500);
    }

    #[test]
    fn a_request_in_flight_is_kept_in_five_words() {
        // Every post records one and every completion takes one back: no operands (an
        // atomic's, a datagram's address) ride along, and the copy is a few moves, no memcpy.
        assert!(
            std::mem::size_of::<Request>() <= 40,
            "{}",
            std::mem::size_of::<Request>()
        );
    }
}
