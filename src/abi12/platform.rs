//! Types and constants of the DAT 1.2 headers (platform).
#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals, clippy::upper_case_acronyms)]

#[allow(unused_imports)]
use super::*;
#[allow(unused_imports)]
use core::ffi::*;

pub type DAT_UINT32 = u32;

pub type DAT_UINT64 = u64;

pub type DAT_UVERYLONG = c_ulonglong;

pub type DAT_PVOID = *mut c_void;

pub type DAT_COUNT = c_int;

pub type DAT_PADDR = DAT_UINT64;

pub type DAT_SOCK_ADDR = libc::sockaddr;

pub type DAT_SOCK_ADDR6 = libc::sockaddr_in6;

pub type DAT_VA_LIST = *mut c_void;

pub const DAT_OPTIMAL_ALIGNMENT: i32 = 0x100;
pub const DAT_AF_INET: i32 = 2;
pub const DAT_AF_INET6: i32 = 10;
