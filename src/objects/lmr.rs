//! Local Memory Regions: registered memory, found by handle locally and by context (the key
//! a peer names in an RDMA operation) from the transports. Every access a DTO or a peer asks
//! for is checked here against bounds, privileges and protection zone before a byte moves.

use nohash_hasher::{IntMap, IntSet};
use std::sync::{Arc, LazyLock, Weak};

use parking_lot::{Mutex, RwLock, RwLockReadGuard};

use super::ia::Ia;
use super::keys;
use super::pz::Pz;
use super::region_table::{Found, Region, RegionTable, SlotHold};
use super::{Counted, Held, Users};
use crate::abi::*;
use crate::handle::{Kind, Object, SelfHandle};

pub const PRIV_LOCAL_READ: u32 = dat_mem_priv_flags::DAT_MEM_PRIV_LOCAL_READ_FLAG as u32;
pub const PRIV_LOCAL_WRITE: u32 = dat_mem_priv_flags::DAT_MEM_PRIV_LOCAL_WRITE_FLAG as u32;
pub const PRIV_REMOTE_READ: u32 = dat_mem_priv_flags::DAT_MEM_PRIV_REMOTE_READ_FLAG as u32;
pub const PRIV_REMOTE_WRITE: u32 = dat_mem_priv_flags::DAT_MEM_PRIV_REMOTE_WRITE_FLAG as u32;
/// The IB extension's privilege: the peer's atomics may operate on the region.
pub const PRIV_REMOTE_ATOMIC: u32 = dat_ib_mem_priv_flags::DAT_IB_MEM_PRIV_REMOTE_ATOMIC as u32;
pub const PRIV_ALL: u32 = dat_mem_priv_flags::DAT_MEM_PRIV_ALL_FLAG as u32;
/// Every privilege a registration may ask for.
pub const PRIV_KNOWN: u32 = PRIV_ALL | PRIV_REMOTE_ATOMIC;
pub const PRIV_REMOTE: u32 = PRIV_REMOTE_READ | PRIV_REMOTE_WRITE | PRIV_REMOTE_ATOMIC;
/// The privileges that let the region's memory be written (by us for a DTO, or by a peer).
pub const PRIV_WRITES: u32 = PRIV_LOCAL_WRITE | PRIV_REMOTE_WRITE | PRIV_REMOTE_ATOMIC;

pub struct Lmr {
    pub ia: Arc<Ia>,
    pub pz: Held<Pz>,
    pub mem_type: dat_mem_type,
    /// For `DAT_MEM_TYPE_LMR`: the region this one was made from (kept in use).
    pub parent: Option<Held<Lmr>>,
    pub address: u64,
    pub length: u64,
    pub privileges: u32,
    pub va_type: dat_va_type,
    /// The key of this region: `lmr_context` for local IOVs and (TCP) `rmr_context` for peers.
    pub context: u32,
    /// The key peers name it by, when the transport made its own (verbs: the rkey).
    remote_context: Option<u32>,
    /// The transport's registration (verbs: the memory region), released with the handle.
    registration: parking_lot::Mutex<Option<crate::objects::seam::Resource>>,
    users: Users,
    handle: SelfHandle,
    /// True while the region is registered. A transport writing a peer's bytes into it (or
    /// sending them from it) holds it for reading, a piece at a time; `dat_lmr_free` takes it
    /// for writing, so once it returns no byte moves through the region (as deregistering
    /// waits for a verbs region's accesses in flight).
    gate: RwLock<bool>,
}

impl Object for Lmr {
    const KIND: Kind = Kind::Lmr;
    fn self_handle(&self) -> Option<&SelfHandle> {
        Some(&self.handle)
    }
    /// The handle died: the region is deregistered at once, whoever still holds the object.
    fn on_release(&self) {
        *self.gate.write() = false;
        self.forget();
        crate::objects::seam::regions::released(self.context);
        drop(self.registration.lock().take());
    }
}

impl Counted for Lmr {
    fn users(&self) -> &Users {
        &self.users
    }
}

/// Why an access was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessError {
    /// No region has that context.
    UnknownContext,
    /// Outside the region.
    Bounds,
    /// The region lacks the privilege.
    Privilege,
    /// The region is in another protection zone.
    Protection,
}

/// A registered region as its context finds it: what an access is checked against (copied,
/// so a check takes no reference), and the region itself.
struct Entry {
    lmr: Weak<Lmr>,
    /// The protection zone, by identity (the region holds it, so it stays unique).
    pz: *const Pz,
    address: u64,
    length: u64,
    privileges: u32,
}

// SAFETY: `pz` is compared, never dereferenced.
unsafe impl Send for Entry {}
// SAFETY: as above.
unsafe impl Sync for Entry {}

/// Every live region by context. Contexts are random keys (`free_key`), or a device's, so
/// they need no hashing; lookups run on every DTO and every peer access.
static CONTEXTS: LazyLock<RwLock<IntMap<u32, Entry>>> = LazyLock::new(Default::default);
/// The same regions where a segment check finds them without a lock (most of them: those whose
/// slot was free). Written only under the write lock of `CONTEXTS`.
static REGIONS: RegionTable = RegionTable::new();
/// The contexts of the RMR windows we check peers' accesses to ourselves (TCP), which no
/// region's context may equal, nor another window's. Taken under `CONTEXTS` (a leaf lock).
static WINDOW_KEYS: LazyLock<Mutex<IntSet<u32>>> = LazyLock::new(Default::default);

/// How many random keys a registration draws for one whose slot in `REGIONS` is free, before
/// it takes any unused key (the map finds it then).
const SLOT_TRIES: usize = 4;

/// A fresh random key, neither 0 nor that of a live region or window: a peer that knows other
/// keys cannot derive it. Called under the write lock of `CONTEXTS`.
fn free_key(contexts: &IntMap<u32, Entry>) -> u32 {
    let windows = WINDOW_KEYS.lock();
    let mut source = keys::source();
    pick_key(
        || source.key(),
        |key| contexts.contains_key(&key) || windows.contains(&key),
        |key| REGIONS.slot_free(key),
    )
}

/// The first key `draw` gives that is not 0 nor `taken`, and among the first `SLOT_TRIES`
/// draws only one whose slot is free.
fn pick_key(
    mut draw: impl FnMut() -> u32,
    taken: impl Fn(u32) -> bool,
    slot_free: impl Fn(u32) -> bool,
) -> u32 {
    let mut tries = 0;
    loop {
        let key = draw();
        tries += 1;
        if key != 0 && !taken(key) && (tries > SLOT_TRIES || slot_free(key)) {
            return key;
        }
    }
}

/// A fresh random key for an RMR window we check ourselves, neither 0 nor that of a live
/// region or window; it stays taken until [`release_window_key`].
pub(crate) fn claim_window_key() -> u32 {
    let contexts = CONTEXTS.read();
    let mut windows = WINDOW_KEYS.lock();
    let mut source = keys::source();
    let key = pick_key(
        || source.key(),
        |key| contexts.contains_key(&key) || windows.contains(&key),
        |_| true,
    );
    windows.insert(key);
    key
}

/// The window of `key` (from [`claim_window_key`]) is closed.
pub(crate) fn release_window_key(key: u32) {
    WINDOW_KEYS.lock().remove(&key);
}

/// Why memory cannot be registered as asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemoryRefusal {
    /// The range starts where nothing is mapped.
    Unmapped,
    /// It runs past the end of what is mapped.
    RunsOff,
    /// It is mapped without an access the privileges need (read, for any region; write, for
    /// a privilege that writes).
    Protection,
}

impl From<MemoryRefusal> for crate::error::DatError {
    /// `dat_lmr_create`'s code: an invalid parameter, naming the region's description (3), its
    /// length (4) or the privileges (6).
    fn from(r: MemoryRefusal) -> Self {
        crate::error::DatError::invalid_arg(match r {
            MemoryRefusal::Unmapped => 3,
            MemoryRefusal::RunsOff => 4,
            MemoryRefusal::Protection => 6,
        })
    }
}

/// Checks that `length` bytes at `address` are memory the process may access as `privileges`
/// say, as pinning them for a verbs registration would: all mapped, readable (any region may
/// be read locally), and writable where a privilege lets us or a peer write (local or remote
/// write, the remote atomics). Returns whether the memory is writable. `length` is not 0.
pub fn check_memory(address: u64, length: u64, privileges: u32) -> Result<bool, MemoryRefusal> {
    let access = crate::runtime::mappings::access(address, length).map_err(|u| {
        if u.at == address {
            MemoryRefusal::Unmapped
        } else {
            MemoryRefusal::RunsOff
        }
    })?;
    if !access.read || (privileges & PRIV_WRITES != 0 && !access.write) {
        return Err(MemoryRefusal::Protection);
    }
    Ok(access.write)
}

impl Lmr {
    /// Registers a region; `registration`: the transport's own (its keys become the
    /// contexts), else the contexts are made here. None when the transport's key is one a
    /// live region of another transport already has.
    #[allow(clippy::too_many_arguments)]
    pub fn register(
        ia: Arc<Ia>,
        pz: Arc<Pz>,
        mem_type: dat_mem_type,
        parent: Option<Arc<Lmr>>,
        address: u64,
        length: u64,
        privileges: u32,
        va_type: dat_va_type,
        registration: Option<crate::objects::seam::Registration>,
    ) -> Option<Arc<Lmr>> {
        let mut contexts = CONTEXTS.write();
        let (context, remote_context, registration) = match registration {
            Some(r)
                if contexts.contains_key(&r.lmr_context)
                    || WINDOW_KEYS.lock().contains(&r.lmr_context) =>
            {
                return None
            }
            Some(r) => (r.lmr_context, Some(r.rmr_context), Some(r.keep)),
            None => (free_key(&contexts), None, None),
        };
        let lmr = Arc::new(Lmr {
            ia,
            pz: Held::new(pz),
            mem_type,
            parent: parent.map(Held::new),
            address,
            length,
            privileges,
            va_type,
            context,
            remote_context,
            registration: parking_lot::Mutex::new(registration),
            users: Users::default(),
            handle: SelfHandle::default(),
            gate: RwLock::new(true),
        });
        let entry = Entry {
            lmr: Arc::downgrade(&lmr),
            pz: Arc::as_ptr(lmr.pz.arc()),
            address,
            length,
            privileges,
        };
        let region = Region {
            pz: entry.pz as usize,
            address,
            length,
            privileges,
        };
        REGIONS.insert(lmr.context, region);
        crate::objects::seam::regions::registered(lmr.context, &region);
        contexts.insert(lmr.context, entry);
        drop(contexts);
        Some(lmr)
    }

    pub fn handle(&self) -> DAT_LMR_HANDLE {
        self.handle.get()
    }

    /// Holds the region registered for one access (a transport's piece of a peer's RDMA):
    /// None once it was freed.
    pub fn access(&self) -> Option<RwLockReadGuard<'_, bool>> {
        // Recursive: a thread that holds the gate for one access (an atomic) may look again
        // (its answer's region) while the free waits to write it.
        let g = self.gate.read_recursive();
        (*g).then_some(g)
    }

    /// No context finds the region any more.
    fn forget(&self) {
        let cleared = {
            let mut contexts = CONTEXTS.write();
            if contexts
                .get(&self.context)
                .is_some_and(|e| std::ptr::eq(e.lmr.as_ptr(), self))
            {
                contexts.remove(&self.context);
                REGIONS.clear(self.context)
            } else {
                false
            }
        };
        // Outside the map's lock: a copy that holds this region's slot may take it for its
        // next segment before it lets go.
        if cleared {
            REGIONS.wait_unheld(self.context);
        }
    }

    pub fn pz(&self) -> &Arc<Pz> {
        self.pz.arc()
    }

    /// The transport's registration of the region (verbs: its memory region).
    pub fn registration(&self) -> Option<crate::objects::seam::Resource> {
        self.registration.lock().clone()
    }

    /// The `rmr_context` handed to the consumer: generated only when the region grants a
    /// remote privilege (`dat_lmr_create(3DAT)`), else 0.
    pub fn rmr_context(&self) -> u32 {
        if self.privileges & PRIV_REMOTE != 0 {
            self.remote_context.unwrap_or(self.context)
        } else {
            0
        }
    }

    /// Calls `f` with every live region, under the regions' lock: none is registered or
    /// forgotten meanwhile.
    pub fn each_region(mut f: impl FnMut(u32, &Region)) {
        let contexts = CONTEXTS.read();
        for (context, e) in contexts.iter() {
            f(
                *context,
                &Region {
                    pz: e.pz as usize,
                    address: e.address,
                    length: e.length,
                    privileges: e.privileges,
                },
            );
        }
    }

    /// The live region whose context is `context` (as an `lmr_context`, for local IOVs).
    pub fn by_context(context: u32) -> Option<Arc<Lmr>> {
        CONTEXTS.read().get(&context).and_then(|e| e.lmr.upgrade())
    }

    /// The live region a peer names with `rmr_context`: only regions that grant a remote
    /// privilege have one.
    pub fn lookup_rmr_context(context: u32) -> Option<Arc<Lmr>> {
        Lmr::by_context(context).filter(|l| l.privileges & PRIV_REMOTE != 0)
    }

    /// A local IOV segment of a DTO posted on an EP of zone `pz`: bounds, `privilege`
    /// (`PRIV_LOCAL_READ` for what is sent, `PRIV_LOCAL_WRITE` for what is received) and zone.
    pub fn check_local(
        &self,
        address: u64,
        length: u64,
        privilege: u32,
        pz: &Arc<Pz>,
    ) -> Result<(), AccessError> {
        self.check(
            address,
            length,
            privilege & (PRIV_LOCAL_READ | PRIV_LOCAL_WRITE),
            pz,
        )
    }

    /// An access a peer asks for through an EP of zone `pz`: bounds, `privilege`
    /// (`PRIV_REMOTE_READ`, `PRIV_REMOTE_WRITE` or `PRIV_REMOTE_ATOMIC`) and zone.
    pub fn check_remote(
        &self,
        address: u64,
        length: u64,
        privilege: u32,
        pz: &Arc<Pz>,
    ) -> Result<(), AccessError> {
        self.check(address, length, privilege & PRIV_REMOTE, pz)
    }

    /// Checks `[address, address + length)` against this region's bounds, privileges and
    /// protection zone.
    pub fn check(
        &self,
        address: u64,
        length: u64,
        privilege: u32,
        pz: &Arc<Pz>,
    ) -> Result<(), AccessError> {
        let region = (
            Arc::as_ptr(self.pz.arc()),
            self.address,
            self.length,
            self.privileges,
        );
        check_access(region, address, length, privilege, pz)
    }

    /// Finds the live region a segment names and checks the access, as one step (without
    /// taking a reference: this runs for every segment of every DTO).
    pub fn check_segment(
        context: u32,
        address: u64,
        length: u64,
        privilege: u32,
        pz: &Arc<Pz>,
    ) -> Result<(), AccessError> {
        match REGIONS.get(context) {
            Found::Region(r) => check_access(
                (r.pz as *const Pz, r.address, r.length, r.privileges),
                address,
                length,
                privilege,
                pz,
            ),
            Found::Unknown => Lmr::check_segment_in_map(context, address, length, privilege, pz),
        }
    }

    /// [`Lmr::check_segment`] for a segment the transport is about to copy a peer's bytes
    /// into: the region stays registered until the hold is dropped (`dat_lmr_free` waits for
    /// it), so once the free returns no byte lands there.
    pub fn hold_segment(
        context: u32,
        address: u64,
        length: u64,
        privilege: u32,
        pz: &Arc<Pz>,
    ) -> Result<SegmentHold, AccessError> {
        if let Some((r, hold)) = REGIONS.hold(context) {
            check_access(
                (r.pz as *const Pz, r.address, r.length, r.privileges),
                address,
                length,
                privilege,
                pz,
            )?;
            return Ok(SegmentHold::Table(hold));
        }
        Lmr::hold_segment_in_map(context, address, length, privilege, pz)
    }

    /// [`Lmr::hold_segment`] for a region the lock-free table does not hold (or none): the
    /// region itself, its gate held for reading.
    #[cold]
    fn hold_segment_in_map(
        context: u32,
        address: u64,
        length: u64,
        privilege: u32,
        pz: &Arc<Pz>,
    ) -> Result<SegmentHold, AccessError> {
        let lmr = Lmr::by_context(context).ok_or(AccessError::UnknownContext)?;
        lmr.check(address, length, privilege, pz)?;
        // Recursive: a message may fill two segments of one region (see `access`).
        let gate = lmr.gate.read_recursive();
        if !*gate {
            return Err(AccessError::UnknownContext); // freed meanwhile
        }
        // Released by the hold's drop (the guard borrows the region the hold owns).
        std::mem::forget(gate);
        Ok(SegmentHold::Region(lmr))
    }

    /// [`Lmr::check_segment`] for a region the lock-free table does not hold (or none).
    #[cold]
    fn check_segment_in_map(
        context: u32,
        address: u64,
        length: u64,
        privilege: u32,
        pz: &Arc<Pz>,
    ) -> Result<(), AccessError> {
        let contexts = CONTEXTS.read();
        let e = contexts.get(&context).ok_or(AccessError::UnknownContext)?;
        if e.lmr.strong_count() == 0 {
            return Err(AccessError::UnknownContext); // on its way out
        }
        check_access(
            (e.pz, e.address, e.length, e.privileges),
            address,
            length,
            privilege,
            pz,
        )
    }
}

/// A segment held registered for one copy into it (`Lmr::hold_segment`).
pub enum SegmentHold {
    Table(SlotHold<'static>),
    /// A region the table does not hold, with its gate held for reading.
    Region(Arc<Lmr>),
}

impl Drop for SegmentHold {
    fn drop(&mut self) {
        if let SegmentHold::Region(lmr) = self {
            // SAFETY: `hold_segment_in_map` took the gate for reading and forgot its guard;
            // this releases that read lock, once.
            unsafe { lmr.gate.force_unlock_read() };
        }
    }
}

/// How many bytes a DTO's segments hold together.
pub fn total_length(segments: &[DAT_LMR_TRIPLET]) -> u64 {
    segments.iter().map(|s| u64::from(s.segment_length)).sum()
}

/// Checks `[address, address + length)` against a region (its zone, start, length and
/// privileges): bounds, `privilege` and protection zone.
fn check_access(
    (region_pz, start, region_length, privileges): (*const Pz, u64, u64, u32),
    address: u64,
    length: u64,
    privilege: u32,
    pz: &Arc<Pz>,
) -> Result<(), AccessError> {
    if region_pz != Arc::as_ptr(pz) {
        return Err(AccessError::Protection);
    }
    let end = address.checked_add(length).ok_or(AccessError::Bounds)?;
    if address < start || end > start.saturating_add(region_length) {
        return Err(AccessError::Bounds);
    }
    // Every registration may be read locally, as with verbs (where local read is not a flag
    // at all): programs send from regions registered with local write only.
    let needed = privilege & !PRIV_LOCAL_READ;
    if privileges & needed != needed {
        return Err(AccessError::Privilege);
    }
    Ok(())
}

impl Drop for Lmr {
    fn drop(&mut self) {
        self.forget();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_never_0_nor_taken_and_prefers_a_free_slot() {
        let taken = |key| key == 5 || key == 6;
        let slot_free = |key| key % 2 == 1;
        let pick = |draws: &[u32]| {
            let mut draws = draws.iter().copied();
            pick_key(
                || draws.next().expect("a key before the draws ran out"),
                taken,
                slot_free,
            )
        };
        assert_eq!(
            pick(&[0, 5, 6, 8, 9]),
            9,
            "0, taken and busy-slot keys are passed over"
        );
        assert_eq!(
            pick(&[2, 4, 8, 10, 12]),
            12,
            "after a few draws a busy slot will do"
        );
        assert_eq!(
            pick(&[2, 4, 8, 10, 0, 5, 14]),
            14,
            "never 0 nor a taken key"
        );
    }
}
