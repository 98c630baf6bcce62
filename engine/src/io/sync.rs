//! `ioengine = "sync"` (pread/pwrite), `"falloc"` and `"ftruncate"` (one call per I/O
//! that moves no data), and `ioengine = "null"` (no I/O at all).

use std::os::fd::AsRawFd;
use std::time::Duration;

use crate::block::worker::{spin, Next, Worker};
use crate::clock::Instant;
use crate::io::RwFlags;
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

/// What one I/O's system call is, by the job's engine and target.
#[derive(Debug, Clone, Copy)]
pub enum Call {
    /// pread/pwrite (preadv2/pwritev2 when the requests carry `flags`); a trim is a
    /// hole punched in a file, a discard on a device.
    Transfer { device: bool, flags: RwFlags },
    /// fio's `falloc`: fallocate with a mode per direction.
    Falloc,
    /// fio's `ftruncate`: a write truncates the file to its offset.
    Ftruncate,
    /// fio's `mmap`: each file mapped whole (`len` bytes), reads and writes copies.
    /// With `direct`, each copy's pages are written back and dropped, as fio's.
    Mmap {
        len: u64,
        write: bool,
        random: bool,
        direct: bool,
    },
    /// fio's `e4defrag`: a write moves its range onto the donor's blocks (ioctl).
    MoveExt {
        donor: i32,
        block: u64,
        inplace: bool,
    },
}

/// The thread's files mapped for `Call::Mmap` (else none), unmapped when dropped.
struct Maps(Vec<(*mut u8, usize)>);

impl Maps {
    fn of(call: Call, fds: &[i32]) -> std::io::Result<Self> {
        let Call::Mmap {
            len, write, random, ..
        } = call
        else {
            return Ok(Self(Vec::new()));
        };
        let len = len as usize;
        let prot = libc::PROT_READ | if write { libc::PROT_WRITE } else { 0 };
        let mut maps = Self(Vec::with_capacity(fds.len()));
        for &fd in fds {
            // SAFETY: a new shared mapping of an open descriptor; nothing else points
            // into it, and `Maps` unmaps it once.
            let at =
                unsafe { libc::mmap(std::ptr::null_mut(), len, prot, libc::MAP_SHARED, fd, 0) };
            if at == libc::MAP_FAILED {
                return Err(std::io::Error::last_os_error());
            }
            let advice = if random {
                libc::MADV_RANDOM
            } else {
                libc::MADV_SEQUENTIAL
            };
            // SAFETY: advice on the mapping just made; failing it changes nothing.
            unsafe { libc::madvise(at, len, advice) };
            maps.0.push((at.cast(), len));
        }
        Ok(maps)
    }
}

impl Drop for Maps {
    fn drop(&mut self) {
        for &(at, len) in &self.0 {
            // SAFETY: each was mapped by `of` with this length, and is unmapped once.
            unsafe { libc::munmap(at.cast(), len) };
        }
    }
}

/// One copy in or out of a mapping: `len` bytes, or -1 with errno set. `direct`: the
/// range's pages are then written back and dropped from the page cache ("not really
/// direct, but should drop the pages from the cache", fio's mmap engine says).
///
/// # Safety
/// `map` must be a mapping of `offset + len` bytes or more and `buf` a buffer of `len`.
#[inline]
unsafe fn copy(op: Op, map: *mut u8, buf: *mut u8, offset: u64, len: u64, direct: bool) -> i64 {
    // SAFETY: the caller's promise; the two never overlap (a mapping and a heap buffer).
    unsafe {
        let at = map.add(offset as usize);
        match op {
            Op::Read => std::ptr::copy_nonoverlapping(at, buf, len as usize),
            _ => std::ptr::copy_nonoverlapping(buf, at, len as usize),
        }
    }
    if direct {
        // msync and madvise take whole pages: from the page the range starts in.
        let page = 4096u64;
        let from = offset / page * page;
        let span = (offset + len - from) as usize;
        // SAFETY: the pages lie inside the mapping (the caller's promise); neither call
        // reads or writes our memory.
        let r = unsafe {
            let at = map.add(from as usize).cast();
            if libc::msync(at, span, libc::MS_SYNC) != 0 {
                return -1;
            }
            libc::posix_madvise(at, span, libc::POSIX_MADV_DONTNEED)
        };
        if r != 0 {
            // SAFETY: errno is thread-local.
            unsafe { *libc::__errno_location() = r };
            return -1;
        }
    }
    len as i64
}

/// `_IO(0x12, 119)`: discard a byte range of a block device.
const BLKDISCARD: libc::c_ulong = 0x1277;

/// One I/O's system call: bytes moved, or -1 with errno set.
///
/// # Safety
/// `buf` must point at a buffer of `len` bytes or more that the kernel may read or write.
#[inline]
unsafe fn one(call: Call, op: Op, fd: i32, buf: *mut u8, offset: u64, len: u64) -> i64 {
    let fallocate = |mode: libc::c_int| match super::fallocate(fd, mode, offset, len) {
        Ok(()) => len as i64,
        // errno is still the call's: reading it leaves it.
        Err(_) => -1,
    };
    let punch = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
    // The system calls themselves, not glibc's wrappers: in a process with more than
    // one thread those switch thread cancellation on and off around each call
    // (~12 ns a request on tmpfs, measured), and the engine never cancels a thread.
    match (call, op) {
        (Call::Transfer { flags, .. }, Op::Read | Op::Write) if flags.of_op(op) != 0 => {
            let iov = libc::iovec {
                iov_base: buf.cast(),
                iov_len: len as usize,
            };
            let nr = if op == Op::Read {
                libc::SYS_preadv2
            } else {
                libc::SYS_pwritev2
            };
            // SAFETY: one iovec over the caller's buffer (its promise), which outlives
            // the call; the offset goes in two halves, as the system call takes it.
            unsafe {
                libc::syscall(
                    nr,
                    fd,
                    &iov as *const libc::iovec,
                    1,
                    offset as libc::c_long,
                    (offset >> 32) as libc::c_long,
                    flags.of_op(op),
                )
            }
        }
        // SAFETY: the caller's promise on `buf`.
        (Call::Transfer { .. }, Op::Read) => unsafe {
            libc::syscall(
                libc::SYS_pread64,
                fd,
                buf,
                len as usize,
                offset as libc::off_t,
            )
        },
        // SAFETY: the caller's promise on `buf`.
        (Call::Transfer { .. }, Op::Write) => unsafe {
            libc::syscall(
                libc::SYS_pwrite64,
                fd,
                buf,
                len as usize,
                offset as libc::off_t,
            )
        },
        (Call::Transfer { device: true, .. }, Op::Trim) => {
            let range = [offset, len];
            // SAFETY: BLKDISCARD reads two u64s from `range`, which outlives the call.
            let r = unsafe { libc::ioctl(fd, BLKDISCARD, range.as_ptr()) };
            if r == 0 {
                len as i64
            } else {
                i64::from(r)
            }
        }
        (Call::Transfer { device: false, .. }, Op::Trim) | (Call::Falloc, Op::Trim) => {
            fallocate(punch)
        }
        (Call::Falloc, Op::Read) => fallocate(libc::FALLOC_FL_KEEP_SIZE),
        (Call::Falloc, Op::Write) => fallocate(0),
        (Call::Ftruncate, Op::Write) => {
            // SAFETY: plain integers.
            let r = unsafe { libc::syscall(libc::SYS_ftruncate, fd, offset as libc::off_t) };
            if r == 0 {
                len as i64
            } else {
                r
            }
        }
        (
            Call::MoveExt {
                donor,
                block,
                inplace,
            },
            Op::Write,
        ) => crate::block::defrag::move_range(fd, donor, block, inplace, offset, len),
        // The job's checks let only writes through to ftruncate and e4defrag (fio fails
        // the rest with EINVAL, as this does should one ever come).
        (Call::Ftruncate | Call::MoveExt { .. }, _) => {
            // SAFETY: errno is thread-local.
            unsafe { *libc::__errno_location() = libc::EINVAL };
            -1
        }
        (Call::Mmap { .. }, _) => unreachable!("a mapped file's I/O is a copy, never a call"),
        (_, Op::Files | Op::Log | Op::Txn | Op::Background) => {
            unreachable!("block jobs only read, write and trim")
        }
    }
}

/// One I/O at a time, timed from just before the call to just after it.
pub fn run(w: &mut Worker, call: Call) {
    let fds: Vec<i32> = w.files.iter().map(AsRawFd::as_raw_fd).collect();
    let maps = match Maps::of(call, &fds) {
        Ok(m) => m,
        Err(e) => {
            w.fail(
                Op::Read,
                0,
                e.raw_os_error(),
                format!("cannot map the file: {e}"),
            );
            return;
        }
    };
    let direct = matches!(call, Call::Mmap { direct: true, .. });
    let buf = w.buffers.ptr(0);
    let mut now = Instant::now();
    while let Some((op, offset, len)) = next_in_turn(w, &mut now) {
        w.prepare(op, 0, offset, len);
        let (n, at) = w.locate(offset);
        let fd = fds.get(n).copied().unwrap_or(-1);
        let t0 = Instant::now();
        // SAFETY: `buf` points at a buffer of the job's largest I/O (`len` or more)
        // owned by this worker's Buffers, alive for the whole loop; the kernel reads or
        // writes only inside the first `len` bytes.
        let r = match maps.0.get(n) {
            // SAFETY: the file is mapped whole (its extent), and every offset plus
            // length lies inside it.
            Some(&(map, _)) => unsafe { copy(op, map, buf, at, len, direct) },
            // SAFETY: as above for `buf`.
            None => unsafe { one(call, op, fd, buf, at, len) },
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
