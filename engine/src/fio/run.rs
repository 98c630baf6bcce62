//! Runs a job file's plan as fio would: every job of a phase at once, each in its own
//! threads; a job with `stonewall` starts when every job above it has ended, one with
//! `wait_for` when the job it names has. Each job is an ordinary engine job with its own
//! report, named as in the file; a reporting group with `group_reporting` is also
//! reported as one (counts summed, histograms added, rates over the group's span).

use schemars::JsonSchema;
use serde::Serialize;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::{Inert, JobPlace, Plan};
use crate::harness::Flags;
use crate::merge::summed_results;
use crate::report::{OpResult, Report, SeriesPoint, Status};

/// What `fslab-engine run FILE.fio` prints.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(title = "fslab-engine fio report")]
pub struct FioReport {
    /// The job files, as named.
    pub files: Vec<String>,
    /// `ok` when every job is; else `interrupted` or `failed` (the worst).
    pub status: Status,
    /// One per job section, in file order.
    pub jobs: Vec<FioJobResult>,
    /// One per reporting group with `group_reporting`.
    pub groups: Vec<GroupResult>,
    /// Options accepted with no effect.
    pub inert: Vec<Inert>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct FioJobResult {
    #[serde(flatten)]
    pub at: JobPlace,
    /// The job's engine report; null when it could not start (see `error`) or another
    /// job's `exitall` kept it from starting (see `ended_by`).
    pub report: Option<Report>,
    pub error: Option<String>,
    /// The job whose `exitall` ended this one early, or kept it from starting.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended_by: Option<String>,
}

/// A reporting group's jobs as one (fio's `group_reporting`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct GroupResult {
    pub group: u32,
    pub jobs: Vec<String>,
    /// From the earliest measured start to the latest measured end of its jobs.
    pub runtime_s: f64,
    /// Per operation: counts summed, histograms added, rates over `runtime_s`.
    pub results: Vec<OpResult>,
}

/// Runs every job of `plan`; `on_point` gets each job's intervals with its name.
///
/// A phase opens once every job of the one before has ended; within it a job starts
/// at once, or when the job it waits for (`wait_for`) has ended. Jobs start in file
/// order, each on a thread of its own made only when it starts.
pub fn run(
    plan: &Plan,
    flags: &Flags,
    on_point: &(dyn Fn(&str, &SeriesPoint) + Sync),
) -> FioReport {
    let n = plan.jobs.len();
    let mut results: Vec<Option<Result<Report, String>>> = vec![None; n];
    // Each job stops on the run's signal, but its errors and steady state are its
    // own; `halt` is how another job's `exitall` ends it.
    let halts: Vec<Arc<AtomicBool>> = (0..n).map(|_| Arc::new(AtomicBool::new(false))).collect();
    let job_flags: Vec<Flags> = halts.iter().map(|h| flags.for_job(Arc::clone(h))).collect();
    let mut ended_by: Vec<Option<String>> = vec![None; n];
    let mut started = vec![false; n];
    let (tx, rx) = std::sync::mpsc::channel::<(usize, Result<Report, String>)>();
    std::thread::scope(|s| {
        let mut done = vec![false; n];
        let mut pending: Vec<usize> = Vec::new();
        let (mut next, mut running) = (0usize, 0usize);
        loop {
            if running == 0 && pending.is_empty() {
                let Some(first) = plan.jobs.get(next) else {
                    break;
                };
                let phase = first.at.phase;
                while plan.jobs.get(next).is_some_and(|j| j.at.phase == phase) {
                    pending.push(next);
                    next += 1;
                }
            }
            // Jobs an `exitall` ended before they started never start.
            pending.retain(|&i| {
                if ended_by[i].is_some() {
                    done[i] = true;
                }
                ended_by[i].is_none()
            });
            pending.retain(|&i| {
                let pj = &plan.jobs[i];
                if !pj.deps.iter().all(|&k| done[k]) {
                    return true;
                }
                let tx = tx.clone();
                let flags = &job_flags[i];
                started[i] = true;
                s.spawn(move || {
                    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        if flags.stopped() {
                            return Err("not started: the run was stopped".to_string());
                        }
                        let mut cb = |p: &SeriesPoint| on_point(&pj.at.name, p);
                        crate::run(pj.job.clone(), Vec::new(), flags, &mut cb)
                            .map_err(|e| e.to_string())
                    }))
                    .unwrap_or_else(|_| Err("the job's thread panicked".into()));
                    let _ = tx.send((i, out));
                });
                running += 1;
                false
            });
            if running == 0 && pending.is_empty() {
                // The phase's jobs were all ended before they started: the next one.
                if next < n {
                    continue;
                }
                break;
            }
            if running == 0 {
                // Only an earlier job can be waited for, so some job always starts;
                // should none, the rest are reported as not run rather than waited on.
                break;
            }
            let Ok((i, out)) = rx.recv() else {
                break;
            };
            let failed = !matches!(&out, Ok(r) if r.status == Status::Ok);
            results[i] = Some(out);
            done[i] = true;
            running -= 1;
            let me = &plan.jobs[i].at;
            let scope = match (&me.exitall, me.exitall_on_error && failed) {
                (Some(scope), _) => Some(scope.as_str()),
                (None, true) => Some("group"),
                (None, false) => None,
            };
            if let Some(scope) = scope {
                for (j, other) in plan.jobs.iter().enumerate() {
                    let covered = match scope {
                        "all" => true,
                        // Those running now, whatever their group; the next phase
                        // starts as usual.
                        "stonewall" => started[j],
                        _ => other.at.group == me.group,
                    };
                    if j != i && !done[j] && covered && ended_by[j].is_none() {
                        ended_by[j] = Some(me.name.clone());
                        halts[j].store(true, Ordering::Relaxed);
                    }
                }
            }
        }
    });
    let jobs: Vec<FioJobResult> = plan
        .jobs
        .iter()
        .zip(results)
        .zip(ended_by)
        .map(|((pj, r), ended_by)| {
            let (report, error) = match r {
                Some(Ok(rep)) => (Some(rep), None),
                Some(Err(e)) => (None, Some(e)),
                None if ended_by.is_some() => (None, None),
                None => (None, Some("not run".into())),
            };
            FioJobResult {
                at: pj.at.clone(),
                report,
                error,
                ended_by,
            }
        })
        .collect();
    let status = worst(&jobs);
    let groups = plan.grouped.iter().map(|&g| group(g, &jobs)).collect();
    FioReport {
        files: plan.files.clone(),
        status,
        jobs,
        groups,
        inert: plan.inert.clone(),
    }
}

fn worst(jobs: &[FioJobResult]) -> Status {
    let mut status = Status::Ok;
    for j in jobs {
        match j.report.as_ref().map(|r| r.status) {
            None if j.error.is_none() => {}
            None | Some(Status::Failed) => return Status::Failed,
            Some(Status::Interrupted) => status = Status::Interrupted,
            Some(Status::Ok) => {}
        }
    }
    status
}

fn group(g: u32, jobs: &[FioJobResult]) -> GroupResult {
    let members: Vec<&FioJobResult> = jobs.iter().filter(|j| j.at.group == g).collect();
    let reports: Vec<&Report> = members.iter().filter_map(|j| j.report.as_ref()).collect();
    let start = reports
        .iter()
        .map(|r| r.start_unix_s + r.ramp_s)
        .fold(f64::INFINITY, f64::min);
    let end = reports
        .iter()
        .map(|r| r.start_unix_s + r.ramp_s + r.runtime_s)
        .fold(f64::NEG_INFINITY, f64::max);
    let span = if reports.is_empty() {
        0.0
    } else {
        (end - start).max(1e-9)
    };
    let results = summed_results(reports.iter().map(|r| r.results.as_slice()), span);
    GroupResult {
        group: g,
        jobs: members.iter().map(|j| j.at.name.clone()).collect(),
        runtime_s: span,
        results,
    }
}

/// The JSON Schema of `run`'s report for fio job files (`schemas/fio-report.schema.json`).
pub fn report_schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(FioReport)).unwrap_or_default()
}
