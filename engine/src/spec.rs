//! The job: what a user writes (`JobSpec`), and what the engine runs (`Job`).
//!
//! Keys use fio's names where the concept is the same. Parsing goes in three steps so
//! that one run reports every mistake at once: unknown keys (with the closest known key),
//! then each key's type on its own, then ranges and combinations.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{JobError, JobErrors};
use crate::report::Warning;
use crate::units::{parse_duration, parse_size};

pub const MAX_NUMJOBS: u32 = 1024;
pub const MAX_IODEPTH: u32 = 4096;
pub const MAX_BS: u64 = 1 << 30;
pub const MIN_INTERVAL: Duration = Duration::from_millis(100);
pub const MAX_NR_FILES: u64 = 100_000_000;
pub const MAX_FILES_PER_DIR: u64 = 10_000_000;
pub const MAX_FILE_SIZE: u64 = 64 << 30;
/// Keys that only a files job uses.
const FILES_KEYS: &[&str] = &[
    "op",
    "dest",
    "nr_files",
    "file_size",
    "size_dist",
    "size_sigma",
    "size_buckets",
    "files_per_dir",
    "dup_share",
    "mutate_share",
    "mode",
];
/// Keys of the application models and the kinds that use them.
const APP_KEYS: &[(&str, &[Kind])] = &[
    ("data_size", &[Kind::Oltp, Kind::Mailstore]),
    ("log_size", &[Kind::Oltp, Kind::Mailstore]),
    ("page_size", &[Kind::Oltp, Kind::Mailstore]),
    ("cache_size", &[Kind::Oltp, Kind::Mailstore]),
    ("checkpoint_interval", &[Kind::Oltp, Kind::Mailstore]),
    ("log_record_size", &[Kind::Oltp, Kind::Mailstore]),
    ("txn_reads", &[Kind::Oltp]),
    ("txn_writes", &[Kind::Oltp]),
    ("scan_share", &[Kind::Oltp]),
    ("scan_size", &[Kind::Oltp]),
    ("op_mix", &[Kind::Mailstore]),
    ("lazy_commit_share", &[Kind::Mailstore]),
    ("maintenance_rate", &[Kind::Mailstore]),
    ("read_lat_ms_max", &[Kind::Mailstore]),
    ("log_lat_ms_max", &[Kind::Mailstore]),
];
pub const MAX_PAGE_SIZE: u64 = 1 << 20;
pub const MAX_APP_TXN_PAGES: u32 = 1024;
/// Latencies above this are clamped in the histogram; a job should not get near it.
pub const MAX_RUNTIME: Duration = Duration::from_secs(7 * 24 * 3600);

/// Direction and order of the I/O (fio's `rw`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Rw {
    /// Sequential reads.
    Read,
    /// Sequential writes.
    Write,
    /// Uniformly random reads.
    Randread,
    /// Uniformly random writes.
    Randwrite,
    /// Uniformly random reads and writes, mixed by `rwmixread`.
    Randrw,
    /// Sequential reads and writes, mixed by `rwmixread`.
    Readwrite,
}

impl Rw {
    pub fn is_random(self) -> bool {
        matches!(self, Rw::Randread | Rw::Randwrite | Rw::Randrw)
    }
    pub fn is_mixed(self) -> bool {
        matches!(self, Rw::Randrw | Rw::Readwrite)
    }
    pub fn reads(self) -> bool {
        !matches!(self, Rw::Write | Rw::Randwrite)
    }
    pub fn writes(self) -> bool {
        !matches!(self, Rw::Read | Rw::Randread)
    }
}

/// How the I/O is issued (fio's `ioengine`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum IoEngine {
    /// Linux io_uring: one ring per thread, `iodepth` requests in flight.
    IoUring,
    /// `pread`/`pwrite`, one request at a time per thread.
    Sync,
    /// No I/O at all: measures the engine's own cost per operation.
    Null,
}

/// What write buffers contain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum BufferContent {
    /// Random bytes, incompressible and not deduplicable.
    Random,
    /// All zeros (compresses to nothing: only for testing compression or dedup).
    Zeros,
}

/// What a job does: block I/O on a file or device, or file management on a tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Reads and writes on one file or device (`rw`, `bs`, `iodepth`...).
    #[default]
    Block,
    /// One file-management operation (`op`) on a tree of files under `directory`.
    Files,
    /// I/O model of a database: 8 KiB page reads, dirty pages flushed at checkpoints,
    /// a log with group commit, some 64 KiB scans. `numjobs` are users.
    Oltp,
    /// I/O model of a mail store (JetStress-like): 32 KiB pages through a buffer cache,
    /// an insert/delete/replace/read mix, lazy commits, background maintenance, a verdict.
    Mailstore,
}

impl Kind {
    pub fn is_block(&self) -> bool {
        *self == Kind::Block
    }
    /// An application model (`oltp`, `mailstore`).
    pub fn is_app(self) -> bool {
        matches!(self, Kind::Oltp | Kind::Mailstore)
    }
    pub fn name(self) -> &'static str {
        match self {
            Kind::Block => "block",
            Kind::Files => "files",
            Kind::Oltp => "oltp",
            Kind::Mailstore => "mailstore",
        }
    }
}

/// A file-management operation (`kind = "files"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FileOp {
    /// Generate the file set under `directory` (`nr_files`, `file_size`...).
    Create,
    /// Copy the tree `directory` to `dest`, keeping mode and times (like `cp -a`).
    Copy,
    /// Make `dest` equal `directory`: copy files whose size or mtime differ, delete what vanished (like `rsync -a --delete`).
    Sync,
    /// Change `mutate_share` of the files in place (content and mtime), delete and create a few.
    Mutate,
    /// Walk and statx every entry: bytes and files per top-level directory (like `du -sb`).
    Scan,
    /// Find files with equal content: by size, then a hash of the first 4 KiB, then the whole file.
    Dupes,
    /// Set every file's times to now (utimensat).
    Touch,
    /// Set every file's mode to `mode` (fchmodat).
    Chmod,
    /// Set one user xattr (`user.fslab`) on every file.
    Xattr,
    /// Remove the whole tree.
    Delete,
    /// fstatat every file.
    Stat,
}

impl FileOp {
    pub fn name(self) -> &'static str {
        match self {
            FileOp::Create => "create",
            FileOp::Copy => "copy",
            FileOp::Sync => "sync",
            FileOp::Mutate => "mutate",
            FileOp::Scan => "scan",
            FileOp::Dupes => "dupes",
            FileOp::Touch => "touch",
            FileOp::Chmod => "chmod",
            FileOp::Xattr => "xattr",
            FileOp::Delete => "delete",
            FileOp::Stat => "stat",
        }
    }
}

/// How file sizes are drawn in a generated set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SizeDist {
    /// Every file is `file_size`.
    Fixed,
    /// Lognormal with median `file_size` and shape `size_sigma`.
    Lognormal,
}

/// A file mode: a number (TOML `0o644`) or an octal string (`"644"`, `"0644"`).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ModeValue {
    Bits(u32),
    Text(String),
}

/// A size: bytes as a number, or a string with a binary suffix (`4k`, `64KiB`, `1g`).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum SizeValue {
    Bytes(u64),
    Text(String),
}

/// A duration: seconds as a number, or a string with a unit (`500ms`, `30s`, `2m`).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum DurationValue {
    Seconds(f64),
    Text(String),
}

/// A job as written in TOML or JSON. Every key is optional; `Job` holds the defaults.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "fslab-engine job")]
pub struct JobSpec {
    /// Name of the job; also the stem of per-thread files made in `directory`. Default `job`.
    pub name: Option<String>,
    /// I/O pattern. Default `read`.
    pub rw: Option<Rw>,
    /// Percentage of reads in a mixed job (`randrw`, `readwrite`), 0..=100. Default 50.
    pub rwmixread: Option<u32>,
    /// Block size of each I/O. Default 4KiB.
    pub bs: Option<SizeValue>,
    /// Size of the file (or the region of the device) I/O goes to. Required for a file
    /// that does not exist yet; a device defaults to its whole size.
    pub size: Option<SizeValue>,
    /// Bytes each thread transfers in a size-based job. Default `size`. Not with `runtime`.
    pub io_size: Option<SizeValue>,
    /// File or block device to do I/O on; all threads share it. Relative to `directory` if both are given.
    pub filename: Option<String>,
    /// Directory in which each thread gets its own file `<name>.<thread>.0`.
    pub directory: Option<String>,
    /// Number of threads, each with its own queue. 1..=1024. Default 1.
    pub numjobs: Option<u32>,
    /// Requests in flight per thread (io_uring only). 1..=4096. Default 1.
    pub iodepth: Option<u32>,
    /// Completions to wait for per wake-up (io_uring). 1 reaps each request as soon as it is
    /// done: the most faithful latency. More saves CPU on a busy machine, but a request
    /// that completed early is timed when it is reaped. 1..=`iodepth` (`sync`, `null`: only 1). Default 1.
    pub iodepth_batch_complete_min: Option<u32>,
    /// Bypass the page cache with O_DIRECT. Default false.
    pub direct: Option<bool>,
    /// Run for this long (time-based, after `ramp_time`); without it the job is size-based.
    pub runtime: Option<DurationValue>,
    /// Run this long before measuring; shown in the series, excluded from the results. Default 0.
    pub ramp_time: Option<DurationValue>,
    /// fsync the file after every N writes; 0 never. Default 0.
    pub fsync: Option<u64>,
    /// fsync the file once when the job ends (timed as part of it). Default false.
    pub end_fsync: Option<bool>,
    /// How I/O is issued. Default `io_uring`.
    pub ioengine: Option<IoEngine>,
    /// Content of write buffers. Default `random`.
    pub buffer_content: Option<BufferContent>,
    /// Seed for offsets, read/write mix and buffer content. Default 0x5eed.
    pub randseed: Option<u64>,
    /// Length of one point of the time series; 100ms or more. Default 1s.
    pub interval: Option<DurationValue>,
    /// Allow writes to a block device. Default false. fslab's lab runs its safety gate first.
    pub allow_device_write: Option<bool>,
    /// Synthetic latency the `null` engine spins for per I/O (for testing what sits above the engine). Default 0.
    pub null_lat: Option<DurationValue>,
    /// `block` (I/O on a file or device), `files` (one file-management `op` on a tree under `directory`), or an application model under `directory`: `oltp` (a database) or `mailstore` (an Exchange-like store; see docs/engine.md). Default `block`.
    pub kind: Option<Kind>,
    /// Files job: the operation. Required with `kind = "files"`.
    pub op: Option<FileOp>,
    /// Files job: the tree `copy` and `sync` write to (`directory` is the source).
    pub dest: Option<String>,
    /// Files job, `create`: number of files, 1..=100M. Default 1000.
    pub nr_files: Option<u64>,
    /// Files job, `create`: size of each file (the median with `size_dist = "lognormal"`). Default 16KiB.
    pub file_size: Option<SizeValue>,
    /// Files job, `create`: `fixed` or `lognormal`. Default `fixed`.
    pub size_dist: Option<SizeDist>,
    /// Files job, `create`: shape of the lognormal sizes (sigma of the underlying normal), 0..=4. Default 1.
    pub size_sigma: Option<f64>,
    /// Files job, `create`: sizes as `[[size, weight], ...]` buckets; not with `file_size`/`size_dist`.
    pub size_buckets: Option<Vec<(SizeValue, f64)>>,
    /// Files job, `create`: files per directory, 1..=10M; over 1000 directories are grouped under `gNNNN/`. Default 1000.
    pub files_per_dir: Option<u64>,
    /// Files job, `create`: share of files whose content duplicates another file's, 0..=1. Default 0.
    pub dup_share: Option<f64>,
    /// Files job, `mutate`: share of files changed in place, 0..=1 (a quarter as many more are deleted and replaced by new ones). Default 0.1.
    pub mutate_share: Option<f64>,
    /// Files job, `chmod`: the mode to set, e.g. `"0640"`. Default `"0640"`.
    pub mode: Option<ModeValue>,
    /// oltp, mailstore: size of the data file `<directory>/<name>.data`. Default 256MiB.
    pub data_size: Option<SizeValue>,
    /// oltp, mailstore: size of the log file `<directory>/<name>.log`, written round-robin; 1MiB or more. Default 64MiB.
    pub log_size: Option<SizeValue>,
    /// oltp, mailstore: size of a data page (every data read and write but scans). Default 8KiB (oltp), 32KiB (mailstore).
    pub page_size: Option<SizeValue>,
    /// oltp, mailstore: buffer cache; a page read that hits it costs no I/O (random replacement). Default 0 (oltp), 64MiB (mailstore).
    pub cache_size: Option<SizeValue>,
    /// oltp, mailstore: time between checkpoints, which write every dirty page in a burst and fsync the data file. Default 5s (oltp), 1s (mailstore).
    pub checkpoint_interval: Option<DurationValue>,
    /// oltp, mailstore: log bytes one committing transaction adds. Default 512 (oltp), 2KiB (mailstore).
    pub log_record_size: Option<SizeValue>,
    /// oltp: page reads per transaction, 0..=1024. Default 11 (with `txn_writes` 2: reads:writes 5.5:1).
    pub txn_reads: Option<u32>,
    /// oltp: pages a transaction updates (dirties), 0..=1024. Default 2.
    pub txn_writes: Option<u32>,
    /// oltp: share of transactions that are a read-ahead scan (one `scan_size` read, no commit), 0..=1. Default 0.05.
    pub scan_share: Option<f64>,
    /// oltp: size of a scan's read, a multiple of `page_size`. Default 64KiB.
    pub scan_size: Option<SizeValue>,
    /// mailstore: weights of the operations `[insert, delete, replace, read]`. Default `[40, 20, 5, 35]`.
    pub op_mix: Option<Vec<f64>>,
    /// mailstore: share of committing transactions that do not wait for their log flush, 0..=1. Default 0.7.
    pub lazy_commit_share: Option<f64>,
    /// mailstore: bytes per second of background maintenance (a sequential read of the data file); 0 none. Default 1MiB.
    pub maintenance_rate: Option<SizeValue>,
    /// mailstore: the verdict fails when the mean data read latency reaches this, ms. Default 20.
    pub read_lat_ms_max: Option<f64>,
    /// mailstore: the verdict fails when the mean log write latency reaches this, ms. Default 10.
    pub log_lat_ms_max: Option<f64>,
}

/// A job with every default filled in and every value checked; echoed as `job` in the
/// output. Sizes are bytes and durations seconds, so the echo is itself a valid job.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Job {
    pub name: String,
    pub rw: Rw,
    pub rwmixread: u32,
    pub bs: u64,
    /// Filled in from the target when the job leaves it out (a device's size).
    pub size: Option<u64>,
    /// `None` in a time-based job.
    pub io_size: Option<u64>,
    pub filename: Option<String>,
    pub directory: Option<String>,
    pub numjobs: u32,
    pub iodepth: u32,
    pub iodepth_batch_complete_min: u32,
    pub direct: bool,
    /// Seconds; `None` in a size-based job.
    pub runtime: Option<f64>,
    /// Seconds.
    pub ramp_time: f64,
    pub fsync: u64,
    pub end_fsync: bool,
    pub ioengine: IoEngine,
    pub buffer_content: BufferContent,
    pub randseed: u64,
    /// Seconds.
    pub interval: f64,
    pub allow_device_write: bool,
    /// Seconds.
    pub null_lat: f64,
    #[serde(skip_serializing_if = "Kind::is_block")]
    pub kind: Kind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub op: Option<FileOp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dest: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nr_files: Option<u64>,
    /// Bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_size: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size_dist: Option<SizeDist>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size_sigma: Option<f64>,
    /// `[bytes, weight]` pairs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size_buckets: Option<Vec<(u64, f64)>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files_per_dir: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dup_share: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mutate_share: Option<f64>,
    /// Octal, e.g. `"0640"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// oltp, mailstore: the model's keys, resolved.
    #[serde(flatten)]
    pub app: Option<AppJob>,
}

/// The keys of an application model (`kind = "oltp"`, `"mailstore"`), resolved. Sizes
/// in bytes, durations in seconds.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct AppJob {
    pub data_size: u64,
    pub log_size: u64,
    pub page_size: u64,
    pub cache_size: u64,
    pub checkpoint_interval: f64,
    pub log_record_size: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub txn_reads: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub txn_writes: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scan_share: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scan_size: Option<u64>,
    /// `[insert, delete, replace, read]` weights.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub op_mix: Option<Vec<f64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lazy_commit_share: Option<f64>,
    /// Bytes per second.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub maintenance_rate: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_lat_ms_max: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_lat_ms_max: Option<f64>,
}

impl AppJob {
    pub fn checkpoint_interval(&self) -> Duration {
        Duration::from_secs_f64(self.checkpoint_interval)
    }
}

impl Job {
    pub fn writes(&self) -> bool {
        self.rw.writes()
    }
    pub fn runtime(&self) -> Option<Duration> {
        self.runtime.map(Duration::from_secs_f64)
    }
    pub fn ramp_time(&self) -> Duration {
        Duration::from_secs_f64(self.ramp_time)
    }
    pub fn interval(&self) -> Duration {
        Duration::from_secs_f64(self.interval)
    }
    pub fn null_lat(&self) -> Duration {
        Duration::from_secs_f64(self.null_lat)
    }
    /// The `mode` of a chmod job as bits.
    pub fn mode_bits(&self) -> u32 {
        self.mode
            .as_deref()
            .and_then(|m| u32::from_str_radix(m, 8).ok())
            .unwrap_or(0o640)
    }
    /// The path each thread does I/O on (`None` for the null engine).
    pub fn path_for(&self, thread: u32) -> Option<PathBuf> {
        if self.ioengine == IoEngine::Null {
            return None;
        }
        match (&self.directory, &self.filename) {
            (Some(dir), Some(file)) => Some(PathBuf::from(dir).join(file)),
            (None, Some(file)) => Some(PathBuf::from(file)),
            (Some(dir), None) => Some(PathBuf::from(dir).join(format!("{}.{thread}.0", self.name))),
            (None, None) => None,
        }
    }
}

/// The keys a job may have, taken from the schema so they cannot drift from `JobSpec`.
pub fn known_keys() -> Vec<String> {
    let schema = schemars::schema_for!(JobSpec);
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

/// The closest known word, if one is close enough to be a likely typo.
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (strsim::damerau_levenshtein(word, c), c))
        .filter(|(d, c)| *d <= (c.len().max(word.len()) / 3).max(1) + usize::from(word.len() > 5))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Reads a job from TOML or JSON text (JSON if it starts with `{`).
pub fn parse_text(text: &str) -> Result<Value, JobErrors> {
    if text.trim_start().starts_with('{') {
        serde_json::from_str(text)
            .map_err(|e| JobError::whole(format!("not valid JSON: {e}")).into())
    } else {
        let table: toml::Table = toml::from_str(text).map_err(|e| {
            JobErrors::from(JobError::whole(format!(
                "not valid TOML: {}",
                e.to_string().trim_end()
            )))
        })?;
        // JSON has no NaN or infinity: converted, TOML's `nan` would become null, and a
        // null key means "use the default". Refuse it instead.
        let bad: Vec<JobError> = table
            .iter()
            .filter(|(_, v)| has_non_finite(v))
            .map(|(k, _)| {
                JobError::new(
                    k,
                    "is not a finite number (`nan` and `inf` are not allowed)",
                )
            })
            .collect();
        if !bad.is_empty() {
            return Err(JobErrors(bad));
        }
        serde_json::to_value(table).map_err(|e| JobError::whole(e.to_string()).into())
    }
}

fn has_non_finite(v: &toml::Value) -> bool {
    match v {
        toml::Value::Float(f) => !f.is_finite(),
        toml::Value::Array(a) => a.iter().any(has_non_finite),
        toml::Value::Table(t) => t.values().any(has_non_finite),
        _ => false,
    }
}

/// Turns a parsed document into a `JobSpec`, reporting every unknown key and every
/// mistyped value at once.
pub fn spec_from_value(value: Value) -> Result<JobSpec, JobErrors> {
    let Value::Object(map) = value else {
        return Err(JobError::whole(
            "a job must be a table of keys (a TOML file or a JSON object)",
        )
        .into());
    };
    let known = known_keys();
    let mut errors = Vec::new();
    for (key, val) in &map {
        if !known.iter().any(|k| k == key) {
            let mut e = JobError::new(key, "unknown key");
            e = match closest(key, known.iter().map(String::as_str)) {
                Some(k) => e.hint(format!("did you mean `{k}`?")),
                None => e.hint(format!("known keys: {}", known.join(", "))),
            };
            errors.push(e);
            continue;
        }
        let mut one = Map::new();
        one.insert(key.clone(), val.clone());
        if let Err(e) = serde_json::from_value::<JobSpec>(Value::Object(one)) {
            errors.push(type_error(key, val, &e.to_string()));
        }
    }
    if !errors.is_empty() {
        return Err(JobErrors(errors));
    }
    serde_json::from_value(Value::Object(map)).map_err(|e| JobError::whole(e.to_string()).into())
}

/// Rewords serde's message for one key, and suggests the closest allowed value.
fn type_error(key: &str, val: &Value, serde_msg: &str) -> JobError {
    let msg = serde_msg
        .split(" at line ")
        .next()
        .unwrap_or(serde_msg)
        .to_string();
    let mut e = JobError::new(key, format!("{msg} (got {val})"));
    if let (Some(start), Some(got)) = (msg.find("expected one of "), val.as_str()) {
        let allowed: Vec<&str> = msg[start + 16..]
            .split(", ")
            .map(|s| s.trim_matches(|c| c == '`' || c == ' '))
            .collect();
        e.message = format!(
            "`{got}` is not allowed; allowed: {}",
            allowed
                .iter()
                .map(|a| format!("`{a}`"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        if let Some(c) = closest(got, allowed.iter().copied()) {
            e = e.hint(format!("did you mean `{c}`?"));
        }
    } else if msg.contains("untagged enum SizeValue") {
        e.message = format!("{val} is not a size");
        e = e.hint("write bytes as a number, or a string such as `4k`, `64KiB`, `1g`");
    } else if msg.contains("untagged enum DurationValue") {
        e.message = format!("{val} is not a duration");
        e = e.hint("write seconds as a number, or a string such as `500ms`, `30s`, `2m`");
    }
    e
}

fn size(key: &str, v: &Option<SizeValue>, errors: &mut Vec<JobError>) -> Option<u64> {
    match v.as_ref()? {
        SizeValue::Bytes(b) => Some(*b),
        SizeValue::Text(t) => {
            match parse_size(t) {
                Ok(b) => Some(b),
                Err(e) => {
                    errors.push(JobError::new(key, e.to_string()).hint(
                        "sizes are binary: `4k`, `64KiB`, `1g`, `1.5GiB`, or bytes as a number",
                    ));
                    None
                }
            }
        }
    }
}

fn duration(key: &str, v: &Option<DurationValue>, errors: &mut Vec<JobError>) -> Option<Duration> {
    match v.as_ref()? {
        DurationValue::Seconds(s)
            if s.is_finite() && *s >= 0.0 && *s < MAX_RUNTIME.as_secs_f64() =>
        {
            Some(Duration::from_secs_f64(*s))
        }
        DurationValue::Seconds(s) => {
            errors.push(JobError::new(
                key,
                format!("{s} seconds is out of range (0 to 7 days)"),
            ));
            None
        }
        DurationValue::Text(t) => match parse_duration(t) {
            Ok(d) => Some(d),
            Err(e) => {
                errors.push(JobError::new(key, e.to_string()).hint(
                    "durations take a unit: `100ms`, `30s`, `2m`, `1h`; a bare number is seconds",
                ));
                None
            }
        },
    }
}

fn range<T: PartialOrd + std::fmt::Display + Copy>(
    key: &str,
    v: T,
    lo: T,
    hi: T,
    errors: &mut Vec<JobError>,
) {
    // `contains` is false for NaN (TOML can write `nan`), so NaN is out of range too.
    if !(lo..=hi).contains(&v) {
        errors.push(JobError::new(
            key,
            format!("{v} is out of range ({lo}..={hi})"),
        ));
    }
}

impl JobSpec {
    /// Checks every value and combination, fills in defaults. Does not look at the target.
    pub fn resolve(&self) -> Result<Job, JobErrors> {
        let mut errors = Vec::new();
        let e = &mut errors;
        let kind = self.kind.unwrap_or_default();
        let ioengine = self.ioengine.unwrap_or(if kind.is_app() {
            IoEngine::Sync
        } else {
            IoEngine::IoUring
        });
        let rw = self.rw.unwrap_or(Rw::Read);

        let rwmixread = self.rwmixread.unwrap_or(50);
        range("rwmixread", rwmixread, 0, 100, e);

        let bs = size("bs", &self.bs, e).unwrap_or(4096);
        range("bs", bs, 1, MAX_BS, e);
        // A database bypasses the page cache for its own; a block job measures it.
        let direct = self.direct.unwrap_or(kind.is_app());
        if direct && bs % 512 != 0 {
            e.push(
                JobError::new(
                    "bs",
                    format!("{bs} is not a multiple of 512, which `direct = true` needs"),
                )
                .hint("use a multiple of the device's logical block size, e.g. `4k`"),
            );
        }
        let size_b = size("size", &self.size, e);
        if let Some(s) = size_b {
            if s < bs {
                e.push(JobError::new(
                    "size",
                    format!("{s} is smaller than `bs` ({bs}): no I/O fits"),
                ));
            }
        }
        let io_size = size("io_size", &self.io_size, e);
        if let Some(s) = io_size {
            if s < bs {
                e.push(JobError::new(
                    "io_size",
                    format!("{s} is smaller than `bs` ({bs}): no I/O fits"),
                ));
            }
        }

        let numjobs = self.numjobs.unwrap_or(1);
        range("numjobs", numjobs, 1, MAX_NUMJOBS, e);
        let iodepth = self.iodepth.unwrap_or(1);
        if ioengine == IoEngine::IoUring {
            range("iodepth", iodepth, 1, MAX_IODEPTH, e);
        } else if iodepth != 1 {
            let engine = serde_json::to_value(ioengine).unwrap_or_default();
            e.push(
                JobError::new(
                    "iodepth",
                    format!("{iodepth} is out of range (1..=1) for ioengine = {engine}, which has one request in flight per thread"),
                )
                .hint("use `ioengine = \"io_uring\"` for a queue depth above 1, or more `numjobs`"),
            );
        }

        // Like `iodepth`, 1 (the default) is accepted with any engine: the resolved job
        // echoes it for every engine, and that echo must be a valid job again.
        let batch_min = self.iodepth_batch_complete_min.unwrap_or(1);
        if ioengine == IoEngine::IoUring {
            range(
                "iodepth_batch_complete_min",
                batch_min,
                1,
                iodepth.max(1),
                e,
            );
        } else if batch_min != 1 {
            let engine = serde_json::to_value(ioengine).unwrap_or_default();
            e.push(
                JobError::new(
                    "iodepth_batch_complete_min",
                    format!("{batch_min} only applies to `ioengine = \"io_uring\"`; ioengine = {engine} reaps each request alone (1)"),
                )
                .hint("leave it out, or use `ioengine = \"io_uring\"`"),
            );
        }

        let runtime = duration("runtime", &self.runtime, e);
        if runtime == Some(Duration::ZERO) {
            e.push(
                JobError::new("runtime", "0 is out of range (more than 0)")
                    .hint("leave `runtime` out for a size-based job"),
            );
        }
        if runtime.is_some() && io_size.is_some() {
            e.push(
                JobError::new("io_size", "cannot be combined with `runtime`")
                    .hint("a job is either time-based (`runtime`) or size-based (`io_size`)"),
            );
        }
        let ramp_time = duration("ramp_time", &self.ramp_time, e).unwrap_or(Duration::ZERO);
        let interval = duration("interval", &self.interval, e).unwrap_or(Duration::from_secs(1));
        if interval < MIN_INTERVAL {
            e.push(JobError::new(
                "interval",
                format!("{interval:?} is out of range (100ms or more)"),
            ));
        }
        let null_lat = duration("null_lat", &self.null_lat, e).unwrap_or(Duration::ZERO);
        if null_lat > Duration::ZERO && ioengine != IoEngine::Null {
            e.push(JobError::new(
                "null_lat",
                "only applies to `ioengine = \"null\"`",
            ));
        }
        if null_lat > Duration::from_secs(1) {
            e.push(JobError::new(
                "null_lat",
                format!("{null_lat:?} is out of range (0 to 1s)"),
            ));
        }

        let fsync = self.fsync.unwrap_or(0);
        let end_fsync = self.end_fsync.unwrap_or(false);
        if (fsync > 0 || end_fsync) && !rw.writes() {
            e.push(
                JobError::new(
                    if fsync > 0 { "fsync" } else { "end_fsync" },
                    format!("has nothing to flush: rw = {:?} does not write", rw).to_lowercase(),
                )
                .hint("leave it out, or pick a `rw` that writes"),
            );
        }

        let name = self.name.clone().unwrap_or_else(|| "job".to_string());
        if name.is_empty() || name.contains('/') || name.contains('\0') {
            e.push(JobError::new(
                "name",
                format!("{name:?} cannot be used in a file name"),
            ));
        }

        let files = self.resolve_files(kind, e);
        let app = self.resolve_app(kind, ioengine, direct, runtime, e);
        let needs_target = ioengine != IoEngine::Null;
        if kind == Kind::Block
            && needs_target
            && self.filename.is_none()
            && self.directory.is_none()
        {
            e.push(
                JobError::whole("missing target: the job names no `filename` and no `directory`")
                    .hint("add `filename = \"/path/to/file\"` (or a block device), or `directory = \"/path\"` for one file per thread"),
            );
        }
        for key in ["filename", "directory"] {
            let v = if key == "filename" {
                &self.filename
            } else {
                &self.directory
            };
            if v.as_deref() == Some("") {
                e.push(JobError::new(key, "is empty"));
            }
        }

        if !errors.is_empty() {
            return Err(JobErrors(errors));
        }
        // Offsets for the null engine need a range; it never touches it.
        let size_b = size_b.or(if needs_target || kind == Kind::Files {
            None
        } else {
            Some(1 << 30)
        });
        Ok(Job {
            name,
            rw,
            rwmixread,
            bs,
            size: size_b,
            io_size: if runtime.is_some() {
                None
            } else {
                io_size.or(size_b)
            },
            filename: self.filename.clone(),
            directory: self.directory.clone(),
            numjobs,
            iodepth,
            iodepth_batch_complete_min: batch_min,
            direct,
            runtime: runtime.map(|d| d.as_secs_f64()),
            ramp_time: ramp_time.as_secs_f64(),
            fsync,
            end_fsync,
            ioengine,
            buffer_content: self.buffer_content.unwrap_or(BufferContent::Random),
            randseed: self.randseed.unwrap_or(0x5eed),
            interval: interval.as_secs_f64(),
            allow_device_write: self.allow_device_write.unwrap_or(false),
            null_lat: null_lat.as_secs_f64(),
            kind,
            op: files.op,
            dest: files.dest,
            nr_files: files.nr_files,
            file_size: files.file_size,
            size_dist: files.size_dist,
            size_sigma: files.size_sigma,
            size_buckets: files.size_buckets,
            files_per_dir: files.files_per_dir,
            dup_share: files.dup_share,
            mutate_share: files.mutate_share,
            mode: files.mode,
            app,
        })
    }

    /// The keys of an application model, checked; `None` for other kinds.
    fn resolve_app(
        &self,
        kind: Kind,
        ioengine: IoEngine,
        direct: bool,
        runtime: Option<Duration>,
        e: &mut Vec<JobError>,
    ) -> Option<AppJob> {
        for (key, kinds) in APP_KEYS {
            if self.key_set(key) && !kinds.contains(&kind) {
                let names: Vec<_> = kinds
                    .iter()
                    .map(|k| format!("`kind = \"{}\"`", k.name()))
                    .collect();
                e.push(
                    JobError::new(*key, format!("only applies to {}", names.join(" or ")))
                        .hint("remove it, or set the kind it belongs to"),
                );
            }
        }
        if !kind.is_app() {
            return None;
        }
        let oltp = kind == Kind::Oltp;
        if ioengine != IoEngine::Sync {
            let engine = serde_json::to_value(ioengine).unwrap_or_default();
            e.push(
                JobError::new(
                    "ioengine",
                    format!(
                        "{engine} is not supported with `kind = \"{}\"`",
                        kind.name()
                    ),
                )
                .hint("use `ioengine = \"sync\"` (the default): each user does one I/O at a time"),
            );
        }
        match self.directory.as_deref() {
            None | Some("") => e.push(
                JobError::new(
                    "directory",
                    format!("is required with `kind = \"{}\"`", kind.name()),
                )
                .hint("where the data and log files go, e.g. `directory = \"/mnt/test\"`"),
            ),
            Some(_) => {}
        }
        if self.filename.is_some() {
            e.push(JobError::new(
                "filename",
                "does not apply to an application model: its files are `<directory>/<name>.data` and `.log`",
            ));
        }
        if runtime.is_none() {
            e.push(
                JobError::new(
                    "runtime",
                    format!("is required with `kind = \"{}\"`", kind.name()),
                )
                .hint("an application model runs for a time, e.g. `runtime = \"60s\"`"),
            );
        }
        let page_size =
            size("page_size", &self.page_size, e).unwrap_or(if oltp { 8 << 10 } else { 32 << 10 });
        range("page_size", page_size, 512, MAX_PAGE_SIZE, e);
        if page_size % 512 != 0 {
            e.push(JobError::new(
                "page_size",
                format!("{page_size} is not a multiple of 512"),
            ));
        }
        let data_size = size("data_size", &self.data_size, e).unwrap_or(256 << 20);
        range(
            "data_size",
            data_size,
            page_size.max(1) * 16,
            MAX_FILE_SIZE,
            e,
        );
        let log_size = size("log_size", &self.log_size, e).unwrap_or(64 << 20);
        range("log_size", log_size, 1 << 20, MAX_FILE_SIZE, e);
        let cache_size =
            size("cache_size", &self.cache_size, e).unwrap_or(if oltp { 0 } else { 64 << 20 });
        range("cache_size", cache_size, 0, MAX_FILE_SIZE, e);
        let ckpt = duration("checkpoint_interval", &self.checkpoint_interval, e)
            .unwrap_or(Duration::from_secs(if oltp { 5 } else { 1 }));
        if ckpt < MIN_INTERVAL {
            e.push(JobError::new(
                "checkpoint_interval",
                format!("{ckpt:?} is out of range (100ms or more)"),
            ));
        }
        let log_record_size = size("log_record_size", &self.log_record_size, e)
            .unwrap_or(if oltp { 512 } else { 2 << 10 });
        range("log_record_size", log_record_size, 1, 1 << 20, e);
        let mut app = AppJob {
            data_size,
            log_size,
            page_size,
            cache_size,
            checkpoint_interval: ckpt.as_secs_f64(),
            log_record_size,
            txn_reads: None,
            txn_writes: None,
            scan_share: None,
            scan_size: None,
            op_mix: None,
            lazy_commit_share: None,
            maintenance_rate: None,
            read_lat_ms_max: None,
            log_lat_ms_max: None,
        };
        if oltp {
            let reads = self.txn_reads.unwrap_or(11);
            range("txn_reads", reads, 0, MAX_APP_TXN_PAGES, e);
            let writes = self.txn_writes.unwrap_or(2);
            range("txn_writes", writes, 0, MAX_APP_TXN_PAGES, e);
            if reads == 0 && writes == 0 {
                e.push(JobError::new("txn_writes", "a transaction must read or write a page (`txn_reads` and `txn_writes` are both 0)"));
            }
            let share = self.scan_share.unwrap_or(0.05);
            range("scan_share", share, 0.0, 1.0, e);
            let scan = size("scan_size", &self.scan_size, e).unwrap_or(64 << 10);
            if page_size > 0 && (scan == 0 || scan % page_size != 0) {
                e.push(JobError::new(
                    "scan_size",
                    format!("{scan} is not a positive multiple of `page_size` ({page_size})"),
                ));
            }
            range("scan_size", scan, 1, data_size, e);
            app.txn_reads = Some(reads);
            app.txn_writes = Some(writes);
            app.scan_share = Some(share);
            app.scan_size = Some(scan);
        } else {
            let mix = self
                .op_mix
                .clone()
                .unwrap_or_else(|| vec![40.0, 20.0, 5.0, 35.0]);
            if mix.len() != 4 {
                e.push(
                    JobError::new("op_mix", format!("has {} weights, needs 4", mix.len()))
                        .hint("`op_mix = [insert, delete, replace, read]`, e.g. `[40, 20, 5, 35]`"),
                );
            } else if mix.iter().any(|w| !(w.is_finite() && *w >= 0.0))
                || mix.iter().sum::<f64>() <= 0.0
            {
                e.push(JobError::new(
                    "op_mix",
                    "weights must be 0 or more, and not all 0",
                ));
            }
            let lazy = self.lazy_commit_share.unwrap_or(0.7);
            range("lazy_commit_share", lazy, 0.0, 1.0, e);
            let rate = size("maintenance_rate", &self.maintenance_rate, e).unwrap_or(1 << 20);
            range("maintenance_rate", rate, 0, 1 << 40, e);
            let rmax = self.read_lat_ms_max.unwrap_or(20.0);
            range("read_lat_ms_max", rmax, 0.0, 1e6, e);
            let lmax = self.log_lat_ms_max.unwrap_or(10.0);
            range("log_lat_ms_max", lmax, 0.0, 1e6, e);
            app.op_mix = Some(mix);
            app.lazy_commit_share = Some(lazy);
            app.maintenance_rate = Some(rate);
            app.read_lat_ms_max = Some(rmax);
            app.log_lat_ms_max = Some(lmax);
        }
        if direct && log_record_size == 0 {
            e.push(JobError::new("log_record_size", "must be more than 0"));
        }
        Some(app)
    }

    /// The keys of a files job, checked; `None` for those its `op` does not use.
    fn resolve_files(&self, kind: Kind, e: &mut Vec<JobError>) -> FilesPart {
        let mut out = FilesPart::default();
        if kind != Kind::Files {
            for key in self.files_keys_set() {
                e.push(
                    JobError::new(key, "only applies to `kind = \"files\"`")
                        .hint("add `kind = \"files\"` for a file-management job, or remove it"),
                );
            }
            return out;
        }
        let Some(op) = self.op else {
            e.push(
                JobError::new("op", "is required with `kind = \"files\"`").hint(
                    "e.g. `op = \"create\"`; one of create, copy, sync, mutate, scan, dupes, touch, chmod, xattr, delete, stat",
                ),
            );
            return out;
        };
        out.op = Some(op);
        match self.directory.as_deref() {
            None => e.push(
                JobError::new("directory", "is required with `kind = \"files\"`")
                    .hint("the root of the file tree, e.g. `directory = \"/mnt/test/set\"`"),
            ),
            Some("") => {}
            Some(_) if self.filename.is_some() => e.push(JobError::new(
                "filename",
                "does not apply to `kind = \"files\"`: the tree is `directory`",
            )),
            Some(_) => {}
        }
        if matches!(op, FileOp::Copy | FileOp::Sync) {
            match self.dest.as_deref() {
                None => e.push(
                    JobError::new("dest", format!("is required with `op = \"{}\"`", op.name()))
                        .hint("the tree to write to, e.g. `dest = \"/mnt/test/copy\"`"),
                ),
                Some("") => e.push(JobError::new("dest", "is empty")),
                Some(d) if Some(d) == self.directory.as_deref() => {
                    e.push(JobError::new("dest", "is the same as `directory`"))
                }
                Some(d) => out.dest = Some(d.to_string()),
            }
        }
        if op == FileOp::Create {
            let nr = self.nr_files.unwrap_or(1000);
            range("nr_files", nr, 1, MAX_NR_FILES, e);
            out.nr_files = Some(nr);
            let per_dir = self.files_per_dir.unwrap_or(1000);
            range("files_per_dir", per_dir, 1, MAX_FILES_PER_DIR, e);
            out.files_per_dir = Some(per_dir);
            let dup = self.dup_share.unwrap_or(0.0);
            range("dup_share", dup, 0.0, 1.0, e);
            out.dup_share = Some(dup);
            let file_size = size("file_size", &self.file_size, e);
            if let Some(s) = file_size {
                range("file_size", s, 0, MAX_FILE_SIZE, e);
            }
            if let Some(buckets) = &self.size_buckets {
                for key in ["file_size", "size_dist", "size_sigma"] {
                    if self.key_set(key) {
                        e.push(
                            JobError::new(key, "cannot be combined with `size_buckets`").hint(
                                "give sizes either as buckets or as `file_size` (+ `size_dist`)",
                            ),
                        );
                    }
                }
                if buckets.is_empty() {
                    e.push(
                        JobError::new("size_buckets", "is empty")
                            .hint("e.g. `size_buckets = [[\"4k\", 3], [\"1m\", 1]]`"),
                    );
                }
                let mut resolved = Vec::new();
                for (i, (sv, w)) in buckets.iter().enumerate() {
                    let key = format!("size_buckets[{i}]");
                    let b = size(&key, &Some(sv.clone()), e);
                    if let Some(b) = b {
                        range(&key, b, 0, MAX_FILE_SIZE, e);
                    }
                    if !(w.is_finite() && *w > 0.0) {
                        e.push(JobError::new(
                            &key,
                            format!("weight {w} must be more than 0"),
                        ));
                    }
                    resolved.push((b.unwrap_or(0), *w));
                }
                out.size_buckets = Some(resolved);
            } else {
                let dist = self.size_dist.unwrap_or(SizeDist::Fixed);
                out.size_dist = Some(dist);
                out.file_size = Some(file_size.unwrap_or(16 << 10));
                if dist == SizeDist::Lognormal {
                    let sigma = self.size_sigma.unwrap_or(1.0);
                    range("size_sigma", sigma, 0.0, 4.0, e);
                    out.size_sigma = Some(sigma);
                }
            }
        }
        if op == FileOp::Mutate {
            let share = self.mutate_share.unwrap_or(0.1);
            range("mutate_share", share, 0.0, 1.0, e);
            out.mutate_share = Some(share);
        }
        if op == FileOp::Chmod {
            let bits = match &self.mode {
                None => Some(0o640),
                Some(ModeValue::Bits(b)) => Some(*b),
                Some(ModeValue::Text(t)) => {
                    let digits = t.trim_start_matches("0o");
                    u32::from_str_radix(digits, 8).ok().or_else(|| {
                        e.push(
                            JobError::new("mode", format!("{t:?} is not an octal mode"))
                                .hint("e.g. `mode = \"0640\"`"),
                        );
                        None
                    })
                }
            };
            if let Some(b) = bits {
                if b > 0o7777 {
                    e.push(JobError::new(
                        "mode",
                        format!("{b:o} is out of range (0..=7777 octal)"),
                    ));
                }
                out.mode = Some(format!("{b:04o}"));
            }
        }
        out
    }

    fn key_set(&self, key: &str) -> bool {
        match key {
            "op" => self.op.is_some(),
            "dest" => self.dest.is_some(),
            "nr_files" => self.nr_files.is_some(),
            "file_size" => self.file_size.is_some(),
            "size_dist" => self.size_dist.is_some(),
            "size_sigma" => self.size_sigma.is_some(),
            "size_buckets" => self.size_buckets.is_some(),
            "files_per_dir" => self.files_per_dir.is_some(),
            "dup_share" => self.dup_share.is_some(),
            "mutate_share" => self.mutate_share.is_some(),
            "mode" => self.mode.is_some(),
            "data_size" => self.data_size.is_some(),
            "log_size" => self.log_size.is_some(),
            "page_size" => self.page_size.is_some(),
            "cache_size" => self.cache_size.is_some(),
            "checkpoint_interval" => self.checkpoint_interval.is_some(),
            "log_record_size" => self.log_record_size.is_some(),
            "txn_reads" => self.txn_reads.is_some(),
            "txn_writes" => self.txn_writes.is_some(),
            "scan_share" => self.scan_share.is_some(),
            "scan_size" => self.scan_size.is_some(),
            "op_mix" => self.op_mix.is_some(),
            "lazy_commit_share" => self.lazy_commit_share.is_some(),
            "maintenance_rate" => self.maintenance_rate.is_some(),
            "read_lat_ms_max" => self.read_lat_ms_max.is_some(),
            "log_lat_ms_max" => self.log_lat_ms_max.is_some(),
            _ => false,
        }
    }

    fn files_keys_set(&self) -> Vec<&'static str> {
        FILES_KEYS
            .iter()
            .copied()
            .filter(|k| self.key_set(k))
            .collect()
    }

    /// Warnings for keys the job sets but does not use.
    pub fn warnings(&self, job: &Job) -> Vec<Warning> {
        if job.kind.is_app() {
            return Vec::new();
        }
        if job.kind == Kind::Block {
            return self
                .ignored_keys()
                .into_iter()
                .map(|k| Warning {
                    kind: "ignored_key".into(),
                    message: format!("`{k}` has no effect with rw = {:?}", job.rw).to_lowercase(),
                    hint: Some(format!(
                        "remove `{k}`, or use a mixed `rw` (randrw, readwrite)"
                    )),
                })
                .collect();
        }
        let op = job.op.map_or("", FileOp::name);
        let used: &[&str] = match job.op {
            Some(FileOp::Create) => &[
                "op",
                "nr_files",
                "file_size",
                "size_dist",
                "size_sigma",
                "size_buckets",
                "files_per_dir",
                "dup_share",
            ],
            Some(FileOp::Copy | FileOp::Sync) => &["op", "dest"],
            Some(FileOp::Mutate) => &["op", "mutate_share"],
            Some(FileOp::Chmod) => &["op", "mode"],
            _ => &["op"],
        };
        FILES_KEYS
            .iter()
            .copied()
            .filter(|k| self.key_set(k) && !used.contains(k))
            .map(|k| Warning {
                kind: "ignored_key".into(),
                message: format!("`{k}` has no effect with kind = files, op = {op}"),
                hint: Some(format!("remove `{k}`")),
            })
            .collect()
    }

    /// Keys set that the job's `rw` ignores, for a warning.
    pub fn ignored_keys(&self) -> BTreeSet<&'static str> {
        let mut keys = BTreeSet::new();
        if self.rwmixread.is_some() && !self.rw.unwrap_or(Rw::Read).is_mixed() {
            keys.insert("rwmixread");
        }
        keys
    }
}

/// The keys of a files job after checking (`None` where the op does not use them).
#[derive(Default)]
struct FilesPart {
    op: Option<FileOp>,
    dest: Option<String>,
    nr_files: Option<u64>,
    file_size: Option<u64>,
    size_dist: Option<SizeDist>,
    size_sigma: Option<f64>,
    size_buckets: Option<Vec<(u64, f64)>>,
    files_per_dir: Option<u64>,
    dup_share: Option<f64>,
    mutate_share: Option<f64>,
    mode: Option<String>,
}

/// Parses and resolves a job in one go (the usual path).
pub fn load(text: &str) -> Result<(JobSpec, Job), JobErrors> {
    let spec = spec_from_value(parse_text(text)?)?;
    let job = spec.resolve()?;
    Ok((spec, job))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors(text: &str) -> Vec<JobError> {
        load(text).expect_err("job should be refused").0
    }

    #[test]
    fn defaults_are_filled_in() {
        let (_, job) = load("filename = \"/tmp/x\"\nsize = \"1m\"").unwrap();
        assert_eq!(job.rw, Rw::Read);
        assert_eq!(job.bs, 4096);
        assert_eq!(job.iodepth, 1);
        assert_eq!(job.ioengine, IoEngine::IoUring);
        assert_eq!(job.io_size, Some(1 << 20));
        assert_eq!(job.interval, 1.0);
        assert_eq!(job.buffer_content, BufferContent::Random);
    }

    #[test]
    fn json_and_toml_give_the_same_job() {
        let (_, a) =
            load("filename = \"/f\"\nbs = \"8k\"\nruntime = \"2s\"\nrw = \"randwrite\"").unwrap();
        let (_, b) =
            load(r#"{"filename": "/f", "bs": 8192, "runtime": 2, "rw": "randwrite"}"#).unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn resolved_job_is_itself_a_valid_job() {
        let (_, job) = load("directory = \"/d\"\nsize = \"4m\"\nruntime = \"1.5s\"\nnumjobs = 3\nrw = \"randrw\"\nrwmixread = 70").unwrap();
        let echoed = serde_json::to_value(&job).unwrap();
        let mut map = echoed.as_object().unwrap().clone();
        map.retain(|_, v| !v.is_null());
        let again = spec_from_value(Value::Object(map))
            .unwrap()
            .resolve()
            .unwrap();
        assert_eq!(job, again);
    }

    #[test]
    fn unknown_key_suggests_the_closest() {
        let errs = errors("filename = \"/f\"\nrww = \"read\"\niodept = 4");
        assert_eq!(errs.len(), 2);
        assert_eq!(errs[0].key.as_deref(), Some("iodept"));
        assert_eq!(errs[0].hint.as_deref(), Some("did you mean `iodepth`?"));
        assert_eq!(errs[1].hint.as_deref(), Some("did you mean `rw`?"));
    }

    #[test]
    fn bad_enum_value_lists_allowed_and_suggests() {
        let errs = errors("filename = \"/f\"\nrw = \"raed\"");
        assert!(
            errs[0].message.contains("`randread`"),
            "{}",
            errs[0].message
        );
        assert_eq!(errs[0].hint.as_deref(), Some("did you mean `read`?"));
    }

    #[test]
    fn out_of_range_values_are_errors_naming_the_range() {
        let errs = errors("filename = \"/f\"\niodepth = 0\nnumjobs = 5000\nrwmixread = 101");
        let text = JobErrors(errs).to_string();
        assert!(
            text.contains("`iodepth`: 0 is out of range (1..=4096)"),
            "{text}"
        );
        assert!(
            text.contains("`numjobs`: 5000 is out of range (1..=1024)"),
            "{text}"
        );
        assert!(
            text.contains("`rwmixread`: 101 is out of range (0..=100)"),
            "{text}"
        );
    }

    #[test]
    fn misaligned_direct_bs_is_refused() {
        let errs = errors("filename = \"/f\"\ndirect = true\nbs = 1000");
        assert_eq!(errs[0].key.as_deref(), Some("bs"));
        assert!(errs[0].message.contains("multiple of 512"));
    }

    #[test]
    fn missing_target_is_refused() {
        let errs = errors("rw = \"read\"");
        assert!(errs[0].message.contains("missing target"));
    }

    #[test]
    fn every_type_error_is_reported_with_its_key() {
        let errs =
            errors("filename = \"/f\"\niodepth = \"deep\"\ndirect = \"yes\"\nbs = \"4 bananas\"");
        let keys: Vec<_> = errs.iter().filter_map(|e| e.key.as_deref()).collect();
        assert!(
            keys.contains(&"iodepth") && keys.contains(&"direct"),
            "{keys:?}"
        );
        // `bs` is a string, so it passes the type step and fails in the size parser.
        let errs = errors("filename = \"/f\"\nbs = \"4 bananas\"");
        assert_eq!(errs[0].key.as_deref(), Some("bs"));
    }

    #[test]
    fn sync_engine_refuses_queue_depth() {
        let errs = errors("filename = \"/f\"\nioengine = \"sync\"\niodepth = 8");
        assert!(errs[0].hint.as_deref().unwrap().contains("io_uring"));
    }

    #[test]
    fn null_engine_needs_no_target() {
        let (_, job) = load("ioengine = \"null\"\nruntime = 1").unwrap();
        assert_eq!(job.path_for(0), None);
    }

    #[test]
    fn directory_gives_one_file_per_thread() {
        let (_, job) = load("directory = \"/d\"\nname = \"j\"\nsize = \"1m\"").unwrap();
        assert_eq!(job.path_for(2), Some(PathBuf::from("/d/j.2.0")));
    }

    #[test]
    fn nan_is_out_of_range() {
        let errs = errors("kind = \"files\"\nop = \"create\"\ndirectory = \"/d\"\ndup_share = nan");
        assert_eq!(errs[0].key.as_deref(), Some("dup_share"), "{errs:?}");
        assert!(errs[0].message.contains("finite"), "{errs:?}");
    }
}
