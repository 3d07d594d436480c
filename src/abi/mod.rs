//! `#[repr(C)]` types, constants and `DAT_RETURN` codes of the DAT 2.0 headers: data only.
//! Bootstrapped by `tools/abigen.py` from the reference headers; one module per C header.

/// Conversions of a C enum: from its raw C integer without transmuting (an unknown value is
/// an error), and back.
macro_rules! c_enum {
    ($name:ident: $raw:ty; $($variant:ident),+) => {
        impl TryFrom<$raw> for $name {
            type Error = $raw;
            fn try_from(v: $raw) -> Result<Self, $raw> {
                $(if v == $name::$variant as $raw {
                    return Ok($name::$variant);
                })+
                Err(v)
            }
        }
        impl From<$name> for $raw {
            fn from(v: $name) -> $raw {
                v as $raw
            }
        }
        impl $name {
            /// The enumerator's C name.
            #[allow(unreachable_patterns, dead_code)]
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => stringify!($variant),)+
                    _ => "",
                }
            }
        }
    };
}

mod config;
mod context;
mod dat;
mod dat_error;
mod ib_extensions;
mod platform;
mod redirection;
mod registry;
mod udat;
mod zeroable;

pub use config::*;
pub use dat::*;
pub use dat_error::*;
pub use ib_extensions::*;
pub use platform::*;
pub use redirection::*;
pub use registry::*;
pub use udat::*;
pub use zeroable::*;
