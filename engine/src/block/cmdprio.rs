//! Per-request I/O priorities (fio's `cmdprio_*`): a share of a thread's reads and
//! writes, by direction and optionally by size, carry a priority class and level of
//! their own on their io_uring request (the kernel's `ioprio` of the request; the rest
//! keep the thread's, `prio`/`prioclass`).

use crate::units::parse_size;

/// One rule: I/Os of `size` (or every size) get `ioprio` `pct` percent of the time.
#[derive(Debug, Clone, PartialEq)]
struct Rule {
    size: Option<u64>,
    pct: u32,
    ioprio: u16,
}

/// The rules of a job, for reads (0) and writes (1).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CmdPrio {
    rules: [Vec<Rule>; 2],
}

/// A request priority: class in the top 3 bits, level below (`IOPRIO_PRIO_VALUE`).
pub fn ioprio(class: u32, level: u32) -> u16 {
    ((class << 13) | level) as u16
}

impl CmdPrio {
    /// From fio's keys: `percentage` per direction with `class` and `level`, or a
    /// `bssplit` text (`size/pct[/class/level]` joined by `:`, `,` between reads and
    /// writes), whose entries without a class and level take `class` and `level`.
    pub fn new(
        percentage: Option<[u32; 2]>,
        class: u32,
        level: u32,
        bssplit: Option<&str>,
    ) -> Result<Self, String> {
        let mut rules: [Vec<Rule>; 2] = [Vec::new(), Vec::new()];
        if let Some(text) = bssplit {
            let parts: Vec<&str> = text.split(',').collect();
            if parts.len() > 2 {
                return Err(format!(
                    "`{text}`: at most reads and writes (`,` between them)"
                ));
            }
            for (dir, part) in parts.iter().enumerate() {
                for entry in part.split(':').map(str::trim).filter(|e| !e.is_empty()) {
                    rules[dir].push(rule(entry, class, level)?);
                }
            }
            if parts.len() == 1 {
                rules[1] = rules[0].clone();
            }
        } else if let Some([r, w]) = percentage {
            for (dir, pct) in [(0, r), (1, w)] {
                if pct > 0 {
                    rules[dir].push(Rule {
                        size: None,
                        pct,
                        ioprio: ioprio(class, level),
                    });
                }
            }
        }
        Ok(Self { rules })
    }

    pub fn is_empty(&self) -> bool {
        self.rules.iter().all(Vec::is_empty)
    }

    /// The priority of an I/O of `len` in direction `write`, for `draw` in 0..100;
    /// 0 (the thread's own) when no rule picks it.
    #[inline]
    pub fn pick(&self, write: bool, len: u64, draw: u64) -> u16 {
        let mut below = 0u64;
        for r in &self.rules[usize::from(write)] {
            if r.size.is_some_and(|s| s != len) {
                continue;
            }
            below += u64::from(r.pct);
            if draw < below {
                return r.ioprio;
            }
        }
        0
    }
}

/// One `size/pct[/class/level]` entry.
fn rule(entry: &str, class: u32, level: u32) -> Result<Rule, String> {
    let fields: Vec<&str> = entry.split('/').map(str::trim).collect();
    let number = |s: &str, what: &str| {
        s.parse::<u32>()
            .map_err(|_| format!("`{entry}`: `{s}` is not a {what}"))
    };
    let (size, pct, class, level) = match fields[..] {
        [size, pct] => (size, number(pct, "percentage")?, class, level),
        [size, pct, c, l] => (
            size,
            number(pct, "percentage")?,
            number(c, "class")?,
            number(l, "level")?,
        ),
        _ => {
            return Err(format!(
                "`{entry}` is not `size/percent` or `size/percent/class/level`"
            ))
        }
    };
    let size = parse_size(size).map_err(|e| format!("`{entry}`: {e}"))?;
    check(pct, class, level).map_err(|e| format!("`{entry}`: {e}"))?;
    Ok(Rule {
        size: Some(size),
        pct,
        ioprio: ioprio(class, level),
    })
}

/// A percentage, class and level in range.
pub fn check(pct: u32, class: u32, level: u32) -> Result<(), String> {
    if pct > 100 {
        return Err(format!("{pct}% is more than 100"));
    }
    if !(1..=3).contains(&class) {
        return Err(format!(
            "class {class} is not 1 (real-time), 2 (best-effort) or 3 (idle)"
        ));
    }
    if level > 7 {
        return Err(format!("level {level} is out of range (0..=7)"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_percentage_picks_that_share_with_the_class_and_level() {
        let c = CmdPrio::new(Some([20, 0]), 1, 0, None).unwrap();
        let picked = (0..100).filter(|&d| c.pick(false, 4096, d) != 0).count();
        assert_eq!(picked, 20);
        assert_eq!(c.pick(false, 4096, 0), 1 << 13);
        assert_eq!(c.pick(true, 4096, 0), 0, "writes have no rule");
    }

    #[test]
    fn bssplit_rules_go_by_size_and_carry_their_own_class() {
        let c = CmdPrio::new(None, 1, 0, Some("64k/25/1/1:64k/75/3/2:1m/0,1m/0")).unwrap();
        assert_eq!(c.pick(false, 65536, 10), ioprio(1, 1));
        assert_eq!(c.pick(false, 65536, 50), ioprio(3, 2));
        assert_eq!(c.pick(false, 1 << 20, 0), 0);
        assert_eq!(c.pick(true, 65536, 0), 0);
        let plain = CmdPrio::new(None, 2, 5, Some("64k/100:1m/0")).unwrap();
        assert_eq!(
            plain.pick(true, 65536, 99),
            ioprio(2, 5),
            "one part: both ways"
        );
        assert!(CmdPrio::new(None, 1, 0, Some("64k/101")).is_err());
        assert!(CmdPrio::new(None, 1, 0, Some("64k/10/4/0")).is_err());
    }
}
