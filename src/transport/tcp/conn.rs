//! One TCP connection carrying frames: a writer half shared by posting threads (a frame goes
//! out whole under the writer lock, gathered from the caller's buffers with `writev`, no copy)
//! and a reader half owned by whoever progresses the connection.

use std::io::{self, IoSlice, Read, Write};
use std::net::TcpStream;

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

/// The sending half.
pub struct Writer {
    stream: Mutex<TcpStream>,
}

impl Writer {
    pub fn new(stream: TcpStream) -> Writer {
        Writer { stream: Mutex::new(stream) }
    }

    /// Sends one frame: the header, then the payload gathered from `parts` (whose lengths
    /// must add up to `header.payload_len`).
    pub fn send(&self, header: &Header, parts: &[&[u8]]) -> io::Result<()> {
        let head = header.encode();
        let mut stream = self.stream.lock();
        if parts.is_empty() {
            return stream.write_all(&head);
        }
        let mut slices: Vec<IoSlice<'_>> = Vec::with_capacity(parts.len() + 1);
        slices.push(IoSlice::new(&head));
        slices.extend(parts.iter().filter(|p| !p.is_empty()).map(|p| IoSlice::new(p)));
        write_all_vectored(&mut stream, &mut slices)
    }

    /// Closes both directions; a blocked reader wakes with end of stream.
    pub fn shutdown(&self) {
        let _ = self.stream.lock().shutdown(std::net::Shutdown::Both);
    }
}

fn write_all_vectored(stream: &mut TcpStream, mut slices: &mut [IoSlice<'_>]) -> io::Result<()> {
    while !slices.is_empty() {
        match stream.write_vectored(slices) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut slices, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
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
    use std::net::TcpListener;

    const LIMITS: Limits = Limits { max_private_data: 56, max_message: 1 << 20 };

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
        assert!(matches!(r.next_header(), Err(ConnError::Protocol(WireError::BadMagic(_)))));
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
