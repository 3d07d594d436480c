//! Types and constants of the DAT 1.2 headers (dat).
#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals, clippy::upper_case_acronyms)]

#[allow(unused_imports)]
use super::*;
#[allow(unused_imports)]
use core::ffi::*;

pub type DAT_NAME_PTR = *mut c_char;

#[repr(C)]
#[derive(Clone, Copy)]
pub struct DAT_NAMED_ATTR {
    pub name: *const c_char,
    pub value: *const c_char,
}

pub type DAT_BOOLEAN = u32;
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum dat_boolean {
    DAT_FALSE = 0,
    DAT_TRUE = 1,
}
c_enum!(dat_boolean: u32; DAT_FALSE, DAT_TRUE);

#[repr(C)]
#[derive(Clone, Copy)]
pub union DAT_CONTEXT {
    pub as_ptr: DAT_PVOID,
    pub as_64: DAT_UINT64,
    pub as_index: DAT_UVERYLONG,
}

pub type DAT_DTO_COOKIE = DAT_CONTEXT;

pub type DAT_RMR_COOKIE = DAT_CONTEXT;

pub type DAT_COMPLETION_FLAGS = u32;
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum dat_completion_flags {
    DAT_COMPLETION_DEFAULT_FLAG = 0,
    DAT_COMPLETION_SUPPRESS_FLAG = 1,
    DAT_COMPLETION_SOLICITED_WAIT_FLAG = 2,
    DAT_COMPLETION_UNSIGNALLED_FLAG = 4,
    DAT_COMPLETION_BARRIER_FENCE_FLAG = 8,
    DAT_COMPLETION_EVD_THRESHOLD_FLAG = 16,
}
c_enum!(dat_completion_flags: u32; DAT_COMPLETION_DEFAULT_FLAG, DAT_COMPLETION_SUPPRESS_FLAG, DAT_COMPLETION_SOLICITED_WAIT_FLAG, DAT_COMPLETION_UNSIGNALLED_FLAG, DAT_COMPLETION_BARRIER_FENCE_FLAG, DAT_COMPLETION_EVD_THRESHOLD_FLAG);

pub type DAT_TIMEOUT = DAT_UINT32;

pub type DAT_HANDLE = DAT_PVOID;

pub type DAT_CR_HANDLE = DAT_HANDLE;

pub type DAT_EP_HANDLE = DAT_HANDLE;

pub type DAT_EVD_HANDLE = DAT_HANDLE;

pub type DAT_IA_HANDLE = DAT_HANDLE;

pub type DAT_LMR_HANDLE = DAT_HANDLE;

pub type DAT_PSP_HANDLE = DAT_HANDLE;

pub type DAT_PZ_HANDLE = DAT_HANDLE;

pub type DAT_RMR_HANDLE = DAT_HANDLE;

pub type DAT_RSP_HANDLE = DAT_HANDLE;

pub type DAT_SRQ_HANDLE = DAT_HANDLE;

pub type DAT_IA_ADDRESS_PTR = *mut DAT_SOCK_ADDR;

pub type DAT_CONN_QUAL = DAT_UINT64;

pub type DAT_PORT_QUAL = DAT_UINT64;

pub type DAT_QOS = u32;
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum dat_qos {
    DAT_QOS_BEST_EFFORT = 0,
    DAT_QOS_HIGH_THROUGHPUT = 1,
    DAT_QOS_LOW_LATENCY = 2,
    DAT_QOS_ECONOMY = 4,
    DAT_QOS_PREMIUM = 8,
}
c_enum!(dat_qos: u32; DAT_QOS_BEST_EFFORT, DAT_QOS_HIGH_THROUGHPUT, DAT_QOS_LOW_LATENCY, DAT_QOS_ECONOMY, DAT_QOS_PREMIUM);

pub type DAT_CONNECT_FLAGS = u32;
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum dat_connect_flags {
    DAT_CONNECT_DEFAULT_FLAG = 0,
    DAT_CONNECT_MULTIPATH_FLAG = 1,
}
c_enum!(dat_connect_flags: u32; DAT_CONNECT_DEFAULT_FLAG, DAT_CONNECT_MULTIPATH_FLAG);

pub type DAT_CLOSE_FLAGS = u32;
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum dat_close_flags {
    DAT_CLOSE_ABRUPT_FLAG = 0,
    DAT_CLOSE_GRACEFUL_FLAG = 1,
}
c_enum!(dat_close_flags: u32; DAT_CLOSE_ABRUPT_FLAG, DAT_CLOSE_GRACEFUL_FLAG);

pub type DAT_EVD_FLAGS = u32;
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum dat_evd_flags {
    DAT_EVD_SOFTWARE_FLAG = 1,
    DAT_EVD_CR_FLAG = 16,
    DAT_EVD_DTO_FLAG = 32,
    DAT_EVD_CONNECTION_FLAG = 64,
    DAT_EVD_RMR_BIND_FLAG = 128,
    DAT_EVD_ASYNC_FLAG = 0x100,
    DAT_EVD_DEFAULT_FLAG = 0x1f0,
}
c_enum!(dat_evd_flags: u32; DAT_EVD_SOFTWARE_FLAG, DAT_EVD_CR_FLAG, DAT_EVD_DTO_FLAG, DAT_EVD_CONNECTION_FLAG, DAT_EVD_RMR_BIND_FLAG, DAT_EVD_ASYNC_FLAG, DAT_EVD_DEFAULT_FLAG);

pub type DAT_PSP_FLAGS = u32;
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum dat_psp_flags {
    DAT_PSP_CONSUMER_FLAG = 0,
    DAT_PSP_PROVIDER_FLAG = 1,
}
c_enum!(dat_psp_flags: u32; DAT_PSP_CONSUMER_FLAG, DAT_PSP_PROVIDER_FLAG);

pub type DAT_LMR_CONTEXT = DAT_UINT32;

pub type DAT_RMR_CONTEXT = DAT_UINT32;

pub type DAT_VLEN = DAT_UINT64;

pub type DAT_VADDR = DAT_UINT64;

#[repr(C)]
#[derive(Clone, Copy)]
pub struct DAT_LMR_TRIPLET {
    pub lmr_context: DAT_LMR_CONTEXT,
    pub pad: DAT_UINT32,
    pub virtual_address: DAT_VADDR,
    pub segment_length: DAT_VLEN,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct DAT_RMR_TRIPLET {
    pub rmr_context: DAT_RMR_CONTEXT,
    pub pad: DAT_UINT32,
    pub target_address: DAT_VADDR,
    pub segment_length: DAT_VLEN,
}

pub type DAT_MEM_PRIV_FLAGS = u32;
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum dat_mem_priv_flags {
    DAT_MEM_PRIV_NONE_FLAG = 0,
    DAT_MEM_PRIV_LOCAL_READ_FLAG = 1,
    DAT_MEM_PRIV_REMOTE_READ_FLAG = 2,
    DAT_MEM_PRIV_LOCAL_WRITE_FLAG = 16,
    DAT_MEM_PRIV_REMOTE_WRITE_FLAG = 32,
    DAT_MEM_PRIV_ALL_FLAG = 51,
}
c_enum!(dat_mem_priv_flags: u32; DAT_MEM_PRIV_NONE_FLAG, DAT_MEM_PRIV_LOCAL_READ_FLAG, DAT_MEM_PRIV_REMOTE_READ_FLAG, DAT_MEM_PRIV_LOCAL_WRITE_FLAG, DAT_MEM_PRIV_REMOTE_WRITE_FLAG, DAT_MEM_PRIV_ALL_FLAG);

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
    DAT_LMR_FIELD_LMR_CONTEXT = 64,
    DAT_LMR_FIELD_RMR_CONTEXT = 128,
    DAT_LMR_FIELD_REGISTERED_SIZE = 0x100,
    DAT_LMR_FIELD_REGISTERED_ADDRESS = 0x200,
    DAT_LMR_FIELD_ALL = 0x3ff,
}
c_enum!(dat_lmr_param_mask: u32; DAT_LMR_FIELD_IA_HANDLE, DAT_LMR_FIELD_MEM_TYPE, DAT_LMR_FIELD_REGION_DESC, DAT_LMR_FIELD_LENGTH, DAT_LMR_FIELD_PZ_HANDLE, DAT_LMR_FIELD_MEM_PRIV, DAT_LMR_FIELD_LMR_CONTEXT, DAT_LMR_FIELD_RMR_CONTEXT, DAT_LMR_FIELD_REGISTERED_SIZE, DAT_LMR_FIELD_REGISTERED_ADDRESS, DAT_LMR_FIELD_ALL);

#[repr(C)]
#[derive(Clone, Copy)]
pub struct DAT_RMR_PARAM {
    pub ia_handle: DAT_IA_HANDLE,
    pub pz_handle: DAT_PZ_HANDLE,
    pub lmr_triplet: DAT_LMR_TRIPLET,
    pub mem_priv: DAT_MEM_PRIV_FLAGS,
    pub rmr_context: DAT_RMR_CONTEXT,
}

pub type DAT_RMR_PARAM_MASK = u32;
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum dat_rmr_param_mask {
    DAT_RMR_FIELD_IA_HANDLE = 1,
    DAT_RMR_FIELD_PZ_HANDLE = 2,
    DAT_RMR_FIELD_LMR_TRIPLET = 4,
    DAT_RMR_FIELD_MEM_PRIV = 8,
    DAT_RMR_FIELD_RMR_CONTEXT = 16,
    DAT_RMR_FIELD_ALL = 31,
}
c_enum!(dat_rmr_param_mask: u32; DAT_RMR_FIELD_IA_HANDLE, DAT_RMR_FIELD_PZ_HANDLE, DAT_RMR_FIELD_LMR_TRIPLET, DAT_RMR_FIELD_MEM_PRIV, DAT_RMR_FIELD_RMR_CONTEXT, DAT_RMR_FIELD_ALL);

pub type DAT_IOV_OWNERSHIP = u32;
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum dat_iov_ownership {
    DAT_IOV_CONSUMER = 0,
    DAT_IOV_PROVIDER_NOMOD = 1,
    DAT_IOV_PROVIDER_MOD = 2,
}
c_enum!(dat_iov_ownership: u32; DAT_IOV_CONSUMER, DAT_IOV_PROVIDER_NOMOD, DAT_IOV_PROVIDER_MOD);

pub type DAT_EP_CREATOR_FOR_PSP = u32;
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum dat_ep_creator_for_psp {
    DAT_PSP_CREATES_EP_NEVER = 0,
    DAT_PSP_CREATES_EP_IFASKED = 1,
    DAT_PSP_CREATES_EP_ALWAYS = 2,
}
c_enum!(dat_ep_creator_for_psp: u32; DAT_PSP_CREATES_EP_NEVER, DAT_PSP_CREATES_EP_IFASKED, DAT_PSP_CREATES_EP_ALWAYS);

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
    pub max_lmr_block_size: DAT_VLEN,
    pub max_lmr_virtual_address: DAT_VADDR,
    pub max_pzs: DAT_COUNT,
    pub max_message_size: DAT_VLEN,
    pub max_rdma_size: DAT_VLEN,
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
    pub num_transport_attr: DAT_COUNT,
    pub transport_attr: *mut DAT_NAMED_ATTR,
    pub num_vendor_attr: DAT_COUNT,
    pub vendor_attr: *mut DAT_NAMED_ATTR,
}

pub type DAT_IA_ATTR_MASK = DAT_UINT64;

pub type DAT_SERVICE_TYPE = u32;
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum dat_service_type {
    DAT_SERVICE_TYPE_RC = 0,
}
c_enum!(dat_service_type: u32; DAT_SERVICE_TYPE_RC);

#[repr(C)]
#[derive(Clone, Copy)]
pub struct DAT_EP_ATTR {
    pub service_type: DAT_SERVICE_TYPE,
    pub max_message_size: DAT_VLEN,
    pub max_rdma_size: DAT_VLEN,
    pub qos: DAT_QOS,
    pub recv_completion_flags: DAT_COMPLETION_FLAGS,
    pub request_completion_flags: DAT_COMPLETION_FLAGS,
    pub max_recv_dtos: DAT_COUNT,
    pub max_request_dtos: DAT_COUNT,
    pub max_recv_iov: DAT_COUNT,
    pub max_request_iov: DAT_COUNT,
    pub max_rdma_read_in: DAT_COUNT,
    pub max_rdma_read_out: DAT_COUNT,
    pub srq_soft_hw: DAT_COUNT,
    pub max_rdma_read_iov: DAT_COUNT,
    pub max_rdma_write_iov: DAT_COUNT,
    pub ep_transport_specific_count: DAT_COUNT,
    pub ep_transport_specific: *mut DAT_NAMED_ATTR,
    pub ep_provider_specific_count: DAT_COUNT,
    pub ep_provider_specific: *mut DAT_NAMED_ATTR,
}

pub type DAT_EP_STATE = u32;
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum dat_ep_state {
    DAT_EP_STATE_UNCONNECTED = 0,
    DAT_EP_STATE_UNCONFIGURED_UNCONNECTED = 1,
    DAT_EP_STATE_RESERVED = 2,
    DAT_EP_STATE_UNCONFIGURED_RESERVED = 3,
    DAT_EP_STATE_PASSIVE_CONNECTION_PENDING = 4,
    DAT_EP_STATE_UNCONFIGURED_PASSIVE = 5,
    DAT_EP_STATE_ACTIVE_CONNECTION_PENDING = 6,
    DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING = 7,
    DAT_EP_STATE_UNCONFIGURED_TENTATIVE = 8,
    DAT_EP_STATE_CONNECTED = 9,
    DAT_EP_STATE_DISCONNECT_PENDING = 10,
    DAT_EP_STATE_DISCONNECTED = 11,
    DAT_EP_STATE_COMPLETION_PENDING = 12,
}
c_enum!(dat_ep_state: u32; DAT_EP_STATE_UNCONNECTED, DAT_EP_STATE_UNCONFIGURED_UNCONNECTED, DAT_EP_STATE_RESERVED, DAT_EP_STATE_UNCONFIGURED_RESERVED, DAT_EP_STATE_PASSIVE_CONNECTION_PENDING, DAT_EP_STATE_UNCONFIGURED_PASSIVE, DAT_EP_STATE_ACTIVE_CONNECTION_PENDING, DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING, DAT_EP_STATE_UNCONFIGURED_TENTATIVE, DAT_EP_STATE_CONNECTED, DAT_EP_STATE_DISCONNECT_PENDING, DAT_EP_STATE_DISCONNECTED, DAT_EP_STATE_COMPLETION_PENDING);

#[repr(C)]
#[derive(Clone, Copy)]
pub struct DAT_EP_PARAM {
    pub ia_handle: DAT_IA_HANDLE,
    pub ep_state: DAT_EP_STATE,
    pub local_ia_address_ptr: DAT_IA_ADDRESS_PTR,
    pub local_port_qual: DAT_PORT_QUAL,
    pub remote_ia_address_ptr: DAT_IA_ADDRESS_PTR,
    pub remote_port_qual: DAT_PORT_QUAL,
    pub pz_handle: DAT_PZ_HANDLE,
    pub recv_evd_handle: DAT_EVD_HANDLE,
    pub request_evd_handle: DAT_EVD_HANDLE,
    pub connect_evd_handle: DAT_EVD_HANDLE,
    pub srq_handle: DAT_SRQ_HANDLE,
    pub ep_attr: DAT_EP_ATTR,
}

pub type DAT_EP_PARAM_MASK = DAT_UINT64;

pub type DAT_SRQ_STATE = u32;
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum dat_srq_state {
    DAT_SRQ_STATE_OPERATIONAL = 0,
    DAT_SRQ_STATE_ERROR = 1,
}
c_enum!(dat_srq_state: u32; DAT_SRQ_STATE_OPERATIONAL, DAT_SRQ_STATE_ERROR);

#[repr(C)]
#[derive(Clone, Copy)]
pub struct DAT_SRQ_ATTR {
    pub max_recv_dtos: DAT_COUNT,
    pub max_recv_iov: DAT_COUNT,
    pub low_watermark: DAT_COUNT,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct DAT_SRQ_PARAM {
    pub ia_handle: DAT_IA_HANDLE,
    pub srq_state: DAT_SRQ_STATE,
    pub pz_handle: DAT_PZ_HANDLE,
    pub max_recv_dtos: DAT_COUNT,
    pub max_recv_iov: DAT_COUNT,
    pub low_watermark: DAT_COUNT,
    pub available_dto_count: DAT_COUNT,
    pub outstanding_dto_count: DAT_COUNT,
}

pub type DAT_SRQ_PARAM_MASK = u32;
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum dat_srq_param_mask {
    DAT_SRQ_FIELD_IA_HANDLE = 1,
    DAT_SRQ_FIELD_SRQ_STATE = 2,
    DAT_SRQ_FIELD_PZ_HANDLE = 4,
    DAT_SRQ_FIELD_MAX_RECV_DTO = 8,
    DAT_SRQ_FIELD_MAX_RECV_IOV = 16,
    DAT_SRQ_FIELD_LOW_WATERMARK = 32,
    DAT_SRQ_FIELD_AVAILABLE_DTO_COUNT = 64,
    DAT_SRQ_FIELD_OUTSTANDING_DTO_COUNT = 128,
    DAT_SRQ_FIELD_ALL = 255,
}
c_enum!(dat_srq_param_mask: u32; DAT_SRQ_FIELD_IA_HANDLE, DAT_SRQ_FIELD_SRQ_STATE, DAT_SRQ_FIELD_PZ_HANDLE, DAT_SRQ_FIELD_MAX_RECV_DTO, DAT_SRQ_FIELD_MAX_RECV_IOV, DAT_SRQ_FIELD_LOW_WATERMARK, DAT_SRQ_FIELD_AVAILABLE_DTO_COUNT, DAT_SRQ_FIELD_OUTSTANDING_DTO_COUNT, DAT_SRQ_FIELD_ALL);

#[repr(C)]
#[derive(Clone, Copy)]
pub struct DAT_PZ_PARAM {
    pub ia_handle: DAT_IA_HANDLE,
}

pub type DAT_PZ_PARAM_MASK = u32;
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum dat_pz_param_mask {
    DAT_PZ_FIELD_IA_HANDLE = 1,
}
c_enum!(dat_pz_param_mask: u32; DAT_PZ_FIELD_IA_HANDLE);
pub const DAT_PZ_FIELD_ALL: u32 = dat_pz_param_mask::DAT_PZ_FIELD_IA_HANDLE as u32;

#[repr(C)]
#[derive(Clone, Copy)]
pub struct DAT_PSP_PARAM {
    pub ia_handle: DAT_IA_HANDLE,
    pub conn_qual: DAT_CONN_QUAL,
    pub evd_handle: DAT_EVD_HANDLE,
    pub psp_flags: DAT_PSP_FLAGS,
}

pub type DAT_PSP_PARAM_MASK = u32;
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum dat_psp_param_mask {
    DAT_PSP_FIELD_IA_HANDLE = 1,
    DAT_PSP_FIELD_CONN_QUAL = 2,
    DAT_PSP_FIELD_EVD_HANDLE = 4,
    DAT_PSP_FIELD_PSP_FLAGS = 8,
    DAT_PSP_FIELD_ALL = 15,
}
c_enum!(dat_psp_param_mask: u32; DAT_PSP_FIELD_IA_HANDLE, DAT_PSP_FIELD_CONN_QUAL, DAT_PSP_FIELD_EVD_HANDLE, DAT_PSP_FIELD_PSP_FLAGS, DAT_PSP_FIELD_ALL);

#[repr(C)]
#[derive(Clone, Copy)]
pub struct DAT_RSP_PARAM {
    pub ia_handle: DAT_IA_HANDLE,
    pub conn_qual: DAT_CONN_QUAL,
    pub evd_handle: DAT_EVD_HANDLE,
    pub ep_handle: DAT_EP_HANDLE,
}

pub type DAT_RSP_PARAM_MASK = u32;
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum dat_rsp_param_mask {
    DAT_RSP_FIELD_IA_HANDLE = 1,
    DAT_RSP_FIELD_CONN_QUAL = 2,
    DAT_RSP_FIELD_EVD_HANDLE = 4,
    DAT_RSP_FIELD_EP_HANDLE = 8,
    DAT_RSP_FIELD_ALL = 15,
}
c_enum!(dat_rsp_param_mask: u32; DAT_RSP_FIELD_IA_HANDLE, DAT_RSP_FIELD_CONN_QUAL, DAT_RSP_FIELD_EVD_HANDLE, DAT_RSP_FIELD_EP_HANDLE, DAT_RSP_FIELD_ALL);

#[repr(C)]
#[derive(Clone, Copy)]
pub struct DAT_CR_PARAM {
    pub remote_ia_address_ptr: DAT_IA_ADDRESS_PTR,
    pub remote_port_qual: DAT_PORT_QUAL,
    pub private_data_size: DAT_COUNT,
    pub private_data: DAT_PVOID,
    pub local_ep_handle: DAT_EP_HANDLE,
}

pub type DAT_CR_PARAM_MASK = u32;
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum dat_cr_param_mask {
    DAT_CR_FIELD_REMOTE_IA_ADDRESS_PTR = 1,
    DAT_CR_FIELD_REMOTE_PORT_QUAL = 2,
    DAT_CR_FIELD_PRIVATE_DATA_SIZE = 4,
    DAT_CR_FIELD_PRIVATE_DATA = 8,
    DAT_CR_FIELD_LOCAL_EP_HANDLE = 16,
    DAT_CR_FIELD_ALL = 31,
}
c_enum!(dat_cr_param_mask: u32; DAT_CR_FIELD_REMOTE_IA_ADDRESS_PTR, DAT_CR_FIELD_REMOTE_PORT_QUAL, DAT_CR_FIELD_PRIVATE_DATA_SIZE, DAT_CR_FIELD_PRIVATE_DATA, DAT_CR_FIELD_LOCAL_EP_HANDLE, DAT_CR_FIELD_ALL);

pub type DAT_DTO_COMPLETION_STATUS = u32;
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum dat_dto_completion_status {
    DAT_DTO_SUCCESS = 0,
    DAT_DTO_ERR_FLUSHED = 1,
    DAT_DTO_ERR_LOCAL_LENGTH = 2,
    DAT_DTO_ERR_LOCAL_EP = 3,
    DAT_DTO_ERR_LOCAL_PROTECTION = 4,
    DAT_DTO_ERR_BAD_RESPONSE = 5,
    DAT_DTO_ERR_REMOTE_ACCESS = 6,
    DAT_DTO_ERR_REMOTE_RESPONDER = 7,
    DAT_DTO_ERR_TRANSPORT = 8,
    DAT_DTO_ERR_RECEIVER_NOT_READY = 9,
    DAT_DTO_ERR_PARTIAL_PACKET = 10,
    DAT_RMR_OPERATION_FAILED = 11,
}
c_enum!(dat_dto_completion_status: u32; DAT_DTO_SUCCESS, DAT_DTO_ERR_FLUSHED, DAT_DTO_ERR_LOCAL_LENGTH, DAT_DTO_ERR_LOCAL_EP, DAT_DTO_ERR_LOCAL_PROTECTION, DAT_DTO_ERR_BAD_RESPONSE, DAT_DTO_ERR_REMOTE_ACCESS, DAT_DTO_ERR_REMOTE_RESPONDER, DAT_DTO_ERR_TRANSPORT, DAT_DTO_ERR_RECEIVER_NOT_READY, DAT_DTO_ERR_PARTIAL_PACKET, DAT_RMR_OPERATION_FAILED);

#[repr(C)]
#[derive(Clone, Copy)]
pub struct DAT_DTO_COMPLETION_EVENT_DATA {
    pub ep_handle: DAT_EP_HANDLE,
    pub user_cookie: DAT_DTO_COOKIE,
    pub status: DAT_DTO_COMPLETION_STATUS,
    pub transfered_length: DAT_VLEN,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct DAT_RMR_BIND_COMPLETION_EVENT_DATA {
    pub rmr_handle: DAT_RMR_HANDLE,
    pub user_cookie: DAT_RMR_COOKIE,
    pub status: DAT_DTO_COMPLETION_STATUS,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub union DAT_SP_HANDLE {
    pub rsp_handle: DAT_RSP_HANDLE,
    pub psp_handle: DAT_PSP_HANDLE,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct DAT_CR_ARRIVAL_EVENT_DATA {
    pub sp_handle: DAT_SP_HANDLE,
    pub local_ia_address_ptr: DAT_IA_ADDRESS_PTR,
    pub conn_qual: DAT_CONN_QUAL,
    pub cr_handle: DAT_CR_HANDLE,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct DAT_CONNECTION_EVENT_DATA {
    pub ep_handle: DAT_EP_HANDLE,
    pub private_data_size: DAT_COUNT,
    pub private_data: DAT_PVOID,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct DAT_ASYNCH_ERROR_EVENT_DATA {
    pub dat_handle: DAT_HANDLE,
    pub reason: DAT_COUNT,
}

pub type DAT_IA_ASYNC_ERROR_REASON = u32;
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ia_async_error_reason {
    DAT_IA_CATASTROPHIC_ERROR = 0,
    DAT_IA_OTHER_ERROR = 1,
}
c_enum!(ia_async_error_reason: u32; DAT_IA_CATASTROPHIC_ERROR, DAT_IA_OTHER_ERROR);

pub type DAT_EP_ASYNC_ERROR_REASON = u32;
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ep_async_error_reason {
    DAT_EP_TRANSFER_TO_ERROR = 0,
    DAT_EP_OTHER_ERROR = 1,
    DAT_SRQ_SOFT_HIGH_WATERMARK_EVENT = 2,
}
c_enum!(ep_async_error_reason: u32; DAT_EP_TRANSFER_TO_ERROR, DAT_EP_OTHER_ERROR, DAT_SRQ_SOFT_HIGH_WATERMARK_EVENT);

pub type DAT_EVD_ASYNC_ERROR_REASON = u32;
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum evd_async_error_reason {
    DAT_EVD_OVERFLOW_ERROR = 0,
    DAT_EVD_OTHER_ERROR = 1,
}
c_enum!(evd_async_error_reason: u32; DAT_EVD_OVERFLOW_ERROR, DAT_EVD_OTHER_ERROR);

pub type DAT_SRQ_ASYNC_ERROR_REASON = u32;
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum srq_async_error_reason {
    DAT_SRQ_TRANSFER_TO_ERROR = 0,
    DAT_SRQ_OTHER_ERROR = 1,
    DAT_SRQ_LOW_WATERMARK_EVENT = 2,
}
c_enum!(srq_async_error_reason: u32; DAT_SRQ_TRANSFER_TO_ERROR, DAT_SRQ_OTHER_ERROR, DAT_SRQ_LOW_WATERMARK_EVENT);

pub type DAT_LMR_ASYNC_ERROR_REASON = u32;
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum lmr_async_error_reason {
    DAT_LMR_OTHER_ERROR = 0,
}
c_enum!(lmr_async_error_reason: u32; DAT_LMR_OTHER_ERROR);

pub type DAT_RMR_ASYNC_ERROR_REASON = u32;
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum rmr_async_error_reason {
    DAT_RMR_OTHER_ERROR = 0,
}
c_enum!(rmr_async_error_reason: u32; DAT_RMR_OTHER_ERROR);

pub type DAT_PZ_ASYNC_ERROR_REASON = u32;
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum pz_async_error_reason {
    DAT_PZ_OTHER_ERROR = 0,
}
c_enum!(pz_async_error_reason: u32; DAT_PZ_OTHER_ERROR);

#[repr(C)]
#[derive(Clone, Copy)]
pub struct DAT_SOFTWARE_EVENT_DATA {
    pub pointer: DAT_PVOID,
}

pub type DAT_EVENT_NUMBER = u32;
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum dat_event_number {
    DAT_DTO_COMPLETION_EVENT = 1,
    DAT_RMR_BIND_COMPLETION_EVENT = 0x1001,
    DAT_CONNECTION_REQUEST_EVENT = 0x2001,
    DAT_CONNECTION_EVENT_ESTABLISHED = 0x4001,
    DAT_CONNECTION_EVENT_PEER_REJECTED = 0x4002,
    DAT_CONNECTION_EVENT_NON_PEER_REJECTED = 0x4003,
    DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR = 0x4004,
    DAT_CONNECTION_EVENT_DISCONNECTED = 0x4005,
    DAT_CONNECTION_EVENT_BROKEN = 0x4006,
    DAT_CONNECTION_EVENT_TIMED_OUT = 0x4007,
    DAT_CONNECTION_EVENT_UNREACHABLE = 0x4008,
    DAT_ASYNC_ERROR_EVD_OVERFLOW = 0x8001,
    DAT_ASYNC_ERROR_IA_CATASTROPHIC = 0x8002,
    DAT_ASYNC_ERROR_EP_BROKEN = 0x8003,
    DAT_ASYNC_ERROR_TIMED_OUT = 0x8004,
    DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR = 0x8005,
    DAT_SOFTWARE_EVENT = 0x10001,
}
c_enum!(dat_event_number: u32; DAT_DTO_COMPLETION_EVENT, DAT_RMR_BIND_COMPLETION_EVENT, DAT_CONNECTION_REQUEST_EVENT, DAT_CONNECTION_EVENT_ESTABLISHED, DAT_CONNECTION_EVENT_PEER_REJECTED, DAT_CONNECTION_EVENT_NON_PEER_REJECTED, DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR, DAT_CONNECTION_EVENT_DISCONNECTED, DAT_CONNECTION_EVENT_BROKEN, DAT_CONNECTION_EVENT_TIMED_OUT, DAT_CONNECTION_EVENT_UNREACHABLE, DAT_ASYNC_ERROR_EVD_OVERFLOW, DAT_ASYNC_ERROR_IA_CATASTROPHIC, DAT_ASYNC_ERROR_EP_BROKEN, DAT_ASYNC_ERROR_TIMED_OUT, DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR, DAT_SOFTWARE_EVENT);

#[repr(C)]
#[derive(Clone, Copy)]
pub union DAT_EVENT_DATA {
    pub dto_completion_event_data: DAT_DTO_COMPLETION_EVENT_DATA,
    pub rmr_completion_event_data: DAT_RMR_BIND_COMPLETION_EVENT_DATA,
    pub cr_arrival_event_data: DAT_CR_ARRIVAL_EVENT_DATA,
    pub connect_event_data: DAT_CONNECTION_EVENT_DATA,
    pub asynch_error_event_data: DAT_ASYNCH_ERROR_EVENT_DATA,
    pub software_event_data: DAT_SOFTWARE_EVENT_DATA,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct DAT_EVENT {
    pub event_number: DAT_EVENT_NUMBER,
    pub evd_handle: DAT_EVD_HANDLE,
    pub event_data: DAT_EVENT_DATA,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct DAT_PROVIDER_INFO {
    pub ia_name: [c_char; 256],
    pub dapl_version_major: DAT_UINT32,
    pub dapl_version_minor: DAT_UINT32,
    pub is_thread_safe: DAT_BOOLEAN,
}

pub const DAT_MEM_PRIV_WRITE_FLAG: i32 = 48;
pub const DAT_EP_FIELD_CONNECT_EVD_HANDLE: u64 = 0x200;
pub const DAT_IA_FIELD_IA_MAX_LMR_BLOCK_SIZE: u64 = 0x8000;
pub const DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE: u64 = 0x2000;
pub const DAT_IA_FIELD_IA_NUM_TRANSPORT_ATTR: u64 = 0x80000000;
pub const DAT_EP_FIELD_REMOTE_IA_ADDRESS_PTR: u64 = 16;
pub const DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IN: u64 = 0x400000;
pub const DAT_IA_FIELD_IA_MAX_RDMA_READ_PER_EP_IN_GUARANTEED: u64 = 0x20000000;
pub const DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IOV: u64 = 0x2000000;
pub const DAT_EP_FIELD_EP_ATTR_MAX_RECV_IOV: u64 = 0x100000;
pub const DAT_IA_FIELD_IA_MAX_SRQS: u64 = 0x400000;
pub const DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS: u64 = 0x40000;
pub const DAT_CLOSE_DEFAULT: dat_close_flags = dat_close_flags::DAT_CLOSE_ABRUPT_FLAG;
pub const DAT_IA_FIELD_IA_MAX_RMRS: u64 = 0x100000;
pub const DAT_EP_FIELD_EP_ATTR_PROVIDER_SPECIFIC_ATTR: u64 = 0x40000000;
pub const DAT_RMR_BIND_SUCCESS: dat_dto_completion_status = dat_dto_completion_status::DAT_DTO_SUCCESS;
pub const DAT_IA_FIELD_IA_NUM_VENDOR_ATTR: u64 = 0x200000000;
pub const DAT_MEM_PRIV_READ_FLAG: i32 = 3;
pub const DAT_EP_STATE_ERROR: dat_ep_state = dat_ep_state::DAT_EP_STATE_DISCONNECTED;
pub const DAT_IA_FIELD_IA_MAX_RDMA_SIZE: u64 = 0x80000;
pub const DAT_EP_FIELD_EP_ATTR_NUM_TRANSPORT_ATTR: u64 = 0x8000000;
pub const DAT_IA_FIELD_IA_VENDOR_ATTR: u64 = 0x400000000;
pub const DAT_HW_DEFAULT: i32 = -1;
pub const DAT_EP_FIELD_REQUEST_EVD_HANDLE: u64 = 0x100;
pub const DAT_IA_FIELD_IA_MAX_LMRS: u64 = 0x4000;
pub const DAT_IA_FIELD_IA_MAX_IOV_SEGMENTS_PER_RDMA_READ: u64 = 0x2000000;
pub const DAT_IA_FIELD_IA_MAX_EVD_QLEN: u64 = 0x1000;
pub const DAT_IA_FIELD_IA_MAX_DTO_PER_EP: u64 = 0x100;
pub const DAT_IA_FIELD_IA_MAX_EP_PER_SRQ: u64 = 0x800000;
pub const DAT_IA_FIELD_IA_HARDWARE_MAJOR_VERSION: u64 = 4;
pub const DAT_EP_FIELD_EP_ATTR_TRANSPORT_SPECIFIC_ATTR: u64 = 0x10000000;
pub const DAT_EP_FIELD_EP_ATTR_MAX_RDMA_WRITE_IOV: u64 = 0x4000000;
pub const DAT_IA_FIELD_IA_FIRMWARE_MAJOR_VERSION: u64 = 16;
pub const DAT_IA_FIELD_IA_MAX_LMR_VIRTUAL_ADDRESS: u64 = 0x10000;
pub const DAT_VALUE_UNKNOWN: i32 = -2;
pub const DAT_NAME_MAX_LENGTH: i32 = 0x100;
pub const DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS: u64 = 0x80000;
pub const DAT_EP_FIELD_EP_ATTR_ALL: u64 = 0x7ffff000;
pub const DAT_EP_FIELD_ALL: u64 = 0x7ffff7ff;
pub const DAT_DTO_FAILURE: dat_dto_completion_status = dat_dto_completion_status::DAT_DTO_ERR_FLUSHED;
pub const DAT_RMR_BIND_FAILURE: dat_dto_completion_status = dat_dto_completion_status::DAT_DTO_ERR_FLUSHED;
pub const DAT_IA_FIELD_IA_MAX_MESSAGE_SIZE: u64 = 0x40000;
pub const DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_OUT: u64 = 0x800000;
pub const DAT_IA_FIELD_IA_MAX_RMR_TARGET_ADDRESS: u64 = 0x200000;
pub const DAT_IA_FIELD_IA_MAX_MTU_SIZE: u64 = 0x40000;
pub const DAT_EP_FIELD_EP_ATTR_RECV_COMPLETION_FLAGS: u64 = 0x10000;
pub const DAT_EP_FIELD_PZ_HANDLE: u64 = 64;
pub const DAT_SRQ_LW_DEFAULT: i32 = 0;
pub const DAT_EP_FIELD_LOCAL_PORT_QUAL: u64 = 8;
pub const DAT_IA_FIELD_IA_ADAPTER_NAME: u64 = 1;
pub const DAT_IA_FIELD_IA_VENDOR_NAME: u64 = 2;
pub const DAT_EP_FIELD_SRQ_HANDLE: u64 = 0x400;
pub const DAT_EP_FIELD_RECV_EVD_HANDLE: u64 = 128;
pub const DAT_IA_FIELD_IA_MAX_RDMA_READ_PER_EP_IN: u64 = 0x200;
pub const DAT_EP_FIELD_REMOTE_PORT_QUAL: u64 = 32;
pub const DAT_EP_FIELD_EP_ATTR_REQUEST_COMPLETION_FLAGS: u64 = 0x20000;
pub const DAT_DTO_LENGTH_ERROR: dat_dto_completion_status = dat_dto_completion_status::DAT_DTO_ERR_LOCAL_LENGTH;
pub const DAT_EP_FIELD_EP_ATTR_SERVICE_TYPE: u64 = 0x1000;
pub const DAT_IA_FIELD_IA_MAX_IOV_SEGMENTS_PER_DTO: u64 = 0x2000;
pub const DAT_EP_FIELD_EP_ATTR_MAX_RDMA_SIZE: u64 = 0x4000;
pub const DAT_IA_FIELD_IA_HARDWARE_MINOR_VERSION: u64 = 8;
pub const DAT_EP_FIELD_EP_STATE: u64 = 2;
pub const DAT_IA_FIELD_IA_MAX_IOV_SEGMENTS_PER_RDMA_WRITE: u64 = 0x4000000;
pub const DAT_IA_FIELD_IA_MAX_RDMA_READ_OUT: u64 = 0x10000000;
pub const DAT_EP_FIELD_EP_ATTR_QOS: u64 = 0x8000;
pub const DAT_EP_FIELD_EP_ATTR_SRQ_SOFT_HW: u64 = 0x1000000;
pub const DAT_IA_FIELD_IA_FIRMWARE_MINOR_VERSION: u64 = 32;
pub const DAT_IA_FIELD_IA_MAX_RDMA_READ_PER_EP_OUT_GUARANTEED: u64 = 0x40000000;
pub const DAT_EP_FIELD_EP_ATTR_NUM_PROVIDER_ATTR: u64 = 0x20000000;
pub const DAT_IA_FIELD_IA_MAX_EPS: u64 = 128;
pub const DAT_IA_FIELD_IA_MAX_RDMA_READ_IN: u64 = 0x8000000;
pub const DAT_WATERMARK_INFINITE: i32 = -1;
pub const DAT_EP_FIELD_IA_HANDLE: u64 = 1;
pub const DAT_TIMEOUT_INFINITE: u32 = 0xffffffff;
pub const DAT_IA_FIELD_IA_MAX_PZS: u64 = 0x20000;
pub const DAT_IA_FIELD_ALL: u64 = 0x7ffffffff;
pub const DAT_IA_ALL: u64 = 0x7ffffffff;
pub const DAT_IA_FIELD_IA_MAX_RECV_PER_SRQ: u64 = 0x1000000;
pub const DAT_IA_FIELD_NONE: u64 = 0;
pub const DAT_IA_FIELD_IA_TRANSPORT_ATTR: u64 = 0x100000000;
pub const DAT_IA_FIELD_IA_ADDRESS_PTR: u64 = 64;
pub const DAT_IA_FIELD_IA_MAX_RDMA_READ_PER_EP_OUT: u64 = 0x400;
pub const DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_IOV: u64 = 0x200000;
pub const DAT_EP_FIELD_LOCAL_IA_ADDRESS_PTR: u64 = 4;
pub const DAT_IA_FIELD_IA_MAX_EVDS: u64 = 0x800;
pub const DAT_THREADSAFE: dat_boolean = dat_boolean::DAT_FALSE;
