//! One TCP connection carrying frames: a writer half shared by posting threads (a frame goes
//! out whole under the writer lock, gathered from the caller's buffers with `writev`, no copy)
//! and a reader half owned by whoever progresses the connection.

use std::io::{self, IoSlice, Read};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::time::Duration;

use parking_lot::Mutex;

use super::wire::{Header, Limits, WireError, HEADER_LEN};

/// Why a connection stopped.
#[derive(Debug)]
pub enum ConnError {
    Io(io::Error),
    /// The peer closed the stream.
    Closed,
    /// The peer sent something that is not a valid frame.
    Protocol(WireError),
}

impl From<io::Error> for ConnError {
    fn from(e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            ConnError::Closed
        } else {
            ConnError::Io(e)
        }
    }
}

/// The most payload parts one frame gathers (the largest IOV we accept, plus one).
pub const MAX_PARTS: usize = 65;

/// The sending half.
pub struct Writer {
    stream: Mutex<TcpStream>,
}

impl Writer {
    pub fn new(stream: TcpStream) -> Writer {
        Writer {
            stream: Mutex::new(stream),
        }
    }

    /// Sends one frame: the header, then the payload gathered from `parts` (whose lengths
    /// must add up to `header.payload_len`).
    pub fn send(&self, header: &Header, parts: &[&[u8]]) -> io::Result<()> {
        self.lock().send(header, parts)
    }

    /// Like [`Writer::send`], running `before` under the writer lock first, so whatever it
    /// records is in the same order as the frames on the wire. When `before` returns false,
    /// nothing is sent.
    pub fn send_ordered(
        &self,
        header: &Header,
        parts: &[&[u8]],
        before: impl FnOnce() -> bool,
    ) -> io::Result<()> {
        let mut w = self.lock();
        if !before() {
            return Ok(());
        }
        w.send(header, parts)
    }

    /// Holds the sending half for several frames in a row.
    pub fn lock(&self) -> WriterGuard<'_> {
        WriterGuard(self.stream.lock())
    }

    /// The sending half, if nobody is sending.
    pub fn try_lock(&self) -> Option<WriterGuard<'_>> {
        self.stream.try_lock().map(WriterGuard)
    }

    /// Closes both directions; a blocked reader wakes with end of stream.
    pub fn shutdown(&self) {
        let _ = self.stream.lock().shutdown(std::net::Shutdown::Both);
    }
}

/// The sending half, held.
pub struct WriterGuard<'a>(parking_lot::MutexGuard<'a, TcpStream>);

impl WriterGuard<'_> {
    /// Sends one frame (at most [`MAX_PARTS`] payload parts).
    pub fn send(&mut self, header: &Header, parts: &[&[u8]]) -> io::Result<()> {
        let head = header.encode();
        // The gather list lives on the stack: the data path allocates nothing.
        let mut slices = [IoSlice::new(&[]); MAX_PARTS + 1];
        slices[0] = IoSlice::new(&head);
        let mut n = 1;
        for p in parts.iter().filter(|p| !p.is_empty()) {
            if n > MAX_PARTS {
                return Err(io::ErrorKind::InvalidInput.into());
            }
            slices[n] = IoSlice::new(p);
            n += 1;
        }
        write_all_vectored(&mut self.0, &mut slices[..n])
    }

    /// Closes our sending direction: the peer reads end of stream after what was sent.
    pub fn shutdown_write(&mut self) {
        let _ = self.0.shutdown(std::net::Shutdown::Write);
    }
}

/// Writes every slice, with `sendmsg` and `MSG_NOSIGNAL`: a peer that went away is an error
/// here, never a SIGPIPE that kills the consumer's process.
fn write_all_vectored(stream: &mut TcpStream, mut slices: &mut [IoSlice<'_>]) -> io::Result<()> {
    while !slices.is_empty() {
        // SAFETY: msghdr is plain data for which all-zero bytes are a valid value.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = slices.as_mut_ptr() as *mut libc::iovec;
        msg.msg_iovlen = slices.len().min(libc::UIO_MAXIOV as usize) as _;
        // SAFETY: IoSlice is ABI-compatible with iovec (std guarantees it on Unix); the
        // slices and the socket outlive the call.
        let n = unsafe { libc::sendmsg(stream.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        IoSlice::advance_slices(&mut slices, n as usize);
    }
    Ok(())
}

/// The receiving half.
pub struct Reader {
    stream: TcpStream,
    limits: Limits,
}

impl Reader {
    pub fn new(stream: TcpStream, limits: Limits) -> Reader {
        Reader { stream, limits }
    }

    /// The next frame's checked header; its payload must then be consumed with
    /// [`Reader::read_payload`] or [`Reader::skip`].
    pub fn next_header(&mut self) -> Result<Header, ConnError> {
        let mut b = [0u8; HEADER_LEN];
        self.stream.read_exact(&mut b)?;
        Header::decode(&b, self.limits).map_err(ConnError::Protocol)
    }

    /// Whether a whole frame is waiting in the socket, so handling it cannot block: its
    /// header, checked, when it is.
    pub fn whole_frame_ready(&self) -> Option<Header> {
        let fd = self.stream.as_raw_fd();
        let mut available: libc::c_int = 0;
        // SAFETY: FIONREAD writes one int to the pointer we pass, on our own socket.
        if unsafe { libc::ioctl(fd, libc::FIONREAD, &mut available) } < 0
            || (available as usize) < HEADER_LEN
        {
            return None;
        }
        let mut b = [0u8; HEADER_LEN];
        // SAFETY: `b` is a writable buffer of HEADER_LEN bytes for the duration of the call.
        let n = unsafe {
            libc::recv(
                fd,
                b.as_mut_ptr() as *mut libc::c_void,
                HEADER_LEN,
                libc::MSG_PEEK | libc::MSG_DONTWAIT,
            )
        };
        if n != HEADER_LEN as isize {
            return None;
        }
        let h = Header::decode(&b, self.limits).ok()?;
        let payload = if h.op == super::wire::Op::RdmaReadRequest {
            0
        } else {
            h.payload_len as usize
        };
        ((available as usize) >= HEADER_LEN + payload).then_some(h)
    }
}

/// Waits until the socket has something to read (data, end of stream or an error), at most
/// `timeout` (None: forever), without holding its reader. False when the time ran out.
pub fn wait_readable(socket: &TcpStream, timeout: Option<Duration>) -> bool {
    {
        let mut pfd = libc::pollfd {
            fd: socket.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = timeout.map_or(-1, |t| t.as_millis().min(i32::MAX as u128) as i32);
        loop {
            // SAFETY: one valid pollfd for the duration of the call.
            let n = unsafe { libc::poll(&mut pfd, 1, ms) };
            if n >= 0 {
                return n > 0;
            }
            if io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                return true; // let the read report the error
            }
        }
    }
}

impl Reader {
    /// Whether a read would not block: data, end of stream or an error is waiting.
    pub fn readable_now(&self) -> bool {
        let mut b = [0u8; 1];
        // SAFETY: `b` is a writable one-byte buffer for the duration of the call.
        let n = unsafe {
            libc::recv(
                self.stream.as_raw_fd(),
                b.as_mut_ptr() as *mut libc::c_void,
                1,
                libc::MSG_PEEK | libc::MSG_DONTWAIT,
            )
        };
        n >= 0 || io::Error::last_os_error().kind() != io::ErrorKind::WouldBlock
    }

    /// Bounds how long a read waits (None: forever); a read that waits longer fails.
    pub fn set_timeout(&self, timeout: Option<Duration>) {
        let _ = self.stream.set_read_timeout(timeout);
    }

    /// Reads exactly `dst.len()` payload bytes into `dst`.
    pub fn read_payload(&mut self, dst: &mut [u8]) -> Result<(), ConnError> {
        self.stream.read_exact(dst).map_err(ConnError::from)
    }

    /// Reads and drops `len` payload bytes.
    pub fn skip(&mut self, mut len: usize) -> Result<(), ConnError> {
        let mut sink = [0u8; 4096];
        while len > 0 {
            let n = len.min(sink.len());
            self.stream.read_exact(&mut sink[..n])?;
            len -= n;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::wire::Op;
    use super::*;
    use std::io::Write;
    use std::net::TcpListener;

    const LIMITS: Limits = Limits {
        max_private_data: 56,
        max_message: 1 << 20,
    };

    fn pair() -> (TcpStream, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (b, _) = l.accept().unwrap();
        (a, b)
    }

    #[test]
    fn frames_with_gathered_payloads_arrive_whole() {
        let (a, b) = pair();
        let w = Writer::new(a);
        let mut r = Reader::new(b, LIMITS);
        let mut h = Header::new(Op::Send);
        h.payload_len = 11;
        w.send(&h, &[b"hello", b"", b" world"]).unwrap();
        w.send(&Header::new(Op::Disconnect), &[]).unwrap();
        let got = r.next_header().unwrap();
        assert_eq!(got, h);
        let mut buf = vec![0u8; 11];
        r.read_payload(&mut buf).unwrap();
        assert_eq!(&buf, b"hello world");
        assert_eq!(r.next_header().unwrap().op, Op::Disconnect);
        drop(w);
        assert!(matches!(r.next_header(), Err(ConnError::Closed)));
    }

    #[test]
    fn garbage_is_a_protocol_error() {
        let (mut a, b) = pair();
        let mut r = Reader::new(b, LIMITS);
        a.write_all(&[0xffu8; HEADER_LEN]).unwrap();
        assert!(matches!(
            r.next_header(),
            Err(ConnError::Protocol(WireError::BadMagic(_)))
        ));
    }

    #[test]
    fn skip_drops_a_payload() {
        let (a, b) = pair();
        let w = Writer::new(a);
        let mut r = Reader::new(b, LIMITS);
        let big = vec![7u8; 10000];
        let mut h = Header::new(Op::Send);
        h.payload_len = big.len() as u32;
        w.send(&h, &[&big]).unwrap();
        w.send(&Header::new(Op::Ready), &[]).unwrap();
        let got = r.next_header().unwrap();
        r.skip(got.payload_len as usize).unwrap();
        assert_eq!(r.next_header().unwrap().op, Op::Ready);
    }
}
