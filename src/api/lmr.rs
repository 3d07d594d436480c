//! LMR functions.

use super::edge::{self, entry};
use crate::abi::*;
use crate::error::{DatError, DatResult, Sub, Type};
use crate::objects::ia::Ia;
use crate::objects::limits;
use crate::objects::lmr::{self, Lmr};
use crate::objects::pz::Pz;
use crate::objects::Counted;

#[no_mangle]
pub unsafe extern "C" fn dat_lmr_create(
    ia_handle: DAT_IA_HANDLE,
    mem_type: DAT_MEM_TYPE,
    region_description: DAT_REGION_DESCRIPTION,
    length: DAT_VLEN,
    pz_handle: DAT_PZ_HANDLE,
    privileges: DAT_MEM_PRIV_FLAGS,
    va_type: DAT_VA_TYPE,
    lmr_handle: *mut DAT_LMR_HANDLE,
    lmr_context: *mut DAT_LMR_CONTEXT,
    rmr_context: *mut DAT_RMR_CONTEXT,
    registered_length: *mut DAT_VLEN,
    registered_address: *mut DAT_VADDR,
) -> DAT_RETURN {
    entry! {
        let region = Region { ia_handle, mem_type, region_description, length, pz_handle, privileges };
        let outs = Outs { lmr_handle, handle_position: 8, lmr_context, rmr_context, registered_length, registered_address };
        create(region, || edge::enum_in::<dat_va_type, _>(va_type, 7), outs)
    }
}

/// What `dat_lmr_create` registers, as the consumer names it (arguments 1 to 6 in both APIs).
pub(crate) struct Region {
    pub ia_handle: DAT_IA_HANDLE,
    pub mem_type: DAT_MEM_TYPE,
    pub region_description: DAT_REGION_DESCRIPTION,
    pub length: DAT_VLEN,
    pub pz_handle: DAT_PZ_HANDLE,
    pub privileges: DAT_MEM_PRIV_FLAGS,
}

/// Where `dat_lmr_create` writes what it made: the handle (required, at `handle_position`
/// among the arguments) and the optional rest.
pub(crate) struct Outs {
    pub lmr_handle: *mut DAT_LMR_HANDLE,
    pub handle_position: u8,
    pub lmr_context: *mut DAT_LMR_CONTEXT,
    pub rmr_context: *mut DAT_RMR_CONTEXT,
    pub registered_length: *mut DAT_VLEN,
    pub registered_address: *mut DAT_VADDR,
}

/// The body of `dat_lmr_create` of both APIs: `va_type` gives the address type, checked after
/// the privileges (1.2 has none: virtual addresses).
pub(crate) fn create(
    region: Region,
    va_type: impl FnOnce() -> DatResult<dat_va_type>,
    outs: Outs,
) -> DatResult {
    let Region {
        ia_handle,
        mem_type,
        region_description,
        length,
        pz_handle,
        privileges,
    } = region;
    let Outs {
        lmr_handle,
        handle_position,
        lmr_context,
        rmr_context,
        registered_length,
        registered_address,
    } = outs;
    let ia = edge::object::<Ia>(ia_handle, Sub::DAT_INVALID_HANDLE_IA)?;
    let mem_type = edge::enum_in::<dat_mem_type, _>(mem_type, 2)?;
    let pz = edge::object::<Pz>(pz_handle, Sub::DAT_INVALID_HANDLE_PZ)?;
    let privileges = edge::flags_in(privileges, lmr::PRIV_KNOWN, 6)?;
    let va_type = va_type()?;
    let out = edge::out(lmr_handle, handle_position)?;
    if !std::sync::Arc::ptr_eq(&pz.ia, &ia) {
        return Err(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_PZ));
    }
    if va_type != dat_va_type::DAT_VA_TYPE_VA {
        return Err(DatError::bare(Type::DAT_MODEL_NOT_SUPPORTED));
    }
    let (parent, address, length) = match mem_type {
        dat_mem_type::DAT_MEM_TYPE_VIRTUAL => {
            // SAFETY: for DAT_MEM_TYPE_VIRTUAL the union holds a virtual address.
            let va = unsafe { region_description.for_va } as u64;
            if va == 0 {
                return Err(DatError::invalid_arg(3));
            }
            if length == 0
                || length > u64::from(limits::MAX_LMR_BLOCK_SIZE)
                || va.checked_add(length).is_none()
            {
                return Err(DatError::invalid_arg(4));
            }
            (None, va, length)
        }
        dat_mem_type::DAT_MEM_TYPE_LMR => {
            // SAFETY: for DAT_MEM_TYPE_LMR the union holds an LMR handle.
            let h = unsafe { region_description.for_lmr_handle };
            let parent = edge::object::<Lmr>(h, Sub::DAT_INVALID_HANDLE_LMR)?;
            if !std::sync::Arc::ptr_eq(&parent.ia, &ia) {
                return Err(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_LMR));
            }
            (Some(parent.clone()), parent.address, parent.length)
        }
        dat_mem_type::DAT_MEM_TYPE_SHARED_VIRTUAL => {
            return Err(DatError::bare(Type::DAT_MODEL_NOT_SUPPORTED));
        }
    };
    // Both kinds name process memory (an LMR's, anew: its privileges may ask for more).
    let writable = lmr::check_memory(address, length, privileges)?;
    let registration =
        ia.transport
            .register_memory(pz.domain.as_ref(), address, length, privileges, writable)?;
    let lmr = Lmr::register(
        ia.clone(),
        pz,
        mem_type,
        parent,
        address,
        length,
        privileges,
        va_type,
        registration,
    )
    .ok_or(DatError::resources(Sub::DAT_RESOURCE_MEMORY_REGION))?;
    let (context, remote_context) = (lmr.context, lmr.rmr_context());
    out.set(ia.adopt(lmr)?);
    if let Some(o) = edge::optional_out(lmr_context) {
        o.set(context);
    }
    if let Some(o) = edge::optional_out(rmr_context) {
        o.set(remote_context);
    }
    if let Some(o) = edge::optional_out(registered_length) {
        o.set(length);
    }
    if let Some(o) = edge::optional_out(registered_address) {
        o.set(address);
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn dat_lmr_query(
    lmr_handle: DAT_LMR_HANDLE,
    lmr_param_mask: DAT_LMR_PARAM_MASK,
    lmr_param: *mut DAT_LMR_PARAM,
) -> DAT_RETURN {
    entry! {
        let lmr = edge::object::<Lmr>(lmr_handle, Sub::DAT_INVALID_HANDLE_LMR)?;
        edge::flags_in(lmr_param_mask, dat_lmr_param_mask::DAT_LMR_FIELD_ALL as u32, 2)?;
        let out = edge::out(lmr_param, 3)?;
        let mut p = DAT_LMR_PARAM::zeroed();
        p.ia_handle = lmr.ia.handle();
        p.mem_type = lmr.mem_type as DAT_MEM_TYPE;
        match &lmr.parent {
            Some(parent) => p.region_desc.for_lmr_handle = parent.handle(),
            None => p.region_desc.for_va = lmr.address as DAT_PVOID,
        }
        p.length = lmr.length;
        p.pz_handle = lmr.pz.handle();
        p.mem_priv = lmr.privileges;
        p.va_type = lmr.va_type as DAT_VA_TYPE;
        p.lmr_context = lmr.context;
        p.rmr_context = lmr.rmr_context();
        p.registered_size = lmr.length;
        p.registered_address = lmr.address;
        out.set(p);
        Ok(())
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_lmr_free(lmr_handle: DAT_LMR_HANDLE) -> DAT_RETURN {
    entry! {
        let lmr = edge::object::<Lmr>(lmr_handle, Sub::DAT_INVALID_HANDLE_LMR)?;
        if lmr.users().in_use() {
            return Err(DatError::invalid_state(Sub::DAT_INVALID_STATE_LMR_IN_USE));
        }
        lmr.ia.release::<Lmr>(lmr_handle).ok_or(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_LMR))?;
        Ok(())
    }
}

/// Checks a caller's segments against their regions (no protection zone to match: any of
/// the caller's IA).
fn check_sync(ia: &std::sync::Arc<Ia>, segments: &[DAT_LMR_TRIPLET], position: u8) -> DatResult {
    for s in segments {
        let lmr = Lmr::by_context(s.lmr_context).ok_or(DatError::invalid_arg(position))?;
        if !std::sync::Arc::ptr_eq(&lmr.ia, ia) {
            return Err(DatError::invalid_arg(position));
        }
        // Segments may name regions of any protection zone of the IA.
        if lmr
            .check(
                s.virtual_address,
                u64::from(s.segment_length),
                0,
                lmr.pz.arc(),
            )
            .is_err()
        {
            return Err(DatError::invalid_arg(position));
        }
    }
    Ok(())
}

/// A sync's IA and count of segments, checked in that order before its segments. Memory is
/// coherent on every platform we run on: after the checks, a sync has nothing to do.
fn sync_args(
    ia_handle: DAT_IA_HANDLE,
    num_segments: DAT_VLEN,
) -> DatResult<(std::sync::Arc<Ia>, DAT_COUNT)> {
    let ia = edge::object::<Ia>(ia_handle, Sub::DAT_INVALID_HANDLE_IA)?;
    let count = DAT_COUNT::try_from(num_segments).map_err(|_| DatError::invalid_arg(3))?;
    Ok((ia, count))
}

/// The body of `dat_lmr_sync_rdma_read` and `_write` of both APIs: `local` gives the
/// `num_segments` segments (argument 2) once the IA and the count have been checked.
pub(crate) fn sync<'a>(
    ia_handle: DAT_IA_HANDLE,
    num_segments: DAT_VLEN,
    local: impl FnOnce(DAT_COUNT) -> DatResult<&'a [DAT_LMR_TRIPLET]>,
) -> DatResult {
    let (ia, count) = sync_args(ia_handle, num_segments)?;
    check_sync(&ia, local(count)?, 2)
}

#[no_mangle]
pub unsafe extern "C" fn dat_lmr_sync_rdma_read(
    ia_handle: DAT_IA_HANDLE,
    local_segments: *const DAT_LMR_TRIPLET,
    num_segments: DAT_VLEN,
) -> DAT_RETURN {
    entry! {
        // SAFETY: the caller passes `num_segments` triplets at `local_segments` (API contract).
        sync(ia_handle, num_segments, |n| unsafe { edge::slice_in(local_segments, n, 2) })
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_lmr_sync_rdma_write(
    ia_handle: DAT_IA_HANDLE,
    local_segments: *const DAT_LMR_TRIPLET,
    num_segments: DAT_VLEN,
) -> DAT_RETURN {
    entry! {
        // SAFETY: the caller passes `num_segments` triplets at `local_segments` (API contract).
        sync(ia_handle, num_segments, |n| unsafe { edge::slice_in(local_segments, n, 2) })
    }
}
