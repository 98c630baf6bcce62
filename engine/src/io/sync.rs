//! `ioengine = "sync"` (pread/pwrite) and `ioengine = "null"` (no I/O at all).

use std::os::fd::AsRawFd;
use std::time::Duration;

use crate::block::worker::{spin, Next, Worker};
use crate::clock::Instant;
use crate::record::Op;

/// The next I/O of a thread with one request at a time: a paced one sleeps until it is
/// due (updating `now`); `None` when the thread is done.
#[inline]
fn next_in_turn(w: &mut Worker, now: &mut Instant) -> Option<(Op, u64, u64)> {
    loop {
        match w.next(*now) {
            Next::Io(op, offset, len) => return Some((op, offset, len)),
            Next::Wait(until) => {
                w.idle(until);
                *now = Instant::now();
            }
            Next::Done => return None,
        }
    }
}

/// One pread/pwrite at a time, timed from just before the call to just after it.
pub fn run(w: &mut Worker) {
    let fd = w.file.as_ref().map_or(-1, AsRawFd::as_raw_fd);
    let buf = w.buffers.ptr(0);
    let mut now = Instant::now();
    while let Some((op, offset, len)) = next_in_turn(w, &mut now) {
        w.prepare(op, 0, offset, len);
        let t0 = Instant::now();
        // The system calls themselves, not glibc's wrappers: in a process with more than
        // one thread those switch thread cancellation on and off around each call
        // (~12 ns a request on tmpfs, measured), and the engine never cancels a thread.
        // SAFETY: `buf` points at a buffer of the job's largest I/O (`len` or more)
        // owned by this worker's Buffers, alive for the whole loop; the kernel reads or
        // writes only inside the first `len` bytes.
        let r = unsafe {
            match op {
                Op::Read => libc::syscall(
                    libc::SYS_pread64,
                    fd,
                    buf,
                    len as usize,
                    offset as libc::off_t,
                ),
                Op::Write => libc::syscall(
                    libc::SYS_pwrite64,
                    fd,
                    buf,
                    len as usize,
                    offset as libc::off_t,
                ),
                Op::Files | Op::Log | Op::Txn | Op::Background => {
                    unreachable!("block jobs only read and write")
                }
            }
        };
        now = Instant::now();
        let r = if r < 0 {
            -(std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO) as isize)
        } else {
            r as isize
        };
        // A failed I/O stops the job (`next` then says so), unless verify counted it as
        // an unreadable block and goes on.
        if !w.check(op, 0, offset, len, r) {
            continue;
        }
        if w.done(op, 0, offset, len, t0, now) {
            w.fsync();
        }
    }
}

/// The engine's own cost per operation: everything but the I/O (offsets, mix, clock
/// reads, histograms, series). `lat` > 0 spins that long per operation, a fake device
/// with a known latency for testing what sits above the engine.
pub fn run_null(w: &mut Worker, lat: Duration) {
    let mut now = Instant::now();
    while let Some((op, offset, len)) = next_in_turn(w, &mut now) {
        w.prepare(op, 0, offset, len);
        let t0 = Instant::now();
        if !lat.is_zero() {
            spin(lat, t0);
        }
        now = Instant::now();
        w.check(op, 0, offset, len, len as isize);
        w.done(op, 0, offset, len, t0, now);
    }
}
