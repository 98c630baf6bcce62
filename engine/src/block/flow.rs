//! fio's `flow`: threads (of one job or of several jobs of a job file) that share a
//! `flow_id` keep their I/O counts in proportion to their `flow` weights. Each counts
//! its I/Os against the group's; one ahead of its share waits (`flow_sleep`, or a
//! moment) before it issues more, as fio's token-based flow control does.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// One `flow_id` group: the I/Os its threads issued and their weights summed.
#[derive(Debug)]
struct Group {
    ios: AtomicU64,
    weight: AtomicU64,
}

impl Default for Group {
    /// fio's group count starts at 1, not 0. That one gives each thread a little slack
    /// past its exact share, so that a thread that wakes after its `flow_sleep` can
    /// issue again while the others still have I/Os allowed: with a count from 0 the
    /// threads strictly take turns, each waiting out the others' sleeps, and do a third
    /// fewer I/Os than fio with the same job file.
    fn default() -> Self {
        Self {
            ios: AtomicU64::new(1),
            weight: AtomicU64::new(0),
        }
    }
}

fn groups() -> &'static Mutex<HashMap<u32, Arc<Group>>> {
    static GROUPS: OnceLock<Mutex<HashMap<u32, Arc<Group>>>> = OnceLock::new();
    GROUPS.get_or_init(Mutex::default)
}

/// One thread's membership of its group; leaving takes its weight back out, so that
/// the others are not held to the share of a thread that ended.
#[derive(Debug)]
pub struct Flow {
    group: Arc<Group>,
    weight: u64,
    ios: u64,
}

impl Flow {
    pub fn join(id: u32, weight: u64) -> Self {
        let group = {
            let mut all = groups()
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            Arc::clone(all.entry(id).or_default())
        };
        group.weight.fetch_add(weight, Ordering::Relaxed);
        Self {
            group,
            weight,
            ios: 0,
        }
    }

    /// Whether the thread is ahead of its share: its I/Os over the group's more than
    /// its weight over the group's. When not, the I/O about to be issued is counted.
    #[inline]
    pub fn ahead(&mut self) -> bool {
        let total = self.group.ios.load(Ordering::Relaxed);
        let weights = self.group.weight.load(Ordering::Relaxed);
        if u128::from(self.ios) * u128::from(weights) > u128::from(self.weight) * u128::from(total)
        {
            return true;
        }
        self.group.ios.fetch_add(1, Ordering::Relaxed);
        self.ios += 1;
        false
    }
}

impl Drop for Flow {
    fn drop(&mut self) {
        self.group.weight.fetch_sub(self.weight, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_issue_in_proportion_to_their_weights() {
        // A group of its own (ids are process-wide).
        let mut a = Flow::join(0xf10, 1);
        let mut b = Flow::join(0xf10, 3);
        let (mut na, mut nb) = (0u64, 0u64);
        for _ in 0..4000 {
            if !a.ahead() {
                na += 1;
            }
            if !b.ahead() {
                nb += 1;
            }
        }
        let share = nb as f64 / (na + nb) as f64;
        assert!((share - 0.75).abs() < 0.01, "{na} and {nb}");
        drop(b);
        // Alone, `a` is never ahead.
        assert!((0..100).all(|_| !a.ahead()));
    }

    #[test]
    fn the_group_count_starts_at_one_as_fios() {
        let mut w = Flow::join(0xf11, 1);
        let mut r = Flow::join(0xf11, 8);
        assert!(!w.ahead());
        assert!(w.ahead());
        // fio's test for the reader, r / (w + r + 1) > 8 / 9, lets it run to r = 17
        // after one write: 8 more I/Os than a count from zero would.
        let run = (0..100).take_while(|_| !r.ahead()).count();
        assert_eq!(run, 17);
    }
}
