//! Requests that wait before they go out: one fenced behind the EP's RDMA reads
//! (`DAT_COMPLETION_BARRIER_FENCE_FLAG`: it starts only once their data has landed, so it may
//! carry what they brought), and every request posted after it, since requests go out in the
//! order of their numbers. They wait here, not in the posting thread: that thread may be the
//! one whose polls land the reads, and its peer may wait on it (a fenced post that blocked
//! deadlocked two processes whose sends waited for each other's receives). Whoever lands the
//! last read, or finds room in the socket, writes them without blocking.

use std::collections::VecDeque;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::Mutex;

use super::conn::{WriterGuard, Wrote};
use super::wire::Header;
use crate::abi::DAT_LMR_TRIPLET;

/// A request numbered and counted as outstanding, not yet written.
pub struct HeldRequest {
    header: Header,
    fence: bool,
    /// Its payload's bytes copied as it was posted (an atomic's operands).
    copied: Vec<u8>,
    /// Where the rest of its payload is read from as it goes (none for an RDMA read request).
    segments: Vec<DAT_LMR_TRIPLET>,
}

impl HeldRequest {
    pub fn new(header: Header, fence: bool, copied: &[u8], segments: &[DAT_LMR_TRIPLET]) -> HeldRequest {
        HeldRequest { header, fence, copied: copied.to_vec(), segments: segments.to_vec() }
    }

    /// Its payload, copied now: the bytes the fenced reads brought.
    fn payload(&self) -> Box<[u8]> {
        let mut data = Vec::with_capacity(self.header.payload_len as usize);
        data.extend_from_slice(&self.copied);
        for s in &self.segments {
            // SAFETY: checked against a live LMR with local read privilege when posted; the
            // consumer keeps the memory until the request completes, which it has not.
            data.extend_from_slice(unsafe {
                std::slice::from_raw_parts(s.virtual_address as *const u8, s.segment_length as usize)
            });
        }
        data.into_boxed_slice()
    }
}

/// The held requests of one connection, oldest first. Pushed and written only under the
/// connection's writer lock, so a post that finds none held may write its request itself.
#[derive(Default)]
pub struct Held {
    queue: Mutex<VecDeque<HeldRequest>>,
    /// The length of `queue`: the usual post looks only here.
    count: AtomicUsize,
}

impl Held {
    pub fn any(&self) -> bool {
        self.count.load(Ordering::Acquire) != 0
    }

    pub fn push(&self, r: HeldRequest) {
        let mut q = self.queue.lock();
        q.push_back(r);
        self.count.store(q.len(), Ordering::Release);
    }

    /// The connection ended: they are flushed with the EP's outstanding requests.
    pub fn clear(&self) {
        let mut q = self.queue.lock();
        q.clear();
        self.count.store(0, Ordering::Release);
    }

    /// Writes the requests that may go now, oldest first, without blocking: up to a fenced
    /// one while RDMA reads are in flight (`reads_in_flight`, counted up for each read that
    /// goes). True when the socket has no room for more.
    pub fn write(&self, w: &mut WriterGuard<'_>, reads_in_flight: &AtomicUsize) -> io::Result<bool> {
        loop {
            if w.has_rest() && !w.continue_rest_now()? {
                return Ok(true);
            }
            let r = {
                let mut q = self.queue.lock();
                match q.front() {
                    None => return Ok(false),
                    Some(r) if r.fence && reads_in_flight.load(Ordering::Acquire) != 0 => return Ok(false),
                    Some(_) => {}
                }
                let r = q.pop_front().expect("looked at");
                self.count.store(q.len(), Ordering::Release);
                r
            };
            if r.header.op.answered_with_data() {
                reads_in_flight.fetch_add(1, Ordering::AcqRel);
            }
            match w.write_owned_now(&r.header, r.payload())? {
                Wrote::All => {}
                Wrote::Part => return Ok(true), // the rest waits in the writer
                Wrote::Nothing => unreachable!("the writer's rest was written first"),
            }
        }
    }
}
