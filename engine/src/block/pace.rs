//! When each I/O may be issued: as fast as the target takes them (no pace), at a rate
//! (`rate` bytes/s or `rate_iops` per thread, evenly spaced or as a Poisson process),
//! and with think time (`thinktime` after every `thinktime_blocks` completions).
//!
//! A rate is a schedule, not a cap on the moment: the k-th I/O is due k gaps after the
//! start, and a thread that fell behind (the target was slower) issues at once until it
//! is back on schedule, as fio does. So an open-loop load stays the load asked for, and
//! a target that cannot carry it shows as an achieved rate below the asked one
//! (the report's `rate`, and a `rate_short` warning).

use std::time::Duration;

use rand_xoshiro::rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::clock::Instant;
use crate::spec::{Job, RateProcess};

#[derive(Debug)]
pub struct Pace {
    /// Nanoseconds per I/O (`rate_iops`) or per byte (`rate`).
    gap_ns: f64,
    per_byte: bool,
    poisson: Option<Xoshiro256PlusPlus>,
    /// When the next I/O is due; `None` until the first is issued.
    due: Option<Instant>,
    /// Nanoseconds owed to the schedule below a whole one (a gap may be a fraction).
    carry_ns: f64,
    think_every: u64,
    think: Duration,
    think_spin: Duration,
    since_think: u64,
    /// A think time is under way: spin until here, then sleep until `due`.
    pub spin_until: Option<Instant>,
}

impl Pace {
    /// The job's pace, or `None` when it issues as fast as it can.
    pub fn of(job: &Job, seed: u64) -> Option<Self> {
        let p = &job.pattern;
        let think = Duration::from_secs_f64(p.thinktime.unwrap_or(0.0));
        let (gap_ns, per_byte) = match (p.rate, p.rate_iops) {
            (Some(b), _) if b > 0 => (1e9 / b as f64, true),
            (_, Some(i)) if i > 0 => (1e9 / i as f64, false),
            _ => (0.0, false),
        };
        if gap_ns == 0.0 && think.is_zero() {
            return None;
        }
        Some(Self {
            gap_ns,
            per_byte,
            poisson: (p.rate_process == Some(RateProcess::Poisson))
                .then(|| Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x9015)),
            due: None,
            carry_ns: 0.0,
            think_every: p.thinktime_blocks.unwrap_or(1).max(1),
            think,
            think_spin: Duration::from_secs_f64(p.thinktime_spin.unwrap_or(0.0)).min(think),
            since_think: 0,
            spin_until: None,
        })
    }

    /// When the next I/O may be issued, if that is after `now`.
    #[inline]
    pub fn wait_until(&self, now: Instant) -> Option<Instant> {
        self.due.filter(|&d| d > now)
    }

    /// An I/O of `len` bytes was issued at `now`: the next one's due time.
    #[inline]
    pub fn issued(&mut self, len: u64, now: Instant) {
        let mut due = self.due.unwrap_or(now);
        if self.gap_ns > 0.0 {
            let mut gap = if self.per_byte {
                self.gap_ns * len as f64
            } else {
                self.gap_ns
            };
            if let Some(rng) = &mut self.poisson {
                // Exponential gaps of the same mean: arrivals independent of each other.
                let u = ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
                gap *= -u.ln();
            }
            let whole = (gap + self.carry_ns).floor();
            self.carry_ns += gap - whole;
            due += Duration::from_nanos(whole as u64);
        }
        self.due = Some(due);
    }

    /// An I/O completed at `now`: after every `thinktime_blocks` completions the thread
    /// thinks (fio's default `thinktime_blocks_type = complete`): nothing is issued for
    /// `thinktime`, while the I/Os still in flight go on.
    #[inline]
    pub fn completed(&mut self, now: Instant) {
        if self.think.is_zero() {
            return;
        }
        self.since_think += 1;
        if self.since_think >= self.think_every {
            self.since_think = 0;
            let from = self.due.map_or(now, |d| d.max(now));
            self.spin_until = (!self.think_spin.is_zero()).then(|| from + self.think_spin);
            self.due = Some(from + self.think);
        }
    }

    /// Waits, without I/O in flight, until `until`: spinning for a think time's spin
    /// part, sleeping the rest, and spinning the last stretch a sleep cannot hit.
    pub fn idle(&mut self, until: Instant) {
        if let Some(s) = self.spin_until.take() {
            while Instant::now() < s.min(until) {
                std::hint::spin_loop();
            }
        }
        sleep_until(until);
    }
}

/// Sleeps until `until`; the last 100 µs are spun, since a sleep wakes late by about
/// that much on a virtual machine.
pub fn sleep_until(until: Instant) {
    const SPIN: Duration = Duration::from_micros(100);
    let now = Instant::now();
    if until <= now {
        return;
    }
    let left = until.saturating_duration_since(now);
    if left > SPIN {
        std::thread::sleep(left - SPIN);
    }
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(text: &str) -> Job {
        crate::spec::load(&format!("filename = \"/f\"\nsize = \"1m\"\n{text}"))
            .unwrap()
            .1
    }

    /// The clock counts in ticks: a sum of durations may round a tick away from the
    /// same total added at once.
    fn near(a: Option<Instant>, b: Instant) -> bool {
        a.is_some_and(|a| a.max(b).saturating_duration_since(a.min(b)) < Duration::from_micros(1))
    }

    #[test]
    fn an_even_rate_spaces_ios_by_the_gap() {
        let mut p = Pace::of(&job("rate_iops = 1000"), 1).unwrap();
        let t0 = Instant::now();
        p.issued(4096, t0);
        assert!(near(p.wait_until(t0), t0 + Duration::from_millis(1)));
        // Behind schedule: the next one is due at once (catching up), then 1 ms apart.
        let late = t0 + Duration::from_millis(5);
        assert_eq!(p.wait_until(late), None);
        p.issued(4096, late);
        assert!(near(p.due, t0 + Duration::from_millis(2)));
    }

    #[test]
    fn a_byte_rate_gives_larger_ios_longer_gaps() {
        let mut p = Pace::of(&job("rate = \"1m\""), 1).unwrap();
        let t0 = Instant::now();
        p.issued(1 << 20, t0);
        assert!(near(p.due, t0 + Duration::from_secs(1)));
    }

    #[test]
    fn poisson_gaps_have_the_asked_mean_and_spread() {
        let mut p = Pace::of(&job("rate_iops = 10000\nrate_process = \"poisson\""), 3).unwrap();
        let t0 = Instant::now();
        let n = 100_000u32;
        let mut gaps = Vec::with_capacity(n as usize);
        let mut last = t0;
        p.issued(4096, t0);
        for _ in 0..n {
            let d = p.due.unwrap();
            gaps.push(d.saturating_duration_since(last).as_secs_f64() * 1e6);
            last = d;
            p.issued(4096, d);
        }
        let mean = gaps.iter().sum::<f64>() / f64::from(n);
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / f64::from(n);
        // Exponential: sd = mean = 100 µs.
        assert!((mean - 100.0).abs() < 1.5, "{mean}");
        assert!((var.sqrt() - 100.0).abs() < 3.0, "{}", var.sqrt());
    }

    #[test]
    fn think_time_follows_every_n_completions() {
        let mut p = Pace::of(&job("thinktime = \"2ms\"\nthinktime_blocks = 3"), 1).unwrap();
        let t0 = Instant::now();
        for _ in 0..4 {
            p.issued(4096, t0);
        }
        p.completed(t0);
        p.completed(t0);
        assert_eq!(p.wait_until(t0), None);
        p.completed(t0);
        assert!(near(p.wait_until(t0), t0 + Duration::from_millis(2)));
    }
}
