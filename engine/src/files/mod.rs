//! Files workloads (`kind = "files"`): one file-management operation on a tree of
//! files, with N threads that each own whole directories, measured per file.
//!
//! `set` is the generated file set, `sys` the `*at()` calls, `walk` the shared
//! directory queue and listings, `ops` what each operation does to one directory,
//! `hash` the duplicate finder.

pub mod hash;
pub mod ops;
pub mod set;
pub mod sys;
pub mod walk;

use std::collections::BTreeMap;
use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::time::Duration;

use crate::clock::Instant;
use crate::diagnostics::Warning;
use crate::error::{JobError, RunError};
use crate::harness::{self, Body, Flags, Launch, Outcome};
use crate::io;
use crate::record::{Op, Recorder};
use crate::report::{
    FilesResult, FsyncResult, IoErrorEntry, IoOp, Report, ScanTotal, SeriesPoint, TargetInfo,
    TargetKind,
};
use crate::spec::{FileOp, Job};

/// Size of each thread's copy/hash buffer.
const BUF_SIZE: usize = 1 << 20;

/// Counts one thread adds up; summed over threads for the report.
#[derive(Debug, Default, Clone)]
pub struct Counts {
    pub files: u64,
    pub bytes: u64,
    pub dirs: u64,
    pub created: u64,
    pub deleted: u64,
    pub copied: u64,
    /// `dupes`: bytes all but one file of each group hold.
    pub wasted: u64,
}

/// A directory's mode and times, applied to its copy once everything under it is written.
pub struct DirMeta {
    pub rel: String,
    pub depth: u32,
    pub mode: u32,
    pub times: [libc::timespec; 2],
}

// SAFETY: `timespec` is plain data; libc's type is only !Send on some targets because
// of padding fields, which carry no pointers.
unsafe impl Send for DirMeta {}

/// One thread's state: its recorder, buffers and what it found.
pub struct Ctx<'a> {
    pub thread: u32,
    pub job: &'a Job,
    pub op: FileOp,
    pub rec: Recorder,
    pub flags: &'a Flags,
    pub error: Option<IoErrorEntry>,
    pub buf: Vec<u8>,
    pub list: walk::Listing,
    pub list2: walk::Listing,
    pub counts: Counts,
    /// `scan`: slot 0 the root's own entries, slot i+1 top-level directory i.
    pub scan: Vec<ScanTotal>,
    pub dir_meta: Vec<DirMeta>,
    /// `delete`: the directories visited, emptied, to remove deepest first.
    pub dirs_seen: Vec<(u32, String)>,
    /// `dupes`: (size, path) of every non-empty file.
    pub cands: Vec<(u64, String)>,
    /// The time the last file operation ended: the next one starts there, so each
    /// file costs one clock read.
    pub last: Instant,
    /// `runtime`'s end: no file operation starts after it.
    pub deadline: Option<Instant>,
}

impl Ctx<'_> {
    pub fn stopped(&self) -> bool {
        self.flags.stopped() || self.deadline.is_some_and(|d| self.last >= d)
    }

    /// Records an error and stops every thread.
    pub fn fail(&mut self, what: String, e: &std::io::Error) {
        let error = IoErrorEntry {
            op: self.op.name().into(),
            thread: self.thread,
            offset: 0,
            errno: e.raw_os_error(),
            message: format!("{what}: {e}"),
        };
        self.flags.fail(&mut self.error, error);
    }

    /// Restarts the per-file clock (after waiting, walking, or a directory's setup).
    #[inline]
    pub fn mark(&mut self) {
        self.last = Instant::now();
    }

    /// Records one file operation that moved `bytes`, ending now.
    #[inline]
    pub fn done(&mut self, op: Op, bytes: u64) {
        let now = Instant::now();
        self.rec.complete(op, bytes, self.last, now);
        self.last = now;
    }
}

fn c_path(p: &Path) -> CString {
    use std::os::unix::ffi::OsStrExt;
    CString::new(p.as_os_str().as_bytes()).expect("paths from a parsed job have no NUL")
}

fn open_root(p: &Path) -> Result<OwnedFd, RunError> {
    sys::open_dir(libc::AT_FDCWD, &c_path(p))
        .map_err(|e| RunError::io(format!("cannot open {}", p.display()), e))
}

fn is_empty_dir(p: &Path) -> bool {
    std::fs::read_dir(p).is_ok_and(|mut d| d.next().is_none())
}

/// Makes `p` (an empty directory is fine; its parent must exist); exit 2 otherwise.
fn make_root(key: &str, p: &Path, may_exist_full: bool) -> Result<(), RunError> {
    match std::fs::symlink_metadata(p) {
        Ok(m) if m.is_dir() => {
            if may_exist_full || is_empty_dir(p) {
                Ok(())
            } else {
                Err(JobError::new(key, format!("{} exists and is not empty", p.display()))
                    .hint("name a new or empty directory, or delete the old tree first (`op = \"delete\"`)")
                    .into())
            }
        }
        Ok(_) => Err(JobError::new(
            key,
            format!("{} exists and is not a directory", p.display()),
        )
        .into()),
        Err(_) => std::fs::create_dir(p).map_err(|e| {
            JobError::new(key, format!("cannot create {}: {e}", p.display()))
                .hint("its parent directory must exist")
                .into()
        }),
    }
}

/// Checks and opens the trees the job works on: (root, dest).
fn open_trees(job: &Job) -> Result<(OwnedFd, Option<OwnedFd>), RunError> {
    let op = job.op.expect("a files job has an op");
    let dir = Path::new(job.directory.as_deref().expect("checked by the spec"));
    if op == FileOp::Create {
        make_root("directory", dir, false)?;
    } else if !dir.is_dir() {
        return Err(
            JobError::new("directory", format!("{} is not a directory", dir.display()))
                .hint(if op == FileOp::Delete {
                    "nothing to delete"
                } else {
                    "create the tree first (`op = \"create\"`)"
                })
                .into(),
        );
    }
    let root = open_root(dir)?;
    let dest = match &job.dest {
        Some(d) => {
            let d = Path::new(d);
            make_root("dest", d, op == FileOp::Sync)?;
            Some(open_root(d)?)
        }
        None => None,
    };
    Ok((root, dest))
}

/// What one thread found, besides its measurements.
struct Found {
    counts: Counts,
    scan: Vec<ScanTotal>,
    dir_meta: Vec<DirMeta>,
    dirs_seen: Vec<(u32, String)>,
    groups: Vec<Vec<String>>,
}

/// Runs a files job: the counterpart of `block::run` for `kind = "files"`.
pub fn run(
    job: Job,
    warnings: Vec<Warning>,
    flags: &Flags,
    on_point: &mut dyn FnMut(&SeriesPoint),
) -> Result<Report, RunError> {
    let op = job.op.expect("a files job has an op");
    let dir = Path::new(job.directory.as_deref().expect("checked by the spec"));
    if job.create_first && (!dir.exists() || is_empty_dir(dir)) {
        // The set is readied unmeasured, as fio lays files out before a job.
        let mut first = job.clone();
        first.op = Some(FileOp::Create);
        first.create_first = false;
        let made = run(first, Vec::new(), flags, &mut |_| {})?;
        if let Some(e) = made.errors.first() {
            return Err(RunError::io(
                format!(
                    "cannot create the set first (`create_first`): {}",
                    e.message
                ),
                std::io::Error::from_raw_os_error(e.errno.unwrap_or(libc::EIO)),
            ));
        }
        if flags.stopped() {
            return Err(RunError::io(
                "stopped while creating the set first (`create_first`)",
                std::io::Error::from_raw_os_error(libc::EINTR),
            ));
        }
    }
    let (root, dest) = open_trees(&job)?;
    let (root_fd, dest_fd) = (root.as_raw_fd(), dest.as_ref().map(AsRawFd::as_raw_fd));
    let threads = job.numjobs;
    let set = set::FileSet::from_job(&job);
    if op == FileOp::Create {
        ops::make_groups(&set, root_fd)
            .map_err(|e| RunError::io("cannot create the set's group directories", e))?;
    }
    let queue = walk::Queue::new();
    let dupes = hash::Shared::new(threads);
    let loops = job.loops.unwrap_or(1);
    // Every thread ends a pass before the next begins: the queue is refilled once.
    let pass_end = std::sync::Barrier::new(threads as usize);
    let again = std::sync::atomic::AtomicBool::new(false);
    // A files job has no ramp: its work is a fixed amount, not a time.
    let launch = Launch {
        interval: job.interval(),
        ramp: Duration::ZERO,
        ready: false,
        steady: None,
    };
    let harvest = harness::run_threads(
        &launch,
        flags,
        vec![(); threads as usize],
        on_point,
        |t, (), gate| {
            // A table of the thread's own, as for block workers (io/fdtable.rs): a files
            // step makes several system calls on descriptors per file.
            let keep: Vec<RawFd> = std::iter::once(root_fd).chain(dest_fd).collect();
            let own = io::fdtable::OwnTable::keeping(&keep);
            // Zeroed, so the allocator hands out untouched pages: a step that moves no
            // data (stat, delete, ...) never pays for faulting in 1 MiB.
            let buf = vec![0u8; BUF_SIZE];
            let (mut list, mut list2) = (walk::Listing::default(), walk::Listing::default());
            list.reserve();
            list2.reserve();
            let (start, rec) = gate.start();
            let deadline = job.runtime().map(|r| start + r);
            let mut ctx = Ctx {
                thread: t,
                job: &job,
                op,
                rec,
                flags,
                error: None,
                buf,
                list,
                list2,
                counts: Counts::default(),
                scan: Vec::new(),
                dir_meta: Vec::new(),
                dirs_seen: Vec::new(),
                cands: Vec::new(),
                last: start,
                deadline,
            };
            let mut groups = Vec::new();
            match op {
                FileOp::Create => ops::create(&mut ctx, &set, root_fd, t, threads),
                _ => {
                    ops::walk(&mut ctx, &queue, root_fd, dest_fd);
                    for _ in 1..loops {
                        use std::sync::atomic::Ordering::Relaxed;
                        // One thread decides for all, so none waits at a barrier the
                        // others have left.
                        if pass_end.wait().is_leader() {
                            ctx.mark();
                            let go = !ctx.stopped();
                            if go {
                                queue.refill();
                            }
                            again.store(go, Relaxed);
                        }
                        pass_end.wait();
                        if !again.load(Relaxed) {
                            break;
                        }
                        ctx.mark();
                        ops::walk(&mut ctx, &queue, root_fd, dest_fd);
                    }
                    if op == FileOp::Dupes {
                        groups = dupes.run(&mut ctx, root_fd);
                    }
                }
            }
            drop(own);
            let found = Found {
                counts: ctx.counts,
                scan: ctx.scan,
                dir_meta: ctx.dir_meta,
                dirs_seen: ctx.dirs_seen,
                groups,
            };
            Outcome::finish(ctx.rec, ctx.error, found)
        },
        // Work no single file owns: directories' times, removing emptied directories.
        |outcomes| {
            if let Err(e) = finish_dirs(op, outcomes, root_fd, dest_fd, &job) {
                if outcomes.iter().all(|o| o.error.is_none()) {
                    outcomes[0].error = Some(IoErrorEntry {
                        op: op.name().into(),
                        thread: 0,
                        offset: 0,
                        errno: e.raw_os_error(),
                        message: format!("finishing directories: {e}"),
                    });
                }
            }
        },
    );
    drop(root);
    drop(dest);

    // The whole op is measured, the final directory pass included.
    let span = harvest.span(harvest.joined, Duration::ZERO);
    let mut results = Vec::new();
    for (slot, name) in [(Op::Files, op.into()), (Op::Read, IoOp::Hash.into())] {
        if slot == Op::Read && op != FileOp::Dupes {
            continue;
        }
        results.push(harvest.merged(slot, name, span));
    }
    let files = files_result(op, &queue, &harvest.outcomes);
    let mut paths = vec![job.directory.clone().unwrap_or_default()];
    paths.extend(job.dest.clone());
    let body = Body {
        target: TargetInfo {
            kind: TargetKind::Tree,
            paths,
            size_bytes: files.bytes,
            dio_align_bytes: None,
        },
        layout: None,
        results,
        fsync: FsyncResult::default(),
        files: Some(files),
        app: None,
        verify: None,
    };
    Ok(harvest.into_report(job, span, body, warnings, flags, "use more files"))
}

/// Applies copied directories' modes and times, or removes emptied directories, deepest first.
fn finish_dirs(
    op: FileOp,
    outcomes: &mut [Outcome<Found>],
    root_fd: RawFd,
    dest_fd: Option<RawFd>,
    job: &Job,
) -> std::io::Result<()> {
    match op {
        FileOp::Copy | FileOp::Sync => {
            let dest_fd = dest_fd.expect("copy and sync have a dest");
            let mut metas: Vec<&DirMeta> =
                outcomes.iter().flat_map(|o| &o.value.dir_meta).collect();
            metas.sort_by(|a, b| b.depth.cmp(&a.depth).then_with(|| a.rel.cmp(&b.rel)));
            for m in metas {
                let rel = CString::new(if m.rel.is_empty() { "." } else { &m.rel })
                    .expect("no NUL in names");
                sys::fchmodat(dest_fd, &rel, m.mode)?;
                sys::utimensat(dest_fd, &rel, Some(m.times))?;
            }
        }
        FileOp::Delete => {
            let mut dirs: Vec<(u32, String)> = outcomes
                .iter_mut()
                .flat_map(|o| std::mem::take(&mut o.value.dirs_seen))
                .collect();
            dirs.sort_by_key(|d| std::cmp::Reverse(d.0));
            for (_, rel) in dirs.iter().filter(|(d, _)| *d > 0) {
                let c = CString::new(rel.as_str()).expect("no NUL in names");
                sys::unlinkat(root_fd, &c, libc::AT_REMOVEDIR)?;
            }
            if dirs.iter().any(|(d, _)| *d == 0) {
                let dir = job.directory.as_deref().unwrap_or_default();
                std::fs::remove_dir(dir)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// Cap on `dupe_groups` in the report.
const MAX_GROUPS_LISTED: usize = 1000;

fn files_result(op: FileOp, queue: &walk::Queue, outcomes: &[Outcome<Found>]) -> FilesResult {
    let mut c = Counts::default();
    for o in outcomes.iter().map(|o| &o.value) {
        c.files += o.counts.files;
        c.bytes += o.counts.bytes;
        c.dirs += o.counts.dirs;
        c.created += o.counts.created;
        c.deleted += o.counts.deleted;
        c.copied += o.counts.copied;
    }
    let mut r = FilesResult {
        op,
        files: c.files,
        bytes: c.bytes,
        dirs: c.dirs,
        created: c.created,
        deleted: c.deleted,
        copied: c.copied,
        scan_totals: None,
        dupe_groups: None,
        dupe_group_count: None,
        dupe_files: None,
        dupe_wasted_bytes: None,
    };
    if op == FileOp::Scan {
        let tops = queue.tops.lock().unwrap_or_else(|p| p.into_inner());
        let mut totals: BTreeMap<String, ScanTotal> = BTreeMap::new();
        for o in outcomes {
            for (i, t) in o.value.scan.iter().enumerate() {
                if t.bytes == 0 && t.files == 0 {
                    continue;
                }
                let name = match i {
                    0 => ".".to_string(),
                    i => tops.get(i - 1).cloned().unwrap_or_default(),
                };
                let e = totals.entry(name).or_default();
                e.bytes += t.bytes;
                e.files += t.files;
            }
        }
        r.scan_totals = Some(totals);
    }
    if op == FileOp::Dupes {
        let mut groups: Vec<Vec<String>> = outcomes
            .iter()
            .flat_map(|o| o.value.groups.clone())
            .collect();
        groups.sort();
        r.dupe_group_count = Some(groups.len() as u64);
        r.dupe_files = Some(groups.iter().map(|g| g.len() as u64).sum());
        r.dupe_wasted_bytes = Some(outcomes.iter().map(|o| o.value.counts.wasted).sum());
        groups.truncate(MAX_GROUPS_LISTED);
        r.dupe_groups = Some(groups);
    }
    r
}
