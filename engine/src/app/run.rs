//! What an application model's threads do: users run transactions, and one background
//! thread checkpoints, flushes lazy commits and runs maintenance.

use std::collections::HashSet;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use hdrhistogram::Histogram;
use rand_xoshiro::rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::{cache, commit, Model};
use crate::buffers::Buffers;
use crate::clock::Instant;
use crate::harness::{thread_seed, Flags, Gate, Outcome};
use crate::record::{total_hist, Op, Recorder};
use crate::report::{Checkpoint, IoErrorEntry};
use crate::spec::{AppJob, BufferContent, Job};

/// How often lazy commits' records are flushed when no synchronous commit does it.
const LAZY_FLUSH: Duration = Duration::from_millis(5);
/// Longest the background thread sleeps, so it notices the users have finished.
const BG_NAP: Duration = Duration::from_millis(10);
/// Size of one maintenance read.
pub(super) const MAINT_CHUNK: u64 = 256 << 10;
const MAX_CHECKPOINTS_LISTED: usize = 10_000;

/// Counts one thread adds up (after the ramp).
#[derive(Debug, Default, Clone)]
pub(super) struct Counts {
    pub lookups: u64,
    pub hits: u64,
    pub dirtied: u64,
    pub commits: u64,
    pub lazy: u64,
    pub scans: u64,
    pub ops: [u64; 4],
    pub data_fsyncs: u64,
    pub log: commit::LogCounts,
}

impl Counts {
    pub fn add(&mut self, o: &Counts) {
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
pub(super) struct Shared<'a> {
    pub job: &'a Job,
    pub app: &'a AppJob,
    pub model: Model,
    pub data: super::file::ModelFile,
    pub log: commit::Log,
    pub dirty: Mutex<HashSet<u64>>,
    pub cache: cache::Cache,
    pub pages: u64,
    pub flags: &'a Flags,
    /// Users still running: the background thread ends when none is.
    pub users_running: AtomicU32,
}

impl Shared<'_> {
    fn stopped(&self) -> bool {
        self.flags.stopped()
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
        let error = IoErrorEntry {
            op: op.into(),
            thread: self.thread,
            offset,
            errno: e.raw_os_error(),
            message: e.to_string(),
        };
        flags.fail(&mut self.error, error);
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

/// What one thread counted, besides its measurements.
pub(super) struct Tally {
    pub counts: Counts,
    pub commit_sync: Histogram<u64>,
    pub commit_lazy: Histogram<u64>,
    pub checkpoints: Vec<Checkpoint>,
}

/// One thread of the model: threads `0..users` are users, which run transactions until
/// `runtime` after the ramp; the last is the background thread.
pub(super) fn thread(
    sh: &Shared,
    t: u32,
    gate: Gate<'_>,
    buf_len: u64,
    runtime: Duration,
) -> Outcome<Tally> {
    // A table of the thread's own, as for block workers (io/fdtable.rs).
    let own = crate::io::fdtable::OwnTable::keeping(&[sh.data.as_raw_fd(), sh.log.as_raw_fd()]);
    let job = sh.job;
    let buf = Buffers::new(
        buf_len,
        1,
        BufferContent::Random,
        thread_seed(job.randseed, t),
    );
    let (start, rec) = gate.start();
    let mut ctx = Ctx {
        thread: t,
        rec,
        counts: Counts::default(),
        commit_sync: total_hist(),
        commit_lazy: total_hist(),
        checkpoints: Vec::new(),
        error: None,
        buf,
    };
    if t < job.numjobs {
        user(sh, &mut ctx, start + job.ramp_time() + runtime);
        sh.users_running.fetch_sub(1, Ordering::Release);
    } else {
        background(sh, &mut ctx, start);
    }
    drop(own);
    let tally = Tally {
        counts: ctx.counts,
        commit_sync: ctx.commit_sync,
        commit_lazy: ctx.commit_lazy,
        checkpoints: ctx.checkpoints,
    };
    Outcome::finish(ctx.rec, ctx.error, tally)
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
        if sh.users_running.load(Ordering::Acquire) == 0 || sh.flags.aborted() {
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
    if sh.flags.aborted() {
        return;
    }
    if let Err(e) = sh.log.flush_pending(&mut ctx.rec, &mut ctx.counts.log) {
        return ctx.fail("log_write", 0, &e, sh.flags);
    }
    if let Err(e) = checkpoint(sh, ctx, start, true) {
        ctx.fail("data_write", 0, &e, sh.flags);
    }
}
