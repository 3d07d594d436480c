//! EVD functions.

use std::ffi::c_void;
use std::time::Duration;

use super::edge::{self, data_path_entry, entry};
use super::wait::WaitState;
use crate::abi::*;
use crate::error::{DatError, Sub};
use crate::objects::cno::Cno;
use crate::objects::evd::{self, Evd};
use crate::objects::ia::Ia;
use crate::objects::limits;
use crate::objects::wakeup::WaitStep;
use crate::objects::Counted;

// The EVD functions name their EVD parameter with the generic EVD subtype DAT 2.0 lacks;
// OpenFabrics uses DAT_INVALID_HANDLE1 ("the first handle") there.
const EVD_SUB: Sub = Sub::DAT_INVALID_HANDLE1;

fn evd(h: DAT_EVD_HANDLE) -> crate::error::DatResult<std::sync::Arc<Evd>> {
    edge::object::<Evd>(h, EVD_SUB)
}

thread_local! {
    /// The EVD this thread last dequeued from or waited on.
    static RECENT: edge::Recent<Evd> = const { edge::Recent::new() };
}

/// `DAT_TIMEOUT_INFINITE` is forever; anything else is microseconds.
pub(crate) fn timeout(t: DAT_TIMEOUT) -> Option<Duration> {
    (t != DAT_TIMEOUT_INFINITE).then(|| Duration::from_micros(u64::from(t)))
}

#[no_mangle]
pub unsafe extern "C" fn dat_evd_create(
    ia_handle: DAT_IA_HANDLE,
    evd_min_qlen: DAT_COUNT,
    cno_handle: DAT_CNO_HANDLE,
    evd_flags: DAT_EVD_FLAGS,
    evd_handle: *mut DAT_EVD_HANDLE,
) -> DAT_RETURN {
    entry! {
        let ia = edge::object::<Ia>(ia_handle, Sub::DAT_INVALID_HANDLE_IA)?;
        if evd_min_qlen <= 0 || evd_min_qlen > limits::MAX_EVD_QLEN {
            return Err(DatError::invalid_arg(2));
        }
        let cno = edge::optional_object::<Cno>(cno_handle, Sub::DAT_INVALID_HANDLE_CNO)?;
        let flags = edge::flags_in(evd_flags, evd::KNOWN_FLAGS, 4)?;
        if flags == 0 {
            return Err(DatError::invalid_arg(4));
        }
        let out = edge::out(evd_handle, 5)?;
        if cno.as_ref().is_some_and(|c| !std::sync::Arc::ptr_eq(&c.ia, &ia)) {
            return Err(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_CNO));
        }
        let (_, h) = Evd::create(&ia, evd_min_qlen as usize, cno, flags)?;
        out.set(h);
        Ok(())
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_evd_query(
    evd_handle: DAT_EVD_HANDLE,
    evd_param_mask: DAT_EVD_PARAM_MASK,
    evd_param: *mut DAT_EVD_PARAM,
) -> DAT_RETURN {
    entry! {
        let evd = evd(evd_handle)?;
        edge::flags_in(evd_param_mask, dat_evd_param_mask::DAT_EVD_FIELD_ALL as u32, 2)?;
        let out = edge::out(evd_param, 3)?;
        let p = evd.param();
        let state = if p.enabled {
            dat_evd_state::DAT_EVD_STATE_ENABLED
        } else {
            dat_evd_state::DAT_EVD_STATE_DISABLED
        } as u32
            | if p.waitable {
                dat_evd_state::DAT_EVD_STATE_WAITABLE
            } else {
                dat_evd_state::DAT_EVD_STATE_UNWAITABLE
            } as u32;
        out.set(DAT_EVD_PARAM {
            ia_handle: evd.ia.handle(),
            evd_qlen: p.qlen as DAT_COUNT,
            evd_state: state,
            cno_handle: p.cno,
            evd_flags: p.flags,
        });
        Ok(())
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_evd_free(evd_handle: DAT_EVD_HANDLE) -> DAT_RETURN {
    entry! {
        let evd = evd(evd_handle)?;
        if evd.users().in_use() {
            return Err(DatError::invalid_state(Sub::DAT_INVALID_STATE_EVD_IN_USE));
        }
        evd.ia.release::<Evd>(evd_handle).ok_or(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE1))?;
        Ok(())
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_evd_resize(
    evd_handle: DAT_EVD_HANDLE,
    evd_min_qlen: DAT_COUNT,
) -> DAT_RETURN {
    entry! {
        let evd = evd(evd_handle)?;
        if evd_min_qlen <= 0 || evd_min_qlen > limits::MAX_EVD_QLEN {
            return Err(DatError::invalid_arg(2));
        }
        // The transport's queue first: an EVD never takes more than its CQ holds.
        evd.ia.transport.resize_completion_queue(&evd, evd_min_qlen as usize)?;
        evd.resize(evd_min_qlen as usize)
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_evd_post_se(
    evd_handle: DAT_EVD_HANDLE,
    event: *const DAT_EVENT,
) -> DAT_RETURN {
    entry! {
        let evd = evd(evd_handle)?;
        // SAFETY: a non-NULL event points to a DAT_EVENT (API contract).
        let mut e = unsafe { edge::required_in(event, 2)? };
        if !evd.has_stream(dat_evd_flags::DAT_EVD_SOFTWARE_FLAG)
            || e.event_number != dat_event_number::DAT_SOFTWARE_EVENT as DAT_EVENT_NUMBER
        {
            return Err(DatError::invalid_arg(2));
        }
        e.evd_handle = evd_handle;
        evd.post(e)
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_evd_dequeue(
    evd_handle: DAT_EVD_HANDLE,
    event: *mut DAT_EVENT,
) -> DAT_RETURN {
    data_path_entry! {
        // The body inlined: a poll makes one call of its own, not two.
        edge::with_object(&RECENT, evd_handle, EVD_SUB, #[inline(always)] |evd| {
            let mut out = edge::out(event, 2)?;
            let result = evd.dequeue(out.storage());
            // DCNT_EVD_DEQUEUE is their sum, made as the counters are read.
            let counter = if result.is_ok() { dat_evd_counters::DCNT_EVD_DEQUEUE_FOUND } else { dat_evd_counters::DCNT_EVD_DEQUEUE_NOT_FOUND };
            evd.counters.bump(counter as u32);
            result
        })
    }
}

// `dat_evd_wait` is C (src/ext/wait.c), a cancellation point, which takes the wait in steps
// here (see `api::wait`). Declared here for Rust callers (the tests) and for the header
// generator, which writes its prototype.
extern "C" {
    pub fn dat_evd_wait(
        evd_handle: DAT_EVD_HANDLE,
        timeout: DAT_TIMEOUT,
        threshold: DAT_COUNT,
        event: *mut DAT_EVENT,
        n_more_events: *mut DAT_COUNT,
    ) -> DAT_RETURN;
}

/// A step of `dat_evd_wait` (see `api::wait`): the first (nothing held in `state`) checks the
/// arguments and begins the wait, the next ones follow its sleeps. `DAT_SUCCESS` with an
/// object held in `state` asks for a sleep; anything else is the wait's result.
#[no_mangle]
pub unsafe extern "C" fn libdat_evd_wait_step(
    evd_handle: DAT_EVD_HANDLE,
    timeout: DAT_TIMEOUT,
    threshold: DAT_COUNT,
    event: *mut DAT_EVENT,
    n_more_events: *mut DAT_COUNT,
    state: *mut WaitState,
) -> DAT_RETURN {
    data_path_entry! {
        // SAFETY: the C half's own state, live for the whole wait, used by this thread alone.
        let state = unsafe { state.as_mut() }.ok_or(DatError::internal())?;
        // SAFETY: the steps of an EVD's wait hold an EVD.
        let step = match unsafe { state.held::<Evd>() } {
            Some(evd) => evd.wait_resume(edge::out(event, 4)?.storage()),
            None => edge::with_object(&RECENT, evd_handle, EVD_SUB, |evd| {
                if threshold <= 0 {
                    return Err(DatError::invalid_arg(3));
                }
                let mut out = edge::out(event, 4)?;
                evd.counters.bump(dat_evd_counters::DCNT_EVD_WAIT as u32);
                let step = evd.wait_begin(self::timeout(timeout), threshold as usize, out.storage());
                if let WaitStep::Sleep(_) = step {
                    let Some(held) = evd.held() else {
                        evd.wait_abandon(); // cannot be: the EVD is lent from a live reference
                        return Err(DatError::internal());
                    };
                    state.hold(held);
                }
                Ok(step)
            })?,
        };
        match step {
            WaitStep::Sleep(sleep) => {
                state.sleep(sleep);
                Ok(())
            }
            WaitStep::Done((result, remaining)) => {
                // SAFETY: as above.
                drop(unsafe { state.release::<Evd>() });
                if let Some(more) = edge::optional_out(n_more_events) {
                    more.set(remaining as DAT_COUNT);
                }
                result
            }
        }
    }
}

/// `dat_evd_wait` was cancelled as it slept: its wait ends (called by the cancellation's
/// cleanup, with the state its steps kept).
#[no_mangle]
pub unsafe extern "C" fn libdat_evd_wait_abandon(state: *mut c_void) {
    let _ = data_path_entry! {
        // SAFETY: the C half's state, as for the steps; the steps of an EVD's wait hold an EVD.
        if let Some(evd) = unsafe { state.cast::<WaitState>().as_mut() }.and_then(|s| unsafe { s.release::<Evd>() }) {
            evd.wait_abandon();
        }
        Ok(())
    };
}

#[no_mangle]
pub unsafe extern "C" fn dat_evd_enable(evd_handle: DAT_EVD_HANDLE) -> DAT_RETURN {
    entry! {
        evd(evd_handle)?.set_enabled(true);
        Ok(())
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_evd_disable(evd_handle: DAT_EVD_HANDLE) -> DAT_RETURN {
    entry! {
        evd(evd_handle)?.set_enabled(false);
        Ok(())
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_evd_set_unwaitable(evd_handle: DAT_EVD_HANDLE) -> DAT_RETURN {
    entry! {
        evd(evd_handle)?.set_waitable(false);
        Ok(())
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_evd_clear_unwaitable(evd_handle: DAT_EVD_HANDLE) -> DAT_RETURN {
    entry! {
        evd(evd_handle)?.set_waitable(true);
        Ok(())
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_evd_modify_cno(
    evd_handle: DAT_EVD_HANDLE,
    cno_handle: DAT_CNO_HANDLE,
) -> DAT_RETURN {
    entry! {
        let evd = evd(evd_handle)?;
        let cno = edge::optional_object::<Cno>(cno_handle, Sub::DAT_INVALID_HANDLE_CNO)?;
        evd.set_cno(cno);
        Ok(())
    }
}
