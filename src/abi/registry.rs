//! Types and constants of the DAT 2.0 headers (registry).
#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals, clippy::upper_case_acronyms)]

#[allow(unused_imports)]
use super::*;
#[allow(unused_imports)]
use core::ffi::*;

pub type DAT_PROVIDER_INIT_FUNC = Option<unsafe extern "C" fn(*const DAT_PROVIDER_INFO, *const c_char)>;

pub type DAT_PROVIDER_FINI_FUNC = Option<unsafe extern "C" fn(*const DAT_PROVIDER_INFO)>;

pub type DAT_HA_RELATIONSHIP = u32;
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum dat_ha_relationship {
    DAT_HA_FALSE = 0,
    DAT_HA_TRUE = 1,
    DAT_HA_UNKNOWN = 2,
    DAT_HA_CONFLICTING = 3,
    DAT_HA_EXTENSION_BASE = 4,
}
c_enum!(dat_ha_relationship: u32; DAT_HA_FALSE, DAT_HA_TRUE, DAT_HA_UNKNOWN, DAT_HA_CONFLICTING, DAT_HA_EXTENSION_BASE);

