//! Opening an IA and listing the registry for a 1.2 caller: the `u1.2` lines of `dat.conf`
//! and the built-in IAs.

use super::returns::return12;
use crate::abi::*;
use crate::abi12 as v1;
use crate::api::edge::entry;
use crate::api::{ia, registry as api_registry};
use crate::registry::{self, API_MAJOR_1};

/// `dat_ia_open` of 1.2 is a macro onto this, with major version 1.
#[export_name = "dat_ia_openv@DAT_1.2"]
pub unsafe extern "C" fn dat_ia_openv(
    ia_name_ptr: DAT_NAME_PTR,
    async_evd_min_qlen: DAT_COUNT,
    async_evd_handle: *mut DAT_EVD_HANDLE,
    ia_handle: *mut DAT_IA_HANDLE,
    dapl_major: DAT_UINT32,
    _dapl_minor: DAT_UINT32,
    thread_safety: DAT_BOOLEAN,
) -> v1::DAT_RETURN {
    return12(entry! {
        // SAFETY: forwarded from our caller; the arguments are laid out as 2.0's.
        unsafe {
            ia::openv(ia_name_ptr, async_evd_min_qlen, async_evd_handle, ia_handle, dapl_major, thread_safety, API_MAJOR_1)
        }
    })
}

#[export_name = "dat_registry_list_providers@DAT_1.2"]
pub unsafe extern "C" fn dat_registry_list_providers(
    max_to_return: DAT_COUNT,
    entries_returned: *mut DAT_COUNT,
    dat_provider_list: *mut *mut DAT_PROVIDER_INFO,
) -> v1::DAT_RETURN {
    return12(entry! {
        // SAFETY: forwarded from our caller; the provider info is laid out as 2.0's.
        unsafe {
            api_registry::list_providers(registry::entries_serving(API_MAJOR_1), API_MAJOR_1, max_to_return, entries_returned, dat_provider_list)
        }
    })
}
