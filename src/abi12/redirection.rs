//! Types and constants of the DAT 1.2 headers (redirection).
#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals, clippy::upper_case_acronyms)]

#[allow(unused_imports)]
use super::*;
#[allow(unused_imports)]
use core::ffi::*;

pub type DAT_LMR_CREATE_FUNC = Option<unsafe extern "C" fn(DAT_IA_HANDLE, DAT_MEM_TYPE, DAT_REGION_DESCRIPTION, DAT_VLEN, DAT_PZ_HANDLE, DAT_MEM_PRIV_FLAGS, *mut DAT_LMR_HANDLE, *mut DAT_LMR_CONTEXT, *mut DAT_RMR_CONTEXT, *mut DAT_VLEN, *mut DAT_VADDR) -> DAT_RETURN>;

pub type DAT_EVD_CREATE_FUNC = Option<unsafe extern "C" fn(DAT_IA_HANDLE, DAT_COUNT, DAT_CNO_HANDLE, DAT_EVD_FLAGS, *mut DAT_EVD_HANDLE) -> DAT_RETURN>;

pub type DAT_EVD_MODIFY_CNO_FUNC = Option<unsafe extern "C" fn(DAT_EVD_HANDLE, DAT_CNO_HANDLE) -> DAT_RETURN>;

pub type DAT_CNO_CREATE_FUNC = Option<unsafe extern "C" fn(DAT_IA_HANDLE, DAT_OS_WAIT_PROXY_AGENT, *mut DAT_CNO_HANDLE) -> DAT_RETURN>;

pub type DAT_CNO_MODIFY_AGENT_FUNC = Option<unsafe extern "C" fn(DAT_CNO_HANDLE, DAT_OS_WAIT_PROXY_AGENT) -> DAT_RETURN>;

pub type DAT_CNO_QUERY_FUNC = Option<unsafe extern "C" fn(DAT_CNO_HANDLE, DAT_CNO_PARAM_MASK, *mut DAT_CNO_PARAM) -> DAT_RETURN>;

pub type DAT_CNO_FREE_FUNC = Option<unsafe extern "C" fn(DAT_CNO_HANDLE) -> DAT_RETURN>;

pub type DAT_CNO_WAIT_FUNC = Option<unsafe extern "C" fn(DAT_CNO_HANDLE, DAT_TIMEOUT, *mut DAT_EVD_HANDLE) -> DAT_RETURN>;

pub type DAT_EVD_ENABLE_FUNC = Option<unsafe extern "C" fn(DAT_EVD_HANDLE) -> DAT_RETURN>;

pub type DAT_EVD_WAIT_FUNC = Option<unsafe extern "C" fn(DAT_EVD_HANDLE, DAT_TIMEOUT, DAT_COUNT, *mut DAT_EVENT, *mut DAT_COUNT) -> DAT_RETURN>;

pub type DAT_EVD_DISABLE_FUNC = Option<unsafe extern "C" fn(DAT_EVD_HANDLE) -> DAT_RETURN>;

pub type DAT_EVD_SET_UNWAITABLE_FUNC = Option<unsafe extern "C" fn(DAT_EVD_HANDLE) -> DAT_RETURN>;

pub type DAT_EVD_CLEAR_UNWAITABLE_FUNC = Option<unsafe extern "C" fn(DAT_EVD_HANDLE) -> DAT_RETURN>;

pub type DAT_IA_OPEN_FUNC = Option<unsafe extern "C" fn(DAT_NAME_PTR, DAT_COUNT, *mut DAT_EVD_HANDLE, *mut DAT_IA_HANDLE) -> DAT_RETURN>;

pub type DAT_IA_OPENV_FUNC = Option<unsafe extern "C" fn(DAT_NAME_PTR, DAT_COUNT, *mut DAT_EVD_HANDLE, *mut DAT_IA_HANDLE, DAT_UINT32, DAT_UINT32, DAT_BOOLEAN) -> DAT_RETURN>;

pub type DAT_IA_CLOSE_FUNC = Option<unsafe extern "C" fn(DAT_IA_HANDLE, DAT_CLOSE_FLAGS) -> DAT_RETURN>;

pub type DAT_IA_QUERY_FUNC = Option<unsafe extern "C" fn(DAT_IA_HANDLE, *mut DAT_EVD_HANDLE, DAT_IA_ATTR_MASK, *mut DAT_IA_ATTR, DAT_PROVIDER_ATTR_MASK, *mut DAT_PROVIDER_ATTR) -> DAT_RETURN>;

pub type DAT_SET_CONSUMER_CONTEXT_FUNC = Option<unsafe extern "C" fn(DAT_HANDLE, DAT_CONTEXT) -> DAT_RETURN>;

pub type DAT_GET_CONSUMER_CONTEXT_FUNC = Option<unsafe extern "C" fn(DAT_HANDLE, *mut DAT_CONTEXT) -> DAT_RETURN>;

pub type DAT_GET_HANDLE_TYPE_FUNC = Option<unsafe extern "C" fn(DAT_HANDLE, *mut DAT_HANDLE_TYPE) -> DAT_RETURN>;

pub type DAT_CR_QUERY_FUNC = Option<unsafe extern "C" fn(DAT_CR_HANDLE, DAT_CR_PARAM_MASK, *mut DAT_CR_PARAM) -> DAT_RETURN>;

pub type DAT_CR_ACCEPT_FUNC = Option<unsafe extern "C" fn(DAT_CR_HANDLE, DAT_EP_HANDLE, DAT_COUNT, DAT_PVOID) -> DAT_RETURN>;

pub type DAT_CR_REJECT_FUNC = Option<unsafe extern "C" fn(DAT_CR_HANDLE) -> DAT_RETURN>;

pub type DAT_CR_HANDOFF_FUNC = Option<unsafe extern "C" fn(DAT_CR_HANDLE, DAT_CONN_QUAL) -> DAT_RETURN>;

pub type DAT_EVD_RESIZE_FUNC = Option<unsafe extern "C" fn(DAT_EVD_HANDLE, DAT_COUNT) -> DAT_RETURN>;

pub type DAT_EVD_POST_SE_FUNC = Option<unsafe extern "C" fn(DAT_EVD_HANDLE, *const DAT_EVENT) -> DAT_RETURN>;

pub type DAT_EVD_DEQUEUE_FUNC = Option<unsafe extern "C" fn(DAT_EVD_HANDLE, *mut DAT_EVENT) -> DAT_RETURN>;

pub type DAT_EVD_FREE_FUNC = Option<unsafe extern "C" fn(DAT_EVD_HANDLE) -> DAT_RETURN>;

pub type DAT_EVD_QUERY_FUNC = Option<unsafe extern "C" fn(DAT_EVD_HANDLE, DAT_EVD_PARAM_MASK, *mut DAT_EVD_PARAM) -> DAT_RETURN>;

pub type DAT_EP_CREATE_FUNC = Option<unsafe extern "C" fn(DAT_IA_HANDLE, DAT_PZ_HANDLE, DAT_EVD_HANDLE, DAT_EVD_HANDLE, DAT_EVD_HANDLE, *const DAT_EP_ATTR, *mut DAT_EP_HANDLE) -> DAT_RETURN>;

pub type DAT_EP_CREATE_WITH_SRQ_FUNC = Option<unsafe extern "C" fn(DAT_IA_HANDLE, DAT_PZ_HANDLE, DAT_EVD_HANDLE, DAT_EVD_HANDLE, DAT_EVD_HANDLE, DAT_SRQ_HANDLE, *const DAT_EP_ATTR, *mut DAT_EP_HANDLE) -> DAT_RETURN>;

pub type DAT_EP_QUERY_FUNC = Option<unsafe extern "C" fn(DAT_EP_HANDLE, DAT_EP_PARAM_MASK, *mut DAT_EP_PARAM) -> DAT_RETURN>;

pub type DAT_EP_MODIFY_FUNC = Option<unsafe extern "C" fn(DAT_EP_HANDLE, DAT_EP_PARAM_MASK, *const DAT_EP_PARAM) -> DAT_RETURN>;

pub type DAT_EP_CONNECT_FUNC = Option<unsafe extern "C" fn(DAT_EP_HANDLE, DAT_IA_ADDRESS_PTR, DAT_CONN_QUAL, DAT_TIMEOUT, DAT_COUNT, DAT_PVOID, DAT_QOS, DAT_CONNECT_FLAGS) -> DAT_RETURN>;

pub type DAT_EP_DUP_CONNECT_FUNC = Option<unsafe extern "C" fn(DAT_EP_HANDLE, DAT_EP_HANDLE, DAT_TIMEOUT, DAT_COUNT, DAT_PVOID, DAT_QOS) -> DAT_RETURN>;

pub type DAT_EP_DISCONNECT_FUNC = Option<unsafe extern "C" fn(DAT_EP_HANDLE, DAT_CLOSE_FLAGS) -> DAT_RETURN>;

pub type DAT_EP_POST_SEND_FUNC = Option<unsafe extern "C" fn(DAT_EP_HANDLE, DAT_COUNT, *mut DAT_LMR_TRIPLET, DAT_DTO_COOKIE, DAT_COMPLETION_FLAGS) -> DAT_RETURN>;

pub type DAT_EP_POST_RECV_FUNC = Option<unsafe extern "C" fn(DAT_EP_HANDLE, DAT_COUNT, *mut DAT_LMR_TRIPLET, DAT_DTO_COOKIE, DAT_COMPLETION_FLAGS) -> DAT_RETURN>;

pub type DAT_EP_POST_RDMA_READ_FUNC = Option<unsafe extern "C" fn(DAT_EP_HANDLE, DAT_COUNT, *mut DAT_LMR_TRIPLET, DAT_DTO_COOKIE, *const DAT_RMR_TRIPLET, DAT_COMPLETION_FLAGS) -> DAT_RETURN>;

pub type DAT_EP_POST_RDMA_WRITE_FUNC = Option<unsafe extern "C" fn(DAT_EP_HANDLE, DAT_COUNT, *mut DAT_LMR_TRIPLET, DAT_DTO_COOKIE, *const DAT_RMR_TRIPLET, DAT_COMPLETION_FLAGS) -> DAT_RETURN>;

pub type DAT_EP_GET_STATUS_FUNC = Option<unsafe extern "C" fn(DAT_EP_HANDLE, *mut DAT_EP_STATE, *mut DAT_BOOLEAN, *mut DAT_BOOLEAN) -> DAT_RETURN>;

pub type DAT_EP_FREE_FUNC = Option<unsafe extern "C" fn(DAT_EP_HANDLE) -> DAT_RETURN>;

pub type DAT_EP_RESET_FUNC = Option<unsafe extern "C" fn(DAT_EP_HANDLE) -> DAT_RETURN>;

pub type DAT_EP_RECV_QUERY_FUNC = Option<unsafe extern "C" fn(DAT_EP_HANDLE, *mut DAT_COUNT, *mut DAT_COUNT) -> DAT_RETURN>;

pub type DAT_EP_SET_WATERMARK_FUNC = Option<unsafe extern "C" fn(DAT_EP_HANDLE, DAT_COUNT, DAT_COUNT) -> DAT_RETURN>;

pub type DAT_LMR_FREE_FUNC = Option<unsafe extern "C" fn(DAT_LMR_HANDLE) -> DAT_RETURN>;

pub type DAT_LMR_QUERY_FUNC = Option<unsafe extern "C" fn(DAT_LMR_HANDLE, DAT_LMR_PARAM_MASK, *mut DAT_LMR_PARAM) -> DAT_RETURN>;

pub type DAT_LMR_SYNC_RDMA_READ_FUNC = Option<unsafe extern "C" fn(DAT_IA_HANDLE, *const DAT_LMR_TRIPLET, DAT_VLEN) -> DAT_RETURN>;

pub type DAT_LMR_SYNC_RDMA_WRITE_FUNC = Option<unsafe extern "C" fn(DAT_IA_HANDLE, *const DAT_LMR_TRIPLET, DAT_VLEN) -> DAT_RETURN>;

pub type DAT_RMR_CREATE_FUNC = Option<unsafe extern "C" fn(DAT_PZ_HANDLE, *mut DAT_RMR_HANDLE) -> DAT_RETURN>;

pub type DAT_RMR_QUERY_FUNC = Option<unsafe extern "C" fn(DAT_RMR_HANDLE, DAT_RMR_PARAM_MASK, *mut DAT_RMR_PARAM) -> DAT_RETURN>;

pub type DAT_RMR_BIND_FUNC = Option<unsafe extern "C" fn(DAT_RMR_HANDLE, *const DAT_LMR_TRIPLET, DAT_MEM_PRIV_FLAGS, DAT_EP_HANDLE, DAT_RMR_COOKIE, DAT_COMPLETION_FLAGS, *mut DAT_RMR_CONTEXT) -> DAT_RETURN>;

pub type DAT_RMR_FREE_FUNC = Option<unsafe extern "C" fn(DAT_RMR_HANDLE) -> DAT_RETURN>;

pub type DAT_PSP_CREATE_FUNC = Option<unsafe extern "C" fn(DAT_IA_HANDLE, DAT_CONN_QUAL, DAT_EVD_HANDLE, DAT_PSP_FLAGS, *mut DAT_PSP_HANDLE) -> DAT_RETURN>;

pub type DAT_PSP_CREATE_ANY_FUNC = Option<unsafe extern "C" fn(DAT_IA_HANDLE, *mut DAT_CONN_QUAL, DAT_EVD_HANDLE, DAT_PSP_FLAGS, *mut DAT_PSP_HANDLE) -> DAT_RETURN>;

pub type DAT_PSP_QUERY_FUNC = Option<unsafe extern "C" fn(DAT_PSP_HANDLE, DAT_PSP_PARAM_MASK, *mut DAT_PSP_PARAM) -> DAT_RETURN>;

pub type DAT_PSP_FREE_FUNC = Option<unsafe extern "C" fn(DAT_PSP_HANDLE) -> DAT_RETURN>;

pub type DAT_RSP_CREATE_FUNC = Option<unsafe extern "C" fn(DAT_IA_HANDLE, DAT_CONN_QUAL, DAT_EP_HANDLE, DAT_EVD_HANDLE, *mut DAT_RSP_HANDLE) -> DAT_RETURN>;

pub type DAT_RSP_QUERY_FUNC = Option<unsafe extern "C" fn(DAT_RSP_HANDLE, DAT_RSP_PARAM_MASK, *mut DAT_RSP_PARAM) -> DAT_RETURN>;

pub type DAT_RSP_FREE_FUNC = Option<unsafe extern "C" fn(DAT_RSP_HANDLE) -> DAT_RETURN>;

pub type DAT_PZ_CREATE_FUNC = Option<unsafe extern "C" fn(DAT_IA_HANDLE, *mut DAT_PZ_HANDLE) -> DAT_RETURN>;

pub type DAT_PZ_QUERY_FUNC = Option<unsafe extern "C" fn(DAT_PZ_HANDLE, DAT_PZ_PARAM_MASK, *mut DAT_PZ_PARAM) -> DAT_RETURN>;

pub type DAT_PZ_FREE_FUNC = Option<unsafe extern "C" fn(DAT_PZ_HANDLE) -> DAT_RETURN>;

pub type DAT_SRQ_CREATE_FUNC = Option<unsafe extern "C" fn(DAT_IA_HANDLE, DAT_PZ_HANDLE, *mut DAT_SRQ_ATTR, *mut DAT_SRQ_HANDLE) -> DAT_RETURN>;

pub type DAT_SRQ_SET_LW_FUNC = Option<unsafe extern "C" fn(DAT_SRQ_HANDLE, DAT_COUNT) -> DAT_RETURN>;

pub type DAT_SRQ_FREE_FUNC = Option<unsafe extern "C" fn(DAT_SRQ_HANDLE) -> DAT_RETURN>;

pub type DAT_SRQ_QUERY_FUNC = Option<unsafe extern "C" fn(DAT_SRQ_HANDLE, DAT_SRQ_PARAM_MASK, *mut DAT_SRQ_PARAM) -> DAT_RETURN>;

pub type DAT_SRQ_RESIZE_FUNC = Option<unsafe extern "C" fn(DAT_SRQ_HANDLE, DAT_COUNT) -> DAT_RETURN>;

pub type DAT_SRQ_POST_RECV_FUNC = Option<unsafe extern "C" fn(DAT_SRQ_HANDLE, DAT_COUNT, *mut DAT_LMR_TRIPLET, DAT_DTO_COOKIE) -> DAT_RETURN>;

#[repr(C)]
#[derive(Clone, Copy)]
pub struct DAT_PROVIDER {
    pub device_name: *const c_char,
    pub extension: DAT_PVOID,
    pub ia_open_func: DAT_IA_OPEN_FUNC,
    pub ia_query_func: DAT_IA_QUERY_FUNC,
    pub ia_close_func: DAT_IA_CLOSE_FUNC,
    pub set_consumer_context_func: DAT_SET_CONSUMER_CONTEXT_FUNC,
    pub get_consumer_context_func: DAT_GET_CONSUMER_CONTEXT_FUNC,
    pub get_handle_type_func: DAT_GET_HANDLE_TYPE_FUNC,
    pub cno_create_func: DAT_CNO_CREATE_FUNC,
    pub cno_modify_agent_func: DAT_CNO_MODIFY_AGENT_FUNC,
    pub cno_query_func: DAT_CNO_QUERY_FUNC,
    pub cno_free_func: DAT_CNO_FREE_FUNC,
    pub cno_wait_func: DAT_CNO_WAIT_FUNC,
    pub cr_query_func: DAT_CR_QUERY_FUNC,
    pub cr_accept_func: DAT_CR_ACCEPT_FUNC,
    pub cr_reject_func: DAT_CR_REJECT_FUNC,
    pub cr_handoff_func: DAT_CR_HANDOFF_FUNC,
    pub evd_create_func: DAT_EVD_CREATE_FUNC,
    pub evd_query_func: DAT_EVD_QUERY_FUNC,
    pub evd_modify_cno_func: DAT_EVD_MODIFY_CNO_FUNC,
    pub evd_enable_func: DAT_EVD_ENABLE_FUNC,
    pub evd_disable_func: DAT_EVD_DISABLE_FUNC,
    pub evd_wait_func: DAT_EVD_WAIT_FUNC,
    pub evd_resize_func: DAT_EVD_RESIZE_FUNC,
    pub evd_post_se_func: DAT_EVD_POST_SE_FUNC,
    pub evd_dequeue_func: DAT_EVD_DEQUEUE_FUNC,
    pub evd_free_func: DAT_EVD_FREE_FUNC,
    pub ep_create_func: DAT_EP_CREATE_FUNC,
    pub ep_query_func: DAT_EP_QUERY_FUNC,
    pub ep_modify_func: DAT_EP_MODIFY_FUNC,
    pub ep_connect_func: DAT_EP_CONNECT_FUNC,
    pub ep_dup_connect_func: DAT_EP_DUP_CONNECT_FUNC,
    pub ep_disconnect_func: DAT_EP_DISCONNECT_FUNC,
    pub ep_post_send_func: DAT_EP_POST_SEND_FUNC,
    pub ep_post_recv_func: DAT_EP_POST_RECV_FUNC,
    pub ep_post_rdma_read_func: DAT_EP_POST_RDMA_READ_FUNC,
    pub ep_post_rdma_write_func: DAT_EP_POST_RDMA_WRITE_FUNC,
    pub ep_get_status_func: DAT_EP_GET_STATUS_FUNC,
    pub ep_free_func: DAT_EP_FREE_FUNC,
    pub lmr_create_func: DAT_LMR_CREATE_FUNC,
    pub lmr_query_func: DAT_LMR_QUERY_FUNC,
    pub lmr_free_func: DAT_LMR_FREE_FUNC,
    pub rmr_create_func: DAT_RMR_CREATE_FUNC,
    pub rmr_query_func: DAT_RMR_QUERY_FUNC,
    pub rmr_bind_func: DAT_RMR_BIND_FUNC,
    pub rmr_free_func: DAT_RMR_FREE_FUNC,
    pub psp_create_func: DAT_PSP_CREATE_FUNC,
    pub psp_query_func: DAT_PSP_QUERY_FUNC,
    pub psp_free_func: DAT_PSP_FREE_FUNC,
    pub rsp_create_func: DAT_RSP_CREATE_FUNC,
    pub rsp_query_func: DAT_RSP_QUERY_FUNC,
    pub rsp_free_func: DAT_RSP_FREE_FUNC,
    pub pz_create_func: DAT_PZ_CREATE_FUNC,
    pub pz_query_func: DAT_PZ_QUERY_FUNC,
    pub pz_free_func: DAT_PZ_FREE_FUNC,
    pub psp_create_any_func: DAT_PSP_CREATE_ANY_FUNC,
    pub ep_reset_func: DAT_EP_RESET_FUNC,
    pub evd_set_unwaitable_func: DAT_EVD_SET_UNWAITABLE_FUNC,
    pub evd_clear_unwaitable_func: DAT_EVD_CLEAR_UNWAITABLE_FUNC,
    pub lmr_sync_rdma_read_func: DAT_LMR_SYNC_RDMA_READ_FUNC,
    pub lmr_sync_rdma_write_func: DAT_LMR_SYNC_RDMA_WRITE_FUNC,
    pub ep_create_with_srq_func: DAT_EP_CREATE_WITH_SRQ_FUNC,
    pub ep_recv_query_func: DAT_EP_RECV_QUERY_FUNC,
    pub ep_set_watermark_func: DAT_EP_SET_WATERMARK_FUNC,
    pub srq_create_func: DAT_SRQ_CREATE_FUNC,
    pub srq_free_func: DAT_SRQ_FREE_FUNC,
    pub srq_post_recv_func: DAT_SRQ_POST_RECV_FUNC,
    pub srq_query_func: DAT_SRQ_QUERY_FUNC,
    pub srq_resize_func: DAT_SRQ_RESIZE_FUNC,
    pub srq_set_lw_func: DAT_SRQ_SET_LW_FUNC,
}

