//! The handle table: every DAT object a C caller holds is an opaque integer cast to a pointer.
//!
//! A handle packs a magic byte, the object kind, a generation and a slab index. Lookup checks
//! all of them, so a NULL, random, freed, freed-and-reused, foreign or wrong-kind handle is
//! simply "not found" (the caller names the `DAT_INVALID_HANDLE` subtype), never a crash.
//! Objects live behind `Arc`, so a call in flight survives a concurrent free.

use std::any::Any;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};

use parking_lot::RwLock;
use slab::Slab;

use crate::abi::*;

/// The DAT object kinds, with the values of `DAT_HANDLE_TYPE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    Ia,
    Ep,
    Lmr,
    Rmr,
    Pz,
    Psp,
    Rsp,
    Cr,
    Cno,
    Evd,
    Srq,
    Csp,
}

impl Kind {
    const ALL: [Kind; 12] = [
        Kind::Ia,
        Kind::Ep,
        Kind::Lmr,
        Kind::Rmr,
        Kind::Pz,
        Kind::Psp,
        Kind::Rsp,
        Kind::Cr,
        Kind::Cno,
        Kind::Evd,
        Kind::Srq,
        Kind::Csp,
    ];

    pub fn handle_type(self) -> DAT_HANDLE_TYPE {
        let t = match self {
            Kind::Ia => dat_handle_type::DAT_HANDLE_TYPE_IA,
            Kind::Ep => dat_handle_type::DAT_HANDLE_TYPE_EP,
            Kind::Lmr => dat_handle_type::DAT_HANDLE_TYPE_LMR,
            Kind::Rmr => dat_handle_type::DAT_HANDLE_TYPE_RMR,
            Kind::Pz => dat_handle_type::DAT_HANDLE_TYPE_PZ,
            Kind::Psp => dat_handle_type::DAT_HANDLE_TYPE_PSP,
            Kind::Rsp => dat_handle_type::DAT_HANDLE_TYPE_RSP,
            Kind::Cr => dat_handle_type::DAT_HANDLE_TYPE_CR,
            Kind::Cno => dat_handle_type::DAT_HANDLE_TYPE_CNO,
            Kind::Evd => dat_handle_type::DAT_HANDLE_TYPE_EVD,
            Kind::Srq => dat_handle_type::DAT_HANDLE_TYPE_SRQ,
            Kind::Csp => dat_handle_type::DAT_HANDLE_TYPE_CSP,
        };
        t.into()
    }
}

/// A Rust type that DAT callers see through handles of one kind.
pub trait Object: Any + Send + Sync {
    const KIND: Kind;

    /// Where an object that must name itself (in a query, in an event) keeps its handle.
    fn self_handle(&self) -> Option<&SelfHandle> {
        None
    }

    /// Called once as the handle dies (freed, or its IA closed abruptly): wake waiters, stop
    /// listening, tear down a connection, let go of the objects it keeps in use. In-flight
    /// calls, and a thread's memory of its last lookup, may still hold the object.
    fn on_release(&self) {}
}

fn release_as<T: Object>(object: &(dyn Any + Send + Sync)) {
    if let Some(o) = object.downcast_ref::<T>() {
        o.on_release();
    }
}

/// An object's own handle, set once when it is registered.
#[derive(Default, Debug)]
pub struct SelfHandle(std::sync::atomic::AtomicUsize);

impl SelfHandle {
    pub fn get(&self) -> DAT_HANDLE {
        self.0.load(Ordering::Acquire) as DAT_HANDLE
    }
    fn set(&self, h: DAT_HANDLE) {
        self.0.store(h as usize, Ordering::Release);
    }
}

const MAGIC: u64 = 0xDA;
const MAGIC_SHIFT: u32 = 56;
const KIND_SHIFT: u32 = 48;
/// Set in the kind's byte (bit 55 of the handle). With the magic byte it keeps every handle
/// from being an address a program could read through (`DAT_HANDLE_TO_PROVIDER` dereferences
/// a handle, as a provider's objects start with a pointer to their provider): non-canonical
/// on x86-64, and on AArch64, which ignores the top byte, an address of the kernel's half.
/// Such a read faults at once instead of finding memory.
const KIND_MARK: u64 = 0x80;
const GEN_SHIFT: u32 = 24;
const FIELD_MASK: u64 = (1 << 24) - 1;

struct Slot {
    kind: Kind,
    generation: u32,
    object: Arc<dyn Any + Send + Sync>,
    release: fn(&(dyn Any + Send + Sync)),
    context: AtomicU64,
}

struct Table {
    slots: RwLock<Slab<Slot>>,
    next_generation: AtomicU32,
}

/// Counts removals from the table (bumped under its write lock): a lookup a thread remembers
/// (`api::edge::with_object`) holds while this count is what it was at the lookup.
static REMOVALS: AtomicU64 = AtomicU64::new(0);

/// How many handles have been removed so far.
pub fn removals() -> u64 {
    REMOVALS.load(Ordering::Acquire)
}

static TABLE: LazyLock<Table> = LazyLock::new(|| Table {
    slots: RwLock::new(Slab::new()),
    next_generation: AtomicU32::new(1),
});

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Decoded {
    kind: Kind,
    generation: u32,
    index: usize,
}

fn encode(d: Decoded) -> DAT_HANDLE {
    let raw = (MAGIC << MAGIC_SHIFT)
        | ((KIND_MARK | d.kind as u64) << KIND_SHIFT)
        | ((d.generation as u64 & FIELD_MASK) << GEN_SHIFT)
        | (d.index as u64 & FIELD_MASK);
    raw as usize as DAT_HANDLE
}

fn decode(handle: DAT_HANDLE) -> Option<Decoded> {
    let raw = handle as usize as u64;
    if raw >> MAGIC_SHIFT != MAGIC {
        return None;
    }
    let mark = (raw >> KIND_SHIFT) & 0xFF;
    let kind = *Kind::ALL.get(mark.wrapping_sub(KIND_MARK) as usize)?;
    Some(Decoded {
        kind,
        generation: ((raw >> GEN_SHIFT) & FIELD_MASK) as u32,
        index: (raw & FIELD_MASK) as usize,
    })
}

/// Registers `object` and returns its new handle; `None` when the table is full.
pub fn insert<T: Object>(object: Arc<T>) -> Option<DAT_HANDLE> {
    let mut slots = TABLE.slots.write();
    if slots.vacant_key() as u64 > FIELD_MASK {
        return None;
    }
    // Generations are 24 bits and never 0, so a stale handle to a reused slot fails lookup.
    let generation = loop {
        let g = TABLE.next_generation.fetch_add(1, Ordering::Relaxed) & FIELD_MASK as u32;
        if g != 0 {
            break g;
        }
    };
    let named = object.clone();
    let index = slots.insert(Slot {
        kind: T::KIND,
        generation,
        object,
        release: release_as::<T>,
        context: AtomicU64::new(0),
    });
    let h = encode(Decoded {
        kind: T::KIND,
        generation,
        index,
    });
    if let Some(own) = named.self_handle() {
        own.set(h);
    }
    Some(h)
}

fn find(handle: DAT_HANDLE, slots: &Slab<Slot>) -> Option<Decoded> {
    let d = decode(handle)?;
    let slot = slots.get(d.index)?;
    (slot.kind == d.kind && slot.generation == d.generation).then_some(d)
}

/// The object behind `handle` if it is a live handle of kind `T`.
pub fn get<T: Object>(handle: DAT_HANDLE) -> Option<Arc<T>> {
    let slots = TABLE.slots.read();
    let d = find(handle, &slots)?;
    if d.kind != T::KIND {
        return None;
    }
    slots[d.index].object.clone().downcast::<T>().ok()
}

/// The kind of any live handle.
pub fn kind_of(handle: DAT_HANDLE) -> Option<Kind> {
    let slots = TABLE.slots.read();
    find(handle, &slots).map(|d| d.kind)
}

/// Unregisters `handle` if it is a live handle of kind `T`; the handle is dead from then on.
pub fn remove<T: Object>(handle: DAT_HANDLE) -> Option<Arc<T>> {
    let mut slots = TABLE.slots.write();
    let d = find(handle, &slots)?;
    if d.kind != T::KIND {
        return None;
    }
    let slot = slots.remove(d.index);
    REMOVALS.fetch_add(1, Ordering::Release);
    drop(slots); // the release may touch the table
    (slot.release)(&*slot.object);
    slot.object.downcast::<T>().ok()
}

/// Unregisters a live handle of any kind (an IA's abrupt close frees what it owns).
pub fn remove_any(handle: DAT_HANDLE) -> bool {
    let mut slots = TABLE.slots.write();
    match find(handle, &slots) {
        Some(d) => {
            let slot = slots.remove(d.index);
            REMOVALS.fetch_add(1, Ordering::Release);
            drop(slots); // the release may touch the table
            (slot.release)(&*slot.object);
            true
        }
        None => false,
    }
}

/// The consumer context of a live handle (`dat_set_consumer_context`).
pub fn set_context(handle: DAT_HANDLE, context: u64) -> bool {
    let slots = TABLE.slots.read();
    match find(handle, &slots) {
        Some(d) => {
            slots[d.index].context.store(context, Ordering::Relaxed);
            true
        }
        None => false,
    }
}

/// The consumer context of a live handle; 0 until one is set.
pub fn context(handle: DAT_HANDLE) -> Option<u64> {
    let slots = TABLE.slots.read();
    find(handle, &slots).map(|d| slots[d.index].context.load(Ordering::Relaxed))
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Thing(u32);
    impl Object for Thing {
        const KIND: Kind = Kind::Pz;
    }
    struct Other;
    impl Object for Other {
        const KIND: Kind = Kind::Ep;
    }

    #[test]
    fn no_handle_is_an_address_a_program_could_read_through() {
        for kind in Kind::ALL {
            for (generation, index) in [(0, 0), (1, 0), (FIELD_MASK as u32, FIELD_MASK as usize)] {
                let raw = encode(Decoded {
                    kind,
                    generation,
                    index,
                }) as usize as u64;
                // x86-64 (4- and 5-level paging): bits 47 (56) to 63 all equal, or a fault.
                for top in [47, 56] {
                    let high = raw >> top;
                    assert!(high != 0 && high != (u64::MAX >> top), "{kind:?}: {raw:#x}");
                }
                // AArch64 ignores bits 56 to 63; bit 55 set is the kernel's half.
                assert_ne!(raw & (1 << 55), 0, "{kind:?}: {raw:#x}");
                assert_eq!(
                    decode(raw as usize as DAT_HANDLE),
                    Some(Decoded {
                        kind,
                        generation,
                        index
                    })
                );
            }
        }
        // The kind's mark is checked: without it, no kind.
        let h = insert(Arc::new(Thing(3))).unwrap();
        let unmarked = (h as usize as u64) & !(KIND_MARK << KIND_SHIFT);
        assert!(get::<Thing>(unmarked as usize as DAT_HANDLE).is_none());
        remove::<Thing>(h);
    }

    #[test]
    fn live_handle_finds_its_object() {
        let h = insert(Arc::new(Thing(7))).unwrap();
        assert!(!h.is_null());
        assert_eq!(get::<Thing>(h).unwrap().0, 7);
        assert_eq!(kind_of(h), Some(Kind::Pz));
        assert!(remove::<Thing>(h).is_some());
    }

    #[test]
    fn null_garbage_and_wrong_kind_are_refused() {
        assert!(get::<Thing>(std::ptr::null_mut()).is_none());
        assert!(get::<Thing>(0x1234_5678usize as DAT_HANDLE).is_none());
        assert!(get::<Thing>(usize::MAX as DAT_HANDLE).is_none());
        let h = insert(Arc::new(Thing(1))).unwrap();
        assert!(get::<Other>(h).is_none());
        assert!(remove::<Other>(h).is_none());
        assert!(get::<Thing>(h).is_some());
        remove::<Thing>(h);
    }

    #[test]
    fn freed_and_reused_slots_refuse_the_stale_handle() {
        let old = insert(Arc::new(Thing(1))).unwrap();
        remove::<Thing>(old).unwrap();
        assert!(get::<Thing>(old).is_none());
        assert!(remove::<Thing>(old).is_none());
        let new = insert(Arc::new(Thing(2))).unwrap();
        // Whether or not the slot was reused, the stale handle stays dead.
        assert_ne!(old, new);
        assert!(get::<Thing>(old).is_none());
        assert_eq!(get::<Thing>(new).unwrap().0, 2);
        remove::<Thing>(new);
    }

    #[test]
    fn context_follows_the_handle() {
        let h = insert(Arc::new(Thing(4))).unwrap();
        assert_eq!(context(h), Some(0));
        assert!(set_context(h, 99));
        assert_eq!(context(h), Some(99));
        assert!(remove_any(h));
        assert_eq!(context(h), None);
        assert!(!set_context(h, 1));
    }

    #[test]
    fn object_survives_a_free_while_in_use() {
        let h = insert(Arc::new(Thing(3))).unwrap();
        let held = get::<Thing>(h).unwrap();
        remove::<Thing>(h).unwrap();
        assert_eq!(held.0, 3);
    }
}
