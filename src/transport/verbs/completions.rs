//! A DTO EVD's completion queue: polled by whoever dequeues or waits on the EVD, and by the
//! progress engine when the CQ's channel reports a completion. The channel is asked to report
//! only while someone sleeps on the EVD (a waiter, a CNO): a program that polls would
//! otherwise wake the engine for every completion and lose a CPU to it. Each work completion
//! finds its EP by QP number and completes the oldest request or receive it posted (a QP
//! completes each queue in posting order).

use std::collections::HashMap;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, OnceLock, Weak};

use parking_lot::Mutex;
use rdma_mummy_sys as ibv;

use super::conn::Conn;
use super::cq::{Cq, WorkCompletion};
use super::srq::{VerbsSrq, SRQ_RECV_ID};
use super::transport::Verbs;
use crate::abi::*;
use crate::objects::ep::Ep;
use crate::objects::evd::{Catch, Evd};
use crate::objects::rmr::Window;
use crate::objects::seam::Progress;
use crate::objects::srq::PostedRecv;
use crate::runtime::engine::{Engine, Source, Token};

/// A receive's work request id (an SRQ's receives have ids of their own, with
/// [`SRQ_RECV_ID`]); a request's is its sequence number, always below both.
pub const RECV_ID: u64 = 1 << 63;

/// Work completions taken at once.
const BATCH: usize = 16;

/// The smallest CQ of an EVD: EPs of several connections may complete on one EVD.
const MIN_DEPTH: i32 = 256;

/// Every CQ source, by its CQ: a device's report of a CQ's error names the CQ.
static BY_CQ: LazyLock<Mutex<HashMap<usize, Weak<CqSource>>>> = LazyLock::new(Default::default);

/// A CQ overran (the device reports it as the CQ's error): its EVD reports an overflow, as
/// OpenFabrics maps it.
pub fn overflowed(cq: *mut ibv::ibv_cq) {
    let source = BY_CQ.lock().get(&(cq as usize)).and_then(Weak::upgrade);
    if let Some(evd) = source.and_then(|s| s.evd.upgrade()) {
        evd.report_overflow();
    }
}

pub struct CqSource {
    pub cq: Arc<Cq>,
    verbs: Weak<Verbs>,
    evd: Weak<Evd>,
    /// One thread polls at a time, and the others wait for it: completions of one QP must
    /// be handled in order (each names the oldest DTO of its queue), and a thread that left
    /// a busy CQ alone could miss one the holder had already looked past. The lock keeps the
    /// connection the last completion was for.
    polling: Mutex<LastConn>,
    engine: Arc<Engine>,
    token: OnceLock<Token>,
    /// Connections whose graceful close waits for this CQ's completions: the engine is told
    /// of each completion while one does, whether or not anybody sleeps on the EVD.
    drains: AtomicUsize,
}

impl CqSource {
    /// The CQ of a DTO EVD, polled as the EVD is, and watched by the engine.
    pub fn attach(verbs: &Arc<Verbs>, evd: &Arc<Evd>) -> std::io::Result<Arc<CqSource>> {
        let depth = (evd.qlen() as i32).max(MIN_DEPTH);
        let cq = Arc::new(Cq::new(&verbs.device, depth)?);
        let source = Arc::new(CqSource {
            cq,
            verbs: Arc::downgrade(verbs),
            evd: Arc::downgrade(evd),
            polling: Mutex::new(None),
            engine: Engine::get(),
            token: OnceLock::new(),
            drains: AtomicUsize::new(0),
        });
        // The engine holds a weak link: the CQ goes with its EVD.
        let watch = Arc::new(Watch(Arc::downgrade(&source)));
        let token = source.engine.register(source.cq.channel_fd(), watch)?;
        let _ = source.token.set(token);
        // Not armed yet: no completion comes before a connection's stream feeds the EVD, and
        // how the CQ is armed depends on those streams (`streams_changed`); an arm cannot be
        // taken back.
        evd.attach_sole_source(source.clone());
        BY_CQ
            .lock()
            .insert(source.cq.raw() as usize, Arc::downgrade(&source));
        Ok(source)
    }

    /// The EVD was resized to `qlen`: the CQ follows.
    pub fn resize(&self, qlen: usize) -> std::io::Result<()> {
        let _one = self.polling.lock();
        self.cq
            .resize((qlen.min(i32::MAX as usize) as i32).max(MIN_DEPTH))
    }

    /// The CQ source of a DTO EVD of this transport.
    pub fn of(evd: &Evd) -> Option<Arc<CqSource>> {
        evd.completion_queue
            .get()?
            .clone()
            .downcast::<CqSource>()
            .ok()
    }

    /// A graceful close begins (`true`) or ends waiting for this CQ's completions.
    pub fn watch_for_drain(&self, begins: bool) {
        if begins {
            self.drains.fetch_add(1, Ordering::AcqRel);
            self.watch();
        } else {
            self.drains.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// Whether the engine is to hear of the next completion: somebody sleeps on the EVD, or
    /// a graceful close waits.
    fn wanted(&self) -> bool {
        self.drains.load(Ordering::Acquire) > 0
            || self.evd.upgrade().is_some_and(|e| e.has_sleeper())
    }

    /// Asks the CQ and the engine for a report of the next completion: of the next solicited
    /// one (or failure) only when the EVD's sleepers wait for those alone and no graceful
    /// close waits for requests (see `Evd::solicited_only`).
    fn watch(&self) {
        let solicited = self.drains.load(Ordering::Acquire) == 0
            && self.evd.upgrade().is_some_and(|e| e.solicited_only());
        if self.cq.arm(solicited).is_ok() {
            if let Some(token) = self.token.get() {
                self.engine
                    .arm(*token, self.cq.channel_fd(), libc::EPOLLIN as u32);
            }
        }
    }

    /// Takes every completion waiting and completes its DTO.
    pub fn poll(&self) {
        self.poll_catching(&mut Catch::none());
    }

    /// [`CqSource::poll`] for a dequeue of the EVD, which lends its out-parameter.
    fn poll_catching(&self, catch: &mut Catch<'_>) {
        let mut last = self.polling.lock();
        // Most polls find nothing: they write no entry and take no reference.
        let mut wcs = [MaybeUninit::<WorkCompletion>::uninit(); BATCH];
        loop {
            let done = self.cq.poll(&mut wcs);
            if done.is_empty() {
                break;
            }
            self.complete_all(done, &mut last, catch);
            if done.len() < BATCH {
                break;
            }
        }
    }

    // Out of line: a poll that finds nothing (most do) runs a short function that saves few
    // registers.
    #[inline(never)]
    fn complete_all(&self, done: &[WorkCompletion], last: &mut LastConn, catch: &mut Catch<'_>) {
        for wc in done {
            if let Some(known) = self.known(wc.qp_num, last) {
                complete(known, wc, catch);
            }
        }
    }

    /// The connection of QP `qp_num`, which a completion on this CQ names: the last one's,
    /// or the transport's table's (None: the connection is gone, its DTOs flushed).
    fn known<'a>(&self, qp_num: u32, last: &'a mut LastConn) -> Option<&'a Known> {
        // A live connection keeps its QP, so no other QP of the device has its number.
        if !last
            .as_ref()
            .is_some_and(|k| k.qp_num == qp_num && k.conn.strong_count() > 0)
        {
            let conn = self.verbs.upgrade()?.conn_of_qp(qp_num)?;
            *last = Some(Known {
                qp_num,
                conn: Arc::downgrade(&conn),
                ep: conn.ep_link(),
            });
        }
        last.as_ref()
    }
}

impl Progress for CqSource {
    fn progress(&self) {
        self.poll();
    }

    fn progress_catching(&self, catch: &mut Catch<'_>) {
        self.poll_catching(catch);
    }

    /// A thread is about to sleep on the EVD: the next completion is reported (and one that
    /// came before the CQ was armed is taken now).
    fn flush(&self) {
        self.watch();
        self.poll();
    }

    fn unpolled_waiter(&self) {
        self.flush();
    }

    /// A connection's stream came or went: a CNO (which polls nothing) hears of the
    /// completions the streams now call for. (An arm for every completion made before the
    /// EVD's streams all became Solicited Wait ones stays until a completion uses it.)
    fn streams_changed(&self) {
        if self.wanted() {
            self.watch();
        }
    }
}

/// What the engine reports a CQ's channel to.
struct Watch(Weak<CqSource>);

impl Source for Watch {
    fn on_event(self: Arc<Self>, _events: u32) {
        let Some(source) = self.0.upgrade() else {
            return;
        };
        source.cq.take_reports();
        source.poll();
        if source.wanted() {
            source.watch();
            // A completion that came between the poll and the arm reported nothing: look again.
            source.poll();
        }
    }
}

impl Drop for CqSource {
    fn drop(&mut self) {
        BY_CQ.lock().remove(&(self.cq.raw() as usize));
        if let Some(token) = self.token.get() {
            self.engine.deregister(*token, Some(self.cq.channel_fd()));
        }
    }
}

/// The DAT status of a work completion's.
pub fn status(s: ibv::ibv_wc_status::Type) -> dat_dto_completion_status {
    use dat_dto_completion_status as D;
    use ibv::ibv_wc_status as W;
    match s {
        W::IBV_WC_SUCCESS => D::DAT_DTO_SUCCESS,
        W::IBV_WC_WR_FLUSH_ERR => D::DAT_DTO_ERR_FLUSHED,
        W::IBV_WC_LOC_LEN_ERR => D::DAT_DTO_ERR_LOCAL_LENGTH,
        W::IBV_WC_LOC_QP_OP_ERR | W::IBV_WC_LOC_EEC_OP_ERR => D::DAT_DTO_ERR_LOCAL_EP,
        W::IBV_WC_LOC_PROT_ERR | W::IBV_WC_LOC_ACCESS_ERR => D::DAT_DTO_ERR_LOCAL_PROTECTION,
        W::IBV_WC_MW_BIND_ERR => D::DAT_RMR_OPERATION_FAILED,
        W::IBV_WC_BAD_RESP_ERR => D::DAT_DTO_ERR_BAD_RESPONSE,
        W::IBV_WC_REM_ACCESS_ERR => D::DAT_DTO_ERR_REMOTE_ACCESS,
        W::IBV_WC_REM_INV_REQ_ERR | W::IBV_WC_REM_OP_ERR | W::IBV_WC_REM_ABORT_ERR => {
            D::DAT_DTO_ERR_REMOTE_RESPONDER
        }
        W::IBV_WC_RNR_RETRY_EXC_ERR => D::DAT_DTO_ERR_RECEIVER_NOT_READY,
        _ => D::DAT_DTO_ERR_TRANSPORT,
    }
}

/// The connection of a CQ's last completion and its EP, by its QP's number: a CQ mostly
/// completes the DTOs of one or two QPs in a row, found here without the transport's table.
/// Weak: the cache keeps no connection (and so no QP) alive.
struct Known {
    qp_num: u32,
    conn: Weak<Conn>,
    ep: Weak<Ep>,
}

type LastConn = Option<Known>;

/// Completes the DTO a work completion is for; a stale one (its connection gone, the DTO
/// flushed already) is dropped. A failure other than a flush breaks the connection.
fn complete(known: &Known, wc: &WorkCompletion, catch: &mut Catch<'_>) {
    let Some(ep) = known.ep.upgrade() else { return };
    let st = status(wc.status);
    let ok = st == dat_dto_completion_status::DAT_DTO_SUCCESS;
    if crate::runtime::sys::debug() && (!ok || crate::runtime::settings::DEBUG_WC.get()) {
        // SAFETY: ibv_wc_status_str returns a static string for any status.
        let name = unsafe { std::ffi::CStr::from_ptr(ibv::ibv_wc_status_str(wc.status)) };
        eprintln!(
            "libdat: QP {:#x}: work request {:#x} completed with {name:?} (vendor error {:#x}, opcode {}, flags {:#x})",
            wc.qp_num, wc.wr_id, wc.vendor_err, wc.opcode, wc.wc_flags
        );
    }
    if wc.wr_id & SRQ_RECV_ID != 0 {
        // A receive of the EP's SRQ: its cookie waits in the SRQ, whichever EP took it.
        let inner = ep.inner.lock();
        let srq = inner.srq.as_ref().map(|s| s.arc().clone());
        let cookie = srq
            .as_ref()
            .and_then(|s| s.queue.as_deref())
            .and_then(VerbsSrq::of)
            .and_then(|q| q.completed(wc.wr_id));
        if let Some(cookie) = cookie {
            complete_receive(&ep, inner.recv_evd.as_deref(), None, cookie, st, wc, catch);
            drop(inner);
            if let Some(srq) = srq {
                srq.check_low_watermark();
            }
        }
    } else if wc.wr_id == RECV_ID {
        // The receive is reported under the EP's lock, which orders it with a flush (which
        // takes the EP's receives under that lock): `receiving` is not needed here.
        let mut inner = ep.inner.lock();
        if let Some(r) = inner.recvs.pop_front() {
            if Ep::is_datagram(&inner) {
                let len = if ok { wc.byte_len } else { 0 };
                ep.complete_datagram_on(inner.recv_evd.as_deref(), r.cookie, st, len);
            } else {
                complete_receive(
                    &ep,
                    inner.recv_evd.as_deref(),
                    Some(&r),
                    r.cookie,
                    st,
                    wc,
                    catch,
                );
            }
        }
    } else if let Some(conn) = known.conn.upgrade().filter(|c| c.owns(wc.wr_id)) {
        let mut inner = ep.inner.lock();
        // Requests posted unsignalled before this one finished before it, successfully (a
        // failure has a completion of its own): their slots are free now.
        while let Some(r) = inner.outstanding.take_before(wc.wr_id) {
            ep.complete_request_catching(
                inner.request_evd.as_deref(),
                &r,
                dat_dto_completion_status::DAT_DTO_SUCCESS,
                r.length,
                catch,
            );
        }
        if let Some(r) = inner.outstanding.take_through(wc.wr_id) {
            if st == dat_dto_completion_status::DAT_DTO_ERR_FLUSHED {
                conn.request_flushed();
            }
            // A read's (and an atomic's) length is what landed.
            let len = match (ok, r.operation) {
                (false, _) => 0,
                (true, dat_dtos::DAT_DTO_RDMA_READ) => wc.byte_len,
                (true, _) => r.length,
            };
            ep.complete_request_catching(inner.request_evd.as_deref(), &r, st, len, catch);
        }
        if conn.drained(&inner) {
            drop(inner);
            conn.finish_drain();
        }
    }
    if !ok && st != dat_dto_completion_status::DAT_DTO_ERR_FLUSHED {
        if let Some(conn) = known.conn.upgrade() {
            // The transport's retries ran out: the peer is gone, nothing broke.
            if wc.status == ibv::ibv_wc_status::IBV_WC_RETRY_EXC_ERR {
                conn.peer_lost();
            } else {
                conn.fail();
            }
        }
    }
}

/// The flags of a receive that invalidated a window: IBV_WC_WITH_INV, and the kernel's own
/// value of it, which soft-RoCE passes to user space unchanged (where it reads as
/// IBV_WC_IP_CSUM_OK, which no RC receive carries otherwise).
const WITH_INVALIDATE: u32 =
    ibv::ibv_wc_flags::IBV_WC_WITH_INV.0 | ibv::ibv_wc_flags::IBV_WC_IP_CSUM_OK.0;

/// Reports the receive a work completion finished (with the immediate data of a write that
/// carried some): `recv`, the EP's own, as it asked to be reported.
///
/// A work completion does not say whether its message was solicited. A receive of a Solicited
/// Wait EP is taken as solicited, except where a dequeue's own poll found it (nobody sleeps
/// on the EVD then, and it triggers no CNO): the CQ of a Solicited Wait EVD reports only
/// solicited completions to the engine (`CqSource::watch`), so one that wakes a sleeper
/// came with a solicited one, or was there before the waiter went to sleep.
#[inline]
fn complete_receive(
    ep: &Ep,
    evd: Option<&Evd>,
    recv: Option<&PostedRecv>,
    cookie: u64,
    st: dat_dto_completion_status,
    wc: &WorkCompletion,
    catch: &mut Catch<'_>,
) {
    let ok = st == dat_dto_completion_status::DAT_DTO_SUCCESS;
    if ok && wc.opcode == ibv::ibv_wc_opcode::IBV_WC_RECV && wc.wc_flags & WITH_INVALIDATE != 0 {
        // A send with invalidate: the device invalidated our window of that key; its RMR is
        // unbound before the receive is reported (a key that names no window bound through
        // this EP changes nothing).
        // SAFETY: a completion flagged so carries the invalidated key.
        Window::invalidate(
            unsafe { wc.imm_data_invalidated_rkey_union.invalidated_rkey },
            ep,
        );
    }
    let len = if ok { wc.byte_len } else { 0 };
    if ok && wc.opcode == ibv::ibv_wc_opcode::IBV_WC_RECV_RDMA_WITH_IMM {
        // SAFETY: a write with immediate data completes with the immediate.
        let data = unsafe { wc.imm_data_invalidated_rkey_union.imm_data };
        ep.complete_immediate_on(evd, cookie, st, len, data);
    } else if let Some(recv) = recv {
        let solicited = !catch.for_dequeue();
        ep.complete_recv_with(evd, recv, st, len, solicited, catch);
    } else {
        ep.complete_recv_catching(evd, cookie, st, len, catch);
    }
}
