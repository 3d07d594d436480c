//! The TCP transport's frames. The peer is untrusted: every header is checked (magic,
//! version, operation, lengths against the limits) before anything else looks at it, and a bad
//! one is a protocol error that ends the connection, never the process.
//!
//! A frame is a fixed 32-byte little-endian header followed by `payload_len` bytes; a read
//! request carries none: its `payload_len` is the length asked for.

pub const MAGIC: u16 = 0xDA7A;
/// Version 2: a send may carry an acknowledgement (`flags::ACK`). Version 3: the IB
/// extension's operations (`Immediate`, `FetchAdd`, `CompareSwap`). Version 4: a send with
/// invalidate (`flags::INVALIDATE`). Version 5: a UD EP's exchange (`flags::DATAGRAM`).
/// Version 6: direct access between processes of one host (`flags::DIRECT`, `Doorbell`).
/// Version 7: a connect request and an accept say how many RDMA reads their sender answers at
/// once and starts at once (`ReadLimits`, in `remote_addr`).
pub const VERSION: u8 = 7;
/// The payload of a `Ready` flagged `DIRECT`: the cookie its sender's table holds.
pub const OFFER_COOKIE: u32 = 16;
/// The payload of an atomic: its two operands (the value to add, or to compare and to swap).
pub const ATOMIC_OPERANDS: u32 = 16;
pub const HEADER_LEN: usize = 32;

/// What a frame asks of its receiver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Op {
    /// Active side -> listener: connect to `conn_qual` (in `id`), with private data and the
    /// requester's `ReadLimits` (in `remote_addr`).
    ConnectRequest = 1,
    /// Listener -> active side: accepted, with private data and the acceptor's `ReadLimits`.
    Accept = 2,
    /// Listener -> active side: rejected, with private data.
    Reject = 3,
    /// Active side -> listener: the accept arrived; the connection is up on both sides. And
    /// back, listener -> active side: the listener is established. Flagged `DIRECT`, it offers
    /// the peer direct access to its sender's memory (`direct`): through process `id`'s table,
    /// its descriptor `remote_addr >> 32`, connection slot `rkey` of generation
    /// `remote_addr & 0xffff_ffff`; the payload is the table's cookie.
    Ready = 4,
    /// A message for the peer's next posted receive.
    Send = 5,
    /// Write the payload at `remote_addr` in the region `rkey` names.
    RdmaWrite = 6,
    /// Send back `length` bytes from `remote_addr` in `rkey`, tagged `id`.
    RdmaReadRequest = 7,
    /// The data of read `id`.
    RdmaReadResponse = 8,
    /// A remote access the receiver refused (bad key, bounds, privileges) for request `id`;
    /// the connection breaks after it, as an RC QP would.
    RemoteAccessError = 9,
    /// Graceful disconnect.
    Disconnect = 10,
    /// Every request up to and including `id` has been carried out by the receiver.
    Ack = 11,
    /// Follows the `RdmaWrite` of request `id` (flagged `IMMEDIATE`): the write's immediate
    /// data (`rkey`) and length (`remote_addr`), for the receiver's next posted receive.
    Immediate = 12,
    /// Add the payload's first 8 bytes to the 64-bit word at `remote_addr` in `rkey`, and send
    /// back its original value as the data of read `id`.
    FetchAdd = 13,
    /// Store the payload's second 8 bytes in the 64-bit word at `remote_addr` in `rkey` when it
    /// holds the first 8; send back its original value as the data of read `id`.
    CompareSwap = 14,
    /// Messages of the sender's landed in our receives directly (`direct`) while no thread of
    /// ours polled the connection: the receiver takes them.
    Doorbell = 15,
}

impl Op {
    /// A request the peer answers with data (an RDMA read's, an atomic's original word).
    pub fn answered_with_data(self) -> bool {
        matches!(self, Op::RdmaReadRequest | Op::FetchAdd | Op::CompareSwap)
    }
}

impl TryFrom<u8> for Op {
    type Error = WireError;
    fn try_from(v: u8) -> Result<Op, WireError> {
        Ok(match v {
            1 => Op::ConnectRequest,
            2 => Op::Accept,
            3 => Op::Reject,
            4 => Op::Ready,
            5 => Op::Send,
            6 => Op::RdmaWrite,
            7 => Op::RdmaReadRequest,
            8 => Op::RdmaReadResponse,
            9 => Op::RemoteAccessError,
            10 => Op::Disconnect,
            11 => Op::Ack,
            12 => Op::Immediate,
            13 => Op::FetchAdd,
            14 => Op::CompareSwap,
            15 => Op::Doorbell,
            _ => return Err(WireError::UnknownOp(v)),
        })
    }
}

/// How many RDMA reads (and atomics, which are answered the same way) an EP answers at once
/// (`inbound`: its `max_rdma_read_in`) and starts at once (`outbound`: `max_rdma_read_out`),
/// as its side of the handshake says them: each side then keeps no more of its reads in
/// flight than the peer answers at once, and breaks a connection whose peer asks for more.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadLimits {
    pub inbound: u32,
    pub outbound: u32,
}

impl ReadLimits {
    pub fn encode(self) -> u64 {
        (u64::from(self.outbound) << 32) | u64::from(self.inbound)
    }

    pub fn decode(v: u64) -> ReadLimits {
        ReadLimits {
            inbound: v as u32,
            outbound: (v >> 32) as u32,
        }
    }
}

/// Header flag bits.
pub mod flags {
    /// The send asks the receiver's solicited-wait EVDs to wake.
    pub const SOLICITED: u16 = 0x1;
    /// A send whose `remote_addr` (unused by sends) acknowledges every request of the
    /// receiver's up to it, as an `Ack` frame would: a ping-pong's reply carries it.
    pub const ACK: u16 = 0x2;
    /// An RDMA write whose `Immediate` follows: the receiver acknowledges it with that.
    pub const IMMEDIATE: u16 = 0x4;
    /// A send with invalidate: as it lands, the receiver's RMR bound through this connection
    /// with the `rmr_context` in `rkey` is unbound.
    pub const INVALIDATE: u16 = 0x8;
    /// A connect request of a UD EP (its datagram port in `rkey`): the accept names the
    /// acceptor's, and the connection ends there.
    pub const DATAGRAM: u16 = 0x10;
    /// On a connect request or an accept: its sender runs on this host and would take a
    /// direct offer. On a `Ready`: the offer (to a peer that asked for it).
    pub const DIRECT: u16 = 0x20;
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub op: Op,
    pub flags: u16,
    pub payload_len: u32,
    pub rkey: u32,
    pub remote_addr: u64,
    /// Request id (RDMA read), or a length (read request), or the conn_qual (connect).
    pub id: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireError {
    BadMagic(u16),
    BadVersion(u8),
    UnknownOp(u8),
    /// A payload longer than this operation may carry.
    TooLong {
        op: Op,
        len: u32,
    },
    /// Bits set that no frame of this operation uses.
    BadFlags(u16),
}

/// The largest payload each operation may carry.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub max_private_data: u32,
    pub max_message: u32,
}

impl Header {
    pub fn new(op: Op) -> Header {
        Header {
            op,
            flags: 0,
            payload_len: 0,
            rkey: 0,
            remote_addr: 0,
            id: 0,
        }
    }

    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0..2].copy_from_slice(&MAGIC.to_le_bytes());
        b[2] = VERSION;
        b[3] = self.op as u8;
        b[4..6].copy_from_slice(&self.flags.to_le_bytes());
        // b[6..8] reserved, zero
        b[8..12].copy_from_slice(&self.payload_len.to_le_bytes());
        b[12..16].copy_from_slice(&self.rkey.to_le_bytes());
        b[16..24].copy_from_slice(&self.remote_addr.to_le_bytes());
        b[24..32].copy_from_slice(&self.id.to_le_bytes());
        b
    }

    /// Checks and decodes a header received from the peer.
    pub fn decode(b: &[u8; HEADER_LEN], limits: Limits) -> Result<Header, WireError> {
        let le16 = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        let le32 = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let le64 = |i: usize| {
            let mut x = [0u8; 8];
            x.copy_from_slice(&b[i..i + 8]);
            u64::from_le_bytes(x)
        };
        let magic = le16(0);
        if magic != MAGIC {
            return Err(WireError::BadMagic(magic));
        }
        if b[2] != VERSION {
            return Err(WireError::BadVersion(b[2]));
        }
        let op = Op::try_from(b[3])?;
        let flags = le16(4);
        let allowed = match op {
            Op::Send => flags::SOLICITED | flags::ACK | flags::INVALIDATE,
            Op::RdmaWrite => flags::SOLICITED | flags::IMMEDIATE,
            Op::ConnectRequest => flags::SOLICITED | flags::DATAGRAM | flags::DIRECT,
            Op::Accept | Op::Ready => flags::SOLICITED | flags::DIRECT,
            _ => flags::SOLICITED,
        };
        if flags & !allowed != 0 || le16(6) != 0 {
            return Err(WireError::BadFlags(flags));
        }
        let payload_len = le32(8);
        let max = match op {
            Op::ConnectRequest | Op::Accept | Op::Reject => limits.max_private_data,
            // A read request carries no payload: its payload_len is the length asked for.
            Op::Send | Op::RdmaWrite | Op::RdmaReadResponse | Op::RdmaReadRequest => {
                limits.max_message
            }
            Op::FetchAdd | Op::CompareSwap => ATOMIC_OPERANDS,
            Op::Ready => OFFER_COOKIE,
            Op::RemoteAccessError | Op::Disconnect | Op::Ack | Op::Immediate | Op::Doorbell => 0,
        };
        if payload_len > max {
            return Err(WireError::TooLong {
                op,
                len: payload_len,
            });
        }
        Ok(Header {
            op,
            flags,
            payload_len,
            rkey: le32(12),
            remote_addr: le64(16),
            id: le64(24),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        max_private_data: 56,
        max_message: 1 << 20,
    };

    #[test]
    fn every_field_round_trips() {
        let h = Header {
            op: Op::RdmaWrite,
            flags: flags::SOLICITED,
            payload_len: 4096,
            rkey: 0xdead_beef,
            remote_addr: 0x1122_3344_5566_7788,
            id: 42,
        };
        assert_eq!(Header::decode(&h.encode(), LIMITS), Ok(h));
    }

    #[test]
    fn malformed_headers_are_errors() {
        let good = Header::new(Op::Send).encode();
        let mut b = good;
        b[0] ^= 1;
        assert!(matches!(
            Header::decode(&b, LIMITS),
            Err(WireError::BadMagic(_))
        ));
        let mut b = good;
        b[2] = 1;
        assert_eq!(Header::decode(&b, LIMITS), Err(WireError::BadVersion(1)));
        let mut b = good;
        b[3] = 0;
        assert_eq!(Header::decode(&b, LIMITS), Err(WireError::UnknownOp(0)));
        b[3] = 200;
        assert_eq!(Header::decode(&b, LIMITS), Err(WireError::UnknownOp(200)));
        let mut b = good;
        b[4] = 0x80;
        assert!(matches!(
            Header::decode(&b, LIMITS),
            Err(WireError::BadFlags(_))
        ));
        let mut b = good;
        b[7] = 1;
        assert!(matches!(
            Header::decode(&b, LIMITS),
            Err(WireError::BadFlags(_))
        ));
    }

    #[test]
    fn only_a_send_carries_an_acknowledgement() {
        let mut h = Header::new(Op::Send);
        h.flags = flags::ACK | flags::SOLICITED;
        h.remote_addr = 7;
        assert_eq!(Header::decode(&h.encode(), LIMITS), Ok(h));
        for op in [
            Op::RdmaWrite,
            Op::RdmaReadRequest,
            Op::RdmaReadResponse,
            Op::Ack,
            Op::Disconnect,
            Op::FetchAdd,
        ] {
            let mut h = Header::new(op);
            h.flags = flags::ACK;
            assert_eq!(
                Header::decode(&h.encode(), LIMITS),
                Err(WireError::BadFlags(flags::ACK))
            );
        }
    }

    #[test]
    fn payloads_are_bounded_per_operation() {
        let mut h = Header::new(Op::ConnectRequest);
        h.payload_len = 57;
        assert!(matches!(
            Header::decode(&h.encode(), LIMITS),
            Err(WireError::TooLong { .. })
        ));
        h.payload_len = 56;
        assert!(Header::decode(&h.encode(), LIMITS).is_ok());
        let mut h = Header::new(Op::Send);
        h.payload_len = (1 << 20) + 1;
        assert!(matches!(
            Header::decode(&h.encode(), LIMITS),
            Err(WireError::TooLong { .. })
        ));
        let mut h = Header::new(Op::Ack);
        h.payload_len = 1;
        assert!(matches!(
            Header::decode(&h.encode(), LIMITS),
            Err(WireError::TooLong { .. })
        ));
        let mut h = Header::new(Op::CompareSwap);
        h.payload_len = ATOMIC_OPERANDS + 1;
        assert!(matches!(
            Header::decode(&h.encode(), LIMITS),
            Err(WireError::TooLong { .. })
        ));
        let mut h = Header::new(Op::Immediate);
        h.payload_len = 1;
        assert!(matches!(
            Header::decode(&h.encode(), LIMITS),
            Err(WireError::TooLong { .. })
        ));
    }

    #[test]
    fn only_a_write_announces_an_immediate() {
        let mut h = Header::new(Op::RdmaWrite);
        h.flags = flags::IMMEDIATE;
        assert_eq!(Header::decode(&h.encode(), LIMITS), Ok(h));
        let mut h = Header::new(Op::Send);
        h.flags = flags::IMMEDIATE;
        assert_eq!(
            Header::decode(&h.encode(), LIMITS),
            Err(WireError::BadFlags(flags::IMMEDIATE))
        );
    }

    #[test]
    fn only_handshake_frames_ask_for_or_make_a_direct_offer_and_an_offer_carries_its_cookie() {
        for op in [Op::ConnectRequest, Op::Accept, Op::Ready] {
            let mut h = Header::new(op);
            h.flags = flags::DIRECT;
            assert_eq!(Header::decode(&h.encode(), LIMITS), Ok(h));
        }
        for op in [Op::Reject, Op::Send, Op::RdmaWrite, Op::Ack] {
            let mut h = Header::new(op);
            h.flags = flags::DIRECT;
            assert_eq!(
                Header::decode(&h.encode(), LIMITS),
                Err(WireError::BadFlags(flags::DIRECT))
            );
        }
        let mut h = Header::new(Op::Ready);
        h.flags = flags::DIRECT;
        h.payload_len = OFFER_COOKIE;
        assert_eq!(Header::decode(&h.encode(), LIMITS), Ok(h));
        h.payload_len = OFFER_COOKIE + 1;
        assert!(matches!(
            Header::decode(&h.encode(), LIMITS),
            Err(WireError::TooLong { .. })
        ));
    }

    #[test]
    fn no_byte_pattern_panics_the_decoder() {
        // A cheap exhaustive-ish sweep: every value of every header byte, alone.
        let good = Header::new(Op::Send).encode();
        for i in 0..HEADER_LEN {
            for v in 0..=255u8 {
                let mut b = good;
                b[i] = v;
                let _ = Header::decode(&b, LIMITS);
            }
        }
    }
}
