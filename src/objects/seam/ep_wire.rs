//! What a provider keeps in each EP: its own state, made by the IA's transport with the EP
//! (`Transport::endpoint_state`) and kept under the EP's lock, so it changes together with the
//! EP's posted receives and requests. The objects ask it only what the data path and the end
//! of a connection need; the provider reaches its own type through [`EpWire::get`] and
//! [`EpWire::get_mut`].

use std::any::Any;
use std::collections::VecDeque;
use std::sync::Arc;

use super::Link;
use crate::abi::{DAT_COUNT, DAT_LMR_TRIPLET};
use crate::error::DatResult;
use crate::objects::ep::{Ep, EpInner, Outgoing, Posted};
use crate::objects::evd::Evd;
use crate::objects::requests::Requests;
use crate::objects::srq::PostedRecv;

/// A provider's state in one EP. The defaults suit a provider that keeps nothing there.
pub trait EpTransportState: Any + Send {
    /// Whether messages arrived that wait for a receive to be posted.
    fn messages_waiting(&self) -> bool {
        false
    }

    /// Whether a receive posted now must keep its segments: a provider that lands messages
    /// in them does, a QP that has its own copy does not.
    fn keeps_receive_segments(&self) -> bool {
        true
    }

    /// A receive of `segments` was posted (the last of the EP's `recvs`): a provider that
    /// posts receives to hardware does it now (their completions come in posting order), one
    /// that publishes them to its peer publishes it.
    fn receive_posted(
        &mut self,
        _recvs: &VecDeque<PostedRecv>,
        _segments: &[DAT_LMR_TRIPLET],
    ) -> DatResult {
        Ok(())
    }

    /// Receives the provider filled that the EP has not heard of yet (a peer on this host that
    /// wrote into them directly) complete now, on `recv_evd`, under the EP's lock: a receive
    /// whose message is in place no longer counts as posted.
    fn take_landed(
        &mut self,
        _ep: &Ep,
        _recvs: &mut VecDeque<PostedRecv>,
        _recv_evd: Option<&Evd>,
    ) {
    }

    /// Whether [`EpTransportState::post_direct`] ever takes a request: asked once, as the state
    /// is made, so the posts of a provider that never does make no call for it.
    fn posts_directly(&self) -> bool {
        false
    }

    /// Posts a request at once, under the EP's lock, where `link` is the connection this state
    /// posts on and it has room: the data path's call, without a reference to the link taken.
    /// `None`: `Link::post` takes the request.
    fn post_direct(
        &self,
        _link: &Arc<dyn Link>,
        _outstanding: &mut Requests,
        _max_request_dtos: DAT_COUNT,
        _out: &Outgoing<'_>,
    ) -> Option<DatResult<Posted>> {
        None
    }

    /// The connection is gone: what it kept goes.
    fn clear(&mut self);

    /// The provider's own type, for the provider's use.
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

/// The state of a provider that keeps nothing in its EPs.
pub struct NoEpState;

impl EpTransportState for NoEpState {
    fn clear(&mut self) {}

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// An EP's provider state, as the objects hold it.
pub struct EpWire {
    state: Box<dyn EpTransportState>,
    /// `state.posts_directly()`, kept here: every post reads it.
    posts_directly: bool,
}

impl EpWire {
    pub fn new(state: Box<dyn EpTransportState>) -> EpWire {
        EpWire {
            posts_directly: state.posts_directly(),
            state,
        }
    }

    /// Whether messages arrived that wait for a receive to be posted.
    #[inline]
    pub fn messages_waiting(&self) -> bool {
        self.state.messages_waiting()
    }

    /// Whether a receive posted now must keep its segments.
    #[inline]
    pub fn keeps_receive_segments(&self) -> bool {
        self.state.keeps_receive_segments()
    }

    /// A receive of `segments` was posted, the last of `recvs`.
    #[inline]
    pub fn receive_posted(
        &mut self,
        recvs: &VecDeque<PostedRecv>,
        segments: &[DAT_LMR_TRIPLET],
    ) -> DatResult {
        self.state.receive_posted(recvs, segments)
    }

    /// Receives the provider filled that the EP has not heard of yet complete now, under the
    /// EP's lock the caller holds (`inner`, the EP's).
    pub fn take_landed(ep: &Ep, inner: &mut EpInner) {
        let EpInner {
            wire,
            recvs,
            recv_evd,
            ..
        } = inner;
        wire.state.take_landed(ep, recvs, recv_evd.as_deref());
    }

    /// Posts a request straight on the EP's connection, under the EP's lock, where its
    /// provider does that and `link` is the connection its state posts on. `None`:
    /// `Link::post` takes the request. Inlined: for a provider that never posts directly it is
    /// one test of a flag.
    #[inline(always)]
    pub fn post_direct(
        &self,
        link: Option<&Arc<dyn Link>>,
        outstanding: &mut Requests,
        max_request_dtos: DAT_COUNT,
        out: &Outgoing<'_>,
    ) -> Option<DatResult<Posted>> {
        if !self.posts_directly {
            return None;
        }
        self.state
            .post_direct(link?, outstanding, max_request_dtos, out)
    }

    /// The connection is gone: what it kept goes.
    pub fn clear(&mut self) {
        self.state.clear();
    }

    /// The provider's state, where it is of type `T`.
    #[inline]
    pub fn get<T: EpTransportState>(&self) -> Option<&T> {
        self.state.as_any().downcast_ref()
    }

    /// The provider's state, where it is of type `T`.
    #[inline]
    pub fn get_mut<T: EpTransportState>(&mut self) -> Option<&mut T> {
        self.state.as_any_mut().downcast_mut()
    }

    /// The provider's state of type `T`, made now (replacing another provider's) where the EP
    /// holds none: an EP of one provider's IA connected through another's (a connection
    /// request accepted on an EP of another IA) takes that provider's state.
    pub fn adopt<T: EpTransportState + Default>(&mut self) -> &mut T {
        if !self.state.as_any().is::<T>() {
            *self = EpWire::new(Box::new(T::default()));
        }
        self.get_mut().expect("made above")
    }
}
