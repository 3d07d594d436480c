//! Built-in IAs: of the TCP transport, one per network interface with an IPv4 address, named
//! `tcp-<netdev>`, so a machine with no `dat.conf` still has `tcp-lo`; of the RDMA transport,
//! one per RDMA port (`ofa-v2-<dev>-<port>`) and one per network interface an RDMA port
//! carries (`ofa-v2-<netdev>`), named as OpenFabrics names them.

use std::ffi::CStr;

/// The names of the interfaces that carry an IPv4 address, in the kernel's order, `lo` always
/// among them.
pub fn ipv4_interfaces() -> Vec<String> {
    let mut names = Vec::new();
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `list` with a linked list we free below with freeifaddrs.
    if unsafe { libc::getifaddrs(&mut list) } == 0 {
        let mut cur = list;
        while !cur.is_null() {
            // SAFETY: cur is a node of the list getifaddrs returned; its name is a C string and
            // its address, when non-NULL, a sockaddr whose family we read before anything else.
            unsafe {
                let ifa = &*cur;
                let is_v4 = !ifa.ifa_addr.is_null()
                    && i32::from((*ifa.ifa_addr).sa_family) == libc::AF_INET;
                if is_v4 {
                    let name = CStr::from_ptr(ifa.ifa_name).to_string_lossy().into_owned();
                    if !names.contains(&name) {
                        names.push(name);
                    }
                }
                cur = ifa.ifa_next;
            }
        }
        // SAFETY: list came from a successful getifaddrs and is freed once.
        unsafe { libc::freeifaddrs(list) };
    }
    if !names.iter().any(|n| n == "lo") {
        names.insert(0, "lo".to_string());
    }
    names
}

/// An RDMA port as sysfs shows it (no device is opened to find it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RdmaPort {
    pub device: String,
    pub port: u8,
    /// The network interface it carries (RoCE, iWARP, IPoIB), if any.
    pub netdev: Option<String>,
}

/// The RDMA ports of this machine, by device name and port number.
pub fn rdma_ports() -> Vec<RdmaPort> {
    let mut out = Vec::new();
    let Ok(devices) = std::fs::read_dir("/sys/class/infiniband") else { return out };
    let mut devices: Vec<String> = devices.flatten().map(|d| d.file_name().to_string_lossy().into_owned()).collect();
    devices.sort();
    for device in devices {
        let base = std::path::Path::new("/sys/class/infiniband").join(&device);
        let mut ports: Vec<u8> = std::fs::read_dir(base.join("ports"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|p| p.file_name().to_string_lossy().parse().ok())
            .collect();
        ports.sort();
        for port in ports {
            let ndev = base.join(format!("ports/{port}/gid_attrs/ndevs/0"));
            let netdev = std::fs::read_to_string(ndev)
                .ok()
                .map(|n| n.trim().to_string())
                .filter(|n| !n.is_empty())
                .or_else(|| {
                    std::fs::read_dir(base.join("device/net")).ok()?.flatten().next().map(|e| e.file_name().to_string_lossy().into_owned())
                });
            out.push(RdmaPort { device: device.clone(), port, netdev });
        }
    }
    out
}
