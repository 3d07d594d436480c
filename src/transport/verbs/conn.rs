//! One EP's connection over rdma-cm and an RC QP: the active connect's steps, the passive
//! accept, the connection events mapped to DAT's (as OpenFabrics' openib_cma maps them, so
//! either side may be OpenFabrics), and the requests posted on the QP.
//!
//! The QP is made with the EP (`Prepared`), in its PZ, on its EVDs' CQs, and moved to the id
//! that connects (after the route, or at the accept); one is made then if the EP changed its
//! zone, EVDs or sizes since, or had none. Receives posted before go to it then.

use std::collections::VecDeque;
use std::io;
use std::mem::MaybeUninit;
use std::net::SocketAddrV4;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use parking_lot::MutexGuard;

use super::cm::{CmEvent, CmHandler, CmId, ConnParam, EventType};
use super::completions::{CqSource, RECV_ID};
use super::cq::Cq;
use super::datagram;
use super::device::{access, Mr, Mw, Pd};
use super::qp::{Qp, QpCaps, SendFlags, SendOp, Sge, MAX_SGE};
use super::srq::{VerbsSrq, SRQ_RECV_ID};
use super::transport::Verbs;
use crate::abi::*;
use crate::error::{DatError, DatResult, Sub, Type};
use crate::objects::ep::{
    Close, End, Ep, EpInner, Outgoing, Posted, Report, Request as Outstanding,
};
use crate::objects::evd::Evd;
use crate::objects::extension::Extended;
use crate::runtime::engine::{Engine, Source, Token};
use crate::runtime::sys::{self, debug};
use crate::transport::{ConnRequest, Link, Progress, SharedQueue, WindowBind};

/// How long address and route resolution may take, in milliseconds.
const RESOLVE_MS: i32 = 4000;
/// The transport's retries of a lost packet, and of a receiver without a receive posted
/// (7: for ever), as OpenFabrics sets them.
const RETRY: u8 = 7;
const RNR_RETRY: u8 = 7;
/// What a small send or write carries inline (lowered to what the device grants).
const INLINE: u32 = 64;
/// Rejects carry this 4-byte header before the consumer's private data (OpenFabrics' DAT
/// and provider versions, big-endian), so a peer tells a consumer's reject from others.
const REJECT_HEADER: [u8; 4] = [2, 0, 2, 0];
/// The status of a reject the consumer made (IB CM's "consumer defined").
const CONSUMER_REJECT: i32 = 28;

pub struct Conn {
    /// First: dropping it destroys the QP, before the QP's CQs may go.
    id: CmId,
    qp: OnceLock<Qp>,
    verbs: Arc<Verbs>,
    ep: Weak<Ep>,
    active: bool,
    /// The connect's private data, sent once the route is there.
    private_data: Vec<u8>,
    /// The number of the next request, from `first_seq` up: the connection's own range of
    /// work request ids, so a completion left from an earlier connection of the EP names none
    /// of its requests.
    next_seq: AtomicU64,
    first_seq: u64,
    /// Suppressed requests posted unsignalled since the last signalled one.
    unsignalled_run: AtomicU32,
    /// The number of the last request posted signalled: those after it may finish without
    /// a completion.
    last_signalled: AtomicU64,
    /// A work request failed: the end is BROKEN.
    broken: AtomicBool,
    /// A request of ours was flushed (the QP went to its error state under it).
    request_flushed: AtomicBool,
    /// The engine's timer of a connect with a timeout.
    timer: OnceLock<Token>,
}

/// What a QP is made of: the EP's protection domain, its EVDs' CQs, and its sizes.
struct QpShape {
    pd: Arc<Pd>,
    send_cq: Arc<Cq>,
    recv_cq: Arc<Cq>,
    /// The EP's SRQ, whose receives the QP takes instead of its own.
    srq: Option<Arc<dyn SharedQueue>>,
    caps: QpCaps,
}

impl PartialEq for QpShape {
    fn eq(&self, other: &QpShape) -> bool {
        Arc::ptr_eq(&self.pd, &other.pd)
            && Arc::ptr_eq(&self.send_cq, &other.send_cq)
            && Arc::ptr_eq(&self.recv_cq, &other.recv_cq)
            && match (&self.srq, &other.srq) {
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                (a, b) => a.is_none() && b.is_none(),
            }
            && self.caps == other.caps
    }
}

impl QpShape {
    fn of(inner: &EpInner, verbs: &Verbs) -> io::Result<QpShape> {
        let pd = inner
            .pz
            .as_ref()
            .and_then(|p| p.domain.as_ref().and_then(Pd::of))
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))?;
        let send_cq = cq_of(inner.request_evd.as_deref(), verbs)?;
        let recv_cq = cq_of(inner.recv_evd.as_deref(), verbs)?;
        let a = &inner.attr;
        let caps = QpCaps {
            send_wr: a.max_request_dtos.max(1) as u32,
            recv_wr: a.max_recv_dtos.max(1) as u32,
            send_sge: (a
                .max_request_iov
                .max(a.max_rdma_write_iov)
                .max(a.max_rdma_read_iov)
                .max(1) as u32)
                .min(MAX_SGE as u32),
            recv_sge: (a.max_recv_iov.max(1) as u32).min(MAX_SGE as u32),
            inline: INLINE,
            datagram: Ep::is_datagram(inner),
        };
        let srq = inner.srq.as_ref().and_then(|s| s.arc().queue.clone());
        if srq.as_deref().is_some_and(|q| VerbsSrq::of(q).is_none()) {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        Ok(QpShape {
            pd,
            send_cq,
            recv_cq,
            srq,
            caps,
        })
    }

    /// A QP of this shape on `id`.
    fn create(&self, id: &CmId) -> io::Result<Qp> {
        Qp::create(
            id,
            &self.pd,
            &self.send_cq,
            &self.recv_cq,
            self.srq.as_ref(),
            self.caps,
        )
        .or_else(|_| {
            let caps = QpCaps {
                inline: 0,
                ..self.caps
            }; // a device without inline sends
            Qp::create(
                id,
                &self.pd,
                &self.send_cq,
                &self.recv_cq,
                self.srq.as_ref(),
                caps,
            )
        })
    }
}

/// The QP an EP is made with, on an id of its own bound to the IA's address (so the QP has
/// its device); the EP's first connection moves it to the id that connects.
pub struct Prepared {
    /// First: dropping it destroys the QP if no connection took it.
    id: CmId,
    qp: Qp,
    shape: QpShape,
}

impl Prepared {
    /// Makes the EP's QP. Where it cannot (the EP has no PZ yet, or the device refuses), the
    /// connection makes one; `LIBDAT_DEBUG` says why.
    pub fn make(verbs: &Arc<Verbs>, ep: &Arc<Ep>) {
        let mut inner = ep.inner.lock();
        let made = (|| {
            let shape = QpShape::of(&inner, verbs)?;
            let quiet: Weak<dyn CmHandler> = Weak::<Conn>::new();
            let id = CmId::new(quiet)?;
            id.bind(SocketAddrV4::new(verbs.device.ip, 0))?;
            let qp = shape.create(&id)?;
            io::Result::Ok(Prepared { id, qp, shape })
        })();
        match made {
            Ok(p) => inner.wire.verbs_prepared = Some(p),
            Err(e) if debug() => eprintln!(
                "libdat: EP {:p}: no QP before its connection: {e}",
                ep.handle()
            ),
            Err(_) => {}
        }
    }
}

/// What the engine's timer of a connect reports to (a weak link: the connection goes with
/// its EP).
struct Deadline(Weak<Conn>);

impl Source for Deadline {
    fn on_event(self: Arc<Self>, _events: u32) {
        let Some(conn) = self.0.upgrade() else { return };
        let Some(ep) = conn.ep() else { return };
        if ep.state() == dat_ep_state::DAT_EP_STATE_ACTIVE_CONNECTION_PENDING {
            if debug() {
                eprintln!("libdat: EP {:p}: the connect timed out", ep.handle());
            }
            conn.end(
                &ep,
                End::Broken,
                dat_event_number::DAT_CONNECTION_EVENT_TIMED_OUT,
                &[],
            );
        }
    }
}

/// A work request's scatter/gather list: room for the most a request may have, of which only
/// the request's entries are written (most requests have one). Filled where it lives, on the
/// poster's stack: a list returned by value would be copied whole on every post.
pub(super) struct SgList {
    entries: [MaybeUninit<Sge>; MAX_SGE],
}

impl SgList {
    #[inline(always)]
    pub(super) fn new() -> SgList {
        SgList {
            entries: [MaybeUninit::uninit(); MAX_SGE],
        }
    }

    /// The pieces of a DAT segment list, as the work request carries them.
    #[inline(always)]
    pub(super) fn fill(&mut self, segments: &[DAT_LMR_TRIPLET]) -> DatResult<&[Sge]> {
        if segments.len() > MAX_SGE {
            return Err(DatError::invalid_arg(2));
        }
        for (o, s) in self.entries.iter_mut().zip(segments) {
            o.write(Sge {
                addr: s.virtual_address,
                length: s.segment_length,
                lkey: s.lmr_context,
            });
        }
        // SAFETY: the first `segments.len()` entries were just written.
        Ok(unsafe { std::slice::from_raw_parts(self.entries.as_ptr().cast(), segments.len()) })
    }
}

/// The CQ behind an EVD of this transport.
fn cq_of(evd: Option<&Evd>, verbs: &Verbs) -> io::Result<Arc<Cq>> {
    match evd.and_then(CqSource::of) {
        Some(source) => Ok(source.cq.clone()),
        None => verbs.spare_cq(),
    }
}

/// Whether an EP's send queue holds as many requests as its attributes allow.
#[inline(always)]
fn send_queue_full(outstanding: &VecDeque<Outstanding>, max_request_dtos: DAT_COUNT) -> bool {
    outstanding.len() >= max_request_dtos.max(1) as usize
}

/// Each connection numbers its requests from a block of 2^40 ids of its own, below the
/// receives' ids (a connection that posts more runs on into the next block: its own range
/// stays whole).
const SEQ_BLOCK_BITS: u32 = 40;

fn first_seq() -> u64 {
    static BLOCKS: AtomicU64 = AtomicU64::new(0);
    let block = 1 + BLOCKS.fetch_add(1, Ordering::Relaxed) % ((SRQ_RECV_ID >> SEQ_BLOCK_BITS) - 1);
    block << SEQ_BLOCK_BITS
}

/// How long the end of a connection waits for the device to say what became of requests
/// posted unsignalled.
const SETTLE: Duration = Duration::from_millis(200);

impl Conn {
    fn new(
        verbs: &Arc<Verbs>,
        id: CmId,
        ep: &Arc<Ep>,
        active: bool,
        private_data: Vec<u8>,
    ) -> io::Result<Arc<Conn>> {
        let first_seq = first_seq();
        let conn = Arc::new(Conn {
            id,
            qp: OnceLock::new(),
            verbs: verbs.clone(),
            ep: Arc::downgrade(ep),
            active,
            private_data,
            next_seq: AtomicU64::new(first_seq),
            first_seq,
            unsignalled_run: AtomicU32::new(0),
            last_signalled: AtomicU64::new(0),
            broken: AtomicBool::new(false),
            request_flushed: AtomicBool::new(false),
            timer: OnceLock::new(),
        });
        let handler: Arc<dyn CmHandler> = conn.clone();
        conn.id.set_handler(Arc::downgrade(&handler))?;
        // The EP holds its connection from now on (its events find it through a weak link).
        ep.inner.lock().wire.verbs = Some(conn.clone());
        Ok(conn)
    }

    /// Starts an active connect: address, route, QP, then the request; TIMED_OUT if it is
    /// not established within `timeout`.
    pub fn connect(
        verbs: &Arc<Verbs>,
        ep: Arc<Ep>,
        remote: SocketAddrV4,
        private_data: Vec<u8>,
        timeout: Option<Duration>,
    ) -> io::Result<()> {
        let quiet: Weak<dyn CmHandler> = Weak::<Conn>::new();
        let id = CmId::new(quiet)?;
        let conn = Conn::new(verbs, id, &ep, true, private_data)?;
        if let Some(t) = timeout {
            let engine = Engine::get();
            let token = engine.register_timer_only(Arc::new(Deadline(Arc::downgrade(&conn))));
            let _ = conn.timer.set(token);
            engine.set_timer(
                token,
                sys::monotonic_micros().saturating_add(t.as_micros().min(u64::MAX as u128) as u64),
            );
        }
        conn.id
            .resolve_addr(Some(verbs.device.ip), remote, RESOLVE_MS)
    }

    /// A UD EP's datagram endpoint: an id of rdma-cm's datagram space bound to the IA's
    /// address, and its UD QP, ready at once; the EP's link from now on.
    pub fn open_datagram(verbs: &Arc<Verbs>, ep: &Arc<Ep>) -> io::Result<Arc<Conn>> {
        let quiet: Weak<dyn CmHandler> = Weak::<Conn>::new();
        let id = CmId::datagram(quiet)?;
        id.bind(SocketAddrV4::new(verbs.device.ip, 0))?;
        let conn = Conn::new(verbs, id, ep, false, Vec::new())?;
        if let Err(e) = conn.make_qp(ep) {
            ep.inner.lock().wire.verbs = None;
            return Err(e);
        }
        Ok(conn)
    }

    pub fn ep(&self) -> Option<Arc<Ep>> {
        self.ep.upgrade()
    }

    /// Its EP, held as the connection holds it (weakly).
    pub fn ep_link(&self) -> Weak<Ep> {
        self.ep.clone()
    }

    /// The transport (the device) of its EP's IA.
    pub fn transport(&self) -> &Arc<Verbs> {
        &self.verbs
    }

    /// Whether its QP is made.
    pub fn has_qp(&self) -> bool {
        self.qp.get().is_some()
    }

    /// Its QP's number, once made.
    pub fn qp_number(&self) -> Option<u32> {
        self.qp.get().map(Qp::number)
    }

    /// The protection domain of its QP, once made.
    pub fn protection_domain(&self) -> Option<Arc<Pd>> {
        self.qp.get().map(|q| q.pd.clone())
    }

    /// Gives the connection the QP the EP was made with, if the EP's zone, EVDs and
    /// attributes are still those it was made for, or makes one; then posts the receives
    /// waiting.
    fn make_qp(self: &Arc<Self>, ep: &Ep) -> io::Result<()> {
        let mut inner = ep.inner.lock();
        let shape = QpShape::of(&inner, &self.verbs)?;
        let qp = match inner
            .wire
            .verbs_prepared
            .take()
            .filter(|p| p.shape == shape)
        {
            Some(p) => {
                p.qp.move_to(&p.id, &self.id);
                p.qp
            }
            None => shape.create(&self.id)?,
        };
        for r in &inner.recvs {
            qp.post_recv(
                RECV_ID,
                SgList::new()
                    .fill(&r.segments)
                    .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?,
            )?;
        }
        self.verbs.add_qp(qp.number(), self);
        let _ = self.qp.set(qp);
        drop(inner);
        Ok(())
    }

    /// The read depths of a connect: the EP's, as far as the device goes.
    fn read_depths(&self, ep: &Ep) -> (u8, u8) {
        let a = ep.inner.lock().attr;
        let dev = &self.verbs.device.attr;
        let inbound = (a.max_rdma_read_in.max(0) as i64)
            .min(i64::from(dev.max_qp_rd_atom))
            .min(255) as u8;
        let outbound = (a.max_rdma_read_out.max(0) as i64)
            .min(i64::from(dev.max_qp_init_rd_atom))
            .min(255) as u8;
        (inbound, outbound)
    }

    /// Posts a receive to the QP, if it is made (else it goes as the QP is). Under the EP's
    /// lock, as the receive joins the EP's list.
    #[inline]
    pub fn post_recv(&self, segments: &[DAT_LMR_TRIPLET]) -> DatResult {
        let Some(qp) = self.qp.get() else {
            return Ok(());
        };
        qp.post_recv(RECV_ID, SgList::new().fill(segments)?)
            .map_err(|_| DatError::resources(Sub::DAT_RESOURCE_TEP))
    }

    /// A work request failed: the connection breaks (the peer hears of it).
    pub fn fail(&self) {
        if !self.broken.swap(true, Ordering::AcqRel) {
            if debug() {
                eprintln!("libdat: a work request failed: the connection breaks");
            }
            let _ = self.id.disconnect();
        }
    }

    /// A request completed flushed.
    pub fn request_flushed(&self) {
        self.request_flushed.store(true, Ordering::Release);
    }

    /// Whether work request id `wr_id` is one of this connection's requests.
    pub fn owns(&self, wr_id: u64) -> bool {
        (self.first_seq..self.next_seq.load(Ordering::Relaxed)).contains(&wr_id)
    }

    /// Completions already in the EP's CQs are reported before the end flushes the rest.
    fn drain(&self, ep: &Ep) {
        let (recv_evd, request_evd) = {
            let inner = ep.inner.lock();
            (
                inner.recv_evd.as_ref().map(|e| e.arc().clone()),
                inner.request_evd.as_ref().map(|e| e.arc().clone()),
            )
        };
        let [recv_cq, request_cq] =
            [recv_evd, request_evd].map(|evd| evd.as_deref().and_then(CqSource::of));
        for source in recv_cq.iter().chain(&request_cq) {
            source.poll();
        }
        if let Some(source) = request_cq {
            self.settle_unsignalled(ep, &source);
        }
    }

    /// Requests posted unsignalled after the last completion may have finished (no
    /// completion says so) or not (the QP's error flushes them, with a completion each).
    /// A signalled request posted behind them tells which: its completion comes after
    /// theirs, and the requests before it that had none finished (the way a kernel drains
    /// a QP). The QP is in its error state by now (the disconnect moved it there), so the
    /// marker itself is flushed, not sent. If the device takes no marker, or says nothing in
    /// time, the requests stay outstanding and the end flushes them.
    fn settle_unsignalled(&self, ep: &Ep, source: &CqSource) {
        let newest_posted = {
            let inner = ep.inner.lock();
            // A UD QP's marker would need an address handle; its datagrams are left to the
            // flush.
            if Ep::is_datagram(&inner) {
                return;
            }
            let Some(r) = inner.outstanding.back() else {
                return;
            };
            r.seq
        };
        if newest_posted <= self.last_signalled.load(Ordering::Relaxed) {
            return;
        }
        let Some(qp) = self.qp.get() else { return };
        let marker = self.next_seq.fetch_add(1, Ordering::Relaxed);
        let op = SendOp::Write {
            remote_address: 0,
            rkey: 0,
        };
        let flags = SendFlags {
            signalled: true,
            solicited: false,
            fence: false,
        };
        if qp.post_send(marker, op, &[], flags).is_err() {
            return;
        }
        let deadline = Instant::now() + SETTLE;
        loop {
            source.poll();
            if ep
                .inner
                .lock()
                .outstanding
                .front()
                .is_none_or(|r| r.seq > marker)
                || Instant::now() >= deadline
            {
                return;
            }
            std::thread::sleep(Duration::from_micros(100));
        }
    }

    /// Posts a request on the QP under the EP's lock, held by the caller throughout (the
    /// EP's parts borrowed apart): `None` where the QP is not made or the send queue is full,
    /// which `Link::post` handles (it may let go of the lock to reap completions). The data
    /// path's direct call (`EpWire::post_direct`): no reference to the link taken, no dynamic
    /// dispatch, inlined into the caller.
    #[inline(always)]
    pub fn post_ready(
        &self,
        outstanding: &mut VecDeque<Outstanding>,
        max_request_dtos: DAT_COUNT,
        out: &Outgoing<'_>,
    ) -> Option<DatResult<Posted>> {
        let qp = self.qp.get()?;
        if send_queue_full(outstanding, max_request_dtos) {
            return None;
        }
        Some(self.post_on(qp, outstanding, max_request_dtos, out))
    }

    /// Posts a request on `qp`, the send queue having room, recording it among `outstanding`.
    #[inline(always)]
    fn post_on(
        &self,
        qp: &Qp,
        outstanding: &mut VecDeque<Outstanding>,
        max_request_dtos: DAT_COUNT,
        out: &Outgoing<'_>,
    ) -> DatResult<Posted> {
        let mut sg = SgList::new();
        let list = sg.fill(out.segments)?;
        let total = out.length;
        // A datagram's address handle is held through the post (the consumer may free it
        // meanwhile).
        let mut held = None;
        let op = match (out.extended, out.operation, out.remote) {
            (Some(Extended::Datagram { ah, qpn }), _, _) => {
                let ah = held.insert(datagram::address_handle(ah).ok_or(DatError::invalid_arg(4))?);
                SendOp::Datagram {
                    ah: ah.raw(),
                    qpn,
                    qkey: datagram::QKEY,
                }
            }
            (Some(x), _, Some(r)) => {
                let (remote_address, rkey) = (r.virtual_address, r.rmr_context);
                match x {
                    Extended::WriteImmediate(data) => SendOp::WriteImmediate {
                        remote_address,
                        rkey,
                        data,
                    },
                    Extended::FetchAdd(add) => SendOp::FetchAdd {
                        remote_address,
                        rkey,
                        add,
                    },
                    Extended::CompareSwap { compare, swap } => SendOp::CompareSwap {
                        remote_address,
                        rkey,
                        compare,
                        swap,
                    },
                    // Matched above: a datagram names no remote region.
                    Extended::Datagram { .. } => return Err(DatError::invalid_arg(4)),
                }
            }
            (_, dat_dtos::DAT_DTO_RDMA_WRITE, Some(r)) => SendOp::Write {
                remote_address: r.virtual_address,
                rkey: r.rmr_context,
            },
            (_, dat_dtos::DAT_DTO_RDMA_READ, Some(r)) => SendOp::Read {
                remote_address: r.virtual_address,
                rkey: r.rmr_context,
            },
            _ => match out.invalidate {
                Some(rkey) => SendOp::SendWithInvalidate { rkey },
                None => SendOp::Send,
            },
        };
        let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
        outstanding.push_back(Outstanding {
            seq,
            cookie: out.cookie,
            operation: out.operation,
            length: total as u32,
            report: out.report,
            extended: out.extended.map(Extended::kind),
            bind: None,
        });
        // A suppressed request goes unsignalled, as OpenFabrics posts it: the device writes no
        // completion for its success, and its send-queue slot comes free with the completion
        // of a signalled request behind it (a failure has a completion of its own). One in
        // every half queue is signalled anyway, so a program that suppresses every request
        // still frees its slots.
        let run = self.unsignalled_run.load(Ordering::Relaxed) + 1;
        let signalled = out.report.reports_success() || run >= (max_request_dtos.max(2) as u32) / 2;
        let flags = SendFlags {
            signalled,
            solicited: out.solicited,
            fence: out.fence,
        };
        if qp.post_send_sized(seq, op, list, total, flags).is_err() {
            outstanding.pop_back();
            return Err(DatError::resources(Sub::DAT_RESOURCE_TEP));
        }
        if signalled {
            self.unsignalled_run.store(0, Ordering::Relaxed);
            self.last_signalled.store(seq, Ordering::Relaxed);
        } else {
            self.unsignalled_run.store(run, Ordering::Relaxed);
        }
        drop(held);
        Ok(Posted::Queued)
    }

    fn end(&self, ep: &Ep, end: End, failure: dat_event_number, private_data: &[u8]) {
        self.drain(ep);
        ep.ended(end, failure, private_data);
    }
}

impl CmHandler for Conn {
    // An arm's rdma-cm call stays in its body, not in a guard.
    #[allow(clippy::collapsible_match)]
    fn on_cm_event(&self, event: CmEvent) {
        let Some(ep) = self.ep.upgrade() else {
            let _ = self.id.disconnect();
            return;
        };
        let me = ep.inner.lock().wire.verbs.clone();
        let Some(me) = me.filter(|c| std::ptr::eq(Arc::as_ptr(c), self)) else {
            return; // an old connection of this EP
        };
        use dat_event_number as E;
        use EventType as T;
        let unreachable = if self.active {
            E::DAT_CONNECTION_EVENT_UNREACHABLE
        } else {
            E::DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR
        };
        if debug() {
            eprintln!(
                "libdat: EP {:p}: {} (status {})",
                ep.handle(),
                super::cm::event_name(event.kind),
                event.status
            );
        }
        match event.kind {
            T::RDMA_CM_EVENT_ADDR_RESOLVED => {
                if self.id.resolve_route(RESOLVE_MS).is_err() {
                    self.end(&ep, End::Broken, unreachable, &[]);
                }
            }
            T::RDMA_CM_EVENT_ROUTE_RESOLVED => {
                let (inbound, outbound) = self.read_depths(&ep);
                let param = ConnParam {
                    private_data: self.private_data.clone(),
                    responder_resources: inbound,
                    initiator_depth: outbound,
                    retry_count: RETRY,
                    rnr_retry_count: RNR_RETRY,
                    ..ConnParam::default()
                };
                if debug() {
                    eprintln!("libdat: connecting: responder resources {inbound}, initiator depth {outbound}");
                }
                if me.make_qp(&ep).is_err() || self.id.connect(&param).is_err() {
                    self.end(
                        &ep,
                        End::Broken,
                        E::DAT_CONNECTION_EVENT_NON_PEER_REJECTED,
                        &[],
                    );
                }
            }
            T::RDMA_CM_EVENT_ADDR_ERROR
            | T::RDMA_CM_EVENT_ROUTE_ERROR
            | T::RDMA_CM_EVENT_UNREACHABLE
            | T::RDMA_CM_EVENT_CONNECT_ERROR => {
                self.end(&ep, End::Broken, unreachable, &[]);
            }
            T::RDMA_CM_EVENT_REJECTED => {
                let consumer = self.active
                    && event.status == CONSUMER_REJECT
                    && event.private_data.len() >= REJECT_HEADER.len();
                if consumer {
                    self.end(
                        &ep,
                        End::Broken,
                        E::DAT_CONNECTION_EVENT_PEER_REJECTED,
                        &event.private_data[REJECT_HEADER.len()..],
                    );
                } else if self.active {
                    self.end(
                        &ep,
                        End::Broken,
                        E::DAT_CONNECTION_EVENT_NON_PEER_REJECTED,
                        &[],
                    );
                } else {
                    self.end(&ep, End::Broken, unreachable, &[]);
                }
            }
            T::RDMA_CM_EVENT_ESTABLISHED => {
                if debug() {
                    if let Some((out, inb, timeout, retry)) =
                        self.qp.get().and_then(Qp::connected_attributes)
                    {
                        eprintln!("libdat: EP {:p}: connected, RDMA reads in flight: {out} out, {inb} in; timeout exponent {timeout}, retries {retry}", ep.handle());
                    }
                }
                let link: Arc<dyn Link> = me.clone();
                let up = if self.active {
                    let remote = self
                        .id
                        .remote()
                        .unwrap_or(SocketAddrV4::new(std::net::Ipv4Addr::UNSPECIFIED, 0));
                    ep.established(Some((link, remote)), &event.private_data)
                } else {
                    ep.established(None, &[])
                };
                if !up {
                    if debug() {
                        eprintln!(
                            "libdat: EP {:p} left its pending state: the connection ends",
                            ep.handle()
                        );
                    }
                    let _ = self.id.disconnect();
                }
            }
            T::RDMA_CM_EVENT_DISCONNECTED => {
                // The answer the side that ended waits for.
                let _ = self.id.disconnect();
                self.drain(&ep);
                // rdma-cm's disconnect is the same whether the peer disconnected or its
                // process ended (the kernel disconnects for it). A request of ours in flight
                // tells them apart where it matters: the disconnect flushed it (the kernel
                // moves the QP to its error state first) or will, so the connection broke
                // under it. An idle peer's end is a disconnect, as OpenFabrics reports it.
                let in_flight = self.request_flushed.load(Ordering::Acquire)
                    || !ep.inner.lock().outstanding.is_empty();
                let end = if self.broken.load(Ordering::Acquire) || in_flight {
                    End::Broken
                } else {
                    End::Orderly
                };
                ep.ended(end, E::DAT_CONNECTION_EVENT_BROKEN, &[]);
            }
            T::RDMA_CM_EVENT_DEVICE_REMOVAL => {
                self.broken.store(true, Ordering::Release);
                self.end(&ep, End::Broken, E::DAT_CONNECTION_EVENT_BROKEN, &[]);
            }
            _ => {}
        }
    }
}

impl Progress for Conn {
    // The EVDs' completion queues move the data; the connection has nothing of its own.
    fn progress(&self) {}
}

impl Link for Conn {
    fn close(&self, how: Close) {
        if debug() {
            eprintln!("libdat: closing a connection ({how:?})");
        }
        let _ = self.id.disconnect();
        if how == Close::Released {
            if let Some(ep) = self.ep.upgrade() {
                self.drain(&ep);
            }
        }
    }

    fn post(
        &self,
        ep: &Ep,
        inner: MutexGuard<'_, EpInner>,
        out: &Outgoing<'_>,
    ) -> DatResult<Posted> {
        let Some(qp) = self.qp.get() else {
            return Ok(Posted::Flush);
        };
        let mut inner = inner;
        let full =
            |inner: &EpInner| send_queue_full(&inner.outstanding, inner.attr.max_request_dtos);
        if full(&inner) {
            // Completions of requests the program does not reap (suppressed ones) may wait in
            // the request CQ: take them here, as a verbs provider frees unsignalled work
            // requests when the queue's next completion is polled.
            let source = inner.request_evd.as_deref().and_then(CqSource::of);
            if let Some(source) = source {
                drop(inner);
                source.poll();
                inner = ep.inner.lock();
                if inner.link.is_none() {
                    return Ok(Posted::Flush);
                }
            }
            if full(&inner) {
                return Err(DatError::resources(Sub::DAT_RESOURCE_TEP));
            }
        }
        let EpInner {
            outstanding, attr, ..
        } = &mut *inner;
        self.post_on(qp, outstanding, attr.max_request_dtos, out)
    }

    fn receive_posted(&self, _ep: &Ep) {}

    fn bind_window(&self, inner: MutexGuard<'_, EpInner>, bind: &WindowBind) -> DatResult<u32> {
        let Some(qp) = self.qp.get() else {
            return Err(DatError::invalid_state(
                Sub::DAT_INVALID_STATE_EP_DISCONNECTED,
            ));
        };
        let mw =
            Mw::of(&bind.window).ok_or(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_RMR))?;
        let region = match &bind.region {
            Some(r) => {
                Some(Mr::of(r).ok_or(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_LMR))?)
            }
            None => None,
        };
        if region.as_ref().is_some_and(|mr| !mr.window_binds) {
            // Read-only memory, pinned without MW_BIND: the device would fail the bind and
            // break the connection.
            return Err(DatError::bare(Type::DAT_MODEL_NOT_SUPPORTED));
        }
        let mut inner = inner;
        if inner.outstanding.len() + 1 >= inner.attr.max_request_dtos.max(2) as usize {
            return Err(DatError::resources(Sub::DAT_RESOURCE_TEP));
        }
        let access = access::remote(bind.privileges);
        // A type 2 window binds only when free: a bound one is invalidated first (an unbind is
        // that alone), by a request of the bind's that reports only a failure.
        if bind.bound && region.is_some() {
            let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
            inner.outstanding.push_back(Outstanding {
                seq,
                report: Report::FailureOnly,
                ..bind.request
            });
            if qp.post_window(seq, &mw, None, mw.rkey()).is_err() {
                inner.outstanding.pop_back();
                return Err(DatError::resources(Sub::DAT_RESOURCE_TEP));
            }
            self.last_signalled.store(seq, Ordering::Relaxed);
        }
        // A bind takes the window's next key; an unbind invalidates the one it has.
        let rkey = if region.is_some() {
            mw.next_rkey()
        } else {
            mw.rkey()
        };
        let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
        inner.outstanding.push_back(Outstanding {
            seq,
            ..bind.request
        });
        let target = region
            .as_deref()
            .map(|mr| (mr, bind.address, bind.length, access));
        if let Err(e) = qp.post_window(seq, &mw, target, rkey) {
            inner.outstanding.pop_back();
            if debug() {
                eprintln!("libdat: binding a memory window: {e}");
            }
            return Err(DatError::resources(Sub::DAT_RESOURCE_TEP));
        }
        self.last_signalled.store(seq, Ordering::Relaxed);
        if region.is_some() {
            mw.set_rkey(rkey);
        }
        Ok(rkey)
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        datagram::forget_endpoint(self);
        if let Some(qp) = self.qp.get() {
            self.verbs.remove_qp(qp.number(), self);
        }
        if let Some(token) = self.timer.get() {
            Engine::get().deregister(*token, None);
        }
    }
}

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
        let conn = match Conn::new(&verbs, id, &ep, false, Vec::new()) {
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
