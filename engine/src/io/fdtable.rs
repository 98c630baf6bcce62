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

use std::fs::File;
use std::marker::PhantomData;
use std::os::fd::{AsRawFd, FromRawFd, RawFd};

/// Gives this thread a descriptor table of its own that holds stdin, stdout, stderr
/// and `keep` (the same numbers, naming the same open files); false where the kernel
/// refuses, and the thread goes on with the shared table.
///
/// Call it before the thread opens anything else (an io_uring ring then lands in the
/// private table too), and only on a thread spawned for one job: every descriptor the
/// thread uses afterwards is one of its own table, and a descriptor it opens is not
/// seen by any other thread. Whoever owns `keep` in the shared table goes on owning
/// them there.
pub fn unshare_keeping(keep: &[RawFd]) -> bool {
    // SAFETY: unshare(CLONE_FILES) copies the table for this thread alone; other
    // threads keep the one they share.
    if unsafe { libc::unshare(libc::CLONE_FILES) } != 0 {
        return false;
    }
    // The copy holds every descriptor the process had, the other workers' files among
    // them: close them here, so that none stays open until this thread has exited
    // (after it has been joined), which would keep a block device claimed a moment
    // longer than the job that opened it. A kernel without close_range (before 5.9)
    // leaves them to the thread's exit.
    let mut first = 3;
    for fd in kept(keep) {
        close_range(first, fd - 1);
        first = fd + 1;
    }
    close_range(first, libc::c_int::MAX);
    true
}

/// The worker's own handle on `f`: in a table of this thread's own (`unshare_keeping`),
/// or a duplicate in the shared table where the kernel refuses to unshare. The caller
/// keeps `f`, and closes it in the shared table once the thread is done; the returned
/// handle closes the private copy.
pub fn private_file(f: &File) -> std::io::Result<File> {
    let fd = f.as_raw_fd();
    if !unshare_keeping(&[fd]) {
        return f.try_clone();
    }
    // SAFETY: `fd` is open in this thread's own table (copied just above) and nothing in
    // that table owns it but the handle made here.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// Descriptors a thread shares with the process (a files job's tree roots) but reaches
/// through a table of its own: closes its copies when dropped, so that none outlives
/// the thread's work.
pub struct OwnTable {
    kept: Vec<RawFd>,
    /// Not `Send`: dropped on another thread, it would close that thread's descriptors.
    _here: PhantomData<*const ()>,
}

impl OwnTable {
    /// This thread's own table keeping `keep` (`unshare_keeping`), or `None` where the
    /// kernel refuses and the thread goes on with the shared one.
    pub fn keeping(keep: &[RawFd]) -> Option<Self> {
        unshare_keeping(keep).then(|| Self {
            kept: kept(keep),
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

/// The descriptors of `keep` past stdio, once each, in order.
fn kept(keep: &[RawFd]) -> Vec<RawFd> {
    let mut kept: Vec<RawFd> = keep.iter().copied().filter(|&fd| fd >= 3).collect();
    kept.sort_unstable();
    kept.dedup();
    kept
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

    #[test]
    fn the_private_handle_reads_the_same_file_and_the_shared_one_stays_open() {
        let mut shared = tempfile::tempfile().unwrap();
        shared.write_all(b"fslab").unwrap();
        let other = tempfile::tempfile().unwrap();
        let fd = shared.as_raw_fd();
        let other_fd = other.as_raw_fd();
        let (n, other_open_there) = std::thread::scope(|s| {
            s.spawn(|| {
                let mut mine = private_file(&shared).unwrap();
                assert_eq!(
                    mine.as_raw_fd(),
                    fd,
                    "the same descriptor, in its own table"
                );
                // The other file is not in this thread's table any more.
                // SAFETY: fcntl(F_GETFD) only asks whether the descriptor is open.
                let other_open = unsafe { libc::fcntl(other_fd, libc::F_GETFD) } != -1;
                mine.seek(SeekFrom::Start(0)).unwrap();
                let mut text = String::new();
                mine.read_to_string(&mut text).unwrap();
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
        // Closing the private copy left both of this thread's handles open.
        // SAFETY: fcntl(F_GETFD) only asks whether the descriptor is open.
        assert_ne!(unsafe { libc::fcntl(fd, libc::F_GETFD) }, -1);
        // SAFETY: as above.
        assert_ne!(unsafe { libc::fcntl(other_fd, libc::F_GETFD) }, -1);
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
