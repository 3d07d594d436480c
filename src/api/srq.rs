//! SRQ functions: the queue of shared receive buffers. Posted buffers wait in the SRQ for the
//! EPs that draw from it.

use std::sync::Arc;

use super::edge::{self, data_path_entry, entry};
use crate::abi::*;
use crate::error::{DatError, DatResult, Sub};
use crate::objects::ia::Ia;
use crate::objects::limits;
use crate::objects::lmr;
use crate::objects::pz::Pz;
use crate::objects::srq::{PostedRecv, Segments, Srq};
use crate::objects::Counted;

fn check_attr(attr: &DAT_SRQ_ATTR, position: u8, max_iov: i32) -> DatResult {
    let ok = (1..=limits::MAX_RECV_PER_SRQ).contains(&attr.max_recv_dtos)
        && (1..=max_iov).contains(&attr.max_recv_iov)
        && (0..=attr.max_recv_dtos).contains(&attr.low_watermark);
    if ok {
        Ok(())
    } else {
        Err(DatError::invalid_arg(position))
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_srq_create(
    ia_handle: DAT_IA_HANDLE,
    pz_handle: DAT_PZ_HANDLE,
    srq_attr: *mut DAT_SRQ_ATTR,
    srq_handle: *mut DAT_SRQ_HANDLE,
) -> DAT_RETURN {
    entry! {
        let ia = edge::object::<Ia>(ia_handle, Sub::DAT_INVALID_HANDLE_IA)?;
        let pz = edge::object::<Pz>(pz_handle, Sub::DAT_INVALID_HANDLE_PZ)?;
        // SAFETY: a non-NULL attribute pointer points to a DAT_SRQ_ATTR (API contract).
        let attr = unsafe { edge::required_in(srq_attr as *const DAT_SRQ_ATTR, 3)? };
        check_attr(&attr, 3, ia.transport.limits().max_iov)?;
        let out = edge::out(srq_handle, 4)?;
        if !Arc::ptr_eq(&pz.ia, &ia) {
            return Err(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_PZ));
        }
        let Some((_, max_recv)) = ia.transport.srq_limits() else {
            return Err(DatError::not_implemented());
        };
        if attr.max_recv_dtos > max_recv {
            return Err(DatError::invalid_arg(3));
        }
        let queue = ia.transport.shared_receive_queue(pz.domain.as_ref(), attr.max_recv_dtos as u32, attr.max_recv_iov as u32)?;
        let srq = Arc::new(Srq::new(ia.clone(), pz, &attr, queue));
        out.set(ia.adopt(srq.clone())?);
        // "The Consumer must set low_watermark to DAT_SRQ_LW_DEFAULT to ensure that an
        // asynchronous event will not be generated immediately": another comes at once.
        srq.check_low_watermark();
        Ok(())
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_srq_free(srq_handle: DAT_SRQ_HANDLE) -> DAT_RETURN {
    entry! {
        let srq = edge::object::<Srq>(srq_handle, Sub::DAT_INVALID_HANDLE_SRQ)?;
        if srq.users().in_use() {
            return Err(DatError::invalid_state(Sub::DAT_INVALID_STATE_SRQ_IN_USE));
        }
        srq.ia.release::<Srq>(srq_handle).ok_or(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_SRQ))?;
        Ok(())
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_srq_post_recv(
    srq_handle: DAT_SRQ_HANDLE,
    num_segments: DAT_COUNT,
    local_iov: *mut DAT_LMR_TRIPLET,
    user_cookie: DAT_DTO_COOKIE,
) -> DAT_RETURN {
    data_path_entry! {
        // SAFETY: the caller passes `num_segments` triplets at `local_iov` (API contract).
        let local = |n| unsafe { edge::slice_in(local_iov as *const DAT_LMR_TRIPLET, n, 3) };
        post_recv(srq_handle, num_segments, local, user_cookie.as_u64())
    }
}

/// The body of `dat_srq_post_recv` of both APIs: `local` gives the `num_segments` segments
/// (argument 3) once the count is known not to be negative.
pub(crate) fn post_recv<'a>(
    srq_handle: DAT_SRQ_HANDLE,
    num_segments: DAT_COUNT,
    local: impl FnOnce(DAT_COUNT) -> DatResult<&'a [DAT_LMR_TRIPLET]>,
    cookie: u64,
) -> DatResult {
    let srq = edge::object::<Srq>(srq_handle, Sub::DAT_INVALID_HANDLE_SRQ)?;
    if num_segments < 0 {
        return Err(DatError::invalid_arg(2));
    }
    let segments = local(num_segments)?;
    let state = srq.state.lock();
    if num_segments > state.max_recv_iov {
        return Err(DatError::invalid_arg(2));
    }
    crate::objects::posting::check_local_segments(
        segments,
        Some(srq.pz.arc()),
        lmr::PRIV_LOCAL_WRITE,
        3,
        crate::objects::posting::Empty::Check,
    )?;
    srq.post(
        state,
        PostedRecv {
            cookie,
            segments: Segments::from_slice(segments),
            wakes: Default::default(),
        },
    )
}

#[no_mangle]
pub unsafe extern "C" fn dat_srq_query(
    srq_handle: DAT_SRQ_HANDLE,
    srq_param_mask: DAT_SRQ_PARAM_MASK,
    srq_param: *mut DAT_SRQ_PARAM,
) -> DAT_RETURN {
    entry! {
        let srq = edge::object::<Srq>(srq_handle, Sub::DAT_INVALID_HANDLE_SRQ)?;
        edge::flags_in(srq_param_mask, dat_srq_param_mask::DAT_SRQ_FIELD_ALL as u32, 2)?;
        let out = edge::out(srq_param, 3)?;
        let s = srq.state.lock();
        out.set(DAT_SRQ_PARAM {
            ia_handle: srq.ia.handle(),
            srq_state: dat_srq_state::DAT_SRQ_STATE_OPERATIONAL as DAT_SRQ_STATE,
            pz_handle: srq.pz.handle(),
            max_recv_dtos: s.max_recv_dtos,
            max_recv_iov: s.max_recv_iov,
            low_watermark: s.low_watermark,
            available_dto_count: srq.available(&s) as DAT_COUNT,
            outstanding_dto_count: srq.available(&s) as DAT_COUNT,
        });
        Ok(())
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_srq_resize(
    srq_handle: DAT_SRQ_HANDLE,
    srq_max_recv_dto: DAT_COUNT,
) -> DAT_RETURN {
    entry! {
        let srq = edge::object::<Srq>(srq_handle, Sub::DAT_INVALID_HANDLE_SRQ)?;
        if !(1..=limits::MAX_RECV_PER_SRQ).contains(&srq_max_recv_dto) {
            return Err(DatError::invalid_arg(2));
        }
        let mut s = srq.state.lock();
        // Never below what is outstanding, nor below the low watermark.
        if (srq_max_recv_dto as usize) < srq.available(&s) || srq_max_recv_dto < s.low_watermark {
            return Err(DatError::invalid_state(Sub::DAT_NO_SUBTYPE));
        }
        if let Some(queue) = &srq.queue {
            queue.resize(srq_max_recv_dto as u32)?;
        }
        s.max_recv_dtos = srq_max_recv_dto;
        crate::objects::make_room(&mut s.posted, srq_max_recv_dto as usize);
        Ok(())
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_srq_set_lw(
    srq_handle: DAT_SRQ_HANDLE,
    low_watermark: DAT_COUNT,
) -> DAT_RETURN {
    entry! {
        let srq = edge::object::<Srq>(srq_handle, Sub::DAT_INVALID_HANDLE_SRQ)?;
        let mut s = srq.state.lock();
        if low_watermark < 0 || low_watermark > s.max_recv_dtos {
            return Err(DatError::invalid_arg(2));
        }
        // Armed again, "regardless of whether an asynchronous event for the low watermark
        // has been generated" (0, DAT_SRQ_LW_DEFAULT: no event); below it already, the event
        // comes now.
        s.low_watermark = low_watermark;
        s.low_watermark_armed = low_watermark > 0;
        drop(s);
        srq.check_low_watermark();
        Ok(())
    }
}
