//! Block workloads (`kind = "block"`, the default): reads and writes on one file or
//! device, fio-style.
//!
//! `target` checks, lays out and opens what the I/O goes to, `offsets` says where each
//! I/O goes, `worker` is one thread's state; the backends in `crate::io` issue the I/O.

pub mod offsets;
pub mod target;
pub mod worker;

use std::os::fd::AsRawFd;

use crate::buffers::Buffers;
use crate::diagnostics::Warning;
use crate::error::RunError;
use crate::harness::{Body, Flags, Launch, Outcome};
use crate::record::{summarize, Op};
use crate::report::{FsyncResult, IoOp, Report, SeriesPoint};
use crate::spec::{IoEngine, Job};
use crate::{harness, io};

use self::worker::Worker;

/// Runs a block job (`kind = "block"`): checks and opens the target, then `numjobs`
/// threads each drive one `Worker` through an `io/` backend.
pub fn run(
    mut job: Job,
    warnings: Vec<Warning>,
    flags: &Flags,
    on_point: &mut dyn FnMut(&SeriesPoint),
) -> Result<Report, RunError> {
    let target::Target {
        info,
        layout,
        files,
    } = target::open(&mut job, &flags.stop)?;
    let job = job;
    let harvest = harness::run_threads(
        &Launch::of(&job, true),
        flags,
        files,
        on_point,
        |t, file, gate| {
            let seed = harness::thread_seed(job.randseed, t);
            let buffers = Buffers::new(job.bs, job.iodepth, job.buffer_content, seed);
            let queue = match (job.ioengine, &file) {
                (IoEngine::IoUring, Some(f)) => {
                    match io::uring::Queue::new(f.as_raw_fd(), &buffers, job.iodepth) {
                        Ok(q) => Some(q),
                        Err(e) => {
                            gate.setup_failed(format!("cannot set up io_uring: {e}"));
                            None
                        }
                    }
                }
                _ => None,
            };
            let (start, rec) = gate.start();
            let mut w = Worker::new(&job, t, file, start, buffers, rec, flags);
            if !flags.aborted() {
                match job.ioengine {
                    IoEngine::IoUring => {
                        if let Some(q) = queue {
                            q.run(&mut w, job.iodepth_batch_complete_min as usize);
                        }
                    }
                    IoEngine::Sync => io::sync::run(&mut w),
                    IoEngine::Null => io::sync::run_null(&mut w, job.null_lat()),
                }
                if job.end_fsync && !flags.aborted() {
                    w.fsync();
                }
            }
            let error = w.error.take();
            Outcome::finish(w.rec, error, ())
        },
        |_| {},
    );
    if let Some(e) = harvest.setup_error.clone() {
        return Err(RunError::io(e, std::io::Error::other("setup failed")));
    }

    let span = harvest.span(harvest.last_end(), job.ramp_time());
    let mut results = Vec::new();
    for (slot, op) in [(Op::Read, IoOp::Read), (Op::Write, IoOp::Write)] {
        let r = harvest.merged(slot, op.into(), span);
        if r.ios == 0
            && !(slot == Op::Read && job.rw.reads() || slot == Op::Write && job.rw.writes())
        {
            continue;
        }
        results.push(r);
    }
    let fsync = FsyncResult {
        count: harvest.outcomes.iter().map(|o| o.totals.fsync.len()).sum(),
        lat_ns: summarize(&harvest.fsync_hist()),
    };
    let body = Body {
        target: info,
        layout,
        results,
        fsync,
        files: None,
        app: None,
    };
    Ok(harvest.into_report(
        job,
        span,
        body,
        warnings,
        flags,
        "give `runtime` of a few seconds or more",
    ))
}
