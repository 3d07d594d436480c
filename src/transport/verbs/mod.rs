//! The RDMA transport over rdma-cm and verbs, through rdma-core loaded at run time
//! (`rdma-mummy-sys`), so the library loads and runs TCP where rdma-core is absent.
//!
//! - `devices`: the devices and ports present;
//! - `cm`: rdma-cm ids and their events, through the progress engine;
//! - `device`: an opened device, its protection domains and memory regions;
//! - `async_events`: a device's asynchronous events (QP errors, device and port failures);
//! - `cq`: completion queues and their channels; `qp`: queue pairs and their work requests;
//!   `srq`: shared receive queues;
//! - `transport`: an IA's transport (its device, listeners, PDs, regions, CQs);
//!   `conn`: an EP's connection; `completions`: a DTO EVD's CQ, polled and watched;
//!   `datagram`: the IB extension's UD EPs (their exchanges and address handles).

pub mod async_events;
pub mod cm;
pub mod completions;
pub mod conn;
pub mod cq;
pub mod datagram;
pub mod device;
pub mod devices;
pub mod qp;
pub mod srq;
pub mod transport;

use std::net::Ipv4Addr;
use std::sync::Arc;

use crate::error::{DatError, DatResult, Sub, Type};
use crate::objects::seam::Transport;

/// The transport for the RDMA IA `ia_name` of `ia_params` at `ip` (None: its parameters name
/// a device and port, whose network interface gives the address).
pub fn for_ia(
    ia_name: &str,
    ia_params: &str,
    ip: Option<Ipv4Addr>,
) -> DatResult<Arc<dyn Transport>> {
    let say = |what: &dyn std::fmt::Display| {
        if crate::runtime::sys::debug() {
            eprintln!("libdat: IA {ia_name} (RDMA): {what}");
        }
    };
    if let Err(absent) = devices::list() {
        say(&absent);
        return Err(DatError::new(
            Type::DAT_PROVIDER_NOT_FOUND,
            Sub::DAT_NAME_NOT_REGISTERED,
        ));
    }
    let unreachable = DatError::new(
        Type::DAT_INVALID_ADDRESS,
        Sub::DAT_INVALID_ADDRESS_UNREACHABLE,
    );
    let Some(ip) = ip.or_else(|| crate::runtime::rdma_ports::ipv4_of_port(ia_params)) else {
        say(&format_args!(
            "no IPv4 address for \"{}\" (a network interface, an address, or a device and port)",
            ia_params
        ));
        return Err(unreachable);
    };
    match transport::Verbs::open(ip) {
        Ok(t) => Ok(t),
        Err(e) => {
            say(&format_args!("no RDMA device has address {ip}: {e}"));
            Err(unreachable)
        }
    }
}

// SAFETY: rdma-core's structs and unions that these are hold integers (its enums transcribed as
// integer types, but for ibv_async_event's event type, a Rust enum whose first member,
// IBV_EVENT_CQ_ERR, is 0), raw pointers, and arrays, structs and unions of those.
crate::abi::zeroable!(
    rdma_mummy_sys::ibv_async_event,
    rdma_mummy_sys::ibv_qp_init_attr,
    rdma_mummy_sys::ibv_qp_attr,
    rdma_mummy_sys::ibv_send_wr,
    rdma_mummy_sys::ibv_srq_init_attr,
    rdma_mummy_sys::ibv_srq_attr,
    rdma_mummy_sys::ibv_device_attr,
    rdma_mummy_sys::ibv_port_attr,
    rdma_mummy_sys::ibv_gid,
    rdma_mummy_sys::ibv_gid_entry,
    rdma_mummy_sys::ibv_ah_attr,
);
