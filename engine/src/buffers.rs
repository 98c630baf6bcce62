//! Aligned I/O buffers: what block threads, the io_uring backend and the application
//! models read into and write from.

use std::alloc::{alloc_zeroed, dealloc, Layout as MemLayout};

use rand_xoshiro::rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::spec::BufferContent;

/// Buffers are aligned to this, which satisfies O_DIRECT on every device we know of.
pub const BUF_ALIGN: usize = 4096;

/// I/O buffers for one thread: `count` blocks of `bs`, aligned for O_DIRECT.
pub struct Buffers {
    ptr: *mut u8,
    layout: MemLayout,
    bs: usize,
}

// SAFETY: the buffers are owned by one worker thread at a time; the pointer is not shared.
unsafe impl Send for Buffers {}

impl Buffers {
    pub fn new(bs: u64, count: u32, content: BufferContent, seed: u64) -> Self {
        let bs = bs as usize;
        let layout = MemLayout::from_size_align(bs * count as usize, BUF_ALIGN)
            .expect("bs and iodepth are range-checked");
        // SAFETY: layout has a non-zero size (bs >= 1, count >= 1).
        let ptr = unsafe { alloc_zeroed(layout) };
        assert!(!ptr.is_null(), "out of memory allocating I/O buffers");
        let mut b = Self { ptr, layout, bs };
        if content == BufferContent::Random {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0xb0f);
            rng.fill_bytes(b.all_mut());
        }
        b
    }

    fn all_mut(&mut self) -> &mut [u8] {
        // SAFETY: ptr/len describe our own live allocation.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.layout.size()) }
    }

    pub fn ptr(&self, slot: u32) -> *mut u8 {
        // SAFETY: slot < count, so the offset stays inside the allocation.
        unsafe { self.ptr.add(slot as usize * self.bs) }
    }

    pub fn slot(&self, slot: u32) -> &[u8] {
        // SAFETY: slot < count; the slice covers exactly one block we own, which no I/O
        // is writing into (the caller has reaped its completion).
        unsafe { std::slice::from_raw_parts(self.ptr(slot), self.bs) }
    }

    pub fn slot_mut(&mut self, slot: u32) -> &mut [u8] {
        // SAFETY: slot < count; the slice covers exactly one block we own.
        unsafe { std::slice::from_raw_parts_mut(self.ptr(slot), self.bs) }
    }

    pub fn len(&self) -> usize {
        self.bs
    }

    pub fn is_empty(&self) -> bool {
        self.bs == 0
    }

    /// Stamps a write buffer with its offset and a counter so no two blocks written
    /// are the same (defeats deduplication, like fio's `scramble_buffers`).
    #[inline]
    pub fn scramble(&mut self, slot: u32, offset: u64, counter: u64) {
        let b = self.slot_mut(slot);
        if b.len() >= 16 {
            b[..8].copy_from_slice(&offset.to_le_bytes());
            b[8..16].copy_from_slice(&counter.to_le_bytes());
        }
    }
}

impl Drop for Buffers {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout, freed once.
        unsafe { dealloc(self.ptr, self.layout) };
    }
}
