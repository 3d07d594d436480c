//! Types and constants of the DAT 1.2 headers (config).
#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals, clippy::upper_case_acronyms)]

#[allow(unused_imports)]
use super::*;
#[allow(unused_imports)]
use core::ffi::*;

pub const DAT_VERSION_MINOR: i32 = 2;
pub const DAT_VERSION_MAJOR: i32 = 1;
