//! The RDMA ports of this machine as sysfs shows them (`/sys/class/infiniband`), and the
//! network interfaces they carry: read without opening a device (the registry lists the
//! built-in RDMA IAs from them; a verbs IA whose parameters name a device and port finds its
//! address through them).

/// An RDMA port as sysfs shows it (no device is opened to find it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RdmaPort {
    pub device: String,
    pub port: u8,
    /// The network interface it carries (RoCE, iWARP, IPoIB), if any.
    pub netdev: Option<String>,
}

const SYSFS: &str = "/sys/class/infiniband";

/// The RDMA ports of this machine, by device name and port number.
pub fn rdma_ports() -> Vec<RdmaPort> {
    let mut out = Vec::new();
    let Ok(devices) = std::fs::read_dir(SYSFS) else {
        return out;
    };
    let mut devices: Vec<String> = devices
        .flatten()
        .map(|d| d.file_name().to_string_lossy().into_owned())
        .collect();
    devices.sort();
    for device in devices {
        let mut ports: Vec<u8> =
            std::fs::read_dir(std::path::Path::new(SYSFS).join(&device).join("ports"))
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|p| p.file_name().to_string_lossy().parse().ok())
                .collect();
        ports.sort();
        for port in ports {
            let netdev = port_netdevs(&device, port).into_iter().next();
            out.push(RdmaPort {
                device: device.clone(),
                port,
                netdev,
            });
        }
    }
    out
}

/// GID table entries read past the last one in use: the kernel fills a port's table from its
/// lowest free index, so the entries in use come first (a table has up to 1024 entries, and
/// each read of an unused one fails: reading them all took 0.4 s of every process's start in
/// the emulated test guest).
const UNUSED_GIDS_READ: u32 = 8;

/// The network interfaces a device's port carries, the one of its first GID first: RoCE and
/// iWARP ports name them per GID, InfiniBand devices list their IPoIB interfaces.
fn port_netdevs(device: &str, port: u8) -> Vec<String> {
    let base = std::path::Path::new(SYSFS).join(device);
    let ndevs = base.join(format!("ports/{port}/gid_attrs/ndevs"));
    let mut names: Vec<String> = Vec::new();
    let (mut index, mut unused) = (0u32, 0u32);
    while unused < UNUSED_GIDS_READ {
        match std::fs::read_to_string(ndevs.join(index.to_string())).map(|n| n.trim().to_string()) {
            Ok(n) if !n.is_empty() => {
                unused = 0;
                if !names.contains(&n) {
                    names.push(n);
                }
            }
            _ => unused += 1,
        }
        index += 1;
    }
    names.extend(
        std::fs::read_dir(base.join("device/net"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned()),
    );
    names
}

/// The IPv4 address of the network interface of a device's port, for ia_params that name a
/// device and port (`"rxe0 1"`, `"mlx4_0 1"`), as OpenFabrics' scm/ucm providers take them.
pub fn ipv4_of_port(ia_params: &str) -> Option<std::net::Ipv4Addr> {
    let mut words = ia_params.split_whitespace();
    let device = words.next()?;
    let port: u8 = words.next().and_then(|p| p.parse().ok()).unwrap_or(1);
    if device.contains('/') || device.starts_with('.') {
        return None;
    }
    port_netdevs(device, port)
        .iter()
        .find_map(|n| super::interfaces::ipv4_of(n))
}
