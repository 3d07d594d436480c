//! One TCP connection carrying frames: a writer half shared by the threads that send, and a
//! reader half held by whoever handles the connection's incoming frames. Both use the one
//! socket (no duplicated descriptor: a thousand connections are a thousand descriptors).
//!
//! Reading never blocks: whoever holds the reader takes what the socket has (`MSG_DONTWAIT`),
//! and a frame that has only partly arrived is continued by the next holder. Writing blocks
//! only for the consumer's own requests (`dat_ep_post_*`, on the consumer's thread); the
//! answers the connection owes its peer are written without blocking, and one the socket had
//! no room for stays here, partly written, until the socket drains. So two peers that both
//! fill their sockets never wait on each other: each one's reader keeps draining.

use std::io::{self, IoSlice};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};

use super::wire::{Header, Limits, WireError, HEADER_LEN};
use crate::objects::lmr::Lmr;
use crate::transport::sys;

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
    half: Mutex<WriteHalf>,
}

/// The sending half, with what remains of a frame written only in part.
pub struct WriteHalf {
    stream: Arc<TcpStream>,
    rest: Option<Rest>,
}

/// The unwritten end of a frame the socket had no room for: header bytes, then payload bytes
/// from memory that stays valid until it is written (the registered region `region`, checked
/// again before each write, or the copy `owned`).
struct Rest {
    head: [u8; HEADER_LEN],
    head_from: usize,
    payload: *const u8,
    payload_len: usize,
    payload_from: usize,
    region: Option<Arc<Lmr>>,
    owned: Option<Box<[u8]>>,
}



// SAFETY: the payload pointer names memory of a live registered region (see `Rest`); it is
// only read, under the writer's lock.
unsafe impl Send for Rest {}

/// What a write that must not block achieved.
#[derive(Debug, PartialEq, Eq)]
pub enum Wrote {
    /// The whole frame is out.
    All,
    /// Part of it: the rest waits here (`WriteHalf::has_rest`) until the socket drains.
    Part,
    /// Nothing: an earlier frame's rest is still waiting.
    Nothing,
}

impl Writer {
    pub fn new(stream: Arc<TcpStream>) -> Writer {
        Writer { half: Mutex::new(WriteHalf { stream, rest: None }) }
    }

    /// Holds the sending half for several frames in a row.
    pub fn lock(&self) -> WriterGuard<'_> {
        WriterGuard(self.half.lock())
    }

    /// The sending half, if nobody is sending.
    pub fn try_lock(&self) -> Option<WriterGuard<'_>> {
        self.half.try_lock().map(WriterGuard)
    }

    /// Sends one frame, blocking until it is out (the consumer's thread, or a handshake's
    /// first frames on a fresh socket).
    pub fn send(&self, header: &Header, parts: &[&[u8]]) -> io::Result<()> {
        self.lock().send(header, parts)
    }
}

/// The sending half, held.
pub struct WriterGuard<'a>(MutexGuard<'a, WriteHalf>);

impl WriterGuard<'_> {
    /// Sends one frame (at most [`MAX_PARTS`] payload parts), blocking.
    pub fn send(&mut self, header: &Header, parts: &[&[u8]]) -> io::Result<()> {
        self.send_after(None, header, parts.iter().copied())
    }

    /// Sends `lead` (a header-only frame) if there is one, then a frame, in one system call,
    /// blocking until both are out (after what remained of an earlier frame). The payload
    /// parts come as an iterator: the data path builds no list of them.
    pub fn send_after<'p, I>(&mut self, lead: Option<&Header>, header: &Header, parts: I) -> io::Result<()>
    where
        I: IntoIterator<Item = &'p [u8]>,
        I::IntoIter: Clone,
    {
        self.finish_rest()?;
        let stream = &self.0.stream;
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
            return send_all(stream, &frame[..total]);
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
        write_all_vectored(stream, &mut slices[..n], 0).map(|_| ())
    }

    /// Writes what remained of an earlier frame, blocking.
    fn finish_rest(&mut self) -> io::Result<()> {
        while self.0.rest.is_some() {
            self.continue_rest(0)?;
        }
        Ok(())
    }

    /// Whether part of a frame waits for room in the socket.
    pub fn has_rest(&self) -> bool {
        self.0.rest.is_some()
    }

    /// Writes what it can of the frame left in part, without blocking. True when it is out.
    pub fn continue_rest_now(&mut self) -> io::Result<bool> {
        self.continue_rest(libc::MSG_DONTWAIT)?;
        Ok(self.0.rest.is_none())
    }

    fn continue_rest(&mut self, flags: i32) -> io::Result<()> {
        let half = &mut *self.0;
        let Some(rest) = half.rest.as_mut() else { return Ok(()) };
        let region = rest.region.clone();
        let gate = region.as_ref().map(|r| r.access());
        if matches!(gate, Some(None)) {
            // The region went away under the read's data: the peer cannot get a consistent
            // answer, and a frame cannot be cut short. The connection ends.
            half.rest = None;
            return Err(io::ErrorKind::BrokenPipe.into());
        }
        let payload = match &rest.owned {
            Some(copy) => &copy[..],
            // SAFETY: the payload names live registered memory (checked just above).
            None => unsafe { std::slice::from_raw_parts(rest.payload, rest.payload_len) },
        };
        let mut slices = [IoSlice::new(&rest.head[rest.head_from..]), IoSlice::new(&payload[rest.payload_from..])];
        let start = usize::from(slices[0].is_empty());
        let end = if slices[1].is_empty() { 1 } else { 2 };
        let n = write_all_vectored(&half.stream, &mut slices[start..end.max(start)], flags)?;
        let from_head = n.min(HEADER_LEN - rest.head_from);
        rest.head_from += from_head;
        rest.payload_from += n - from_head;
        if rest.head_from == HEADER_LEN && rest.payload_from == rest.payload_len {
            half.rest = None;
        }
        Ok(())
    }

    /// Writes an answer (a header, and a payload from the registered region `region`, still
    /// registered) without blocking. What the socket has no room for stays for
    /// [`WriterGuard::continue_rest_now`]; nothing is written while an earlier frame's rest waits.
    pub fn answer_now(&mut self, header: &Header, payload: &[u8], region: Option<Arc<Lmr>>) -> io::Result<Wrote> {
        self.write_now(header, payload.as_ptr(), payload.len(), region, None)
    }

    /// [`WriterGuard::answer_now`] for a frame whose payload is a copy, kept until it is out.
    pub fn write_owned_now(&mut self, header: &Header, payload: Box<[u8]>) -> io::Result<Wrote> {
        let (at, len) = (payload.as_ptr(), payload.len());
        // The box's bytes stay where they are as it moves into the rest.
        self.write_now(header, at, len, None, Some(payload))
    }

    /// `payload_len` bytes at `payload` stay valid while `region` stays registered, or while
    /// `owned` (which holds them) lives.
    fn write_now(
        &mut self,
        header: &Header,
        payload: *const u8,
        payload_len: usize,
        region: Option<Arc<Lmr>>,
        owned: Option<Box<[u8]>>,
    ) -> io::Result<Wrote> {
        if self.0.rest.is_some() && !self.continue_rest_now()? {
            return Ok(Wrote::Nothing);
        }
        let head = header.encode();
        // SAFETY: valid for `payload_len` bytes (this function's contract).
        let bytes = unsafe { std::slice::from_raw_parts(payload, payload_len) };
        let mut slices = [IoSlice::new(&head), IoSlice::new(bytes)];
        let n = if payload_len == 0 { 1 } else { 2 };
        let sent = write_all_vectored(&self.0.stream, &mut slices[..n], libc::MSG_DONTWAIT)?;
        if sent == HEADER_LEN + payload_len {
            return Ok(Wrote::All);
        }
        let from_head = sent.min(HEADER_LEN);
        self.0.rest = Some(Rest { head, head_from: from_head, payload, payload_len, payload_from: sent - from_head, region, owned });
        Ok(Wrote::Part)
    }

    /// Closes our sending direction: the peer reads end of stream after what was sent.
    pub fn shutdown_write(&mut self) {
        let _ = self.0.stream.shutdown(std::net::Shutdown::Write);
    }
}

/// A frame this small is copied into one buffer and written with `send`, which costs the
/// kernel less than `sendmsg` gathering its pieces (a ping-pong's frames are all this small).
const SMALL_FRAME: usize = 256;

/// Writes the slices with `MSG_NOSIGNAL` (a peer that went away is an error here, never a
/// SIGPIPE that kills the consumer's process) and `flags`. Returns how much was written: all
/// of it, unless `flags` has `MSG_DONTWAIT` and the socket filled up.
fn write_all_vectored(stream: &TcpStream, mut slices: &mut [IoSlice<'_>], flags: i32) -> io::Result<usize> {
    let mut total = 0;
    while !slices.is_empty() {
        // SAFETY: msghdr is plain data for which all-zero bytes are a valid value.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = slices.as_mut_ptr() as *mut libc::iovec;
        msg.msg_iovlen = slices.len().min(libc::UIO_MAXIOV as usize) as _;
        // SAFETY: IoSlice is ABI-compatible with iovec (std guarantees it on Unix); the
        // slices and the socket outlive the call.
        let n = unsafe { sys::sendmsg(stream.as_raw_fd(), &msg, libc::MSG_NOSIGNAL | flags) };
        match written(n)? {
            Some(n) => {
                total += n;
                IoSlice::advance_slices(&mut slices, n);
            }
            None if flags & libc::MSG_DONTWAIT != 0 => return Ok(total),
            None => {}
        }
    }
    Ok(total)
}

/// Writes `bytes` with `send` and `MSG_NOSIGNAL`, blocking.
fn send_all(stream: &TcpStream, mut bytes: &[u8]) -> io::Result<()> {
    while !bytes.is_empty() {
        // SAFETY: `bytes` is readable for its length for the duration of the call.
        let n = unsafe { sys::send(stream.as_raw_fd(), bytes.as_ptr(), bytes.len(), libc::MSG_NOSIGNAL) };
        if let Some(n) = written(n)? {
            bytes = &bytes[n..];
        }
    }
    Ok(())
}

/// What a sending system call returned: the bytes it wrote, or None when it wrote none and
/// may be tried again (interrupted, or a socket without room for a call that must not block).
fn written(n: sys::SysResult) -> io::Result<Option<usize>> {
    match n {
        Ok(0) => Err(io::ErrorKind::WriteZero.into()),
        Ok(n) => Ok(Some(n)),
        Err(libc::EINTR) | Err(libc::EAGAIN) => Ok(None),
        Err(e) => Err(io::Error::from_raw_os_error(e)),
    }
}

/// How many bytes the reader takes from the socket at once: small frames arrive whole in one
/// system call, several at a time when they queue up.
const READ_AHEAD: usize = 64 * 1024;

/// A payload at least this large is read straight into place, not through the buffer.
pub const LARGE_PAYLOAD: usize = 16 * 1024;

/// The receiving half, with a read-ahead buffer. Large payloads bypass the buffer and go
/// straight to their destination. Nothing here blocks.
pub struct Reader {
    stream: Arc<TcpStream>,
    limits: Limits,
    buffer: Box<[u8]>,
    /// The unread bytes are `buffer[start..end]`.
    start: usize,
    end: usize,
    /// Set while frames carry large payloads: a header is then read alone, so the payload
    /// behind it goes straight to its destination instead of through the buffer.
    large_frames: bool,
    /// Set when the last read from the socket took less than it had room for: the socket was
    /// empty then (a later arrival is reported by the engine's poll, armed again after).
    drained: bool,
}

impl Reader {
    pub fn new(stream: Arc<TcpStream>, limits: Limits) -> Reader {
        Reader {
            stream,
            limits,
            buffer: vec![0u8; READ_AHEAD].into_boxed_slice(),
            start: 0,
            end: 0,
            large_frames: false,
            drained: false,
        }
    }

    /// The socket's own address (for diagnostics).
    pub fn local_addr(&self) -> Option<std::net::SocketAddr> {
        self.stream.local_addr().ok()
    }

    /// The peer's address (for diagnostics).
    pub fn peer_addr(&self) -> Option<std::net::SocketAddr> {
        self.stream.peer_addr().ok()
    }

    /// How many bytes of the stream wait in the read-ahead buffer.
    pub fn buffered(&self) -> usize {
        self.end - self.start
    }

    /// Reads what the socket has into the buffer, at most `most` bytes. Ok(0): nothing was
    /// waiting (or the buffer is full of one large frame's start).
    // Inlined, as is `peek`: fewer frames above a poll's system call (see `sys`).
    #[inline(always)]
    pub fn fill(&mut self, most: usize) -> Result<usize, ConnError> {
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
            return Ok(0);
        }
        loop {
            // SAFETY: `room` is a writable buffer of its length for the duration of the call.
            match unsafe { sys::recv(self.stream.as_raw_fd(), room.as_mut_ptr(), room.len(), libc::MSG_DONTWAIT) } {
                Ok(0) => return Err(ConnError::Closed),
                Ok(n) => {
                    self.end += n;
                    self.drained = n < room.len();
                    return Ok(n);
                }
                Err(libc::EINTR) => continue,
                Err(libc::EAGAIN) => {
                    self.drained = true;
                    return Ok(0);
                }
                Err(e) => return Err(ConnError::from(io::Error::from_raw_os_error(e))),
            }
        }
    }

    /// Reads for the next header: all there is, unless payloads are large (then the header
    /// alone, so the payload behind it can go straight into place).
    #[inline(always)]
    pub fn fill_for_header(&mut self) -> Result<usize, ConnError> {
        // Two headers' worth: an acknowledgement's frame and the large frame behind it come
        // in one read (a large payload's first bytes then pass through the buffer).
        let most = if self.large_frames { (2 * HEADER_LEN).saturating_sub(self.buffered()).max(1) } else { usize::MAX };
        self.fill(most)
    }

    /// The header at the front of the buffer, checked, when a whole one is buffered.
    // Inlined: a poll asks two or three times, and mostly the answer is "not yet".
    #[inline(always)]
    pub fn peek(&self) -> Option<Result<Header, WireError>> {
        if self.buffered() < HEADER_LEN {
            return None;
        }
        let mut b = [0u8; HEADER_LEN];
        b.copy_from_slice(&self.buffer[self.start..self.start + HEADER_LEN]);
        Some(Header::decode(&b, self.limits))
    }

    /// Whether the frame of header `h` (at the front of the buffer) is buffered whole.
    #[inline(always)]
    pub fn whole(&self, h: &Header) -> bool {
        self.buffered() >= HEADER_LEN + payload_len(h)
    }

    /// Consumes the checked header at the front of the buffer; its payload follows.
    pub fn take_header(&mut self, h: &Header) {
        debug_assert!(self.buffered() >= HEADER_LEN);
        self.start += HEADER_LEN;
        // A frame without payload (an acknowledgement between large writes) changes nothing.
        if payload_len(h) > 0 {
            self.large_frames = payload_len(h) >= LARGE_PAYLOAD;
        }
    }

    /// Drops `n` payload bytes that are buffered.
    pub fn skip_buffered(&mut self, n: usize) {
        debug_assert!(self.buffered() >= n);
        self.start += n;
    }

    /// Copies payload bytes that are buffered into `dst` (all of it must be buffered).
    pub fn take_buffered(&mut self, dst: &mut [u8]) {
        dst.copy_from_slice(&self.buffer[self.start..self.start + dst.len()]);
        self.start += dst.len();
    }

    /// Reads payload bytes into `dst` without blocking: what is buffered first, then what the
    /// socket has, straight into place, and in the same system call what follows into the
    /// buffer: `after` more bytes of this payload (those not for `dst`) and the next header
    /// (or, while payloads are small, all the buffer holds). Returns how many arrived for
    /// `dst` (0: none yet).
    pub fn read_some(&mut self, dst: &mut [u8], after: usize) -> Result<usize, ConnError> {
        let n = self.buffered().min(dst.len());
        if n > 0 {
            self.take_buffered(&mut dst[..n]);
            return Ok(n);
        }
        if dst.is_empty() {
            return Ok(0);
        }
        // Nothing is buffered: the buffer is free from its start.
        self.start = 0;
        self.end = 0;
        let behind = if self.large_frames { after + HEADER_LEN } else { usize::MAX }.min(self.buffer.len());
        let mut iov = [
            libc::iovec { iov_base: dst.as_mut_ptr().cast(), iov_len: dst.len() },
            libc::iovec { iov_base: self.buffer.as_mut_ptr().cast(), iov_len: behind },
        ];
        // SAFETY: an all-zero msghdr is valid (no address, no control data).
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = iov.as_mut_ptr();
        msg.msg_iovlen = if behind > 0 { 2 } else { 1 };
        loop {
            // SAFETY: both buffers are writable for their lengths for the duration of the call
            // (`dst` borrowed mutably, the buffer owned), and `msg` names only them.
            match unsafe { sys::recvmsg(self.stream.as_raw_fd(), &mut msg, libc::MSG_DONTWAIT) } {
                Ok(0) => return Err(ConnError::Closed),
                Ok(n) => {
                    self.drained = n < dst.len() + behind;
                    self.end = n.saturating_sub(dst.len());
                    return Ok(n.min(dst.len()));
                }
                Err(libc::EINTR) => continue,
                Err(libc::EAGAIN) => {
                    self.drained = true;
                    return Ok(0);
                }
                Err(e) => return Err(ConnError::from(io::Error::from_raw_os_error(e))),
            }
        }
    }

    /// Whether the last read from the socket found it empty (it took less than it could).
    pub fn drained(&self) -> bool {
        self.drained
    }

    /// The engine was told of new data: the socket is not known to be empty.
    pub fn expect_data(&mut self) {
        self.drained = false;
    }

    /// Drops up to `len` payload bytes without blocking; returns how many went.
    pub fn skip_some(&mut self, len: usize) -> Result<usize, ConnError> {
        let n = self.buffered().min(len);
        if n > 0 || len == 0 {
            self.start += n;
            return Ok(n);
        }
        let mut sink = [0u8; 4096];
        let want = len.min(sink.len());
        self.read_some(&mut sink[..want], len - want)
    }
}

/// The payload bytes that follow a header on the wire (a read request carries none).
pub fn payload_len(h: &Header) -> usize {
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

    fn pair() -> (Arc<TcpStream>, Arc<TcpStream>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (b, _) = l.accept().unwrap();
        (Arc::new(a), Arc::new(b))
    }

    /// The next frame, read without blocking in a loop (as the engine would, woken each time).
    fn next(r: &mut Reader) -> Result<(Header, Vec<u8>), ConnError> {
        let h = loop {
            if let Some(h) = r.peek() {
                break h.map_err(ConnError::Protocol)?;
            }
            r.fill_for_header()?;
        };
        r.take_header(&h);
        let mut payload = vec![0u8; payload_len(&h)];
        let mut got = 0;
        while got < payload.len() {
            got += r.read_some(&mut payload[got..], 0)?;
        }
        Ok((h, payload))
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
        let (got, payload) = next(&mut r).unwrap();
        assert_eq!(got, h);
        assert_eq!(&payload, b"hello world");
        assert_eq!(next(&mut r).unwrap().0.op, Op::Disconnect);
        drop(w);
        assert!(matches!(next(&mut r), Err(ConnError::Closed)));
    }

    #[test]
    fn garbage_is_a_protocol_error() {
        let (a, b) = pair();
        let mut r = Reader::new(b, LIMITS);
        (&*a).write_all(&[0xffu8; HEADER_LEN]).unwrap();
        assert!(matches!(next(&mut r), Err(ConnError::Protocol(WireError::BadMagic(_)))));
    }

    #[test]
    fn frames_in_pieces_are_put_together_after_large_and_small_payloads() {
        let (a, b) = pair();
        let mut a = &*a;
        let mut r = Reader::new(b, LIMITS);
        let frame = |len: usize, fill: u8| {
            let mut h = Header::new(Op::Send);
            h.payload_len = len as u32;
            let mut bytes = h.encode().to_vec();
            bytes.extend(std::iter::repeat_n(fill, len));
            bytes
        };
        for (len, fill) in [(LARGE_PAYLOAD + 5, 1u8), (3, 2), (LARGE_PAYLOAD, 3), (0, 4), (7, 5)] {
            let bytes = frame(len, fill);
            a.write_all(&bytes[..10]).unwrap();
            let _ = r.fill_for_header();
            assert!(r.peek().is_none() || len == 0 || !r.whole(&r.peek().unwrap().unwrap()));
            a.write_all(&bytes[10..]).unwrap();
            let (h, payload) = next(&mut r).unwrap();
            assert_eq!(h.payload_len as usize, len);
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
        let h = loop {
            if let Some(h) = r.peek() {
                break h.unwrap();
            }
            r.fill_for_header().unwrap();
        };
        r.take_header(&h);
        let mut left = h.payload_len as usize;
        while left > 0 {
            left -= r.skip_some(left).unwrap();
        }
        assert_eq!(next(&mut r).unwrap().0.op, Op::Ready);
    }

    #[test]
    fn an_answer_the_socket_has_no_room_for_waits_and_goes_out_whole_before_the_next_frame() {
        let (a, b) = pair();
        let w = Writer::new(a);
        let mut r = Reader::new(b, Limits { max_private_data: 56, max_message: 16 << 20 });
        // More than the socket buffers hold while nobody reads.
        let data: Vec<u8> = (0..(8 << 20)).map(|i| (i % 251) as u8).collect();
        let mut h = Header::new(Op::RdmaReadResponse);
        h.payload_len = data.len() as u32;
        let mut g = w.lock();
        assert_eq!(g.answer_now(&h, &data, None).unwrap(), Wrote::Part);
        assert!(g.has_rest());
        // Nothing else goes out meanwhile.
        assert_eq!(g.answer_now(&Header::new(Op::Ack), &[], None).unwrap(), Wrote::Nothing);
        drop(g);
        let reader = std::thread::spawn(move || {
            let (h1, p1) = {
                let h = loop {
                    if let Some(h) = r.peek() {
                        break h.unwrap();
                    }
                    r.fill_for_header().unwrap();
                };
                r.take_header(&h);
                let mut p = vec![0u8; h.payload_len as usize];
                let mut got = 0;
                while got < p.len() {
                    got += r.read_some(&mut p[got..], 0).unwrap();
                }
                (h, p)
            };
            let (h2, _) = next(&mut r).unwrap();
            (h1, p1, h2)
        });
        // The consumer's next frame waits for the rest (blocking, on its thread).
        w.send(&Header::new(Op::Disconnect), &[]).unwrap();
        let (h1, p1, h2) = reader.join().unwrap();
        assert_eq!(h1.op, Op::RdmaReadResponse);
        assert!(p1 == data);
        assert_eq!(h2.op, Op::Disconnect);
    }
}
