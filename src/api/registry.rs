//! Registry functions: dat_registry_list_providers, dat_registry_add_provider,
//! dat_registry_remove_provider, and dat_strerror.

use std::ffi::{c_char, CStr, CString};
use std::sync::LazyLock;

use super::edge::{self, entry};
use super::ia::fill_name;
use crate::abi::*;
use crate::error::{DatError, Sub, Type};
use crate::registry;

/// An entry as a caller of API major version `major` sees it: a built-in IA serves both
/// versions and says the caller's.
fn info_of(e: &registry::Entry, major: u32) -> DAT_PROVIDER_INFO {
    let mut info = DAT_PROVIDER_INFO::zeroed();
    fill_name(&mut info.ia_name, &e.ia_name);
    (info.dapl_version_major, info.dapl_version_minor) =
        e.version_for(major).unwrap_or((e.api_major, e.api_minor));
    info.is_thread_safe = if e.thread_safe {
        dat_boolean::DAT_TRUE
    } else {
        dat_boolean::DAT_FALSE
    } as DAT_BOOLEAN;
    info
}

#[no_mangle]
pub unsafe extern "C" fn dat_registry_list_providers(
    max_to_return: DAT_COUNT,
    entries_returned: *mut DAT_COUNT,
    dat_provider_list: *mut *mut DAT_PROVIDER_INFO,
) -> DAT_RETURN {
    entry! {
        // SAFETY: forwarded from our caller.
        unsafe { list_providers(registry::entries(), registry::API_MAJOR, max_to_return, entries_returned, dat_provider_list) }
    }
}

/// `dat_registry_list_providers` over `entries`, for a caller of API major version `major`
/// (1.2's provider info has 2.0's layout).
///
/// # Safety
/// The pointers are the C caller's, as `dat_registry_list_providers` takes them.
pub(crate) unsafe fn list_providers(
    entries: Vec<std::sync::Arc<registry::Entry>>,
    major: u32,
    max_to_return: DAT_COUNT,
    entries_returned: *mut DAT_COUNT,
    dat_provider_list: *mut *mut DAT_PROVIDER_INFO,
) -> crate::error::DatResult {
    {
        let count_out = edge::out(entries_returned, 2)?;
        // The man page: a list too small (max_to_return 0 included) or NULL fails with
        // DAT_INVALID_PARAMETER, and the count then says how many entries there are.
        if max_to_return < 0
            || (max_to_return as usize) < entries.len()
            || dat_provider_list.is_null()
        {
            count_out.set(entries.len() as DAT_COUNT);
            return Err(DatError::invalid_arg(
                if dat_provider_list.is_null() && max_to_return > 0 {
                    3
                } else {
                    1
                },
            ));
        }
        // SAFETY: the list is the caller's array of `max_to_return` pointers to provider infos
        // (API contract).
        let slots = unsafe {
            edge::slice_in(
                dat_provider_list as *const *mut DAT_PROVIDER_INFO,
                max_to_return,
                3,
            )?
        };
        let mut written = 0;
        for (slot, e) in slots.iter().zip(entries.iter()) {
            let out = edge::out(*slot, 3)?;
            out.set(info_of(e, major));
            written += 1;
        }
        count_out.set(written);
        Ok(())
    }
}

/// A provider's name, version and thread safety (argument 2 when malformed).
fn provider_key(info: &DAT_PROVIDER_INFO) -> crate::error::DatResult<(String, u32, u32, bool)> {
    let bytes: Vec<u8> = info
        .ia_name
        .iter()
        .take_while(|c| **c != 0)
        .map(|c| *c as u8)
        .collect();
    if bytes.len() == info.ia_name.len() || bytes.is_empty() {
        return Err(DatError::invalid_arg(2));
    }
    let name = String::from_utf8(bytes).map_err(|_| DatError::invalid_arg(2))?;
    Ok((
        name,
        info.dapl_version_major,
        info.dapl_version_minor,
        info.is_thread_safe != 0,
    ))
}

#[no_mangle]
pub unsafe extern "C" fn dat_registry_add_provider(
    provider: *const DAT_PROVIDER,
    provider_info: *const DAT_PROVIDER_INFO,
) -> DAT_RETURN {
    entry! {
        if provider.is_null() {
            return Err(DatError::invalid_arg(1));
        }
        // SAFETY: a non-NULL provider info points to one (API contract).
        let info = unsafe { edge::required_in(provider_info, 2)? };
        let (name, major, minor, thread_safe) = provider_key(&info)?;
        if registry::add_runtime(&name, major, minor, thread_safe) {
            Ok(())
        } else {
            Err(DatError::bare(Type::DAT_PROVIDER_ALREADY_REGISTERED))
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_registry_remove_provider(
    provider: *const DAT_PROVIDER,
    provider_info: *const DAT_PROVIDER_INFO,
) -> DAT_RETURN {
    entry! {
        if provider.is_null() {
            return Err(DatError::invalid_arg(1));
        }
        // SAFETY: a non-NULL provider info points to one (API contract).
        let info = unsafe { edge::required_in(provider_info, 2)? };
        let (name, major, minor, _) = provider_key(&info)?;
        if registry::remove_runtime(&name, major, minor) {
            Ok(())
        } else {
            // The man page: "DAT_INVALID_PARAMETER: The Provider was not found."
            Err(DatError::invalid_arg(2))
        }
    }
}

/// Names of every return type and subtype, made once from the enums themselves, so no
/// value can be forgotten; C keeps the pointers for the life of the process.
struct Names {
    types: Vec<(u32, CString)>,
    subtypes: Vec<(u32, CString)>,
}

static NAMES: LazyLock<Names> = LazyLock::new(|| {
    let types = (0..=0x3FFFu32)
        .filter_map(|t| {
            let v = t << 16;
            Type::try_from(v)
                .ok()
                .map(|e| (v, CString::new(format!("{e:?}")).unwrap_or_default()))
        })
        .collect();
    let subtypes = (0..=0xFFFFu32)
        .filter_map(|s| {
            Sub::try_from(s)
                .ok()
                .map(|e| (s, CString::new(format!("{e:?}")).unwrap_or_default()))
        })
        .collect();
    Names { types, subtypes }
});

/// The names `dat_strerror` gives for `value`: its type and subtype.
pub fn error_names(value: DAT_RETURN) -> Option<(&'static CStr, &'static CStr)> {
    let names = &*NAMES;
    let t = value & DAT_TYPE_MASK as u32;
    let s = value & DAT_SUBTYPE_MASK as u32;
    let major = names.types.iter().find(|(v, _)| *v == t)?.1.as_c_str();
    let minor = names.subtypes.iter().find(|(v, _)| *v == s)?.1.as_c_str();
    Some((major, minor))
}

#[no_mangle]
pub unsafe extern "C" fn dat_strerror(
    value: DAT_RETURN,
    message: *mut *const c_char,
    minor_message: *mut *const c_char,
) -> DAT_RETURN {
    entry! {
        let major_out = edge::out(message, 2)?;
        let (major, minor) = error_names(value).ok_or(DatError::invalid_arg(1))?;
        major_out.set(major.as_ptr());
        // The minor string is optional: OpenFabrics' own dat_strerror_extension passes NULL.
        if let Some(out) = edge::optional_out(minor_message) {
            out.set(minor.as_ptr());
        }
        Ok(())
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_registry_providers_related(
    ia_name1: DAT_NAME_PTR,
    ia_name2: DAT_NAME_PTR,
    relationship: *mut DAT_HA_RELATIONSHIP,
) -> DAT_RETURN {
    entry! {
        let name = |p: DAT_NAME_PTR, position| -> crate::error::DatResult<String> {
            // SAFETY: a non-NULL name is a NUL-terminated string (API contract).
            let s = unsafe { edge::c_str(p as *const c_char, position)? };
            s.to_str().map(str::to_owned).map_err(|_| DatError::invalid_arg(position))
        };
        let (a, b) = (name(ia_name1, 1)?, name(ia_name2, 2)?);
        let out = edge::out(relationship, 3)?;
        let not_found = DatError::new(Type::DAT_PROVIDER_NOT_FOUND, Sub::DAT_NAME_NOT_REGISTERED);
        let ea = registry::find(&a, registry::API_MAJOR).ok_or(not_found)?;
        let eb = registry::find(&b, registry::API_MAJOR).ok_or(not_found)?;
        // Two IAs are the same adapter when they name the same transport and interface.
        let related = ea.transport == eb.transport && ea.ia_params == eb.ia_params;
        out.set(if related { dat_ha_relationship::DAT_HA_TRUE } else { dat_ha_relationship::DAT_HA_FALSE } as DAT_HA_RELATIONSHIP);
        Ok(())
    }
}
