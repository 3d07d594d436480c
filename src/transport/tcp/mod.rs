//! The software transport over TCP: one TCP connection per connected EP, moved by the
//! consumer's polling threads and the progress engine (`transport::engine`).
//!
//! - `wire`: the frames; `conn`: the socket's two halves;
//! - `cm`: listening and the connection handshake;
//! - `link`: a connected EP; `inbound`: the peer's frames; `answers`: what we owe the peer.

mod answers;
pub mod cm;
pub mod conn;
mod inbound;
pub mod link;
pub mod wire;
