//! A reliable-connected queue pair on an rdma-cm id, made before the connection (so receives
//! can be posted first), and the work requests posted on it: no allocation on the way, each
//! scatter/gather list on the stack.

use std::io;
use std::sync::Arc;

use rdma_mummy_sys as ibv;

use super::cm::CmId;
use super::cq::Cq;
use super::device::{uncancelled, Mr, Mw, Pd};
use super::srq::VerbsSrq;
use crate::abi::Zeroable;
use crate::objects::seam::SharedQueue;

/// Scatter/gather entries one request carries at most (the most any EP may ask: its QP is
/// made with what it asks, which the device's own limit bounds in `dat_ia_query`).
pub const MAX_SGE: usize = crate::objects::limits::MAX_IOV_SEGMENTS as usize;

/// One piece of a request's local memory (address, length, and the region's lkey), as the
/// device reads it: a request's list is made once, in this form.
pub type Sge = ibv::ibv_sge;

/// What a send-queue request does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendOp {
    Send,
    /// A send that invalidates the peer's memory window of key `rkey` as it lands.
    SendWithInvalidate {
        rkey: u32,
    },
    Write {
        remote_address: u64,
        rkey: u32,
    },
    Read {
        remote_address: u64,
        rkey: u32,
    },
    /// An RDMA write whose immediate data (as the consumer gave it: OpenFabrics passes it
    /// through unswapped) the peer's receive reports.
    WriteImmediate {
        remote_address: u64,
        rkey: u32,
        data: u32,
    },
    /// The atomics: the original word lands in the local segment.
    FetchAdd {
        remote_address: u64,
        rkey: u32,
        add: u64,
    },
    CompareSwap {
        remote_address: u64,
        rkey: u32,
        compare: u64,
        swap: u64,
    },
    /// A datagram (a UD QP's send) to QP `qpn` at the port `ah` reaches.
    Datagram {
        ah: *mut ibv::ibv_ah,
        qpn: u32,
        qkey: u32,
    },
}

/// Flags of a send-queue request.
#[derive(Clone, Copy, Debug, Default)]
pub struct SendFlags {
    pub signalled: bool,
    pub solicited: bool,
    pub fence: bool,
}

/// The sizes a QP is made with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpCaps {
    pub send_wr: u32,
    pub recv_wr: u32,
    pub send_sge: u32,
    pub recv_sge: u32,
    pub inline: u32,
    /// Unreliable datagram (a UD EP's) rather than reliable connected.
    pub datagram: bool,
}

pub struct Qp {
    raw: *mut ibv::ibv_qp,
    /// What a send may carry inline (the device granted it).
    pub max_inline: u32,
    pub pd: Arc<Pd>,
    pub send_cq: Arc<Cq>,
    pub recv_cq: Arc<Cq>,
    /// The SRQ it takes receives from, held as long as the QP is.
    pub srq: Option<Arc<dyn SharedQueue>>,
}

// SAFETY: a QP is used only through verbs calls; posting to one queue from two threads at
// once is serialized by its owner.
unsafe impl Send for Qp {}
// SAFETY: as above.
unsafe impl Sync for Qp {}

/// A list as a work request points to it: the C type is not const, but posting only reads it.
pub(super) fn sg_list(local: &[Sge]) -> *mut ibv::ibv_sge {
    local.as_ptr().cast_mut()
}

impl Qp {
    /// Makes the id's QP in `pd` with the two CQs, on `srq` if given (a [`VerbsSrq`]); the
    /// device may lower the inline size. rdma-cm readies a datagram QP to send and receive
    /// at once (its id must be bound).
    pub fn create(
        id: &CmId,
        pd: &Arc<Pd>,
        send_cq: &Arc<Cq>,
        recv_cq: &Arc<Cq>,
        srq: Option<&Arc<dyn SharedQueue>>,
        caps: QpCaps,
    ) -> io::Result<Qp> {
        let mut attr = ibv::ibv_qp_init_attr::zeroed();
        attr.qp_type = if caps.datagram {
            ibv::ibv_qp_type::IBV_QPT_UD
        } else {
            ibv::ibv_qp_type::IBV_QPT_RC
        };
        attr.send_cq = send_cq.raw();
        attr.recv_cq = recv_cq.raw();
        attr.cap.max_send_wr = caps.send_wr.max(1);
        attr.cap.max_recv_wr = caps.recv_wr.max(1);
        attr.cap.max_send_sge = caps.send_sge.max(1);
        attr.cap.max_recv_sge = caps.recv_sge.max(1);
        attr.cap.max_inline_data = caps.inline;
        attr.sq_sig_all = 0;
        if let Some(shared) = srq.and_then(|q| VerbsSrq::of(&**q)) {
            attr.srq = shared.raw();
            attr.cap.max_recv_wr = 0;
            attr.cap.max_recv_sge = 0;
        }
        // SAFETY: the id is bound to the PD's device; the CQs are of that device.
        if unsafe { ibv::rdma_create_qp(id.raw(), pd.raw(), &mut attr) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: rdma_create_qp set the id's QP.
        let raw = unsafe { (*id.raw()).qp };
        Ok(Qp {
            raw,
            max_inline: attr.cap.max_inline_data,
            pd: pd.clone(),
            send_cq: send_cq.clone(),
            recv_cq: recv_cq.clone(),
            srq: srq.cloned(),
        })
    }

    pub fn raw(&self) -> *mut ibv::ibv_qp {
        self.raw
    }

    /// Moves the QP from the id it was made on to `to` (an id of the same device and port),
    /// which destroys it when it goes; rdma-cm takes the QP through its states on the id
    /// that connects, from the id's own attributes. OpenFabrics moves its EPs' QPs to the
    /// ids of the requests they accept so.
    pub fn move_to(&self, from: &CmId, to: &CmId) {
        // SAFETY: both ids are live; the QP was made on `from` (rdma_create_qp set its
        // pointer), and `to` has none: after this only `to` names it.
        unsafe {
            (*to.raw()).qp = self.raw;
            (*to.raw()).pd = (*from.raw()).pd;
            (*from.raw()).qp = std::ptr::null_mut();
        }
    }

    /// What the connection gave the QP: its read depths (as initiator, as responder), its
    /// retransmission timeout exponent (0: none) and retry count.
    pub fn connected_attributes(&self) -> Option<(u8, u8, u8, u8)> {
        let mut attr = ibv::ibv_qp_attr::zeroed();
        let mut init = ibv::ibv_qp_init_attr::zeroed();
        let mask = ibv::ibv_qp_attr_mask::IBV_QP_MAX_QP_RD_ATOMIC.0
            | ibv::ibv_qp_attr_mask::IBV_QP_MAX_DEST_RD_ATOMIC.0
            | ibv::ibv_qp_attr_mask::IBV_QP_TIMEOUT.0
            | ibv::ibv_qp_attr_mask::IBV_QP_RETRY_CNT.0;
        // SAFETY: the QP is live; the out-structures are ours.
        (unsafe { ibv::ibv_query_qp(self.raw, &mut attr, mask as i32, &mut init) } == 0).then_some(
            (
                attr.max_rd_atomic,
                attr.max_dest_rd_atomic,
                attr.timeout,
                attr.retry_cnt,
            ),
        )
    }

    pub fn number(&self) -> u32 {
        // SAFETY: the QP is live.
        unsafe { (*self.raw).qp_num }
    }

    /// Posts one send-queue request; `wr_id` comes back in its completion.
    pub fn post_send(
        &self,
        wr_id: u64,
        op: SendOp,
        local: &[Sge],
        flags: SendFlags,
    ) -> io::Result<()> {
        let total = local.iter().map(|s| u64::from(s.length)).sum();
        self.post_send_sized(wr_id, op, local, total, flags)
    }

    /// [`Qp::post_send`] of a request whose entries hold `total` bytes together, which the
    /// poster counted already.
    // Inlined into each poster: the request's operation goes straight into the work request,
    // with no call and no `SendOp` passed between.
    #[inline(always)]
    pub fn post_send_sized(
        &self,
        wr_id: u64,
        op: SendOp,
        local: &[Sge],
        total: u64,
        flags: SendFlags,
    ) -> io::Result<()> {
        // Written member by member, each union whole (its largest member zeroed): zeroing the
        // whole request first cost a call to memset on every post.
        let mut wr = ibv::ibv_send_wr {
            wr_id,
            next: std::ptr::null_mut(),
            sg_list: sg_list(local),
            num_sge: local.len() as i32,
            opcode: ibv::ibv_wr_opcode::IBV_WR_SEND,
            send_flags: 0,
            imm_data_invalidated_rkey_union: ibv::imm_data_invalidated_rkey_union_t { imm_data: 0 },
            wr: ibv::wr_t {
                atomic: ibv::atomic_t {
                    remote_addr: 0,
                    compare_add: 0,
                    swap: 0,
                    rkey: 0,
                },
            },
            qp_type: ibv::qp_type_t {
                xrc: ibv::xrc_t { remote_srqn: 0 },
            },
            bind_mw_tso_union: ibv::bind_mw_tso_union_t {
                bind_mw: ibv::bind_mw_t {
                    mw: std::ptr::null_mut(),
                    rkey: 0,
                    bind_info: ibv::ibv_mw_bind_info {
                        mr: std::ptr::null_mut(),
                        addr: 0,
                        length: 0,
                        mw_access_flags: 0,
                    },
                },
            },
        };
        let mut send_flags = 0;
        if flags.signalled {
            send_flags |= ibv::ibv_send_flags::IBV_SEND_SIGNALED.0;
        }
        if flags.solicited {
            send_flags |= ibv::ibv_send_flags::IBV_SEND_SOLICITED.0;
        }
        if flags.fence {
            send_flags |= ibv::ibv_send_flags::IBV_SEND_FENCE.0;
        }
        match op {
            SendOp::Send => wr.opcode = ibv::ibv_wr_opcode::IBV_WR_SEND,
            SendOp::SendWithInvalidate { rkey } => {
                wr.opcode = ibv::ibv_wr_opcode::IBV_WR_SEND_WITH_INV;
                wr.imm_data_invalidated_rkey_union.invalidated_rkey = rkey;
            }
            SendOp::Write {
                remote_address,
                rkey,
            } => {
                wr.opcode = ibv::ibv_wr_opcode::IBV_WR_RDMA_WRITE;
                wr.wr.rdma = ibv::rdma_t {
                    remote_addr: remote_address,
                    rkey,
                };
            }
            SendOp::Read {
                remote_address,
                rkey,
            } => {
                wr.opcode = ibv::ibv_wr_opcode::IBV_WR_RDMA_READ;
                wr.wr.rdma = ibv::rdma_t {
                    remote_addr: remote_address,
                    rkey,
                };
            }
            SendOp::WriteImmediate {
                remote_address,
                rkey,
                data,
            } => {
                wr.opcode = ibv::ibv_wr_opcode::IBV_WR_RDMA_WRITE_WITH_IMM;
                wr.wr.rdma = ibv::rdma_t {
                    remote_addr: remote_address,
                    rkey,
                };
                wr.imm_data_invalidated_rkey_union.imm_data = data;
            }
            SendOp::FetchAdd {
                remote_address,
                rkey,
                add,
            } => {
                wr.opcode = ibv::ibv_wr_opcode::IBV_WR_ATOMIC_FETCH_AND_ADD;
                wr.wr.atomic = ibv::atomic_t {
                    remote_addr: remote_address,
                    compare_add: add,
                    swap: 0,
                    rkey,
                };
            }
            SendOp::CompareSwap {
                remote_address,
                rkey,
                compare,
                swap,
            } => {
                wr.opcode = ibv::ibv_wr_opcode::IBV_WR_ATOMIC_CMP_AND_SWP;
                wr.wr.atomic = ibv::atomic_t {
                    remote_addr: remote_address,
                    compare_add: compare,
                    swap,
                    rkey,
                };
            }
            SendOp::Datagram { ah, qpn, qkey } => {
                wr.opcode = ibv::ibv_wr_opcode::IBV_WR_SEND;
                wr.wr.ud = ibv::ud_t {
                    ah,
                    remote_qpn: qpn,
                    remote_qkey: qkey,
                };
            }
        }
        // Small sends and writes go inline: the device copies them at the post, and the
        // region need not be read later (what lands locally cannot).
        let lands_locally = matches!(
            op,
            SendOp::Read { .. } | SendOp::FetchAdd { .. } | SendOp::CompareSwap { .. }
        );
        if !lands_locally && total <= u64::from(self.max_inline) && total > 0 {
            send_flags |= ibv::ibv_send_flags::IBV_SEND_INLINE.0;
        }
        wr.send_flags = send_flags;
        self.post(&mut wr)
    }

    /// Posts one send-queue work request, whose pointers live through the call (it copies
    /// them).
    fn post(&self, wr: &mut ibv::ibv_send_wr) -> io::Result<()> {
        let mut bad: *mut ibv::ibv_send_wr = std::ptr::null_mut();
        let _off = uncancelled(&self.send_cq.device);
        // SAFETY: the QP is live; the request and what it points to live through the call.
        match unsafe { ibv::ibv_post_send(self.raw, wr, &mut bad) } {
            0 => Ok(()),
            e => Err(io::Error::from_raw_os_error(e)),
        }
    }

    /// Binds the type 2 memory window `mw` to `length` bytes at `address` of `mr` with
    /// `access` (IBV_ACCESS_REMOTE_* flags) under key `rkey`, or invalidates the window's key
    /// `rkey` (no region); `wr_id` comes back in its completion (always signalled, as every
    /// request: each completion names the oldest request).
    pub fn post_window(
        &self,
        wr_id: u64,
        mw: &Mw,
        region: Option<(&Mr, u64, u64, u32)>,
        rkey: u32,
    ) -> io::Result<()> {
        let mut wr = ibv::ibv_send_wr::zeroed();
        wr.wr_id = wr_id;
        wr.send_flags = ibv::ibv_send_flags::IBV_SEND_SIGNALED.0;
        match region {
            Some((mr, address, length, access)) => {
                wr.opcode = ibv::ibv_wr_opcode::IBV_WR_BIND_MW;
                wr.bind_mw_tso_union.bind_mw = ibv::bind_mw_t {
                    mw: mw.raw(),
                    rkey,
                    bind_info: ibv::ibv_mw_bind_info {
                        mr: mr.raw(),
                        addr: address,
                        length,
                        mw_access_flags: access,
                    },
                };
            }
            None => {
                wr.opcode = ibv::ibv_wr_opcode::IBV_WR_LOCAL_INV;
                wr.imm_data_invalidated_rkey_union.invalidated_rkey = rkey;
            }
        }
        // The window and region are live (the caller holds them).
        self.post(&mut wr)
    }

    /// Posts one receive; `wr_id` comes back in its completion.
    #[inline]
    pub fn post_recv(&self, wr_id: u64, local: &[Sge]) -> io::Result<()> {
        let mut wr = ibv::ibv_recv_wr {
            wr_id,
            next: std::ptr::null_mut(),
            sg_list: sg_list(local),
            num_sge: local.len() as i32,
        };
        let mut bad: *mut ibv::ibv_recv_wr = std::ptr::null_mut();
        let _off = uncancelled(&self.recv_cq.device);
        // SAFETY: as `post_send`.
        match unsafe { ibv::ibv_post_recv(self.raw, &mut wr, &mut bad) } {
            0 => Ok(()),
            e => Err(io::Error::from_raw_os_error(e)),
        }
    }
}
