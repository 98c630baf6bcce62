//! What each operation does, per directory and per file. The loops call `*at()`
//! relative to an open directory fd with names from a reused buffer: nothing is
//! allocated per file (except `dupes`, which must remember every candidate).

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};

use xxhash_rust::xxh3::xxh3_64_with_seed;

use super::set::{self, Content, FileSet};
use super::walk::{DirTask, Listing, Queue};
use super::{sys, Ctx, DirMeta};
use crate::clock::Instant;
use crate::record::Op;
use crate::report::ScanTotal;
use crate::spec::FileOp;

const XATTR_NAME: &CStr = c"user.fslab";
const NEW_FILE_MODE: u32 = 0o644;
const DIR_MODE: u32 = 0o755;

/// Makes the set's group directories (untimed, before the threads start).
pub fn make_groups(set: &FileSet, root: RawFd) -> io::Result<()> {
    if set.grouped() {
        for g in 0..set.groups() {
            let c = CString::new(FileSet::group_name(g)).expect("no NUL");
            sys::mkdirat(root, &c, DIR_MODE)?;
        }
    }
    Ok(())
}

/// `create`: thread `t` of `n` makes directories t, t+n, t+2n... and their files.
pub fn create(ctx: &mut Ctx<'_>, set: &FileSet, root: RawFd, t: u32, n: u32) {
    let mut name = [0u8; 24];
    let mut d = u64::from(t);
    while d < set.ndirs && !ctx.stopped() {
        let rel = CString::new(set.dir_rel(d)).expect("no NUL");
        if let Err(e) = sys::mkdirat(root, &rel, DIR_MODE) {
            return ctx.fail(format!("mkdir {}", rel.to_string_lossy()), &e);
        }
        let dir = match sys::open_dir(root, &rel) {
            Ok(f) => f,
            Err(e) => return ctx.fail(format!("open {}", rel.to_string_lossy()), &e),
        };
        ctx.counts.dirs += 1;
        ctx.mark();
        for i in set.files_in(d) {
            if ctx.stopped() {
                return;
            }
            let len = set::file_name(i, &mut name);
            let cname = CStr::from_bytes_with_nul(&name[..len]).expect("one NUL at the end");
            let size = set.size(i);
            if let Err(e) = create_one(ctx, dir.as_raw_fd(), cname, size, set.content(i)) {
                return ctx.fail(
                    format!(
                        "create {}/{}",
                        rel.to_string_lossy(),
                        cname.to_string_lossy()
                    ),
                    &e,
                );
            }
            ctx.counts.files += 1;
            ctx.counts.created += 1;
            ctx.counts.bytes += size;
            ctx.done(Op::Files, size);
        }
        d += u64::from(n);
    }
}

/// openat(O_CREAT | O_EXCL) + write + close.
fn create_one(
    ctx: &mut Ctx<'_>,
    dir: RawFd,
    name: &CStr,
    size: u64,
    mut content: Content,
) -> io::Result<()> {
    let f = sys::openat(
        dir,
        name,
        libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL,
        NEW_FILE_MODE,
    )?;
    write_content(ctx, f.as_fd(), size, &mut content)
}

fn write_content(
    ctx: &mut Ctx<'_>,
    f: BorrowedFd<'_>,
    size: u64,
    content: &mut Content,
) -> io::Result<()> {
    let mut left = size;
    while left > 0 {
        let n = left.min(ctx.buf.len() as u64) as usize;
        content.fill(&mut ctx.buf[..n]);
        sys::write_all(f, &ctx.buf[..n])?;
        left -= n as u64;
    }
    Ok(())
}

/// Every operation but `create`: take directories from the queue until the walk ends.
pub fn walk(ctx: &mut Ctx<'_>, queue: &Queue, root: RawFd, dest: Option<RawFd>) {
    let (flags, deadline) = (ctx.flags, ctx.deadline);
    let stop = || flags.stopped() || deadline.is_some_and(|d| Instant::now() >= d);
    while let Some(task) = queue.pop(stop) {
        let mut list = std::mem::take(&mut ctx.list);
        if let Err((what, e)) = visit(ctx, queue, &task, &mut list, root, dest) {
            let path = if task.rel.is_empty() { "." } else { &task.rel };
            ctx.fail(format!("{what} in {path}"), &e);
        }
        ctx.list = list;
        queue.done();
    }
}

type VisitResult = Result<(), (&'static str, io::Error)>;

fn at<T>(what: &'static str, r: io::Result<T>) -> Result<T, (&'static str, io::Error)> {
    r.map_err(|e| (what, e))
}

/// One directory: list it, queue its subdirectories, do the operation on its files.
fn visit(
    ctx: &mut Ctx<'_>,
    queue: &Queue,
    task: &DirTask,
    list: &mut Listing,
    root: RawFd,
    dest: Option<RawFd>,
) -> VisitResult {
    let op = ctx.op;
    let rel = task.c_rel();
    let dir = at("open directory", sys::open_dir(root, &rel))?;
    at("list directory", list.read(dir.as_fd()))?;
    ctx.counts.dirs += 1;
    let ddir: Option<OwnedFd> = match (op, dest) {
        (FileOp::Copy | FileOp::Sync, Some(dfd)) => {
            let st = at("fstat directory", sys::fstat(dir.as_fd()))?;
            ctx.dir_meta.push(DirMeta {
                rel: task.rel.clone(),
                depth: task.depth,
                mode: st.st_mode & 0o7777,
                times: [
                    sys::ts(st.st_atime, st.st_atime_nsec),
                    sys::ts(st.st_mtime, st.st_mtime_nsec),
                ],
            });
            Some(at("open dest directory", sys::open_dir(dfd, &rel))?)
        }
        _ => None,
    };
    let ddir_fd = ddir.as_ref().map(AsRawFd::as_raw_fd);
    match op {
        FileOp::Delete => ctx.dirs_seen.push((task.depth, task.rel.clone())),
        FileOp::Scan => {
            let st = at("fstat directory", sys::fstat(dir.as_fd()))?;
            scan_slot(ctx, task.top).bytes += st.st_size as u64;
        }
        _ => {}
    }
    // Subdirectories first, so other threads can start on them.
    for k in 0..list.len() {
        if !list.is_dir(k) {
            continue;
        }
        let name = list.name(k);
        let name_str = name.to_str().map_err(|_| {
            (
                "read a name",
                io::Error::new(io::ErrorKind::InvalidData, "directory name is not UTF-8"),
            )
        })?;
        if let Some(d) = ddir_fd {
            match sys::mkdirat(d, name, 0o700) {
                Ok(()) => {}
                Err(e) if e.raw_os_error() == Some(libc::EEXIST) && op == FileOp::Sync => {
                    let st = at("stat dest", sys::fstatat(d, name))?;
                    if st.st_mode & libc::S_IFMT != libc::S_IFDIR {
                        at("unlink dest", sys::unlinkat(d, name, 0))?;
                        ctx.counts.deleted += 1;
                        at("mkdir dest", sys::mkdirat(d, name, 0o700))?;
                    }
                }
                Err(e) => return Err(("mkdir dest", e)),
            }
        }
        let top = task.top.is_none().then(|| queue.add_top(name_str));
        queue.push(task.child(name_str, top));
    }
    let dfd = dir.as_raw_fd();
    ctx.mark();
    match op {
        FileOp::Copy => copy_dir(ctx, list, dfd, ddir_fd.expect("copy has a dest"))?,
        FileOp::Sync => {
            let d = ddir_fd.expect("sync has a dest");
            sync_dir(ctx, list, dfd, d)?;
            prune_dest(ctx, task, dfd, d, dest.expect("sync has a dest"))?;
        }
        FileOp::Mutate => mutate_dir(ctx, task, list, dfd)?,
        FileOp::Dupes => dupes_dir(ctx, task, list, dfd)?,
        FileOp::Scan => scan_dir(ctx, task, list, dfd)?,
        FileOp::Touch | FileOp::Chmod | FileOp::Xattr | FileOp::Delete | FileOp::Stat => {
            simple_dir(ctx, list, dfd)?
        }
        FileOp::Create => unreachable!("create does not walk"),
    }
    Ok(())
}

/// touch, chmod, xattr, delete, stat: one call (or open+call+close) per file.
fn simple_dir(ctx: &mut Ctx<'_>, list: &Listing, dir: RawFd) -> VisitResult {
    let mode = ctx.job.mode_bits();
    let op = ctx.op;
    for name in list.files() {
        if ctx.stopped() {
            return Ok(());
        }
        match op {
            FileOp::Stat => {
                let st = at("fstatat", sys::fstatat(dir, name))?;
                ctx.counts.bytes += st.st_size as u64;
            }
            FileOp::Touch => at("utimensat", sys::utimensat(dir, name, None))?,
            FileOp::Chmod => at("fchmodat", sys::fchmodat(dir, name, mode))?,
            FileOp::Xattr => {
                let f = at(
                    "open",
                    sys::openat(dir, name, libc::O_RDONLY | libc::O_NOFOLLOW, 0),
                )?;
                at(
                    "fsetxattr",
                    sys::fsetxattr(f.as_fd(), XATTR_NAME, name.to_bytes()),
                )?;
            }
            FileOp::Delete => {
                at("unlinkat", sys::unlinkat(dir, name, 0))?;
                ctx.counts.deleted += 1;
            }
            _ => unreachable!("only the simple ops come here"),
        }
        ctx.counts.files += 1;
        ctx.done(Op::Files, 0);
    }
    Ok(())
}

fn scan_slot<'c>(ctx: &'c mut Ctx<'_>, top: Option<u32>) -> &'c mut ScanTotal {
    let slot = top.map_or(0, |t| t as usize + 1);
    if ctx.scan.len() <= slot {
        ctx.scan.resize(slot + 1, ScanTotal::default());
    }
    &mut ctx.scan[slot]
}

fn scan_dir(ctx: &mut Ctx<'_>, task: &DirTask, list: &Listing, dir: RawFd) -> VisitResult {
    let (mut bytes, mut files) = (0, 0);
    for k in 0..list.len() {
        if list.is_dir(k) {
            continue;
        }
        if ctx.stopped() {
            break;
        }
        let st = at("statx", sys::statx(dir, list.name(k), libc::STATX_SIZE))?;
        bytes += st.stx_size;
        files += 1;
        ctx.done(Op::Files, 0);
    }
    ctx.counts.files += files;
    ctx.counts.bytes += bytes;
    let slot = scan_slot(ctx, task.top);
    slot.bytes += bytes;
    slot.files += files;
    Ok(())
}

fn is_reg(mode: u32) -> bool {
    mode & libc::S_IFMT == libc::S_IFREG
}

/// Copies one regular file `name` from `sdir` to `ddir` (which must not have it):
/// open + read + write + close, then its mode and times. Returns its size.
fn copy_file(ctx: &mut Ctx<'_>, sdir: RawFd, ddir: RawFd, name: &CStr) -> io::Result<u64> {
    let src = sys::openat(sdir, name, libc::O_RDONLY | libc::O_NOFOLLOW, 0)?;
    let st = sys::fstat(src.as_fd())?;
    let dst = sys::openat(
        ddir,
        name,
        libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL,
        0o600,
    )?;
    let mut total = 0u64;
    loop {
        let n = sys::read(src.as_fd(), &mut ctx.buf)?;
        if n == 0 {
            break;
        }
        sys::write_all(dst.as_fd(), &ctx.buf[..n])?;
        total += n as u64;
    }
    sys::fchmod(dst.as_fd(), st.st_mode & 0o7777)?;
    sys::futimens(
        dst.as_fd(),
        [
            sys::ts(st.st_atime, st.st_atime_nsec),
            sys::ts(st.st_mtime, st.st_mtime_nsec),
        ],
    )?;
    Ok(total)
}

/// Files whose data a copy asks the kernel to start reading before it gets to them.
const COPY_READ_AHEAD: usize = 32;

fn copy_dir(ctx: &mut Ctx<'_>, list: &Listing, sdir: RawFd, ddir: RawFd) -> VisitResult {
    let names: Vec<(&CStr, bool)> = list.files().map(|n| (n, true)).collect();
    copy_ahead(ctx, &names, sdir, ddir)
}

/// Copies `names` from `sdir` to `ddir` in order, counting each (as created where its
/// flag says the destination had no such file). One thread copies one file at a time,
/// and a cold read waits on the disk while nothing else happens (rsync overlaps its
/// reader and writer processes): the data of the next files is asked for ahead, so
/// their reads run while this one is written.
fn copy_ahead(ctx: &mut Ctx<'_>, names: &[(&CStr, bool)], sdir: RawFd, ddir: RawFd) -> VisitResult {
    let ahead = |i: usize| {
        if let Some((name, _)) = names.get(i) {
            if let Ok(fd) = sys::openat(sdir, name, libc::O_RDONLY | libc::O_NOFOLLOW, 0) {
                sys::will_need(fd.as_fd());
            }
        }
    };
    for i in 0..COPY_READ_AHEAD.min(names.len()) {
        ahead(i);
    }
    for (i, &(name, created)) in names.iter().enumerate() {
        ahead(i + COPY_READ_AHEAD);
        if ctx.stopped() {
            return Ok(());
        }
        let n = at("copy", copy_file(ctx, sdir, ddir, name))?;
        ctx.counts.created += u64::from(created);
        ctx.counts.files += 1;
        ctx.counts.copied += 1;
        ctx.counts.bytes += n;
        ctx.done(Op::Files, 2 * n);
    }
    Ok(())
}

/// rsync's quick check: copy what is missing or differs in size or mtime. The
/// directory is checked first and its copies made after, with `copy_ahead`'s
/// read-ahead: which files need copying is known only once both trees are stat'ed.
/// A file that is copied is recorded when its copy ends; its check counts towards the
/// next file recorded.
fn sync_dir(ctx: &mut Ctx<'_>, list: &Listing, sdir: RawFd, ddir: RawFd) -> VisitResult {
    let mut todo: Vec<(&CStr, bool)> = Vec::new();
    for name in list.files() {
        if ctx.stopped() {
            return Ok(());
        }
        let s = at("fstatat source", sys::fstatat(sdir, name))?;
        if !is_reg(s.st_mode) {
            continue;
        }
        match sys::fstatat(ddir, name) {
            Ok(d)
                if is_reg(d.st_mode)
                    && d.st_size == s.st_size
                    && d.st_mtime == s.st_mtime
                    && d.st_mtime_nsec == s.st_mtime_nsec =>
            {
                ctx.counts.files += 1;
                ctx.counts.bytes += s.st_size as u64;
                ctx.done(Op::Files, 0);
            }
            Ok(d) => {
                if d.st_mode & libc::S_IFMT == libc::S_IFDIR {
                    let c = name.to_str().unwrap_or_default();
                    at("remove dest directory", remove_tree(ddir, c))?;
                } else {
                    at("unlink dest", sys::unlinkat(ddir, name, 0))?;
                }
                todo.push((name, false));
            }
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => todo.push((name, true)),
            Err(e) => return Err(("fstatat dest", e)),
        }
    }
    copy_ahead(ctx, &todo, sdir, ddir)
}

/// Deletes what `dest` has in this directory that the source does not.
fn prune_dest(
    ctx: &mut Ctx<'_>,
    _task: &DirTask,
    sdir: RawFd,
    ddir: RawFd,
    _dest_root: RawFd,
) -> VisitResult {
    let mut list = std::mem::take(&mut ctx.list2);
    let dfd = at("open dest", sys::open_dir(ddir, c"."))?;
    let r = (|| {
        at("list dest", list.read(dfd.as_fd()))?;
        for k in 0..list.len() {
            let name = list.name(k);
            match sys::fstatat(sdir, name) {
                Ok(_) => continue,
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
                Err(e) => return Err(("fstatat source", e)),
            }
            if list.is_dir(k) {
                let n = at(
                    "remove dest directory",
                    remove_tree(ddir, name.to_str().unwrap_or_default()),
                )?;
                ctx.counts.deleted += n;
            } else {
                at("unlink dest", sys::unlinkat(ddir, name, 0))?;
                ctx.counts.deleted += 1;
            }
        }
        Ok(())
    })();
    ctx.list2 = list;
    r
}

/// Removes directory `name` under `dir` with everything in it; returns the files removed.
fn remove_tree(dir: RawFd, name: &str) -> io::Result<u64> {
    let c = CString::new(name).expect("no NUL");
    let sub = sys::open_dir(dir, &c)?;
    let mut list = Listing::default();
    list.read(sub.as_fd())?;
    let mut n = 0;
    for k in 0..list.len() {
        if list.is_dir(k) {
            n += remove_tree(sub.as_raw_fd(), list.name(k).to_str().unwrap_or_default())?;
        } else {
            sys::unlinkat(sub.as_raw_fd(), list.name(k), 0)?;
            n += 1;
        }
    }
    drop(sub);
    sys::unlinkat(dir, &c, libc::AT_REMOVEDIR)?;
    Ok(n)
}

/// A number in [0, 1) from a hash.
fn unit(h: u64) -> f64 {
    (h >> 11) as f64 / (1u64 << 53) as f64
}

/// Changes `mutate_share` of the files (new content, one byte longer every other
/// time, mtime now), deletes a quarter as many more, and creates as many new ones.
/// Which files is decided by a hash of the path and `randseed`: the same tree and job
/// always change the same files, whatever the thread count.
fn mutate_dir(ctx: &mut Ctx<'_>, task: &DirTask, list: &Listing, dir: RawFd) -> VisitResult {
    let share = ctx.job.mutate_share.unwrap_or(0.1);
    let dir_seed = xxh3_64_with_seed(task.rel.as_bytes(), ctx.job.randseed);
    let mut newname = Vec::with_capacity(256);
    for name in list.files() {
        if ctx.stopped() {
            return Ok(());
        }
        let h = xxh3_64_with_seed(name.to_bytes(), dir_seed);
        let u = unit(h);
        ctx.counts.files += 1;
        if u < share {
            let st = at("fstatat", sys::fstatat(dir, name))?;
            let size = st.st_size as u64 + (h & 1);
            let f = at(
                "open",
                sys::openat(
                    dir,
                    name,
                    libc::O_WRONLY | libc::O_TRUNC | libc::O_NOFOLLOW,
                    0,
                ),
            )?;
            at(
                "write",
                write_content(ctx, f.as_fd(), size, &mut Content::new(h)),
            )?;
            let now = sys::ts(0, libc::UTIME_NOW);
            at("futimens", sys::futimens(f.as_fd(), [now, now]))?;
            drop(f);
            ctx.counts.copied += 1;
            ctx.counts.bytes += size;
            ctx.done(Op::Files, size);
        } else if u < share * 1.25 {
            let st = at("fstatat", sys::fstatat(dir, name))?;
            at("unlinkat", sys::unlinkat(dir, name, 0))?;
            ctx.counts.deleted += 1;
            newname.clear();
            newname.push(b'n');
            newname.extend_from_slice(name.to_bytes_with_nul());
            let cname = CStr::from_bytes_with_nul(&newname).expect("one NUL at the end");
            let size = st.st_size as u64;
            at(
                "create",
                create_one(ctx, dir, cname, size, Content::new(!h)),
            )?;
            ctx.counts.created += 1;
            ctx.counts.bytes += size;
            ctx.done(Op::Files, size);
        } else {
            ctx.mark();
        }
    }
    Ok(())
}

/// `dupes`, first pass: statx every file, remember the non-empty regular ones.
fn dupes_dir(ctx: &mut Ctx<'_>, task: &DirTask, list: &Listing, dir: RawFd) -> VisitResult {
    for name in list.files() {
        if ctx.stopped() {
            return Ok(());
        }
        let st = at(
            "statx",
            sys::statx(dir, name, libc::STATX_SIZE | libc::STATX_TYPE),
        )?;
        ctx.counts.files += 1;
        ctx.counts.bytes += st.stx_size;
        if u32::from(st.stx_mode) & libc::S_IFMT == libc::S_IFREG && st.stx_size > 0 {
            let n = name.to_str().unwrap_or_default();
            let path = if task.rel.is_empty() {
                n.to_string()
            } else {
                format!("{}/{n}", task.rel)
            };
            ctx.cands.push((st.stx_size, path));
        }
        ctx.done(Op::Files, 0);
    }
    Ok(())
}
