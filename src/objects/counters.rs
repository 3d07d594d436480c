//! The IB extension's counters (`dat_ib_query_counters`, `dat_ib_print_counters`), kept by
//! every IA, EP and EVD as OpenFabrics' counters build keeps them: the objects an IA made and
//! freed, its connection requests and connection outcomes, an EP's posts and receives with
//! their bytes, an EVD's waits and dequeues. Relaxed atomic additions: a counter is a
//! statistic, never a synchronization point; an EP's posts are counted under the EP's lock
//! the post holds anyway (`Tally`), a plain addition on the path where a locked one costs
//! most. The device's own counts (the IA's CM_REQ_TX and the like, link and diagnostic
//! counters) are sampled by `device_counters`.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::abi::*;

pub const IA_COUNTERS: usize = dat_ia_counters::DCNT_IA_ALL_COUNTERS as usize;
pub const EP_COUNTERS: usize = dat_ep_counters::DCNT_EP_ALL_COUNTERS as usize;
pub const EVD_COUNTERS: usize = dat_evd_counters::DCNT_EVD_ALL_COUNTERS as usize;

pub struct Counters<const N: usize>([AtomicU64; N]);

impl<const N: usize> Default for Counters<N> {
    fn default() -> Self {
        Counters(std::array::from_fn(|_| AtomicU64::new(0)))
    }
}

impl<const N: usize> Counters<N> {
    #[inline]
    pub fn add(&self, counter: u32, n: u64) {
        self.0[counter as usize].fetch_add(n, Ordering::Relaxed);
    }

    #[inline]
    pub fn bump(&self, counter: u32) {
        self.add(counter, 1);
    }

    pub fn snapshot(&self) -> [u64; N] {
        std::array::from_fn(|i| self.0[i].load(Ordering::Relaxed))
    }

    pub fn reset(&self, counter: usize) {
        self.set(counter, 0);
    }

    pub fn set(&self, counter: usize, value: u64) {
        self.0[counter].store(value, Ordering::Relaxed);
    }
}

/// Counters kept inside an object's lock, as plain numbers (an EP's posts, in `EpInner`):
/// every writer holds that lock, so they add exactly with no locked instruction on the data
/// path; a query or reset takes the lock too.
pub struct Tally<const N: usize>([u64; N]);

impl<const N: usize> Default for Tally<N> {
    fn default() -> Self {
        Tally([0; N])
    }
}

impl<const N: usize> Tally<N> {
    #[inline]
    pub fn add(&mut self, counter: u32, n: u64) {
        let c = &mut self.0[counter as usize];
        *c = c.wrapping_add(n);
    }

    /// Takes back a [`Tally::add`] whose request did not go out.
    pub fn sub(&mut self, counter: u32, n: u64) {
        let c = &mut self.0[counter as usize];
        *c = c.wrapping_sub(n);
    }

    pub fn reset(&mut self, counter: usize) {
        self.0[counter] = 0;
    }
}

/// What a query reads: one object's counters, as C names them.
pub struct Reading {
    pub values: Vec<u64>,
    pub name: fn(u32) -> &'static str,
}

impl Reading {
    pub fn ia(c: &Counters<IA_COUNTERS>) -> Reading {
        Reading {
            values: c.snapshot().to_vec(),
            name: |i| dat_ia_counters::try_from(i).map_or("", dat_ia_counters::name),
        }
    }

    /// An EP's: its atomic counters and those its lock keeps (`posted`; each counter is kept
    /// in one of the two, so the sum is its value).
    pub fn ep(c: &Counters<EP_COUNTERS>, posted: &Tally<EP_COUNTERS>) -> Reading {
        let values = c
            .snapshot()
            .iter()
            .zip(posted.0)
            .map(|(a, b)| a.wrapping_add(b))
            .collect();
        Reading {
            values,
            name: |i| dat_ep_counters::try_from(i).map_or("", dat_ep_counters::name),
        }
    }

    /// An EVD's: its dequeues are counted as found and not found, and summed here.
    pub fn evd(c: &Counters<EVD_COUNTERS>) -> Reading {
        use dat_evd_counters as C;
        let mut values = c.snapshot();
        values[C::DCNT_EVD_DEQUEUE as usize] = values[C::DCNT_EVD_DEQUEUE_FOUND as usize]
            + values[C::DCNT_EVD_DEQUEUE_NOT_FOUND as usize];
        Reading {
            values: values.to_vec(),
            name: |i| dat_evd_counters::try_from(i).map_or("", dat_evd_counters::name),
        }
    }

    /// The indexes a query of `which` covers (all when `which` is the count), or None for
    /// no counter of this object.
    pub fn covered(&self, which: usize) -> Option<std::ops::Range<usize>> {
        match which {
            w if w < self.values.len() => Some(w..w + 1),
            w if w == self.values.len() => Some(0..w),
            _ => None,
        }
    }
}

/// Zeroes an EVD's counter `i` (its dequeue count: both its parts).
pub fn reset_evd(c: &Counters<EVD_COUNTERS>, i: usize) {
    use dat_evd_counters as C;
    if i == C::DCNT_EVD_DEQUEUE as usize {
        c.reset(C::DCNT_EVD_DEQUEUE_FOUND as usize);
        c.reset(C::DCNT_EVD_DEQUEUE_NOT_FOUND as usize);
    }
    c.reset(i);
}
