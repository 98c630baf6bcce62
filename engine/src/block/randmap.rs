//! fio's random map without the map: every block once per pass, in an order that is a
//! keyed permutation of the block numbers (a fresh key each pass), so it costs a few
//! multiplications per I/O and no memory, whatever the file's size. fio keeps a bitmap
//! of the blocks done (an axmap); the order differs, the guarantee is the same.
//!
//! An I/O that covers several blocks (a size mix, or `blockalign` below the size) would
//! land on blocks an earlier one took: `FreeMap` keeps the bitmap then, as fio does, and
//! cuts each I/O short at the first block already done, so that every block is still
//! done once per pass (fio's I/Os late in a pass are short for the same reason).

/// A keyed permutation of `0..n`: a 4-round Feistel network on the fewest even number of
/// bits that covers `n`, walked until it lands below `n` (cycle walking: the network's
/// domain is under 4n, so a lookup takes under 4 rounds of it on average).
#[derive(Debug, Clone)]
pub struct Permutation {
    n: u64,
    half: u32,
    mask: u64,
    keys: [u64; 4],
}

/// splitmix64's finalizer: a bijective mix of 64 bits.
#[inline]
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

impl Permutation {
    pub fn new(n: u64, key: u64) -> Self {
        let n = n.max(1);
        let bits = 64 - (n - 1).max(1).leading_zeros();
        let half = bits.div_ceil(2).max(1);
        let keys =
            std::array::from_fn(|i| mix(key ^ (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)));
        Self {
            n,
            half,
            mask: (1u64 << half) - 1,
            keys,
        }
    }

    #[inline]
    fn encrypt(&self, x: u64) -> u64 {
        let (mut l, mut r) = (x >> self.half, x & self.mask);
        for k in self.keys {
            let t = l ^ (mix(r ^ k) & self.mask);
            l = r;
            r = t;
        }
        (l << self.half) | r
    }

    /// The `i`th element of the permutation (`i < n`).
    #[inline]
    pub fn at(&self, i: u64) -> u64 {
        let mut x = i;
        loop {
            x = self.encrypt(x);
            if x < self.n {
                return x;
            }
        }
    }
}

/// Blocks `0..n` in a fresh order each pass.
#[derive(Debug, Clone)]
pub struct RandomMap {
    perm: Permutation,
    seed: u64,
    pass: u64,
    next: u64,
}

impl RandomMap {
    /// Begins the next pass: a fresh order, from its start.
    fn new_pass(&mut self) {
        self.pass += 1;
        self.next = 0;
        self.perm = Permutation::new(self.perm.n, self.seed ^ mix(self.pass));
    }

    pub fn new(n: u64, seed: u64) -> Self {
        Self {
            perm: Permutation::new(n, seed),
            seed,
            pass: 0,
            next: 0,
        }
    }

    #[inline]
    pub fn next_block(&mut self) -> u64 {
        self.next_block_and_pass().0
    }

    /// The next block, and whether it begins a new pass (not the first).
    #[inline]
    pub fn next_block_and_pass(&mut self) -> (u64, bool) {
        let new_pass = self.next == self.perm.n;
        if new_pass {
            self.new_pass();
        }
        let b = self.perm.at(self.next);
        self.next += 1;
        (b, new_pass)
    }
}

/// The most blocks a `FreeMap` keeps (128 MiB of bitmap): above it, a size mix draws its
/// first blocks from the permutation alone and may overlap within a pass.
pub const MAX_FREE_MAP_BLOCKS: u64 = 1 << 30;

/// Blocks `0..n` in a fresh order each pass, for I/Os that span several blocks: each
/// starts at the next block of the order that is not done yet (or the first free one
/// after it) and takes free blocks up to its length, stopping at one already done.
#[derive(Debug, Clone)]
pub struct FreeMap {
    order: RandomMap,
    /// A set bit: the block is done this pass.
    done: Vec<u64>,
    /// A set bit: that word of `done` is full (found free blocks without a scan of it).
    full: Vec<u64>,
    left: u64,
    n: u64,
}

impl FreeMap {
    pub fn new(n: u64, seed: u64) -> Self {
        let n = n.max(1);
        let words = n.div_ceil(64) as usize;
        Self {
            order: RandomMap::new(n, seed),
            done: vec![0; words],
            full: vec![0; words.div_ceil(64)],
            left: n,
            n,
        }
    }

    #[inline]
    fn is_done(&self, b: u64) -> bool {
        self.done[(b / 64) as usize] >> (b % 64) & 1 == 1
    }

    /// `done`'s word `i`, with the bits past `n` in the last word counted as done.
    #[inline]
    fn word(&self, i: usize) -> u64 {
        let tail = self.n - i as u64 * 64;
        self.done[i] | if tail < 64 { !0u64 << tail } else { 0 }
    }

    /// The first word in `from..to` with a block not done, found through `full`.
    fn first_free_word(&self, from: usize, to: usize) -> Option<usize> {
        let mut i = from;
        while i < to {
            let (s, bit) = (i / 64, i % 64);
            // Zero bits of the summary are words with a free block; drop those below
            // `i` and those at or past `to`.
            let mut free = !self.full[s] & (!0u64 << bit);
            let end = (to - s * 64).min(64);
            if end < 64 {
                free &= (1u64 << end) - 1;
            }
            if free != 0 {
                return Some(s * 64 + free.trailing_zeros() as usize);
            }
            i = (s + 1) * 64;
        }
        None
    }

    /// The first block not done at or after `b`, wrapping to 0 (some block is free).
    fn next_free(&self, b: u64) -> u64 {
        let w = (b / 64) as usize;
        let here = self.word(w) | ((1u64 << (b % 64)) - 1);
        if here != !0 {
            return w as u64 * 64 + u64::from(here.trailing_ones());
        }
        let i = self
            .first_free_word(w + 1, self.done.len())
            .or_else(|| self.first_free_word(0, w + 1))
            .expect("next_free is only asked while some block is free");
        i as u64 * 64 + u64::from(self.word(i).trailing_ones())
    }

    fn mark(&mut self, b: u64) {
        let i = (b / 64) as usize;
        self.done[i] |= 1 << (b % 64);
        if self.word(i) == !0 {
            self.full[i / 64] |= 1 << (i % 64);
        }
    }

    /// The next I/O's first block, how many blocks it takes (1 to `want`), and whether
    /// it begins a new pass (not the first).
    pub fn take(&mut self, want: u64) -> (u64, u64, bool) {
        let new_pass = self.left == 0;
        if new_pass {
            self.done.fill(0);
            self.full.fill(0);
            self.left = self.n;
            // The order's pass ends with the map's: each I/O took at least one block.
            self.order.new_pass();
        }
        let (mut b, _) = self.order.next_block_and_pass();
        if self.is_done(b) {
            b = self.next_free(b);
        }
        let mut taken = 0;
        while taken < want.max(1) && b + taken < self.n && !self.is_done(b + taken) {
            self.mark(b + taken);
            taken += 1;
        }
        self.left -= taken;
        (b, taken, new_pass)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_size_mix_does_every_block_once_per_pass() {
        for (n, seed) in [
            (1u64, 1u64),
            (63, 2),
            (64, 3),
            (65, 4),
            (4096 + 17, 5),
            (200_000, 6),
        ] {
            let mut m = FreeMap::new(n, seed);
            let mut rng = seed;
            for pass in 0..3 {
                let mut seen = vec![0u32; n as usize];
                let mut left = n;
                let mut trimmed = 0;
                while left > 0 {
                    rng = mix(rng);
                    let want = [1, 2, 4, 8, 128][(rng % 5) as usize];
                    let (b, k, new_pass) = m.take(want);
                    assert_eq!(new_pass, pass > 0 && left == n, "n = {n}: pass {pass}");
                    assert!((1..=want).contains(&k) && b + k <= n, "n = {n}: {b} + {k}");
                    trimmed += u64::from(k < want);
                    for x in b..b + k {
                        seen[x as usize] += 1;
                    }
                    left -= k;
                }
                assert!(seen.iter().all(|&c| c == 1), "n = {n}: not once each");
                if n > 10_000 {
                    // Late in a pass free runs are short, so some I/Os come out shorter.
                    assert!(trimmed > 0, "n = {n}: no I/O was cut short");
                }
            }
        }
    }

    #[test]
    fn every_block_once_per_pass_and_a_new_order_each_pass() {
        for n in [1u64, 2, 3, 7, 64, 1000, 4097, 100_003] {
            let mut m = RandomMap::new(n, 42);
            let mut orders = Vec::new();
            for _ in 0..3 {
                let order: Vec<u64> = (0..n).map(|_| m.next_block()).collect();
                let mut seen = vec![0u32; n as usize];
                for &b in &order {
                    seen[b as usize] += 1;
                }
                assert!(seen.iter().all(|&c| c == 1), "n = {n}: not once each");
                orders.push(order);
            }
            if n > 3 {
                assert_ne!(orders[0], orders[1], "n = {n}: the same order twice");
                // Not the identity either: a map that walked in order would pass above.
                assert_ne!(orders[0], (0..n).collect::<Vec<_>>(), "n = {n}");
            }
        }
    }

    #[test]
    fn the_order_is_spread_not_clustered() {
        // The first tenth of a pass should land about evenly in the file's ten tenths.
        let n = 1_000_000u64;
        let mut m = RandomMap::new(n, 7);
        let mut bins = [0u64; 10];
        for _ in 0..n / 10 {
            bins[(m.next_block() * 10 / n) as usize] += 1;
        }
        for b in bins {
            assert!((9_000..11_000).contains(&b), "{bins:?}");
        }
    }
}
