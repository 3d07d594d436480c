//! Connection management over TCP, on the progress engine: a listener per service point (on
//! the port its conn_qual maps to, `objects::conn_qual`), and the four-way handshake
//!
//! ```text
//! active                      passive
//! ConnectRequest(qual, pdata) --->     (a connection request event)
//!                   <--- Accept(pdata) or Reject(pdata)
//! Ready              --->              (the passive side is established)
//!                   <--- Ready            (the active side is established)
//! ```
//!
//! The last confirmation makes the active side established only after the passive side is,
//! so a peer that disconnects as soon as it is connected cannot overtake the passive side's
//! ESTABLISHED event with its DISCONNECTED one. The request names the whole 64-bit qualifier;
//! a listener refuses one for another qualifier that maps to its port, as if nobody listened.
//!
//! A UD EP's exchange (the IB extension's UD connection) is the request and the answer
//! alone: its request is flagged `DATAGRAM` and names the requester's datagram port in
//! `rkey`, and an accept names the acceptor's so; the TCP connection then closes.
//!
//! Nothing here has a thread of its own: sockets are non-blocking where they wait (connecting,
//! listening, reading a handshake frame) and the engine reports them. Every wait has a
//! deadline, so a silent or vanished peer becomes a timeout, never a hang (a connect with no
//! time limit of the consumer's waits for its peer's consumer for ever, but its socket is
//! watched: a vanished host ends it).

use std::io;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use parking_lot::Mutex;

use super::conn::{ConnError, Reader, Writer};
use super::direct::{self, ExportedSlot, Offer};
use super::wire::{flags, Header, Limits, Op, ReadLimits};
use crate::runtime::engine::{Engine, Source, Token};
use crate::runtime::sys;

/// How long a peer may take to send its side of the handshake once connected.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a refused connect is retried: a listener that is being created as the peer
/// connects (a server that tells its client where to connect, then listens) is found. A
/// connection the kernel hangs up as it opens (seen on loopback under a burst of connects: a
/// report of hang-up alone, and the first send failing with EPIPE) is retried the same way.
const REFUSED_GRACE: Duration = Duration::from_millis(500);

/// Whether a connect that failed with `errno` is worth another attempt (within the grace).
fn retryable(errno: i32) -> bool {
    matches!(errno, libc::ECONNREFUSED | libc::ECONNRESET | libc::EPIPE)
}

/// A connection request that arrived on a listener, waiting for accept or reject.
pub struct IncomingRequest {
    stream: Arc<TcpStream>,
    reader: Reader,
    pub private_data: Vec<u8>,
    pub remote: SocketAddrV4,
    /// A UD EP's request: the requester's datagram port.
    pub datagram_port: Option<u16>,
    /// The requester would take a direct offer (`direct`): its request was flagged `DIRECT`.
    pub peer_direct: bool,
    /// How many RDMA reads the requester answers and starts at once.
    pub peer_reads: ReadLimits,
}

/// Why an active connect did not establish.
#[derive(Debug)]
pub enum ConnectFailure {
    /// The peer's consumer rejected it, with this private data.
    Rejected(Vec<u8>),
    /// Nobody listens there, or the handshake broke (`NON_PEER_REJECTED`).
    Refused,
    /// No route to the host (`UNREACHABLE`).
    Unreachable,
    /// The timeout expired first (`TIMED_OUT`).
    TimedOut,
}

/// An established connection: the socket, a reader that may hold the peer's first frames, the
/// peer's address and private data.
pub struct Established {
    pub stream: Arc<TcpStream>,
    pub reader: Reader,
    pub remote: SocketAddrV4,
    pub private_data: Vec<u8>,
    /// A UD EP's exchange: the acceptor's datagram port.
    pub datagram_port: Option<u16>,
    /// The acceptor's direct offer (`direct`), carried by its `Ready`.
    pub peer_offer: Option<Offer>,
    /// Our offer's slot in our table, when our `Ready` carried one.
    pub exported: Option<Arc<ExportedSlot>>,
    /// How many RDMA reads the acceptor answers and starts at once.
    pub peer_reads: ReadLimits,
}

/// Our end of `stream` and the peer's.
pub fn ends(stream: &TcpStream) -> Option<(SocketAddrV4, SocketAddrV4)> {
    Some((v4(stream.local_addr().ok()?), v4(stream.peer_addr().ok()?)))
}

/// Whether our end of `stream` asks its peer for a direct offer (the peer is on this host).
fn asks_direct(stream: &TcpStream) -> bool {
    ends(stream).is_some_and(|(local, remote)| direct::wanted(local, remote))
}

fn v4(addr: SocketAddr) -> SocketAddrV4 {
    match addr {
        SocketAddr::V4(a) => a,
        SocketAddr::V6(a) => SocketAddrV4::new(
            a.ip().to_ipv4_mapped().unwrap_or(Ipv4Addr::UNSPECIFIED),
            a.port(),
        ),
    }
}

fn micros(d: Duration) -> u64 {
    d.as_micros().min(u64::MAX as u128) as u64
}

/// Reads one handshake frame without blocking: Ok(None) until it is all there. Any other
/// frame is a protocol error here (a peer's frames behind our Ready stay for the link).
fn handshake_frame(reader: &mut Reader) -> Result<Option<(Header, Vec<u8>)>, ConnError> {
    loop {
        if let Some(h) = reader.peek() {
            let h = h.map_err(ConnError::Protocol)?;
            if !matches!(
                h.op,
                Op::ConnectRequest | Op::Accept | Op::Reject | Op::Ready
            ) {
                return Err(ConnError::Closed);
            }
            if reader.whole(&h) {
                reader.take_header(&h);
                let mut pd = vec![0u8; h.payload_len as usize];
                reader.take_buffered(&mut pd);
                return Ok(Some((h, pd)));
            }
        }
        // Handshake frames are small: the buffer takes them whole.
        if reader.fill(usize::MAX)? == 0 {
            return Ok(None);
        }
    }
}

impl IncomingRequest {
    /// Sends the accept, saying how many RDMA reads the accepting EP answers and starts at
    /// once, and hands back the socket and a reader whose next frame should be the active
    /// side's Ready.
    pub fn accept_start(
        self,
        private_data: &[u8],
        reads: ReadLimits,
    ) -> Result<(Arc<TcpStream>, Reader), ConnError> {
        let mut h = Header::new(Op::Accept);
        h.payload_len = private_data.len() as u32;
        h.remote_addr = reads.encode();
        if asks_direct(&self.stream) {
            h.flags |= flags::DIRECT;
        }
        Writer::new(self.stream.clone()).send_handshake(&h, private_data)?;
        Ok((self.stream, self.reader))
    }

    /// Accepts a UD EP's request for the EP of datagram port `port`, and closes: the exchange
    /// is over.
    pub fn accept_datagram(self, port: u16, private_data: &[u8]) -> io::Result<()> {
        let mut h = Header::new(Op::Accept);
        h.payload_len = private_data.len() as u32;
        h.rkey = u32::from(port);
        let sent = Writer::new(self.stream.clone()).send_handshake(&h, private_data);
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
        sent
    }

    /// Rejects with our private data and closes.
    pub fn reject(self, private_data: &[u8]) {
        let mut h = Header::new(Op::Reject);
        h.payload_len = private_data.len() as u32;
        let _ = Writer::new(self.stream.clone()).send_handshake(&h, private_data);
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
    }
}

/// A socket that connects without blocking.
///
/// With `SO_REUSEADDR`, as our listeners have it: the local port the kernel picks for the
/// connection, from the same range as the conn quals programs listen on (dapltest's 45279 on),
/// does not keep a service point of this host from listening there later (a listener and
/// connections may share a port when every socket on it allows it; none of ours listens
/// twice). Without it, a PSP failed with `DAT_CONN_QUAL_IN_USE` whenever one of the host's
/// connections happened to hold its port locally: a service point on an RDMA device has a
/// port space of its own, where no connection takes one.
fn nonblocking_socket() -> io::Result<RawFd> {
    // SAFETY: socket takes integers and returns a new descriptor or -1.
    let fd = unsafe {
        libc::socket(
            libc::AF_INET,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let on: libc::c_int = 1;
    // SAFETY: an int option of our fresh socket, from a live local of its size.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_REUSEADDR,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r != 0 {
        let e = io::Error::last_os_error();
        // SAFETY: our own descriptor, closed once.
        unsafe { libc::close(fd) };
        return Err(e);
    }
    Ok(fd)
}

/// Starts connecting `fd` to `remote`: Ok(true) connected at once, Ok(false) in progress.
fn start_connect(fd: RawFd, remote: SocketAddrV4) -> io::Result<bool> {
    let sin = crate::runtime::sys::sockaddr_in(remote);
    // SAFETY: a live sockaddr_in of its size, on our socket.
    let r = unsafe {
        libc::connect(
            fd,
            (&sin as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    };
    if r == 0 {
        return Ok(true);
    }
    match io::Error::last_os_error() {
        e if e.raw_os_error() == Some(libc::EINPROGRESS) => Ok(false),
        e => Err(e),
    }
}

/// The error a non-blocking connect ended with (None: connected).
fn connect_error(fd: RawFd) -> Option<i32> {
    let mut err: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: SO_ERROR writes one int to the pointer we pass.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_ERROR,
            (&mut err as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if r < 0 {
        return io::Error::last_os_error().raw_os_error();
    }
    (err != 0).then_some(err)
}

/// How a connect that failed with `errno` is reported. The kernel's own timeout (the host
/// never answered: a connect with no time limit of the consumer's, or the peer watch of one
/// under way) is the host not responding: `UNREACHABLE`, as the man page names it.
fn failure_of(errno: i32) -> ConnectFailure {
    match errno {
        libc::ETIMEDOUT
        | libc::EHOSTUNREACH
        | libc::ENETUNREACH
        | libc::EHOSTDOWN
        | libc::ENETDOWN
        | libc::EADDRNOTAVAIL => ConnectFailure::Unreachable,
        _ => ConnectFailure::Refused,
    }
}

/// The deadline of a connect that starts `now` with `timeout`: None (DAT_TIMEOUT_INFINITE)
/// is none at all, never a default.
fn deadline_of(now: u64, timeout: Option<Duration>) -> Option<u64> {
    timeout.map(|t| now.saturating_add(micros(t).max(1)))
}

type OnConnected = Box<dyn FnOnce(Result<Established, ConnectFailure>) + Send>;

/// An active connect in progress, reported by the engine.
struct Connector {
    engine: Arc<Engine>,
    remote: SocketAddrV4,
    conn_qual: u64,
    private_data: Vec<u8>,
    /// A UD EP's exchange: the requester's datagram port.
    datagram_port: Option<u16>,
    /// The connecting EP's protection zone (its identity), for our direct offer.
    zone: Option<u64>,
    /// How many RDMA reads the connecting EP answers and starts at once.
    reads: ReadLimits,
    limits: Limits,
    started: u64,
    /// When the whole connect times out (monotonic microseconds); None: never.
    deadline: Option<u64>,
    /// A connect with no deadline: how long its peer may go unheard (`conn::watch_peer`), so
    /// a host that vanishes still ends it.
    watch: Duration,
    state: Mutex<Attempt>,
    done: Mutex<Option<OnConnected>>,
}

enum Attempt {
    /// Waiting for the TCP connect of this socket.
    Connecting {
        stream: Arc<TcpStream>,
        token: Token,
        pause: u64,
    },
    /// Waiting for the peer's answer, then its confirmation.
    Handshaking {
        stream: Arc<TcpStream>,
        token: Token,
        reader: Box<Reader>,
        accepted: Option<Accepted>,
    },
    /// Refused: trying again at `at`.
    Waiting {
        at: u64,
        pause: u64,
        token: Token,
    },
    Done,
}

/// The accept an active connect got: its private data, and our offer's slot when our `Ready`
/// carried one.
struct Accepted {
    private_data: Vec<u8>,
    exported: Option<Arc<ExportedSlot>>,
    peer_reads: ReadLimits,
}

/// Connects to qualifier `conn_qual` at `remote` (its port), offers `private_data`, and
/// reports the outcome to `done` on the engine's thread, at most `timeout` later (None: no
/// time limit; a peer unheard for `watch` ends it). `zone`: the connecting EP's protection
/// zone (its identity), for a direct offer to a peer on this host that asks for one; `reads`:
/// how many RDMA reads it answers and starts at once. The handle cancels it.
#[allow(clippy::too_many_arguments)]
pub fn connect(
    remote: SocketAddrV4,
    conn_qual: u64,
    private_data: Vec<u8>,
    timeout: Option<Duration>,
    watch: Duration,
    limits: Limits,
    zone: Option<u64>,
    reads: ReadLimits,
    done: impl FnOnce(Result<Established, ConnectFailure>) + Send + 'static,
) -> ConnectHandle {
    ConnectHandle(start(
        remote,
        conn_qual,
        private_data,
        None,
        zone,
        reads,
        (timeout, watch),
        limits,
        Box::new(done),
    ))
}

/// An active connect under way; [`ConnectHandle::cancel`] gives it up.
pub struct ConnectHandle(Arc<Connector>);

impl ConnectHandle {
    /// Ends the attempt without a report: its socket closes, so a peer that answers later
    /// finds nobody (its accept fails).
    pub fn cancel(&self) {
        drop(self.0.done.lock().take());
        self.0.finish(Err(ConnectFailure::Refused));
    }
}

/// A UD EP's exchange with qualifier `conn_qual` at `remote`, for the EP of datagram port
/// `port`: established means accepted, with the acceptor's port; the connection is closed.
pub fn exchange_datagram(
    remote: SocketAddrV4,
    conn_qual: u64,
    port: u16,
    private_data: Vec<u8>,
    limits: Limits,
    done: impl FnOnce(Result<Established, ConnectFailure>) + Send + 'static,
) {
    let reads = ReadLimits {
        inbound: 0,
        outbound: 0,
    }; // no connection follows
    start(
        remote,
        conn_qual,
        private_data,
        Some(port),
        None,
        reads,
        (Some(HANDSHAKE_TIMEOUT.saturating_mul(6)), HANDSHAKE_TIMEOUT),
        limits,
        Box::new(done),
    );
}

#[allow(clippy::too_many_arguments)]
fn start(
    remote: SocketAddrV4,
    conn_qual: u64,
    private_data: Vec<u8>,
    datagram_port: Option<u16>,
    zone: Option<u64>,
    reads: ReadLimits,
    (timeout, watch): (Option<Duration>, Duration),
    limits: Limits,
    done: OnConnected,
) -> Arc<Connector> {
    let now = sys::monotonic_micros();
    let c = Arc::new(Connector {
        engine: Engine::get(),
        remote,
        conn_qual,
        private_data,
        datagram_port,
        zone,
        reads,
        limits,
        started: now,
        deadline: deadline_of(now, timeout),
        watch,
        state: Mutex::new(Attempt::Done),
        done: Mutex::new(Some(done)),
    });
    c.attempt(2_000);
    c
}

impl Connector {
    /// One TCP connect; `pause` is how long to wait before the next one if it is refused.
    ///
    /// The socket is registered only once its connect started: the engine reports a hang-up
    /// for a socket that is not connecting yet (whatever it was armed for). Its state is set
    /// and it is armed under the state's lock, so a report comes to a complete state.
    fn attempt(self: &Arc<Self>, pause: u64) {
        let fd = match nonblocking_socket() {
            Ok(fd) => fd,
            Err(_) => return self.report(Err(ConnectFailure::Refused)),
        };
        // SAFETY: a fresh descriptor nobody else owns.
        let stream = Arc::new(unsafe { TcpStream::from_raw_fd(fd) });
        if self.deadline.is_none() {
            // No deadline of the consumer's: the host must answer within the peer timeout.
            let _ = super::conn::watch_peer(&stream, self.watch);
        }
        let connected = match start_connect(fd, self.remote) {
            Ok(c) => c,
            Err(e) => {
                return self.failed_at_once(e.raw_os_error().unwrap_or(libc::ECONNREFUSED), pause)
            }
        };
        let mut state = self.state.lock();
        if self.done.lock().is_none() {
            return; // cancelled meanwhile
        }
        let token = match self.engine.register(fd, self.clone()) {
            Ok(t) => t,
            Err(_) => {
                drop(state);
                return self.report(Err(ConnectFailure::Refused));
            }
        };
        *state = Attempt::Connecting {
            stream,
            token,
            pause,
        };
        if let Some(deadline) = self.deadline {
            self.engine.set_timer(token, deadline);
        }
        if connected {
            drop(state);
            self.connected();
        } else {
            self.engine.arm(token, fd, libc::EPOLLOUT as u32);
        }
    }

    /// A connect that failed as it started (its socket is gone): tried again within the grace,
    /// or reported.
    fn failed_at_once(self: &Arc<Self>, errno: i32, pause: u64) {
        let now = sys::monotonic_micros();
        if retryable(errno) && now + pause < self.grace_end() {
            return self.retry_at(now + pause, pause);
        }
        self.report(Err(failure_of(errno)));
    }

    /// When refusals stop being tried again.
    fn grace_end(&self) -> u64 {
        let grace = self.started + micros(REFUSED_GRACE);
        self.deadline.map_or(grace, |d| grace.min(d))
    }

    /// Waits until `at` (a timer), then connects again.
    fn retry_at(self: &Arc<Self>, at: u64, pause: u64) {
        let mut state = self.state.lock();
        if self.done.lock().is_none() {
            return; // cancelled meanwhile
        }
        let retry = self.engine.register_timer_only(self.clone());
        *state = Attempt::Waiting {
            at,
            pause: (pause * 2).min(50_000),
            token: retry,
        };
        self.engine.set_timer(retry, at);
    }

    /// The TCP connect failed with `errno`: a refusal within the grace is tried again.
    fn refused_or_failed(self: &Arc<Self>, errno: i32) {
        let (token, fd, pause) = match &*self.state.lock() {
            Attempt::Connecting {
                token,
                stream,
                pause,
            } => (*token, stream.as_raw_fd(), *pause),
            _ => return,
        };
        let now = sys::monotonic_micros();
        if retryable(errno) && now + pause < self.grace_end() {
            self.engine.deregister(token, Some(fd));
            return self.retry_at(now + pause, pause);
        }
        self.finish(Err(failure_of(errno)));
    }

    /// Connected: the request goes out, the answer is awaited.
    fn connected(self: &Arc<Self>) {
        let mut state = self.state.lock();
        let Attempt::Connecting { stream, token, .. } =
            std::mem::replace(&mut *state, Attempt::Done)
        else {
            return;
        };
        let sent = (|| -> io::Result<Reader> {
            stream.set_nodelay(true)?;
            let mut h = Header::new(Op::ConnectRequest);
            h.payload_len = self.private_data.len() as u32;
            h.id = self.conn_qual;
            h.remote_addr = self.reads.encode();
            if let Some(port) = self.datagram_port {
                h.flags |= flags::DATAGRAM;
                h.rkey = u32::from(port);
            } else if asks_direct(&stream) {
                h.flags |= flags::DIRECT;
            }
            Writer::new(stream.clone()).send_handshake(&h, &self.private_data)?;
            Ok(Reader::for_handshake(stream.clone(), self.limits))
        })();
        match sent {
            Ok(reader) => {
                let fd = stream.as_raw_fd();
                *state = Attempt::Handshaking {
                    stream,
                    token,
                    reader: Box::new(reader),
                    accepted: None,
                };
                drop(state);
                self.engine.arm(token, fd, libc::EPOLLIN as u32);
            }
            Err(e) => {
                *state = Attempt::Connecting {
                    stream,
                    token,
                    pause: 2_000,
                };
                drop(state);
                self.refused_or_failed(e.raw_os_error().unwrap_or(libc::EPIPE));
            }
        }
    }

    /// The peer's answer, then its confirmation.
    fn answered(self: &Arc<Self>) {
        let mut state = self.state.lock();
        let Attempt::Handshaking {
            stream,
            token,
            reader,
            accepted,
        } = &mut *state
        else {
            return;
        };
        loop {
            let frame = match handshake_frame(reader) {
                Ok(Some(f)) => f,
                Ok(None) => {
                    self.engine
                        .arm(*token, stream.as_raw_fd(), libc::EPOLLIN as u32);
                    return;
                }
                Err(e) => {
                    drop(state);
                    return self.finish(Err(match e {
                        ConnError::Io(e) => failure_of(e.raw_os_error().unwrap_or(0)),
                        _ => ConnectFailure::Refused,
                    }));
                }
            };
            match (frame.0.op, accepted.is_some()) {
                (Op::Accept, false) if self.datagram_port.is_some() => {
                    // A UD exchange ends with the accept: no confirmations.
                    let Attempt::Handshaking {
                        stream,
                        token,
                        reader,
                        ..
                    } = std::mem::replace(&mut *state, Attempt::Done)
                    else {
                        unreachable!()
                    };
                    drop(state);
                    self.engine.deregister(token, Some(stream.as_raw_fd()));
                    let _ = stream.shutdown(std::net::Shutdown::Both);
                    let remote = stream.peer_addr().map(v4).unwrap_or(self.remote);
                    let port = u16::try_from(frame.0.rkey).unwrap_or(0);
                    let est = Established {
                        stream,
                        reader: *reader,
                        remote,
                        private_data: frame.1,
                        datagram_port: Some(port),
                        peer_offer: None,
                        exported: None,
                        peer_reads: ReadLimits::decode(frame.0.remote_addr),
                    };
                    return self.report(Ok(est));
                }
                (Op::Accept, false) => {
                    // The acceptor asked for our direct offer: our Ready carries it.
                    let offer = match (self.zone, ends(stream)) {
                        (Some(zone), Some((local, remote)))
                            if frame.0.flags & flags::DIRECT != 0 =>
                        {
                            direct::offer(zone, local, remote)
                        }
                        _ => None,
                    };
                    let sent = match &offer {
                        Some((o, _)) => {
                            Writer::new(stream.clone()).send_handshake(&o.ready(), &o.cookie)
                        }
                        None => {
                            Writer::new(stream.clone()).send_handshake(&Header::new(Op::Ready), &[])
                        }
                    };
                    if sent.is_err() {
                        break;
                    }
                    *accepted = Some(Accepted {
                        private_data: frame.1,
                        exported: offer.map(|(_, slot)| slot),
                        peer_reads: ReadLimits::decode(frame.0.remote_addr),
                    });
                }
                (Op::Ready, true) => {
                    let Ok(peer_offer) = Offer::from_ready(&frame.0, &frame.1) else {
                        break;
                    };
                    let Attempt::Handshaking {
                        stream,
                        token,
                        reader,
                        accepted,
                    } = std::mem::replace(&mut *state, Attempt::Done)
                    else {
                        unreachable!()
                    };
                    drop(state);
                    self.engine.deregister(token, Some(stream.as_raw_fd()));
                    let remote = stream.peer_addr().map(v4).unwrap_or(self.remote);
                    let Accepted {
                        private_data,
                        exported,
                        peer_reads,
                    } = accepted.expect("a Ready after the accept");
                    let est = Established {
                        stream,
                        reader: *reader,
                        remote,
                        private_data,
                        datagram_port: None,
                        peer_offer,
                        exported,
                        peer_reads,
                    };
                    return self.report(Ok(est));
                }
                (Op::Reject, false) => {
                    drop(state);
                    return self.finish(Err(ConnectFailure::Rejected(frame.1)));
                }
                _ => break,
            }
        }
        drop(state);
        self.finish(Err(ConnectFailure::Refused))
    }

    /// Ends the attempt with a failure: its socket goes.
    fn finish(self: &Arc<Self>, outcome: Result<Established, ConnectFailure>) {
        match std::mem::replace(&mut *self.state.lock(), Attempt::Done) {
            Attempt::Connecting { stream, token, .. }
            | Attempt::Handshaking { stream, token, .. } => {
                self.engine.deregister(token, Some(stream.as_raw_fd()));
                let _ = stream.shutdown(std::net::Shutdown::Both);
            }
            Attempt::Waiting { token, .. } => self.engine.deregister(token, None),
            Attempt::Done => {}
        }
        self.report(outcome);
    }

    fn report(&self, outcome: Result<Established, ConnectFailure>) {
        if let Some(done) = self.done.lock().take() {
            done(outcome);
        }
    }
}

impl Source for Connector {
    fn on_event(self: Arc<Self>, events: u32) {
        let now = sys::monotonic_micros();
        if events == 0 {
            if self.deadline.is_some_and(|d| now >= d) {
                // "the remote host does not respond within the Consumer requested Timeout":
                // UNREACHABLE while the host has not answered the TCP connect; TIMED_OUT once
                // it has (the peer's consumer did not accept in time); a host that refused
                // (nobody listens) is NON_PEER_REJECTED.
                let failure = match &*self.state.lock() {
                    Attempt::Connecting { .. } => ConnectFailure::Unreachable,
                    Attempt::Waiting { .. } => ConnectFailure::Refused,
                    _ => ConnectFailure::TimedOut,
                };
                return self.finish(Err(failure));
            }
            let retry = match &*self.state.lock() {
                Attempt::Waiting { at, pause, token } if now >= *at => Some((*pause, *token)),
                _ => None,
            };
            if let Some((pause, token)) = retry {
                self.engine.deregister(token, None);
                self.attempt(pause);
            }
            return;
        }
        let connecting = match &*self.state.lock() {
            Attempt::Connecting { stream, .. } => Some(stream.as_raw_fd()),
            _ => None,
        };
        let hung_up = events & (libc::EPOLLHUP | libc::EPOLLERR) as u32 != 0;
        match connecting {
            Some(fd) => match connect_error(fd) {
                None if hung_up => self.refused_or_failed(libc::ECONNRESET),
                None => self.connected(),
                Some(errno) => self.refused_or_failed(errno),
            },
            None => self.answered(),
        }
    }
}

/// A bound service point: the engine reports each connection; its request is read (without a
/// thread, within `HANDSHAKE_TIMEOUT`) and handed to `on_request`. Dropping it stops listening.
pub struct Listener {
    port: u16,
    source: Arc<ListenSource>,
}

type OnRequest = Arc<dyn Fn(IncomingRequest) + Send + Sync>;

struct ListenSource {
    engine: Arc<Engine>,
    token: OnceLock<Token>,
    listener: TcpListener,
    conn_qual: u64,
    limits: Limits,
    on_request: OnRequest,
    /// Connections taken whose request has not arrived yet (`Handshake`s): at most
    /// `MAX_HANDSHAKES`; the kernel's backlog holds the next ones meanwhile.
    handshakes: AtomicUsize,
}

/// How many connections of one listener may be between the TCP connect and their request at
/// once (each holds a descriptor and a small buffer, for up to `HANDSHAKE_TIMEOUT`).
const MAX_HANDSHAKES: usize = 256;

/// How long a listener rests when the process is out of descriptors (or memory) before it
/// takes a connection again: the pending one stays in the kernel's backlog meanwhile.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

impl Listener {
    /// Binds `ip:port` (port 0: any free port) for requests to `conn_qual` (0: the port bound).
    /// A port in use is `ErrorKind::AddrInUse`.
    pub fn bind(
        ip: Ipv4Addr,
        port: u16,
        conn_qual: u64,
        limits: Limits,
        on_request: impl Fn(IncomingRequest) + Send + Sync + 'static,
    ) -> io::Result<Listener> {
        let listener = TcpListener::bind(SocketAddrV4::new(ip, port))?;
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        let conn_qual = if conn_qual == 0 {
            u64::from(port)
        } else {
            conn_qual
        };
        let source = Arc::new(ListenSource {
            engine: Engine::get(),
            token: OnceLock::new(),
            listener,
            conn_qual,
            limits,
            on_request: Arc::new(on_request),
            handshakes: AtomicUsize::new(0),
        });
        let fd = source.listener.as_raw_fd();
        let token = source.engine.register(fd, source.clone())?;
        let _ = source.token.set(token);
        source.engine.arm(token, fd, libc::EPOLLIN as u32);
        Ok(Listener { port, source })
    }

    pub fn port(&self) -> u16 {
        self.port
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Some(token) = self.source.token.get() {
            self.source
                .engine
                .deregister(*token, Some(self.source.listener.as_raw_fd()));
        }
    }
}

impl ListenSource {
    /// Takes the connections waiting in the backlog, while fewer than `MAX_HANDSHAKES` are in
    /// progress; then waits for the next one (armed), for a handshake to end (it arms us), or
    /// for the process to have descriptors again (a timer).
    fn take_connections(self: &Arc<Self>) {
        let Some(token) = self.token.get().copied() else {
            return;
        };
        loop {
            if self.handshakes.load(Ordering::Acquire) >= MAX_HANDSHAKES {
                return; // the handshake that ends next arms the listener again
            }
            match self.listener.accept() {
                Ok((stream, _)) => Handshake::start(stream, self),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // Reset before we took it: the next one.
                Err(e) if e.raw_os_error() == Some(libc::ECONNABORTED) => continue,
                // Out of descriptors or memory: armed again, the listener would be reported at
                // once, over and over. It rests, and the connection waits in the backlog.
                Err(_) => {
                    self.engine
                        .set_timer(token, sys::monotonic_micros() + micros(ACCEPT_BACKOFF));
                    return;
                }
            }
        }
        self.engine
            .arm(token, self.listener.as_raw_fd(), libc::EPOLLIN as u32);
    }

    /// A handshake ended (its request arrived, or it failed): one at the bound lets the
    /// listener take the next connection.
    fn handshake_ended(self: &Arc<Self>) {
        if self.handshakes.fetch_sub(1, Ordering::AcqRel) == MAX_HANDSHAKES {
            if let Some(token) = self.token.get() {
                self.engine
                    .arm(*token, self.listener.as_raw_fd(), libc::EPOLLIN as u32);
            }
        }
    }
}

impl Source for ListenSource {
    fn on_event(self: Arc<Self>, _events: u32) {
        self.take_connections();
    }
}

/// A connection on a listener whose request has not arrived whole yet.
struct Handshake {
    engine: Arc<Engine>,
    token: OnceLock<Token>,
    conn_qual: u64,
    on_request: OnRequest,
    /// Counts it among the listener's handshakes (weakly: a listener that is dropped lets go
    /// of its port at once).
    listener: Weak<ListenSource>,
    state: Mutex<Option<(Arc<TcpStream>, Reader)>>,
}

impl Handshake {
    fn start(stream: TcpStream, listener: &Arc<ListenSource>) {
        // Non-blocking: nothing in the library waits on a socket.
        if stream.set_nonblocking(true).is_err() {
            return;
        }
        let _ = stream.set_nodelay(true);
        let stream = Arc::new(stream);
        let reader_half = stream.clone();
        listener.handshakes.fetch_add(1, Ordering::AcqRel);
        let h = Arc::new(Handshake {
            engine: listener.engine.clone(),
            token: OnceLock::new(),
            conn_qual: listener.conn_qual,
            on_request: listener.on_request.clone(),
            listener: Arc::downgrade(listener),
            state: Mutex::new(Some((
                stream,
                Reader::for_handshake(reader_half, listener.limits),
            ))),
        });
        let fd = match &*h.state.lock() {
            Some((s, _)) => s.as_raw_fd(),
            None => return,
        };
        let Ok(token) = h.engine.register(fd, h.clone()) else {
            h.leave();
            return;
        };
        let _ = h.token.set(token);
        h.engine
            .set_timer(token, sys::monotonic_micros() + micros(HANDSHAKE_TIMEOUT));
        h.engine.arm(token, fd, libc::EPOLLIN as u32);
    }

    /// Done with the connection: it leaves the engine (and closes, unless handed on), and no
    /// longer counts among the listener's handshakes.
    fn leave(&self) -> Option<(Arc<TcpStream>, Reader)> {
        let taken = self.state.lock().take();
        if let Some((s, _)) = taken.as_ref() {
            if let Some(token) = self.token.get() {
                self.engine.deregister(*token, Some(s.as_raw_fd()));
            }
            if let Some(listener) = self.listener.upgrade() {
                listener.handshake_ended();
            }
        }
        taken
    }
}

impl Source for Handshake {
    fn on_event(self: Arc<Self>, events: u32) {
        if events == 0 {
            self.leave(); // too slow: dropped
            return;
        }
        let frame = {
            let mut state = self.state.lock();
            let Some((_, reader)) = state.as_mut() else {
                return;
            };
            handshake_frame(reader)
        };
        match frame {
            Ok(None) => {
                if let (Some(token), Some((s, _))) = (self.token.get(), self.state.lock().as_ref())
                {
                    self.engine.arm(*token, s.as_raw_fd(), libc::EPOLLIN as u32);
                }
            }
            Ok(Some((h, private_data))) if h.op == Op::ConnectRequest && h.id == self.conn_qual => {
                let Some((stream, reader)) = self.leave() else {
                    return;
                };
                let Ok(remote) = stream.peer_addr().map(v4) else {
                    return;
                };
                let datagram_port =
                    (h.flags & flags::DATAGRAM != 0).then(|| u16::try_from(h.rkey).unwrap_or(0));
                let peer_direct = h.flags & flags::DIRECT != 0;
                let peer_reads = ReadLimits::decode(h.remote_addr);
                (self.on_request)(IncomingRequest {
                    stream,
                    reader,
                    private_data,
                    remote,
                    datagram_port,
                    peer_direct,
                    peer_reads,
                });
            }
            // Not a request for us, or not a frame: as if nobody listened.
            _ => {
                self.leave();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    const LIMITS: Limits = Limits {
        max_private_data: 56,
        max_message: 1 << 20,
    };
    const READS: ReadLimits = ReadLimits {
        inbound: 4,
        outbound: 4,
    };

    fn listener(qual: u64) -> (Listener, mpsc::Receiver<IncomingRequest>) {
        let (tx, rx) = mpsc::channel();
        let tx = parking_lot::Mutex::new(tx);
        let l = Listener::bind(Ipv4Addr::LOCALHOST, 0, qual, LIMITS, move |r| {
            let _ = tx.lock().send(r);
        })
        .unwrap();
        (l, rx)
    }

    fn connect_now(
        addr: SocketAddrV4,
        qual: u64,
        pd: &[u8],
        timeout: Duration,
    ) -> mpsc::Receiver<Result<Established, ConnectFailure>> {
        let (tx, rx) = mpsc::channel();
        let tx = parking_lot::Mutex::new(tx);
        connect(
            addr,
            qual,
            pd.to_vec(),
            Some(timeout),
            HANDSHAKE_TIMEOUT,
            LIMITS,
            None,
            READS,
            move |r| {
                let _ = tx.lock().send(r);
            },
        );
        rx
    }

    #[test]
    fn an_infinite_timeout_is_no_deadline() {
        // DAT_TIMEOUT_INFINITE reaches here as None: no deadline, never a default one.
        assert_eq!(deadline_of(1_000, None), None);
        assert_eq!(
            deadline_of(1_000, Some(Duration::from_micros(250))),
            Some(1_250)
        );
        assert_eq!(
            deadline_of(u64::MAX - 1, Some(Duration::from_secs(1))),
            Some(u64::MAX)
        );
        // And a connect started so has none: it arms no timer.
        let (l, rx) = listener(0x77);
        let addr = SocketAddrV4::new(Ipv4Addr::LOCALHOST, l.port());
        let handle = connect(
            addr,
            0x77,
            Vec::new(),
            None,
            HANDSHAKE_TIMEOUT,
            LIMITS,
            None,
            READS,
            |_| {},
        );
        assert_eq!(handle.0.deadline, None);
        rx.recv_timeout(Duration::from_secs(5)).unwrap();
        handle.cancel();
    }

    #[test]
    fn a_cancelled_connect_reports_nothing_and_the_late_accept_fails() {
        let (l, rx) = listener(0x78);
        let addr = SocketAddrV4::new(Ipv4Addr::LOCALHOST, l.port());
        let (tx, reports) = mpsc::channel();
        let tx = parking_lot::Mutex::new(tx);
        let handle = connect(
            addr,
            0x78,
            Vec::new(),
            Some(Duration::from_secs(5)),
            HANDSHAKE_TIMEOUT,
            LIMITS,
            None,
            READS,
            move |r| {
                let _ = tx.lock().send(r.is_ok());
            },
        );
        let request = rx.recv_timeout(Duration::from_secs(5)).unwrap();
        handle.cancel();
        // The accept goes to a closed socket: the Ready never comes, the stream ends.
        let (_stream, mut reader) = request.accept_start(b"late", READS).unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        let ended = loop {
            match handshake_frame(&mut reader) {
                Ok(None) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5))
                }
                Ok(None) => break false,
                Ok(Some(_)) => break false,
                Err(_) => break true,
            }
        };
        assert!(ended, "the accepting side sees the connection end");
        assert!(reports.recv_timeout(Duration::from_millis(200)).is_err());
    }

    /// The passive side's half of the handshake, done by hand: the accept, then the Ready
    /// exchange.
    fn accept_by_hand(request: IncomingRequest, pd: &[u8]) -> (Arc<TcpStream>, Vec<u8>) {
        let private = request.private_data.clone();
        let (stream, mut reader) = request.accept_start(pd, READS).unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        loop {
            if let Some((h, _)) = handshake_frame(&mut reader).unwrap() {
                assert_eq!(h.op, Op::Ready);
                break;
            }
            assert!(std::time::Instant::now() < deadline);
            std::thread::sleep(Duration::from_millis(1));
        }
        Writer::new(stream.clone())
            .send_handshake(&Header::new(Op::Ready), &[])
            .unwrap();
        (stream, private)
    }

    #[test]
    fn accept_establishes_both_sides_with_private_data() {
        let (l, rx) = listener(0);
        let addr = SocketAddrV4::new(Ipv4Addr::LOCALHOST, l.port());
        let client = connect_now(addr, u64::from(l.port()), b"hello", Duration::from_secs(5));
        let request = rx.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(request.private_data, b"hello");
        let (server, private) = accept_by_hand(request, b"welcome");
        assert_eq!(private, b"hello");
        let client = client
            .recv_timeout(Duration::from_secs(5))
            .unwrap()
            .unwrap();
        assert_eq!(client.private_data, b"welcome");
        assert_eq!(client.remote.port(), l.port());
        assert_eq!(
            v4(server.peer_addr().unwrap()),
            v4(client.stream.local_addr().unwrap())
        );
    }

    #[test]
    fn reject_reaches_the_active_side_with_its_private_data() {
        let (l, rx) = listener(0);
        let addr = SocketAddrV4::new(Ipv4Addr::LOCALHOST, l.port());
        let client = connect_now(addr, u64::from(l.port()), b"", Duration::from_secs(5));
        rx.recv_timeout(Duration::from_secs(5))
            .unwrap()
            .reject(b"no");
        match client.recv_timeout(Duration::from_secs(5)).unwrap() {
            Err(ConnectFailure::Rejected(pd)) => assert_eq!(pd, b"no"),
            other => panic!("{:?}", other.map(|e| e.remote)),
        }
    }

    #[test]
    fn nobody_listening_is_refused() {
        let port = {
            let (l, _rx) = listener(0);
            l.port()
        };
        let r = connect_now(
            SocketAddrV4::new(Ipv4Addr::LOCALHOST, port),
            u64::from(port),
            b"",
            Duration::from_secs(5),
        );
        let r = r.recv_timeout(Duration::from_secs(5)).unwrap();
        assert!(
            matches!(r, Err(ConnectFailure::Refused)),
            "{:?}",
            r.map(|e| e.remote)
        );
    }

    #[test]
    fn a_request_nobody_answers_times_out() {
        let (l, rx) = listener(0);
        let addr = SocketAddrV4::new(Ipv4Addr::LOCALHOST, l.port());
        let r = connect_now(addr, u64::from(l.port()), b"", Duration::from_millis(200));
        let r = r.recv_timeout(Duration::from_secs(5)).unwrap();
        assert!(
            matches!(r, Err(ConnectFailure::TimedOut)),
            "{:?}",
            r.map(|e| e.remote)
        );
        drop(rx);
    }

    #[test]
    fn a_port_in_use_is_refused() {
        let (l, _rx) = listener(0);
        let e = Listener::bind(Ipv4Addr::LOCALHOST, l.port(), 0, LIMITS, |_| {})
            .err()
            .unwrap();
        assert_eq!(e.kind(), io::ErrorKind::AddrInUse);
    }

    #[test]
    fn a_request_for_another_qualifier_of_the_port_is_refused() {
        let (l, rx) = listener(0x1_0000_0001);
        let addr = SocketAddrV4::new(Ipv4Addr::LOCALHOST, l.port());
        let r = connect_now(addr, 0x2_0000_0001, b"", Duration::from_secs(5))
            .recv_timeout(Duration::from_secs(5))
            .unwrap();
        assert!(
            matches!(r, Err(ConnectFailure::Refused)),
            "{:?}",
            r.map(|e| e.remote)
        );
        assert!(rx.try_recv().is_err());
        let client = connect_now(addr, 0x1_0000_0001, b"", Duration::from_secs(5));
        accept_by_hand(rx.recv_timeout(Duration::from_secs(5)).unwrap(), b"");
        client
            .recv_timeout(Duration::from_secs(5))
            .unwrap()
            .unwrap();
    }

    #[test]
    fn garbage_instead_of_a_request_is_dropped() {
        use std::io::Write;
        let (l, rx) = listener(0);
        let mut s = TcpStream::connect(SocketAddrV4::new(Ipv4Addr::LOCALHOST, l.port())).unwrap();
        s.write_all(&[0u8; 64]).unwrap();
        drop(s);
        assert!(rx.recv_timeout(Duration::from_millis(300)).is_err());
    }

    #[test]
    fn a_listener_that_appears_within_the_grace_is_found() {
        let port = {
            let (l, _rx) = listener(0);
            l.port()
        };
        let addr = SocketAddrV4::new(Ipv4Addr::LOCALHOST, port);
        let client = connect_now(addr, u64::from(port), b"", Duration::from_secs(5));
        std::thread::sleep(Duration::from_millis(50));
        let (tx, rx) = mpsc::channel();
        let tx = parking_lot::Mutex::new(tx);
        let _l = Listener::bind(Ipv4Addr::LOCALHOST, port, 0, LIMITS, move |r| {
            let _ = tx.lock().send(r);
        })
        .unwrap();
        accept_by_hand(rx.recv_timeout(Duration::from_secs(5)).unwrap(), b"");
        client
            .recv_timeout(Duration::from_secs(5))
            .unwrap()
            .unwrap();
    }
}
