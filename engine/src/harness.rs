//! The run harness every kind shares: N threads started from one instant, their
//! intervals merged into the time series as they arrive, the engine's own CPU over the
//! run, the join, and the report's common part. A kind (block, files, app) only says
//! what one thread does and what its report adds.
//!
//! Start-up, interruption and CPU accounting live here once, so a fix to one of them
//! reaches every kind.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Barrier, Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hdrhistogram::Histogram;

use crate::clock::Instant;
use crate::diagnostics::{Warning, WarningKind};
use crate::record::{self, total_hist, IntervalMsg, Op, Recorder, ThreadTotals};
use crate::report::{
    self, AppResult, Cpu, EngineInfo, FilesResult, FsyncResult, IoErrorEntry, Layout, OpResult,
    Report, ResultOp, Series, SeriesPoint, Status, TargetInfo, VerifyResult,
};
use crate::series::SeriesBuilder;
use crate::spec::Job;
use crate::steady;

/// Flags every thread watches. `stop` is set by the first SIGINT/SIGTERM, `abort` by a
/// thread that hit an I/O error (the job stops at the first error, like fio's default),
/// `steady` when a steady-state job has measured its steady window: it ends as if
/// `runtime` had run out, not interrupted.
pub struct Flags {
    pub stop: Arc<AtomicBool>,
    pub abort: AtomicBool,
    pub steady: AtomicBool,
    /// Another job ended this one (a job file's `exitall`): it stops as if its time
    /// were up.
    pub halt: Arc<AtomicBool>,
}

impl Flags {
    /// Flags for a job nothing has stopped yet.
    pub fn new() -> Self {
        Self {
            stop: Arc::new(AtomicBool::new(false)),
            abort: AtomicBool::new(false),
            steady: AtomicBool::new(false),
            halt: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Flags for one job of a job file: stopped by the same signal as `self`, its own
    /// errors and steady state its own, halted through `halt`.
    pub fn for_job(&self, halt: Arc<AtomicBool>) -> Self {
        Self {
            stop: Arc::clone(&self.stop),
            abort: AtomicBool::new(false),
            steady: AtomicBool::new(false),
            halt,
        }
    }

    /// Whether threads should wind down: a signal, another thread's error, or a steady
    /// window measured.
    #[inline]
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
            || self.abort.load(Ordering::Relaxed)
            || self.steady.load(Ordering::Relaxed)
            || self.halt.load(Ordering::Relaxed)
    }

    /// Whether a thread's error (or a failed set-up) has stopped the job.
    #[inline]
    pub fn aborted(&self) -> bool {
        self.abort.load(Ordering::Relaxed)
    }

    /// Whether a signal stopped the job (the report then covers the part that ran).
    pub fn interrupted(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Keeps a thread's first error in `slot` and stops every thread.
    pub fn fail(&self, slot: &mut Option<IoErrorEntry>, error: IoErrorEntry) {
        if slot.is_none() {
            *slot = Some(error);
        }
        self.abort.store(true, Ordering::Relaxed);
    }
}

impl Default for Flags {
    fn default() -> Self {
        Self::new()
    }
}

/// Each thread's seed: threads sharing one file must not walk the same random sequence.
pub fn thread_seed(randseed: u64, thread: u32) -> u64 {
    randseed ^ u64::from(thread).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// How a job's threads start and are measured.
pub struct Launch {
    pub interval: Duration,
    /// Measured into the series but not the totals.
    pub ramp: Duration,
    /// Threads finish their set-up (buffers, rings) and wait for each other before the
    /// clock starts, so no set-up time is measured and a failed set-up stops the job
    /// before it does any I/O (block jobs). Without it the clock starts while threads
    /// still allocate (files and app jobs, whose set-up is a buffer and cannot fail).
    pub ready: bool,
    /// Stop once steady (`steady_state = true`), and report the steady window.
    pub steady: Option<steady::Limits>,
}

impl Launch {
    /// The launch a job's own keys give: its `interval`, `ramp_time` and steady state.
    pub fn of(job: &Job, ready: bool) -> Self {
        Self {
            interval: job.interval(),
            ramp: job.ramp_time(),
            ready,
            steady: steady::Limits::of(job),
        }
    }
}

/// A thread's way through the start: it reports set-up failures, then waits for the
/// start instant and gets its recorder.
pub struct Gate<'a> {
    ready: Option<&'a Barrier>,
    go: &'a Barrier,
    start: &'a OnceLock<Instant>,
    setup_errors: &'a Mutex<Vec<String>>,
    launch: &'a Launch,
    tx: Sender<IntervalMsg>,
}

impl Gate<'_> {
    /// Records a set-up failure; with `Launch::ready` the job is aborted before it starts
    /// and the run ends with this error (`Harvest::setup_error`).
    pub fn setup_failed(&self, message: String) {
        self.setup_errors
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(message);
    }

    /// Waits until every thread is there, then returns the job's start instant and this
    /// thread's recorder. A thread must call it exactly once: the others wait for it.
    pub fn start(self) -> (Instant, Recorder) {
        if let Some(ready) = self.ready {
            ready.wait();
        }
        self.go.wait();
        let start = *self.start.get().expect("set before `go`");
        let rec = Recorder::new(
            start,
            self.launch.ramp,
            self.launch.interval,
            self.tx,
            self.launch.steady.is_some(),
        );
        (start, rec)
    }
}

/// What one thread hands back: what it measured, when it ended, its first error, and
/// the kind's own answers.
pub struct Outcome<T> {
    pub totals: ThreadTotals,
    pub end: Instant,
    pub error: Option<IoErrorEntry>,
    pub value: T,
}

impl<T> Outcome<T> {
    /// Ends a thread's measurement now: its last (partial) interval goes to the series.
    pub fn finish(rec: Recorder, error: Option<IoErrorEntry>, value: T) -> Self {
        let end = Instant::now();
        Self {
            totals: rec.finish(end),
            end,
            error,
            value,
        }
    }
}

/// Everything the threads of one run gave back, and when.
pub struct Harvest<T> {
    pub outcomes: Vec<Outcome<T>>,
    pub points: Vec<SeriesPoint>,
    /// The instant every thread started from.
    pub start: Instant,
    /// Wall-clock time taken just before the threads were made.
    pub start_unix_s: f64,
    /// When the threads were joined and the `after` step was done: the end of the CPU
    /// window.
    pub joined: Instant,
    pub cpu: Cpu,
    /// The first set-up failure a thread reported.
    pub setup_error: Option<String>,
    /// A steady-state job's verdict and the window its results cover.
    pub steady: Option<steady::Outcome>,
}

/// Runs one thread per input from one start instant: `thread` gets its index, its
/// input and a `Gate` to start through. Live series points go to `on_point`. `after`
/// runs on this thread once all have been joined, inside the measured window (work no
/// single thread owns, such as a files job's directory pass).
pub fn run_threads<I, T, F, A>(
    launch: &Launch,
    flags: &Flags,
    inputs: Vec<I>,
    on_point: &mut dyn FnMut(&SeriesPoint),
    thread: F,
    after: A,
) -> Harvest<T>
where
    I: Send,
    T: Send,
    F: Fn(u32, I, Gate<'_>) -> Outcome<T> + Sync,
    A: FnOnce(&mut [Outcome<T>]),
{
    let threads = inputs.len() as u32;
    let (tx, rx) = mpsc::channel();
    let ready = launch.ready.then(|| Barrier::new(threads as usize + 1));
    let go = Barrier::new(threads as usize + 1);
    let start_cell: OnceLock<Instant> = OnceLock::new();
    let setup_errors: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let start_unix_s = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);

    let (outcomes, points, steady, start, joined, cpu) = std::thread::scope(|s| {
        let mut handles = Vec::new();
        for (t, input) in inputs.into_iter().enumerate() {
            let gate = Gate {
                ready: ready.as_ref(),
                go: &go,
                start: &start_cell,
                setup_errors: &setup_errors,
                launch,
                tx: tx.clone(),
            };
            let thread = &thread;
            handles.push(s.spawn(move || thread(t as u32, input, gate)));
        }
        drop(tx);
        if let Some(ready) = &ready {
            ready.wait();
            if !setup_errors
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .is_empty()
            {
                flags.abort.store(true, Ordering::Relaxed);
            }
        }
        let start = Instant::now();
        start_cell.set(start).expect("set once");
        go.wait();
        // Set-up is done (with `ready`): the CPU counted from here is the run's.
        let cpu_before = crate::cpu::usage();
        let mut series = SeriesBuilder::new(threads, start, launch.interval, launch.ramp)
            .with_steady(launch.steady);
        series.drain(rx, on_point, &flags.steady);
        let mut steady = series.take_steady();
        if let Some(s) = steady.as_mut().filter(|s| !s.attained) {
            // Only a job that ran to its cap reports its last window; a stopped one's
            // numbers cover the part that ran, as without steady state.
            if flags.interrupted() || flags.aborted() {
                s.window = None;
            }
        }
        let mut outcomes: Vec<Outcome<T>> = handles
            .into_iter()
            .map(|h| h.join().expect("a worker thread panicked"))
            .collect();
        after(&mut outcomes);
        let joined = Instant::now();
        let cpu = crate::cpu::since(&cpu_before, joined - start);
        (outcomes, series.finish(), steady, start, joined, cpu)
    });

    Harvest {
        outcomes,
        points,
        start,
        start_unix_s,
        joined,
        cpu,
        setup_error: setup_errors
            .into_inner()
            .unwrap_or_else(|p| p.into_inner())
            .into_iter()
            .next(),
        steady,
    }
}

/// The measured time of a run.
#[derive(Debug, Clone, Copy)]
pub struct Span {
    /// Seconds after the ramp: the denominator of every rate.
    pub runtime_s: f64,
    /// Seconds of ramp actually run.
    pub ramp_s: f64,
}

impl<T> Harvest<T> {
    /// When the last thread ended.
    pub fn last_end(&self) -> Instant {
        self.outcomes
            .iter()
            .map(|o| o.end)
            .max()
            .unwrap_or(self.start)
    }

    /// The run from its start to `end`, less `ramp`; a steady-state job's reported
    /// window instead, when it has one.
    pub fn span(&self, end: Instant, ramp: Duration) -> Span {
        let window = self.steady.as_ref().and_then(|s| s.window.as_ref());
        Span {
            runtime_s: window.map_or_else(
                || {
                    end.saturating_duration_since(self.start + ramp)
                        .as_secs_f64()
                        .max(1e-9)
                },
                steady::Window::len_s,
            ),
            ramp_s: ramp
                .as_secs_f64()
                .min(end.saturating_duration_since(self.start).as_secs_f64()),
        }
    }

    /// One `Op` slot's totals over every thread, as the report shows them: over the
    /// steady window when a steady-state job reports one (its intervals, merged by the
    /// series), else over the whole measured run (the threads' totals).
    pub fn merged(&self, slot: Op, op: ResultOp, span: Span) -> OpResult {
        if let Some(w) = self.steady.as_ref().and_then(|s| s.window.as_ref()) {
            return record::merged_result(op, [&w.part(slot)], span.runtime_s);
        }
        record::merged_result(
            op,
            self.outcomes.iter().map(|o| &o.totals.ops[slot as usize]),
            span.runtime_s,
        )
    }

    /// Every thread's fsync latencies in one histogram.
    pub fn fsync_hist(&self) -> Histogram<u64> {
        let mut h = total_hist();
        for f in self.outcomes.iter().filter_map(|o| o.totals.fsync.as_ref()) {
            h.add(f).expect("histograms share their bounds");
        }
        h
    }

    /// Assembles the report: the harvest gives what every kind shares, `body` what only
    /// the kind knows. `advice` says how to make this kind of job run longer, for the
    /// `short_run` warning.
    pub fn into_report(
        self,
        job: Job,
        span: Span,
        body: Body,
        mut warnings: Vec<Warning>,
        flags: &Flags,
        advice: &str,
    ) -> Report {
        let errors: Vec<IoErrorEntry> = self
            .outcomes
            .iter()
            .filter_map(|o| o.error.clone())
            .collect();
        let interrupted = flags.interrupted();
        let status = status_of(&errors, interrupted, span.runtime_s, &mut warnings, advice);
        let steady_state = self.steady.as_ref().map(|s| {
            let covers = match &s.window {
                Some(w) => (w.start_s, w.end_s),
                None => (span.ramp_s, span.ramp_s + span.runtime_s),
            };
            // Only a run that reached its cap missed steady state; a stopped one just
            // stopped.
            if status == Status::Ok {
                warnings.extend(s.warning(job.runtime.unwrap_or(span.runtime_s)));
            }
            s.report(covers)
        });
        Report {
            schema_version: report::SCHEMA_VERSION,
            engine: EngineInfo::this(),
            status,
            interrupted,
            start_unix_s: self.start_unix_s,
            runtime_s: span.runtime_s,
            ramp_s: span.ramp_s,
            target: body.target,
            layout: body.layout,
            results: body.results,
            fsync: body.fsync,
            series: Series {
                interval_s: job.interval,
                points: self.points,
            },
            cpu: self.cpu,
            errors,
            warnings,
            files: body.files,
            app: body.app,
            steady_state,
            verify: body.verify,
            rate: None,
            errors_continued: Vec::new(),
            latency_target: None,
            program: None,
            replay: None,
            job,
        }
    }
}

/// The parts of a report only the job's kind knows.
pub struct Body {
    pub target: TargetInfo,
    pub layout: Option<Layout>,
    pub results: Vec<OpResult>,
    pub fsync: FsyncResult,
    pub files: Option<FilesResult>,
    pub app: Option<AppResult>,
    pub verify: Option<VerifyResult>,
}

/// The job's status from what happened, plus a `short_run` warning when it ran fine but
/// for under a second (`advice` says how to make it longer for this kind of job).
fn status_of(
    errors: &[IoErrorEntry],
    interrupted: bool,
    runtime_s: f64,
    warnings: &mut Vec<Warning>,
    advice: &str,
) -> Status {
    let status = if !errors.is_empty() {
        Status::Failed
    } else if interrupted {
        Status::Interrupted
    } else {
        Status::Ok
    };
    if status == Status::Ok && runtime_s < 1.0 {
        warnings.push(Warning::new(
            WarningKind::ShortRun,
            format!("the measured part of the job took {runtime_s:.3} s"),
            format!(
                "results under a second are dominated by start-up and caching effects; {advice}"
            ),
        ));
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::IoOp;

    /// One thread that completes `ios[i]` reads of `lat_ns[i]` in interval `i` of 1 s, on
    /// a simulated clock (no waiting), unless the job was stopped before that interval.
    fn simulated(ios: &[u64], lat_ns: &[u64], steady: steady::Limits) -> (Harvest<()>, bool) {
        let launch = Launch {
            interval: Duration::from_secs(1),
            ramp: Duration::ZERO,
            ready: false,
            steady: Some(steady),
        };
        let flags = Flags::new();
        let harvest = run_threads(
            &launch,
            &flags,
            vec![()],
            &mut |_| {},
            |_, (), gate| {
                let (start, mut rec) = gate.start();
                let mut done = 0;
                for (&n, &lat) in ios.iter().zip(lat_ns) {
                    // What the job did after it was found steady is not part of it.
                    if flags.stopped() {
                        break;
                    }
                    for k in 0..n {
                        let t = start + Duration::from_secs(done) + Duration::from_micros(k + 1);
                        rec.complete(Op::Read, 4096, t - Duration::from_nanos(lat), t);
                    }
                    done += 1;
                }
                // Whole intervals: the last one is as long as the others.
                let end = start + Duration::from_secs(done);
                Outcome {
                    totals: rec.finish(end),
                    end,
                    error: None,
                    value: (),
                }
            },
            |_| {},
        );
        let stopped = flags.steady.load(Ordering::Relaxed);
        (harvest, stopped)
    }

    fn limits() -> steady::Limits {
        steady::Limits {
            round_s: 1.0,
            window: 5,
            range_pct: 20.0,
            slope_pct: 10.0,
            measure_s: 0.0,
            tracks: steady::tracked(crate::spec::Kind::Block),
        }
    }

    #[test]
    fn the_results_of_a_steady_job_are_its_steady_window() {
        // A warm-up of fast I/O, then 1000 reads of 100 us per second for 20 s; after it
        // another 5000 of 7 us that a real job would not have run.
        let mut ios = vec![3000, 2000, 1500];
        let mut lat = vec![50_000, 50_000, 50_000];
        ios.extend([1000; 20]);
        lat.extend([100_000; 20]);
        ios.push(5000);
        lat.push(7_000);
        let (h, stopped) = simulated(&ios, &lat, limits());
        assert!(stopped, "the steady flag was set");
        let s = h.steady.as_ref().unwrap();
        assert!(s.attained);
        let span = h.span(h.last_end(), Duration::ZERO);
        assert_eq!(span.runtime_s, 5.0, "the window: intervals 3..8");
        let r = h.merged(Op::Read, IoOp::Read.into(), span);
        assert_eq!(r.ios, 5000);
        assert_eq!(r.iops, 1000.0);
        assert!(
            (99_900..=100_100).contains(&r.lat_ns.min) && r.lat_ns.max <= 100_100,
            "only the window's latencies: {:?}",
            r.lat_ns
        );
        let state = s.report((3.0, 8.0));
        assert_eq!(state.window_start_s, Some(3.0));
        assert_eq!(state.window_end_s, Some(8.0));
        // The whole run is still in the series (how far past the window the thread got
        // before it saw the flag depends on the scheduler).
        let series: u64 = h
            .points
            .iter()
            .filter_map(|p| p.read.as_ref())
            .map(|o| o.ios)
            .sum();
        assert!(series >= 6500 + 5000, "{series}");
    }

    #[test]
    fn a_job_never_steady_reports_its_last_window_and_warns() {
        let ios: Vec<u64> = (0..8).map(|i| 1000 * (i + 1)).collect();
        let lat = vec![1_000; 8];
        let (h, stopped) = simulated(&ios, &lat, limits());
        assert!(!stopped);
        let s = h.steady.as_ref().unwrap();
        assert!(!s.attained);
        let span = h.span(h.last_end(), Duration::ZERO);
        assert_eq!(span.runtime_s, 5.0);
        let r = h.merged(Op::Read, IoOp::Read.into(), span);
        assert_eq!(
            r.ios,
            (4..=8).map(|i| 1000 * i).sum::<u64>(),
            "the last 5 rounds"
        );
        let report = h.into_report(
            crate::spec::load("ioengine = \"null\"\nruntime = 8\nsteady_state = true")
                .unwrap()
                .1,
            span,
            Body {
                target: TargetInfo {
                    kind: crate::report::TargetKind::Nothing,
                    paths: Vec::new(),
                    size_bytes: 0,
                    dio_align_bytes: None,
                },
                layout: None,
                results: vec![r],
                fsync: FsyncResult::default(),
                files: None,
                app: None,
                verify: None,
            },
            Vec::new(),
            &Flags::new(),
            "",
        );
        assert_eq!(report.status, Status::Ok);
        let kinds: Vec<WarningKind> = report.warnings.iter().map(|w| w.kind).collect();
        assert_eq!(kinds, [WarningKind::NotSteady]);
        let st = report.steady_state.unwrap();
        assert_eq!((st.results_start_s, st.results_end_s), (3.0, 8.0));
    }
}
