//! A doorbell another thread rings to wake a thread that waits on a socket (an eventfd in
//! the same poll).

use std::io;
use std::net::TcpStream;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

pub struct Doorbell {
    fd: OwnedFd,
}

/// Why [`Doorbell::wait`] returned.
#[derive(Debug, PartialEq, Eq)]
pub enum Woken {
    /// The socket has something to read: data, the end of the stream or an error.
    Readable,
    /// Someone rang (the ring is cleared).
    Rung,
    /// The time ran out.
    TimedOut,
}

impl Doorbell {
    pub fn new() -> io::Result<Doorbell> {
        // SAFETY: eventfd takes two integers and returns a new descriptor or -1.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh descriptor that nothing else owns.
        Ok(Doorbell { fd: unsafe { OwnedFd::from_raw_fd(fd) } })
    }

    /// Wakes the waiting thread (or its next wait).
    pub fn ring(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64 to our own eventfd; a full counter is fine
        // (the ring is already pending).
        unsafe { libc::write(self.fd.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }

    fn clear(&self) {
        let mut count: u64 = 0;
        // SAFETY: reads 8 bytes into a live u64 from our own non-blocking eventfd.
        unsafe { libc::read(self.fd.as_raw_fd(), (&mut count as *mut u64).cast(), 8) };
    }

    /// Waits until `socket` is readable or the bell rings, at most `timeout` (None: forever),
    /// without holding the socket's reader.
    pub fn wait(&self, socket: &TcpStream, timeout: Option<Duration>) -> Woken {
        let mut fds = [
            libc::pollfd { fd: socket.as_raw_fd(), events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: self.fd.as_raw_fd(), events: libc::POLLIN, revents: 0 },
        ];
        let ms = timeout.map_or(-1, |t| t.as_millis().min(i32::MAX as u128) as i32);
        loop {
            // SAFETY: two valid pollfds for the duration of the call.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, ms) };
            if n > 0 {
                if fds[0].revents != 0 {
                    return Woken::Readable;
                }
                self.clear();
                return Woken::Rung;
            }
            if n == 0 {
                return Woken::TimedOut;
            }
            if io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                return Woken::Readable; // let the read report the error
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::TcpListener;

    #[test]
    fn wakes_on_a_ring_on_data_and_on_time() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut near = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (far, _) = listener.accept().unwrap();
        let bell = Doorbell::new().unwrap();
        assert_eq!(bell.wait(&far, Some(Duration::from_millis(1))), Woken::TimedOut);
        bell.ring();
        bell.ring();
        assert_eq!(bell.wait(&far, None), Woken::Rung);
        // Both rings were one: cleared at once.
        assert_eq!(bell.wait(&far, Some(Duration::from_millis(1))), Woken::TimedOut);
        near.write_all(b"x").unwrap();
        assert_eq!(bell.wait(&far, None), Woken::Readable);
    }
}
