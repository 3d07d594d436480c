//! The keys peers name our memory by, where we make them (TCP regions' contexts, and the
//! contexts of RMR windows we check ourselves): each drawn from the kernel's random source, so
//! the keys a peer is handed in normal use tell it nothing of the others. Keeping a key apart
//! from the live ones is the caller's (under its table's lock).

use parking_lot::{Mutex, MutexGuard};

use crate::runtime::sys;

/// Random words drawn ahead, one `getrandom` per batch, and the process that drew them: a
/// child of `fork` draws its own rather than hand out the keys its parent does.
pub struct Batch {
    words: [u32; WORDS],
    next: usize,
    pid: u32,
}

const WORDS: usize = 64;

static BATCH: Mutex<Batch> = Mutex::new(Batch {
    words: [0; WORDS],
    next: WORDS,
    pid: 0,
});

/// The source of random keys, held while a caller draws (a registration may draw a few).
pub struct Source(MutexGuard<'static, Batch>);

/// Takes the source (a lock nothing else is taken under).
pub fn source() -> Source {
    let mut batch = BATCH.lock();
    let pid = sys::current_pid();
    if batch.pid != pid {
        batch.next = WORDS;
        batch.pid = pid;
    }
    Source(batch)
}

impl Source {
    /// A fresh random key, never 0 (0 names no region).
    pub fn key(&mut self) -> u32 {
        let batch = &mut *self.0;
        loop {
            if batch.next == WORDS {
                let mut bytes = [0u8; WORDS * 4];
                sys::random_bytes(&mut bytes);
                for (word, chunk) in batch.words.iter_mut().zip(bytes.chunks_exact(4)) {
                    *word = u32::from_ne_bytes(chunk.try_into().expect("4 bytes"));
                }
                batch.next = 0;
            }
            // Each word is handed out once.
            let key = std::mem::take(&mut batch.words[batch.next]);
            batch.next += 1;
            if key != 0 {
                return key;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_non_zero_and_spread() {
        let mut source = source();
        let keys: Vec<u32> = (0..4096).map(|_| source.key()).collect();
        assert!(!keys.contains(&0));
        // 4096 draws of 32 bits: a repeat has odds of about 1 in 500 000.
        let distinct: std::collections::HashSet<_> = keys.iter().collect();
        assert!(distinct.len() >= 4095);
        // Every bit is set in some keys and clear in others.
        for bit in 0..32 {
            let ones = keys.iter().filter(|k| *k >> bit & 1 == 1).count();
            assert!(
                (1700..2400).contains(&ones),
                "bit {bit} set in {ones} of 4096 keys"
            );
        }
    }
}
