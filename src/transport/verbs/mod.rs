//! The RDMA transport over rdma-cm and verbs, through rdma-core loaded at run time
//! (`rdma-mummy-sys`), so the library loads and runs TCP where rdma-core is absent.
//!
//! - `devices`: the devices and ports present;
//! - `cm`: rdma-cm ids and their events, through the progress engine;
//! - `device`: an opened device, its protection domains and memory regions;
//! - `cq`: completion queues and their channels; `qp`: queue pairs and their work requests.
//!
//! The connection and data path are not built yet: an IA of this transport opens only to
//! report why it cannot (no rdma-core, no device) or that it is not implemented.

pub mod cm;
pub mod cq;
pub mod device;
pub mod devices;
pub mod qp;

use super::Transport;
use crate::error::{DatError, DatResult, Sub, Type};
use crate::registry::Entry;

/// The transport for an RDMA IA of `entry`.
pub fn for_ia(entry: &Entry) -> DatResult<&'static dyn Transport> {
    match devices::list() {
        Err(absent) => {
            if super::sys::debug() {
                eprintln!("libdat: IA {} (RDMA): {absent}", entry.ia_name);
            }
            Err(DatError::new(Type::DAT_PROVIDER_NOT_FOUND, Sub::DAT_NAME_NOT_REGISTERED))
        }
        Ok(_) => {
            if super::sys::debug() {
                eprintln!("libdat: IA {} (RDMA): the RDMA transport is not implemented yet", entry.ia_name);
            }
            Err(DatError::not_implemented())
        }
    }
}
