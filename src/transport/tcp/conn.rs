//! One TCP connection carrying frames: a writer half shared by posting threads (a frame goes
//! out whole under the writer lock: a small one copied into one buffer, a larger one gathered
//! from the caller's buffers with `sendmsg`) and a reader half owned by whoever progresses the
//! connection.

use std::io::{self, IoSlice};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::time::Duration;

use parking_lot::Mutex;

use super::sys;
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
        self.send_after(None, header, parts.iter().copied())
    }

    /// Sends `lead` (a header-only frame) if there is one, then a frame, in one system call.
    /// The payload parts come as an iterator: the data path builds no list of them.
    pub fn send_after<'p, I>(&mut self, lead: Option<&Header>, header: &Header, parts: I) -> io::Result<()>
    where
        I: IntoIterator<Item = &'p [u8]>,
        I::IntoIter: Clone,
    {
        let parts = parts.into_iter();
        let heads = HEADER_LEN * (1 + usize::from(lead.is_some()));
        let total = heads + parts.clone().map(<[u8]>::len).sum::<usize>();
        if total <= SMALL_FRAME {
            let mut frame = [0u8; SMALL_FRAME];
            if let Some(lead) = lead {
                frame[..HEADER_LEN].copy_from_slice(&lead.encode());
            }
            frame[heads - HEADER_LEN..heads].copy_from_slice(&header.encode());
            let mut at = heads;
            for p in parts {
                frame[at..at + p.len()].copy_from_slice(p);
                at += p.len();
            }
            return send_all(&mut self.0, &frame[..total]);
        }
        let lead = lead.map(Header::encode);
        let head = header.encode();
        let pieces = lead.as_ref().map(|l| &l[..]).into_iter().chain([&head[..]]).chain(parts.map(|p| -> &[u8] { p }));
        // The gather list lives on the stack: the data path allocates nothing.
        let mut slices = [IoSlice::new(&[]); MAX_PARTS + 2];
        let mut n = 0;
        for p in pieces.filter(|p| !p.is_empty()) {
            if n == slices.len() {
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

/// A frame this small is copied into one buffer and written with `send`, which costs the
/// kernel less than `sendmsg` gathering its pieces (a ping-pong's frames are all this small).
const SMALL_FRAME: usize = 256;

/// Writes every slice, with `MSG_NOSIGNAL`: a peer that went away is an error here, never a
/// SIGPIPE that kills the consumer's process.
fn write_all_vectored(stream: &mut TcpStream, mut slices: &mut [IoSlice<'_>]) -> io::Result<()> {
    while !slices.is_empty() {
        // SAFETY: msghdr is plain data for which all-zero bytes are a valid value.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = slices.as_mut_ptr() as *mut libc::iovec;
        msg.msg_iovlen = slices.len().min(libc::UIO_MAXIOV as usize) as _;
        // SAFETY: IoSlice is ABI-compatible with iovec (std guarantees it on Unix); the
        // slices and the socket outlive the call.
        let n = unsafe { sys::sendmsg(stream.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) };
        if let Some(n) = written(n)? {
            IoSlice::advance_slices(&mut slices, n);
        }
    }
    Ok(())
}

/// Writes `bytes` with `send` and `MSG_NOSIGNAL`.
fn send_all(stream: &mut TcpStream, mut bytes: &[u8]) -> io::Result<()> {
    while !bytes.is_empty() {
        // SAFETY: `bytes` is readable for its length for the duration of the call.
        let n = unsafe { sys::send(stream.as_raw_fd(), bytes.as_ptr(), bytes.len(), libc::MSG_NOSIGNAL) };
        if let Some(n) = written(n)? {
            bytes = &bytes[n..];
        }
    }
    Ok(())
}

/// What a sending system call returned: the bytes it wrote, or None when it was interrupted
/// before writing any (try again).
fn written(n: sys::SysResult) -> io::Result<Option<usize>> {
    match n {
        Ok(0) => Err(io::ErrorKind::WriteZero.into()),
        Ok(n) => Ok(Some(n)),
        Err(libc::EINTR) => Ok(None),
        Err(e) => Err(io::Error::from_raw_os_error(e)),
    }
}

/// How many bytes the reader takes from the socket at once: small frames arrive whole in one
/// system call, several at a time when they queue up.
const READ_AHEAD: usize = 64 * 1024;

/// The receiving half, with a read-ahead buffer. Large payloads bypass the buffer and go
/// straight to their destination.
pub struct Reader {
    stream: TcpStream,
    limits: Limits,
    buffer: Box<[u8]>,
    /// The unread bytes are `buffer[start..end]`.
    start: usize,
    end: usize,
    /// Set while frames carry large payloads: a header is then read alone, so the payload
    /// behind it goes straight to its destination instead of through the buffer.
    large_frames: bool,
}

/// A payload at least this large is better read straight into place than read ahead.
const LARGE_PAYLOAD: usize = 16 * 1024;

impl Reader {
    pub fn new(stream: TcpStream, limits: Limits) -> Reader {
        Reader {
            stream,
            limits,
            buffer: vec![0u8; READ_AHEAD].into_boxed_slice(),
            start: 0,
            end: 0,
            large_frames: false,
        }
    }

    /// How many bytes of the stream wait in the read-ahead buffer.
    pub fn buffered(&self) -> usize {
        self.end - self.start
    }

    /// Whether bytes already read from the socket wait here (polling the socket would not
    /// show them).
    pub fn has_buffered(&self) -> bool {
        self.buffered() > 0
    }

    /// Reads more into the buffer, at most `most` bytes: waits for at least one byte when
    /// `block`, else takes only what is there. Ok(0) from a non-blocking read means nothing
    /// was waiting.
    // Inlined, as is `whole_frame_ready`: fewer frames above a poll's system call (see `sys`).
    #[inline(always)]
    fn fill(&mut self, block: bool, most: usize) -> Result<usize, ConnError> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.end == self.buffer.len() {
            self.buffer.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        let room_end = self.buffer.len().min(self.end.saturating_add(most));
        let room = &mut self.buffer[self.end..room_end];
        if room.is_empty() {
            return Ok(0); // full of one large frame's start: its payload is read directly
        }
        let flags = if block { 0 } else { libc::MSG_DONTWAIT };
        loop {
            // SAFETY: `room` is a writable buffer of its length for the duration of the call.
            match unsafe { sys::recv(self.stream.as_raw_fd(), room.as_mut_ptr(), room.len(), flags) } {
                Ok(0) => return Err(ConnError::Closed),
                Ok(n) => {
                    self.end += n;
                    return Ok(n);
                }
                Err(libc::EINTR) => continue,
                Err(libc::EAGAIN) if !block => return Ok(0),
                Err(e) => return Err(ConnError::from(io::Error::from_raw_os_error(e))),
            }
        }
    }

    /// The header at the front of the buffer, checked, when a whole one is buffered.
    // Inlined: a poll asks two or three times, and mostly the answer is "not yet".
    #[inline(always)]
    fn buffered_header(&self) -> Option<Result<Header, WireError>> {
        if self.buffered() < HEADER_LEN {
            return None;
        }
        let mut b = [0u8; HEADER_LEN];
        b.copy_from_slice(&self.buffer[self.start..self.start + HEADER_LEN]);
        Some(Header::decode(&b, self.limits))
    }

    /// The next frame's checked header; its payload must then be consumed with
    /// [`Reader::read_payload`] or [`Reader::skip`].
    pub fn next_header(&mut self) -> Result<Header, ConnError> {
        loop {
            if let Some(h) = self.buffered_header() {
                let h = h.map_err(ConnError::Protocol)?;
                self.take_header(&h);
                return Ok(h);
            }
            self.fill(true, self.header_read())?;
        }
    }

    /// Consumes the checked header at the front of the buffer (the one
    /// [`Reader::whole_frame_ready`] or [`Reader::next_header`] found); its payload follows.
    pub fn take_header(&mut self, h: &Header) {
        debug_assert!(self.buffered() >= HEADER_LEN);
        self.start += HEADER_LEN;
        self.large_frames = payload_len(h) >= LARGE_PAYLOAD;
    }

    /// Whether a whole frame is waiting (in the buffer, or in the socket behind it), so
    /// handling it cannot block. Never blocks, and asks the socket once when nothing is
    /// buffered.
    ///
    /// Without `look`, only the buffer counts (Nothing unless a whole frame is buffered): a
    /// poller that just asked the socket need not ask again until its next round.
    #[inline(always)]
    pub fn whole_frame_ready(&mut self, look: bool) -> Waiting {
        let whole = |r: &Self, h: &Header| r.buffered() >= HEADER_LEN + payload_len(h);
        if let Some(Ok(h)) = self.buffered_header() {
            if whole(self, &h) {
                return Waiting::Whole(h);
            }
        }
        if !look {
            return Waiting::Nothing;
        }
        match self.fill(false, self.header_read()) {
            Ok(0) if self.buffered() == 0 => return Waiting::Nothing,
            Ok(_) => {}
            Err(_) => return Waiting::Part, // the end or an error: for the blocking reader
        }
        let h = match self.buffered_header() {
            Some(Ok(h)) => h,
            _ => return Waiting::Part,
        };
        if whole(self, &h) {
            return Waiting::Whole(h);
        }
        // A payload larger than the buffer: count what waits in the socket too.
        let mut available: libc::c_int = 0;
        // SAFETY: FIONREAD writes one int to the pointer we pass, on our own socket.
        if unsafe { libc::ioctl(self.stream.as_raw_fd(), libc::FIONREAD, &mut available) } < 0 {
            return Waiting::Part;
        }
        if self.buffered() + available.max(0) as usize >= HEADER_LEN + payload_len(&h) {
            Waiting::Whole(h)
        } else {
            Waiting::Part
        }
    }

    /// Whether a read would not block: buffered bytes, or data, end of stream or an error
    /// waiting in the socket.
    pub fn readable_now(&self) -> bool {
        if self.buffered() > 0 {
            return true;
        }
        let mut b = [0u8; 1];
        // SAFETY: `b` is a writable one-byte buffer for the duration of the call.
        let n = unsafe { sys::recv(self.stream.as_raw_fd(), b.as_mut_ptr(), 1, libc::MSG_PEEK | libc::MSG_DONTWAIT) };
        n != Err(libc::EAGAIN)
    }

    /// Bounds how long a read waits (None: forever); a read that waits longer fails.
    pub fn set_timeout(&self, timeout: Option<Duration>) {
        let _ = self.stream.set_read_timeout(timeout);
    }

    /// Reads exactly `dst.len()` payload bytes into `dst`: what is buffered first, the rest
    /// straight from the socket.
    pub fn read_payload(&mut self, dst: &mut [u8]) -> Result<(), ConnError> {
        let n = self.buffered().min(dst.len());
        dst[..n].copy_from_slice(&self.buffer[self.start..self.start + n]);
        self.start += n;
        let mut rest = &mut dst[n..];
        while !rest.is_empty() {
            // MSG_WAITALL: the kernel wakes us once the whole payload is there, not at every
            // segment that arrives.
            // SAFETY: `rest` is a writable buffer of its length for the duration of the call.
            let got = unsafe { sys::recv(self.stream.as_raw_fd(), rest.as_mut_ptr(), rest.len(), libc::MSG_WAITALL) };
            match got {
                Ok(0) => return Err(ConnError::Closed),
                Ok(n) => rest = &mut rest[n..],
                Err(libc::EINTR) => {}
                Err(e) => return Err(ConnError::from(io::Error::from_raw_os_error(e))),
            }
        }
        Ok(())
    }

    /// Reads and drops `len` payload bytes; what follows them stays buffered.
    pub fn skip(&mut self, len: usize) -> Result<(), ConnError> {
        let mut left = len;
        loop {
            let n = self.buffered().min(left);
            self.start += n;
            left -= n;
            if left == 0 {
                return Ok(());
            }
            self.fill(true, usize::MAX)?;
        }
    }

    /// How much to read when a header is due: all there is, unless payloads are large.
    fn header_read(&self) -> usize {
        if self.large_frames {
            HEADER_LEN.saturating_sub(self.buffered()).max(1)
        } else {
            usize::MAX
        }
    }
}

/// What waits to be read, as far as a look that never blocks can tell.
pub enum Waiting {
    /// A whole frame, with its checked header: handling it cannot block.
    Whole(Header),
    /// Part of a frame, a malformed header, the end of the stream or an error: for a thread
    /// that may block.
    Part,
    /// Nothing at all.
    Nothing,
}

/// The payload bytes that follow a header on the wire (a read request carries none).
fn payload_len(h: &Header) -> usize {
    if h.op == super::wire::Op::RdmaReadRequest {
        0
    } else {
        h.payload_len as usize
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
    fn headers_in_pieces_after_large_and_small_payloads_are_read_whole() {
        let (mut a, b) = pair();
        let mut r = Reader::new(b, LIMITS);
        let frame = |len: usize, fill: u8| {
            let mut h = Header::new(Op::Send);
            h.payload_len = len as u32;
            let mut bytes = h.encode().to_vec();
            bytes.extend(std::iter::repeat_n(fill, len));
            bytes
        };
        // A large payload (its header is read alone, the payload straight into place), then
        // small ones (read ahead), each next header sent in two pieces.
        for (len, fill) in [(LARGE_PAYLOAD + 5, 1u8), (3, 2), (LARGE_PAYLOAD, 3), (0, 4), (7, 5)] {
            let bytes = frame(len, fill);
            a.write_all(&bytes[..10]).unwrap();
            // The piece is there (or on its way): the reader may see it alone.
            let _ = r.whole_frame_ready(true);
            a.write_all(&bytes[10..]).unwrap();
            let h = r.next_header().unwrap();
            assert_eq!(h.payload_len as usize, len);
            let mut payload = vec![0u8; len];
            r.read_payload(&mut payload).unwrap();
            assert!(payload.iter().all(|b| *b == fill));
        }
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
