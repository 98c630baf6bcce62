//! The buffer cache of an application model: which pages are in memory. A page read
//! that hits costs no I/O. Random replacement: cheap, and without a hot set in the
//! access pattern it evicts about as well as LRU.

use std::collections::HashMap;
use std::sync::Mutex;

struct Inner {
    slot_of: HashMap<u64, usize>,
    pages: Vec<u64>,
    rng: u64,
}

pub struct Cache {
    capacity: usize,
    inner: Mutex<Inner>,
}

impl Cache {
    pub fn new(capacity_pages: u64, seed: u64) -> Self {
        Self {
            capacity: capacity_pages as usize,
            inner: Mutex::new(Inner {
                slot_of: HashMap::new(),
                pages: Vec::new(),
                rng: seed | 1,
            }),
        }
    }

    /// Whether `page` is cached.
    pub fn hit(&self, page: u64) -> bool {
        self.capacity > 0
            && self
                .inner
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .slot_of
                .contains_key(&page)
    }

    /// Puts `page` in the cache, evicting a random page when it is full.
    pub fn insert(&self, page: u64) {
        if self.capacity == 0 {
            return;
        }
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let c = &mut *g;
        if c.slot_of.contains_key(&page) {
            return;
        }
        if c.pages.len() < self.capacity {
            c.slot_of.insert(page, c.pages.len());
            c.pages.push(page);
            return;
        }
        // xorshift64: the cache's own stream, so eviction does not depend on thread timing of other draws.
        c.rng ^= c.rng << 13;
        c.rng ^= c.rng >> 7;
        c.rng ^= c.rng << 17;
        let slot = (c.rng % c.pages.len() as u64) as usize;
        let old = std::mem::replace(&mut c.pages[slot], page);
        c.slot_of.remove(&old);
        c.slot_of.insert(page, slot);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_at_most_its_capacity() {
        let c = Cache::new(4, 1);
        for p in 0..100 {
            c.insert(p);
        }
        assert_eq!((0..100).filter(|p| c.hit(*p)).count(), 4);
        assert!(c.hit(99), "the page just inserted is cached");
        let none = Cache::new(0, 1);
        none.insert(1);
        assert!(!none.hit(1));
    }
}
