//! The Protection Zone: memory regions and endpoints match only within one.

use std::sync::Arc;

use super::ia::Ia;
use super::{Counted, Users};
use crate::abi::*;
use crate::handle::{Kind, Object, SelfHandle};
use crate::objects::seam::Resource;

pub struct Pz {
    pub ia: Arc<Ia>,
    /// The transport's protection domain (none for TCP).
    pub domain: Option<Resource>,
    users: Users,
    handle: SelfHandle,
}

impl Object for Pz {
    const KIND: Kind = Kind::Pz;
    fn self_handle(&self) -> Option<&SelfHandle> {
        Some(&self.handle)
    }
}

impl Counted for Pz {
    fn users(&self) -> &Users {
        &self.users
    }
}

impl Pz {
    pub fn handle(&self) -> DAT_PZ_HANDLE {
        self.handle.get()
    }

    pub fn new(ia: Arc<Ia>, domain: Option<Resource>) -> Pz {
        Pz {
            ia,
            domain,
            users: Users::default(),
            handle: SelfHandle::default(),
        }
    }
}
