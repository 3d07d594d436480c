//! CNO functions.

use std::ffi::c_void;

use super::edge::{self, data_path_entry, entry};
use super::evd::timeout;
use super::wait::WaitState;
use crate::abi::*;
use crate::error::{DatError, Sub, Type};
use crate::objects::cno::Cno;
use crate::objects::ia::Ia;
use crate::objects::wakeup::WaitStep;
use crate::objects::Counted;

#[no_mangle]
pub unsafe extern "C" fn dat_cno_create(
    ia_handle: DAT_IA_HANDLE,
    agent: DAT_OS_WAIT_PROXY_AGENT,
    cno_handle: *mut DAT_CNO_HANDLE,
) -> DAT_RETURN {
    entry! {
        let ia = edge::object::<Ia>(ia_handle, Sub::DAT_INVALID_HANDLE_IA)?;
        let out = edge::out(cno_handle, 3)?;
        let (_, h) = Cno::create(&ia, agent, false)?;
        out.set(h);
        Ok(())
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_cno_fd_create(
    ia_handle: DAT_IA_HANDLE,
    fd: *mut DAT_FD,
    cno_handle: *mut DAT_CNO_HANDLE,
) -> DAT_RETURN {
    entry! {
        let ia = edge::object::<Ia>(ia_handle, Sub::DAT_INVALID_HANDLE_IA)?;
        let fd_out = edge::out(fd, 2)?;
        let out = edge::out(cno_handle, 3)?;
        // No agent: a NULL data pointer and no function.
        let no_agent = DAT_OS_WAIT_PROXY_AGENT::zeroed();
        let (cno, h) = Cno::create(&ia, no_agent, true)?;
        fd_out.set(cno.fd().ok_or(DatError::internal())?);
        out.set(h);
        Ok(())
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_cno_modify_agent(
    cno_handle: DAT_CNO_HANDLE,
    agent: DAT_OS_WAIT_PROXY_AGENT,
) -> DAT_RETURN {
    entry! {
        edge::object::<Cno>(cno_handle, Sub::DAT_INVALID_HANDLE_CNO)?.set_agent(agent);
        Ok(())
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_cno_query(
    cno_handle: DAT_CNO_HANDLE,
    cno_param_mask: DAT_CNO_PARAM_MASK,
    cno_param: *mut DAT_CNO_PARAM,
) -> DAT_RETURN {
    // DAT_CNO_FIELD_ALL is 0x4 in the header (not a union of the others): accept 0x1..0x7.
    entry! { query(cno_handle, cno_param_mask, 0x7, cno_param, |p| p) }
}

/// `dat_cno_query` for a caller whose mask may have the bits `known` and whose param is made
/// from 2.0's by `form` (this API's, or 1.2's).
pub(crate) fn query<P>(
    cno_handle: DAT_CNO_HANDLE,
    cno_param_mask: DAT_CNO_PARAM_MASK,
    known: DAT_CNO_PARAM_MASK,
    cno_param: *mut P,
    form: impl FnOnce(DAT_CNO_PARAM) -> P,
) -> crate::error::DatResult {
    let cno = edge::object::<Cno>(cno_handle, Sub::DAT_INVALID_HANDLE_CNO)?;
    if cno_param_mask & !known != 0 {
        return Err(DatError::invalid_arg(2));
    }
    let out = edge::out(cno_param, 3)?;
    let mut p = DAT_CNO_PARAM::zeroed();
    p.ia_handle = cno.ia.handle();
    match cno.fd() {
        Some(fd) => {
            p.proxy_type = dat_proxy_type::DAT_PROXY_TYPE_FD as DAT_PROXY_TYPE;
            p.proxy.fd = fd;
        }
        None => {
            p.proxy_type = dat_proxy_type::DAT_PROXY_TYPE_AGENT as DAT_PROXY_TYPE;
            p.proxy.agent = cno.agent();
        }
    }
    out.set(form(p));
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn dat_cno_free(cno_handle: DAT_CNO_HANDLE) -> DAT_RETURN {
    entry! {
        let cno = edge::object::<Cno>(cno_handle, Sub::DAT_INVALID_HANDLE_CNO)?;
        // The page: not "while it is referenced by an Event Dispatcher or while a thread is
        // blocked on it".
        if cno.users().in_use() || cno.has_waiter() {
            return Err(DatError::invalid_state(Sub::DAT_INVALID_STATE_CNO_IN_USE));
        }
        cno.ia.release::<Cno>(cno_handle).ok_or(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_CNO))?;
        Ok(())
    }
}

// `dat_cno_wait` is C (src/ext/wait.c), a cancellation point, which takes the wait in steps
// here (see `api::wait`). Declared here for Rust callers (the tests) and for the header
// generator, which writes its prototype.
extern "C" {
    pub fn dat_cno_wait(
        cno_handle: DAT_CNO_HANDLE,
        cno_timeout: DAT_TIMEOUT,
        evd_handle: *mut DAT_EVD_HANDLE,
    ) -> DAT_RETURN;
}

/// A step of `dat_cno_wait` (see `api::wait`), as `libdat_evd_wait_step` is of an EVD's.
#[no_mangle]
pub unsafe extern "C" fn libdat_cno_wait_step(
    cno_handle: DAT_CNO_HANDLE,
    cno_timeout: DAT_TIMEOUT,
    evd_handle: *mut DAT_EVD_HANDLE,
    state: *mut WaitState,
) -> DAT_RETURN {
    data_path_entry! {
        // SAFETY: the C half's own state, live for the whole wait, used by this thread alone.
        let state = unsafe { state.as_mut() }.ok_or(DatError::internal())?;
        // SAFETY: the steps of a CNO's wait hold a CNO.
        let step = match unsafe { state.held::<Cno>() } {
            Some(cno) => cno.wait_resume(),
            None => {
                let cno = edge::object::<Cno>(cno_handle, Sub::DAT_INVALID_HANDLE_CNO)?;
                edge::out(evd_handle, 3)?;
                let step = cno.wait_begin(timeout(cno_timeout));
                if let WaitStep::Sleep(_) = step {
                    state.hold(cno);
                }
                step
            }
        };
        match step {
            WaitStep::Sleep(sleep) => {
                state.sleep(sleep);
                Ok(())
            }
            WaitStep::Done(result) => {
                // SAFETY: as above.
                drop(unsafe { state.release::<Cno>() });
                let out = edge::out(evd_handle, 3)?;
                match result? {
                    Some(evd) => {
                        out.set(evd);
                        Ok(())
                    }
                    // The man page: a timeout is DAT_QUEUE_EMPTY, with the EVD handle set to NULL.
                    None => {
                        out.set(std::ptr::null_mut());
                        Err(DatError::bare(Type::DAT_QUEUE_EMPTY))
                    }
                }
            }
        }
    }
}

/// `dat_cno_wait` was cancelled as it slept: its wait ends (called by the cancellation's
/// cleanup, with the state its steps kept).
#[no_mangle]
pub unsafe extern "C" fn libdat_cno_wait_abandon(state: *mut c_void) {
    let _ = data_path_entry! {
        // SAFETY: the C half's state, as for the steps; the steps of a CNO's wait hold a CNO.
        if let Some(cno) = unsafe { state.cast::<WaitState>().as_mut() }.and_then(|s| unsafe { s.release::<Cno>() }) {
            cno.wait_abandon();
        }
        Ok(())
    };
}

#[no_mangle]
pub unsafe extern "C" fn dat_cno_trigger(
    cno_handle: DAT_CNO_HANDLE,
    evd_handle: *mut DAT_EVD_HANDLE,
) -> DAT_RETURN {
    entry! {
        let cno = edge::object::<Cno>(cno_handle, Sub::DAT_INVALID_HANDLE_CNO)?;
        let out = edge::out(evd_handle, 2)?;
        out.set(cno.take_triggered().unwrap_or(std::ptr::null_mut()));
        Ok(())
    }
}
