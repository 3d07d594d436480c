//! The order in which receives filled directly complete when several connections complete
//! their receives on one EVD: the order they were filled in, as a device's completion queue
//! has them in the order the messages arrived. Each connection's own receives complete in
//! its order anyway; across connections, a peer that waits for one send's completion before
//! it posts the next on another connection (or tells another process to) must not find the
//! later message completed before the earlier one.
//!
//! Every filler stamps its receive from one count in our table (`Table::fills`), after its
//! copy and before it marks the receive filled, and completes its send only after that: a fill
//! that knew of another is stamped after it, and whoever sees it filled sees the other filled
//! too (or taken). So a taker looks at every connection's filled receives twice, and
//! completes, in stamp order, those up to the last stamp its first look saw: everything filled
//! before those is in its second look. No taker waits for a stamp that is missing (a filler
//! that died between its stamp and its mark, or a peer that lies about stamps): at worst the
//! lying peer's own receives complete out of place.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;

use super::ExportedSlot;
use crate::objects::ep::Ep;

/// The connections whose receives complete on one DTO EVD (its transport resource), and
/// their takers, one at a time.
#[derive(Default)]
pub struct FillOrder {
    /// Held by a taker: two at once would interleave their completions. Taken before any
    /// EP's lock, after the EVD's sources (the lock order: docs/architecture.md).
    taking: Mutex<()>,
    members: Mutex<Vec<Member>>,
    /// How many members (read without the lock).
    count: AtomicUsize,
}

/// A connection whose peer fills our receives directly. Both weak: a link that goes without
/// leaving is skipped, and dropped at the next join or leave.
struct Member {
    slot: Weak<ExportedSlot>,
    ep: Weak<Ep>,
}

/// A member's filled receives as one look saw them: (receive number, stamp), in order, and
/// how many of them are taken.
struct Seen {
    ep: Arc<Ep>,
    filled: Vec<(u64, u64)>,
    next: usize,
}

impl Seen {
    fn head(&self) -> Option<u64> {
        self.filled.get(self.next).map(|&(_, stamp)| stamp)
    }
}

impl FillOrder {
    /// The connection of `slot` and `ep` publishes receives completing on this EVD.
    pub fn join(&self, slot: &Arc<ExportedSlot>, ep: &Arc<Ep>) {
        self.change(|members| {
            members.push(Member {
                slot: Arc::downgrade(slot),
                ep: Arc::downgrade(ep),
            })
        });
    }

    /// The connection of `slot` ended (after its last receives were taken).
    pub fn leave(&self, slot: &Arc<ExportedSlot>) {
        let gone = Arc::downgrade(slot);
        self.change(|members| members.retain(|m| !m.slot.ptr_eq(&gone)));
    }

    fn change(&self, how: impl FnOnce(&mut Vec<Member>)) {
        let mut members = self.members.lock();
        members.retain(|m| m.slot.strong_count() > 0);
        how(&mut members);
        self.count.store(members.len(), Ordering::Release);
    }

    /// Whether connections beyond `own` of them (the caller's own, 0 or 1) publish receives
    /// completing on this EVD: only then do takers need the order.
    pub fn shared_beyond(&self, own: usize) -> bool {
        self.count.load(Ordering::Acquire) > own
    }

    /// Completes every receive the members' peers filled, in the order they were filled:
    /// `take(ep, numbers)` takes those receives of `ep`'s, in order, under its lock, and says
    /// how many it took (it stops at one that is not its next, filled). `asking`: the
    /// connection whose poll this is, whose next receive, claimed by its peer and not yet
    /// marked filled, is waited for a moment, as a connection alone waits.
    pub fn take(&self, asking: Option<&ExportedSlot>, take: impl Fn(&Arc<Ep>, &[u64]) -> usize) {
        let _one = self.taking.lock();
        let mut waited = asking.is_none();
        loop {
            let Some(last_seen) = self
                .look()
                .iter()
                .filter_map(|s| s.filled.last())
                .map(|&(_, stamp)| stamp)
                .max()
            else {
                if !waited && asking.is_some_and(|slot| slot.next_filled_soon()) {
                    waited = true;
                    continue;
                }
                return;
            };
            // Everything filled before the first look's fills is in the second look.
            let mut seen = self.look();
            let mut took_any = false;
            let mut numbers = Vec::new();
            while let Some((first, stamp)) = seen
                .iter()
                .enumerate()
                .filter_map(|(i, s)| s.head().map(|h| (i, h)))
                .min_by_key(|&(_, h)| h)
            {
                if stamp > last_seen {
                    break; // filled after the first look: the next round sees what came before
                }
                let others = seen
                    .iter()
                    .enumerate()
                    .filter(|&(i, _)| i != first)
                    .filter_map(|(_, s)| s.head())
                    .min()
                    .unwrap_or(u64::MAX)
                    .min(last_seen);
                // This connection's receives up to the next of another's, under one lock.
                let s = &mut seen[first];
                numbers.clear();
                numbers.extend(
                    s.filled[s.next..]
                        .iter()
                        .take_while(|&&(_, stamp)| stamp <= others)
                        .map(|&(n, _)| n),
                );
                // The head is at most `others` (the least), so the run holds at least it.
                let took = take(&s.ep, &numbers);
                took_any |= took > 0;
                s.next = if took == numbers.len() {
                    s.next + took
                } else {
                    s.filled.len() // taken meanwhile, or never filled: the next round looks again
                };
            }
            if !took_any {
                return; // marks that no receive stands behind (a peer's lie): no spinning on them
            }
        }
    }

    /// Every member's filled receives, as they stand. The members are upgraded under the
    /// lock and looked at outside it: the last reference to a connection's slot may be ours
    /// for a moment, and its drop waits for the peer's accesses.
    fn look(&self) -> Vec<Seen> {
        let live: Vec<(Arc<ExportedSlot>, Arc<Ep>)> = self
            .members
            .lock()
            .iter()
            .filter_map(|m| Some((m.slot.upgrade()?, m.ep.upgrade()?)))
            .collect();
        live.into_iter()
            .filter_map(|(slot, ep)| {
                let mut filled = Vec::new();
                slot.filled(&mut filled);
                (!filled.is_empty()).then_some(Seen {
                    ep,
                    filled,
                    next: 0,
                })
            })
            .collect()
    }
}
