//! A file descriptor table of the worker thread's own.
//!
//! Threads share their process's table, and while a table is shared the kernel takes
//! and drops a reference to the file on every system call that names a descriptor
//! (`fdget`/`fdput`): two atomic operations on a cache line every thread's I/O touches.
//! On the 2-vCPU VM of docs/performance.md that was ~45 ns of a ~1.5 us buffered 4 KiB
//! `pread` from tmpfs (the kernel's `fdget`, `fput` and `__x64_sys_pread64` in a
//! profile, against a single-threaded C loop). fio runs each job in a process of its
//! own by default, so it never pays this. A worker that unshares its table
//! (`unshare(CLONE_FILES)`) does not either: what is timed is the same system call.
//! Every kind's workers do (block, files, the application models).

use std::marker::PhantomData;
use std::os::fd::RawFd;

/// Descriptors a thread shares with the process (a block job's file, a files job's tree
/// roots, a model's data and log) but reaches through a table of its own: closes its
/// copies when dropped, so that none outlives the thread's work.
pub struct OwnTable {
    kept: Vec<RawFd>,
    /// Not `Send`: dropped on another thread, it would close that thread's descriptors.
    _here: PhantomData<*const ()>,
}

impl OwnTable {
    /// Gives this thread a descriptor table of its own that holds stdin, stdout, stderr
    /// and `keep` (the same numbers, naming the same open files); `None` where the
    /// kernel refuses, and the thread goes on with the shared table.
    ///
    /// Call it before the thread opens anything else (an io_uring ring then lands in
    /// the private table too), and only on a thread spawned for one job: every
    /// descriptor the thread uses afterwards is one of its own table, and a descriptor
    /// it opens is not seen by any other thread. Whoever owns `keep` in the shared
    /// table goes on owning them there.
    pub fn keeping(keep: &[RawFd]) -> Option<Self> {
        // SAFETY: unshare(CLONE_FILES) copies the table for this thread alone; other
        // threads keep the one they share.
        if unsafe { libc::unshare(libc::CLONE_FILES) } != 0 {
            return None;
        }
        let mut kept: Vec<RawFd> = keep.iter().copied().filter(|&fd| fd >= 3).collect();
        kept.sort_unstable();
        kept.dedup();
        // The copy holds every descriptor the process had, the other workers' files
        // among them: close them here, so that none stays open until this thread has
        // exited (after it has been joined), which would keep a block device claimed a
        // moment longer than the job that opened it. A kernel without close_range
        // (before 5.9) leaves them to the thread's exit.
        let mut first = 3;
        for &fd in &kept {
            close_range(first, fd - 1);
            first = fd + 1;
        }
        close_range(first, libc::c_int::MAX);
        Some(Self {
            kept,
            _here: PhantomData,
        })
    }
}

impl Drop for OwnTable {
    fn drop(&mut self) {
        for &fd in &self.kept {
            // SAFETY: a copy in this thread's own table, owned by nothing else there.
            unsafe { libc::close(fd) };
        }
    }
}

/// Closes the descriptors `first..=last` of this thread's table, if any.
fn close_range(first: libc::c_int, last: libc::c_int) {
    if first > last {
        return;
    }
    // SAFETY: only called on a table of this thread's own, on descriptors nothing in it
    // owns.
    unsafe { libc::syscall(libc::SYS_close_range, first as u32, last as u32, 0u32) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Seek, SeekFrom, Write};
    use std::os::fd::AsRawFd;

    #[test]
    fn a_handle_made_in_the_own_table_reads_the_same_file_and_the_shared_one_stays_open() {
        let mut shared = tempfile::tempfile().unwrap();
        shared.write_all(b"fslab").unwrap();
        let other = tempfile::tempfile().unwrap();
        let fd = shared.as_raw_fd();
        let other_fd = other.as_raw_fd();
        let (n, other_open_there) = std::thread::scope(|s| {
            s.spawn(|| {
                let own = OwnTable::keeping(&[fd]).expect("this kernel unshares");
                // The other file is not in this thread's table any more (asked first: the
                // duplicate below may take its number).
                let other_open = open_here(other_fd);
                // What a block worker does: its own handle, in its own table.
                let mut mine = shared.try_clone().unwrap();
                mine.seek(SeekFrom::Start(0)).unwrap();
                let mut text = String::new();
                mine.read_to_string(&mut text).unwrap();
                drop((mine, own));
                (text.len(), other_open)
            })
            .join()
            .unwrap()
        });
        assert_eq!(n, 5);
        assert!(
            !other_open_there,
            "the copy closes what the worker does not use"
        );
        // Closing the thread's copies left both of this thread's handles open.
        assert!(open_here(fd) && open_here(other_fd));
        shared.seek(SeekFrom::Start(1)).unwrap();
        let mut rest = String::new();
        shared.read_to_string(&mut rest).unwrap();
        assert_eq!(rest, "slab");
        drop(other);
    }

    fn open_here(fd: RawFd) -> bool {
        // SAFETY: fcntl(F_GETFD) only asks whether the descriptor is open.
        unsafe { libc::fcntl(fd, libc::F_GETFD) != -1 }
    }

    #[test]
    fn an_own_table_keeps_what_it_is_given_and_closes_it_when_dropped() {
        let kept = tempfile::tempfile().unwrap();
        let other = tempfile::tempfile().unwrap();
        let (k, o) = (kept.as_raw_fd(), other.as_raw_fd());
        let seen = std::thread::scope(|s| {
            s.spawn(|| {
                let own = OwnTable::keeping(&[k, k, 1]).expect("this kernel unshares");
                let during = (open_here(k), open_here(o), open_here(1));
                drop(own);
                (during, open_here(k))
            })
            .join()
            .unwrap()
        });
        assert_eq!(seen, ((true, false, true), false));
        // The shared table's copies are the caller's, open until it closes them.
        assert!(open_here(k) && open_here(o) && open_here(1));
    }
}
