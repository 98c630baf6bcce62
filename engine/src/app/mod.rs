//! Application models (`kind = "oltp"`, `"mailstore"`): users run transactions
//! against a data file and a log file the way a database does, and the report says
//! what the storage gave them.
//!
//! Shared by both models: page reads through an optional buffer `cache`, page updates
//! kept dirty in memory and written in a burst by periodic checkpoints, and a log
//! with group `commit`. `oltp` and `mailstore` say what one transaction does;
//! `mailstore` also judges the run.

pub mod cache;
pub mod commit;
pub mod mailstore;
pub mod oltp;

use std::collections::{BTreeMap, HashSet};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{mpsc, Barrier, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use hdrhistogram::Histogram;
use rand_xoshiro::rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::error::{JobError, RunError};
use crate::record::{self, summarize, total_hist, Op, Recorder};
use crate::report::{
    self, AppFile, AppResult, AppSide, CacheStats, Checkpoint, Commits, EngineInfo, FsyncResult,
    IoErrorEntry, JetStress, Layout, OpResult, Report, Series, SeriesPoint, TargetInfo, Warning,
};
use crate::series::SeriesBuilder;
use crate::spec::{AppJob, BufferContent, Job, Kind};
use crate::target::Buffers;
use crate::worker::{thread_seed, Flags};

/// How often lazy commits' records are flushed when no synchronous commit does it.
const LAZY_FLUSH: Duration = Duration::from_millis(5);
/// Longest the background thread sleeps, so it notices the users have finished.
const BG_NAP: Duration = Duration::from_millis(10);
/// Size of one maintenance read.
const MAINT_CHUNK: u64 = 256 << 10;
/// Alignment of direct I/O and of log writes when `direct` is on.
const DIO_ALIGN: u64 = 4096;
/// Log writes are whole sectors.
const SECTOR: u64 = 512;
const MAX_CHECKPOINTS_LISTED: usize = 10_000;

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

/// Counts one thread adds up (after the ramp).
#[derive(Debug, Default, Clone)]
struct Counts {
    lookups: u64,
    hits: u64,
    dirtied: u64,
    commits: u64,
    lazy: u64,
    scans: u64,
    ops: [u64; 4],
    data_fsyncs: u64,
    log: commit::LogCounts,
}

impl Counts {
    fn add(&mut self, o: &Counts) {
        self.lookups += o.lookups;
        self.hits += o.hits;
        self.dirtied += o.dirtied;
        self.commits += o.commits;
        self.lazy += o.lazy;
        self.scans += o.scans;
        for (a, b) in self.ops.iter_mut().zip(o.ops) {
            *a += b;
        }
        self.data_fsyncs += o.data_fsyncs;
        self.log.flushes += o.log.flushes;
        self.log.records += o.log.records;
        self.log.writes += o.log.writes;
        self.log.fsyncs += o.log.fsyncs;
    }
}

/// What every thread shares.
struct Shared<'a> {
    job: &'a Job,
    app: &'a AppJob,
    model: Model,
    data: File,
    log: commit::Log,
    dirty: Mutex<HashSet<u64>>,
    cache: cache::Cache,
    pages: u64,
    flags: &'a Flags,
    users_running: AtomicU32,
}

impl Shared<'_> {
    fn stopped(&self) -> bool {
        self.flags.stop.load(Ordering::Relaxed) || self.flags.abort.load(Ordering::Relaxed)
    }
}

/// One thread's state.
struct Ctx {
    thread: u32,
    rec: Recorder,
    counts: Counts,
    commit_sync: Histogram<u64>,
    commit_lazy: Histogram<u64>,
    checkpoints: Vec<Checkpoint>,
    error: Option<IoErrorEntry>,
    buf: Buffers,
}

impl Ctx {
    fn fail(&mut self, op: &str, offset: u64, e: &std::io::Error, flags: &Flags) {
        if self.error.is_none() {
            self.error = Some(IoErrorEntry {
                op: op.into(),
                thread: self.thread,
                offset,
                errno: e.raw_os_error(),
                message: e.to_string(),
            });
        }
        flags.abort.store(true, Ordering::Relaxed);
    }

    fn read_data(&mut self, sh: &Shared, offset: u64, len: u64) -> std::io::Result<()> {
        let t0 = Instant::now();
        sh.data
            .read_exact_at(&mut self.buf.slot_mut(0)[..len as usize], offset)?;
        self.rec.complete(Op::Read, len, t0, Instant::now());
        Ok(())
    }

    /// Reads one page unless the cache has it; the page is cached afterwards.
    fn read_page(&mut self, sh: &Shared, page: u64, measuring: bool) -> std::io::Result<()> {
        let hit = sh.cache.hit(page);
        if measuring {
            self.counts.lookups += 1;
            self.counts.hits += u64::from(hit);
        }
        if !hit {
            self.read_data(sh, page * sh.app.page_size, sh.app.page_size)?;
            sh.cache.insert(page);
        }
        Ok(())
    }
}

/// What one thread hands back.
struct Outcome {
    totals: record::ThreadTotals,
    counts: Counts,
    commit_sync: Histogram<u64>,
    commit_lazy: Histogram<u64>,
    checkpoints: Vec<Checkpoint>,
    error: Option<IoErrorEntry>,
    end: Instant,
}

fn user(sh: &Shared, ctx: &mut Ctx, deadline: Instant) {
    let app = sh.app;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(thread_seed(sh.job.randseed, ctx.thread));
    let mut read = Vec::new();
    while !sh.stopped() {
        let t0 = Instant::now();
        if t0 >= deadline {
            break;
        }
        let m = ctx.rec.measuring(t0);
        let (plan, lazy) = sh.model.next(&mut rng);
        if plan.scan {
            let scan = app.scan_size.unwrap_or(app.page_size);
            let off = rng.next_u64() % (app.data_size / scan) * scan;
            if let Err(e) = ctx.read_data(sh, off, scan) {
                return ctx.fail("data_read", off, &e, sh.flags);
            }
            if m {
                ctx.counts.scans += 1;
            }
        }
        read.clear();
        for _ in 0..plan.reads {
            let page = rng.next_u64() % sh.pages;
            if let Err(e) = ctx.read_page(sh, page, m) {
                return ctx.fail("data_read", page * app.page_size, &e, sh.flags);
            }
            read.push(page);
        }
        let fresh = (0..plan.dirty_new).map(|_| rng.next_u64() % sh.pages);
        let updated: Vec<u64> = read
            .iter()
            .copied()
            .take(plan.dirty_read as usize)
            .chain(fresh)
            .collect();
        if !updated.is_empty() {
            let mut d = sh.dirty.lock().unwrap_or_else(|p| p.into_inner());
            d.extend(updated.iter().copied());
        }
        for p in &updated {
            sh.cache.insert(*p);
        }
        if m {
            ctx.counts.dirtied += updated.len() as u64;
            ctx.counts.ops[plan.op] += 1;
        }
        if plan.log {
            let c0 = Instant::now();
            if let Err(e) = sh.log.commit(
                app.log_record_size,
                !lazy,
                &mut ctx.rec,
                &mut ctx.counts.log,
            ) {
                return ctx.fail("log_write", 0, &e, sh.flags);
            }
            let lat = c0.elapsed().as_nanos() as u64;
            if m {
                ctx.counts.commits += 1;
                if lazy {
                    ctx.counts.lazy += 1;
                    ctx.commit_lazy.saturating_record(lat.max(1));
                } else {
                    ctx.commit_sync.saturating_record(lat.max(1));
                }
            }
        }
        ctx.rec.complete(Op::Txn, 0, t0, Instant::now());
    }
}

/// Writes every dirty page (in file order, as a database's checkpoint sorts them),
/// then fdatasyncs the data file.
fn checkpoint(sh: &Shared, ctx: &mut Ctx, start: Instant, last: bool) -> std::io::Result<()> {
    let mut pages: Vec<u64> = {
        let mut d = sh.dirty.lock().unwrap_or_else(|p| p.into_inner());
        d.drain().collect()
    };
    pages.sort_unstable();
    let ps = sh.app.page_size;
    let c0 = Instant::now();
    for &p in &pages {
        let t0 = Instant::now();
        sh.data
            .write_all_at(&ctx.buf.slot_mut(0)[..ps as usize], p * ps)?;
        ctx.rec.complete(Op::Write, ps, t0, Instant::now());
    }
    let f0 = Instant::now();
    sh.data.sync_data()?;
    let now = Instant::now();
    ctx.rec.fsync(now - f0);
    if ctx.rec.measuring(now) {
        ctx.counts.data_fsyncs += 1;
    }
    let dur = (now - c0).as_secs_f64();
    if ctx.checkpoints.len() < MAX_CHECKPOINTS_LISTED {
        ctx.checkpoints.push(Checkpoint {
            t_s: (c0 - start).as_secs_f64(),
            pages: pages.len() as u64,
            dur_s: dur,
            iops: pages.len() as f64 / dur.max(1e-9),
            last,
        });
    }
    Ok(())
}

/// Checkpoints, flushes lazy commits and runs maintenance until the users finish, then
/// flushes the log and writes what is left dirty.
fn background(sh: &Shared, ctx: &mut Ctx, start: Instant) {
    let app = sh.app;
    let ckpt = app.checkpoint_interval();
    let lazy = app.lazy_commit_share.unwrap_or(0.0) > 0.0;
    let rate = app.maintenance_rate.unwrap_or(0);
    let chunk = MAINT_CHUNK.min(app.data_size);
    let mut next_ckpt = start + ckpt;
    let mut next_flush = start + LAZY_FLUSH;
    let mut next_maint = start;
    let mut maint_off = 0;
    loop {
        let now = Instant::now();
        ctx.rec.tick(now);
        if sh.users_running.load(Ordering::Acquire) == 0 || sh.flags.abort.load(Ordering::Relaxed) {
            break;
        }
        if now >= next_ckpt {
            if let Err(e) = checkpoint(sh, ctx, start, false) {
                return ctx.fail("data_write", 0, &e, sh.flags);
            }
            next_ckpt = (next_ckpt + ckpt).max(Instant::now());
        }
        if lazy && now >= next_flush {
            if let Err(e) = sh.log.flush_pending(&mut ctx.rec, &mut ctx.counts.log) {
                return ctx.fail("log_write", 0, &e, sh.flags);
            }
            next_flush = Instant::now() + LAZY_FLUSH;
        }
        if rate > 0 && now >= next_maint {
            let t0 = Instant::now();
            let r = sh
                .data
                .read_exact_at(&mut ctx.buf.slot_mut(0)[..chunk as usize], maint_off);
            if let Err(e) = r {
                return ctx.fail("maintenance_read", maint_off, &e, sh.flags);
            }
            ctx.rec.complete(Op::Background, chunk, t0, Instant::now());
            maint_off = if maint_off + 2 * chunk > app.data_size {
                0
            } else {
                maint_off + chunk
            };
            next_maint += Duration::from_secs_f64(chunk as f64 / rate as f64);
            // A stall is not made up with a burst: maintenance is throttled, not owed.
            next_maint = next_maint.max(Instant::now() - Duration::from_millis(100));
        }
        let mut wake = next_ckpt.min(now + BG_NAP);
        if lazy {
            wake = wake.min(next_flush);
        }
        if rate > 0 {
            wake = wake.min(next_maint);
        }
        std::thread::sleep(wake.saturating_duration_since(Instant::now()));
    }
    if sh.flags.abort.load(Ordering::Relaxed) {
        return;
    }
    if let Err(e) = sh.log.flush_pending(&mut ctx.rec, &mut ctx.counts.log) {
        return ctx.fail("log_write", 0, &e, sh.flags);
    }
    if let Err(e) = checkpoint(sh, ctx, start, true) {
        ctx.fail("data_write", 0, &e, sh.flags);
    }
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

/// Runs an application model: the counterpart of `crate::run` for `kind = "oltp"` and
/// `"mailstore"`.
pub fn run(
    job: Job,
    mut warnings: Vec<Warning>,
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
    let mut laid = crate::target::lay_out(&data_path, app.data_size, job.randseed, &flags.stop)?;
    laid += crate::target::lay_out(&log_path, app.log_size, job.randseed ^ 1, &flags.stop)?;
    let layout = (laid > 0).then(|| Layout {
        bytes: laid,
        runtime_s: l0.elapsed().as_secs_f64(),
    });
    let data = open(&data_path, job.direct, false)?;
    let log_file = open(&log_path, job.direct, job.direct)?;
    let align = if job.direct { DIO_ALIGN } else { SECTOR };
    let model = match job.kind {
        Kind::Mailstore => Model::Mailstore(mailstore::Mailstore::new(&app)),
        _ => Model::Oltp(oltp::Oltp::new(&app)),
    };
    let users = job.numjobs;
    let sh = Shared {
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
    let threads = users + 1;
    let (tx, rx) = mpsc::channel();
    let go = Barrier::new(threads as usize + 1);
    let start_cell: OnceLock<Instant> = OnceLock::new();
    let start_unix_s = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    let runtime = job.runtime().unwrap_or(Duration::from_secs(10));

    let (outcomes, points, start, cpu) = std::thread::scope(|s| {
        let mut handles = Vec::new();
        for t in 0..threads {
            let tx = tx.clone();
            let (job, go, start_cell, sh) = (&job, &go, &start_cell, &sh);
            handles.push(s.spawn(move || {
                let buf = Buffers::new(
                    buf_len,
                    1,
                    BufferContent::Random,
                    thread_seed(job.randseed, t),
                );
                go.wait();
                let start = *start_cell.get().expect("set before `go`");
                let mut ctx = Ctx {
                    thread: t,
                    rec: Recorder::new(start, job.ramp_time(), job.interval(), tx),
                    counts: Counts::default(),
                    commit_sync: total_hist(),
                    commit_lazy: total_hist(),
                    checkpoints: Vec::new(),
                    error: None,
                    buf,
                };
                if t < users {
                    user(sh, &mut ctx, start + job.ramp_time() + runtime);
                    sh.users_running.fetch_sub(1, Ordering::Release);
                } else {
                    background(sh, &mut ctx, start);
                }
                let end = Instant::now();
                Outcome {
                    totals: ctx.rec.finish(end),
                    counts: ctx.counts,
                    commit_sync: ctx.commit_sync,
                    commit_lazy: ctx.commit_lazy,
                    checkpoints: ctx.checkpoints,
                    error: ctx.error,
                    end,
                }
            }));
        }
        drop(tx);
        let start = Instant::now();
        start_cell.set(start).expect("set once");
        go.wait();
        let cpu_before = crate::cpu::usage();
        let mut series = SeriesBuilder::new(threads, start, job.interval(), job.ramp_time());
        series.drain(rx, on_point);
        let outcomes: Vec<Outcome> = handles
            .into_iter()
            .map(|h| h.join().expect("a worker thread panicked"))
            .collect();
        let cpu = crate::cpu::since(&cpu_before, start.elapsed());
        (outcomes, series.finish(), start, cpu)
    });

    let end = outcomes.iter().map(|o| o.end).max().unwrap_or(start);
    let ramp = job.ramp_time();
    let runtime_s = end
        .saturating_duration_since(start + ramp)
        .as_secs_f64()
        .max(1e-9);
    let errors: Vec<_> = outcomes.iter().filter_map(|o| o.error.clone()).collect();
    let merged = |op: Op, name: &str| {
        record::merged_result(
            name,
            outcomes.iter().map(|o| &o.totals.ops[op as usize]),
            runtime_s,
        )
    };
    let mut results = vec![
        merged(Op::Read, "data_read"),
        merged(Op::Write, "data_write"),
        merged(Op::Log, "log_write"),
        merged(Op::Txn, "txn"),
    ];
    let mailstore = job.kind == Kind::Mailstore;
    if mailstore {
        results.push(merged(Op::Background, "maintenance_read"));
    }
    let mut c = Counts::default();
    let mut fsync_hist = total_hist();
    let (mut sync_h, mut lazy_h) = (total_hist(), total_hist());
    let mut checkpoints = Vec::new();
    for o in &outcomes {
        c.add(&o.counts);
        fsync_hist
            .add(&o.totals.fsync)
            .expect("histograms share their bounds");
        sync_h.add(&o.commit_sync).expect("same bounds");
        lazy_h.add(&o.commit_lazy).expect("same bounds");
        checkpoints.extend(o.checkpoints.iter().cloned());
    }
    let app_result = app_result(
        &job,
        &app,
        &results,
        &c,
        &sync_h,
        &lazy_h,
        checkpoints,
        runtime_s,
        &cpu,
        [
            data_path.display().to_string(),
            log_path.display().to_string(),
        ],
    );

    let interrupted = flags.stop.load(Ordering::Relaxed);
    let status = crate::status_of(
        &errors,
        interrupted,
        runtime_s,
        &mut warnings,
        "give `runtime` of a few seconds or more",
    );
    Ok(Report {
        schema_version: report::SCHEMA_VERSION,
        engine: EngineInfo::this(),
        status,
        interrupted,
        start_unix_s,
        runtime_s,
        ramp_s: ramp
            .as_secs_f64()
            .min(end.saturating_duration_since(start).as_secs_f64()),
        target: TargetInfo {
            kind: "file".into(),
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
            count: c.data_fsyncs + c.log.fsyncs,
            lat_ns: summarize(&fsync_hist),
        },
        series: Series {
            interval_s: job.interval,
            points,
        },
        cpu,
        errors,
        warnings,
        files: None,
        app: Some(app_result),
        job,
    })
}

fn side(r: &OpResult) -> AppSide {
    AppSide {
        ios: r.ios,
        bytes: r.bytes,
        iops: r.iops,
        avg_bytes: if r.ios > 0 {
            r.bytes as f64 / r.ios as f64
        } else {
            0.0
        },
        lat_ns: r.lat_ns.clone(),
    }
}

#[allow(clippy::too_many_arguments)]
fn app_result(
    job: &Job,
    app: &AppJob,
    results: &[OpResult],
    c: &Counts,
    sync_h: &Histogram<u64>,
    lazy_h: &Histogram<u64>,
    mut checkpoints: Vec<Checkpoint>,
    runtime_s: f64,
    cpu: &report::Cpu,
    [data_path, log_path]: [String; 2],
) -> AppResult {
    let find = |name: &str| results.iter().find(|r| r.op == name);
    let (dr, dw, lw, tx) = (
        find("data_read").expect("always listed"),
        find("data_write").expect("always listed"),
        find("log_write").expect("always listed"),
        find("txn").expect("always listed"),
    );
    let mut files = BTreeMap::new();
    files.insert(
        "data".to_string(),
        AppFile {
            path: data_path,
            read: side(dr),
            write: side(dw),
            fsyncs: c.data_fsyncs,
            iops: dr.iops + dw.iops,
        },
    );
    files.insert(
        "log".to_string(),
        AppFile {
            path: log_path,
            read: AppSide::default(),
            write: side(lw),
            fsyncs: c.log.fsyncs,
            iops: lw.iops,
        },
    );
    checkpoints.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
    let mailstore = job.kind == Kind::Mailstore;
    let ms = |ns: f64| ns / 1e6;
    let (jetstress, verdict, ops, maintenance) = if mailstore {
        let js = JetStress {
            transactional_iops: dr.iops + dw.iops,
            db_reads_per_s: dr.iops,
            db_writes_per_s: dw.iops,
            db_read_lat_ms: ms(dr.lat_ns.mean),
            db_write_lat_ms: ms(dw.lat_ns.mean),
            db_read_avg_bytes: side(dr).avg_bytes,
            db_write_avg_bytes: side(dw).avg_bytes,
            log_writes_per_s: lw.iops,
            log_write_lat_ms: ms(lw.lat_ns.mean),
            log_write_avg_bytes: side(lw).avg_bytes,
            cpu_pct: cpu.usage_pct,
        };
        let v = mailstore::verdict(js.db_read_lat_ms, js.log_write_lat_ms, app);
        let ops = mailstore::OP_NAMES
            .iter()
            .zip(c.ops)
            .map(|(n, k)| (n.to_string(), k))
            .collect();
        let maint = find("maintenance_read").map(side);
        (Some(js), Some(v), Some(ops), maint)
    } else {
        (None, None, None, None)
    };
    AppResult {
        model: job.kind.name().into(),
        txn: tx.ios,
        txn_per_s: tx.ios as f64 / runtime_s,
        files,
        commits: Commits {
            count: c.commits,
            sync: c.commits - c.lazy,
            lazy: c.lazy,
            flushes: c.log.flushes,
            records_per_flush: if c.log.flushes > 0 {
                c.log.records as f64 / c.log.flushes as f64
            } else {
                0.0
            },
            sync_lat_ns: summarize(sync_h),
            lazy_lat_ns: summarize(lazy_h),
        },
        cache: CacheStats {
            pages: app.cache_size / app.page_size,
            lookups: c.lookups,
            hits: c.hits,
            hit_ratio: if c.lookups > 0 {
                c.hits as f64 / c.lookups as f64
            } else {
                0.0
            },
        },
        pages_dirtied: c.dirtied,
        checkpoints,
        scans: (job.kind == Kind::Oltp).then_some(c.scans),
        ops,
        maintenance,
        jetstress,
        verdict,
    }
}
