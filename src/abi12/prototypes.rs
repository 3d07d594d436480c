//! The functions of the DAT 1.2 headers, grouped by the header that declares them (the
//! `// file.h` line before each block): read by tools/headergen, compiled only by the tests.
//! The library does not export them with these types yet: nothing calls these declarations.
#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals, clippy::upper_case_acronyms)]
// Never called; and they differ from src/api's 2.0 functions of the same names, on purpose.
#![allow(dead_code, clashing_extern_declarations)]

#[allow(unused_imports)]
use super::*;
#[allow(unused_imports)]
use core::ffi::*;

// dat.h
extern "C" {
    pub fn dat_ia_openv(provider: DAT_NAME_PTR, asynch_evd_min_qlen: DAT_COUNT, asynch_evd_handle: *mut DAT_EVD_HANDLE, ia_handle: *mut DAT_IA_HANDLE, dapl_major: DAT_UINT32, dapl_minor: DAT_UINT32, thread_safety: DAT_BOOLEAN) -> DAT_RETURN;
    pub fn dat_ia_query(ia_handle: DAT_IA_HANDLE, async_evd_handle: *mut DAT_EVD_HANDLE, ia_attr_mask: DAT_IA_ATTR_MASK, ia_attr: *mut DAT_IA_ATTR, provider_attr_mask: DAT_PROVIDER_ATTR_MASK, provider_attr: *mut DAT_PROVIDER_ATTR) -> DAT_RETURN;
    pub fn dat_ia_close(ia_handle: DAT_IA_HANDLE, close_flags: DAT_CLOSE_FLAGS) -> DAT_RETURN;
    pub fn dat_set_consumer_context(dat_handle: DAT_HANDLE, context: DAT_CONTEXT) -> DAT_RETURN;
    pub fn dat_get_consumer_context(dat_handle: DAT_HANDLE, context: *mut DAT_CONTEXT) -> DAT_RETURN;
    pub fn dat_get_handle_type(dat_handle: DAT_HANDLE, handle_type: *mut DAT_HANDLE_TYPE) -> DAT_RETURN;
    pub fn dat_cr_query(cr_handle: DAT_CR_HANDLE, cr_param_mask: DAT_CR_PARAM_MASK, cr_param: *mut DAT_CR_PARAM) -> DAT_RETURN;
    pub fn dat_cr_accept(cr_handle: DAT_CR_HANDLE, ep_handle: DAT_EP_HANDLE, private_data_size: DAT_COUNT, private_data: DAT_PVOID) -> DAT_RETURN;
    pub fn dat_cr_reject(cr_handle: DAT_CR_HANDLE) -> DAT_RETURN;
    pub fn dat_cr_handoff(cr_handle: DAT_CR_HANDLE, handoff: DAT_CONN_QUAL) -> DAT_RETURN;
    pub fn dat_evd_resize(evd_handle: DAT_EVD_HANDLE, evd_min_qlen: DAT_COUNT) -> DAT_RETURN;
    pub fn dat_evd_post_se(evd_handle: DAT_EVD_HANDLE, event: *const DAT_EVENT) -> DAT_RETURN;
    pub fn dat_evd_dequeue(evd_handle: DAT_EVD_HANDLE, event: *mut DAT_EVENT) -> DAT_RETURN;
    pub fn dat_evd_query(evd_handle: DAT_EVD_HANDLE, evd_param_mask: DAT_EVD_PARAM_MASK, evd_param: *mut DAT_EVD_PARAM) -> DAT_RETURN;
    pub fn dat_evd_free(evd_handle: DAT_EVD_HANDLE) -> DAT_RETURN;
    pub fn dat_ep_create(ia_handle: DAT_IA_HANDLE, pz_handle: DAT_PZ_HANDLE, recv_completion_evd_handle: DAT_EVD_HANDLE, request_completion_evd_handle: DAT_EVD_HANDLE, connect_evd_handle: DAT_EVD_HANDLE, ep_attributes: *const DAT_EP_ATTR, ep_handle: *mut DAT_EP_HANDLE) -> DAT_RETURN;
    pub fn dat_ep_query(ep_handle: DAT_EP_HANDLE, ep_param_mask: DAT_EP_PARAM_MASK, ep_param: *mut DAT_EP_PARAM) -> DAT_RETURN;
    pub fn dat_ep_modify(ep_handle: DAT_EP_HANDLE, ep_param_mask: DAT_EP_PARAM_MASK, ep_param: *const DAT_EP_PARAM) -> DAT_RETURN;
    pub fn dat_ep_connect(ep_handle: DAT_EP_HANDLE, remote_ia_address: DAT_IA_ADDRESS_PTR, remote_conn_qual: DAT_CONN_QUAL, timeout: DAT_TIMEOUT, private_data_size: DAT_COUNT, private_data: DAT_PVOID, quality_of_service: DAT_QOS, connect_flags: DAT_CONNECT_FLAGS) -> DAT_RETURN;
    pub fn dat_ep_dup_connect(ep_handle: DAT_EP_HANDLE, ep_dup_handle: DAT_EP_HANDLE, timeout: DAT_TIMEOUT, private_data_size: DAT_COUNT, private_data: DAT_PVOID, quality_of_service: DAT_QOS) -> DAT_RETURN;
    pub fn dat_ep_disconnect(ep_handle: DAT_EP_HANDLE, close_flags: DAT_CLOSE_FLAGS) -> DAT_RETURN;
    pub fn dat_ep_post_send(ep_handle: DAT_EP_HANDLE, num_segments: DAT_COUNT, local_iov: *mut DAT_LMR_TRIPLET, user_cookie: DAT_DTO_COOKIE, completion_flags: DAT_COMPLETION_FLAGS) -> DAT_RETURN;
    pub fn dat_ep_post_recv(ep_handle: DAT_EP_HANDLE, num_segments: DAT_COUNT, local_iov: *mut DAT_LMR_TRIPLET, user_cookie: DAT_DTO_COOKIE, completion_flags: DAT_COMPLETION_FLAGS) -> DAT_RETURN;
    pub fn dat_ep_post_rdma_read(ep_handle: DAT_EP_HANDLE, num_segments: DAT_COUNT, local_iov: *mut DAT_LMR_TRIPLET, user_cookie: DAT_DTO_COOKIE, remote_iov: *const DAT_RMR_TRIPLET, completion_flags: DAT_COMPLETION_FLAGS) -> DAT_RETURN;
    pub fn dat_ep_post_rdma_write(ep_handle: DAT_EP_HANDLE, num_segments: DAT_COUNT, local_iov: *mut DAT_LMR_TRIPLET, user_cookie: DAT_DTO_COOKIE, remote_iov: *const DAT_RMR_TRIPLET, completion_flags: DAT_COMPLETION_FLAGS) -> DAT_RETURN;
    pub fn dat_ep_get_status(ep_handle: DAT_EP_HANDLE, ep_state: *mut DAT_EP_STATE, recv_idle: *mut DAT_BOOLEAN, request_idle: *mut DAT_BOOLEAN) -> DAT_RETURN;
    pub fn dat_ep_free(ep_handle: DAT_EP_HANDLE) -> DAT_RETURN;
    pub fn dat_ep_reset(ep_handle: DAT_EP_HANDLE) -> DAT_RETURN;
    pub fn dat_ep_create_with_srq(ia_handle: DAT_IA_HANDLE, pz_handle: DAT_PZ_HANDLE, recv_evd_handle: DAT_EVD_HANDLE, request_evd_handle: DAT_EVD_HANDLE, connect_evd_handle: DAT_EVD_HANDLE, srq_handle: DAT_SRQ_HANDLE, ep_attributes: *const DAT_EP_ATTR, ep_handle: *mut DAT_EP_HANDLE) -> DAT_RETURN;
    pub fn dat_ep_recv_query(ep_handle: DAT_EP_HANDLE, nbufs_allocated: *mut DAT_COUNT, bufs_alloc_span: *mut DAT_COUNT) -> DAT_RETURN;
    pub fn dat_ep_set_watermark(ep_handle: DAT_EP_HANDLE, soft_high_watermark: DAT_COUNT, hard_high_watermark: DAT_COUNT) -> DAT_RETURN;
    pub fn dat_lmr_query(lmr_handle: DAT_LMR_HANDLE, lmr_param_mask: DAT_LMR_PARAM_MASK, lmr_param: *mut DAT_LMR_PARAM) -> DAT_RETURN;
    pub fn dat_lmr_free(lmr_handle: DAT_LMR_HANDLE) -> DAT_RETURN;
    pub fn dat_lmr_sync_rdma_read(ia_handle: DAT_IA_HANDLE, local_segments: *const DAT_LMR_TRIPLET, num_segments: DAT_VLEN) -> DAT_RETURN;
    pub fn dat_lmr_sync_rdma_write(ia_handle: DAT_IA_HANDLE, local_segments: *const DAT_LMR_TRIPLET, num_segments: DAT_VLEN) -> DAT_RETURN;
    pub fn dat_rmr_create(pz_handle: DAT_PZ_HANDLE, rmr_handle: *mut DAT_RMR_HANDLE) -> DAT_RETURN;
    pub fn dat_rmr_query(rmr_handle: DAT_RMR_HANDLE, rmr_param_mask: DAT_RMR_PARAM_MASK, rmr_param: *mut DAT_RMR_PARAM) -> DAT_RETURN;
    pub fn dat_rmr_bind(rmr_handle: DAT_RMR_HANDLE, lmr_triplet: *const DAT_LMR_TRIPLET, mem_priv: DAT_MEM_PRIV_FLAGS, ep_handle: DAT_EP_HANDLE, user_cookie: DAT_RMR_COOKIE, completion_flags: DAT_COMPLETION_FLAGS, context: *mut DAT_RMR_CONTEXT) -> DAT_RETURN;
    pub fn dat_rmr_free(rmr_handle: DAT_RMR_HANDLE) -> DAT_RETURN;
    pub fn dat_psp_create(ia_handle: DAT_IA_HANDLE, conn_qual: DAT_CONN_QUAL, evd_handle: DAT_EVD_HANDLE, psp_flags: DAT_PSP_FLAGS, psp_handle: *mut DAT_PSP_HANDLE) -> DAT_RETURN;
    pub fn dat_psp_create_any(ia_handle: DAT_IA_HANDLE, conn_qual: *mut DAT_CONN_QUAL, evd_handle: DAT_EVD_HANDLE, psp_flags: DAT_PSP_FLAGS, psp_handle: *mut DAT_PSP_HANDLE) -> DAT_RETURN;
    pub fn dat_psp_query(psp_handle: DAT_PSP_HANDLE, psp_param_mask: DAT_PSP_PARAM_MASK, psp_param: *mut DAT_PSP_PARAM) -> DAT_RETURN;
    pub fn dat_psp_free(psp_handle: DAT_PSP_HANDLE) -> DAT_RETURN;
    pub fn dat_rsp_create(ia_handle: DAT_IA_HANDLE, conn_qual: DAT_CONN_QUAL, ep_handle: DAT_EP_HANDLE, evd_handle: DAT_EVD_HANDLE, rsp_handle: *mut DAT_RSP_HANDLE) -> DAT_RETURN;
    pub fn dat_rsp_query(rsp_handle: DAT_RSP_HANDLE, rsp_param_mask: DAT_RSP_PARAM_MASK, rsp_param: *mut DAT_RSP_PARAM) -> DAT_RETURN;
    pub fn dat_rsp_free(rsp_handle: DAT_RSP_HANDLE) -> DAT_RETURN;
    pub fn dat_pz_create(ia_handle: DAT_IA_HANDLE, pz_handle: *mut DAT_PZ_HANDLE) -> DAT_RETURN;
    pub fn dat_pz_query(pz_handle: DAT_PZ_HANDLE, pz_param_mask: DAT_PZ_PARAM_MASK, pz_param: *mut DAT_PZ_PARAM) -> DAT_RETURN;
    pub fn dat_pz_free(pz_handle: DAT_PZ_HANDLE) -> DAT_RETURN;
    pub fn dat_srq_create(ia_handle: DAT_IA_HANDLE, pz_handle: DAT_PZ_HANDLE, srq_attr: *mut DAT_SRQ_ATTR, srq_handle: *mut DAT_SRQ_HANDLE) -> DAT_RETURN;
    pub fn dat_srq_free(srq_handle: DAT_SRQ_HANDLE) -> DAT_RETURN;
    pub fn dat_srq_post_recv(srq_handle: DAT_SRQ_HANDLE, num_segments: DAT_COUNT, local_iov: *mut DAT_LMR_TRIPLET, user_cookie: DAT_DTO_COOKIE) -> DAT_RETURN;
    pub fn dat_srq_query(srq_handle: DAT_SRQ_HANDLE, srq_param_mask: DAT_SRQ_PARAM_MASK, srq_param: *mut DAT_SRQ_PARAM) -> DAT_RETURN;
    pub fn dat_srq_resize(srq_handle: DAT_SRQ_HANDLE, srq_max_recv_dto: DAT_COUNT) -> DAT_RETURN;
    pub fn dat_srq_set_lw(srq_handle: DAT_SRQ_HANDLE, low_watermark: DAT_COUNT) -> DAT_RETURN;
    pub fn dat_registry_list_providers(max_to_return: DAT_COUNT, entries_returned: *mut DAT_COUNT, dat_provider_list: *mut *mut DAT_PROVIDER_INFO) -> DAT_RETURN;
    pub fn dat_strerror(value: DAT_RETURN, major_message: *mut *const c_char, minor_message: *mut *const c_char) -> DAT_RETURN;
}

// udat.h
extern "C" {
    pub fn dat_lmr_create(ia_handle: DAT_IA_HANDLE, mem_type: DAT_MEM_TYPE, region_description: DAT_REGION_DESCRIPTION, length: DAT_VLEN, pz_handle: DAT_PZ_HANDLE, privileges: DAT_MEM_PRIV_FLAGS, lmr_handle: *mut DAT_LMR_HANDLE, lmr_context: *mut DAT_LMR_CONTEXT, rmr_context: *mut DAT_RMR_CONTEXT, registered_length: *mut DAT_VLEN, registered_address: *mut DAT_VADDR) -> DAT_RETURN;
    pub fn dat_evd_create(ia_handle: DAT_IA_HANDLE, evd_min_qlen: DAT_COUNT, cno_handle: DAT_CNO_HANDLE, evd_flags: DAT_EVD_FLAGS, evd_handle: *mut DAT_EVD_HANDLE) -> DAT_RETURN;
    pub fn dat_evd_modify_cno(evd_handle: DAT_EVD_HANDLE, cno_handle: DAT_CNO_HANDLE) -> DAT_RETURN;
    pub fn dat_cno_create(ia_handle: DAT_IA_HANDLE, agent: DAT_OS_WAIT_PROXY_AGENT, cno_handle: *mut DAT_CNO_HANDLE) -> DAT_RETURN;
    pub fn dat_cno_modify_agent(cno_handle: DAT_CNO_HANDLE, agent: DAT_OS_WAIT_PROXY_AGENT) -> DAT_RETURN;
    pub fn dat_cno_query(cno_handle: DAT_CNO_HANDLE, cno_param_mask: DAT_CNO_PARAM_MASK, cno_param: *mut DAT_CNO_PARAM) -> DAT_RETURN;
    pub fn dat_cno_free(cno_handle: DAT_CNO_HANDLE) -> DAT_RETURN;
    pub fn dat_cno_wait(cno_handle: DAT_CNO_HANDLE, timeout: DAT_TIMEOUT, evd_handle: *mut DAT_EVD_HANDLE) -> DAT_RETURN;
    pub fn dat_evd_enable(evd_handle: DAT_EVD_HANDLE) -> DAT_RETURN;
    pub fn dat_evd_wait(evd_handle: DAT_EVD_HANDLE, timeout: DAT_TIMEOUT, threshold: DAT_COUNT, event: *mut DAT_EVENT, n_more_events: *mut DAT_COUNT) -> DAT_RETURN;
    pub fn dat_evd_disable(evd_handle: DAT_EVD_HANDLE) -> DAT_RETURN;
    pub fn dat_evd_set_unwaitable(evd_handle: DAT_EVD_HANDLE) -> DAT_RETURN;
    pub fn dat_evd_clear_unwaitable(evd_handle: DAT_EVD_HANDLE) -> DAT_RETURN;
}

// dat_registry.h
extern "C" {
    pub fn dat_registry_add_provider(provider: *const DAT_PROVIDER, provider_info: *const DAT_PROVIDER_INFO) -> DAT_RETURN;
    pub fn dat_registry_remove_provider(provider: *const DAT_PROVIDER, provider_info: *const DAT_PROVIDER_INFO) -> DAT_RETURN;
}

