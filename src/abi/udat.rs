//! Types and constants of the DAT 2.0 headers (udat).
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
    DAT_HANDLE_TYPE_CSP = 11,
    DAT_HANDLE_TYPE_EXTENSION_BASE = 12,
}
c_enum!(dat_handle_type: u32; DAT_HANDLE_TYPE_CR, DAT_HANDLE_TYPE_EP, DAT_HANDLE_TYPE_EVD, DAT_HANDLE_TYPE_IA, DAT_HANDLE_TYPE_LMR, DAT_HANDLE_TYPE_PSP, DAT_HANDLE_TYPE_PZ, DAT_HANDLE_TYPE_RMR, DAT_HANDLE_TYPE_RSP, DAT_HANDLE_TYPE_CNO, DAT_HANDLE_TYPE_SRQ, DAT_HANDLE_TYPE_CSP, DAT_HANDLE_TYPE_EXTENSION_BASE);

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

pub type DAT_LMR_PARAM_MASK = u32;
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum dat_lmr_param_mask {
    DAT_LMR_FIELD_IA_HANDLE = 1,
    DAT_LMR_FIELD_MEM_TYPE = 2,
    DAT_LMR_FIELD_REGION_DESC = 4,
    DAT_LMR_FIELD_LENGTH = 8,
    DAT_LMR_FIELD_PZ_HANDLE = 16,
    DAT_LMR_FIELD_MEM_PRIV = 32,
    DAT_LMR_FIELD_VA_TYPE = 64,
    DAT_LMR_FIELD_LMR_CONTEXT = 128,
    DAT_LMR_FIELD_RMR_CONTEXT = 0x100,
    DAT_LMR_FIELD_REGISTERED_SIZE = 0x200,
    DAT_LMR_FIELD_REGISTERED_ADDRESS = 0x400,
    DAT_LMR_FIELD_ALL = 0x7ff,
}
c_enum!(dat_lmr_param_mask: u32; DAT_LMR_FIELD_IA_HANDLE, DAT_LMR_FIELD_MEM_TYPE, DAT_LMR_FIELD_REGION_DESC, DAT_LMR_FIELD_LENGTH, DAT_LMR_FIELD_PZ_HANDLE, DAT_LMR_FIELD_MEM_PRIV, DAT_LMR_FIELD_VA_TYPE, DAT_LMR_FIELD_LMR_CONTEXT, DAT_LMR_FIELD_RMR_CONTEXT, DAT_LMR_FIELD_REGISTERED_SIZE, DAT_LMR_FIELD_REGISTERED_ADDRESS, DAT_LMR_FIELD_ALL);

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
    pub va_type: DAT_VA_TYPE,
    pub lmr_context: DAT_LMR_CONTEXT,
    pub rmr_context: DAT_RMR_CONTEXT,
    pub registered_size: DAT_VLEN,
    pub registered_address: DAT_VADDR,
}

pub type DAT_PROXY_TYPE = u32;
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum dat_proxy_type {
    DAT_PROXY_TYPE_NONE = 0,
    DAT_PROXY_TYPE_AGENT = 1,
    DAT_PROXY_TYPE_FD = 2,
}
c_enum!(dat_proxy_type: u32; DAT_PROXY_TYPE_NONE, DAT_PROXY_TYPE_AGENT, DAT_PROXY_TYPE_FD);

#[repr(C)]
#[derive(Clone, Copy)]
pub union libdat_DAT_CNO_PARAM_proxy {
    pub agent: DAT_OS_WAIT_PROXY_AGENT,
    pub fd: DAT_FD,
    pub none: DAT_PVOID,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct DAT_CNO_PARAM {
    pub ia_handle: DAT_IA_HANDLE,
    pub proxy_type: DAT_PROXY_TYPE,
    pub proxy: libdat_DAT_CNO_PARAM_proxy,
}

pub type DAT_CNO_PARAM_MASK = u32;
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum dat_cno_param_mask {
    DAT_CNO_FIELD_IA_HANDLE = 1,
    DAT_CNO_FIELD_PROXY_TYPE = 2,
    DAT_CNO_FIELD_PROXY = 3,
    DAT_CNO_FIELD_ALL = 4,
}
c_enum!(dat_cno_param_mask: u32; DAT_CNO_FIELD_IA_HANDLE, DAT_CNO_FIELD_PROXY_TYPE, DAT_CNO_FIELD_PROXY, DAT_CNO_FIELD_ALL);

#[repr(C)]
#[derive(Clone, Copy)]
pub struct DAT_IA_ATTR {
    pub adapter_name: [c_char; 256],
    pub vendor_name: [c_char; 256],
    pub hardware_version_major: DAT_UINT32,
    pub hardware_version_minor: DAT_UINT32,
    pub firmware_version_major: DAT_UINT32,
    pub firmware_version_minor: DAT_UINT32,
    pub ia_address_ptr: DAT_IA_ADDRESS_PTR,
    pub max_eps: DAT_COUNT,
    pub max_dto_per_ep: DAT_COUNT,
    pub max_rdma_read_per_ep_in: DAT_COUNT,
    pub max_rdma_read_per_ep_out: DAT_COUNT,
    pub max_evds: DAT_COUNT,
    pub max_evd_qlen: DAT_COUNT,
    pub max_iov_segments_per_dto: DAT_COUNT,
    pub max_lmrs: DAT_COUNT,
    pub max_lmr_block_size: DAT_SEG_LENGTH,
    pub max_lmr_virtual_address: DAT_VADDR,
    pub max_pzs: DAT_COUNT,
    pub max_message_size: DAT_SEG_LENGTH,
    pub max_rdma_size: DAT_SEG_LENGTH,
    pub max_rmrs: DAT_COUNT,
    pub max_rmr_target_address: DAT_VADDR,
    pub max_srqs: DAT_COUNT,
    pub max_ep_per_srq: DAT_COUNT,
    pub max_recv_per_srq: DAT_COUNT,
    pub max_iov_segments_per_rdma_read: DAT_COUNT,
    pub max_iov_segments_per_rdma_write: DAT_COUNT,
    pub max_rdma_read_in: DAT_COUNT,
    pub max_rdma_read_out: DAT_COUNT,
    pub max_rdma_read_per_ep_in_guaranteed: DAT_BOOLEAN,
    pub max_rdma_read_per_ep_out_guaranteed: DAT_BOOLEAN,
    pub zb_supported: DAT_BOOLEAN,
    pub extension_supported: DAT_EXTENSION,
    pub extension_version: DAT_COUNT,
    pub num_transport_attr: DAT_COUNT,
    pub transport_attr: *mut DAT_NAMED_ATTR,
    pub num_vendor_attr: DAT_COUNT,
    pub vendor_attr: *mut DAT_NAMED_ATTR,
}

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
    pub rdma_read_lmr_rmr_context_exposure: DAT_BOOLEAN,
    pub rmr_scope_supported: DAT_RMR_SCOPE,
    pub is_signal_safe: DAT_BOOLEAN,
    pub ha_supported: DAT_BOOLEAN,
    pub ha_loadbalancing: DAT_HA_LB,
    pub num_provider_specific_attr: DAT_COUNT,
    pub provider_specific_attr: *mut DAT_NAMED_ATTR,
}

pub const DAT_PROVIDER_FIELD_LMR_MEM_TYPE_SUPPORTED: u64 = 32;
pub const DAT_PROVIDER_FIELD_COMPLETION_FLAGS_SUPPORTED: u64 = 0x100;
pub const DAT_PROVIDER_FIELD_EP_CREATOR: u64 = 0x1000;
pub const DAT_PROVIDER_FIELD_ALL: u64 = 0x7fffffff;
pub const DAT_PROVIDER_FIELD_LMR_SYNC_REQ: u64 = 0x200000;
pub const DAT_IA_FIELD_IA_NUM_TRANSPORT_ATTR: u64 = 0x400000000;
pub const DAT_PROVIDER_FIELD_NUM_PROVIDER_SPECIFIC_ATTR: u64 = 0x20000000;
pub const DAT_PROVIDER_FIELD_IS_THREAD_SAFE: u64 = 0x200;
pub const DAT_IA_FIELD_IA_NUM_VENDOR_ATTR: u64 = 0x1000000000;
pub const DAT_LMR_COOKIE_SIZE: i32 = 40;
pub const DAT_PROVIDER_FIELD_RDMA_READ_LMR_RMR_CONTEXT_EXPOSURE: u64 = 0x1000000;
pub const DAT_IA_FIELD_IA_VENDOR_ATTR: u64 = 0x2000000000;
pub const DAT_PROVIDER_FIELD_PROVIDER_VERSION_MINOR: u64 = 4;
pub const DAT_PROVIDER_FIELD_IS_SIGNAL_SAFE: u64 = 0x4000000;
pub const DAT_PROVIDER_FIELD_PROVIDER_VERSION_MAJOR: u64 = 2;
pub const DAT_PROVIDER_FIELD_HA_SUPPORTED: u64 = 0x8000000;
pub const DAT_IA_FIELD_IA_EXTENSION: u64 = 0x100000000;
pub const DAT_PROVIDER_FIELD_OPTIMAL_BUFFER_ALIGNMENT: u64 = 0x4000;
pub const DAT_PROVIDER_FIELD_DAPL_VERSION_MINOR: u64 = 16;
pub const DAT_PROVIDER_FIELD_SRQ_WATERMARKS_SUPPORTED: u64 = 0x20000;
pub const DAT_PROVIDER_FIELD_MAX_PRIVATE_DATA_SIZE: u64 = 0x400;
pub const DAT_PROVIDER_FIELD_NONE: u64 = 0;
pub const DAT_PROVIDER_FIELD_DAPL_VERSION_MAJOR: u64 = 8;
pub const DAT_PROVIDER_FIELD_SRQ_INFO_SUPPORTED: u64 = 0x80000;
pub const DAT_PROVIDER_FIELD_HA_LB: u64 = 0x10000000;
pub const DAT_PROVIDER_FIELD_IOV_OWNERSHIP: u64 = 64;
pub const DAT_PROVIDER_FIELD_DTO_ASYNC_RETURN_GUARANTEED: u64 = 0x400000;
pub const DAT_PROVIDER_FIELD_PROVIDER_SPECIFIC_ATTR: u64 = 0x40000000;
pub const DAT_PROVIDER_FIELD_EP_RECV_INFO_SUPPORTED: u64 = 0x100000;
pub const DAT_PROVIDER_FIELD_RMR_SCOPE_SUPPORTED: u64 = 0x2000000;
pub const DAT_IA_FIELD_IA_EXTENSION_VERSION: u64 = 0x200000000;
pub const DAT_PROVIDER_FIELD_PZ_SUPPORT: u64 = 0x2000;
pub const DAT_PROVIDER_FIELD_SRQ_SUPPORTED: u64 = 0x10000;
pub const DAT_PROVIDER_FIELD_SUPPORTS_MULTIPATH: u64 = 0x800;
pub const DAT_PROVIDER_FIELD_PROVIDER_NAME: u64 = 1;
pub const DAT_IA_FIELD_ALL: u64 = 0x3fffffffff;
pub const DAT_IA_FIELD_IA_TRANSPORT_ATTR: u64 = 0x800000000;
pub const DAT_PROVIDER_FIELD_SRQ_EP_PZ_DIFFERENCE_SUPPORTED: u64 = 0x40000;
pub const DAT_PROVIDER_FIELD_EVD_STREAM_MERGING_SUPPORTED: u64 = 0x8000;
pub const DAT_PROVIDER_FIELD_RDMA_WRITE_FOR_RDMA_READ_REQ: u64 = 0x800000;
pub const DAT_PROVIDER_FIELD_DAT_QOS_SUPPORTED: u64 = 128;
