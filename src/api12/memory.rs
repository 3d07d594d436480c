//! Memory regions for a 1.2 caller. 1.2 has no address types (its regions and windows are
//! addressed by virtual address, the core's `DAT_VA_TYPE_VA`); its `dat_rmr_bind` names no
//! LMR, so the region is the one of the RMR's IA that the triplet's `lmr_context` names; its
//! LMR and RMR params lack `va_type` (and the RMR's its scope), which moves the LMR mask's
//! later bits one place down.

use std::sync::Arc;

use super::query::query_into;
use super::returns::return12;
use super::triplets::{lmr12, lmr20};
use crate::abi as v2;
use crate::abi::{
    dat_va_type, DAT_COMPLETION_FLAGS, DAT_EP_HANDLE, DAT_IA_HANDLE, DAT_LMR_CONTEXT,
    DAT_LMR_HANDLE, DAT_MEM_PRIV_FLAGS, DAT_MEM_TYPE, DAT_PZ_HANDLE, DAT_REGION_DESCRIPTION,
    DAT_RMR_CONTEXT, DAT_RMR_COOKIE, DAT_RMR_HANDLE, DAT_VADDR, DAT_VLEN,
};
use crate::abi12 as v1;
use crate::api::edge::{self, entry};
use crate::api::{lmr as api_lmr, rmr as api_rmr};
use crate::error::{DatError, DatResult, Sub};
use crate::objects::ep::Ep;
use crate::objects::lmr::{self, Lmr};
use crate::objects::rmr::{BindRequest, Rmr, BIND_COMPLETION_FLAGS};

/// A bit neither API's LMR or RMR mask knows: what a bit unknown to 1.2 becomes, so that the
/// core refuses it where it refuses its own.
const UNKNOWN_TO_BOTH: u32 = 1 << 31;

/// 1.2 LMR mask bits that keep their place in 2.0: the IA handle up to the privileges.
const LMR_KEPT: u32 = 0x3f;
/// 1.2 LMR mask bits one place lower than 2.0's: the contexts and the registered size and
/// address (2.0 put `va_type` before them).
const LMR_SHIFTED: u32 = v1::dat_lmr_param_mask::DAT_LMR_FIELD_ALL as u32 & !LMR_KEPT;

/// A 1.2 LMR param mask as 2.0's.
pub fn lmr_mask20(m: v1::DAT_LMR_PARAM_MASK) -> v2::DAT_LMR_PARAM_MASK {
    let known = (m & LMR_KEPT) | ((m & LMR_SHIFTED) << 1);
    if m & !(v1::dat_lmr_param_mask::DAT_LMR_FIELD_ALL as u32) != 0 {
        known | UNKNOWN_TO_BOTH
    } else {
        known
    }
}

/// A 1.2 RMR param mask as 2.0's (whose extra bits, scope and address type, come after).
pub fn rmr_mask20(m: v1::DAT_RMR_PARAM_MASK) -> v2::DAT_RMR_PARAM_MASK {
    let all = v1::dat_rmr_param_mask::DAT_RMR_FIELD_ALL as u32;
    if m & !all != 0 {
        (m & all) | UNKNOWN_TO_BOTH
    } else {
        m
    }
}

/// A 2.0 LMR param as 1.2's (no `va_type`).
pub fn lmr_param12(p: &v2::DAT_LMR_PARAM) -> v1::DAT_LMR_PARAM {
    v1::DAT_LMR_PARAM {
        ia_handle: p.ia_handle,
        mem_type: p.mem_type,
        // SAFETY: the two unions are laid out alike (`same::tests::alike`), of plain pointers.
        region_desc: unsafe {
            std::mem::transmute::<v2::DAT_REGION_DESCRIPTION, v1::DAT_REGION_DESCRIPTION>(
                p.region_desc,
            )
        },
        length: p.length,
        pz_handle: p.pz_handle,
        mem_priv: p.mem_priv,
        lmr_context: p.lmr_context,
        rmr_context: p.rmr_context,
        registered_size: p.registered_size,
        registered_address: p.registered_address,
    }
}

/// A 2.0 RMR param as 1.2's (no scope, no `va_type`; a 24-byte triplet).
pub fn rmr_param12(p: &v2::DAT_RMR_PARAM) -> v1::DAT_RMR_PARAM {
    v1::DAT_RMR_PARAM {
        ia_handle: p.ia_handle,
        pz_handle: p.pz_handle,
        lmr_triplet: lmr12(&p.lmr_triplet),
        mem_priv: p.mem_priv,
        rmr_context: p.rmr_context,
    }
}

#[allow(clippy::too_many_arguments)]
#[export_name = "dat_lmr_create@DAT_1.2"]
pub unsafe extern "C" fn dat_lmr_create(
    ia_handle: DAT_IA_HANDLE,
    mem_type: DAT_MEM_TYPE,
    region_description: DAT_REGION_DESCRIPTION,
    length: DAT_VLEN,
    pz_handle: DAT_PZ_HANDLE,
    privileges: DAT_MEM_PRIV_FLAGS,
    lmr_handle: *mut DAT_LMR_HANDLE,
    lmr_context: *mut DAT_LMR_CONTEXT,
    rmr_context: *mut DAT_RMR_CONTEXT,
    registered_length: *mut DAT_VLEN,
    registered_address: *mut DAT_VADDR,
) -> v1::DAT_RETURN {
    return12(entry! {
        let region = api_lmr::Region { ia_handle, mem_type, region_description, length, pz_handle, privileges };
        let outs = api_lmr::Outs { lmr_handle, handle_position: 7, lmr_context, rmr_context, registered_length, registered_address };
        api_lmr::create(region, || Ok(dat_va_type::DAT_VA_TYPE_VA), outs)
    })
}

#[export_name = "dat_lmr_query@DAT_1.2"]
pub unsafe extern "C" fn dat_lmr_query(
    lmr_handle: DAT_LMR_HANDLE,
    lmr_param_mask: v1::DAT_LMR_PARAM_MASK,
    lmr_param: *mut v1::DAT_LMR_PARAM,
) -> v1::DAT_RETURN {
    query_into(
        lmr_param,
        // SAFETY: the param is NULL or ours.
        |ours| unsafe { api_lmr::dat_lmr_query(lmr_handle, lmr_mask20(lmr_param_mask), ours) },
        lmr_param12,
    )
}

#[export_name = "dat_rmr_query@DAT_1.2"]
pub unsafe extern "C" fn dat_rmr_query(
    rmr_handle: DAT_RMR_HANDLE,
    rmr_param_mask: v1::DAT_RMR_PARAM_MASK,
    rmr_param: *mut v1::DAT_RMR_PARAM,
) -> v1::DAT_RETURN {
    query_into(
        rmr_param,
        // SAFETY: the param is NULL or ours.
        |ours| unsafe { api_rmr::dat_rmr_query(rmr_handle, rmr_mask20(rmr_param_mask), ours) },
        rmr_param12,
    )
}

/// The region a 1.2 bind's triplet names: the live LMR of the RMR's IA with its
/// `lmr_context`; none is `DAT_INVALID_PARAMETER` naming the triplet (argument 2), except for
/// an unbind (a zero length), which needs no region.
fn region_of(rmr: &Rmr, triplet: &v2::DAT_LMR_TRIPLET) -> DatResult<Option<Arc<Lmr>>> {
    let found = Lmr::by_context(triplet.lmr_context).filter(|l| Arc::ptr_eq(&l.ia, &rmr.ia));
    match found {
        None if triplet.segment_length != 0 => Err(DatError::invalid_arg(2)),
        found => Ok(found),
    }
}

/// Binds (or, with a zero-length triplet, unbinds) an RMR through an EP: the 2.0 rules
/// (`Rmr::bind_through`), the arguments in 1.2's places.
#[export_name = "dat_rmr_bind@DAT_1.2"]
pub unsafe extern "C" fn dat_rmr_bind(
    rmr_handle: DAT_RMR_HANDLE,
    lmr_triplet: *const v1::DAT_LMR_TRIPLET,
    mem_priv: DAT_MEM_PRIV_FLAGS,
    ep_handle: DAT_EP_HANDLE,
    user_cookie: DAT_RMR_COOKIE,
    completion_flags: DAT_COMPLETION_FLAGS,
    context: *mut DAT_RMR_CONTEXT,
) -> v1::DAT_RETURN {
    return12(entry! {
        let rmr = edge::object::<Rmr>(rmr_handle, Sub::DAT_INVALID_HANDLE_RMR)?;
        // SAFETY: a non-NULL triplet pointer points to a triplet (API contract).
        let given = unsafe { edge::required_in(lmr_triplet, 2)? };
        // No region of ours is longer than 32 bits can say.
        let triplet = lmr20(&given).ok_or(DatError::invalid_arg(2))?;
        let mem_priv = edge::flags_in(mem_priv, lmr::PRIV_KNOWN, 3)?;
        let ep = edge::object::<Ep>(ep_handle, Sub::DAT_INVALID_HANDLE_EP)?;
        edge::flags_in(completion_flags, BIND_COMPLETION_FLAGS, 6)?;
        edge::out(context, 7)?;
        let lmr = region_of(&rmr, &triplet)?;
        let bind = BindRequest {
            handle: rmr_handle,
            triplet,
            privileges: mem_priv,
            va_type: dat_va_type::DAT_VA_TYPE_VA,
            cookie: user_cookie,
            completion_flags,
            triplet_position: 2,
            flags_position: 6,
        };
        let bound = rmr.bind_through(&ep, lmr, bind)?;
        edge::out(context, 7)?.set(bound);
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::Zeroable;

    macro_rules! same_lmr_field {
        ($($f:ident),+ $(,)?) => {$(
            assert_eq!(
                lmr_mask20(v1::dat_lmr_param_mask::$f as u32),
                v2::dat_lmr_param_mask::$f as u32,
                stringify!($f)
            );
        )+};
    }

    macro_rules! same_rmr_field {
        ($($f:ident),+ $(,)?) => {$(
            assert_eq!(
                rmr_mask20(v1::dat_rmr_param_mask::$f as u32),
                v2::dat_rmr_param_mask::$f as u32,
                stringify!($f)
            );
        )+};
    }

    #[test]
    fn lmr_mask_bits_by_name() {
        same_lmr_field!(
            DAT_LMR_FIELD_IA_HANDLE,
            DAT_LMR_FIELD_MEM_TYPE,
            DAT_LMR_FIELD_REGION_DESC,
            DAT_LMR_FIELD_LENGTH,
            DAT_LMR_FIELD_PZ_HANDLE,
            DAT_LMR_FIELD_MEM_PRIV,
            DAT_LMR_FIELD_LMR_CONTEXT,
            DAT_LMR_FIELD_RMR_CONTEXT,
            DAT_LMR_FIELD_REGISTERED_SIZE,
            DAT_LMR_FIELD_REGISTERED_ADDRESS,
        );
        let all20 = v2::dat_lmr_param_mask::DAT_LMR_FIELD_ALL as u32;
        let va = v2::dat_lmr_param_mask::DAT_LMR_FIELD_VA_TYPE as u32;
        assert_eq!(
            lmr_mask20(v1::dat_lmr_param_mask::DAT_LMR_FIELD_ALL as u32),
            all20 & !va
        );
        assert_ne!(lmr_mask20(0x400) & !all20, 0);
    }

    #[test]
    fn rmr_mask_bits_by_name() {
        same_rmr_field!(
            DAT_RMR_FIELD_IA_HANDLE,
            DAT_RMR_FIELD_PZ_HANDLE,
            DAT_RMR_FIELD_LMR_TRIPLET,
            DAT_RMR_FIELD_MEM_PRIV,
            DAT_RMR_FIELD_RMR_CONTEXT,
        );
        // All 1.2 names: 2.0's but the scope and the address type.
        let extra = v2::dat_rmr_param_mask::DAT_RMR_FIELD_RMR_SCOPE as u32
            | v2::dat_rmr_param_mask::DAT_RMR_FIELD_VA_TYPE as u32;
        assert_eq!(
            rmr_mask20(v1::dat_rmr_param_mask::DAT_RMR_FIELD_ALL as u32),
            v2::dat_rmr_param_mask::DAT_RMR_FIELD_ALL as u32 & !extra
        );
        // 2.0's scope and address type are unknown to 1.2: refused, as 1.2 would.
        let all20 = v2::dat_rmr_param_mask::DAT_RMR_FIELD_ALL as u32;
        for bit in [32, 64] {
            assert_ne!(rmr_mask20(bit) & !all20, 0);
        }
    }

    #[test]
    fn lmr_param_drops_the_address_type() {
        let mut p = v2::DAT_LMR_PARAM::zeroed();
        p.ia_handle = 1 as v2::DAT_HANDLE;
        p.mem_type = v2::dat_mem_type::DAT_MEM_TYPE_VIRTUAL as u32;
        p.region_desc.for_va = 0x5000 as v2::DAT_PVOID;
        p.length = 1 << 33;
        p.pz_handle = 2 as v2::DAT_HANDLE;
        p.mem_priv = 0x33;
        p.va_type = 1;
        p.lmr_context = 17;
        p.rmr_context = 18;
        p.registered_size = 1 << 33;
        p.registered_address = 0x5000;
        let q = lmr_param12(&p);
        // SAFETY: for_va was written above.
        assert_eq!(unsafe { q.region_desc.for_va } as usize, 0x5000);
        assert_eq!(
            (
                q.ia_handle as usize,
                q.pz_handle as usize,
                q.mem_type,
                q.length
            ),
            (1, 2, 0, 1 << 33)
        );
        assert_eq!((q.mem_priv, q.lmr_context, q.rmr_context), (0x33, 17, 18));
        assert_eq!((q.registered_size, q.registered_address), (1 << 33, 0x5000));
    }

    #[test]
    fn rmr_param_with_a_long_triplet() {
        let mut p = v2::DAT_RMR_PARAM::zeroed();
        p.ia_handle = 1 as v2::DAT_HANDLE;
        p.pz_handle = 2 as v2::DAT_HANDLE;
        p.lmr_triplet = v2::DAT_LMR_TRIPLET {
            virtual_address: 0x7000,
            segment_length: 300,
            lmr_context: 5,
        };
        p.mem_priv = 0x22;
        p.rmr_context = 9;
        p.rmr_scope = 1;
        let q = rmr_param12(&p);
        assert_eq!(
            (
                q.ia_handle as usize,
                q.pz_handle as usize,
                q.mem_priv,
                q.rmr_context
            ),
            (1, 2, 0x22, 9)
        );
        let t = q.lmr_triplet;
        assert_eq!(
            (t.lmr_context, t.pad, t.virtual_address, t.segment_length),
            (5, 0, 0x7000, 300)
        );
    }
}
