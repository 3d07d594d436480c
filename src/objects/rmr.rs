//! Remote Memory Regions: windows onto an LMR that a bind exposes to one peer.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Weak};

use parking_lot::{Mutex, RwLock};

use super::ep::Ep;
use super::evd::Evd;
use super::ia::Ia;
use super::lmr::{self, Lmr};
use super::pz::Pz;
use super::Held;
use crate::abi::*;
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
    /// (a zero length), under `context` (the transport's key for it: verbs; None: a new key of
    /// ours, TCP): the window it had closes, and the new context is returned (one that names
    /// nothing, for an unbind: "the return value of rmr_context for that case is undefined").
    pub fn bind(
        self: &Arc<Self>,
        lmr: Arc<Lmr>,
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
        if triplet.segment_length == 0 {
            // An unbind: the context returned names nothing.
            if our_key {
                lmr::release_window_key(context);
            }
        } else {
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
