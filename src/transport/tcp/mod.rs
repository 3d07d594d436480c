//! The software transport over TCP: one TCP connection per connected EP.

pub mod cm;
pub mod conn;
pub mod doorbell;
pub mod link;
mod sys;
pub mod wire;
