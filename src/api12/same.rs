//! The 1.2 functions whose arguments DAT 1.2 and 2.0 lay out alike (handles, counts, flags of
//! the same values, and the PZ, PSP, RSP, CR, EVD and provider-info structures: checked by
//! `tests::alike`): the 2.0 function, its result renumbered.

use super::returns::return12;
use crate::abi::*;
use crate::abi12 as v1;
use crate::api;

/// Each line: the 1.2 function, the 2.0 function it is, and their common arguments.
macro_rules! same_abi {
    ($($name:ident => api::$m:ident::$core:ident ($($arg:ident: $ty:ty),* $(,)?);)+) => {$(
        #[export_name = concat!(stringify!($name), "@DAT_1.2")]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> v1::DAT_RETURN {
            // SAFETY: the 1.2 caller's arguments are the 2.0 function's, alike in layout.
            return12(unsafe { api::$m::$core($($arg),*) })
        }
    )+};
}

same_abi! {
    dat_ia_close => api::ia::dat_ia_close(ia_handle: DAT_IA_HANDLE, ia_flags: DAT_CLOSE_FLAGS);
    dat_set_consumer_context => api::misc::dat_set_consumer_context(dat_handle: DAT_HANDLE, context: DAT_CONTEXT);
    dat_get_consumer_context => api::misc::dat_get_consumer_context(dat_handle: DAT_HANDLE, context: *mut DAT_CONTEXT);
    dat_get_handle_type => api::misc::dat_get_handle_type(dat_handle: DAT_HANDLE, handle_type: *mut DAT_HANDLE_TYPE);
    dat_cr_query => api::cm::dat_cr_query(cr_handle: DAT_CR_HANDLE, cr_param_mask: DAT_CR_PARAM_MASK, cr_param: *mut DAT_CR_PARAM);
    dat_cr_accept => api::cm::dat_cr_accept(cr_handle: DAT_CR_HANDLE, ep_handle: DAT_EP_HANDLE, private_data_size: DAT_COUNT, private_data: DAT_PVOID);
    dat_cr_handoff => api::cm::dat_cr_handoff(cr_handle: DAT_CR_HANDLE, handoff: DAT_CONN_QUAL);
    dat_evd_resize => api::evd::dat_evd_resize(evd_handle: DAT_EVD_HANDLE, evd_min_qlen: DAT_COUNT);
    dat_evd_query => api::evd::dat_evd_query(evd_handle: DAT_EVD_HANDLE, evd_param_mask: DAT_EVD_PARAM_MASK, evd_param: *mut DAT_EVD_PARAM);
    dat_evd_free => api::evd::dat_evd_free(evd_handle: DAT_EVD_HANDLE);
    dat_evd_create => api::evd::dat_evd_create(ia_handle: DAT_IA_HANDLE, evd_min_qlen: DAT_COUNT, cno_handle: DAT_CNO_HANDLE, evd_flags: DAT_EVD_FLAGS, evd_handle: *mut DAT_EVD_HANDLE);
    dat_evd_modify_cno => api::evd::dat_evd_modify_cno(evd_handle: DAT_EVD_HANDLE, cno_handle: DAT_CNO_HANDLE);
    dat_evd_enable => api::evd::dat_evd_enable(evd_handle: DAT_EVD_HANDLE);
    dat_evd_disable => api::evd::dat_evd_disable(evd_handle: DAT_EVD_HANDLE);
    dat_evd_set_unwaitable => api::evd::dat_evd_set_unwaitable(evd_handle: DAT_EVD_HANDLE);
    dat_evd_clear_unwaitable => api::evd::dat_evd_clear_unwaitable(evd_handle: DAT_EVD_HANDLE);
    dat_ep_connect => api::ep::dat_ep_connect(ep_handle: DAT_EP_HANDLE, remote_ia_address: DAT_IA_ADDRESS_PTR, remote_conn_qual: DAT_CONN_QUAL, timeout: DAT_TIMEOUT, private_data_size: DAT_COUNT, private_data: DAT_PVOID, quality_of_service: DAT_QOS, connect_flags: DAT_CONNECT_FLAGS);
    dat_ep_dup_connect => api::ep::dat_ep_dup_connect(ep_handle: DAT_EP_HANDLE, ep_dup_handle: DAT_EP_HANDLE, timeout: DAT_TIMEOUT, private_data_size: DAT_COUNT, private_data: DAT_PVOID, quality_of_service: DAT_QOS);
    dat_ep_disconnect => api::ep::dat_ep_disconnect(ep_handle: DAT_EP_HANDLE, close_flags: DAT_CLOSE_FLAGS);
    dat_ep_get_status => api::ep::dat_ep_get_status(ep_handle: DAT_EP_HANDLE, ep_state: *mut DAT_EP_STATE, recv_idle: *mut DAT_BOOLEAN, request_idle: *mut DAT_BOOLEAN);
    dat_ep_free => api::ep::dat_ep_free(ep_handle: DAT_EP_HANDLE);
    dat_ep_reset => api::ep::dat_ep_reset(ep_handle: DAT_EP_HANDLE);
    dat_ep_recv_query => api::ep::dat_ep_recv_query(ep_handle: DAT_EP_HANDLE, nbufs_allocated: *mut DAT_COUNT, bufs_alloc_span: *mut DAT_COUNT);
    dat_ep_set_watermark => api::ep::dat_ep_set_watermark(ep_handle: DAT_EP_HANDLE, soft_high_watermark: DAT_COUNT, hard_high_watermark: DAT_COUNT);
    dat_lmr_free => api::lmr::dat_lmr_free(lmr_handle: DAT_LMR_HANDLE);
    dat_rmr_create => api::rmr::dat_rmr_create(pz_handle: DAT_PZ_HANDLE, rmr_handle: *mut DAT_RMR_HANDLE);
    dat_rmr_free => api::rmr::dat_rmr_free(rmr_handle: DAT_RMR_HANDLE);
    dat_psp_create => api::cm::dat_psp_create(ia_handle: DAT_IA_HANDLE, conn_qual: DAT_CONN_QUAL, evd_handle: DAT_EVD_HANDLE, psp_flags: DAT_PSP_FLAGS, psp_handle: *mut DAT_PSP_HANDLE);
    dat_psp_create_any => api::cm::dat_psp_create_any(ia_handle: DAT_IA_HANDLE, conn_qual: *mut DAT_CONN_QUAL, evd_handle: DAT_EVD_HANDLE, psp_flags: DAT_PSP_FLAGS, psp_handle: *mut DAT_PSP_HANDLE);
    dat_psp_query => api::cm::dat_psp_query(psp_handle: DAT_PSP_HANDLE, psp_param_mask: DAT_PSP_PARAM_MASK, psp_param: *mut DAT_PSP_PARAM);
    dat_psp_free => api::cm::dat_psp_free(psp_handle: DAT_PSP_HANDLE);
    dat_rsp_create => api::cm::dat_rsp_create(ia_handle: DAT_IA_HANDLE, conn_qual: DAT_CONN_QUAL, ep_handle: DAT_EP_HANDLE, evd_handle: DAT_EVD_HANDLE, rsp_handle: *mut DAT_RSP_HANDLE);
    dat_rsp_query => api::cm::dat_rsp_query(rsp_handle: DAT_RSP_HANDLE, rsp_param_mask: DAT_RSP_PARAM_MASK, rsp_param: *mut DAT_RSP_PARAM);
    dat_rsp_free => api::cm::dat_rsp_free(rsp_handle: DAT_RSP_HANDLE);
    dat_pz_create => api::pz::dat_pz_create(ia_handle: DAT_IA_HANDLE, pz_handle: *mut DAT_PZ_HANDLE);
    dat_pz_query => api::pz::dat_pz_query(pz_handle: DAT_PZ_HANDLE, pz_param_mask: DAT_PZ_PARAM_MASK, pz_param: *mut DAT_PZ_PARAM);
    dat_pz_free => api::pz::dat_pz_free(pz_handle: DAT_PZ_HANDLE);
    dat_srq_create => api::srq::dat_srq_create(ia_handle: DAT_IA_HANDLE, pz_handle: DAT_PZ_HANDLE, srq_attr: *mut DAT_SRQ_ATTR, srq_handle: *mut DAT_SRQ_HANDLE);
    dat_srq_free => api::srq::dat_srq_free(srq_handle: DAT_SRQ_HANDLE);
    dat_srq_resize => api::srq::dat_srq_resize(srq_handle: DAT_SRQ_HANDLE, srq_max_recv_dto: DAT_COUNT);
    dat_srq_set_lw => api::srq::dat_srq_set_lw(srq_handle: DAT_SRQ_HANDLE, low_watermark: DAT_COUNT);
    dat_cno_create => api::cno::dat_cno_create(ia_handle: DAT_IA_HANDLE, agent: DAT_OS_WAIT_PROXY_AGENT, cno_handle: *mut DAT_CNO_HANDLE);
    dat_cno_modify_agent => api::cno::dat_cno_modify_agent(cno_handle: DAT_CNO_HANDLE, agent: DAT_OS_WAIT_PROXY_AGENT);
    dat_cno_free => api::cno::dat_cno_free(cno_handle: DAT_CNO_HANDLE);
    dat_registry_add_provider => api::registry::dat_registry_add_provider(provider: *const DAT_PROVIDER, provider_info: *const DAT_PROVIDER_INFO);
    dat_registry_remove_provider => api::registry::dat_registry_remove_provider(provider: *const DAT_PROVIDER, provider_info: *const DAT_PROVIDER_INFO);
}

/// `dat_cr_reject` of 1.2 takes no private data.
#[export_name = "dat_cr_reject@DAT_1.2"]
pub unsafe extern "C" fn dat_cr_reject(cr_handle: DAT_CR_HANDLE) -> v1::DAT_RETURN {
    // SAFETY: no private data: size 0, no pointer.
    return12(unsafe { api::cm::dat_cr_reject(cr_handle, 0, std::ptr::null_mut()) })
}

#[cfg(test)]
mod tests {
    use crate::abi as v2;
    use crate::abi12 as v1;
    use std::mem::{offset_of, size_of};

    /// The structures the functions above pass through unchanged: the same size, and each
    /// field at the same offset, in both APIs.
    macro_rules! alike {
        ($($t:ident { $($f:ident),* })+) => {$(
            assert_eq!(size_of::<v1::$t>(), size_of::<v2::$t>(), stringify!($t));
            $(assert_eq!(offset_of!(v1::$t, $f), offset_of!(v2::$t, $f), concat!(stringify!($t), ".", stringify!($f)));)*
        )+};
    }

    #[test]
    fn alike() {
        alike! {
            DAT_PZ_PARAM { ia_handle }
            DAT_PSP_PARAM { ia_handle, conn_qual, evd_handle, psp_flags }
            DAT_RSP_PARAM { ia_handle, conn_qual, evd_handle, ep_handle }
            DAT_CR_PARAM { remote_ia_address_ptr, remote_port_qual, private_data_size, private_data, local_ep_handle }
            DAT_EVD_PARAM { ia_handle, evd_qlen, evd_state, cno_handle, evd_flags }
            DAT_SRQ_ATTR { max_recv_dtos, max_recv_iov, low_watermark }
            DAT_PROVIDER_INFO { ia_name, dapl_version_major, dapl_version_minor, is_thread_safe }
            DAT_OS_WAIT_PROXY_AGENT { instance_data, proxy_agent_func }
            DAT_CONTEXT { as_64, as_ptr, as_index }
            DAT_DTO_COOKIE { as_64, as_ptr, as_index }
            DAT_REGION_DESCRIPTION { for_va, for_lmr_handle, for_shared_memory }
        }
    }
}
