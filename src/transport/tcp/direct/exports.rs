//! Our side: the process's export table (its regions, its connections' slots), and the
//! receives a connection's EP publishes to its peer.

use std::collections::VecDeque;
use std::net::SocketAddrV4;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

use super::table::*;
use super::{enabled, Offer};
use crate::objects::lmr::Lmr;
use crate::objects::region_table::Region;
use crate::objects::seam::regions::{self, RegionObserver};
use crate::objects::srq::PostedRecv;
use crate::runtime::sys::{self, debug};

/// How long a wait for a peer's accesses spins before it watches the peer's process instead
/// (a copy takes microseconds; a peer that is slow, or stopped, takes as long as it takes).
const SPIN_US: u64 = 200;

pub struct Exports {
    map: Mapping,
    file: OwnedFd,
    pid: u32,
    /// Boxed: its address, which the table names, stays where it is.
    cookie: Box<[u8; 16]>,
    /// Serializes our writes to region slots (each a sequence lock).
    writers: Mutex<()>,
    slots: Mutex<Slots>,
}

#[derive(Default)]
struct Slots {
    free: Vec<u32>,
    /// Slots given out so far (those at and above are all free).
    high: u32,
}

static EXPORTS: OnceLock<Option<Exports>> = OnceLock::new();

/// The process's export table, made on first use with every registered region; None when the
/// path is off, the table could not be made, or the process is a child forked from the one
/// that made it (its copy of the table is its parent's).
fn exports() -> Option<&'static Exports> {
    if !enabled() {
        return None;
    }
    let mut made = false;
    let e = EXPORTS
        .get_or_init(|| {
            made = true;
            Exports::create()
        })
        .as_ref()
        .filter(|e| e.pid == sys::current_pid())?;
    if made {
        // Regions registered from here on are published as they are; those before, now (a
        // region published twice is written the same twice).
        regions::observe(&Published);
        Lmr::each_region(|context, region| e.publish(context, region));
    }
    Some(e)
}

/// The table if it exists (registration and release do not make it).
fn existing() -> Option<&'static Exports> {
    EXPORTS
        .get()?
        .as_ref()
        .filter(|e| e.pid == sys::current_pid())
}

/// The regions as the objects register and release them, published and withdrawn (observed
/// once the table exists: none is published before).
struct Published;

impl RegionObserver for Published {
    fn registered(&self, context: u32, region: &Region) {
        publish(context, region);
    }

    fn released(&self, context: u32) {
        withdraw(context);
    }
}

/// A region was registered (called as it is, under the regions' lock).
pub fn publish(context: u32, region: &Region) {
    if let Some(e) = existing() {
        e.publish(context, region);
    }
}

/// A region is being freed: no peer reaches it directly once this returns.
pub fn withdraw(context: u32) {
    if let Some(e) = existing() {
        e.withdraw(context);
    }
}

/// Our offer to the peer at `remote` of a connection of ours at `local`, for an EP of zone `pz`
/// (its identity), and the connection's slot in our table; None when we cannot make one.
pub fn offer(
    pz: u64,
    local: SocketAddrV4,
    remote: SocketAddrV4,
) -> Option<(Offer, Arc<ExportedSlot>)> {
    let exports = exports()?;
    let slot = exports.open_slot(pz, local, remote)?;
    let offer = Offer {
        pid: exports.pid,
        fd: exports.file.as_raw_fd() as u32,
        slot: slot.index,
        generation: slot.generation,
        cookie: *exports.cookie,
    };
    Some((offer, Arc::new(slot)))
}

impl Exports {
    fn create() -> Option<Exports> {
        // SAFETY: a NUL-terminated name and flags; returns a new descriptor or -1.
        let fd = unsafe {
            libc::memfd_create(
                c"libdat-direct".as_ptr(),
                libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING,
            )
        };
        if fd < 0 {
            return None;
        }
        // SAFETY: a fresh descriptor nobody else owns.
        let file = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: our memfd, sized once (its pages are zero until written), then sealed at that
        // size: a peer knows a table from any other file by its seals.
        if unsafe { libc::ftruncate(file.as_raw_fd(), TABLE_LEN as libc::off_t) } != 0
            // SAFETY: as above: F_ADD_SEALS takes an integer, the seals.
            || unsafe { libc::fcntl(file.as_raw_fd(), libc::F_ADD_SEALS, TABLE_SEALS) } != 0
        {
            return None;
        }
        let map = Mapping::map(&file)?;
        let mut cookie = Box::new([0u8; 16]);
        // SAFETY: getrandom writes at most 16 bytes into the 16-byte buffer.
        if unsafe { libc::getrandom(cookie.as_mut_ptr().cast(), cookie.len(), 0) }
            != cookie.len() as isize
        {
            return None;
        }
        let pid = sys::current_pid();
        let t = map.table();
        t.owner.store(u64::from(pid), Ordering::Relaxed);
        t.cookie[0].store(
            u64::from_le_bytes(cookie[..8].try_into().expect("8 bytes")),
            Ordering::Relaxed,
        );
        t.cookie[1].store(
            u64::from_le_bytes(cookie[8..].try_into().expect("8 bytes")),
            Ordering::Relaxed,
        );
        t.cookie_at.store(cookie.as_ptr() as u64, Ordering::Relaxed);
        t.magic.store(MAGIC, Ordering::Release);
        Some(Exports {
            map,
            file,
            pid,
            cookie,
            writers: Mutex::new(()),
            slots: Mutex::new(Slots::default()),
        })
    }

    fn table(&self) -> &Table {
        self.map.table()
    }

    fn publish(&self, context: u32, region: &Region) {
        let _w = self.writers.lock();
        let slot = &self.table().regions[context as usize % REGION_SLOTS];
        let held = slot.context.load(Ordering::Relaxed);
        if held == 0 || held == context {
            slot.write(context, region);
        } // else another region's slot: this one is reached through the socket
    }

    fn withdraw(&self, context: u32) {
        {
            let _w = self.writers.lock();
            let slot = &self.table().regions[context as usize % REGION_SLOTS];
            if slot.context.load(Ordering::Relaxed) != context {
                return; // never published (its slot was another's)
            }
            slot.write(
                0,
                &Region {
                    pz: 0,
                    address: 0,
                    length: 0,
                    privileges: 0,
                },
            );
        }
        // A peer's access marks itself begun before it reads the region's slot (both in one
        // total order with the clearing above): one that began after the clearing finds the
        // slot empty; one that began before is waited for here.
        let high = self.slots.lock().high as usize;
        for conn in &self.table().conns[..high] {
            wait_for_accesses(conn, "a region being freed");
        }
    }

    /// Opens a connection slot for a peer at `remote` of our EP of zone `pz` (its identity).
    fn open_slot(
        &'static self,
        pz: u64,
        local: SocketAddrV4,
        remote: SocketAddrV4,
    ) -> Option<ExportedSlot> {
        let index = {
            let mut s = self.slots.lock();
            match s.free.pop() {
                Some(i) => i,
                None if (s.high as usize) < CONN_SLOTS => {
                    s.high += 1;
                    s.high - 1
                }
                None => return None,
            }
        };
        let conn = &self.table().conns[index as usize];
        let generation = (conn.state.load(Ordering::Relaxed) >> 1).wrapping_add(1) & 0xffff_ffff;
        conn.pz.store(pz, Ordering::Relaxed);
        conn.local.store(pack(local), Ordering::Relaxed);
        conn.remote.store(pack(remote), Ordering::Relaxed);
        conn.published.store(0, Ordering::Relaxed);
        conn.taken.store(0, Ordering::Relaxed);
        conn.polled.store(0, Ordering::Relaxed);
        conn.attached.store(0, Ordering::Relaxed);
        conn.frames.store(0, Ordering::Relaxed);
        // A previous holder's accesses ended (its connection's end waited for them as long as
        // it lived): any it left unfinished, dying, are settled. The counts only grow, so a
        // free that read them before, and waits for them now, is not fooled.
        conn.finished
            .fetch_max(conn.begun.load(Ordering::SeqCst), Ordering::SeqCst);
        for d in &conn.ring {
            d.seq.store(0, Ordering::Relaxed);
            d.filled.store(0, Ordering::Relaxed);
        }
        conn.state.store((generation << 1) | OPEN, Ordering::SeqCst);
        Some(ExportedSlot {
            exports: self,
            index,
            generation: generation as u32,
            handled: AtomicU64::new(0),
        })
    }
}

/// Waits for the peer's accesses through `conn` that began before now to finish: as long as
/// the peer's process lives (a slow peer still copies into memory the caller is about to
/// give back), and no longer once it died (its accesses end with it).
fn wait_for_accesses(conn: &ConnSlot, why: &str) {
    let begun = conn.begun.load(Ordering::SeqCst);
    if conn.finished.load(Ordering::SeqCst) >= begun {
        return;
    }
    let start = sys::monotonic_micros();
    while sys::monotonic_micros() - start < SPIN_US {
        if conn.finished.load(Ordering::SeqCst) >= begun {
            return;
        }
        sys::yield_now();
    }
    let pid = conn.attached.load(Ordering::Acquire);
    let peer = libc::pid_t::try_from(pid)
        .ok()
        .filter(|p| *p > 0)
        .and_then(process_watch);
    let Some(peer) = peer else {
        // No process to watch: the peer never said who it is, or is gone already.
        return settle_dead(conn, begun, why);
    };
    while conn.finished.load(Ordering::SeqCst) < begun {
        let mut fd = libc::pollfd {
            fd: peer.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one live pollfd for our own pidfd; it becomes readable as the process exits.
        let r = unsafe { libc::poll(&mut fd, 1, 1) };
        if r > 0 && conn.finished.load(Ordering::SeqCst) < begun {
            return settle_dead(conn, begun, why);
        }
    }
}

/// The peer whose accesses `conn` counts has died with `begun` of them not finished: they
/// never will, and no wait counts them again.
fn settle_dead(conn: &ConnSlot, begun: u64, why: &str) {
    if debug() {
        eprintln!("libdat: a peer died during a direct access, for {why}: not waited for");
    }
    conn.finished.fetch_max(begun, Ordering::SeqCst);
}

/// A descriptor that becomes readable when process `pid` exits (None: it has exited).
fn process_watch(pid: libc::pid_t) -> Option<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    // SAFETY: a fresh descriptor nobody else owns.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// How long a look at the receives waits for one the peer claimed to be marked filled: the
/// peer marks it right after its copy, which the program polling the receive's memory may
/// have seen whole already (and then polls once for the completion, as on a device). It
/// spins for a moment, then lets the peer's thread have the CPU (on a busy machine it may be
/// off its CPU between the copy and the mark), up to the limit.
const CLAIMED_SPIN_US: u64 = 20;
const CLAIMED_WAIT_US: u64 = 20_000;

/// Whether receive `n`, which the peer claimed (it is copying its message into it), is marked
/// filled within `CLAIMED_WAIT_US`.
fn filled_soon(conn: &ConnSlot, d: &RecvDesc, n: u64) -> bool {
    if conn.taken.load(Ordering::SeqCst) < n {
        return false; // not claimed: nothing is on its way
    }
    let start = sys::monotonic_micros();
    loop {
        if d.filled.load(Ordering::SeqCst) == n {
            return true;
        }
        let waited = sys::monotonic_micros() - start;
        if waited >= CLAIMED_WAIT_US {
            return false;
        }
        if waited < CLAIMED_SPIN_US {
            std::hint::spin_loop();
        } else {
            sys::yield_now();
        }
    }
}

/// A connection's slot in our table, offered to its peer; closed as the connection ends,
/// given back as the link goes.
pub struct ExportedSlot {
    exports: &'static Exports,
    index: u32,
    generation: u32,
    /// Receives the EP took off its queue (its `Receives::handled`, for polls that look
    /// without the EP's lock).
    handled: AtomicU64,
}

impl ExportedSlot {
    fn conn(&self) -> &'static ConnSlot {
        let exports: &'static Exports = self.exports;
        &exports.table().conns[self.index as usize]
    }

    /// The connection ended: the peer's next access goes by the socket, and those it began
    /// before are waited for (a receive it is filling then completes before the rest flush).
    pub fn close(&self) {
        let conn = self.conn();
        conn.state
            .store(u64::from(self.generation) << 1, Ordering::SeqCst);
        wait_for_accesses(conn, "a connection that ends");
    }

    /// The receives the peer filled that the EP has not taken, from the next on as long as
    /// each is filled: (receive number, stamp), added to `into`. No lock: a look, which the
    /// taking (`Receives::take_filled_number`) checks.
    pub fn filled(&self, into: &mut Vec<(u64, u64)>) {
        let conn = self.conn();
        let next = self.handled.load(Ordering::Acquire) + 1;
        for n in next..next + RING as u64 {
            let d = &conn.ring[((n - 1) % RING as u64) as usize];
            if d.filled.load(Ordering::SeqCst) != n {
                break;
            }
            into.push((n, d.stamp.load(Ordering::Relaxed)));
        }
    }

    /// Whether the next receive is filled, or the peer claimed it and marks it filled within
    /// a moment (it is copying its message in).
    pub fn next_filled_soon(&self) -> bool {
        let conn = self.conn();
        let n = self.handled.load(Ordering::Acquire) + 1;
        let d = &conn.ring[((n - 1) % RING as u64) as usize];
        d.filled.load(Ordering::SeqCst) == n || filled_soon(conn, d, n)
    }

    /// Whether the peer put messages in receives the EP has not taken yet (no lock: a poll
    /// looks). In one total order with `set_polled`'s store (see `Direct::send`).
    pub fn peer_filled(&self) -> bool {
        self.conn().taken.load(Ordering::SeqCst) != self.handled.load(Ordering::Relaxed)
    }

    /// How many frames the peer wrote to the socket so far, once it counts them.
    pub fn peer_frames(&self) -> Option<u64> {
        let conn = self.conn();
        (conn.attached.load(Ordering::Acquire) != 0).then(|| conn.frames.load(Ordering::SeqCst))
    }

    /// A thread of ours polls the connection now (it took it on lease), or no longer does.
    /// Cleared before the owner looks at its receives a last time (see `Direct::send`).
    pub fn set_polled(&self, polled: bool) {
        self.conn()
            .polled
            .store(u64::from(polled), Ordering::SeqCst);
    }
}

impl Drop for ExportedSlot {
    fn drop(&mut self) {
        self.close();
        self.exports.slots.lock().free.push(self.index);
    }
}

/// The receives of a connection's EP as its peer sees them, kept under the EP's lock with its
/// queue of receives: the front of the queue, published in the slot's ring (each receive is
/// the connection's receive number `handled + 1 + its place in the queue`), and taken in
/// order by the peer's messages that come directly or ours that come by the socket.
pub struct Receives {
    slot: Arc<ExportedSlot>,
    /// Receives taken off the queue so far.
    handled: u64,
    /// Receives published so far.
    published: u64,
}

/// What became of a receive the peer filled.
pub enum Filled {
    /// The message is in it, this long; whether its sender solicited the receive's
    /// notification.
    Landed { length: u32, solicited: bool },
    /// The peer's copy failed (our memory is not what we registered): the receive completes in
    /// error, and the peer breaks the connection.
    Failed,
}

impl Receives {
    pub fn new(slot: Arc<ExportedSlot>) -> Receives {
        Receives {
            slot,
            handled: 0,
            published: 0,
        }
    }

    /// Publishes the receives at the front of `queue` the ring has room for, in order, up to
    /// one with more segments than a published receive holds. None while messages wait in
    /// the EP for a receive: the next receives are theirs.
    pub fn publish(&mut self, queue: &VecDeque<PostedRecv>, messages_waiting: bool) {
        if messages_waiting {
            return;
        }
        let conn = self.slot.conn();
        while self.published < self.handled + queue.len() as u64
            && self.published < self.handled + RING as u64
        {
            let n = self.published + 1;
            let r = &queue[(n - self.handled - 1) as usize];
            if r.segments.len() > RING_SEGMENTS {
                return;
            }
            let d = &conn.ring[((n - 1) % RING as u64) as usize];
            for (to, s) in d.segments.iter().zip(r.segments.iter()) {
                to.address.store(s.virtual_address, Ordering::Relaxed);
                to.length
                    .store(u64::from(s.segment_length), Ordering::Relaxed);
                to.context
                    .store(u64::from(s.lmr_context), Ordering::Relaxed);
            }
            d.count.store(r.segments.len() as u64, Ordering::Relaxed);
            d.seq.store(n, Ordering::Release);
            conn.published.store(n, Ordering::Release);
            self.published = n;
        }
    }

    /// Takes the receives the peer filled off the front of `queue`, in order, each to `each`
    /// with what landed in it; then publishes more.
    pub fn take_filled(
        &mut self,
        queue: &mut VecDeque<PostedRecv>,
        messages_waiting: bool,
        mut each: impl FnMut(PostedRecv, Filled),
    ) {
        while self.take_next(queue, true, &mut each) {}
        self.publish(queue, messages_waiting);
    }

    /// Takes receive `n` (`ExportedSlot::filled`), if it is the next and the peer filled it,
    /// as `take_filled` does; then publishes more. Whether it took it.
    pub fn take_filled_number(
        &mut self,
        n: u64,
        queue: &mut VecDeque<PostedRecv>,
        messages_waiting: bool,
        mut each: impl FnMut(PostedRecv, Filled),
    ) -> bool {
        let took = self.handled + 1 == n && self.take_next(queue, false, &mut each);
        self.publish(queue, messages_waiting);
        took
    }

    /// Takes the next receive off `queue` to `each` if the peer filled it (or, `claimed`,
    /// claimed it and marks it filled soon); whether it did.
    fn take_next(
        &mut self,
        queue: &mut VecDeque<PostedRecv>,
        claimed: bool,
        each: &mut impl FnMut(PostedRecv, Filled),
    ) -> bool {
        if self.handled >= self.published {
            return false;
        }
        let conn = self.slot.conn();
        let n = self.handled + 1;
        let d = &conn.ring[((n - 1) % RING as u64) as usize];
        if d.filled.load(Ordering::SeqCst) != n && !(claimed && filled_soon(conn, d, n)) {
            return false;
        }
        let word = d.length.load(Ordering::Acquire);
        let (length, solicited) = (word & !SOLICITED, word & SOLICITED != 0);
        let Some(r) = queue.pop_front() else {
            return false;
        };
        self.took(n);
        // A length beyond the receive's room is the peer's lie: as a failure.
        let room = crate::objects::lmr::total_length(&r.segments);
        each(
            r,
            if length & FAILED != 0 || length > room {
                Filled::Failed
            } else {
                Filled::Landed {
                    length: length as u32,
                    solicited,
                }
            },
        );
        true
    }

    /// A message that came by the socket takes the receive at the front of `queue`: claimed
    /// from the peer, after the ones it filled are taken (`each`, as `take_filled`). None when
    /// the queue is empty, or the peer took the front receive and does not fill it.
    pub fn take_for_socket(
        &mut self,
        queue: &mut VecDeque<PostedRecv>,
        messages_waiting: bool,
        mut each: impl FnMut(PostedRecv, Filled),
    ) -> Option<PostedRecv> {
        let conn = self.slot.conn();
        let start = sys::monotonic_micros();
        loop {
            self.take_filled(queue, messages_waiting, &mut each);
            if queue.is_empty() {
                return None;
            }
            let n = self.handled + 1;
            if conn
                .taken
                .compare_exchange(n - 1, n, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
            {
                self.took(n);
                let r = queue.pop_front();
                self.publish(queue, messages_waiting);
                return r;
            }
            // The peer took it and is filling it (its messages by the socket come after the
            // ones it puts directly, so this is brief), or never will: then the message waits
            // as one that came before a receive.
            if sys::monotonic_micros() - start > 1000 {
                return None;
            }
            std::hint::spin_loop();
        }
    }

    fn took(&mut self, n: u64) {
        self.handled = n;
        self.published = self.published.max(n);
        self.slot.handled.store(n, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    //! The waits for a peer's accesses, with the test in the peer's part: it marks accesses
    //! begun and finished in a slot of a table of its own, as a process that took up the
    //! offer would, and names a process of its choosing as that peer.

    use std::net::Ipv4Addr;
    use std::process::{Child, Command};
    use std::sync::mpsc;
    use std::time::{Duration, Instant};

    use super::*;
    use crate::abi::Zeroable;

    /// An export table of the test's own (not the process's): no other test sees its slots.
    fn own_table() -> &'static Exports {
        Box::leak(Box::new(Exports::create().expect("an export table")))
    }

    fn open(table: &'static Exports) -> ExportedSlot {
        let end = |port| SocketAddrV4::new(Ipv4Addr::LOCALHOST, port);
        table.open_slot(1, end(1), end(2)).expect("a free slot")
    }

    /// A region of the table, to be freed.
    fn publish_region(table: &Exports, context: u32) {
        table.publish(
            context,
            &Region {
                pz: 1,
                address: 0x1000,
                length: 0x1000,
                privileges: u32::MAX,
            },
        );
    }

    /// Process `pid` took up the offer of `conn` and began an access it has not finished.
    fn access_begun(conn: &ConnSlot, pid: u32) {
        conn.attached.store(u64::from(pid), Ordering::Release);
        conn.begun.fetch_add(1, Ordering::SeqCst);
    }

    /// A process of ours, killed and reaped when dropped.
    struct Process(Child);

    impl Process {
        /// One that lives until it is killed.
        fn live() -> Process {
            Process(Command::new("sleep").arg("60").spawn().expect("sleep"))
        }

        /// One that has exited, not reaped yet (its pid stays its own meanwhile).
        fn exited() -> Process {
            let p = Process(Command::new("true").spawn().expect("true"));
            let mut info = libc::siginfo_t::zeroed();
            // SAFETY: waits for our own child to exit, leaving it unreaped (WNOWAIT).
            let rc = unsafe {
                libc::waitid(
                    libc::P_PID,
                    p.pid() as libc::id_t,
                    &mut info,
                    libc::WEXITED | libc::WNOWAIT,
                )
            };
            assert_eq!(rc, 0);
            p
        }

        fn pid(&self) -> u32 {
            self.0.id()
        }

        fn kill(&mut self) {
            let _ = self.0.kill();
        }
    }

    impl Drop for Process {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    /// `table.withdraw(context)` (a region being freed) on a thread of its own: it reports
    /// when it returns.
    fn withdraw_in_background(table: &'static Exports, context: u32) -> mpsc::Receiver<()> {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            table.withdraw(context);
            let _ = tx.send(());
        });
        rx
    }

    /// How long `table.withdraw(context)` takes, for a region published just before.
    fn time_withdraw(table: &'static Exports, context: u32) -> Duration {
        publish_region(table, context);
        let start = Instant::now();
        table.withdraw(context);
        start.elapsed()
    }

    #[test]
    fn freeing_a_region_waits_for_a_live_peers_access_however_long_it_takes() {
        let table = own_table();
        let slot = open(table);
        let peer = Process::live();
        access_begun(slot.conn(), peer.pid());
        publish_region(table, 7);
        let returned = withdraw_in_background(table, 7);
        // The peer is slow (or stopped): the free waits. Watched for longer than any copy
        // takes, and than the 1 s after which the wait once gave up.
        assert!(
            returned.recv_timeout(Duration::from_millis(1500)).is_err(),
            "the free returned while a live peer's access into the region was in progress"
        );
        // The access finishes: the free returns.
        slot.conn().finished.fetch_add(1, Ordering::SeqCst);
        assert!(
            returned.recv_timeout(Duration::from_secs(5)).is_ok(),
            "the free did not return once the access finished"
        );
    }

    #[test]
    fn a_peer_that_dies_mid_access_ends_the_wait_and_is_never_waited_for_again() {
        let table = own_table();
        let slot = open(table);
        let mut peer = Process::live();
        access_begun(slot.conn(), peer.pid());
        publish_region(table, 8);
        let returned = withdraw_in_background(table, 8);
        assert!(
            returned.recv_timeout(Duration::from_millis(100)).is_err(),
            "the free waits while the peer lives"
        );
        peer.kill();
        let killed = Instant::now();
        assert!(
            returned.recv_timeout(Duration::from_secs(5)).is_ok(),
            "the free did not return after the peer died"
        );
        let waited = killed.elapsed();
        // Its unfinished access is settled: no later free waits for it.
        let later: Vec<Duration> = (0..3).map(|i| time_withdraw(table, 9 + i)).collect();
        let conn = slot.conn();
        assert_eq!(
            conn.finished.load(Ordering::SeqCst),
            conn.begun.load(Ordering::SeqCst),
            "the dead peer's accesses are settled"
        );
        // Each of these returns at once (a spin of microseconds); the bound is generous for a
        // loaded machine and well under the 1 s a wait for a dead peer once took, each time.
        assert!(
            waited < Duration::from_millis(500),
            "the free returned {waited:?} after the peer died"
        );
        assert!(
            later.iter().all(|t| *t < Duration::from_millis(300)),
            "frees after the peer died took {later:?}"
        );
    }

    #[test]
    fn a_wait_for_a_peer_that_exited_before_it_began_ends_at_once() {
        let table = own_table();
        let slot = open(table);
        let peer = Process::exited();
        access_begun(slot.conn(), peer.pid());
        let took = time_withdraw(table, 12);
        assert!(
            took < Duration::from_millis(300),
            "a free waited {took:?} for a peer that had exited"
        );
        let again = time_withdraw(table, 13);
        assert!(
            again < Duration::from_millis(300),
            "the next free waited {again:?} for it again"
        );
    }

    #[test]
    fn a_slot_given_out_again_counts_no_access_of_its_previous_peer() {
        let table = own_table();
        let slot = open(table);
        let index = slot.index;
        let peer = Process::exited();
        // The previous peer died with accesses begun and not finished.
        for _ in 0..3 {
            access_begun(slot.conn(), peer.pid());
        }
        slot.conn().finished.fetch_add(1, Ordering::SeqCst);
        drop(slot);
        let again = open(table);
        assert_eq!(again.index, index, "the slot is given out again");
        let conn = again.conn();
        let (begun, finished) = (
            conn.begun.load(Ordering::SeqCst),
            conn.finished.load(Ordering::SeqCst),
        );
        // Settled, not reset: the counts only grow (a free that read them before waits right).
        assert!(finished >= begun && begun >= 3, "the new connection's slot counts its previous peer's accesses: begun {begun}, finished {finished}");
    }
}
