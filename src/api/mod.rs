//! The exported C API: one file per object family, every function one `entry!` body.

pub mod cno;
pub mod edge;
pub mod evd;
pub mod ext;
pub mod ia;
pub mod misc;
pub mod registry;
