//! Backends: each drives a `Worker` until it says it is done.
//!
//! `sync` and `null` do one request at a time; `uring` keeps `iodepth` in flight.
//! `fdtable` gives a worker a descriptor table of its own, as a process per job would.

pub mod fdtable;
pub mod sync;
pub mod uring;

use std::os::fd::RawFd;

use crate::record::Op;
use crate::spec::Job;

/// fallocate(2) of `len` bytes from `offset` with `mode` (0, FALLOC_FL_KEEP_SIZE, a
/// punched hole...). The system call itself, as the backends make theirs (sync.rs).
pub fn fallocate(fd: RawFd, mode: libc::c_int, offset: u64, len: u64) -> std::io::Result<()> {
    // SAFETY: a system call on plain integers: it reads and writes none of our memory,
    // and a descriptor that is not open fails EBADF.
    let r = unsafe {
        libc::syscall(
            libc::SYS_fallocate,
            fd,
            mode,
            offset as libc::off_t,
            len as libc::off_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// The flags a job's read and write requests carry (preadv2/pwritev2's `flags`,
/// io_uring's `rw_flags`): `nowait`, `uncached`, and `atomic` on writes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RwFlags {
    pub read: i32,
    pub write: i32,
}

impl RwFlags {
    pub fn of(job: &Job) -> Self {
        let p = &job.pattern;
        let mut both = 0;
        if p.nowait {
            both |= libc::RWF_NOWAIT;
        }
        if p.uncached {
            both |= libc::RWF_DONTCACHE;
        }
        let atomic = if p.atomic { libc::RWF_ATOMIC } else { 0 };
        Self {
            read: both,
            write: both | atomic,
        }
    }

    #[inline]
    pub fn of_op(self, op: Op) -> i32 {
        match op {
            Op::Read => self.read,
            Op::Write => self.write,
            _ => 0,
        }
    }
}
