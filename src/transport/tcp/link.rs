//! A connected EP over TCP. Frames move in three places:
//!
//! - the posting thread writes its request (send, RDMA write, RDMA read request) itself, under
//!   the writer lock, recording it as outstanding in wire order; one fenced behind RDMA reads
//!   in flight, and those posted after it, wait in `held` and go as answers do;
//! - incoming frames are handled by whoever holds the inbound half (`inbound`), never blocking:
//!   the consumer's thread as it polls or waits on an EVD the EP feeds, or else the progress
//!   engine, which the kernel wakes as data arrives. One rule decides which (see `lease`): a
//!   thread that keeps polling the connection takes it on lease and the engine leaves it
//!   alone, until the thread sleeps, or stops polling and lets its lease run out;
//! - answers (acknowledgements, read data, refusals) are queued (`answers`) and written, without
//!   blocking, by whoever handled the frame; one the socket has no room for waits, and the
//!   engine writes it when the socket drains. So the engine never blocks, and two busy peers
//!   cannot deadlock on full sockets: each one's engine keeps reading.
//!
//! A connection's end is found by whoever reads it, and carried out on the engine's thread
//! (a consumer's poll holds its EVD's list of connections, which the end changes).
//!
//! With a peer on this host that took up our offer (and we its), most of this is bypassed
//! (`direct`): the posting thread puts its sends, RDMA writes and reads straight into the
//! peer's memory and completes them at once, the peer's messages land in our published
//! receives, and a poll asks the socket only when the peer's count of its frames moved.

use std::net::{SocketAddrV4, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use parking_lot::{Mutex, MutexGuard};

use super::answers::{Answer, Answers, Flushed};
use super::cm::{self, ConnectFailure, IncomingRequest, HANDSHAKE_TIMEOUT};
use super::conn::{watch_peer, ConnError, Frame, Reader, Writer, Wrote, MAX_PARTS};
use super::direct::{self, Direct, ExportedSlot, Offer, Outcome, Receives};
use super::held::{Held, HeldRequest, Reads};
use super::inbound::{self, Inbound, Stop};
use super::wire::{flags, Header, Op, ReadLimits, ATOMIC_OPERANDS};
use super::wire_limits;
use crate::abi::*;
use crate::error::{DatError, DatResult};
use crate::objects::ep::{Close, End, Ep, EpInner, Outgoing, Posted, Request};
use crate::objects::extension::Extended;
use crate::objects::srq::Segments;
use crate::runtime::engine::{self, Engine, Source, Token};
use crate::runtime::lease::{self, Lent};
use crate::runtime::sys::{self, debug};
use crate::transport::{Link, Progress};

/// How long the engine's acknowledgements wait for company (more of them, or a request of the
/// consumer's to ride on), in microseconds, at least and at most. Each connection adapts: the
/// wait doubles when the consumer's request took them (a program that answers what arrives:
/// a longer wait costs nothing, and an expiry the engine would wake for goes), and falls back
/// to the least when none came (a program that only receives: its peer's requests complete
/// soon).
const ACK_HOLD_MIN_US: u64 = 20;
const ACK_HOLD_MAX_US: u64 = 1000;

/// After this many holds in a row that nothing came for, the engine holds acknowledgements no
/// more (hold 0) until a request comes soon after one went: a program that sends and waits
/// for each completion, and never answers, would wait out every hold.
const LONE_ACKS_BEFORE_NO_HOLD: u32 = 3;

/// How many of its polls a thread that holds the connection on lease holds acknowledgements
/// for its next request to carry (a ping-pong's reply): counted, not timed, so the poll reads
/// no clock. About the engine's `ACK_HOLD_MIN_US` at the usual half microsecond a poll.
const ACK_HOLD_POLLS: u64 = 32;
/// How many times the exiting thread tries a lock another thread holds (see `on_exit`).
const EXIT_FLUSH_TRIES: usize = 100;

/// How many polls since the engine last looked make a thread worth offering the connection:
/// a thread in a polling loop makes dozens between two messages; one that reaps completions
/// now and then between other work makes a few.
const LEND_AFTER_POLLS: u64 = 16;

/// How many more polls take an offer (see `offer_lease`).
const ACCEPT_AFTER_POLLS: u64 = 4;

/// How long the engine's offer of the connection stands (microseconds): a thread in a polling
/// loop takes it within a poll or two of running again (the engine's own wake-up may have put
/// it off its CPU for a moment). Meanwhile that thread handles the data that woke the engine.
const OFFER_US: u64 = 100;

/// How soon the engine looks again when it found a consumer's poll handling the connection
/// (microseconds): that poll handles what woke the engine; this catches what came after it.
const BUSY_RETRY_US: u64 = 20;

/// How long a consumer's poll waits at most for the thread handling the connection's frames
/// (see `progress`): that thread's share of work, or its time off its CPU on a busy machine
/// (the waiting poll lets it run).
const LANDING_WAIT: Duration = Duration::from_millis(20);

/// How long an ending connection waits for the peer's last frames before it lets go.
const LINGER: Duration = Duration::from_secs(1);

/// Where a connection is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
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

pub struct TcpLink {
    me: Weak<TcpLink>,
    /// The EP this connection serves. Held, not weakly: the EP holds the link only until the
    /// connection ends or its handle dies (`Ep::ended`, `Ep::on_release`).
    ep: Arc<Ep>,
    engine: Arc<Engine>,
    token: OnceLock<Token>,
    fd: RawFd,

    writer: Writer,
    next_seq: AtomicU64,
    answers: Answers,
    /// Set when a thread found the writer taken as it had answers to write: the holder writes
    /// them as it lets go (see `flush_answers`).
    write_wanted: AtomicBool,
    /// Requests that wait for the RDMA reads before a fenced one (see `held`).
    held: Held,
    /// Our RDMA reads sent and not yet answered with their data.
    reads_in_flight: AtomicUsize,
    /// Set while answers wait for room in the socket.
    out_blocked: AtomicBool,
    inbound: Mutex<Inbound>,
    /// Counts the consumer's polls: no clock in the polling path.
    polls: AtomicU64,
    /// `polls` as the engine last saw it (the engine's own).
    polls_seen: AtomicU64,
    /// The engine's offer of the connection to a polling thread: the poll count from which a
    /// poll may take it (0: no offer). See `offer_lease`.
    offer: AtomicU64,
    /// The offer the engine made and has not settled yet (the engine's own; 0: none), and
    /// when it runs out (monotonic microseconds).
    offered: AtomicU64,
    offer_deadline: AtomicU64,
    /// When the engine looks again at a connection a consumer's poll was handling (monotonic
    /// microseconds, 0: no such look due).
    retry_at: AtomicU64,
    /// Set while a polling thread holds the connection on lease: the engine is not woken for
    /// its data.
    lent: AtomicBool,
    /// Set when the last thread that polled the connection went to sleep (`Progress::flush`),
    /// cleared by its next poll: the engine offers a sleeping thread nothing.
    resting: AtomicBool,
    phase: Mutex<Phase>,
    /// Serializes the arming of the socket in the engine.
    watch: Mutex<()>,
    /// Set by a kick until the engine's timer looks (`on_timer` clears it first thing).
    kicked: AtomicBool,
    /// Serializes the setting of the engine's timer: each setting replaces the last, so one
    /// worked out from a look that missed a kick must not land after the kick's.
    timer: Mutex<()>,
    /// How the connection ended, as whoever found out first saw it; the engine carries it out.
    stopped: Mutex<Option<Result<Stop, ConnError>>>,
    /// Set once `stopped` is, or the end began: polls leave the frames alone.
    ending: AtomicBool,
    /// This side closed (abruptly, or gracefully) at this time (monotonic microseconds, 0:
    /// not): the peer's goodbye is awaited for `LINGER` since the last frame.
    closed_at: AtomicU64,
    /// Set when a frame was handled since the engine last looked at a close's deadline.
    active: AtomicBool,
    /// When a graceful close ends whatever the peer sends (monotonic microseconds).
    close_deadline: AtomicU64,
    /// How long the peer may go unheard while something is owed (the IA's peer timeout): the
    /// socket's retransmission and keepalive bound, and a graceful close's.
    peer_timeout: Duration,
    /// How many RDMA reads (and atomics) of ours may be in flight at once: the EP's
    /// `max_rdma_read_out`, and no more than the peer's `max_rdma_read_in`.
    read_depth: usize,
    /// How many of the peer's reads and atomics this side answers at once: the EP's
    /// `max_rdma_read_in` (a peer that asks for more breaks the connection, as a verbs
    /// responder refuses them).
    reads_in_limit: usize,
    /// How long the engine holds acknowledgements now (`ACK_HOLD_MIN_US` to `_MAX_US`).
    ack_hold_us: AtomicU64,
    /// When the engine began to hold acknowledgements that then went alone (monotonic
    /// microseconds; 0: none did since the consumer's last request).
    lone_acks_held_at: AtomicU64,
    /// How many times in a row the engine's acknowledgements went alone, nothing coming for
    /// them (`LONE_ACKS_BEFORE_NO_HOLD` of them: it stops holding them).
    lone_streak: AtomicU32,
    /// How many times in a row the acknowledgements a polling thread held went alone, its
    /// `ACK_HOLD_POLLS` run out (`LONE_ACKS_BEFORE_NO_HOLD` of them: it stops holding them).
    poll_lone_streak: AtomicU32,
    /// The poll (`polls`) at which a polling thread's acknowledgements last went alone (0:
    /// none did since the consumer's last request).
    poll_lone_at: AtomicU64,
    /// The peer runs on this machine (a loopback or local address): its engine's wake-ups
    /// compete with our threads for the same CPUs (see `post`).
    peer_on_this_host: bool,
    /// Our end of the connection and the peer's.
    ends: Option<(SocketAddrV4, SocketAddrV4)>,
    /// The peer asked for our direct offer (`direct`).
    peer_direct: bool,
    /// The connection's slot in our export table, once offered.
    exported: OnceLock<Arc<ExportedSlot>>,
    /// Our direct path into the peer's memory, once its offer was taken up.
    direct: OnceLock<Direct>,
    /// Set when the direct path failed: the socket carries everything from then on.
    direct_off: AtomicBool,
    /// The peer's count of its frames as a poll last saw it (see `socket_quiet`).
    frames_seen: AtomicU64,
    /// What happened to the connection, for `LIBDAT_DEBUG`.
    stats: Stats,
    /// When the link started (monotonic microseconds), for `LIBDAT_DEBUG`.
    started: u64,
}

/// Counts of how a connection was moved, printed as it ends when `LIBDAT_DEBUG` is set.
#[derive(Default, Debug)]
struct Stats {
    /// Reports of the engine's (data, room, timer).
    engine_events: AtomicU64,
    /// Times the engine handled frames itself.
    engine_reads: AtomicU64,
    offers: AtomicU64,
    leases: AtomicU64,
    taken_back: AtomicU64,
    /// Acknowledgements the engine held that then went alone (no request came to carry them).
    lone_acks: AtomicU64,
    /// Leases that ended with data waiting in the socket.
    taken_back_waiting: AtomicU64,
    /// Our requests (sends, RDMA writes and reads) carried out directly in the peer's memory.
    direct: AtomicU64,
}

fn count(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

impl TcpLink {
    /// A link for `ep` over an established socket; `reader` may hold the peer's first frames.
    /// The direct path (`direct`): `peer_direct`, the peer asked for our offer (the passive
    /// side's confirmation makes it); `exported`, the slot of the offer we made (the active
    /// side's confirmation carried it); `peer_offer`, the peer's, taken up now.
    #[allow(clippy::too_many_arguments)]
    fn start(
        stream: Arc<TcpStream>,
        mut reader: Reader,
        ep: &Arc<Ep>,
        phase: Phase,
        peer_direct: bool,
        exported: Option<Arc<ExportedSlot>>,
        peer_offer: Option<Offer>,
        peer_reads: ReadLimits,
    ) -> std::io::Result<Arc<TcpLink>> {
        let ends = cm::ends(&stream);
        reader.grow();
        let peer_timeout = super::peer_timeout(ep.ia.entry.peer_timeout());
        // A peer that stops acknowledging what we send, or stops answering the kernel's
        // probes of an idle connection, is gone after the peer timeout: the socket fails, and
        // the connection breaks, as an RC QP's retries run out.
        watch_peer(&stream, peer_timeout)?;
        let ours = read_limits(ep);
        // Reads (and atomics) of ours in flight: as many as the EP starts, and no more than
        // the peer answers at once. Zero from either means one (a read must be able to go).
        let read_depth = ours.outbound.max(1).min(peer_reads.inbound.max(1)) as usize;
        let reads_in_limit = ours.inbound.max(1) as usize;
        let peer_on_this_host = match (stream.local_addr(), stream.peer_addr()) {
            (Ok(local), Ok(peer)) => peer.ip().is_loopback() || peer.ip() == local.ip(),
            _ => false,
        };
        let link = Arc::new_cyclic(|me| TcpLink {
            me: me.clone(),
            ep: ep.clone(),
            engine: Engine::get(),
            token: OnceLock::new(),
            fd: stream.as_raw_fd(),
            writer: Writer::new(stream),
            next_seq: AtomicU64::new(1),
            answers: Answers::default(),
            write_wanted: AtomicBool::new(false),
            held: Held::default(),
            reads_in_flight: AtomicUsize::new(0),
            out_blocked: AtomicBool::new(false),
            inbound: Mutex::new(Inbound::new(reader)),
            polls: AtomicU64::new(0),
            polls_seen: AtomicU64::new(0),
            offer: AtomicU64::new(0),
            offered: AtomicU64::new(0),
            offer_deadline: AtomicU64::new(0),
            retry_at: AtomicU64::new(0),
            lent: AtomicBool::new(false),
            resting: AtomicBool::new(true),
            phase: Mutex::new(phase),
            watch: Mutex::new(()),
            kicked: AtomicBool::new(false),
            timer: Mutex::new(()),
            stopped: Mutex::new(None),
            ending: AtomicBool::new(false),
            closed_at: AtomicU64::new(0),
            active: AtomicBool::new(false),
            close_deadline: AtomicU64::new(u64::MAX),
            peer_timeout,
            read_depth,
            reads_in_limit,
            ack_hold_us: AtomicU64::new(ACK_HOLD_MIN_US),
            lone_acks_held_at: AtomicU64::new(0),
            poll_lone_streak: AtomicU32::new(0),
            poll_lone_at: AtomicU64::new(0),
            lone_streak: AtomicU32::new(0),
            peer_on_this_host,
            ends,
            peer_direct,
            exported: OnceLock::new(),
            direct: OnceLock::new(),
            direct_off: AtomicBool::new(false),
            frames_seen: AtomicU64::new(0),
            stats: Stats::default(),
            started: sys::monotonic_micros(),
        });
        if let Some(offer) = peer_offer {
            link.direct_offered(offer);
        }
        if let Some(slot) = exported {
            link.export(slot);
        }
        let token = link.engine.register(link.fd, link.clone())?;
        let _ = link.token.set(token);
        if let Phase::Handshake { deadline } = phase {
            link.engine.set_timer(token, deadline);
        }
        Ok(link)
    }

    /// Whether the peer may ask for one more read (or atomic) now: fewer than the EP answers
    /// at once wait for their answers to be written.
    pub(super) fn may_answer_read(&self) -> bool {
        self.answers.reads_queued() < self.reads_in_limit
    }

    /// Whether every request of ours up to `seq` went out whole: the peer may answer only
    /// those.
    pub(super) fn sent_through(&self, seq: u64) -> bool {
        self.writer.sent().through(seq)
    }

    /// How many reads of ours are in flight, and how many may be.
    fn reads(&self) -> Reads<'_> {
        Reads {
            in_flight: &self.reads_in_flight,
            depth: self.read_depth,
        }
    }

    fn token(&self) -> Token {
        *self.token.get().expect("registered at start")
    }

    fn phase(&self) -> Phase {
        *self.phase.lock()
    }

    /// Starts the engine watching: the peer's first frames may be read ahead already, so the
    /// engine looks at once.
    fn begin(&self) {
        self.rearm();
        self.kick();
    }

    /// Has the engine look at this connection as soon as it can (its timer, due now).
    fn kick(&self) {
        let _t = self.timer.lock();
        self.kicked.store(true, Ordering::Release);
        self.engine.set_timer(self.token(), sys::monotonic_micros());
    }

    /// Queues an answer and writes what can be written now.
    pub(super) fn answer(&self, a: Answer) {
        self.answers.push(a);
        self.flush_answers();
    }

    /// Acknowledges a request the peer made: a consumer's poll owes it (written as it finishes
    /// its progress, or carried by its next request); the engine holds it a moment.
    pub(super) fn acknowledge(&self, seq: u64, in_caller: bool) {
        if in_caller {
            self.answers.owe_ack(seq);
            return;
        }
        let now = sys::monotonic_micros();
        let hold = self.ack_hold_us.load(Ordering::Relaxed);
        if hold == 0 {
            // Nothing has come to carry them for a while (a program that sends and waits for
            // each completion, and never answers): they go at once, as the frame's handling
            // ends, and a request that comes soon after makes the next ones wait (see `post`).
            self.answers.push(Answer::Ack(seq));
            self.lone_acks_held_at.store(now, Ordering::Relaxed);
        } else if self.answers.hold_ack(seq, now + hold) {
            self.set_timer();
        }
    }

    /// One of our RDMA reads has its data in place: requests fenced behind it may go.
    pub(super) fn read_landed(&self) {
        self.reads_in_flight.fetch_sub(1, Ordering::AcqRel);
        // Against `post`: it holds a request, then looks at the count.
        fence(Ordering::SeqCst);
        if self.held.any() {
            self.flush_answers();
        }
    }

    /// A kept message landed with this local status.
    pub(super) fn landed(&self, seq: u64, status: dat_dto_completion_status) {
        if !self.answers.landed(seq, status) {
            self.stop(Ok(Stop::Broken));
        }
    }

    /// The active side's confirmation arrived (with its direct offer, if it made one):
    /// ESTABLISHED, and ours goes back (with our offer, if the peer asked for one). The event
    /// is posted under the writer lock and the confirmation written before the lock goes: the
    /// consumer's first frames cannot overtake the confirmation, and the peer (established
    /// only by the confirmation) cannot disconnect before our event is posted.
    pub(super) fn confirm_established(&self, peer_offer: Option<Offer>) -> bool {
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
            Ok(super::conn::Wrote::All) => {}
            Ok(_) => self.out_blocked.store(true, Ordering::Release),
            Err(_) => return false,
        }
        true
    }

    /// The peer offered us direct access to its memory: taken up if it is what it says (its
    /// table, open for this connection) and we asked for it.
    fn direct_offered(&self, offer: Offer) {
        let Some((local, remote)) = self.ends.filter(|(l, r)| direct::wanted(*l, *r)) else {
            return;
        };
        if let Some(d) = direct::attach(&offer, local, remote) {
            let _ = self.direct.set(d);
        } else if debug() {
            eprintln!("libdat: EP {:p}: the peer's direct offer could not be taken up (pid {}): its accesses go by the socket", self.ep.handle(), offer.pid);
        }
    }

    /// Our offer was made (`slot`): the EP's receives are published to the peer from now on
    /// (an SRQ's are not: they are the SRQ's EPs', in any order).
    fn export(&self, slot: Arc<ExportedSlot>) {
        {
            let mut inner = self.ep.inner.lock();
            if inner.srq.is_none() {
                let EpInner { wire, recvs, .. } = &mut *inner;
                let mut receives = Receives::new(slot.clone());
                receives.publish(recvs, !wire.tcp.unexpected.is_empty());
                wire.tcp.receives = Some(receives);
            }
        }
        let _ = self.exported.set(slot);
    }

    /// Takes the receives the peer filled directly (they complete). Returns whether it found
    /// any (no lock is taken to look).
    pub(super) fn take_direct(&self) -> bool {
        match self.exported.get() {
            Some(slot) if slot.peer_filled() => {
                inbound::take_filled(&self.ep, &mut self.ep.inner.lock());
                true
            }
            _ => false,
        }
    }

    /// Frames of ours went into the socket: a peer that reads our counts of them (`direct`)
    /// looks there.
    fn wrote_frames(&self) {
        if let Some(d) = self.direct.get() {
            d.wrote_frame();
        }
    }

    /// Whether a polling thread may leave the socket alone this poll: the peer counts the
    /// frames it writes (`direct`), and the count has not moved since a poll last looked.
    /// Every 16th poll looks anyway: for a frame the kernel queued after its count moved, and
    /// for the peer's end of stream, which no count tells.
    pub(super) fn socket_quiet(&self) -> bool {
        let Some(frames) = self.exported.get().and_then(|slot| slot.peer_frames()) else {
            return false;
        };
        if frames != self.frames_seen.load(Ordering::Relaxed) {
            self.frames_seen.store(frames, Ordering::Relaxed);
            return false;
        }
        !self.polls.load(Ordering::Relaxed).is_multiple_of(16)
    }

    /// The connection ends: the peer's direct accesses stop (its next one goes by the socket),
    /// those it began finish, and the messages it put in our receives complete (before the
    /// rest flush).
    fn close_direct(&self) {
        if let Some(slot) = self.exported.get() {
            slot.close();
            self.take_direct();
        }
    }

    /// Records how the connection ended (first finder wins); the engine ends it.
    fn stop(&self, outcome: Result<Stop, ConnError>) {
        self.stopped.lock().get_or_insert(outcome);
        if !self.ending.swap(true, Ordering::AcqRel) && !engine::on_engine() {
            self.kick();
        }
    }

    /// Writes the queued answers that can go now, without blocking. A thread that finds the
    /// writer taken leaves them to its holder, which looks again as it lets go; a socket with
    /// no room leaves them to the engine (or to the polls of the thread holding the lease).
    fn flush_answers(&self) {
        loop {
            if !self.answers.pending()
                && !self.out_blocked.load(Ordering::Acquire)
                && !self.held.any()
            {
                return;
            }
            let Some(mut w) = self.writer.try_lock() else {
                self.write_wanted.store(true, Ordering::SeqCst);
                fence(Ordering::SeqCst);
                if self.writer.try_lock().is_none() {
                    return; // its holder sees `write_wanted` after it lets go
                }
                continue;
            };
            self.write_wanted.store(false, Ordering::Relaxed);
            // Held requests first: they keep no order with the answers, and the goodbye
            // among those waits for them.
            let flushed = match self.held.write(&mut w, &self.reads()) {
                Ok(true) => Ok(Flushed::Blocked),
                Ok(false) => self.answers.write(&mut w, self.held.any()),
                Err(e) => Err(e),
            };
            let blocked = w.has_rest() || matches!(flushed, Ok(Flushed::Blocked));
            drop(w);
            self.wrote_frames();
            let was_blocked = self.out_blocked.swap(blocked, Ordering::AcqRel);
            match flushed {
                Err(e) => return self.stop(Err(ConnError::Io(e))),
                Ok(Flushed::Finished) => {}
                Ok(_) if blocked && !was_blocked && !self.lent.load(Ordering::Acquire) => {
                    self.rearm()
                }
                Ok(_) => {}
            }
            fence(Ordering::SeqCst);
            if !self.write_wanted.load(Ordering::Relaxed) {
                return;
            }
        }
    }

    /// Arms the socket in the engine for what it should hear of: incoming data unless a
    /// polling thread holds the connection, room to write while answers wait for it.
    fn rearm(&self) {
        let _w = self.watch.lock();
        let phase = self.phase();
        if phase == Phase::Closed {
            return;
        }
        let mut events = 0;
        if !self.lent.load(Ordering::Acquire)
            || phase != Phase::Open
            || self.ending.load(Ordering::Acquire)
        {
            events |= (libc::EPOLLIN | libc::EPOLLRDHUP) as u32;
        }
        if self.out_blocked.load(Ordering::Acquire) {
            events |= libc::EPOLLOUT as u32;
        }
        if events != 0 {
            self.engine.arm(self.token(), self.fd, events);
        }
    }

    /// Arms the socket again, unless the engine waits on its timer to look (a consumer's poll
    /// was handling the connection): then the timer re-arms it.
    fn rearm_unless_waiting(&self) {
        if self.retry_at.load(Ordering::Acquire) != 0 {
            if self.out_blocked.load(Ordering::Acquire) {
                let _w = self.watch.lock();
                self.engine
                    .arm(self.token(), self.fd, libc::EPOLLOUT as u32);
            }
            return;
        }
        self.rearm();
    }

    /// Sets the engine's timer for this connection to its earliest deadline.
    fn set_timer(&self) {
        let _t = self.timer.lock();
        let mut next = self.answers.ack_due();
        let mut due = |d: u64| {
            if d != 0 && (next == 0 || d < next) {
                next = d;
            }
        };
        due(self.retry_at.load(Ordering::Acquire));
        if self.kicked.load(Ordering::Acquire) {
            due(sys::monotonic_micros());
        }
        let offered = self.offered.load(Ordering::Acquire);
        if offered != 0 {
            due(self.offer_deadline.load(Ordering::Acquire));
        }
        match self.phase() {
            Phase::Handshake { deadline } | Phase::Lingering { deadline } => due(deadline),
            Phase::Open => {}
            Phase::Closed => return,
        }
        let closed = self.closed_at.load(Ordering::Acquire);
        if closed != 0 {
            due(closed + LINGER.as_micros() as u64);
            due(self.close_deadline.load(Ordering::Acquire));
        }
        self.engine.set_timer(self.token(), next);
    }

    /// The consumer's thread takes the engine's offer, if it still stands.
    #[cold]
    fn accept_offer(&self, offer: u64) {
        if self
            .offer
            .compare_exchange(offer, 0, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            count(&self.stats.leases);
            self.lent.store(true, Ordering::Release);
            if let Some(slot) = self.exported.get() {
                slot.set_polled(true); // the peer's messages need no doorbell now
            }
            // Out of the engine's poll while lent: the kernel then runs no poll callback for
            // each message that arrives (3-4% of a polling ping-pong's latency). `rearm` puts
            // it back.
            let _w = self.watch.lock();
            self.engine.park(self.token(), self.fd);
            if let Some(me) = self.me.upgrade() {
                lease::lend(me);
            }
        }
    }

    /// The engine, woken for data, offers the connection to the thread polling it, if one
    /// polled often since the engine last looked. The offer stands for `OFFER_US`; meanwhile
    /// the engine goes on handling what comes (the thread may have polled its last: it got
    /// the completion it waited for, and went off to poll memory for the peer's next write).
    /// True when an offer was made.
    fn offer_lease(&self, polling_now: bool) -> bool {
        let polls = self.polls.load(Ordering::Relaxed);
        let seen = self.polls_seen.swap(polls, Ordering::Relaxed);
        let often = polling_now || polls.wrapping_sub(seen) >= LEND_AFTER_POLLS;
        if !often
            || self.resting.load(Ordering::Acquire)
            || self.phase() != Phase::Open
            || self.offered.load(Ordering::Relaxed) != 0
        {
            return false;
        }
        // Taken by a poll a few polls on: a thread that goes on polling, not one that
        // happened to be in its last poll (a program that reaps now and then between other
        // work drains its EVD in a poll or two).
        let offer = polls.wrapping_add(ACCEPT_AFTER_POLLS).max(1);
        self.offer.store(offer, Ordering::SeqCst);
        // The thread may have gone to sleep meanwhile: either it saw the offer and withdrew
        // it (`withdraw_offer`), or we see it resting now and withdraw it ourselves.
        fence(Ordering::SeqCst);
        if self.resting.load(Ordering::SeqCst) {
            let _ = self
                .offer
                .compare_exchange(offer, 0, Ordering::AcqRel, Ordering::Relaxed);
        }
        if self.offer.load(Ordering::Acquire) != offer {
            return self.lent.load(Ordering::Acquire); // withdrawn (or, rarely, taken already)
        }
        count(&self.stats.offers);
        self.offer_deadline
            .store(sys::monotonic_micros() + OFFER_US, Ordering::Release);
        self.offered.store(offer, Ordering::Release);
        self.set_timer();
        true
    }

    /// The polling thread goes to sleep: an offer it has not taken is withdrawn (the engine
    /// settles it when its time runs out).
    fn withdraw_offer(&self) {
        self.resting.store(true, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        let offer = self.offer.load(Ordering::SeqCst);
        if offer != 0 {
            let _ = self
                .offer
                .compare_exchange(offer, 0, Ordering::AcqRel, Ordering::Relaxed);
        }
    }

    /// The engine settles its offer when it runs out: taken, the connection is the thread's;
    /// not taken, the engine withdraws it.
    fn settle_offer(&self) {
        let offered = self.offered.swap(0, Ordering::AcqRel);
        if offered != 0 {
            let _ = self
                .offer
                .compare_exchange(offered, 0, Ordering::AcqRel, Ordering::Relaxed);
        }
    }

    /// Data arrived for a connection the engine watches: a thread that polls it is offered
    /// it, and the engine handles what came.
    fn incoming(&self) {
        match self.inbound.try_lock() {
            Some(inb) => {
                self.offer_lease(false);
                self.engine_reads_with(inb);
            }
            // A consumer's poll is at it, and handles what woke us.
            None => {
                self.offer_lease(true);
                self.busy_retry();
            }
        }
    }

    /// A consumer's poll was handling the connection: the engine looks again in a moment for
    /// what came after that poll (armed again now, the socket would report at once, over and
    /// over, while the poll runs).
    fn busy_retry(&self) {
        self.retry_at
            .store(sys::monotonic_micros() + BUSY_RETRY_US, Ordering::Release);
        self.set_timer();
    }

    /// Handles what the socket has, on the engine's thread.
    fn engine_reads(&self) {
        match self.inbound.try_lock() {
            Some(inb) => self.engine_reads_with(inb),
            None => self.busy_retry(),
        }
    }

    fn engine_reads_with(&self, mut inb: MutexGuard<'_, Inbound>) {
        count(&self.stats.engine_reads);
        if self.ending.load(Ordering::Acquire) {
            return;
        }
        // The end is recorded before the inbound half goes: no poll handles a frame behind it.
        match inbound::advance(&self.ep, self, &mut inb, false) {
            Ok((handled, stop)) => {
                if handled {
                    self.active.store(true, Ordering::Relaxed);
                }
                if let Some(stop) = stop {
                    self.stop(Ok(stop));
                }
            }
            Err(e) => self.stop(Err(e)),
        }
        let more = inb.more;
        drop(inb);
        if more {
            self.kick(); // its share was spent: the engine comes back after the others
        }
        // Acknowledgements alone wait for a ride, or for their timer (see `acknowledge`):
        // written now, each would wake the peer a second time per message.
        if self.answers.ack_due() != 0
            && !self.out_blocked.load(Ordering::Acquire)
            && self.answers.only_acks()
        {
            return;
        }
        self.flush_answers();
    }

    /// Writes answers after a consumer's poll handled frames: acknowledgements alone wait for
    /// the thread's next request to carry them (a ping-pong's reply), for a few polls when it
    /// holds the connection on lease, else with the engine, whose timer sends them if no
    /// request came; anything else goes now.
    fn answer_soon(&self, polls: u64) {
        if !self.answers.pending() && !self.out_blocked.load(Ordering::Relaxed) {
            return;
        }
        if self.only_acks_wait() {
            if !self.lent.load(Ordering::Relaxed) {
                // Sent alone, they would complete the peer's request before our answer comes;
                // a peer that then polls memory, holding its lease, would leave that answer
                // in its socket until the lease ran out.
                self.hold_with_engine();
                return;
            }
            if self.poll_lone_streak.load(Ordering::Relaxed) < LONE_ACKS_BEFORE_NO_HOLD {
                let since = self.answers.held_since(polls);
                if since == 0 || polls.wrapping_sub(since) < ACK_HOLD_POLLS {
                    return;
                }
                // Nothing came for them: after a few in a row, the thread holds them no more
                // (a program that receives and never answers: its peer's sends complete as
                // soon as they land) until a request comes soon after one went (see `post`).
                self.poll_lone_streak.fetch_add(1, Ordering::Relaxed);
            }
            self.poll_lone_at.store(polls.max(1), Ordering::Relaxed);
        }
        self.flush_answers();
    }

    /// Whether nothing but acknowledgements waits to be written (no request held behind a
    /// read, no frame waiting for room): those may wait for a ride.
    fn only_acks_wait(&self) -> bool {
        !self.out_blocked.load(Ordering::Acquire) && !self.held.any() && self.answers.only_acks()
    }

    /// The acknowledgements a consumer's thread held wait with the engine (its timer sends
    /// them if no request carries them first).
    fn hold_with_engine(&self) {
        let due = sys::monotonic_micros() + self.ack_hold_us.load(Ordering::Relaxed);
        if self.answers.hand_to_engine(due) {
            self.set_timer();
        }
    }

    /// The connection ended (`stopped`): carried out on the engine's thread.
    fn end_now(&self) {
        {
            let mut phase = self.phase.lock();
            if matches!(*phase, Phase::Lingering { .. } | Phase::Closed) {
                return;
            }
            *phase = Phase::Lingering {
                deadline: sys::monotonic_micros() + LINGER.as_micros() as u64,
            };
        }
        self.ending.store(true, Ordering::Release);
        self.lent.store(false, Ordering::Release);
        self.close_direct();
        let outcome = self.stopped.lock().take().unwrap_or(Err(ConnError::Closed));
        if debug() {
            let s = &self.stats;
            let (local, remote) = {
                let inb = self.inbound.lock();
                (inb.reader.local_addr(), inb.reader.peer_addr())
            };
            eprintln!(
                "libdat: connection of EP {:p} ({local:?} -> {remote:?}) ends after {} ms: {outcome:?} ({} consumer polls; engine: {} reports, handled frames {} times; {} offers, {} leases, {} taken back ({} with data waiting); {} acknowledgements alone, held {} us now; {} requests carried out directly)",
                self.ep.handle(),
                (sys::monotonic_micros() - self.started) / 1000,
                self.polls.load(Ordering::Relaxed),
                s.engine_events.load(Ordering::Relaxed),
                s.engine_reads.load(Ordering::Relaxed),
                s.offers.load(Ordering::Relaxed),
                s.leases.load(Ordering::Relaxed),
                s.taken_back.load(Ordering::Relaxed),
                s.taken_back_waiting.load(Ordering::Relaxed),
                s.lone_acks.load(Ordering::Relaxed),
                self.ack_hold_us.load(Ordering::Relaxed),
                s.direct.load(Ordering::Relaxed),
            );
        }
        self.inbound.lock().abandon(&self.ep);
        {
            // What was not written goes unwritten: the requests are flushed below, and the
            // consumer may reuse their memory then. A frame the socket took in part is cut
            // short, so nothing may follow it: the peer reads the end of the stream.
            let mut w = self.writer.lock();
            self.held.clear(&w);
            if w.has_rest() {
                w.drop_rest();
                self.answers.cut();
            }
        }
        if let Err(ConnError::Io(e)) = &outcome {
            if peer_unreachable(e) {
                // The peer stopped acknowledging (its host is gone, or the network between):
                // the request in flight fails as an RC QP's whose retries ran out, the rest
                // flush.
                let oldest = super::ep_wire::pop_request(&self.ep);
                if let Some((request, _)) = oldest {
                    self.ep.complete_request(
                        &request,
                        dat_dto_completion_status::DAT_DTO_ERR_TRANSPORT,
                        0,
                    );
                }
            }
        }
        let end = match outcome {
            Ok(Stop::Goodbye) => End::Orderly,
            _ => End::Broken,
        };
        self.ep.ended(
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

    /// Reads and drops what the peer still sends while the connection lingers; closes at
    /// its end of stream.
    fn linger_reads(&self) {
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
    fn close_now(&self) {
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

    /// The engine's timer for this connection.
    fn on_timer(&self) {
        // Whatever a kick asked for, this look does (read and cleared: what the kicker did
        // before its kick is seen here).
        self.kicked.swap(false, Ordering::AcqRel);
        let now = sys::monotonic_micros();
        if self.ending.load(Ordering::Acquire)
            && !matches!(self.phase(), Phase::Lingering { .. } | Phase::Closed)
        {
            return self.end_now();
        }
        match self.phase() {
            Phase::Handshake { deadline } if now >= deadline => {
                self.stopped.lock().get_or_insert(Err(ConnError::Closed));
                self.ending.store(true, Ordering::Release);
                return self.end_now();
            }
            Phase::Lingering { deadline } if now >= deadline => return self.close_now(),
            Phase::Closed => return,
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
                return self.end_now();
            }
        }
        let due = self.answers.ack_due();
        if due != 0 && now >= due {
            // Nothing came for them: they go alone, and the next ones wait less (unless the
            // consumer's request comes soon after: see `post`).
            count(&self.stats.lone_acks);
            // After a few in a row that nothing came for, the engine holds them no more.
            let streak = self.lone_streak.fetch_add(1, Ordering::Relaxed) + 1;
            let next = if streak >= LONE_ACKS_BEFORE_NO_HOLD {
                0
            } else {
                ACK_HOLD_MIN_US
            };
            let hold = self.ack_hold_us.swap(next, Ordering::Relaxed);
            self.lone_acks_held_at
                .store(due.saturating_sub(hold).max(1), Ordering::Relaxed);
            self.answers.acks_gone();
            self.flush_answers();
        }
        let mut rearm = false;
        if self.offered.load(Ordering::Acquire) != 0
            && (now >= self.offer_deadline.load(Ordering::Acquire)
                || self.offer.load(Ordering::Acquire) == 0)
        {
            // Taken, or withdrawn (by the thread as it went to sleep, or now): settled, and
            // the engine may offer it again.
            self.settle_offer();
            self.polls_seen
                .store(self.polls.load(Ordering::Relaxed), Ordering::Relaxed);
            rearm = true;
        }
        let retry = self.retry_at.load(Ordering::Acquire);
        if retry != 0 && now >= retry {
            self.retry_at.store(0, Ordering::Release);
            rearm = true;
        }
        // A kick (the first frames read ahead, or a consumer's late answers) looks at all.
        if !self.lent.load(Ordering::Acquire) {
            self.engine_reads();
        }
        if self.ending.load(Ordering::Acquire) {
            return self.end_now();
        }
        if rearm && !self.lent.load(Ordering::Acquire) {
            self.rearm_unless_waiting();
        }
        self.set_timer();
    }
}

impl Source for TcpLink {
    /// Acknowledgements held for a ride (and any answer queued) go now: the peer's requests
    /// landed, and a device would have acknowledged them as they did; unsent, the peer's
    /// requests would flush as our socket closes (a receiver that exits as soon as its last
    /// message came).
    fn on_exit(&self) {
        // Tried a few times, not waited for: the engine's thread holds it for a moment as it
        // handles a report (an exit then left the acknowledgements unwritten, now and then),
        // and a thread that called `exit` from a signal handler may have been holding it.
        let open = (0..EXIT_FLUSH_TRIES)
            .find_map(|_| {
                let open = self.phase.try_lock().map(|p| *p == Phase::Open);
                if open.is_none() {
                    sys::yield_now();
                }
                open
            })
            .unwrap_or(false);
        if !open || self.ending.load(Ordering::Acquire) || !self.answers.pending() {
            return;
        }
        self.answers.acks_gone();
        // A thread that holds the writer writes them as it lets go; it may be one the exit
        // stops first, so the writer is tried a few times.
        for _ in 0..EXIT_FLUSH_TRIES {
            self.flush_answers();
            if !self.answers.pending() || self.out_blocked.load(Ordering::Acquire) {
                return;
            }
            sys::yield_now();
        }
    }

    fn on_event(self: Arc<Self>, events: u32) {
        if self.token.get().is_none() {
            // A socket the peer already reset reports its hang-up as it is registered, before
            // `start` knows the token: `begin` arms it next, and the hang-up is reported again.
            return;
        }
        count(&self.stats.engine_events);
        if events == 0 {
            return self.on_timer();
        }
        match self.phase() {
            Phase::Closed => return,
            Phase::Lingering { .. } => {
                self.flush_answers();
                self.linger_reads();
                return self.rearm();
            }
            _ => {}
        }
        if events & libc::EPOLLOUT as u32 != 0 {
            self.flush_answers();
        }
        let incoming = (libc::EPOLLIN | libc::EPOLLRDHUP | libc::EPOLLHUP | libc::EPOLLERR) as u32;
        if events & incoming != 0 && !self.lent.load(Ordering::Acquire) {
            self.incoming();
        }
        if self.ending.load(Ordering::Acquire) {
            return self.end_now();
        }
        self.rearm_unless_waiting();
    }
}

impl Lent for TcpLink {
    fn take_back(&self) -> bool {
        let mut waited = false;
        if self.lent.swap(false, Ordering::AcqRel) {
            count(&self.stats.taken_back);
            if let Some(slot) = self.exported.get() {
                // Cleared before the last look: a message the peer puts in a receive from now
                // on comes with a doorbell.
                slot.set_polled(false);
                waited |= self.take_direct();
            }
            waited |= sys::bytes_waiting(self.fd) > 0;
            // Frames the thread's last look left in the buffer (its share was spent): the
            // socket will not report them.
            let buffered = self.inbound.try_lock().is_none_or(|inb| inb.more);
            waited |= buffered;
            if waited {
                count(&self.stats.taken_back_waiting);
            }
            self.polls_seen
                .store(self.polls.load(Ordering::Relaxed), Ordering::Relaxed);
            self.rearm();
            if buffered {
                self.kick();
            }
        }
        if engine::on_engine() && self.only_acks_wait() {
            // The lease ran out while the thread computes or polls memory: acknowledgements
            // it held for a ride wait on for its next request, as the engine's own do. Sent
            // alone now, they would complete the peer's request early, and a peer that then
            // polls memory, holding its own lease, leaves our next request waiting in its
            // socket until that lease runs out too (dtest -D, whose client computes for
            // 500 us every fifth message, lost a lease's length to each such round).
            self.hold_with_engine();
            return waited;
        }
        // The thread sleeps or exits, or answers other than acknowledgements wait: what it
        // held goes now, since nobody polls to send it.
        self.flush_answers();
        waited
    }
}

impl Progress for TcpLink {
    /// The consumer's thread handles the frames the socket has (one look), then writes the
    /// answers they produced; it never blocks.
    fn progress(&self) {
        // Only "a poll happened" counts: a lost count between two polling threads is
        // harmless, and a plain store is cheaper than an atomic add every poll.
        let polls = self.polls.load(Ordering::Relaxed).wrapping_add(1);
        self.polls.store(polls, Ordering::Relaxed);
        if self.resting.load(Ordering::Relaxed) {
            self.resting.store(false, Ordering::Release);
        }
        let offer = self.offer.load(Ordering::Relaxed);
        if offer != 0 && polls >= offer {
            self.accept_offer(offer);
        }
        // Most polls find nothing: they take no lock beyond the inbound's.
        let mut handled = false;
        let inbound = self.inbound.try_lock().or_else(|| {
            // Another thread handles the frames (the engine, woken as they came): it may be
            // between landing a message where this thread sees it and posting its
            // completion. A program that saw the message in memory and polls once expects the
            // completion there, as a device has it: the poll waits for that thread, briefly,
            // and takes what the peer put in our receives directly meanwhile (when it found
            // some, that is what the program saw: no wait).
            if self.take_direct() {
                return None;
            }
            self.inbound.try_lock_for(LANDING_WAIT)
        });
        if let Some(mut inb) = inbound {
            if !self.ending.load(Ordering::Relaxed) {
                // The end is recorded before the inbound half goes: nobody handles a frame
                // behind it.
                match inbound::advance(&self.ep, self, &mut inb, true) {
                    Ok((h, stop)) => {
                        handled = h;
                        if let Some(stop) = stop {
                            self.stop(Ok(stop));
                        }
                    }
                    Err(e) => self.stop(Err(e)),
                }
                // Its share spent: a thread that holds the connection comes back at its next
                // poll (or hands it back, see `take_back`); else the engine looks.
                if inb.more && !self.lent.load(Ordering::Relaxed) {
                    drop(inb);
                    self.kick();
                }
            }
        }
        if handled {
            self.active.store(true, Ordering::Relaxed);
        }
        // Answers this round made, or acknowledgements held for a ride whose time may be up;
        // not those the engine holds, whose timer sends them: a program that reaps its
        // completions now and then, between a write's arrival and its answer, would send them
        // alone (and wake the peer a second time for that message).
        let held = self.answers.acks_held() && !self.answers.only_engine_holds();
        if handled || held || self.out_blocked.load(Ordering::Relaxed) {
            self.answer_soon(polls);
        }
    }

    /// The consumer's thread is about to sleep: what it held for a ride goes now.
    fn flush(&self) {
        self.withdraw_offer();
        self.answers.acks_gone();
        self.flush_answers();
    }
}

impl Link for TcpLink {
    fn close(&self, how: Close) {
        self.close_direct();
        // The goodbye follows our requests (posted before this call) and the answers already
        // queued, so the peer completes everything it was owed before it sees us leave.
        self.answers.push(Answer::Goodbye);
        match how {
            // The peer answers our requests, sees the goodbye, and closes; it is given until
            // its answers stop coming for a moment (`LINGER`), and no longer than the peer
            // timeout in all, whatever it sends meanwhile.
            Close::Graceful => {
                let now = sys::monotonic_micros();
                self.close_deadline.store(
                    now + self.peer_timeout.as_micros() as u64,
                    Ordering::Release,
                );
                self.closed_at.store(now, Ordering::Release);
                self.kick();
            }
            // At once, whatever the socket does: the EP hears DISCONNECTED as the engine ends
            // the connection, and what was posted is flushed, never sent.
            Close::Abrupt | Close::Released => {
                self.answers.push(Answer::Finish);
                self.stop(Ok(Stop::Goodbye));
            }
        }
        self.flush_answers();
    }

    fn post(
        &self,
        ep: &Ep,
        inner: MutexGuard<'_, EpInner>,
        out: &Outgoing<'_>,
    ) -> DatResult<Posted> {
        if out.segments.len() >= MAX_PARTS {
            return Err(DatError::invalid_arg(2));
        }
        let total = out.length;
        if total > u64::from(wire_limits().max_message) {
            return Err(DatError::invalid_arg(3));
        }
        let op = match (out.extended, out.operation) {
            (Some(Extended::FetchAdd(_)), _) => Op::FetchAdd,
            (Some(Extended::CompareSwap { .. }), _) => Op::CompareSwap,
            (_, dat_dtos::DAT_DTO_RDMA_WRITE) => Op::RdmaWrite,
            (_, dat_dtos::DAT_DTO_RDMA_READ) => Op::RdmaReadRequest,
            _ => Op::Send,
        };
        // An atomic's payload is its operands; its segments are where the answer lands.
        let operands = match out.extended {
            Some(Extended::FetchAdd(add)) => Some((add, 0)),
            Some(Extended::CompareSwap { compare, swap }) => Some((compare, swap)),
            _ => None,
        }
        .map(|(a, b)| {
            let mut bytes = [0u8; ATOMIC_OPERANDS as usize];
            bytes[..8].copy_from_slice(&a.to_le_bytes());
            bytes[8..].copy_from_slice(&b.to_le_bytes());
            bytes
        });
        // The writer is taken before the EP as a rule; the EP's lock the caller holds is kept
        // when the writer is free at once (the usual post), else let go and taken again.
        let mut inner = inner;
        let mut w = match self.writer.try_lock() {
            Some(w) => w,
            None => {
                drop(inner);
                let w = self.writer.lock();
                inner = ep.inner.lock();
                if inner.link.is_none() {
                    return Ok(Posted::Flush); // the connection ended: the caller flushes
                }
                w
            }
        };
        if inner.outstanding.len() >= inner.attr.max_request_dtos.max(1) as usize {
            return Err(DatError::resources(crate::error::Sub::DAT_RESOURCE_TEP));
        }
        // A send, RDMA write or read straight into the peer's memory (see `direct`), when
        // nothing of ours is still on its way there (it would land after this one) and the
        // peer's table settles it; otherwise, or if the peer's table refuses it, the socket
        // carries it.
        let direct = self.direct.get().filter(|_| {
            out.extended.is_none()
                && out.invalidate.is_none()
                && inner.outstanding.is_empty()
                && !self.held.any()
                && !self.direct_off.load(Ordering::Relaxed)
                && !self.ending.load(Ordering::Relaxed)
        });
        if let Some(d) = direct {
            drop(inner);
            let outcome = match (op, out.remote) {
                (Op::RdmaWrite, Some(r)) => {
                    d.write(r.rmr_context, r.virtual_address, out.segments, total)
                }
                (Op::RdmaReadRequest, Some(r)) => {
                    d.read(r.rmr_context, r.virtual_address, out.segments, total)
                }
                (Op::Send, _) => d.send(out.segments, total),
                _ => Outcome::Socket,
            };
            match outcome {
                Outcome::Done { doorbell } => {
                    count(&self.stats.direct);
                    // Completed before the writer goes: a request posted after it completes
                    // after it.
                    let request = Request {
                        seq: 0,
                        cookie: out.cookie,
                        operation: out.operation,
                        length: total as u32,
                        report: out.report,
                        extended: None,
                        bind: None,
                    };
                    ep.complete_request(
                        &request,
                        dat_dto_completion_status::DAT_DTO_SUCCESS,
                        total as u32,
                    );
                    drop(w);
                    if doorbell {
                        self.answers.push(Answer::Doorbell);
                    }
                    // Acknowledgements held for this request to carry, and answers queued
                    // while we held the writer, go now.
                    let engine_held = self.answers.ack_due() != 0;
                    fence(Ordering::SeqCst);
                    if self.answers.pending() || self.write_wanted.load(Ordering::Relaxed) {
                        self.flush_answers();
                    }
                    if engine_held {
                        self.set_timer();
                    }
                    return Ok(Posted::Queued);
                }
                Outcome::Failed => {
                    // The peer's receive took the message and its memory failed the copy: as
                    // the socket path's refusal (the receiver's memory), the connection breaks.
                    let request = Request {
                        seq: 0,
                        cookie: out.cookie,
                        operation: out.operation,
                        length: 0,
                        report: out.report,
                        extended: None,
                        bind: None,
                    };
                    ep.complete_request(
                        &request,
                        dat_dto_completion_status::DAT_DTO_ERR_REMOTE_RESPONDER,
                        0,
                    );
                    drop(w);
                    self.stop(Ok(Stop::Broken));
                    return Ok(Posted::Queued);
                }
                Outcome::Off => self.direct_off.store(true, Ordering::Relaxed),
                Outcome::Socket => {}
            }
            inner = ep.inner.lock();
            if inner.link.is_none() {
                return Ok(Posted::Flush); // the connection ended: the caller flushes
            }
        }
        // Numbered under the writer's lock: requests go out, and are acknowledged, in the
        // order of their numbers.
        let seq = self.next_seq.load(Ordering::Relaxed);
        self.next_seq.store(seq + 1, Ordering::Relaxed);
        inner.outstanding.push_back(Request {
            seq,
            cookie: out.cookie,
            operation: out.operation,
            length: total as u32,
            report: out.report,
            extended: out.extended.map(Extended::kind),
            bind: None,
        });
        // The only request in flight: a ping-pong's, not a stream's (see the yield below).
        let alone_in_flight = inner.outstanding.len() == 1;
        if op.answered_with_data() {
            inner
                .wire
                .tcp
                .read_targets
                .push_back(Segments::from_slice(out.segments));
        }
        drop(inner);
        let mut h = Header::new(op);
        h.id = seq;
        h.payload_len = if operands.is_some() {
            ATOMIC_OPERANDS
        } else {
            total as u32
        };
        // A write with immediate data: the immediate follows it, in the same system call.
        let immediate = match out.extended {
            Some(Extended::WriteImmediate(data)) => {
                h.flags |= flags::IMMEDIATE;
                let mut i = Header::new(Op::Immediate);
                i.id = seq;
                i.rkey = data;
                i.remote_addr = total;
                Some(i)
            }
            _ => None,
        };
        if out.solicited {
            h.flags |= flags::SOLICITED;
        }
        if let Some(context) = out.invalidate {
            h.flags |= flags::INVALIDATE;
            h.rkey = context;
        }
        if let Some(r) = out.remote {
            h.rkey = r.rmr_context;
            h.remote_addr = r.virtual_address;
        }
        // A request answered with data carries none of its segments: they are where the
        // answer lands.
        let payload = if op.answered_with_data() {
            &[][..]
        } else {
            out.segments
        };
        let copied = operands.as_ref().map_or(&[][..], |o| &o[..]);
        let pieces = payload
            .iter()
            .map(|s| (s.virtual_address as *const u8, s.segment_length as usize));
        let frame = |headers: &[&Header]| {
            // SAFETY: each segment was checked against a live LMR with local read privilege,
            // and the consumer keeps the memory until the DTO completes, which it does only
            // after the frame is written (or the connection ended, which drops it unwritten).
            let f =
                unsafe { Frame::new(headers, copied).with_pieces(pieces.clone()) }.for_request(seq);
            match &immediate {
                Some(i) => f.with_tail(i),
                None => f,
            }
        };
        let read = op.answered_with_data();
        // Behind a frame the socket has not taken, behind held requests, fenced behind reads
        // in flight, or a read beyond what the peer takes at once: it waits (see `held`).
        if w.has_rest() || self.held.any() || !self.reads().may_start(out.fence, read) {
            self.held
                .push(&w, HeldRequest::new(frame(&[&h]), out.fence, read));
            drop(w);
            // The reads may have landed meanwhile (against `read_landed`).
            fence(Ordering::SeqCst);
            self.flush_answers();
            return Ok(Posted::Queued);
        }
        if read {
            self.reads_in_flight.fetch_add(1, Ordering::AcqRel);
        }
        // Waiting acknowledgements (and only those: answers keep their order) go out with the
        // request: inside a send's header, else as a frame ahead of it in the same system call.
        let mut ack = None;
        let poll_lone_at = self.poll_lone_at.swap(0, Ordering::Relaxed);
        if poll_lone_at != 0
            && self
                .polls
                .load(Ordering::Relaxed)
                .wrapping_sub(poll_lone_at)
                < ACK_HOLD_POLLS
        {
            // A polling thread's acknowledgements went alone and this request came within
            // their hold: it would have carried them (a ping-pong's reply), so they wait again.
            self.poll_lone_streak.store(0, Ordering::Relaxed);
        }
        let engine_held = self.answers.ack_due() != 0;
        let lone_at = self.lone_acks_held_at.swap(0, Ordering::Relaxed);
        if lone_at != 0 && !engine_held {
            // The engine's acknowledgements went alone, and this request came after them: a
            // program that takes a while to answer (it checks what landed, or computes). The
            // next ones wait twice its answer's time, and ride.
            let answered_after = sys::monotonic_micros().saturating_sub(lone_at);
            if answered_after < ACK_HOLD_MAX_US / 2 {
                self.lone_streak.store(0, Ordering::Relaxed);
                self.ack_hold_us
                    .store((answered_after * 2).max(ACK_HOLD_MIN_US), Ordering::Relaxed);
            }
        }
        if let Some(last) = self.answers.take_acks() {
            if engine_held {
                // They rode: the engine may hold the next ones longer.
                self.lone_streak.store(0, Ordering::Relaxed);
                let hold = self.ack_hold_us.load(Ordering::Relaxed);
                self.ack_hold_us
                    .store((hold * 2).min(ACK_HOLD_MAX_US), Ordering::Relaxed);
                // Nothing left for the engine's timer to send (its own wake-up would take a
                // CPU from the threads that run).
                self.set_timer();
            }
            if op == Op::Send {
                h.flags |= flags::ACK;
                h.remote_addr = last;
            } else {
                let mut a = Header::new(Op::Ack);
                a.id = last;
                ack = Some(a);
            }
        }
        let frame = match &ack {
            Some(a) => frame(&[a, &h]),
            None => frame(&[&h]),
        };
        // A failed write is the connection's end: whoever reads next finds it.
        let wrote = match w.write_now(frame) {
            Ok(wrote) => wrote,
            Err(_) => {
                drop(w);
                self.stop(Err(ConnError::Closed));
                return Ok(Posted::Queued);
            }
        };
        drop(w);
        self.wrote_frames();
        if wrote != Wrote::All {
            // The rest goes as the socket drains: the engine watches for room (or the thread
            // that holds the connection on lease writes it as it polls).
            if !self.out_blocked.swap(true, Ordering::AcqRel) && !self.lent.load(Ordering::Acquire)
            {
                self.rearm();
            }
            // Answers queued while we held the writer wait behind the rest, as it goes.
            fence(Ordering::SeqCst);
            if self.write_wanted.load(Ordering::Relaxed) {
                self.flush_answers();
            }
            return Ok(Posted::Queued);
        }
        // Answers queued while we held the writer are ours to write (see `flush_answers`).
        fence(Ordering::SeqCst);
        if self.write_wanted.load(Ordering::Relaxed) {
            self.flush_answers();
        }
        if alone_in_flight && self.peer_on_this_host && !self.lent.load(Ordering::Relaxed) {
            // The peer's engine, woken by this write, was queued on this CPU (the kernel puts
            // a thread woken by a socket next to its waker, expecting the waker to sleep): a
            // thread that goes on running, polling memory or computing, keeps it off the CPU
            // until the scheduler's tick, milliseconds. Yielding lets it land the data now.
            // A thread that polls this connection itself (it holds it on lease) woke nobody,
            // and one that streams requests keeps the peer busy anyway (a system call per
            // message would cost it a fifth of its small-message rate).
            sys::yield_now();
        }
        Ok(Posted::Queued)
    }

    fn receive_posted(&self, ep: &Ep) {
        inbound::land_early(ep, self);
        self.flush_answers();
    }
}

/// Starts an active connect on the engine: ESTABLISHED or the failure's event follows.
pub fn connect(
    ep: Arc<Ep>,
    remote: SocketAddrV4,
    conn_qual: u64,
    private_data: Vec<u8>,
    timeout: Option<Duration>,
) -> DatResult {
    // The EP's zone, for the direct offer our confirmation may carry.
    let zone = ep.pz().map(|pz| Arc::as_ptr(&pz) as u64);
    let reads = read_limits(&ep);
    let on_done = move |result: Result<cm::Established, ConnectFailure>| {
        let failure = |event: dat_event_number, pd: &[u8]| ep.ended(End::Broken, event, pd);
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
        if !ep.established(Some((link.clone(), est.remote)), &est.private_data) {
            // Disconnected or freed while connecting: the peer sees us leave.
            link.close(Close::Released);
        }
        link.begin();
    };
    cm::connect(
        remote,
        conn_qual,
        private_data,
        timeout,
        wire_limits(),
        zone,
        reads,
        on_done,
    )
    .map_err(|_| DatError::resources(crate::error::Sub::DAT_RESOURCE_MEMORY))
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

/// How many RDMA reads `ep` answers and starts at once, as its attributes say.
fn read_limits(ep: &Ep) -> ReadLimits {
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
