//! The data path's socket calls, and the eventfds that wake a thread asleep in a wait, made as
//! plain system calls. libc's `recv`, `send`, `sendmsg`, `read`, `write` and `close` are
//! cancellation points: in a process with more than one thread (ours always has the link's
//! threads) each call also costs two atomic operations on the thread's cancellation state, on
//! every poll and every frame. The library's threads are never cancelled, and a consumer's
//! thread must not be cancelled inside the library's Rust code (the unwinding would cross Rust
//! frames, and the process would abort): these calls are no cancellation points. The waits,
//! the library's cancellation points, block in C (src/ext/wait.c).
//!
//! On x86-64 and AArch64 the system call is made directly, and its error comes back as the
//! value it returned: no variadic `syscall()` and no `errno` (a thread-local) on a path that
//! runs at every poll. Elsewhere libc's `syscall()` makes it.
//!
//! A poll's `recv` is made as few calls deep as the code allows: the API's entry,
//! `Evd::dequeue`, and the reader's `whole_frame_ready` and `fill` are inlined into their
//! callers. The kernel overwrites the CPU's return-address predictor, so every frame a system
//! call returns through costs a mispredicted return (about 6 ns each, measured on a raw
//! socket), on the path from a message's arrival to the consumer's reply.
//!
//! Each returns the count the system call returned, or its error number. The clock the data
//! path reads is here too.

use std::os::fd::{FromRawFd, OwnedFd, RawFd};

/// A count, or the error number of the failed call.
pub type SysResult = Result<usize, i32>;

/// `recv(2)`.
///
/// # Safety
/// `buf` must be writable for `len` bytes for the duration of the call.
pub unsafe fn recv(fd: RawFd, buf: *mut u8, len: usize, flags: i32) -> SysResult {
    // SAFETY: recvfrom with no source address is recv; the caller vouches for the buffer.
    unsafe {
        syscall6(
            libc::SYS_recvfrom,
            fd as usize,
            buf as usize,
            len,
            flags as usize,
            0,
            0,
        )
    }
}

/// `send(2)`.
///
/// # Safety
/// `buf` must be readable for `len` bytes for the duration of the call.
pub unsafe fn send(fd: RawFd, buf: *const u8, len: usize, flags: i32) -> SysResult {
    // SAFETY: sendto with no destination address is send; the caller vouches for the buffer.
    unsafe {
        syscall6(
            libc::SYS_sendto,
            fd as usize,
            buf as usize,
            len,
            flags as usize,
            0,
            0,
        )
    }
}

/// `sendmsg(2)`.
///
/// # Safety
/// `msg` must describe buffers readable for their lengths for the duration of the call.
pub unsafe fn sendmsg(fd: RawFd, msg: *const libc::msghdr, flags: i32) -> SysResult {
    // SAFETY: forwarded from the caller.
    unsafe {
        syscall6(
            libc::SYS_sendmsg,
            fd as usize,
            msg as usize,
            flags as usize,
            0,
            0,
            0,
        )
    }
}

/// `recvmsg(2)`.
///
/// # Safety
/// `msg` must describe buffers writable for their lengths for the duration of the call.
pub unsafe fn recvmsg(fd: RawFd, msg: *mut libc::msghdr, flags: i32) -> SysResult {
    // SAFETY: forwarded from the caller.
    unsafe {
        syscall6(
            libc::SYS_recvmsg,
            fd as usize,
            msg as usize,
            flags as usize,
            0,
            0,
            0,
        )
    }
}

/// `process_vm_writev(2)`: copies `local` (ours) into `remote` (process `pid`'s), in order.
///
/// # Safety
/// `local` must describe buffers readable for their lengths for the duration of the call (the
/// kernel checks `remote` against the other process's mappings).
pub unsafe fn process_vm_writev(
    pid: libc::pid_t,
    local: &[libc::iovec],
    remote: &[libc::iovec],
) -> SysResult {
    // SAFETY: forwarded from the caller.
    unsafe { process_vm(libc::SYS_process_vm_writev, pid, local, remote) }
}

/// `process_vm_readv(2)`: copies `remote` (process `pid`'s) into `local` (ours), in order.
///
/// # Safety
/// `local` must describe buffers writable for their lengths for the duration of the call.
pub unsafe fn process_vm_readv(
    pid: libc::pid_t,
    local: &[libc::iovec],
    remote: &[libc::iovec],
) -> SysResult {
    // SAFETY: forwarded from the caller.
    unsafe { process_vm(libc::SYS_process_vm_readv, pid, local, remote) }
}

/// `process_vm_readv` or `process_vm_writev` (`nr`), as the callers above describe.
///
/// # Safety
/// As for the caller.
unsafe fn process_vm(
    nr: libc::c_long,
    pid: libc::pid_t,
    local: &[libc::iovec],
    remote: &[libc::iovec],
) -> SysResult {
    let (l, r) = (local.as_ptr() as usize, remote.as_ptr() as usize);
    // SAFETY: forwarded from the caller; both lists are live slices of their lengths.
    unsafe { syscall6(nr, pid as usize, l, local.len(), r, remote.len(), 0) }
}

/// What the kernel returned: a count, or minus an error number.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn sys_result(ret: isize) -> SysResult {
    if ret < 0 {
        Err(-ret as i32)
    } else {
        Ok(ret as usize)
    }
}

/// A system call of up to six arguments (integers or addresses; the unused ones 0).
///
/// # Safety
/// The arguments must be valid for system call `nr`, as for libc's `syscall()`.
#[inline(always)]
unsafe fn syscall6(
    nr: libc::c_long,
    a1: usize,
    a2: usize,
    a3: usize,
    a4: usize,
    a5: usize,
    a6: usize,
) -> SysResult {
    #[cfg(target_arch = "x86_64")]
    {
        let ret: isize;
        // SAFETY: the x86-64 Linux system call convention: number and result in rax,
        // arguments in rdi, rsi, rdx, r10, r8, r9; the kernel clobbers rcx and r11. Memory the
        // call reads or writes is the caller's to vouch for (asm! assumes memory may be touched).
        unsafe {
            std::arch::asm!(
                "syscall",
                inlateout("rax") nr as isize => ret,
                in("rdi") a1, in("rsi") a2, in("rdx") a3, in("r10") a4, in("r8") a5, in("r9") a6,
                lateout("rcx") _, lateout("r11") _,
                options(nostack),
            );
        }
        sys_result(ret)
    }
    #[cfg(target_arch = "aarch64")]
    {
        let ret: isize;
        // SAFETY: the AArch64 Linux system call convention: number in x8, arguments in x0..x5,
        // result in x0. Memory the call reads or writes is the caller's to vouch for.
        unsafe {
            std::arch::asm!(
                "svc 0",
                in("x8") nr,
                inlateout("x0") a1 as isize => ret,
                in("x1") a2, in("x2") a3, in("x3") a4, in("x4") a5, in("x5") a6,
                options(nostack),
            );
        }
        sys_result(ret)
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        // SAFETY: forwarded from the caller.
        let ret = unsafe { libc::syscall(nr, a1, a2, a3, a4, a5, a6) };
        if ret < 0 {
            // SAFETY: __errno_location returns this thread's errno, valid for the thread's life.
            Err(unsafe { *libc::__errno_location() })
        } else {
            Ok(ret as usize)
        }
    }
}

/// A new non-blocking, close-on-exec eventfd, or the error number.
pub fn eventfd() -> Result<RawFd, i32> {
    let flags = (libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) as usize;
    // SAFETY: eventfd2 takes no memory; a count it returns is a new descriptor.
    unsafe { syscall6(libc::SYS_eventfd2, 0, flags, 0, 0, 0, 0) }.map(|fd| fd as RawFd)
}

/// A new monotonic timerfd, non-blocking, disarmed.
pub fn timerfd() -> std::io::Result<OwnedFd> {
    // SAFETY: timerfd_create takes a clock and flags and returns a new descriptor or -1.
    let fd = unsafe {
        libc::timerfd_create(
            libc::CLOCK_MONOTONIC,
            libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Sets timerfd `fd` to fire once at `deadline` (`monotonic_micros`; 0: disarmed).
pub fn timerfd_at(fd: RawFd, deadline: u64) {
    let spec = libc::itimerspec {
        it_interval: libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        },
        it_value: libc::timespec {
            tv_sec: (deadline / 1_000_000) as libc::time_t,
            tv_nsec: ((deadline % 1_000_000) * 1000) as libc::c_long,
        },
    };
    // SAFETY: a timerfd, a valid itimerspec, no old value wanted. The monotonic clock the
    // deadline was read from is the timer's.
    unsafe { libc::timerfd_settime(fd, libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut()) };
}

/// Reads (and so clears) what eventfd or timerfd `fd` counted: an eventfd's counter goes back
/// to 0. Non-blocking (`fd` is): nothing waits when it is 0 already.
pub fn drain_counter(fd: RawFd) {
    let mut count: u64 = 0;
    // SAFETY: read(2) writes 8 bytes into a live local.
    let _ = unsafe {
        syscall6(
            libc::SYS_read,
            fd as usize,
            &mut count as *mut u64 as usize,
            8,
            0,
            0,
            0,
        )
    };
}

/// Adds one to eventfd `fd`'s counter: it becomes readable (a full counter already is).
pub fn eventfd_signal(fd: RawFd) {
    let one: u64 = 1;
    // SAFETY: write(2) reads the 8 bytes of a live local.
    let _ = unsafe {
        syscall6(
            libc::SYS_write,
            fd as usize,
            &one as *const u64 as usize,
            8,
            0,
            0,
            0,
        )
    };
}

/// `close(2)`, which libc's `close` is not: no cancellation point.
pub fn close(fd: RawFd) {
    // SAFETY: close takes no memory; the caller owns `fd` and uses it no more.
    let _ = unsafe { syscall6(libc::SYS_close, fd as usize, 0, 0, 0, 0, 0) };
}

// The C library's, not in the `libc` crate for Linux.
extern "C" {
    fn pthread_setcancelstate(state: libc::c_int, old: *mut libc::c_int) -> libc::c_int;
}

/// `PTHREAD_CANCEL_DISABLE` (glibc and musl).
const CANCEL_DISABLE: libc::c_int = 1;

/// The calling thread's cancellation disabled while this lives, and restored as it goes (a
/// cancel requested meanwhile stays pending: it takes effect at the thread's next cancellation
/// point, outside the library). A call of the library that reaches one of the C library's
/// cancellation points (a file read, `getifaddrs`, `poll`, `close`) would otherwise act on a
/// pending cancel there, and its unwinding, crossing Rust frames, would abort the process.
pub struct CancelOff(libc::c_int);

impl CancelOff {
    #[inline]
    pub fn new() -> CancelOff {
        let mut old = 0;
        // SAFETY: sets the calling thread's own state; `old` is a live local.
        unsafe { pthread_setcancelstate(CANCEL_DISABLE, &mut old) };
        CancelOff(old)
    }
}

impl Drop for CancelOff {
    #[inline]
    fn drop(&mut self) {
        let mut old = 0;
        // SAFETY: as in `new`; restoring the state acts on no pending cancel (only an
        // asynchronous type would, and a thread in the library's calls is made deferred by
        // none of them but the waits, which keep to C: src/ext/wait.c).
        unsafe { pthread_setcancelstate(self.0, &mut old) };
    }
}

/// How many bytes wait to be read from socket `fd` (0 when it cannot tell).
pub fn bytes_waiting(fd: RawFd) -> usize {
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int through the pointer, which is a live local.
    let r = unsafe { libc::ioctl(fd, libc::FIONREAD, &mut n) };
    if r == 0 {
        n.max(0) as usize
    } else {
        0
    }
}

/// Asks the scheduler for the shortest time slice it grants (Linux 6.12 and later; earlier
/// kernels ignore it): a thread that runs briefly when woken then preempts a busy CPU's
/// thread at once, instead of waiting for that thread's slice to run out. Best effort; the
/// thread's policy and nice value stay as they are (a thread not under the normal policy is
/// left alone).
pub fn request_short_slice() {
    /// `struct sched_attr` (sched_setattr(2)).
    #[repr(C)]
    #[derive(Default)]
    struct SchedAttr {
        size: u32,
        policy: u32,
        flags: u64,
        nice: i32,
        priority: u32,
        runtime: u64,
        deadline: u64,
        period: u64,
    }
    let size = std::mem::size_of::<SchedAttr>();
    let mut attr = SchedAttr::default();
    // SAFETY: sched_getattr writes at most `size` bytes into `attr` for the calling thread (0).
    let got = unsafe {
        syscall6(
            libc::SYS_sched_getattr,
            0,
            &mut attr as *mut SchedAttr as usize,
            size,
            0,
            0,
            0,
        )
    };
    if got.is_err() || attr.policy != libc::SCHED_OTHER as u32 {
        return;
    }
    attr.size = size as u32;
    attr.flags = 0;
    // Nanoseconds: the least the kernel accepts.
    attr.runtime = 100_000;
    // SAFETY: sched_setattr reads `attr` (its size given inside) for the calling thread (0).
    let _ = unsafe {
        syscall6(
            libc::SYS_sched_setattr,
            0,
            &attr as *const SchedAttr as usize,
            0,
            0,
            0,
            0,
        )
    };
}

/// Gives the CPU to another thread that waits for it, if any (a cheap system call if none).
pub fn yield_now() {
    // SAFETY: sched_yield takes no arguments and cannot fail on Linux.
    unsafe { libc::sched_yield() };
}

/// This process's id (a forked child's own, unlike one read once and kept).
pub fn current_pid() -> u32 {
    // SAFETY: getpid has no arguments and cannot fail.
    unsafe { libc::getpid() as u32 }
}

/// Fills `buf` from the kernel's random source (`getrandom(2)`, else `/dev/urandom`).
/// Panics where neither answers: nothing unpredictable can be made then (the API's edge turns
/// the panic into `DAT_INTERNAL_ERROR`).
pub fn random_bytes(buf: &mut [u8]) {
    let mut filled = 0;
    while filled < buf.len() {
        let rest = &mut buf[filled..];
        // SAFETY: getrandom writes at most `rest.len()` bytes into `rest`.
        let n = unsafe { libc::getrandom(rest.as_mut_ptr().cast(), rest.len(), 0) };
        if n > 0 {
            filled += n as usize;
            continue;
        }
        match std::io::Error::last_os_error().raw_os_error() {
            Some(libc::EINTR) => continue,
            _ => {
                use std::io::Read;
                let mut urandom =
                    std::fs::File::open("/dev/urandom").expect("no source of random bytes");
                urandom.read_exact(rest).expect("no source of random bytes");
                return;
            }
        }
    }
}

/// Microseconds of the monotonic clock: never 0 (it counts from boot), and read without the
/// 128-bit arithmetic of `Instant::elapsed` (the engine reads it as it holds
/// acknowledgements).
pub fn monotonic_micros() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec to the pointer we pass.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec as u64 * 1_000_000 + t.tv_nsec as u64 / 1000
}

/// Whether `LIBDAT_DEBUG` asks for the transports' diagnostics on stderr.
// Inlined: every verbs completion asks, and once set the answer is one load.
#[inline]
pub fn debug() -> bool {
    crate::runtime::settings::DEBUG.get()
}

/// An IPv4 socket address as the C library takes it.
pub fn sockaddr_in(a: std::net::SocketAddrV4) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: a.port().to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(*a.ip()).to_be(),
        },
        sin_zero: [0; 8],
    }
}

/// The IPv4 address a C socket address holds; None for another family.
pub fn from_sockaddr_in(sin: &libc::sockaddr_in) -> Option<std::net::SocketAddrV4> {
    (i32::from(sin.sin_family) == libc::AF_INET).then(|| {
        std::net::SocketAddrV4::new(
            u32::from_be(sin.sin_addr.s_addr).into(),
            u16::from_be(sin.sin_port),
        )
    })
}

/// This machine's host name (empty where it has none).
pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is ours, its length passed; gethostname NUL-terminates within it
    // (the last byte stays 0 if it truncates).
    if unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len() - 1) } != 0 {
        return String::new();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

#[cfg(test)]
mod tests {

    #[test]
    fn an_ipv4_socket_address_goes_to_c_and_back() {
        let a: std::net::SocketAddrV4 = "10.77.0.1:45248".parse().unwrap();
        let sin = sockaddr_in(a);
        assert_eq!(sin.sin_port, 45248u16.to_be());
        assert_eq!(from_sockaddr_in(&sin), Some(a));
        let other = libc::sockaddr_in {
            sin_family: libc::AF_INET6 as libc::sa_family_t,
            ..sin
        };
        assert_eq!(from_sockaddr_in(&other), None);
    }
    use super::*;
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsRawFd;

    #[test]
    fn calls_return_their_counts_and_error_numbers() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (b, _) = listener.accept().unwrap();
        let mut buf = [0u8; 16];
        // SAFETY: the buffer lives across the call, writable for its length.
        let empty = unsafe {
            recv(
                b.as_raw_fd(),
                buf.as_mut_ptr(),
                buf.len(),
                libc::MSG_DONTWAIT,
            )
        };
        assert_eq!(empty, Err(libc::EAGAIN));
        assert_eq!(
            // SAFETY: the 4 bytes live across the call.
            unsafe { send(a.as_raw_fd(), b"ping".as_ptr(), 4, libc::MSG_NOSIGNAL) },
            Ok(4)
        );
        let mut parts = [
            libc::iovec {
                iov_base: b"po".as_ptr() as *mut _,
                iov_len: 2,
            },
            libc::iovec {
                iov_base: b"ng".as_ptr() as *mut _,
                iov_len: 2,
            },
        ];
        // SAFETY: msghdr is plain data for which all-zero bytes are a valid value.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = parts.as_mut_ptr();
        msg.msg_iovlen = 2;
        assert_eq!(
            // SAFETY: the msghdr names the two iovecs, whose bytes live across the call.
            unsafe { sendmsg(a.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) },
            Ok(4)
        );
        assert_eq!(
            // SAFETY: 8 of the buffer's 16 bytes, writable across the call.
            unsafe { recv(b.as_raw_fd(), buf.as_mut_ptr(), 8, libc::MSG_WAITALL) },
            Ok(8)
        );
        assert_eq!(&buf[..8], b"pingpong");
        assert_eq!(
            // SAFETY: one byte of the buffer (the bad descriptor fails first).
            unsafe { recv(-1, buf.as_mut_ptr(), 1, 0) },
            Err(libc::EBADF)
        );
        // SAFETY: as above.
        assert_eq!(unsafe { send(-1, buf.as_ptr(), 1, 0) }, Err(libc::EBADF));
    }
}
