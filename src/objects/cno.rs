//! The Consumer Notification Object: one wake-up point for several EVDs. An EVD with a CNO
//! triggers it when an event arrives and nobody waits on the EVD itself.

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Mutex, MutexGuard};

use super::ia::Ia;
use super::wakeup::{WaitStep, Wakeup};
use super::{Counted, Users};
use crate::abi::*;
use crate::error::{DatError, DatResult, Sub};
use crate::handle::{Kind, Object};
use crate::runtime::sys;

struct State {
    /// EVD handles that triggered and were not yet reported.
    triggered: Vec<usize>,
    /// The thread in `dat_cno_wait` (one at most), between the steps of its wait.
    waiter: Option<Waiter>,
    /// Wakes that thread while it sleeps (outside the library: see `wakeup`).
    wakeup: Wakeup,
    agent: DAT_OS_WAIT_PROXY_AGENT,
    handle: usize,
    epoch: u64,
}

struct Waiter {
    /// The CNO's epoch as the wait began: the wait outlives no change of it (the CNO freed).
    epoch: u64,
    deadline: Option<Instant>,
}

/// How a step of `dat_cno_wait` ends it: the EVD that triggered, or None when the time passed.
pub type WaitResult = DatResult<Option<DAT_EVD_HANDLE>>;

pub struct Cno {
    pub ia: Arc<Ia>,
    users: Users,
    state: Mutex<State>,
    /// For `dat_cno_fd_create`: an eventfd that becomes readable on a trigger.
    fd: Option<std::os::fd::OwnedFd>,
}

// SAFETY: the proxy agent is an opaque consumer pointer and function pointer that we only
// store and return; it is accessed under the state mutex.
unsafe impl Send for State {}

impl Object for Cno {
    const KIND: Kind = Kind::Cno;
    fn on_release(&self) {
        self.kill();
    }
}

impl Counted for Cno {
    fn users(&self) -> &Users {
        &self.users
    }
}

impl Cno {
    pub fn create(
        ia: &Arc<Ia>,
        agent: DAT_OS_WAIT_PROXY_AGENT,
        with_fd: bool,
    ) -> DatResult<(Arc<Cno>, DAT_CNO_HANDLE)> {
        let fd = if with_fd {
            // SAFETY: eventfd has no memory arguments; a non-negative result is a new fd we own.
            let raw = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
            if raw < 0 {
                return Err(DatError::resources(Sub::DAT_RESOURCE_MEMORY));
            }
            // SAFETY: raw is a fresh descriptor owned by nobody else.
            Some(unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(raw) })
        } else {
            None
        };
        let cno = Arc::new(Cno {
            ia: ia.clone(),
            users: Users::default(),
            state: Mutex::new(State {
                triggered: Vec::new(),
                waiter: None,
                wakeup: Wakeup::default(),
                agent,
                handle: 0,
                epoch: 0,
            }),
            fd,
        });
        let h = ia.adopt(cno.clone())?;
        cno.state.lock().handle = h as usize;
        Ok((cno, h))
    }

    pub fn handle(&self) -> DAT_CNO_HANDLE {
        self.state.lock().handle as DAT_CNO_HANDLE
    }

    pub fn fd(&self) -> Option<i32> {
        self.fd.as_ref().map(std::os::fd::AsRawFd::as_raw_fd)
    }

    pub fn agent(&self) -> DAT_OS_WAIT_PROXY_AGENT {
        self.state.lock().agent
    }

    pub fn set_agent(&self, agent: DAT_OS_WAIT_PROXY_AGENT) {
        self.state.lock().agent = agent;
    }

    /// An EVD of this CNO got an event. The OS Wait Proxy Agent, if there is one, hears of it
    /// too, once: "After it is invoked, it is no longer associated with the CNO"
    /// (dat_cno_create). It is called on the progress thread, with no lock of ours held.
    // The handle is an opaque value, handed on to the consumer's agent, never dereferenced.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    pub fn trigger(self: &Arc<Self>, evd: DAT_EVD_HANDLE) {
        if self.state.lock().agent.proxy_agent_func.is_some() {
            // The agent is the consumer's code, which may call the library again: it runs on
            // the progress thread, holding nothing, not under the locks of whoever triggered
            // (an EP's, a connection's). The trigger waits for it, so a waiter woken by it
            // finds the agent called.
            let (cno, evd) = (self.clone(), evd as usize);
            crate::runtime::engine::Engine::get()
                .defer(Box::new(move || cno.trigger_now(evd as DAT_EVD_HANDLE)));
            return;
        }
        self.trigger_now(evd);
    }

    /// [`Cno::trigger`], here and now.
    fn trigger_now(&self, evd: DAT_EVD_HANDLE) {
        let agent = {
            let mut s = self.state.lock();
            if !s.triggered.contains(&(evd as usize)) {
                s.triggered.push(evd as usize);
            }
            s.wakeup.wake();
            if let Some(fd) = self.fd() {
                sys::eventfd_signal(fd);
            }
            let agent = s.agent;
            if agent.proxy_agent_func.is_some() {
                s.agent = DAT_OS_WAIT_PROXY_AGENT {
                    instance_data: std::ptr::null_mut(),
                    proxy_agent_func: None,
                };
            }
            agent
        };
        if let Some(func) = agent.proxy_agent_func {
            // SAFETY: the consumer's agent function, called with its own instance data and the
            // EVD that triggered, as DAT_AGENT_FUNC is declared.
            unsafe { func(agent.instance_data, evd) };
        }
    }

    /// `dat_cno_trigger`: the EVD that triggered, if any, without blocking. The descriptor of
    /// `dat_cno_fd_create` stays readable while another EVD's trigger is still to be taken.
    pub fn take_triggered(&self) -> Option<DAT_EVD_HANDLE> {
        self.take_triggered_locked(&mut self.state.lock())
    }

    fn take_triggered_locked(&self, s: &mut State) -> Option<DAT_EVD_HANDLE> {
        if s.triggered.is_empty() {
            return None;
        }
        let evd = s.triggered.remove(0) as DAT_EVD_HANDLE;
        if let Some(fd) = self.fd().filter(|_| s.triggered.is_empty()) {
            sys::drain_counter(fd);
        }
        Some(evd)
    }

    /// `dat_cno_wait`'s first step: the EVD that triggered, or a sleep until one triggers or
    /// `timeout` passes (`None`: no bound), after which the waiter takes [`Cno::wait_resume`]
    /// (or [`Cno::wait_abandon`], cancelled).
    pub fn wait_begin(&self, timeout: Option<Duration>) -> WaitStep<WaitResult> {
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut s = self.state.lock();
        if s.waiter.is_some() {
            return WaitStep::Done(Err(DatError::invalid_state(
                Sub::DAT_INVALID_STATE_CNO_IN_USE,
            )));
        }
        s.waiter = Some(Waiter {
            epoch: s.epoch,
            deadline,
        });
        // A wait that may sleep hands the connections this thread polled back.
        if s.triggered.is_empty() && timeout != Some(Duration::ZERO) {
            MutexGuard::unlocked(&mut s, super::evd::before_sleep);
        }
        self.settle(s)
    }

    /// The next step of the wait [`Cno::wait_begin`] began, after its sleep.
    pub fn wait_resume(&self) -> WaitStep<WaitResult> {
        let mut s = self.state.lock();
        s.wakeup.awake();
        self.settle(s)
    }

    /// The waiter was cancelled as it slept: the wait ends, and another may begin. The triggers
    /// stay to be taken.
    pub fn wait_abandon(&self) {
        let mut s = self.state.lock();
        s.wakeup.awake();
        s.waiter = None;
    }

    /// The wait ends with a trigger, or why none, or sleeps on.
    fn settle(&self, mut s: MutexGuard<'_, State>) -> WaitStep<WaitResult> {
        let Some(w) = s.waiter.as_ref() else {
            return WaitStep::Done(Err(DatError::internal()));
        };
        let result = if !s.triggered.is_empty() {
            self.take_triggered_locked(&mut s)
                .map(Some)
                .ok_or(DatError::internal())
        } else if s.epoch != w.epoch {
            Err(DatError::invalid_state(Sub::DAT_INVALID_STATE_CNO_DEAD))
        } else {
            let now = Instant::now();
            match w.deadline {
                Some(d) if now >= d => Ok(None),
                deadline => return WaitStep::Sleep(s.wakeup.sleep(deadline.map(|d| d - now))),
            }
        };
        s.waiter = None;
        WaitStep::Done(result)
    }

    /// Whether a thread is blocked in `dat_cno_wait` on it (`dat_cno_free` refuses then).
    pub fn has_waiter(&self) -> bool {
        self.state.lock().waiter.is_some()
    }

    /// Called as the CNO's handle dies: a blocked waiter fails.
    pub fn kill(&self) {
        let mut s = self.state.lock();
        s.epoch += 1;
        s.wakeup.wake();
    }
}
