//! Transports move bytes for the objects above them: `tcp` is the software transport that runs
//! everywhere; the RDMA one (rdma-cm + verbs) comes later.

pub mod tcp;
