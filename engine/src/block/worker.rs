//! One thread of a job: what to do next, and what happened. The I/O itself is done by
//! the backends in `io/`, which drive a `Worker`.

use std::fs::File;
use std::time::Duration;

use rand_xoshiro::rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::distribution::below;
use super::offsets::Offsets;
use super::pace::Pace;
use super::verify::{ReadBack, Verifier};
use crate::buffers::{fill_from_seed, Buffers, Data};
use crate::clock::Instant;
use crate::harness::{thread_seed, Flags};
use crate::record::{Op, Recorder};
use crate::report::{ContinuedErrors, IoErrorEntry};
use crate::spec::{BufferContent, FileService, Job};

pub struct Worker<'a> {
    pub thread: u32,
    /// The thread's files (one, or `nrfiles`); none for the null engine.
    pub files: Vec<File>,
    pub buffers: Buffers,
    pub rec: Recorder,
    pub error: Option<IoErrorEntry>,
    /// With `verify = true`: stamps each write, checks each read.
    pub verify: Option<Verifier>,
    /// With a rate or think time: when each I/O may be issued.
    pub pace: Option<Pace>,
    flags: &'a Flags,
    /// Each file's offsets (its own walk and random map).
    offsets: Vec<Offsets>,
    /// With several files: which file the next I/O goes to, how the next is chosen,
    /// and the I/Os left before it is; the draw for `random`.
    file_now: usize,
    service: FileService,
    file_ios_left: u64,
    file_rng: Xoshiro256PlusPlus,
    deadline: Option<Instant>,
    ramp_end: Option<Instant>,
    /// A size-based job's bytes left to transfer after the ramp.
    bytes_left: u64,
    /// I/Os left under `number_ios`.
    ios_left: u64,
    fsync_every: u64,
    /// `fdatasync`: the flushes every `fsync_every` writes are fdatasyncs.
    datasync: bool,
    writes_since_fsync: u64,
    scramble: bool,
    writes: u64,
    data: Data,
    /// Dedupe: the seeds of recent unique writes, which a dedupe write repeats.
    seeds: Vec<u64>,
    dedupe_rng: Xoshiro256PlusPlus,
    /// `dedupe_working_set_percentage`: the set's seed base and its size in contents.
    working_set: Option<(u64, u64)>,
    /// With verify at depth: the offset each slot has in flight (`u64::MAX`: none), and
    /// I/Os held back because their block had one in flight.
    in_flight: Option<Vec<u64>>,
    held: Vec<(Op, u64, u64, bool)>,
    /// The one I/O size of a verify job: a read-back's length.
    bs: u64,
    /// `sequential` file service: a file's I/Os before the next.
    pass_ios: u64,
    /// `invalidate` on buffered I/O: at each new pass over a file the thread drops its
    /// cached pages again, as fio does; the file whose new pass the last draw began.
    invalidate_each_pass: bool,
    pass_began: Option<usize>,
    /// `continue_on_error`: which failed I/Os go on, after which errors, and those seen.
    continue_on: crate::spec::ContinueOn,
    continue_errors: Vec<i32>,
    pub continued: Vec<ContinuedErrors>,
    /// `latency_target`: the queue-depth search; `lat_done`: it is over.
    pub lat: Option<super::lat_target::LatTarget>,
    lat_done: bool,
    /// `flow`: the thread's share in its group, and how long it waits when ahead.
    flow: Option<(super::flow::Flow, Duration)>,
    /// `fill_device`: the thread writes until the file system is full, then ends.
    fill: bool,
    full: bool,
    /// `cmdprio_*`: which requests carry a priority of their own, and the draws.
    cmdprio: Option<(super::cmdprio::CmdPrio, Xoshiro256PlusPlus)>,
    /// `read_iolog`: the trace whose actions this thread issues instead of drawing.
    pub replay: Option<super::replay::Replay>,
    /// Where a replay's path actions are done.
    replay_paths: Option<super::target::PathOps>,
}

/// What a thread does next.
pub enum Next {
    Io(Op, u64, u64),
    /// Nothing may be issued before this (a rate or think time).
    Wait(Instant),
    Done,
}

/// With several files, an offset's file number sits above this bit (files of up to
/// 256 TiB each).
const FILE_SHIFT: u32 = 48;

/// The I/Os of one pass over a file: `sequential` file service moves on after them.
fn pass_ios(job: &Job) -> u64 {
    (job.size.unwrap_or(job.bs) / job.min_bs().max(1)).max(1)
}

/// The longest a paced thread sleeps before it looks at its stop flags again.
const IDLE_SLICE: Duration = Duration::from_millis(50);

/// How soon a thread ahead of its flow share looks again, without `flow_sleep`.
const FLOW_RECHECK: Duration = Duration::from_micros(20);
/// A shared verify region: the I/Os drawn for blocks in flight elsewhere that a thread
/// holds before it waits, and how long it waits before it looks again.
const MAX_HELD: usize = 8;
const HELD_RECHECK: Duration = Duration::from_micros(20);

/// Recent unique writes a dedupe write may repeat.
const DEDUPE_POOL: usize = 256;

impl<'a> Worker<'a> {
    pub fn new(
        job: &Job,
        thread: u32,
        files: Vec<File>,
        start: Instant,
        buffers: Buffers,
        rec: Recorder,
        flags: &'a Flags,
    ) -> Self {
        let ramp = job.ramp_time();
        let seed = thread_seed(job.randseed, thread);
        let data = Data::of(job);
        let guard = job.verify && job.iodepth > 1;
        let service = job.file_service();
        Self {
            thread,
            files,
            buffers,
            rec,
            error: None,
            flags,
            offsets: (0..job.files_per_thread())
                // The first file keeps the thread's own seed: one file draws as before.
                .map(|f| {
                    let seed = if f == 0 { seed } else { thread_seed(seed, f) };
                    Offsets::new(&job.shape(thread), seed)
                })
                .collect(),
            file_now: 0,
            service,
            file_ios_left: match service {
                FileService::RoundRobin(n) | FileService::Random(n) => n,
                FileService::Sequential => pass_ios(job),
            },
            file_rng: Xoshiro256PlusPlus::seed_from_u64(seed ^ 0xf11e),
            pace: Pace::of(job, seed),
            deadline: job.runtime().map(|r| start + ramp + r),
            ramp_end: (!ramp.is_zero()).then_some(start + ramp),
            bytes_left: job.io_size.unwrap_or(u64::MAX),
            ios_left: job.pattern.number_ios.unwrap_or(u64::MAX),
            fsync_every: job.fsync.max(job.fdatasync),
            datasync: job.fdatasync > 0,
            writes_since_fsync: 0,
            // Verify writes content of its own, as distinct per block and write.
            scramble: job.buffer_content == BufferContent::Random
                && !job.verify
                && data.has_random_part(),
            writes: 0,
            seeds: Vec::new(),
            dedupe_rng: Xoshiro256PlusPlus::seed_from_u64(seed ^ 0xded0),
            working_set: job.pattern.dedupe_working_set_percentage.map(|ws| {
                let blocks = job.size.unwrap_or(0) / job.min_bs().max(1);
                let base = if job.pattern.dedupe_global {
                    job.randseed ^ 0x61_0ba1
                } else {
                    seed ^ 0x61_0ba1
                };
                (base, ((blocks as f64 * ws / 100.0) as u64).max(1))
            }),
            data,
            in_flight: guard.then(|| vec![u64::MAX; job.iodepth as usize]),
            held: Vec::new(),
            bs: job.bs,
            pass_ios: pass_ios(job),
            invalidate_each_pass: job.pattern.invalidate && !job.direct,
            pass_began: None,
            verify: None,
            continue_on: job.pattern.continue_on_error,
            continue_errors: job.pattern.continue_errors.clone(),
            continued: Vec::new(),
            lat: job.lat_target(start),
            flow: job.pattern.flow.map(|w| {
                (
                    super::flow::Flow::join(job.pattern.flow_id.unwrap_or(0), u64::from(w)),
                    Duration::from_secs_f64(job.pattern.flow_sleep.unwrap_or(0.0)),
                )
            }),
            lat_done: false,
            fill: job.pattern.fill_device,
            full: false,
            cmdprio: job
                .cmdprio()
                .map(|c| (c, Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x10_9e10))),
            replay: None,
            replay_paths: None,
        }
    }

    /// Hands the worker the trace it replays (`read_iolog`), and where to do its path
    /// actions.
    pub fn with_replay(
        mut self,
        replay: Option<super::replay::Replay>,
        paths: Option<super::target::PathOps>,
    ) -> Self {
        self.replay = replay;
        self.replay_paths = paths;
        self
    }

    /// A replaying thread's next I/O: the trace's next action when it is due. A sync is
    /// done here, at once: with I/O in flight (`iodepth` > 1) it covers the writes
    /// completed before it.
    fn next_replayed(&mut self, now: Instant) -> Next {
        use super::replay::{Action, Step};
        loop {
            let Some(r) = self.replay.as_mut() else {
                return Next::Done;
            };
            match r.next(now) {
                Step::Do(Action::Io(op, file, offset, len)) => {
                    let at = if self.offsets.len() > 1 {
                        (file as u64) << FILE_SHIFT | offset
                    } else {
                        offset
                    };
                    return Next::Io(op, at, len);
                }
                Step::Do(Action::Sync { file, data }) => {
                    self.sync_files(file..file + 1, data);
                    if self.error.is_some() {
                        return Next::Done;
                    }
                }
                Step::Do(Action::Truncate { file, size }) => {
                    if let Some(f) = self.files.get(file) {
                        if let Err(e) = f.set_len(size) {
                            let m = format!("read_iolog: ftruncate to {size} failed: {e}");
                            self.fail(Op::Write, size, e.raw_os_error(), m);
                            return Next::Done;
                        }
                    }
                }
                Step::Do(Action::Allocate { file, offset, len }) => {
                    if let Some(f) = self.files.get(file) {
                        use std::os::fd::AsRawFd;
                        if let Err(e) = crate::io::fallocate(f.as_raw_fd(), 0, offset, len) {
                            let m = format!("read_iolog: fallocate of {len} bytes failed: {e}");
                            self.fail(Op::Write, offset, e.raw_os_error(), m);
                            return Next::Done;
                        }
                    }
                }
                Step::Do(Action::Path(op)) => {
                    r.lag.paths += 1;
                    let done = match &self.replay_paths {
                        Some(paths) => paths.apply(&op),
                        None => Ok(false),
                    };
                    match done {
                        Ok(true) => {}
                        Ok(false) => r.lag.paths_skipped += 1,
                        Err(e) => {
                            let m = format!(
                                "read_iolog: {} of `{}` failed: {e}",
                                op.kind.name(),
                                op.name
                            );
                            self.fail(Op::Write, 0, e.raw_os_error(), m);
                            return Next::Done;
                        }
                    }
                }
                Step::Wait(t) => return Next::Wait(self.deadline.map_or(t, |d| t.min(d))),
                Step::Done => {
                    if let Some(m) = r.error.take() {
                        self.fail(Op::Read, 0, None, format!("read_iolog: {m}"));
                    }
                    return Next::Done;
                }
            }
        }
    }

    /// Hands the worker the job's verifier (`verify = true`).
    pub fn with_verify(mut self, verify: Option<Verifier>) -> Self {
        self.verify = verify;
        self
    }

    /// The next I/O to draw, keeping two I/Os to one block out of flight at once (verify
    /// at depth): a block in flight is held back until it completes. True for a
    /// `verify_backlog` read-back, which counts against no budget of the job's.
    #[inline]
    fn draw(&mut self) -> Option<(Op, u64, u64, bool)> {
        let sharing = self.verify.as_ref().and_then(Verifier::shared).is_some();
        if self.in_flight.is_none() && !sharing {
            return Some(self.source());
        }
        if let Some(i) = self.held.iter().position(|h| self.take(h.1)) {
            return Some(self.held.swap_remove(i));
        }
        loop {
            // Every block drawn is in flight elsewhere: wait for completions (this
            // thread's own, reaped meanwhile, or the others') instead of drawing on.
            if sharing && self.held.len() >= MAX_HELD {
                return None;
            }
            let io = self.source();
            if self.take(io.1) {
                return Some(io);
            }
            self.held.push(io);
        }
    }

    /// Whether the block at `offset` is free of this thread's I/O in flight and, with a
    /// shared region, of the other threads': then taken, given back once its I/O
    /// completed (`done`, or `check` on failure).
    #[inline]
    fn take(&self, offset: u64) -> bool {
        !self
            .in_flight
            .as_ref()
            .is_some_and(|busy| busy.contains(&offset))
            && self
                .verify
                .as_ref()
                .and_then(Verifier::shared)
                .is_none_or(|t| t.take(offset))
    }

    /// A read-back owed (`verify_backlog`), else the pattern's next I/O.
    #[inline]
    fn source(&mut self) -> (Op, u64, u64, bool) {
        if let Some(offset) = self.verify.as_mut().and_then(Verifier::next_backlog) {
            return (Op::Read, offset, self.bs, true);
        }
        if self.offsets.len() == 1 {
            return self.next_of(0);
        }
        if self.file_ios_left == 0 {
            let n = self.offsets.len();
            (self.file_now, self.file_ios_left) = match self.service {
                FileService::RoundRobin(k) => ((self.file_now + 1) % n, k),
                FileService::Sequential => ((self.file_now + 1) % n, self.pass_ios),
                FileService::Random(k) => (below(&mut self.file_rng, n as u64) as usize, k),
            };
        }
        self.file_ios_left -= 1;
        let (op, offset, len, _) = self.next_of(self.file_now);
        (
            op,
            (self.file_now as u64) << FILE_SHIFT | offset,
            len,
            false,
        )
    }

    /// File `file`'s next I/O, noting when it begins a new pass over the file.
    #[inline]
    fn next_of(&mut self, file: usize) -> (Op, u64, u64, bool) {
        let o = &mut self.offsets[file];
        let passes = o.passes;
        let (op, offset, len) = o.next_io();
        if o.passes != passes {
            self.pass_began = Some(file);
        }
        (op, offset, len, false)
    }

    /// The file an offset from `next` is in, and the offset in it: with several files,
    /// the file's number is in the offset's top bits.
    #[inline]
    pub fn locate(&self, offset: u64) -> (usize, u64) {
        if self.offsets.len() == 1 {
            (0, offset)
        } else {
            (
                (offset >> FILE_SHIFT) as usize,
                offset & ((1 << FILE_SHIFT) - 1),
            )
        }
    }

    /// The next I/O to issue at `now`, a time to wait for, or `Done`.
    #[inline]
    pub fn next(&mut self, now: Instant) -> Next {
        if self.flags.stopped() {
            return Next::Done;
        }
        if matches!(self.deadline, Some(d) if now >= d)
            || self.ios_left == 0
            || self.full
            || self.lat_done
        {
            return Next::Done;
        }
        if self.replay.is_some() {
            return self.next_replayed(now);
        }
        if let Some((f, sleep)) = &mut self.flow {
            if f.ahead() {
                // fio looks again at once without `flow_sleep`; a moment's wait keeps
                // this thread from spinning on a core another of its group needs.
                return Next::Wait(now + (*sleep).max(FLOW_RECHECK));
            }
        }
        if let Some(due) = self.pace.as_ref().and_then(|p| p.wait_until(now)) {
            return Next::Wait(match self.deadline {
                Some(d) => due.min(d),
                None => due,
            });
        }
        let Some((op, offset, len, read_back)) = self.draw() else {
            return Next::Wait(now + HELD_RECHECK);
        };
        if read_back {
            return Next::Io(op, offset, len);
        }
        if self.deadline.is_none() {
            // A size-based job's budget starts after the ramp.
            let ramping = matches!(self.ramp_end, Some(r) if now < r);
            if !ramping {
                if self.bytes_left < len {
                    // Drawn but not issued: its block goes back to the other threads.
                    if let Some(t) = self.verify.as_ref().and_then(Verifier::shared) {
                        t.give_back(offset);
                    }
                    return Next::Done;
                }
                self.bytes_left -= len;
            }
        }
        self.ios_left -= 1;
        if let Some(p) = &mut self.pace {
            p.issued(len, now);
        }
        if let Some(file) = self.pass_began.take() {
            if let (true, Some(f)) = (self.invalidate_each_pass, self.files.get(file)) {
                let device = f
                    .metadata()
                    .is_ok_and(|m| std::os::unix::fs::FileTypeExt::is_block_device(&m.file_type()));
                super::target::invalidate(f, device);
            }
        }
        Next::Io(op, offset, len)
    }

    /// Readies the buffer in `slot` for an I/O to `offset`.
    #[inline]
    pub fn prepare(&mut self, op: Op, slot: u32, offset: u64, len: u64) {
        if let Some(busy) = &mut self.in_flight {
            busy[slot as usize] = offset;
        }
        if op != Op::Write {
            return;
        }
        if let Some(v) = &self.verify {
            v.prepare_write(self.buffers.slot_mut(slot), offset);
            return;
        }
        self.writes += 1;
        if self.data.refill && self.data.has_random_part() {
            self.refill(slot, len);
        } else if self.scramble {
            self.buffers.scramble(slot, offset, self.writes);
        }
    }

    /// Fresh content for a write; with dedupe, a share of writes repeat a recent unique
    /// write's content instead.
    fn refill(&mut self, slot: u32, len: u64) {
        if let Some((base, n)) = self.working_set {
            // A dedupe write takes one of the working set's contents; the others are
            // fresh (fio's `dedupe_mode=working_set`).
            let dupe = below(&mut self.dedupe_rng, 100) < u64::from(self.data.dedupe_pct);
            let seed = if dupe {
                crate::harness::thread_seed(base, below(&mut self.dedupe_rng, n) as u32)
            } else {
                self.dedupe_rng.next_u64()
            };
            fill_from_seed(
                self.buffers.slot_mut_len(slot, len as usize),
                seed,
                &self.data,
            );
            return;
        }
        let dupe = self.data.dedupe_pct > 0
            && !self.seeds.is_empty()
            && below(&mut self.dedupe_rng, 100) < u64::from(self.data.dedupe_pct);
        let seed = if dupe {
            self.seeds[below(&mut self.dedupe_rng, self.seeds.len() as u64) as usize]
        } else {
            let s = self.dedupe_rng.next_u64();
            if self.data.dedupe_pct > 0 {
                if self.seeds.len() < DEDUPE_POOL {
                    self.seeds.push(s);
                } else {
                    let i = below(&mut self.dedupe_rng, DEDUPE_POOL as u64) as usize;
                    self.seeds[i] = s;
                }
            }
            s
        };
        // Sized by the I/O: a 4k write and a 64k one with one seed are not duplicates
        // beyond their first 4k, which a deduplicating store would see alike.
        fill_from_seed(
            self.buffers.slot_mut_len(slot, len as usize),
            seed,
            &self.data,
        );
    }

    /// The most requests the thread may have in flight now (`latency_target`'s depth).
    #[inline]
    pub fn depth_cap(&self, iodepth: usize) -> usize {
        self.lat.as_ref().map_or(iodepth, |l| l.qd as usize)
    }

    /// The priority the request of an I/O carries (`cmdprio_*`); 0: the thread's own.
    #[inline]
    pub fn ioprio(&mut self, op: Op, len: u64) -> u16 {
        match &mut self.cmdprio {
            None => 0,
            Some((c, rng)) => c.pick(op != Op::Read, len, below(rng, 100)),
        }
    }

    /// Records a completed I/O of `len` (in buffer `slot`, at `offset`); returns true
    /// when an fsync is due.
    #[inline]
    pub fn done(
        &mut self,
        op: Op,
        slot: u32,
        offset: u64,
        len: u64,
        submitted: Instant,
        now: Instant,
    ) -> bool {
        self.rec.complete(op, len, submitted, now);
        if let Some(l) = &mut self.lat {
            let lat_ns = now.saturating_duration_since(submitted).as_nanos() as u64;
            match l.completed(lat_ns, now) {
                super::lat_target::Verdict::Go => {}
                super::lat_target::Verdict::Done => self.lat_done = true,
                super::lat_target::Verdict::Missed => {
                    let target = l.target_ns();
                    self.fail(
                        op,
                        offset,
                        Some(libc::ETIMEDOUT),
                        format!(
                            "latency target missed at queue depth 1: {lat_ns} ns, over {target} ns"
                        ),
                    );
                }
            }
        }
        if let Some(p) = &mut self.pace {
            p.completed(now);
        }
        if let Some(v) = &mut self.verify {
            match op {
                Op::Read => v.read(ReadBack::Data(self.buffers.slot(slot)), offset),
                _ => v.written(offset),
            }
            if let Some(t) = v.shared() {
                t.give_back(offset);
            }
        }
        if op == Op::Write && self.fsync_every > 0 {
            self.writes_since_fsync += 1;
            if self.writes_since_fsync >= self.fsync_every {
                self.writes_since_fsync = 0;
                return true;
            }
        }
        false
    }

    /// Waits with nothing in flight until `until` (a rate's next I/O or a think time).
    /// A long wait returns after at most `IDLE_SLICE`, so that a stop (a signal, another
    /// job's `exitall`) is seen; the caller asks `next` again.
    pub fn idle(&mut self, until: Instant) {
        let until = until.min(Instant::now() + IDLE_SLICE);
        match &mut self.pace {
            Some(p) => p.idle(until),
            None => super::pace::sleep_until(until),
        }
    }

    /// Reads back every block the job wrote, in offset order, and checks each
    /// (`verify_read_back`): after an fsync, from a cold cache, as fio's verify phase.
    /// Not measured as the job's I/O; a signal or an error ends it.
    pub fn read_back(&mut self, device: bool) {
        let (Some(v), Some(f)) = (&mut self.verify, self.files.first()) else {
            return;
        };
        if self.flags.aborted() || self.flags.interrupted() {
            return;
        }
        let t0 = Instant::now();
        if let Err(e) = f.sync_all() {
            let msg = format!("fsync before the read-back failed: {e}");
            self.fail(Op::Write, 0, e.raw_os_error(), msg);
            return;
        }
        super::target::invalidate(f, device);
        let buf = self.buffers.slot_mut(0);
        let len = (self.bs as usize).min(buf.len());
        let mut blocks = 0;
        for b in 0..v.blocks() {
            let Some(offset) = v.written_at(b) else {
                continue;
            };
            if self.flags.aborted() || self.flags.interrupted() {
                break;
            }
            // Another thread of a shared region may still be writing the block.
            while v.shared().is_some_and(|t| !t.take(offset)) {
                if self.flags.aborted() || self.flags.interrupted() {
                    return;
                }
                std::thread::yield_now();
            }
            let read = match std::os::unix::fs::FileExt::read_at(f, &mut buf[..len], offset) {
                Ok(n) if n == len => ReadBack::Data(&buf[..len]),
                Ok(n) => ReadBack::Short(n),
                Err(e) => ReadBack::Failed(e.raw_os_error().unwrap_or(libc::EIO)),
            };
            v.read(read, offset);
            if let Some(t) = v.shared() {
                t.give_back(offset);
            }
            blocks += 1;
        }
        v.read_back_done(blocks, t0.elapsed().as_secs_f64());
    }

    /// The job's last flush (`end_fsync`): a whole fsync, whatever the job's own were.
    pub fn end_fsync(&mut self) {
        self.datasync = false;
        self.fsync();
    }

    /// fsyncs (or fdatasyncs) the file and records how long it took.
    pub fn fsync(&mut self) {
        self.sync_files(0..self.files.len(), self.datasync);
    }

    /// fsyncs (`data`: fdatasyncs) the files `which`, timed together as one; nothing
    /// when there are none.
    fn sync_files(&mut self, which: std::ops::Range<usize>, data: bool) {
        let which = which.start.min(self.files.len())..which.end.min(self.files.len());
        if which.is_empty() {
            return;
        }
        let t0 = Instant::now();
        for i in which {
            let f = &self.files[i];
            let done = if data { f.sync_data() } else { f.sync_all() };
            if let Err(e) = done {
                let name = if data { "fdatasync" } else { "fsync" };
                self.fail(
                    Op::Write,
                    0,
                    e.raw_os_error(),
                    format!("{name} failed: {e}"),
                );
                return;
            }
        }
        self.rec.fsync(t0.elapsed());
    }

    /// Records an I/O error and stops every thread.
    pub fn fail(&mut self, op: Op, offset: u64, errno: Option<i32>, message: String) {
        let error = IoErrorEntry {
            op: op.name().into(),
            thread: self.thread,
            offset,
            errno,
            message,
        };
        self.flags.fail(&mut self.error, error);
    }

    /// Checks a completion's result: it must have moved all `len` bytes. Otherwise
    /// the job stops, but for a read that verify counts as unreadable: one bad block
    /// (a checksumming file system's EIO) must not hide the state of all the others.
    #[inline]
    pub fn check(&mut self, op: Op, slot: u32, offset: u64, len: u64, result: isize) -> bool {
        if let Some(busy) = &mut self.in_flight {
            busy[slot as usize] = u64::MAX;
        }
        let ok = self.judge(op, offset, len, result);
        // A completed I/O's block is given back once `done` has counted it; a failed
        // one's here, as `done` does not come.
        if !ok {
            if let Some(t) = self.verify.as_ref().and_then(Verifier::shared) {
                t.give_back(offset);
            }
        }
        ok
    }

    /// `check`'s verdict on the result, the failure recorded.
    #[inline]
    fn judge(&mut self, op: Op, offset: u64, len: u64, result: isize) -> bool {
        // A punched hole reports 0 when it is done.
        if result == len as isize || (op == Op::Trim && result == 0) {
            return true;
        }
        // A replay's threads keep the recording's order between them only by their
        // times: one may read past where another truncated, which the program did not.
        if let (Op::Read, true, Some(r)) = (op, result >= 0, self.replay.as_mut()) {
            r.lag.short_reads += 1;
            return true;
        }
        if let (Op::Read, Some(v)) = (op, &mut self.verify) {
            let read = if result < 0 {
                ReadBack::Failed(-result as i32)
            } else {
                ReadBack::Short(result as usize)
            };
            v.read(read, offset);
            return false;
        }
        // Filling ends at the first write the file system has no room for.
        let no_room = result >= 0 || matches!(-result as i32, libc::ENOSPC | libc::EDQUOT);
        if self.fill && op == Op::Write && no_room {
            self.full = true;
            return false;
        }
        // With several files, the offset carries the file's number: say both apart.
        let (file, at) = self.locate(offset);
        let place = if self.offsets.len() > 1 {
            format!("offset {at} of file {file} (`$filenum`)")
        } else {
            format!("offset {at}")
        };
        if result < 0 {
            let errno = -result as i32;
            if self.continue_on.covers(op) && self.continue_errors.contains(&errno) {
                self.count_continued(op, errno, at);
                return false;
            }
            let msg = std::io::Error::from_raw_os_error(errno).to_string();
            self.fail(
                op,
                at,
                Some(errno),
                format!("{} at {place}: {msg}", op.name()),
            );
        } else {
            self.fail(
                op,
                at,
                None,
                format!("short {}: {result} of {len} bytes at {place}", op.name()),
            );
        }
        false
    }
}

impl Worker<'_> {
    /// Counts a failed I/O the job goes on after.
    #[cold]
    fn count_continued(&mut self, op: Op, errno: i32, offset: u64) {
        let name = op.name();
        match self
            .continued
            .iter_mut()
            .find(|c| c.errno == errno && c.op == name)
        {
            Some(c) => c.count += 1,
            None => self.continued.push(ContinuedErrors {
                op: name.into(),
                errno,
                name: crate::errno::name_of(errno).map(str::to_string),
                count: 1,
                first_offset: offset,
            }),
        }
    }
}

/// Spins for `d` (the null engine's synthetic latency): sleeping would add the
/// scheduler's wake-up time, which is exactly what a fake device must not have.
#[inline]
pub fn spin(d: Duration, from: Instant) {
    while from.elapsed() < d {
        std::hint::spin_loop();
    }
}
