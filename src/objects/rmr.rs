//! Remote Memory Regions: windows onto an LMR that a bind exposes to one peer.

use std::sync::Arc;

use parking_lot::Mutex;

use super::ia::Ia;
use super::lmr::Lmr;
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
}

pub struct Rmr {
    pub ia: Arc<Ia>,
    pub pz: Held<Pz>,
    pub binding: Mutex<Option<Binding>>,
}

// SAFETY: the triplet inside a binding is plain integers.
unsafe impl Send for Binding {}

impl Object for Rmr {
    const KIND: Kind = Kind::Rmr;
}

impl Rmr {
    pub fn new(ia: Arc<Ia>, pz: Arc<Pz>) -> Rmr {
        Rmr { ia, pz: Held::new(pz), binding: Mutex::new(None) }
    }

    pub fn pz(&self) -> &Arc<Pz> {
        self.pz.arc()
    }
}
