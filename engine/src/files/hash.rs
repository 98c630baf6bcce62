//! `dupes`: after the walk, files of equal size are compared by an xxh3 hash of their
//! first 4 KiB, then those still alike by an xxh3-128 hash of the whole file, confirmed
//! with BLAKE3 (computed in the same pass). Groups of equal size are shared out to the
//! threads one at a time.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsFd, RawFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Barrier, Mutex, OnceLock};

use xxhash_rust::xxh3::{xxh3_64, Xxh3};

use super::{sys, Ctx};
use crate::record::Op;

/// Bytes hashed first.
pub const PARTIAL: usize = 4096;

type SizeGroup = (u64, Vec<String>);

/// What the threads share in `dupes`.
pub struct Shared {
    barrier: Barrier,
    cands: Mutex<Vec<(u64, String)>>,
    groups: OnceLock<Vec<SizeGroup>>,
    next: AtomicUsize,
}

impl Shared {
    pub fn new(threads: u32) -> Self {
        Self {
            barrier: Barrier::new(threads as usize),
            cands: Mutex::new(Vec::new()),
            groups: OnceLock::new(),
            next: AtomicUsize::new(0),
        }
    }

    /// Every thread calls this after the walk; returns the groups this thread confirmed.
    pub fn run(&self, ctx: &mut Ctx<'_>, root: RawFd) -> Vec<Vec<String>> {
        self.cands
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .append(&mut ctx.cands);
        if self.barrier.wait().is_leader() {
            let mut all =
                std::mem::take(&mut *self.cands.lock().unwrap_or_else(|p| p.into_inner()));
            all.sort_unstable();
            let mut groups: Vec<SizeGroup> = Vec::new();
            for (size, path) in all {
                match groups.last_mut() {
                    Some((s, g)) if *s == size => g.push(path),
                    _ => groups.push((size, vec![path])),
                }
            }
            groups.retain(|(_, g)| g.len() > 1);
            // Biggest first, so one large group does not finish last on one thread.
            groups.sort_by_key(|g| std::cmp::Reverse(g.0.saturating_mul(g.1.len() as u64)));
            let _ = self.groups.set(groups);
        }
        self.barrier.wait();
        let groups = self
            .groups
            .get()
            .expect("set by the leader before the barrier");
        let mut out = Vec::new();
        ctx.mark();
        loop {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            if i >= groups.len() || ctx.stopped() {
                break;
            }
            let (size, paths) = &groups[i];
            match confirm(ctx, root, *size, paths) {
                Ok(found) => {
                    for g in found {
                        ctx.counts.wasted += size * (g.len() as u64 - 1);
                        out.push(g);
                    }
                }
                Err((path, e)) => {
                    ctx.fail(format!("hash {path}"), &e);
                    break;
                }
            }
        }
        out
    }
}

/// Splits `v` into runs of equal keys (sorted by key), keeping runs of 2 or more.
fn split<K: Ord + Copy>(v: Vec<(K, usize)>) -> Vec<Vec<usize>> {
    let mut by: BTreeMap<K, Vec<usize>> = BTreeMap::new();
    for (k, i) in v {
        by.entry(k).or_default().push(i);
    }
    by.into_values().filter(|g| g.len() > 1).collect()
}

type Fail<'p> = (&'p str, io::Error);

/// The groups of identical files among `paths`, all `size` bytes long.
fn confirm<'p>(
    ctx: &mut Ctx<'_>,
    root: RawFd,
    size: u64,
    paths: &'p [String],
) -> Result<Vec<Vec<String>>, Fail<'p>> {
    let whole_in_partial = size <= PARTIAL as u64;
    let mut partial = Vec::with_capacity(paths.len());
    let mut small_blake = Vec::new();
    for (i, p) in paths.iter().enumerate() {
        let f = open(root, p).map_err(|e| (p.as_str(), e))?;
        let n = read_up_to(f.as_fd(), &mut ctx.buf[..PARTIAL]).map_err(|e| (p.as_str(), e))?;
        partial.push((xxh3_64(&ctx.buf[..n]), i));
        if whole_in_partial {
            small_blake.push(*blake3::hash(&ctx.buf[..n]).as_bytes());
        }
        drop(f);
        ctx.done(Op::Read, n as u64);
    }
    let mut out = Vec::new();
    for g in split(partial) {
        let confirmed = if whole_in_partial {
            split(g.iter().map(|&i| (small_blake[i], i)).collect())
        } else {
            let mut full = Vec::with_capacity(g.len());
            let mut blakes = BTreeMap::new();
            for &i in &g {
                let p = &paths[i];
                let (x, b) = hash_whole(ctx, root, p).map_err(|e| (p.as_str(), e))?;
                full.push((x, i));
                blakes.insert(i, b);
            }
            split(full)
                .into_iter()
                .flat_map(|g| split(g.iter().map(|&i| (blakes[&i], i)).collect()))
                .collect()
        };
        for c in confirmed {
            let mut names: Vec<String> = c.iter().map(|&i| paths[i].clone()).collect();
            names.sort();
            out.push(names);
        }
    }
    Ok(out)
}

fn open(root: RawFd, path: &str) -> io::Result<std::os::fd::OwnedFd> {
    let c = CString::new(path).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    sys::openat(root, &c, libc::O_RDONLY | libc::O_NOFOLLOW, 0)
}

fn read_up_to(f: std::os::fd::BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        let r = sys::read(f, &mut buf[n..])?;
        if r == 0 {
            break;
        }
        n += r;
    }
    Ok(n)
}

/// xxh3-128 and BLAKE3 of a whole file, in one read of it.
fn hash_whole(ctx: &mut Ctx<'_>, root: RawFd, path: &str) -> io::Result<(u128, [u8; 32])> {
    let f = open(root, path)?;
    let mut x = Xxh3::new();
    let mut b = blake3::Hasher::new();
    let mut total = 0u64;
    loop {
        let n = sys::read(f.as_fd(), &mut ctx.buf)?;
        if n == 0 {
            break;
        }
        x.update(&ctx.buf[..n]);
        b.update(&ctx.buf[..n]);
        total += n as u64;
    }
    drop(f);
    ctx.done(Op::Read, total);
    Ok((x.digest128(), *b.finalize().as_bytes()))
}
