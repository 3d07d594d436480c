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
    /// Copies into the region in progress (`hold`): its removal waits for them.
    users: AtomicU32,
}

impl Slot {
    const fn empty() -> Slot {
        Slot {
            users: AtomicU32::new(0),
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
        RegionTable {
            slots: [const { Slot::empty() }; SLOTS],
        }
    }
}

impl Default for RegionTable {
    fn default() -> Self {
        RegionTable::new()
    }
}

/// A copy into a region in progress (see `RegionTable::hold`).
pub struct SlotHold<'a> {
    slot: &'a Slot,
}

impl Drop for SlotHold<'_> {
    fn drop(&mut self) {
        self.slot.users.fetch_sub(1, Ordering::SeqCst);
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

    /// Empties the slot of `context`, if it holds that region, then waits for the copies into
    /// it that began before (`hold`): once this returns, none is in progress. Writers must be
    /// serialized.
    pub fn remove(&self, context: u32) {
        if self.clear(context) {
            self.wait_unheld(context);
        }
    }

    /// Empties the slot of `context`, if it holds that region (true then): no hold finds it
    /// from now on. Writers must be serialized.
    pub fn clear(&self, context: u32) -> bool {
        let slot = self.slot(context);
        if slot.context.load(Ordering::Relaxed) != context {
            return false;
        }
        self.write(
            slot,
            0,
            Region {
                pz: 0,
                address: 0,
                length: 0,
                privileges: 0,
            },
        );
        true
    }

    /// Waits for the copies into the region of `context` that held its slot before `clear`
    /// emptied it. Called holding no lock: a copy may take the regions' map's lock for a
    /// segment after the one it holds.
    pub fn wait_unheld(&self, context: u32) {
        let slot = self.slot(context);
        // Against `hold`: a copy counted itself before it looked at the slot; one that looked
        // after the clearing found it empty, one before is counted here (a copy into a region
        // that took the slot since is waited for too: briefly).
        fence(Ordering::SeqCst);
        let mut spins = 0u32;
        while slot.users.load(Ordering::SeqCst) != 0 {
            // A copy takes microseconds (a segment's bytes, with no lock or system call).
            spins += 1;
            if spins < 100 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }

    /// The region registered under `context`, held registered for one copy into it (its
    /// removal waits until the hold is dropped): None when the table does not hold it (the
    /// caller's map may know it).
    pub fn hold(&self, context: u32) -> Option<(Region, SlotHold<'_>)> {
        let slot = self.slot(context);
        slot.users.fetch_add(1, Ordering::SeqCst);
        let hold = SlotHold { slot };
        fence(Ordering::SeqCst);
        match self.get(context) {
            Found::Region(r) => Some((r, hold)),
            Found::Unknown => None, // the hold is dropped
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
        Region {
            pz: n as usize,
            address: n * 4096,
            length: n,
            privileges: n as u32,
        }
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
    fn a_removal_waits_for_the_copies_holding_the_region() {
        static T: RegionTable = RegionTable::new();
        assert!(T.insert(9, region(1)));
        let (found, hold) = T.hold(9).expect("held");
        assert_eq!(found, region(1));
        let removed = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let remover = {
            let removed = removed.clone();
            std::thread::spawn(move || {
                T.remove(9);
                removed.store(true, Ordering::SeqCst);
            })
        };
        // The remover emptied the slot (new holds fail) and waits for ours.
        while T.get(9) != Found::Unknown {
            std::hint::spin_loop();
        }
        assert!(T.hold(9).is_none());
        assert!(!removed.load(Ordering::SeqCst));
        drop(hold);
        remover.join().unwrap();
        assert!(removed.load(Ordering::SeqCst));
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
