//! Where random I/O lands (`random_distribution`, fio's names and syntax): uniform, a
//! skewed law (zipf, pareto, normal) or zones that take given shares of the accesses.
//!
//! - `zipf:θ`: the block of rank k is hit in proportion to 1/k^θ (rejection-inversion,
//!   `rand_distr::Zipf`: no table, any file size).
//! - `pareto:h`: a share h of the blocks takes 1-h of the accesses (0.2: 80/20), fio's
//!   power law n·u^(ln h / ln(1-h)).
//! - The hot blocks of zipf and pareto are scattered over the file by a keyed permutation,
//!   as fio hashes them: a database's hot pages are not all at its start.
//! - `normal:σ`: around the file's middle, σ percent of its size wide (fio's `normal`
//!   and `gauss`), not scattered: it is a locality, not a hot set.
//! - `zoned:a/r:a/r...`: a percent of the accesses goes to the next r percent of the file
//!   (a zone with no r takes the rest of the file); `zoned_abs:a/size:...` with sizes.

use rand_distr::{Distribution, Normal, Zipf};
use rand_xoshiro::rand_core::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;

use super::randmap::Permutation;
use crate::units::parse_size;

/// A zone: its share of the accesses and its extent (a percent of the file, or bytes).
#[derive(Debug, Clone, PartialEq)]
pub struct Zone {
    pub access_pct: f64,
    /// `None`: the rest of the file.
    pub extent: Option<f64>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Law {
    Uniform,
    Zipf(f64),
    Pareto(f64),
    Normal(f64),
    /// Extents in percent of the file.
    Zoned(Vec<Zone>),
    /// Extents in bytes.
    ZonedAbs(Vec<Zone>),
}

impl Law {
    pub fn is_uniform(&self) -> bool {
        *self == Law::Uniform
    }
}

fn number(text: &str, what: &str) -> Result<f64, String> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .ok_or_else(|| format!("`{text}` is not a number ({what})"))
}

fn zones(text: &str, absolute: bool) -> Result<Vec<Zone>, String> {
    if text.contains(',') {
        return Err(format!(
            "`{text}`: zones per direction (`,`) are not supported: one set of zones serves reads and writes"
        ));
    }
    let mut out = Vec::new();
    for part in text.split(':') {
        let (a, r) = part
            .split_once('/')
            .ok_or_else(|| format!("`{part}` is not a zone (`access%/extent`)"))?;
        let access_pct = number(a, "a share of the accesses, in percent")?;
        if !(0.0..=100.0).contains(&access_pct) {
            return Err(format!("`{a}` is out of range (0 to 100)"));
        }
        let r = r.trim();
        let extent = if r.is_empty() {
            None
        } else if absolute {
            Some(parse_size(r).map_err(|e| format!("`{r}`: {e}"))? as f64)
        } else {
            let v = number(r, "a share of the file, in percent")?;
            if !(0.0..=100.0).contains(&v) {
                return Err(format!("`{r}` is out of range (0 to 100)"));
            }
            Some(v)
        };
        out.push(Zone { access_pct, extent });
    }
    let sum: f64 = out.iter().map(|z| z.access_pct).sum();
    if (sum - 100.0).abs() > 1e-6 {
        return Err(format!("`{text}`: the accesses add up to {sum}%, not 100%"));
    }
    if !absolute {
        let ext: f64 = out.iter().filter_map(|z| z.extent).sum();
        if ext > 100.0 + 1e-6 {
            return Err(format!(
                "`{text}`: the zones cover {ext}% of the file, more than 100%"
            ));
        }
    }
    if out.iter().rev().skip(1).any(|z| z.extent.is_none()) {
        return Err(format!(
            "`{text}`: only the last zone may leave out its extent (it takes the rest)"
        ));
    }
    Ok(out)
}

/// Reads a `random_distribution` value.
pub fn parse(text: &str) -> Result<Law, String> {
    let (name, arg) = match text.split_once(':') {
        Some((n, a)) => (n.trim(), Some(a)),
        None => (text.trim(), None),
    };
    let need = || {
        arg.filter(|a| !a.trim().is_empty())
            .ok_or_else(|| format!("`{name}` needs a parameter (`{name}:...`)"))
    };
    let law = match name {
        "random" => Law::Uniform,
        "zipf" => {
            let t = number(need()?, "zipf's exponent θ")?;
            if t <= 0.0 || t > 100.0 {
                return Err(format!("zipf's θ = {t} is out of range (more than 0, at most 100)"));
            }
            Law::Zipf(t)
        }
        "pareto" => {
            let h = number(need()?, "pareto's hot share h")?;
            if h <= 0.0 || h >= 1.0 {
                return Err(format!("pareto's h = {h} is out of range (between 0 and 1)"));
            }
            Law::Pareto(h)
        }
        "normal" | "gauss" => {
            let s = number(need()?, "the width, in percent of the file")?;
            if s <= 0.0 || s > 100.0 {
                return Err(format!("normal's σ = {s} is out of range (more than 0, at most 100 percent)"));
            }
            Law::Normal(s)
        }
        "zoned" => Law::Zoned(zones(need()?, false)?),
        "zoned_abs" => Law::ZonedAbs(zones(need()?, true)?),
        other => {
            return Err(format!(
                "`{other}` is not a distribution (random, zipf:θ, pareto:h, normal:σ, zoned:..., zoned_abs:...)"
            ))
        }
    };
    if law == Law::Uniform && arg.is_some() {
        return Err("`random` takes no parameter".into());
    }
    Ok(law)
}

/// Draws block numbers in `0..n` by a law.
pub struct Draw {
    n: u64,
    how: How,
}

enum How {
    Uniform,
    Zipf(Zipf<f64>, Permutation),
    Pareto(f64, Permutation),
    Normal(Normal<f64>),
    /// Cumulative access shares per 2^32 and each zone's `[first, end)` blocks.
    Zones(Vec<(u64, u64, u64)>),
}

/// A uniform integer in `0..n` (Lemire's multiply-shift).
#[inline]
pub fn below(rng: &mut Xoshiro256PlusPlus, n: u64) -> u64 {
    ((u128::from(rng.next_u64()) * u128::from(n)) >> 64) as u64
}

impl Draw {
    /// `n` blocks of `unit` bytes; `seed` keys the scattering of hot blocks.
    pub fn new(law: &Law, n: u64, unit: u64, seed: u64) -> Self {
        let n = n.max(1);
        let how = match law {
            Law::Uniform => How::Uniform,
            Law::Zipf(t) => How::Zipf(
                Zipf::new(n as f64, *t).expect("θ is checked to be positive"),
                Permutation::new(n, seed ^ 0x21f),
            ),
            Law::Pareto(h) => {
                How::Pareto(h.ln() / (1.0 - h).ln(), Permutation::new(n, seed ^ 0x9a7))
            }
            Law::Normal(s) => How::Normal(
                Normal::new(n as f64 / 2.0, (s / 100.0 * n as f64).max(1e-9))
                    .expect("σ is checked to be positive"),
            ),
            Law::Zoned(z) | Law::ZonedAbs(z) => {
                let absolute = matches!(law, Law::ZonedAbs(_));
                let mut out = Vec::new();
                let (mut acc, mut first) = (0.0, 0u64);
                for zone in z {
                    let blocks = match zone.extent {
                        None => n - first,
                        Some(e) if absolute => ((e / unit as f64).ceil() as u64).min(n - first),
                        Some(pct) => ((pct / 100.0 * n as f64).round() as u64).min(n - first),
                    };
                    acc += zone.access_pct / 100.0;
                    if zone.access_pct > 0.0 {
                        out.push((
                            (acc * (1u64 << 32) as f64).round() as u64,
                            first,
                            first + blocks.max(1),
                        ));
                    }
                    first = (first + blocks).min(n);
                }
                if let Some(last) = out.last_mut() {
                    last.0 = 1 << 32;
                }
                How::Zones(out)
            }
        };
        Self { n, how }
    }

    /// The next block, in `0..n`.
    #[inline]
    pub fn next(&mut self, rng: &mut Xoshiro256PlusPlus) -> u64 {
        let n = self.n;
        match &self.how {
            How::Uniform => below(rng, n),
            How::Zipf(z, scatter) => {
                let k = z.sample(rng) as u64;
                scatter.at(k.clamp(1, n) - 1)
            }
            How::Pareto(pow, scatter) => {
                let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
                let rank = ((n as f64) * u.powf(*pow)) as u64;
                scatter.at(rank.min(n - 1))
            }
            How::Normal(d) => loop {
                let x = d.sample(rng);
                if x >= 0.0 && x < n as f64 {
                    return x as u64;
                }
            },
            How::Zones(zones) => {
                let r = rng.next_u64() >> 32;
                let i = zones.partition_point(|z| z.0 <= r).min(zones.len() - 1);
                let (_, first, end) = zones[i];
                let end = end.min(n).max(first + 1);
                (first + below(rng, end - first)).min(n - 1)
            }
        }
    }

    /// The law's rank of each block is not needed by callers, but tests want to sort
    /// counts by how hot a block should be: the block of rank `k` (0 hottest).
    #[cfg(test)]
    pub fn block_of_rank(&self, k: u64) -> u64 {
        match &self.how {
            How::Zipf(_, p) | How::Pareto(_, p) => p.at(k),
            _ => k,
        }
    }
}

#[cfg(test)]
mod tests {
    use rand_xoshiro::rand_core::SeedableRng;

    use super::*;

    fn counts(law: &str, n: u64, draws: u64) -> (Draw, Vec<u64>) {
        let mut d = Draw::new(&parse(law).unwrap(), n, 4096, 3);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
        let mut c = vec![0u64; n as usize];
        for _ in 0..draws {
            c[d.next(&mut rng) as usize] += 1;
        }
        (d, c)
    }

    #[test]
    fn zipf_hits_rank_k_in_proportion_to_k_to_the_minus_theta() {
        let (n, draws, theta) = (1000u64, 2_000_000u64, 1.2f64);
        let (d, c) = counts("zipf:1.2", n, draws);
        let h: f64 = (1..=n).map(|k| (k as f64).powf(-theta)).sum();
        for k in [1u64, 2, 5, 10, 100] {
            let want = draws as f64 * (k as f64).powf(-theta) / h;
            let got = c[d.block_of_rank(k - 1) as usize] as f64;
            // 5 binomial sd, or 3% where that is wider.
            let tol = (5.0 * want.sqrt()).max(0.03 * want);
            assert!((got - want).abs() < tol, "rank {k}: {got} against {want}");
        }
    }

    #[test]
    fn pareto_gives_a_share_h_of_the_blocks_one_minus_h_of_the_hits() {
        let (n, draws) = (10_000u64, 1_000_000u64);
        let (d, c) = counts("pareto:0.2", n, draws);
        let hot: u64 = (0..n / 5).map(|k| c[d.block_of_rank(k) as usize]).sum();
        let share = hot as f64 / draws as f64;
        assert!((share - 0.8).abs() < 0.01, "{share}");
    }

    #[test]
    fn zoned_gives_each_zone_its_share() {
        let (n, draws) = (10_000u64, 1_000_000u64);
        let (_, c) = counts("zoned:50/5:30/15:20/", n, draws);
        let part =
            |a: u64, b: u64| c[a as usize..b as usize].iter().sum::<u64>() as f64 / draws as f64;
        assert!((part(0, 500) - 0.5).abs() < 0.005);
        assert!((part(500, 2000) - 0.3).abs() < 0.005);
        assert!((part(2000, n) - 0.2).abs() < 0.005);
    }

    #[test]
    fn zoned_abs_counts_bytes() {
        // 4 KiB blocks: 4m is 1024 blocks.
        let (_, c) = counts("zoned_abs:60/4m:40/", 10_000, 500_000);
        let first = c[..1024].iter().sum::<u64>() as f64 / 500_000.0;
        assert!((first - 0.6).abs() < 0.005, "{first}");
    }

    #[test]
    fn normal_is_centred_with_its_width() {
        let (n, draws) = (100_000u64, 400_000u64);
        let (_, c) = counts("normal:10", n, draws);
        // Within one σ (10% of the file) of the middle: 68.3%.
        let inner: u64 = c[40_000..60_000].iter().sum();
        let share = inner as f64 / draws as f64;
        assert!((share - 0.683).abs() < 0.01, "{share}");
    }

    #[test]
    fn bad_laws_say_why() {
        for (text, says) in [
            ("zipf", "needs a parameter"),
            ("zipf:0", "out of range"),
            ("pareto:1.5", "out of range"),
            ("zoned:50/5:30/15", "not 100%"),
            ("zoned:50/60:50/60", "more than 100%"),
            ("zoned:50/:50/10", "only the last zone"),
            ("zoned:50/5:50/5,100/100", "per direction"),
            ("lfsr", "not a distribution"),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
    }
}
