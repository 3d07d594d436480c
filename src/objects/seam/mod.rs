//! The seam between the objects and the providers below them, owned by the objects: the
//! traits a provider implements and the neutral types both sides use. A provider (a folder of
//! `src/transport`) imports them from here and is never named by the objects or the API; the
//! one table that knows the providers, `transport::providers`, picks an IA's as the API opens
//! it.
//!
//! A [`Transport`] per IA makes connections; each connection is a [`Link`]. The rules of the
//! specification that need no wire (states, the checks of a call's arguments and segments,
//! connection events, flushes) are kept above the seam, in `api` and `objects`, for every
//! provider. A provider adds the limits and refusals only it knows (the segments a frame or a
//! work request holds, what a device refuses), carries requests out and reports how they
//! ended; where no device does it, the provider also applies the objects' region checks to
//! what a peer asks of our memory and picks the status of the failures its peer causes.
//!
//! What a provider keeps in each EP is its own ([`EpTransportState`], made by its transport
//! with the EP and held in [`EpWire`]); a provider that must hear of regions as they are
//! registered and released observes them ([`regions`]).

mod ep_wire;
pub mod regions;

pub use ep_wire::{EpTransportState, EpWire, NoEpState};

use std::any::Any;
use std::io;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::MutexGuard;

use crate::abi::DAT_IA_HANDLE;
use crate::error::{DatError, DatResult, Type};
use crate::objects::ep::{Close, Ep, EpInner, Outgoing, Posted};
use crate::objects::evd::Evd;

/// What a transport keeps for one of the objects (a protection domain, a memory
/// registration, a completion queue): opaque to them, released with them.
pub type Resource = Arc<dyn Any + Send + Sync>;

/// A memory registration a transport made: the contexts the consumer gets.
pub struct Registration {
    pub lmr_context: u32,
    pub rmr_context: u32,
    pub keep: Resource,
}

/// What an IA's transport does for its objects: connection management (listen, connect, and
/// through [`ConnRequest`] accept and reject; what it connects is a [`Link`] it hands the EP),
/// and the resources some transports keep for PZs, LMRs and EVDs (none for TCP).
pub trait Transport: Send + Sync {
    /// Listens at `ip:port` (0: any free port) for requests to `conn_qual` (0: the port
    /// bound), handing each to `on_request`. Dropping the listener stops it; a port in use is
    /// `ErrorKind::AddrInUse`.
    fn listen(
        &self,
        ip: Ipv4Addr,
        port: u16,
        conn_qual: u64,
        on_request: OnRequest,
    ) -> io::Result<Box<dyn Listening>>;
    /// Starts connecting `ep` (ACTIVE_CONNECTION_PENDING) to `conn_qual` at `remote`, as its
    /// connect number `attempt`: the EP is told ESTABLISHED, or the failure's connection
    /// event, later, through [`Ep::attempt_established`] and [`Ep::attempt_failed`] with that
    /// number (an attempt the EP gave up hears nothing). The provider hands the EP a way to
    /// cancel it ([`Ep::attempt_started`]). `timeout` None: no time limit.
    fn connect(
        &self,
        ep: Arc<Ep>,
        attempt: u64,
        remote: SocketAddrV4,
        conn_qual: u64,
        private_data: Vec<u8>,
        timeout: Option<Duration>,
    ) -> DatResult;
    /// A PZ's protection domain.
    fn protection_domain(&self) -> DatResult<Option<Resource>> {
        Ok(None)
    }
    /// Registers an LMR's memory in the PZ's domain (`privileges`: DAT_MEM_PRIV flags), memory
    /// the objects found mapped, readable and (where `writable`) writable; None: the objects
    /// make the contexts themselves. Memory that changed since is refused as the objects
    /// refuse it (`lmr::MemoryRefusal`).
    fn register_memory(
        &self,
        _domain: Option<&Resource>,
        _address: u64,
        _length: u64,
        _privileges: u32,
        _writable: bool,
    ) -> DatResult<Option<Registration>> {
        Ok(None)
    }
    /// A DTO EVD's completion queue; the transport attaches what polls it to the EVD.
    fn completion_queue(&self, _evd: &Arc<Evd>) -> DatResult<Option<Resource>> {
        Ok(None)
    }
    /// The EVD is resized to `qlen`: its completion queue follows.
    fn resize_completion_queue(&self, _evd: &Arc<Evd>, _qlen: usize) -> DatResult {
        Ok(())
    }
    /// The address the transport found for the IA, where its parameters name no interface
    /// or address (a device and port).
    fn local_address(&self) -> Option<Ipv4Addr> {
        None
    }
    /// The provider-specific attributes this transport's IAs at `ip` report beside those
    /// every IA reports, named and formatted as OpenFabrics' providers report them (the device,
    /// its MTU, the port).
    fn provider_specific(&self, ip: Ipv4Addr) -> Vec<(&'static str, String)>;
    /// Whether the IB extension's atomics (fetch-and-add, compare-and-swap) run on it.
    fn atomics(&self) -> bool {
        true
    }
    /// The segments, queue depths and sizes its EPs carry (`dat_ia_query`, and what an EP's
    /// attributes may ask).
    fn limits(&self) -> crate::objects::limits::Limits {
        crate::objects::limits::Limits::TABLE
    }
    /// How many shared receive queues an IA may make, and how many receives each holds;
    /// None: none work on this transport.
    fn srq_limits(&self) -> Option<(i32, i32)> {
        Some((
            crate::objects::limits::MAX_SRQS,
            crate::objects::limits::MAX_RECV_PER_SRQ,
        ))
    }
    /// An SRQ's queue in the transport, in the PZ's domain, for `max_recv` receives of
    /// `max_iov` segments each; None: the objects keep the SRQ's receives themselves and hand
    /// them to its EPs' links as messages arrive (TCP).
    fn shared_receive_queue(
        &self,
        _domain: Option<&Resource>,
        _max_recv: u32,
        _max_iov: u32,
    ) -> DatResult<Option<Arc<dyn SharedQueue>>> {
        Ok(None)
    }
    /// IAs whose transports give the same value here may use each other's EVDs (every TCP
    /// IA of the process; the verbs IAs of one device, whose CQs any of its QPs may use).
    fn evd_domain(&self) -> usize {
        1
    }
    /// Whether peers' accesses are checked by us against our regions (TCP), so an RMR's bound
    /// window is ours to keep; false where the device checks them (verbs: a memory window,
    /// made by `memory_window` and bound by `Link::bind_window`).
    fn checks_remote_access(&self) -> bool {
        true
    }
    /// A memory window in the PZ's domain, for an RMR that binds on a connected EP.
    fn memory_window(&self, _domain: Option<&Resource>) -> DatResult<Resource> {
        Err(DatError::not_implemented())
    }
    /// Whether the IB extension's unreliable datagram (UD) EPs run on it.
    fn datagrams(&self) -> bool {
        false
    }
    /// Readies a UD EP as it is made: its datagram queue pair, which carries its posts from
    /// now on as its link ([`Ep::datagram_ready`]).
    fn datagram_endpoint(&self, _ep: &Arc<Ep>) -> DatResult {
        Err(DatError::bare(Type::DAT_MODEL_NOT_SUPPORTED))
    }
    /// Starts a UD EP's exchange with the service point of `conn_qual` at `remote` (its
    /// port): the EP is told
    /// how to reach the peer's EP (DAT_IB_UD_CONNECTION_EVENT_ESTABLISHED), or the reject or
    /// error event, later; the EP's state does not change.
    fn connect_datagram(
        &self,
        _ep: Arc<Ep>,
        _remote: SocketAddrV4,
        _conn_qual: u64,
        _private_data: Vec<u8>,
    ) -> DatResult {
        Err(DatError::bare(Type::DAT_MODEL_NOT_SUPPORTED))
    }
    /// Destroys address handle `ah`; false when it names none of this transport's.
    fn free_address_handle(&self, _ah: usize) -> bool {
        false
    }
    /// The device counter of `kind` (`dat_ib_start_counter`) kept in file `name` (None: the
    /// transport has no such counter).
    fn device_counter(&self, _kind: crate::abi::dat_ia_counter_type, _name: &str) -> Option<u64> {
        None
    }
    /// What the transport keeps in an EP of this IA, made with the EP (see [`EpWire`]).
    fn endpoint_state(&self) -> Box<dyn EpTransportState> {
        Box::new(NoEpState)
    }
    /// An EP of this IA was made: a transport whose connections need objects of their own
    /// (a QP) may make them now, so a connection does not wait for them.
    fn endpoint_created(&self, _ep: &Arc<Ep>) {}
    /// The IA's async EVD, where failures of what the IA runs on are posted (a device's,
    /// on RDMA; a TCP IA has none that is not a connection's).
    fn report_async_errors_to(&self, _ia: DAT_IA_HANDLE, _evd: &Arc<Evd>) {}
}

/// An active connect under way in a provider, which its EP may give up (`dat_ep_disconnect`
/// while it is pending): cancelled, it reports nothing more, and what it holds toward the peer
/// (a socket, an rdma-cm id) goes, so a peer that accepts later sees its connection fail.
pub trait PendingConnect: Send + Sync {
    fn cancel(&self);
}

/// An SRQ's queue of receives kept by the transport (a verbs SRQ): receives go to it as they
/// are posted, and return through the completions of the EPs that consumed them.
pub trait SharedQueue: Send + Sync {
    /// Posts a receive: `cookie` comes back in the completion of the EP that takes it.
    fn post_recv(&self, cookie: u64, segments: &[crate::abi::DAT_LMR_TRIPLET]) -> DatResult;
    /// Receives posted and not yet taken by a message.
    fn posted(&self) -> usize;
    /// The queue is to hold `max_recv` receives.
    fn resize(&self, max_recv: u32) -> DatResult;
    /// The transport's own type, for the transport's use.
    fn as_any(&self) -> &dyn Any;
}

/// Where a listener hands its requests.
pub type OnRequest = Box<dyn Fn(Box<dyn ConnRequest>) + Send + Sync>;

/// A bound listener; dropping it stops listening.
pub trait Listening: Send + Sync {
    fn port(&self) -> u16;
}

/// A connection request waiting for the consumer's accept or reject.
pub trait ConnRequest: Send {
    fn remote(&self) -> SocketAddrV4;
    /// A UD EP's request (the IB extension's UD connection request), for a UD EP to accept.
    fn datagram(&self) -> bool {
        false
    }
    /// The private data an accept of it may carry.
    fn accept_data_limit(&self) -> usize {
        crate::objects::limits::MAX_PRIVATE_DATA_SIZE as usize
    }
    fn private_data(&self) -> &[u8];
    /// Accepts onto `ep` (COMPLETION_PENDING): ESTABLISHED follows when the peer confirms,
    /// ACCEPT_COMPLETION_ERROR when it does not in time.
    fn accept(self: Box<Self>, ep: Arc<Ep>, private_data: &[u8]) -> DatResult;
    /// Refuses the request: the requester sees PEER_REJECTED with this private data.
    fn reject(self: Box<Self>, private_data: &[u8]);
}

/// A source of events that can make progress in the consumer's thread (a connection whose
/// incoming frames are handled as the consumer polls or waits), without blocking.
pub trait Progress: Send + Sync {
    fn progress(&self);
    /// [`Progress::progress`] for a dequeue of an EVD this source feeds, which lends its
    /// out-parameter (`Catch`) to the first event completed for that EVD; a source that
    /// cannot hand events over ignores it (they queue).
    fn progress_catching(&self, _catch: &mut crate::objects::evd::Catch<'_>) {
        self.progress();
    }
    /// The consumer's thread is about to sleep: whatever it left for later goes out, and the
    /// source's own threads take over.
    fn flush(&self) {}
    /// Someone now waits for the events without polling and without a thread asleep in the
    /// library (a CNO was attached): a source that reports only to sleepers reports now.
    fn unpolled_waiter(&self) {}
    /// The DTO streams that feed the EVD changed (a connection came or went; see
    /// `Evd::solicited_only`): a source that reports to sleepers decides again which
    /// completions it reports.
    fn streams_changed(&self) {}
}

/// One connection of an EP, as the objects use it.
pub trait Link: Progress {
    /// Ends the connection. `Close::Graceful` waits first until every request posted before
    /// it has completed (the EP is DISCONNECT_PENDING, and new requests are refused, so none
    /// joins them), then closes as the transport closes; an abrupt close may come meanwhile,
    /// and ends the connection at once.
    fn close(&self, how: Close);
    /// Sends a request DTO, recorded in `EpInner::outstanding` until its completion. The
    /// caller hands over the EP's lock, under which it checked the request.
    fn post(
        &self,
        ep: &Ep,
        inner: MutexGuard<'_, EpInner>,
        request: &Outgoing<'_>,
    ) -> DatResult<Posted>;
    /// A receive was posted while messages waited for one ([`EpTransportState::messages_waiting`]): they
    /// land now.
    fn receive_posted(&self, ep: &Ep);
    /// Binds a memory window (`Transport::memory_window`) on the EP's send queue, recorded in
    /// `EpInner::outstanding` as `bind.request` until its completion; returns the window's new
    /// key. Transports that check peers' accesses themselves keep their windows above (TCP).
    fn bind_window(&self, _inner: MutexGuard<'_, EpInner>, _bind: &WindowBind) -> DatResult<u32> {
        Err(DatError::not_implemented())
    }
}

/// A bind of an RMR's memory window, as the objects hand it to the transport.
pub struct WindowBind {
    pub window: Resource,
    /// The LMR's registration it exposes part of; None: the window is unbound.
    pub region: Option<Resource>,
    /// Whether the window is bound now (a type 2 window is invalidated before it binds again).
    pub bound: bool,
    pub address: u64,
    pub length: u64,
    /// DAT_MEM_PRIV flags (remote ones).
    pub privileges: u32,
    /// Its record among the EP's outstanding requests (`bind` names the RMR; `report`:
    /// what its completion tells the consumer).
    pub request: crate::objects::ep::Request,
}
