//! libdat: the DAT 2.0 / uDAPL API as a C shared library.
//!
//! Data flows one way: C caller -> `api` (the edge) -> objects (DAT semantics) -> transport.
#![allow(clippy::missing_safety_doc)]

pub mod abi;
pub mod api;
pub mod error;
pub mod handle;
pub mod objects;
pub mod registry;
pub mod transport;
