//! The Consumer Notification Object: one wake-up point for several EVDs. An EVD with a CNO
//! triggers it when an event arrives and nobody waits on the EVD itself.

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, MutexGuard};

use super::ia::Ia;
use super::{Counted, Users};
use crate::abi::*;
use crate::error::{DatError, DatResult, Sub};
use crate::handle::{Kind, Object};

struct State {
    /// EVD handles that triggered and were not yet reported.
    triggered: Vec<usize>,
    waiter: bool,
    agent: DAT_OS_WAIT_PROXY_AGENT,
    handle: usize,
    epoch: u64,
}

pub struct Cno {
    pub ia: Arc<Ia>,
    users: Users,
    state: Mutex<State>,
    ready: Condvar,
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
                waiter: false,
                agent,
                handle: 0,
                epoch: 0,
            }),
            ready: Condvar::new(),
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
    /// (dat_cno_create). It is called with no lock of ours held.
    // The handle is an opaque value, handed on to the consumer's agent, never dereferenced.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    pub fn trigger(&self, evd: DAT_EVD_HANDLE) {
        let agent = {
            let mut s = self.state.lock();
            if !s.triggered.contains(&(evd as usize)) {
                s.triggered.push(evd as usize);
            }
            self.ready.notify_one();
            if let Some(fd) = self.fd() {
                let one: u64 = 1;
                // SAFETY: writes 8 bytes from a live u64 to our own eventfd.
                unsafe { libc::write(fd, &one as *const u64 as *const libc::c_void, 8) };
            }
            let agent = s.agent;
            if agent.proxy_agent_func.is_some() {
                s.agent = DAT_OS_WAIT_PROXY_AGENT { instance_data: std::ptr::null_mut(), proxy_agent_func: None };
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
        let mut s = self.state.lock();
        if s.triggered.is_empty() {
            return None;
        }
        let evd = s.triggered.remove(0) as DAT_EVD_HANDLE;
        if let Some(fd) = self.fd().filter(|_| s.triggered.is_empty()) {
            let mut sink: u64 = 0;
            // SAFETY: reads at most 8 bytes into a live u64 from our own non-blocking eventfd.
            unsafe { libc::read(fd, &mut sink as *mut u64 as *mut libc::c_void, 8) };
        }
        Some(evd)
    }

    /// `dat_cno_wait`: blocks until an EVD triggers or `timeout` passes.
    /// The EVD that triggered the CNO; None when `timeout` passed first.
    pub fn wait(&self, timeout: Option<Duration>) -> DatResult<Option<DAT_EVD_HANDLE>> {
        let deadline = timeout.map(|t| Instant::now() + t);
        {
            let mut s = self.state.lock();
            if s.waiter {
                return Err(DatError::invalid_state(Sub::DAT_INVALID_STATE_CNO_IN_USE));
            }
            // A wait that may sleep hands the connections this thread polled back.
            if s.triggered.is_empty() && timeout != Some(Duration::ZERO) {
                MutexGuard::unlocked(&mut s, super::evd::before_sleep);
            }
            s.waiter = true;
            let epoch = s.epoch;
            while s.triggered.is_empty() {
                if s.epoch != epoch {
                    s.waiter = false;
                    return Err(DatError::invalid_state(Sub::DAT_INVALID_STATE_CNO_DEAD));
                }
                match deadline {
                    None => self.ready.wait(&mut s),
                    Some(d) => {
                        if self.ready.wait_until(&mut s, d).timed_out() && s.triggered.is_empty() {
                            s.waiter = false;
                            return Ok(None);
                        }
                    }
                }
            }
            s.waiter = false;
        }
        self.take_triggered().map(Some).ok_or(DatError::internal())
    }

    /// Called as the CNO's handle dies: a blocked waiter fails.
    pub fn kill(&self) {
        let mut s = self.state.lock();
        s.epoch += 1;
        self.ready.notify_all();
    }
}
