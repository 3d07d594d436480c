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

use crate::abi::dat_completion_flags;

/// Every bit of `DAT_COMPLETION_FLAGS`.
pub(crate) const COMPLETION_FLAGS: u32 = dat_completion_flags::DAT_COMPLETION_SUPPRESS_FLAG as u32
    | dat_completion_flags::DAT_COMPLETION_SOLICITED_WAIT_FLAG as u32
    | dat_completion_flags::DAT_COMPLETION_UNSIGNALLED_FLAG as u32
    | dat_completion_flags::DAT_COMPLETION_BARRIER_FENCE_FLAG as u32
    | dat_completion_flags::DAT_COMPLETION_EVD_THRESHOLD_FLAG as u32
    | dat_completion_flags::DAT_COMPLETION_LMR_INVALIDATE_FENCE_FLAG as u32;
