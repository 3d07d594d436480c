//! `dat_extension_op`: the C shim (src/ext/shim.c) reads the variadic arguments and calls
//! [`libdat_extension_op`]. Our IAs report `DAT_EXTENSION_NONE`, so every known operation is
//! refused with `DAT_NOT_IMPLEMENTED` after its handle is checked.

use super::edge::entry;
use crate::abi::*;
use crate::error::{DatError, Sub};
use crate::handle;

/// The shim's argument array: each argument widened to 64 bits, in call order.
#[repr(C)]
pub struct ExtArgs {
    pub count: i32,
    pub v: [u64; 8],
}

/// Whether `op` is a DAT_IB_OP value.
fn known(op: i32) -> bool {
    u32::try_from(op).ok().and_then(|o| dat_ib_op::try_from(o).ok()).is_some()
}

/// Called by the shim only; not exported from the shared library.
#[no_mangle]
pub unsafe extern "C" fn libdat_extension_op(handle: DAT_HANDLE, op: i32, _args: *const ExtArgs) -> DAT_RETURN {
    entry! {
        if op != dat_ib_op::DAT_IB_OPEN_QUERY_OP as i32 && handle::kind_of(handle).is_none() {
            return Err(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE1));
        }
        if !known(op) {
            return Err(DatError::invalid_arg(2));
        }
        Err(DatError::not_implemented())
    }
}
