//! The RDMA devices of this machine and their ports, as rdma-core reports them (rdma-core is
//! loaded at run time: a machine without it has none).

use std::ffi::CStr;
use std::fmt;

use rdma_mummy_sys as ibv;

use crate::abi::Zeroable;

/// One port of a device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Port {
    pub number: u8,
    /// `ibv_port_state` (4: ACTIVE).
    pub state: u32,
    /// GID index 0, which carries the port's address on RoCE and iWARP.
    pub gid: [u8; 16],
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Device {
    pub name: String,
    pub ports: Vec<Port>,
}

/// Why there is no device to use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Absent {
    /// `libibverbs.so.1` could not be loaded.
    NoRdmaCore,
    /// rdma-core is there, and no device.
    NoDevice,
}

impl fmt::Display for Absent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Absent::NoRdmaCore => f.write_str("rdma-core (libibverbs.so.1) is not installed"),
            Absent::NoDevice => f.write_str("no RDMA device is present"),
        }
    }
}

/// The devices present, each with its ports; at least one, or why none.
pub fn list() -> Result<Vec<Device>, Absent> {
    let mut count = 0;
    // SAFETY: ibv_get_device_list writes the count and returns a NULL-terminated array that we
    // free below, or NULL (EOPNOTSUPP when libibverbs could not be loaded).
    let list = unsafe { ibv::ibv_get_device_list(&mut count) };
    if list.is_null() {
        let errno = std::io::Error::last_os_error().raw_os_error();
        return Err(if errno == Some(libc::EOPNOTSUPP) {
            Absent::NoRdmaCore
        } else {
            Absent::NoDevice
        });
    }
    let mut devices = Vec::new();
    for i in 0..count.max(0) as usize {
        // SAFETY: `list` holds `count` device pointers, valid until it is freed.
        let dev = unsafe { *list.add(i) };
        if dev.is_null() {
            break;
        }
        // SAFETY: a listed device's name is a C string it owns.
        let name = unsafe { CStr::from_ptr(ibv::ibv_get_device_name(dev)) }
            .to_string_lossy()
            .into_owned();
        devices.push(Device {
            name,
            ports: ports(dev),
        });
    }
    // SAFETY: freed once, after the last use of its devices.
    unsafe { ibv::ibv_free_device_list(list) };
    if devices.is_empty() {
        return Err(Absent::NoDevice);
    }
    Ok(devices)
}

/// The ports of `dev`; none when it cannot be opened.
fn ports(dev: *mut ibv::ibv_device) -> Vec<Port> {
    // SAFETY: `dev` is a listed device; the context is closed below.
    let ctx = unsafe { ibv::ibv_open_device(dev) };
    if ctx.is_null() {
        return Vec::new();
    }
    let mut ports = Vec::new();
    let mut attr = ibv::ibv_device_attr::zeroed();
    // SAFETY: `ctx` is open and `attr` is ours.
    if unsafe { ibv::ibv_query_device(ctx, &mut attr) } == 0 {
        for number in 1..=attr.phys_port_cnt {
            let mut port = ibv::ibv_port_attr::zeroed();
            let mut gid = ibv::ibv_gid::zeroed();
            // SAFETY: `ctx` is open, `number` one of its ports, the out-structures ours.
            let ok = unsafe { ibv::ibv_query_port(ctx, number, &mut port) } == 0;
            // SAFETY: as above; GID index 0 exists on every port.
            let gid_ok = unsafe { ibv::ibv_query_gid(ctx, number, 0, &mut gid) } == 0;
            if ok {
                // SAFETY: every bit pattern of the union is a valid byte array.
                let raw = if gid_ok { unsafe { gid.raw } } else { [0; 16] };
                ports.push(Port {
                    number,
                    state: port.state,
                    gid: raw,
                });
            }
        }
    }
    // SAFETY: opened above, closed once.
    unsafe { ibv::ibv_close_device(ctx) };
    ports
}
