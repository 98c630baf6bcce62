//! fio's `e4defrag` engine: each write moves its range of the file onto blocks of a
//! donor file (ext4's EXT4_IOC_MOVE_EXT, as `e4defrag` does), the data kept and the
//! file's old blocks handed to the donor. The donor's blocks are fallocated once for the
//! whole region, or per write with `inplace` (and the donor truncated after each).

use std::fs::File;
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};

use crate::io::sync::Call;
use crate::spec::Job;

/// The ioctl's argument (linux/ext4.h, `struct move_extent`).
#[repr(C)]
#[derive(Debug, Default)]
pub struct MoveExtent {
    pub reserved: u32,
    pub donor_fd: u32,
    /// In file system blocks.
    pub orig_start: u64,
    pub donor_start: u64,
    pub len: u64,
    pub moved_len: u64,
}

/// `_IOWR('f', 15, struct move_extent)`.
pub const EXT4_IOC_MOVE_EXT: libc::c_ulong = (3 << 30)
    | ((std::mem::size_of::<MoveExtent>() as libc::c_ulong) << 16)
    | ((b'f' as libc::c_ulong) << 8)
    | 15;

/// One thread's donor file, open for writing.
pub struct Donor {
    file: File,
    /// The file system's block size (st_blksize): the ioctl counts in it.
    block: u64,
    inplace: bool,
}

/// Where the donor lives: beside the job's file, in `directory` or the file's own.
fn donor_path(job: &Job, thread: u32) -> Option<PathBuf> {
    let name = job.pattern.donorname.as_deref()?;
    match &job.directory {
        Some(d) => Some(Path::new(d).join(name)),
        None => {
            let file = job.path_for(thread)?;
            Some(file.parent().unwrap_or(Path::new(".")).join(name))
        }
    }
}

impl Donor {
    /// Opens (creating) the donor and, unless `inplace`, fallocates the thread's whole
    /// region in it, as fio's engine does at its start.
    pub fn open(job: &Job, thread: u32) -> Result<Self, String> {
        let path = donor_path(job, thread).ok_or("e4defrag has no donor file")?;
        let file = match &job.beneath {
            Some(dir) => {
                let b = crate::beneath::Beneath::open(dir)
                    .map_err(|e| format!("cannot open {}: {e}", dir.display()))?;
                let rel = b.name_of(&path).ok_or_else(|| {
                    format!(
                        "{} is not a plain name in the directory (--within)",
                        path.display()
                    )
                })?;
                b.open_file(rel, libc::O_WRONLY | libc::O_CREAT | libc::O_CLOEXEC)
            }
            None => std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path),
        }
        .map_err(|e| format!("cannot open the donor file {}: {e}", path.display()))?;
        use std::os::unix::fs::MetadataExt;
        let block = file
            .metadata()
            .map_err(|e| format!("cannot stat the donor file {}: {e}", path.display()))?
            .blksize()
            .max(512);
        let inplace = job.pattern.inplace;
        if !inplace {
            let shape = job.shape(thread);
            let (base, len) = (shape.base, shape.size);
            if let Err(e) = crate::io::fallocate(file.as_raw_fd(), 0, base, len) {
                return Err(format!(
                    "cannot fallocate the donor file {} ({len} bytes at {base}): {e}",
                    path.display()
                ));
            }
        }
        Ok(Self {
            file,
            block,
            inplace,
        })
    }

    pub fn call(&self) -> Call {
        Call::MoveExt {
            donor: self.file.as_raw_fd(),
            block: self.block,
            inplace: self.inplace,
        }
    }
}

/// Moves the `len` bytes at `offset` of `fd` onto the donor's blocks at the same place:
/// the bytes moved, or -1 with errno set (EINVAL where nothing moved: past the file's end).
pub fn move_range(
    fd: RawFd,
    donor: RawFd,
    block: u64,
    inplace: bool,
    offset: u64,
    len: u64,
) -> i64 {
    if inplace && crate::io::fallocate(donor, 0, offset, len).is_err() {
        return -1;
    }
    let start = offset / block;
    let mut me = MoveExtent {
        donor_fd: donor as u32,
        orig_start: start,
        donor_start: start,
        len: (offset + len).div_ceil(block) - start,
        ..MoveExtent::default()
    };
    // SAFETY: the ioctl reads and writes `me`, a `struct move_extent` that outlives the
    // call; both descriptors are open.
    let r = unsafe { libc::ioctl(fd, EXT4_IOC_MOVE_EXT, std::ptr::from_mut(&mut me)) };
    let errno = std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO);
    if inplace {
        // SAFETY: plain integers on a descriptor the caller keeps open.
        unsafe { libc::ftruncate(donor, 0) };
    }
    let set_errno = |e: i32| {
        // SAFETY: errno is thread-local.
        unsafe { *libc::__errno_location() = e };
        -1
    };
    if r != 0 {
        return set_errno(errno);
    }
    match (me.moved_len * block).min(len) {
        0 => set_errno(libc::EINVAL),
        moved => moved as i64,
    }
}
