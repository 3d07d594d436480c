//! A connected EP over TCP. Frames move in three places:
//!
//! - the posting thread writes its request (send, RDMA write, RDMA read request) itself, under
//!   the writer lock, recording it as outstanding in wire order;
//! - incoming frames are handled by whichever thread gets there first: the consumer's thread
//!   as it polls or waits on an EVD the EP feeds (`Progress`: only whole frames already in the
//!   socket, so it never blocks), or else the connection's reader thread. Handling delivers
//!   messages into posted receives, carries out the peer's RDMA writes and reads after
//!   checking them against our registered regions, and completes our requests as their
//!   answers come back;
//! - answers (acknowledgements, read data, refusals) are queued and written in order by the
//!   consumer's thread when it handled the frame and the socket is free, else by a responder
//!   thread, so the reader thread never blocks on writing and two busy peers cannot deadlock
//!   on full sockets.
//!
//! Answers come back in request order, so completions are too. Acknowledgements are
//! cumulative: a run of them goes out as one frame. One a consumer's poll makes while nothing
//! else is queued is owed beside the queue (`ack_owed`, no lock), and goes before it.

use std::collections::VecDeque;
use std::net::{SocketAddrV4, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex, MutexGuard};

use super::cm::{self, ConnectFailure, IncomingRequest, HANDSHAKE_TIMEOUT};
use super::conn::{ConnError, Reader, Waiting, Writer, WriterGuard, MAX_PARTS};
use super::doorbell::{Doorbell, Woken};
use super::sys;
use super::wire::{flags, Header, Op};
use crate::abi::*;
use crate::error::{DatError, DatResult};
use crate::objects::ep::{Close, EarlyMessage, End, Ep, EpInner, Link, Outgoing, Posted, Request};
use crate::objects::evd::{Evd, Progress};
use crate::objects::lmr::{self, Lmr};
use crate::objects::srq::{PostedRecv, Segments};
use crate::objects::sp::wire_limits;

/// How often the reader thread, standing back while a consumer polls, looks whether it still
/// does (and sends acknowledgements held too long): first after 200 µs, then less often while
/// the consumer keeps polling, since every look takes a CPU from someone on a small machine
/// (a look a millisecond cost a polling ping-pong about 2.5%). A consumer's thread that goes
/// to sleep, or polls other EVDs, hands the connection back or keeps it moving itself (see
/// `evd::POLLED`); the longest tick only matters to one that stops calling the library.
const STAND_BACK_TICK: Duration = Duration::from_micros(200);

/// The longest tick: 10 ms, or `LIBDAT_STANDBY_MS`.
fn stand_back_tick_max() -> Duration {
    static MAX: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();
    *MAX.get_or_init(|| {
        let ms = std::env::var("LIBDAT_STANDBY_MS").ok().and_then(|v| v.parse().ok()).unwrap_or(10);
        Duration::from_millis(ms).max(STAND_BACK_TICK)
    })
}

/// How long the reader thread's acknowledgements wait for company (more of them, or a request
/// of the consumer's to ride on).
const ACK_HOLD_US: u64 = 20;

/// How many of its polls a polling consumer's thread holds acknowledgements for its next
/// request to carry (a ping-pong's reply): counted, not timed, so the poll reads no clock.
/// About the reader thread's `ACK_HOLD_US` at the usual half microsecond a poll.
const ACK_HOLD_POLLS: u64 = 32;


/// How long an ending connection waits for the peer's last frames before it lets go.
const LINGER: Duration = Duration::from_secs(1);

/// An answer to the peer, written in order.
enum Answer {
    /// Every request up to this sequence number is done.
    Ack(u64),
    /// The acknowledgement of a message kept for want of a receive: it and every answer
    /// behind it wait until the message lands (a verbs QP holds its sender the same way, by
    /// retrying), so the sender's completion means the message is in a receive.
    Kept(u64),
    /// The data of an RDMA read the peer asked for (checked when asked).
    ReadData {
        seq: u64,
        lmr: Option<Arc<Lmr>>,
        address: u64,
        length: u32,
    },
    /// The request failed here with this completion status; the connection ends.
    Refuse {
        seq: u64,
        status: dat_dto_completion_status,
    },
    /// Tell the peer we are leaving (after the answers queued before it).
    Goodbye,
    /// Write what is queued, then stop sending.
    Finish,
}

pub struct TcpLink {
    writer: Writer,
    /// Another handle on the socket: shutdown without the writer lock.
    control: TcpStream,
    next_seq: AtomicU64,
    answers: Mutex<VecDeque<Answer>>,
    /// The length of `answers`, copied under its lock: the usual poll and post look here.
    queued: AtomicUsize,
    /// An acknowledgement a consumer's poll owes (0: none), ahead of every queued answer: it
    /// is set only while the queue is empty, so nothing queued before it waits behind it.
    /// Acknowledgements are cumulative: a later one replaces it. Written with SeqCst, as is
    /// `standing_by` (see `answer_soon`).
    ack_owed: AtomicU64,
    answer_ready: Condvar,
    /// Set once the Finish answer went out: nothing more is written.
    finished: AtomicBool,
    /// The receiving half: held while a frame is handled.
    reader: Mutex<Reader>,
    /// How the connection ended, when the consumer's thread found out first.
    stopped: Mutex<Option<Result<Stop, ConnError>>>,
    /// Set once `stopped` is: a poll looks here without taking a lock.
    has_stopped: AtomicBool,
    /// The EP this connection serves. Held, not weakly: the EP holds the link only until the
    /// connection ends or its handle dies (`Ep::ended`, `Ep::on_release`), and the link's
    /// threads, which end then too, hold the EP anyway.
    ep: Arc<Ep>,
    /// Set while a consumer's thread polls here; cleared when it stops (it says so as it
    /// goes to sleep), or when a whole tick of the reader thread saw no poll.
    polling: AtomicBool,
    /// Counts the consumer's polls: no clock in the polling path.
    polls: AtomicU64,
    /// Where the reader thread stands back while a consumer polls, until it stops.
    standby: Mutex<()>,
    standby_wake: Condvar,
    /// Set while the reader thread stands by: it comes back every `STAND_BACK_TICK`, so
    /// acknowledgements may wait for a ride.
    standing_by: AtomicBool,
    /// When the reader thread's held acknowledgements must go (`sys::monotonic_micros`), 0
    /// when it holds none.
    ack_due: AtomicU64,
    /// The poll (`polls`, plus one) at which a polling consumer's thread began to hold
    /// acknowledgements, 0 when it holds none.
    held_since_poll: AtomicU64,
    /// Calls the reader thread out of its wait on the socket to stand by.
    doorbell: Doorbell,
    /// Set when the doorbell rang and the reader thread has not answered yet.
    rung: AtomicBool,
}

impl TcpLink {
    fn start(stream: TcpStream, reader: Reader, ep: &Arc<Ep>) -> std::io::Result<Arc<TcpLink>> {
        let write_half = stream.try_clone()?;
        let link = Arc::new(TcpLink {
            writer: Writer::new(write_half),
            control: stream,
            next_seq: AtomicU64::new(1),
            answers: Mutex::new(VecDeque::new()),
            queued: AtomicUsize::new(0),
            ack_owed: AtomicU64::new(0),
            answer_ready: Condvar::new(),
            finished: AtomicBool::new(false),
            reader: Mutex::new(reader),
            stopped: Mutex::new(None),
            has_stopped: AtomicBool::new(false),
            ep: ep.clone(),
            polling: AtomicBool::new(false),
            polls: AtomicU64::new(0),
            standby: Mutex::new(()),
            standby_wake: Condvar::new(),
            standing_by: AtomicBool::new(false),
            ack_due: AtomicU64::new(0),
            held_since_poll: AtomicU64::new(0),
            doorbell: Doorbell::new()?,
            rung: AtomicBool::new(false),
        });
        let responder = link.clone();
        std::thread::Builder::new()
            .name("dat-respond".into())
            .stack_size(128 * 1024)
            .spawn(move || responder.respond())?;
        Ok(link)
    }

    /// Queues an answer; `wake` the responder unless the caller writes the queue itself.
    fn answer(&self, a: Answer, wake: bool) {
        self.queue(&mut self.answers.lock(), a);
        if wake {
            self.answer_ready.notify_one();
        }
    }

    /// Queues an answer. An acknowledgement behind another one replaces it: they are
    /// cumulative, and would merge into one frame anyway (`write_answers`).
    fn queue(&self, q: &mut VecDeque<Answer>, a: Answer) {
        match (&a, q.back_mut()) {
            (Answer::Ack(seq), Some(Answer::Ack(last))) => *last = (*last).max(*seq),
            _ => q.push_back(a),
        }
        self.queued.store(q.len(), Ordering::Release);
    }

    /// The acknowledgement a consumer's poll owes, if one is: taken.
    fn take_owed(&self) -> Option<u64> {
        if self.ack_owed.load(Ordering::Relaxed) == 0 {
            return None;
        }
        Some(self.ack_owed.swap(0, Ordering::AcqRel)).filter(|seq| *seq != 0)
    }

    /// The responder thread: whatever the consumer's threads left queued.
    fn respond(self: Arc<Self>) {
        while !self.finished.load(Ordering::Acquire) {
            {
                let mut q = self.answers.lock();
                while !writable(&q)
                    && self.ack_owed.load(Ordering::Relaxed) == 0
                    && !self.finished.load(Ordering::Acquire)
                {
                    self.answer_ready.wait(&mut q);
                }
            }
            let mut w = self.writer.lock();
            if self.write_answers(&mut w).is_err() {
                return; // the reader sees the connection end and cleans up
            }
        }
    }

    /// Writes queued answers in order, merging a run of acknowledgements. The writer lock is
    /// held throughout, so whoever takes an answer off the queue also writes it in order.
    fn write_answers(&self, w: &mut WriterGuard<'_>) -> std::io::Result<()> {
        loop {
            if self.finished.load(Ordering::Acquire) {
                return Ok(());
            }
            let answer = {
                let mut q = self.answers.lock();
                // An owed acknowledgement goes first: everything queued came after it.
                let owed = self.take_owed();
                let Some(mut a) = owed.map(Answer::Ack).or_else(|| q.pop_front()) else {
                    self.acks_gone();
                    return Ok(());
                };
                if let Answer::Kept(_) = a {
                    let leaving = q.iter().any(|a| matches!(a, Answer::Goodbye | Answer::Finish));
                    if !leaving {
                        q.push_front(a); // it and what is behind it wait until it lands
                    }
                    self.queued.store(q.len(), Ordering::Release);
                    if leaving {
                        continue; // it will never land
                    }
                    return Ok(());
                }
                if let Answer::Ack(mut last) = a {
                    while let Some(Answer::Ack(next)) = q.front() {
                        last = last.max(*next);
                        q.pop_front();
                    }
                    a = Answer::Ack(last);
                }
                self.queued.store(q.len(), Ordering::Release);
                a
            };
            match answer {
                Answer::Ack(seq) => {
                    let mut h = Header::new(Op::Ack);
                    h.id = seq;
                    w.send(&h, &[])?;
                }
                Answer::ReadData {
                    seq,
                    lmr,
                    address,
                    length,
                } => {
                    // The region may have been freed since the request was checked.
                    let live = |lmr: &Arc<Lmr>| {
                        Lmr::lookup_rmr_context(lmr.context).is_some_and(|l| Arc::ptr_eq(&l, lmr))
                    };
                    if length == 0 || lmr.as_ref().is_some_and(live) {
                        let mut h = Header::new(Op::RdmaReadResponse);
                        h.id = seq;
                        h.payload_len = length;
                        let data: &[u8] = if length == 0 {
                            &[]
                        } else {
                            // SAFETY: [address, address + length) lies inside a live region the
                            // consumer registered with remote read privilege (checked on arrival).
                            unsafe {
                                std::slice::from_raw_parts(address as *const u8, length as usize)
                            }
                        };
                        w.send(&h, &[data])?;
                    } else {
                        refusal(w, seq, dat_dto_completion_status::DAT_DTO_ERR_REMOTE_ACCESS)?;
                    }
                }
                Answer::Refuse { seq, status } => refusal(w, seq, status)?,
                Answer::Kept(_) => unreachable!("held above"),
                Answer::Goodbye => w.send(&Header::new(Op::Disconnect), &[])?,
                Answer::Finish => {
                    w.shutdown_write();
                    self.finished.store(true, Ordering::Release);
                    self.answer_ready.notify_one();
                    return Ok(());
                }
            }
        }
    }

    /// A kept message landed in a receive with this local status: the sender hears of it
    /// (an acknowledgement, or a refusal that ends the connection, as a direct delivery's).
    fn landed(&self, seq: u64, status: dat_dto_completion_status) {
        let ok = status == dat_dto_completion_status::DAT_DTO_SUCCESS;
        {
            let mut q = self.answers.lock();
            if let Some(a) = q.iter_mut().find(|a| matches!(a, Answer::Kept(s) if *s == seq)) {
                *a = if ok {
                    Answer::Ack(seq)
                } else {
                    Answer::Refuse {
                        seq,
                        status: dat_dto_completion_status::DAT_DTO_ERR_REMOTE_RESPONDER,
                    }
                };
            }
        }
        if !ok {
            self.stop(Ok(Stop::Broken));
        }
    }

    /// Records how the connection ended (first finder wins) and wakes the reader thread,
    /// which ends it.
    fn stop(&self, outcome: Result<Stop, ConnError>) {
        self.stopped.lock().get_or_insert(outcome);
        self.has_stopped.store(true, Ordering::Release);
        let _ = self.control.shutdown(std::net::Shutdown::Read);
    }
}

/// Whether the answers queue holds something to write now: not when it is empty, nor when a
/// kept message's acknowledgement (which holds back everything behind it) waits at its front,
/// unless we are leaving.
fn writable(q: &VecDeque<Answer>) -> bool {
    match q.front() {
        None => false,
        Some(Answer::Kept(_)) => q.iter().any(|a| matches!(a, Answer::Goodbye | Answer::Finish)),
        Some(_) => true,
    }
}

/// Whether every queued answer is an acknowledgement: those may wait for a request to ride on
/// (or merge into one frame), since nothing else keeps order behind them.
fn only_acks(q: &VecDeque<Answer>) -> bool {
    q.iter().all(|a| matches!(a, Answer::Ack(_)))
}

fn refusal(
    w: &mut WriterGuard<'_>,
    seq: u64,
    status: dat_dto_completion_status,
) -> std::io::Result<()> {
    let mut h = Header::new(Op::RemoteAccessError);
    h.id = seq;
    h.remote_addr = status as u64;
    w.send(&h, &[])
}

impl Progress for TcpLink {
    /// The consumer's thread handles the whole frames already waiting, then writes the
    /// answers they produced; it never blocks, and leaves the rest to the link's threads.
    fn progress(&self) {
        // Most polls find nothing: they take no lock beyond the reader's.
        let mut handled = false;
        if let Some(mut reader) = self.reader.try_lock() {
            let mut partial = false;
            // The socket is asked once a round: frames that arrive meanwhile wait for the next.
            let mut look = true;
            while !self.has_stopped.load(Ordering::Acquire) {
                let waiting = reader.whole_frame_ready(look);
                look = false;
                let h = match waiting {
                    Waiting::Whole(h) => h,
                    // A frame that has only begun to arrive (a large one may never fit in
                    // the socket whole) is for the reader thread, which may block on it.
                    Waiting::Part => {
                        partial = true;
                        break;
                    }
                    Waiting::Nothing => break,
                };
                reader.take_header(&h);
                handled = true;
                match step(&self.ep, self, &mut reader, h, true) {
                    Ok(None) => {}
                    Ok(Some(stop)) => {
                        self.stop(Ok(stop));
                        break;
                    }
                    Err(e) => {
                        self.stop(Err(e));
                        break;
                    }
                }
            }
            if partial {
                self.release_standby();
            } else {
                // Only "a poll happened" counts: a lost count between two polling threads
                // is harmless, and a plain store is cheaper than an atomic add every poll.
                self.polls.store(self.polls.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
                if !self.polling.load(Ordering::Relaxed) {
                    self.polling.store(true, Ordering::Relaxed);
                }
            }
        }
        // Answers this round made, or acknowledgements held for a ride whose time may be up.
        if handled || self.acks_held() {
            self.answer_soon();
        }
    }

    /// Writes every queued answer now (or has the responder write them). The consumer's
    /// thread calls it as it stops polling: the reader thread takes over at once.
    fn flush(&self) {
        self.release_standby();
        self.write_pending();
    }

}

impl TcpLink {
    /// The consumer's thread stops handling frames here: the reader thread takes over now.
    fn release_standby(&self) {
        if !self.polling.load(Ordering::Relaxed) {
            return;
        }
        let _g = self.standby.lock();
        self.polling.store(false, Ordering::Relaxed);
        self.standby_wake.notify_one();
    }

    /// Writes the queued answers, unless they are only acknowledgements and the reader thread
    /// stands by: then they wait up to `ACK_HOLD_POLLS` polls for the consumer's next request
    /// to carry them (a reply to what they acknowledge, usually), and this thread's next poll
    /// or the reader thread's next look sends them if none came. A reader thread waiting on
    /// the socket is called to stand by, for the next ones.
    fn answer_soon(&self) {
        let owed = self.ack_owed.load(Ordering::Relaxed) != 0;
        let (held, standing_by) = if self.queued.load(Ordering::Acquire) == 0 {
            if !owed {
                return; // the usual poll: nothing to answer
            }
            // The owed acknowledgement was written SeqCst, and `leave_standby` writes
            // `standing_by` SeqCst before it looks for one: either it sees ours, or we see
            // that it no longer stands by.
            (true, self.standing_by.load(Ordering::SeqCst))
        } else {
            let q = self.answers.lock();
            // Read under the lock that `leave_standby` takes after it stops standing by:
            // either it sees our answers, or we see that it no longer stands by.
            (only_acks(&q), self.standing_by.load(Ordering::Relaxed))
        };
        if held {
            if standing_by {
                let now = self.polls.load(Ordering::Relaxed).wrapping_add(1);
                match self.held_since_poll.load(Ordering::Relaxed) {
                    0 => {
                        self.held_since_poll.store(now, Ordering::Relaxed);
                        return;
                    }
                    since if now.wrapping_sub(since) < ACK_HOLD_POLLS => return,
                    _ => {}
                }
            } else if !self.rung.swap(true, Ordering::Relaxed) {
                self.doorbell.ring();
            }
        }
        self.write_pending();
    }

    /// The reader thread stops standing by: acknowledgements held so far go out now (it looks
    /// under the answers' lock, see `answer_soon`).
    fn leave_standby(&self) {
        self.standing_by.store(false, Ordering::SeqCst);
        self.send_held_acks();
    }

    /// A consumer's poll acknowledges a request: owed ahead of the queue when the queue is
    /// empty (no lock), else queued behind what waits there. Only the thread handling frames
    /// (it holds the reader) acknowledges, so nothing that must precede it is queued meanwhile.
    fn owe_ack(&self, seq: u64) {
        if self.queued.load(Ordering::Acquire) == 0 {
            self.ack_owed.store(seq, Ordering::SeqCst);
        } else {
            self.answer(Answer::Ack(seq), false);
        }
    }

    /// Whether acknowledgements are held, by either thread.
    fn acks_held(&self) -> bool {
        self.ack_due.load(Ordering::Relaxed) != 0
            || self.held_since_poll.load(Ordering::Relaxed) != 0
            || self.ack_owed.load(Ordering::Relaxed) != 0
    }

    /// Held acknowledgements were taken (to be written, or to ride on a request).
    fn acks_gone(&self) {
        self.ack_due.store(0, Ordering::Relaxed);
        self.held_since_poll.store(0, Ordering::Relaxed);
    }

    /// The reader thread's acknowledgement: it waits up to `ACK_HOLD_US` for company (more
    /// acknowledgements, merged into one frame, or a request of the consumer's to ride on),
    /// then the reader thread has the responder send it.
    fn hold_ack(&self, seq: u64) {
        self.queue(&mut self.answers.lock(), Answer::Ack(seq));
        if self.ack_due.load(Ordering::Relaxed) == 0 {
            self.ack_due.store(sys::monotonic_micros() + ACK_HOLD_US, Ordering::Relaxed);
        }
    }

    /// Takes the acknowledgements waiting to go: the owed one, and the queued answers when
    /// they are all acknowledgements. Returns the last sequence number they acknowledge
    /// (acknowledgements are cumulative).
    fn take_acks(&self) -> Option<u64> {
        let owed = self.take_owed();
        if self.queued.load(Ordering::Acquire) == 0 {
            // The usual case: only the owed one, or none.
            self.held_since_poll.store(0, Ordering::Relaxed);
            return owed;
        }
        let mut q = self.answers.lock();
        if q.is_empty() || !only_acks(&q) {
            self.held_since_poll.store(0, Ordering::Relaxed);
            return owed;
        }
        let last = q.drain(..).fold(0, |m, a| if let Answer::Ack(seq) = a { m.max(seq) } else { m });
        self.queued.store(q.len(), Ordering::Release);
        self.acks_gone();
        Some(owed.map_or(last, |o| o.max(last)))
    }

    /// How long the reader thread may wait before held acknowledgements are due.
    fn until_acks_due(&self) -> Option<Duration> {
        match self.ack_due.load(Ordering::Relaxed) {
            0 => None,
            due => Some(Duration::from_micros(due.saturating_sub(sys::monotonic_micros()))),
        }
    }

    /// Has the responder send what is queued (the reader thread never writes itself).
    fn send_held_acks(&self) {
        self.acks_gone();
        // The lock is taken either way: the responder looks at both under it.
        let queued = !self.answers.lock().is_empty();
        if queued || self.ack_owed.load(Ordering::SeqCst) != 0 {
            self.answer_ready.notify_one();
        }
    }

    /// Whether held acknowledgements are past their time: the reader thread's after
    /// `ACK_HOLD_US`; a consumer's at the reader thread's next look (the consumer's own polls
    /// send them sooner).
    fn acks_overdue(&self) -> bool {
        let due = self.ack_due.load(Ordering::Relaxed);
        self.held_since_poll.load(Ordering::Relaxed) != 0 || (due != 0 && sys::monotonic_micros() >= due)
    }

    /// Writes the queued answers if the socket is free, else leaves them to the responder.
    fn write_pending(&self) {
        let pending = || self.queued.load(Ordering::Acquire) != 0 || self.ack_owed.load(Ordering::Acquire) != 0;
        if !pending() {
            return;
        }
        if let Some(mut w) = self.writer.try_lock() {
            let _ = self.write_answers(&mut w);
        }
        // The lock is taken either way: the responder looks under it.
        let queued = !self.answers.lock().is_empty();
        if queued || pending() {
            self.answer_ready.notify_one();
        }
    }
}

impl Link for TcpLink {
    fn close(&self, how: Close) {
        // The goodbye follows our requests (posted before this call) and the answers already
        // queued, so the peer completes everything it was owed before it sees us leave.
        self.answer(Answer::Goodbye, true);
        match how {
            // The peer answers our requests, sees the goodbye, and closes: the reader ends.
            Close::Graceful => {}
            // The reader waits a moment for the peer's goodbye (see `read_loop`).
            Close::Abrupt => self.answer(Answer::Finish, true),
            Close::Released => {
                self.answer(Answer::Finish, true);
                self.stop(Ok(Stop::Goodbye));
            }
        }
    }

    fn post(&self, ep: &Ep, inner: MutexGuard<'_, EpInner>, out: &Outgoing<'_>) -> DatResult<Posted> {
        if out.segments.len() >= MAX_PARTS {
            return Err(DatError::invalid_arg(2));
        }
        let total: u64 = out
            .segments
            .iter()
            .map(|s| u64::from(s.segment_length))
            .sum();
        if total > u64::from(wire_limits().max_message) {
            return Err(DatError::invalid_arg(3));
        }
        let op = match out.operation {
            dat_dtos::DAT_DTO_RDMA_WRITE => Op::RdmaWrite,
            dat_dtos::DAT_DTO_RDMA_READ => Op::RdmaReadRequest,
            _ => Op::Send,
        };
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
        // Numbered under the writer's lock: requests go out, and are acknowledged, in the
        // order of their numbers.
        let seq = self.next_seq.load(Ordering::Relaxed);
        self.next_seq.store(seq + 1, Ordering::Relaxed);
        inner.outstanding.push_back(Request {
            seq,
            cookie: out.cookie,
            operation: out.operation,
            length: total as u32,
            signalled: out.signalled,
        });
        if op == Op::RdmaReadRequest {
            inner.read_targets.push_back(Segments::from_slice(out.segments));
        }
        drop(inner);
        let mut h = Header::new(op);
        h.id = seq;
        h.payload_len = total as u32;
        if out.solicited {
            h.flags |= flags::SOLICITED;
        }
        if let Some(r) = out.remote {
            h.rkey = r.rmr_context;
            h.remote_addr = r.virtual_address;
        }
        // An RDMA read request carries no payload: its segments are where the answer lands.
        let payload = if op == Op::RdmaReadRequest { &[][..] } else { out.segments };
        let parts = payload.iter().map(|s| {
            // SAFETY: the segment was checked against a live LMR with local read privilege;
            // the consumer keeps the memory until the DTO completes.
            unsafe { std::slice::from_raw_parts(s.virtual_address as *const u8, s.segment_length as usize) }
        });
        // Waiting acknowledgements (and only those: answers keep their order) go out with the
        // request: inside a send's header, else as a frame ahead of it in the same system call.
        let mut ack = None;
        if let Some(last) = self.take_acks() {
            if op == Op::Send {
                h.flags |= flags::ACK;
                h.remote_addr = last;
            } else {
                let mut a = Header::new(Op::Ack);
                a.id = last;
                ack = Some(a);
            }
        }
        // A failed write is the connection's end: the reader flushes what was queued.
        let _ = w.send_after(ack.as_ref(), &h, parts);
        drop(w);
        Ok(Posted::Queued)
    }

    fn receive_posted(&self, ep: &Ep) {
        land_early(ep, self);
        self.write_pending();
    }
}
/// Starts an active connect in the background: ESTABLISHED or the failure's event follows.
pub fn connect(
    ep: Arc<Ep>,
    remote: SocketAddrV4,
    conn_qual: u64,
    private_data: Vec<u8>,
    timeout: Option<Duration>,
) -> DatResult {
    let spawned = std::thread::Builder::new()
        .name("dat-conn".into())
        .stack_size(256 * 1024)
        .spawn(move || {
            let failure = |event: dat_event_number, pd: &[u8]| ep.ended(End::Broken, event, pd);
            let est = match cm::connect(remote, conn_qual, &private_data, timeout, wire_limits()) {
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
            let link = match TcpLink::start(est.control, est.reader, &ep) {
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
                return;
            }
            read_loop(&ep, &link);
        });
    spawned
        .map(|_| ())
        .map_err(|_| DatError::resources(crate::error::Sub::DAT_RESOURCE_MEMORY))
}

/// Accepts a request onto `ep` (already COMPLETION_PENDING): ESTABLISHED follows when the
/// peer confirms, ACCEPT_COMPLETION_ERROR when it does not.
pub fn accept(ep: Arc<Ep>, request: IncomingRequest, private_data: &[u8]) -> DatResult {
    let remote = request.remote;
    let accept_error = dat_event_number::DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR;
    let (stream, reader) = match request.accept_start(private_data, wire_limits()) {
        Ok(s) => s,
        Err(_) => {
            ep.ended(End::Broken, accept_error, &[]);
            return Ok(());
        }
    };
    let link = TcpLink::start(stream, reader, &ep)
        .map_err(|_| DatError::resources(crate::error::Sub::DAT_RESOURCE_MEMORY))?;
    if !ep.accepting(link.clone(), remote) {
        link.close(Close::Released);
        return Ok(());
    }
    let spawned = std::thread::Builder::new()
        .name("dat-conn".into())
        .stack_size(256 * 1024)
        .spawn(move || {
            read_loop(&ep, &link);
        });
    spawned
        .map(|_| ())
        .map_err(|_| DatError::resources(crate::error::Sub::DAT_RESOURCE_MEMORY))
}

/// Whether `LIBDAT_DEBUG` asks for connection diagnostics on stderr.
fn debug() -> bool {
    static DEBUG: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *DEBUG.get_or_init(|| std::env::var_os("LIBDAT_DEBUG").is_some())
}

/// Why the reader stopped.
#[derive(Debug)]
enum Stop {
    /// The peer said goodbye.
    Goodbye,
    /// The stream ended or failed, or the peer broke the protocol.
    Lost,
    /// An access failed: the connection is broken (the peer is told when it was theirs).
    Broken,
}

/// The connection's reader thread: handles frames the consumer's threads have not, until the
/// connection ends; then ends the EP's side of it.
fn read_loop(ep: &Arc<Ep>, link: &Arc<TcpLink>) {
    // Standing back is timed in tens of microseconds: ask the kernel to keep to them.
    // SAFETY: PR_SET_TIMERSLACK takes a plain integer and affects only this thread.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1000 as libc::c_ulong) };
    let mut tick = STAND_BACK_TICK;
    let outcome = loop {
        if let Some(o) = link.stopped.lock().take() {
            break o;
        }
        // A passive side waits a bounded time for the peer's Ready; a side that closed
        // abruptly waits a moment for the peer's goodbye.
        let bound = match ep.state() {
            dat_ep_state::DAT_EP_STATE_COMPLETION_PENDING => Some(HANDSHAKE_TIMEOUT),
            _ if ep.inner.lock().closing => Some(LINGER),
            _ => None,
        };
        // A consumer polling this connection handles its frames faster than a hand-off to
        // this thread would; stand back while it does (it would fight us for the CPU).
        if link.polling.load(Ordering::Relaxed) {
            link.standing_by.store(true, Ordering::Relaxed);
            let seen = link.polls.load(Ordering::Relaxed);
            let mut g = link.standby.lock();
            if link.polling.load(Ordering::Relaxed) {
                link.standby_wake.wait_for(&mut g, tick);
            }
            drop(g);
            if link.acks_overdue() {
                link.send_held_acks();
            }
            if link.polls.load(Ordering::Relaxed) == seen {
                link.polling.store(false, Ordering::Relaxed); // a whole tick without a poll
            } else {
                tick = (tick * 2).min(stand_back_tick_max());
            }
            continue;
        }
        if link.standing_by.load(Ordering::Relaxed) {
            // Nobody polls any more: acknowledgements left waiting go out now.
            tick = STAND_BACK_TICK;
            link.leave_standby();
        } else if link.acks_overdue() {
            link.send_held_acks();
        }
        // Frames already in the read-ahead buffer do not wake a poll: handle them first.
        if !link.reader.lock().has_buffered() {
            // Held acknowledgements bound the wait too.
            let acks = link.until_acks_due();
            let wait = match (bound, acks) {
                (Some(b), Some(a)) => Some(b.min(a)),
                (b, a) => b.or(a),
            };
            match link.doorbell.wait(&link.control, wait) {
                Woken::Readable => {}
                Woken::Rung => {
                    // A consumer polls: stand by (above) while it does.
                    link.rung.store(false, Ordering::Relaxed);
                    continue;
                }
                Woken::TimedOut if wait != bound => continue, // the acknowledgements' time
                Woken::TimedOut => break Err(ConnError::Closed),
            }
        }
        let mut reader = link.reader.lock();
        if let Some(o) = link.stopped.lock().take() {
            break o;
        }
        // The consumer's thread may have taken what woke us.
        if !reader.readable_now() {
            continue;
        }
        let h = match reader.next_header() {
            Ok(h) => h,
            Err(e) => break Err(e),
        };
        match step(ep, link, &mut reader, h, false) {
            Ok(None) => {}
            Ok(Some(stop)) => break Ok(stop),
            Err(e) => break Err(e),
        }
    };
    if debug() {
        eprintln!(
            "libdat: connection of EP {:p} ends: {outcome:?}",
            ep.handle()
        );
    }
    let end = match outcome {
        Ok(Stop::Goodbye) => End::Orderly,
        _ => End::Broken,
    };
    ep.ended(
        end,
        dat_event_number::DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR,
        &[],
    );
    // Our answers go out, then our side closes; what the peer still sends is read and dropped
    // (for a while), so closing does not reset the connection under its last frames.
    link.answer(Answer::Finish, true);
    let mut reader = link.reader.lock();
    reader.set_timeout(Some(LINGER));
    while let Ok(h) = reader.next_header() {
        let len = if h.op == Op::RdmaReadRequest {
            0
        } else {
            h.payload_len as usize
        };
        if reader.skip(len).is_err() {
            break;
        }
    }
    // The responder closes our sending side once its last answer is out; the socket itself
    // closes as the last holder lets go of it.
}

/// Handles one frame, whose header `h` has been read (the consumer's thread passes
/// `in_caller` and writes the answers itself). Some(stop) when the connection ends.
fn step(
    ep: &Arc<Ep>,
    link: &TcpLink,
    reader: &mut Reader,
    h: Header,
    in_caller: bool,
) -> Result<Option<Stop>, ConnError> {
    let answer = |a: Answer| link.answer(a, !in_caller);
    match h.op {
        Op::Ready => {
            reader.set_timeout(None);
            // ESTABLISHED is posted under the writer lock and the confirmation written
            // before the lock goes: the consumer's first frames cannot overtake the
            // confirmation, and the peer (established only by the confirmation) cannot
            // disconnect before our event is posted.
            let mut up = false;
            link.writer.send_ordered(&Header::new(Op::Ready), &[], || {
                up = ep.established(None, &[]);
                up
            })?;
            if !up {
                return Ok(Some(Stop::Lost));
            }
        }
        Op::Send => {
            let ack = (h.flags & flags::ACK != 0).then_some(h.remote_addr);
            match deliver(ep, link, reader, &h, ack, in_caller)? {
                Delivery::Done => {}
                Delivery::Refused(status) => {
                    answer(Answer::Refuse { seq: h.id, status });
                    return Ok(Some(Stop::Broken));
                }
                Delivery::Stop(stop) => return Ok(Some(stop)),
            }
        }
        Op::RdmaWrite => match remote_access(ep, &h, lmr::PRIV_REMOTE_WRITE) {
            Some((_, address)) => {
                if h.payload_len > 0 {
                    // SAFETY: checked by remote_access: inside a live region registered
                    // with remote write privilege in the EP's zone.
                    let dst = unsafe {
                        std::slice::from_raw_parts_mut(address as *mut u8, h.payload_len as usize)
                    };
                    reader.read_payload(dst)?;
                }
                acknowledge(link, h.id, in_caller);
            }
            None => {
                reader.skip(h.payload_len as usize)?;
                answer(Answer::Refuse {
                    seq: h.id,
                    status: dat_dto_completion_status::DAT_DTO_ERR_REMOTE_ACCESS,
                });
                return Ok(Some(Stop::Broken));
            }
        },
        Op::RdmaReadRequest => match remote_access(ep, &h, lmr::PRIV_REMOTE_READ) {
            Some((lmr, address)) => answer(Answer::ReadData {
                seq: h.id,
                lmr,
                address,
                length: h.payload_len,
            }),
            None => {
                answer(Answer::Refuse {
                    seq: h.id,
                    status: dat_dto_completion_status::DAT_DTO_ERR_REMOTE_ACCESS,
                });
                return Ok(Some(Stop::Broken));
            }
        },
        Op::Ack => {
            if let Some(stop) = acknowledged(ep, h.id) {
                return Ok(Some(stop));
            }
        }
        Op::RdmaReadResponse => {
            let Some((r, read_into)) = ep.pop_request() else {
                return Ok(Some(Stop::Lost));
            };
            if r.seq != h.id
                || r.operation != dat_dtos::DAT_DTO_RDMA_READ
                || h.payload_len != r.length
            {
                ep.complete_request(&r, dat_dto_completion_status::DAT_DTO_ERR_BAD_RESPONSE, 0);
                return Ok(Some(Stop::Lost));
            }
            match scatter(ep.pz().as_ref(), reader, &read_into, h.payload_len)? {
                None => {
                    ep.complete_request(&r, dat_dto_completion_status::DAT_DTO_SUCCESS, r.length)
                }
                Some(status) => {
                    ep.complete_request(&r, status, 0);
                    return Ok(Some(Stop::Broken));
                }
            }
        }
        Op::RemoteAccessError => {
            if let Some((r, _)) = ep.pop_request() {
                let status = u32::try_from(h.remote_addr)
                    .ok()
                    .and_then(|s| dat_dto_completion_status::try_from(s).ok())
                    .filter(|s| *s != dat_dto_completion_status::DAT_DTO_SUCCESS)
                    .unwrap_or(dat_dto_completion_status::DAT_DTO_ERR_REMOTE_RESPONDER);
                ep.complete_request(&r, status, 0);
            }
            return Ok(Some(Stop::Broken));
        }
        Op::Disconnect => return Ok(Some(Stop::Goodbye)),
        Op::ConnectRequest | Op::Accept | Op::Reject => return Ok(Some(Stop::Lost)),
    }
    Ok(None)
}

/// The peer carried out every request of ours up to `last`: they complete. Some(stop) when
/// the acknowledgement covers a read, which only its data may answer.
fn acknowledged(ep: &Ep, last: u64) -> Option<Stop> {
    settle(ep, &mut ep.inner.lock(), last).err()
}

/// [`acknowledged`], under the EP's lock the caller holds: the covered requests leave the
/// queue, and those signalled complete on the request EVD the EP holds.
fn settle(ep: &Ep, inner: &mut EpInner, last: u64) -> Result<(), Stop> {
    while let Some(r) = inner.outstanding.front().filter(|r| r.seq <= last) {
        if r.operation == dat_dtos::DAT_DTO_RDMA_READ {
            return Err(Stop::Lost);
        }
        let Some(r) = inner.outstanding.pop_front() else { break };
        ep.complete_request_on(inner.request_evd.as_deref(), &r, dat_dto_completion_status::DAT_DTO_SUCCESS, r.length);
    }
    Ok(())
}

/// Acknowledges a request: the consumer's thread writes it (or holds it) as it finishes its
/// progress; the reader thread holds it a moment.
fn acknowledge(link: &TcpLink, seq: u64, in_caller: bool) {
    if in_caller {
        link.owe_ack(seq);
    } else {
        link.hold_ack(seq);
    }
}

/// The most bytes of early messages one EP keeps before the sender sees "receiver not ready".
const MAX_UNEXPECTED_BYTES: usize = 64 << 20;

/// What became of an incoming message.
enum Delivery {
    /// It landed, or waits for a receive.
    Done,
    /// It cannot land: the sender gets this status and the connection breaks, as a verbs QP's
    /// would.
    Refused(dat_dto_completion_status),
    /// The acknowledgement it carried breaks the protocol.
    Stop(Stop),
}

/// An incoming message: the acknowledgement it carries (`ack`: our requests it covers
/// complete first), then its payload into the next posted receive, or kept until one is
/// posted.
///
/// The acknowledgement of the message is queued before the receive completes: a consumer
/// that reacts to the message by disconnecting must not overtake it.
fn deliver(
    ep: &Arc<Ep>,
    link: &TcpLink,
    reader: &mut Reader,
    h: &Header,
    mut ack: Option<u64>,
    in_caller: bool,
) -> Result<Delivery, ConnError> {
    let len = h.payload_len;
    // A payload already read ahead (a small message, the usual one) lands under one lock of
    // the EP, which holds its zone and EVDs: nothing on the way blocks. The receive is chosen
    // and completed under that lock, as `land_early` does, so this needs no `receiving`.
    if reader.buffered() >= len as usize {
        let mut inner = ep.inner.lock();
        if let Some(Err(stop)) = ack.take().map(|last| settle(ep, &mut inner, last)) {
            drop(inner);
            reader.skip(len as usize)?;
            return Ok(Delivery::Stop(stop));
        }
        // The receive it lands in (the SRQ's, or the EP's own) when no earlier message of
        // this EP waits for one (a message must not overtake those); else it waits too.
        let recv = if inner.unexpected.is_empty() { next_receive(&mut inner) } else { None };
        if let Some(recv) = recv {
            let pz = inner.pz.as_ref().map(|p| p.arc());
            let evd = inner.recv_evd.as_deref();
            return land(ep, link, reader, h, &recv, pz, evd, in_caller);
        }
    }
    if let Some(stop) = ack.and_then(|last| acknowledged(ep, last)) {
        reader.skip(len as usize)?;
        return Ok(Delivery::Stop(stop));
    }
    // The payload may have to be waited for: the EP's lock goes meanwhile, and `receiving`
    // keeps the completion in order.
    let in_order = ep.receiving.lock();
    // What the delivery needs of the EP, in one look, taken along.
    let (recv, pz, evd) = {
        let mut inner = ep.inner.lock();
        let recv = if inner.unexpected.is_empty() { next_receive(&mut inner) } else { None };
        let pz = inner.pz.as_ref().map(|p| p.arc().clone());
        (recv, pz, inner.recv_evd.as_ref().map(|e| e.arc().clone()))
    };
    let recv = match recv {
        Some(r) => r,
        None if ep.inner.lock().unexpected_bytes + len as usize > MAX_UNEXPECTED_BYTES => {
            reader.skip(len as usize)?;
            return Ok(Delivery::Refused(dat_dto_completion_status::DAT_DTO_ERR_RECEIVER_NOT_READY));
        }
        None => {
            // The slow path: the consumer has not posted a receive yet. Nothing is delivered
            // while the payload comes in (it may wait on the peer): the queue of early
            // messages, not `receiving`, keeps this one behind those kept before it.
            drop(in_order);
            let mut data = vec![0u8; len as usize];
            reader.read_payload(&mut data)?;
            link.answer(Answer::Kept(h.id), false);
            let srq = {
                let mut inner = ep.inner.lock();
                inner.unexpected_bytes += data.len();
                inner.unexpected.push_back(EarlyMessage { seq: h.id, data });
                inner.srq.as_ref().map(|s| s.arc().clone())
            };
            if let Some(srq) = srq {
                srq.wait_for_receive(ep); // its next receive lands this EP's kept messages
            }
            // A receive may have been posted while the payload came in.
            land_early(ep, link);
            if !in_caller {
                link.answer_ready.notify_one();
            }
            return Ok(Delivery::Done);
        }
    };
    land(ep, link, reader, h, &recv, pz.as_ref(), evd.as_deref(), in_caller)
}

/// The payload of message `h` into receive `recv` (of an EP in zone `pz`, completing on
/// `evd`): the acknowledgement, then the completion.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn land(
    ep: &Ep,
    link: &TcpLink,
    reader: &mut Reader,
    h: &Header,
    recv: &PostedRecv,
    pz: Option<&Arc<crate::objects::pz::Pz>>,
    evd: Option<&Evd>,
    in_caller: bool,
) -> Result<Delivery, ConnError> {
    let len = h.payload_len;
    let complete = |status, len| ep.complete_recv_on(evd, recv.cookie, status, len);
    if u64::from(len) > room(&recv.segments) {
        reader.skip(len as usize)?;
        complete(dat_dto_completion_status::DAT_DTO_ERR_LOCAL_LENGTH, 0);
        return Ok(Delivery::Refused(dat_dto_completion_status::DAT_DTO_ERR_REMOTE_RESPONDER));
    }
    match scatter(pz, reader, &recv.segments, len)? {
        None => {
            acknowledge(link, h.id, in_caller);
            complete(dat_dto_completion_status::DAT_DTO_SUCCESS, len);
            Ok(Delivery::Done)
        }
        Some(status) => {
            complete(status, 0);
            Ok(Delivery::Refused(dat_dto_completion_status::DAT_DTO_ERR_REMOTE_RESPONDER))
        }
    }
}

/// Pairs messages that arrived early with receives posted since, in order, and tells the
/// sender they landed (the caller writes or wakes the answers). Called by the reader as it
/// keeps one and as the consumer posts a receive. Each receive is chosen and completed under
/// the EP's lock, as a direct delivery's is, and `receiving` orders these with a delivery
/// whose payload is still coming in: the completions keep the order of the messages.
fn land_early(ep: &Ep, link: &TcpLink) {
    let _in_order = ep.receiving.lock();
    let mut inner = ep.inner.lock();
    let Some(pz) = inner.pz.as_ref().map(|p| p.arc().clone()) else { return };
    while !inner.unexpected.is_empty() {
        let Some(recv) = next_receive(&mut inner) else { break };
        let message = inner.unexpected.pop_front().expect("not empty");
        inner.unexpected_bytes -= message.data.len();
        let status = place(&recv.segments, &message.data, &pz);
        // The sender hears first: a consumer that answers the message must not overtake it.
        link.landed(message.seq, status);
        let len = if status == dat_dto_completion_status::DAT_DTO_SUCCESS {
            message.data.len() as u32
        } else {
            0
        };
        ep.complete_recv_on(inner.recv_evd.as_deref(), recv.cookie, status, len);
    }
}

/// The next receive a message of this EP lands in: its SRQ's, or its own.
fn next_receive(inner: &mut crate::objects::ep::EpInner) -> Option<crate::objects::srq::PostedRecv> {
    match &inner.srq {
        Some(srq) => srq.take(),
        None => inner.recvs.pop_front(),
    }
}

/// Copies a kept message into a receive's segments, each checked against its live region.
fn place(
    segments: &[DAT_LMR_TRIPLET],
    message: &[u8],
    pz: &Arc<crate::objects::pz::Pz>,
) -> dat_dto_completion_status {
    if message.len() as u64 > room(segments) {
        return dat_dto_completion_status::DAT_DTO_ERR_LOCAL_LENGTH;
    }
    let mut rest = message;
    let walked = walk_segments(segments, message.len(), pz, |dst| {
        dst.copy_from_slice(&rest[..dst.len()]);
        rest = &rest[dst.len()..];
        Ok::<(), std::convert::Infallible>(())
    });
    match walked {
        Ok(Ok(())) => dat_dto_completion_status::DAT_DTO_SUCCESS,
        _ => dat_dto_completion_status::DAT_DTO_ERR_LOCAL_PROTECTION,
    }
}

/// Reads `len` payload bytes into `segments` in order, each checked again against its live
/// region (it may have been freed since it was posted). On a failed check the rest is skipped
/// and the local status returned.
fn scatter(
    pz: Option<&Arc<crate::objects::pz::Pz>>,
    reader: &mut Reader,
    segments: &[DAT_LMR_TRIPLET],
    len: u32,
) -> Result<Option<dat_dto_completion_status>, ConnError> {
    let walked = match pz {
        Some(pz) => walk_segments(segments, len as usize, pz, |dst| reader.read_payload(dst))?,
        None => Err(len as usize),
    };
    match walked {
        Ok(()) => Ok(None),
        Err(left) => {
            reader.skip(left)?;
            Ok(Some(dat_dto_completion_status::DAT_DTO_ERR_LOCAL_PROTECTION))
        }
    }
}

/// How many bytes a receive's segments hold.
fn room(segments: &[DAT_LMR_TRIPLET]) -> u64 {
    segments.iter().map(|s| u64::from(s.segment_length)).sum()
}

/// Hands the memory of the first `len` bytes of `segments` to `fill`, piece by piece, each
/// piece checked against its live region (local write privilege, the EP's zone) first.
/// Ok(Err(left)) when a check fails, with the bytes not handed out.
fn walk_segments<E>(
    segments: &[DAT_LMR_TRIPLET],
    len: usize,
    pz: &Arc<crate::objects::pz::Pz>,
    mut fill: impl FnMut(&mut [u8]) -> Result<(), E>,
) -> Result<Result<(), usize>, E> {
    let mut left = len;
    for s in segments {
        if left == 0 {
            break;
        }
        let n = left.min(s.segment_length as usize);
        if Lmr::check_segment(s.lmr_context, s.virtual_address, n as u64, lmr::PRIV_LOCAL_WRITE, pz).is_err() {
            return Ok(Err(left));
        }
        // SAFETY: just checked: inside a live region with local write privilege in the EP's
        // zone, which the consumer keeps until the receive (or read) completes.
        let dst = unsafe { std::slice::from_raw_parts_mut(s.virtual_address as *mut u8, n) };
        fill(dst)?;
        left -= n;
    }
    Ok(Ok(()))
}

/// The region a peer's RDMA names, if the access is allowed: its key, bounds, privilege and
/// our EP's protection zone. A zero-length access needs no region.
fn remote_access(ep: &Arc<Ep>, h: &Header, privilege: u32) -> Option<(Option<Arc<Lmr>>, u64)> {
    if h.payload_len == 0 {
        return Some((None, h.remote_addr));
    }
    let lmr = Lmr::lookup_rmr_context(h.rkey)?;
    let pz = ep.pz()?;
    lmr.check_remote(h.remote_addr, u64::from(h.payload_len), privilege, &pz)
        .ok()?;
    Some((Some(lmr), h.remote_addr))
}
