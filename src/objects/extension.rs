//! The IB extension's data transfers (`dat_ib_extensions.h`) as the objects carry them: what a
//! request asks beyond the standard DTOs, and the `DAT_IB_DTO_EVENT` its completion is, filled
//! as OpenFabrics fills it.

use crate::abi::*;

/// What an extended request does; the transports carry it beside the standard operation it
/// moves data as (an RDMA write for the immediate; for the atomics, an RDMA read of the
/// peer's original 64-bit word into the local segment).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Extended {
    /// An RDMA write that consumes one of the peer's receives, which reports the write's
    /// length and this immediate data.
    WriteImmediate(u32),
    /// Adds to the peer's 64-bit word, atomically at the peer.
    FetchAdd(u64),
    /// Stores `swap` in the peer's 64-bit word when it holds `compare`, atomically at the peer.
    CompareSwap { compare: u64, swap: u64 },
    /// A datagram from a UD EP to QP `qpn` at the port of address handle `ah` (a
    /// transport's, checked by it).
    Datagram { ah: usize, qpn: u32 },
}

/// Which extended request a request is, without its operands: what its completion names (a
/// request waiting for its completion keeps this byte, not the operands).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExtendedKind {
    WriteImmediate,
    FetchAdd,
    CompareSwap,
    Datagram,
}

/// The length of the word an atomic operates on, which its local segment receives.
pub const ATOMIC_LEN: u32 = 8;

impl Extended {
    /// The standard operation it moves data as.
    pub fn carrier(self) -> dat_dtos {
        match self {
            Extended::WriteImmediate(_) => dat_dtos::DAT_DTO_RDMA_WRITE,
            Extended::FetchAdd(_) | Extended::CompareSwap { .. } => dat_dtos::DAT_DTO_RDMA_READ,
            Extended::Datagram { .. } => dat_dtos::DAT_DTO_SEND,
        }
    }

    pub fn is_atomic(self) -> bool {
        matches!(self, Extended::FetchAdd(_) | Extended::CompareSwap { .. })
    }

    pub fn kind(self) -> ExtendedKind {
        match self {
            Extended::WriteImmediate(_) => ExtendedKind::WriteImmediate,
            Extended::FetchAdd(_) => ExtendedKind::FetchAdd,
            Extended::CompareSwap { .. } => ExtendedKind::CompareSwap,
            Extended::Datagram { .. } => ExtendedKind::Datagram,
        }
    }
}

impl ExtendedKind {
    /// The operation and extension type its requester's completion names.
    fn names(self) -> (dat_ib_dtos, dat_ib_ext_type) {
        match self {
            ExtendedKind::WriteImmediate => (
                dat_ib_dtos::DAT_IB_DTO_RDMA_WRITE_IMMED,
                dat_ib_ext_type::DAT_IB_RDMA_WRITE_IMMED,
            ),
            ExtendedKind::FetchAdd => (
                dat_ib_dtos::DAT_IB_DTO_FETCH_ADD,
                dat_ib_ext_type::DAT_IB_FETCH_AND_ADD,
            ),
            ExtendedKind::CompareSwap => (
                dat_ib_dtos::DAT_IB_DTO_CMP_SWAP,
                dat_ib_ext_type::DAT_IB_CMP_AND_SWAP,
            ),
            ExtendedKind::Datagram => (
                dat_ib_dtos::DAT_IB_DTO_SEND_UD,
                dat_ib_ext_type::DAT_IB_UD_SEND,
            ),
        }
    }
}

/// The completion of an extended request on its requester's EVD.
pub fn request_event(
    ep: DAT_EP_HANDLE,
    cookie: u64,
    status: dat_dto_completion_status,
    length: u32,
    op: ExtendedKind,
) -> DAT_EVENT {
    let (operation, ext_type) = op.names();
    event(ep, cookie, status, length, operation, ext_type, 0)
}

/// The completion of the receive an RDMA write with immediate data consumed: the write's
/// length and the immediate.
pub fn immediate_event(
    ep: DAT_EP_HANDLE,
    cookie: u64,
    status: dat_dto_completion_status,
    length: u32,
    data: u32,
) -> DAT_EVENT {
    let (operation, ext_type) = (
        dat_ib_dtos::DAT_IB_DTO_RECV_IMMED,
        dat_ib_ext_type::DAT_IB_RDMA_WRITE_IMMED_DATA,
    );
    event(ep, cookie, status, length, operation, ext_type, data)
}

/// The completion of a UD EP's receive: the datagram's length, with the 40 bytes of the
/// routing header that precede it in the buffer.
pub fn datagram_event(
    ep: DAT_EP_HANDLE,
    cookie: u64,
    status: dat_dto_completion_status,
    length: u32,
) -> DAT_EVENT {
    event(
        ep,
        cookie,
        status,
        length,
        dat_ib_dtos::DAT_IB_DTO_RECV_UD,
        dat_ib_ext_type::DAT_IB_UD_RECV,
        0,
    )
}

/// How a UD EP reaches a peer, as a transport found it for a UD connection event.
#[derive(Clone, Copy, Debug)]
pub struct DatagramPeer {
    /// The transport's address handle (`struct ibv_ah *` to the consumer).
    pub ah: usize,
    pub qpn: u32,
    pub remote: std::net::SocketAddrV4,
    /// The accepting side's event (its handle reaches the requester), not the requester's.
    pub passive: bool,
    /// Names the exchange for `dat_ib_ud_cm_free`.
    pub context: u64,
}

/// The extension data of a UD connection event: the remote address handle, as OpenFabrics
/// fills it.
pub fn datagram_connection_data(peer: &DatagramPeer) -> DAT_IB_EXTENSION_EVENT_DATA {
    let mut x = DAT_IB_EXTENSION_EVENT_DATA::zeroed();
    x.r#type = if peer.passive {
        dat_ib_ext_type::DAT_IB_UD_PASSIVE_REMOTE_AH
    } else {
        dat_ib_ext_type::DAT_IB_UD_REMOTE_AH
    } as DAT_IB_EXT_TYPE;
    let mut ia_addr = DAT_SOCK_ADDR6::zeroed();
    let sin = crate::runtime::sys::sockaddr_in(peer.remote);
    // SAFETY: a sockaddr_in fits the sockaddr_in6 it is copied into (OpenFabrics copies the
    // IPv4 address so too).
    unsafe {
        std::ptr::copy_nonoverlapping(
            &sin as *const libc::sockaddr_in as *const u8,
            &mut ia_addr as *mut DAT_SOCK_ADDR6 as *mut u8,
            std::mem::size_of::<libc::sockaddr_in>(),
        )
    };
    x.anon3.remote_ah = DAT_IB_ADDR_HANDLE {
        ah: peer.ah as *mut ibv_ah,
        qpn: peer.qpn,
        ia_addr,
    };
    x.context = DAT_CONTEXT::from_u64(peer.context);
    x
}

/// Writes extension data into an event's extension area.
pub fn set_extension_data(e: &mut DAT_EVENT, x: DAT_IB_EXTENSION_EVENT_DATA) {
    const _: () = assert!(
        std::mem::size_of::<DAT_IB_EXTENSION_EVENT_DATA>()
            <= std::mem::size_of::<[DAT_UINT64; 8]>()
    );
    // SAFETY: the extension data fits the event's extension area (asserted above), which is
    // 8-byte aligned as the extension data needs.
    unsafe { (e.event_extension_data.as_mut_ptr() as *mut DAT_IB_EXTENSION_EVENT_DATA).write(x) };
}

fn event(
    ep: DAT_EP_HANDLE,
    cookie: u64,
    status: dat_dto_completion_status,
    length: u32,
    operation: dat_ib_dtos,
    ext_type: dat_ib_ext_type,
    immediate: u32,
) -> DAT_EVENT {
    let mut e = DAT_EVENT::zeroed();
    e.event_number = dat_ib_event_number::DAT_IB_DTO_EVENT as DAT_EVENT_NUMBER;
    e.event_data.dto_completion_event_data = DAT_DTO_COMPLETION_EVENT_DATA {
        ep_handle: ep,
        user_cookie: DAT_DTO_COOKIE::from_u64(cookie),
        status: status as DAT_DTO_COMPLETION_STATUS,
        transfered_length: length,
        operation: operation as DAT_DTOS,
        rmr_context: 0,
    };
    let mut x = DAT_IB_EXTENSION_EVENT_DATA::zeroed();
    // OpenFabrics gives the extension's status the DTO's value, and leaves the type and data
    // of a failed one unset.
    x.status = status as DAT_IB_STATUS;
    if status == dat_dto_completion_status::DAT_DTO_SUCCESS {
        x.r#type = ext_type as DAT_IB_EXT_TYPE;
        x.val.immed = DAT_IB_IMMED_DATA { data: immediate };
    }
    set_extension_data(&mut e, x);
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ext(e: &DAT_EVENT) -> DAT_IB_EXTENSION_EVENT_DATA {
        // SAFETY: as `event` wrote it.
        unsafe { (e.event_extension_data.as_ptr() as *const DAT_IB_EXTENSION_EVENT_DATA).read() }
    }

    #[test]
    fn an_immediate_names_its_data_and_the_write_length() {
        let e = immediate_event(
            std::ptr::null_mut(),
            7,
            dat_dto_completion_status::DAT_DTO_SUCCESS,
            256,
            0x7777,
        );
        assert_eq!(e.event_number, dat_ib_event_number::DAT_IB_DTO_EVENT as u32);
        // SAFETY: a DTO event's data is its completion data.
        let d = unsafe { e.event_data.dto_completion_event_data };
        assert_eq!(
            (d.transfered_length, d.operation),
            (256, dat_ib_dtos::DAT_IB_DTO_RECV_IMMED as u32)
        );
        let x = ext(&e);
        assert_eq!(
            x.r#type,
            dat_ib_ext_type::DAT_IB_RDMA_WRITE_IMMED_DATA as u32
        );
        // SAFETY: plain data.
        assert_eq!(unsafe { x.val.immed.data }, 0x7777);
    }

    #[test]
    fn a_failed_atomic_carries_its_status_and_no_type() {
        let flushed = dat_dto_completion_status::DAT_DTO_ERR_FLUSHED;
        let e = request_event(std::ptr::null_mut(), 1, flushed, 0, ExtendedKind::FetchAdd);
        let x = ext(&e);
        assert_eq!((x.r#type, x.status), (0, flushed as u32));
        // SAFETY: a DTO event's data is its completion data.
        let d = unsafe { e.event_data.dto_completion_event_data };
        assert_eq!(d.operation, dat_ib_dtos::DAT_IB_DTO_FETCH_ADD as u32);
    }
}
