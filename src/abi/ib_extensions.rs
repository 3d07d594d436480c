//! Types and constants of the DAT 2.0 headers (ib_extensions).
#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals, clippy::upper_case_acronyms)]

#[allow(unused_imports)]
use super::*;
#[allow(unused_imports)]
use core::ffi::*;

pub type DAT_IB_COLLECTIVE_HANDLE = DAT_HANDLE;

pub type DAT_IB_EVENT_NUMBER = u32;
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, num_enum::TryFromPrimitive, num_enum::IntoPrimitive)]
pub enum dat_ib_event_number {
    DAT_IB_DTO_EVENT = 0x40000,
    DAT_IB_UD_CONNECTION_REQUEST_EVENT = 0x40001,
    DAT_IB_UD_CONNECTION_EVENT_ESTABLISHED = 0x40002,
    DAT_IB_UD_CONNECTION_REJECT_EVENT = 0x40003,
    DAT_IB_UD_CONNECTION_ERROR_EVENT = 0x40004,
    DAT_IB_COLLECTIVE_EVENT = 0x40005,
}

pub type DAT_IB_OP = u32;
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, num_enum::TryFromPrimitive, num_enum::IntoPrimitive)]
pub enum dat_ib_op {
    DAT_IB_FETCH_AND_ADD_OP = 0,
    DAT_IB_CMP_AND_SWAP_OP = 1,
    DAT_IB_RDMA_WRITE_IMMED_OP = 2,
    DAT_IB_UD_SEND_OP = 3,
    DAT_IB_QUERY_COUNTERS_OP = 4,
    DAT_IB_PRINT_COUNTERS_OP = 5,
    DAT_IB_COLLECTIVE_CREATE_MEMBER_OP = 6,
    DAT_IB_COLLECTIVE_FREE_MEMBER_OP = 7,
    DAT_IB_COLLECTIVE_CREATE_GROUP_OP = 8,
    DAT_IB_COLLECTIVE_FREE_GROUP_OP = 9,
    DAT_IB_COLLECTIVE_SET_CLOCK_OP = 10,
    DAT_IB_COLLECTIVE_READ_CLOCK_OP = 11,
    DAT_IB_COLLECTIVE_SCATTER_OP = 12,
    DAT_IB_COLLECTIVE_SCATTERV_OP = 13,
    DAT_IB_COLLECTIVE_GATHER_OP = 14,
    DAT_IB_COLLECTIVE_GATHERV_OP = 15,
    DAT_IB_COLLECTIVE_ALLGATHER_OP = 16,
    DAT_IB_COLLECTIVE_ALLGATHERV_OP = 17,
    DAT_IB_COLLECTIVE_ALLTOALL_OP = 18,
    DAT_IB_COLLECTIVE_ALLTOALLV_OP = 19,
    DAT_IB_COLLECTIVE_REDUCE_OP = 20,
    DAT_IB_COLLECTIVE_ALLREDUCE_OP = 21,
    DAT_IB_COLLECTIVE_REDUCE_SCATTER_OP = 22,
    DAT_IB_COLLECTIVE_SCAN_OP = 23,
    DAT_IB_COLLECTIVE_BROADCAST_OP = 24,
    DAT_IB_COLLECTIVE_BARRIER_OP = 25,
    DAT_IB_START_COUNTERS_OP = 26,
    DAT_IB_STOP_COUNTERS_OP = 27,
    DAT_IB_UD_CM_FREE_OP = 28,
    DAT_IB_UD_AH_FREE_OP = 29,
    DAT_IB_OPEN_QUERY_OP = 0x1000,
    DAT_IB_CLOSE_QUERY_OP = 0x2000,
}

pub type DAT_IB_EXT_TYPE = u32;
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, num_enum::TryFromPrimitive, num_enum::IntoPrimitive)]
pub enum dat_ib_ext_type {
    DAT_IB_FETCH_AND_ADD = 0,
    DAT_IB_CMP_AND_SWAP = 1,
    DAT_IB_RDMA_WRITE_IMMED = 2,
    DAT_IB_RDMA_WRITE_IMMED_DATA = 3,
    DAT_IB_RECV_IMMED_DATA = 4,
    DAT_IB_UD_CONNECT_REQUEST = 5,
    DAT_IB_UD_REMOTE_AH = 6,
    DAT_IB_UD_PASSIVE_REMOTE_AH = 7,
    DAT_IB_UD_SEND = 8,
    DAT_IB_UD_RECV = 9,
    DAT_IB_UD_CONNECT_REJECT = 10,
    DAT_IB_UD_CONNECT_ERROR = 11,
    DAT_IB_COLLECTIVE_CREATE_STATUS = 12,
    DAT_IB_COLLECTIVE_CREATE_DATA = 13,
    DAT_IB_COLLECTIVE_CLOCK_SET_STATUS = 14,
    DAT_IB_COLLECTIVE_SCATTER_STATUS = 15,
    DAT_IB_COLLECTIVE_SCATTERV_STATUS = 16,
    DAT_IB_COLLECTIVE_GATHER_STATUS = 17,
    DAT_IB_COLLECTIVE_GATHERV_STATUS = 18,
    DAT_IB_COLLECTIVE_ALLGATHER_STATUS = 19,
    DAT_IB_COLLECTIVE_ALLGATHERV_STATUS = 20,
    DAT_IB_COLLECTIVE_ALLTOALL_STATUS = 21,
    DAT_IB_COLLECTIVE_ALLTOALLV_STATUS = 22,
    DAT_IB_COLLECTIVE_REDUCE_STATUS = 23,
    DAT_IB_COLLECTIVE_ALLREDUCE_STATUS = 24,
    DAT_IB_COLLECTIVE_REDUCE_SCATTER_STATUS = 25,
    DAT_IB_COLLECTIVE_SCAN_STATUS = 26,
    DAT_IB_COLLECTIVE_BROADCAST_STATUS = 27,
    DAT_IB_COLLECTIVE_BARRIER_STATUS = 28,
}

pub type DAT_IB_STATUS = u32;
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, num_enum::TryFromPrimitive, num_enum::IntoPrimitive)]
pub enum dat_ib_status {
    DAT_OP_SUCCESS = 0,
    DAT_IB_OP_ERR = 1,
    DAT_IB_COLL_COMP_ERR = 2,
}

pub type DAT_IB_RETURN = u32;
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, num_enum::TryFromPrimitive, num_enum::IntoPrimitive)]
pub enum dat_ib_return {
    DAT_IB_ERR = 0x10000000,
    DAT_IB_COLLECTIVE_ERR = 0x10000001,
}

pub type DAT_IB_DTOS = u32;
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, num_enum::TryFromPrimitive, num_enum::IntoPrimitive)]
pub enum dat_ib_dtos {
    DAT_IB_DTO_RDMA_WRITE_IMMED = 8,
    DAT_IB_DTO_RECV_IMMED = 9,
    DAT_IB_DTO_FETCH_ADD = 10,
    DAT_IB_DTO_CMP_SWAP = 11,
    DAT_IB_DTO_RECV_MSG_IMMED = 12,
    DAT_IB_DTO_SEND_UD = 13,
    DAT_IB_DTO_RECV_UD = 14,
    DAT_IB_DTO_RECV_UD_IMMED = 15,
    DAT_IB_DTO_COLLECTIVES = 16,
}

pub type DAT_IB_HANDLE_TYPE = u32;
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, num_enum::TryFromPrimitive, num_enum::IntoPrimitive)]
pub enum dat_ib_handle_type {
    DAT_IB_HANDLE_TYPE_EXT = 12,
    DAT_IB_HANDLE_TYPE_COLLECTIVE = 13,
}

pub type DAT_IB_EVD_EXTENSION_FLAGS = u32;
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, num_enum::TryFromPrimitive, num_enum::IntoPrimitive)]
pub enum dat_ib_evd_extension_flags {
    DAT_IB_EVD_EXTENSION_FLAG = 0x200,
}

pub type DAT_IB_MEM_PRIV_FLAGS = u32;
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, num_enum::TryFromPrimitive, num_enum::IntoPrimitive)]
pub enum dat_ib_mem_priv_flags {
    DAT_IB_MEM_PRIV_REMOTE_ATOMIC = 64,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct DAT_IB_ADDR_HANDLE {
    pub ah: *mut ibv_ah,
    pub qpn: DAT_UINT32,
    pub ia_addr: DAT_SOCK_ADDR6,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct DAT_IB_IMMED_DATA {
    pub data: DAT_UINT32,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct DAT_IB_COLLECTIVE_EVENT_DATA {
    pub handle: DAT_HANDLE,
    pub context: DAT_CONTEXT,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub union DAT_IB_EXTENSION_EVENT_DATA_val {
    pub immed: DAT_IB_IMMED_DATA,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub union DAT_IB_EXTENSION_EVENT_DATA_anon3 {
    pub remote_ah: DAT_IB_ADDR_HANDLE,
    pub coll: DAT_IB_COLLECTIVE_EVENT_DATA,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct DAT_IB_EXTENSION_EVENT_DATA {
    pub r#type: DAT_IB_EXT_TYPE,
    pub status: DAT_IB_STATUS,
    pub val: DAT_IB_EXTENSION_EVENT_DATA_val,
    pub anon3: DAT_IB_EXTENSION_EVENT_DATA_anon3,
    pub context: DAT_CONTEXT,
}

pub type DAT_IB_SERVICE_TYPE = u32;
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, num_enum::TryFromPrimitive, num_enum::IntoPrimitive)]
pub enum dat_ib_service_type {
    DAT_IB_SERVICE_TYPE_UD = 1,
}

pub type DAT_IA_COUNTERS = u32;
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, num_enum::TryFromPrimitive, num_enum::IntoPrimitive)]
pub enum dat_ia_counters {
    DCNT_IA_PZ_CREATE = 0,
    DCNT_IA_PZ_FREE = 1,
    DCNT_IA_LMR_CREATE = 2,
    DCNT_IA_LMR_FREE = 3,
    DCNT_IA_RMR_CREATE = 4,
    DCNT_IA_RMR_FREE = 5,
    DCNT_IA_PSP_CREATE = 6,
    DCNT_IA_PSP_CREATE_ANY = 7,
    DCNT_IA_PSP_FREE = 8,
    DCNT_IA_RSP_CREATE = 9,
    DCNT_IA_RSP_FREE = 10,
    DCNT_IA_EVD_CREATE = 11,
    DCNT_IA_EVD_FREE = 12,
    DCNT_IA_EP_CREATE = 13,
    DCNT_IA_EP_FREE = 14,
    DCNT_IA_SRQ_CREATE = 15,
    DCNT_IA_SRQ_FREE = 16,
    DCNT_IA_SP_CR = 17,
    DCNT_IA_SP_CR_ACCEPTED = 18,
    DCNT_IA_SP_CR_REJECTED = 19,
    DCNT_IA_MEM_ALLOC = 20,
    DCNT_IA_MEM_ALLOC_DATA = 21,
    DCNT_IA_MEM_FREE = 22,
    DCNT_IA_ASYNC_ERROR = 23,
    DCNT_IA_ASYNC_QP_ERROR = 24,
    DCNT_IA_ASYNC_CQ_ERROR = 25,
    DCNT_IA_CM_LISTEN = 26,
    DCNT_IA_CM_REQ_TX = 27,
    DCNT_IA_CM_REQ_RX = 28,
    DCNT_IA_CM_REP_TX = 29,
    DCNT_IA_CM_REP_RX = 30,
    DCNT_IA_CM_RTU_TX = 31,
    DCNT_IA_CM_RTU_RX = 32,
    DCNT_IA_CM_USER_REJ_TX = 33,
    DCNT_IA_CM_USER_REJ_RX = 34,
    DCNT_IA_CM_ACTIVE_EST = 35,
    DCNT_IA_CM_PASSIVE_EST = 36,
    DCNT_IA_CM_AH_REQ_TX = 37,
    DCNT_IA_CM_AH_REQ_RX = 38,
    DCNT_IA_CM_AH_RESOLVED = 39,
    DCNT_IA_CM_DREQ_TX = 40,
    DCNT_IA_CM_DREQ_RX = 41,
    DCNT_IA_CM_DREP_TX = 42,
    DCNT_IA_CM_DREP_RX = 43,
    DCNT_IA_CM_MRA_TX = 44,
    DCNT_IA_CM_MRA_RX = 45,
    DCNT_IA_CM_REQ_FULLQ_POLL = 46,
    DCNT_IA_CM_ERR = 47,
    DCNT_IA_CM_ERR_REQ_FULLQ = 48,
    DCNT_IA_CM_ERR_REQ_DUP = 49,
    DCNT_IA_CM_ERR_REQ_RETRY = 50,
    DCNT_IA_CM_ERR_REP_DUP = 51,
    DCNT_IA_CM_ERR_REP_RETRY = 52,
    DCNT_IA_CM_ERR_RTU_DUP = 53,
    DCNT_IA_CM_ERR_RTU_RETRY = 54,
    DCNT_IA_CM_ERR_REFUSED = 55,
    DCNT_IA_CM_ERR_RESET = 56,
    DCNT_IA_CM_ERR_TIMEOUT = 57,
    DCNT_IA_CM_ERR_REJ_TX = 58,
    DCNT_IA_CM_ERR_REJ_RX = 59,
    DCNT_IA_CM_ERR_DREQ_DUP = 60,
    DCNT_IA_CM_ERR_DREQ_RETRY = 61,
    DCNT_IA_CM_ERR_DREP_DUP = 62,
    DCNT_IA_CM_ERR_DREP_RETRY = 63,
    DCNT_IA_CM_ERR_MRA_DUP = 64,
    DCNT_IA_CM_ERR_MRA_RETRY = 65,
    DCNT_IA_CM_ERR_UNEXPECTED = 66,
    DCNT_IA_LNK_ERR_RCV = 67,
    DCNT_IA_LNK_ERR_RCV_REM_PHYS = 68,
    DCNT_IA_LNK_ERR_RCV_CONSTRAINT = 69,
    DCNT_IA_LNK_ERR_XMT_DISCARDS = 70,
    DCNT_IA_LNK_ERR_XMT_CONTRAINT = 71,
    DCNT_IA_LNK_ERR_INTEGRITY = 72,
    DCNT_IA_LNK_ERR_EXC_BUF_OVERRUN = 73,
    DCNT_IA_LNK_WARN_RCV_SW_RELAY = 74,
    DCNT_IA_LNK_WARN_XMT_WAIT = 75,
    DCNT_IA_DIAG_ERR_RQ_RAE = 76,
    DCNT_IA_DIAG_ERR_RQ_OOS = 77,
    DCNT_IA_DIAG_ERR_RQ_RIRE = 78,
    DCNT_IA_DIAG_ERR_RQ_UDSDPRD = 79,
    DCNT_IA_DIAG_ERR_SQ_RAE = 80,
    DCNT_IA_DIAG_ERR_SQ_OOS = 81,
    DCNT_IA_DIAG_ERR_SQ_RIRE = 82,
    DCNT_IA_DIAG_ERR_SQ_RREE = 83,
    DCNT_IA_DIAG_ERR_SQ_TREE = 84,
    DCNT_IA_ALL_COUNTERS = 85,
}

pub type DAT_EP_COUNTERS = u32;
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, num_enum::TryFromPrimitive, num_enum::IntoPrimitive)]
pub enum dat_ep_counters {
    DCNT_EP_CONNECT = 0,
    DCNT_EP_DISCONNECT = 1,
    DCNT_EP_POST_SEND = 2,
    DCNT_EP_POST_SEND_DATA = 3,
    DCNT_EP_POST_SEND_UD = 4,
    DCNT_EP_POST_SEND_UD_DATA = 5,
    DCNT_EP_POST_RECV = 6,
    DCNT_EP_POST_RECV_DATA = 7,
    DCNT_EP_POST_WRITE = 8,
    DCNT_EP_POST_WRITE_DATA = 9,
    DCNT_EP_POST_WRITE_IMM = 10,
    DCNT_EP_POST_WRITE_IMM_DATA = 11,
    DCNT_EP_POST_READ = 12,
    DCNT_EP_POST_READ_DATA = 13,
    DCNT_EP_POST_CMP_SWAP = 14,
    DCNT_EP_POST_FETCH_ADD = 15,
    DCNT_EP_RECV = 16,
    DCNT_EP_RECV_DATA = 17,
    DCNT_EP_RECV_UD = 18,
    DCNT_EP_RECV_UD_DATA = 19,
    DCNT_EP_RECV_IMM = 20,
    DCNT_EP_RECV_IMM_DATA = 21,
    DCNT_EP_RECV_RDMA_IMM = 22,
    DCNT_EP_RECV_RDMA_IMM_DATA = 23,
    DCNT_EP_ALL_COUNTERS = 24,
}

pub type DAT_EVD_COUNTERS = u32;
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, num_enum::TryFromPrimitive, num_enum::IntoPrimitive)]
pub enum dat_evd_counters {
    DCNT_EVD_WAIT = 0,
    DCNT_EVD_WAIT_BLOCKED = 1,
    DCNT_EVD_WAIT_NOTIFY = 2,
    DCNT_EVD_DEQUEUE = 3,
    DCNT_EVD_DEQUEUE_FOUND = 4,
    DCNT_EVD_DEQUEUE_NOT_FOUND = 5,
    DCNT_EVD_DEQUEUE_POLL = 6,
    DCNT_EVD_DEQUEUE_POLL_FOUND = 7,
    DCNT_EVD_CONN_CALLBACK = 8,
    DCNT_EVD_DTO_CALLBACK = 9,
    DCNT_EVD_ALL_COUNTERS = 10,
}

pub type DAT_IA_COUNTER_TYPE = u32;
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, num_enum::TryFromPrimitive, num_enum::IntoPrimitive)]
pub enum dat_ia_counter_type {
    DCNT_IA_CM = 0,
    DCNT_IA_LNK = 1,
    DCNT_IA_DIAG = 2,
}

pub type DAT_IB_COLLECTIVE_DATA_TYPE = u32;
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, num_enum::TryFromPrimitive, num_enum::IntoPrimitive)]
pub enum dat_ib_collective_data_type {
    DAT_IB_COLLECTIVE_TYPE_INT8 = 0,
    DAT_IB_COLLECTIVE_TYPE_UINT8 = 1,
    DAT_IB_COLLECTIVE_TYPE_INT16 = 2,
    DAT_IB_COLLECTIVE_TYPE_UINT16 = 3,
    DAT_IB_COLLECTIVE_TYPE_INT32 = 4,
    DAT_IB_COLLECTIVE_TYPE_UINT32 = 5,
    DAT_IB_COLLECTIVE_TYPE_INT64 = 6,
    DAT_IB_COLLECTIVE_TYPE_UINT64 = 7,
    DAT_IB_COLLECTIVE_TYPE_FLOAT = 8,
    DAT_IB_COLLECTIVE_TYPE_DOUBLE = 9,
    DAT_IB_COLLECTIVE_TYPE_LONG_DOUBLE = 10,
    DAT_IB_COLLECTIVE_TYPE_SHORT_INT = 11,
    DAT_IB_COLLECTIVE_TYPE_2INT = 12,
    DAT_IB_COLLECTIVE_TYPE_FLOAT_INT = 13,
    DAT_IB_COLLECTIVE_TYPE_LONG_INT = 14,
    DAT_IB_COLLECTIVE_TYPE_DOUBLE_INT = 15,
}

pub type DAT_IB_COLLECTIVE_REDUCE_DATA_OP = u32;
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, num_enum::TryFromPrimitive, num_enum::IntoPrimitive)]
pub enum dat_ib_collective_reduce_data_op {
    DAT_IB_COLLECTIVE_REDUCE_OP_MAX = 0,
    DAT_IB_COLLECTIVE_REDUCE_OP_MIN = 1,
    DAT_IB_COLLECTIVE_REDUCE_OP_SUM = 2,
    DAT_IB_COLLECTIVE_REDUCE_OP_PROD = 3,
    DAT_IB_COLLECTIVE_REDUCE_OP_LAND = 4,
    DAT_IB_COLLECTIVE_REDUCE_OP_BAND = 5,
    DAT_IB_COLLECTIVE_REDUCE_OP_LOR = 6,
    DAT_IB_COLLECTIVE_REDUCE_OP_BOR = 7,
    DAT_IB_COLLECTIVE_REDUCE_OP_LXOR = 8,
    DAT_IB_COLLECTIVE_REDUCE_OP_BXOR = 9,
    DAT_IB_COLLECTIVE_REDUCE_OP_MAXLOC = 10,
    DAT_IB_COLLECTIVE_REDUCE_OP_MINLOC = 11,
}

pub type DAT_IB_COLLECTIVE_RANK = c_uint;

pub type DAT_IB_COLLECTIVE_ID = c_uint;

pub type DAT_IB_COLLECTIVE_MEMBER = *mut c_void;

#[repr(C)]
#[derive(Clone, Copy)]
pub struct DAT_IB_COLLECTIVE_GROUP {
    pub local_size: c_int,
    pub local_rank: c_int,
    pub local_ranks: *mut c_int,
    pub external_size: c_int,
    pub external_rank: c_int,
    pub external_ranks: *mut c_int,
    pub intranode_table: *mut c_int,
    pub internode_table: *mut c_int,
    pub is_comm_world: c_int,
}

pub const DAT_QUERY_COUNTERS_OP: i32 = 4;
pub const DAT_PRINT_COUNTERS_OP: i32 = 5;
pub const DAT_IB_EXTENSION_VERSION: i32 = 209;
