//! How a thread asleep in `dat_evd_wait` or `dat_cno_wait` is woken. It sleeps outside the
//! library's Rust code, in C, polling an eventfd (`ppoll`, a cancellation point: see
//! src/ext/wait.c), and whoever ends its sleep (an event, the object made unwaitable or freed)
//! signals that eventfd. A wait is therefore taken in steps: each returns either its result or
//! a [`Sleep`], after which the waiter comes back for the next step.
//!
//! A [`Wakeup`] lives under the lock of the object waited on, so that a sleeper's decision to
//! sleep and a waker's look at it are ordered, and the eventfd is readable exactly when a
//! wake-up was signalled since the sleep began.

use std::os::fd::RawFd;
use std::time::Duration;

use crate::runtime::sys;

/// How long a sleeper with no eventfd (none could be made) sleeps before it looks again.
const NAP: Duration = Duration::from_millis(1);

/// What a wait does after a step.
pub enum WaitStep<T> {
    /// It ended with this.
    Done(T),
    /// It sleeps as said, then takes its next step.
    Sleep(Sleep),
}

/// A sleep: until `fd` is readable or `at_most` has passed, whichever comes first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sleep {
    /// None: no descriptor, a sleep for `at_most` alone.
    pub fd: Option<RawFd>,
    /// None: no bound.
    pub at_most: Option<Duration>,
}

/// The wake-up of the thread that sleeps on one object.
#[derive(Debug, Default)]
pub struct Wakeup {
    /// Made at the first sleep: an object nobody sleeps on holds no descriptor. None also
    /// when it could not be made (the sleeper then naps and looks again).
    fd: Option<RawFd>,
    /// A thread sleeps and was not woken.
    asleep: bool,
    /// The eventfd was signalled and not cleared since.
    signalled: bool,
}

impl Wakeup {
    /// The calling thread is about to sleep, for `at_most` at the longest: the sleep, which
    /// [`Wakeup::wake`] ends from then on.
    pub fn sleep(&mut self, at_most: Option<Duration>) -> Sleep {
        if self.fd.is_none() {
            self.fd = sys::eventfd().ok();
        }
        if let Some(fd) = self.fd.filter(|_| self.signalled) {
            // A wake-up for an earlier sleep that did not need it: cleared here, before this
            // sleep, not by the thread it woke (which has its event sooner so).
            sys::drain_counter(fd);
            self.signalled = false;
        }
        self.asleep = true;
        match self.fd {
            Some(fd) => Sleep {
                fd: Some(fd),
                at_most,
            },
            None => Sleep {
                fd: None,
                at_most: Some(at_most.map_or(NAP, |d| d.min(NAP))),
            },
        }
    }

    /// Ends the sleep of the thread that sleeps, if one does.
    pub fn wake(&mut self) {
        if !self.asleep {
            return;
        }
        self.asleep = false;
        if let Some(fd) = self.fd {
            sys::eventfd_signal(fd);
            self.signalled = true;
        }
    }

    /// The sleeper is awake: woken, or its time passed, or it was interrupted or cancelled.
    pub fn awake(&mut self) {
        self.asleep = false;
    }
}

impl Drop for Wakeup {
    fn drop(&mut self) {
        if let Some(fd) = self.fd {
            sys::close(fd);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn readable(fd: RawFd) -> bool {
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one live pollfd; no wait (timeout 0).
        unsafe { libc::poll(&mut p, 1, 0) == 1 }
    }

    #[test]
    fn a_sleeper_s_descriptor_is_readable_once_woken_and_not_before() {
        let mut w = Wakeup::default();
        let sleep = w.sleep(Some(Duration::from_secs(1)));
        assert_eq!(sleep.at_most, Some(Duration::from_secs(1)));
        let fd = sleep.fd.expect("an eventfd");
        assert!(!readable(fd));
        w.wake();
        assert!(readable(fd));
    }

    #[test]
    fn a_wake_up_with_nobody_asleep_is_not_signalled() {
        let mut w = Wakeup::default();
        let fd = w.sleep(None).fd.expect("an eventfd");
        w.awake();
        w.wake();
        assert!(!readable(fd));
    }

    #[test]
    fn a_wake_up_left_from_an_earlier_sleep_is_cleared_by_the_next_one() {
        let mut w = Wakeup::default();
        let fd = w.sleep(None).fd.expect("an eventfd");
        w.wake();
        w.wake(); // woken once only
        assert!(readable(fd));
        // The sleeper took its event without reading the descriptor; it sleeps again.
        assert_eq!(w.sleep(None).fd, Some(fd));
        assert!(
            !readable(fd),
            "the earlier wake-up would end this sleep at once"
        );
        w.wake();
        assert!(readable(fd));
    }
}
