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

use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd};

/// The worker's own handle on `f`: in a table of this thread's own that holds only
/// stdin, stdout, stderr and this file, or (where the kernel refuses to unshare) a
/// duplicate in the shared table. The caller keeps `f`, and closes it in the shared
/// table once the thread is done; the returned handle closes the private copy.
///
/// Call it before the thread opens anything else (an io_uring ring then lands in the
/// private table too), and only on a thread the caller spawned for this: every
/// descriptor the thread uses afterwards is one of its own table.
pub fn private_file(f: &File) -> std::io::Result<File> {
    // SAFETY: unshare(CLONE_FILES) copies the table for this thread alone; other
    // threads keep the one they share.
    if unsafe { libc::unshare(libc::CLONE_FILES) } != 0 {
        return f.try_clone();
    }
    let fd = f.as_raw_fd();
    // The copy holds every descriptor the process had, the other workers' files among
    // them: close them here, so that none stays open until this thread has exited
    // (after it has been joined), which would keep a block device claimed a moment
    // longer than the job that opened it. A kernel without close_range (before 5.9)
    // leaves them to the thread's exit.
    close_range(3, fd - 1);
    close_range(fd + 1, libc::c_int::MAX);
    // SAFETY: `fd` is open in this thread's own table (copied just above) and nothing in
    // that table owns it but the handle made here.
    Ok(unsafe { File::from_raw_fd(fd) })
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
}
