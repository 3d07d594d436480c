//! rdma-cm for the verbs transport: one event channel per process, watched by the progress
//! engine; every cm id reports its events to the handler it was made for.
//!
//! An event's data is copied out and the event acknowledged before its handler runs, so a
//! handler may destroy ids (rdma_destroy_id waits for the acknowledgement of their events).

use std::io;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::RawFd;
use std::sync::{Arc, OnceLock, Weak};

use parking_lot::Mutex;
use rdma_mummy_sys as ibv;
use std::collections::HashMap;

use crate::runtime::engine::{Engine, Source, Token};
use crate::runtime::sys::{from_sockaddr_in, sockaddr_in};

pub use ibv::rdma_cm_event_type as EventType;

/// What an id's events go to; called on the engine's thread.
pub trait CmHandler: Send + Sync {
    fn on_cm_event(&self, event: CmEvent);
}

/// One rdma-cm event, copied out of the library's.
pub struct CmEvent {
    pub kind: EventType::Type,
    pub status: i32,
    pub private_data: Vec<u8>,
    /// The peer's read depths (connect request, established): its responder resources and
    /// initiator depth.
    pub responder_resources: u8,
    pub initiator_depth: u8,
    /// A connect request's own id, now the handler's to accept or reject.
    pub request: Option<CmId>,
    /// A datagram id's answer (ESTABLISHED): how to reach the QP that answered.
    pub datagram: Option<DatagramReply>,
}

/// What a datagram service's answer tells its requester: the address vector to its port
/// and its QP.
#[derive(Clone, Copy)]
pub struct DatagramReply {
    pub ah_attr: ibv::ibv_ah_attr,
    pub qp_num: u32,
    pub qkey: u32,
}

/// The connection parameters of a connect or accept.
#[derive(Clone, Debug, Default)]
pub struct ConnParam {
    pub private_data: Vec<u8>,
    pub responder_resources: u8,
    pub initiator_depth: u8,
    pub retry_count: u8,
    pub rnr_retry_count: u8,
    /// A datagram accept: the QP the requester is to send to.
    pub qp_num: u32,
}

#[derive(Default)]
struct Handlers {
    by_key: HashMap<usize, Weak<dyn CmHandler>>,
    next: usize,
}

/// The process's event channel and the handlers its ids report to.
struct Channel {
    raw: *mut ibv::rdma_event_channel,
    /// By key, the context of the ids: keys are never reused, so an event of an id whose
    /// handler left (a request of a closed listener) reaches nobody else.
    handlers: Mutex<Handlers>,
    token: OnceLock<Token>,
    engine: Arc<Engine>,
}

// SAFETY: the channel pointer is used only through rdma-cm calls, which are thread-safe; the
// handler table is under its lock.
unsafe impl Send for Channel {}
// SAFETY: as above.
unsafe impl Sync for Channel {}

impl Channel {
    fn fd(&self) -> RawFd {
        // SAFETY: `raw` is a live event channel for the process's lifetime.
        unsafe { (*self.raw).fd }
    }

    /// The process's channel, made and registered with the engine at first use.
    fn get() -> io::Result<&'static Arc<Channel>> {
        static CHANNEL: OnceLock<Result<Arc<Channel>, i32>> = OnceLock::new();
        let made = CHANNEL.get_or_init(|| {
            // SAFETY: no arguments; NULL on failure with errno set.
            let raw = unsafe { ibv::rdma_create_event_channel() };
            if raw.is_null() {
                return Err(io::Error::last_os_error()
                    .raw_os_error()
                    .unwrap_or(libc::ENODEV));
            }
            let channel = Arc::new(Channel {
                raw,
                handlers: Mutex::new(Handlers::default()),
                token: OnceLock::new(),
                engine: Engine::get(),
            });
            let fd = channel.fd();
            // SAFETY: `fd` is the channel's open descriptor; O_NONBLOCK makes rdma_get_cm_event
            // return EAGAIN instead of blocking the engine.
            unsafe {
                let flags = libc::fcntl(fd, libc::F_GETFL);
                libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
            }
            let token = channel
                .engine
                .register(fd, channel.clone())
                .map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))?;
            let _ = channel.token.set(token);
            channel.engine.arm(token, fd, libc::EPOLLIN as u32);
            Ok(channel)
        });
        made.as_ref().map_err(|e| io::Error::from_raw_os_error(*e))
    }

    fn add(&self, handler: Weak<dyn CmHandler>) -> usize {
        let mut h = self.handlers.lock();
        h.next += 1;
        let key = h.next;
        h.by_key.insert(key, handler);
        key
    }

    fn remove(&self, key: usize) {
        self.handlers.lock().by_key.remove(&key);
    }

    fn handler(&self, key: usize) -> Option<Arc<dyn CmHandler>> {
        self.handlers
            .lock()
            .by_key
            .get(&key)
            .and_then(Weak::upgrade)
    }

    /// Takes every waiting event, acknowledges it, and hands its copy to its handler.
    fn drain(&self) {
        loop {
            let mut event: *mut ibv::rdma_cm_event = std::ptr::null_mut();
            // SAFETY: the channel is live; on success `event` points to an event we ack below.
            if unsafe { ibv::rdma_get_cm_event(self.raw, &mut event) } != 0 {
                break; // EAGAIN: none left
            }
            // SAFETY: `event` is the live event just returned, read before it is acknowledged.
            let (key, copy) = unsafe { copy_event(&*event) };
            // SAFETY: acknowledged once, after its last use.
            unsafe { ibv::rdma_ack_cm_event(event) };
            match self.handler(key) {
                Some(h) => h.on_cm_event(copy),
                // Nobody listens any more: a request is refused (its id dropped rejects it).
                None => drop(copy),
            }
        }
    }
}

impl Source for Channel {
    fn on_event(self: Arc<Self>, _events: u32) {
        self.drain();
        if let Some(token) = self.token.get() {
            self.engine.arm(*token, self.fd(), libc::EPOLLIN as u32);
        }
    }
}

/// Copies an event out; the handler key is the context of the id it is for (a connect
/// request's id carries its listener's).
///
/// # Safety
/// `e` is a live event not yet acknowledged.
unsafe fn copy_event(e: &ibv::rdma_cm_event) -> (usize, CmEvent) {
    // SAFETY: the event's id is live until the event is acknowledged.
    let datagram_id = unsafe { (*e.id).ps } == ibv::rdma_port_space::RDMA_PS_UDP;
    // A datagram id's events carry datagram parameters, others connection parameters.
    let conn = if datagram_id {
        None
    } else {
        // SAFETY: the union member the id's port space names.
        Some(unsafe { e.param.conn })
    };
    let (data, len) = match conn {
        Some(conn) => (conn.private_data, conn.private_data_len),
        // SAFETY: as above.
        None => unsafe { (e.param.ud.private_data, e.param.ud.private_data_len) },
    };
    let private_data = if data.is_null() || len == 0 {
        Vec::new()
    } else {
        // SAFETY: rdma-cm hands `len` bytes with the event.
        unsafe { std::slice::from_raw_parts(data as *const u8, len as usize) }.to_vec()
    };
    let datagram = (datagram_id && e.event == EventType::RDMA_CM_EVENT_ESTABLISHED).then(|| {
        // SAFETY: a datagram id's event: the union member its port space names is `ud`.
        let ud = unsafe { e.param.ud };
        DatagramReply {
            ah_attr: ud.ah_attr,
            qp_num: ud.qp_num,
            qkey: ud.qkey,
        }
    });
    // SAFETY: the event's id is live until the event is acknowledged.
    let key = unsafe { (*e.id).context } as usize;
    let request = (e.event == EventType::RDMA_CM_EVENT_CONNECT_REQUEST).then(|| CmId {
        raw: e.id,
        key: Mutex::new(None),
    });
    let copy = CmEvent {
        kind: e.event,
        status: e.status,
        private_data,
        responder_resources: conn.map_or(0, |c| c.responder_resources),
        initiator_depth: conn.map_or(0, |c| c.initiator_depth),
        request,
        datagram,
    };
    (key, copy)
}

/// An rdma-cm id; destroyed when dropped (a connect request never accepted is rejected by
/// its destruction).
pub struct CmId {
    raw: *mut ibv::rdma_cm_id,
    /// Its own handler's key, released with it (a request's id has none until `set_handler`).
    key: Mutex<Option<usize>>,
}

// SAFETY: rdma-cm ids may be used from any thread; we never use one from two at once without
// rdma-cm's own locking (its calls are thread-safe).
unsafe impl Send for CmId {}
// SAFETY: as above.
unsafe impl Sync for CmId {}

fn check(rc: i32) -> io::Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

impl CmId {
    /// A new id (reliable connected, `RDMA_PS_TCP`) whose events go to `handler`.
    pub fn new(handler: Weak<dyn CmHandler>) -> io::Result<CmId> {
        Self::in_space(handler, ibv::rdma_port_space::RDMA_PS_TCP)
    }

    /// A new datagram id (`RDMA_PS_UDP`: its QP is unreliable datagram, its connect a
    /// service ID resolution) whose events go to `handler`.
    pub fn datagram(handler: Weak<dyn CmHandler>) -> io::Result<CmId> {
        Self::in_space(handler, ibv::rdma_port_space::RDMA_PS_UDP)
    }

    fn in_space(
        handler: Weak<dyn CmHandler>,
        space: ibv::rdma_port_space::Type,
    ) -> io::Result<CmId> {
        let channel = Channel::get()?;
        let key = channel.add(handler);
        let mut raw: *mut ibv::rdma_cm_id = std::ptr::null_mut();
        // SAFETY: the channel is live; `raw` receives the new id; the context is our key.
        let rc =
            unsafe { ibv::rdma_create_id(channel.raw, &mut raw, key as *mut libc::c_void, space) };
        if rc != 0 {
            let e = io::Error::last_os_error();
            channel.remove(key);
            return Err(e);
        }
        Ok(CmId {
            raw,
            key: Mutex::new(Some(key)),
        })
    }

    /// A connect request's id reports to `handler` from now on.
    pub fn set_handler(&self, handler: Weak<dyn CmHandler>) -> io::Result<()> {
        let channel = Channel::get()?;
        let key = channel.add(handler);
        // SAFETY: the id is live; its context is ours to set.
        unsafe { (*self.raw).context = key as *mut libc::c_void };
        if let Some(old) = self.key.lock().replace(key) {
            channel.remove(old);
        }
        Ok(())
    }

    pub fn raw(&self) -> *mut ibv::rdma_cm_id {
        self.raw
    }

    /// The device context the id is bound to (after bind, address resolution, or a request).
    pub fn verbs(&self) -> *mut ibv::ibv_context {
        // SAFETY: the id is live.
        unsafe { (*self.raw).verbs }
    }

    /// The device port the id is bound to.
    pub fn port_num(&self) -> u8 {
        // SAFETY: the id is live.
        unsafe { (*self.raw).port_num }
    }

    /// Binds the id to a local address (port 0: one rdma-cm picks), and so to the device
    /// that carries it.
    pub fn bind(&self, local: SocketAddrV4) -> io::Result<()> {
        let mut sin = sockaddr_in(local);
        // SAFETY: the id is live and `sin` a valid IPv4 address for the call.
        check(unsafe { ibv::rdma_bind_addr(self.raw, &mut sin as *mut _ as *mut libc::sockaddr) })
    }

    /// Binds `ip:port` (port 0: one rdma-cm picks) and listens; returns the port.
    pub fn listen(&self, ip: Ipv4Addr, port: u16, backlog: i32) -> io::Result<u16> {
        self.bind(SocketAddrV4::new(ip, port))?;
        // SAFETY: the id is bound.
        check(unsafe { ibv::rdma_listen(self.raw, backlog) })?;
        Ok(self.local().map_or(port, |a| a.port()))
    }

    /// The id's bound source address (read from its route: rdma_get_src_port is not wrapped).
    pub fn local(&self) -> Option<SocketAddrV4> {
        // SAFETY: the id is live; the route's source address is a sockaddr_storage-sized union.
        from_sockaddr_in(unsafe { &(*self.raw).route.addr.src_addr_union.src_sin })
    }

    /// The peer's address, once resolved or requested.
    pub fn remote(&self) -> Option<SocketAddrV4> {
        // SAFETY: as `local`.
        from_sockaddr_in(unsafe { &(*self.raw).route.addr.dst_addr_union.dst_sin })
    }

    /// Starts resolving `remote` from `local` (ADDR_RESOLVED or ADDR_ERROR follows).
    pub fn resolve_addr(
        &self,
        local: Option<Ipv4Addr>,
        remote: SocketAddrV4,
        timeout_ms: i32,
    ) -> io::Result<()> {
        let mut src = local.map(|ip| sockaddr_in(SocketAddrV4::new(ip, 0)));
        let mut dst = sockaddr_in(remote);
        let src_ptr = src
            .as_mut()
            .map_or(std::ptr::null_mut(), |s| s as *mut _ as *mut libc::sockaddr);
        // SAFETY: the id is live; the addresses are valid for the call.
        check(unsafe {
            ibv::rdma_resolve_addr(
                self.raw,
                src_ptr,
                &mut dst as *mut _ as *mut libc::sockaddr,
                timeout_ms,
            )
        })
    }

    /// Starts resolving the route (ROUTE_RESOLVED or ROUTE_ERROR follows).
    pub fn resolve_route(&self, timeout_ms: i32) -> io::Result<()> {
        // SAFETY: the id is live with its address resolved.
        check(unsafe { ibv::rdma_resolve_route(self.raw, timeout_ms) })
    }

    fn with_param<R>(param: &ConnParam, f: impl FnOnce(*mut ibv::rdma_conn_param) -> R) -> R {
        let mut p = ibv::rdma_conn_param {
            private_data: param.private_data.as_ptr() as *const libc::c_void,
            private_data_len: param.private_data.len().min(255) as u8,
            responder_resources: param.responder_resources,
            initiator_depth: param.initiator_depth,
            flow_control: 1,
            retry_count: param.retry_count,
            rnr_retry_count: param.rnr_retry_count,
            srq: 0,
            qp_num: param.qp_num,
        };
        f(&mut p)
    }

    /// Sends the connect request (ESTABLISHED, REJECTED, UNREACHABLE or CONNECT_ERROR follows).
    pub fn connect(&self, param: &ConnParam) -> io::Result<()> {
        // SAFETY: the id is live with its route resolved and QP made; the parameters (and the
        // private data they point to) live through the call, which copies them.
        check(Self::with_param(param, |p| unsafe {
            ibv::rdma_connect(self.raw, p)
        }))
    }

    /// Accepts a connect request (ESTABLISHED follows when the peer confirms).
    pub fn accept(&self, param: &ConnParam) -> io::Result<()> {
        // SAFETY: as `connect`, on a request's id.
        check(Self::with_param(param, |p| unsafe {
            ibv::rdma_accept(self.raw, p)
        }))
    }

    /// Refuses a connect request with `private_data`.
    pub fn reject(&self, private_data: &[u8]) -> io::Result<()> {
        // SAFETY: the id is a live request's; the data lives through the call.
        check(unsafe {
            ibv::rdma_reject(
                self.raw,
                private_data.as_ptr() as *const libc::c_void,
                private_data.len().min(255) as u8,
            )
        })
    }

    /// Starts ending the connection (DISCONNECTED follows on both sides).
    pub fn disconnect(&self) -> io::Result<()> {
        // SAFETY: the id is live.
        check(unsafe { ibv::rdma_disconnect(self.raw) })
    }
}

impl Drop for CmId {
    fn drop(&mut self) {
        // SAFETY: the id is live and destroyed once; its QP, if any, goes first. Every event
        // for it was acknowledged as it was taken (`Channel::drain`), so this does not wait.
        unsafe {
            if !(*self.raw).qp.is_null() {
                ibv::rdma_destroy_qp(self.raw);
            }
            ibv::rdma_destroy_id(self.raw);
        }
        if let (Some(key), Ok(channel)) = (self.key.lock().take(), Channel::get()) {
            channel.remove(key);
        }
    }
}

/// rdma-cm's name of an event type, for diagnostics.
pub fn event_name(kind: EventType::Type) -> String {
    // SAFETY: rdma_event_str returns a static string for any value.
    let s = unsafe { ibv::rdma_event_str(kind) };
    if s.is_null() {
        return format!("event {kind}");
    }
    // SAFETY: a static C string.
    unsafe { std::ffi::CStr::from_ptr(s) }
        .to_string_lossy()
        .into_owned()
}
