//! `#[repr(C)]` types, constants and `DAT_RETURN` codes of the DAT 1.2 headers (`include/dat`):
//! data only, as `src/abi` is for DAT 2.0. The same names as there, other layouts and values
//! (the triplets, `DAT_EVENT`, the attributes and params, the field masks, the return codes):
//! the 1.2 entry points convert between the two. Bootstrapped by `tools/abigen.py --set 1.2`
//! from the reference headers; one module per C header.

mod config;
mod dat;
mod dat_error;
mod platform;
// The 1.2 prototypes: no library function has them yet, so nothing may call them (they would
// bind to the 2.0 functions of the same names). Compiled by the tests alone, to type-check
// them; tools/headergen reads the file itself.
#[cfg(test)]
mod prototypes;
mod redirection;
mod registry;
mod udat;

pub use config::*;
pub use dat::*;
pub use dat_error::*;
pub use platform::*;
pub use redirection::*;
pub use registry::*;
pub use udat::*;
