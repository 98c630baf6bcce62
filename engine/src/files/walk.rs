//! Walking a tree with N threads: a shared queue of whole directories (one lock per
//! directory, never per file), and a reusable listing of one directory's entries.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::sync::{Condvar, Mutex};

use super::sys;

/// One directory to visit, relative to the tree's root (`""` is the root).
#[derive(Debug, Clone)]
pub struct DirTask {
    pub rel: String,
    /// Index of its top-level directory in `Queue::tops`; `None` for the root.
    pub top: Option<u32>,
    pub depth: u32,
}

impl DirTask {
    /// `rel` as a C path for `openat` relative to the root (`.` for the root).
    pub fn c_rel(&self) -> std::ffi::CString {
        let p = if self.rel.is_empty() { "." } else { &self.rel };
        std::ffi::CString::new(p).expect("directory names have no NUL")
    }

    /// The task of a subdirectory `name` of this one.
    pub fn child(&self, name: &str, top: Option<u32>) -> DirTask {
        DirTask {
            rel: if self.rel.is_empty() {
                name.to_string()
            } else {
                format!("{}/{name}", self.rel)
            },
            top: self.top.or(top),
            depth: self.depth + 1,
        }
    }
}

struct State {
    tasks: Vec<DirTask>,
    busy: usize,
}

/// Directories waiting to be visited; a thread takes one, visits it whole, pushes its
/// subdirectories. The walk ends when the queue is empty and no thread is busy.
pub struct Queue {
    state: Mutex<State>,
    cv: Condvar,
    /// Names of the root's subdirectories, in the order they were found.
    pub tops: Mutex<Vec<String>>,
}

fn root_task() -> DirTask {
    DirTask {
        rel: String::new(),
        top: None,
        depth: 0,
    }
}

impl Queue {
    pub fn new() -> Self {
        Self {
            state: Mutex::new(State {
                tasks: vec![root_task()],
                busy: 0,
            }),
            cv: Condvar::new(),
            tops: Mutex::new(Vec::new()),
        }
    }

    /// The root again, for another pass over the tree (`loops`); called between passes,
    /// when no thread walks.
    pub fn refill(&self) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.tasks = vec![root_task()];
        s.busy = 0;
        self.tops.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }

    /// The next directory, or `None` when the walk is over (or `stop` says so).
    pub fn pop(&self, stop: impl Fn() -> bool) -> Option<DirTask> {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if stop() {
                self.cv.notify_all();
                return None;
            }
            if let Some(t) = s.tasks.pop() {
                s.busy += 1;
                return Some(t);
            }
            if s.busy == 0 {
                self.cv.notify_all();
                return None;
            }
            s = self.cv.wait(s).unwrap_or_else(|p| p.into_inner());
        }
    }

    pub fn push(&self, t: DirTask) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.tasks.push(t);
        self.cv.notify_one();
    }

    /// The directory taken by `pop` is done.
    pub fn done(&self) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.busy -= 1;
        if s.busy == 0 && s.tasks.is_empty() {
            self.cv.notify_all();
        }
    }

    /// Registers a top-level directory; returns its index.
    pub fn add_top(&self, name: &str) -> u32 {
        let mut t = self.tops.lock().unwrap_or_else(|p| p.into_inner());
        t.push(name.to_string());
        (t.len() - 1) as u32
    }
}

impl Default for Queue {
    fn default() -> Self {
        Self::new()
    }
}

/// The entries of one directory: names (NUL-terminated) in one flat buffer.
#[derive(Default)]
pub struct Listing {
    raw: Vec<u8>,
    names: Vec<u8>,
    /// (inode, name start, name length with NUL, is a directory)
    ents: Vec<(u64, u32, u32, bool)>,
}

impl Listing {
    /// Allocates the buffers ahead of the first `read`.
    pub fn reserve(&mut self) {
        if self.raw.is_empty() {
            self.raw = vec![0u8; 64 << 10];
        }
    }

    /// Reads every entry of the open directory `dir` except `.` and `..`, in inode order.
    ///
    /// Inode order, as GNU cp opens them (seen with strace): on ext4 and xfs it is close
    /// to the order of the inodes and data on disk, so a cold walk reads forward instead of
    /// hopping in hash order (on a cold ext4 it made a 1-thread copy of 50,000 4 KiB files
    /// ~1.4x faster). The entries are already in memory; sorting them costs little.
    pub fn read(&mut self, dir: BorrowedFd<'_>) -> io::Result<()> {
        self.reserve();
        self.names.clear();
        self.ents.clear();
        loop {
            let n = sys::getdents(dir, &mut self.raw)?;
            if n == 0 {
                break;
            }
            let mut off = 0;
            while off < n {
                // linux_dirent64: u64 ino, i64 off, u16 reclen, u8 type, name[] NUL-terminated.
                let rec = &self.raw[off..n];
                let ino = u64::from_ne_bytes(rec[..8].try_into().expect("8 bytes"));
                let reclen = u16::from_ne_bytes([rec[16], rec[17]]) as usize;
                let dtype = rec[18];
                let name_area = &rec[19..reclen.min(rec.len())];
                let len = name_area
                    .iter()
                    .position(|&b| b == 0)
                    .unwrap_or(name_area.len());
                let name = &name_area[..len];
                off += reclen.max(1);
                if name == b"." || name == b".." {
                    continue;
                }
                let start = self.names.len() as u32;
                self.names.extend_from_slice(name);
                self.names.push(0);
                let is_dir = match dtype {
                    libc::DT_DIR => true,
                    libc::DT_UNKNOWN => {
                        let c = CStr::from_bytes_with_nul(&self.names[start as usize..])
                            .expect("one NUL at the end");
                        let st = sys::fstatat(dir.as_raw_fd(), c)?;
                        st.st_mode & libc::S_IFMT == libc::S_IFDIR
                    }
                    _ => false,
                };
                self.ents.push((ino, start, len as u32 + 1, is_dir));
            }
        }
        self.ents.sort_unstable_by_key(|e| e.0);
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.ents.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ents.is_empty()
    }

    pub fn name(&self, k: usize) -> &CStr {
        let (_, start, len, _) = self.ents[k];
        CStr::from_bytes_with_nul(&self.names[start as usize..(start + len) as usize])
            .expect("stored with one NUL at the end")
    }

    /// The names of the entries that are not directories.
    pub fn files(&self) -> impl Iterator<Item = &CStr> {
        (0..self.len())
            .filter(|&k| !self.is_dir(k))
            .map(|k| self.name(k))
    }

    pub fn is_dir(&self, k: usize) -> bool {
        self.ents[k].3
    }
}
