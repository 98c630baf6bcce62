//! fslab-engine: runs one storage job and measures it.
//!
//! `spec` reads the job, `target` opens what it does I/O on, `worker` + `io/` do the
//! I/O, `record` + `series` measure it, `report` is the JSON that comes out.

pub mod app;
pub mod cpu;
pub mod error;
pub mod files;
pub mod io;
pub mod offsets;
pub mod record;
pub mod report;
pub mod series;
pub mod spec;
pub mod target;
pub mod units;
pub mod worker;

use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Barrier, Mutex, OnceLock};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crate::error::RunError;
use crate::record::{summarize, total_hist, Op, Recorder, ThreadTotals};
use crate::report::{EngineInfo, FsyncResult, Report, Series, SeriesPoint, Status, Warning};
use crate::series::SeriesBuilder;
use crate::spec::{IoEngine, Job};
use crate::target::Buffers;
use crate::worker::{Flags, Worker};

pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// What one thread hands back.
struct ThreadOutcome {
    totals: ThreadTotals,
    error: Option<report::IoErrorEntry>,
    end: Instant,
}

/// Runs a resolved job to its end (or until `flags.stop`), calling `on_point` for each
/// point of the time series as it completes.
pub fn run(
    mut job: Job,
    mut warnings: Vec<Warning>,
    flags: &Flags,
    on_point: &mut dyn FnMut(&SeriesPoint),
) -> Result<Report, RunError> {
    if job.kind == spec::Kind::Files {
        return files::run(job, warnings, flags, on_point);
    }
    if job.kind.is_app() {
        return app::run(job, warnings, flags, on_point);
    }
    let target = target::open(&mut job, &flags.stop)?;
    let job = job;
    let threads = job.numjobs;
    let (tx, rx) = mpsc::channel();
    let ready = Barrier::new(threads as usize + 1);
    let go = Barrier::new(threads as usize + 1);
    let start_cell: OnceLock<Instant> = OnceLock::new();
    let setup_errors: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let start_unix_s = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);

    let (outcomes, points, start, cpu) = std::thread::scope(|s| {
        let mut handles = Vec::new();
        for (t, file) in target.files.into_iter().enumerate() {
            let tx = tx.clone();
            let (job, ready, go, start_cell, setup_errors) =
                (&job, &ready, &go, &start_cell, &setup_errors);
            handles.push(s.spawn(move || {
                let t = t as u32;
                let seed = worker::thread_seed(job.randseed, t);
                let buffers = Buffers::new(job.bs, job.iodepth, job.buffer_content, seed);
                let queue = match (job.ioengine, &file) {
                    (IoEngine::IoUring, Some(f)) => {
                        match io::uring::Queue::new(f.as_raw_fd(), &buffers, job.iodepth) {
                            Ok(q) => Some(q),
                            Err(e) => {
                                setup_errors
                                    .lock()
                                    .unwrap_or_else(|p| p.into_inner())
                                    .push(format!("cannot set up io_uring: {e}"));
                                None
                            }
                        }
                    }
                    _ => None,
                };
                ready.wait();
                go.wait();
                let start = *start_cell.get().expect("set before `go`");
                let rec = Recorder::new(start, job.ramp_time(), job.interval(), tx);
                let mut w = Worker::new(job, t, file, start, buffers, rec, flags);
                if !flags.abort.load(Ordering::Relaxed) {
                    match job.ioengine {
                        IoEngine::IoUring => {
                            if let Some(q) = queue {
                                q.run(&mut w, job.iodepth_batch_complete_min as usize);
                            }
                        }
                        IoEngine::Sync => io::sync::run(&mut w),
                        IoEngine::Null => io::sync::run_null(&mut w, job.null_lat()),
                    }
                    if job.end_fsync && !flags.abort.load(Ordering::Relaxed) {
                        w.fsync();
                    }
                }
                let end = Instant::now();
                let error = w.error.take();
                ThreadOutcome {
                    totals: w.rec.finish(end),
                    error,
                    end,
                }
            }));
        }
        drop(tx);
        ready.wait();
        if !setup_errors
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_empty()
        {
            flags.abort.store(true, Ordering::Relaxed);
        }
        let start = Instant::now();
        start_cell.set(start).expect("set once");
        go.wait();
        // Rings and buffers are set up by now: the CPU counted is the run's.
        let cpu_before = cpu::usage();
        let mut series = SeriesBuilder::new(threads, start, job.interval(), job.ramp_time());
        series.drain(rx, on_point);
        let outcomes: Vec<ThreadOutcome> = handles
            .into_iter()
            .map(|h| h.join().expect("a worker thread panicked"))
            .collect();
        let cpu = cpu::since(&cpu_before, start.elapsed());
        (outcomes, series.finish(), start, cpu)
    });

    if let Some(e) = setup_errors
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .into_iter()
        .next()
    {
        return Err(RunError::io(e, std::io::Error::other("setup failed")));
    }

    let end = outcomes.iter().map(|o| o.end).max().unwrap_or(start);
    let ramp = job.ramp_time();
    let measured = end.saturating_duration_since(start + ramp);
    let runtime_s = measured.as_secs_f64().max(1e-9);
    let interval_s = job.interval;
    let errors: Vec<_> = outcomes.iter().filter_map(|o| o.error.clone()).collect();

    let mut results = Vec::new();
    let mut fsync_hist = total_hist();
    let mut fsync_count = 0;
    for op in [Op::Read, Op::Write] {
        let r = record::merged_result(
            op.name(),
            outcomes.iter().map(|o| &o.totals.ops[op as usize]),
            runtime_s,
        );
        if r.ios == 0 && !(op == Op::Read && job.rw.reads() || op == Op::Write && job.rw.writes()) {
            continue;
        }
        results.push(r);
    }
    for o in &outcomes {
        fsync_count += o.totals.fsync.len();
        fsync_hist
            .add(&o.totals.fsync)
            .expect("histograms share their bounds");
    }

    let interrupted = flags.stop.load(Ordering::Relaxed);
    let status = status_of(
        &errors,
        interrupted,
        runtime_s,
        &mut warnings,
        "give `runtime` of a few seconds or more",
    );
    Ok(Report {
        schema_version: report::SCHEMA_VERSION,
        engine: EngineInfo::this(),
        job,
        status,
        interrupted,
        start_unix_s,
        runtime_s,
        ramp_s: ramp
            .as_secs_f64()
            .min(end.saturating_duration_since(start).as_secs_f64()),
        target: target.info,
        layout: target.layout,
        results,
        fsync: FsyncResult {
            count: fsync_count,
            lat_ns: summarize(&fsync_hist),
        },
        series: Series { interval_s, points },
        cpu,
        errors,
        warnings,
        files: None,
        app: None,
    })
}

/// The job's status from what happened, plus a `short_run` warning when it ran fine but
/// for under a second (`advice` says how to make it longer for this kind of job).
pub(crate) fn status_of(
    errors: &[report::IoErrorEntry],
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
        warnings.push(Warning {
            kind: "short_run".into(),
            message: format!("the measured part of the job took {runtime_s:.3} s"),
            hint: Some(format!(
                "results under a second are dominated by start-up and caching effects; {advice}"
            )),
        });
    }
    status
}
