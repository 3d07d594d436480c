//! Functions on any handle: dat_set_consumer_context, dat_get_consumer_context,
//! dat_get_handle_type.

use super::edge::{self, entry};
use crate::abi::*;
use crate::error::{DatError, Sub};
use crate::handle;

#[no_mangle]
pub unsafe extern "C" fn dat_set_consumer_context(
    dat_handle: DAT_HANDLE,
    context: DAT_CONTEXT,
) -> DAT_RETURN {
    entry! {
        let raw = context.as_u64();
        if handle::set_context(dat_handle, raw) {
            Ok(())
        } else {
            Err(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE1))
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_get_consumer_context(
    dat_handle: DAT_HANDLE,
    context: *mut DAT_CONTEXT,
) -> DAT_RETURN {
    entry! {
        let raw = handle::context(dat_handle).ok_or(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE1))?;
        let out = edge::out(context, 2)?;
        out.set(DAT_CONTEXT::from_u64(raw));
        Ok(())
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_get_handle_type(
    dat_handle: DAT_HANDLE,
    handle_type: *mut DAT_HANDLE_TYPE,
) -> DAT_RETURN {
    entry! {
        let kind = handle::kind_of(dat_handle).ok_or(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE1))?;
        let out = edge::out(handle_type, 2)?;
        out.set(kind.handle_type());
        Ok(())
    }
}
