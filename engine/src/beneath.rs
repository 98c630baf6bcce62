//! A job confined to a directory (`--within DIR`): each of its files is opened relative
//! to DIR with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`, so no name can lead
//! outside DIR, and no symbolic link is followed, not even one planted in DIR itself
//! (`DIR/victim.dat -> /etc/shadow`). A file with more than one hard link is refused
//! too: its other name may be anywhere. DIR itself is the caller's choice and may be a
//! link.

use std::fs::{File, Metadata};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

/// An open directory that a job's files stay beneath.
#[derive(Debug)]
pub struct Beneath {
    dir: OwnedFd,
    path: PathBuf,
}

const LINK: &str = "is a symbolic link, and --within never follows links";

/// Why a name beneath the directory cannot be used, in words for the job's error.
pub fn refusal(meta: &Metadata) -> Option<String> {
    let ft = meta.file_type();
    if ft.is_symlink() {
        Some(LINK.into())
    } else if ft.is_file() && meta.nlink() > 1 {
        Some(format!(
            "has {} hard links, and --within writes only files with one (another name may be outside the directory)",
            meta.nlink()
        ))
    } else if !ft.is_file() && !ft.is_dir() {
        Some("is not a regular file, and --within uses only regular files".into())
    } else {
        None
    }
}

fn cstring(p: &Path) -> io::Result<std::ffi::CString> {
    std::ffi::CString::new(p.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in the name"))
}

impl Beneath {
    /// Opens `path` as the directory to stay beneath.
    pub fn open(path: &Path) -> io::Result<Self> {
        let c = cstring(path)?;
        // SAFETY: `c` is NUL-terminated and lives through the call.
        let fd = unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Self {
            // SAFETY: `fd` was just returned by open and is owned by nobody else.
            dir: unsafe { OwnedFd::from_raw_fd(fd) },
            path: path.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `path` (the directory joined with a name) relative to the directory: one plain
    /// name, or `None`.
    pub fn name_of<'a>(&self, path: &'a Path) -> Option<&'a Path> {
        let rel = path.strip_prefix(&self.path).ok()?;
        let mut parts = rel.components();
        match (parts.next(), parts.next()) {
            (Some(Component::Normal(_)), None) => Some(rel),
            _ => None,
        }
    }

    /// `openat2(dir, rel, flags, mode)` never leaving the directory nor following a link.
    fn openat(&self, rel: &Path, flags: libc::c_int, mode: u32) -> io::Result<OwnedFd> {
        let c = cstring(rel)?;
        // SAFETY: an all-zero open_how is valid (no flags, no resolve restrictions).
        let mut how: libc::open_how = unsafe { std::mem::zeroed() };
        how.flags = (flags | libc::O_CLOEXEC | libc::O_NOFOLLOW) as u64;
        how.mode = if flags & libc::O_CREAT != 0 {
            u64::from(mode)
        } else {
            0
        };
        how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS;
        // SAFETY: `c` and `how` live through the call; the size is `how`'s own.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                self.dir.as_raw_fd(),
                c.as_ptr(),
                &how as *const libc::open_how,
                std::mem::size_of::<libc::open_how>(),
            )
        };
        if fd >= 0 {
            // SAFETY: `fd` was just returned by openat2 and is owned by nobody else.
            return Ok(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) });
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::ELOOP) => return Err(io::Error::other(LINK)),
            Some(libc::EXDEV) => {
                return Err(io::Error::other("leads outside the directory (--within)"))
            }
            Some(libc::ENOSYS | libc::EPERM) => {}
            _ => return Err(e),
        }
        // A kernel before 5.6 (or a sandbox that hides openat2): O_NOFOLLOW on a single
        // name relative to the directory is as safe, and `name_of` gave only those.
        let mut parts = rel.components();
        if !matches!(
            (parts.next(), parts.next()),
            (Some(Component::Normal(_)), None)
        ) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a plain name in the directory",
            ));
        }
        // SAFETY: `c` is NUL-terminated and lives through the call.
        let fd = unsafe {
            libc::openat(
                self.dir.as_raw_fd(),
                c.as_ptr(),
                flags | libc::O_CLOEXEC | libc::O_NOFOLLOW,
                mode as libc::c_uint,
            )
        };
        if fd < 0 {
            let e = io::Error::last_os_error();
            return Err(if e.raw_os_error() == Some(libc::ELOOP) {
                io::Error::other(LINK)
            } else {
                e
            });
        }
        // SAFETY: `fd` was just returned by openat and is owned by nobody else.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// What `rel` is, the link itself when it is one (never what it points to).
    pub fn metadata(&self, rel: &Path) -> io::Result<Metadata> {
        // With O_PATH | O_NOFOLLOW a link as the last name is opened as itself.
        File::from(self.openat(rel, libc::O_PATH, 0)?).metadata()
    }

    /// `unlinkat(dir, rel)`: the name goes, never what a link points to.
    pub fn unlink(&self, rel: &Path) -> io::Result<()> {
        let c = cstring(rel)?;
        // SAFETY: `c` is NUL-terminated and lives through the call.
        let rc = unsafe { libc::unlinkat(self.dir.as_raw_fd(), c.as_ptr(), 0) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// `renameat(dir, from, dir, to)`: both names in the directory, neither followed.
    pub fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let (a, b) = (cstring(from)?, cstring(to)?);
        let d = self.dir.as_raw_fd();
        // SAFETY: `a` and `b` are NUL-terminated and live through the call.
        let rc = unsafe { libc::renameat(d, a.as_ptr(), d, b.as_ptr()) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Opens the regular file `rel` with `flags` (`O_RDWR`, `O_CREAT`, `O_DIRECT`...).
    /// Anything but a regular file with one link is refused after the open, which does
    /// not wait on a FIFO (O_NONBLOCK, cleared once it is known to be a file).
    pub fn open_file(&self, rel: &Path, flags: libc::c_int) -> io::Result<File> {
        let file = File::from(self.openat(rel, flags | libc::O_NONBLOCK, 0o666)?);
        let meta = file.metadata()?;
        if let Some(why) = refusal(&meta).or_else(|| {
            meta.is_dir()
                .then(|| "is a directory, not a regular file".to_string())
        }) {
            return Err(io::Error::other(why));
        }
        // SAFETY: F_GETFL/F_SETFL on a descriptor this function owns.
        let rc = unsafe {
            let fl = libc::fcntl(file.as_raw_fd(), libc::F_GETFL);
            if fl < 0 {
                fl
            } else {
                libc::fcntl(file.as_raw_fd(), libc::F_SETFL, fl & !libc::O_NONBLOCK)
            }
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_and_escapes_are_refused_and_files_beneath_open() {
        let outer = tempfile::tempdir().unwrap();
        let dir = outer.path().join("w");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(outer.path().join("victim"), b"precious").unwrap();
        std::os::unix::fs::symlink("../victim", dir.join("link")).unwrap();
        std::os::unix::fs::symlink("../nowhere", dir.join("dangling")).unwrap();
        std::fs::hard_link(outer.path().join("victim"), dir.join("hard")).unwrap();
        let b = Beneath::open(&dir).unwrap();
        let rw = libc::O_RDWR | libc::O_CREAT;

        assert!(b
            .metadata(Path::new("link"))
            .unwrap()
            .file_type()
            .is_symlink());
        for name in ["link", "dangling", "../victim", "hard"] {
            assert!(b.open_file(Path::new(name), rw).is_err(), "{name}");
        }
        let e = b.open_file(Path::new("link"), rw).unwrap_err().to_string();
        assert_eq!(e, LINK);
        assert!(
            !outer.path().join("nowhere").exists(),
            "no file made through a link"
        );
        assert_eq!(
            std::fs::read(outer.path().join("victim")).unwrap(),
            b"precious"
        );

        let f = b.open_file(Path::new("j.0.0"), rw).unwrap();
        assert!(f.metadata().unwrap().is_file());
        assert_eq!(b.name_of(&dir.join("j.0.0")), Some(Path::new("j.0.0")));
        assert_eq!(b.name_of(&dir.join("../x")), None);
        assert_eq!(b.name_of(Path::new("/elsewhere/x")), None);
    }
}
