//! What a connection owes its peer: acknowledgements, the data of the peer's RDMA reads,
//! refusals and the goodbye, written in the order they arose, without blocking (a frame the
//! socket has no room for waits in the writer, `conn::WriteHalf`).
//!
//! Acknowledgements are cumulative: a run of them goes out as one frame, and they wait a
//! moment for a ride (a request of the consumer's carries them, a send inside its header).
//! One a consumer's poll makes while nothing else is queued is owed beside the queue
//! (`ack_owed`, no lock), and goes before it.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::conn::{WriterGuard, Wrote};
use super::wire::{Header, Op};
use crate::abi::*;
use crate::objects::lmr::Lmr;

/// An answer to the peer, written in order.
pub enum Answer {
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
    /// The original value of the word the peer's atomic `seq` operated on, sent as the data
    /// of a read.
    AtomicResult { seq: u64, original: u64 },
    /// The request failed here with this completion status; the connection ends.
    Refuse {
        seq: u64,
        status: dat_dto_completion_status,
    },
    /// Tell the peer that messages of ours landed in its receives directly (`direct`).
    Doorbell,
    /// Tell the peer we are leaving (after the answers queued before it).
    Goodbye,
    /// Write what is queued, then stop sending.
    Finish,
}

/// What writing the queue achieved.
#[derive(Debug, PartialEq, Eq)]
pub enum Flushed {
    /// Nothing left to write now (a kept message's acknowledgement may still hold the rest).
    Done,
    /// The socket is full: the rest waits for room.
    Blocked,
    /// The Finish answer went out: nothing more is ever written.
    Finished,
}

/// The answers in order, with counts kept as they change, so that no question asked per frame
/// walks the queue (a peer that makes it long must not make each of its frames cost more).
/// The answers a queue keeps room for as it empties.
const KEPT_CAPACITY: usize = 64;

#[derive(Default)]
struct Queue {
    answers: VecDeque<Answer>,
    /// Answers that are not acknowledgements.
    others: usize,
    /// Answers that carry data for the peer's reads and atomics.
    reads: usize,
    /// A goodbye or finish is queued: a kept message's acknowledgement will never go.
    leaving: bool,
}

impl Queue {
    fn counted(&mut self, a: &Answer, up: bool) {
        let step = |n: &mut usize| if up { *n += 1 } else { *n -= 1 };
        if !matches!(a, Answer::Ack(_)) {
            step(&mut self.others);
        }
        if matches!(a, Answer::ReadData { .. } | Answer::AtomicResult { .. }) {
            step(&mut self.reads);
        }
        if up && matches!(a, Answer::Goodbye | Answer::Finish) {
            self.leaving = true;
        }
    }

    fn push_back(&mut self, a: Answer) {
        self.counted(&a, true);
        self.answers.push_back(a);
    }

    fn push_front(&mut self, a: Answer) {
        self.counted(&a, true);
        self.answers.push_front(a);
    }

    fn pop_front(&mut self) -> Option<Answer> {
        let a = self.answers.pop_front()?;
        self.counted(&a, false);
        Some(a)
    }

    fn len(&self) -> usize {
        self.answers.len()
    }

    fn is_empty(&self) -> bool {
        self.answers.is_empty()
    }

    /// Empties the queue, keeping its buffer while it is small (a request that carries the
    /// acknowledgements empties it every message) and letting a long one's go.
    fn clear(&mut self) {
        self.answers.clear();
        if self.answers.capacity() > KEPT_CAPACITY {
            self.answers = VecDeque::new();
        }
        self.others = 0;
        self.reads = 0;
        self.leaving = false;
    }
}

#[derive(Default)]
pub struct Answers {
    queue: Mutex<Queue>,
    /// The length of `queue`, copied under its lock: the usual poll and post look here.
    queued: AtomicUsize,
    /// `Queue::others` and `Queue::reads`, copied under its lock.
    others: AtomicUsize,
    reads: AtomicUsize,
    /// An acknowledgement a consumer's poll owes (0: none), ahead of every queued answer: it
    /// is set only while the queue is empty, so nothing queued before it waits behind it.
    /// Acknowledgements are cumulative: a later one replaces it.
    ack_owed: AtomicU64,
    /// The poll (the link's count, plus one) at which a polling consumer's thread began to
    /// hold acknowledgements, 0 when it holds none.
    held_since_poll: AtomicU64,
    /// When the engine's held acknowledgements must go (monotonic microseconds), 0 when it
    /// holds none.
    ack_due: AtomicU64,
}

impl Answers {
    /// Queues an answer. An acknowledgement behind another one replaces it: they are
    /// cumulative, and would merge into one frame anyway.
    pub fn push(&self, a: Answer) {
        let mut q = self.queue.lock();
        match (&a, q.answers.back_mut()) {
            (Answer::Ack(seq), Some(Answer::Ack(last))) => *last = (*last).max(*seq),
            // One doorbell rings for every message before it.
            (Answer::Doorbell, Some(Answer::Doorbell)) => {}
            _ => q.push_back(a),
        }
        self.publish(&q);
    }

    /// Copies the queue's counts for the questions asked without its lock.
    fn publish(&self, q: &Queue) {
        self.others.store(q.others, Ordering::Release);
        self.reads.store(q.reads, Ordering::Release);
        self.queued.store(q.len(), Ordering::Release);
    }

    /// How many answers to the peer's reads and atomics wait to be written.
    pub fn reads_queued(&self) -> usize {
        self.reads.load(Ordering::Acquire)
    }

    /// The stream is cut short (a frame was left unfinished): nothing queued can follow it but
    /// the end of the stream.
    pub fn cut(&self) {
        let mut q = self.queue.lock();
        q.clear();
        self.ack_owed.store(0, Ordering::Release);
        q.push_back(Answer::Finish);
        self.publish(&q);
    }

    /// Whether anything waits to be written (or held).
    pub fn pending(&self) -> bool {
        self.queued.load(Ordering::Acquire) != 0 || self.ack_owed.load(Ordering::Acquire) != 0
    }

    /// Whether every queued answer is an acknowledgement (or none is queued): those may wait
    /// for a ride, since nothing else keeps order behind them.
    pub fn only_acks(&self) -> bool {
        self.others.load(Ordering::Acquire) == 0
    }

    /// A consumer's poll acknowledges a request: owed ahead of the queue when the queue is
    /// empty (no lock), else queued behind what waits there. Only the thread handling frames
    /// acknowledges, so nothing that must precede it is queued meanwhile. Returns whether
    /// acknowledgements were held already (the peer made this request without waiting for
    /// our answer to an earlier one).
    pub fn owe_ack(&self, seq: u64) -> bool {
        let held = self.acks_held();
        if self.queued.load(Ordering::Acquire) == 0 {
            self.ack_owed.store(seq, Ordering::Release);
        } else {
            self.push(Answer::Ack(seq));
        }
        held
    }

    /// The engine's acknowledgement: it waits until `due` for company. Returns whether it
    /// started a wait (the caller sets its timer then).
    pub fn hold_ack(&self, seq: u64, due: u64) -> bool {
        self.push(Answer::Ack(seq));
        if self.ack_due.load(Ordering::Relaxed) == 0 {
            self.ack_due.store(due, Ordering::Relaxed);
            return true;
        }
        false
    }

    /// Acknowledgements a consumer's thread made (while it holds no lease on the connection,
    /// or as its lease runs out) wait with the engine now, until `due`, for a request to
    /// carry them; the caller saw that nothing but acknowledgements waits. Returns whether it
    /// started a wait (the caller sets its timer then).
    pub fn hand_to_engine(&self, due: u64) -> bool {
        self.held_since_poll.store(0, Ordering::Relaxed);
        match self.take_owed() {
            Some(seq) => self.hold_ack(seq, due),
            None if self.queued.load(Ordering::Acquire) != 0
                && self.ack_due.load(Ordering::Relaxed) == 0 =>
            {
                self.ack_due.store(due, Ordering::Relaxed);
                true
            }
            None => false,
        }
    }

    /// When the engine's held acknowledgements are due, 0 when none are held.
    pub fn ack_due(&self) -> u64 {
        self.ack_due.load(Ordering::Relaxed)
    }

    /// A polling consumer holds the acknowledgements it made: since which poll (0: it did not
    /// hold them yet, and starts now at `now`).
    pub fn held_since(&self, now: u64) -> u64 {
        match self.held_since_poll.load(Ordering::Relaxed) {
            0 => {
                self.held_since_poll.store(now, Ordering::Relaxed);
                0
            }
            since => since,
        }
    }

    /// Held acknowledgements were taken (to be written, or to ride on a request).
    pub fn acks_gone(&self) {
        self.ack_due.store(0, Ordering::Relaxed);
        self.held_since_poll.store(0, Ordering::Relaxed);
    }

    /// Whether only the engine holds acknowledgements (their timer sends them).
    pub fn only_engine_holds(&self) -> bool {
        self.ack_due.load(Ordering::Relaxed) != 0
            && self.held_since_poll.load(Ordering::Relaxed) == 0
            && self.ack_owed.load(Ordering::Relaxed) == 0
    }

    /// Whether acknowledgements are held, by a consumer's thread or the engine.
    pub fn acks_held(&self) -> bool {
        self.ack_due.load(Ordering::Relaxed) != 0
            || self.held_since_poll.load(Ordering::Relaxed) != 0
            || self.ack_owed.load(Ordering::Relaxed) != 0
    }

    /// Takes the acknowledgement a consumer's poll owes, if any.
    fn take_owed(&self) -> Option<u64> {
        if self.ack_owed.load(Ordering::Relaxed) == 0 {
            return None;
        }
        Some(self.ack_owed.swap(0, Ordering::AcqRel)).filter(|seq| *seq != 0)
    }

    /// Takes the acknowledgements waiting to go, for a request to carry: the owed one, and
    /// the queued answers when they are all acknowledgements. Returns the last sequence
    /// number they acknowledge (acknowledgements are cumulative).
    pub fn take_acks(&self) -> Option<u64> {
        let owed = self.take_owed();
        if self.queued.load(Ordering::Acquire) == 0 {
            // The usual case: only the owed one, or none.
            self.held_since_poll.store(0, Ordering::Relaxed);
            return owed;
        }
        let mut q = self.queue.lock();
        if q.is_empty() || q.others != 0 {
            self.held_since_poll.store(0, Ordering::Relaxed);
            return owed;
        }
        let last = q.answers.drain(..).fold(0, |m, a| {
            if let Answer::Ack(seq) = a {
                m.max(seq)
            } else {
                m
            }
        });
        q.clear();
        self.publish(&q);
        self.acks_gone();
        Some(owed.map_or(last, |o| o.max(last)))
    }

    /// A kept message landed in a receive with this local status: the sender hears of it (an
    /// acknowledgement, or a refusal that ends the connection, as a direct delivery's).
    /// Returns false when the landing failed (the caller ends the connection).
    pub fn landed(&self, seq: u64, status: dat_dto_completion_status) -> bool {
        let ok = status == dat_dto_completion_status::DAT_DTO_SUCCESS;
        let mut q = self.queue.lock();
        // Kept messages land in the order they came, so theirs is the first kept answer: what
        // is queued before it is what it holds back, never more than a few (acknowledgements
        // merge, and read answers are bounded).
        let first_kept = q.answers.iter().position(|a| matches!(a, Answer::Kept(_)));
        if let Some(at) =
            first_kept.filter(|at| matches!(q.answers[*at], Answer::Kept(s) if s == seq))
        {
            let answer = if ok {
                Answer::Ack(seq)
            } else {
                Answer::Refuse {
                    seq,
                    status: dat_dto_completion_status::DAT_DTO_ERR_REMOTE_RESPONDER,
                }
            };
            q.counted(&Answer::Kept(seq), false);
            q.counted(&answer, true);
            q.answers[at] = answer;
            self.publish(&q);
        }
        ok
    }

    /// Writes queued answers in order without blocking, merging a run of acknowledgements.
    /// The caller holds the writer, so whoever takes an answer off the queue also writes it
    /// in order. The goodbye waits while `requests_held` (it follows every request posted
    /// before the close).
    pub fn write(&self, w: &mut WriterGuard<'_>, requests_held: bool) -> std::io::Result<Flushed> {
        if w.has_rest() && !w.continue_rest_now()? {
            return Ok(Flushed::Blocked);
        }
        loop {
            let answer = {
                let mut q = self.queue.lock();
                // An owed acknowledgement goes first: everything queued came after it.
                let owed = self.take_owed();
                let Some(mut a) = owed.map(Answer::Ack).or_else(|| q.pop_front()) else {
                    self.acks_gone();
                    return Ok(Flushed::Done);
                };
                if let Answer::Kept(_) = a {
                    if !q.leaving {
                        q.push_front(a); // it and what is behind it wait until it lands
                        self.publish(&q);
                        return Ok(Flushed::Done);
                    }
                    self.publish(&q);
                    continue; // it will never land
                }
                if let Answer::Ack(mut last) = a {
                    while let Some(Answer::Ack(next)) = q.answers.front() {
                        last = last.max(*next);
                        q.pop_front();
                    }
                    a = Answer::Ack(last);
                }
                self.publish(&q);
                a
            };
            let wrote = match answer {
                Answer::Ack(seq) => {
                    let mut h = Header::new(Op::Ack);
                    h.id = seq;
                    w.answer_now(&h, &[], None)?
                }
                Answer::ReadData {
                    seq,
                    lmr,
                    address,
                    length,
                } => {
                    // The region may have been freed since the request was checked; it stays
                    // registered while its bytes are copied out (the frame holds it then: one
                    // freed in between ends the connection).
                    let live = lmr.as_ref().is_some_and(|l| l.access().is_some());
                    if length == 0 || live {
                        let mut h = Header::new(Op::RdmaReadResponse);
                        h.id = seq;
                        h.payload_len = length;
                        let data: &[u8] = if length == 0 {
                            &[]
                        } else {
                            // SAFETY: [address, address + length) lies inside a region the
                            // consumer registered with remote read privilege (checked on
                            // arrival, and just now); the frame reads it only while it is
                            // registered still.
                            unsafe {
                                std::slice::from_raw_parts(address as *const u8, length as usize)
                            }
                        };
                        w.answer_now(&h, data, lmr.clone())?
                    } else {
                        w.answer_now(
                            &refusal(seq, dat_dto_completion_status::DAT_DTO_ERR_REMOTE_ACCESS),
                            &[],
                            None,
                        )?
                    }
                }
                Answer::AtomicResult { seq, original } => {
                    let mut h = Header::new(Op::RdmaReadResponse);
                    h.id = seq;
                    h.payload_len = original.to_le_bytes().len() as u32;
                    w.write_owned_now(&h, Box::new(original.to_le_bytes()))?
                }
                Answer::Refuse { seq, status } => w.answer_now(&refusal(seq, status), &[], None)?,
                Answer::Doorbell => w.answer_now(&Header::new(Op::Doorbell), &[], None)?,
                Answer::Kept(_) => unreachable!("held above"),
                Answer::Goodbye if requests_held => {
                    let mut q = self.queue.lock();
                    q.push_front(Answer::Goodbye);
                    self.publish(&q);
                    return Ok(Flushed::Done);
                }
                Answer::Goodbye => w.answer_now(&Header::new(Op::Disconnect), &[], None)?,
                Answer::Finish => {
                    if w.has_rest() {
                        let mut q = self.queue.lock();
                        q.push_front(Answer::Finish);
                        self.publish(&q);
                        return Ok(Flushed::Blocked);
                    }
                    w.shutdown_write();
                    return Ok(Flushed::Finished);
                }
            };
            match wrote {
                Wrote::All => {}
                // Taken off the queue, and part (or all) of it waits in the writer.
                Wrote::Part => return Ok(Flushed::Blocked),
                Wrote::Nothing => unreachable!("the writer's rest was written first"),
            }
        }
    }
}

fn refusal(seq: u64, status: dat_dto_completion_status) -> Header {
    let mut h = Header::new(Op::RemoteAccessError);
    h.id = seq;
    h.remote_addr = status as u64;
    h
}
