//! One thread of a job: what to do next, and what happened. The I/O itself is done by
//! the backends in `io/`, which drive a `Worker`.

use std::fs::File;
use std::time::Duration;

use super::offsets::Offsets;
use super::verify::{ReadBack, Verifier};
use crate::buffers::Buffers;
use crate::clock::Instant;
use crate::harness::{thread_seed, Flags};
use crate::record::{Op, Recorder};
use crate::report::IoErrorEntry;
use crate::spec::{BufferContent, Job};

pub struct Worker<'a> {
    pub thread: u32,
    pub file: Option<File>,
    pub bs: u64,
    pub buffers: Buffers,
    pub rec: Recorder,
    pub error: Option<IoErrorEntry>,
    /// With `verify = true`: stamps each write, checks each read.
    pub verify: Option<Verifier>,
    flags: &'a Flags,
    offsets: Offsets,
    deadline: Option<Instant>,
    ramp_end: Option<Instant>,
    budget: u64,
    fsync_every: u64,
    writes_since_fsync: u64,
    scramble: bool,
    writes: u64,
}

impl<'a> Worker<'a> {
    pub fn new(
        job: &Job,
        thread: u32,
        file: Option<File>,
        start: Instant,
        buffers: Buffers,
        rec: Recorder,
        flags: &'a Flags,
    ) -> Self {
        let ramp = job.ramp_time();
        let size = job.size.unwrap_or(job.bs);
        let seed = thread_seed(job.randseed, thread);
        Self {
            thread,
            file,
            bs: job.bs,
            buffers,
            rec,
            error: None,
            flags,
            offsets: Offsets::new(job.rw, job.rwmixread, job.bs, size, seed),
            deadline: job.runtime().map(|r| start + ramp + r),
            ramp_end: (!ramp.is_zero()).then_some(start + ramp),
            budget: job.io_size.map_or(u64::MAX, |s| s / job.bs),
            fsync_every: job.fsync,
            writes_since_fsync: 0,
            // Verify writes content of its own, as distinct per block and write.
            scramble: job.buffer_content == BufferContent::Random && !job.verify,
            writes: 0,
            verify: None,
        }
    }

    /// Hands the worker the job's verifier (`verify = true`).
    pub fn with_verify(mut self, verify: Option<Verifier>) -> Self {
        self.verify = verify;
        self
    }

    /// The next I/O to issue at `now`, or `None` when this thread is done.
    #[inline]
    pub fn next(&mut self, now: Instant) -> Option<(Op, u64)> {
        if self.flags.stopped() {
            return None;
        }
        match self.deadline {
            Some(d) if now >= d => return None,
            Some(_) => {}
            None => {
                if self.budget == 0 {
                    return None;
                }
                // A size-based job's budget starts after the ramp.
                match self.ramp_end {
                    Some(r) if now < r => {}
                    _ => self.budget -= 1,
                }
            }
        }
        Some(self.offsets.next_io())
    }

    /// Readies the buffer in `slot` for a write to `offset`.
    #[inline]
    pub fn prepare(&mut self, op: Op, slot: u32, offset: u64) {
        if op == Op::Write {
            if let Some(v) = &self.verify {
                v.prepare_write(self.buffers.slot_mut(slot), offset);
            }
        }
        if op == Op::Write && self.scramble {
            self.writes += 1;
            self.buffers.scramble(slot, offset, self.writes);
        }
    }

    /// Records a completed I/O (in buffer `slot`, at `offset`); returns true when an
    /// fsync is due.
    #[inline]
    pub fn done(
        &mut self,
        op: Op,
        slot: u32,
        offset: u64,
        submitted: Instant,
        now: Instant,
    ) -> bool {
        self.rec.complete(op, self.bs, submitted, now);
        if let Some(v) = &mut self.verify {
            match op {
                Op::Read => v.read(ReadBack::Data(self.buffers.slot(slot)), offset),
                _ => v.written(offset),
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

    /// fsyncs the file and records how long it took.
    pub fn fsync(&mut self) {
        let Some(f) = &self.file else { return };
        let t0 = Instant::now();
        if let Err(e) = f.sync_all() {
            self.fail(Op::Write, 0, e.raw_os_error(), format!("fsync failed: {e}"));
            return;
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

    /// Checks a completion's result: it must have moved exactly `bs` bytes. Otherwise
    /// the job stops, but for a read that verify counts as unreadable: one bad block
    /// (a checksumming file system's EIO) must not hide the state of all the others.
    #[inline]
    pub fn check(&mut self, op: Op, offset: u64, result: isize) -> bool {
        if result == self.bs as isize {
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
        if result < 0 {
            let errno = -result as i32;
            let msg = std::io::Error::from_raw_os_error(errno).to_string();
            self.fail(
                op,
                offset,
                Some(errno),
                format!("{} at offset {offset}: {msg}", op.name()),
            );
        } else {
            self.fail(
                op,
                offset,
                None,
                format!(
                    "short {}: {result} of {} bytes at offset {offset}",
                    op.name(),
                    self.bs
                ),
            );
        }
        false
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
