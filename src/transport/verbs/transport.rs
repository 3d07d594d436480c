//! The verbs transport of one IA: its device, and what the IA's objects keep on it (PDs,
//! memory regions, CQs), and its listeners.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::io;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::{Arc, LazyLock, OnceLock, Weak};
use std::time::Duration;

use parking_lot::RwLock;

use super::cm::{CmEvent, CmHandler, CmId, EventType};
use super::completions::CqSource;
use super::conn::{Conn, Prepared, Request, VerbsEp};
use super::cq::Cq;
use super::datagram::{self, DatagramRequest};
use super::device::{access, Device, Mr, Mw, Pd};
use super::srq::VerbsSrq;
use crate::abi::DAT_IA_HANDLE;
use crate::error::{DatError, DatResult, Sub, Type};
use crate::objects::ep::Ep;
use crate::objects::evd::Evd;
use crate::objects::limits::Limits;
use crate::objects::lmr::MemoryRefusal;
use crate::objects::seam::{
    EpTransportState, Listening, OnRequest, Registration, Resource, SharedQueue, Transport,
};
use crate::runtime::sys::debug;

/// The connections by device context and QP number: a work completion finds its EP here
/// (one map for the process: an EP may complete on the CQ of another IA of its device).
type Qps = HashMap<(usize, u32), Weak<Conn>, BuildHasherDefault<QpHasher>>;
static QPS: LazyLock<RwLock<Qps>> = LazyLock::new(Default::default);

/// The QP map's hash: every completion looks its QP up, and with the standard hash (SipHash,
/// made to resist chosen keys) the lookup cost as much as the rest of the completion's
/// handling (267 instructions; now 80). QP numbers are the device's, not a peer's, so a
/// multiplicative hash of the two words serves.
#[derive(Default)]
struct QpHasher(u64);

impl Hasher for QpHasher {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(u64::from(*b));
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

pub struct Verbs {
    pub device: Arc<Device>,
    me: Weak<Verbs>,
    /// The CQ of a queue whose EVD the EP lacks (nothing reported completes there).
    spare: OnceLock<Arc<Cq>>,
}

/// The connection of QP `qp_num` on the device context at `context`.
pub fn conn_of_qp(context: usize, qp_num: u32) -> Option<Arc<Conn>> {
    QPS.read().get(&(context, qp_num)).and_then(Weak::upgrade)
}

impl Verbs {
    pub fn open(ip: Ipv4Addr) -> io::Result<Arc<Verbs>> {
        let device = Device::open(ip)?;
        Ok(Arc::new_cyclic(|me| Verbs {
            device,
            me: me.clone(),
            spare: OnceLock::new(),
        }))
    }

    fn arc(&self) -> Arc<Verbs> {
        self.me.upgrade().expect("a live transport")
    }

    fn key(&self, qp_num: u32) -> (usize, u32) {
        (self.device.context() as usize, qp_num)
    }

    pub fn conn_of_qp(&self, qp_num: u32) -> Option<Arc<Conn>> {
        conn_of_qp(self.device.context() as usize, qp_num)
    }

    pub fn add_qp(&self, qp_num: u32, conn: &Arc<Conn>) {
        QPS.write().insert(self.key(qp_num), Arc::downgrade(conn));
    }

    /// Forgets `conn`'s QP (not a later connection's that got the same number).
    pub fn remove_qp(&self, qp_num: u32, conn: *const Conn) {
        let key = self.key(qp_num);
        let mut qps = QPS.write();
        if qps
            .get(&key)
            .is_some_and(|w| std::ptr::eq(w.as_ptr(), conn))
        {
            qps.remove(&key);
        }
    }

    pub fn spare_cq(&self) -> io::Result<Arc<Cq>> {
        if let Some(cq) = self.spare.get() {
            return Ok(cq.clone());
        }
        let cq = Arc::new(Cq::new(&self.device, 64)?);
        Ok(self.spare.get_or_init(|| cq).clone())
    }
}

impl Transport for Verbs {
    // A service point listens in both of rdma-cm's port spaces on its port: RC EPs' requests
    // come in one, UD EPs' in the other (a port another program holds there leaves the
    // service point without UD requests, which `LIBDAT_DEBUG` reports).
    fn listen(
        &self,
        ip: Ipv4Addr,
        port: u16,
        _conn_qual: u64,
        on_request: OnRequest,
    ) -> io::Result<Box<dyn Listening>> {
        let on_request = Arc::new(on_request);
        let reliable = Arc::new(Listen {
            verbs: self.me.clone(),
            on_request: on_request.clone(),
            datagram: false,
        });
        let as_handler: Arc<dyn CmHandler> = reliable.clone();
        let id = CmId::new(Arc::downgrade(&as_handler))?;
        let port = id.listen(ip, port, 128)?;
        let mut listener = Listener {
            ids: vec![id],
            port,
            _handlers: vec![reliable],
        };
        let datagram = Arc::new(Listen {
            verbs: self.me.clone(),
            on_request,
            datagram: true,
        });
        let as_handler: Arc<dyn CmHandler> = datagram.clone();
        match CmId::datagram(Arc::downgrade(&as_handler))
            .and_then(|id| id.listen(ip, port, 128).map(|_| id))
        {
            Ok(id) => {
                listener.ids.push(id);
                listener._handlers.push(datagram);
            }
            Err(e) if debug() => eprintln!("libdat: no UD requests at {ip}:{port}: {e}"),
            Err(_) => {}
        }
        Ok(Box::new(listener))
    }

    fn connect(
        &self,
        ep: Arc<Ep>,
        attempt: u64,
        remote: SocketAddrV4,
        _conn_qual: u64,
        private_data: Vec<u8>,
        timeout: Option<Duration>,
    ) -> DatResult {
        Conn::connect(&self.arc(), ep, attempt, remote, private_data, timeout).map_err(|e| {
            if debug() {
                eprintln!("libdat: verbs connect to {remote}: {e}");
            }
            // Address resolution refuses at once what no route reaches (as OpenFabrics maps
            // rdma_resolve_addr's errno).
            match e.raw_os_error() {
                Some(libc::ENETUNREACH | libc::EHOSTUNREACH | libc::EADDRNOTAVAIL) => {
                    DatError::new(
                        Type::DAT_INVALID_ADDRESS,
                        Sub::DAT_INVALID_ADDRESS_UNREACHABLE,
                    )
                }
                Some(libc::EAFNOSUPPORT) => DatError::new(
                    Type::DAT_INVALID_ADDRESS,
                    Sub::DAT_INVALID_ADDRESS_MALFORMED,
                ),
                _ => DatError::resources(Sub::DAT_RESOURCE_TEP),
            }
        })
    }

    fn provider_specific(&self, _ip: Ipv4Addr) -> Vec<(&'static str, String)> {
        self.device.provider_specific()
    }

    fn atomics(&self) -> bool {
        self.device.attr.atomic_cap != rdma_mummy_sys::ibv_atomic_cap::IBV_ATOMIC_NONE
    }

    fn protection_domain(&self) -> DatResult<Option<Resource>> {
        let pd = Pd::new(&self.device)
            .map_err(|_| DatError::resources(Sub::DAT_RESOURCE_PROTECTION_DOMAIN))?;
        Ok(Some(pd))
    }

    fn register_memory(
        &self,
        domain: Option<&Resource>,
        address: u64,
        length: u64,
        privileges: u32,
        writable: bool,
    ) -> DatResult<Option<Registration>> {
        let pd = domain
            .and_then(Pd::of)
            .ok_or(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_PZ))?;
        // Local write wherever the memory allows it: a region a DTO receives into, or an RDMA
        // read lands in, needs it, and verbs requires it beside remote write. Read-only memory
        // (registered with privileges that write nothing) is pinned for reading, which any
        // write access (memory window binds too) would refuse.
        let flags = if writable {
            access::LOCAL_WRITE | access::MW_BIND
        } else {
            0
        } | access::remote(privileges);
        let mr = Mr::register(&pd, address, length, flags).map_err(|e| {
            if debug() {
                let hint = if matches!(e.raw_os_error(), Some(libc::ENOMEM) | Some(libc::EPERM)) {
                    " (is RLIMIT_MEMLOCK, `ulimit -l`, large enough?)"
                } else {
                    ""
                };
                eprintln!(
                    "libdat: registering {length} bytes at {address:#x} on {}: {e}{hint}",
                    self.device.name()
                );
            }
            if e.raw_os_error() == Some(libc::EFAULT) {
                // Pages that could not be pinned as asked (unmapped or protected since the
                // objects looked): refused as the objects refuse such memory.
                return DatError::from(MemoryRefusal::Unmapped);
            }
            DatError::resources(Sub::DAT_RESOURCE_MEMORY_REGION)
        })?;
        let (lmr_context, rmr_context) = (mr.lkey(), mr.rkey());
        Ok(Some(Registration {
            lmr_context,
            rmr_context,
            keep: Arc::new(mr),
        }))
    }

    fn local_address(&self) -> Option<Ipv4Addr> {
        Some(self.device.ip)
    }

    // rdma-cm opens each device once per process: its IAs share the context.
    fn evd_domain(&self) -> usize {
        self.device.context() as usize
    }

    // The device's counters in sysfs, where OpenFabrics reads them: the IB CM's per port,
    // the port's, the device's diagnostics.
    fn device_counter(&self, kind: crate::abi::dat_ia_counter_type, name: &str) -> Option<u64> {
        use crate::abi::dat_ia_counter_type as K;
        let (dev, port) = (self.device.name(), self.device.port_number());
        let path = match kind {
            K::DCNT_IA_CM => format!("/sys/class/infiniband_cm/{dev}/{port}/{name}"),
            K::DCNT_IA_LNK => format!("/sys/class/infiniband/{dev}/ports/{port}/counters/{name}"),
            K::DCNT_IA_DIAG => format!("/sys/class/infiniband/{dev}/diag_counters/{name}"),
        };
        std::fs::read_to_string(path).ok()?.trim().parse().ok()
    }

    fn datagrams(&self) -> bool {
        true
    }

    fn datagram_endpoint(&self, ep: &Arc<Ep>) -> DatResult {
        if ep.pz().is_none() {
            return Err(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_PZ));
        }
        let conn = Conn::open_datagram(&self.arc(), ep).map_err(|e| {
            if debug() {
                eprintln!("libdat: a UD QP on {}: {e}", self.device.name());
            }
            DatError::resources(Sub::DAT_RESOURCE_TEP)
        })?;
        ep.datagram_ready(conn);
        Ok(())
    }

    fn connect_datagram(
        &self,
        ep: Arc<Ep>,
        remote: SocketAddrV4,
        _conn_qual: u64,
        private_data: Vec<u8>,
    ) -> DatResult {
        datagram::connect(&self.arc(), ep, remote, private_data)
    }

    fn free_address_handle(&self, ah: usize) -> bool {
        datagram::free(ah)
    }

    fn endpoint_state(&self) -> Box<dyn EpTransportState> {
        Box::<VerbsEp>::default()
    }

    // The EP's QP is made now, as OpenFabrics makes it, not in its connection's time.
    fn endpoint_created(&self, ep: &Arc<Ep>) {
        Prepared::make(&self.arc(), ep);
    }

    fn report_async_errors_to(&self, ia: DAT_IA_HANDLE, evd: &Arc<Evd>) {
        self.device.events.report_to(ia, evd);
    }

    // The device checks peers' keys: a bound RMR is a memory window.
    fn checks_remote_access(&self) -> bool {
        false
    }

    fn memory_window(&self, domain: Option<&Resource>) -> DatResult<Resource> {
        let pd = domain
            .and_then(Pd::of)
            .ok_or(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_PZ))?;
        let mw = Mw::alloc(&pd).map_err(|e| {
            if debug() {
                eprintln!("libdat: a memory window on {}: {e}", self.device.name());
            }
            DatError::resources(Sub::DAT_RESOURCE_MEMORY_REGION)
        })?;
        Ok(Arc::new(mw))
    }

    /// The device's: its scatter/gather entries (for reads, its read entries), its work
    /// requests per queue, its port's largest message.
    fn limits(&self) -> Limits {
        let a = &self.device.attr;
        Limits::narrowed(
            i64::from(a.max_sge),
            i64::from(if a.max_sge_rd > 0 {
                a.max_sge_rd
            } else {
                a.max_sge
            }),
            i64::from(a.max_qp_wr),
            u64::from(self.device.max_msg_sz),
        )
    }

    fn srq_limits(&self) -> Option<(i32, i32)> {
        let a = &self.device.attr;
        (a.max_srq > 0 && a.max_srq_wr > 0).then_some((a.max_srq, a.max_srq_wr))
    }

    fn shared_receive_queue(
        &self,
        domain: Option<&Resource>,
        max_recv: u32,
        max_iov: u32,
    ) -> DatResult<Option<Arc<dyn SharedQueue>>> {
        let pd = domain
            .and_then(Pd::of)
            .ok_or(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_PZ))?;
        let srq = VerbsSrq::create(&pd, max_recv, max_iov).map_err(|e| {
            if debug() {
                eprintln!(
                    "libdat: an SRQ of {max_recv} receives on {}: {e}",
                    self.device.name()
                );
            }
            DatError::resources(Sub::DAT_RESOURCE_SRQ)
        })?;
        Ok(Some(srq))
    }

    fn resize_completion_queue(&self, evd: &Arc<Evd>, qlen: usize) -> DatResult {
        match CqSource::of(evd) {
            Some(source) => source.resize(qlen).map_err(|e| {
                if debug() {
                    eprintln!("libdat: resizing a CQ to {qlen}: {e}");
                }
                DatError::resources(Sub::DAT_RESOURCE_TEVD)
            }),
            None => Ok(()),
        }
    }

    fn completion_queue(&self, evd: &Arc<Evd>) -> DatResult<Option<Resource>> {
        let source = CqSource::attach(&self.arc(), evd)
            .map_err(|_| DatError::resources(Sub::DAT_RESOURCE_TEVD))?;
        Ok(Some(source))
    }
}

/// A listening id's requests go to the service point.
struct Listen {
    verbs: Weak<Verbs>,
    on_request: Arc<OnRequest>,
    /// Listens in rdma-cm's datagram space: its requests are UD EPs'.
    datagram: bool,
}

impl CmHandler for Listen {
    fn on_cm_event(&self, mut event: CmEvent) {
        if event.kind != EventType::RDMA_CM_EVENT_CONNECT_REQUEST {
            return;
        }
        let (Some(id), Some(verbs)) = (event.request.take(), self.verbs.upgrade()) else {
            return;
        };
        if !self.datagram {
            (self.on_request)(Box::new(Request::new(verbs, id, event)));
        } else if let Some(request) = DatagramRequest::new(id, &event) {
            (self.on_request)(Box::new(request));
        }
    }
}

struct Listener {
    /// First: its ids stop listening before their handlers go.
    ids: Vec<CmId>,
    port: u16,
    _handlers: Vec<Arc<Listen>>,
}

impl Listening for Listener {
    fn port(&self) -> u16 {
        self.port
    }
}
