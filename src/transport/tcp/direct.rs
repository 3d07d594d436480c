//! Direct access between processes of one host: a peer's RDMA writes and reads reach our
//! registered memory by cross-memory attach (`process_vm_writev`/`readv`), carried out by the
//! peer's posting thread alone, with no thread of ours involved, as an RDMA device places
//! them while the target computes, polls memory, or is not scheduled at all. Connections to
//! other hosts (and peers that cannot reach us this way) keep the socket and the engine.
//!
//! What the peer may reach is ours to say, and it says it in shared memory: each process that
//! is a target keeps an export table in a `memfd`, which a peer maps after taking the file
//! from us with `pidfd_getfd` (allowed only to a process that could trace ours anyway, so the
//! table grants nothing a peer did not have). The table holds:
//!
//! - every registered region a peer may reach (context, zone, bounds, privileges), each slot a
//!   sequence lock, as `objects::region_table` keeps them;
//! - one slot per connection offered: open or not, the EP's protection zone, both ends'
//!   addresses (so a peer uses only the slot of its own connection), and two counters of the
//!   peer's accesses through it, begun and finished.
//!
//! The peer checks each access against the table as our inbound path would (key, bounds,
//! privilege, zone, connection open), and anything it cannot settle (a key the table lacks, a
//! refusal, a window's key, a failed copy) goes by the socket instead, where our checks give
//! the refusal its usual status. A region being freed is first taken out of the table, then
//! every access begun before waits to finish (the counters): once `dat_lmr_free` returns, no
//! peer writes there, as deregistering a verbs region waits for its accesses.
//!
//! The offer rides in the handshake's `Ready` frame of a side whose peer asked for it (its
//! connect request or accept flagged `DIRECT`: the peer runs on this host), so each side has
//! its direct path before its ESTABLISHED event; it names our process, the table's descriptor,
//! the connection's slot and a random cookie that the mapped table must hold.
//! `LIBDAT_DIRECT=0` turns the whole path off.

use std::net::SocketAddrV4;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};

use parking_lot::Mutex;

use super::wire::{flags, Header, Op, OFFER_COOKIE};
use crate::abi::DAT_LMR_TRIPLET;
use crate::objects::lmr::{self, Lmr};
use crate::objects::region_table::Region;
use crate::transport::sys::{self, debug};

const MAGIC: u64 = u64::from_le_bytes(*b"libdatD1");
/// Region slots: contexts are scattered keys, so their low bits spread them; a context whose
/// slot another region holds is reached through the socket.
const REGION_SLOTS: usize = 4096;
/// Connection slots: a connection offered none (more than this many at once) uses the socket.
const CONN_SLOTS: usize = 4096;

/// A connection slot's `state`: its generation (bumped each time the slot is given out), and
/// this bit while the connection is open.
const OPEN: u64 = 1;

/// How long a region being freed waits for a peer's access that began before (a copy takes
/// microseconds; a peer that died in the middle of one never finishes it).
const DRAIN_LIMIT_US: u64 = 1_000_000;

#[repr(C, align(64))]
struct RegionSlot {
    /// Odd while we change the slot.
    seq: AtomicU32,
    /// 0 when empty.
    context: AtomicU32,
    privileges: AtomicU32,
    _reserved: AtomicU32,
    pz: AtomicU64,
    address: AtomicU64,
    length: AtomicU64,
}

#[repr(C, align(64))]
struct ConnSlot {
    state: AtomicU64,
    /// The peer's accesses through this slot: begun, and finished (or given up).
    begun: AtomicU64,
    finished: AtomicU64,
    /// The EP's protection zone, by identity (regions name theirs the same way).
    pz: AtomicU64,
    /// Our end of the connection and the peer's (`address::pack`).
    local: AtomicU64,
    remote: AtomicU64,
}

#[repr(C)]
struct Table {
    magic: AtomicU64,
    /// The process whose memory the table describes.
    owner: AtomicU64,
    cookie: [AtomicU64; 2],
    /// Where the owner keeps the cookie in its own memory: a peer reads it there too, so a
    /// file that only says it is the owner's table is not taken for one.
    cookie_at: AtomicU64,
    _reserved: [AtomicU64; 3],
    regions: [RegionSlot; REGION_SLOTS],
    conns: [ConnSlot; CONN_SLOTS],
}

const TABLE_LEN: usize = std::mem::size_of::<Table>();
/// A table's file is a memfd sealed at its size.
const TABLE_SEALS: libc::c_int = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL;

/// A table mapped shared (ours, or a peer's).
struct Mapping {
    table: *const Table,
}

// SAFETY: the mapping is only read and written through atomics, from any thread.
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps `fd` (a table's file, `TABLE_LEN` bytes) shared, readable and writable.
    fn map(fd: &OwnedFd) -> Option<Mapping> {
        // SAFETY: a new shared mapping of a descriptor we own; the kernel picks the address.
        let p = unsafe {
            libc::mmap(std::ptr::null_mut(), TABLE_LEN, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd.as_raw_fd(), 0)
        };
        (p != libc::MAP_FAILED).then_some(Mapping { table: p as *const Table })
    }

    fn table(&self) -> &Table {
        // SAFETY: a live mapping of TABLE_LEN bytes, page-aligned, whose every field is an
        // atomic (any bytes are a valid value): another process writing it changes nothing
        // about its validity.
        unsafe { &*self.table }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: our mapping of TABLE_LEN bytes, unmapped once, when nothing refers to it.
        unsafe { libc::munmap(self.table as *mut libc::c_void, TABLE_LEN) };
    }
}

/// Whether the direct path is on (`LIBDAT_DIRECT=0` turns it off).
pub fn enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var("LIBDAT_DIRECT").map_or(true, |v| v != "0"))
}

/// Whether a connection between these two ends may use the direct path: the peer runs on this
/// host (a loopback address, or our own). The table check proves it later; this only spares
/// other hosts the offer.
pub fn wanted(local: SocketAddrV4, remote: SocketAddrV4) -> bool {
    enabled() && (remote.ip().is_loopback() || remote.ip() == local.ip())
}

mod address {
    use std::net::SocketAddrV4;

    pub fn pack(a: SocketAddrV4) -> u64 {
        (u64::from(u32::from(*a.ip())) << 16) | u64::from(a.port())
    }
}

// --- The target's side: our export table. ---------------------------------------------------

pub struct Exports {
    map: Mapping,
    file: OwnedFd,
    pid: u32,
    cookie: [u8; 16],
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

fn current_pid() -> u32 {
    // SAFETY: getpid has no arguments and cannot fail.
    unsafe { libc::getpid() as u32 }
}

static EXPORTS: OnceLock<Option<Exports>> = OnceLock::new();

/// The process's export table, made on first use with every region a peer may reach; None when
/// the path is off, the table could not be made, or the process is a child forked from the one
/// that made it (its copy of the table is its parent's).
pub fn exports() -> Option<&'static Exports> {
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
        .filter(|e| e.pid == current_pid())?;
    if made {
        e.table().cookie_at.store(e.cookie.as_ptr() as u64, Ordering::Release);
        // Regions registered from here on are published as they are; those before, now (a
        // region published twice is written the same twice).
        Lmr::each_remote_region(|context, region| e.publish(context, region));
    }
    Some(e)
}

/// The table if it exists (registration and release do not make it).
fn existing() -> Option<&'static Exports> {
    EXPORTS.get()?.as_ref().filter(|e| e.pid == current_pid())
}

/// A region a peer may reach was registered (called as it is, under the regions' lock).
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

impl Exports {
    fn create() -> Option<Exports> {
        // SAFETY: a NUL-terminated name and flags; returns a new descriptor or -1.
        let fd = unsafe { libc::memfd_create(c"libdat-direct".as_ptr(), libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING) };
        if fd < 0 {
            return None;
        }
        // SAFETY: a fresh descriptor nobody else owns.
        let file = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: our memfd, sized once (its pages are zero until written), then sealed at that
        // size: a peer knows a table from any other file by its seals.
        if unsafe { libc::ftruncate(file.as_raw_fd(), TABLE_LEN as libc::off_t) } != 0
            || unsafe { libc::fcntl(file.as_raw_fd(), libc::F_ADD_SEALS, TABLE_SEALS) } != 0
        {
            return None;
        }
        let map = Mapping::map(&file)?;
        let mut cookie = [0u8; 16];
        // SAFETY: getrandom writes at most 16 bytes into the 16-byte buffer.
        if unsafe { libc::getrandom(cookie.as_mut_ptr().cast(), cookie.len(), 0) } != cookie.len() as isize {
            return None;
        }
        let pid = current_pid();
        let t = map.table();
        t.owner.store(u64::from(pid), Ordering::Relaxed);
        t.cookie[0].store(u64::from_le_bytes(cookie[..8].try_into().expect("8 bytes")), Ordering::Relaxed);
        t.cookie[1].store(u64::from_le_bytes(cookie[8..].try_into().expect("8 bytes")), Ordering::Relaxed);
        t.magic.store(MAGIC, Ordering::Release);
        Some(Exports { map, file, pid, cookie, writers: Mutex::new(()), slots: Mutex::new(Slots::default()) })
    }

    fn table(&self) -> &Table {
        self.map.table()
    }

    fn publish(&self, context: u32, region: &Region) {
        if region.privileges & lmr::PRIV_REMOTE == 0 {
            return;
        }
        let _w = self.writers.lock();
        let slot = &self.table().regions[context as usize % REGION_SLOTS];
        let held = slot.context.load(Ordering::Relaxed);
        if held != 0 && held != context {
            return; // another region's slot: this one is reached through the socket
        }
        let seq = slot.seq.load(Ordering::Relaxed);
        slot.seq.store(seq | 1, Ordering::SeqCst);
        slot.context.store(context, Ordering::SeqCst);
        slot.privileges.store(region.privileges, Ordering::SeqCst);
        slot.pz.store(region.pz as u64, Ordering::SeqCst);
        slot.address.store(region.address, Ordering::SeqCst);
        slot.length.store(region.length, Ordering::SeqCst);
        slot.seq.store((seq | 1).wrapping_add(1), Ordering::SeqCst);
    }

    fn withdraw(&self, context: u32) {
        {
            let _w = self.writers.lock();
            let slot = &self.table().regions[context as usize % REGION_SLOTS];
            if slot.context.load(Ordering::Relaxed) != context {
                return; // never published (its slot was another's)
            }
            let seq = slot.seq.load(Ordering::Relaxed);
            slot.seq.store(seq | 1, Ordering::SeqCst);
            slot.context.store(0, Ordering::SeqCst);
            slot.privileges.store(0, Ordering::SeqCst);
            slot.seq.store((seq | 1).wrapping_add(1), Ordering::SeqCst);
        }
        // A peer's access marks itself begun before it reads the region's slot (both in one
        // total order with the clearing above): one that began after the clearing finds the
        // slot empty; one that began before is waited for here.
        let high = self.slots.lock().high as usize;
        for conn in &self.table().conns[..high] {
            let begun = conn.begun.load(Ordering::SeqCst);
            if conn.finished.load(Ordering::SeqCst) >= begun {
                continue;
            }
            let start = sys::monotonic_micros();
            while conn.finished.load(Ordering::SeqCst) < begun {
                if sys::monotonic_micros() - start > DRAIN_LIMIT_US {
                    if debug() {
                        eprintln!("libdat: a peer's direct access to region {context:#x} did not finish in 1 s (the peer died?)");
                    }
                    break;
                }
                sys::yield_now();
            }
        }
    }

    /// Opens a connection slot for a peer at `remote` of our EP of zone `pz` (its identity).
    fn open_slot(&'static self, pz: u64, local: SocketAddrV4, remote: SocketAddrV4) -> Option<ExportedSlot> {
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
        conn.local.store(address::pack(local), Ordering::Relaxed);
        conn.remote.store(address::pack(remote), Ordering::Relaxed);
        conn.state.store((generation << 1) | OPEN, Ordering::SeqCst);
        Some(ExportedSlot { exports: self, index, generation: generation as u32 })
    }
}

/// A connection's slot in our table, offered to its peer; closed as the connection ends,
/// given back as the link goes.
pub struct ExportedSlot {
    exports: &'static Exports,
    index: u32,
    generation: u32,
}

impl ExportedSlot {
    /// The connection ended: the peer's next access goes by the socket.
    pub fn close(&self) {
        let conn = &self.exports.table().conns[self.index as usize];
        conn.state.store(u64::from(self.generation) << 1, Ordering::SeqCst);
    }
}

impl Drop for ExportedSlot {
    fn drop(&mut self) {
        self.close();
        self.exports.slots.lock().free.push(self.index);
    }
}

// --- The initiator's side: a peer's table. ---------------------------------------------------

/// A peer process's table, mapped once for all our connections to it.
struct Peer {
    map: Mapping,
    pid: libc::pid_t,
    cookie: [u8; 16],
}

/// The peers mapped now (few: one per peer process on this host).
static PEERS: Mutex<Vec<Weak<Peer>>> = Mutex::new(Vec::new());

/// An offer of direct access, as a `Ready` flagged `DIRECT` carries it.
#[derive(Clone, Copy, Debug)]
pub struct Offer {
    pub pid: u32,
    pub fd: u32,
    pub slot: u32,
    pub generation: u32,
    pub cookie: [u8; OFFER_COOKIE as usize],
}

impl Offer {
    /// The `Ready` frame that carries the offer (its payload is the cookie).
    pub fn ready(&self) -> Header {
        let mut h = Header::new(Op::Ready);
        h.flags = flags::DIRECT;
        h.id = u64::from(self.pid);
        h.rkey = self.slot;
        h.remote_addr = (u64::from(self.fd) << 32) | u64::from(self.generation);
        h.payload_len = OFFER_COOKIE;
        h
    }

    /// The offer a `Ready` frame carries with its payload, if any.
    pub fn from_ready(h: &Header, payload: &[u8]) -> Result<Option<Offer>, MalformedOffer> {
        if h.flags & flags::DIRECT == 0 {
            return if payload.is_empty() { Ok(None) } else { Err(MalformedOffer) };
        }
        let cookie = payload.try_into().map_err(|_| MalformedOffer)?;
        Ok(Some(Offer {
            pid: u32::try_from(h.id).unwrap_or(0),
            fd: (h.remote_addr >> 32) as u32,
            slot: h.rkey,
            generation: h.remote_addr as u32,
            cookie,
        }))
    }
}

/// A `Ready` flagged `DIRECT` without its cookie, or with a payload and no flag.
#[derive(Debug)]
pub struct MalformedOffer;

/// Our offer to the peer at `remote` of a connection of ours at `local`, for an EP of zone `pz`
/// (its identity), and the connection's slot in our table; None when we cannot make one.
pub fn offer(pz: u64, local: SocketAddrV4, remote: SocketAddrV4) -> Option<(Offer, ExportedSlot)> {
    let exports = exports()?;
    let slot = exports.open_slot(pz, local, remote)?;
    let offer = Offer { pid: exports.pid, fd: exports.file.as_raw_fd() as u32, slot: slot.index, generation: slot.generation, cookie: exports.cookie };
    Some((offer, slot))
}

/// One connection's direct path into its peer.
pub struct Direct {
    peer: Arc<Peer>,
    slot: usize,
    /// The slot's state while our connection holds it.
    state: u64,
}

/// What a direct access came to.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Done: the bytes are in place.
    Done,
    /// Not for this path (a key the table lacks, a refusal, the connection no longer open): the
    /// socket carries it, and the peer's checks answer it.
    Socket,
    /// The path failed (the peer vanished, or we may no longer reach it): the socket carries
    /// this access and every later one.
    Off,
}

/// Takes up a peer's offer for the connection between `local` (ours) and `remote`: None unless
/// the table it names is the peer's, and the slot is open for this very connection.
pub fn attach(offer: &Offer, local: SocketAddrV4, remote: SocketAddrV4) -> Option<Direct> {
    if !enabled() || offer.slot as usize >= CONN_SLOTS {
        return None;
    }
    let peer = peer(offer)?;
    let conn = &peer.map.table().conns[offer.slot as usize];
    let state = (u64::from(offer.generation) << 1) | OPEN;
    let ours = conn.state.load(Ordering::SeqCst) == state
        && conn.local.load(Ordering::Relaxed) == address::pack(remote)
        && conn.remote.load(Ordering::Relaxed) == address::pack(local);
    ours.then_some(Direct { peer, slot: offer.slot as usize, state })
}

/// The peer's table, mapped now or earlier for another connection.
fn peer(offer: &Offer) -> Option<Arc<Peer>> {
    let pid = libc::pid_t::try_from(offer.pid).ok().filter(|p| *p > 0)?;
    let mut peers = PEERS.lock();
    peers.retain(|p| p.strong_count() > 0);
    if let Some(p) = peers.iter().filter_map(Weak::upgrade).find(|p| p.pid == pid && p.cookie == offer.cookie) {
        return Some(p);
    }
    let map = map_peer_table(pid, offer.fd)?;
    let t = map.table();
    let cookie = [t.cookie[0].load(Ordering::Relaxed).to_le_bytes(), t.cookie[1].load(Ordering::Relaxed).to_le_bytes()].concat();
    if t.magic.load(Ordering::Acquire) != MAGIC || t.owner.load(Ordering::Relaxed) != u64::from(offer.pid) || cookie[..] != offer.cookie[..] {
        return None;
    }
    // The owner keeps the same cookie in its own memory, where the table says.
    let mut kept = [0u8; OFFER_COOKIE as usize];
    let local = [libc::iovec { iov_base: kept.as_mut_ptr().cast(), iov_len: kept.len() }];
    let remote = [libc::iovec { iov_base: t.cookie_at.load(Ordering::Acquire) as *mut libc::c_void, iov_len: kept.len() }];
    // SAFETY: `local` is our 16-byte buffer, writable for the call; the kernel checks `remote`
    // against the peer's mappings.
    if unsafe { sys::process_vm_readv(pid, &local, &remote) } != Ok(kept.len()) || kept != offer.cookie {
        return None;
    }
    let p = Arc::new(Peer { map, pid, cookie: offer.cookie });
    peers.push(Arc::downgrade(&p));
    Some(p)
}

/// Takes descriptor `fd` of process `pid` (`pidfd_getfd`: only a process that could trace it
/// may) and maps it, if it is a memfd of a table's size, sealed as tables are.
fn map_peer_table(pid: libc::pid_t, fd: u32) -> Option<Mapping> {
    // SAFETY: pidfd_open takes a pid and flags, and returns a new descriptor or -1.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if pidfd < 0 {
        return None;
    }
    // SAFETY: a fresh descriptor nobody else owns.
    let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd as i32) };
    // SAFETY: pidfd_getfd takes our pidfd, a descriptor number of that process, and flags; it
    // returns a new descriptor of ours (close-on-exec) or -1.
    let got = unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), fd, 0) };
    if got < 0 {
        return None;
    }
    // SAFETY: a fresh descriptor nobody else owns.
    let file = unsafe { OwnedFd::from_raw_fd(got as i32) };
    // SAFETY: an all-zero stat is a valid buffer for fstat to fill.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat fills the stat we pass, for our descriptor.
    if unsafe { libc::fstat(file.as_raw_fd(), &mut st) } != 0
        || st.st_mode & libc::S_IFMT != libc::S_IFREG
        || st.st_size != TABLE_LEN as libc::off_t
        // SAFETY: F_GET_SEALS takes no argument; any descriptor may be asked.
        || unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GET_SEALS) } != TABLE_SEALS
    {
        return None;
    }
    Mapping::map(&file)
}

/// The most pieces one access copies: the largest DTO's segments, and the two pieces of the
/// peer's memory.
const MAX_IOV: usize = super::conn::MAX_PARTS;

impl Direct {
    /// Writes the bytes of `segments` (`total` of them, checked as local) at `address` of the
    /// peer's region `rkey`: the final byte last, after all the others (a program polling it
    /// sees the rest).
    pub fn write(&self, rkey: u32, address: u64, segments: &[DAT_LMR_TRIPLET], total: u64) -> Outcome {
        self.access(rkey, address, segments, total, lmr::PRIV_REMOTE_WRITE)
    }

    /// Reads `total` bytes at `address` of the peer's region `rkey` into `segments`.
    pub fn read(&self, rkey: u32, address: u64, segments: &[DAT_LMR_TRIPLET], total: u64) -> Outcome {
        self.access(rkey, address, segments, total, lmr::PRIV_REMOTE_READ)
    }

    fn access(&self, rkey: u32, address: u64, segments: &[DAT_LMR_TRIPLET], total: u64, privilege: u32) -> Outcome {
        if segments.len() > MAX_IOV {
            return Outcome::Socket;
        }
        let t = self.peer.map.table();
        let conn = &t.conns[self.slot];
        // Begun before anything is read: the peer waits for it to finish before a region it
        // takes out of the table is gone (see `Exports::withdraw`).
        conn.begun.fetch_add(1, Ordering::SeqCst);
        let outcome = self.checked_copy(t, conn, rkey, address, segments, total, privilege);
        conn.finished.fetch_add(1, Ordering::SeqCst);
        outcome
    }

    #[allow(clippy::too_many_arguments)]
    fn checked_copy(
        &self,
        t: &Table,
        conn: &ConnSlot,
        rkey: u32,
        address: u64,
        segments: &[DAT_LMR_TRIPLET],
        total: u64,
        privilege: u32,
    ) -> Outcome {
        if conn.state.load(Ordering::SeqCst) != self.state {
            return Outcome::Socket;
        }
        if total == 0 {
            return Outcome::Done; // reaches no region
        }
        let Some(region) = region(t, rkey) else { return Outcome::Socket };
        let inside = address >= region.address
            && address.checked_add(total).is_some_and(|end| end <= region.address.saturating_add(region.length));
        if region.privileges & privilege == 0 || region.pz != conn.pz.load(Ordering::Relaxed) as usize || !inside {
            return Outcome::Socket;
        }
        let mut local = [libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 }; MAX_IOV];
        let mut n = 0;
        for s in segments.iter().filter(|s| s.segment_length != 0) {
            local[n] = libc::iovec { iov_base: s.virtual_address as *mut libc::c_void, iov_len: s.segment_length as usize };
            n += 1;
        }
        let piece = |at: u64, len: u64| libc::iovec { iov_base: at as *mut libc::c_void, iov_len: len as usize };
        let done = if privilege == lmr::PRIV_REMOTE_WRITE {
            // The final byte in a piece of its own, copied after every other: a program that
            // polls it finds the rest in place.
            write_last_byte_last(self.peer.pid, &mut local[..n], piece(address, total - 1), piece(address + total - 1, 1))
        } else {
            // SAFETY: `local` names the caller's checked segments (registered, local write
            // privilege, kept by the consumer until the DTO completes); the kernel writes them
            // and reads the peer's pages, checking both address spaces itself.
            unsafe { sys::process_vm_readv(self.peer.pid, &local[..n], &[piece(address, total)]) }
        };
        match done {
            Ok(copied) if copied as u64 == total => Outcome::Done,
            // Part of it (a page the peer unmapped): the socket carries it whole.
            Ok(_) | Err(libc::EFAULT) => Outcome::Socket,
            Err(_) => Outcome::Off,
        }
    }
}

/// Copies `local` into the peer's `head` then `tail` (its final byte). The kernel copies the
/// pieces of one call in order, each a copy of its own; x86's stores are seen in the order they
/// were made, so one call orders them. Elsewhere the final byte goes in a second call.
fn write_last_byte_last(pid: libc::pid_t, local: &mut [libc::iovec], head: libc::iovec, tail: libc::iovec) -> sys::SysResult {
    if cfg!(target_arch = "x86_64") {
        let remote = [head, tail];
        let skip = usize::from(head.iov_len == 0);
        // SAFETY: `local` names the caller's checked segments (registered, local read
        // privilege, kept by the consumer until the DTO completes); the kernel reads them and
        // writes the peer's pages, checking both address spaces itself.
        return unsafe { sys::process_vm_writev(pid, local, &remote[skip..]) };
    }
    // The local byte that lands last: the end of the last segment, cut off the others.
    let Some(last) = local.last_mut() else { return Ok(0) };
    let byte = libc::iovec { iov_base: (last.iov_base as usize + last.iov_len - 1) as *mut libc::c_void, iov_len: 1 };
    last.iov_len -= 1;
    let mut first = 0;
    if head.iov_len != 0 {
        // SAFETY: as above, all but the final byte.
        first = unsafe { sys::process_vm_writev(pid, local, &[head])? };
        if first != head.iov_len {
            return Ok(first);
        }
        fence(Ordering::SeqCst);
    }
    // SAFETY: as above, the final byte.
    unsafe { sys::process_vm_writev(pid, &[byte], &[tail]) }.map(|n| first + n)
}

/// Region `rkey` as the peer's table holds it, read whole (its sequence lock).
fn region(t: &Table, rkey: u32) -> Option<Region> {
    let slot = &t.regions[rkey as usize % REGION_SLOTS];
    for _ in 0..64 {
        let seq = slot.seq.load(Ordering::SeqCst);
        if seq & 1 != 0 {
            std::hint::spin_loop();
            continue;
        }
        let context = slot.context.load(Ordering::SeqCst);
        let region = Region {
            privileges: slot.privileges.load(Ordering::SeqCst),
            pz: slot.pz.load(Ordering::SeqCst) as usize,
            address: slot.address.load(Ordering::SeqCst),
            length: slot.length.load(Ordering::SeqCst),
        };
        if slot.seq.load(Ordering::SeqCst) == seq {
            return (context == rkey && rkey != 0).then_some(region);
        }
    }
    None // the peer keeps changing it: the socket settles it
}
