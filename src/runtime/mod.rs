//! Machinery with no DAT knowledge, shared by the objects and the transports: it imports
//! nothing else of the crate (`tests/layering.rs` checks), so any layer may use it.
//!
//! - `engine`: the thread the kernel wakes when no thread of the program is in the library;
//!   `lease`: which thread reads a connection when;
//! - `sys`: the data path's system calls, made as plain system calls, and its clock;
//! - `mappings`: how the process's memory is mapped (asked before memory is registered);
//! - `interfaces`: the network interfaces and their IPv4 addresses; `rdma_ports`: the RDMA
//!   ports sysfs shows and the interfaces they carry;
//! - `address_handles`: the UD address handles both transports hand out;
//! - `settings`: every `LIBDAT_*` knob, read once.

pub mod address_handles;
pub mod engine;
pub mod interfaces;
pub mod lease;
pub mod mappings;
pub mod rdma_ports;
pub mod settings;
pub(crate) mod sys;
