//! The peer's side: its table, mapped once for all our connections to it, and one
//! connection's direct path into its memory (RDMA writes and reads, messages into its
//! published receives).

use std::net::SocketAddrV4;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{fence, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;

use super::table::*;
use super::{enabled, Offer};
use crate::abi::{Zeroable, DAT_LMR_TRIPLET};
use crate::objects::lmr;
use crate::runtime::sys;
use crate::transport::tcp::wire::OFFER_COOKIE;

/// A peer process's table, mapped once for all our connections to it.
struct Peer {
    map: Mapping,
    pid: libc::pid_t,
    cookie: [u8; OFFER_COOKIE as usize],
}

/// The peers mapped now (few: one per peer process on this host).
static PEERS: Mutex<Vec<Weak<Peer>>> = Mutex::new(Vec::new());

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
    /// Done: the bytes are in place. `doorbell`: a message is in the peer's receive and no
    /// thread of the peer polls the connection, so the peer's progress thread must be told (a
    /// frame by the socket).
    Done { doorbell: bool },
    /// Not for this path (a key the table lacks, a refusal, no receive published, the
    /// connection no longer open): the socket carries it, and the peer's checks answer it.
    Socket,
    /// The path failed (the peer vanished, or we may no longer reach it): the socket carries
    /// this access and every later one.
    Off,
    /// The copy into the receive a message took failed: the peer completes that receive in
    /// error, and the connection breaks.
    Failed,
}

const DONE: Outcome = Outcome::Done { doorbell: false };

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
        && conn.local.load(Ordering::Relaxed) == pack(remote)
        && conn.remote.load(Ordering::Relaxed) == pack(local);
    if !ours {
        return None;
    }
    // Our frames are counted from now on (see `ConnSlot::frames`), and the owner knows whose
    // accesses it waits for.
    conn.attached
        .store(u64::from(sys::current_pid()), Ordering::Release);
    Some(Direct {
        peer,
        slot: offer.slot as usize,
        state,
    })
}

/// The peer's table, mapped now or earlier for another connection.
fn peer(offer: &Offer) -> Option<Arc<Peer>> {
    let pid = libc::pid_t::try_from(offer.pid).ok().filter(|p| *p > 0)?;
    let mut peers = PEERS.lock();
    peers.retain(|p| p.strong_count() > 0);
    if let Some(p) = peers
        .iter()
        .filter_map(Weak::upgrade)
        .find(|p| p.pid == pid && p.cookie == offer.cookie)
    {
        return Some(p);
    }
    let map = map_peer_table(pid, offer.fd)?;
    let t = map.table();
    let cookie = [
        t.cookie[0].load(Ordering::Relaxed).to_le_bytes(),
        t.cookie[1].load(Ordering::Relaxed).to_le_bytes(),
    ]
    .concat();
    if t.magic.load(Ordering::Acquire) != MAGIC
        || t.owner.load(Ordering::Relaxed) != u64::from(offer.pid)
        || cookie[..] != offer.cookie[..]
    {
        return None;
    }
    // The owner keeps the same cookie in its own memory, where the table says.
    let mut kept = [0u8; OFFER_COOKIE as usize];
    let local = [libc::iovec {
        iov_base: kept.as_mut_ptr().cast(),
        iov_len: kept.len(),
    }];
    let remote = [libc::iovec {
        iov_base: t.cookie_at.load(Ordering::Acquire) as *mut libc::c_void,
        iov_len: kept.len(),
    }];
    // SAFETY: `local` is our 16-byte buffer, writable for the call; the kernel checks `remote`
    // against the peer's mappings.
    if unsafe { sys::process_vm_readv(pid, &local, &remote) } != Ok(kept.len())
        || kept != offer.cookie
    {
        return None;
    }
    let p = Arc::new(Peer {
        map,
        pid,
        cookie: offer.cookie,
    });
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
    let mut st = libc::stat::zeroed();
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

/// The most pieces one access copies from our side: the largest DTO's segments.
const MAX_IOV: usize = crate::transport::tcp::conn::MAX_PARTS;

/// A list of pieces of memory, on the stack.
struct Pieces {
    list: [libc::iovec; MAX_IOV + 1],
    n: usize,
}

impl Pieces {
    fn new() -> Pieces {
        Pieces {
            list: [libc::iovec {
                iov_base: std::ptr::null_mut(),
                iov_len: 0,
            }; MAX_IOV + 1],
            n: 0,
        }
    }

    fn push(&mut self, address: u64, length: u64) -> bool {
        if length == 0 {
            return true;
        }
        if self.n == self.list.len() {
            return false;
        }
        self.list[self.n] = libc::iovec {
            iov_base: address as *mut libc::c_void,
            iov_len: length as usize,
        };
        self.n += 1;
        true
    }

    /// Ours: the non-empty segments of a DTO (checked as local by the caller).
    fn of(segments: &[DAT_LMR_TRIPLET]) -> Option<Pieces> {
        let mut p = Pieces::new();
        segments
            .iter()
            .all(|s| p.push(s.virtual_address, u64::from(s.segment_length)))
            .then_some(p)
    }

    fn all(&self) -> &[libc::iovec] {
        &self.list[..self.n]
    }
}

impl Direct {
    /// Runs `access` as one of the peer's counted accesses: begun before anything of the table
    /// is read, so a region the peer takes out of it, or a connection it closes, waits for it
    /// to finish (see `Exports::withdraw`).
    fn counted<T>(&self, access: impl FnOnce(&Table, &ConnSlot) -> T) -> T {
        let t = self.peer.map.table();
        let conn = &t.conns[self.slot];
        conn.begun.fetch_add(1, Ordering::SeqCst);
        let outcome = access(t, conn);
        conn.finished.fetch_add(1, Ordering::SeqCst);
        outcome
    }

    /// A frame of ours went into the socket (after it did): the peer's poll looks there.
    pub fn wrote_frame(&self) {
        self.peer.map.table().conns[self.slot]
            .frames
            .fetch_add(1, Ordering::SeqCst);
    }

    /// Whether `length` bytes at `address` lie in the peer's region `context` with
    /// `privilege`, in the connection's zone.
    fn reaches(
        t: &Table,
        conn: &ConnSlot,
        context: u32,
        address: u64,
        length: u64,
        privilege: u32,
    ) -> bool {
        let Some(region) = t.regions[context as usize % REGION_SLOTS].read(context) else {
            return false;
        };
        let inside = address >= region.address
            && address
                .checked_add(length)
                .is_some_and(|end| end <= region.address.saturating_add(region.length));
        region.privileges & privilege != 0
            && region.pz == conn.pz.load(Ordering::Relaxed) as usize
            && inside
    }

    /// Writes the bytes of `segments` (`total` of them, checked as local) at `address` of the
    /// peer's region `rkey`: the final byte last, after all the others (a program polling it
    /// sees the rest).
    pub fn write(
        &self,
        rkey: u32,
        address: u64,
        segments: &[DAT_LMR_TRIPLET],
        total: u64,
    ) -> Outcome {
        let Some(mut local) = Pieces::of(segments) else {
            return Outcome::Socket;
        };
        self.counted(|t, conn| {
            if conn.state.load(Ordering::SeqCst) != self.state {
                return Outcome::Socket;
            }
            if total == 0 {
                return DONE; // reaches no region
            }
            if !Self::reaches(t, conn, rkey, address, total, lmr::PRIV_REMOTE_WRITE) {
                return Outcome::Socket;
            }
            let mut remote = Pieces::new();
            remote.push(address, total);
            outcome(
                write_last_byte_last(self.peer.pid, &mut local, &mut remote),
                total,
            )
        })
    }

    /// Reads `total` bytes at `address` of the peer's region `rkey` into `segments`.
    pub fn read(
        &self,
        rkey: u32,
        address: u64,
        segments: &[DAT_LMR_TRIPLET],
        total: u64,
    ) -> Outcome {
        let Some(local) = Pieces::of(segments) else {
            return Outcome::Socket;
        };
        self.counted(|t, conn| {
            if conn.state.load(Ordering::SeqCst) != self.state {
                return Outcome::Socket;
            }
            if total == 0 {
                return DONE;
            }
            if !Self::reaches(t, conn, rkey, address, total, lmr::PRIV_REMOTE_READ) {
                return Outcome::Socket;
            }
            let remote = [libc::iovec {
                iov_base: address as *mut libc::c_void,
                iov_len: total as usize,
            }];
            // SAFETY: `local` names the caller's checked segments (registered, local write
            // privilege, kept by the consumer until the DTO completes); the kernel writes them
            // and reads the peer's pages, checking both address spaces itself.
            outcome(
                unsafe { sys::process_vm_readv(self.peer.pid, local.all(), &remote) },
                total,
            )
        })
    }

    /// Puts a message (the bytes of `segments`, `total` of them, checked as local) in the
    /// peer's next receive, if it is published, has room, and its segments are the peer's
    /// registered memory with local write privilege in the connection's zone: the receive is
    /// claimed (a compare-and-swap against the peer's own claims for messages by the socket),
    /// filled with the final byte last, and marked filled with the length (and whether the
    /// send was `solicited`).
    pub fn send(&self, segments: &[DAT_LMR_TRIPLET], total: u64, solicited: bool) -> Outcome {
        let Some(mut local) = Pieces::of(segments) else {
            return Outcome::Socket;
        };
        self.counted(|t, conn| {
            if conn.state.load(Ordering::SeqCst) != self.state {
                return Outcome::Socket;
            }
            let n = conn.taken.load(Ordering::SeqCst) + 1;
            if conn.published.load(Ordering::Acquire) < n {
                return Outcome::Socket; // no receive published (or one of too many segments)
            }
            let d = &conn.ring[((n - 1) % RING as u64) as usize];
            if d.seq.load(Ordering::Acquire) != n {
                return Outcome::Socket;
            }
            // Where the message goes: the receive's segments, as far as it fills them, each
            // checked as our inbound path checks a receive's segments.
            let count = (d.count.load(Ordering::Relaxed) as usize).min(RING_SEGMENTS);
            let mut remote = Pieces::new();
            let mut rest = total;
            for s in &d.segments[..count] {
                if rest == 0 {
                    break;
                }
                let length = s
                    .length
                    .load(Ordering::Relaxed)
                    .min(u64::from(u32::MAX))
                    .min(rest);
                let (address, context) = (
                    s.address.load(Ordering::Relaxed),
                    s.context.load(Ordering::Relaxed) as u32,
                );
                if !Self::reaches(t, conn, context, address, length, lmr::PRIV_LOCAL_WRITE)
                    || !remote.push(address, length)
                {
                    return Outcome::Socket;
                }
                rest -= length;
            }
            if rest != 0 {
                return Outcome::Socket; // longer than the receive: the socket path refuses it
            }
            // The receive is ours once claimed: the segments read above were its (another
            // receive takes its place in the ring only after it was taken).
            if conn
                .taken
                .compare_exchange(n - 1, n, Ordering::SeqCst, Ordering::SeqCst)
                .is_err()
            {
                return Outcome::Socket;
            }
            let copied = if total == 0 {
                Ok(0)
            } else {
                write_last_byte_last(self.peer.pid, &mut local, &mut remote)
            };
            let failed = outcome(copied, total) != DONE;
            let asked = if solicited { SOLICITED } else { 0 };
            d.length.store(
                if failed { FAILED } else { total | asked },
                Ordering::Release,
            );
            // Stamped after the copy, before the mark: a fill this send knew of (its send
            // completed before this one was posted) has an earlier stamp.
            d.stamp.store(
                t.fills.fetch_add(1, Ordering::SeqCst) + 1,
                Ordering::Relaxed,
            );
            d.filled.store(n, Ordering::SeqCst);
            if failed {
                return Outcome::Failed;
            }
            // Against the peer's lease ending: it clears `polled`, then looks at its receives.
            Outcome::Done {
                doorbell: conn.polled.load(Ordering::SeqCst) == 0,
            }
        })
    }
}

/// What a copy of `total` bytes that returned `copied` came to.
fn outcome(copied: sys::SysResult, total: u64) -> Outcome {
    match copied {
        Ok(n) if n as u64 == total => DONE,
        // Part of it (a page the peer unmapped): the socket carries it whole.
        Ok(_) | Err(libc::EFAULT) => Outcome::Socket,
        Err(_) => Outcome::Off,
    }
}

/// Copies `local` into `remote` (pieces of the peer's memory as long as `local` in all), its
/// final byte after all the others. The kernel copies the pieces of one call in order, each a
/// copy of its own: with the final byte a piece of its own, x86's stores are seen in the order
/// they were made, so one call orders them. Elsewhere the final byte goes in a second call.
fn write_last_byte_last(
    pid: libc::pid_t,
    local: &mut Pieces,
    remote: &mut Pieces,
) -> sys::SysResult {
    // The peer's final byte, cut off its last piece.
    let Some(last) = remote.list[..remote.n].last_mut() else {
        return Ok(0);
    };
    let tail = last.iov_base as u64 + last.iov_len as u64 - 1;
    last.iov_len -= 1;
    if last.iov_len == 0 {
        remote.n -= 1;
    }
    if cfg!(target_arch = "x86_64") {
        remote.push(tail, 1);
        // SAFETY: `local` names the caller's checked segments (registered, local read
        // privilege, kept by the consumer until the DTO completes); the kernel reads them and
        // writes the peer's pages, checking both address spaces itself.
        return unsafe { sys::process_vm_writev(pid, local.all(), remote.all()) };
    }
    // Ours too: the local byte that lands last is cut off our last piece.
    let Some(mine) = local.list[..local.n].last_mut() else {
        return Ok(0);
    };
    let byte = libc::iovec {
        iov_base: (mine.iov_base as usize + mine.iov_len - 1) as *mut libc::c_void,
        iov_len: 1,
    };
    mine.iov_len -= 1;
    let mut first = 0;
    if remote.n != 0 {
        // SAFETY: as above, all but the final byte.
        first = unsafe { sys::process_vm_writev(pid, local.all(), remote.all())? };
        if first as u64 != remote.all().iter().map(|p| p.iov_len as u64).sum::<u64>() {
            return Ok(first);
        }
        fence(Ordering::SeqCst);
    }
    let tail = [libc::iovec {
        iov_base: tail as *mut libc::c_void,
        iov_len: 1,
    }];
    // SAFETY: as above, the final byte.
    unsafe { sys::process_vm_writev(pid, &[byte], &tail) }.map(|n| first + n)
}
