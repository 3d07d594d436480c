//! `dat_extension_op`: the C shim (src/ext/shim.c) reads the variadic arguments and calls
//! [`libdat_extension_op`]. Our IAs report `DAT_EXTENSION_NONE`, so every known operation is
//! refused with `DAT_NOT_IMPLEMENTED` after its handle is checked.
//!
//! `dat_strerror_extension` and `dat_strerror_ext_status` name an extension's return codes and
//! completion statuses, with OpenFabrics' strings (its header defines them inline).

use std::ffi::{c_char, CStr};

use super::edge::{self, entry};
use super::registry::error_names;
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

#[no_mangle]
pub unsafe extern "C" fn dat_strerror_extension(value: DAT_IB_RETURN, message: *mut *const c_char) -> DAT_RETURN {
    entry! {
        let out = edge::out(message, 2)?;
        // Every code of the IB extension's type (DAT_IB_ERR, DAT_IB_COLLECTIVE_ERR) has its name;
        // any other is a standard DAT code.
        let text = if value & DAT_TYPE_MASK as u32 == dat_ib_return::DAT_IB_ERR as u32 {
            c"DAT_IB_ERR"
        } else {
            error_names(value).ok_or(DatError::invalid_arg(1))?.0
        };
        out.set(text.as_ptr());
        Ok(())
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_strerror_ext_status(value: DAT_IB_STATUS, message: *mut *const c_char) -> DAT_RETURN {
    entry! {
        let out = edge::out(message, 2)?;
        let text: &CStr = match dat_ib_status::try_from(value) {
            // OpenFabrics renders success as a blank.
            Ok(dat_ib_status::DAT_OP_SUCCESS) => c" ",
            Ok(dat_ib_status::DAT_IB_OP_ERR) => c"DAT_IB_OP_ERR",
            Ok(dat_ib_status::DAT_IB_COLL_COMP_ERR) => c"DAT_IB_COLL_COMP_ERR",
            Err(_) => {
                out.set(c"unknown extension status".as_ptr());
                return Err(DatError::invalid_arg(1));
            }
        };
        out.set(text.as_ptr());
        Ok(())
    }
}
