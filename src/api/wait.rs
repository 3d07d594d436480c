//! `dat_evd_wait` and `dat_cno_wait` are cancellation points, as a blocking wait of the C
//! library is: a thread blocked in one may be cancelled (`pthread_cancel`). The unwinding that
//! a cancellation starts must cross no Rust frame (the process would abort), so both are C
//! functions (src/ext/wait.c) that block in `ppoll` themselves, between steps of the wait
//! taken here: each step runs with cancellation disabled, never blocks, and returns either
//! the wait's result or a sleep (`objects::wakeup`). Between steps the C half keeps a
//! [`WaitState`], which holds the object waited on; a cancel acted on in the sleep abandons the
//! wait (the `*_abandon` functions of `api::evd` and `api::cno`).

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use crate::objects::wakeup::Sleep;

/// What the C half keeps between the steps of a wait. Mirrored by src/ext/wait.c.
#[repr(C)]
pub struct WaitState {
    /// The object waited on, held while the waiter sleeps (`Arc::into_raw`); null before the
    /// first step and once the wait has ended. A step that returns `DAT_SUCCESS` and leaves
    /// it set asks for a sleep, then the next step.
    object: *const c_void,
    /// The sleep: until this descriptor is readable (-1: none) ...
    fd: c_int,
    /// ... or this many nanoseconds have passed (-1: no bound).
    sleep_ns: i64,
}

impl WaitState {
    /// The waiter is to sleep on `object`: the state holds it until the wait ends.
    pub fn hold<T>(&mut self, object: Arc<T>) {
        let earlier = std::mem::replace(&mut self.object, Arc::into_raw(object).cast());
        debug_assert!(earlier.is_null(), "a wait holds one object");
    }

    /// The waiter sleeps as `sleep` says (on the object it holds).
    pub fn sleep(&mut self, sleep: Sleep) {
        self.fd = sleep.fd.unwrap_or(-1);
        self.sleep_ns = sleep
            .at_most
            .map_or(-1, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
    }

    /// The object held, if the wait sleeps.
    ///
    /// # Safety
    /// What the state holds, if anything, must be a `T` (each wait's steps hold one kind).
    pub unsafe fn held<T>(&self) -> Option<&T> {
        // SAFETY: a non-null `object` came from `Arc::into_raw` of an `Arc<T>` (the caller's
        // promise) whose reference the state still holds, so the `T` lives at least as long.
        unsafe { self.object.cast::<T>().as_ref() }
    }

    /// The wait has ended: the object held, if any, is no longer.
    ///
    /// # Safety
    /// As for [`WaitState::held`].
    pub unsafe fn release<T>(&mut self) -> Option<Arc<T>> {
        let object = std::mem::replace(&mut self.object, std::ptr::null());
        // SAFETY: a non-null `object` is the reference `sleep` made from an `Arc<T>` (the
        // caller's promise), taken back once: the field is null from now on.
        (!object.is_null()).then(|| unsafe { Arc::from_raw(object.cast::<T>()) })
    }
}
