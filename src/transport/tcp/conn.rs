//! One TCP connection carrying frames: a writer half shared by the threads that send, and a
//! reader half held by whoever handles the connection's incoming frames. Both use the one
//! socket (no duplicated descriptor: a thousand connections are a thousand descriptors).
//!
//! Nothing here blocks on the socket. Whoever holds the reader takes what the socket has
//! (`MSG_DONTWAIT`), and a frame that has only partly arrived is continued by the next holder.
//! Whoever holds the writer writes what the socket has room for; a frame it took only in part
//! stays here (its `Frame`, with what is left of it) until the socket drains, and frames
//! behind it wait their turn. So a thread holds the writer only for the system calls that
//! copy into the socket, never while the peer reads, and two peers that both fill their
//! sockets never wait on each other: each one's reader keeps draining.

use std::io::{self, IoSlice};
use std::mem::MaybeUninit;
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};
use smallvec::SmallVec;

use super::wire::{Header, Limits, WireError, HEADER_LEN};
use crate::abi::Zeroable;
use crate::objects::lmr::Lmr;
use crate::runtime::sys;

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

/// The bytes ahead of a frame's payload: an acknowledgement's frame that rides with it, the
/// frame's header, and a small payload copied in (an atomic's operands, an offer's cookie, a
/// handshake's private data).
const HEAD_ROOM: usize = 2 * HEADER_LEN + 64;

/// A frame to write: its head (copied), then its payload (pieces of memory that stay valid
/// until the frame is written, or a copy it owns), then a trailing frame of header alone (a
/// write's immediate), and how much of all that went out already.
pub struct Frame {
    head: [u8; HEAD_ROOM],
    head_len: usize,
    /// The payload, read in place: a request's segments (the consumer keeps them until the
    /// request completes, which it does only after this frame is out), or the bytes of a
    /// registered region (`region`, checked again before each write).
    pieces: SmallVec<[(*const u8, usize); 4]>,
    /// The payload, when it is a copy.
    owned: Option<Box<[u8]>>,
    tail: Option<[u8; HEADER_LEN]>,
    /// The region the pieces lie in, for an answer to the peer's read: it stays registered
    /// while its bytes are copied into the socket, and one freed meanwhile ends the connection.
    region: Option<Arc<Lmr>>,
    written: usize,
    /// The number of the request the frame carries (0: an answer).
    request: u64,
}

// SAFETY: the pieces name memory the frame's contract keeps valid until it is written (see
// `Frame::pieces`); they are only read, under the writer's lock.
unsafe impl Send for Frame {}

impl Frame {
    /// A frame of `headers` (an acknowledgement's, then the frame's) and a small copied
    /// payload `inline`.
    pub fn new(headers: &[&Header], inline: &[u8]) -> Frame {
        let mut head = [0u8; HEAD_ROOM];
        let mut at = 0;
        for h in headers {
            head[at..at + HEADER_LEN].copy_from_slice(&h.encode());
            at += HEADER_LEN;
        }
        head[at..at + inline.len()].copy_from_slice(inline);
        Frame {
            head,
            head_len: at + inline.len(),
            pieces: SmallVec::new(),
            owned: None,
            tail: None,
            region: None,
            written: 0,
            request: 0,
        }
    }

    /// The frame carries our request `seq` (see `Sent`).
    pub fn for_request(mut self, seq: u64) -> Frame {
        self.request = seq;
        self
    }

    /// The payload, read from `pieces` as the frame goes out.
    ///
    /// # Safety
    /// Each piece must stay readable until the frame is written or dropped.
    pub unsafe fn with_pieces(
        mut self,
        pieces: impl IntoIterator<Item = (*const u8, usize)>,
    ) -> Frame {
        self.pieces.extend(pieces.into_iter().filter(|p| p.1 != 0));
        self
    }

    /// The payload, a copy the frame owns.
    pub fn with_owned(mut self, payload: Box<[u8]>) -> Frame {
        self.owned = Some(payload);
        self
    }

    /// The payload, `length` bytes at `address` of the registered region `region` (None: a
    /// payload of nothing), which must stay registered while they are written.
    pub fn with_region(mut self, region: Option<Arc<Lmr>>, address: u64, length: usize) -> Frame {
        self.pieces.clear();
        if length != 0 {
            self.pieces.push((address as *const u8, length));
        }
        self.region = region;
        self
    }

    /// A frame of header alone written right after the payload.
    pub fn with_tail(mut self, tail: &Header) -> Frame {
        self.tail = Some(tail.encode());
        self
    }

    fn total(&self) -> usize {
        let payload = match &self.owned {
            Some(o) => o.len(),
            None => self.pieces.iter().map(|p| p.1).sum(),
        };
        self.head_len + payload + self.tail.map_or(0, |t| t.len())
    }

    /// Writes what the socket takes of the rest of the frame, without blocking. True when it
    /// is all out.
    fn write_some(&mut self, stream: &TcpStream) -> io::Result<bool> {
        // An answer's region, held registered for the copy (one freed meanwhile cannot give
        // the peer a consistent answer, and a frame cannot be cut short: the connection ends).
        let region = self.region.clone();
        let gate = region.as_ref().map(|r| r.access());
        if matches!(gate, Some(None)) {
            return Err(io::ErrorKind::BrokenPipe.into());
        }
        let total = self.total();
        if self.written == 0 && total <= SMALL_FRAME {
            // Small: copied into one buffer and written with `send`, which costs the kernel
            // less than `sendmsg` gathering pieces (a ping-pong's frames are all this small).
            let mut frame = [0u8; SMALL_FRAME];
            let mut at = 0;
            for piece in self.slices() {
                frame[at..at + piece.len()].copy_from_slice(piece);
                at += piece.len();
            }
            // SAFETY: `frame` is readable for `at` bytes for the call.
            let n = written(unsafe {
                sys::send(
                    stream.as_raw_fd(),
                    frame.as_ptr(),
                    at,
                    libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT,
                )
            })?;
            let n = n.unwrap_or(0);
            if n < at {
                // The rest waits as a copy: the pieces need not outlive this call then.
                self.owned = Some(frame[n..at].into());
                self.pieces.clear();
                self.tail = None;
                self.head_len = 0;
                self.region = None;
                self.written = 0;
                return Ok(false);
            }
            self.written = total;
            return Ok(true);
        }
        let mut slices: SmallVec<[IoSlice<'_>; MAX_PARTS + 3]> = SmallVec::new();
        let mut skip = self.written;
        for piece in self.slices() {
            if skip >= piece.len() {
                skip -= piece.len();
                continue;
            }
            slices.push(IoSlice::new(&piece[skip..]));
            skip = 0;
        }
        let n = write_vectored_now(stream, &mut slices)?;
        drop(slices);
        self.written += n;
        drop(gate);
        Ok(self.written == total)
    }

    /// The frame's bytes in order: head, payload, tail.
    fn slices(&self) -> impl Iterator<Item = &[u8]> {
        let payload: SmallVec<[&[u8]; 4]> = match &self.owned {
            Some(o) => [&o[..]].into_iter().collect(),
            // SAFETY: each piece is readable until the frame is written (its contract: see
            // `with_pieces` and `with_region`; a region's is held by the caller's gate).
            None => self
                .pieces
                .iter()
                .map(|(at, len)| unsafe { std::slice::from_raw_parts(*at, *len) })
                .collect(),
        };
        std::iter::once(&self.head[..self.head_len])
            .chain(payload)
            .chain(self.tail.as_ref().map(|t| &t[..]))
    }
}

/// A frame this small is copied into one buffer and written with `send`.
pub const SMALL_FRAME: usize = 256;

/// A small frame (a ping-pong's) encoded straight into the buffer its one `send` writes: no
/// [`Frame`] is made for it unless the socket takes only part (see [`WriterGuard::write_small`]).
pub struct SmallFrame {
    /// Its first `len` bytes are the frame (the rest is never read: no zeroing per message).
    bytes: [MaybeUninit<u8>; SMALL_FRAME],
    len: usize,
}

impl Default for SmallFrame {
    /// An empty frame; the caller checked that what it adds fits in [`SMALL_FRAME`] bytes.
    #[inline]
    fn default() -> SmallFrame {
        SmallFrame {
            bytes: [MaybeUninit::uninit(); SMALL_FRAME],
            len: 0,
        }
    }
}

impl SmallFrame {
    #[inline]
    pub fn header(&mut self, h: &Header) {
        self.bytes(&h.encode());
    }

    /// Appends `b`; past [`SMALL_FRAME`] bytes it panics (the caller's size check was wrong).
    #[inline]
    pub fn bytes(&mut self, b: &[u8]) {
        let end = self.len + b.len();
        let to = &mut self.bytes[self.len..end];
        // SAFETY: `to` and `b` have the same length and do not overlap; u8 and MaybeUninit<u8>
        // have one layout.
        unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), to.as_mut_ptr().cast(), b.len()) };
        self.len = end;
    }

    /// Copies `len` bytes at `at` into the frame.
    ///
    /// # Safety
    /// They must be readable for the call.
    #[inline]
    pub unsafe fn piece(&mut self, at: *const u8, len: usize) {
        if len != 0 {
            // SAFETY: the caller vouches for the bytes.
            self.bytes(unsafe { std::slice::from_raw_parts(at, len) });
        }
    }

    /// The frame's bytes.
    #[inline]
    fn as_bytes(&self) -> &[u8] {
        // SAFETY: the first `len` bytes were written (`bytes`).
        unsafe { std::slice::from_raw_parts(self.bytes.as_ptr().cast(), self.len) }
    }
}

/// How many times a reader looks whether a write it found under way returned, before it
/// leaves the acknowledgement of what it writes to the writer (see `Sent::ack_ahead_of_write`).
const AHEAD_OF_WRITE_SPINS: u32 = 64;

/// How far our requests have gone out, for the checks of what the peer says of them: a
/// request must be in the socket whole before the peer may answer it (a peer that answers one
/// still being written, its payload still read from the consumer's memory, would have the
/// consumer reuse that memory under us). Read without the writer's lock.
#[derive(Default)]
pub struct Sent {
    /// The highest number of a request whose frame went out whole.
    through: AtomicU64,
    /// Set while a thread is in the system call that may finish a request's frame: what it
    /// sent is not counted yet.
    writing: AtomicBool,
    /// Set by a reader that put off an acknowledgement until that call returns (see
    /// `ack_ahead_of_write`).
    reader_waits: AtomicBool,
}

impl Sent {
    /// Whether every request up to `seq` went out whole. A thread writing right now is waited
    /// for (the peer may have read its last bytes already): it holds no lock and makes one
    /// system call.
    pub fn through(&self, seq: u64) -> bool {
        let mut spins = 0u32;
        loop {
            if self.through.load(Ordering::Acquire) >= seq {
                return true;
            }
            if !self.writing.load(Ordering::Acquire) {
                // Looked again after the flag: a write that ended in between counted first.
                return self.through.load(Ordering::Acquire) >= seq;
            }
            spins += 1;
            if spins < 64 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }

    /// Whether an acknowledgement of every request up to `last` came ahead of our own write:
    /// a thread is in the system call that writes one of them, and the peer read its last
    /// bytes before the call returned. The acknowledgement then waits for that call, unread,
    /// and its writer has the connection looked at again as it returns (`writer_awaited`):
    /// no thread waits for another (the engine, having preempted the writer on its CPU, spun
    /// and yielded until the writer ran again, tens of thousands of times in a 64 KiB stream).
    pub fn ack_ahead_of_write(&self, last: u64) -> bool {
        // A writer running on another CPU returns within a few spins.
        for _ in 0..AHEAD_OF_WRITE_SPINS {
            if self.through.load(Ordering::Acquire) >= last || !self.writing.load(Ordering::Acquire)
            {
                return false;
            }
            std::hint::spin_loop();
        }
        self.reader_waits.store(true, Ordering::SeqCst);
        // Looked at again after the mark: a writer that returned meanwhile saw the mark
        // (after its fence), or is seen done here.
        self.writing.load(Ordering::SeqCst) && self.through.load(Ordering::Acquire) < last
    }

    /// Whether a reader put off an acknowledgement until a write returned (see
    /// `ack_ahead_of_write`), the mark cleared. Called by a writer after its write, past a
    /// `SeqCst` fence.
    #[inline]
    pub fn writer_awaited(&self) -> bool {
        self.reader_waits.load(Ordering::Relaxed) && self.reader_waits.swap(false, Ordering::AcqRel)
    }

    /// Request `seq`'s frame went out whole. Only the writer's holder writes `through`: a
    /// plain store, not a locked read-modify-write on every post.
    #[inline]
    fn went_out(&self, seq: u64) {
        if self.through.load(Ordering::Relaxed) < seq {
            self.through.store(seq, Ordering::Release);
        }
    }

    /// Writes request `seq`'s small frame with one `send`, counting it once it went out
    /// whole. Returns how much the socket took.
    #[inline]
    fn write_small(&self, frame: &SmallFrame, seq: u64, stream: &TcpStream) -> io::Result<usize> {
        self.writing.store(true, Ordering::SeqCst);
        // SAFETY: the frame's bytes are readable for `len` bytes for the call.
        let n = written(unsafe {
            sys::send(
                stream.as_raw_fd(),
                frame.as_bytes().as_ptr(),
                frame.len,
                libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT,
            )
        })
        .map(|n| n.unwrap_or(0));
        if matches!(n, Ok(n) if n == frame.len) {
            self.went_out(seq);
        }
        self.writing.store(false, Ordering::Release);
        n
    }

    /// Writes (part of) `frame`, counting it once it went out whole.
    fn write(&self, frame: &mut Frame, stream: &TcpStream) -> io::Result<bool> {
        if frame.request == 0 {
            return frame.write_some(stream);
        }
        self.writing.store(true, Ordering::SeqCst);
        let done = frame.write_some(stream);
        if matches!(done, Ok(true)) {
            self.went_out(frame.request);
        }
        self.writing.store(false, Ordering::Release);
        done
    }
}

/// The sending half.
pub struct Writer {
    half: Mutex<WriteHalf>,
    sent: Arc<Sent>,
}

/// The sending half, with the frame the socket took only in part.
pub struct WriteHalf {
    stream: Arc<TcpStream>,
    rest: Option<Frame>,
    sent: Arc<Sent>,
}

/// What a write that must not block achieved.
#[derive(Debug, PartialEq, Eq)]
pub enum Wrote {
    /// The whole frame is out.
    All,
    /// Part of it: the rest waits here (`WriterGuard::has_rest`) until the socket drains.
    Part,
    /// Nothing: an earlier frame's rest is still waiting.
    Nothing,
}

impl Writer {
    pub fn new(stream: Arc<TcpStream>) -> Writer {
        let sent = Arc::new(Sent::default());
        Writer {
            half: Mutex::new(WriteHalf {
                stream,
                rest: None,
                sent: sent.clone(),
            }),
            sent,
        }
    }

    /// How far our requests have gone out.
    pub fn sent(&self) -> &Sent {
        &self.sent
    }

    /// Holds the sending half. Its holders never wait on the socket, so this waits at most
    /// for another thread's system call.
    pub fn lock(&self) -> WriterGuard<'_> {
        WriterGuard(self.half.lock())
    }

    /// The sending half, if nobody is sending.
    pub fn try_lock(&self) -> Option<WriterGuard<'_>> {
        self.half.try_lock().map(WriterGuard)
    }

    /// Writes a handshake frame on a fresh socket (a few dozen bytes, which its empty buffer
    /// takes at once): an error if the socket does not take it whole.
    pub fn send_handshake(&self, header: &Header, payload: &[u8]) -> io::Result<()> {
        let mut g = self.lock();
        match g.write_now(Frame::new(&[header], payload))? {
            Wrote::All => Ok(()),
            _ => Err(io::ErrorKind::WouldBlock.into()),
        }
    }
}

/// The sending half, held.
pub struct WriterGuard<'a>(MutexGuard<'a, WriteHalf>);

impl WriterGuard<'_> {
    /// Whether part of a frame waits for room in the socket.
    pub fn has_rest(&self) -> bool {
        self.0.rest.is_some()
    }

    /// Writes what it can of the frame left in part, without blocking. True when it is out.
    pub fn continue_rest_now(&mut self) -> io::Result<bool> {
        let half = &mut *self.0;
        let Some(rest) = half.rest.as_mut() else {
            return Ok(true);
        };
        let done = match half.sent.write(rest, &half.stream) {
            Ok(done) => done,
            Err(e) => {
                half.rest = None;
                return Err(e);
            }
        };
        if done {
            half.rest = None;
        }
        Ok(done)
    }

    /// Writes `frame` without blocking, after what remained of an earlier one: what the socket
    /// has no room for stays for [`WriterGuard::continue_rest_now`]. Nothing is written (and
    /// the frame is dropped) while an earlier frame's rest waits: the caller keeps its own.
    pub fn write_now(&mut self, mut frame: Frame) -> io::Result<Wrote> {
        if self.0.rest.is_some() && !self.continue_rest_now()? {
            return Ok(Wrote::Nothing);
        }
        if self.0.sent.write(&mut frame, &self.0.stream)? {
            return Ok(Wrote::All);
        }
        self.0.rest = Some(frame);
        Ok(Wrote::Part)
    }

    /// [`WriterGuard::write_now`] for request `seq`'s small frame: what the socket does not
    /// take stays as a copy, as a [`Frame`]'s rest does.
    #[inline]
    pub fn write_small(&mut self, frame: &SmallFrame, seq: u64) -> io::Result<Wrote> {
        if self.0.rest.is_some() && !self.continue_rest_now()? {
            return Ok(Wrote::Nothing);
        }
        let n = self.0.sent.write_small(frame, seq, &self.0.stream)?;
        if n == frame.len {
            return Ok(Wrote::All);
        }
        let rest = Frame::new(&[], &[])
            .with_owned(frame.as_bytes()[n..].into())
            .for_request(seq);
        self.0.rest = Some(rest);
        Ok(Wrote::Part)
    }

    /// Writes an answer (a header, and a payload from the registered region `region`, still
    /// registered) without blocking; see [`WriterGuard::write_now`].
    pub fn answer_now(
        &mut self,
        header: &Header,
        payload: &[u8],
        region: Option<Arc<Lmr>>,
    ) -> io::Result<Wrote> {
        let frame = match region {
            Some(r) => Frame::new(&[header], &[]).with_region(
                Some(r),
                payload.as_ptr() as u64,
                payload.len(),
            ),
            None => Frame::new(&[header], &[]).with_owned(payload.into()),
        };
        self.write_now(frame)
    }

    /// [`WriterGuard::answer_now`] for a frame whose payload is a copy, kept until it is out.
    pub fn write_owned_now(&mut self, header: &Header, payload: Box<[u8]>) -> io::Result<Wrote> {
        self.write_now(Frame::new(&[header], &[]).with_owned(payload))
    }

    /// Forgets the frame left in part (the connection ends: nothing follows it).
    pub fn drop_rest(&mut self) {
        self.0.rest = None;
    }

    /// Closes our sending direction: the peer reads end of stream after what was sent.
    pub fn shutdown_write(&mut self) {
        let _ = self.0.stream.shutdown(std::net::Shutdown::Write);
    }
}

/// Writes the slices without blocking, with `MSG_NOSIGNAL` (a peer that went away is an error
/// here, never a SIGPIPE that kills the consumer's process). Returns how much was written: all
/// of it, unless the socket filled up.
fn write_vectored_now(stream: &TcpStream, mut slices: &mut [IoSlice<'_>]) -> io::Result<usize> {
    let mut total = 0;
    while !slices.is_empty() {
        let mut msg = libc::msghdr::zeroed();
        msg.msg_iov = slices.as_mut_ptr() as *mut libc::iovec;
        msg.msg_iovlen = slices.len().min(libc::UIO_MAXIOV as usize) as _;
        // SAFETY: IoSlice is ABI-compatible with iovec (std guarantees it on Unix); the
        // slices and the socket outlive the call.
        let n = unsafe {
            sys::sendmsg(
                stream.as_raw_fd(),
                &msg,
                libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT,
            )
        };
        match written(n)? {
            Some(n) => {
                total += n;
                IoSlice::advance_slices(&mut slices, n);
            }
            None => return Ok(total),
        }
    }
    Ok(total)
}

/// What a sending system call returned: the bytes it wrote, or None when it wrote none
/// (interrupted, or a socket without room).
fn written(n: sys::SysResult) -> io::Result<Option<usize>> {
    match n {
        Ok(0) => Err(io::ErrorKind::WriteZero.into()),
        Ok(n) => Ok(Some(n)),
        Err(libc::EINTR) | Err(libc::EAGAIN) => Ok(None),
        Err(e) => Err(io::Error::from_raw_os_error(e)),
    }
}

/// Bounds how long the peer may go unheard while the connection owes or expects something:
/// data we sent that it does not acknowledge for `timeout` fails the socket
/// (`TCP_USER_TIMEOUT`), and so does an idle connection whose peer stops answering the
/// kernel's keepalive probes, which start after a quarter of it. A peer whose process is
/// merely slow (a busy machine) keeps its kernel answering: only a dead or unreachable one
/// fails this way.
pub fn watch_peer(stream: &TcpStream, timeout: std::time::Duration) -> io::Result<()> {
    let secs = timeout.as_secs().max(1);
    let options: [(libc::c_int, libc::c_int, libc::c_int); 5] = [
        (libc::SOL_SOCKET, libc::SO_KEEPALIVE, 1),
        (
            libc::IPPROTO_TCP,
            libc::TCP_KEEPIDLE,
            (secs / 4).clamp(1, 32767) as libc::c_int,
        ),
        (
            libc::IPPROTO_TCP,
            libc::TCP_KEEPINTVL,
            (secs / 8).clamp(1, 32767) as libc::c_int,
        ),
        (libc::IPPROTO_TCP, libc::TCP_KEEPCNT, 127),
        (
            libc::IPPROTO_TCP,
            libc::TCP_USER_TIMEOUT,
            timeout.as_millis().clamp(1, i32::MAX as u128) as libc::c_int,
        ),
    ];
    for (level, name, value) in options {
        // SAFETY: an int option of our own socket, from a live local of its size.
        let r = unsafe {
            libc::setsockopt(
                stream.as_raw_fd(),
                level,
                name,
                (&value as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// How many bytes the reader takes from the socket at once: small frames arrive whole in one
/// system call, several at a time when they queue up.
const READ_AHEAD: usize = 64 * 1024;

/// A handshake's buffer: a connect request or accept with the most private data, or a
/// confirmation with its offer, fits.
const HANDSHAKE_BUFFER: usize = 256;

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
        Reader::with_buffer(stream, limits, READ_AHEAD)
    }

    /// A reader for a connection's handshake: a buffer that holds its small frames, made
    /// larger (`grow`) only once the connection is up, so connections a peer opens and never
    /// completes cost little.
    pub fn for_handshake(stream: Arc<TcpStream>, limits: Limits) -> Reader {
        Reader::with_buffer(stream, limits, HANDSHAKE_BUFFER)
    }

    fn with_buffer(stream: Arc<TcpStream>, limits: Limits, len: usize) -> Reader {
        Reader {
            stream,
            limits,
            buffer: vec![0u8; len].into_boxed_slice(),
            start: 0,
            end: 0,
            large_frames: false,
            drained: false,
        }
    }

    /// The connection is up: the read-ahead buffer gets its full size, keeping what it holds.
    pub fn grow(&mut self) {
        if self.buffer.len() >= READ_AHEAD {
            return;
        }
        let mut buffer = vec![0u8; READ_AHEAD].into_boxed_slice();
        let held = self.end - self.start;
        buffer[..held].copy_from_slice(&self.buffer[self.start..self.end]);
        self.buffer = buffer;
        self.start = 0;
        self.end = held;
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
            match unsafe {
                sys::recv(
                    self.stream.as_raw_fd(),
                    room.as_mut_ptr(),
                    room.len(),
                    libc::MSG_DONTWAIT,
                )
            } {
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
        let most = if self.large_frames {
            (2 * HEADER_LEN).saturating_sub(self.buffered()).max(1)
        } else {
            usize::MAX
        };
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
        let behind = if self.large_frames {
            after + HEADER_LEN
        } else {
            usize::MAX
        }
        .min(self.buffer.len());
        let mut iov = [
            libc::iovec {
                iov_base: dst.as_mut_ptr().cast(),
                iov_len: dst.len(),
            },
            libc::iovec {
                iov_base: self.buffer.as_mut_ptr().cast(),
                iov_len: behind,
            },
        ];
        let mut msg = libc::msghdr::zeroed();
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

    /// Whether the frames lately carried large payloads (see `large_frames`).
    pub fn large_frames(&self) -> bool {
        self.large_frames
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

    /// Writes a frame whole, as the engine would, woken each time the socket has room.
    fn send(w: &Writer, h: &Header, parts: &[&[u8]]) {
        let pieces: Vec<(*const u8, usize)> = parts.iter().map(|p| (p.as_ptr(), p.len())).collect();
        // SAFETY: the parts outlive this call, which returns only once the frame is out.
        let frame = unsafe { Frame::new(&[h], &[]).with_pieces(pieces) };
        let mut g = w.lock();
        while !g.continue_rest_now().unwrap() {
            std::thread::yield_now(); // an earlier frame's rest goes first
        }
        if g.write_now(frame).unwrap() == Wrote::Part {
            while !g.continue_rest_now().unwrap() {
                std::thread::yield_now();
            }
        }
    }

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
        send(&w, &h, &[b"hello", b"", b" world"]);
        send(&w, &Header::new(Op::Disconnect), &[]);
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
        assert!(matches!(
            next(&mut r),
            Err(ConnError::Protocol(WireError::BadMagic(_)))
        ));
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
        for (len, fill) in [
            (LARGE_PAYLOAD + 5, 1u8),
            (3, 2),
            (LARGE_PAYLOAD, 3),
            (0, 4),
            (7, 5),
        ] {
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
    fn an_acknowledgement_ahead_of_a_write_under_way_is_left_to_its_writer() {
        let sent = Sent::default();
        sent.went_out(3);
        // Nothing under way: what went out whole may be acknowledged, and anything past it is
        // the peer's lie, for the reader to find (never put off).
        assert!(!sent.ack_ahead_of_write(3));
        assert!(!sent.ack_ahead_of_write(4));
        assert!(!sent.writer_awaited());
        // A write under way (request 4's): its acknowledgement is put off, not waited for,
        // and the writer, as it returns, is told once that a reader left it one.
        sent.writing.store(true, Ordering::SeqCst);
        assert!(!sent.ack_ahead_of_write(3), "request 3 went out already");
        assert!(sent.ack_ahead_of_write(4));
        sent.went_out(4);
        sent.writing.store(false, Ordering::Release);
        std::sync::atomic::fence(Ordering::SeqCst);
        assert!(sent.writer_awaited());
        assert!(!sent.writer_awaited(), "told once");
        assert!(!sent.ack_ahead_of_write(4));
        assert!(sent.through(4));
    }

    #[test]
    fn skip_drops_a_payload() {
        let (a, b) = pair();
        let w = Writer::new(a);
        let mut r = Reader::new(b, LIMITS);
        let big = vec![7u8; 10000];
        let mut h = Header::new(Op::Send);
        h.payload_len = big.len() as u32;
        send(&w, &h, &[&big]);
        send(&w, &Header::new(Op::Ready), &[]);
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
    fn a_small_request_the_socket_takes_in_part_goes_out_whole_and_only_then_counts_as_sent() {
        let (a, b) = pair();
        let w = Writer::new(a);
        let mut r = Reader::new(b, LIMITS);
        let payload = [9u8; 100];
        let frame = |seq: u64| {
            let mut h = Header::new(Op::Send);
            h.id = seq;
            h.payload_len = payload.len() as u32;
            let mut f = SmallFrame::default();
            f.header(&h);
            f.bytes(&payload);
            f
        };
        // Requests until the socket, which nobody reads, takes one in part (or not at all).
        let mut g = w.lock();
        let mut seq = 0;
        let part = loop {
            seq += 1;
            match g.write_small(&frame(seq), seq).unwrap() {
                Wrote::All => assert!(w.sent().through(seq)),
                Wrote::Part => break seq,
                Wrote::Nothing => panic!("no rest was waiting"),
            }
        };
        assert!(g.has_rest());
        assert!(!w.sent().through(part));
        // Nothing else goes out while the rest waits.
        assert_eq!(
            g.write_small(&frame(part + 1), part + 1).unwrap(),
            Wrote::Nothing
        );
        drop(g);
        let reader = std::thread::spawn(move || {
            (1..=part)
                .map(|_| next(&mut r).unwrap())
                .collect::<Vec<_>>()
        });
        loop {
            let mut g = w.lock();
            if g.continue_rest_now().unwrap() {
                break;
            }
            drop(g);
            std::thread::yield_now();
        }
        assert!(w.sent().through(part));
        let frames = reader.join().unwrap();
        assert_eq!(frames.len() as u64, part);
        for (i, (h, p)) in frames.iter().enumerate() {
            assert_eq!(h.id, i as u64 + 1);
            assert_eq!(&p[..], &payload[..]);
        }
    }

    #[test]
    fn an_answer_the_socket_has_no_room_for_waits_and_goes_out_whole_before_the_next_frame() {
        let (a, b) = pair();
        let w = Writer::new(a);
        let mut r = Reader::new(
            b,
            Limits {
                max_private_data: 56,
                max_message: 16 << 20,
            },
        );
        // More than the socket buffers hold while nobody reads.
        let data: Vec<u8> = (0..(8 << 20)).map(|i| (i % 251) as u8).collect();
        let mut h = Header::new(Op::RdmaReadResponse);
        h.payload_len = data.len() as u32;
        let mut g = w.lock();
        assert_eq!(
            g.write_owned_now(&h, data.clone().into_boxed_slice())
                .unwrap(),
            Wrote::Part
        );
        assert!(g.has_rest());
        // Nothing else goes out meanwhile.
        assert_eq!(
            g.answer_now(&Header::new(Op::Ack), &[], None).unwrap(),
            Wrote::Nothing
        );
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
        // The next frame goes after the rest, as the socket drains.
        send(&w, &Header::new(Op::Disconnect), &[]);
        let (h1, p1, h2) = reader.join().unwrap();
        assert_eq!(h1.op, Op::RdmaReadResponse);
        assert!(p1 == data);
        assert_eq!(h2.op, Op::Disconnect);
    }
}
