//! The EVD functions whose 1.2 form differs by its `DAT_EVENT`: `dat_evd_dequeue` and
//! `dat_evd_post_se` (the waits are C: src/ext/wait.c, helped by the two functions at the
//! end). An event 1.2 cannot represent is dropped as it is taken from the queue, and the next
//! one is handed over.

use std::ffi::c_int;
use std::mem::MaybeUninit;

use super::events::{event12, event20};
use super::returns::return12;
use crate::abi as v2;
use crate::abi12 as v1;
use crate::api;

const SUCCESS: v2::DAT_RETURN = v2::dat_return_type::DAT_SUCCESS as u32;

#[export_name = "dat_evd_dequeue@DAT_1.2"]
pub unsafe extern "C" fn dat_evd_dequeue(
    evd_handle: v1::DAT_EVD_HANDLE,
    event: *mut v1::DAT_EVENT,
) -> v1::DAT_RETURN {
    let mut taken = MaybeUninit::<v2::DAT_EVENT>::uninit();
    // A NULL event goes to the core as NULL: its checks, in its order.
    let into = if event.is_null() {
        std::ptr::null_mut()
    } else {
        taken.as_mut_ptr()
    };
    loop {
        // SAFETY: `into` is NULL or this frame's event, which the core writes on success.
        let rc = unsafe { api::evd::dat_evd_dequeue(evd_handle, into) };
        if rc != SUCCESS {
            return return12(rc);
        }
        // SAFETY: the dequeue succeeded, so it wrote the event (and `into` was not NULL).
        if let Some(e) = event12(unsafe { taken.assume_init_ref() }) {
            // SAFETY: `event` is the caller's non-NULL out-pointer (API contract).
            unsafe { event.write(e) };
            return SUCCESS;
        }
    }
}

#[export_name = "dat_evd_post_se@DAT_1.2"]
pub unsafe extern "C" fn dat_evd_post_se(
    evd_handle: v1::DAT_EVD_HANDLE,
    event: *const v1::DAT_EVENT,
) -> v1::DAT_RETURN {
    // SAFETY: a non-NULL event points to the caller's 1.2 event (API contract).
    let converted = unsafe { event.as_ref() }.map(event20);
    let into = converted
        .as_ref()
        .map_or(std::ptr::null(), |e| e as *const v2::DAT_EVENT);
    // SAFETY: `into` is NULL (the core's check) or this frame's event.
    return12(unsafe { api::evd::dat_evd_post_se(evd_handle, into) })
}

/// For src/ext/wait.c's 1.2 `dat_evd_wait`: writes the 1.2 form of the 2.0 event the wait
/// took to `out` and returns 1, or returns 0 for an event 1.2 cannot represent (the wait then
/// drops it and waits on). `out` NULL: nothing is written.
#[no_mangle]
pub unsafe extern "C" fn libdat12_event_from20(
    taken: *const v2::DAT_EVENT,
    out: *mut v1::DAT_EVENT,
) -> c_int {
    // SAFETY: the C wait's own event, written by a successful wait.
    let Some(e) = (unsafe { taken.as_ref() }).and_then(event12) else {
        return 0;
    };
    if !out.is_null() {
        // SAFETY: the 1.2 caller's out-pointer, non-NULL.
        unsafe { out.write(e) };
    }
    1
}

/// For src/ext/wait.c's 1.2 waits: their 2.0 result in 1.2's numbering.
#[no_mangle]
pub extern "C" fn libdat12_return(code: v2::DAT_RETURN) -> v1::DAT_RETURN {
    return12(code)
}

/// src/ext/wait.c keeps a 2.0 event on its stack as 15 64-bit words.
const _: () = assert!(std::mem::size_of::<v2::DAT_EVENT>() == 15 * 8);
const _: () = assert!(std::mem::align_of::<v2::DAT_EVENT>() == 8);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::edge;
    use crate::error::Sub;
    use crate::objects::evd::Evd;
    use std::ptr::null_mut;
    use v1::dat_return_type as T1;

    extern "C" {
        // src/ext/wait.c's 1.2 wait, by its own name.
        fn libdat12_evd_wait(
            evd_handle: v1::DAT_EVD_HANDLE,
            timeout: v1::DAT_TIMEOUT,
            threshold: v1::DAT_COUNT,
            event: *mut v1::DAT_EVENT,
            n_more_events: *mut v1::DAT_COUNT,
        ) -> v1::DAT_RETURN;
    }

    /// A tcp-lo IA (its handle) and a software EVD on it (its handle and object).
    fn software_evd() -> (v2::DAT_IA_HANDLE, v2::DAT_EVD_HANDLE, std::sync::Arc<Evd>) {
        let (mut ia, mut async_evd) = (null_mut(), null_mut());
        // SAFETY: a NUL-terminated name and live out-pointers.
        let rc = unsafe {
            api::ia::dat_ia_openv(c"tcp-lo".as_ptr() as _, 8, &mut async_evd, &mut ia, 2, 0, 0)
        };
        assert_eq!(rc, 0, "open tcp-lo: {rc:#x}");
        let mut evd = null_mut();
        let flags = v2::dat_evd_flags::DAT_EVD_SOFTWARE_FLAG as u32;
        // SAFETY: a live IA and out-pointer.
        let rc = unsafe { api::evd::dat_evd_create(ia, 8, null_mut(), flags, &mut evd) };
        assert_eq!(rc, 0);
        let object = edge::object::<Evd>(evd, Sub::DAT_INVALID_HANDLE1).unwrap();
        (ia, evd, object)
    }

    fn software12(pointer: usize) -> v1::DAT_EVENT {
        v1::DAT_EVENT {
            event_number: v1::dat_event_number::DAT_SOFTWARE_EVENT as u32,
            evd_handle: null_mut(),
            event_data: v1::DAT_EVENT_DATA {
                software_event_data: v1::DAT_SOFTWARE_EVENT_DATA {
                    pointer: pointer as v1::DAT_PVOID,
                },
            },
        }
    }

    /// An event 1.2 has no form for, queued as the core would.
    fn post_unrepresentable(evd: &Evd, number: v2::dat_event_number) {
        let mut e = <v2::DAT_EVENT as v2::Zeroable>::zeroed();
        e.event_number = number as u32;
        evd.post(e).unwrap();
    }

    fn pointer_of(e: &v1::DAT_EVENT) -> usize {
        assert_eq!(e.event_number, 0x10001);
        // SAFETY: a software event's member.
        unsafe { e.event_data.software_event_data.pointer as usize }
    }

    fn close(ia: v2::DAT_IA_HANDLE) {
        let abrupt = v2::dat_close_flags::DAT_CLOSE_ABRUPT_FLAG as u32;
        // SAFETY: a live IA.
        assert_eq!(unsafe { api::ia::dat_ia_close(ia, abrupt) }, 0);
    }

    #[test]
    fn dequeue_skips_what_1_2_cannot_represent() {
        let (ia, evd, object) = software_evd();
        post_unrepresentable(&object, v2::dat_event_number::DAT_EXTENSION_EVENT);
        // SAFETY: a live EVD and event.
        assert_eq!(unsafe { dat_evd_post_se(evd, &software12(0x51)) }, 0);
        post_unrepresentable(&object, v2::dat_event_number::DAT_HA_DOWN_TO_1);
        let mut out = software12(0);
        // SAFETY: a live EVD and out-pointer.
        assert_eq!(unsafe { dat_evd_dequeue(evd, &mut out) }, 0);
        assert_eq!(pointer_of(&out), 0x51);
        assert_eq!(out.evd_handle, evd);
        // The HA event after it is dropped too: the queue is empty.
        // SAFETY: as above.
        let rc = unsafe { dat_evd_dequeue(evd, &mut out) };
        assert_eq!(rc, u32::from(T1::DAT_QUEUE_EMPTY));
        close(ia);
    }

    #[test]
    fn wait_skips_what_1_2_cannot_represent_and_times_out_in_1_2_numbering() {
        let (ia, evd, object) = software_evd();
        post_unrepresentable(&object, v2::dat_event_number::DAT_IB_EXTENSION_RANGE_BASE);
        // SAFETY: a live EVD and event.
        assert_eq!(unsafe { dat_evd_post_se(evd, &software12(0x52)) }, 0);
        let (mut out, mut more) = (software12(0), -1);
        // SAFETY: a live EVD and out-pointers.
        let rc = unsafe { libdat12_evd_wait(evd, 1_000_000, 1, &mut out, &mut more) };
        assert_eq!(rc, 0);
        assert_eq!(pointer_of(&out), 0x52);
        assert_eq!(more, 0);
        // Only an unrepresentable event queued: the wait drops it and times out.
        post_unrepresentable(&object, v2::dat_event_number::DAT_EXTENSION_EVENT);
        // SAFETY: as above.
        let rc = unsafe { libdat12_evd_wait(evd, 20_000, 1, &mut out, &mut more) };
        assert_eq!(rc, u32::from(T1::DAT_TIMEOUT_EXPIRED));
        close(ia);
    }

    #[test]
    fn post_se_refuses_what_2_0_refuses_in_1_2_numbering() {
        let (ia, evd, _) = software_evd();
        let mut not_software = software12(1);
        not_software.event_number = v1::dat_event_number::DAT_CONNECTION_EVENT_ESTABLISHED as u32;
        let arg2 = v1::DAT_CLASS_ERROR
            | u32::from(T1::DAT_INVALID_PARAMETER)
            | u32::from(v1::dat_return_subtype::DAT_INVALID_ARG2);
        // SAFETY: a live EVD; an event, then NULL.
        assert_eq!(unsafe { dat_evd_post_se(evd, &not_software) }, arg2);
        // SAFETY: as above.
        assert_eq!(unsafe { dat_evd_post_se(evd, std::ptr::null()) }, arg2);
        // SAFETY: a live EVD, a NULL out-pointer.
        assert_eq!(unsafe { dat_evd_dequeue(evd, null_mut()) }, arg2);
        close(ia);
    }
}
