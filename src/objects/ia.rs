//! The Interface Adapter: one open instance of a registered IA. It owns every object created
//! under it (so an abrupt close can free them) and its address.

use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

use super::counters::{Counters, IA_COUNTERS};
use super::evd::Evd;
use super::sp::{Csp, Psp, Rsp, ServicePoint};
use super::Held;
use crate::abi::*;
use crate::error::{DatError, DatResult, Sub, Type};
use crate::handle::{self, Kind, Object};
use crate::objects::seam::Transport;
use crate::registry::Entry;

pub struct Ia {
    pub entry: Arc<Entry>,
    /// What makes this IA's connections, chosen by its registry entry.
    pub transport: Arc<dyn Transport>,
    /// The IA's IPv4 address; boxed so the pointer `dat_ia_query` hands out stays put.
    address: Box<libc::sockaddr_in>,
    /// The async EVD; none when the consumer passed `DAT_EVD_ASYNC_EXISTS`. Taken at close,
    /// which breaks the IA <-> EVD reference cycle.
    async_evd: Mutex<Option<Held<Evd>>>,
    /// This IA's own handle, set once it is registered.
    handle: std::sync::atomic::AtomicUsize,
    /// Handles of the objects created under this IA, in creation order.
    children: Mutex<Children>,
    /// The provider-specific attributes `dat_ia_query` reports, found at its first call (they
    /// ask the interface or the device, which an IA that is never queried need not do).
    provider_specific: OnceLock<NamedAttrs>,
    /// The IB extension's counters of this IA.
    pub counters: Counters<IA_COUNTERS>,
}

/// Named attributes as C sees them, and the strings they point to, kept as long as the IA.
pub struct NamedAttrs {
    attrs: Box<[DAT_NAMED_ATTR]>,
    _strings: Vec<std::ffi::CString>,
}

// SAFETY: the attributes point only into `_strings`, which is never changed after it is made.
unsafe impl Send for NamedAttrs {}
// SAFETY: as above.
unsafe impl Sync for NamedAttrs {}

impl NamedAttrs {
    pub fn new(pairs: &[(&str, String)]) -> NamedAttrs {
        let c = |s: &str| std::ffi::CString::new(s.replace('\0', "")).expect("no NUL left");
        let strings: Vec<_> = pairs.iter().flat_map(|(n, v)| [c(n), c(v)]).collect();
        let attrs = strings
            .chunks(2)
            .map(|p| DAT_NAMED_ATTR {
                name: p[0].as_ptr(),
                value: p[1].as_ptr(),
            })
            .collect();
        NamedAttrs {
            attrs,
            _strings: strings,
        }
    }

    pub fn as_slice(&self) -> &[DAT_NAMED_ATTR] {
        &self.attrs
    }
}

/// The provider-specific attributes an IA on `transport` at `ip` reports, named and valued as
/// OpenFabrics' providers report them where programs read them: `dtest` runs its RDMA-read
/// phases only when `DAT_IB_RDMA_READ` is `TRUE`, `dtestx` its atomics only where
/// `DAT_IB_FETCH_AND_ADD` and `DAT_IB_CMP_AND_SWAP` are, `dtestsrq` sizes its messages by
/// `DAT_IB_TRANSPORT_MTU`, `dtestx -p` its counters where `DAT_COUNTERS` is named;
/// `DAT_IB_UD` says UD EPs run.
fn provider_specific(transport: &dyn Transport, ip: std::net::Ipv4Addr) -> NamedAttrs {
    let truth = |b: bool| if b { "TRUE" } else { "FALSE" }.to_string();
    let mut pairs = transport.provider_specific(ip);
    pairs.push(("DAT_IB_CONNECTIVITY_MODE", "DIRECT".into()));
    pairs.push(("DAT_IB_RDMA_READ", truth(true)));
    pairs.push(("DAT_EXTENSION_INTERFACE", truth(true)));
    pairs.push(("DAT_IB_FETCH_AND_ADD", truth(transport.atomics())));
    pairs.push(("DAT_IB_CMP_AND_SWAP", truth(transport.atomics())));
    pairs.push(("DAT_IB_IMMED_DATA", truth(true)));
    // As OpenFabrics' providers that carry UD EPs name it (its rdma-cm one carries none).
    pairs.push(("DAT_IB_UD", truth(transport.datagrams())));
    // Named as OpenFabrics' counters build names it: `dtestx -p` queries counters only then.
    pairs.push(("DAT_COUNTERS", truth(true)));
    NamedAttrs::new(&pairs)
}

#[derive(Default)]
struct Children {
    handles: Vec<usize>,
    /// Set as the IA closes: an object made meanwhile (by another thread) is refused, so none
    /// outlives the close.
    closed: bool,
}

impl Object for Ia {
    const KIND: Kind = Kind::Ia;
}

impl Ia {
    /// Opens an IA of `entry` on `transport`, the one its provider made for it, at `ip` (the
    /// address its parameters name, [`resolve_ipv4`]; None: the transport's own).
    pub fn open(
        entry: Arc<Entry>,
        transport: Arc<dyn Transport>,
        ip: Option<std::net::Ipv4Addr>,
    ) -> DatResult<Arc<Ia>> {
        let ip = ip
            .or_else(|| transport.local_address())
            .ok_or(DatError::new(
                Type::DAT_INVALID_ADDRESS,
                Sub::DAT_INVALID_ADDRESS_UNREACHABLE,
            ))?;
        Ok(Arc::new(Ia {
            entry,
            provider_specific: OnceLock::new(),
            counters: Counters::default(),
            transport,
            address: Box::new(crate::runtime::sys::sockaddr_in(
                std::net::SocketAddrV4::new(ip, 0),
            )),
            async_evd: Mutex::new(None),
            handle: std::sync::atomic::AtomicUsize::new(0),
            children: Mutex::new(Children::default()),
        }))
    }

    /// Registers the IA itself in the handle table.
    pub fn register(self: &Arc<Self>) -> DatResult<DAT_IA_HANDLE> {
        let h =
            handle::insert(self.clone()).ok_or(DatError::resources(Sub::DAT_RESOURCE_MEMORY))?;
        self.handle
            .store(h as usize, std::sync::atomic::Ordering::Release);
        Ok(h)
    }

    pub fn handle(&self) -> DAT_IA_HANDLE {
        self.handle.load(std::sync::atomic::Ordering::Acquire) as DAT_IA_HANDLE
    }

    /// The provider-specific attributes the IA reports.
    pub fn provider_specific(&self) -> &[DAT_NAMED_ATTR] {
        self.provider_specific
            .get_or_init(|| provider_specific(&*self.transport, self.ipv4()))
            .as_slice()
    }

    pub fn ipv4(&self) -> std::net::Ipv4Addr {
        std::net::Ipv4Addr::from(u32::from_be(self.address.sin_addr.s_addr))
    }

    /// The address as `DAT_IA_ADDRESS_PTR`, valid while the IA lives.
    pub fn address_ptr(&self) -> DAT_IA_ADDRESS_PTR {
        &*self.address as *const libc::sockaddr_in as DAT_IA_ADDRESS_PTR
    }

    /// The async EVD handle, `DAT_HANDLE_NULL` when there is none.
    pub fn async_evd(&self) -> DAT_EVD_HANDLE {
        self.async_evd
            .lock()
            .as_ref()
            .map_or(std::ptr::null_mut(), |e| e.handle())
    }

    pub fn async_evd_object(&self) -> Option<Arc<Evd>> {
        self.async_evd.lock().as_ref().map(|e| e.arc().clone())
    }

    pub fn set_async_evd(&self, evd: Option<Arc<Evd>>) {
        if let Some(evd) = &evd {
            self.transport.report_async_errors_to(self.handle(), evd);
        }
        *self.async_evd.lock() = evd.map(Held::new);
    }

    /// Whether this IA's connections can deliver events to an EVD of `owner`, as OpenFabrics
    /// lets an EP use the EVDs of another IA of its provider (dapltest's limit tests pass
    /// one): every TCP IA of the process feeds every TCP IA's EVDs, and the RDMA IAs of one
    /// device each other's.
    pub fn feeds_evds_of(&self, owner: &Ia) -> bool {
        std::ptr::eq(self, owner) || self.transport.evd_domain() == owner.transport.evd_domain()
    }

    /// Registers a new object of this IA and returns its handle; an IA closing meanwhile (in
    /// another thread) refuses it, as its handle is dead.
    pub fn adopt<T: Object>(&self, object: Arc<T>) -> DatResult<DAT_HANDLE> {
        let h = handle::insert(object).ok_or(DatError::resources(Sub::DAT_RESOURCE_MEMORY))?;
        let mut children = self.children.lock();
        if children.closed {
            drop(children);
            handle::remove_any(h);
            return Err(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_IA));
        }
        children.handles.push(h as usize);
        if let (Some(made), _) = lifecycle_counters(T::KIND) {
            self.counters.bump(made as u32);
        }
        Ok(h)
    }

    /// Unregisters one of this IA's objects: its handle is dead from then on.
    pub fn release<T: Object>(&self, h: DAT_HANDLE) -> Option<Arc<T>> {
        let object = handle::remove::<T>(h)?;
        self.children.lock().handles.retain(|c| *c != h as usize);
        if let (_, Some(freed)) = lifecycle_counters(T::KIND) {
            self.counters.bump(freed as u32);
        }
        Some(object)
    }

    /// The listening service point (PSP, RSP or CSP) of this IA for `conn_qual`.
    pub fn service_point(&self, conn_qual: u64) -> Option<Arc<ServicePoint>> {
        let handles = self.children.lock().handles.clone();
        handles.into_iter().map(|h| h as DAT_HANDLE).find_map(|h| {
            let sp = handle::get::<Psp>(h)
                .map(|p| p.0.clone())
                .or_else(|| handle::get::<Rsp>(h).map(|r| r.0.clone()))
                .or_else(|| handle::get::<Csp>(h).map(|c| c.0.clone()))?;
            (sp.conn_qual() == conn_qual && sp.is_listening()).then_some(sp)
        })
    }

    /// Handles of live objects this IA owns, other than its own async EVD.
    pub fn live_children(&self) -> usize {
        let own_async = self.async_evd() as usize;
        self.children
            .lock()
            .handles
            .iter()
            .filter(|c| **c != own_async)
            .count()
    }

    /// Starts closing: from now on no object is made under this IA. A graceful close is
    /// refused (and nothing changes) while it owns objects other than its own async EVD.
    pub fn begin_close(&self, graceful: bool) -> DatResult {
        let own_async = self.async_evd() as usize;
        let mut children = self.children.lock();
        if graceful && children.handles.iter().any(|c| *c != own_async) {
            return Err(DatError::invalid_state(Sub::DAT_INVALID_STATE_IA_IN_USE));
        }
        children.closed = true;
        Ok(())
    }

    /// Frees every object of this IA, newest first, so dependents go before what they use.
    pub fn free_all(&self) {
        self.set_async_evd(None);
        let children = {
            let mut c = self.children.lock();
            c.closed = true;
            std::mem::take(&mut c.handles)
        };
        for h in children.into_iter().rev() {
            handle::remove_any(h as DAT_HANDLE);
        }
    }
}

/// An `ia params` field names a netdev (`lo`, `eth0`, optionally followed by a port as in
/// OpenFabrics' `"ib0 0"`) or an IPv4 address.
pub fn resolve_ipv4(ia_params: &str) -> Option<std::net::Ipv4Addr> {
    let first = ia_params.split_whitespace().next()?;
    if let Ok(ip) = first.parse::<std::net::Ipv4Addr>() {
        return Some(ip);
    }
    crate::runtime::interfaces::ipv4_of(first)
}

/// The counters of an object kind's creation and free (a CR's creation is its arrival; its
/// end, an accept or a reject, is counted where it happens).
fn lifecycle_counters(kind: Kind) -> (Option<dat_ia_counters>, Option<dat_ia_counters>) {
    use dat_ia_counters as C;
    match kind {
        Kind::Pz => (Some(C::DCNT_IA_PZ_CREATE), Some(C::DCNT_IA_PZ_FREE)),
        Kind::Lmr => (Some(C::DCNT_IA_LMR_CREATE), Some(C::DCNT_IA_LMR_FREE)),
        Kind::Rmr => (Some(C::DCNT_IA_RMR_CREATE), Some(C::DCNT_IA_RMR_FREE)),
        Kind::Rsp => (Some(C::DCNT_IA_RSP_CREATE), Some(C::DCNT_IA_RSP_FREE)),
        Kind::Evd => (Some(C::DCNT_IA_EVD_CREATE), Some(C::DCNT_IA_EVD_FREE)),
        Kind::Ep => (Some(C::DCNT_IA_EP_CREATE), Some(C::DCNT_IA_EP_FREE)),
        Kind::Srq => (Some(C::DCNT_IA_SRQ_CREATE), Some(C::DCNT_IA_SRQ_FREE)),
        Kind::Cr => (Some(C::DCNT_IA_SP_CR), None),
        // dat_psp_create and dat_psp_create_any count themselves, apart.
        Kind::Psp => (None, Some(C::DCNT_IA_PSP_FREE)),
        _ => (None, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ia_params_resolve_to_an_address() {
        assert_eq!(resolve_ipv4("lo"), Some(std::net::Ipv4Addr::LOCALHOST));
        assert_eq!(resolve_ipv4("lo 0"), Some(std::net::Ipv4Addr::LOCALHOST));
        assert_eq!(
            resolve_ipv4("127.0.0.2"),
            Some("127.0.0.2".parse().unwrap())
        );
        assert_eq!(resolve_ipv4("no-such-netdev0"), None);
        assert_eq!(resolve_ipv4(""), None);
    }
}
