//! datinfo: lists the registered IAs (name, transport, the DAT versions whose programs may open
//! it, parameters, where each came from); with `-v` opens each one a DAT 2.0 program may open
//! and prints its IA and provider attributes. Then the RDMA devices present,
//! with their ports.
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]

use std::ffi::{c_char, CString};

use dat::abi::*;
use dat::api::{ia, registry as reg_api};
use dat::registry;
use dat::transport::verbs::devices;

fn name(buf: &[c_char]) -> String {
    let bytes: Vec<u8> = buf
        .iter()
        .take_while(|c| **c != 0)
        .map(|c| *c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The API versions whose programs may open the IA, as dat.conf spells them: `u2.0,u1.2` for
/// a built-in IA, which serves both.
fn versions(e: &registry::Entry) -> String {
    e.versions()
        .iter()
        .map(|(major, minor)| format!("u{major}.{minor}"))
        .collect::<Vec<_>>()
        .join(",")
}

fn strerror(code: DAT_RETURN) -> String {
    match reg_api::error_names(code) {
        Some((major, minor)) => format!("{} {}", major.to_string_lossy(), minor.to_string_lossy()),
        None => format!("{code:#x}"),
    }
}

fn show_attributes(ia_name: &str) {
    let c_name = CString::new(ia_name).unwrap_or_default();
    let mut async_evd: DAT_EVD_HANDLE = std::ptr::null_mut();
    let mut ia_h: DAT_IA_HANDLE = std::ptr::null_mut();
    // SAFETY: every pointer is to a live local of the right type.
    let rc = unsafe {
        ia::dat_ia_openv(
            c_name.as_ptr() as DAT_NAME_PTR,
            8,
            &mut async_evd,
            &mut ia_h,
            2,
            0,
            1,
        )
    };
    if rc != 0 {
        println!("    open failed: {}", strerror(rc));
        return;
    }
    let mut a = DAT_IA_ATTR::zeroed();
    let mut p = DAT_PROVIDER_ATTR::zeroed();
    // SAFETY: the handle is live and the out-pointers point to live locals.
    let rc = unsafe {
        ia::dat_ia_query(
            ia_h,
            std::ptr::null_mut(),
            DAT_IA_FIELD_ALL,
            &mut a,
            DAT_PROVIDER_FIELD_ALL,
            &mut p,
        )
    };
    if rc == 0 {
        let addr = if a.ia_address_ptr.is_null() {
            "-".to_string()
        } else {
            // SAFETY: the IA's address is a sockaddr_in valid while the IA is open.
            let sin = unsafe { &*(a.ia_address_ptr as *const libc::sockaddr_in) };
            std::net::Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)).to_string()
        };
        println!(
            "    adapter          {} ({})",
            name(&a.adapter_name),
            name(&a.vendor_name)
        );
        println!("    address          {addr}");
        println!(
            "    provider         {} {}.{}, DAT {}.{}",
            name(&p.provider_name),
            p.provider_version_major,
            p.provider_version_minor,
            p.dapl_version_major,
            p.dapl_version_minor
        );
        println!("    max eps          {}", a.max_eps);
        println!(
            "    max evds         {} (qlen {})",
            a.max_evds, a.max_evd_qlen
        );
        println!("    max dto per ep   {}", a.max_dto_per_ep);
        println!("    max iov          {}", a.max_iov_segments_per_dto);
        println!("    max message      {} bytes", a.max_message_size);
        println!("    max rdma         {} bytes", a.max_rdma_size);
        println!(
            "    max rdma reads   {} in / {} out per ep",
            a.max_rdma_read_per_ep_in, a.max_rdma_read_per_ep_out
        );
        println!("    max lmrs / pzs   {} / {}", a.max_lmrs, a.max_pzs);
        println!("    private data     {} bytes", p.max_private_data_size);
        println!("    thread safe      {}", p.is_thread_safe != 0);
    } else {
        println!("    query failed: {}", strerror(rc));
    }
    // SAFETY: the handle is live.
    unsafe {
        ia::dat_ia_close(
            ia_h,
            dat_close_flags::DAT_CLOSE_ABRUPT_FLAG as DAT_CLOSE_FLAGS,
        )
    };
}

fn main() {
    let verbose = std::env::args()
        .skip(1)
        .any(|a| a == "-v" || a == "--verbose");
    if std::env::args().skip(1).any(|a| a == "-h" || a == "--help") {
        println!("usage: datinfo [-v]\n  lists the registered DAT IAs; -v opens each and prints its attributes");
        return;
    }
    let path = registry::conf_path();
    let entries = registry::entries();
    println!(
        "static registry: {} ({})",
        path.display(),
        if path.exists() {
            "read"
        } else {
            "absent: built-in entries only"
        }
    );
    let serving = |major| entries.iter().filter(|e| e.serves(major)).count();
    println!(
        "{} IA(s): {} open to DAT 2.0 programs, {} to DAT 1.2 programs",
        entries.len(),
        serving(registry::API_MAJOR),
        serving(registry::API_MAJOR_1)
    );
    for e in &entries {
        println!(
            "  {:<20} {:<5} {:<9} {:<13} {:<10} params \"{}\"  from {}",
            e.ia_name,
            e.transport.name(),
            versions(e),
            if e.thread_safe {
                "threadsafe"
            } else {
                "nonthreadsafe"
            },
            if e.is_default {
                "default"
            } else {
                "nondefault"
            },
            e.ia_params,
            e.origin
        );
        if verbose {
            if e.serves(registry::API_MAJOR) {
                show_attributes(&e.ia_name);
            } else {
                println!("    not opened here: DAT 1.2 programs alone open it");
            }
        }
    }
    show_rdma_devices();
}

fn show_rdma_devices() {
    match devices::list() {
        Err(absent) => println!("RDMA devices: none ({absent})"),
        Ok(list) => {
            println!("RDMA devices: {}", list.len());
            for d in list {
                for p in &d.ports {
                    let gid = std::net::Ipv6Addr::from(p.gid);
                    let state = if p.state == 4 {
                        "ACTIVE".to_string()
                    } else {
                        format!("state {}", p.state)
                    };
                    println!("  {:<20} port {} {:<8} gid {gid}", d.name, p.number, state);
                }
                if d.ports.is_empty() {
                    println!("  {:<20} (could not be opened)", d.name);
                }
            }
        }
    }
}
