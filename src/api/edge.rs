//! The edge between C and Rust: the panic boundary and the checked conversions of what C hands
//! us (handles, out-pointers, in-pointers, arrays, strings, enum values). The other files of
//! the API layer have `unsafe` too, each block with its `// SAFETY:` line: every exported
//! function is an `unsafe extern "C" fn`, and their blocks call these conversions, read the C
//! API's unions (cookies, region descriptions), zero C structs before filling them, write the
//! caller's counter array (`ext`) and hold the object a wait sleeps on (`wait`).

use std::cell::RefCell;
use std::ffi::CStr;
use std::mem::MaybeUninit;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::NonNull;
use std::sync::Arc;
use std::thread::LocalKey;

use crate::abi::*;
use crate::error::{to_return, DatError, DatResult, Sub};
use crate::handle::{self, Object};

/// The body of every exported function: panics never cross into C (they become
/// `DAT_INTERNAL_ERROR`), errors become their `DAT_RETURN`, and the thread cannot be cancelled
/// inside (`sys::CancelOff`: the library's functions are no cancellation points but the
/// waits, which are C's, src/ext/wait.c).
macro_rules! entry {
    ($($body:tt)*) => {
        $crate::api::edge::run_uncancelled(move || -> $crate::error::DatResult { $($body)* })
    };
}
pub(crate) use entry;

/// `entry!` for the data path (the posts, the dequeue, the waits' steps), which reaches none of
/// the C library's cancellation points (its system calls are made directly, `runtime::sys`)
/// and so leaves the thread's cancellation state alone: two atomic operations fewer per call.
macro_rules! data_path_entry {
    ($($body:tt)*) => {
        $crate::api::edge::run(move || -> $crate::error::DatResult { $($body)* })
    };
}
pub(crate) use data_path_entry;

/// `run`, the thread's cancellation disabled meanwhile.
#[inline]
pub fn run_uncancelled(body: impl FnOnce() -> DatResult) -> DAT_RETURN {
    let _off = crate::runtime::sys::CancelOff::new();
    run(body)
}

// Inlined: one frame fewer above a poll's system call (see `runtime::sys`).
#[inline(always)]
pub fn run(body: impl FnOnce() -> DatResult) -> DAT_RETURN {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(result) => to_return(result),
        Err(_) => DatError::internal().code(),
    }
}

/// The live object of type `T` behind `h`, or `DAT_INVALID_HANDLE` with subtype `sub`.
pub fn object<T: Object>(h: DAT_HANDLE, sub: Sub) -> DatResult<Arc<T>> {
    handle::get::<T>(h).ok_or(DatError::invalid_handle(sub))
}

/// A thread's memory of its last two lookups of one object type (a ping-pong dequeues its
/// receive EVD and its request EVD in turn), the latest first: the handle, the count of
/// handle removals when it was made, and the object.
pub struct Recent<T>(RefCell<[Option<Remembered<T>>; 2]>);

type Remembered<T> = (usize, u64, Arc<T>);

impl<T> Recent<T> {
    pub const fn new() -> Recent<T> {
        Recent(RefCell::new([None, None]))
    }
}

impl<T> Default for Recent<T> {
    fn default() -> Recent<T> {
        Recent::new()
    }
}

/// Lends `body` the live object of type `T` behind `h` (else `DAT_INVALID_HANDLE` with
/// subtype `sub`). The thread remembers its last lookups in `recent`, good for as long as no
/// handle is removed: the data-transfer calls, made on the same EP or EVD over and over, find
/// it there without the table's lock or a reference count.
pub fn with_object<T: Object, R>(
    recent: &'static LocalKey<Recent<T>>,
    h: DAT_HANDLE,
    sub: Sub,
    body: impl FnOnce(&T) -> DatResult<R>,
) -> DatResult<R> {
    let removals = handle::removals();
    let mut body = Some(body);
    let lent = recent.try_with(|r| {
        let remembered = r.0.try_borrow().ok()?;
        let (_, _, o) = remembered
            .iter()
            .flatten()
            .find(|(key, at, _)| *key == h as usize && *at == removals)?;
        body.take().map(|b| b(o))
    });
    if let Ok(Some(result)) = lent {
        return result;
    }
    let o = object::<T>(h, sub)?;
    // Not while the memory is lent out (a nested lookup), nor as the thread ends.
    let _ = recent.try_with(|r| {
        let forgotten = r.0.try_borrow_mut().ok().map(|mut m| {
            let oldest = m[1].take();
            m[1] = m[0].replace((h as usize, removals, o.clone()));
            oldest
        });
        drop(forgotten); // outside the borrow: the last reference may go here
    });
    match body.take() {
        Some(b) => b(&o),
        None => Err(DatError::internal()),
    }
}

/// Like [`object`], but `DAT_HANDLE_NULL` is a valid "none".
pub fn optional_object<T: Object>(h: DAT_HANDLE, sub: Sub) -> DatResult<Option<Arc<T>>> {
    if h.is_null() {
        Ok(None)
    } else {
        object(h, sub).map(Some)
    }
}

/// A checked, non-NULL out-parameter.
pub struct Out<T>(NonNull<T>);

impl<T> Out<T> {
    pub fn set(self, value: T) {
        // SAFETY: the pointer is non-NULL, and the C caller promises, as the DAT API requires,
        // that an out-parameter points to writable storage of its type.
        unsafe { self.0.as_ptr().write(value) }
    }

    /// The storage, to be written in place.
    pub fn storage(&mut self) -> &mut MaybeUninit<T> {
        // SAFETY: as in `set`; MaybeUninit asks nothing of what the storage holds now.
        unsafe { &mut *(self.0.as_ptr() as *mut MaybeUninit<T>) }
    }
}

/// An out-parameter that must not be NULL: `DAT_INVALID_PARAMETER` with `DAT_INVALID_ARGn`.
pub fn out<T>(p: *mut T, position: u8) -> DatResult<Out<T>> {
    NonNull::new(p)
        .map(Out)
        .ok_or(DatError::invalid_arg(position))
}

/// An out-parameter that may be NULL (the caller does not want the value).
pub fn optional_out<T>(p: *mut T) -> Option<Out<T>> {
    NonNull::new(p).map(Out)
}

/// A copy of the struct an in-pointer points to; `None` for NULL.
///
/// # Safety
/// A non-NULL `p` must point to an initialised `T` (the C caller's promise).
pub unsafe fn read_in<T: Copy>(p: *const T) -> Option<T> {
    // SAFETY: non-NULL in-pointers point to an initialised value of their type (API contract);
    // read_unaligned tolerates callers that pack structures.
    (!p.is_null()).then(|| unsafe { p.read_unaligned() })
}

/// A required in-pointer.
///
/// # Safety
/// As [`read_in`].
pub unsafe fn required_in<T: Copy>(p: *const T, position: u8) -> DatResult<T> {
    // SAFETY: forwarded from our caller.
    unsafe { read_in(p) }.ok_or(DatError::invalid_arg(position))
}

/// An array the caller hands us: `count` elements at `p`. A negative count, or a NULL pointer
/// with a non-zero count, is `DAT_INVALID_PARAMETER` naming `position`.
///
/// # Safety
/// A non-NULL `p` must point to `count` initialised elements that outlive `'a`.
pub unsafe fn slice_in<'a, T>(p: *const T, count: DAT_COUNT, position: u8) -> DatResult<&'a [T]> {
    let len = usize::try_from(count).map_err(|_| DatError::invalid_arg(position))?;
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(DatError::invalid_arg(position));
    }
    // SAFETY: p is non-NULL and the caller promises `count` initialised elements there.
    Ok(unsafe { std::slice::from_raw_parts(p, len) })
}

/// A C string the caller hands us.
///
/// # Safety
/// A non-NULL `p` must point to a NUL-terminated string that outlives `'a`.
pub unsafe fn c_str<'a>(p: *const std::ffi::c_char, position: u8) -> DatResult<&'a CStr> {
    if p.is_null() {
        return Err(DatError::invalid_arg(position));
    }
    // SAFETY: p is non-NULL and the caller promises a NUL-terminated string.
    Ok(unsafe { CStr::from_ptr(p) })
}

/// A provider (IA) name: NUL-terminated within `DAT_NAME_MAX_LENGTH` bytes, UTF-8; read no
/// further than that, so an unterminated one is `DAT_INVALID_PARAMETER` naming `position`,
/// not a read past its buffer.
pub unsafe fn name_in<'a>(p: *const std::ffi::c_char, position: u8) -> DatResult<&'a str> {
    if p.is_null() {
        return Err(DatError::invalid_arg(position));
    }
    let max = crate::abi::DAT_NAME_MAX_LENGTH as usize;
    // SAFETY: p is non-NULL; strnlen reads at most `max` bytes of the caller's name.
    let len = unsafe { libc::strnlen(p, max) };
    if len >= max {
        return Err(DatError::invalid_arg(position));
    }
    // SAFETY: `len` bytes at p were just read, and the byte after them is its NUL.
    let bytes = unsafe { std::slice::from_raw_parts(p as *const u8, len) };
    std::str::from_utf8(bytes).map_err(|_| DatError::invalid_arg(position))
}

/// A C enum value converted to its Rust enum without transmuting: an unknown value is
/// `DAT_INVALID_PARAMETER` naming `position`.
pub fn enum_in<E: TryFrom<R>, R>(raw: R, position: u8) -> DatResult<E> {
    E::try_from(raw).map_err(|_| DatError::invalid_arg(position))
}

/// Bit flags: every bit set in `raw` must be one of `known`.
pub fn flags_in(raw: u32, known: u32, position: u8) -> DatResult<u32> {
    if raw & !known == 0 {
        Ok(raw)
    } else {
        Err(DatError::invalid_arg(position))
    }
}
