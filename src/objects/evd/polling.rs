//! A polling thread's memory of the EVDs it polls (`POLLED`): the connections the progress
//! engine leaves to a thread that polls them (`runtime::lease`) stay its own while it polls,
//! and the other EVDs it polled keep moving; when it goes to sleep, they are handed back.

use std::cell::Cell;

use smallvec::SmallVec;

use super::Evd;
use crate::abi::*;

/// The most EVDs one thread remembers polling (see `POLLED`); those beyond are left to their
/// connections' own threads.
const POLLED_MAX: usize = 32;

/// A thread that polls one EVD looks at the others it polled once every this many polls.
const OTHERS_EVERY: u32 = 64;

/// A polling thread keeps its lease alive every this many polls (a clock read; a lease may be
/// as short as a few dozen polls, see `lease`).
const KEEP_ALIVE_EVERY: u32 = 8;

/// What a thread polled since it last slept in a wait: handles, and a count of polls. Plain
/// cells, so the thread-local needs no destructor and costs no more than its address per poll.
struct Polled {
    evds: [Cell<usize>; POLLED_MAX],
    len: Cell<usize>,
    polls: Cell<u32>,
}

impl Polled {
    fn list(&self) -> SmallVec<[usize; POLLED_MAX]> {
        self.evds[..self.len.get()].iter().map(Cell::get).collect()
    }

    fn set(&self, list: &[usize]) {
        for (cell, h) in self.evds.iter().zip(list) {
            cell.set(*h);
        }
        self.len.set(list.len());
    }
}

thread_local! {
    /// The progress engine leaves a connection to a consumer's thread that polls it
    /// (`runtime::lease`). A thread that polls several EVDs in turn keeps all of them moving:
    /// held acknowledgements and frames of the ones it is not polling now do not wait for the
    /// engine to take them back. When it goes to sleep, whatever it waits for, they are handed
    /// back at once.
    static POLLED: Polled = const {
        Polled {
            evds: [const { Cell::new(0) }; POLLED_MAX],
            len: Cell::new(0),
            polls: Cell::new(0),
        }
    };
}

/// A number that names the calling thread while it lives (its `POLLED`'s address): never 0.
#[inline(always)]
pub(super) fn thread_token() -> usize {
    POLLED.with(token)
}

/// The token of the thread whose `POLLED` this is.
#[inline(always)]
fn token(p: &Polled) -> usize {
    p as *const Polled as usize
}

/// Notes that this thread polls `evd`; now and then it keeps its lease alive
/// (`KEEP_ALIVE_EVERY`) and makes progress on the other EVDs it polled (`OTHERS_EVERY`).
/// Returns this thread's `thread_token`.
#[inline]
pub(super) fn polling(evd: DAT_EVD_HANDLE) -> usize {
    let key = evd as usize;
    // The closure answers only "time for the others?" (and for the lease): the list is copied
    // out just then, not moved through every poll.
    let (others_due, keep_alive_due, me) = POLLED.with(|p| {
        let len = p.len.get();
        let known = |e: &Cell<usize>| e.get() == key;
        if len < POLLED_MAX && !p.evds[..len].iter().rev().any(known) {
            p.evds[len].set(key);
            p.len.set(len + 1);
        }
        let polls = p.polls.get().wrapping_add(1);
        p.polls.set(polls);
        (
            polls % OTHERS_EVERY == 0,
            polls % KEEP_ALIVE_EVERY == 0,
            token(p),
        )
    });
    if keep_alive_due {
        // The connections this thread holds on lease stay its own: it still polls.
        crate::runtime::lease::keep_alive(None);
    }
    if others_due {
        every_few_polls(key);
    }
    me
}

/// Every `OTHERS_EVERY` polls: the other EVDs this thread polled move on too.
#[cold]
fn every_few_polls(key: usize) {
    if POLLED.with(|p| p.len.get() > 1) {
        progress_others(key);
    }
}

/// Progress on the EVDs this thread polled besides `key`; forgets those that are gone.
#[cold]
fn progress_others(key: usize) {
    for h in POLLED.with(Polled::list).into_iter().filter(|h| *h != key) {
        match crate::handle::get::<Evd>(h as DAT_EVD_HANDLE) {
            Some(other) => other.progress(),
            None => POLLED.with(|p| {
                let mut list = p.list();
                list.retain(|e| *e != h);
                p.set(&list);
            }),
        }
    }
}

/// This thread is about to sleep: the EVDs it polled send what their sources held for a ride
/// (`Progress::flush`), and the connections it holds on lease go back to the engine.
pub fn before_sleep() {
    crate::runtime::lease::return_all();
    let polled = POLLED.with(|p| {
        let list = p.list();
        p.len.set(0);
        list
    });
    for h in polled {
        if let Some(evd) = crate::handle::get::<Evd>(h as DAT_EVD_HANDLE) {
            evd.flush_sources();
        }
    }
}
