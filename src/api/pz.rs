//! PZ functions.

use std::sync::Arc;

use super::edge::{self, entry};
use crate::abi::*;
use crate::error::{DatError, Sub};
use crate::objects::ia::Ia;
use crate::objects::pz::Pz;
use crate::objects::Counted;

#[no_mangle]
pub unsafe extern "C" fn dat_pz_create(
    ia_handle: DAT_IA_HANDLE,
    pz_handle: *mut DAT_PZ_HANDLE,
) -> DAT_RETURN {
    entry! {
        let ia = edge::object::<Ia>(ia_handle, Sub::DAT_INVALID_HANDLE_IA)?;
        let out = edge::out(pz_handle, 2)?;
        let domain = ia.transport.protection_domain()?;
        out.set(ia.adopt(Arc::new(Pz::new(ia.clone(), domain)))?);
        Ok(())
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_pz_query(
    pz_handle: DAT_PZ_HANDLE,
    pz_param_mask: DAT_PZ_PARAM_MASK,
    pz_param: *mut DAT_PZ_PARAM,
) -> DAT_RETURN {
    entry! {
        let pz = edge::object::<Pz>(pz_handle, Sub::DAT_INVALID_HANDLE_PZ)?;
        edge::flags_in(pz_param_mask, DAT_PZ_FIELD_ALL, 2)?;
        let out = edge::out(pz_param, 3)?;
        out.set(DAT_PZ_PARAM { ia_handle: pz.ia.handle() });
        Ok(())
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_pz_free(pz_handle: DAT_PZ_HANDLE) -> DAT_RETURN {
    entry! {
        let pz = edge::object::<Pz>(pz_handle, Sub::DAT_INVALID_HANDLE_PZ)?;
        if pz.users().in_use() {
            return Err(DatError::invalid_state(Sub::DAT_INVALID_STATE_PZ_IN_USE));
        }
        pz.ia.release::<Pz>(pz_handle).ok_or(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_PZ))?;
        Ok(())
    }
}
