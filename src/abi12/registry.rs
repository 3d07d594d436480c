//! Types and constants of the DAT 1.2 headers (registry).
#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals, clippy::upper_case_acronyms)]

#[allow(unused_imports)]
use super::*;
#[allow(unused_imports)]
use core::ffi::*;

pub type DAT_PROVIDER_INIT_FUNC = Option<unsafe extern "C" fn(*const DAT_PROVIDER_INFO, *const c_char)>;

pub type DAT_PROVIDER_FINI_FUNC = Option<unsafe extern "C" fn(*const DAT_PROVIDER_INFO)>;

