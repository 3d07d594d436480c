//! RMR functions. Binding exposes part of an LMR to the peer of a connected EP: where the
//! transport checks peers' accesses itself (TCP) the window is ours and is bound at once; where
//! the device checks them (verbs) the transport binds a memory window on the EP's send queue.

use std::sync::Arc;

use super::edge::{self, entry};
use crate::abi::*;
use crate::error::{DatError, Sub};
use crate::objects::ep::Ep;
use crate::objects::lmr::{self, Lmr};
use crate::objects::pz::Pz;
use crate::objects::rmr::{BindRequest, Rmr, BIND_COMPLETION_FLAGS};

fn create(pz_handle: DAT_PZ_HANDLE, rmr_handle: *mut DAT_RMR_HANDLE) -> crate::error::DatResult {
    let pz = edge::object::<Pz>(pz_handle, Sub::DAT_INVALID_HANDLE_PZ)?;
    let out = edge::out(rmr_handle, 2)?;
    out.set(pz.ia.adopt(Arc::new(Rmr::new(pz.ia.clone(), pz.clone())))?);
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn dat_rmr_create(
    pz_handle: DAT_PZ_HANDLE,
    rmr_handle: *mut DAT_RMR_HANDLE,
) -> DAT_RETURN {
    entry! { create(pz_handle, rmr_handle) }
}

/// An RMR for a single EP (type 2 memory windows): the same object until bind ties it.
#[no_mangle]
pub unsafe extern "C" fn dat_rmr_create_for_ep(
    pz_handle: DAT_PZ_HANDLE,
    rmr_handle: *mut DAT_RMR_HANDLE,
) -> DAT_RETURN {
    entry! { create(pz_handle, rmr_handle) }
}

#[no_mangle]
pub unsafe extern "C" fn dat_rmr_query(
    rmr_handle: DAT_RMR_HANDLE,
    rmr_param_mask: DAT_RMR_PARAM_MASK,
    rmr_param: *mut DAT_RMR_PARAM,
) -> DAT_RETURN {
    entry! {
        let rmr = edge::object::<Rmr>(rmr_handle, Sub::DAT_INVALID_HANDLE_RMR)?;
        edge::flags_in(rmr_param_mask, dat_rmr_param_mask::DAT_RMR_FIELD_ALL as u32, 2)?;
        let out = edge::out(rmr_param, 3)?;
        let mut p = DAT_RMR_PARAM::zeroed();
        p.ia_handle = rmr.ia.handle();
        p.pz_handle = rmr.pz.handle();
        p.rmr_scope = dat_rmr_scope::DAT_RMR_SCOPE_EP as DAT_RMR_SCOPE;
        if let Some(b) = rmr.binding.lock().as_ref() {
            p.lmr_triplet = b.triplet;
            p.mem_priv = b.privileges;
            p.rmr_context = b.context;
            p.va_type = b.va_type as DAT_VA_TYPE;
        }
        out.set(p);
        Ok(())
    }
}

/// Binds (or, with a zero-length triplet, unbinds) an RMR through an EP: the C arguments are
/// converted here, in their order; the rules are `Rmr::bind_through`.
#[no_mangle]
pub unsafe extern "C" fn dat_rmr_bind(
    rmr_handle: DAT_RMR_HANDLE,
    lmr_handle: DAT_LMR_HANDLE,
    lmr_triplet: *const DAT_LMR_TRIPLET,
    mem_priv: DAT_MEM_PRIV_FLAGS,
    va_type: DAT_VA_TYPE,
    ep_handle: DAT_EP_HANDLE,
    user_cookie: DAT_RMR_COOKIE,
    completion_flags: DAT_COMPLETION_FLAGS,
    context: *mut DAT_RMR_CONTEXT,
) -> DAT_RETURN {
    entry! {
        let rmr = edge::object::<Rmr>(rmr_handle, Sub::DAT_INVALID_HANDLE_RMR)?;
        let lmr = edge::object::<Lmr>(lmr_handle, Sub::DAT_INVALID_HANDLE_LMR)?;
        // SAFETY: a non-NULL triplet pointer points to a triplet (API contract).
        let triplet = unsafe { edge::required_in(lmr_triplet, 3)? };
        let mem_priv = edge::flags_in(mem_priv, lmr::PRIV_KNOWN, 4)?;
        let va_type = edge::enum_in::<dat_va_type, _>(va_type, 5)?;
        let ep = edge::object::<Ep>(ep_handle, Sub::DAT_INVALID_HANDLE_EP)?;
        edge::flags_in(completion_flags, BIND_COMPLETION_FLAGS, 8)?;
        edge::out(context, 9)?;
        let bind = BindRequest { handle: rmr_handle, triplet, privileges: mem_priv, va_type, cookie: user_cookie, completion_flags, triplet_position: 3, flags_position: 8 };
        let bound = rmr.bind_through(&ep, Some(lmr), bind)?;
        edge::out(context, 9)?.set(bound);
        Ok(())
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_rmr_free(rmr_handle: DAT_RMR_HANDLE) -> DAT_RETURN {
    entry! {
        let rmr = edge::object::<Rmr>(rmr_handle, Sub::DAT_INVALID_HANDLE_RMR)?;
        rmr.ia.release::<Rmr>(rmr_handle).ok_or(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_RMR))?;
        Ok(())
    }
}
