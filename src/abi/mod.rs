//! `#[repr(C)]` types, constants and `DAT_RETURN` codes of the DAT 2.0 headers: data only.
//! Bootstrapped by `tools/abigen.py` from the reference headers; one module per C header.

mod config;
mod dat;
mod dat_error;
mod ib_extensions;
mod platform;
mod redirection;
mod registry;
mod udat;

pub use config::*;
pub use dat::*;
pub use dat_error::*;
pub use ib_extensions::*;
pub use platform::*;
pub use redirection::*;
pub use registry::*;
pub use udat::*;
