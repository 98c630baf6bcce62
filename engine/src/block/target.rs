//! The file or block device a block job does I/O on: checks, layout, opening.

use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use crate::beneath::{self, Beneath};
use crate::clock::Instant;
use crate::error::{JobError, RunError};
use crate::layout::lay_out_file;
use crate::report::{Layout, TargetInfo, TargetKind};
use crate::spec::{IoEngine, Job};

/// The opened target: one file handle per thread.
pub struct Target {
    pub info: TargetInfo,
    pub layout: Option<Layout>,
    pub files: Vec<Option<File>>,
}

fn key_of_path(job: &Job) -> &'static str {
    if job.filename.is_some() {
        "filename"
    } else {
        "directory"
    }
}

/// O_DIRECT alignment of an open file from statx(STATX_DIOALIGN), if the kernel says.
fn dio_align(file: &File) -> Option<u64> {
    use std::os::fd::AsRawFd;
    const STATX_DIOALIGN: u32 = 0x2000;
    // SAFETY: statx writes into the zeroed struct we own; the path is a valid C string.
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: fd is open for the duration of the call; AT_EMPTY_PATH with "" stats the fd.
    let rc = unsafe {
        libc::statx(
            file.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            STATX_DIOALIGN,
            &mut stx,
        )
    };
    if rc != 0 || stx.stx_mask & STATX_DIOALIGN == 0 {
        return None;
    }
    Some(u64::from(stx.stx_dio_offset_align))
}

/// The sizes of atomic writes a file (or device) offers, smallest and largest
/// (statx STATX_WRITE_ATOMIC); None where it offers none.
fn atomic_units(file: &File) -> Option<(u64, u64)> {
    use std::os::fd::AsRawFd;
    // SAFETY: statx writes into the zeroed struct we own; the path is a valid C string.
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: fd is open for the duration of the call; AT_EMPTY_PATH with "" stats the fd.
    let rc = unsafe {
        libc::statx(
            file.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            libc::STATX_WRITE_ATOMIC,
            &mut stx,
        )
    };
    if rc != 0 || stx.stx_mask & libc::STATX_WRITE_ATOMIC == 0 || stx.stx_atomic_write_unit_max == 0
    {
        return None;
    }
    Some((
        u64::from(stx.stx_atomic_write_unit_min),
        u64::from(stx.stx_atomic_write_unit_max),
    ))
}

/// `atomic`: every write size of the job within what the target offers. Asked before
/// any file is laid out, so a refused job leaves nothing behind: of the file or device
/// itself, or (for a file not there yet) of an unnamed file in its directory, which is
/// gone when closed.
fn check_atomic(job: &Job, path: &Path) -> Result<(), RunError> {
    let probe = if path.exists() {
        File::open(path)
    } else {
        let dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_TMPFILE)
            .open(dir)
    };
    let f = probe.map_err(|e| {
        RunError::io(
            format!("cannot ask {} for its atomic write sizes", path.display()),
            e,
        )
    })?;
    let Some((min, max)) = atomic_units(&f) else {
        return Err(JobError::new(
            "atomic",
            format!(
                "`{}` offers no atomic writes (statx STATX_WRITE_ATOMIC)",
                path.display()
            ),
        )
        .hint("xfs offers them in software since Linux 6.16; ext4 needs a device that has them")
        .into());
    };
    let [_, w] = job.sizes();
    if let Some(odd) = w
        .all()
        .iter()
        .copied()
        .find(|s| *s < min || *s > max || !s.is_power_of_two())
    {
        return Err(JobError::new(
            "atomic",
            format!(
                "a write of {odd} bytes cannot be atomic on `{}`: it offers atomic writes of {min} to {max} bytes, powers of two",
                path.display()
            ),
        )
        .hint(format!("use write sizes from {min} to {max}"))
        .into());
    }
    Ok(())
}

/// `write_hint`: the data lifetime the kernel is told for the file (fcntl F_SET_RW_HINT).
fn set_write_hint(f: &File, hint: crate::spec::WriteHint, path: &Path) -> Result<(), RunError> {
    use std::os::fd::AsRawFd;
    const F_SET_RW_HINT: libc::c_int = 1024 + 12;
    let value: u64 = hint.value();
    // SAFETY: the kernel reads one u64 from `value`, which outlives the call.
    let rc = unsafe { libc::fcntl(f.as_raw_fd(), F_SET_RW_HINT, &value as *const u64) };
    if rc != 0 {
        return Err(RunError::io(
            format!(
                "cannot set the write hint (`write_hint`) of {}",
                path.display()
            ),
            std::io::Error::last_os_error(),
        ));
    }
    Ok(())
}

/// Checks the job against its target, lays files out, and opens one handle per thread.
/// Fills in `job.size` when the job left it to the target.
pub fn open(job: &mut Job, stop: &AtomicBool) -> Result<Target, RunError> {
    if job.ioengine == IoEngine::Null {
        return Ok(Target {
            info: TargetInfo {
                kind: TargetKind::Nothing,
                paths: vec![],
                size_bytes: job.size.unwrap_or(0),
                dio_align_bytes: None,
            },
            layout: None,
            files: (0..job.numjobs).map(|_| None).collect(),
        });
    }
    if let Some(log) = job.pattern.read_iolog.clone() {
        return open_replay(job, Path::new(&log), stop);
    }
    // Thread by thread, each thread's files in order (`nrfiles`).
    let paths: Vec<PathBuf> = (0..job.numjobs).flat_map(|t| job.paths_of(t)).collect();
    let mut unique: Vec<&PathBuf> = paths.iter().collect();
    unique.dedup();
    let key = key_of_path(job);
    let opener = Opener::of(job)?;

    // Look before touching anything: every problem with the target is reported together.
    let mut errors = Vec::new();
    let mut kind = TargetKind::File;
    let mut device_size = None;
    for path in &unique {
        let looked = opener.metadata(path);
        let refused = match (&opener, &looked) {
            (Opener::Beneath(_), Ok(m)) => beneath::refusal(m),
            _ => None,
        };
        if let Some(why) = refused {
            errors.push(
                JobError::new(key, format!("`{}` {why}", path.display()))
                    .hint("remove it (the job lays the file out afresh), or run the job file without --within if you trust where it leads"),
            );
            continue;
        }
        match looked {
            Ok(m) if m.file_type().is_block_device() => {
                kind = TargetKind::Block;
                if job.ioengine.moves_no_data() {
                    let engine = serde_json::to_value(job.ioengine).unwrap_or_default();
                    errors.push(
                        JobError::new(
                            "ioengine",
                            format!(
                                "{engine} works on files, and `{}` is a block device",
                                path.display()
                            ),
                        )
                        .hint("give a file (`filename` on a file system, or `directory`)"),
                    );
                    continue;
                }
                if job.writes() && !job.allow_device_write {
                    errors.push(
                        JobError::new("allow_device_write", format!("is false, and `{}` is a block device this job writes to", path.display()))
                            .hint("writing destroys what is on the device; set `allow_device_write = true` only for a device you mean to overwrite (fslab's lab checks it first)"),
                    );
                }
                let mut f = File::open(path)
                    .map_err(|e| RunError::io(format!("cannot open {}", path.display()), e))?;
                let len = f
                    .seek(SeekFrom::End(0))
                    .map_err(|e| RunError::io(format!("cannot size {}", path.display()), e))?;
                device_size = Some(len);
                if let Some(s) = job.size.map(|s| job.extent(s)) {
                    if s > len {
                        errors.push(JobError::new(
                            "size",
                            format!(
                                "{s} is larger than the device `{}` ({len} bytes)",
                                path.display()
                            ),
                        ));
                    }
                }
            }
            Ok(m) if m.is_dir() => errors.push(
                JobError::new(key, format!("`{}` is a directory", path.display()))
                    .hint("use `directory` for a directory, `filename` for a file or device"),
            ),
            Ok(m) if m.is_file() && job.pattern.fill_device => {
                let room = m.len() + free_beside(path)?;
                device_size = Some(device_size.map_or(room, |d: u64| d.min(room)));
            }
            Ok(m) if m.is_file() => {
                if job.size.is_none() || job.pattern.offset_percent.is_some() {
                    if m.len() < job.bs {
                        errors.push(
                            JobError::new(
                                "size",
                                format!(
                                    "not given, and `{}` is only {} bytes",
                                    path.display(),
                                    m.len()
                                ),
                            )
                            .hint("give `size` so the file can be laid out"),
                        );
                    }
                    device_size = Some(device_size.map_or(m.len(), |d: u64| d.min(m.len())));
                }
            }
            Ok(_) => errors.push(JobError::new(
                key,
                format!("`{}` is neither a file nor a block device", path.display()),
            )),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let parent = path
                    .parent()
                    .filter(|p| !p.as_os_str().is_empty())
                    .unwrap_or(Path::new("."));
                if parent.is_dir() && job.pattern.fill_device {
                    let free = free_beside(path)?;
                    device_size = Some(device_size.map_or(free, |d: u64| d.min(free)));
                } else if !parent.is_dir() {
                    errors.push(
                        JobError::new(
                            key,
                            format!("the directory `{}` does not exist", parent.display()),
                        )
                        .hint("create it first, or point the job at a directory that exists"),
                    );
                } else if job.size_percent.is_some() || job.pattern.offset_percent.is_some() {
                    errors.push(
                        JobError::new(
                            if job.size_percent.is_some() {
                                "size"
                            } else {
                                "offset"
                            },
                            format!(
                                "is in percent of the target, and `{}` does not exist yet",
                                path.display()
                            ),
                        )
                        .hint("give it in bytes, or name a file that exists or a device"),
                    );
                } else if job.size.is_none() {
                    errors.push(
                        JobError::new(
                            "size",
                            format!("is required: `{}` does not exist yet", path.display()),
                        )
                        .hint(
                            "add `size = \"1g\"` (or any size) so the engine can create the file",
                        ),
                    );
                }
            }
            Err(e) => {
                return Err(RunError::io(
                    format!("cannot look at {}", path.display()),
                    e,
                ))
            }
        }
    }
    if !errors.is_empty() {
        return Err(crate::error::JobErrors(errors).into());
    }
    if job.pattern.fill_device {
        // Filling: up to `size` when given, at most what the file system has free.
        if let (Some(s), Some(d)) = (job.size, device_size) {
            job.size = Some(s.min(d.saturating_sub(job.extent(0))));
        }
    }
    if let (Some(whole), true) = (
        device_size,
        job.size_percent.is_some() || job.pattern.offset_percent.is_some(),
    ) {
        // Shares of the target, aligned down to the offsets' alignment as fio's.
        let align = job
            .pattern
            .blockalign
            .unwrap_or_else(|| job.min_bs())
            .max(1);
        let share = |p: f64| ((whole as f64 * p / 100.0) as u64) / align * align;
        if let Some(p) = job.pattern.offset_percent {
            job.pattern.offset = Some(share(p)).filter(|&o| o > 0);
        }
        if let Some(p) = job.size_percent {
            job.size = Some(share(p).min(whole.saturating_sub(job.extent(0))));
        }
    }
    if job.size.is_none() {
        // A device (or an existing file) gives the size left after the regions' offsets.
        job.size = device_size.map(|d| d.saturating_sub(job.extent(0)));
        if job.size.is_some_and(|s| s < job.max_bs()) {
            return Err(JobError::new(
                "offset",
                format!(
                    "leaves less than one I/O ({} bytes) of the target",
                    job.max_bs()
                ),
            )
            .into());
        }
    }
    let size = job.size.unwrap_or(0);
    let extent = job.extent(size);
    if job.runtime.is_none() && job.io_size.is_none() {
        job.io_size = Some(size.saturating_mul(u64::from(job.files_per_thread())));
    }

    if job.pattern.atomic {
        for path in &unique {
            check_atomic(job, path)?;
        }
    }
    let mut layout_bytes = 0;
    let layout_start = Instant::now();
    if kind == TargetKind::File {
        for path in &unique {
            let mut f = opener
                .open(path, libc::O_RDWR | libc::O_CREAT)
                .map_err(|e| RunError::io(format!("cannot lay out {}", path.display()), e))?;
            // A filling job writes the file itself, to the end of the space.
            if !job.pattern.fill_device {
                layout_bytes += lay_out_file(&mut f, path, extent, job.randseed, stop)?;
            }
        }
    }
    let layout = (layout_bytes > 0).then(|| Layout {
        bytes: layout_bytes,
        runtime_s: layout_start.elapsed().as_secs_f64(),
    });

    let mut files = Vec::with_capacity(paths.len());
    let mut dio = None;
    for path in &paths {
        let f = open_one(&opener, path, job, kind == TargetKind::Block)?;
        if let Some(hint) = job.pattern.write_hint {
            set_write_hint(&f, hint, path)?;
        }
        if job.direct {
            let align = dio_align(&f);
            if align == Some(0) {
                return Err(JobError::new("direct", format!("`{}` does not support O_DIRECT", path.display()))
                    .hint("set `direct = false`, or put the file on a file system that supports direct I/O")
                    .into());
            }
            if let Some(a) = align {
                let [r, w] = job.sizes();
                let odd = r.all().iter().chain(w.all()).copied().find(|s| s % a != 0);
                let odd = odd.or(job.pattern.blockalign.filter(|b| b % a != 0));
                let skip = job.pattern.seq_skip.map(i64::unsigned_abs);
                let moved = [
                    ("offset", job.pattern.offset),
                    ("offset_increment", job.pattern.offset_increment),
                    ("seq_skip", skip),
                ]
                .into_iter()
                .find_map(|(k, v)| v.filter(|v| v % a != 0).map(|v| (k, v)));
                if let (None, Some((key, v))) = (odd, moved) {
                    return Err(JobError::new(
                        key,
                        format!(
                            "{v} is not a multiple of {a}, the O_DIRECT alignment of `{}`",
                            path.display()
                        ),
                    )
                    .hint(format!("use a multiple of {a}"))
                    .into());
                }
                if let Some(odd) = odd {
                    return Err(JobError::new(
                        match (&job.pattern.bssplit, &job.pattern.bsrange) {
                            (Some(_), _) if odd != job.pattern.blockalign.unwrap_or(0) => "bssplit",
                            (_, Some(_)) if odd != job.pattern.blockalign.unwrap_or(0) => "bsrange",
                            _ if odd == job.bs => "bs",
                            _ => "blockalign",
                        },
                        format!(
                            "{odd} is not a multiple of {a}, the O_DIRECT alignment of `{}`",
                            path.display()
                        ),
                    )
                    .hint(format!("use a multiple of {a}"))
                    .into());
                }
            }
            dio = align;
        }
        files.push(Some(f));
    }
    if job.pattern.invalidate {
        for f in files.iter().flatten() {
            invalidate(f, kind == TargetKind::Block);
        }
    }
    if job.pattern.fadvise_hint && !job.direct {
        let advice = if job.rw.is_random() {
            libc::POSIX_FADV_RANDOM
        } else {
            libc::POSIX_FADV_SEQUENTIAL
        };
        for f in files.iter().flatten() {
            use std::os::fd::AsRawFd;
            // SAFETY: advice on an open descriptor; nothing of ours is read or written.
            unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, advice) };
        }
    }
    Ok(Target {
        info: TargetInfo {
            kind,
            paths: unique.iter().map(|p| p.display().to_string()).collect(),
            size_bytes: size,
            dio_align_bytes: dio,
        },
        layout,
        files,
    })
}

/// Bytes an unprivileged writer may still use in the file system that holds (or will
/// hold) the file `path`.
fn free_beside(path: &Path) -> Result<u64, RunError> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let io = |e| {
        RunError::io(
            format!("cannot tell the space free in {}", dir.display()),
            e,
        )
    };
    let c = std::ffi::CString::new(std::os::unix::ffi::OsStrExt::as_bytes(dir.as_os_str()))
        .map_err(|e| io(std::io::Error::other(e)))?;
    // SAFETY: a zeroed statvfs, filled in by the kernel; `c` is NUL-terminated.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(io(std::io::Error::last_os_error()));
    }
    Ok(st.f_bavail * st.f_frsize)
}

/// Drops the target's cached pages (`invalidate`); dirty pages stay until written back.
pub fn invalidate(f: &File, device: bool) {
    use std::os::fd::AsRawFd;
    // BLKFLSBUF, linux/fs.h: _IO(0x12, 97).
    const BLKFLSBUF: libc::c_ulong = 0x1261;
    // SAFETY: plain calls on an open descriptor; neither reads or writes our memory.
    unsafe {
        if device {
            libc::ioctl(f.as_raw_fd(), BLKFLSBUF as _, 0);
        } else {
            libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED);
        }
    }
}

/// Where a trace's file is replayed: under the job's `directory` (or the current one), by
/// its path in the trace without the leading `/`; under `--within`, which takes plain
/// names only, by that path in one name, `%` written `%25` and `/` written `%2F` (one
/// name per path, so two files never meet). None: the path leaves the directory (`..`)
/// or names nothing.
fn replay_path(dir: &Path, name: &str, within: bool) -> Option<PathBuf> {
    use std::path::Component;
    let mut rel = PathBuf::new();
    for c in Path::new(name).components() {
        match c {
            Component::Normal(part) => rel.push(part),
            Component::RootDir | Component::CurDir => {}
            Component::ParentDir | Component::Prefix(_) => return None,
        }
    }
    let rel = if within {
        let text = rel.to_str()?;
        PathBuf::from(text.replace('%', "%25").replace('/', "%2F"))
    } else {
        rel
    };
    (!rel.as_os_str().is_empty()).then(|| dir.join(rel))
}

/// A replay's path actions (unlink, rename, mkdir, rmdir, stat), done on the names its
/// files are laid out under (`replay_path`), beneath `--within` where the job has it.
pub struct PathOps {
    dir: PathBuf,
    opener: Opener,
}

impl PathOps {
    pub fn of(job: &Job) -> Result<Self, RunError> {
        Ok(Self {
            dir: PathBuf::from(job.directory.clone().unwrap_or_else(|| ".".into())),
            opener: Opener::of(job)?,
        })
    }

    /// Does `op`: Ok(false) where it was skipped because the directory is not as the
    /// recorded one was (the replay lays every file out first, so a name the program
    /// created may exist already, or one it never wrote may not), or because
    /// `--within` keeps one flat directory (mkdir, rmdir).
    pub fn apply(&self, op: &super::replay::PathOp) -> std::io::Result<bool> {
        use super::replay::PathKind;
        let within = matches!(self.opener, Opener::Beneath(_));
        let path = |name: &str| {
            replay_path(&self.dir, name, within).ok_or_else(|| {
                std::io::Error::other(format!("`{name}` leads outside the directory"))
            })
        };
        let p = path(&op.name)?;
        let done = match (&self.opener, op.kind) {
            (Opener::Beneath(_), PathKind::Mkdir | PathKind::Rmdir) => return Ok(false),
            (Opener::Beneath(b), kind) => {
                let rel = Opener::name(b, &p)?;
                match kind {
                    PathKind::Unlink => b.unlink(rel),
                    PathKind::Stat => b.metadata(rel).map(drop),
                    _ => {
                        let q = path(op.to.as_deref().unwrap_or_default())?;
                        b.rename(rel, Opener::name(b, &q)?)
                    }
                }
            }
            (Opener::Anywhere, PathKind::Unlink) => std::fs::remove_file(&p),
            (Opener::Anywhere, PathKind::Rmdir) => std::fs::remove_dir(&p),
            (Opener::Anywhere, PathKind::Mkdir) => std::fs::create_dir(&p),
            (Opener::Anywhere, PathKind::Stat) => std::fs::symlink_metadata(&p).map(drop),
            (Opener::Anywhere, PathKind::Rename) => {
                std::fs::rename(&p, path(op.to.as_deref().unwrap_or_default())?)
            }
        };
        match done {
            Ok(()) => Ok(true),
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(
                        libc::ENOENT
                            | libc::EEXIST
                            | libc::ENOTEMPTY
                            | libc::ENOTDIR
                            | libc::EISDIR
                    )
                ) =>
            {
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }
}

/// `read_iolog`: the trace's files, each laid out to as far as the trace reaches into it,
/// and opened for reading and writing. Sets the job's files (`nrfiles`) and `size` (the
/// farthest reach) from the trace.
fn open_replay(job: &mut Job, log: &Path, stop: &AtomicBool) -> Result<Target, RunError> {
    let scan = super::replay::scan(log).map_err(|m| {
        RunError::from(
            JobError::new("read_iolog", format!("`{}` {m}", log.display()))
                .hint("a trace written by fio's `write_iolog` (version 2 or 3)"),
        )
    })?;
    let dir = PathBuf::from(job.directory.clone().unwrap_or_else(|| ".".into()));
    let within = job.beneath.is_some();
    let mut paths = Vec::with_capacity(scan.files.len());
    for (name, _) in &scan.files {
        let Some(p) = replay_path(&dir, name, within) else {
            return Err(JobError::new(
                "read_iolog",
                format!(
                    "`{}`: its file `{name}` would lie outside `directory`",
                    log.display()
                ),
            )
            .into());
        };
        if paths.contains(&p) {
            return Err(JobError::new(
                "read_iolog",
                format!(
                    "`{}`: two of its files would both be `{}`",
                    log.display(),
                    p.display()
                ),
            )
            .into());
        }
        paths.push(p);
    }
    let opener = Opener::of(job)?;
    for path in &paths {
        let looked = opener.metadata(path);
        if let Ok(m) = &looked {
            if !m.is_file() {
                return Err(JobError::new(
                    "read_iolog",
                    format!(
                        "`{}` is not a regular file: a trace is replayed on files it lays out",
                        path.display()
                    ),
                )
                .into());
            }
        }
        if let (Opener::Beneath(_), Ok(m)) = (&opener, &looked) {
            if let Some(why) = beneath::refusal(m) {
                return Err(
                    JobError::new("read_iolog", format!("`{}` {why}", path.display())).into(),
                );
            }
        }
    }
    let layout_start = Instant::now();
    let mut layout_bytes = 0;
    let mut files = Vec::with_capacity(paths.len());
    let mut dio = None;
    for (path, (_, reach)) in paths.iter().zip(&scan.files) {
        if let (Opener::Anywhere, Some(parent)) = (&opener, path.parent()) {
            std::fs::create_dir_all(parent).map_err(|e| {
                RunError::io(format!("cannot make the directory {}", parent.display()), e)
            })?;
        }
        let mut f = opener
            .open(path, libc::O_RDWR | libc::O_CREAT)
            .map_err(|e| RunError::io(format!("cannot lay out {}", path.display()), e))?;
        layout_bytes += lay_out_file(&mut f, path, *reach, job.randseed, stop)?;
        drop(f);
        let flags = libc::O_RDWR
            | if job.direct { libc::O_DIRECT } else { 0 }
            | job.pattern.sync.open_flag();
        let f = opener
            .open(path, flags)
            .map_err(|e| RunError::io(format!("cannot open {}", path.display()), e))?;
        if job.direct {
            dio = dio.or(dio_align(&f));
        }
        files.push(Some(f));
    }
    // The thread's buffers are `bs` each: as long as the trace's longest I/O.
    job.bs = scan.max_len.next_multiple_of(4096).max(4096);
    let reach = scan.files.iter().map(|f| f.1).max().unwrap_or(0);
    job.size = Some(reach.div_ceil(job.bs).max(1) * job.bs);
    job.io_size = None;
    job.pattern.nrfiles = (files.len() > 1).then_some(files.len() as u32);
    if job.pattern.invalidate {
        for f in files.iter().flatten() {
            invalidate(f, false);
        }
    }
    Ok(Target {
        info: TargetInfo {
            kind: TargetKind::File,
            paths: paths.iter().map(|p| p.display().to_string()).collect(),
            size_bytes: scan.files.iter().map(|f| f.1).sum(),
            dio_align_bytes: dio,
        },
        layout: (layout_bytes > 0).then(|| Layout {
            bytes: layout_bytes,
            runtime_s: layout_start.elapsed().as_secs_f64(),
        }),
        files,
    })
}

fn open_one(opener: &Opener, path: &Path, job: &Job, block: bool) -> Result<File, RunError> {
    let mut flags = if job.writes() {
        libc::O_RDWR
    } else {
        libc::O_RDONLY
    };
    if job.writes() && block {
        // On a block device O_EXCL fails with EBUSY while anything holds it: a mount
        // (under any name), a RAID member, another exclusive opener.
        flags |= libc::O_EXCL;
    }
    if job.direct {
        flags |= libc::O_DIRECT;
    }
    flags |= job.pattern.sync.open_flag();
    opener.open(path, flags).map_err(|e| {
        let what = if block && e.raw_os_error() == Some(libc::EBUSY) {
            format!("cannot open {} exclusively: it is in use (mounted, or part of a RAID or another file system)", path.display())
        } else {
            format!("cannot open {}", path.display())
        };
        RunError::io(what, e)
    })
}

/// Where the job's files may be: anywhere its paths lead (links followed, as fio does: a
/// job may name `/dev/disk/by-id/...`), or only beneath a directory (`--within`).
enum Opener {
    Anywhere,
    Beneath(Beneath),
}

impl Opener {
    /// The job's: beneath its `--within` directory, if it has one.
    fn of(job: &Job) -> Result<Self, RunError> {
        Ok(match &job.beneath {
            None => Self::Anywhere,
            Some(dir) => Self::Beneath(Beneath::open(dir).map_err(|e| {
                RunError::io(
                    format!("cannot open the directory {} (--within)", dir.display()),
                    e,
                )
            })?),
        })
    }

    fn metadata(&self, path: &Path) -> std::io::Result<std::fs::Metadata> {
        match self {
            Self::Anywhere => std::fs::metadata(path),
            Self::Beneath(b) => b.metadata(Self::name(b, path)?),
        }
    }

    /// `flags` as for open(2), without O_CLOEXEC (always added).
    fn open(&self, path: &Path, flags: libc::c_int) -> std::io::Result<File> {
        match self {
            Self::Anywhere => {
                let mut opts = OpenOptions::new();
                let access = flags & libc::O_ACCMODE;
                opts.read(true).write(access == libc::O_RDWR);
                if flags & libc::O_CREAT != 0 {
                    opts.create(true).truncate(false);
                }
                let rest = flags & !(libc::O_ACCMODE | libc::O_CREAT);
                opts.custom_flags(rest | libc::O_CLOEXEC);
                opts.open(path)
            }
            Self::Beneath(b) => b.open_file(Self::name(b, path)?, flags),
        }
    }

    fn name<'a>(b: &Beneath, path: &'a Path) -> std::io::Result<&'a Path> {
        b.name_of(path).ok_or_else(|| {
            std::io::Error::other(format!(
                "is not a plain name in {} (--within)",
                b.path().display()
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_actions_are_done_in_the_directory_and_flat_beneath_within() {
        use crate::block::replay::{PathKind, PathOp};
        let op = |kind, name: &str, to: Option<&str>| PathOp {
            kind,
            name: name.into(),
            to: to.map(Into::into),
        };
        let d = tempfile::tempdir().unwrap();
        let ops = PathOps {
            dir: d.path().to_path_buf(),
            opener: Opener::Anywhere,
        };
        std::fs::write(d.path().join("a"), b"x").unwrap();
        assert!(ops.apply(&op(PathKind::Mkdir, "/s", None)).unwrap());
        assert!(ops.apply(&op(PathKind::Rename, "a", Some("s/b"))).unwrap());
        assert!(ops.apply(&op(PathKind::Stat, "s/b", None)).unwrap());
        // Already there, or not: skipped, not failed.
        assert!(!ops.apply(&op(PathKind::Mkdir, "s", None)).unwrap());
        assert!(!ops.apply(&op(PathKind::Rmdir, "s", None)).unwrap());
        assert!(!ops.apply(&op(PathKind::Unlink, "a", None)).unwrap());
        assert!(ops.apply(&op(PathKind::Unlink, "s/b", None)).unwrap());
        assert!(ops.apply(&op(PathKind::Rmdir, "s", None)).unwrap());
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);

        // --within: one flat directory, its names never followed out of it.
        let outer = tempfile::tempdir().unwrap();
        let w = outer.path().join("w");
        std::fs::create_dir(&w).unwrap();
        std::fs::write(outer.path().join("victim"), b"precious").unwrap();
        std::os::unix::fs::symlink("../victim", w.join("link")).unwrap();
        std::fs::write(w.join("s%2Fa"), b"x").unwrap();
        let ops = PathOps {
            dir: w.clone(),
            opener: Opener::Beneath(Beneath::open(&w).unwrap()),
        };
        assert!(!ops.apply(&op(PathKind::Mkdir, "s", None)).unwrap());
        assert!(ops.apply(&op(PathKind::Rename, "s/a", Some("b"))).unwrap());
        assert!(w.join("b").is_file());
        assert!(
            ops.apply(&op(PathKind::Stat, "link", None)).unwrap(),
            "the link itself"
        );
        // The link goes, what it pointed to stays.
        assert!(ops.apply(&op(PathKind::Unlink, "link", None)).unwrap());
        assert_eq!(
            std::fs::read(outer.path().join("victim")).unwrap(),
            b"precious"
        );
    }

    #[test]
    fn a_traces_paths_stay_in_the_directory_and_apart() {
        let d = Path::new("/r");
        assert_eq!(
            replay_path(d, "/data/base/5/1", false),
            Some(PathBuf::from("/r/data/base/5/1"))
        );
        assert_eq!(replay_path(d, "./a", false), Some(PathBuf::from("/r/a")));
        assert_eq!(replay_path(d, "a/../../b", false), None);
        assert_eq!(replay_path(d, "/", false), None);
        // Under --within, one plain name per path, never the same for two paths.
        let flat = |p| replay_path(d, p, true).unwrap();
        assert_eq!(
            flat("base/5/pg_filenode.map"),
            PathBuf::from("/r/base%2F5%2Fpg_filenode.map")
        );
        assert_ne!(
            flat("global/pg_filenode.map"),
            flat("base/5/pg_filenode.map")
        );
        assert_ne!(flat("a%2Fb"), flat("a/b"));
    }
}
