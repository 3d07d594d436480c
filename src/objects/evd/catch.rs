//! A dequeue's out-parameter lent down the poll of its EVD's sources.

use std::mem::MaybeUninit;

use super::Evd;
use crate::abi::*;

/// A dequeue's out-parameter, lent to the progress its poll makes (its EVD's sources: a
/// verbs CQ, TCP connections) and passed down the completion path explicitly: the first event
/// that progress completes for the EVD while the EVD's queue is empty goes straight into it
/// ([`Evd::post_catching`]), not through the queue and back. The poll holds the sources' lock
/// throughout, so the events it completes keep their order: any after the caught one queue
/// behind it. An event caught and not taken (a panic on the way) goes back to the front of
/// the queue as the catch ends, ahead of those.
pub struct Catch<'a> {
    /// The EVD whose events it takes (None: it takes none).
    evd: Option<&'a Evd>,
    into: Option<&'a mut MaybeUninit<DAT_EVENT>>,
    /// The event caught, in the out-parameter.
    caught: Option<&'a mut DAT_EVENT>,
}

impl<'a> Catch<'a> {
    /// Lends `into` for events of `evd`.
    pub fn new(evd: &'a Evd, into: &'a mut MaybeUninit<DAT_EVENT>) -> Catch<'a> {
        Catch {
            evd: Some(evd),
            into: Some(into),
            caught: None,
        }
    }

    /// Lends nothing: every event is queued.
    pub fn none() -> Catch<'static> {
        Catch {
            evd: None,
            into: None,
            caught: None,
        }
    }

    /// Whether a dequeue lends it: the poll is a dequeue's (no waiter sleeps on its EVD then).
    #[inline]
    pub fn for_dequeue(&self) -> bool {
        self.evd.is_some()
    }

    /// Whether `evd`'s event may go into the out-parameter (none went yet).
    #[inline]
    pub(super) fn open_for(&self, evd: &Evd) -> bool {
        self.into.is_some() && self.evd.is_some_and(|e| std::ptr::eq(e, evd))
    }

    /// Puts the event into the out-parameter (`open_for` said it may).
    #[inline]
    pub(super) fn put(&mut self, event: DAT_EVENT) {
        if let Some(into) = self.into.take() {
            self.caught = Some(into.write(event));
        }
    }

    /// Ends the catch: whether an event went into the out-parameter, which the caller returns.
    #[inline]
    pub fn take(mut self) -> bool {
        self.caught.take().is_some()
    }
}

impl Drop for Catch<'_> {
    fn drop(&mut self) {
        if let (Some(event), Some(evd)) = (self.caught.take(), self.evd) {
            evd.requeue_first(*event);
        }
    }
}
