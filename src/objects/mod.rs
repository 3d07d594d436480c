//! Transport-independent DAT objects and their rules (states, in-use counts, limits).
//!
//! # Lock order
//!
//! A thread may block on a lock only while it holds locks listed above it (outer first);
//! locks named on one line are never held together, but in the order a "then" or an arrow
//! gives. A `try_lock` (or a wait bounded in time) may be
//! taken out of order: it cannot close a cycle. No thread holds two EPs', two EVDs' or two
//! links' locks of one kind at once. `tests/lock_order.rs` runs the pairs of calls that take
//! two objects' locks at once.
//!
//! 1. `tcp::cm::Connector::done` (a connect's outcome runs under it, on the progress thread).
//! 2. `Evd::sources`: a poll (dequeue, wait, `dat_evd_modify_cno`) holds it while its
//!    sources take everything below. Blocked on only by `Evd::detach` (a connection's end,
//!    with nothing else held but 1) and `Evd::set_cno`; polls try it. An EP attaches a link
//!    under its own lock through the leaf `Evd::joining` instead (the deadlock of 4172703).
//! 3. A source's own: `TcpLink::inbound` (polls try it, or wait 20 ms at most),
//!    `verbs::completions::CqSource::polling`.
//! 4. `TcpLink::writer`: blocked on under 3 (the peer's confirmation), never under `Ep::inner`
//!    (`Link::post` tries it there, or lets the EP go first). `Srq::waiting`.
//! 5. `Ep::receiving`, then `Ep::inner`.
//! 6. Below `Ep::inner` (taken under it, or under nothing), each taking only what follows it:
//!    `Srq::state` -> verbs SRQ `cookies`; `ServicePoint::listener` and `Cr::request` (the
//!    transport's listener and request); `Rmr::binding` -> `rmr::WINDOWS`; the handle table
//!    (read); `Ia::children`, `Ia::async_evd` (the EVD is taken out, its queue locked after);
//!    the link's `answers`, `held`, `stopped`, `timer` -> `phase`, `watch` -> `phase`; verbs
//!    `QPS`, `CmId::key` -> `cm::Channel::handlers`, `async_events::sinks`; a connect's or a
//!    handshake's `state` (`tcp::cm`). `rmr::WINDOWS` takes `CONTEXTS` (7) for a window's key.
//! 7. Regions: a segment's hold (`Lmr::hold_segment`: a slot of the lock-free `REGIONS`, or the
//!    region's `gate` read-locked) -> `lmr::CONTEXTS` -> `direct::exports` `writers`. A copy
//!    into or out of a region holds its `gate` for reading. The region's free write-locks its
//!    `gate`, then clears its slot under `CONTEXTS` (written) and waits for the slot's holds
//!    after letting it go (`RegionTable::wait_unheld`).
//! 8. Leaves: `Evd::joining`, `Evd::queue` (a CNO is triggered after it is let go),
//!    `Cno::state`, `lmr::WINDOW_KEYS`, `keys::BATCH`, `mappings::KEPT`, `lease::Lease::lent`,
//!    `direct::PEERS`, `exports` `slots`, the address handle tables, verbs `EXCHANGES` and
//!    `BY_CQ`; the engine's `timers` -> `sources`, its `deferred`, and `ENGINE`.
//!
//! Waits that are not locks: `dat_evd_wait` and `dat_cno_wait` sleep holding nothing; an
//! acknowledgement checked under `Ep::inner` waits for a writer's system call in progress
//! (`conn::Sent::through`), which holds the writer and takes nothing more; a free of a region
//! or a connection's end waits for the accesses a peer on this host began through the export
//! table (`exports::wait_for_accesses`), which take none of our locks.
//!
//! Rules that keep the order, each with its test in `tests/lock_order.rs` (the breaches it
//! found):
//! - a message lands under its segments' holds, taken one after another; a region's free
//!   therefore waits for its slot's holds only after it let go of `CONTEXTS`
//!   (`Lmr::forget`), and a region's `gate` is read recursively (a second segment of the
//!   region, or an atomic's answer, while a free waits to write it);
//! - `Cno::trigger` hands the consumer's OS Wait Proxy Agent to the progress thread, which
//!   calls it holding nothing (`Engine::defer`);
//! - a region's free waits for the accesses begun through each connection slot as counted
//!   when it looked; a slot given out again keeps its counts (settled, never reset);
//! - (not a lock, a race) a post that found an EP before `dat_ep_free` released it refuses
//!   once it holds the EP's lock: nothing would flush it.
pub mod cno;
pub mod conn_qual;
pub mod counters;
pub mod device_counters;
pub mod ep;
pub mod ep_state;
pub mod evd;
pub mod extension;
pub mod ia;
pub mod keys;
pub mod limits;
pub mod lmr;
pub mod pz;
pub mod region_table;
pub mod rmr;
pub mod sp;
pub mod srq;
pub mod wakeup;

use std::collections::VecDeque;
use std::ops::Deref;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Makes room in `queue`, now, for `limit` entries in all: pushes up to the limit then never
/// allocate (no allocation and copy on the data path).
pub fn make_room<T>(queue: &mut VecDeque<T>, limit: usize) {
    queue.reserve_exact(limit.saturating_sub(queue.len()));
}

/// How many other objects depend on an object: a PZ used by LMRs and EPs, an EVD fed by EPs...
/// Freeing an object whose count is not zero is refused with the `*_IN_USE` state error.
#[derive(Default, Debug)]
pub struct Users(AtomicUsize);

impl Users {
    pub fn count(&self) -> usize {
        self.0.load(Ordering::Acquire)
    }
    pub fn in_use(&self) -> bool {
        self.count() != 0
    }
}

/// Something that counts its users.
pub trait Counted {
    fn users(&self) -> &Users;
}

/// A counted reference: holding it marks the target in use; dropping it releases the use.
/// A dependent object (an LMR's PZ, an EP's EVDs) keeps its dependencies as `Held`.
pub struct Held<T: Counted>(Arc<T>);

impl<T: Counted> Held<T> {
    pub fn new(target: Arc<T>) -> Self {
        target.users().0.fetch_add(1, Ordering::AcqRel);
        Held(target)
    }
    pub fn arc(&self) -> &Arc<T> {
        &self.0
    }
}

impl<T: Counted> Clone for Held<T> {
    fn clone(&self) -> Self {
        Held::new(self.0.clone())
    }
}

impl<T: Counted> Deref for Held<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: Counted> Drop for Held<T> {
    fn drop(&mut self) {
        self.0.users().0.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Target(Users);
    impl Counted for Target {
        fn users(&self) -> &Users {
            &self.0
        }
    }

    #[test]
    fn held_counts_its_users() {
        let t = Arc::new(Target::default());
        assert!(!t.0.in_use());
        let a = Held::new(t.clone());
        let b = a.clone();
        assert_eq!(t.0.count(), 2);
        drop(a);
        drop(b);
        assert!(!t.0.in_use());
    }
}
