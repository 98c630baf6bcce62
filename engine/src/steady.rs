//! Steady state (`steady_state = true`): whether a time-based job's rate has settled, so
//! it may stop before `runtime` (then only the cap) and report the settled part alone.
//!
//! The rule is SNIA's (Solid State Storage Performance Test Specification 2.0): the
//! tracked rate is averaged per **round**, the last `steady_window` rounds form the
//! **window**, and the window is steady when (a) its rounds' max - min is within
//! `steady_range` of their mean and (b) the least-squares line through them drifts by
//! at most `steady_slope` of the mean from the first round to the last. Rounds here are
//! whole series intervals, at least `steady_round` long and holding at least
//! `MIN_ROUND_COMPLETIONS` completions: on a slow device a round widens instead of
//! judging a handful of I/Os (fio's 1 s samples never converge there; fio PR #1510).
//! Rounds may thus differ in length: x of the line is each round's midpoint in seconds,
//! and the drift is the slope times the span between the first and last midpoints,
//! which is SNIA's `slope per round x (rounds - 1)` when the rounds are equal.
//!
//! `Detector` judges rates only (pure, fed one interval at a time); `Tracker` wraps it
//! and keeps what the window's results are made of: each round's per-op counts and
//! latency histograms, only as long as the round may still belong to the window.

use std::collections::VecDeque;

use hdrhistogram::Histogram;

use crate::diagnostics::{Warning, WarningKind};
use crate::record::{deserialize, serialize, total_hist, Op, OPS};
use crate::report::{SeriesPoint, SteadyLimits, SteadyRound, SteadyState};
use crate::spec::{Job, Kind};

/// The fewest completions of the tracked ops a round holds: below that a round's rate is
/// mostly counting noise, and it widens by whole intervals until it has them.
pub const MIN_ROUND_COMPLETIONS: u64 = 200;

/// The window is judged at rounds of 1, 2 and up to `2^MAX_WIDENINGS` x the shortest,
/// each made of the rounds already closed (so a window of 2 s rounds is judged as soon
/// as 10 s are measured, and again every 2 s): a rate
/// that swings from one 1 s round to the next (a virtual disk, a loop device over a
/// busy host) is often steady over 2 s or 4 s rounds, and a run that stops there is
/// counted, where one that ran to the cap is not. Longer rounds are stricter about a
/// trend (the same drift per second spans more of them) and looser only about noise.
pub const MAX_WIDENINGS: u32 = 2;

/// The ops whose completions are a job's tracked rate (the one place that says which op
/// is primary): a block job's reads and writes, an application model's transactions, a
/// files job's files (files jobs take no steady keys today: their work is a fixed
/// amount, not a time).
pub fn tracked(kind: Kind) -> &'static [Op] {
    match kind {
        Kind::Block => &[Op::Read, Op::Write, Op::Trim],
        Kind::Files => &[Op::Files],
        Kind::Oltp | Kind::Mailstore => &[Op::Txn],
    }
}

/// The steady-state keys of a job, resolved.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// The shortest round, seconds (a round is whole intervals).
    pub round_s: f64,
    /// Rounds judged together.
    pub window: usize,
    /// The window's max - min may be this share of its mean, percent.
    pub range_pct: f64,
    /// The fitted line may drift this share of the mean across the window, percent.
    pub slope_pct: f64,
    /// Seconds measured after the window was found steady.
    pub measure_s: f64,
    /// What the rate counts.
    pub tracks: &'static [Op],
}

impl Limits {
    /// The job's limits, or `None` when `steady_state` is off.
    pub fn of(job: &Job) -> Option<Self> {
        let s = job.steady.as_ref()?;
        Some(Self {
            round_s: s.steady_round,
            window: s.steady_window as usize,
            range_pct: s.steady_range,
            slope_pct: s.steady_slope,
            measure_s: s.steady_measure,
            tracks: tracked(job.kind),
        })
    }

    fn report(&self) -> SteadyLimits {
        SteadyLimits {
            round_s: self.round_s,
            window: self.window as u32,
            range_pct: self.range_pct,
            slope_pct: self.slope_pct,
            measure_s: self.measure_s,
        }
    }
}

/// Consecutive intervals judged as one value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Round {
    /// Seconds from the start of the job (the ramp included), as series times.
    pub start_s: f64,
    pub end_s: f64,
    /// Completions of the tracked ops.
    pub completions: u64,
}

impl Round {
    /// Completions per second.
    pub fn rate(&self) -> f64 {
        self.completions as f64 / (self.end_s - self.start_s).max(1e-9)
    }

    fn mid_s(&self) -> f64 {
        (self.start_s + self.end_s) / 2.0
    }
}

/// How far one window's round rates stray, in percent of their mean.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Excursion {
    pub mean: f64,
    /// (max - min) / mean x 100.
    pub range_pct: f64,
    /// |least-squares slope| x (span of the round midpoints) / mean x 100.
    pub slope_pct: f64,
}

impl Excursion {
    /// The excursion of `rounds` (two or more; a zero mean is infinitely unsteady).
    pub fn of(rounds: &[Round]) -> Self {
        let n = rounds.len() as f64;
        let ys: Vec<f64> = rounds.iter().map(Round::rate).collect();
        let xs: Vec<f64> = rounds.iter().map(Round::mid_s).collect();
        let mean = ys.iter().sum::<f64>() / n;
        if mean <= 0.0 || rounds.len() < 2 {
            return Self {
                mean,
                range_pct: f64::INFINITY,
                slope_pct: f64::INFINITY,
            };
        }
        let (lo, hi) = ys
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &y| {
                (lo.min(y), hi.max(y))
            });
        let mx = xs.iter().sum::<f64>() / n;
        let sxx: f64 = xs.iter().map(|x| (x - mx) * (x - mx)).sum();
        let sxy: f64 = xs.iter().zip(&ys).map(|(x, y)| (x - mx) * (y - mean)).sum();
        let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
        let span = xs[xs.len() - 1] - xs[0];
        Self {
            mean,
            range_pct: (hi - lo) / mean * 100.0,
            slope_pct: (slope * span).abs() / mean * 100.0,
        }
    }

    pub fn within(&self, limits: &Limits) -> bool {
        self.range_pct <= limits.range_pct && self.slope_pct <= limits.slope_pct
    }
}

/// What one interval did to the detector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Ramp, or added to the round still open.
    Open,
    /// It closed a round; the window (if full) is not steady.
    Closed,
    /// It closed a round and the window is steady.
    Steady,
}

/// Judges a job's rate, one completed interval at a time.
#[derive(Debug, Clone)]
pub struct Detector {
    limits: Limits,
    open: Option<Round>,
    /// Closed rounds, newest last: as many as the widest window spans.
    history: VecDeque<Round>,
    rounds: u32,
    /// The window last judged (the widest that had rounds enough; the steady one once
    /// steady), its rounds oldest first; fewer than a window's before there are that
    /// many.
    window: Vec<Round>,
    last: Option<Excursion>,
    /// How often `window`'s rounds are doubled from the closed ones.
    widened: u32,
    /// A window was steady: it stays the one reported, whatever is pushed after it.
    steady: bool,
}

impl Detector {
    pub fn new(limits: Limits) -> Self {
        Self {
            limits,
            open: None,
            history: VecDeque::with_capacity(Self::span(&limits) + 1),
            rounds: 0,
            window: Vec::with_capacity(limits.window),
            last: None,
            widened: 0,
            steady: false,
        }
    }

    /// Closed rounds the widest window is made of.
    fn span(limits: &Limits) -> usize {
        limits.window << MAX_WIDENINGS
    }

    /// Adds the interval `start_s..end_s` holding `completions` of the tracked ops.
    /// Intervals of the ramp are not judged: the job is not measured yet.
    pub fn push(&mut self, start_s: f64, end_s: f64, completions: u64, ramp: bool) -> Step {
        if self.steady {
            return Step::Steady;
        }
        if ramp {
            return Step::Open;
        }
        let round = self.open.get_or_insert(Round {
            start_s,
            end_s,
            completions: 0,
        });
        round.end_s = end_s;
        round.completions += completions;
        // A whole round with too few completions widens rather than judge noise.
        let long = round.end_s - round.start_s >= self.limits.round_s - 1e-9;
        if !long || round.completions < MIN_ROUND_COMPLETIONS {
            return Step::Open;
        }
        let round = self.open.take().expect("set above");
        self.rounds += 1;
        self.history.push_back(round);
        if self.history.len() > Self::span(&self.limits) {
            self.history.pop_front();
        }
        if self.history.len() < self.limits.window {
            self.window = self.history.iter().copied().collect();
            return Step::Closed;
        }
        // The newest rounds, merged `2^k` at a time into a window, shortest first. A
        // merged round starts on a fixed grid (every `2^k`-th round from the first), so
        // a rate that cycles is not judged at whichever phase happens to even it out.
        for k in 0..=MAX_WIDENINGS {
            let merge = 1usize << k;
            let need = self.limits.window * merge;
            if self.history.len() < need {
                break;
            }
            if self.rounds as usize % merge != 0 {
                continue;
            }
            let all = self.history.make_contiguous();
            let merged: Vec<Round> = all[all.len() - need..]
                .chunks(merge)
                .map(|c| Round {
                    start_s: c[0].start_s,
                    end_s: c[c.len() - 1].end_s,
                    completions: c.iter().map(|r| r.completions).sum(),
                })
                .collect();
            let x = Excursion::of(&merged);
            self.window = merged;
            self.last = Some(x);
            self.widened = k;
            if x.within(&self.limits) {
                self.steady = true;
                return Step::Steady;
            }
        }
        Step::Closed
    }

    /// Closed rounds the window last judged is made of (its rounds are merged from
    /// them): what a tracker sums for the window's results.
    pub fn window_closed_rounds(&self) -> usize {
        if self.window.len() < self.limits.window {
            self.window.len()
        } else {
            self.limits.window << self.widened
        }
    }

    /// Rounds closed so far.
    pub fn rounds(&self) -> u32 {
        self.rounds
    }

    /// How often the window's rounds are doubled from the closed ones.
    pub fn widened(&self) -> u32 {
        self.widened
    }

    /// The window last judged, its rounds oldest first (the rounds closed so far before
    /// there are a window's).
    pub fn window(&self) -> impl Iterator<Item = &Round> {
        self.window.iter()
    }

    /// The excursion of the last full window judged.
    pub fn last(&self) -> Option<Excursion> {
        self.last
    }
}

/// One op's completions, bytes and latencies over some intervals.
#[derive(Default)]
pub struct Sums {
    pub ios: u64,
    pub bytes: u64,
    /// Always at the totals' precision (`total_hist`), whatever it was fed.
    pub hist: Option<Histogram<u64>>,
}

impl Sums {
    pub fn add(&mut self, ios: u64, bytes: u64, hist: Option<&Histogram<u64>>) {
        self.ios += ios;
        self.bytes += bytes;
        if let Some(h) = hist {
            self.hist
                .get_or_insert_with(total_hist)
                .add(h)
                .expect("histograms share their bounds");
        }
    }

    fn absorb(&mut self, other: &Sums) {
        self.add(other.ios, other.bytes, other.hist.as_ref());
    }
}

type OpSums = [Sums; OPS];

fn absorb(into: &mut OpSums, from: &OpSums) {
    for (a, b) in into.iter_mut().zip(from) {
        a.absorb(b);
    }
}

/// A closed round's sums for one op, its histogram packed (`record::serialize`: a few
/// hundred bytes, where one live at the totals' precision holds 270 KB of counts). A
/// window of 4 x rounds is made of `window x 4` closed rounds, kept until it is judged.
#[derive(Default)]
struct Packed {
    ios: u64,
    bytes: u64,
    hist: Option<String>,
}

type PackedOps = [Packed; OPS];

fn pack(sums: OpSums) -> PackedOps {
    sums.map(|s| Packed {
        ios: s.ios,
        bytes: s.bytes,
        hist: s.hist.as_ref().map(serialize),
    })
}

fn absorb_packed(into: &mut OpSums, from: &PackedOps) {
    for (a, b) in into.iter_mut().zip(from) {
        let hist = b
            .hist
            .as_deref()
            .map(|text| deserialize(text).expect("packed by `pack`"));
        a.add(b.ios, b.bytes, hist.as_ref());
    }
}

enum Phase {
    Seeking,
    /// Steady; measuring `steady_measure` more (seconds measured so far).
    Measuring(f64),
    Done,
}

/// The detector plus what the window's results are made of: the open round's per-op
/// sums and the closed rounds' packed (bounded: the widest window's `window x
/// 2^MAX_WIDENINGS` rounds, whatever the run's length), and after a steady window the
/// `steady_measure` part.
pub struct Tracker {
    limits: Limits,
    detector: Detector,
    open: OpSums,
    closed: VecDeque<PackedOps>,
    measure: OpSums,
    measure_end_s: Option<f64>,
    phase: Phase,
}

/// One completed interval of the whole job: per op slot (as `record::Op`), its
/// completions, bytes and latency histogram.
pub type IntervalOps<'a> = [(u64, u64, Option<&'a Histogram<u64>>); OPS];

impl Tracker {
    pub fn new(limits: Limits) -> Self {
        Self {
            limits,
            detector: Detector::new(limits),
            open: Default::default(),
            closed: VecDeque::with_capacity(Detector::span(&limits) + 1),
            measure: Default::default(),
            measure_end_s: None,
            phase: Phase::Seeking,
        }
    }

    /// Adds one completed interval of the job.
    pub fn push(&mut self, start_s: f64, end_s: f64, ramp: bool, ops: IntervalOps<'_>) {
        match self.phase {
            Phase::Done => {}
            Phase::Measuring(done_s) => {
                for (sums, (ios, bytes, hist)) in self.measure.iter_mut().zip(ops) {
                    sums.add(ios, bytes, hist);
                }
                let done_s = done_s + (end_s - start_s);
                self.measure_end_s = Some(end_s);
                self.phase = if done_s >= self.limits.measure_s - 1e-9 {
                    Phase::Done
                } else {
                    Phase::Measuring(done_s)
                };
            }
            Phase::Seeking => {
                let completions = self
                    .limits
                    .tracks
                    .iter()
                    .map(|&op| ops[op as usize].0)
                    .sum();
                if !ramp {
                    for (sums, (ios, bytes, hist)) in self.open.iter_mut().zip(ops) {
                        sums.add(ios, bytes, hist);
                    }
                }
                let step = self.detector.push(start_s, end_s, completions, ramp);
                if step == Step::Open {
                    return;
                }
                self.closed.push_back(pack(std::mem::take(&mut self.open)));
                if self.closed.len() > Detector::span(&self.limits) {
                    self.closed.pop_front();
                }
                if step == Step::Steady {
                    self.phase = if self.limits.measure_s > 0.0 {
                        Phase::Measuring(0.0)
                    } else {
                        Phase::Done
                    };
                }
            }
        }
    }

    /// Steady, and measured `steady_measure` after it: the threads may stop.
    pub fn done(&self) -> bool {
        matches!(self.phase, Phase::Done)
    }

    /// What the run comes to, once every interval has been pushed.
    pub fn finish(self) -> Outcome {
        let attained = !matches!(self.phase, Phase::Seeking);
        let rounds: Vec<Round> = self.detector.window().copied().collect();
        let full = rounds.len() == self.limits.window;
        let excursion = if full { self.detector.last() } else { None };
        let window = full.then(|| {
            let mut ops: OpSums = Default::default();
            let n = self.detector.window_closed_rounds();
            for r in self.closed.iter().skip(self.closed.len() - n) {
                absorb_packed(&mut ops, r);
            }
            let window_end_s = rounds[rounds.len() - 1].end_s;
            if attained {
                absorb(&mut ops, &self.measure);
            }
            Window {
                ops,
                start_s: rounds[0].start_s,
                end_s: self.measure_end_s.unwrap_or(window_end_s),
            }
        });
        Outcome {
            attained,
            limits: self.limits,
            widened: self.detector.widened(),
            rounds_total: self.detector.rounds(),
            rounds: if full { rounds } else { Vec::new() },
            excursion,
            window,
        }
    }
}

/// What `results` cover when a window is reported: per op slot, its sums, and the span.
pub struct Window {
    pub ops: OpSums,
    pub start_s: f64,
    pub end_s: f64,
}

impl Window {
    /// Seconds the results cover: every rate's denominator.
    pub fn len_s(&self) -> f64 {
        (self.end_s - self.start_s).max(1e-9)
    }

    /// One op slot's sums in the shape `record::merged_result` takes.
    pub fn part(&self, op: Op) -> crate::record::OpPart {
        let s = &self.ops[op as usize];
        (s.ios, s.bytes, s.hist.clone())
    }
}

/// A steady-state job's verdict and the window its results cover.
pub struct Outcome {
    pub attained: bool,
    limits: Limits,
    widened: u32,
    rounds_total: u32,
    /// The last full window judged, oldest first; empty when the job never held one.
    rounds: Vec<Round>,
    excursion: Option<Excursion>,
    /// The steady window (and `steady_measure`), or the last window judged when none
    /// was steady. `None` when the job completed fewer rounds than a window: `results`
    /// then cover the whole measured run, as without steady state.
    pub window: Option<Window>,
}

impl Outcome {
    /// The report's `steady_state`; `results_s` is the span `results` cover.
    pub fn report(&self, results_s: (f64, f64)) -> SteadyState {
        SteadyState {
            attained: self.attained,
            rounds: self.rounds_total,
            widened: self.widened,
            window_start_s: self.rounds.first().map(|r| r.start_s),
            window_end_s: self.rounds.last().map(|r| r.end_s),
            range_pct: self.excursion.map(|x| x.range_pct),
            slope_pct: self.excursion.map(|x| x.slope_pct),
            window_rounds: self
                .rounds
                .iter()
                .map(|r| SteadyRound {
                    start_s: r.start_s,
                    end_s: r.end_s,
                    ios: r.completions,
                    rate: r.rate(),
                })
                .collect(),
            results_start_s: results_s.0,
            results_end_s: results_s.1,
            limits: self.limits.report(),
        }
    }

    /// `not_steady` when the cap (`runtime_s` seconds) came first; `None` when attained.
    pub fn warning(&self, runtime_s: f64) -> Option<Warning> {
        self.warning_for(runtime_s, true)
    }

    /// As `warning`; `trimmed` says whether the results cover the last window judged (a
    /// live job) or the whole series (`judge`).
    fn warning_for(&self, runtime_s: f64, trimmed: bool) -> Option<Warning> {
        if self.attained {
            return None;
        }
        let covers = if trimmed {
            "the results cover those rounds"
        } else {
            "the results cover the whole run"
        };
        let l = &self.limits;
        let need_s = l.round_s * l.window as f64;
        Some(match self.excursion {
            Some(x) => Warning::new(
                WarningKind::NotSteady,
                format!(
                    "no steady state within `runtime` ({runtime_s:.3} s): over the last {} rounds the rate ranged {:.1}% of its mean (limit {}%) and drifted {:.1}% (limit {}%); {covers}",
                    l.window, x.range_pct, l.range_pct, x.slope_pct, l.slope_pct
                ),
                "give `runtime` more time (it is only the cap), or widen `steady_range`/`steady_slope`; longer rounds (`steady_round`) smooth a bursty rate",
            ),
            None => Warning::new(
                WarningKind::NotSteady,
                format!(
                    "no steady state within `runtime` ({runtime_s:.3} s): it completed {} of the {} rounds a window needs; the results cover the whole run",
                    self.rounds_total, l.window
                ),
                format!(
                    "a window needs {need_s:.3} s or more (rounds widen to hold {MIN_ROUND_COMPLETIONS} completions): give `runtime` at least that, or fewer or shorter rounds (`steady_window`, `steady_round`)"
                ),
            ),
        })
    }
}

/// Judges a series that ran without steady state by `job`'s steady-state keys, as the
/// job would have been judged live: the `steady_state` section and the `not_steady`
/// warning, or `None` when the job has no steady state. `results` are not trimmed
/// (points carry no histograms), so the section's `results_*_s` span the whole measured
/// series. This is how `fslab-engine steady` judges the summed series of a multi-host
/// run, whose ranks each ran the whole `runtime` (docs/multihost.md).
pub fn judge(job: &Job, points: &[SeriesPoint]) -> Option<(SteadyState, Option<Warning>)> {
    let limits = Limits::of(job)?;
    let mut tracker = Tracker::new(limits);
    let mut measured: Option<(f64, f64)> = None;
    for p in points {
        let start_s = (p.t_s - p.dur_s).max(0.0);
        // `record::Op` order.
        let slots = [
            &p.read,
            &p.write,
            &p.files,
            &p.log,
            &p.txn,
            &p.background,
            &p.trim,
        ];
        let ops: IntervalOps<'_> =
            slots.map(|o| o.as_ref().map_or((0, 0, None), |o| (o.ios, o.bytes, None)));
        tracker.push(start_s, p.t_s, p.ramp, ops);
        if !p.ramp {
            measured = Some(measured.map_or((start_s, p.t_s), |(s, _)| (s, p.t_s)));
        }
    }
    let runtime_s = measured.map_or(0.0, |(s, e)| e - s);
    let outcome = tracker.finish();
    let warning = outcome.warning_for(runtime_s, false);
    Some((outcome.report(measured.unwrap_or((0.0, 0.0))), warning))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(window: usize) -> Limits {
        Limits {
            round_s: 1.0,
            window,
            range_pct: 20.0,
            slope_pct: 10.0,
            measure_s: 0.0,
            tracks: tracked(Kind::Block),
        }
    }

    /// Feeds one rate per 1 s interval; returns the steps.
    fn feed(d: &mut Detector, rates: &[u64]) -> Vec<Step> {
        let t0 = f64::from(d.rounds());
        rates
            .iter()
            .enumerate()
            .map(|(i, &r)| d.push(t0 + i as f64, t0 + i as f64 + 1.0, r, false))
            .collect()
    }

    #[test]
    fn a_steady_series_is_steady_once_the_window_is_full() {
        let mut d = Detector::new(limits(5));
        let steps = feed(&mut d, &[1000, 1010, 990, 1005, 995]);
        assert_eq!(steps[..4], [Step::Closed; 4]);
        assert_eq!(steps[4], Step::Steady);
        let x = d.last().unwrap();
        assert!((x.range_pct - 2.0).abs() < 1e-9, "{x:?}");
        assert!(x.slope_pct < 2.0, "{x:?}");
    }

    #[test]
    fn a_drifting_series_is_never_steady() {
        // 5% more per round: any five rounds range 19.5% of their mean, within the
        // limit, but the line drifts as much across them.
        let mut d = Detector::new(limits(5));
        let rates: Vec<u64> = (0..30).map(|i| (1000.0 * 1.05f64.powi(i)) as u64).collect();
        let steps = feed(&mut d, &rates);
        assert!(!steps.contains(&Step::Steady), "{steps:?}");
        let x = d.last().unwrap();
        assert!(x.slope_pct > 10.0, "{x:?}");
    }

    #[test]
    fn slow_drift_within_the_slope_limit_is_steady() {
        // 1% per round: 4% across the window, under 10%.
        let mut d = Detector::new(limits(5));
        let steps = feed(&mut d, &[1000, 1010, 1020, 1030, 1040]);
        assert_eq!(steps[4], Step::Steady);
        let x = d.last().unwrap();
        assert!((x.slope_pct - 4.0 / 1.02).abs() < 1e-6, "{x:?}");
    }

    #[test]
    fn an_oscillating_series_fails_the_range_but_not_the_slope() {
        // Four seconds low, four high: no round of 1, 2 or 4 s evens it out.
        let mut d = Detector::new(limits(5));
        let rates: Vec<u64> = (0..60)
            .map(|i| if (i / 4) % 2 == 0 { 700 } else { 1300 })
            .collect();
        let steps = feed(&mut d, &rates);
        assert!(!steps.contains(&Step::Steady), "{steps:?}");
        let x = d.last().unwrap();
        assert!(x.range_pct > 15.0, "{x:?}");
        assert!(x.slope_pct < 30.0, "{x:?}");
    }

    #[test]
    fn a_window_of_doubled_rounds_is_judged_from_the_rounds_already_closed() {
        // 700 and 1300 by turns: every window of 1 s rounds ranges 60%; 2 s rounds are all
        // 1000. Once ten 1 s rounds are closed they make five 2 s rounds: steady at once.
        let mut d = Detector::new(limits(5));
        let rates: Vec<u64> = (0..19)
            .map(|i| if i % 2 == 0 { 700 } else { 1300 })
            .collect();
        let steps = feed(&mut d, &rates);
        // Later rounds do not replace the steady window.
        assert_eq!(
            steps.iter().position(|s| *s == Step::Steady),
            Some(9),
            "{steps:?}"
        );
        assert_eq!(d.widened(), 1);
        assert_eq!(d.window_closed_rounds(), 10);
        let rounds: Vec<&Round> = d.window().collect();
        assert!(
            rounds.iter().all(|r| r.end_s - r.start_s == 2.0),
            "{rounds:?}"
        );
        assert!(rounds.iter().all(|r| r.rate() == 1000.0), "{rounds:?}");
        assert_eq!(rounds[0].start_s, 0.0);
    }

    #[test]
    fn doubled_rounds_start_on_a_grid_so_a_cycle_is_not_evened_out_by_its_phase() {
        // Two rounds low, two high: 2 s rounds from the first round alternate 700 and
        // 1300; 2 s rounds shifted by one would all be 1000, and are never judged. 4 s
        // rounds hold a whole cycle each: steady once twenty rounds are closed.
        let mut d = Detector::new(limits(5));
        let rates: Vec<u64> = (0..20)
            .map(|i| if (i / 2) % 2 == 0 { 700 } else { 1300 })
            .collect();
        let steps = feed(&mut d, &rates);
        assert_eq!(
            steps.iter().position(|s| *s == Step::Steady),
            Some(19),
            "{steps:?}"
        );
        assert_eq!(d.widened(), 2);
    }

    #[test]
    fn rounds_double_at_most_twice() {
        let mut d = Detector::new(limits(3));
        // Doubling every round: no round length makes it steady.
        let rates: Vec<u64> = (0..60).map(|i| 200 * (1 << (i % 12))).collect();
        let steps = feed(&mut d, &rates);
        assert!(!steps.contains(&Step::Steady), "{steps:?}");
        assert_eq!(d.widened(), MAX_WIDENINGS);
        assert!(d.window().all(|r| r.end_s - r.start_s <= 4.0));
    }

    #[test]
    fn a_series_that_settles_becomes_steady_when_the_window_holds_only_settled_rounds() {
        let mut d = Detector::new(limits(5));
        let mut rates = vec![3000, 2000, 1500, 1200];
        rates.extend([1000; 10]);
        let steps = feed(&mut d, &rates);
        let first = steps.iter().position(|s| *s == Step::Steady).unwrap();
        // The window 1200, 1000, 1000, 1000, 1000 is within the range (19%) but its line
        // drifts 15%; the next one, all 1000, is steady.
        assert_eq!(first, 8, "{steps:?}");
        assert!(steps[..4].iter().all(|s| *s != Step::Steady));
    }

    #[test]
    fn a_series_that_is_never_steady_never_says_so() {
        let mut d = Detector::new(limits(5));
        // Random-looking jumps between 500 and 1500.
        let rates = [
            500, 1500, 900, 1400, 600, 1300, 700, 1500, 500, 1100, 1500, 600,
        ];
        let steps = feed(&mut d, &rates);
        assert!(!steps.contains(&Step::Steady), "{steps:?}");
        // Twelve 1 s rounds; the last window judged is of 2 s rounds (4 s ones need 20).
        assert_eq!((d.rounds(), d.widened()), (12, 1));
    }

    #[test]
    fn a_slow_device_widens_its_rounds_to_hold_enough_completions() {
        // 60 completions per 1 s interval: a round needs 4 intervals (240 >= 200).
        let mut d = Detector::new(limits(5));
        let steps = feed(&mut d, &[60; 20]);
        assert_eq!(d.rounds(), 5);
        assert_eq!(steps[19], Step::Steady);
        let rounds: Vec<&Round> = d.window().collect();
        assert!(
            rounds.iter().all(|r| r.end_s - r.start_s == 4.0),
            "{rounds:?}"
        );
        assert!(rounds.iter().all(|r| r.rate() == 60.0));
        assert_eq!(rounds[0].start_s, 0.0);
    }

    #[test]
    fn ramp_intervals_are_not_judged() {
        let mut d = Detector::new(limits(3));
        assert_eq!(d.push(0.0, 1.0, 5_000, true), Step::Open);
        assert_eq!(d.push(1.0, 2.0, 5_000, true), Step::Open);
        let steps = feed(&mut d, &[]);
        assert!(steps.is_empty());
        assert_eq!(d.push(2.0, 3.0, 1000, false), Step::Closed);
        assert_eq!(d.push(3.0, 4.0, 1000, false), Step::Closed);
        assert_eq!(d.push(4.0, 5.0, 1000, false), Step::Steady);
        assert_eq!(d.window().next().unwrap().start_s, 2.0);
    }

    #[test]
    fn rounds_are_at_least_steady_round_long() {
        let mut l = limits(2);
        l.round_s = 2.5;
        let mut d = Detector::new(l);
        // 0.5 s intervals: a round is five of them.
        let steps: Vec<Step> = (0..10)
            .map(|i| d.push(f64::from(i) * 0.5, f64::from(i + 1) * 0.5, 1000, false))
            .collect();
        assert_eq!(d.rounds(), 2, "{steps:?}");
        assert_eq!(steps[9], Step::Steady);
    }

    #[test]
    fn the_drift_is_the_slope_per_round_times_the_rounds_between_first_and_last() {
        // SNIA: |slope per round| x (rounds - 1) against the mean.
        let rounds: Vec<Round> = [100.0, 110.0, 120.0]
            .iter()
            .enumerate()
            .map(|(i, &r)| Round {
                start_s: i as f64,
                end_s: i as f64 + 1.0,
                completions: r as u64,
            })
            .collect();
        let x = Excursion::of(&rounds);
        assert!((x.slope_pct - 20.0 / 110.0 * 100.0).abs() < 1e-9, "{x:?}");
        assert!((x.range_pct - 20.0 / 110.0 * 100.0).abs() < 1e-9, "{x:?}");
    }

    fn hist_of(lat_ns: u64, n: u64) -> Histogram<u64> {
        let mut h = total_hist();
        h.record_n(lat_ns, n).unwrap();
        h
    }

    /// One interval of `ios` reads, each `lat_ns`.
    fn push_reads(t: &mut Tracker, i: u64, ios: u64, lat_ns: u64, ramp: bool) {
        let h = hist_of(lat_ns, ios);
        let mut ops: IntervalOps<'_> = std::array::from_fn(|_| (0, 0, None));
        ops[Op::Read as usize] = (ios, ios * 4096, Some(&h));
        t.push(i as f64, i as f64 + 1.0, ramp, ops);
    }

    #[test]
    fn the_window_results_hold_the_steady_rounds_only() {
        let mut t = Tracker::new(limits(3));
        // A ramp and a warm-up at other latencies, then three steady rounds.
        push_reads(&mut t, 0, 9_000, 50, true);
        push_reads(&mut t, 1, 5_000, 80, false);
        for i in 2..5 {
            assert!(!t.done());
            push_reads(&mut t, i, 1_000, 100_000, false);
        }
        assert!(t.done());
        // What comes after the stop is not part of it.
        push_reads(&mut t, 5, 300, 7, false);
        let out = t.finish();
        assert!(out.attained);
        let w = out.window.as_ref().unwrap();
        assert_eq!((w.start_s, w.end_s, w.len_s()), (2.0, 5.0, 3.0));
        let (ios, bytes, hist) = w.part(Op::Read);
        let hist = hist.expect("the window has reads");
        assert_eq!((ios, bytes), (3_000, 3_000 * 4096));
        assert_eq!(hist.len(), 3_000);
        assert_eq!(hist.sigfig(), 3, "the totals' precision");
        assert!(hist.min() >= 99_900, "{}", hist.min());
        let s = out.report((w.start_s, w.end_s));
        assert_eq!((s.rounds, s.window_rounds.len()), (4, 3));
        assert_eq!((s.window_start_s, s.window_end_s), (Some(2.0), Some(5.0)));
        assert!(out.warning(10.0).is_none());
    }

    #[test]
    fn a_closed_round_keeps_its_histogram_packed_small_and_whole() {
        // A round's latencies spread over three decades (10 us to 10 ms).
        let mut h = total_hist();
        for i in 0..20_000u64 {
            h.record(10_000 + (i * 7_919) % 9_990_000).unwrap();
        }
        let mut sums: OpSums = Default::default();
        sums[Op::Read as usize].add(20_000, 20_000 * 4096, Some(&h));
        let packed = pack(sums);
        let text = packed[Op::Read as usize].hist.as_ref().unwrap();
        let live = h.distinct_values() * 8;
        assert!(text.len() * 20 < live, "{} vs {live}", text.len());
        let mut back: OpSums = Default::default();
        absorb_packed(&mut back, &packed);
        let r = &back[Op::Read as usize];
        assert_eq!((r.ios, r.bytes), (20_000, 20_000 * 4096));
        assert_eq!(r.hist.as_ref().unwrap(), &h);
    }

    #[test]
    fn a_window_of_doubled_rounds_holds_every_closed_round_it_is_made_of() {
        let mut t = Tracker::new(limits(3));
        // A warm-up round at another latency, then 700 and 1300 by turns: no window of
        // 1 s rounds is steady. 2 s rounds pair rounds 1-2, 3-4, ...: at round 6 the
        // warm-up is in the window; at round 8 the three 2 s rounds of 3-8 are steady.
        push_reads(&mut t, 0, 5_000, 80, false);
        for i in 1..8 {
            assert!(!t.done());
            let ios = if i % 2 == 1 { 700 } else { 1_300 };
            push_reads(&mut t, i, ios, 100_000, false);
        }
        assert!(t.done());
        let out = t.finish();
        assert!(out.attained);
        let w = out.window.as_ref().unwrap();
        assert_eq!((w.start_s, w.end_s), (2.0, 8.0));
        let (ios, _, hist) = w.part(Op::Read);
        assert_eq!(ios, 6_000);
        assert!(
            hist.unwrap().min() >= 99_900,
            "the warm-up round is not in it"
        );
        let s = out.report((w.start_s, w.end_s));
        assert_eq!((s.rounds, s.widened, s.window_rounds.len()), (8, 1, 3));
    }

    #[test]
    fn steady_measure_extends_the_results_past_the_window() {
        let mut l = limits(3);
        l.measure_s = 2.0;
        let mut t = Tracker::new(l);
        for i in 0..3 {
            push_reads(&mut t, i, 1_000, 1_000, false);
        }
        assert!(!t.done(), "steady, but still measuring");
        push_reads(&mut t, 3, 2_000, 1_000, false);
        assert!(!t.done());
        push_reads(&mut t, 4, 2_000, 1_000, false);
        assert!(t.done());
        let out = t.finish();
        let w = out.window.as_ref().unwrap();
        assert_eq!((w.start_s, w.end_s), (0.0, 5.0));
        assert_eq!(w.part(Op::Read).0, 7_000);
        let s = out.report((w.start_s, w.end_s));
        assert_eq!(
            s.window_end_s,
            Some(3.0),
            "the judged window ends before the measure"
        );
    }

    #[test]
    fn never_steady_reports_the_last_window_and_warns() {
        let mut t = Tracker::new(limits(3));
        for (i, ios) in [1_000, 2_000, 3_000, 4_000, 5_000].into_iter().enumerate() {
            push_reads(&mut t, i as u64, ios, 1_000, false);
        }
        assert!(!t.done());
        let out = t.finish();
        assert!(!out.attained);
        let w = out.window.as_ref().unwrap();
        assert_eq!((w.start_s, w.end_s), (2.0, 5.0));
        assert_eq!(w.part(Op::Read).0, 12_000);
        let warning = out.warning(5.0).unwrap();
        assert_eq!(warning.kind, WarningKind::NotSteady);
        assert!(warning.message.contains("limit 20%"), "{}", warning.message);
    }

    #[test]
    fn too_short_for_a_window_covers_the_whole_run() {
        let mut t = Tracker::new(limits(5));
        for i in 0..3 {
            push_reads(&mut t, i, 1_000, 1_000, false);
        }
        let out = t.finish();
        assert!(!out.attained && out.window.is_none());
        let s = out.report((0.0, 3.0));
        assert_eq!((s.rounds, s.window_start_s, s.range_pct), (3, None, None));
        let w = out.warning(3.0).unwrap();
        assert!(w.message.contains("3 of the 5 rounds"), "{}", w.message);
        assert!(w.hint.unwrap().contains("5.000 s"));
    }

    fn point(i: usize, reads: u64) -> SeriesPoint {
        let op = crate::report::IntervalOp {
            ios: reads,
            bytes: reads * 4096,
            iops: reads as f64,
            bw_bytes: reads as f64 * 4096.0,
            lat_mean_ns: 1000.0,
            lat_p99_ns: 2000,
        };
        SeriesPoint {
            t_s: i as f64 + 1.0,
            dur_s: 1.0,
            ramp: i == 0,
            read: Some(op),
            write: None,
            files: None,
            log: None,
            txn: None,
            background: None,
            trim: None,
        }
    }

    fn steady_job() -> Job {
        let text = "filename = \"/tmp/x\"\nsize = \"1m\"\nruntime = \"30s\"\nsteady_state = true\nsteady_window = 3";
        crate::spec::load(text).unwrap().1
    }

    #[test]
    fn a_finished_series_is_judged_as_the_live_job_would_be() {
        // A ramp, a warm-up, then flat: steady on the last three rounds.
        let rates = [9_000, 5_000, 1_000, 1_010, 990, 1_000, 1_005];
        let points: Vec<SeriesPoint> = rates
            .iter()
            .enumerate()
            .map(|(i, &r)| point(i, r))
            .collect();
        let (s, warning) = judge(&steady_job(), &points).unwrap();
        assert!(s.attained && warning.is_none(), "{s:?}");
        // Steady at the fourth round (the ramp not judged): judging stops there, as live.
        assert_eq!(s.rounds, 4);
        assert_eq!((s.window_start_s, s.window_end_s), (Some(2.0), Some(5.0)));
        assert_eq!((s.results_start_s, s.results_end_s), (1.0, 7.0));
        let drifting: Vec<SeriesPoint> =
            (0..12).map(|i| point(i, 1_000 * (i as u64 + 1))).collect();
        let (s, warning) = judge(&steady_job(), &drifting).unwrap();
        assert!(!s.attained);
        assert_eq!(warning.unwrap().kind, WarningKind::NotSteady);
        let plain = crate::spec::load("filename = \"/tmp/x\"\nsize = \"1m\"")
            .unwrap()
            .1;
        assert!(judge(&plain, &points).is_none());
    }
}
