//! Connection management over TCP: a listener per service point (on the port its conn_qual
//! maps to, `objects::conn_qual`), and the four-way handshake
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
//! ESTABLISHED event with its DISCONNECTED one.
//!
//! The request names the whole 64-bit qualifier; a listener refuses one for another qualifier
//! that maps to its port, as if nobody listened.
//!
//! Every wait is bounded, so a silent or vanished peer becomes a timeout, never a hang.

use std::io;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::conn::{ConnError, Reader, Writer};
use super::wire::{Header, Limits, Op};

/// How long a peer may take to send its side of the handshake once connected.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// A connection request that arrived on a listener, waiting for accept or reject.
pub struct IncomingRequest {
    stream: TcpStream,
    pub private_data: Vec<u8>,
    pub remote: SocketAddrV4,
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

/// An established connection: its two halves and the peer's address.
pub struct Established {
    pub writer: Writer,
    /// Another handle on the socket, for whoever takes the connection over.
    pub control: TcpStream,
    pub reader: Reader,
    pub local: SocketAddrV4,
    pub remote: SocketAddrV4,
    pub private_data: Vec<u8>,
}

fn v4(addr: SocketAddr) -> SocketAddrV4 {
    match addr {
        SocketAddr::V4(a) => a,
        SocketAddr::V6(a) => SocketAddrV4::new(a.ip().to_ipv4_mapped().unwrap_or(Ipv4Addr::UNSPECIFIED), a.port()),
    }
}

/// The connection after its handshake; `reader` is the handshake's, which may already hold
/// the peer's first frames.
fn established(stream: TcpStream, reader: Reader, private_data: Vec<u8>) -> io::Result<Established> {
    stream.set_read_timeout(None)?;
    stream.set_nodelay(true)?;
    let local = v4(stream.local_addr()?);
    let remote = v4(stream.peer_addr()?);
    Ok(Established {
        writer: Writer::new(stream.try_clone()?),
        control: stream,
        reader,
        local,
        remote,
        private_data,
    })
}

fn read_private_data(reader: &mut Reader, header: &Header) -> Result<Vec<u8>, ConnError> {
    let mut pd = vec![0u8; header.payload_len as usize];
    reader.read_payload(&mut pd)?;
    Ok(pd)
}

impl IncomingRequest {
    /// Accepts: sends our private data and waits for the active side's Ready. A peer that
    /// vanished or never confirms is an accept completion error (`Err`).
    pub fn accept(self, private_data: &[u8], limits: Limits) -> Result<Established, ConnError> {
        let private = self.private_data.clone();
        let (stream, mut reader) = self.accept_start(private_data, limits)?;
        let ready = reader.next_header()?;
        if ready.op != Op::Ready {
            return Err(ConnError::Closed);
        }
        Writer::new(stream.try_clone()?).send(&Header::new(Op::Ready), &[])?;
        Ok(established(stream, reader, private)?)
    }

    /// Sends the accept and hands back the stream and a reader whose next frame should be the
    /// active side's Ready (reads time out after the handshake bound until the caller lifts it).
    pub fn accept_start(self, private_data: &[u8], limits: Limits) -> Result<(TcpStream, Reader), ConnError> {
        let stream = self.stream;
        let writer = Writer::new(stream.try_clone()?);
        let mut h = Header::new(Op::Accept);
        h.payload_len = private_data.len() as u32;
        writer.send(&h, &[private_data])?;
        stream.set_read_timeout(Some(HANDSHAKE_TIMEOUT))?;
        let reader = Reader::new(stream.try_clone()?, limits);
        Ok((stream, reader))
    }

    /// Rejects with our private data and closes.
    pub fn reject(self, private_data: &[u8]) {
        if let Ok(s) = self.stream.try_clone() {
            let writer = Writer::new(s);
            let mut h = Header::new(Op::Reject);
            h.payload_len = private_data.len() as u32;
            let _ = writer.send(&h, &[private_data]);
            writer.shutdown();
        }
    }
}

/// How long a refused connect is retried: a listener that is being created as the peer
/// connects (a server that tells its client where to connect, then listens) is found.
const REFUSED_GRACE: Duration = Duration::from_millis(500);

/// A TCP connect within `budget` that retries a refusal for [`REFUSED_GRACE`].
fn connect_patiently(remote: SocketAddrV4, budget: Duration, start: Instant) -> io::Result<TcpStream> {
    let mut pause = Duration::from_millis(2);
    loop {
        let left = budget.saturating_sub(start.elapsed()).max(Duration::from_millis(1));
        match TcpStream::connect_timeout(&SocketAddr::V4(remote), left) {
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused && start.elapsed() + pause < REFUSED_GRACE.min(budget) => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            other => return other,
        }
    }
}

/// Connects to qualifier `conn_qual` at `remote` (its port), offers `private_data`, and waits
/// at most `timeout` (None: the handshake bound only) for the peer's answer.
pub fn connect(
    remote: SocketAddrV4,
    conn_qual: u64,
    private_data: &[u8],
    timeout: Option<Duration>,
    limits: Limits,
) -> Result<Established, ConnectFailure> {
    let start = Instant::now();
    let budget = timeout.unwrap_or(HANDSHAKE_TIMEOUT.saturating_mul(6));
    let stream = match connect_patiently(remote, budget, start) {
        Ok(s) => s,
        Err(e) => {
            return Err(match e.kind() {
                io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => ConnectFailure::TimedOut,
                io::ErrorKind::ConnectionRefused => ConnectFailure::Refused,
                _ => match e.raw_os_error() {
                    Some(libc::EHOSTUNREACH) | Some(libc::ENETUNREACH) | Some(libc::EADDRNOTAVAIL) => {
                        ConnectFailure::Unreachable
                    }
                    _ => ConnectFailure::Refused,
                },
            })
        }
    };
    let _ = stream.set_nodelay(true);
    let fail = |e: ConnError| match e {
        ConnError::Io(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
            ConnectFailure::TimedOut
        }
        _ => ConnectFailure::Refused,
    };
    let setup = || -> Result<Established, ConnectFailure> {
        let writer = Writer::new(stream.try_clone().map_err(|_| ConnectFailure::Refused)?);
        let mut h = Header::new(Op::ConnectRequest);
        h.payload_len = private_data.len() as u32;
        h.id = conn_qual;
        writer.send(&h, &[private_data]).map_err(|_| ConnectFailure::Refused)?;
        let left = budget.saturating_sub(start.elapsed()).max(Duration::from_millis(1));
        stream.set_read_timeout(Some(left)).map_err(|_| ConnectFailure::Refused)?;
        let mut reader = Reader::new(stream.try_clone().map_err(|_| ConnectFailure::Refused)?, limits);
        let answer = reader.next_header().map_err(fail)?;
        let pd = read_private_data(&mut reader, &answer).map_err(fail)?;
        match answer.op {
            Op::Accept => {
                writer.send(&Header::new(Op::Ready), &[]).map_err(|_| ConnectFailure::Refused)?;
                let confirm = reader.next_header().map_err(fail)?;
                if confirm.op != Op::Ready {
                    return Err(ConnectFailure::Refused);
                }
                established(stream.try_clone().map_err(|_| ConnectFailure::Refused)?, reader, pd)
                    .map_err(|_| ConnectFailure::Refused)
            }
            Op::Reject => Err(ConnectFailure::Rejected(pd)),
            _ => Err(ConnectFailure::Refused),
        }
    };
    let result = setup();
    if result.is_err() {
        let _ = stream.shutdown(std::net::Shutdown::Both);
    }
    result
}

/// A bound service point: an accept thread hands each valid request to `on_request`.
pub struct Listener {
    port: u16,
    stop: Arc<AtomicBool>,
    fd: i32,
    thread: Option<JoinHandle<()>>,
}

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
        let port = listener.local_addr()?.port();
        let conn_qual = if conn_qual == 0 { u64::from(port) } else { conn_qual };
        let stop = Arc::new(AtomicBool::new(false));
        let fd = listener.as_raw_fd();
        let on_request = Arc::new(on_request);
        let stop_flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name(format!("dat-listen-{port}"))
            .spawn(move || accept_loop(listener, conn_qual, limits, stop_flag, on_request))?;
        Ok(Listener { port, stop, fd, thread: Some(thread) })
    }

    pub fn port(&self) -> u16 {
        self.port
    }
}

fn accept_loop(
    listener: TcpListener,
    conn_qual: u64,
    limits: Limits,
    stop: Arc<AtomicBool>,
    on_request: Arc<dyn Fn(IncomingRequest) + Send + Sync>,
) {
    for stream in listener.incoming() {
        if stop.load(Ordering::Acquire) {
            break;
        }
        let Ok(stream) = stream else { continue };
        let on_request = on_request.clone();
        // Each handshake is read apart, so a silent client cannot stall the others.
        let _ = std::thread::Builder::new().name("dat-handshake".into()).stack_size(64 * 1024).spawn(move || {
            if let Some(request) = read_request(stream, conn_qual, limits) {
                on_request(request);
            }
        });
    }
}

/// The request on a new connection, if it is one for `conn_qual`.
fn read_request(stream: TcpStream, conn_qual: u64, limits: Limits) -> Option<IncomingRequest> {
    stream.set_read_timeout(Some(HANDSHAKE_TIMEOUT)).ok()?;
    let _ = stream.set_nodelay(true);
    let mut reader = Reader::new(stream.try_clone().ok()?, limits);
    let header = reader.next_header().ok()?;
    if header.op != Op::ConnectRequest || header.id != conn_qual {
        return None;
    }
    let private_data = read_private_data(&mut reader, &header).ok()?;
    let remote = v4(stream.peer_addr().ok()?);
    Some(IncomingRequest { stream, private_data, remote })
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        // SAFETY: fd is the listening socket the accept thread still owns; shutting it down
        // (not closing it) makes the blocked accept() return so the thread can end.
        unsafe { libc::shutdown(self.fd, libc::SHUT_RDWR) };
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    const LIMITS: Limits = Limits { max_private_data: 56, max_message: 1 << 20 };

    fn listener() -> (Listener, mpsc::Receiver<IncomingRequest>) {
        let (tx, rx) = mpsc::channel();
        let tx = parking_lot::Mutex::new(tx);
        let l = Listener::bind(Ipv4Addr::LOCALHOST, 0, 0, LIMITS, move |r| {
            let _ = tx.lock().send(r);
        })
        .unwrap();
        (l, rx)
    }

    #[test]
    fn accept_establishes_both_sides_with_private_data() {
        let (l, rx) = listener();
        let addr = SocketAddrV4::new(Ipv4Addr::LOCALHOST, l.port());
        let client = std::thread::spawn(move || connect(addr, u64::from(addr.port()), b"hello", Some(Duration::from_secs(5)), LIMITS));
        let request = rx.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(request.private_data, b"hello");
        let server = request.accept(b"welcome", LIMITS).unwrap();
        let client = client.join().unwrap().unwrap();
        assert_eq!(client.private_data, b"welcome");
        assert_eq!(server.private_data, b"hello");
        assert_eq!(client.remote.port(), l.port());
        assert_eq!(server.remote, client.local);
    }

    #[test]
    fn reject_reaches_the_active_side_with_its_private_data() {
        let (l, rx) = listener();
        let addr = SocketAddrV4::new(Ipv4Addr::LOCALHOST, l.port());
        let client = std::thread::spawn(move || connect(addr, u64::from(addr.port()), b"", Some(Duration::from_secs(5)), LIMITS));
        rx.recv_timeout(Duration::from_secs(5)).unwrap().reject(b"no");
        match client.join().unwrap() {
            Err(ConnectFailure::Rejected(pd)) => assert_eq!(pd, b"no"),
            other => panic!("{:?}", other.map(|e| e.remote)),
        }
    }

    #[test]
    fn nobody_listening_is_refused() {
        let port = {
            let (l, _rx) = listener();
            l.port()
        };
        let r = connect(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port), u64::from(port), b"", Some(Duration::from_secs(5)), LIMITS);
        assert!(matches!(r, Err(ConnectFailure::Refused)), "{:?}", r.map(|e| e.remote));
    }

    #[test]
    fn a_request_nobody_answers_times_out() {
        let (l, rx) = listener();
        let addr = SocketAddrV4::new(Ipv4Addr::LOCALHOST, l.port());
        let r = connect(addr, u64::from(addr.port()), b"", Some(Duration::from_millis(200)), LIMITS);
        assert!(matches!(r, Err(ConnectFailure::TimedOut)), "{:?}", r.map(|e| e.remote));
        drop(rx);
    }

    #[test]
    fn a_port_in_use_is_refused() {
        let (l, _rx) = listener();
        let e = Listener::bind(Ipv4Addr::LOCALHOST, l.port(), 0, LIMITS, |_| {}).err().unwrap();
        assert_eq!(e.kind(), io::ErrorKind::AddrInUse);
    }

    #[test]
    fn a_request_for_another_qualifier_of_the_port_is_refused() {
        let (tx, rx) = mpsc::channel();
        let tx = parking_lot::Mutex::new(tx);
        let l = Listener::bind(Ipv4Addr::LOCALHOST, 0, 0x1_0000_0001, LIMITS, move |r| {
            let _ = tx.lock().send(r);
        })
        .unwrap();
        let addr = SocketAddrV4::new(Ipv4Addr::LOCALHOST, l.port());
        let r = connect(addr, 0x2_0000_0001, b"", Some(Duration::from_secs(5)), LIMITS);
        assert!(matches!(r, Err(ConnectFailure::Refused)), "{:?}", r.map(|e| e.remote));
        assert!(rx.try_recv().is_err());
        let client = std::thread::spawn(move || connect(addr, 0x1_0000_0001, b"", Some(Duration::from_secs(5)), LIMITS));
        rx.recv_timeout(Duration::from_secs(5)).unwrap().accept(b"", LIMITS).unwrap();
        client.join().unwrap().unwrap();
    }

    #[test]
    fn garbage_instead_of_a_request_is_dropped() {
        use std::io::Write;
        let (l, rx) = listener();
        let mut s = TcpStream::connect(SocketAddrV4::new(Ipv4Addr::LOCALHOST, l.port())).unwrap();
        s.write_all(&[0u8; 64]).unwrap();
        drop(s);
        assert!(rx.recv_timeout(Duration::from_millis(300)).is_err());
    }
}
