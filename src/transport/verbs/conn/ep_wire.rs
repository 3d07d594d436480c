//! What the verbs transport keeps in each EP, under the EP's lock: the QP made with the EP,
//! which its first connection takes, and the connection (its rdma-cm id and QP) from the
//! connect or accept on. The objects hold it as the EP's provider state
//! (`objects::seam::EpWire`); this provider reaches it through [`VerbsWire`].

use std::any::Any;
use std::collections::VecDeque;
use std::sync::Arc;

use super::{Conn, Prepared};
use crate::abi::{DAT_COUNT, DAT_LMR_TRIPLET};
use crate::error::DatResult;
use crate::objects::ep::{Outgoing, Posted};
use crate::objects::requests::Requests;
use crate::objects::seam::{EpTransportState, EpWire, Link};
use crate::objects::srq::PostedRecv;

#[derive(Default)]
pub struct VerbsEp {
    /// The connection from the connect or accept on.
    pub conn: Option<Arc<Conn>>,
    /// A QP made with the EP, which its first connection takes.
    pub prepared: Option<Prepared>,
}

impl EpTransportState for VerbsEp {
    /// A connection without its QP yet posts the receives when the QP is made, from their
    /// segments; a QP has its own copy.
    #[inline]
    fn keeps_receive_segments(&self) -> bool {
        !self.conn.as_ref().is_some_and(|c| c.has_qp())
    }

    #[inline]
    fn receive_posted(
        &mut self,
        _recvs: &VecDeque<PostedRecv>,
        segments: &[DAT_LMR_TRIPLET],
    ) -> DatResult {
        match &self.conn {
            Some(conn) => conn.post_recv(segments),
            None => Ok(()),
        }
    }

    fn posts_directly(&self) -> bool {
        true
    }

    /// Posts on the QP where `link` is this connection and its send queue has room
    /// (`Conn::post_ready`, inlined here).
    #[inline]
    fn post_direct(
        &self,
        link: &Arc<dyn Link>,
        outstanding: &mut Requests,
        max_request_dtos: DAT_COUNT,
        out: &Outgoing<'_>,
    ) -> Option<DatResult<Posted>> {
        let conn = self.conn.as_ref()?;
        if !std::ptr::addr_eq(Arc::as_ptr(link), Arc::as_ptr(conn)) {
            return None;
        }
        conn.post_ready(outstanding, max_request_dtos, out)
    }

    /// The QP made with the EP stays for its next connection.
    fn clear(&mut self) {
        self.conn = None;
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// This provider's state in an EP's [`EpWire`].
pub trait VerbsWire {
    /// The EP's verbs state: the one it was made with, or, for an EP of another provider's
    /// IA whose connection is ours (accepted on it), one made now (`EpWire::adopt`).
    fn verbs(&mut self) -> &mut VerbsEp;
    /// The EP's verbs connection (None where the EP holds another provider's state).
    fn verbs_conn(&self) -> Option<Arc<Conn>>;
}

impl VerbsWire for EpWire {
    fn verbs(&mut self) -> &mut VerbsEp {
        self.adopt()
    }

    fn verbs_conn(&self) -> Option<Arc<Conn>> {
        self.get::<VerbsEp>()?.conn.clone()
    }
}
