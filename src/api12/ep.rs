//! Endpoints for a 1.2 caller: creation, query and modify, with its EP attributes (64-bit
//! message and RDMA sizes) and params (no `comm`) converted both ways, and its param mask,
//! whose bits for the fields before the attributes sit one place lower than 2.0's.

use super::query::query_into;
use crate::abi as v2;
use crate::abi::{DAT_EP_HANDLE, DAT_EVD_HANDLE, DAT_IA_HANDLE, DAT_PZ_HANDLE, DAT_SRQ_HANDLE};
use crate::abi12 as v1;
use crate::api::edge::{self, entry};
use crate::api::ep as api_ep;
use crate::error::{DatError, DatResult};

use super::returns::return12;

/// 1.2 mask bits that keep their place in 2.0 below the attributes: the IA handle, the state.
const KEPT: u64 = v1::DAT_EP_FIELD_IA_HANDLE | v1::DAT_EP_FIELD_EP_STATE;
/// 1.2 mask bits one place lower than 2.0's: the local address up to the SRQ handle (2.0
/// put `comm` before them).
const SHIFTED: u64 = v1::DAT_EP_FIELD_LOCAL_IA_ADDRESS_PTR
    | v1::DAT_EP_FIELD_LOCAL_PORT_QUAL
    | v1::DAT_EP_FIELD_REMOTE_IA_ADDRESS_PTR
    | v1::DAT_EP_FIELD_REMOTE_PORT_QUAL
    | v1::DAT_EP_FIELD_PZ_HANDLE
    | v1::DAT_EP_FIELD_RECV_EVD_HANDLE
    | v1::DAT_EP_FIELD_REQUEST_EVD_HANDLE
    | v1::DAT_EP_FIELD_CONNECT_EVD_HANDLE
    | v1::DAT_EP_FIELD_SRQ_HANDLE;
/// A bit 2.0 does not know either: what a bit unknown to 1.2 becomes, so that the core refuses
/// it where it refuses its own.
const UNKNOWN_TO_BOTH: u64 = 1 << 63;

/// A 1.2 EP param mask as 2.0's.
pub fn mask20(m: v1::DAT_EP_PARAM_MASK) -> v2::DAT_EP_PARAM_MASK {
    let known = (m & KEPT) | ((m & SHIFTED) << 1) | (m & v1::DAT_EP_FIELD_EP_ATTR_ALL);
    if m & !v1::DAT_EP_FIELD_ALL != 0 {
        known | UNKNOWN_TO_BOTH
    } else {
        known
    }
}

/// A 1.2 size as the core's 32 bits: one beyond them is `DAT_INVALID_PARAMETER` naming
/// `position` where the core reads it (`named`); elsewhere the core ignores it.
fn size20(size: u64, named: bool, position: u8) -> DatResult<u32> {
    match u32::try_from(size) {
        Ok(s) => Ok(s),
        Err(_) if named => Err(DatError::invalid_arg(position)),
        Err(_) => Ok(u32::MAX),
    }
}

/// 1.2 EP attributes as 2.0's; `mask` (2.0's) names the fields the core will read.
pub fn attr20(a: &v1::DAT_EP_ATTR, mask: u64, position: u8) -> DatResult<v2::DAT_EP_ATTR> {
    Ok(v2::DAT_EP_ATTR {
        service_type: a.service_type,
        max_message_size: size20(
            a.max_message_size,
            mask & v2::DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE != 0,
            position,
        )?,
        max_rdma_size: size20(
            a.max_rdma_size,
            mask & v2::DAT_EP_FIELD_EP_ATTR_MAX_RDMA_SIZE != 0,
            position,
        )?,
        qos: a.qos,
        recv_completion_flags: a.recv_completion_flags,
        request_completion_flags: a.request_completion_flags,
        max_recv_dtos: a.max_recv_dtos,
        max_request_dtos: a.max_request_dtos,
        max_recv_iov: a.max_recv_iov,
        max_request_iov: a.max_request_iov,
        max_rdma_read_in: a.max_rdma_read_in,
        max_rdma_read_out: a.max_rdma_read_out,
        srq_soft_hw: a.srq_soft_hw,
        max_rdma_read_iov: a.max_rdma_read_iov,
        max_rdma_write_iov: a.max_rdma_write_iov,
        ep_transport_specific_count: a.ep_transport_specific_count,
        ep_transport_specific: a.ep_transport_specific as *mut v2::DAT_NAMED_ATTR,
        ep_provider_specific_count: a.ep_provider_specific_count,
        ep_provider_specific: a.ep_provider_specific as *mut v2::DAT_NAMED_ATTR,
    })
}

/// 2.0 EP attributes as 1.2's.
pub fn attr12(a: &v2::DAT_EP_ATTR) -> v1::DAT_EP_ATTR {
    v1::DAT_EP_ATTR {
        service_type: a.service_type,
        max_message_size: u64::from(a.max_message_size),
        max_rdma_size: u64::from(a.max_rdma_size),
        qos: a.qos,
        recv_completion_flags: a.recv_completion_flags,
        request_completion_flags: a.request_completion_flags,
        max_recv_dtos: a.max_recv_dtos,
        max_request_dtos: a.max_request_dtos,
        max_recv_iov: a.max_recv_iov,
        max_request_iov: a.max_request_iov,
        max_rdma_read_in: a.max_rdma_read_in,
        max_rdma_read_out: a.max_rdma_read_out,
        srq_soft_hw: a.srq_soft_hw,
        max_rdma_read_iov: a.max_rdma_read_iov,
        max_rdma_write_iov: a.max_rdma_write_iov,
        ep_transport_specific_count: a.ep_transport_specific_count,
        ep_transport_specific: a.ep_transport_specific as *mut v1::DAT_NAMED_ATTR,
        ep_provider_specific_count: a.ep_provider_specific_count,
        ep_provider_specific: a.ep_provider_specific as *mut v1::DAT_NAMED_ATTR,
    }
}

/// A 2.0 EP param as 1.2's (which has no `comm`).
pub fn param12(p: &v2::DAT_EP_PARAM) -> v1::DAT_EP_PARAM {
    v1::DAT_EP_PARAM {
        ia_handle: p.ia_handle,
        ep_state: p.ep_state,
        local_ia_address_ptr: p.local_ia_address_ptr as v1::DAT_IA_ADDRESS_PTR,
        local_port_qual: p.local_port_qual,
        remote_ia_address_ptr: p.remote_ia_address_ptr as v1::DAT_IA_ADDRESS_PTR,
        remote_port_qual: p.remote_port_qual,
        pz_handle: p.pz_handle,
        recv_evd_handle: p.recv_evd_handle,
        request_evd_handle: p.request_evd_handle,
        connect_evd_handle: p.connect_evd_handle,
        srq_handle: p.srq_handle,
        ep_attr: attr12(&p.ep_attr),
    }
}

/// A 1.2 EP param as 2.0's; `mask` (2.0's) names the fields the core will read.
pub fn param20(p: &v1::DAT_EP_PARAM, mask: u64, position: u8) -> DatResult<v2::DAT_EP_PARAM> {
    let mut q = <v2::DAT_EP_PARAM as v2::Zeroable>::zeroed();
    q.ia_handle = p.ia_handle;
    q.ep_state = p.ep_state;
    q.local_ia_address_ptr = p.local_ia_address_ptr as v2::DAT_IA_ADDRESS_PTR;
    q.local_port_qual = p.local_port_qual;
    q.remote_ia_address_ptr = p.remote_ia_address_ptr as v2::DAT_IA_ADDRESS_PTR;
    q.remote_port_qual = p.remote_port_qual;
    q.pz_handle = p.pz_handle;
    q.recv_evd_handle = p.recv_evd_handle;
    q.request_evd_handle = p.request_evd_handle;
    q.connect_evd_handle = p.connect_evd_handle;
    q.srq_handle = p.srq_handle;
    q.ep_attr = attr20(&p.ep_attr, mask, position)?;
    Ok(q)
}

/// The caller's attributes, if any, as the core's (every one is read at creation).
///
/// # Safety
/// A non-NULL `p` points to a 1.2 `DAT_EP_ATTR`.
unsafe fn attributes(
    p: *const v1::DAT_EP_ATTR,
    position: u8,
) -> DatResult<Option<v2::DAT_EP_ATTR>> {
    // SAFETY: forwarded from our caller.
    match unsafe { edge::read_in(p) } {
        Some(a) => attr20(&a, v2::DAT_EP_FIELD_EP_ATTR_ALL, position).map(Some),
        None => Ok(None),
    }
}

#[export_name = "dat_ep_create@DAT_1.2"]
pub unsafe extern "C" fn dat_ep_create(
    ia_handle: DAT_IA_HANDLE,
    pz_handle: DAT_PZ_HANDLE,
    recv_evd_handle: DAT_EVD_HANDLE,
    request_evd_handle: DAT_EVD_HANDLE,
    connect_evd_handle: DAT_EVD_HANDLE,
    ep_attributes: *const v1::DAT_EP_ATTR,
    ep_handle: *mut DAT_EP_HANDLE,
) -> v1::DAT_RETURN {
    return12(entry! {
        // SAFETY: a non-NULL attribute pointer points to a DAT_EP_ATTR (API contract).
        let attr = unsafe { attributes(ep_attributes, 6) };
        api_ep::create(ia_handle, pz_handle, recv_evd_handle, request_evd_handle, connect_evd_handle, None, attr, 6, ep_handle)
    })
}

#[allow(clippy::too_many_arguments)]
#[export_name = "dat_ep_create_with_srq@DAT_1.2"]
pub unsafe extern "C" fn dat_ep_create_with_srq(
    ia_handle: DAT_IA_HANDLE,
    pz_handle: DAT_PZ_HANDLE,
    recv_evd_handle: DAT_EVD_HANDLE,
    request_evd_handle: DAT_EVD_HANDLE,
    connect_evd_handle: DAT_EVD_HANDLE,
    srq_handle: DAT_SRQ_HANDLE,
    ep_attributes: *const v1::DAT_EP_ATTR,
    ep_handle: *mut DAT_EP_HANDLE,
) -> v1::DAT_RETURN {
    return12(entry! {
        // SAFETY: a non-NULL attribute pointer points to a DAT_EP_ATTR (API contract).
        let attr = unsafe { attributes(ep_attributes, 7) };
        api_ep::create(ia_handle, pz_handle, recv_evd_handle, request_evd_handle, connect_evd_handle, Some(srq_handle), attr, 7, ep_handle)
    })
}

#[export_name = "dat_ep_query@DAT_1.2"]
pub unsafe extern "C" fn dat_ep_query(
    ep_handle: DAT_EP_HANDLE,
    ep_param_mask: v1::DAT_EP_PARAM_MASK,
    ep_param: *mut v1::DAT_EP_PARAM,
) -> v1::DAT_RETURN {
    query_into(
        ep_param,
        // SAFETY: the param is NULL or ours.
        |ours| unsafe { api_ep::dat_ep_query(ep_handle, mask20(ep_param_mask), ours) },
        param12,
    )
}

#[export_name = "dat_ep_modify@DAT_1.2"]
pub unsafe extern "C" fn dat_ep_modify(
    ep_handle: DAT_EP_HANDLE,
    ep_param_mask: v1::DAT_EP_PARAM_MASK,
    ep_param: *const v1::DAT_EP_PARAM,
) -> v1::DAT_RETURN {
    return12(entry! {
        let mask = mask20(ep_param_mask);
        api_ep::modify(ep_handle, mask, || {
            // SAFETY: a non-NULL parameter pointer points to a DAT_EP_PARAM (API contract).
            let p = unsafe { edge::required_in(ep_param, 3)? };
            param20(&p, mask, 3)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{Sub, Type};

    /// Each named field's bit of 1.2 becomes the bit of 2.0 of that name.
    macro_rules! same_field {
        ($($f:ident),+ $(,)?) => {$(
            assert_eq!(mask20(v1::$f), v2::$f, stringify!($f));
        )+};
    }

    #[test]
    fn mask_bits_by_name() {
        same_field!(
            DAT_EP_FIELD_IA_HANDLE,
            DAT_EP_FIELD_EP_STATE,
            DAT_EP_FIELD_LOCAL_IA_ADDRESS_PTR,
            DAT_EP_FIELD_LOCAL_PORT_QUAL,
            DAT_EP_FIELD_REMOTE_IA_ADDRESS_PTR,
            DAT_EP_FIELD_REMOTE_PORT_QUAL,
            DAT_EP_FIELD_PZ_HANDLE,
            DAT_EP_FIELD_RECV_EVD_HANDLE,
            DAT_EP_FIELD_REQUEST_EVD_HANDLE,
            DAT_EP_FIELD_CONNECT_EVD_HANDLE,
            DAT_EP_FIELD_SRQ_HANDLE,
            DAT_EP_FIELD_EP_ATTR_SERVICE_TYPE,
            DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE,
            DAT_EP_FIELD_EP_ATTR_MAX_RDMA_SIZE,
            DAT_EP_FIELD_EP_ATTR_QOS,
            DAT_EP_FIELD_EP_ATTR_RECV_COMPLETION_FLAGS,
            DAT_EP_FIELD_EP_ATTR_REQUEST_COMPLETION_FLAGS,
            DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS,
            DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS,
            DAT_EP_FIELD_EP_ATTR_MAX_RECV_IOV,
            DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_IOV,
            DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IN,
            DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_OUT,
            DAT_EP_FIELD_EP_ATTR_SRQ_SOFT_HW,
            DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IOV,
            DAT_EP_FIELD_EP_ATTR_MAX_RDMA_WRITE_IOV,
            DAT_EP_FIELD_EP_ATTR_NUM_TRANSPORT_ATTR,
            DAT_EP_FIELD_EP_ATTR_TRANSPORT_SPECIFIC_ATTR,
            DAT_EP_FIELD_EP_ATTR_NUM_PROVIDER_ATTR,
            DAT_EP_FIELD_EP_ATTR_PROVIDER_SPECIFIC_ATTR,
            DAT_EP_FIELD_EP_ATTR_ALL,
        );
        // Everything 1.2 names: all of 2.0's but `comm`.
        assert_eq!(
            mask20(v1::DAT_EP_FIELD_ALL),
            v2::DAT_EP_FIELD_ALL & !v2::DAT_EP_FIELD_COMM
        );
    }

    #[test]
    fn unknown_mask_bits_stay_unknown() {
        for bit in [0x800u64, 1 << 31, 1 << 40] {
            assert_ne!(mask20(bit) & !v2::DAT_EP_FIELD_ALL, 0, "{bit:#x}");
        }
    }

    fn attr(message: u64, rdma: u64) -> v1::DAT_EP_ATTR {
        v1::DAT_EP_ATTR {
            service_type: 0,
            max_message_size: message,
            max_rdma_size: rdma,
            qos: 0,
            recv_completion_flags: 1,
            request_completion_flags: 4,
            max_recv_dtos: 10,
            max_request_dtos: 11,
            max_recv_iov: 2,
            max_request_iov: 3,
            max_rdma_read_in: 4,
            max_rdma_read_out: 5,
            srq_soft_hw: 6,
            max_rdma_read_iov: 7,
            max_rdma_write_iov: 8,
            ep_transport_specific_count: 0,
            ep_transport_specific: std::ptr::null_mut(),
            ep_provider_specific_count: 1,
            ep_provider_specific: 0x10 as *mut v1::DAT_NAMED_ATTR,
        }
    }

    #[test]
    fn attributes_both_ways() {
        let a = attr(1 << 20, 1 << 24);
        let b = attr20(&a, v2::DAT_EP_FIELD_EP_ATTR_ALL, 6).unwrap();
        assert_eq!((b.max_message_size, b.max_rdma_size), (1 << 20, 1 << 24));
        assert_eq!(
            (
                b.recv_completion_flags,
                b.request_completion_flags,
                b.max_recv_dtos,
                b.max_request_dtos
            ),
            (1, 4, 10, 11)
        );
        assert_eq!(
            (
                b.max_recv_iov,
                b.max_request_iov,
                b.max_rdma_read_in,
                b.max_rdma_read_out,
                b.srq_soft_hw
            ),
            (2, 3, 4, 5, 6)
        );
        assert_eq!(
            (
                b.max_rdma_read_iov,
                b.max_rdma_write_iov,
                b.ep_provider_specific_count
            ),
            (7, 8, 1)
        );
        let c = attr12(&b);
        assert_eq!(
            (c.max_message_size, c.max_rdma_size, c.max_rdma_write_iov),
            (1 << 20, 1 << 24, 8)
        );
        assert_eq!(c.ep_provider_specific as usize, 0x10);
    }

    #[test]
    fn a_size_beyond_32_bits_when_read() {
        let a = attr(1 << 32, 10);
        let e = attr20(&a, v2::DAT_EP_FIELD_EP_ATTR_ALL, 6).err().unwrap();
        assert_eq!(
            (e.kind, e.sub),
            (Type::DAT_INVALID_PARAMETER, Sub::DAT_INVALID_ARG6)
        );
        let e = attr20(
            &attr(10, u64::MAX),
            v2::DAT_EP_FIELD_EP_ATTR_MAX_RDMA_SIZE,
            3,
        )
        .err()
        .unwrap();
        assert_eq!(e.sub, Sub::DAT_INVALID_ARG3);
        // A modify that does not name it: ignored by the core, no error.
        let b = attr20(&a, v2::DAT_EP_FIELD_EP_ATTR_QOS, 3).unwrap();
        assert_eq!(b.max_rdma_size, 10);
    }

    #[test]
    fn params_both_ways() {
        let h = |n: usize| n as v2::DAT_HANDLE;
        let mut p = <v2::DAT_EP_PARAM as v2::Zeroable>::zeroed();
        p.ia_handle = h(1);
        p.ep_state = v2::dat_ep_state::DAT_EP_STATE_CONNECTED as u32;
        p.comm.domain = 2;
        p.local_port_qual = 77;
        p.remote_port_qual = 88;
        p.pz_handle = h(2);
        p.recv_evd_handle = h(3);
        p.request_evd_handle = h(4);
        p.connect_evd_handle = h(5);
        p.srq_handle = h(6);
        p.ep_attr.max_message_size = 4096;
        let q = param12(&p);
        assert_eq!(q.ep_state, v1::dat_ep_state::DAT_EP_STATE_CONNECTED as u32);
        assert_eq!((q.local_port_qual, q.remote_port_qual), (77, 88));
        assert_eq!(
            [
                q.ia_handle,
                q.pz_handle,
                q.recv_evd_handle,
                q.request_evd_handle,
                q.connect_evd_handle,
                q.srq_handle
            ],
            [h(1), h(2), h(3), h(4), h(5), h(6)]
        );
        assert_eq!(q.ep_attr.max_message_size, 4096);
        let r = param20(&q, v2::DAT_EP_FIELD_ALL, 3).unwrap();
        assert_eq!(
            (r.recv_evd_handle, r.srq_handle, r.ep_attr.max_message_size),
            (h(3), h(6), 4096)
        );
        assert_eq!((r.comm.domain, r.comm.r#type, r.comm.protocol), (0, 0, 0));
    }
}
