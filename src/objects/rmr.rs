//! Remote Memory Regions: windows onto an LMR that a bind exposes to one peer.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Weak};

use parking_lot::{Mutex, RwLock};

use super::ep::{Ep, Report, Request};
use super::ep_state::{self, Post};
use super::evd::Evd;
use super::ia::Ia;
use super::lmr::{self, Lmr};
use super::pz::Pz;
use super::seam::WindowBind;
use super::Held;
use crate::abi::*;
use crate::error::{DatError, DatResult, Sub, Type};
use crate::handle::{Kind, Object};

/// What a successful bind exposes.
pub struct Binding {
    pub lmr: Held<Lmr>,
    pub triplet: DAT_LMR_TRIPLET,
    pub privileges: u32,
    pub va_type: dat_va_type,
    pub context: u32,
    /// Its window's key in `WINDOWS`.
    window: (usize, u32),
}

pub struct Rmr {
    pub ia: Arc<Ia>,
    pub pz: Held<Pz>,
    pub binding: Mutex<Option<Binding>>,
    /// The transport's memory window, made at the first bind on a connected EP where the
    /// device checks peers' keys (verbs).
    pub window: std::sync::OnceLock<crate::objects::seam::Resource>,
}

// SAFETY: the triplet inside a binding is plain integers.
unsafe impl Send for Binding {}

impl Object for Rmr {
    const KIND: Kind = Kind::Rmr;
    fn on_release(&self) {
        self.unbind();
    }
}

impl Rmr {
    pub fn new(ia: Arc<Ia>, pz: Arc<Pz>) -> Rmr {
        Rmr {
            ia,
            pz: Held::new(pz),
            binding: Mutex::new(None),
            window: std::sync::OnceLock::new(),
        }
    }

    pub fn pz(&self) -> &Arc<Pz> {
        self.pz.arc()
    }
}

/// A bound RMR as peers reach it, where the transport checks their accesses itself (TCP): the
/// part of an LMR it exposes, with the privileges of the bind, through the one EP it was bound
/// on (the RMR's scope is its EP, as `rmr_scope_supported` reports). A verbs transport binds a
/// memory window instead, which the device checks.
pub struct Window {
    lmr: Arc<Lmr>,
    address: u64,
    length: u64,
    privileges: u32,
    rmr: Weak<Rmr>,
    /// Held so the EP's address, the window's key, names no other EP while it is here.
    _ep: Weak<Ep>,
    /// Whether its context is one of ours (`lmr::claim_window_key`), given back as it closes;
    /// else the device's.
    our_key: bool,
}

/// Every bound window, by the EP it was bound through and the `rmr_context` its bind returned
/// (a window is reached only through its EP; over TCP its context is a random key that no live
/// region or other window has, `lmr::claim_window_key`; over RDMA it is the device's memory
/// window key). Taken before the regions' lock.
static WINDOWS: LazyLock<RwLock<Windows>> = LazyLock::new(Default::default);

/// Windows by (EP address, context).
type Windows = HashMap<(usize, u32), Arc<Window>>;

fn key(ep: &Ep, context: u32) -> (usize, u32) {
    (ep as *const Ep as usize, context)
}

/// Closes the window of `key`, if open: its context is free again.
fn close(windows: &mut Windows, key: (usize, u32)) -> Option<Arc<Window>> {
    let window = windows.remove(&key)?;
    if window.our_key {
        lmr::release_window_key(key.1);
    }
    Some(window)
}

impl Window {
    /// The window bound through `ep` under `context`.
    pub fn lookup(ep: &Ep, context: u32) -> Option<Arc<Window>> {
        WINDOWS.read().get(&key(ep, context)).cloned()
    }

    /// The region behind the window, if `length` bytes at `address` in it may be reached with
    /// `privilege`.
    pub fn reach(&self, address: u64, length: u64, privilege: u32) -> Option<Arc<Lmr>> {
        let inside = address >= self.address
            && address
                .checked_add(length)
                .is_some_and(|end| end <= self.address + self.length);
        (inside && privilege & !self.privileges == 0).then(|| self.lmr.clone())
    }

    /// A peer's send with invalidate named `context` through `ep`: the window closes and its
    /// RMR is unbound, if it was bound through that EP (another context is left alone).
    pub fn invalidate(context: u32, ep: &Ep) {
        let window = close(&mut WINDOWS.write(), key(ep, context));
        if let Some(rmr) = window.and_then(|w| w.rmr.upgrade()) {
            let mut binding = rmr.binding.lock();
            if binding.as_ref().is_some_and(|b| b.context == context) {
                *binding = None;
            }
        }
    }
}

impl Rmr {
    /// Binds the RMR to `triplet` of `lmr` with `privileges` for `ep`'s peer, or unbinds it
    /// (a zero length; `lmr` may then be None), under `context` (the transport's key for it: verbs; None: a new key of
    /// ours, TCP): the window it had closes, and the new context is returned (one that names
    /// nothing, for an unbind: "the return value of rmr_context for that case is undefined").
    pub fn bind(
        self: &Arc<Self>,
        lmr: Option<Arc<Lmr>>,
        triplet: DAT_LMR_TRIPLET,
        privileges: u32,
        va_type: dat_va_type,
        ep: &Arc<Ep>,
        context: Option<u32>,
    ) -> u32 {
        let mut binding = self.binding.lock();
        let mut windows = WINDOWS.write();
        if let Some(old) = binding.take() {
            close(&mut windows, old.window);
        }
        let our_key = context.is_none();
        let context = context.unwrap_or_else(lmr::claim_window_key);
        let region = lmr.filter(|_| triplet.segment_length != 0);
        if let Some(lmr) = region {
            let window = Window {
                lmr: lmr.clone(),
                address: triplet.virtual_address,
                length: u64::from(triplet.segment_length),
                privileges,
                rmr: Arc::downgrade(self),
                _ep: Arc::downgrade(ep),
                our_key,
            };
            windows.insert(key(ep, context), Arc::new(window));
            *binding = Some(Binding {
                lmr: Held::new(lmr),
                triplet,
                privileges,
                va_type,
                context,
                window: key(ep, context),
            });
        } else if our_key {
            // An unbind: the context returned names nothing.
            lmr::release_window_key(context);
        }
        context
    }

    /// The window of a bound RMR closes (the RMR is freed).
    fn unbind(&self) {
        if let Some(old) = self.binding.lock().take() {
            close(&mut WINDOWS.write(), old.window);
        }
    }
}

/// Completion flags `dat_rmr_bind(3DAT)` takes.
pub const BIND_COMPLETION_FLAGS: u32 = dat_completion_flags::DAT_COMPLETION_SUPPRESS_FLAG as u32
    | dat_completion_flags::DAT_COMPLETION_UNSIGNALLED_FLAG as u32
    | dat_completion_flags::DAT_COMPLETION_BARRIER_FENCE_FLAG as u32;

/// A bind (or unbind) as the consumer asks it, its C arguments converted.
pub struct BindRequest {
    /// The RMR's handle, which its completion names.
    pub handle: DAT_RMR_HANDLE,
    pub triplet: DAT_LMR_TRIPLET,
    /// DAT_MEM_PRIV flags, known ones.
    pub privileges: u32,
    pub va_type: dat_va_type,
    pub cookie: DAT_RMR_COOKIE,
    /// Known bind completion flags (`BIND_COMPLETION_FLAGS`).
    pub completion_flags: DAT_COMPLETION_FLAGS,
    /// Where the triplet and the completion flags are among the call's arguments (for the
    /// errors' subtypes: 1.2's call has neither an LMR handle nor an address type).
    pub triplet_position: u8,
    pub flags_position: u8,
}

impl Rmr {
    /// Binds the RMR (or, with a zero-length triplet, unbinds it) through `ep`: every check
    /// of `dat_rmr_bind(3DAT)`, then on a DISCONNECTED EP the bind is flushed to the EP's
    /// request EVD as the man page says; on a CONNECTED EP it completes with a
    /// `DAT_RMR_BIND_COMPLETION_EVENT` (unless suppressed): at once where the window is ours
    /// (TCP), or once the device has bound the memory window (verbs). Returns the context the
    /// consumer gets. `lmr` is the region the triplet names; None only for an unbind (1.2's
    /// call names no region: its triplet's context may name none).
    pub fn bind_through(
        self: &Arc<Self>,
        ep: &Arc<Ep>,
        lmr: Option<Arc<Lmr>>,
        request: BindRequest,
    ) -> DatResult<DAT_RMR_CONTEXT> {
        let BindRequest {
            handle: rmr_handle,
            triplet,
            privileges: mem_priv,
            va_type,
            cookie: user_cookie,
            completion_flags,
            triplet_position,
            flags_position,
        } = request;
        if lmr.as_ref().is_some_and(|l| !Arc::ptr_eq(&l.ia, &self.ia)) {
            return Err(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_LMR));
        }
        if !Arc::ptr_eq(&ep.ia, &self.ia) {
            return Err(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_EP));
        }
        if va_type != dat_va_type::DAT_VA_TYPE_VA {
            return Err(DatError::bare(Type::DAT_MODEL_NOT_SUPPORTED));
        }
        // A zero length unbinds: no region to check.
        if triplet.segment_length != 0 {
            let lmr = lmr
                .as_ref()
                .ok_or(DatError::invalid_arg(triplet_position))?;
            if triplet.lmr_context != lmr.context {
                return Err(DatError::invalid_arg(triplet_position));
            }
            if lmr
                .check(
                    triplet.virtual_address,
                    u64::from(triplet.segment_length),
                    0,
                    lmr.pz(),
                )
                .is_err()
            {
                return Err(DatError::invalid_arg(triplet_position));
            }
            // Remote read needs local read on the LMR, remote write and the remote atomics
            // (which write too) local write.
            let needs_read =
                mem_priv & lmr::PRIV_REMOTE_READ != 0 && lmr.privileges & lmr::PRIV_LOCAL_READ == 0;
            let writes = lmr::PRIV_REMOTE_WRITE | lmr::PRIV_REMOTE_ATOMIC;
            let needs_write = mem_priv & writes != 0 && lmr.privileges & lmr::PRIV_LOCAL_WRITE == 0;
            if needs_read {
                return Err(DatError::new(
                    Type::DAT_PRIVILEGES_VIOLATION,
                    Sub::DAT_PRIVILEGES_READ,
                ));
            }
            if needs_write {
                return Err(DatError::new(
                    Type::DAT_PRIVILEGES_VIOLATION,
                    Sub::DAT_PRIVILEGES_WRITE,
                ));
            }
            if !Arc::ptr_eq(lmr.pz(), self.pz()) {
                return Err(DatError::bare(Type::DAT_PROTECTION_VIOLATION));
            }
        }
        let (state, ep_pz, request_evd, ep_flags) = {
            let inner = ep.inner.lock();
            (
                inner.state,
                inner.pz.as_ref().map(|p| p.arc().clone()),
                inner.request_evd.as_ref().map(|e| e.arc().clone()),
                inner.attr.request_completion_flags,
            )
        };
        let unsignalled = dat_completion_flags::DAT_COMPLETION_UNSIGNALLED_FLAG as u32;
        if completion_flags & unsignalled != 0 && ep_flags & unsignalled == 0 {
            return Err(DatError::invalid_arg(flags_position));
        }
        match ep_pz {
            Some(pz) if Arc::ptr_eq(&pz, self.pz()) => {}
            Some(_) => return Err(DatError::bare(Type::DAT_PROTECTION_VIOLATION)),
            None => return Err(DatError::invalid_state(Sub::DAT_INVALID_STATE_EP_PZ)),
        }
        let evd = request_evd.ok_or(DatError::invalid_state(
            Sub::DAT_INVALID_STATE_EP_EVD_REQUEST,
        ))?;
        let report = Report::of(completion_flags);
        let bound = self.binding.lock().is_some();
        match ep_state::post_request(state)? {
            Post::Flush => {
                bind_completion(
                    &evd,
                    rmr_handle,
                    user_cookie,
                    dat_dto_completion_status::DAT_DTO_ERR_FLUSHED,
                );
                // The bind never happened: the RMR keeps what it had, and the context it
                // reports is the one it already has.
                let current = self.binding.lock().as_ref().map_or(0, |b| b.context);
                Ok(current)
            }
            // A device that checks peers' accesses itself binds a memory window on the EP's
            // send queue: the bind completes when the device has done it, and requests posted
            // after it start after it.
            Post::Run
                if !ep.ia.transport.checks_remote_access()
                    && (triplet.segment_length != 0 || bound) =>
            {
                let window = match self.window.get() {
                    Some(w) => w.clone(),
                    None => {
                        let made = ep.ia.transport.memory_window(self.pz().domain.as_ref())?;
                        self.window.get_or_init(|| made).clone()
                    }
                };
                let bind = WindowBind {
                    window,
                    region: lmr
                        .as_ref()
                        .filter(|_| triplet.segment_length != 0)
                        .and_then(|l| l.registration()),
                    bound,
                    address: triplet.virtual_address,
                    length: u64::from(triplet.segment_length),
                    privileges: mem_priv,
                    request: Request {
                        seq: 0,
                        cookie: user_cookie.as_u64(),
                        operation: dat_dtos::DAT_DTO_BIND_MW,
                        length: 0,
                        report,
                        extended: None,
                        bind: std::num::NonZeroUsize::new(rmr_handle as usize),
                    },
                };
                let inner = ep.inner.lock();
                let Some(link) = inner.link.clone() else {
                    return Err(DatError::invalid_state(ep_state::subtype(inner.state)));
                };
                let key = link.bind_window(inner, &bind)?;
                Ok(self.bind(lmr, triplet, mem_priv, va_type, ep, Some(key)))
            }
            // The window is ours: bound at once, so whatever is posted after the bind (the
            // send that carries the new context) finds it there, as the bind's fence asks.
            // (An unbind of an RMR that is not bound has nothing to do on any transport.)
            Post::Run => {
                let context = self.bind(lmr, triplet, mem_priv, va_type, ep, None);
                let done = dat_dto_completion_status::DAT_DTO_SUCCESS;
                report.deliver(&evd, bind_event(rmr_handle, user_cookie, done), done);
                Ok(context)
            }
        }
    }
}

/// Reports a bind on the request EVD as OpenFabrics does: a `DAT_RMR_BIND_COMPLETION_EVENT`
/// naming the RMR (dapltest waits for one).
pub fn bind_completion(
    evd: &Evd,
    rmr: DAT_RMR_HANDLE,
    cookie: DAT_RMR_COOKIE,
    status: dat_dto_completion_status,
) {
    let _ = evd.post(bind_event(rmr, cookie, status));
}

/// The event of a bind's completion.
pub fn bind_event(
    rmr: DAT_RMR_HANDLE,
    cookie: DAT_RMR_COOKIE,
    status: dat_dto_completion_status,
) -> DAT_EVENT {
    let mut e = DAT_EVENT::zeroed();
    e.event_number = dat_event_number::DAT_RMR_BIND_COMPLETION_EVENT as DAT_EVENT_NUMBER;
    e.event_data.rmr_completion_event_data = DAT_RMR_BIND_COMPLETION_EVENT_DATA {
        rmr_handle: rmr,
        user_cookie: cookie,
        status: status as DAT_DTO_COMPLETION_STATUS,
    };
    e
}
