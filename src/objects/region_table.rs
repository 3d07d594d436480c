//! What every data transfer checks its local segments against, readable without a lock: a
//! direct-mapped table of registered regions (zone, bounds, privileges) by context. Each slot
//! is a sequence lock: a reader copies the slot and retries elsewhere if a writer was there,
//! so the check of a segment takes no lock and writes no shared memory. Writers (registration
//! and the end of a region, both rare) are serialized by the caller.
//!
//! A context whose slot is taken by another region is not here: the caller keeps every region
//! in its map as well, and looks there on a miss.

use std::sync::atomic::{fence, AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// A region as an access is checked against it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    /// The protection zone, by identity.
    pub pz: usize,
    pub address: u64,
    pub length: u64,
    pub privileges: u32,
}

/// Slots in the table. Contexts are random keys, so their low bits spread them.
const SLOTS: usize = 1024;

struct Slot {
    /// Odd while a writer changes the slot.
    seq: AtomicU32,
    /// 0 when the slot is empty (no region has context 0).
    context: AtomicU32,
    pz: AtomicUsize,
    address: AtomicU64,
    length: AtomicU64,
    privileges: AtomicU32,
}

impl Slot {
    const fn empty() -> Slot {
        Slot {
            seq: AtomicU32::new(0),
            context: AtomicU32::new(0),
            pz: AtomicUsize::new(0),
            address: AtomicU64::new(0),
            length: AtomicU64::new(0),
            privileges: AtomicU32::new(0),
        }
    }
}

/// Built at compile time, so a static table needs no lazy initialisation (checked on every
/// look).
pub struct RegionTable {
    slots: [Slot; SLOTS],
}

impl RegionTable {
    pub const fn new() -> RegionTable {
        RegionTable { slots: [const { Slot::empty() }; SLOTS] }
    }
}

impl Default for RegionTable {
    fn default() -> Self {
        RegionTable::new()
    }
}

/// What a look in the table found.
#[derive(Debug, PartialEq, Eq)]
pub enum Found {
    Region(Region),
    /// Not in the table: the caller's map knows whether the region exists.
    Unknown,
}

impl RegionTable {
    fn slot(&self, context: u32) -> &Slot {
        &self.slots[context as usize % SLOTS]
    }

    /// The region registered under `context`, as it stood at one instant.
    pub fn get(&self, context: u32) -> Found {
        let slot = self.slot(context);
        let before = slot.seq.load(Ordering::Acquire);
        if before % 2 == 1 || slot.context.load(Ordering::Relaxed) != context || context == 0 {
            return Found::Unknown;
        }
        let region = Region {
            pz: slot.pz.load(Ordering::Relaxed),
            address: slot.address.load(Ordering::Relaxed),
            length: slot.length.load(Ordering::Relaxed),
            privileges: slot.privileges.load(Ordering::Relaxed),
        };
        // Pairs with the writer's release: if the sequence is unchanged, no write overlapped.
        fence(Ordering::Acquire);
        if slot.seq.load(Ordering::Relaxed) != before {
            return Found::Unknown;
        }
        Found::Region(region)
    }

    /// Whether a region of `context` would find its slot free (writers serialized, as for
    /// [`RegionTable::insert`]).
    pub fn slot_free(&self, context: u32) -> bool {
        self.slot(context).context.load(Ordering::Relaxed) == 0
    }

    /// Puts a region in its slot if the slot is free. Writers must be serialized.
    pub fn insert(&self, context: u32, region: Region) -> bool {
        let slot = self.slot(context);
        if slot.context.load(Ordering::Relaxed) != 0 {
            return false;
        }
        self.write(slot, context, region);
        true
    }

    /// Empties the slot of `context`, if it holds that region. Writers must be serialized.
    pub fn remove(&self, context: u32) {
        let slot = self.slot(context);
        if slot.context.load(Ordering::Relaxed) == context {
            self.write(slot, 0, Region { pz: 0, address: 0, length: 0, privileges: 0 });
        }
    }

    fn write(&self, slot: &Slot, context: u32, region: Region) {
        let seq = slot.seq.load(Ordering::Relaxed);
        slot.seq.store(seq.wrapping_add(1), Ordering::Relaxed);
        // Readers that see any field below also see the odd sequence number.
        fence(Ordering::Release);
        slot.context.store(context, Ordering::Relaxed);
        slot.pz.store(region.pz, Ordering::Relaxed);
        slot.address.store(region.address, Ordering::Relaxed);
        slot.length.store(region.length, Ordering::Relaxed);
        slot.privileges.store(region.privileges, Ordering::Relaxed);
        slot.seq.store(seq.wrapping_add(2), Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn region(n: u64) -> Region {
        Region { pz: n as usize, address: n * 4096, length: n, privileges: n as u32 }
    }

    #[test]
    fn a_region_is_found_until_it_is_removed() {
        let t = RegionTable::default();
        assert_eq!(t.get(77), Found::Unknown);
        assert!(t.insert(77, region(1)));
        assert_eq!(t.get(77), Found::Region(region(1)));
        t.remove(77);
        assert_eq!(t.get(77), Found::Unknown);
    }

    #[test]
    fn a_taken_slot_leaves_the_second_region_to_the_map() {
        let t = RegionTable::default();
        let other = 77 + SLOTS as u32;
        assert!(t.insert(77, region(1)));
        assert!(!t.insert(other, region(2)));
        assert_eq!(t.get(other), Found::Unknown);
        // Removing the absent one leaves the present one alone.
        t.remove(other);
        assert_eq!(t.get(77), Found::Region(region(1)));
    }

    #[test]
    fn readers_never_see_half_a_write() {
        let t = std::sync::Arc::new(RegionTable::default());
        let writer = {
            let t = t.clone();
            std::thread::spawn(move || {
                for n in 1..20_000u64 {
                    t.remove(5);
                    assert!(t.insert(5, region(n)));
                }
            })
        };
        while !writer.is_finished() {
            if let Found::Region(r) = t.get(5) {
                // Every field from one write.
                assert_eq!(r, region(r.length));
            }
        }
        writer.join().unwrap();
        assert_eq!(t.get(5), Found::Region(region(19_999)));
    }
}
