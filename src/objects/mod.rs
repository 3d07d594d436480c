//! Transport-independent DAT objects and their rules (states, in-use counts, limits).
//!
//! # Lock order
//!
//! Which lock may be taken while holding which, for the objects and the transports below them,
//! is written in one place: docs/architecture.md, section "Lock order". A change that takes a
//! lock in a new place follows it, or changes it there in the same commit;
//! `tests/lock_order.rs` runs the pairs of calls that take two objects' locks at once.
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
pub mod posting;
pub mod pz;
pub mod region_table;
pub mod requests;
pub mod rmr;
#[cfg(test)]
mod rules_tests;
pub mod seam;
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
