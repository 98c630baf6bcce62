//! fio's `latency_target`: a thread searches the queue depth at which its I/Os keep
//! within a latency (at a percentile, over windows of time), by fio's own rule: start
//! at depth 1, double while a window holds, bisect once one fails; the same depth
//! twice ends the search, one more window is run there, and the job ends (unless
//! `latency_run`, which keeps the search going for the whole job).

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::clock::Instant;

/// One window of the search, as the report shows it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct LatWindow {
    /// End of the window, seconds from the thread's start.
    pub end_s: f64,
    pub depth: u32,
    pub ios: u64,
    /// Share of the window's I/Os within the target, percent.
    pub within_pct: f64,
}

/// One thread's search, as the report shows it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct LatThread {
    /// The depth the search settled on (the last window's, when it never settled).
    pub depth: u32,
    /// Whether the same depth came out twice (fio's end of the search).
    pub settled: bool,
    pub windows: Vec<LatWindow>,
}

/// What a completion meant for the search.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Go,
    /// The search is over and its last window run: the thread ends.
    Done,
    /// A 100th-percentile target missed at depth 1: fio ends the job with an error.
    Missed,
}

pub struct LatTarget {
    target_ns: u64,
    pct: f64,
    window: Duration,
    run_on: bool,
    iodepth: u32,
    pub qd: u32,
    low: u32,
    high: u32,
    stable: u32,
    start: Instant,
    window_start: Instant,
    ios: u64,
    failed: u64,
    end_run: bool,
    settled: bool,
    windows: Vec<LatWindow>,
}

impl LatTarget {
    pub fn new(
        target: Duration,
        pct: f64,
        window: Duration,
        run_on: bool,
        iodepth: u32,
        start: Instant,
    ) -> Self {
        Self {
            target_ns: target.as_nanos() as u64,
            pct,
            window,
            run_on,
            iodepth: iodepth.max(1),
            qd: 1,
            low: 1,
            high: iodepth.max(1),
            stable: 0,
            start,
            window_start: start,
            ios: 0,
            failed: 0,
            end_run: false,
            settled: false,
            windows: Vec::new(),
        }
    }

    /// Counts a completion `lat_ns` long, at `now`.
    #[inline]
    pub fn completed(&mut self, lat_ns: u64, now: Instant) -> Verdict {
        self.ios += 1;
        if lat_ns > self.target_ns {
            if self.pct >= 100.0 {
                if self.qd == 1 {
                    return Verdict::Missed;
                }
                self.ramp_down(now);
                return Verdict::Go;
            }
            self.failed += 1;
        }
        if now.saturating_duration_since(self.window_start) >= self.window {
            return self.check(now);
        }
        Verdict::Go
    }

    fn check(&mut self, now: Instant) -> Verdict {
        if self.ios == 0 {
            self.new_cycle(now);
            return Verdict::Go;
        }
        let within = 100.0 * (self.ios - self.failed) as f64 / self.ios as f64;
        self.windows.push(LatWindow {
            end_s: now.saturating_duration_since(self.start).as_secs_f64(),
            depth: self.qd,
            ios: self.ios,
            within_pct: within,
        });
        if within >= self.pct {
            self.ramp_up(now)
        } else {
            self.ramp_down(now);
            Verdict::Go
        }
    }

    fn ramp_up(&mut self, now: Instant) -> Verdict {
        let qd = self.qd;
        self.low = self.qd;
        if self.qd + 1 == self.high {
            // Stuck one below a failing depth: try that one again now and then.
            self.stable += 1;
            if self.stable >= 3 {
                self.high += 1;
                self.stable = 0;
            }
        }
        self.qd = if self.high != self.iodepth {
            (self.qd + self.high) / 2
        } else {
            self.qd * 2
        }
        .min(self.iodepth);
        let mut verdict = Verdict::Go;
        if !self.run_on && self.qd == qd {
            self.settled = true;
            if self.end_run {
                verdict = Verdict::Done;
            } else {
                self.end_run = true;
            }
        }
        self.new_cycle(now);
        verdict
    }

    fn ramp_down(&mut self, now: Instant) {
        if self.qd == 1 {
            self.new_cycle(now);
            return;
        }
        self.high = self.qd;
        if self.qd == self.low {
            self.low = self.low.saturating_sub(1).max(1);
        }
        self.qd = ((self.qd + self.low) / 2).max(1);
        self.stable = 0;
        self.new_cycle(now);
    }

    fn new_cycle(&mut self, now: Instant) {
        self.window_start = now;
        self.ios = 0;
        self.failed = 0;
    }

    pub fn target_ns(&self) -> u64 {
        self.target_ns
    }

    pub fn report(&self) -> LatThread {
        LatThread {
            depth: self.qd,
            settled: self.settled,
            windows: self.windows.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A device whose latency is `per_qd_ns` times the depth: the target holds up to
    /// `target / per_qd_ns`.
    fn search(iodepth: u32, per_qd_ns: u64, target_ns: u64) -> (u32, bool) {
        let t0 = Instant::now();
        let mut l = LatTarget::new(
            Duration::from_nanos(target_ns),
            100.0,
            Duration::from_millis(10),
            false,
            iodepth,
            t0,
        );
        let mut now = t0;
        for _ in 0..100_000 {
            now += Duration::from_micros(100);
            match l.completed(per_qd_ns * u64::from(l.qd), now) {
                Verdict::Go => {}
                Verdict::Done => return (l.qd, true),
                Verdict::Missed => return (0, false),
            }
        }
        (l.qd, false)
    }

    #[test]
    fn the_search_settles_on_the_deepest_queue_within_the_target() {
        // 100 us per request in the queue, a 1 ms target: depth 10 holds, 11 does not.
        assert_eq!(search(64, 100_000, 1_000_000), (10, true));
        assert_eq!(
            search(8, 100_000, 1_000_000),
            (8, true),
            "capped by iodepth"
        );
        assert_eq!(
            search(64, 2_000_000, 1_000_000),
            (0, false),
            "missed at depth 1"
        );
    }
}
