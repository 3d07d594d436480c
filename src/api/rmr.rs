//! RMR functions. Binding exposes part of an LMR to the peer of a connected EP: where the
//! transport checks peers' accesses itself (TCP) the window is ours and is bound at once; where
//! the device checks them (verbs) the transport binds a memory window on the EP's send queue.

use std::sync::Arc;

use super::edge::{self, entry};
use crate::abi::*;
use crate::error::{DatError, Sub, Type};
use crate::objects::ep::Ep;
use crate::objects::ep::{Report, Request};
use crate::objects::ep_state::{self, Post};
use crate::objects::lmr::{self, Lmr};
use crate::objects::pz::Pz;
use crate::objects::rmr::{self, Rmr};
use crate::objects::seam::WindowBind;

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

/// Completion flags `dat_rmr_bind(3DAT)` takes.
const BIND_COMPLETION_FLAGS: u32 = dat_completion_flags::DAT_COMPLETION_SUPPRESS_FLAG as u32
    | dat_completion_flags::DAT_COMPLETION_UNSIGNALLED_FLAG as u32
    | dat_completion_flags::DAT_COMPLETION_BARRIER_FENCE_FLAG as u32;

/// Binds (or, with a zero-length triplet, unbinds) an RMR through an EP. Every check that
/// needs no transport is made here; on a DISCONNECTED EP the bind is flushed to the EP's
/// request EVD as the man page says; on a CONNECTED EP it completes with a
/// `DAT_RMR_BIND_COMPLETION_EVENT` (unless suppressed): at once where the window is ours (TCP),
/// or once the device has bound the memory window (verbs).
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
        if !Arc::ptr_eq(&lmr.ia, &rmr.ia) {
            return Err(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_LMR));
        }
        if !Arc::ptr_eq(&ep.ia, &rmr.ia) {
            return Err(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_EP));
        }
        if va_type != dat_va_type::DAT_VA_TYPE_VA {
            return Err(DatError::bare(Type::DAT_MODEL_NOT_SUPPORTED));
        }
        // A zero length unbinds: no region to check.
        if triplet.segment_length != 0 {
            if triplet.lmr_context != lmr.context {
                return Err(DatError::invalid_arg(3));
            }
            if lmr.check(triplet.virtual_address, u64::from(triplet.segment_length), 0, lmr.pz()).is_err() {
                return Err(DatError::invalid_arg(3));
            }
            // Remote read needs local read on the LMR, remote write and the remote atomics
            // (which write too) local write.
            let needs_read = mem_priv & lmr::PRIV_REMOTE_READ != 0 && lmr.privileges & lmr::PRIV_LOCAL_READ == 0;
            let writes = lmr::PRIV_REMOTE_WRITE | lmr::PRIV_REMOTE_ATOMIC;
            let needs_write = mem_priv & writes != 0 && lmr.privileges & lmr::PRIV_LOCAL_WRITE == 0;
            if needs_read {
                return Err(DatError::new(Type::DAT_PRIVILEGES_VIOLATION, Sub::DAT_PRIVILEGES_READ));
            }
            if needs_write {
                return Err(DatError::new(Type::DAT_PRIVILEGES_VIOLATION, Sub::DAT_PRIVILEGES_WRITE));
            }
            if !Arc::ptr_eq(lmr.pz(), rmr.pz()) {
                return Err(DatError::bare(Type::DAT_PROTECTION_VIOLATION));
            }
        }
        let (state, ep_pz, request_evd, ep_flags) = {
            let inner = ep.inner.lock();
            (
                inner.state,
                inner.pz.as_ref().map(|p| p.arc().clone()),
                inner.request_evd.as_ref().map(|e| e.arc().clone()),
                inner.attr.request_completion_flags,
            )
        };
        let unsignalled = dat_completion_flags::DAT_COMPLETION_UNSIGNALLED_FLAG as u32;
        if completion_flags & unsignalled != 0 && ep_flags & unsignalled == 0 {
            return Err(DatError::invalid_arg(8));
        }
        match ep_pz {
            Some(pz) if Arc::ptr_eq(&pz, rmr.pz()) => {}
            Some(_) => return Err(DatError::bare(Type::DAT_PROTECTION_VIOLATION)),
            None => return Err(DatError::invalid_state(Sub::DAT_INVALID_STATE_EP_PZ)),
        }
        let evd = request_evd.ok_or(DatError::invalid_state(Sub::DAT_INVALID_STATE_EP_EVD_REQUEST))?;
        let report = Report::of(completion_flags);
        let bound = rmr.binding.lock().is_some();
        match ep_state::post_request(state)? {
            Post::Flush => {
                rmr::bind_completion(&evd, rmr_handle, user_cookie, dat_dto_completion_status::DAT_DTO_ERR_FLUSHED);
                // The bind never happened: the RMR keeps what it had, and the context it
                // reports is the one it already has.
                let current = rmr.binding.lock().as_ref().map_or(0, |b| b.context);
                edge::out(context, 9)?.set(current);
                Ok(())
            }
            // A device that checks peers' accesses itself binds a memory window on the EP's
            // send queue: the bind completes when the device has done it, and requests posted
            // after it start after it.
            Post::Run if !ep.ia.transport.checks_remote_access() && (triplet.segment_length != 0 || bound) => {
                let window = match rmr.window.get() {
                    Some(w) => w.clone(),
                    None => {
                        let made = ep.ia.transport.memory_window(rmr.pz().domain.as_ref())?;
                        rmr.window.get_or_init(|| made).clone()
                    }
                };
                let bind = WindowBind {
                    window,
                    region: (triplet.segment_length != 0).then(|| lmr.registration()).flatten(),
                    bound,
                    address: triplet.virtual_address,
                    length: u64::from(triplet.segment_length),
                    privileges: mem_priv,
                    request: Request {
                        seq: 0,
                        cookie: user_cookie.as_u64(),
                        operation: dat_dtos::DAT_DTO_BIND_MW,
                        length: 0,
                        report,
                        extended: None,
                        bind: std::num::NonZeroUsize::new(rmr_handle as usize),
                    },
                };
                let inner = ep.inner.lock();
                let Some(link) = inner.link.clone() else { return Err(DatError::invalid_state(ep_state::subtype(inner.state))) };
                let key = link.bind_window(inner, &bind)?;
                edge::out(context, 9)?.set(rmr.bind(lmr, triplet, mem_priv, va_type, &ep, Some(key)));
                Ok(())
            }
            // The window is ours: bound at once, so whatever is posted after the bind (the
            // send that carries the new context) finds it there, as the bind's fence asks.
            // (An unbind of an RMR that is not bound has nothing to do on any transport.)
            Post::Run => {
                edge::out(context, 9)?.set(rmr.bind(lmr, triplet, mem_priv, va_type, &ep, None));
                let done = dat_dto_completion_status::DAT_DTO_SUCCESS;
                report.deliver(&evd, rmr::bind_event(rmr_handle, user_cookie, done), done);
                Ok(())
            }
        }
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
