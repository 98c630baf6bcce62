//! Application models (`kind = "oltp"`, `"mailstore"`): users run transactions
//! against a data file and a log file the way a database does, and the report says
//! what the storage gave them.
//!
//! Shared by both models: page reads through an optional buffer `cache`, page updates
//! kept dirty in memory and written in a burst by periodic checkpoints, and a log
//! with group `commit`. `oltp` and `mailstore` say what one transaction does;
//! `mailstore` also judges the run. `run` is what the threads do (users, the background
//! thread), `result` the report's `app` section; this module opens the files and runs
//! the threads through the harness.

pub mod cache;
pub mod commit;
mod file;
pub mod mailstore;
pub mod oltp;
mod result;
mod run;

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU32;
use std::sync::Mutex;
use std::time::Duration;

use rand_xoshiro::rand_core::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::clock::Instant;
use crate::diagnostics::Warning;
use crate::error::{JobError, RunError};
use crate::harness::{self, Body, Flags, Launch};
use crate::record::{summarize, Op};
use crate::report::{FsyncResult, IoOp, Layout, Report, SeriesPoint, TargetInfo, TargetKind};
use crate::spec::{Job, Kind};

use self::run::MAINT_CHUNK;

/// Alignment of direct I/O and of log writes when `direct` is on.
const DIO_ALIGN: u64 = 4096;
/// Log writes are whole sectors.
const SECTOR: u64 = 512;

/// What one transaction does.
#[derive(Debug, Default, Clone, Copy)]
pub struct Plan {
    /// Model-specific operation index (mailstore: `mailstore::OP_NAMES`).
    pub op: usize,
    /// Page reads (through the cache).
    pub reads: u32,
    /// Pages among those read that it then updates.
    pub dirty_read: u32,
    /// Other pages it updates (without reading them).
    pub dirty_new: u32,
    /// One read-ahead read of `scan_size` instead of page reads.
    pub scan: bool,
    /// Writes a commit record.
    pub log: bool,
}

/// The model a job runs: what its next transaction is.
enum Model {
    Oltp(oltp::Oltp),
    Mailstore(mailstore::Mailstore),
}

impl Model {
    fn next(&self, rng: &mut Xoshiro256PlusPlus) -> (Plan, bool) {
        let u = unit(rng);
        match self {
            Model::Oltp(m) => (m.next(u), false),
            Model::Mailstore(m) => {
                let p = m.next(u);
                let lazy = p.log && unit(rng) < m.lazy_share;
                (p, lazy)
            }
        }
    }
}

fn unit(rng: &mut Xoshiro256PlusPlus) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

fn open(path: &Path, direct: bool, dsync: bool) -> Result<File, RunError> {
    let mut flags = libc::O_CLOEXEC;
    if direct {
        flags |= libc::O_DIRECT;
    }
    if dsync {
        flags |= libc::O_DSYNC;
    }
    OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(flags)
        .open(path)
        .map_err(|e| {
            if direct && e.raw_os_error() == Some(libc::EINVAL) {
                JobError::new(
                    "direct",
                    format!("`{}` does not support O_DIRECT", path.display()),
                )
                .hint("set `direct = false` (e.g. on tmpfs)")
                .into()
            } else {
                RunError::io(format!("cannot open {}", path.display()), e)
            }
        })
}

/// Runs an application model: the counterpart of `block::run` for `kind = "oltp"` and
/// `"mailstore"`.
pub fn run(
    job: Job,
    warnings: Vec<Warning>,
    flags: &Flags,
    on_point: &mut dyn FnMut(&SeriesPoint),
) -> Result<Report, RunError> {
    let app = job.app.clone().expect("an application job has its keys");
    let dir = PathBuf::from(job.directory.as_deref().expect("checked by the spec"));
    if !dir.is_dir() {
        return Err(
            JobError::new("directory", format!("{} is not a directory", dir.display()))
                .hint("create it first")
                .into(),
        );
    }
    let data_path = dir.join(format!("{}.data", job.name));
    let log_path = dir.join(format!("{}.log", job.name));
    let l0 = Instant::now();
    // Both files are written in full first: reads hit real blocks, and log writes are
    // overwrites of allocated space, as in a database's preformatted log.
    let mut laid = crate::layout::lay_out(&data_path, app.data_size, job.randseed, &flags.stop)?;
    laid += crate::layout::lay_out(&log_path, app.log_size, job.randseed ^ 1, &flags.stop)?;
    let layout = (laid > 0).then(|| Layout {
        bytes: laid,
        runtime_s: l0.elapsed().as_secs_f64(),
    });
    let data = file::ModelFile::new(open(&data_path, job.direct, false)?, app.uncached);
    let log_file = file::ModelFile::new(open(&log_path, job.direct, job.direct)?, app.uncached);
    let align = if job.direct { DIO_ALIGN } else { SECTOR };
    let model = match job.kind {
        Kind::Mailstore => Model::Mailstore(mailstore::Mailstore::new(&app)),
        _ => Model::Oltp(oltp::Oltp::new(&app)),
    };
    let users = job.numjobs;
    let sh = run::Shared {
        job: &job,
        app: &app,
        model,
        data,
        log: commit::Log::new(log_file, app.log_size, align, job.direct, job.randseed),
        dirty: Mutex::new(HashSet::new()),
        cache: cache::Cache::new(app.cache_size / app.page_size, job.randseed),
        pages: app.data_size / app.page_size,
        flags,
        users_running: AtomicU32::new(users),
    };
    let buf_len = [
        app.page_size,
        app.scan_size.unwrap_or(0),
        MAINT_CHUNK.min(app.data_size),
    ]
    .into_iter()
    .max()
    .unwrap_or(app.page_size);
    // One thread per user, and the background thread (checkpoints, lazy flushes,
    // maintenance) last.
    let threads = users + 1;
    let runtime = job.runtime().unwrap_or(Duration::from_secs(10));
    let harvest = harness::run_threads(
        &Launch::of(&job, false),
        flags,
        vec![(); threads as usize],
        on_point,
        |t, (), gate| run::thread(&sh, t, gate, buf_len, runtime),
        |_| {},
    );

    let span = harvest.span(harvest.last_end(), job.ramp_time());
    let runtime_s = span.runtime_s;
    let merged = |op: Op, name: IoOp| harvest.merged(op, name.into(), span);
    let mut results = vec![
        merged(Op::Read, IoOp::DataRead),
        merged(Op::Write, IoOp::DataWrite),
        merged(Op::Log, IoOp::LogWrite),
        merged(Op::Txn, IoOp::Txn),
    ];
    let mailstore = job.kind == Kind::Mailstore;
    if mailstore {
        results.push(merged(Op::Background, IoOp::MaintenanceRead));
    }
    let sums = result::Sums::of(harvest.outcomes.iter().map(|o| &o.value));
    let fsync_count = sums.counts.data_fsyncs + sums.counts.log.fsyncs;
    let app_result = result::app_result(result::Answers {
        job: &job,
        app: &app,
        results: &results,
        sums,
        runtime_s,
        cpu_pct: harvest.cpu.usage_pct,
        paths: [
            data_path.display().to_string(),
            log_path.display().to_string(),
        ],
    });

    let body = Body {
        target: TargetInfo {
            kind: TargetKind::File,
            paths: vec![
                data_path.display().to_string(),
                log_path.display().to_string(),
            ],
            size_bytes: app.data_size,
            dio_align_bytes: job.direct.then_some(DIO_ALIGN),
        },
        layout,
        results,
        fsync: FsyncResult {
            count: fsync_count,
            lat_ns: summarize(&harvest.fsync_hist()),
        },
        files: None,
        app: Some(app_result),
        verify: None,
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
