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

/// The limits of one IA's transport that `dat_ia_query` reports and the EP attributes are held
/// to: the table's values, narrowed by a transport that carries less (a verbs device's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Segments one send, receive or RDMA write carries.
    pub max_iov: i32,
    /// Segments one RDMA read scatters into.
    pub max_read_iov: i32,
    /// Requests (and receives) one EP queues.
    pub max_dto_per_ep: i32,
    pub max_message_size: u32,
    pub max_rdma_size: u32,
}

impl Limits {
    /// What the library itself carries (TCP's limits: a frame's segments, the largest message).
    pub const TABLE: Limits = Limits {
        max_iov: MAX_IOV_SEGMENTS,
        max_read_iov: MAX_IOV_SEGMENTS,
        max_dto_per_ep: MAX_DTO_PER_EP,
        max_message_size: MAX_MESSAGE_SIZE,
        max_rdma_size: MAX_RDMA_SIZE,
    };

    /// The table narrowed by a transport's own limits (a value of 0 or below: none given).
    pub fn narrowed(iov: i64, read_iov: i64, dtos: i64, message: u64) -> Limits {
        let t = Limits::TABLE;
        let at_most = |own: i64, table: i32| {
            if own > 0 {
                own.min(i64::from(table)) as i32
            } else {
                table
            }
        };
        let bytes = |table: u32| {
            if message > 0 {
                message.min(u64::from(table)) as u32
            } else {
                table
            }
        };
        Limits {
            max_iov: at_most(iov, t.max_iov),
            max_read_iov: at_most(read_iov, t.max_read_iov),
            max_dto_per_ep: at_most(dtos, t.max_dto_per_ep),
            max_message_size: bytes(t.max_message_size),
            max_rdma_size: bytes(t.max_rdma_size),
        }
    }
}
