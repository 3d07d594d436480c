//! An opened RDMA device, found by the IPv4 address an IA names (as rdma-cm binds it), with
//! the protection domains and memory registrations made on it.

use std::io;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::{Arc, Weak};

use rdma_mummy_sys as ibv;

use super::async_events::DeviceEvents;
use super::cm::{CmEvent, CmHandler, CmId};
use crate::abi::Zeroable;

/// The device an IA runs on: an rdma-cm id bound to the IA's address holds it open.
pub struct Device {
    /// Before `bound`: its watcher reads the context `bound` keeps open.
    pub events: Arc<DeviceEvents>,
    bound: CmId,
    pub ip: Ipv4Addr,
    pub attr: ibv::ibv_device_attr,
    /// The largest message the IA's port carries (0: the port did not say).
    pub max_msg_sz: u32,
    /// How peers address the IA's port, once found (a scan of its GID table).
    port_address: std::sync::OnceLock<PortAddress>,
    /// A software device (soft-RoCE, soft iWARP) whose posts and arming are system calls
    /// (`write` on the context's descriptor), cancellation points of the C library: the
    /// library's data path makes them with the calling thread's cancellation disabled
    /// (`uncancelled`). A hardware device's posts write its queue and ring a doorbell in memory.
    pub posts_enter_kernel: bool,
}

/// The vendor ids the kernel's software devices report: rxe's (soft-RoCE) and siw's.
const SOFTWARE_VENDORS: [u32; 2] = [0x00ff_ffff, 0x0062_6d74];

/// Disables the calling thread's cancellation while it lives when `device`'s posts enter the
/// kernel (a cancel pending as a post's `write` runs would unwind through the library and
/// abort the process); nothing otherwise.
#[inline]
pub fn uncancelled(device: &Device) -> Option<crate::runtime::sys::CancelOff> {
    device
        .posts_enter_kernel
        .then(crate::runtime::sys::CancelOff::new)
}

// SAFETY: the device context is used only through verbs calls, which are thread-safe.
unsafe impl Send for Device {}
// SAFETY: as above.
unsafe impl Sync for Device {}

/// The bound id hears of nothing it must act on.
struct Quiet;

impl CmHandler for Quiet {
    fn on_cm_event(&self, _event: CmEvent) {}
}

fn last_error() -> io::Error {
    io::Error::last_os_error()
}

impl Device {
    /// Opens the device that carries `ip` (ENODEV: no RDMA device has that address).
    pub fn open(ip: Ipv4Addr) -> io::Result<Arc<Device>> {
        let quiet: Weak<dyn CmHandler> = Weak::<Quiet>::new();
        let bound = CmId::new(quiet)?;
        bound.bind(SocketAddrV4::new(ip, 0))?;
        let ctx = bound.verbs();
        if ctx.is_null() {
            return Err(io::Error::from_raw_os_error(libc::ENODEV));
        }
        let mut attr = ibv::ibv_device_attr::zeroed();
        // SAFETY: `ctx` is the bound id's open device context.
        if unsafe { ibv::ibv_query_device(ctx, &mut attr) } != 0 {
            return Err(last_error());
        }
        let mut port = ibv::ibv_port_attr::zeroed();
        // SAFETY: `ctx` is the bound id's open device context, the port the one it bound to.
        let max_msg_sz = if unsafe { ibv::ibv_query_port(ctx, bound.port_num(), &mut port) } == 0 {
            port.max_msg_sz
        } else {
            0
        };
        // SAFETY: `ctx` is the bound id's open device context; every device holding the
        // watcher lets go of it before its own bound id, which keeps the context open.
        let events = unsafe { DeviceEvents::watch(ctx)? };
        Ok(Arc::new(Device {
            events,
            bound,
            ip,
            attr,
            max_msg_sz,
            port_address: std::sync::OnceLock::new(),
            posts_enter_kernel: SOFTWARE_VENDORS.contains(&attr.vendor_id),
        }))
    }

    pub fn context(&self) -> *mut ibv::ibv_context {
        self.bound.verbs()
    }

    /// What OpenFabrics' providers report of the device and the IA's port as provider-specific
    /// attributes, formatted as they format them.
    pub fn provider_specific(&self) -> Vec<(&'static str, String)> {
        let mut attrs = vec![("DAT_IB_DEVICE_NAME", self.name())];
        let guid = u64::from_be(self.attr.node_guid).to_be_bytes();
        let groups = |bytes: &[u8]| {
            bytes
                .chunks(2)
                .map(|c| format!("{:02x}{:02x}", c[0], c[1]))
                .collect::<Vec<_>>()
                .join(":")
        };
        attrs.push(("DAT_IB_NODE_GUID", groups(&guid)));
        // SAFETY: the bound id is live; rdma-cm set its port as it bound.
        let number = unsafe { (*self.bound.raw()).port_num };
        let mut port = ibv::ibv_port_attr::zeroed();
        let mut gid = ibv::ibv_gid::zeroed();
        // SAFETY: the context is open, `number` its port, the out-structures ours.
        if unsafe { ibv::ibv_query_gid(self.context(), number, 0, &mut gid) } == 0 {
            // SAFETY: every bit pattern of the union is a valid byte array.
            attrs.push(("DAT_IB_GID", groups(&unsafe { gid.raw })));
        }
        // SAFETY: as above.
        if unsafe { ibv::ibv_query_port(self.context(), number, &mut port) } == 0 {
            // IBV_MTU_256 is 1, each next one doubles.
            attrs.push((
                "DAT_IB_TRANSPORT_MTU",
                (128u32 << port.active_mtu.clamp(1, 5)).to_string(),
            ));
            let state = if port.state == ibv::ibv_port_state::IBV_PORT_ACTIVE {
                "ACTIVE"
            } else {
                "DOWN"
            };
            attrs.push(("DAT_IB_PORT_STATUS", state.to_string()));
        }
        attrs.push(("DAT_IB_PORT_NUMBER", number.to_string()));
        attrs
    }

    /// How peers address the IA's port: its number, the index and value of the GID that
    /// carries the IA's address (RoCE: the IPv4-mapped one, version 2 where the port has
    /// both; InfiniBand: the port's first), and its LID. Found once; a failure is tried again
    /// next time.
    pub fn port_address(&self) -> io::Result<PortAddress> {
        if let Some(found) = self.port_address.get() {
            return Ok(*found);
        }
        let found = self.find_port_address()?;
        Ok(*self.port_address.get_or_init(|| found))
    }

    fn find_port_address(&self) -> io::Result<PortAddress> {
        let port = self.bound.port_num();
        let mut attr = ibv::ibv_port_attr::zeroed();
        // SAFETY: the context is open, `port` its port, the out-structure ours.
        if unsafe { ibv::ibv_query_port(self.context(), port, &mut attr) } != 0 {
            return Err(last_error());
        }
        let mapped = self.ip.to_ipv6_mapped().octets();
        let mut found: Option<(u32, [u8; 16], u32)> = None;
        for index in 0..attr.gid_tbl_len.max(0) as u32 {
            let mut entry = ibv::ibv_gid_entry::zeroed();
            // SAFETY: as above; the size is the structure's.
            if unsafe {
                ibv::_ibv_query_gid_ex(
                    self.context(),
                    u32::from(port),
                    index,
                    &mut entry,
                    0,
                    std::mem::size_of::<ibv::ibv_gid_entry>(),
                )
            } != 0
            {
                continue; // an empty slot
            }
            // SAFETY: every bit pattern of the union is a valid byte array.
            let gid = unsafe { entry.gid.raw };
            let first = found.is_none() && index == 0;
            let carries_ip = gid == mapped
                && found.is_none_or(|(_, g, t)| g != mapped || t != ibv::IBV_GID_TYPE_ROCE_V2);
            if first || carries_ip {
                found = Some((index, gid, entry.gid_type));
            }
        }
        let (index, gid, _) = found.ok_or_else(|| io::Error::from_raw_os_error(libc::ENOENT))?;
        Ok(PortAddress {
            port,
            gid_index: index as u8,
            gid,
            lid: attr.lid,
        })
    }

    /// The number of the IA's port.
    pub fn port_number(&self) -> u8 {
        self.bound.port_num()
    }

    /// The device's name (`rxe0`, `mlx5_0`).
    pub fn name(&self) -> String {
        // SAFETY: the context is open; its device and name live as long.
        unsafe { std::ffi::CStr::from_ptr(ibv::ibv_get_device_name((*self.context()).device)) }
            .to_string_lossy()
            .into_owned()
    }
}

/// How a port is addressed (see [`Device::port_address`]).
#[derive(Clone, Copy, Debug)]
pub struct PortAddress {
    pub port: u8,
    pub gid_index: u8,
    pub gid: [u8; 16],
    pub lid: u16,
}

impl PortAddress {
    /// The address vector from this port to the port of `gid` and `lid`.
    pub fn towards(&self, gid: [u8; 16], lid: u16) -> ibv::ibv_ah_attr {
        let mut a = ibv::ibv_ah_attr::zeroed();
        a.dlid = lid;
        a.port_num = self.port;
        a.is_global = 1;
        a.grh.dgid = ibv::ibv_gid { raw: gid };
        a.grh.sgid_index = self.gid_index;
        a.grh.hop_limit = 64;
        a
    }
}

/// An address handle: how a datagram QP reaches a peer's port.
pub struct Ah {
    raw: *mut ibv::ibv_ah,
    _pd: Arc<Pd>,
}

// SAFETY: an address handle is used only through verbs calls (named in work requests).
unsafe impl Send for Ah {}
// SAFETY: as above.
unsafe impl Sync for Ah {}

impl Ah {
    pub fn create(pd: &Arc<Pd>, attr: &ibv::ibv_ah_attr) -> io::Result<Ah> {
        let mut attr = *attr;
        // SAFETY: the PD is live; the attributes are ours, read through the call.
        let raw = unsafe { ibv::ibv_create_ah(pd.raw, &mut attr) };
        if raw.is_null() {
            return Err(last_error());
        }
        Ok(Ah {
            raw,
            _pd: pd.clone(),
        })
    }

    pub fn raw(&self) -> *mut ibv::ibv_ah {
        self.raw
    }
}

impl Drop for Ah {
    fn drop(&mut self) {
        // SAFETY: created by us, destroyed once.
        unsafe { ibv::ibv_destroy_ah(self.raw) };
    }
}

/// A protection domain.
pub struct Pd {
    raw: *mut ibv::ibv_pd,
    pub device: Arc<Device>,
}

// SAFETY: a PD is used only through verbs calls, which are thread-safe.
unsafe impl Send for Pd {}
// SAFETY: as above.
unsafe impl Sync for Pd {}

impl Pd {
    pub fn new(device: &Arc<Device>) -> io::Result<Arc<Pd>> {
        // SAFETY: the device's context is open.
        let raw = unsafe { ibv::ibv_alloc_pd(device.context()) };
        if raw.is_null() {
            return Err(last_error());
        }
        Ok(Arc::new(Pd {
            raw,
            device: device.clone(),
        }))
    }

    /// The protection domain a PZ of this transport holds.
    pub fn of(domain: &crate::objects::seam::Resource) -> Option<Arc<Pd>> {
        domain.clone().downcast::<Pd>().ok()
    }

    pub fn raw(&self) -> *mut ibv::ibv_pd {
        self.raw
    }
}

impl Drop for Pd {
    fn drop(&mut self) {
        // SAFETY: allocated by us, freed once; everything made in it holds an Arc to it.
        unsafe { ibv::ibv_dealloc_pd(self.raw) };
    }
}

/// A registered memory region: its keys are the DAT contexts (`lmr_context` = lkey,
/// `rmr_context` = rkey).
pub struct Mr {
    raw: *mut ibv::ibv_mr,
    pub pd: Arc<Pd>,
    /// Whether memory windows may be bound onto it (`MW_BIND`: not on read-only memory).
    pub window_binds: bool,
}

// SAFETY: a region is used only through verbs calls and its keys.
unsafe impl Send for Mr {}
// SAFETY: as above.
unsafe impl Sync for Mr {}

/// Access flags for a region.
pub mod access {
    use rdma_mummy_sys as ibv;
    pub const LOCAL_WRITE: u32 = ibv::ibv_access_flags::IBV_ACCESS_LOCAL_WRITE.0;
    pub const REMOTE_WRITE: u32 = ibv::ibv_access_flags::IBV_ACCESS_REMOTE_WRITE.0;
    pub const REMOTE_READ: u32 = ibv::ibv_access_flags::IBV_ACCESS_REMOTE_READ.0;
    pub const REMOTE_ATOMIC: u32 = ibv::ibv_access_flags::IBV_ACCESS_REMOTE_ATOMIC.0;
    /// Memory windows may be bound to the region (an RMR onto an LMR).
    pub const MW_BIND: u32 = ibv::ibv_access_flags::IBV_ACCESS_MW_BIND.0;

    /// The remote access flags of DAT memory privileges (an LMR's or an RMR bind's).
    pub fn remote(privileges: u32) -> u32 {
        use crate::objects::lmr;
        let mut flags = 0;
        if privileges & lmr::PRIV_REMOTE_READ != 0 {
            flags |= REMOTE_READ;
        }
        if privileges & lmr::PRIV_REMOTE_WRITE != 0 {
            flags |= REMOTE_WRITE;
        }
        if privileges & lmr::PRIV_REMOTE_ATOMIC != 0 {
            flags |= REMOTE_ATOMIC;
        }
        flags
    }
}

impl Mr {
    /// Registers `length` bytes at `address` with `access` (ENOMEM past `RLIMIT_MEMLOCK`).
    pub fn register(pd: &Arc<Pd>, address: u64, length: u64, access: u32) -> io::Result<Mr> {
        // SAFETY: the PD is live; the caller vouches for the memory (a DAT consumer registers
        // memory it owns, and keeps it while registered).
        let raw = unsafe {
            ibv::ibv_reg_mr(
                pd.raw,
                address as *mut libc::c_void,
                length as usize,
                access as i32,
            )
        };
        if raw.is_null() {
            return Err(last_error());
        }
        Ok(Mr {
            raw,
            pd: pd.clone(),
            window_binds: access & access::MW_BIND != 0,
        })
    }

    pub fn lkey(&self) -> u32 {
        // SAFETY: the region is registered.
        unsafe { (*self.raw).lkey }
    }

    pub fn rkey(&self) -> u32 {
        // SAFETY: the region is registered.
        unsafe { (*self.raw).rkey }
    }

    pub fn raw(&self) -> *mut ibv::ibv_mr {
        self.raw
    }

    /// The memory region an LMR of this transport holds.
    pub fn of(registration: &crate::objects::seam::Resource) -> Option<Arc<Mr>> {
        registration.clone().downcast::<Mr>().ok()
    }
}

/// A memory window (type 2: bound by a work request on one QP, and invalidated by the peer's
/// send with invalidate), the RMR of a PZ of this transport. Each bind gives it a new key:
/// the same index, the next tag in the low byte.
pub struct Mw {
    raw: *mut ibv::ibv_mw,
    /// The key of its last bind (or of its allocation).
    rkey: std::sync::atomic::AtomicU32,
    _pd: Arc<Pd>,
}

// SAFETY: a window is used only through verbs calls and its keys.
unsafe impl Send for Mw {}
// SAFETY: as above.
unsafe impl Sync for Mw {}

impl Mw {
    pub fn alloc(pd: &Arc<Pd>) -> io::Result<Mw> {
        // SAFETY: the PD is live.
        let raw = unsafe { ibv::ibv_alloc_mw(pd.raw, ibv::ibv_mw_type::IBV_MW_TYPE_2) };
        if raw.is_null() {
            return Err(last_error());
        }
        // SAFETY: allocated just now.
        let rkey = unsafe { (*raw).rkey };
        Ok(Mw {
            raw,
            rkey: std::sync::atomic::AtomicU32::new(rkey),
            _pd: pd.clone(),
        })
    }

    pub fn of(window: &crate::objects::seam::Resource) -> Option<Arc<Mw>> {
        window.clone().downcast::<Mw>().ok()
    }

    pub fn raw(&self) -> *mut ibv::ibv_mw {
        self.raw
    }

    /// The key its next bind gives it (kept by the caller once the bind is posted).
    pub fn next_rkey(&self) -> u32 {
        let k = self.rkey.load(std::sync::atomic::Ordering::Acquire);
        (k & !0xff) | (k.wrapping_add(1) & 0xff)
    }

    /// A bind under `rkey` was posted: the window's struct says so too (a provider names the
    /// window of the next bind by the key it holds there, and the device checks it).
    pub fn set_rkey(&self, rkey: u32) {
        self.rkey.store(rkey, std::sync::atomic::Ordering::Release);
        // SAFETY: the window is live; its key field is ours to keep current (verbs leaves a
        // type 2 window's key to the consumer).
        unsafe { (*self.raw).rkey = rkey };
    }

    pub fn rkey(&self) -> u32 {
        self.rkey.load(std::sync::atomic::Ordering::Acquire)
    }
}

impl Drop for Mw {
    fn drop(&mut self) {
        // SAFETY: allocated by us, deallocated once (a bound window is invalidated with it).
        unsafe { ibv::ibv_dealloc_mw(self.raw) };
    }
}

impl Drop for Mr {
    fn drop(&mut self) {
        // SAFETY: registered by us, deregistered once.
        unsafe { ibv::ibv_dereg_mr(self.raw) };
    }
}
