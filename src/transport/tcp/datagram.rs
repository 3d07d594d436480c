//! The IB extension's unreliable datagram (UD) EPs on the software transport. A UD EP has a
//! UDP socket on its IA's address, whose port is its "QP number". A datagram goes out with
//! `sendto` as it is posted (and completes then); one that arrives fills the EP's next posted
//! receive behind the 40 bytes where a verbs device puts the routing header (zeros here), or
//! is dropped when none is posted, as a UD QP drops it. Arrivals are taken by the thread that
//! polls the EP's receive EVD, or by the progress engine, which the socket wakes.
//!
//! A UD EP's exchange with a service point is a TCP request and accept naming the two ports
//! (`cm`); the address handle of each side's UD connection event names the other's address.

use std::io;
use std::net::{SocketAddrV4, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::{Arc, OnceLock, Weak};

use parking_lot::MutexGuard;

use super::cm::{self, ConnectFailure, Established, IncomingRequest};
use super::ep_wire::TcpWire;
use super::inbound::place;
use super::wire_limits;
use crate::abi::*;
use crate::error::{DatError, DatResult, Sub, Type};
use crate::objects::ep::{Close, Ep, EpInner, Outgoing, Posted, Request};
use crate::objects::extension::{DatagramPeer, Extended};
use crate::objects::seam::{Link, Progress};
use crate::runtime::address_handles::{next_exchange, AddressHandles};
use crate::runtime::engine::{Engine, Source, Token};
use crate::runtime::sys::{self, debug};

/// Where a verbs device puts a datagram's routing header, before its data.
pub const ROUTING_HEADER: usize = 40;

/// The address handles of UD connection events on this transport: the peer's IA address.
static HANDLES: AddressHandles<SocketAddrV4> = AddressHandles::new();

pub fn free_address_handle(ah: usize) -> bool {
    HANDLES.free(ah)
}

/// A UD EP's socket.
pub struct DatagramPort {
    socket: UdpSocket,
    ep: Weak<Ep>,
    engine: Arc<Engine>,
    token: OnceLock<Token>,
}

/// What the engine reports the socket to (a weak link: the port goes with its EP).
struct Watch(Weak<DatagramPort>);

impl Source for Watch {
    fn on_event(self: Arc<Self>, _events: u32) {
        let Some(port) = self.0.upgrade() else { return };
        port.take_arrivals();
        port.watch();
    }
}

/// Readies a UD EP: its socket on the IA's address, watched by the engine; its link.
pub fn open(ep: &Arc<Ep>) -> DatResult {
    if ep.pz().is_none() {
        return Err(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_PZ));
    }
    let made = (|| -> io::Result<Arc<DatagramPort>> {
        let socket = UdpSocket::bind(SocketAddrV4::new(ep.ia.ipv4(), 0))?;
        socket.set_nonblocking(true)?;
        let port = Arc::new(DatagramPort {
            socket,
            ep: Arc::downgrade(ep),
            engine: Engine::get(),
            token: OnceLock::new(),
        });
        let token = port.engine.register(
            port.socket.as_raw_fd(),
            Arc::new(Watch(Arc::downgrade(&port))),
        )?;
        let _ = port.token.set(token);
        port.watch();
        Ok(port)
    })();
    let port = made.map_err(|e| {
        if debug() {
            eprintln!("libdat: a UD EP's socket: {e}");
        }
        DatError::resources(Sub::DAT_RESOURCE_TEP)
    })?;
    ep.inner.lock().wire.tcp().datagram = Some(port.clone());
    ep.datagram_ready(port);
    Ok(())
}

impl DatagramPort {
    fn port(&self) -> u16 {
        self.socket.local_addr().map_or(0, |a| a.port())
    }

    fn watch(&self) {
        if let Some(token) = self.token.get() {
            self.engine
                .arm(*token, self.socket.as_raw_fd(), libc::EPOLLIN as u32);
        }
    }

    /// The length of the next datagram waiting, without taking it.
    fn waiting(&self) -> Option<usize> {
        // SAFETY: a zero-length peek into no buffer; MSG_TRUNC makes it return the datagram's
        // real length.
        unsafe {
            sys::recv(
                self.socket.as_raw_fd(),
                std::ptr::null_mut(),
                0,
                libc::MSG_PEEK | libc::MSG_TRUNC | libc::MSG_DONTWAIT,
            )
        }
        .ok()
    }

    /// Takes every datagram waiting: each fills the next posted receive, in arrival order.
    fn take_arrivals(&self) {
        let Some(ep) = self.ep.upgrade() else { return };
        let _in_order = ep.receiving.lock();
        while let Some(n) = self.waiting() {
            let mut data = vec![0u8; ROUTING_HEADER + n];
            let into = &mut data[ROUTING_HEADER..];
            // SAFETY: `into` is a live buffer of the length passed.
            let Ok(got) = (unsafe {
                sys::recv(
                    self.socket.as_raw_fd(),
                    into.as_mut_ptr(),
                    into.len(),
                    libc::MSG_DONTWAIT,
                )
            }) else {
                return;
            };
            data.truncate(ROUTING_HEADER + got);
            let (recv, pz, evd) = {
                let mut inner = ep.inner.lock();
                let Some(recv) = inner.recvs.pop_front() else {
                    continue;
                }; // none posted: dropped
                (
                    recv,
                    inner.pz.as_ref().map(|p| p.arc().clone()),
                    inner.recv_evd.as_ref().map(|e| e.arc().clone()),
                )
            };
            let status = match &pz {
                Some(pz) => place(&recv.segments, &data, pz),
                None => dat_dto_completion_status::DAT_DTO_ERR_LOCAL_PROTECTION,
            };
            let length = if status == dat_dto_completion_status::DAT_DTO_SUCCESS {
                data.len() as u32
            } else {
                0
            };
            ep.complete_datagram_on(evd.as_deref(), recv.cookie, status, length);
        }
    }
}

impl Progress for DatagramPort {
    fn progress(&self) {
        self.take_arrivals();
    }
}

impl Link for DatagramPort {
    fn close(&self, _how: Close) {
        if let Some(token) = self.token.get() {
            self.engine
                .deregister(*token, Some(self.socket.as_raw_fd()));
        }
    }

    /// Sends a datagram at once, from the consumer's segments (checked by the caller under
    /// the EP's lock, held through the send), and completes it.
    fn post(
        &self,
        _ep: &Ep,
        inner: MutexGuard<'_, EpInner>,
        out: &Outgoing<'_>,
    ) -> DatResult<Posted> {
        let Some(Extended::Datagram { ah, qpn }) = out.extended else {
            return Err(DatError::bare(Type::DAT_MODEL_NOT_SUPPORTED));
        };
        let peer = HANDLES.get(ah).ok_or(DatError::invalid_arg(4))?;
        let port = u16::try_from(qpn).map_err(|_| DatError::invalid_arg(4))?;
        let to = crate::runtime::sys::sockaddr_in(SocketAddrV4::new(*peer.ip(), port));
        let mut iov: Vec<libc::iovec> = out
            .segments
            .iter()
            .map(|s| libc::iovec {
                iov_base: s.virtual_address as *mut libc::c_void,
                iov_len: s.segment_length as usize,
            })
            .collect();
        let mut msg = libc::msghdr::zeroed();
        msg.msg_name = &to as *const libc::sockaddr_in as *mut libc::c_void;
        msg.msg_namelen = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        msg.msg_iov = iov.as_mut_ptr();
        msg.msg_iovlen = iov.len();
        // SAFETY: the segments lie in live regions of the EP's zone with local read
        // privilege (checked by the caller under the EP's lock, which we hold); the address and
        // the iovecs live through the call, which only reads them.
        let sent = match unsafe { sys::sendmsg(self.socket.as_raw_fd(), &msg, libc::MSG_DONTWAIT) }
        {
            Ok(sent) => sent,
            Err(errno) => {
                if debug() {
                    eprintln!(
                        "libdat: a datagram to {}:{port}: {}",
                        peer.ip(),
                        io::Error::from_raw_os_error(errno)
                    );
                }
                return Err(match errno {
                    libc::EMSGSIZE => DatError::invalid_arg(3),
                    _ => DatError::resources(Sub::DAT_RESOURCE_TEP),
                });
            }
        };
        let request = Request {
            seq: 0,
            cookie: out.cookie,
            operation: out.operation,
            length: sent as u32,
            report: out.report,
            extended: out.extended.map(Extended::kind),
            bind: None,
        };
        let ep = self.ep.upgrade();
        if let Some(ep) = ep {
            ep.complete_request_on(
                inner.request_evd.as_deref(),
                &request,
                dat_dto_completion_status::DAT_DTO_SUCCESS,
                sent as u32,
            );
        }
        Ok(Posted::Queued)
    }

    fn receive_posted(&self, _ep: &Ep) {}
}

impl Drop for DatagramPort {
    fn drop(&mut self) {
        HANDLES.forget_owner(self as *const DatagramPort as usize);
        if let Some(token) = self.token.get() {
            self.engine
                .deregister(*token, Some(self.socket.as_raw_fd()));
        }
    }
}

/// The UD EP's socket.
fn port_of(ep: &Ep) -> Option<Arc<DatagramPort>> {
    ep.inner.lock().wire.tcp().datagram.clone()
}

/// Keeps an address handle to `peer` for the EP of `port`.
fn keep(peer: SocketAddrV4, port: &DatagramPort) -> usize {
    let value = Arc::new(peer);
    let key = Arc::as_ptr(&value) as usize;
    HANDLES.keep(key, value, port as *const DatagramPort as usize);
    key
}

/// Starts a UD EP's exchange with qualifier `conn_qual` at `remote`.
pub fn connect(
    ep: Arc<Ep>,
    remote: SocketAddrV4,
    conn_qual: u64,
    private_data: Vec<u8>,
) -> DatResult {
    let port = port_of(&ep).ok_or(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_EP))?;
    let weak = Arc::downgrade(&ep);
    let context = next_exchange();
    cm::exchange_datagram(
        remote,
        conn_qual,
        port.port(),
        private_data,
        wire_limits(),
        move |outcome: Result<Established, ConnectFailure>| {
            use dat_ib_event_number as E;
            let Some(ep) = weak.upgrade() else { return };
            match outcome {
                Ok(est) => {
                    let peer_port = est.datagram_port.unwrap_or(0);
                    let ah = keep(SocketAddrV4::new(*est.remote.ip(), 0), &port);
                    let peer = DatagramPeer {
                        ah,
                        qpn: u32::from(peer_port),
                        remote,
                        passive: false,
                        context,
                    };
                    ep.datagram_event(
                        E::DAT_IB_UD_CONNECTION_EVENT_ESTABLISHED,
                        &est.private_data,
                        Some(&peer),
                    );
                }
                Err(ConnectFailure::Rejected(data)) => {
                    ep.datagram_event(E::DAT_IB_UD_CONNECTION_REJECT_EVENT, &data, None)
                }
                Err(ConnectFailure::Refused) => {
                    ep.datagram_event(E::DAT_IB_UD_CONNECTION_REJECT_EVENT, &[], None)
                }
                Err(_) => ep.datagram_event(E::DAT_IB_UD_CONNECTION_ERROR_EVENT, &[], None),
            }
        },
    );
    Ok(())
}

/// Accepts a UD EP's request onto UD EP `ep`: the requester learns our port; we post our
/// event with the handle to its.
pub fn accept(ep: Arc<Ep>, request: IncomingRequest, private_data: &[u8]) -> DatResult {
    use dat_ib_event_number as E;
    let port = port_of(&ep).ok_or(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_EP))?;
    let (remote, requester_port, data) = (
        request.remote,
        request.datagram_port.unwrap_or(0),
        request.private_data.clone(),
    );
    match request.accept_datagram(port.port(), private_data) {
        Ok(()) => {
            let ah = keep(SocketAddrV4::new(*remote.ip(), 0), &port);
            let context = next_exchange();
            let peer = DatagramPeer {
                ah,
                qpn: u32::from(requester_port),
                remote,
                passive: true,
                context,
            };
            ep.datagram_event(
                E::DAT_IB_UD_CONNECTION_EVENT_ESTABLISHED,
                &data,
                Some(&peer),
            );
        }
        Err(e) => {
            if debug() {
                eprintln!("libdat: accepting a UD request from {remote}: {e}");
            }
            ep.datagram_event(E::DAT_IB_UD_CONNECTION_ERROR_EVENT, &[], None);
        }
    }
    Ok(())
}
