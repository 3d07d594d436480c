//! The DAT 1.2 entry points: the functions of the 1.2 headers (`include/dat`), exported in
//! version node `DAT_1.2` beside the 2.0 ones of the same names. Each converts its arguments
//! to the 2.0 core (`api`), and the results back: one handle table and one core serve both
//! APIs. Every function here is `#[export_name = "dat_x@DAT_1.2"]`: the linker makes that a
//! definition of `dat_x` in version `DAT_1.2`, which a 1.2 binary imports, while a 2.0 one
//! binds to `dat_x@@DAT_2.0`.

// Events, CNOs, the IA's attributes and dat_strerror.
mod cno;
mod evd;
mod events;
mod ia;
mod strerror;
// What every family shares: return codes, and the functions laid out alike.
pub mod returns;
mod same;
// Endpoints, data transfers, memory (and what they share: triplets, queries).
pub mod dto;
pub mod ep;
pub mod memory;
mod query;
pub mod srq;
pub mod triplets;
