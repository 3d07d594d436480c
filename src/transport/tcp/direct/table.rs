//! The export table's layout in shared memory, and its mapping. Every field is an atomic: the
//! owner and its peers change it from their own processes, and any bytes are a valid value, so
//! a peer that writes nonsense harms no one but its own connection.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::objects::region_table::Region;

pub const MAGIC: u64 = u64::from_le_bytes(*b"libdatD5");
/// Region slots: contexts are scattered keys, so their low bits spread them; a context whose
/// slot another region holds is reached through the socket.
pub const REGION_SLOTS: usize = 4096;
/// Connection slots: a connection offered none (more than this many at once) uses the socket.
pub const CONN_SLOTS: usize = 4096;
/// Receives of a connection's EP published to its peer at once (the front of its queue).
pub const RING: usize = 16;
/// The most segments a published receive has (one with more is not published: the messages
/// from it on go by the socket until it is used).
pub const RING_SEGMENTS: usize = 4;

/// A connection slot's `state`: its generation (bumped each time the slot is given out), and
/// this bit while the connection is open.
pub const OPEN: u64 = 1;

/// A receive's `length` when the peer's copy into it failed.
pub const FAILED: u64 = 1 << 63;
/// Set in a receive's `length` beside the message's length: the sender solicited the
/// receive's notification (DAT_COMPLETION_SOLICITED_WAIT_FLAG).
pub const SOLICITED: u64 = 1 << 62;

#[repr(C, align(64))]
pub struct RegionSlot {
    /// Odd while the owner changes the slot.
    pub seq: AtomicU32,
    /// 0 when empty.
    pub context: AtomicU32,
    pub privileges: AtomicU32,
    _reserved: AtomicU32,
    pub pz: AtomicU64,
    pub address: AtomicU64,
    pub length: AtomicU64,
}

impl RegionSlot {
    /// The region `context` as the slot holds it, read whole (its sequence lock); None when
    /// the slot holds another (or none), or keeps changing.
    pub fn read(&self, context: u32) -> Option<Region> {
        for _ in 0..64 {
            let seq = self.seq.load(Ordering::SeqCst);
            if seq & 1 != 0 {
                std::hint::spin_loop();
                continue;
            }
            let held = self.context.load(Ordering::SeqCst);
            let region = Region {
                privileges: self.privileges.load(Ordering::SeqCst),
                pz: self.pz.load(Ordering::SeqCst) as usize,
                address: self.address.load(Ordering::SeqCst),
                length: self.length.load(Ordering::SeqCst),
            };
            if self.seq.load(Ordering::SeqCst) == seq {
                return (held == context && context != 0).then_some(region);
            }
        }
        None
    }

    /// Writes the slot (the owner, its writers serialized): `context` 0 empties it.
    pub fn write(&self, context: u32, region: &Region) {
        let seq = self.seq.load(Ordering::Relaxed);
        self.seq.store(seq | 1, Ordering::SeqCst);
        self.context.store(context, Ordering::SeqCst);
        self.privileges.store(region.privileges, Ordering::SeqCst);
        self.pz.store(region.pz as u64, Ordering::SeqCst);
        self.address.store(region.address, Ordering::SeqCst);
        self.length.store(region.length, Ordering::SeqCst);
        self.seq.store((seq | 1).wrapping_add(1), Ordering::SeqCst);
    }
}

/// A segment of a published receive.
#[repr(C)]
pub struct RecvSegment {
    pub address: AtomicU64,
    pub length: AtomicU64,
    pub context: AtomicU64,
}

/// A published receive: the owner writes it, then `seq`; the peer that fills it writes
/// `length` and `stamp`, then `filled`.
#[repr(C, align(64))]
pub struct RecvDesc {
    /// The receive it describes (the connection's receives numbered from 1 in posting order).
    pub seq: AtomicU64,
    /// Set to `seq` by the peer once its message is in the receive.
    pub filled: AtomicU64,
    /// The message's length (`FAILED` when the copy failed), with `SOLICITED`.
    pub length: AtomicU64,
    pub count: AtomicU64,
    pub segments: [RecvSegment; RING_SEGMENTS],
    /// When it was filled: the table's `fills` as the peer marked it (see `Table::fills`).
    pub stamp: AtomicU64,
}

#[repr(C, align(64))]
pub struct ConnSlot {
    pub state: AtomicU64,
    /// The peer's accesses through this slot: begun, and finished (or given up).
    pub begun: AtomicU64,
    pub finished: AtomicU64,
    /// The EP's protection zone, by identity (regions name theirs the same way).
    pub pz: AtomicU64,
    /// Our end of the connection and the peer's (`pack`).
    pub local: AtomicU64,
    pub remote: AtomicU64,
    /// Receives published so far (by number), and taken so far, by the peer's messages or by
    /// ours through the socket (each claims the next by a compare-and-swap).
    pub published: AtomicU64,
    pub taken: AtomicU64,
    /// Nonzero while a thread of the owner polls the connection (it holds it on lease): a
    /// message the peer puts in a receive is found without a doorbell.
    pub polled: AtomicU64,
    /// Set by the peer once it took up the offer, to its process id (the owner watches that
    /// process while it waits for the peer's accesses: one that died never finishes its
    /// own); from then on it counts the frames it writes to the socket in `frames` (after
    /// each is written), so a thread of the owner that polls need not ask the socket while
    /// the count stands.
    pub attached: AtomicU64,
    pub frames: AtomicU64,
    pub ring: [RecvDesc; RING],
}

#[repr(C)]
pub struct Table {
    pub magic: AtomicU64,
    /// The process whose memory the table describes.
    pub owner: AtomicU64,
    pub cookie: [AtomicU64; 2],
    /// Where the owner keeps the cookie in its own memory: a peer reads it there too, so a
    /// file that only says it is the owner's table is not taken for one.
    pub cookie_at: AtomicU64,
    /// Receives filled so far, by all peers: each filler stamps its receive with the count it
    /// makes, just before marking it filled. Receives of several connections that complete on
    /// one EVD complete in stamp order (a fill that knew of another, filled before it, is
    /// stamped after it).
    pub fills: AtomicU64,
    _reserved: [AtomicU64; 2],
    pub regions: [RegionSlot; REGION_SLOTS],
    pub conns: [ConnSlot; CONN_SLOTS],
}

pub const TABLE_LEN: usize = std::mem::size_of::<Table>();
/// A table's file is a memfd sealed at its size.
pub const TABLE_SEALS: libc::c_int = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL;

/// An address and port in one word, as a slot names a connection's ends.
pub fn pack(a: std::net::SocketAddrV4) -> u64 {
    (u64::from(u32::from(*a.ip())) << 16) | u64::from(a.port())
}

/// A table mapped shared (ours, or a peer's).
pub struct Mapping {
    table: *const Table,
}

// SAFETY: the mapping is only read and written through atomics, from any thread.
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps `fd` (a table's file, `TABLE_LEN` bytes) shared, readable and writable.
    pub fn map(fd: &OwnedFd) -> Option<Mapping> {
        // SAFETY: a new shared mapping of a descriptor we own; the kernel picks the address.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                TABLE_LEN,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        (p != libc::MAP_FAILED).then_some(Mapping {
            table: p as *const Table,
        })
    }

    pub fn table(&self) -> &Table {
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
