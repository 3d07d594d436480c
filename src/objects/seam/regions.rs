//! Providers that must hear of memory regions as they are registered and released (one that
//! lets peers of this host reach our memory directly publishes them) observe them here: the
//! objects tell every observer, and name none.

use parking_lot::RwLock;

use crate::objects::region_table::Region;

/// What a provider does as regions come and go.
pub trait RegionObserver: Send + Sync {
    /// A region was registered (called under the regions' lock, so none is registered or
    /// released meanwhile).
    fn registered(&self, context: u32, region: &Region);
    /// A region is being freed (no context finds it any more): once this returns, no peer
    /// reaches it through this provider.
    fn released(&self, context: u32);
}

/// The observers, for the life of the process: read under the regions' lock as they change,
/// before whatever an observer takes (docs/architecture.md, "Lock order", 7).
static OBSERVERS: RwLock<Vec<&'static dyn RegionObserver>> = RwLock::new(Vec::new());

/// `observer` hears of every region registered or released from now on. A provider that also
/// needs the regions registered before walks them after this (`Lmr::each_region`), so none is
/// missed (one registered meanwhile is seen twice).
pub fn observe(observer: &'static dyn RegionObserver) {
    OBSERVERS.write().push(observer);
}

/// A region was registered, under the regions' lock.
pub fn registered(context: u32, region: &Region) {
    for o in OBSERVERS.read().iter() {
        o.registered(context, region);
    }
}

/// A region is being freed: once this returns, no peer reaches it through any provider.
pub fn released(context: u32) {
    for o in OBSERVERS.read().iter() {
        o.released(context);
    }
}
