//! The limits this library reports in `dat_ia_query` and enforces. One table, shared by the
//! transports; a transport with tighter limits narrows them.

pub const MAX_EPS: i32 = 4096;
pub const MAX_DTO_PER_EP: i32 = 16384;
pub const MAX_RDMA_READ_PER_EP: i32 = 64;
pub const MAX_EVDS: i32 = 4096;
pub const MAX_EVD_QLEN: i32 = 1 << 20;
pub const MAX_IOV_SEGMENTS: i32 = 64;
pub const MAX_LMRS: i32 = 65536;
pub const MAX_PZS: i32 = 4096;
pub const MAX_RMRS: i32 = 65536;
pub const MAX_SRQS: i32 = 1024;
pub const MAX_EP_PER_SRQ: i32 = MAX_EPS;
pub const MAX_RECV_PER_SRQ: i32 = MAX_DTO_PER_EP;
/// Largest message and RDMA transfer (1 GiB), largest LMR (DAT_SEG_LENGTH is 32 bits).
pub const MAX_MESSAGE_SIZE: u32 = 1 << 30;
pub const MAX_RDMA_SIZE: u32 = 1 << 30;
pub const MAX_LMR_BLOCK_SIZE: u32 = u32::MAX;
pub const MAX_LMR_VIRTUAL_ADDRESS: u64 = u64::MAX;
pub const MAX_RMR_TARGET_ADDRESS: u64 = u64::MAX;
/// Private data carried by connect, accept and reject (the rdma-cm RC limit for connect).
pub const MAX_PRIVATE_DATA_SIZE: i32 = 56;
pub const OPTIMAL_BUFFER_ALIGNMENT: u32 = 256;
/// Default EP attributes when `dat_ep_create` gets none.
pub const DEFAULT_DTOS: i32 = 256;
pub const DEFAULT_IOV: i32 = 4;
pub const DEFAULT_RDMA_READ: i32 = 4;
