//! The data path's socket calls, made as plain system calls. libc's `recv`, `send` and
//! `sendmsg` are cancellation points: in a process with more than one thread (ours always
//! has the link's threads) each call also costs two atomic operations on the thread's
//! cancellation state, on every poll and every frame. The library's threads are never
//! cancelled, and a consumer's thread must not be cancelled inside the library at all (the
//! unwinding would cross Rust frames): these calls are no cancellation points.
//!
//! Each returns what the system call returned: a count, or -1 with `errno` set. The clock the
//! data path reads is here too.

use std::os::fd::RawFd;

/// `recv(2)`.
///
/// # Safety
/// `buf` must be writable for `len` bytes for the duration of the call.
pub unsafe fn recv(fd: RawFd, buf: *mut u8, len: usize, flags: i32) -> isize {
    // SAFETY: recvfrom with no source address is recv; the caller vouches for the buffer.
    unsafe {
        libc::syscall(libc::SYS_recvfrom, fd, buf, len, flags, std::ptr::null_mut::<libc::sockaddr>(), std::ptr::null_mut::<libc::socklen_t>()) as isize
    }
}

/// `send(2)`.
///
/// # Safety
/// `buf` must be readable for `len` bytes for the duration of the call.
pub unsafe fn send(fd: RawFd, buf: *const u8, len: usize, flags: i32) -> isize {
    // SAFETY: sendto with no destination address is send; the caller vouches for the buffer.
    unsafe { libc::syscall(libc::SYS_sendto, fd, buf, len, flags, std::ptr::null::<libc::sockaddr>(), 0 as libc::socklen_t) as isize }
}

/// `sendmsg(2)`.
///
/// # Safety
/// `msg` must describe buffers readable for their lengths for the duration of the call.
pub unsafe fn sendmsg(fd: RawFd, msg: *const libc::msghdr, flags: i32) -> isize {
    // SAFETY: forwarded from the caller.
    unsafe { libc::syscall(libc::SYS_sendmsg, fd, msg, flags) as isize }
}

/// Microseconds of the monotonic clock: never 0 (it counts from boot), and read without the
/// 128-bit arithmetic of `Instant::elapsed`, since a poll that holds acknowledgements reads it.
pub fn monotonic_micros() -> u64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec to the pointer we pass.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec as u64 * 1_000_000 + t.tv_nsec as u64 / 1000
}

/// The `errno` of the call that just failed.
pub fn errno() -> i32 {
    // SAFETY: __errno_location returns this thread's errno, valid for the thread's life.
    unsafe { *libc::__errno_location() }
}
