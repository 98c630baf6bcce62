//! The generated file set: how many files, where each goes, its size and its content,
//! all derived from the seed and the file's number alone (no per-file state), so any
//! thread can make any directory and the same spec always gives the same tree.

use crate::spec::{Job, SizeDist};

/// Directories per group when the set has more than this many directories.
pub const DIRS_PER_GROUP: u64 = 1000;
/// Largest size a lognormal draw is clamped to.
const MAX_DRAWN_SIZE: u64 = 64 << 30;

const SALT_SIZE: u64 = 0x51_7e;
const SALT_SIZE2: u64 = 0x51_7f;
const SALT_DUP: u64 = 0xd0_0b;
const SALT_CONTENT: u64 = 0xc0_47;

/// splitmix64 of `seed`, `i` and a salt: a cheap, well-mixed hash.
pub fn mix(seed: u64, i: u64, salt: u64) -> u64 {
    let mut z = seed
        .wrapping_add(i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
        .wrapping_add(salt.wrapping_mul(0xd1b5_4a32_d192_ed03));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A uniform number in (0, 1].
fn unit(h: u64) -> f64 {
    ((h >> 11) + 1) as f64 / (1u64 << 53) as f64
}

#[derive(Debug, Clone)]
enum Sizes {
    Fixed(u64),
    Lognormal {
        median: f64,
        sigma: f64,
    },
    /// (size, cumulative weight in 0..=1)
    Buckets(Vec<(u64, f64)>),
}

/// What `create` makes, from the job's set keys.
#[derive(Debug, Clone)]
pub struct FileSet {
    pub nr_files: u64,
    pub per_dir: u64,
    pub ndirs: u64,
    sizes: Sizes,
    dup_share: f64,
    seed: u64,
}

impl FileSet {
    pub fn from_job(job: &Job) -> Self {
        let nr_files = job.nr_files.unwrap_or(1);
        let per_dir = job.files_per_dir.unwrap_or(1000).max(1);
        let file_size = job.file_size.unwrap_or(0);
        let sizes = match (&job.size_buckets, job.size_dist) {
            (Some(b), _) => {
                let total: f64 = b.iter().map(|(_, w)| *w).sum();
                let mut acc = 0.0;
                Sizes::Buckets(
                    b.iter()
                        .map(|(s, w)| {
                            acc += w / total;
                            (*s, acc)
                        })
                        .collect(),
                )
            }
            (None, Some(SizeDist::Lognormal)) => Sizes::Lognormal {
                median: file_size as f64,
                sigma: job.size_sigma.unwrap_or(1.0),
            },
            _ => Sizes::Fixed(file_size),
        };
        Self {
            nr_files,
            per_dir,
            ndirs: nr_files.div_ceil(per_dir),
            sizes,
            dup_share: job.dup_share.unwrap_or(0.0),
            seed: job.randseed,
        }
    }

    /// The files in directory `d`.
    pub fn files_in(&self, d: u64) -> std::ops::Range<u64> {
        let lo = d * self.per_dir;
        lo..(lo + self.per_dir).min(self.nr_files)
    }

    /// Whether directories are grouped one level deeper (`gNNNN/dNNNNNN`).
    pub fn grouped(&self) -> bool {
        self.ndirs > DIRS_PER_GROUP
    }

    pub fn groups(&self) -> u64 {
        self.ndirs.div_ceil(DIRS_PER_GROUP)
    }

    pub fn group_name(g: u64) -> String {
        format!("g{g:04}")
    }

    /// Directory `d` relative to the set's root.
    pub fn dir_rel(&self, d: u64) -> String {
        if self.grouped() {
            format!("{}/d{d:06}", Self::group_name(d / DIRS_PER_GROUP))
        } else {
            format!("d{d:04}")
        }
    }

    /// Whether file `i` duplicates an earlier file's content. Exactly
    /// round-down(`dup_share` x n) files are, spread evenly over the set.
    pub fn is_dup(&self, i: u64) -> bool {
        i > 0 && (((i + 1) as f64) * self.dup_share).floor() > ((i as f64) * self.dup_share).floor()
    }

    /// The original file whose content (and size) file `i` has.
    pub fn source(&self, mut i: u64) -> u64 {
        while self.is_dup(i) {
            i = mix(self.seed, i, SALT_DUP) % i;
        }
        i
    }

    /// Size of file `i`.
    pub fn size(&self, i: u64) -> u64 {
        let s = self.source(i);
        let h = mix(self.seed, s, SALT_SIZE);
        match &self.sizes {
            Sizes::Fixed(b) => *b,
            Sizes::Lognormal { median, sigma } => {
                // Box-Muller: a standard normal draw from two uniform ones.
                let u1 = unit(h);
                let u2 = unit(mix(self.seed, s, SALT_SIZE2));
                let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                let v = median * (sigma * z).exp();
                (v.round() as u64).min(MAX_DRAWN_SIZE)
            }
            Sizes::Buckets(b) => {
                let u = unit(h);
                b.iter()
                    .find(|(_, c)| u <= *c)
                    .or(b.last())
                    .map_or(0, |(s, _)| *s)
            }
        }
    }

    /// The content stream of file `i` (its source's).
    pub fn content(&self, i: u64) -> Content {
        Content::new(mix(self.seed, self.source(i), SALT_CONTENT))
    }
}

/// Writes `f` + the file number (9 digits at least) + NUL into `buf`; returns the length
/// with the NUL.
pub fn file_name(i: u64, buf: &mut [u8; 24]) -> usize {
    let mut digits = [0u8; 20];
    let mut n = i;
    let mut k = 0;
    while n > 0 || k < 9 {
        digits[k] = b'0' + (n % 10) as u8;
        n /= 10;
        k += 1;
    }
    buf[0] = b'f';
    for j in 0..k {
        buf[1 + j] = digits[k - 1 - j];
    }
    buf[1 + k] = 0;
    k + 2
}

/// Incompressible, deterministic bytes (wyrand), filled 8 bytes at a time, so a file
/// written in chunks of any multiple of 8 gets the same bytes.
pub struct Content {
    state: u64,
}

impl Content {
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    #[inline]
    fn next(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0xa076_1d64_78bd_642f);
        let t = u128::from(self.state) * u128::from(self.state ^ 0xe703_7ed1_a0b4_28db);
        (t >> 64) as u64 ^ t as u64
    }

    /// Fills `buf`; only the last chunk of a file may have a length not a multiple of 8.
    pub fn fill(&mut self, buf: &mut [u8]) {
        let mut chunks = buf.chunks_exact_mut(8);
        for c in &mut chunks {
            c.copy_from_slice(&self.next().to_le_bytes());
        }
        let rest = chunks.into_remainder();
        if !rest.is_empty() {
            let v = self.next().to_le_bytes();
            let n = rest.len();
            rest.copy_from_slice(&v[..n]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_padded_and_nul_terminated() {
        let mut b = [0u8; 24];
        let n = file_name(42, &mut b);
        assert_eq!(&b[..n], b"f000000042\0");
        let n = file_name(12_345_678_901, &mut b);
        assert_eq!(&b[..n], b"f12345678901\0");
    }

    #[test]
    fn content_is_the_same_in_any_chunking() {
        let mut a = vec![0u8; 1000];
        Content::new(7).fill(&mut a);
        let mut b = vec![0u8; 1000];
        let mut c = Content::new(7);
        c.fill(&mut b[..512]);
        c.fill(&mut b[512..]);
        assert_eq!(a, b);
    }
}
