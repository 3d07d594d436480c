//! `wire::Header::decode` on any 32 bytes and any limits: it never panics, and whatever it
//! accepts keeps the protocol's rules (magic, version, a known operation, only the flags that
//! operation may carry, reserved bytes zero, a payload within the operation's limit) and
//! encodes back to exactly the bytes it came from.
#![no_main]

use dat::transport::tcp::wire::{
    flags, Header, Limits, Op, ATOMIC_OPERANDS, HEADER_LEN, MAGIC, OFFER_COOKIE, VERSION,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < HEADER_LEN + 8 {
        return;
    }
    let b: [u8; HEADER_LEN] = data[..HEADER_LEN].try_into().unwrap();
    let word = |i: usize| u32::from_le_bytes(data[i..i + 4].try_into().unwrap());
    let limits = Limits { max_private_data: word(HEADER_LEN) % 1024, max_message: word(HEADER_LEN + 4) };
    let Ok(h) = Header::decode(&b, limits) else { return };
    assert_eq!(u16::from_le_bytes([b[0], b[1]]), MAGIC);
    assert_eq!(b[2], VERSION);
    assert_eq!(b[3], h.op as u8);
    assert_eq!(&b[6..8], &[0, 0]);
    let allowed = match h.op {
        Op::Send => flags::SOLICITED | flags::ACK | flags::INVALIDATE,
        Op::RdmaWrite => flags::SOLICITED | flags::IMMEDIATE,
        Op::ConnectRequest => flags::SOLICITED | flags::DATAGRAM | flags::DIRECT,
        Op::Accept | Op::Ready => flags::SOLICITED | flags::DIRECT,
        _ => flags::SOLICITED,
    };
    assert_eq!(h.flags & !allowed, 0);
    let max = match h.op {
        Op::ConnectRequest | Op::Accept | Op::Reject => limits.max_private_data,
        Op::Send | Op::RdmaWrite | Op::RdmaReadRequest | Op::RdmaReadResponse => limits.max_message,
        Op::FetchAdd | Op::CompareSwap => ATOMIC_OPERANDS,
        Op::Ready => OFFER_COOKIE,
        Op::RemoteAccessError | Op::Disconnect | Op::Ack | Op::Immediate | Op::Doorbell => 0,
    };
    assert!(h.payload_len <= max);
    assert_eq!(h.encode(), b);
});
