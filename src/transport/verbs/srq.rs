//! A shared receive queue: a verbs SRQ in the PZ's protection domain, which the QPs of the
//! SRQ's EPs are made on. A message takes the SRQ's next receive whichever QP it reaches, so
//! each receive's work request id names its slot here, where its cookie waits; a sender that
//! finds no receive is told "receiver not ready" by the device and retries (RNR retry 7: for
//! ever), so no message is lost while the consumer posts.

use std::any::Any;
use std::io;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use rdma_mummy_sys as ibv;
use slab::Slab;

use super::conn::SgList;
use super::device::{uncancelled, Pd};
use super::qp::{sg_list, MAX_SGE};
use crate::abi::{Zeroable, DAT_LMR_TRIPLET};
use crate::error::{DatError, DatResult, Sub};
use crate::objects::seam::SharedQueue;

/// The work request id of an SRQ's receive: this bit, and its slot. A QP's own receives and
/// its requests use ids without it (completions.rs).
pub const SRQ_RECV_ID: u64 = 1 << 62;

pub struct VerbsSrq {
    raw: *mut ibv::ibv_srq,
    /// Held: the SRQ is destroyed before its domain.
    pd: Arc<Pd>,
    /// The cookies of the receives posted and not yet completed, by slot.
    cookies: Mutex<Slab<u64>>,
    /// The receives the device made room for.
    capacity: AtomicU32,
}

// SAFETY: the SRQ is used only through verbs calls, which are thread-safe; posting is
// serialized by `cookies`' lock.
unsafe impl Send for VerbsSrq {}
// SAFETY: as above.
unsafe impl Sync for VerbsSrq {}

impl VerbsSrq {
    pub fn create(pd: &Arc<Pd>, max_recv: u32, max_iov: u32) -> io::Result<Arc<VerbsSrq>> {
        let mut attr = ibv::ibv_srq_init_attr::zeroed();
        attr.attr.max_wr = max_recv.max(1);
        attr.attr.max_sge = max_iov.clamp(1, MAX_SGE as u32);
        // SAFETY: the PD is live; the attributes are ours and read during the call.
        let raw = unsafe { ibv::ibv_create_srq(pd.raw(), &mut attr) };
        if raw.is_null() {
            return Err(io::Error::last_os_error());
        }
        let capacity = AtomicU32::new(attr.attr.max_wr);
        Ok(Arc::new(VerbsSrq {
            raw,
            pd: pd.clone(),
            cookies: Mutex::new(Slab::new()),
            capacity,
        }))
    }

    pub fn raw(&self) -> *mut ibv::ibv_srq {
        self.raw
    }

    /// The verbs SRQ behind an SRQ's queue, if it is one.
    pub fn of(queue: &dyn SharedQueue) -> Option<&VerbsSrq> {
        queue.as_any().downcast_ref::<VerbsSrq>()
    }

    /// The cookie of the receive a completion with `wr_id` names, which leaves the queue.
    pub fn completed(&self, wr_id: u64) -> Option<u64> {
        let slot = (wr_id & !SRQ_RECV_ID) as usize;
        self.cookies.lock().try_remove(slot)
    }
}

impl SharedQueue for VerbsSrq {
    fn post_recv(&self, cookie: u64, segments: &[DAT_LMR_TRIPLET]) -> DatResult {
        let mut sg = SgList::new();
        let list = sg.fill(segments)?;
        let mut cookies = self.cookies.lock();
        let slot = cookies.insert(cookie);
        let mut wr = ibv::ibv_recv_wr {
            wr_id: SRQ_RECV_ID | slot as u64,
            next: std::ptr::null_mut(),
            sg_list: sg_list(list),
            num_sge: list.len() as i32,
        };
        let mut bad: *mut ibv::ibv_recv_wr = std::ptr::null_mut();
        let _off = uncancelled(&self.pd.device);
        // SAFETY: the SRQ is live; `wr` and its list live through the call, which copies them.
        match unsafe { ibv::ibv_post_srq_recv(self.raw, &mut wr, &mut bad) } {
            0 => Ok(()),
            _ => {
                cookies.remove(slot);
                Err(DatError::resources(Sub::DAT_RESOURCE_SRQ))
            }
        }
    }

    fn posted(&self) -> usize {
        self.cookies.lock().len()
    }

    fn resize(&self, max_recv: u32) -> DatResult {
        // Only a queue that must grow is resized: devices refuse to shrink one, and the
        // objects keep the consumer's smaller count.
        if max_recv <= self.capacity.load(Ordering::Acquire) {
            return Ok(());
        }
        let mut attr = ibv::ibv_srq_attr::zeroed();
        attr.max_wr = max_recv;
        // SAFETY: the SRQ is live; the attributes are ours.
        match unsafe {
            ibv::ibv_modify_srq(
                self.raw,
                &mut attr,
                ibv::ibv_srq_attr_mask::IBV_SRQ_MAX_WR.0 as i32,
            )
        } {
            0 => {
                self.capacity.fetch_max(max_recv, Ordering::AcqRel);
                Ok(())
            }
            _ => Err(DatError::resources(Sub::DAT_RESOURCE_SRQ)),
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Drop for VerbsSrq {
    fn drop(&mut self) {
        // SAFETY: made by us, destroyed once, after every QP made on it (they hold us).
        unsafe { ibv::ibv_destroy_srq(self.raw) };
    }
}
