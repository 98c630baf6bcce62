//! The log and its group commit: committing users append a record; one of those that
//! must wait becomes the leader and writes + flushes everything appended so far, so
//! commits that overlap share one flush.

use std::sync::{Condvar, Mutex, MutexGuard};

use crate::buffers::Buffers;
use crate::clock::Instant;
use crate::record::{Op, Recorder};
use crate::spec::BufferContent;

/// Most bytes one log write carries; a bigger backlog is written in several.
const LOG_BUF: u64 = 1 << 20;

/// What one thread's flushes did (counted after the ramp only).
#[derive(Debug, Default, Clone)]
pub struct LogCounts {
    pub flushes: u64,
    pub records: u64,
    pub writes: u64,
    pub fsyncs: u64,
}

#[derive(Default)]
struct State {
    appended: u64,
    flushed: u64,
    pending_bytes: u64,
    pending_records: u64,
    flushing: bool,
    failed: bool,
}

pub struct Log {
    file: super::file::ModelFile,
    size: u64,
    align: u64,
    /// The file was opened O_DSYNC: each write is durable, no fdatasync needed.
    dsync: bool,
    st: Mutex<State>,
    cv: Condvar,
    /// Only the leader touches it (it holds `flushing`): the buffer and the write offset.
    io: Mutex<(Buffers, u64)>,
}

impl std::os::fd::AsRawFd for Log {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.file.as_raw_fd()
    }
}

impl Log {
    pub fn new(
        file: super::file::ModelFile,
        size: u64,
        align: u64,
        dsync: bool,
        seed: u64,
    ) -> Self {
        Self {
            file,
            size,
            align,
            dsync,
            st: Mutex::new(State::default()),
            cv: Condvar::new(),
            io: Mutex::new((Buffers::new(LOG_BUF, 1, BufferContent::Random, seed), 0)),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.st.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Appends a commit record of `bytes`; with `wait`, returns once it is durable.
    pub fn commit(
        &self,
        bytes: u64,
        wait: bool,
        rec: &mut Recorder,
        c: &mut LogCounts,
    ) -> std::io::Result<()> {
        let mut st = self.lock();
        st.appended += 1;
        st.pending_bytes += bytes;
        st.pending_records += 1;
        let lsn = st.appended;
        if !wait {
            return Ok(());
        }
        loop {
            // A failed leader has stopped the job; its thread reports the error.
            if st.flushed >= lsn || st.failed {
                return Ok(());
            }
            if st.flushing {
                st = self.cv.wait(st).unwrap_or_else(|p| p.into_inner());
                continue;
            }
            st = self.lead(st, rec, c)?;
        }
    }

    /// Flushes what lazy commits left behind, unless a flush is under way.
    pub fn flush_pending(&self, rec: &mut Recorder, c: &mut LogCounts) -> std::io::Result<()> {
        let st = self.lock();
        if st.pending_records == 0 || st.flushing || st.failed {
            return Ok(());
        }
        self.lead(st, rec, c).map(drop)
    }

    fn lead<'a>(
        &'a self,
        mut st: MutexGuard<'a, State>,
        rec: &mut Recorder,
        c: &mut LogCounts,
    ) -> std::io::Result<MutexGuard<'a, State>> {
        let (bytes, records, upto) = (st.pending_bytes, st.pending_records, st.appended);
        st.pending_bytes = 0;
        st.pending_records = 0;
        st.flushing = true;
        drop(st);
        let r = self.write(bytes, records, rec, c);
        let mut st = self.lock();
        st.flushing = false;
        match r {
            Ok(()) => st.flushed = upto,
            Err(_) => st.failed = true,
        }
        self.cv.notify_all();
        r.map(|()| st)
    }

    fn write(
        &self,
        bytes: u64,
        records: u64,
        rec: &mut Recorder,
        c: &mut LogCounts,
    ) -> std::io::Result<()> {
        let mut io = self.io.lock().unwrap_or_else(|p| p.into_inner());
        let (buf, off) = &mut *io;
        // Logs write whole sectors; O_DIRECT needs the file's alignment.
        let total = bytes.div_ceil(self.align).max(1) * self.align;
        let mut left = total;
        let t0 = Instant::now();
        let mut writes = 0;
        while left > 0 {
            let n = left.min(LOG_BUF);
            if *off + n > self.size {
                *off = 0;
            }
            self.file
                .write_all_at(&buf.slot_mut(0)[..n as usize], *off)?;
            *off += n;
            left -= n;
            writes += 1;
        }
        if !self.dsync {
            let f0 = Instant::now();
            self.file.sync_data()?;
            let now = Instant::now();
            rec.fsync(now - f0);
            if rec.measuring(now) {
                c.fsyncs += 1;
            }
        }
        let now = Instant::now();
        rec.complete(Op::Log, total, t0, now);
        if rec.measuring(now) {
            c.flushes += 1;
            c.records += records;
            c.writes += writes;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    /// A log on a scratch file (tmpfs: fdatasync is cheap), and where it lives.
    fn log(size: u64, align: u64) -> (Log, tempfile::TempDir) {
        let dir = tempfile::Builder::new()
            .prefix("fslab-commit-test-")
            .tempdir_in("/dev/shm")
            .unwrap();
        let path = dir.path().join("log");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        file.set_len(size).unwrap();
        let file = super::super::file::ModelFile::new(file, false);
        (Log::new(file, size, align, false, 7), dir)
    }

    fn recorder() -> (Recorder, mpsc::Receiver<crate::record::IntervalMsg>) {
        let (tx, rx) = mpsc::channel();
        let rec = Recorder::new(
            Instant::now(),
            Duration::ZERO,
            Duration::from_secs(60),
            tx,
            false,
        );
        (rec, rx)
    }

    #[test]
    fn a_lazy_commit_returns_at_once_and_the_next_flush_writes_it() {
        let (log, _dir) = log(1 << 20, 512);
        let (mut rec, _rx) = recorder();
        let mut c = LogCounts::default();
        log.commit(100, false, &mut rec, &mut c).unwrap();
        assert_eq!(
            (c.flushes, c.records),
            (0, 0),
            "a lazy commit does not flush"
        );
        log.flush_pending(&mut rec, &mut c).unwrap();
        assert_eq!((c.flushes, c.records, c.writes, c.fsyncs), (1, 1, 1, 1));
        log.flush_pending(&mut rec, &mut c).unwrap();
        assert_eq!(c.flushes, 1, "nothing left to flush");
    }

    #[test]
    fn a_synchronous_commit_flushes_every_record_appended_before_it() {
        let (log, _dir) = log(1 << 20, 512);
        let (mut rec, _rx) = recorder();
        let mut c = LogCounts::default();
        for _ in 0..3 {
            log.commit(100, false, &mut rec, &mut c).unwrap();
        }
        log.commit(100, true, &mut rec, &mut c).unwrap();
        assert_eq!((c.flushes, c.records), (1, 4), "one flush carries all four");
        let totals = rec.finish(Instant::now());
        let (ios, bytes, _) = &totals.ops[Op::Log as usize];
        assert_eq!(*ios, 1);
        assert_eq!(*bytes, 512, "400 bytes of records are one whole sector");
    }

    #[test]
    fn log_writes_are_whole_units_of_the_alignment() {
        let (log, _dir) = log(1 << 20, 4096);
        let (mut rec, _rx) = recorder();
        let mut c = LogCounts::default();
        log.commit(5000, true, &mut rec, &mut c).unwrap();
        let totals = rec.finish(Instant::now());
        assert_eq!(totals.ops[Op::Log as usize].1, 8192);
    }

    #[test]
    fn concurrent_commits_are_all_made_durable_in_fewer_or_as_many_flushes() {
        let (log, _dir) = log(1 << 20, 512);
        let users = 4;
        let per_user = 200;
        let counts: Vec<LogCounts> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..users)
                .map(|_| {
                    s.spawn(|| {
                        let (mut rec, _rx) = recorder();
                        let mut c = LogCounts::default();
                        for _ in 0..per_user {
                            log.commit(64, true, &mut rec, &mut c).unwrap();
                        }
                        c
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let records: u64 = counts.iter().map(|c| c.records).sum();
        let flushes: u64 = counts.iter().map(|c| c.flushes).sum();
        assert_eq!(
            records,
            users * per_user,
            "every record is flushed exactly once"
        );
        assert!(flushes <= records && flushes > 0, "{flushes} flushes");
    }
}
