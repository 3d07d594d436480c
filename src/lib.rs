//! libdat: the DAT 2.0 / uDAPL API as a C shared library.
//!
//! Data flows one way: C caller -> `api` (the edge) -> objects (DAT semantics) -> transport.
#![allow(clippy::missing_safety_doc)]
// Every unsafe operation sits in an `unsafe` block (an unsafe fn's body included), and every
// block and `unsafe impl` says why it is sound in a `// SAFETY:` comment.
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]
// The tests compile the DAT 1.2 prototypes (src/abi12/prototypes.rs), which share their names,
// not their types, with the 2.0 functions some tests declare.
#![cfg_attr(test, allow(clashing_extern_declarations))]

// The C headers' transcription: one item a line, as the headers lay them out and as the header
// generator (tools/headergen) reads them.
#[rustfmt::skip]
#[macro_use]
pub mod abi;
#[rustfmt::skip]
pub mod abi12;
pub mod api;
pub mod api12;
pub mod error;
pub mod handle;
pub mod objects;
pub mod registry;
pub mod runtime;
pub mod transport;
