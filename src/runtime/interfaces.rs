//! The machine's network interfaces and their IPv4 addresses, as `getifaddrs` lists them: the
//! built-in TCP IAs are named after them, and an IA's parameters may name one.

use std::ffi::CStr;

/// The names of the interfaces that carry an IPv4 address, in the kernel's order, `lo` always
/// among them.
pub fn ipv4_interfaces() -> Vec<String> {
    let mut names = Vec::new();
    for (name, _) in ipv4_addresses() {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    if !names.iter().any(|n| n == "lo") {
        names.insert(0, "lo".to_string());
    }
    names
}

/// The interface that carries `ip` (the first of them), if any.
pub fn interface_of(ip: std::net::Ipv4Addr) -> Option<String> {
    ipv4_addresses()
        .into_iter()
        .find(|(_, a)| *a == ip)
        .map(|(name, _)| name)
}

/// The IPv4 address of the interface named `name` (its first), if it has one.
pub fn ipv4_of(name: &str) -> Option<std::net::Ipv4Addr> {
    ipv4_addresses()
        .into_iter()
        .find(|(n, _)| n == name)
        .map(|(_, ip)| ip)
}

/// Every IPv4 address of the machine with its interface's name, in the kernel's order.
fn ipv4_addresses() -> Vec<(String, std::net::Ipv4Addr)> {
    let mut found = Vec::new();
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `list` with a linked list we free below with freeifaddrs.
    if unsafe { libc::getifaddrs(&mut list) } == 0 {
        let mut cur = list;
        while !cur.is_null() {
            // SAFETY: cur is a node of the list getifaddrs returned; its name is a C string and
            // its address, when non-NULL, a sockaddr whose family we read before anything else (an
            // AF_INET one is a sockaddr_in).
            unsafe {
                let ifa = &*cur;
                let is_v4 = !ifa.ifa_addr.is_null()
                    && i32::from((*ifa.ifa_addr).sa_family) == libc::AF_INET;
                if is_v4 {
                    let name = CStr::from_ptr(ifa.ifa_name).to_string_lossy().into_owned();
                    let sin = &*(ifa.ifa_addr as *const libc::sockaddr_in);
                    found.push((
                        name,
                        std::net::Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)),
                    ));
                }
                cur = ifa.ifa_next;
            }
        }
        // SAFETY: list came from a successful getifaddrs and is freed once.
        unsafe { libc::freeifaddrs(list) };
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    #[test]
    fn loopback_is_found_both_ways() {
        assert!(ipv4_interfaces().iter().any(|n| n == "lo"));
        assert_eq!(ipv4_of("lo"), Some(Ipv4Addr::LOCALHOST));
        assert_eq!(interface_of(Ipv4Addr::LOCALHOST).as_deref(), Some("lo"));
        assert_eq!(ipv4_of("no-such-netdev0"), None);
        assert_eq!(interface_of(Ipv4Addr::new(192, 0, 2, 255)), None);
    }
}
