//! fio's random map without the map: every block once per pass, in an order that is a
//! keyed permutation of the block numbers (a fresh key each pass), so it costs a few
//! multiplications per I/O and no memory, whatever the file's size. fio keeps a bitmap
//! of the blocks done (an axmap); the order differs, the guarantee is the same.

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
            self.pass += 1;
            self.next = 0;
            self.perm = Permutation::new(self.perm.n, self.seed ^ mix(self.pass));
        }
        let b = self.perm.at(self.next);
        self.next += 1;
        (b, new_pass)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
