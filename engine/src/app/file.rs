//! The model's data and log files: positioned reads and writes that carry RWF_DONTCACHE
//! when the job is `uncached`, so that buffered I/O (all that fscrypt on a loop device
//! or a FUSE file system can do) still reaches the device and leaves no pages behind.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::FileExt;

pub struct ModelFile {
    file: File,
    /// preadv2/pwritev2's flags; 0: plain pread/pwrite.
    rw_flags: libc::c_int,
}

impl ModelFile {
    pub fn new(file: File, uncached: bool) -> Self {
        let rw_flags = if uncached { libc::RWF_DONTCACHE } else { 0 };
        if uncached {
            // Readahead's pages are not the read's: measured on Linux 6.18, a 16 MiB
            // file read at random 32 KiB pages with RWF_DONTCACHE for 0.5 s ended with
            // 83% of it cached. Without readahead none stays.
            // SAFETY: a hint on a descriptor we own; no memory is passed.
            unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_RANDOM) };
        }
        Self { file, rw_flags }
    }

    pub fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        if self.rw_flags == 0 {
            return self.file.read_exact_at(buf, offset);
        }
        self.all_at(buf.as_mut_ptr(), buf.len(), offset, true)
    }

    pub fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        if self.rw_flags == 0 {
            return self.file.write_all_at(buf, offset);
        }
        // The kernel only reads the buffer of a write.
        self.all_at(buf.as_ptr().cast_mut(), buf.len(), offset, false)
    }

    /// Moves all `len` bytes at `buf`, retrying short transfers and interruptions.
    fn all_at(&self, buf: *mut u8, len: usize, offset: u64, read: bool) -> io::Result<()> {
        let mut done = 0;
        while done < len {
            // SAFETY: `done < len`, so the pointer stays within the caller's buffer.
            let at = unsafe { buf.add(done) };
            match self.transfer(at, len - done, offset + done as u64, read) {
                Ok(0) if read => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// fdatasync; uncached, then drops the file's clean pages. RWF_DONTCACHE writes were
    /// measured to stay cached on ext4 (Linux 6.18) after their writeback: without this
    /// the model's later reads would find them in memory.
    pub fn sync_data(&self) -> io::Result<()> {
        self.file.sync_data()?;
        if self.rw_flags != 0 {
            // SAFETY: a hint on a descriptor we own; no memory is passed.
            unsafe { libc::posix_fadvise(self.file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        }
        Ok(())
    }

    fn transfer(&self, buf: *mut u8, len: usize, offset: u64, read: bool) -> io::Result<usize> {
        let iov = libc::iovec {
            iov_base: buf.cast(),
            iov_len: len,
        };
        let fd = self.file.as_raw_fd();
        let off = offset as libc::off_t;
        // SAFETY: one iovec over a live buffer of `len` bytes the caller lends for the call.
        let n = unsafe {
            if read {
                libc::preadv2(fd, &iov, 1, off, self.rw_flags)
            } else {
                libc::pwritev2(fd, &iov, 1, off, self.rw_flags)
            }
        };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }
}

impl AsRawFd for ModelFile {
    fn as_raw_fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uncached_reads_and_writes_move_every_byte() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        let f = ModelFile::new(file, true);
        let data: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
        match f.write_all_at(&data, 4096) {
            // Kernels before 6.14, and file systems without it, refuse the flag.
            Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => return,
            r => r.unwrap(),
        }
        let mut back = vec![0u8; data.len()];
        f.read_exact_at(&mut back, 4096).unwrap();
        assert_eq!(back, data);
        let mut past = [0u8; 8];
        let end = f.read_exact_at(&mut past, 4096 + data.len() as u64);
        assert_eq!(end.unwrap_err().kind(), io::ErrorKind::UnexpectedEof);
    }
}
