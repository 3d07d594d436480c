//! The software transport over TCP: one TCP connection per connected EP, moved by the
//! consumer's polling threads and the progress engine (`runtime::engine`).
//!
//! - `wire`: the frames; `conn`: the socket's two halves;
//! - `cm`: listening and the connection handshake;
//! - `link`: a connected EP; `inbound`: the peer's frames; `answers`: what we owe the peer;
//!   `held`: requests fenced behind RDMA reads;
//! - `ep_wire`: what an EP keeps for its connection;
//! - `datagram`: the IB extension's UD EPs;
//! - `direct`: RDMA writes and reads between processes of one host, by cross-memory attach.

mod answers;
pub mod cm;
pub mod conn;
mod datagram;
pub mod direct;
mod ep_wire;
mod held;
mod inbound;
pub mod link;
pub mod wire;

use std::io;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::Arc;
use std::time::Duration;

use crate::error::DatResult;
use crate::objects::ep::Ep;
use crate::objects::evd::Evd;
use crate::objects::limits;
use crate::objects::seam::{
    ConnRequest, EpTransportState, Listening, OnRequest, Resource, Transport,
};

/// The TCP transport, the same for every TCP IA.
pub struct Tcp;

impl Transport for Tcp {
    fn listen(
        &self,
        ip: Ipv4Addr,
        port: u16,
        conn_qual: u64,
        on_request: OnRequest,
    ) -> io::Result<Box<dyn Listening>> {
        let listener = cm::Listener::bind(ip, port, conn_qual, wire_limits(), move |r| {
            on_request(Box::new(r))
        })?;
        Ok(Box::new(listener))
    }

    fn connect(
        &self,
        ep: Arc<Ep>,
        attempt: u64,
        remote: SocketAddrV4,
        conn_qual: u64,
        private_data: Vec<u8>,
        timeout: Option<Duration>,
    ) -> DatResult {
        link::connect(ep, attempt, remote, conn_qual, private_data, timeout)
    }

    fn datagrams(&self) -> bool {
        true
    }

    /// The order its connections' directly filled receives complete in (`direct::FillOrder`).
    fn completion_queue(&self, _evd: &Arc<Evd>) -> DatResult<Option<Resource>> {
        Ok(Some(Arc::new(direct::FillOrder::default())))
    }

    fn endpoint_state(&self) -> Box<dyn EpTransportState> {
        Box::<ep_wire::TcpEp>::default()
    }

    fn datagram_endpoint(&self, ep: &Arc<Ep>) -> DatResult {
        datagram::open(ep)
    }

    fn connect_datagram(
        &self,
        ep: Arc<Ep>,
        remote: SocketAddrV4,
        conn_qual: u64,
        private_data: Vec<u8>,
    ) -> DatResult {
        datagram::connect(ep, remote, conn_qual, private_data)
    }

    fn free_address_handle(&self, ah: usize) -> bool {
        datagram::free_address_handle(ah)
    }

    /// The network interface the IA's address is on, and its MTU (what a program that sizes
    /// its messages by the transport's MTU should use).
    fn provider_specific(&self, ip: Ipv4Addr) -> Vec<(&'static str, String)> {
        let Some(netdev) = crate::runtime::interfaces::interface_of(ip) else {
            return Vec::new();
        };
        let mtu = std::fs::read_to_string(format!("/sys/class/net/{netdev}/mtu")).ok();
        let mut attrs = vec![("DAT_IB_DEVICE_NAME", netdev)];
        attrs.extend(mtu.map(|m| ("DAT_IB_TRANSPORT_MTU", m.trim().to_string())));
        attrs
    }
}

impl Listening for cm::Listener {
    fn port(&self) -> u16 {
        cm::Listener::port(self)
    }
}

impl ConnRequest for cm::IncomingRequest {
    fn remote(&self) -> SocketAddrV4 {
        self.remote
    }

    fn private_data(&self) -> &[u8] {
        &self.private_data
    }

    fn datagram(&self) -> bool {
        self.datagram_port.is_some()
    }

    fn accept(self: Box<Self>, ep: Arc<Ep>, private_data: &[u8]) -> DatResult {
        if self.datagram_port.is_some() {
            return datagram::accept(ep, *self, private_data);
        }
        link::accept(ep, *self, private_data)
    }

    fn reject(self: Box<Self>, private_data: &[u8]) {
        cm::IncomingRequest::reject(*self, private_data)
    }
}

/// How long a peer of an IA may go unheard while its connection owes or expects something
/// before the connection breaks (see `conn::watch_peer`): `configured`, the IA's
/// `peer_timeout=SECONDS` in its dat.conf line's platform parameters, else
/// `LIBDAT_PEER_TIMEOUT` (seconds), else 20 s (`settings::PEER_TIMEOUT`), about what an RC
/// QP's default retries take.
pub fn peer_timeout(configured: Option<Duration>) -> Duration {
    configured.unwrap_or_else(|| crate::runtime::settings::PEER_TIMEOUT.get())
}

/// The frame limits: what the objects advertise.
pub fn wire_limits() -> wire::Limits {
    wire::Limits {
        max_private_data: limits::MAX_PRIVATE_DATA_SIZE as u32,
        max_message: limits::MAX_MESSAGE_SIZE,
    }
}

// SAFETY: the C library's structs these are hold integers, raw pointers, and arrays and unions
// of those (their padding fields too).
crate::abi::zeroable!(libc::msghdr, libc::stat, libc::siginfo_t);
