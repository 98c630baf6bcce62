//! Where each I/O goes, and whether it reads or writes.

use rand_xoshiro::rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::record::Op;
use crate::spec::Rw;

/// Offsets aligned to `bs` inside `[0, blocks * bs)`: sequential (wrapping) or uniform.
pub struct Offsets {
    rng: Xoshiro256PlusPlus,
    blocks: u64,
    bs: u64,
    random: bool,
    next_block: u64,
    /// Reads per 2^32, for mixed jobs; `u64::MAX` = always read, 0 = always write.
    read_threshold: u64,
}

impl Offsets {
    pub fn new(rw: Rw, rwmixread: u32, bs: u64, size: u64, seed: u64) -> Self {
        let read_threshold = match rw {
            Rw::Read | Rw::Randread => u64::MAX,
            Rw::Write | Rw::Randwrite => 0,
            Rw::Randrw | Rw::Readwrite => (u64::from(rwmixread) << 32) / 100,
        };
        Self {
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            blocks: (size / bs).max(1),
            bs,
            random: rw.is_random(),
            next_block: 0,
            read_threshold,
        }
    }

    /// A uniform integer in `0..n` by Lemire's multiply-shift; its bias is below
    /// n / 2^64, far under anything a test of a file's blocks could see.
    #[inline]
    fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.rng.next_u64()) * u128::from(n)) >> 64) as u64
    }

    #[inline]
    pub fn next_io(&mut self) -> (Op, u64) {
        let op = match self.read_threshold {
            u64::MAX => Op::Read,
            0 => Op::Write,
            t => {
                if self.rng.next_u64() >> 32 < t {
                    Op::Read
                } else {
                    Op::Write
                }
            }
        };
        let block = if self.random {
            self.below(self.blocks)
        } else {
            let b = self.next_block;
            self.next_block = if b + 1 == self.blocks { 0 } else { b + 1 };
            b
        };
        (op, block * self.bs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_aligned_and_inside_the_file() {
        for rw in [Rw::Read, Rw::Randread, Rw::Randrw, Rw::Readwrite] {
            let mut o = Offsets::new(rw, 50, 4096, 10 * 4096 + 100, 7);
            for _ in 0..10_000 {
                let (_, off) = o.next_io();
                assert_eq!(off % 4096, 0);
                assert!(off + 4096 <= 10 * 4096 + 100, "{off} past the end");
            }
        }
    }

    #[test]
    fn sequential_wraps_in_order() {
        let mut o = Offsets::new(Rw::Write, 50, 512, 4 * 512, 1);
        let offs: Vec<u64> = (0..6).map(|_| o.next_io().1).collect();
        assert_eq!(offs, vec![0, 512, 1024, 1536, 0, 512]);
    }

    #[test]
    fn random_offsets_cover_the_file_uniformly() {
        // Pearson's chi-squared over 64 equal bins; with 63 degrees of freedom the 99.9%
        // critical value is 103.4. Seeded, so this is deterministic, yet a biased
        // generator (e.g. modulo of a 32-bit value, or a stuck bit) fails it by far.
        let blocks = 64 * 1000;
        let mut o = Offsets::new(Rw::Randread, 0, 4096, blocks * 4096, 42);
        let n = 640_000u64;
        let mut bins = [0u64; 64];
        let mut seen = vec![false; blocks as usize];
        for _ in 0..n {
            let b = o.next_io().1 / 4096;
            bins[(b / 1000) as usize] += 1;
            seen[b as usize] = true;
        }
        let expected = n as f64 / 64.0;
        let chi2: f64 = bins
            .iter()
            .map(|&c| (c as f64 - expected).powi(2) / expected)
            .sum();
        assert!(chi2 < 103.4, "chi2 = {chi2}");
        // 10 draws per block on average: a block missed by all is e^-10 likely, ~3 of 64k.
        let missed = seen.iter().filter(|s| !**s).count();
        assert!(missed < 20, "{missed} blocks never hit");
    }

    #[test]
    fn rwmix_ratio_is_within_tolerance() {
        for pct in [0u32, 10, 50, 70, 100] {
            let mut o = Offsets::new(Rw::Randrw, pct, 4096, 1 << 30, 3);
            let n = 200_000;
            let reads = (0..n).filter(|_| o.next_io().0 == Op::Read).count();
            let share = reads as f64 / n as f64 * 100.0;
            // Binomial sd at 50% is 0.11 points; 0.5 points is > 4 sd.
            assert!(
                (share - f64::from(pct)).abs() < 0.5,
                "{pct}% asked, {share}% got"
            );
        }
    }
}
