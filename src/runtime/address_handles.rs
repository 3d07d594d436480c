//! The address handles UD connection events hand out (the IB extension's
//! `DAT_IB_ADDR_HANDLE.ah`), by the pointer the consumer holds: a transport keeps here what
//! each of its handles reaches, with the endpoint that made it (its handles go with its EP).
//! A pointer the consumer passes is used only when found here, so a freed or made-up one is
//! refused, never followed. Each UD exchange is numbered for its events' context.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};

use parking_lot::Mutex;

/// A new number for a UD exchange (the context of its events, which `dat_ib_ud_cm_free`
/// names).
pub fn next_exchange() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

type Table<T> = HashMap<usize, (Arc<T>, usize)>;

pub struct AddressHandles<T> {
    table: LazyLock<Mutex<Table<T>>>,
}

impl<T> AddressHandles<T> {
    pub const fn new() -> Self {
        AddressHandles {
            table: LazyLock::new(|| Mutex::new(HashMap::new())),
        }
    }

    /// Keeps `value` under the consumer's pointer `key`, for the endpoint `owner`.
    pub fn keep(&self, key: usize, value: Arc<T>, owner: usize) {
        self.table.lock().insert(key, (value, owner));
    }

    /// What the consumer's pointer names, while it is live.
    pub fn get(&self, key: usize) -> Option<Arc<T>> {
        self.table.lock().get(&key).map(|(v, _)| v.clone())
    }

    /// `dat_ib_ud_ah_free`: false when `key` names no live handle.
    pub fn free(&self, key: usize) -> bool {
        self.table.lock().remove(&key).is_some()
    }

    /// The endpoint `owner` goes: so do the handles it made.
    pub fn forget_owner(&self, owner: usize) {
        let mut table = self.table.lock();
        if !table.is_empty() {
            table.retain(|_, (_, o)| *o != owner);
        }
    }
}

impl<T> Default for AddressHandles<T> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handle_lives_until_freed_or_its_endpoint_goes() {
        let handles = AddressHandles::<u32>::new();
        handles.keep(10, Arc::new(1), 100);
        handles.keep(20, Arc::new(2), 200);
        assert_eq!(handles.get(10).as_deref(), Some(&1));
        assert!(handles.free(10));
        assert!(!handles.free(10));
        assert_eq!(handles.get(10), None);
        handles.forget_owner(200);
        assert_eq!(handles.get(20), None);
    }
}
