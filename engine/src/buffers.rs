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

    /// The first `len` bytes of buffer `slot`, for an I/O shorter than the buffers.
    pub fn slot_mut_len(&mut self, slot: u32, len: usize) -> &mut [u8] {
        &mut self.slot_mut(slot)[..len]
    }

    /// Shapes every buffer's random bytes into `data`'s content.
    pub fn shape(&mut self, data: &Data) {
        if data.is_plain() {
            return;
        }
        let bs = self.bs;
        for b in self.all_mut().chunks_mut(bs) {
            data.shape(b);
        }
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

/// What the engine writes beyond random bytes (`buffer_compress_percentage`,
/// `buffer_pattern`, `dedupe_percentage`), as fio makes it: each chunk of a buffer is
/// random for its first `100 - p` percent and pattern (or zeros) for the rest, so a
/// compressor gets about 100/(100 - p) from it; a dedupe write repeats an earlier one.
#[derive(Debug, Clone, Default)]
pub struct Data {
    pub compress_pct: u32,
    pub chunk: usize,
    pub pattern: Option<Vec<u8>>,
    pub dedupe_pct: u32,
    /// Every write gets fresh bytes (`refill_buffers`, or a compressible share or
    /// dedupe, whose ratios only hold for fresh content).
    pub refill: bool,
}

impl Data {
    pub fn of(job: &crate::spec::Job) -> Self {
        let p = &job.pattern;
        Self {
            compress_pct: p.buffer_compress_percentage.unwrap_or(0),
            chunk: p
                .buffer_compress_chunk
                .unwrap_or(crate::spec::COMPRESS_CHUNK) as usize,
            pattern: p
                .buffer_pattern
                .as_deref()
                .and_then(|t| parse_pattern(t).ok()),
            dedupe_pct: p.dedupe_percentage.unwrap_or(0),
            refill: p.refill_buffers
                || p.buffer_compress_percentage.is_some()
                || p.dedupe_percentage.is_some(),
        }
    }

    /// Whether writes hold random bytes a stamp can make unique.
    pub fn has_random_part(&self) -> bool {
        self.compress_pct < 100 && (self.pattern.is_none() || self.compress_pct > 0)
    }

    /// Whether write buffers differ from plain random bytes at all.
    pub fn is_plain(&self) -> bool {
        self.compress_pct == 0 && self.pattern.is_none() && self.dedupe_pct == 0
    }

    /// Shapes random bytes in `buf` into this content: the compressible tail of every
    /// chunk becomes pattern (or zeros); with a pattern and no compression, all of it.
    pub fn shape(&self, buf: &mut [u8]) {
        if self.compress_pct == 0 {
            if let Some(p) = &self.pattern {
                fill_pattern(buf, p);
            }
            return;
        }
        let chunk = self.chunk.max(1);
        let random = chunk * (100 - self.compress_pct as usize) / 100;
        for c in buf.chunks_mut(chunk) {
            let keep = random.min(c.len());
            match &self.pattern {
                Some(p) => fill_pattern(&mut c[keep..], p),
                None => c[keep..].fill(0),
            }
        }
    }
}

fn fill_pattern(buf: &mut [u8], pattern: &[u8]) {
    if pattern.is_empty() {
        return;
    }
    for (i, b) in buf.iter_mut().enumerate() {
        *b = pattern[i % pattern.len()];
    }
}

/// Reads fio's `buffer_pattern`: `0x` and hex digits, a quoted string (`'abc'` or
/// `"abc"`), several of them joined by `|`.
pub fn parse_pattern(text: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    for part in text.split('|') {
        let part = part.trim();
        if let Some(hex) = part.strip_prefix("0x").or_else(|| part.strip_prefix("0X")) {
            if hex.is_empty() || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
                return Err(format!("`{part}` is not a hex number"));
            }
            let padded = if hex.len() % 2 == 1 {
                format!("0{hex}")
            } else {
                hex.to_string()
            };
            for i in (0..padded.len()).step_by(2) {
                out.push(u8::from_str_radix(&padded[i..i + 2], 16).map_err(|e| e.to_string())?);
            }
        } else if part.len() >= 2
            && ((part.starts_with('"') && part.ends_with('"'))
                || (part.starts_with('\'') && part.ends_with('\'')))
        {
            out.extend_from_slice(&part.as_bytes()[1..part.len() - 1]);
        } else {
            return Err(format!(
                "`{part}` is neither `0x` hex nor a quoted string (numbers and `%o` are not supported)"
            ));
        }
    }
    if out.is_empty() {
        return Err("the pattern is empty".into());
    }
    Ok(out)
}

/// A write's content made afresh from a seed (dedupe: the same seed, the same bytes).
pub fn fill_from_seed(buf: &mut [u8], seed: u64, data: &Data) {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    rng.fill_bytes(buf);
    data.shape(buf);
}

impl Drop for Buffers {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout, freed once.
        unsafe { dealloc(self.ptr, self.layout) };
    }
}
