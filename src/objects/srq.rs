//! Shared Receive Queues: receive buffers that several EPs draw from.

use std::collections::VecDeque;
use std::sync::{Arc, Weak};

use parking_lot::{Mutex, MutexGuard};

use super::ep::Ep;
use super::ia::Ia;
use super::pz::Pz;
use super::{Counted, Held, Users};
use crate::abi::*;
use crate::error::{DatError, DatResult, Sub};
use crate::handle::{Kind, Object, SelfHandle};
use crate::objects::seam::SharedQueue;

/// A DTO's local segments, kept inline up to a few (the usual case), so posting one
/// allocates nothing.
pub type Segments = smallvec::SmallVec<[DAT_LMR_TRIPLET; 4]>;

/// A posted receive: where its data goes and the cookie its completion returns.
#[derive(Clone)]
pub struct PostedRecv {
    pub cookie: u64,
    pub segments: Segments,
    /// Which of its successful completions wake a waiter or a CNO.
    pub wakes: RecvWake,
}

/// Which successful completions of a receive are notification events (dat_evd_wait(3DAT)):
/// those wake the EVD's waiter and trigger its CNO; the others are queued without either, and
/// a dequeue, or a waiter woken by another event, finds them. A failure always wakes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RecvWake {
    /// Every one (the default).
    #[default]
    Always,
    /// Only one whose message was sent with DAT_COMPLETION_SOLICITED_WAIT_FLAG ("request for
    /// notification completion for matching receive", dat_ep_post_send(3DAT)): the EP's Recv
    /// Completion Flags ask for Solicited Wait.
    Solicited,
    /// None: posted with DAT_COMPLETION_UNSIGNALLED_FLAG ("non-notification completion",
    /// dat_ep_post_recv(3DAT)).
    Never,
}

impl RecvWake {
    /// What a receive posted with `flags` on an EP of Recv Completion Flags `ep_flags` asks.
    /// Recv Completion Flags change only before the first receive is posted
    /// (dat_ep_modify(3DAT)), so the receive keeps what they said as it was posted.
    pub fn of(flags: DAT_COMPLETION_FLAGS, ep_flags: u32) -> RecvWake {
        if flags & dat_completion_flags::DAT_COMPLETION_UNSIGNALLED_FLAG as DAT_COMPLETION_FLAGS
            != 0
        {
            RecvWake::Never
        } else if ep_flags & dat_completion_flags::DAT_COMPLETION_SOLICITED_WAIT_FLAG as u32 != 0 {
            RecvWake::Solicited
        } else {
            RecvWake::Always
        }
    }

    /// Whether a successful completion wakes, its message sent `solicited` (a transport that
    /// cannot tell says true: its completion queue decides whom it wakes).
    pub fn wakes(self, solicited: bool) -> bool {
        match self {
            RecvWake::Always => true,
            RecvWake::Solicited => solicited,
            RecvWake::Never => false,
        }
    }
}

// SAFETY: the triplets are plain integers naming registered memory; nothing is dereferenced
// here.
unsafe impl Send for PostedRecv {}

pub struct SrqState {
    pub max_recv_dtos: i32,
    pub max_recv_iov: i32,
    pub low_watermark: i32,
    /// Whether the low watermark's event is still to come (`dat_srq_set_lw` arms it, once).
    pub low_watermark_armed: bool,
    pub posted: VecDeque<PostedRecv>,
}

pub struct Srq {
    pub ia: Arc<Ia>,
    pub pz: Held<Pz>,
    pub state: Mutex<SrqState>,
    /// The transport's queue, where it keeps the receives (verbs); None: they wait in
    /// `state.posted` for the EPs' links (TCP).
    pub queue: Option<Arc<dyn SharedQueue>>,
    /// EPs keeping messages that arrived before a receive was posted here, in the order
    /// they began to wait.
    waiting: Mutex<VecDeque<Weak<Ep>>>,
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
    pub fn new(
        ia: Arc<Ia>,
        pz: Arc<Pz>,
        attr: &DAT_SRQ_ATTR,
        queue: Option<Arc<dyn SharedQueue>>,
    ) -> Srq {
        Srq {
            ia,
            pz: Held::new(pz),
            queue,
            state: Mutex::new(SrqState {
                max_recv_dtos: attr.max_recv_dtos,
                max_recv_iov: attr.max_recv_iov,
                low_watermark: attr.low_watermark,
                low_watermark_armed: attr.low_watermark > 0,
                // Room for every receive the SRQ may hold: a post never grows it.
                posted: VecDeque::with_capacity(attr.max_recv_dtos.max(1) as usize),
            }),
            waiting: Mutex::new(VecDeque::new()),
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

    /// Receives posted and not yet taken by a message.
    pub fn available(&self, state: &SrqState) -> usize {
        state.posted.len() + self.queue.as_ref().map_or(0, |q| q.posted())
    }

    /// Posts a receive (checked by the caller, who holds `state`'s lock and lets go of it
    /// here): to the transport's queue, or to ours, where an EP that keeps a message gets it.
    pub fn post(&self, state: MutexGuard<'_, SrqState>, recv: PostedRecv) -> DatResult {
        if self.available(&state) >= state.max_recv_dtos as usize {
            return Err(DatError::resources(Sub::DAT_RESOURCE_SRQ));
        }
        if let Some(queue) = &self.queue {
            return queue.post_recv(recv.cookie, &recv.segments);
        }
        let mut state = state;
        state.posted.push_back(recv);
        drop(state);
        self.receive_posted();
        Ok(())
    }

    /// The oldest posted receive, for an EP of this SRQ that gets a message.
    pub fn take(&self) -> Option<PostedRecv> {
        let taken = self.state.lock().posted.pop_front();
        if taken.is_some() {
            self.check_low_watermark();
        }
        taken
    }

    /// A receive was taken (or the watermark set): once the receives left fall below an armed
    /// low watermark, the IA's async EVD gets the SRQ's event, and the watermark disarms
    /// until it is set again (`dat_srq_set_lw`). DAT 2.0 names the reason,
    /// `DAT_SRQ_LOW_WATERMARK_EVENT`, with the SRQ's handle; the event's number is the one
    /// OpenFabrics gives the device's SRQ limit event, `DAT_ASYNC_ERROR_EP_BROKEN`.
    pub fn check_low_watermark(&self) {
        {
            let mut state = self.state.lock();
            if !state.low_watermark_armed
                || self.available(&state) >= state.low_watermark.max(0) as usize
            {
                return;
            }
            state.low_watermark_armed = false;
        }
        if let Some(evd) = self.ia.async_evd_object() {
            evd.post_async_event(
                dat_event_number::DAT_ASYNC_ERROR_EP_BROKEN,
                self.handle(),
                srq_async_error_reason::DAT_SRQ_LOW_WATERMARK_EVENT as DAT_COUNT,
            );
        }
    }

    /// `ep` keeps a message until a receive is posted here.
    pub fn wait_for_receive(&self, ep: &Arc<Ep>) {
        let mut waiting = self.waiting.lock();
        if !waiting.iter().any(|w| w.as_ptr() == Arc::as_ptr(ep)) {
            waiting.push_back(Arc::downgrade(ep));
        }
    }

    /// A receive was posted: the EPs that keep messages get them landed, first come first
    /// served (the caller must hold no EP or SRQ lock).
    pub fn receive_posted(&self) {
        let eps: Vec<Arc<Ep>> = {
            let mut waiting = self.waiting.lock();
            waiting.retain(|w| w.strong_count() > 0);
            waiting.iter().filter_map(Weak::upgrade).collect()
        };
        for ep in eps {
            let link = {
                let inner = ep.inner.lock();
                if !inner.wire.messages_waiting() {
                    None
                } else {
                    inner.link.clone()
                }
            };
            if let Some(link) = link {
                link.receive_posted(&ep);
            }
            // Checked under `waiting` (before the EP's lock): an EP that keeps another message
            // meanwhile registers again after this, not before.
            let mut waiting = self.waiting.lock();
            if !ep.inner.lock().wire.messages_waiting() {
                waiting.retain(|w| w.as_ptr() != Arc::as_ptr(&ep));
            }
        }
    }
}
