//! A connect request from a peer, waiting for the consumer: accepted onto an EP (its QP made,
//! the read depths as far as the device goes), or rejected (with OpenFabrics' reject header).

use std::net::SocketAddrV4;
use std::sync::Arc;

use super::cm_events::{REJECT_HEADER, RETRY, RNR_RETRY};
use super::Conn;
use crate::abi::*;
use crate::error::DatResult;
use crate::objects::ep::{End, Ep};
use crate::objects::seam::{ConnRequest, Link};
use crate::runtime::sys::debug;
use crate::transport::verbs::cm::{CmEvent, CmId, ConnParam};
use crate::transport::verbs::transport::Verbs;

/// A connect request, waiting for the consumer.
pub struct Request {
    verbs: Arc<Verbs>,
    id: CmId,
    private_data: Vec<u8>,
    remote: SocketAddrV4,
    /// The requester's read depths (already swapped to our point of view by rdma-cm).
    responder_resources: u8,
    initiator_depth: u8,
}

impl Request {
    pub fn new(verbs: Arc<Verbs>, id: CmId, event: CmEvent) -> Request {
        let remote = id
            .remote()
            .unwrap_or(SocketAddrV4::new(std::net::Ipv4Addr::UNSPECIFIED, 0));
        Request {
            verbs,
            id,
            private_data: event.private_data,
            remote,
            responder_resources: event.responder_resources,
            initiator_depth: event.initiator_depth,
        }
    }
}

impl ConnRequest for Request {
    fn remote(&self) -> SocketAddrV4 {
        self.remote
    }

    fn private_data(&self) -> &[u8] {
        &self.private_data
    }

    fn accept(self: Box<Self>, ep: Arc<Ep>, private_data: &[u8]) -> DatResult {
        let Request {
            verbs,
            id,
            remote,
            responder_resources,
            initiator_depth,
            ..
        } = *self;
        let failed = |ep: &Ep| {
            ep.ended(
                End::Broken,
                dat_event_number::DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR,
                &[],
            )
        };
        let conn = match Conn::new(&verbs, id, &ep, None, Vec::new()) {
            Ok(c) => c,
            Err(_) => {
                failed(&ep);
                return Ok(());
            }
        };
        if conn.make_qp(&ep).is_err() {
            let _ = conn.id.reject(&[]);
            failed(&ep);
            return Ok(());
        }
        let dev = &verbs.device.attr;
        let param = ConnParam {
            private_data: private_data.to_vec(),
            responder_resources: (i32::from(responder_resources)).min(dev.max_qp_rd_atom) as u8,
            initiator_depth: (i32::from(initiator_depth)).min(dev.max_qp_init_rd_atom) as u8,
            retry_count: RETRY,
            rnr_retry_count: RNR_RETRY,
            ..ConnParam::default()
        };
        if debug() {
            eprintln!("libdat: accepting from {remote}: responder resources {}, initiator depth {} (asked {responder_resources}, {initiator_depth})", param.responder_resources, param.initiator_depth);
        }
        let link: Arc<dyn Link> = conn.clone();
        if !ep.accepting(link, remote) {
            let _ = conn.id.reject(&[]);
            return Ok(());
        }
        if conn.id.accept(&param).is_err() {
            failed(&ep);
        }
        Ok(())
    }

    fn reject(self: Box<Self>, private_data: &[u8]) {
        let mut data = REJECT_HEADER.to_vec();
        data.extend_from_slice(private_data);
        let _ = self.id.reject(&data);
    }
}
