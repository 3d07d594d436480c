//! The exported C API: one file per object family, every function one `entry!` body.

pub mod cm;
pub mod cno;
pub mod edge;
pub mod ep;
pub mod evd;
pub mod ext;
pub mod ia;
pub mod lmr;
pub mod misc;
pub mod pz;
pub mod registry;
pub mod rmr;
pub mod srq;
pub mod wait;
