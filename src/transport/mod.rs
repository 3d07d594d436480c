//! The providers: each moves bytes for the objects through the seam the objects define
//! (`objects::seam`: the traits a provider implements, the state it keeps in each EP, the
//! regions it may observe), and none is named by the objects or the API. A provider folder
//! holds one data path whole:
//!
//! - `tcp`: the software transport that runs everywhere; where no device does it, it applies
//!   the objects' region checks to what a peer asks of our memory and picks the status of the
//!   failures its peer causes (`tcp::inbound`);
//! - `verbs`: RDMA through rdma-cm and verbs: devices, RC connections and UD EPs, memory
//!   regions and windows, CQs, SRQs, the device's asynchronous events.
//!
//! `providers` is the one table that knows them: the API's IA opening asks it for the IA's
//! transport. The machinery both use (the progress engine, leases, system calls, memory
//! mappings, network interfaces, UD address handles) is in `runtime`, which knows nothing of
//! DAT.

pub mod providers;
pub mod tcp;
pub mod verbs;
