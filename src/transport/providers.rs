//! The one table that picks an IA's provider as it opens: the API's IA opening asks it and
//! hands the transport to the IA it makes, so no object names a provider.

use std::net::Ipv4Addr;
use std::sync::Arc;

use super::{tcp, verbs};
use crate::error::{DatError, DatResult, Sub, Type};
use crate::objects::seam::Transport;
use crate::registry::Entry;

/// The transport an IA of `entry` runs on, at its address (None: the IA's parameters name
/// none).
pub fn for_ia(entry: &Entry, ip: Option<Ipv4Addr>) -> DatResult<Arc<dyn Transport>> {
    use crate::registry::Transport as Kind;
    let unreachable = || {
        DatError::new(
            Type::DAT_INVALID_ADDRESS,
            Sub::DAT_INVALID_ADDRESS_UNREACHABLE,
        )
    };
    match entry.transport {
        Kind::Tcp => {
            ip.ok_or_else(unreachable)?;
            Ok(Arc::new(tcp::Tcp))
        }
        Kind::Rdma => verbs::for_ia(&entry.ia_name, &entry.ia_params, ip),
        // Providers registered at run time are listed, not opened.
        Kind::Foreign => Err(DatError::not_implemented()),
    }
}
