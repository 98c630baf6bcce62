//! Block workloads (`kind = "block"`, the default): reads and writes on one file or
//! device, fio-style.
//!
//! `target` checks, lays out and opens what the I/O goes to, `offsets` says where each
//! I/O goes (with `sizes` how long it is, `distribution` and `randmap` where random
//! ones land), `pace` when it may go, `worker` is one thread's state; the backends in
//! `crate::io` issue the I/O.
//! `verify` stamps and checks blocks (`verify = true`), `verify_state` keeps their
//! generations from one job to the next.

pub mod beside;
pub mod cmdprio;
pub mod defrag;
pub mod distribution;
pub mod flow;
pub mod lat_target;
pub mod offsets;
pub mod pace;
pub mod placement;
pub mod randmap;
pub mod replay;
pub mod sizes;
pub mod target;
pub mod verify;
pub mod verify_state;
pub mod worker;

use std::os::fd::{AsRawFd, RawFd};
use std::path::Path;
use std::sync::Arc;

use crate::buffers::{Buffers, Data};
use crate::diagnostics::Warning;
use crate::error::{JobError, RunError};
use crate::harness::{Body, Flags, Launch, Outcome};
use crate::record::{summarize, Op};
use crate::report::{FsyncResult, IoErrorEntry, IoOp, RateResult, RateUnit, Report, SeriesPoint};
use crate::spec::{IoEngine, Job};
use crate::{harness, io};

use self::verify::Verifier;
use self::worker::Worker;

/// Runs a block job (`kind = "block"`): checks and opens the target, then `numjobs`
/// threads each drive one `Worker` through an `io/` backend.
pub fn run(
    mut job: Job,
    mut warnings: Vec<Warning>,
    flags: &Flags,
    on_point: &mut dyn FnMut(&SeriesPoint),
) -> Result<Report, RunError> {
    // The state file is opened by its path; a confined job opens nothing that way.
    if job.beneath.is_some() && job.verify_state.is_some() {
        return Err(JobError::new(
            "verify_state",
            "cannot be kept by a job confined to a directory (--within)",
        )
        .into());
    }
    // The state is read and checked before the target is touched (laying a file out
    // writes it): a job refused for its state must leave the data as it was.
    let saved = match (job.verify, &job.verify_state) {
        (true, Some(state)) => {
            let path = Path::new(state);
            verify_state::check_path(path, job.path_for(0).as_deref())?;
            let saved = verify_state::load(path)?;
            if let Some(s) = &saved {
                verify_state::check_fits(s, path, job.bs, job.size.map(|s| job.extent(s)))?;
            }
            saved
        }
        _ => None,
    };
    if job.verify {
        if let Some(size) = job.size {
            verify_blocks(&job, job.extent(size))?;
        }
    }
    beside::check(&job)?;
    if let Some(d) = job.pattern.startdelay {
        wait_or_stop(std::time::Duration::from_secs_f64(d), flags);
    }
    let target::Target {
        info,
        layout,
        files,
    } = target::open(&mut job, &flags.stop)?;
    let job = job;
    let device = info.kind == crate::report::TargetKind::Block;
    // The threads borrow the files: each makes its own handle in a table of its own
    // (io/fdtable.rs), and these close the shared table's copies once they are done.
    // Each thread its files: one, or `nrfiles` in a row.
    let per_thread = (files.len() / job.numjobs.max(1) as usize).max(1);
    let mut chunks: Vec<Vec<&std::fs::File>> = files
        .chunks(per_thread)
        .map(|c| c.iter().flatten().collect())
        .collect();
    if chunks.is_empty() && job.pattern.read_iolog.is_some() {
        // A trace of path actions only: a thread with no file replays it.
        chunks = (0..job.numjobs.max(1)).map(|_| Vec::new()).collect();
    }
    let inputs: Vec<(Vec<&std::fs::File>, Option<Verifier>)> =
        chunks.into_iter().zip(verifiers(&job, saved)?).collect();
    let program = beside::start(&job)?;
    let mut harvest = harness::run_threads(
        &Launch::of(&job, true),
        flags,
        inputs,
        on_point,
        |t, (shared, verifier), gate| {
            // Held to the end of the thread's work; the handles below are duplicates in
            // the thread's own table (or, where the kernel refuses, in the shared one).
            let fds: Vec<RawFd> = shared.iter().map(|f| f.as_raw_fd()).collect();
            let _own = io::fdtable::OwnTable::keeping(&fds);
            let files = match shared.iter().map(|f| f.try_clone()).collect() {
                Ok(f) => f,
                Err(e) => {
                    gate.setup_failed(format!("cannot open a handle of the thread's own: {e}"));
                    Vec::new()
                }
            };
            // Placed before its buffers are allocated, so they follow the memory policy.
            let p = &job.pattern;
            if let Err(e) = placement::apply(
                p.cpus_allowed.as_deref(),
                p.cpus_allowed_policy == Some(crate::spec::CpusPolicy::Split),
                p.numa_cpu_nodes.as_deref(),
                p.numa_mem_policy.as_deref(),
                t,
            ) {
                gate.setup_failed(format!("cannot place the thread: {e}"));
            }
            let seed = harness::thread_seed(job.randseed, t);
            let mut buffers = Buffers::new(job.max_bs(), job.iodepth, job.buffer_content, seed);
            buffers.shape(&Data::of(&job));
            let fds: Vec<RawFd> = files.iter().map(AsRawFd::as_raw_fd).collect();
            let donor = match job.ioengine {
                IoEngine::E4defrag => match defrag::Donor::open(&job, t) {
                    Ok(d) => Some(d),
                    Err(e) => {
                        gate.setup_failed(e);
                        None
                    }
                },
                _ => None,
            };
            let queue = match job.ioengine {
                IoEngine::IoUring if !fds.is_empty() => {
                    match io::uring::Queue::new(
                        &fds,
                        &buffers,
                        job.iodepth,
                        io::uring::Setup::of(&job),
                    ) {
                        Ok(q) => Some(q),
                        Err(e) => {
                            gate.setup_failed(format!("cannot set up io_uring: {e}"));
                            None
                        }
                    }
                }
                _ => None,
            };
            if let Some(n) = job.pattern.nice {
                // Linux keeps a nice value per thread: this one's only.
                // SAFETY: setpriority on the calling thread's id, plain integers.
                let rc = unsafe {
                    libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, n)
                };
                if rc != 0 {
                    gate.setup_failed(format!(
                        "cannot set the thread's nice value to {n} (`nice`): {}",
                        std::io::Error::last_os_error()
                    ));
                }
            }
            if let Err(e) = set_io_priority(&job) {
                gate.setup_failed(format!(
                    "cannot set the I/O priority (`prio`, `prioclass`): {e}"
                ));
            }
            let replay = job.pattern.read_iolog.as_deref().and_then(|log| {
                let scale = (!job.pattern.replay_no_stall)
                    .then(|| f64::from(job.pattern.replay_time_scale.unwrap_or(100)) / 100.0);
                replay::Replay::open(std::path::Path::new(log), scale)
                    .map_err(|m| gate.setup_failed(format!("read_iolog: `{log}` {m}")))
                    .ok()
            });
            let paths = replay.as_ref().and_then(|_| {
                target::PathOps::of(&job)
                    .map_err(|e| gate.setup_failed(format!("read_iolog: {e}")))
                    .ok()
            });
            let (start, rec) = gate.start();
            let mut w = Worker::new(&job, t, files, start, buffers, rec, flags)
                .with_verify(verifier)
                .with_replay(replay, paths);
            if !flags.aborted() {
                match job.ioengine {
                    IoEngine::IoUring => {
                        if let Some(q) = queue {
                            q.run(&mut w, job.batching());
                        }
                    }
                    IoEngine::Sync => io::sync::run(
                        &mut w,
                        io::sync::Call::Transfer {
                            device,
                            flags: io::RwFlags::of(&job),
                        },
                    ),
                    IoEngine::Falloc => io::sync::run(&mut w, io::sync::Call::Falloc),
                    IoEngine::Ftruncate => io::sync::run(&mut w, io::sync::Call::Ftruncate),
                    IoEngine::E4defrag => {
                        if let Some(d) = &donor {
                            io::sync::run(&mut w, d.call());
                        }
                    }
                    IoEngine::Mmap => io::sync::run(
                        &mut w,
                        io::sync::Call::Mmap {
                            len: job.extent(job.size.unwrap_or(0)),
                            write: job.writes(),
                            random: job.rw.is_random(),
                            direct: job.direct,
                        },
                    ),
                    IoEngine::Null => io::sync::run_null(&mut w, job.null_lat()),
                }
                if job.end_fsync && !flags.aborted() {
                    w.end_fsync();
                }
                if job.verify_read_back {
                    w.read_back(device);
                }
            }
            let error = w.error.take();
            let verifier = w.verify.take();
            let continued = std::mem::take(&mut w.continued);
            let lat = w.lat.as_ref().map(lat_target::LatTarget::report);
            let lag = w.replay.as_ref().map(|r| r.lag);
            Outcome::finish(w.rec, error, (verifier, continued, lat, lag))
        },
        |_| {},
    );
    if let Some(e) = harvest.setup_error.clone() {
        return Err(RunError::io(e, std::io::Error::other("setup failed")));
    }

    let verify = match harvest.outcomes.first_mut() {
        Some(o) if job.numjobs == 1 => finish_verify(&job, o.value.0.take(), &mut o.error),
        _ => verify::merge(
            harvest
                .outcomes
                .iter_mut()
                .filter_map(|o| o.value.0.take().map(Verifier::into_result)),
        ),
    };
    let continued = continued_errors(harvest.outcomes.iter().flat_map(|o| &o.value.1));
    let lat_threads: Vec<lat_target::LatThread> = harvest
        .outcomes
        .iter_mut()
        .filter_map(|o| o.value.2.take())
        .collect();
    let replayed = job.pattern.read_iolog.as_ref().map(|log| {
        let lag = harvest
            .outcomes
            .iter()
            .filter_map(|o| o.value.3)
            .next()
            .unwrap_or_default();
        crate::report::ReplayResult {
            log: log.clone(),
            timed: !job.pattern.replay_no_stall,
            actions: lag.actions,
            paths: lag.paths,
            paths_skipped: lag.paths_skipped,
            short_reads: lag.short_reads,
            late: lag.late,
            late_mean_s: if lag.late > 0 {
                lag.sum_s / lag.late as f64
            } else {
                0.0
            },
            late_max_s: lag.max_s,
        }
    });
    let latency_target = job
        .pattern
        .latency_target
        .map(|t| crate::report::LatTargetResult {
            target_ns: (t * 1e9) as u64,
            percentile: job.pattern.latency_percentile.unwrap_or(100.0),
            window_s: job.pattern.latency_window.unwrap_or(0.0),
            threads: lat_threads,
        });
    if let Some(w) = continued_warning(&continued) {
        warnings.push(w);
    }
    if let Some(w) = verify.as_ref().and_then(verify::warning) {
        warnings.push(w);
    }

    let span = harvest.span(harvest.last_end(), job.ramp_time());
    let mut results = Vec::new();
    for (slot, op) in [
        (Op::Read, IoOp::Read),
        (Op::Write, IoOp::Write),
        (Op::Trim, IoOp::Trim),
    ] {
        let r = harvest.merged(slot, op.into(), span);
        let asked = match slot {
            Op::Read => job.rw.reads(),
            Op::Trim => job.rw.trims(),
            _ => job.rw.writes() && !job.rw.trims(),
        };
        if r.ios == 0 && !asked {
            continue;
        }
        results.push(r);
    }
    let rate = rate_result(&job, &results, span.runtime_s);
    if let Some(w) = rate.as_ref().and_then(|r| rate_warning(&job, r)) {
        warnings.push(w);
    }
    let fsync = FsyncResult {
        count: harvest
            .outcomes
            .iter()
            .filter_map(|o| o.totals.fsync.as_ref())
            .map(hdrhistogram::Histogram::len)
            .sum(),
        lat_ns: summarize(&harvest.fsync_hist()),
    };
    let body = Body {
        target: info,
        layout,
        results,
        fsync,
        files: None,
        app: None,
        verify,
    };
    // A replay lasts as long as its trace; `runtime` only cuts it short.
    let advice = if job.pattern.read_iolog.is_some() {
        "a replay lasts as long as its trace: record the application for longer"
    } else {
        "give `runtime` of a few seconds or more"
    };
    let mut report = harvest.into_report(job, span, body, warnings, flags, advice);
    report.rate = rate;
    report.errors_continued = continued;
    report.latency_target = latency_target;
    report.program = program.map(beside::Beside::stop);
    report.replay = replayed;
    Ok(report)
}

/// The threads' failed I/Os gone on after, summed by op and error.
fn continued_errors<'a>(
    parts: impl Iterator<Item = &'a crate::report::ContinuedErrors>,
) -> Vec<crate::report::ContinuedErrors> {
    let mut all: Vec<crate::report::ContinuedErrors> = Vec::new();
    for c in parts {
        match all.iter_mut().find(|a| a.op == c.op && a.errno == c.errno) {
            Some(a) => {
                a.count += c.count;
                a.first_offset = a.first_offset.min(c.first_offset);
            }
            None => all.push(c.clone()),
        }
    }
    all
}

fn continued_warning(continued: &[crate::report::ContinuedErrors]) -> Option<Warning> {
    if continued.is_empty() {
        return None;
    }
    let said: Vec<String> = continued
        .iter()
        .map(|c| {
            let name = c
                .name
                .clone()
                .unwrap_or_else(|| format!("errno {}", c.errno));
            format!("{} {}s failed with {name}", c.count, c.op)
        })
        .collect();
    Some(Warning::new(
        crate::diagnostics::WarningKind::ErrorsContinued,
        format!("{}; the job went on (`continue_on_error`)", said.join(", ")),
        "failed I/Os count in no result: the rates cover the I/Os that succeeded",
    ))
}

/// The calling thread's I/O priority (`prio`, `prioclass`), which its io_uring requests
/// carry; nothing when the job sets neither. A class without a level takes 4, a level
/// without a class best-effort (as fio).
fn set_io_priority(job: &Job) -> std::io::Result<()> {
    let p = &job.pattern;
    if p.prio.is_none() && p.prioclass.is_none() {
        return Ok(());
    }
    const IOPRIO_WHO_PROCESS: libc::c_long = 1;
    let class = libc::c_long::from(p.prioclass.unwrap_or(2));
    let level = libc::c_long::from(p.prio.unwrap_or(4));
    // SAFETY: ioprio_set on the calling thread (who = 0) with a plain integer.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_ioprio_set,
            IOPRIO_WHO_PROCESS,
            0,
            (class << 13) | level,
        )
    };
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Sleeps `d` (`startdelay`), waking early when the job is stopped.
fn wait_or_stop(d: std::time::Duration, flags: &Flags) {
    let end = std::time::Instant::now() + d;
    while !flags.stopped() {
        let now = std::time::Instant::now();
        if now >= end {
            break;
        }
        std::thread::sleep((end - now).min(std::time::Duration::from_millis(50)));
    }
}

/// A rate-limited job's asked and achieved rate, over every thread.
fn rate_result(
    job: &Job,
    results: &[crate::report::OpResult],
    runtime_s: f64,
) -> Option<RateResult> {
    let p = &job.pattern;
    let threads = f64::from(job.numjobs);
    let (unit, asked, least, done) = match (p.rate, p.rate_iops) {
        (Some(b), _) => (
            RateUnit::Bytes,
            b as f64,
            p.rate_min.map_or(0.95 * b as f64, |m| m as f64),
            results.iter().map(|r| r.bytes).sum::<u64>() as f64,
        ),
        (None, Some(i)) => (
            RateUnit::Iops,
            i as f64,
            p.rate_iops_min.map_or(0.95 * i as f64, |m| m as f64),
            results.iter().map(|r| r.ios).sum::<u64>() as f64,
        ),
        _ => return None,
    };
    let achieved = done / runtime_s.max(1e-9);
    Some(RateResult {
        unit,
        asked_per_s: asked * threads,
        least_per_s: least * threads,
        achieved_per_s: achieved,
        share: achieved / (asked * threads),
    })
}

fn rate_warning(job: &Job, r: &RateResult) -> Option<Warning> {
    if r.achieved_per_s >= r.least_per_s {
        return None;
    }
    let unit = match r.unit {
        RateUnit::Bytes => "bytes/s",
        RateUnit::Iops => "IOPS",
    };
    Some(Warning::new(
        crate::diagnostics::WarningKind::RateShort,
        format!(
            "achieved {:.0} {unit} of the {:.0} asked ({:.0}%), below the least accepted ({:.0})",
            r.achieved_per_s,
            r.asked_per_s,
            100.0 * r.share,
            r.least_per_s
        ),
        if job.iodepth == 1 && job.ioengine != IoEngine::Null {
            "the target could not carry this load at `iodepth = 1`: a deeper queue or more `numjobs` may; else it is this target's limit"
        } else {
            "the target could not carry this load: that is its limit at this queue depth"
        },
    ))
}

/// The most blocks `verify` keeps a generation for.
const MAX_VERIFY_BLOCKS: u64 = 1 << 30;

/// The blocks a verify job addresses, or why verify cannot cover them. Checked before
/// the target is touched when the job gives `size` (a refused job must not lay a file
/// out), and again once a device has given it.
fn verify_blocks(job: &Job, size: u64) -> Result<u64, RunError> {
    let blocks = verify_state::blocks(job.bs, size);
    // Sequential writes in flight are distinct blocks only while the queue is shorter
    // than the file: past that, one block would be written twice at once.
    if job.writes() && u64::from(job.iodepth) > blocks {
        return Err(JobError::new(
            "verify",
            format!(
                "`iodepth` = {} is more than the {blocks} blocks of the file: one block would be written twice at once",
                job.iodepth
            ),
        )
        .hint("use a lower `iodepth`, or a larger `size`")
        .into());
    }
    // Every block's generation is held in memory for the whole job.
    if blocks > MAX_VERIFY_BLOCKS {
        return Err(JobError::new(
            "verify",
            format!(
                "the target holds {blocks} blocks of {} bytes; verify keeps 4 bytes per block in memory, at most {MAX_VERIFY_BLOCKS} blocks (4 GiB)",
                job.bs
            ),
        )
        .hint("use a larger `bs`, or a smaller `size`")
        .into());
    }
    Ok(blocks)
}

/// Each thread's verifier, once the target has given `size`. With `numjobs = 1` it
/// covers the whole target, generations from the state file or all 0 (never written);
/// with more, each thread's covers its own region or file (the spec allows no other).
fn verifiers(
    job: &Job,
    saved: Option<verify_state::Saved>,
) -> Result<Vec<Option<Verifier>>, RunError> {
    let threads = job.numjobs as usize;
    if !job.verify {
        return Ok((0..threads).map(|_| None).collect());
    }
    let made = |base: u64, generations: Vec<u32>| {
        Verifier::new(job.bs, job.randseed, generations, job.verify_state.clone())
            .from(base)
            .with_backlog(job.verify_backlog)
            .with_read_back(job.verify_read_back)
    };
    let part = job.size.unwrap_or(job.bs);
    if threads > 1 {
        let own_file = job.filename.is_none();
        // A device's size is known only now.
        let own_region = job.pattern.offset_increment.is_some_and(|inc| inc >= part);
        if own_file || own_region {
            let blocks = verify_blocks(job, part)? as usize;
            return Ok((0..job.numjobs)
                .map(|t| {
                    let base = if own_file { 0 } else { job.shape(t).base };
                    Some(made(base, vec![0; blocks]))
                })
                .collect());
        }
        // Threads writing the same blocks: one table of generations, numbered from the
        // target's start, and a block taken by one thread's I/O at a time.
        let blocks = verify_blocks(job, job.extent(part))? as usize;
        let table = Arc::new(verify::Shared::new(blocks, job.bs));
        return Ok((0..threads)
            .map(|_| Some(made(0, Vec::new()).sharing(Arc::clone(&table))))
            .collect());
    }
    // Blocks are numbered from the target's start: the regions' offsets included.
    let size = job.extent(part);
    let blocks = verify_blocks(job, size)?;
    let generations = match saved {
        Some(s) => {
            let path = Path::new(job.verify_state.as_deref().unwrap_or_default());
            // A device's size is known only now.
            verify_state::check_fits(&s, path, job.bs, Some(size))?;
            s.generations
        }
        None => vec![0; blocks as usize],
    };
    Ok(vec![Some(made(0, generations))])
}

/// Saves the generations of a job that wrote (also one stopped early: what completed
/// is on the device), and returns what verify found. A state that cannot be saved
/// fails the job: the next one would take every block written here for corrupt.
fn finish_verify(
    job: &Job,
    verifier: Option<Verifier>,
    error: &mut Option<IoErrorEntry>,
) -> Option<crate::report::VerifyResult> {
    let v = verifier?;
    if let Some(state) = &job.verify_state {
        if v.result().blocks_written > 0 {
            let size = job.extent(job.size.unwrap_or(job.bs));
            if let Err(e) = verify_state::save(Path::new(state), job.bs, size, v.generations()) {
                error.get_or_insert(IoErrorEntry {
                    op: "write".into(),
                    thread: 0,
                    offset: 0,
                    errno: e.raw_os_error(),
                    message: format!("cannot save the verify state to {state}: {e}"),
                });
            }
        }
    }
    Some(v.into_result())
}

#[cfg(test)]
mod tests {
    use std::fs::OpenOptions;
    use std::sync::mpsc;
    use std::time::Duration;

    use super::*;
    use crate::clock::Instant;
    use crate::record::Recorder;

    /// A plain file cannot fail a read on purpose, but a file opened write-only fails
    /// every one (EBADF): enough to see both backends count unreadable blocks and go on.
    fn read_all_unreadable(ioengine: &str) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![0u8; 16 * 4096]).unwrap();
        let text = format!(
            "filename = {:?}\nsize = \"64k\"\nverify = true\nioengine = \"{ioengine}\"",
            path.display().to_string()
        );
        let (_, job) = crate::spec::load(&text).unwrap();
        let file = OpenOptions::new().write(true).open(&path).unwrap();
        let (tx, _rx) = mpsc::channel();
        let start = Instant::now();
        let rec = Recorder::new(start, Duration::ZERO, Duration::from_secs(1), tx, false);
        let flags = Flags::new();
        let buffers = Buffers::new(job.bs, job.iodepth, job.buffer_content, 1);
        let queue = (ioengine == "io_uring").then(|| {
            io::uring::Queue::new(
                &[file.as_raw_fd()],
                &buffers,
                job.iodepth,
                Default::default(),
            )
            .unwrap()
        });
        let verifier = Verifier::new(job.bs, job.randseed, vec![1; 16], None);
        let mut w = Worker::new(&job, 0, vec![file], start, buffers, rec, &flags)
            .with_verify(Some(verifier));
        match queue {
            Some(q) => q.run(&mut w, io::uring::Batching::EACH),
            None => io::sync::run(
                &mut w,
                io::sync::Call::Transfer {
                    device: false,
                    flags: Default::default(),
                },
            ),
        }
        assert!(w.error.is_none(), "{:?}", w.error);
        assert!(!flags.aborted());
        let r = w.verify.take().unwrap().into_result();
        assert_eq!((r.blocks_read, r.unreadable, r.good), (16, 16, 0), "{r:?}");
        assert_eq!(r.bad.len(), 16);
        assert!(r
            .bad
            .iter()
            .all(|b| b.errno == Some(libc::EBADF) && b.expected_generation == 1));
        let offsets: Vec<u64> = r.bad.iter().map(|b| b.offset).collect();
        assert_eq!(offsets, (0..16).map(|b| b * 4096).collect::<Vec<_>>());
    }

    #[test]
    fn a_failed_read_is_counted_and_the_job_goes_on_sync() {
        read_all_unreadable("sync");
    }

    #[test]
    fn a_failed_read_is_counted_and_the_job_goes_on_io_uring() {
        read_all_unreadable("io_uring");
    }
    /// The read-back reads what is on the file now: a block damaged after it was
    /// written (here between the writes and the read-back) comes back corrupt, the
    /// rest good.
    #[test]
    fn the_read_back_finds_a_block_damaged_after_its_write() {
        use std::os::unix::fs::FileExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![0u8; 16 * 4096]).unwrap();
        let text = format!(
            "filename = {:?}\nsize = \"64k\"\nrw = \"write\"\nverify = true\nverify_read_back = true\nioengine = \"sync\"",
            path.display().to_string()
        );
        let (_, job) = crate::spec::load(&text).unwrap();
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        let (tx, _rx) = mpsc::channel();
        let start = Instant::now();
        let rec = Recorder::new(start, Duration::ZERO, Duration::from_secs(1), tx, false);
        let flags = Flags::new();
        let buffers = Buffers::new(job.bs, job.iodepth, job.buffer_content, 1);
        let verifier = Verifier::new(job.bs, job.randseed, vec![0; 16], None).with_read_back(true);
        let mut w = Worker::new(&job, 0, vec![file], start, buffers, rec, &flags)
            .with_verify(Some(verifier));
        io::sync::run(
            &mut w,
            io::sync::Call::Transfer {
                device: false,
                flags: Default::default(),
            },
        );
        let other = OpenOptions::new().write(true).open(&path).unwrap();
        other.write_all_at(&[0u8; 100], 3 * 4096 + 200).unwrap();
        w.read_back(false);
        assert!(w.error.is_none(), "{:?}", w.error);
        let r = w.verify.take().unwrap().into_result();
        assert_eq!(
            (r.read_back_blocks, r.good, r.corrupt),
            (16, 15, 1),
            "{r:?}"
        );
        assert_eq!(r.bad[0].offset, 3 * 4096);
    }
    /// With several files, each I/O goes to the file the service type names: in turn
    /// (after every N), a whole pass over one before the next, or drawn.
    #[test]
    fn several_files_take_their_turns_as_the_service_type_says() {
        let dir = tempfile::tempdir().unwrap();
        let order = |service: &str| -> Vec<usize> {
            let text = format!(
                "directory = {:?}\nnrfiles = 3\nsize = \"16k\"\nrw = \"randread\"\nfile_service_type = \"{service}\"",
                dir.path().display().to_string()
            );
            let (_, job) = crate::spec::load(&text).unwrap();
            let (tx, _rx) = mpsc::channel();
            let start = Instant::now();
            let rec = Recorder::new(start, Duration::ZERO, Duration::from_secs(1), tx, false);
            let flags = Flags::new();
            let buffers = Buffers::new(job.bs, job.iodepth, job.buffer_content, 1);
            let mut w = Worker::new(&job, 0, vec![], start, buffers, rec, &flags);
            (0..12)
                .map(|_| match w.next(Instant::now()) {
                    crate::block::worker::Next::Io(_, offset, _) => {
                        let (file, at) = w.locate(offset);
                        assert!(at < 16 << 10);
                        file
                    }
                    _ => panic!("an I/O"),
                })
                .collect()
        };
        assert_eq!(order("roundrobin"), [0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2]);
        assert_eq!(order("roundrobin:2"), [0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2]);
        assert_eq!(order("sequential"), [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2]);
        let drawn = order("random");
        assert!(drawn.iter().all(|&f| f < 3));
        assert!((0..3).all(|f| drawn.contains(&f)), "{drawn:?}");
    }
}
