//! Types and constants of the DAT 1.2 headers (udat).
#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals, clippy::upper_case_acronyms)]

#[allow(unused_imports)]
use super::*;
#[allow(unused_imports)]
use core::ffi::*;

pub type DAT_MEM_TYPE = u32;
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum dat_mem_type {
    DAT_MEM_TYPE_VIRTUAL = 0,
    DAT_MEM_TYPE_LMR = 1,
    DAT_MEM_TYPE_SHARED_VIRTUAL = 2,
}
c_enum!(dat_mem_type: u32; DAT_MEM_TYPE_VIRTUAL, DAT_MEM_TYPE_LMR, DAT_MEM_TYPE_SHARED_VIRTUAL);

pub type DAT_HANDLE_TYPE = u32;
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum dat_handle_type {
    DAT_HANDLE_TYPE_CR = 0,
    DAT_HANDLE_TYPE_EP = 1,
    DAT_HANDLE_TYPE_EVD = 2,
    DAT_HANDLE_TYPE_IA = 3,
    DAT_HANDLE_TYPE_LMR = 4,
    DAT_HANDLE_TYPE_PSP = 5,
    DAT_HANDLE_TYPE_PZ = 6,
    DAT_HANDLE_TYPE_RMR = 7,
    DAT_HANDLE_TYPE_RSP = 8,
    DAT_HANDLE_TYPE_CNO = 9,
    DAT_HANDLE_TYPE_SRQ = 10,
}
c_enum!(dat_handle_type: u32; DAT_HANDLE_TYPE_CR, DAT_HANDLE_TYPE_EP, DAT_HANDLE_TYPE_EVD, DAT_HANDLE_TYPE_IA, DAT_HANDLE_TYPE_LMR, DAT_HANDLE_TYPE_PSP, DAT_HANDLE_TYPE_PZ, DAT_HANDLE_TYPE_RMR, DAT_HANDLE_TYPE_RSP, DAT_HANDLE_TYPE_CNO, DAT_HANDLE_TYPE_SRQ);

pub type DAT_EVD_STATE = u32;
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum dat_evd_state {
    DAT_EVD_STATE_ENABLED = 1,
    DAT_EVD_STATE_DISABLED = 2,
    DAT_EVD_STATE_WAITABLE = 4,
    DAT_EVD_STATE_UNWAITABLE = 8,
    DAT_EVD_STATE_CONFIG_NOTIFY = 16,
    DAT_EVD_STATE_CONFIG_SOLICITED = 32,
    DAT_EVD_STATE_CONFIG_THRESHOLD = 48,
}
c_enum!(dat_evd_state: u32; DAT_EVD_STATE_ENABLED, DAT_EVD_STATE_DISABLED, DAT_EVD_STATE_WAITABLE, DAT_EVD_STATE_UNWAITABLE, DAT_EVD_STATE_CONFIG_NOTIFY, DAT_EVD_STATE_CONFIG_SOLICITED, DAT_EVD_STATE_CONFIG_THRESHOLD);

pub type DAT_EVD_PARAM_MASK = u32;
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum dat_evd_param_mask {
    DAT_EVD_FIELD_IA_HANDLE = 1,
    DAT_EVD_FIELD_EVD_QLEN = 2,
    DAT_EVD_FIELD_EVD_STATE = 4,
    DAT_EVD_FIELD_CNO = 8,
    DAT_EVD_FIELD_EVD_FLAGS = 16,
    DAT_EVD_FIELD_ALL = 31,
}
c_enum!(dat_evd_param_mask: u32; DAT_EVD_FIELD_IA_HANDLE, DAT_EVD_FIELD_EVD_QLEN, DAT_EVD_FIELD_EVD_STATE, DAT_EVD_FIELD_CNO, DAT_EVD_FIELD_EVD_FLAGS, DAT_EVD_FIELD_ALL);

pub type DAT_PROVIDER_ATTR_MASK = DAT_UINT64;

pub type DAT_CNO_HANDLE = DAT_HANDLE;

#[repr(C)]
#[derive(Clone, Copy)]
pub struct DAT_EVD_PARAM {
    pub ia_handle: DAT_IA_HANDLE,
    pub evd_qlen: DAT_COUNT,
    pub evd_state: DAT_EVD_STATE,
    pub cno_handle: DAT_CNO_HANDLE,
    pub evd_flags: DAT_EVD_FLAGS,
}

pub type DAT_LMR_COOKIE = *mut [c_char; 40];

pub type DAT_AGENT_FUNC = Option<unsafe extern "C" fn(DAT_PVOID, DAT_EVD_HANDLE)>;

#[repr(C)]
#[derive(Clone, Copy)]
pub struct DAT_OS_WAIT_PROXY_AGENT {
    pub instance_data: DAT_PVOID,
    pub proxy_agent_func: DAT_AGENT_FUNC,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct DAT_SHARED_MEMORY {
    pub virtual_address: DAT_PVOID,
    pub shared_memory_id: DAT_LMR_COOKIE,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub union DAT_REGION_DESCRIPTION {
    pub for_va: DAT_PVOID,
    pub for_lmr_handle: DAT_LMR_HANDLE,
    pub for_shared_memory: DAT_SHARED_MEMORY,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct DAT_LMR_PARAM {
    pub ia_handle: DAT_IA_HANDLE,
    pub mem_type: DAT_MEM_TYPE,
    pub region_desc: DAT_REGION_DESCRIPTION,
    pub length: DAT_VLEN,
    pub pz_handle: DAT_PZ_HANDLE,
    pub mem_priv: DAT_MEM_PRIV_FLAGS,
    pub lmr_context: DAT_LMR_CONTEXT,
    pub rmr_context: DAT_RMR_CONTEXT,
    pub registered_size: DAT_VLEN,
    pub registered_address: DAT_VADDR,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct DAT_CNO_PARAM {
    pub ia_handle: DAT_IA_HANDLE,
    pub agent: DAT_OS_WAIT_PROXY_AGENT,
}

pub type DAT_CNO_PARAM_MASK = u32;
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum dat_cno_param_mask {
    DAT_CNO_FIELD_IA_HANDLE = 1,
    DAT_CNO_FIELD_AGENT = 2,
    DAT_CNO_FIELD_ALL = 3,
}
c_enum!(dat_cno_param_mask: u32; DAT_CNO_FIELD_IA_HANDLE, DAT_CNO_FIELD_AGENT, DAT_CNO_FIELD_ALL);

pub type DAT_PZ_SUPPORT = u32;
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum dat_pz_support {
    DAT_PZ_UNIQUE = 0,
    DAT_PZ_SHAREABLE = 1,
}
c_enum!(dat_pz_support: u32; DAT_PZ_UNIQUE, DAT_PZ_SHAREABLE);

#[repr(C)]
#[derive(Clone, Copy)]
pub struct DAT_PROVIDER_ATTR {
    pub provider_name: [c_char; 256],
    pub provider_version_major: DAT_UINT32,
    pub provider_version_minor: DAT_UINT32,
    pub dapl_version_major: DAT_UINT32,
    pub dapl_version_minor: DAT_UINT32,
    pub lmr_mem_types_supported: DAT_MEM_TYPE,
    pub iov_ownership_on_return: DAT_IOV_OWNERSHIP,
    pub dat_qos_supported: DAT_QOS,
    pub completion_flags_supported: DAT_COMPLETION_FLAGS,
    pub is_thread_safe: DAT_BOOLEAN,
    pub max_private_data_size: DAT_COUNT,
    pub supports_multipath: DAT_BOOLEAN,
    pub ep_creator: DAT_EP_CREATOR_FOR_PSP,
    pub pz_support: DAT_PZ_SUPPORT,
    pub optimal_buffer_alignment: DAT_UINT32,
    pub evd_stream_merging_supported: [[DAT_BOOLEAN; 6]; 6],
    pub srq_supported: DAT_BOOLEAN,
    pub srq_watermarks_supported: DAT_COUNT,
    pub srq_ep_pz_difference_supported: DAT_BOOLEAN,
    pub srq_info_supported: DAT_COUNT,
    pub ep_recv_info_supported: DAT_COUNT,
    pub lmr_sync_req: DAT_BOOLEAN,
    pub dto_async_return_guaranteed: DAT_BOOLEAN,
    pub rdma_write_for_rdma_read_req: DAT_BOOLEAN,
    pub num_provider_specific_attr: DAT_COUNT,
    pub provider_specific_attr: *mut DAT_NAMED_ATTR,
}

pub const DAT_PROVIDER_FIELD_LMR_MEM_TYPE_SUPPORTED: u64 = 32;
pub const DAT_PROVIDER_FIELD_COMPLETION_FLAGS_SUPPORTED: u64 = 0x100;
pub const DAT_PROVIDER_FIELD_EP_CREATOR: u64 = 0x1000;
pub const DAT_PROVIDER_FIELD_ALL: u64 = 0x3ffffff;
pub const DAT_PROVIDER_FIELD_LMR_SYNC_REQ: u64 = 0x200000;
pub const DAT_PROVIDER_FIELD_NUM_PROVIDER_SPECIFIC_ATTR: u64 = 0x1000000;
pub const DAT_PROVIDER_FIELD_IS_THREAD_SAFE: u64 = 0x200;
pub const DAT_LMR_COOKIE_SIZE: i32 = 40;
pub const DAT_PROVIDER_FIELD_PROVIDER_VERSION_MINOR: u64 = 4;
pub const DAT_PROVIDER_FIELD_PROVIDER_VERSION_MAJOR: u64 = 2;
pub const DAT_PROVIDER_FIELD_OPTIMAL_BUFFER_ALIGNMENT: u64 = 0x4000;
pub const DAT_PROVIDER_FIELD_DAPL_VERSION_MINOR: u64 = 16;
pub const DAT_PROVIDER_FIELD_SRQ_WATERMARKS_SUPPORTED: u64 = 0x20000;
pub const DAT_PROVIDER_FIELD_MAX_PRIVATE_DATA_SIZE: u64 = 0x400;
pub const DAT_PROVIDER_FIELD_NONE: u64 = 0;
pub const DAT_PROVIDER_FIELD_DAPL_VERSION_MAJOR: u64 = 8;
pub const DAT_PROVIDER_FIELD_SRQ_INFO_SUPPORTED: u64 = 0x80000;
pub const DAT_PROVIDER_FIELD_IOV_OWNERSHIP: u64 = 64;
pub const DAT_PROVIDER_FIELD_DTO_ASYNC_RETURN_GUARANTEED: u64 = 0x400000;
pub const DAT_PROVIDER_FIELD_PROVIDER_SPECIFIC_ATTR: u64 = 0x2000000;
pub const DAT_PROVIDER_FIELD_EP_RECV_INFO_SUPPORTED: u64 = 0x100000;
pub const DAT_PROVIDER_FIELD_PZ_SUPPORT: u64 = 0x2000;
pub const DAT_PROVIDER_FIELD_SRQ_SUPPORTED: u64 = 0x10000;
pub const DAT_PROVIDER_FIELD_SUPPORTS_MULTIPATH: u64 = 0x800;
pub const DAT_PROVIDER_FIELD_PROVIDER_NAME: u64 = 1;
pub const DAT_PROVIDER_FIELD_SRQ_EP_PZ_DIFFERENCE_SUPPORTED: u64 = 0x40000;
pub const DAT_PROVIDER_FIELD_EVD_STREAM_MERGING_SUPPORTED: u64 = 0x8000;
pub const DAT_PROVIDER_FIELD_RDMA_WRITE_FOR_RDMA_READ_REQ: u64 = 0x800000;
pub const DAT_PROVIDER_FIELD_DAT_QOS_SUPPORTED: u64 = 128;
