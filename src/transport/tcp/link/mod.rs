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
//!
//! The link's work, by job:
//! - `life`: its phases, from the handshake's confirmation to the close, the end and the
//!   linger; `connect` and `accept`, which start it;
//! - `post`: the consumer's requests, written as frames or held behind reads (fences);
//! - `writing`: answers and held requests, written by whoever finds the writer free;
//! - `acks`: when acknowledgements go: held a moment, alone, or riding on a request;
//! - `poll`: the consumer's poll (`Progress`);
//! - `lending`: the connection offered and lent to a thread that polls it, and taken back;
//! - `engine_side`: the engine's reports and timer, and what the socket is armed for;
//! - `direct_path`: the glue to the direct path with a peer on this host (`direct`);
//! - `stats`: what happened to the connection, for `LIBDAT_DEBUG`.

mod acks;
mod direct_path;
mod engine_side;
mod lending;
mod life;
mod poll;
mod post;
mod stats;
mod writing;

use std::net::{SocketAddrV4, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use parking_lot::{Mutex, MutexGuard};

use super::answers::Answers;
use super::cm;
use super::conn::{watch_peer, ConnError, Reader, Writer};
use super::direct::{Direct, ExportedSlot, FillOrder, Offer};
use super::held::Held;
use super::inbound::{self, Inbound, Stop};
use super::wire::ReadLimits;
use crate::error::DatResult;
use crate::objects::ep::{Close, Ep, EpInner, Outgoing, Posted};
use crate::objects::seam::Link;
use crate::runtime::engine::{Engine, Token};
use crate::runtime::sys;

use acks::ACK_HOLD_MIN_US;
pub use life::{accept, connect};
use life::{fill_order, read_limits, Phase};
use stats::Stats;

/// A connected EP's connection over TCP: one struct, whose jobs the modules above share.
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
    /// Set by a thread that streams requests as it looks after a post, taken by the engine's
    /// next offer; and when that look was (monotonic microseconds). See `look_after_post`.
    streaming: AtomicBool,
    looked_after_post: AtomicU64,
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
    /// When the engine looks whether the thread holding the connection on lease still polls
    /// it, for a thread that sleeps waiting for its events (monotonic microseconds, 0: no such
    /// look due), and `polls` when that thread asked (see `reclaim_soon`).
    reclaim_at: AtomicU64,
    reclaim_polls: AtomicU64,
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
    /// A thread found `timer` taken and left the setting to its holder (see `set_timer`).
    timer_wanted: AtomicBool,
    /// How the connection ended, as whoever found out first saw it; the engine carries it out.
    stopped: Mutex<Option<Result<Stop, ConnError>>>,
    /// Set once `stopped` is, or the end began: polls leave the frames alone.
    ending: AtomicBool,
    /// A graceful close waits for our requests in flight to be answered before its goodbye
    /// (see `begin_close`).
    draining: AtomicBool,
    /// When that wait ends whatever is still in flight (monotonic microseconds).
    drain_deadline: AtomicU64,
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
    // The acknowledgement policy's (`acks`), among the link's own fields: in a struct of their
    // own they would move the direct path's fields after them across the cache lines that
    // every poll reads.
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
    /// A consumer's poll acknowledged a request while the acknowledgement of an earlier one
    /// was held: the peer pipelines, and `answer_soon` writes them at once.
    pipelined: AtomicBool,
    /// The peer runs on this machine (a loopback or local address): its engine's wake-ups
    /// compete with our threads for the same CPUs (see `write_request`).
    peer_on_this_host: bool,
    /// Our end of the connection and the peer's.
    ends: Option<(SocketAddrV4, SocketAddrV4)>,
    /// The peer asked for our direct offer (`direct`).
    peer_direct: bool,
    /// The connection's slot in our export table, once offered.
    exported: OnceLock<Arc<ExportedSlot>>,
    /// The order in which the receives of the connections completing on the EP's receive
    /// EVD complete, where their peers fill them directly (`direct::FillOrder`).
    fill_order: Option<Arc<FillOrder>>,
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
            streaming: AtomicBool::new(false),
            looked_after_post: AtomicU64::new(0),
            offer: AtomicU64::new(0),
            offered: AtomicU64::new(0),
            offer_deadline: AtomicU64::new(0),
            retry_at: AtomicU64::new(0),
            lent: AtomicBool::new(false),
            reclaim_at: AtomicU64::new(0),
            reclaim_polls: AtomicU64::new(0),
            resting: AtomicBool::new(true),
            phase: Mutex::new(phase),
            watch: Mutex::new(()),
            kicked: AtomicBool::new(false),
            timer: Mutex::new(()),
            timer_wanted: AtomicBool::new(false),
            stopped: Mutex::new(None),
            ending: AtomicBool::new(false),
            draining: AtomicBool::new(false),
            drain_deadline: AtomicU64::new(u64::MAX),
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
            pipelined: AtomicBool::new(false),
            lone_streak: AtomicU32::new(0),
            peer_on_this_host,
            ends,
            peer_direct,
            exported: OnceLock::new(),
            fill_order: fill_order(ep),
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

    fn token(&self) -> Token {
        *self.token.get().expect("registered at start")
    }

    fn phase(&self) -> Phase {
        *self.phase.lock()
    }
}

/// The objects' calls, each carried out where its job is.
impl Link for TcpLink {
    fn close(&self, how: Close) {
        self.begin_close(how);
    }

    fn post(
        &self,
        ep: &Ep,
        inner: MutexGuard<'_, EpInner>,
        out: &Outgoing<'_>,
    ) -> DatResult<Posted> {
        self.post_request(ep, inner, out)
    }

    fn receive_posted(&self, ep: &Ep) {
        inbound::land_early(ep, self);
        self.flush_answers();
    }
}
