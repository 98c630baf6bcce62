//! fio's `read_iolog`: a job that issues the I/Os of a recorded trace (fio's iolog,
//! version 2 or 3) instead of drawing its own. The trace is read twice, streamed: once
//! before the job for its files and how far into each it reaches (they are laid out to
//! that), then a line at a time as the job runs, so a trace of any length replays in
//! the memory of one line and its file names.
//!
//! Timing: by default each I/O is issued when the trace says, measured from the job's
//! start (scaled by `replay_time_scale`); one the thread could not issue by then goes
//! late, and the report's `replay` says how late. `replay_no_stall` issues each as soon as
//! the one before allows.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::time::Duration;

use crate::clock::Instant;
use crate::record::Op;

/// What a trace holds before it is replayed: its format's version, its files in the order
/// they were added with how far into each its I/O reaches, and its I/O.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scan {
    pub version: u8,
    pub files: Vec<(String, u64)>,
    pub ios: u64,
    /// Path actions (unlink, rename, mkdir, rmdir, stat).
    pub paths: u64,
    pub bytes: u64,
    /// The longest I/O, bytes.
    pub max_len: u64,
}

/// What a path action does to its name (fslab's traces; fio skips these lines).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathKind {
    Unlink,
    Rmdir,
    Mkdir,
    Stat,
    /// To the action's second name.
    Rename,
}

impl PathKind {
    const ALL: [(&'static str, Self); 5] = [
        ("unlink", Self::Unlink),
        ("rmdir", Self::Rmdir),
        ("mkdir", Self::Mkdir),
        ("stat", Self::Stat),
        ("rename", Self::Rename),
    ];

    fn of(action: &str) -> Option<Self> {
        Self::ALL
            .iter()
            .find(|(n, _)| *n == action)
            .map(|(_, k)| *k)
    }

    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, k)| *k == self)
            .map_or("", |(n, _)| n)
    }
}

/// An action on a name rather than on an open file: `<time> <name> unlink`, and
/// `<time> <name> rename <new name>`. The names are the trace's, as its files' are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathOp {
    pub kind: PathKind,
    pub name: String,
    pub to: Option<String>,
}

/// One action of the trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// A read, write or trim: file number, offset, length.
    Io(Op, usize, u64, u64),
    /// fsync (`data`: fdatasync) of a file.
    Sync { file: usize, data: bool },
    /// ftruncate of a file to `size` bytes (fslab's traces; fio skips the line).
    Truncate { file: usize, size: u64 },
    /// fallocate of `len` bytes from `offset` (fslab's traces; fio skips the line).
    Allocate { file: usize, offset: u64, len: u64 },
    /// An unlink, rename, mkdir, rmdir or stat of a name.
    Path(PathOp),
}

/// One line, parsed: the time it is due (microseconds from the start, for version 3),
/// a wait (version 2, microseconds after the previous wait), a file added, or an action.
#[derive(Debug, PartialEq, Eq)]
enum Line<'a> {
    Skip,
    Add(&'a str),
    Wait(u64),
    Do(Option<u64>, &'a str, Action),
}

const HEADER_V2: &str = "fio version 2 iolog";
const HEADER_V3: &str = "fio version 3 iolog";

fn number(field: Option<&str>, what: &str) -> Result<u64, String> {
    let f = field.ok_or_else(|| format!("the {what} is missing"))?;
    f.parse()
        .map_err(|_| format!("`{f}` is not a {what} (a whole number)"))
}

/// Parses one line of a trace of `version`; `file` gives the number of a file added
/// before (the caller's table).
fn parse<'a>(
    text: &'a str,
    version: u8,
    file: &dyn Fn(&str) -> Option<usize>,
) -> Result<Line<'a>, String> {
    let mut fields = text.split_ascii_whitespace();
    let at = if version == 3 {
        match fields.next() {
            None => return Ok(Line::Skip),
            Some(t) => Some(number(Some(t), "timestamp")?),
        }
    } else {
        None
    };
    let Some(name) = fields.next() else {
        return Ok(Line::Skip);
    };
    let action = fields
        .next()
        .ok_or_else(|| format!("`{name}` has no action"))?;
    let known = |name: &str| {
        file(name).ok_or_else(|| format!("`{name}` was not added before its {action}"))
    };
    let io = |op: Op, fields: &mut std::str::SplitAsciiWhitespace<'a>| -> Result<Action, String> {
        let offset = number(fields.next(), "offset")?;
        let len = number(fields.next(), "length")?;
        if len == 0 || len > u64::from(u32::MAX) {
            return Err(format!("a length of {len} bytes"));
        }
        Ok(Action::Io(op, known(name)?, offset, len))
    };
    if let Some(kind) = PathKind::of(action) {
        let to = match kind {
            PathKind::Rename => Some(
                fields
                    .next()
                    .ok_or_else(|| format!("the rename of `{name}` has no new name"))?,
            ),
            _ => None,
        };
        if let Some(n) = std::iter::once(name).chain(to).find(|n| !stays_inside(n)) {
            return Err(format!(
                "`{n}` would lie outside the directory the trace is replayed in"
            ));
        }
        let op = PathOp {
            kind,
            name: name.to_string(),
            to: to.map(str::to_string),
        };
        return Ok(Line::Do(at, name, Action::Path(op)));
    }
    let line = match action {
        "add" => Line::Add(name),
        "open" | "close" => Line::Skip,
        "read" => Line::Do(at, name, io(Op::Read, &mut fields)?),
        "write" => Line::Do(at, name, io(Op::Write, &mut fields)?),
        "trim" => Line::Do(at, name, io(Op::Trim, &mut fields)?),
        "sync" | "datasync" => Line::Do(
            at,
            name,
            Action::Sync {
                file: known(name)?,
                data: action == "datasync",
            },
        ),
        "truncate" => Line::Do(
            at,
            name,
            Action::Truncate {
                file: known(name)?,
                size: number(fields.next(), "size")?,
            },
        ),
        "fallocate" => {
            let offset = number(fields.next(), "offset")?;
            let len = number(fields.next(), "length")?;
            if len == 0 {
                return Err("a fallocate of 0 bytes".into());
            }
            Line::Do(
                at,
                name,
                Action::Allocate {
                    file: known(name)?,
                    offset,
                    len,
                },
            )
        }
        "wait" if version == 2 => Line::Wait(number(fields.next(), "wait")?),
        "wait" => return Err("`wait` is not allowed in version 3 (its timestamps time it)".into()),
        other => {
            return Err(format!(
            "`{other}` is not an action (add, open, close, read, write, trim, sync, datasync, truncate, fallocate, unlink, rename, mkdir, rmdir, stat{})",
            if version == 2 { ", wait" } else { "" }
        ))
        }
    };
    Ok(line)
}

/// Whether a trace's name, taken relative to the replay's directory, stays in it: no
/// `..`, and not the directory itself.
pub fn stays_inside(name: &str) -> bool {
    use std::path::Component;
    let mut named = false;
    for c in Path::new(name).components() {
        match c {
            Component::Normal(_) => named = true,
            Component::ParentDir | Component::Prefix(_) => return false,
            Component::RootDir | Component::CurDir => {}
        }
    }
    named
}

/// A trace's lines, each with its number, read into one buffer.
struct Lines {
    reader: BufReader<File>,
    text: String,
    number: u64,
}

impl Lines {
    fn open(path: &Path) -> Result<(Self, u8), String> {
        let f = File::open(path).map_err(|e| format!("cannot be read: {e}"))?;
        let mut lines = Self {
            reader: BufReader::with_capacity(1 << 16, f),
            text: String::new(),
            number: 0,
        };
        let version = match lines.next()? {
            Some(HEADER_V2) => 2,
            Some(HEADER_V3) => 3,
            Some(other) => {
                return Err(format!(
                    "line 1: `{}` is not an iolog header (`{HEADER_V2}` or `{HEADER_V3}`)",
                    other.chars().take(60).collect::<String>()
                ))
            }
            None => return Err("is empty".into()),
        };
        Ok((lines, version))
    }

    fn next(&mut self) -> Result<Option<&str>, String> {
        self.text.clear();
        self.number += 1;
        match self.reader.read_line(&mut self.text) {
            Ok(0) => Ok(None),
            Ok(_) => Ok(Some(self.text.trim_end())),
            Err(e) => Err(format!("line {}: cannot be read: {e}", self.number)),
        }
    }
}

/// Reads the whole trace once: its files (in the order added) and how far into each its
/// I/O reaches, and its I/O count and bytes. Errors name the line.
pub fn scan(path: &Path) -> Result<Scan, String> {
    let (mut lines, version) = Lines::open(path)?;
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut files: Vec<(String, u64)> = Vec::new();
    let (mut ios, mut paths, mut bytes, mut max_len) = (0u64, 0u64, 0u64, 0u64);
    loop {
        let n = lines.number + 1;
        let Some(text) = lines.next()? else { break };
        let parsed = parse(text, version, &|name| index.get(name).copied())
            .map_err(|e| format!("line {n}: {e}"))?;
        match parsed {
            Line::Add(name) => {
                if !index.contains_key(name) {
                    index.insert(name.to_string(), files.len());
                    files.push((name.to_string(), 0));
                }
            }
            Line::Do(_, _, Action::Io(_, file, offset, len)) => {
                let end = offset.checked_add(len).ok_or_else(|| {
                    format!("line {n}: offset {offset} and length {len} overflow")
                })?;
                files[file].1 = files[file].1.max(end);
                ios += 1;
                bytes += len;
                max_len = max_len.max(len);
            }
            Line::Do(_, _, Action::Path(_)) => paths += 1,
            Line::Do(..) | Line::Wait(_) | Line::Skip => {}
        }
    }
    if ios == 0 && paths == 0 {
        return Err("holds no read, write, trim or path action".into());
    }
    Ok(Scan {
        version,
        files,
        ios,
        paths,
        bytes,
        max_len,
    })
}

/// What the replaying thread does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Do(Action),
    /// The next action is due then.
    Wait(Instant),
    Done,
}

/// How late the replay issued its actions against the trace's times.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Lag {
    pub actions: u64,
    /// Of them, path actions (unlink, rename, mkdir, rmdir, stat), and those skipped
    /// because the replay's directory differed from the recorded one: the name was
    /// already there or not there.
    pub paths: u64,
    pub paths_skipped: u64,
    /// Reads that found the file shorter than the recording did (counted as done).
    pub short_reads: u64,
    pub late: u64,
    pub sum_s: f64,
    pub max_s: f64,
}

/// Lateness under this is not counted: the thread's own wake-up takes about that long.
const ON_TIME: Duration = Duration::from_micros(100);

/// A trace being replayed, a line at a time.
pub struct Replay {
    lines: Lines,
    version: u8,
    index: HashMap<String, usize>,
    /// The replay's time zero: when it was first asked for an action.
    start: Option<Instant>,
    /// Trace time to replay time (`replay_time_scale`); None: as fast as possible.
    scale: Option<f64>,
    /// Version 2: the waits so far, microseconds.
    waited_us: u64,
    pending: Option<(Option<Instant>, Action)>,
    pub lag: Lag,
    pub error: Option<String>,
}

impl Replay {
    /// Files are numbered in the order the trace adds them, as `scan` numbers them.
    pub fn open(path: &Path, scale: Option<f64>) -> Result<Self, String> {
        let (lines, version) = Lines::open(path)?;
        Ok(Self {
            lines,
            version,
            index: HashMap::new(),
            start: None,
            scale,
            waited_us: 0,
            pending: None,
            lag: Lag::default(),
            error: None,
        })
    }

    /// When an action at trace time `at_us` is due.
    fn due(&mut self, at_us: Option<u64>, now: Instant) -> Option<Instant> {
        let scale = self.scale?;
        let start = *self.start.get_or_insert(now);
        // Version 3's times count from the trace's zero, not its first action, so that
        // the traces of one recording's threads, each a job, stay in step.
        let t = at_us.unwrap_or(self.waited_us);
        Some(start + Duration::from_secs_f64(t as f64 / 1e6 * scale))
    }

    /// The next line's action and when it is due, or None at the end (or at a bad
    /// line: `error` then says which).
    fn read(&mut self, now: Instant) -> Option<(Option<Instant>, Action)> {
        loop {
            let n = self.lines.number + 1;
            let text = match self.lines.next() {
                Ok(Some(t)) => t,
                Ok(None) => return None,
                Err(e) => {
                    self.error = Some(e);
                    return None;
                }
            };
            let index = &self.index;
            let found = match parse(text, self.version, &|name| index.get(name).copied()) {
                Ok(Line::Do(at, _, action)) => Some((at, action)),
                Ok(Line::Add(name)) => {
                    if !self.index.contains_key(name) {
                        let n = self.index.len();
                        self.index.insert(name.to_string(), n);
                    }
                    None
                }
                // fio drops waits under 100 us.
                Ok(Line::Wait(us)) if us >= 100 => {
                    self.waited_us += us;
                    None
                }
                Ok(_) => None,
                Err(e) => {
                    self.error = Some(format!("line {n}: {e}"));
                    return None;
                }
            };
            if let Some((at, action)) = found {
                let due = self.due(at, now);
                return Some((due, action));
            }
        }
    }

    /// The next action, if it is due at `now`.
    pub fn next(&mut self, now: Instant) -> Step {
        let Some((due, action)) = self.pending.take().or_else(|| self.read(now)) else {
            return Step::Done;
        };
        if let Some(due) = due {
            if now < due {
                self.pending = Some((Some(due), action));
                return Step::Wait(due);
            }
            let late = now.saturating_duration_since(due);
            if late > ON_TIME {
                let s = late.as_secs_f64();
                self.lag.late += 1;
                self.lag.sum_s += s;
                self.lag.max_s = self.lag.max_s.max(s);
            }
        }
        self.lag.actions += 1;
        Step::Do(action)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn trace(text: &str) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(text.as_bytes()).unwrap();
        f
    }

    #[test]
    fn a_scan_finds_the_files_and_how_far_each_reaches() {
        let t = trace(
            "fio version 3 iolog\n0 /a add\n0 /b add\n1 /a open\n5 /a write 0 4096\n9 /b read 8192 512\n12 /a sync 0 0\n20 /a trim 65536 4096\n30 /a close\n",
        );
        let s = scan(t.path()).unwrap();
        assert_eq!(s.version, 3);
        assert_eq!(s.files, vec![("/a".into(), 69632), ("/b".into(), 8704)]);
        assert_eq!((s.ios, s.bytes), (3, 4096 + 512 + 4096));
    }

    #[test]
    fn bad_lines_are_named() {
        for (text, says) in [
            (
                "fio version 3 iolog\n0 /a read 0 4096\n",
                "line 2: `/a` was not added before its read",
            ),
            (
                "fio version 3 iolog\n0 /a add\n0 /a wait 100 0\n",
                "line 3: `wait` is not allowed in version 3",
            ),
            (
                "fio version 2 iolog\n/a add\n/a copy 0 1\n",
                "line 3: `copy` is not an action",
            ),
            (
                "fio version 2 iolog\n/a add\n/a read x 1\n",
                "line 3: `x` is not a offset",
            ),
            ("hello\n", "line 1: `hello` is not an iolog header"),
            (
                "fio version 2 iolog\n/a add\n",
                "holds no read, write, trim or path action",
            ),
        ] {
            let e = scan(trace(text).path()).unwrap_err();
            assert!(e.contains(says), "{text:?}: {e}");
        }
    }

    #[test]
    fn actions_come_in_order_at_their_times() {
        let t = trace("fio version 2 iolog\n/a add\n/a write 0 4096\n/a wait 2000 0\n/a wait 50 0\n/a read 0 4096\n/a datasync 0 0\n");
        let start = Instant::now();
        let mut r = Replay::open(t.path(), Some(1.0)).unwrap();
        assert_eq!(r.next(start), Step::Do(Action::Io(Op::Write, 0, 0, 4096)));
        // The read waits for the 2 ms wait (the 50 us one is dropped, as fio drops it).
        let due = start + Duration::from_micros(2000);
        assert_eq!(r.next(start), Step::Wait(due));
        assert_eq!(r.next(due), Step::Do(Action::Io(Op::Read, 0, 0, 4096)));
        let late = due + Duration::from_millis(3);
        assert_eq!(
            r.next(late),
            Step::Do(Action::Sync {
                file: 0,
                data: true
            })
        );
        assert_eq!(r.next(late), Step::Done);
        assert_eq!((r.lag.actions, r.lag.late), (3, 1));
        assert!((r.lag.max_s - 0.003).abs() < 1e-6, "{:?}", r.lag);
        // As fast as possible: nothing waits.
        let mut r = Replay::open(t.path(), None).unwrap();
        let steps: Vec<Step> = (0..3).map(|_| r.next(start)).collect();
        assert!(steps.iter().all(|s| matches!(s, Step::Do(_))), "{steps:?}");
        assert_eq!(r.next(start), Step::Done);
    }

    #[test]
    fn fslabs_truncates_and_fallocates_are_actions_and_reach_no_further() {
        let t = trace(
            "fio version 3 iolog\n0 a add\n1 a write 0 4096\n2 a truncate 1024 0\n3 a fallocate 8192 4096\n",
        );
        let s = scan(t.path()).unwrap();
        assert_eq!((s.files.clone(), s.ios), (vec![("a".to_string(), 4096)], 1));
        let start = Instant::now();
        let mut r = Replay::open(t.path(), None).unwrap();
        let steps: Vec<Step> = (0..4).map(|_| r.next(start)).collect();
        assert_eq!(
            steps[1..],
            [
                Step::Do(Action::Truncate {
                    file: 0,
                    size: 1024
                }),
                Step::Do(Action::Allocate {
                    file: 0,
                    offset: 8192,
                    len: 4096
                }),
                Step::Done,
            ]
        );
        let e =
            scan(trace("fio version 3 iolog\n0 a add\n1 a write 0 1\n2 a fallocate 0 0\n").path())
                .unwrap_err();
        assert!(e.contains("line 4: a fallocate of 0 bytes"), "{e}");
    }

    #[test]
    fn path_actions_need_no_added_file_and_stay_in_the_directory() {
        let t = trace(
            "fio version 3 iolog\n0 a add\n1 a write 0 10\n2 d mkdir\n3 a rename d/b\n4 d/b stat\n5 d/b unlink\n6 d rmdir\n",
        );
        assert_eq!(scan(t.path()).unwrap().ios, 1);
        let mut r = Replay::open(t.path(), None).unwrap();
        let start = Instant::now();
        let op = |kind, name: &str, to: Option<&str>| {
            Step::Do(Action::Path(PathOp {
                kind,
                name: name.into(),
                to: to.map(Into::into),
            }))
        };
        let steps: Vec<Step> = (0..7).map(|_| r.next(start)).collect();
        assert_eq!(
            steps[1..],
            [
                op(PathKind::Mkdir, "d", None),
                op(PathKind::Rename, "a", Some("d/b")),
                op(PathKind::Stat, "d/b", None),
                op(PathKind::Unlink, "d/b", None),
                op(PathKind::Rmdir, "d", None),
                Step::Done,
            ]
        );
        for (text, says) in [
            ("0 a rename\n", "line 4: the rename of `a` has no new name"),
            ("0 ../x unlink\n", "line 4: `../x` would lie outside"),
            ("0 a rename /\n", "line 4: `/` would lie outside"),
        ] {
            let t = trace(&format!(
                "fio version 3 iolog\n0 a add\n0 a write 0 1\n{text}"
            ));
            let e = scan(t.path()).unwrap_err();
            assert!(e.contains(says), "{text:?}: {e}");
        }
    }

    #[test]
    fn a_version_3_trace_is_timed_from_its_zero() {
        let t = trace(
            "fio version 3 iolog\n100 /a add\n1000 /a write 0 4096\n3000 /a write 4096 4096\n",
        );
        let start = Instant::now();
        let mut r = Replay::open(t.path(), Some(0.5)).unwrap();
        let first = start + Duration::from_micros(500);
        assert_eq!(r.next(start), Step::Wait(first));
        assert_eq!(r.next(first), Step::Do(Action::Io(Op::Write, 0, 0, 4096)));
        assert_eq!(
            r.next(first),
            Step::Wait(start + Duration::from_micros(1500))
        );
    }
}
