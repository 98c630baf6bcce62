//! Laying a file out before timing: written once up to its size with incompressible
//! content and fsynced, so reads hit real blocks instead of holes (as fio does). Block
//! jobs lay out their target; application models their data and log files.

use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use rand_xoshiro::rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::error::RunError;

/// Writes a file up to `size` with incompressible content, so reads hit real blocks.
/// Returns the bytes written (0 when the file was already large enough).
pub fn lay_out(path: &Path, size: u64, seed: u64, stop: &AtomicBool) -> Result<u64, RunError> {
    let mut f = OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(path)
        .map_err(|e| RunError::io(format!("cannot lay out {}", path.display()), e))?;
    lay_out_file(&mut f, path, size, seed, stop)
}

/// Bytes per layout write.
const CHUNK: usize = 4 << 20;

/// Chunks written back at once: their writeback is started as each is written and
/// waited for this many chunks later, so the device always has this much to write
/// (32 MiB) and no more is dirty.
const IN_FLIGHT: i64 = 8;

/// As `lay_out`, on a file the caller opened for reading and writing (a job confined
/// to a directory opens its files itself: beneath.rs); `path` names it in errors.
///
/// The writes are buffered, as fio's are, but their writeback starts at once
/// (sync_file_range) and the pages are dropped once written: a loop device then gets
/// many writes at a time instead of one flush at the end, and the file leaves nothing
/// in the page cache for a buffered job to read from memory instead of the device.
/// 1 GiB took 0.3-0.8 s on ext4 and xfs and 1.6-1.9 s on btrfs on loop devices here,
/// where writing it and one fsync took 1.8-4.5 s and 2.2-2.6 s (docs/performance.md).
pub fn lay_out_file(
    f: &mut File,
    path: &Path,
    size: u64,
    seed: u64,
    stop: &AtomicBool,
) -> Result<u64, RunError> {
    let ctx = |e| RunError::io(format!("cannot lay out {}", path.display()), e);
    let have = f.metadata().map_err(ctx)?.len();
    if have >= size {
        return Ok(0);
    }
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x1a70);
    let mut buf = vec![0u8; CHUNK];
    let fd = f.as_raw_fd();
    f.seek(SeekFrom::Start(have)).map_err(ctx)?;
    let mut left = size - have;
    while left > 0 {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let n = left.min(CHUNK as u64) as usize;
        rng.fill_bytes(&mut buf[..n]);
        f.write_all(&buf[..n]).map_err(ctx)?;
        let at = (size - left) as i64;
        left -= n as u64;
        // Hints: where a file system ignores them the fsync below does the work.
        // SAFETY: plain system calls on a descriptor we own; no memory is passed.
        unsafe {
            libc::sync_file_range(fd, at, n as i64, libc::SYNC_FILE_RANGE_WRITE);
            let done = at - IN_FLIGHT * CHUNK as i64;
            if done >= have as i64 {
                let all = libc::SYNC_FILE_RANGE_WAIT_BEFORE
                    | libc::SYNC_FILE_RANGE_WRITE
                    | libc::SYNC_FILE_RANGE_WAIT_AFTER;
                libc::sync_file_range(fd, done, CHUNK as i64, all);
                libc::posix_fadvise(fd, done, CHUNK as i64, libc::POSIX_FADV_DONTNEED);
            }
        }
    }
    f.sync_all().map_err(ctx)?;
    // SAFETY: as above; the pages are clean after the fsync, so all of them go.
    unsafe { libc::posix_fadvise(fd, have as i64, 0, libc::POSIX_FADV_DONTNEED) };
    Ok(size - have - left)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pages of `f`'s first `len` bytes in the page cache (mincore on a mapping).
    fn resident(f: &File, len: usize) -> usize {
        let page = 4096;
        // SAFETY: a shared read-only mapping of a file we hold open, unmapped below;
        // mincore writes one byte per page into a vector of that many.
        unsafe {
            let map = libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                f.as_raw_fd(),
                0,
            );
            assert_ne!(map, libc::MAP_FAILED);
            let mut vec = vec![0u8; len.div_ceil(page)];
            assert_eq!(libc::mincore(map, len, vec.as_mut_ptr()), 0);
            libc::munmap(map, len);
            vec.iter().filter(|&&b| b & 1 == 1).count()
        }
    }

    #[test]
    fn a_laid_out_file_is_written_whole_and_leaves_nothing_cached() {
        let dir = tempfile::tempdir_in(std::env::temp_dir()).unwrap();
        let path = dir.path().join("f");
        let size = 5 * CHUNK as u64 * 2 + 12_345; // more than in flight, an unaligned end
        let stop = AtomicBool::new(false);
        assert_eq!(lay_out(&path, size, 7, &stop).unwrap(), size);
        let f = File::open(&path).unwrap();
        assert_eq!(f.metadata().unwrap().len(), size);
        // On tmpfs the pages are the file: nothing to drop there.
        let on_tmpfs = {
            let c = std::ffi::CString::new(dir.path().as_os_str().as_encoded_bytes()).unwrap();
            // SAFETY: statfs into a zeroed plain-data struct we own, with a NUL-terminated
            // path.
            let st = unsafe {
                let mut st: libc::statfs = std::mem::zeroed();
                libc::statfs(c.as_ptr(), &mut st);
                st
            };
            st.f_type == libc::TMPFS_MAGIC
        };
        if !on_tmpfs {
            // A buffered layout would leave all 10,243 pages here.
            assert!(
                resident(&f, size as usize) < 64,
                "the layout's pages stayed cached"
            );
        }
        // The content is random: no two of its 4 MiB chunks alike, and not zero.
        let data = std::fs::read(&path).unwrap();
        assert_ne!(data[..CHUNK], data[CHUNK..2 * CHUNK]);
        assert!(data[size as usize - 100..].iter().any(|&b| b != 0));
        // Already large enough: nothing written.
        assert_eq!(lay_out(&path, size, 7, &stop).unwrap(), 0);
    }
}
