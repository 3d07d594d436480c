//! Transports move bytes for the objects above them: `tcp` is the software transport that runs
//! everywhere; the RDMA one (rdma-cm + verbs) comes later. `engine` is the thread the kernel
//! wakes for them when no thread of the program is in the library.

pub mod engine;
pub mod lease;
pub(crate) mod sys;
pub mod tcp;
