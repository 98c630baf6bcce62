//! How long each I/O is: one `bs`, or a mix drawn per I/O (`bssplit`, `bsrange`), each
//! direction with its own.
//!
//! The text forms are fio's: `bssplit = "4k/50:8k/30:64k/20"` (size/percent; a size with
//! no percent shares what the others leave), `bsrange = "4k-64k"` (every multiple of the
//! smaller size up to the larger, equally likely, as fio draws them). A `,` separates
//! the reads' mix from the writes' (`"4k/100,64k/100"`); one mix serves both.

use crate::units::parse_size;

/// The sizes one direction draws from, with their shares.
#[derive(Debug, Clone, PartialEq)]
pub struct Sizes {
    sizes: Vec<u64>,
    /// Cumulative shares per 2^32, one per size; the last is 2^32.
    thresholds: Vec<u64>,
}

impl Sizes {
    pub fn fixed(bs: u64) -> Self {
        Self {
            sizes: vec![bs],
            thresholds: vec![1 << 32],
        }
    }

    /// From `[bytes, percent]` pairs whose percents add up to 100.
    fn weighted(pairs: &[(u64, f64)]) -> Self {
        let total: f64 = pairs.iter().map(|p| p.1).sum();
        let mut acc = 0.0;
        let mut thresholds = Vec::with_capacity(pairs.len());
        for (_, pct) in pairs {
            acc += pct / total;
            thresholds.push((acc * (1u64 << 32) as f64).round() as u64);
        }
        if let Some(last) = thresholds.last_mut() {
            *last = 1 << 32;
        }
        Self {
            sizes: pairs.iter().map(|p| p.0).collect(),
            thresholds,
        }
    }

    pub fn min(&self) -> u64 {
        self.sizes.iter().copied().min().unwrap_or(0)
    }
    pub fn max(&self) -> u64 {
        self.sizes.iter().copied().max().unwrap_or(0)
    }
    pub fn all(&self) -> &[u64] {
        &self.sizes
    }
    pub fn is_fixed(&self) -> bool {
        self.sizes.len() == 1
    }

    /// The size for a draw `r` (32 uniform bits).
    #[inline]
    pub fn pick(&self, r: u64) -> u64 {
        if let [only] = self.sizes[..] {
            return only;
        }
        let i = self.thresholds.partition_point(|&t| t <= r);
        self.sizes[i.min(self.sizes.len() - 1)]
    }
}

/// One direction's mix from fio's `size/pct:size/pct...`, as `[bytes, percent]` pairs.
fn split_pairs(text: &str) -> Result<Vec<(u64, f64)>, String> {
    let mut given = Vec::new();
    let mut open = Vec::new();
    for (i, part) in text.split(':').enumerate() {
        let part = part.trim();
        if part.is_empty() {
            return Err(format!("`{text}`: an empty entry"));
        }
        let (size, pct) = match part.split_once('/') {
            Some((s, p)) => (s, Some(p)),
            None => (part, None),
        };
        let bytes = parse_size(size).map_err(|e| format!("`{size}`: {e}"))?;
        if bytes == 0 {
            return Err(format!("`{size}`: a size of 0"));
        }
        match pct.map(str::trim).filter(|p| !p.is_empty()) {
            Some(p) => {
                let v: f64 = p
                    .parse()
                    .map_err(|_| format!("`{p}` is not a percentage"))?;
                if !(0.0..=100.0).contains(&v) {
                    return Err(format!("`{p}` is out of range (0 to 100)"));
                }
                given.push((i, bytes, v));
            }
            None => open.push((i, bytes)),
        }
    }
    let sum: f64 = given.iter().map(|g| g.2).sum();
    if sum > 100.0 + 1e-9 {
        return Err(format!(
            "`{text}`: the percentages add up to {sum}, more than 100"
        ));
    }
    let rest = if open.is_empty() {
        0.0
    } else {
        (100.0 - sum) / open.len() as f64
    };
    if open.is_empty() && (sum - 100.0).abs() > 1e-6 {
        return Err(format!(
            "`{text}`: the percentages add up to {sum}, not 100 (leave one size without a percentage to give it the rest)"
        ));
    }
    let mut pairs: Vec<(usize, u64, f64)> = given;
    pairs.extend(open.into_iter().map(|(i, b)| (i, b, rest)));
    pairs.sort_by_key(|p| p.0);
    let pairs: Vec<(u64, f64)> = pairs
        .into_iter()
        .filter(|p| p.2 > 0.0)
        .map(|p| (p.1, p.2))
        .collect();
    if pairs.is_empty() {
        return Err(format!("`{text}`: no size has a share above 0"));
    }
    Ok(pairs)
}

/// The reads' and the writes' mix from a `bssplit` text (`,` between them).
pub fn parse_split(text: &str) -> Result<[Sizes; 2], String> {
    per_direction(text, |t| split_pairs(t).map(|p| Sizes::weighted(&p)))
}

/// The reads' and the writes' mix from a `bsrange` text (`min-max`, `,` between them).
pub fn parse_range(text: &str) -> Result<[Sizes; 2], String> {
    per_direction(text, |t| {
        let (a, b) = t
            .split_once('-')
            .ok_or_else(|| format!("`{t}` is not a range (`min-max`, e.g. `4k-64k`)"))?;
        let min = parse_size(a.trim()).map_err(|e| format!("`{a}`: {e}"))?;
        let max = parse_size(b.trim()).map_err(|e| format!("`{b}`: {e}"))?;
        if min == 0 || max < min {
            return Err(format!("`{t}`: the range is empty"));
        }
        let n = max / min;
        if n > 4096 {
            return Err(format!(
                "`{t}`: {n} sizes between the ends (multiples of {min}); at most 4096"
            ));
        }
        let pairs: Vec<(u64, f64)> = (1..=n).map(|k| (k * min, 1.0)).collect();
        Ok(Sizes::weighted(&pairs))
    })
}

fn per_direction(
    text: &str,
    one: impl Fn(&str) -> Result<Sizes, String>,
) -> Result<[Sizes; 2], String> {
    let parts: Vec<&str> = text.split(',').collect();
    match parts[..] {
        [both] => {
            let s = one(both)?;
            Ok([s.clone(), s])
        }
        [r, w] | [r, w, _] => {
            // fio's third part is for trims, which the engine does not issue.
            let read = if r.trim().is_empty() {
                None
            } else {
                Some(one(r)?)
            };
            let write = if w.trim().is_empty() {
                None
            } else {
                Some(one(w)?)
            };
            match (read, write) {
                (Some(r), Some(w)) => Ok([r, w]),
                (Some(r), None) => Ok([r.clone(), r]),
                (None, Some(w)) => Ok([w.clone(), w]),
                (None, None) => Err(format!("`{text}`: no sizes")),
            }
        }
        _ => Err(format!(
            "`{text}`: at most a reads' and a writes' part (`,` between them)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_split_reads_sizes_and_shares_the_rest() {
        let [r, w] = parse_split("4k/50:8k:64k").unwrap();
        assert_eq!(r, w);
        assert_eq!(r.all(), &[4096, 8192, 65536]);
        assert_eq!(r.pick(0), 4096);
        assert_eq!(r.pick((1 << 31) - 1), 4096);
        assert_eq!(r.pick(1 << 31), 8192);
        assert_eq!(r.pick((1 << 32) - 1), 65536);
    }

    #[test]
    fn a_split_per_direction() {
        let [r, w] = parse_split("64k/40:1024k/60,1024k/100").unwrap();
        assert_eq!(r.all(), &[65536, 1 << 20]);
        assert_eq!(w.all(), &[1 << 20]);
        let [r, w] = parse_split(",8k").unwrap();
        assert_eq!((r.all(), w.all()), (&[8192][..], &[8192][..]));
    }

    #[test]
    fn bad_splits_say_why() {
        for (text, says) in [
            ("4k/60:8k/60", "more than 100"),
            ("4k/50:8k/40", "not 100"),
            ("4k/x", "not a percentage"),
            ("4q/100", "4q"),
            ("4k/100,8k/100,,", "at most"),
        ] {
            let e = parse_split(text).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
    }

    #[test]
    fn a_range_is_every_multiple_of_its_smaller_end() {
        let [r, _] = parse_range("4k-16k").unwrap();
        assert_eq!(r.all(), &[4096, 8192, 12288, 16384]);
        let [r, _] = parse_range("4k-4k").unwrap();
        assert!(r.is_fixed());
        assert!(parse_range("16k-4k").unwrap_err().contains("empty"));
    }
}
