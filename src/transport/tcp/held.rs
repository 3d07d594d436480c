//! Requests numbered and counted as outstanding that wait before they go out: behind a frame
//! the socket has not taken yet (the socket is full: the peer reads slowly), behind the RDMA
//! reads before a fenced one (`DAT_COMPLETION_BARRIER_FENCE_FLAG`: it starts only once their
//! data has landed, so it may carry what they brought), behind the reads in flight when the
//! peer takes no more at once (its `max_rdma_read_in`), and every request posted after one
//! that waits, since requests go out in the order of their numbers. They wait here, never in
//! the posting thread: that thread may be the one whose polls land the reads, and its peer may
//! be posting to us at the same moment (two posts that blocked on full sockets deadlocked two
//! processes). Whoever finds room in the socket, or lands the last read, writes them.

use std::collections::VecDeque;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::Mutex;

use super::conn::{Frame, WriterGuard, Wrote};

/// A request not yet written.
pub struct HeldRequest {
    frame: Frame,
    /// It waits for every read before it to land.
    fence: bool,
    /// An RDMA read or atomic: answered with data, so counted among the reads in flight.
    read: bool,
}

impl HeldRequest {
    pub fn new(frame: Frame, fence: bool, read: bool) -> HeldRequest {
        HeldRequest { frame, fence, read }
    }
}

/// The held requests of one connection, oldest first. Pushed and written only under the
/// connection's writer lock, so a post that finds none held (and no frame in part) may write
/// its request itself.
#[derive(Default)]
pub struct Held {
    queue: Mutex<VecDeque<HeldRequest>>,
    /// The length of `queue`: the usual post looks only here.
    count: AtomicUsize,
}

/// How many reads (and atomics) of ours may be in flight at once, and how many are.
pub struct Reads<'a> {
    pub in_flight: &'a AtomicUsize,
    pub depth: usize,
}

impl Reads<'_> {
    /// Whether a request may start now: a fenced one once every read before it landed, a read
    /// once the peer takes another.
    pub fn may_start(&self, fence: bool, read: bool) -> bool {
        let n = self.in_flight.load(Ordering::Acquire);
        let fenced = fence && n != 0;
        let too_many = read && n >= self.depth;
        !fenced && !too_many
    }
}

impl Held {
    pub fn any(&self) -> bool {
        self.count.load(Ordering::Acquire) != 0
    }

    /// The caller holds the writer.
    pub fn push(&self, _writer: &WriterGuard<'_>, r: HeldRequest) {
        let mut q = self.queue.lock();
        q.push_back(r);
        self.count.store(q.len(), Ordering::Release);
    }

    /// The connection ended: they are flushed with the EP's outstanding requests (the caller
    /// holds the writer, so none is being written).
    pub fn clear(&self, _writer: &WriterGuard<'_>) {
        let mut q = self.queue.lock();
        q.clear();
        self.count.store(0, Ordering::Release);
    }

    /// Writes the requests that may go now, oldest first, without blocking (see
    /// `Reads::may_start`). True when the socket has no room for more.
    pub fn write(&self, w: &mut WriterGuard<'_>, reads: &Reads<'_>) -> io::Result<bool> {
        loop {
            if w.has_rest() && !w.continue_rest_now()? {
                return Ok(true);
            }
            let r = {
                let mut q = self.queue.lock();
                match q.front() {
                    None => return Ok(false),
                    Some(r) if !reads.may_start(r.fence, r.read) => return Ok(false),
                    Some(_) => {}
                }
                let r = q.pop_front().expect("looked at");
                self.count.store(q.len(), Ordering::Release);
                r
            };
            if r.read {
                reads.in_flight.fetch_add(1, Ordering::AcqRel);
            }
            match w.write_now(r.frame)? {
                Wrote::All => {}
                Wrote::Part => return Ok(true), // the rest waits in the writer
                Wrote::Nothing => unreachable!("the writer's rest was written first"),
            }
        }
    }
}
