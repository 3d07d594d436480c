//! Shared Receive Queues: receive buffers that several EPs draw from.

use std::collections::VecDeque;
use std::sync::Arc;

use parking_lot::Mutex;

use super::ia::Ia;
use super::pz::Pz;
use super::{Counted, Held, Users};
use crate::abi::*;
use crate::handle::{Kind, Object, SelfHandle};

/// A posted receive: where its data goes and the cookie its completion returns.
#[derive(Clone)]
pub struct PostedRecv {
    pub cookie: u64,
    pub segments: Vec<DAT_LMR_TRIPLET>,
}

// SAFETY: the triplets are plain integers naming registered memory; nothing is dereferenced
// here.
unsafe impl Send for PostedRecv {}

pub struct SrqState {
    pub max_recv_dtos: i32,
    pub max_recv_iov: i32,
    pub low_watermark: i32,
    pub posted: VecDeque<PostedRecv>,
}

pub struct Srq {
    pub ia: Arc<Ia>,
    pub pz: Held<Pz>,
    pub state: Mutex<SrqState>,
    users: Users,
    handle: SelfHandle,
}

impl Object for Srq {
    const KIND: Kind = Kind::Srq;
    fn self_handle(&self) -> Option<&SelfHandle> {
        Some(&self.handle)
    }
}

impl Counted for Srq {
    fn users(&self) -> &Users {
        &self.users
    }
}

impl Srq {
    pub fn new(ia: Arc<Ia>, pz: Arc<Pz>, attr: &DAT_SRQ_ATTR) -> Srq {
        Srq {
            ia,
            pz: Held::new(pz),
            state: Mutex::new(SrqState {
                max_recv_dtos: attr.max_recv_dtos,
                max_recv_iov: attr.max_recv_iov,
                low_watermark: attr.low_watermark,
                posted: VecDeque::new(),
            }),
            users: Users::default(),
            handle: SelfHandle::default(),
        }
    }

    pub fn handle(&self) -> DAT_SRQ_HANDLE {
        self.handle.get()
    }

    pub fn pz(&self) -> &Arc<Pz> {
        self.pz.arc()
    }

    /// The oldest posted receive, for an EP of this SRQ that gets a message.
    pub fn take(&self) -> Option<PostedRecv> {
        self.state.lock().posted.pop_front()
    }
}
