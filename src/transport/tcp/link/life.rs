//! The connection's life: started by a connect or an accept (the passive side waits in
//! `Phase::Handshake` for the peer's confirmation), open, closed by this side (`begin_close`)
//! or ended by whoever finds the end (`stop`, carried out on the engine's thread by
//! `end_now`), then lingering while the last answers go and the peer's last frames are read
//! and dropped, until the socket is let go (`close_now`).

use std::net::SocketAddrV4;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::TcpLink;
use crate::abi::*;
use crate::error::{DatError, DatResult};
use crate::objects::ep::{Close, End, Ep};
use crate::objects::seam::{Link, PendingConnect};
use crate::runtime::engine;
use crate::runtime::sys::{self, debug};
use crate::transport::tcp::answers::Answer;
use crate::transport::tcp::cm::{self, ConnectFailure, IncomingRequest, HANDSHAKE_TIMEOUT};
use crate::transport::tcp::conn::{ConnError, Wrote};
use crate::transport::tcp::direct::{self, FillOrder, Offer};
use crate::transport::tcp::ep_wire;
use crate::transport::tcp::inbound::Stop;
use crate::transport::tcp::wire::{Header, Op, ReadLimits};
use crate::transport::tcp::wire_limits;

/// How long an ending connection waits for the peer's last frames before it lets go.
pub(super) const LINGER: Duration = Duration::from_secs(1);

/// Where a connection is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Phase {
    /// The passive side accepted and waits for the peer's confirmation, until the deadline.
    Handshake {
        deadline: u64,
    },
    Open,
    /// Ended: the last answers go out and what the peer still sends is read and dropped, so
    /// closing does not reset the connection under its last frames; until the deadline.
    Lingering {
        deadline: u64,
    },
    Closed,
}

impl TcpLink {
    /// Starts the engine watching: the peer's first frames may be read ahead already, so the
    /// engine looks at once.
    fn begin(&self) {
        self.rearm();
        self.kick();
    }

    /// The active side's confirmation arrived (with its direct offer, if it made one):
    /// ESTABLISHED, and ours goes back (with our offer, if the peer asked for one). The event
    /// is posted under the writer lock and the confirmation written before the lock goes: the
    /// consumer's first frames cannot overtake the confirmation, and the peer (established
    /// only by the confirmation) cannot disconnect before our event is posted.
    pub(in crate::transport::tcp) fn confirm_established(&self, peer_offer: Option<Offer>) -> bool {
        let mut w = self.writer.lock();
        if !matches!(self.phase(), Phase::Handshake { .. }) {
            return false;
        }
        // The direct path is there before the consumer hears ESTABLISHED.
        if let Some(offer) = peer_offer {
            self.direct_offered(offer);
        }
        if !self.ep.established(None, &[]) {
            return false;
        }
        *self.phase.lock() = Phase::Open;
        self.set_timer(); // the handshake's deadline is gone
        let offer = match (self.peer_direct, self.ends, self.ep.pz()) {
            (true, Some((local, remote)), Some(pz)) => {
                direct::offer(Arc::as_ptr(&pz) as u64, local, remote)
            }
            _ => None,
        };
        let wrote = match offer {
            Some((offer, slot)) => {
                self.export(slot);
                w.write_owned_now(&offer.ready(), Box::new(offer.cookie))
            }
            None => w.answer_now(&Header::new(Op::Ready), &[], None),
        };
        match wrote {
            Ok(Wrote::All) => {}
            Ok(_) => self.out_blocked.store(true, Ordering::Release),
            Err(_) => return false,
        }
        true
    }

    /// Records how the connection ended (first finder wins); the engine ends it.
    pub(super) fn stop(&self, outcome: Result<Stop, ConnError>) {
        self.stopped.lock().get_or_insert(outcome);
        if !self.ending.swap(true, Ordering::AcqRel) && !engine::on_engine() {
            self.kick();
        }
    }

    /// This side closes (`Link::close`): abruptly at once; gracefully once every request of
    /// ours is answered (`draining`: the engine's look says the goodbye, `goodbye_if_drained`).
    pub(super) fn begin_close(&self, how: Close) {
        self.close_direct();
        match how {
            // The page: the requests posted before must try to complete first, the EP
            // DISCONNECT_PENDING meanwhile. A send whose message waits at the peer for a
            // receive keeps the connection open until the peer posts it, for the peer timeout
            // at most (then the goodbye goes, and what is left flushes); the peer's end, an
            // abrupt disconnect or `dat_ep_free` ends the wait sooner.
            Close::Graceful => {
                self.drain_deadline.store(
                    sys::monotonic_micros() + self.peer_timeout.as_micros() as u64,
                    Ordering::Release,
                );
                self.draining.store(true, Ordering::Release);
                self.kick();
            }
            // At once, whatever the socket does: the EP hears DISCONNECTED as the engine ends
            // the connection, and what was posted is flushed, never sent.
            Close::Abrupt | Close::Released => {
                self.draining.store(false, Ordering::Release);
                self.answers.push(Answer::Goodbye);
                self.answers.push(Answer::Finish);
                self.stop(Ok(Stop::Goodbye));
                self.flush_answers();
            }
        }
    }

    /// A request of ours was answered: a graceful close waiting for the last one goes on
    /// (on the engine's thread) when `none_left` says none is in flight any more (asked only
    /// while a close waits).
    #[inline]
    pub(in crate::transport::tcp) fn answered(&self, none_left: impl FnOnce() -> bool) {
        if self.draining.load(Ordering::Acquire) && none_left() {
            self.kick();
        }
    }

    /// A graceful close whose requests are all answered (or that waited the peer timeout for
    /// them) says goodbye: it follows the answers
    /// already queued, so the peer completes everything it was owed before it sees us leave;
    /// the peer answers, sees the goodbye and closes. It is given until its frames stop
    /// coming for a moment (`LINGER`), and no longer than the peer timeout in all, whatever
    /// it sends meanwhile.
    fn goodbye_if_drained(&self, now: u64) {
        if !self.draining.load(Ordering::Acquire)
            || (!self.ep.inner.lock().outstanding.is_empty()
                && now < self.drain_deadline.load(Ordering::Acquire))
            || !self.draining.swap(false, Ordering::AcqRel)
        {
            return;
        }
        self.answers.push(Answer::Goodbye);
        let now = sys::monotonic_micros();
        self.close_deadline.store(
            now + self.peer_timeout.as_micros() as u64,
            Ordering::Release,
        );
        self.closed_at.store(now, Ordering::Release);
        self.flush_answers();
    }

    /// The connection ended (`stopped`): carried out on the engine's thread.
    pub(super) fn end_now(&self) {
        if !self.begin_lingering() {
            return;
        }
        self.ending.store(true, Ordering::Release);
        self.lent.store(false, Ordering::Release);
        self.close_direct();
        let outcome = self.stopped.lock().take().unwrap_or(Err(ConnError::Closed));
        if debug() {
            self.report_end(&outcome);
        }
        self.inbound.lock().abandon(&self.ep);
        self.drop_unwritten();
        if let Err(ConnError::Io(e)) = &outcome {
            if peer_unreachable(e) {
                self.fail_request_in_flight();
            }
        }
        // A peer that went away (its goodbye, or none: its process ended, its socket was
        // reset, or it stopped answering within the peer timeout) ends the connection as a
        // disconnect, as OpenFabrics reports it and as programs expect (dapltest takes BROKEN
        // after a disconnect for a failure); a broken rule (an access refused, a protocol
        // error) breaks it.
        let end = match outcome {
            Ok(Stop::Goodbye) | Err(ConnError::Closed | ConnError::Io(_)) => End::Orderly,
            Ok(Stop::Lost | Stop::Broken) | Err(ConnError::Protocol(_)) => End::Broken,
        };
        // Only the EP's own link: one it never took (an attempt it gave up) ends unheard.
        self.ep.link_ended(
            (self as *const TcpLink).cast(),
            end,
            dat_event_number::DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR,
            &[],
        );
        // Our answers go out, then our side closes.
        self.answers.push(Answer::Finish);
        self.flush_answers();
        self.set_timer();
        self.rearm();
    }

    /// The connection starts to linger (until `LINGER` from now); false when it lingers, or
    /// is closed, already.
    fn begin_lingering(&self) -> bool {
        let mut phase = self.phase.lock();
        if matches!(*phase, Phase::Lingering { .. } | Phase::Closed) {
            return false;
        }
        *phase = Phase::Lingering {
            deadline: sys::monotonic_micros() + LINGER.as_micros() as u64,
        };
        true
    }

    /// What was not written goes unwritten: the requests are flushed as the connection ends,
    /// and the consumer may reuse their memory then. A frame the socket took in part is cut
    /// short, so nothing may follow it: the peer reads the end of the stream.
    fn drop_unwritten(&self) {
        let mut w = self.writer.lock();
        self.held.clear(&w);
        if w.has_rest() {
            w.drop_rest();
            self.answers.cut();
        }
    }

    /// The peer stopped acknowledging (its host is gone, or the network between): the request
    /// in flight fails as an RC QP's whose retries ran out, the rest flush.
    fn fail_request_in_flight(&self) {
        let oldest = ep_wire::pop_request(&self.ep);
        if let Some((request, _)) = oldest {
            self.ep.complete_request(
                &request,
                dat_dto_completion_status::DAT_DTO_ERR_TRANSPORT,
                0,
            );
        }
    }

    /// The deadlines of the connection's life as the engine's timer looks (the handshake's,
    /// the linger's, a close's), and an end found meanwhile: true when the look ends here
    /// (the end carried out, or the socket let go).
    #[inline]
    pub(super) fn life_ends_this_look(&self, now: u64) -> bool {
        if self.ending.load(Ordering::Acquire)
            && !matches!(self.phase(), Phase::Lingering { .. } | Phase::Closed)
        {
            self.end_now();
            return true;
        }
        match self.phase() {
            Phase::Handshake { deadline } if now >= deadline => {
                self.stopped.lock().get_or_insert(Err(ConnError::Closed));
                self.ending.store(true, Ordering::Release);
                self.end_now();
                return true;
            }
            Phase::Lingering { deadline } if now >= deadline => {
                self.close_now();
                return true;
            }
            Phase::Closed => return true,
            Phase::Open => self.goodbye_if_drained(now),
            _ => {}
        }
        let closed = self.closed_at.load(Ordering::Acquire);
        if closed != 0
            && (now >= closed + LINGER.as_micros() as u64
                || now >= self.close_deadline.load(Ordering::Acquire))
        {
            if self.active.swap(false, Ordering::Relaxed)
                && now < self.close_deadline.load(Ordering::Acquire)
            {
                self.closed_at.store(now, Ordering::Release);
            } else {
                // The peer did not answer our goodbye in time, or kept sending past the close's
                // deadline.
                self.stop(Err(ConnError::Closed));
                self.end_now();
                return true;
            }
        }
        false
    }

    /// Reads and drops what the peer still sends while the connection lingers; closes at
    /// its end of stream.
    pub(super) fn linger_reads(&self) {
        let mut inb = self.inbound.lock();
        loop {
            match inb.reader.skip_some(usize::MAX >> 1) {
                Ok(0) => break,
                Ok(_) => continue,
                Err(_) => {
                    drop(inb);
                    return self.close_now();
                }
            }
        }
    }

    /// Lets go of the socket: no report reaches this connection any more.
    pub(super) fn close_now(&self) {
        {
            let mut phase = self.phase.lock();
            if *phase == Phase::Closed {
                return;
            }
            *phase = Phase::Closed;
        }
        let _w = self.watch.lock();
        self.engine.deregister(self.token(), Some(self.fd));
    }
}

/// Starts connect `attempt` of `ep` on the engine: ESTABLISHED or the failure's event
/// follows, unless the EP gives the attempt up first (it cancels it then).
pub fn connect(
    ep: Arc<Ep>,
    attempt: u64,
    remote: SocketAddrV4,
    conn_qual: u64,
    private_data: Vec<u8>,
    timeout: Option<Duration>,
) -> DatResult {
    // The EP's zone, for the direct offer our confirmation may carry.
    let zone = ep.pz().map(|pz| Arc::as_ptr(&pz) as u64);
    let reads = read_limits(&ep);
    let watch = super::super::peer_timeout(ep.ia.entry.peer_timeout());
    let owner = ep.clone();
    let on_done = move |result: Result<cm::Established, ConnectFailure>| {
        let failure = |event: dat_event_number, pd: &[u8]| ep.attempt_failed(attempt, event, pd);
        if result.is_ok() && !ep.attempt_is_pending(attempt) {
            // Given up meanwhile: the socket closes, and the peer's accept fails.
            return;
        }
        let est = match result {
            Ok(est) => est,
            Err(ConnectFailure::Rejected(pd)) => {
                return failure(dat_event_number::DAT_CONNECTION_EVENT_PEER_REJECTED, &pd)
            }
            Err(ConnectFailure::Refused) => {
                return failure(
                    dat_event_number::DAT_CONNECTION_EVENT_NON_PEER_REJECTED,
                    &[],
                )
            }
            Err(ConnectFailure::Unreachable) => {
                return failure(dat_event_number::DAT_CONNECTION_EVENT_UNREACHABLE, &[])
            }
            Err(ConnectFailure::TimedOut) => {
                return failure(dat_event_number::DAT_CONNECTION_EVENT_TIMED_OUT, &[])
            }
        };
        let link = match TcpLink::start(
            est.stream,
            est.reader,
            &ep,
            Phase::Open,
            false,
            est.exported,
            est.peer_offer,
            est.peer_reads,
        ) {
            Ok(l) => l,
            Err(_) => {
                return failure(
                    dat_event_number::DAT_CONNECTION_EVENT_NON_PEER_REJECTED,
                    &[],
                )
            }
        };
        let local_port = link.ends.map_or(0, |(local, _)| local.port());
        if !ep.attempt_established(
            attempt,
            link.clone(),
            est.remote,
            local_port,
            &est.private_data,
        ) {
            // Given up, or freed, while connecting: the peer sees us leave, the EP nothing.
            link.close(Close::Released);
        }
        link.begin();
    };
    let handle = cm::connect(
        remote,
        conn_qual,
        private_data,
        timeout,
        watch,
        wire_limits(),
        zone,
        reads,
        on_done,
    );
    owner.attempt_started(attempt, Arc::new(handle));
    Ok(())
}

impl PendingConnect for cm::ConnectHandle {
    fn cancel(&self) {
        cm::ConnectHandle::cancel(self);
    }
}

/// Accepts a request onto `ep` (already COMPLETION_PENDING): ESTABLISHED follows when the
/// peer confirms, ACCEPT_COMPLETION_ERROR when it does not in time.
pub fn accept(ep: Arc<Ep>, request: IncomingRequest, private_data: &[u8]) -> DatResult {
    let remote = request.remote;
    let peer_direct = request.peer_direct;
    let peer_reads = request.peer_reads;
    let accept_error = dat_event_number::DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR;
    let (stream, reader) = match request.accept_start(private_data, read_limits(&ep)) {
        Ok(s) => s,
        Err(_) => {
            ep.ended(End::Broken, accept_error, &[]);
            return Ok(());
        }
    };
    let deadline = sys::monotonic_micros() + HANDSHAKE_TIMEOUT.as_micros() as u64;
    let link = TcpLink::start(
        stream,
        reader,
        &ep,
        Phase::Handshake { deadline },
        peer_direct,
        None,
        None,
        peer_reads,
    )
    .map_err(|_| DatError::resources(crate::error::Sub::DAT_RESOURCE_MEMORY))?;
    if !ep.accepting(link.clone(), remote) {
        link.close(Close::Released);
    }
    link.begin();
    Ok(())
}

/// The order the receives of `ep`'s receive EVD complete in (its TCP resource), if it has one.
pub(super) fn fill_order(ep: &Ep) -> Option<Arc<FillOrder>> {
    let evd = ep.inner.lock().recv_evd.as_ref()?.arc().clone();
    evd.completion_queue.get()?.clone().downcast().ok()
}

/// How many RDMA reads `ep` answers and starts at once, as its attributes say.
pub(super) fn read_limits(ep: &Ep) -> ReadLimits {
    let attr = ep.inner.lock().attr;
    ReadLimits {
        inbound: attr.max_rdma_read_in.max(0) as u32,
        outbound: attr.max_rdma_read_out.max(0) as u32,
    }
}

/// Whether a socket failed because the peer could not be reached any more (the peer timeout
/// ran out, or no route is left), not because the peer closed or reset it.
fn peer_unreachable(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(
            libc::ETIMEDOUT
                | libc::EHOSTUNREACH
                | libc::ENETUNREACH
                | libc::EHOSTDOWN
                | libc::ENETDOWN
        )
    )
}
