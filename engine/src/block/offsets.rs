//! Where each I/O goes, how long it is, and whether it reads or writes.

use rand_xoshiro::rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::distribution::{Draw, Law};
use super::randmap::{FreeMap, RandomMap, MAX_FREE_MAP_BLOCKS};
use super::sizes::Sizes;
use crate::record::Op;
use crate::spec::Rw;

/// One thread's I/O pattern, resolved from the job (`Job::shape`).
#[derive(Debug, Clone)]
pub struct Shape {
    pub rw: Rw,
    pub rwmixread: u32,
    /// The reads' sizes and the writes'.
    pub sizes: [Sizes; 2],
    /// Offsets are multiples of this (`blockalign`; default the smallest size).
    pub align: u64,
    /// The thread's region of the file: `[base, base + size)`.
    pub base: u64,
    pub size: u64,
    pub law: Law,
    /// Every block once per pass (uniform random offsets, unless `norandommap`).
    pub map: bool,
    /// Sequential: bytes added to the offset after each I/O, beyond its length (fio's
    /// `rw=read:8k`; negative walks backwards).
    pub seq_skip: i64,
    /// Random: I/Os issued one after the other from each random offset (fio's
    /// `rw=randread:8`); 1 makes every offset random.
    pub seq_run: u32,
    /// Strided zones: (zone length, bytes per zone, bytes skipped after a zone).
    pub zone: Option<(u64, u64, u64)>,
}

impl Shape {
    /// One size, uniform offsets drawn with repeats, the whole region from 0.
    pub fn simple(rw: Rw, rwmixread: u32, bs: u64, size: u64) -> Self {
        Self {
            rw,
            rwmixread,
            sizes: [Sizes::fixed(bs), Sizes::fixed(bs)],
            align: bs,
            base: 0,
            size,
            law: Law::Uniform,
            map: false,
            seq_skip: 0,
            seq_run: 1,
            zone: None,
        }
    }
}

/// Strided zones (fio's `zonemode=strided`): where the current zone starts, how much of
/// it is done.
struct Zones {
    range: u64,
    size: u64,
    skip: u64,
    start: u64,
    done: u64,
}

/// How a random map keeps every block once per pass: by a permutation where each I/O is
/// one block, by a bitmap of the blocks done where an I/O may span several.
enum Map {
    Order(RandomMap),
    Free(FreeMap),
}

/// Offsets aligned to `align` inside the thread's region: sequential (wrapping) or
/// random by the shape's law.
pub struct Offsets {
    rng: Xoshiro256PlusPlus,
    sizes: [Sizes; 2],
    align: u64,
    base: u64,
    size: u64,
    random: bool,
    draw: Draw,
    map: Option<Map>,
    /// The next sequential offset in the region (may walk below 0 going backwards).
    cursor: i64,
    seq_skip: i64,
    seq_run: u32,
    run_left: u32,
    /// Reads per 2^32, for mixed jobs; `u64::MAX` = always read, 0 = always `other`.
    read_threshold: u64,
    /// What a job that does not read issues: writes, or trims.
    other: Op,
    /// Passes begun after the first: a random map's new order, or a sequential walk's
    /// return to the start (not a backward walk's, as in fio).
    pub passes: u64,
    zones: Option<Zones>,
}

impl Offsets {
    pub fn new(shape: &Shape, seed: u64) -> Self {
        let read_threshold = match shape.rw {
            Rw::Read | Rw::Randread => u64::MAX,
            Rw::Write | Rw::Randwrite | Rw::Trim | Rw::Randtrim => 0,
            Rw::Randrw | Rw::Readwrite => (u64::from(shape.rwmixread) << 32) / 100,
        };
        let other = if shape.rw.trims() {
            Op::Trim
        } else {
            Op::Write
        };
        let align = shape.align.max(1);
        let blocks = (shape.size / align).max(1);
        let random = shape.rw.is_random();
        Self {
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            sizes: shape.sizes.clone(),
            align,
            base: shape.base,
            size: shape
                .size
                .max(shape.sizes[0].max())
                .max(shape.sizes[1].max()),
            random,
            draw: Draw::new(&shape.law, blocks, align, seed ^ 0x5ca7),
            map: (random && shape.map && shape.law.is_uniform()).then(|| {
                let one_block = shape.sizes.iter().all(|s| s.is_fixed() && s.max() == align);
                if one_block || blocks > MAX_FREE_MAP_BLOCKS {
                    Map::Order(RandomMap::new(blocks, seed ^ 0xa11))
                } else {
                    Map::Free(FreeMap::new(blocks, seed ^ 0xa11))
                }
            }),
            cursor: 0,
            seq_skip: shape.seq_skip,
            seq_run: shape.seq_run.max(1),
            run_left: 0,
            read_threshold,
            other,
            passes: 0,
            zones: shape.zone.map(|(range, size, skip)| Zones {
                range: range.max(align),
                size: size.max(1),
                skip,
                start: 0,
                done: 0,
            }),
        }
    }

    /// The next sequential offset for an I/O of `len`, wrapping at either end.
    #[inline]
    fn sequential(&mut self, len: u64) -> u64 {
        let (size, len_i) = (self.size as i64, len as i64);
        let mut off = self.cursor;
        if off < 0 {
            off = (size - len_i) / self.align as i64 * self.align as i64;
        }
        if off + len_i > size {
            off = 0;
            self.passes += 1;
        }
        self.cursor = off + len_i + self.seq_skip;
        off as u64
    }

    /// The next offset in the current strided zone (sequential from its start, or
    /// uniform inside it), moving to the next zone once `zonesize` bytes were done.
    fn in_zone(&mut self, len: u64) -> u64 {
        let Some(z) = self.zones.as_mut() else {
            return 0;
        };
        let room = z.range.min(self.size - z.start).max(len);
        let off = if self.random {
            let slots = (room - len) / self.align + 1;
            z.start + super::distribution::below(&mut self.rng, slots) * self.align
        } else {
            let at = z.done % (room - len + self.align).max(self.align);
            z.start + at / self.align * self.align
        };
        z.done += len;
        if z.done >= z.size {
            z.done = 0;
            z.start += z.range + z.skip;
            if z.start + len > self.size {
                z.start = 0;
                self.passes += 1;
            }
        }
        off
    }

    /// The next I/O: its direction, offset and length.
    #[inline]
    pub fn next_io(&mut self) -> (Op, u64, u64) {
        let op = match self.read_threshold {
            u64::MAX => Op::Read,
            0 => self.other,
            t => {
                if self.rng.next_u64() >> 32 < t {
                    Op::Read
                } else {
                    Op::Write
                }
            }
        };
        // Trims take the writes' sizes (fio's third `bs` part is not kept).
        let sizes = &self.sizes[usize::from(op != Op::Read)];
        let len = if sizes.is_fixed() {
            sizes.pick(0)
        } else {
            sizes.pick(self.rng.next_u64() >> 32)
        };
        if self.zones.is_some() {
            return (op, self.base + self.in_zone(len), len);
        }
        let mut len = len;
        let off = if self.random && self.run_left == 0 {
            self.run_left = self.seq_run - 1;
            let block = match &mut self.map {
                Some(Map::Order(m)) => {
                    let (b, new_pass) = m.next_block_and_pass();
                    self.passes += u64::from(new_pass);
                    b
                }
                Some(Map::Free(m)) => {
                    // Cut short at the first block done this pass, as fio's map does.
                    let (b, blocks, new_pass) = m.take(len.div_ceil(self.align));
                    self.passes += u64::from(new_pass);
                    len = len.min(blocks * self.align);
                    b
                }
                None => self.draw.next(&mut self.rng),
            };
            let mut off = block * self.align;
            if off + len > self.size {
                off = (self.size - len) / self.align * self.align;
            }
            self.cursor = (off + len) as i64;
            off
        } else {
            self.run_left = self.run_left.saturating_sub(1);
            self.sequential(len)
        };
        (op, self.base + off, len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::distribution;
    use crate::block::sizes;

    fn simple(rw: Rw, rwmixread: u32, bs: u64, size: u64, seed: u64) -> Offsets {
        Offsets::new(&Shape::simple(rw, rwmixread, bs, size), seed)
    }

    #[test]
    fn offsets_are_aligned_and_inside_the_file() {
        for rw in [Rw::Read, Rw::Randread, Rw::Randrw, Rw::Readwrite] {
            let mut o = simple(rw, 50, 4096, 10 * 4096 + 100, 7);
            for _ in 0..10_000 {
                let (_, off, len) = o.next_io();
                assert_eq!((off % 4096, len), (0, 4096));
                assert!(off + 4096 <= 10 * 4096 + 100, "{off} past the end");
            }
        }
    }

    #[test]
    fn sequential_wraps_in_order() {
        let mut o = simple(Rw::Write, 50, 512, 4 * 512, 1);
        let offs: Vec<u64> = (0..6).map(|_| o.next_io().1).collect();
        assert_eq!(offs, vec![0, 512, 1024, 1536, 0, 512]);
    }

    #[test]
    fn a_negative_skip_reads_backwards_and_a_positive_one_strides() {
        let mut shape = Shape::simple(Rw::Read, 0, 4096, 4 * 4096);
        shape.seq_skip = -8192;
        let mut o = Offsets::new(&shape, 1);
        let offs: Vec<u64> = (0..5).map(|_| o.next_io().1 / 4096).collect();
        assert_eq!(offs, vec![0, 3, 2, 1, 0]);
        shape.seq_skip = 4096;
        let mut o = Offsets::new(&shape, 1);
        let offs: Vec<u64> = (0..4).map(|_| o.next_io().1 / 4096).collect();
        assert_eq!(offs, vec![0, 2, 0, 2]);
    }

    #[test]
    fn a_random_run_goes_on_sequentially() {
        let mut shape = Shape::simple(Rw::Randread, 0, 4096, 1 << 30);
        shape.seq_run = 4;
        let mut o = Offsets::new(&shape, 9);
        for _ in 0..100 {
            let first = o.next_io().1;
            for k in 1..4 {
                assert_eq!(o.next_io().1, first + k * 4096);
            }
        }
    }

    #[test]
    fn a_thread_stays_in_its_region() {
        let mut shape = Shape::simple(Rw::Randwrite, 0, 4096, 64 * 4096);
        shape.base = 1 << 20;
        let mut o = Offsets::new(&shape, 2);
        for _ in 0..10_000 {
            let off = o.next_io().1;
            assert!(((1 << 20)..(1 << 20) + 64 * 4096).contains(&off), "{off}");
        }
    }

    #[test]
    fn the_random_map_writes_every_block_exactly_once_per_pass() {
        let blocks = 10_007u64;
        let mut shape = Shape::simple(Rw::Randwrite, 0, 4096, blocks * 4096);
        shape.map = true;
        let mut o = Offsets::new(&shape, 5);
        for pass in 0..3 {
            let mut seen = vec![0u8; blocks as usize];
            for _ in 0..blocks {
                seen[(o.next_io().1 / 4096) as usize] += 1;
            }
            let off = seen.iter().filter(|&&c| c != 1).count();
            assert_eq!(off, 0, "pass {pass}: {off} blocks not written exactly once");
        }
    }

    #[test]
    fn random_offsets_cover_the_file_uniformly() {
        // Pearson's chi-squared over 64 equal bins; with 63 degrees of freedom the 99.9%
        // critical value is 103.4. Seeded, so this is deterministic, yet a biased
        // generator (e.g. modulo of a 32-bit value, or a stuck bit) fails it by far.
        let blocks = 64 * 1000;
        let mut o = simple(Rw::Randread, 0, 4096, blocks * 4096, 42);
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
            let mut o = simple(Rw::Randrw, pct, 4096, 1 << 30, 3);
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

    /// What the engine issues under a bssplit: each size's share within a binomial
    /// tolerance, each direction with its own mix, every offset aligned to `blockalign`
    /// and every I/O inside the file.
    #[test]
    fn a_bssplit_issues_each_size_its_share() {
        let [r, w] = sizes::parse_split("4k/10:64k/50:32k/40,1m/100").unwrap();
        let size = 256u64 << 20;
        let shape = Shape {
            sizes: [r, w],
            align: 4096,
            ..Shape::simple(Rw::Randrw, 70, 4096, size)
        };
        let mut o = Offsets::new(&shape, 17);
        let mut got = std::collections::BTreeMap::<(bool, u64), u64>::new();
        let n = 400_000u64;
        for _ in 0..n {
            let (op, off, len) = o.next_io();
            assert_eq!(off % 4096, 0);
            assert!(off + len <= size, "{off}+{len}");
            *got.entry((op == Op::Write, len)).or_default() += 1;
        }
        let reads: u64 = got.iter().filter(|e| !e.0 .0).map(|e| *e.1).sum();
        for (len, pct) in [(4096u64, 10.0), (65536, 50.0), (32768, 40.0)] {
            let want = reads as f64 * pct / 100.0;
            let c = got[&(false, len)] as f64;
            assert!(
                (c - want).abs() < 5.0 * want.sqrt() + 1.0,
                "{len}: {c} against {want}"
            );
        }
        let writes = n - reads;
        assert_eq!(got[&(true, 1 << 20)], writes, "every write is 1m");
    }

    #[test]
    fn strided_zones_read_a_zone_then_skip() {
        // 64k zones, 32k read in each, then 128k skipped: zones start at 0, 192k, 384k...
        let shape = Shape {
            zone: Some((65536, 32768, 131072)),
            ..Shape::simple(Rw::Read, 0, 4096, 1 << 20)
        };
        let mut o = Offsets::new(&shape, 1);
        let offs: Vec<u64> = (0..24).map(|_| o.next_io().1 / 4096).collect();
        let want: Vec<u64> = (0..3)
            .flat_map(|z| (0..8).map(move |i| z * 48 + i))
            .collect();
        assert_eq!(offs, want);
        // Random I/O stays inside the zone.
        let shape = Shape {
            zone: Some((65536, 32768, 131072)),
            ..Shape::simple(Rw::Randread, 0, 4096, 1 << 20)
        };
        let mut o = Offsets::new(&shape, 1);
        for z in 0..4u64 {
            for _ in 0..8 {
                let b = o.next_io().1 / 4096;
                assert!((z * 48..z * 48 + 16).contains(&b), "zone {z}: block {b}");
            }
        }
    }

    /// Offsets under a skewed law, counted as the engine draws them: zipf's hottest
    /// blocks take their share (the law itself is checked in `distribution`).
    #[test]
    fn a_zipf_job_concentrates_its_hits() {
        let blocks = 100_000u64;
        let shape = Shape {
            law: distribution::parse("zipf:1.1").unwrap(),
            map: true, // the map applies to uniform offsets only
            ..Shape::simple(Rw::Randread, 0, 4096, blocks * 4096)
        };
        let mut o = Offsets::new(&shape, 4);
        let mut c = vec![0u64; blocks as usize];
        let n = 1_000_000u64;
        for _ in 0..n {
            c[(o.next_io().1 / 4096) as usize] += 1;
        }
        c.sort_unstable_by(|a, b| b.cmp(a));
        let top1pct: u64 = c[..1000].iter().sum();
        let h: f64 = (1..=blocks).map(|k| (k as f64).powf(-1.1)).sum();
        let want: f64 = (1..=1000u64).map(|k| (k as f64).powf(-1.1)).sum::<f64>() / h;
        let share = top1pct as f64 / n as f64;
        assert!((share - want).abs() < 0.01, "{share} against {want}");
    }
}
