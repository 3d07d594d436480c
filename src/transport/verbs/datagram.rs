//! The IB extension's unreliable datagram (UD) EPs, over rdma-cm's datagram port space
//! (`RDMA_PS_UDP`). A UD EP's QP is made with the EP and is ready at once (`Conn::open_datagram`).
//! `dat_ep_connect` on it is an rdma-cm service ID resolution (SIDR) to the peer's service
//! point, whose answer names the accepting EP's QP and the address vector to its port;
//! `dat_cr_accept` answers a request with the accepting EP's QP. Each side's UD connection
//! event carries an address handle to the other EP's QP, made in the EP's protection domain,
//! which `dat_ib_post_send_ud` names and `dat_ib_ud_ah_free` destroys.
//!
//! A resolution tells only the requester about the other side, so the request carries a header
//! of ours before the consumer's private data: the requester's QP number and its port's GID
//! and LID, from which the accepting side makes its address handle. rdma-cm reports datagram
//! private data at the full size of its field, so the answer's is preceded by its length.

use std::collections::HashMap;
use std::net::SocketAddrV4;
use std::sync::{Arc, LazyLock, OnceLock, Weak};

use parking_lot::Mutex;

use super::cm::{CmEvent, CmHandler, CmId, ConnParam, DatagramReply, EventType};
use super::conn::{Conn, VerbsWire};
use super::device::Ah;
use super::transport::Verbs;
use crate::abi::*;
use crate::error::{DatError, DatResult, Sub};
use crate::objects::ep::Ep;
use crate::objects::extension::DatagramPeer;
use crate::objects::seam::ConnRequest;
use crate::runtime::address_handles::{next_exchange, AddressHandles};
use crate::runtime::sys::debug;

/// The Q_Key rdma-cm gives every QP of its datagram port space (RDMA_UDP_QKEY).
pub const QKEY: u32 = 0x0123_4567;
/// How long address and route resolution may take, in milliseconds.
const RESOLVE_MS: i32 = 4000;
/// The private data a resolution request carries after rdma-cm's own header (IB CM's 216
/// bytes less its 36), and its answer (IB CM's 136).
const REQUEST_SPACE: usize = 180;
const ANSWER_SPACE: usize = 136;
/// Our request header: version, the consumer's length, LID, QP number, GID.
const HELLO_LEN: usize = 24;
const VERSION: u8 = 1;
/// The consumer's private data a UD connect and a UD accept (or reject) carry at most.
pub const MAX_CONNECT_DATA: usize = REQUEST_SPACE - HELLO_LEN;
pub const MAX_ANSWER_DATA: usize = ANSWER_SPACE - 1;
/// The status of a resolution answer that refused (IB CM's SIDR "unsupported" and "reject").
const REFUSED: [i32; 2] = [1, 2];

/// How to reach a requester's QP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Hello {
    qpn: u32,
    lid: u16,
    gid: [u8; 16],
}

fn hello_with(hello: &Hello, private_data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HELLO_LEN + private_data.len());
    out.extend_from_slice(&[VERSION, private_data.len() as u8]);
    out.extend_from_slice(&hello.lid.to_be_bytes());
    out.extend_from_slice(&hello.qpn.to_be_bytes());
    out.extend_from_slice(&hello.gid);
    out.extend_from_slice(private_data);
    out
}

/// A request's header and the consumer's private data after it; None: not a request of ours.
fn read_hello(data: &[u8]) -> Option<(Hello, &[u8])> {
    let head = data.get(..HELLO_LEN)?;
    if head[0] != VERSION {
        return None;
    }
    let len = usize::from(head[1]);
    let hello = Hello {
        lid: u16::from_be_bytes([head[2], head[3]]),
        qpn: u32::from_be_bytes(head[4..8].try_into().ok()?),
        gid: head[8..24].try_into().ok()?,
    };
    Some((hello, data.get(HELLO_LEN..HELLO_LEN + len)?))
}

/// An answer's private data: its length, then the consumer's.
fn answer(private_data: &[u8]) -> Vec<u8> {
    let n = private_data.len().min(MAX_ANSWER_DATA);
    let mut out = vec![n as u8];
    out.extend_from_slice(&private_data[..n]);
    out
}

fn read_answer(data: &[u8]) -> &[u8] {
    let n = data.first().map_or(0, |&n| usize::from(n));
    data.get(1..1 + n).unwrap_or(&[])
}

/// The address handles of UD connection events on this transport.
static HANDLES: AddressHandles<Ah> = AddressHandles::new();

fn keep(ah: Ah, endpoint: &Conn) -> usize {
    let key = ah.raw() as usize;
    HANDLES.keep(key, Arc::new(ah), endpoint as *const Conn as usize);
    key
}

/// The live address handle the consumer's pointer names.
pub fn address_handle(ah: usize) -> Option<Arc<Ah>> {
    HANDLES.get(ah)
}

/// `dat_ib_ud_ah_free`: false when `ah` names no live handle.
pub fn free(ah: usize) -> bool {
    HANDLES.free(ah)
}

/// A datagram endpoint goes (its EP was freed): so do the handles it made.
pub fn forget_endpoint(endpoint: *const Conn) {
    HANDLES.forget_owner(endpoint as usize);
}

/// The exchanges under way, held until their answer.
static EXCHANGES: LazyLock<Mutex<HashMap<u64, Arc<Exchange>>>> = LazyLock::new(Default::default);

/// A UD EP's resolution of a peer's service point, from address resolution to the answer.
struct Exchange {
    id: OnceLock<CmId>,
    ep: Weak<Ep>,
    endpoint: Weak<Conn>,
    /// Our header and the consumer's private data.
    request: Vec<u8>,
    remote: SocketAddrV4,
    context: u64,
}

/// The datagram endpoint (QP) of a UD EP.
fn endpoint_of(ep: &Ep) -> Option<Arc<Conn>> {
    let inner = ep.inner.lock();
    Ep::is_datagram(&inner)
        .then(|| inner.wire.verbs_conn())
        .flatten()
}

/// How peers reach the QP of `endpoint`.
fn hello_of(verbs: &Verbs, endpoint: &Conn) -> std::io::Result<Hello> {
    let port = verbs.device.port_address()?;
    let qpn = endpoint
        .qp_number()
        .ok_or_else(|| std::io::Error::from_raw_os_error(libc::EINVAL))?;
    Ok(Hello {
        qpn,
        lid: port.lid,
        gid: port.gid,
    })
}

/// Starts a UD EP's exchange with the service point at `remote` (its port, the qualifier's).
pub fn connect(
    verbs: &Arc<Verbs>,
    ep: Arc<Ep>,
    remote: SocketAddrV4,
    private_data: Vec<u8>,
) -> DatResult {
    if private_data.len() > MAX_CONNECT_DATA {
        return Err(DatError::invalid_arg(5));
    }
    let endpoint = endpoint_of(&ep).ok_or(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_EP))?;
    let failed = |e: std::io::Error| {
        if debug() {
            eprintln!("libdat: UD connect to {remote}: {e}");
        }
        DatError::resources(Sub::DAT_RESOURCE_TEP)
    };
    let hello = hello_of(verbs, &endpoint).map_err(failed)?;
    let context = next_exchange();
    let exchange = Arc::new(Exchange {
        id: OnceLock::new(),
        ep: Arc::downgrade(&ep),
        endpoint: Arc::downgrade(&endpoint),
        request: hello_with(&hello, &private_data),
        remote,
        context,
    });
    let handler: Arc<dyn CmHandler> = exchange.clone();
    let id = CmId::datagram(Arc::downgrade(&handler)).map_err(failed)?;
    let id = exchange.id.get_or_init(|| id);
    EXCHANGES.lock().insert(context, exchange.clone());
    id.resolve_addr(Some(verbs.device.ip), remote, RESOLVE_MS)
        .map_err(|e| {
            EXCHANGES.lock().remove(&context);
            failed(e)
        })
}

impl Exchange {
    /// The exchange ended: its id goes (after the handler returns, with the last reference).
    fn finish(
        &self,
        ep: &Ep,
        number: dat_ib_event_number,
        private_data: &[u8],
        peer: Option<&DatagramPeer>,
    ) {
        EXCHANGES.lock().remove(&self.context);
        ep.datagram_event(number, private_data, peer);
    }

    /// The answer came: the address handle to the peer's QP.
    fn answered(&self, ep: &Ep, reply: DatagramReply, private_data: &[u8]) {
        use dat_ib_event_number as E;
        let made = self.endpoint.upgrade().and_then(|endpoint| {
            let pd = endpoint.protection_domain()?;
            match Ah::create(&pd, &reply.ah_attr) {
                Ok(ah) => Some(keep(ah, &endpoint)),
                Err(e) => {
                    if debug() {
                        eprintln!("libdat: an address handle to {}: {e}", self.remote);
                    }
                    None
                }
            }
        });
        let data = read_answer(private_data);
        match made {
            Some(ah) => {
                let peer = DatagramPeer {
                    ah,
                    qpn: reply.qp_num,
                    remote: self.remote,
                    passive: false,
                    context: self.context,
                };
                self.finish(
                    ep,
                    E::DAT_IB_UD_CONNECTION_EVENT_ESTABLISHED,
                    data,
                    Some(&peer),
                );
            }
            None => self.finish(ep, E::DAT_IB_UD_CONNECTION_ERROR_EVENT, &[], None),
        }
    }
}

impl CmHandler for Exchange {
    // An arm's rdma-cm call stays in its body, not in a guard.
    #[allow(clippy::collapsible_match)]
    fn on_cm_event(&self, event: CmEvent) {
        use dat_ib_event_number as E;
        use EventType as T;
        let Some(ep) = self.ep.upgrade() else {
            EXCHANGES.lock().remove(&self.context);
            return;
        };
        let Some(id) = self.id.get() else { return };
        if debug() {
            eprintln!(
                "libdat: UD EP {:p}: {} (status {})",
                ep.handle(),
                super::cm::event_name(event.kind),
                event.status
            );
        }
        match event.kind {
            T::RDMA_CM_EVENT_ADDR_RESOLVED => {
                if id.resolve_route(RESOLVE_MS).is_err() {
                    self.finish(&ep, E::DAT_IB_UD_CONNECTION_ERROR_EVENT, &[], None);
                }
            }
            T::RDMA_CM_EVENT_ROUTE_RESOLVED => {
                let param = ConnParam {
                    private_data: self.request.clone(),
                    ..ConnParam::default()
                };
                if id.connect(&param).is_err() {
                    self.finish(&ep, E::DAT_IB_UD_CONNECTION_ERROR_EVENT, &[], None);
                }
            }
            T::RDMA_CM_EVENT_ESTABLISHED => match event.datagram {
                Some(reply) => self.answered(&ep, reply, &event.private_data),
                None => self.finish(&ep, E::DAT_IB_UD_CONNECTION_ERROR_EVENT, &[], None),
            },
            T::RDMA_CM_EVENT_UNREACHABLE if REFUSED.contains(&event.status) => {
                self.finish(
                    &ep,
                    E::DAT_IB_UD_CONNECTION_REJECT_EVENT,
                    read_answer(&event.private_data),
                    None,
                );
            }
            T::RDMA_CM_EVENT_ADDR_ERROR
            | T::RDMA_CM_EVENT_ROUTE_ERROR
            | T::RDMA_CM_EVENT_UNREACHABLE
            | T::RDMA_CM_EVENT_CONNECT_ERROR
            | T::RDMA_CM_EVENT_REJECTED
            | T::RDMA_CM_EVENT_DEVICE_REMOVAL => {
                self.finish(&ep, E::DAT_IB_UD_CONNECTION_ERROR_EVENT, &[], None)
            }
            _ => {}
        }
    }
}

/// A UD EP's request at a service point, waiting for the consumer.
pub struct DatagramRequest {
    id: CmId,
    remote: SocketAddrV4,
    hello: Hello,
    private_data: Vec<u8>,
}

impl DatagramRequest {
    /// None: a request without our header (not a DAT UD EP's), which its id's drop refuses.
    pub fn new(id: CmId, event: &CmEvent) -> Option<DatagramRequest> {
        let (hello, private_data) = read_hello(&event.private_data)?;
        let remote = id
            .remote()
            .unwrap_or(SocketAddrV4::new(std::net::Ipv4Addr::UNSPECIFIED, 0));
        Some(DatagramRequest {
            private_data: private_data.to_vec(),
            id,
            remote,
            hello,
        })
    }

    /// The address handle from the accepting EP's port to the requester's.
    fn reach_requester(&self, endpoint: &Conn) -> std::io::Result<usize> {
        let port = endpoint.transport().device.port_address()?;
        let pd = endpoint
            .protection_domain()
            .ok_or_else(|| std::io::Error::from_raw_os_error(libc::EINVAL))?;
        let ah = Ah::create(&pd, &port.towards(self.hello.gid, self.hello.lid))?;
        Ok(keep(ah, endpoint))
    }
}

impl ConnRequest for DatagramRequest {
    fn remote(&self) -> SocketAddrV4 {
        self.remote
    }

    fn private_data(&self) -> &[u8] {
        &self.private_data
    }

    fn datagram(&self) -> bool {
        true
    }

    fn accept_data_limit(&self) -> usize {
        MAX_ANSWER_DATA
    }

    fn accept(self: Box<Self>, ep: Arc<Ep>, private_data: &[u8]) -> DatResult {
        use dat_ib_event_number as E;
        let endpoint =
            endpoint_of(&ep).ok_or(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_EP))?;
        let context = next_exchange();
        let param = ConnParam {
            private_data: answer(private_data),
            qp_num: endpoint.qp_number().unwrap_or(0),
            ..ConnParam::default()
        };
        let made = self
            .id
            .accept(&param)
            .and_then(|()| self.reach_requester(&endpoint));
        match made {
            Ok(ah) => {
                let peer = DatagramPeer {
                    ah,
                    qpn: self.hello.qpn,
                    remote: self.remote,
                    passive: true,
                    context,
                };
                ep.datagram_event(
                    E::DAT_IB_UD_CONNECTION_EVENT_ESTABLISHED,
                    &self.private_data,
                    Some(&peer),
                );
            }
            Err(e) => {
                if debug() {
                    eprintln!("libdat: accepting a UD request from {}: {e}", self.remote);
                }
                ep.datagram_event(E::DAT_IB_UD_CONNECTION_ERROR_EVENT, &[], None);
            }
        }
        Ok(())
    }

    fn reject(self: Box<Self>, private_data: &[u8]) {
        let _ = self.id.reject(&answer(private_data));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_header_carries_the_qp_and_the_consumers_data() {
        let hello = Hello {
            qpn: 0x12_3456,
            lid: 7,
            gid: [9; 16],
        };
        let mut wire = hello_with(&hello, b"four");
        // rdma-cm hands the whole field, padded.
        wire.resize(REQUEST_SPACE, 0);
        assert_eq!(read_hello(&wire), Some((hello, &b"four"[..])));
        assert_eq!(read_hello(&wire[..HELLO_LEN - 1]), None);
        wire[0] = VERSION + 1;
        assert_eq!(read_hello(&wire), None);
    }

    #[test]
    fn an_answer_keeps_its_length_through_the_padding() {
        let mut wire = answer(b"ok");
        wire.resize(ANSWER_SPACE, 0);
        assert_eq!(read_answer(&wire), b"ok");
        assert_eq!(read_answer(&[]), b"");
        assert_eq!(read_answer(&[200, 1]), b"");
        assert_eq!(answer(&[1; 200]).len(), ANSWER_SPACE);
    }
}
