//! Reading a job, a fio job file or an `include` as text, bounded: only a regular file
//! (a FIFO would block and `/dev/zero` would never end), at most `MAX_JOB_BYTES`
//! (a `/proc` file says it holds 0 bytes, so the read itself is capped too), no NUL
//! byte (no job is binary; `/proc/self/environ` is), and UTF-8.

use std::fs::File;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::fs::FileTypeExt;
use std::path::Path;

/// The largest job or job file read: fio's own examples are a few KiB.
pub const MAX_JOB_BYTES: u64 = 4 << 20;

/// Why a file is not read as text.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("is {0}, not a job file")]
    NotAFile(&'static str),
    #[error("is larger than {}, the most fslab-engine reads as a job", in_words(*.0))]
    TooLarge(u64),
    #[error("holds a NUL byte at offset {0}: not a job file")]
    Nul(usize),
    #[error("is not UTF-8 text (byte 0x{byte:02x} at offset {offset})")]
    NotUtf8 { byte: u8, offset: usize },
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

fn in_words(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes % (1 << 20) == 0 {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
}

/// What a file type is, in words, for every type but a regular file.
fn kind_of(ft: std::fs::FileType) -> Option<&'static str> {
    if ft.is_file() {
        None
    } else if ft.is_dir() {
        Some("a directory")
    } else if ft.is_fifo() {
        Some("a FIFO")
    } else if ft.is_char_device() {
        Some("a character device")
    } else if ft.is_block_device() {
        Some("a block device")
    } else if ft.is_socket() {
        Some("a socket")
    } else {
        Some("not a regular file")
    }
}

/// The text of the regular file `path`, at most `cap` bytes.
pub fn read_file(path: &Path, cap: u64) -> Result<String, ReadError> {
    // Looked at before it is opened: opening some devices does something (a watchdog
    // starts counting, a tape rewinds).
    if let Some(kind) = kind_of(std::fs::metadata(path)?.file_type()) {
        return Err(ReadError::NotAFile(kind));
    }
    let c = std::ffi::CString::new(std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str()))
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    // O_NONBLOCK: should the name have become a FIFO since, the open does not wait for
    // a writer; the fstat below then refuses it.
    // SAFETY: `c` is a NUL-terminated path that lives through the call.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error().into());
    }
    // SAFETY: `fd` was just returned by open and is owned by nobody else.
    let file = unsafe { File::from_raw_fd(fd) };
    let meta = file.metadata()?;
    if let Some(kind) = kind_of(meta.file_type()) {
        return Err(ReadError::NotAFile(kind));
    }
    if meta.len() > cap {
        return Err(ReadError::TooLarge(cap));
    }
    // SAFETY: F_GETFL/F_SETFL on a descriptor this function owns.
    unsafe {
        let flags = libc::fcntl(file.as_raw_fd(), libc::F_GETFL);
        if flags >= 0 {
            libc::fcntl(file.as_raw_fd(), libc::F_SETFL, flags & !libc::O_NONBLOCK);
        }
    }
    read_capped(file, cap)
}

/// The text `from` gives (standard input), at most `cap` bytes.
pub fn read_capped(from: impl Read, cap: u64) -> Result<String, ReadError> {
    let mut bytes = Vec::new();
    // One byte past the cap tells a file of exactly `cap` bytes from a larger one.
    from.take(cap + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(ReadError::TooLarge(cap));
    }
    text(bytes)
}

/// `bytes` as text: no NUL, UTF-8.
pub fn text(bytes: Vec<u8>) -> Result<String, ReadError> {
    if let Some(at) = bytes.iter().position(|&b| b == 0) {
        return Err(ReadError::Nul(at));
    }
    String::from_utf8(bytes).map_err(|e| {
        let offset = e.utf8_error().valid_up_to();
        ReadError::NotUtf8 {
            byte: e.as_bytes()[offset],
            offset,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_fifos_and_directories_are_refused_without_reading() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let said = |p: &Path| read_file(p, MAX_JOB_BYTES).unwrap_err().to_string();
        assert_eq!(said(&fifo), "is a FIFO, not a job file");
        assert_eq!(
            said(Path::new("/dev/zero")),
            "is a character device, not a job file"
        );
        assert_eq!(said(dir.path()), "is a directory, not a job file");
    }

    #[test]
    fn size_nul_and_utf8_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("j");
        std::fs::write(&p, vec![b'#'; 101]).unwrap();
        assert!(matches!(read_file(&p, 100), Err(ReadError::TooLarge(100))));
        assert_eq!(read_file(&p, 101).unwrap().len(), 101);
        std::fs::write(&p, b"[j]\nrw=read\0x").unwrap();
        assert!(matches!(read_file(&p, 100), Err(ReadError::Nul(11))));
        std::fs::write(&p, b"[j]\n\xe2").unwrap();
        assert_eq!(
            read_file(&p, 100).unwrap_err().to_string(),
            "is not UTF-8 text (byte 0xe2 at offset 4)"
        );
        // A file that says it is empty but is not (as /proc's do) is capped by the read.
        assert!(matches!(
            read_capped(std::io::repeat(b'x'), 10),
            Err(ReadError::TooLarge(10))
        ));
    }
}
