//! Data transfers and memory syncs for a 1.2 caller: the 2.0 rules, with the caller's 24-byte
//! triplets converted where the core reads them (so the checks and their codes come in the
//! same order), on the stack.
//!
//! A length beyond the core's 32 bits: a local segment's is `DAT_INVALID_PARAMETER` naming
//! the local IOV (no region of ours is that long); an RDMA read's remote one is
//! `DAT_LENGTH_ERROR` ("the local buffer is too small for the data of the remote buffer": no
//! DTO of ours moves that much); an RDMA write's remote one `DAT_INVALID_PARAMETER` naming the
//! remote IOV.

use super::returns::return12;
use super::triplets::{rmr20, Segments20};
use crate::abi::{
    dat_dtos, DAT_COMPLETION_FLAGS, DAT_COUNT, DAT_DTO_COOKIE, DAT_EP_HANDLE, DAT_IA_HANDLE,
    DAT_SRQ_HANDLE, DAT_VLEN,
};
use crate::abi12 as v1;
use crate::api::edge::{self, data_path_entry, entry};
use crate::api::{ep as api_ep, lmr as api_lmr, srq as api_srq};
use crate::error::{DatError, DatResult, Type};
use crate::objects::posting::RequestPost;

/// Segments read, and converted into `room`, by the core when it asks for `count` of them.
///
/// # Safety
/// A non-NULL `p` points to as many triplets as the count the core passes (the caller's
/// promise, as `num_segments` says).
#[inline(always)]
unsafe fn local<'a>(
    room: &'a mut Segments20,
    p: *const v1::DAT_LMR_TRIPLET,
    position: u8,
) -> impl FnOnce(DAT_COUNT) -> DatResult<&'a [crate::abi::DAT_LMR_TRIPLET]> {
    move |count| {
        // Moved, not reborrowed: the slice lives as long as the room.
        let room = room;
        // SAFETY: forwarded from our caller.
        unsafe { room.read(p, count, position) }
    }
}

/// The error of a remote triplet whose length needs more than 32 bits.
fn remote_too_long(operation: dat_dtos) -> DatError {
    match operation {
        dat_dtos::DAT_DTO_RDMA_READ => DatError::bare(Type::DAT_LENGTH_ERROR),
        _ => DatError::invalid_arg(5),
    }
}

/// A request DTO of 1.2, through the core's one post path.
///
/// # Safety
/// `local_iov` points to `num_segments` triplets, a non-NULL `remote_iov` to a triplet.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn post_request(
    ep_handle: DAT_EP_HANDLE,
    num_segments: DAT_COUNT,
    local_iov: *const v1::DAT_LMR_TRIPLET,
    user_cookie: DAT_DTO_COOKIE,
    remote_iov: Option<*const v1::DAT_RMR_TRIPLET>,
    completion_flags: DAT_COMPLETION_FLAGS,
    flags_position: u8,
    operation: dat_dtos,
) -> DatResult {
    let post = RequestPost {
        num_segments,
        cookie: user_cookie.as_u64(),
        completion_flags,
        flags_position,
        operation,
        extended: None,
        invalidate: None,
    };
    let mut room = Segments20::new();
    // SAFETY: the caller passes `num_segments` triplets at `local_iov` (API contract).
    let local = unsafe { local(&mut room, local_iov, 3) };
    let remote = || match remote_iov {
        None => Ok(None),
        Some(r) => {
            // SAFETY: a non-NULL remote IOV points to a triplet (API contract).
            let r = unsafe { edge::required_in(r, 5)? };
            rmr20(&r).map(Some).ok_or(remote_too_long(operation))
        }
    };
    api_ep::post_request_with(ep_handle, post, local, remote)
}

#[export_name = "dat_ep_post_send@DAT_1.2"]
pub unsafe extern "C" fn dat_ep_post_send(
    ep_handle: DAT_EP_HANDLE,
    num_segments: DAT_COUNT,
    local_iov: *mut v1::DAT_LMR_TRIPLET,
    user_cookie: DAT_DTO_COOKIE,
    completion_flags: DAT_COMPLETION_FLAGS,
) -> v1::DAT_RETURN {
    return12(data_path_entry! {
        // SAFETY: `local_iov` holds `num_segments` triplets (API contract).
        unsafe { post_request(ep_handle, num_segments, local_iov, user_cookie, None, completion_flags, 5, dat_dtos::DAT_DTO_SEND) }
    })
}

#[export_name = "dat_ep_post_rdma_write@DAT_1.2"]
pub unsafe extern "C" fn dat_ep_post_rdma_write(
    ep_handle: DAT_EP_HANDLE,
    num_segments: DAT_COUNT,
    local_iov: *mut v1::DAT_LMR_TRIPLET,
    user_cookie: DAT_DTO_COOKIE,
    remote_iov: *const v1::DAT_RMR_TRIPLET,
    completion_flags: DAT_COMPLETION_FLAGS,
) -> v1::DAT_RETURN {
    return12(data_path_entry! {
        // SAFETY: `local_iov` holds `num_segments` triplets, a non-NULL `remote_iov` points to a
        // triplet (API contract).
        unsafe { post_request(ep_handle, num_segments, local_iov, user_cookie, Some(remote_iov), completion_flags, 6, dat_dtos::DAT_DTO_RDMA_WRITE) }
    })
}

#[export_name = "dat_ep_post_rdma_read@DAT_1.2"]
pub unsafe extern "C" fn dat_ep_post_rdma_read(
    ep_handle: DAT_EP_HANDLE,
    num_segments: DAT_COUNT,
    local_iov: *mut v1::DAT_LMR_TRIPLET,
    user_cookie: DAT_DTO_COOKIE,
    remote_iov: *const v1::DAT_RMR_TRIPLET,
    completion_flags: DAT_COMPLETION_FLAGS,
) -> v1::DAT_RETURN {
    return12(data_path_entry! {
        // SAFETY: `local_iov` holds `num_segments` triplets, a non-NULL `remote_iov` points to a
        // triplet (API contract).
        unsafe { post_request(ep_handle, num_segments, local_iov, user_cookie, Some(remote_iov), completion_flags, 6, dat_dtos::DAT_DTO_RDMA_READ) }
    })
}

#[export_name = "dat_ep_post_recv@DAT_1.2"]
pub unsafe extern "C" fn dat_ep_post_recv(
    ep_handle: DAT_EP_HANDLE,
    num_segments: DAT_COUNT,
    local_iov: *mut v1::DAT_LMR_TRIPLET,
    user_cookie: DAT_DTO_COOKIE,
    completion_flags: DAT_COMPLETION_FLAGS,
) -> v1::DAT_RETURN {
    return12(data_path_entry! {
        let mut room = Segments20::new();
        // SAFETY: `local_iov` holds `num_segments` triplets (API contract).
        let local = unsafe { local(&mut room, local_iov, 3) };
        api_ep::post_recv_with(ep_handle, num_segments, local, user_cookie.as_u64(), completion_flags)
    })
}

#[export_name = "dat_srq_post_recv@DAT_1.2"]
pub unsafe extern "C" fn dat_srq_post_recv(
    srq_handle: DAT_SRQ_HANDLE,
    num_segments: DAT_COUNT,
    local_iov: *mut v1::DAT_LMR_TRIPLET,
    user_cookie: DAT_DTO_COOKIE,
) -> v1::DAT_RETURN {
    return12(data_path_entry! {
        let mut room = Segments20::new();
        // SAFETY: `local_iov` holds `num_segments` triplets (API contract).
        let local = unsafe { local(&mut room, local_iov, 3) };
        api_srq::post_recv(srq_handle, num_segments, local, user_cookie.as_u64())
    })
}

#[export_name = "dat_lmr_sync_rdma_read@DAT_1.2"]
pub unsafe extern "C" fn dat_lmr_sync_rdma_read(
    ia_handle: DAT_IA_HANDLE,
    local_segments: *const v1::DAT_LMR_TRIPLET,
    num_segments: DAT_VLEN,
) -> v1::DAT_RETURN {
    return12(entry! {
        let mut room = Segments20::new();
        // SAFETY: `local_segments` holds `num_segments` triplets (API contract).
        let local = unsafe { local(&mut room, local_segments, 2) };
        api_lmr::sync(ia_handle, num_segments, local)
    })
}

#[export_name = "dat_lmr_sync_rdma_write@DAT_1.2"]
pub unsafe extern "C" fn dat_lmr_sync_rdma_write(
    ia_handle: DAT_IA_HANDLE,
    local_segments: *const v1::DAT_LMR_TRIPLET,
    num_segments: DAT_VLEN,
) -> v1::DAT_RETURN {
    return12(entry! {
        let mut room = Segments20::new();
        // SAFETY: `local_segments` holds `num_segments` triplets (API contract).
        let local = unsafe { local(&mut room, local_segments, 2) };
        api_lmr::sync(ia_handle, num_segments, local)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Sub;

    #[test]
    fn a_remote_length_beyond_32_bits() {
        assert_eq!(
            remote_too_long(dat_dtos::DAT_DTO_RDMA_READ),
            DatError::bare(Type::DAT_LENGTH_ERROR)
        );
        let write = remote_too_long(dat_dtos::DAT_DTO_RDMA_WRITE);
        assert_eq!(
            (write.kind, write.sub),
            (Type::DAT_INVALID_PARAMETER, Sub::DAT_INVALID_ARG5)
        );
    }
}
