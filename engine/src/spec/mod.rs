//! The job: what a user writes (`JobSpec`), and what the engine runs (`Job`).
//!
//! Keys use fio's names where the concept is the same. Parsing goes in three steps so
//! that one run reports every mistake at once: unknown keys (with the closest known key),
//! then each key's type on its own (`parse`), then ranges and combinations, per kind
//! (`block` for the keys every kind reads, `files`, `app`).
//!
//! A key is declared twice: as a `JobSpec` field (its type and doc, which the schema
//! and docs/job-keys.md are made from) and in `KEYS` (the kinds that take it); a test
//! keeps the two in step.

mod app;
mod block;
mod files;
mod parse;
mod pattern;
pub use pattern::REPLAY_SHAPED;
mod steady;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use self::parse::{closest, parse_text, spec_from_value};
pub use self::pattern::{file_service, FileService, COMPRESS_CHUNK};
use crate::diagnostics::{Warning, WarningKind};
use crate::error::{JobError, JobErrors};

pub const MAX_NUMJOBS: u32 = 1024;
/// io_uring's most entries (IORING_MAX_ENTRIES); the buffers are one registered region.
pub const MAX_IODEPTH: u32 = 32768;
pub const MAX_BS: u64 = 1 << 30;
#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference
fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// `verify = true` needs `bs` a multiple of this: a block's header fits in one sector.
pub const VERIFY_BS_ALIGN: u64 = 512;
pub const MIN_INTERVAL: Duration = Duration::from_millis(100);
pub const MAX_NR_FILES: u64 = 100_000_000;
/// The most passes a files job's `loops` asks (fio's time-based job is this many, cut
/// short by `runtime`).
pub const MAX_LOOPS: u64 = 1 << 32;
pub const MAX_FILES_PER_DIR: u64 = 10_000_000;
pub const MAX_FILE_SIZE: u64 = 64 << 30;
pub const MAX_PAGE_SIZE: u64 = 1 << 20;
pub const MAX_APP_TXN_PAGES: u32 = 1024;
/// Latencies above this are clamped in the histogram; a job should not get near it.
pub const MAX_RUNTIME: Duration = Duration::from_secs(7 * 24 * 3600);

/// One job key: the kinds that take it and, for a files job's key, the operations that
/// use it.
#[derive(Debug, Clone, Copy)]
pub struct Key {
    pub name: &'static str,
    /// Any other kind refuses the key (exit 2).
    pub kinds: &'static [Kind],
    /// A files job's key: the `op`s that use it; the others warn that it has no effect.
    /// Empty: every op (and every key of the other kinds).
    pub ops: &'static [FileOp],
}

const fn key(name: &'static str, kinds: &'static [Kind]) -> Key {
    Key {
        name,
        kinds,
        ops: &[],
    }
}

const fn files_key(name: &'static str, ops: &'static [FileOp]) -> Key {
    Key {
        name,
        kinds: FILES,
        ops,
    }
}

const ANY: &[Kind] = &[Kind::Block, Kind::Files, Kind::Oltp, Kind::Mailstore];
const FILES: &[Kind] = &[Kind::Files];
const APP: &[Kind] = &[Kind::Oltp, Kind::Mailstore];
/// Kinds that run for a time: a files job is a fixed amount of work, which a stop once
/// steady would leave half done.
const TIMED: &[Kind] = &[Kind::Block, Kind::Oltp, Kind::Mailstore];
const BLOCK: &[Kind] = &[Kind::Block];
const OLTP: &[Kind] = &[Kind::Oltp];
const MAILSTORE: &[Kind] = &[Kind::Mailstore];
const CREATE: &[FileOp] = &[FileOp::Create];
/// Files ops that leave the tree as they found it, so a pass can be done again.
pub(super) const REPEATABLE: &[FileOp] =
    &[FileOp::Stat, FileOp::Touch, FileOp::Chmod, FileOp::Xattr];

/// Every job key, in `JobSpec`'s order. Keys every kind takes may still mean nothing to
/// some (an application model has no `rw`); those are ignored silently.
pub const KEYS: &[Key] = &[
    key("name", ANY),
    key("rw", ANY),
    key("rwmixread", ANY),
    key("bs", ANY),
    key("size", ANY),
    key("io_size", ANY),
    key("filename", ANY),
    key("directory", ANY),
    key("numjobs", ANY),
    key("nrfiles", BLOCK),
    key("file_service_type", BLOCK),
    key("iodepth", ANY),
    key("iodepth_batch_submit", ANY),
    key("iodepth_batch_complete_min", ANY),
    key("completion_spin", ANY),
    key("direct", ANY),
    key("runtime", ANY),
    key("ramp_time", ANY),
    key("fsync", ANY),
    key("fdatasync", BLOCK),
    key("end_fsync", ANY),
    key("ioengine", ANY),
    key("buffer_content", ANY),
    key("randseed", ANY),
    key("interval", ANY),
    key("allow_device_write", ANY),
    key("null_lat", ANY),
    key("kind", ANY),
    key("steady_state", TIMED),
    key("steady_round", TIMED),
    key("steady_window", TIMED),
    key("steady_range", TIMED),
    key("steady_slope", TIMED),
    key("steady_measure", TIMED),
    key("verify", BLOCK),
    key("verify_state", BLOCK),
    key("verify_backlog", BLOCK),
    key("verify_read_back", BLOCK),
    key("bssplit", BLOCK),
    key("bsrange", BLOCK),
    key("blockalign", BLOCK),
    key("random_distribution", BLOCK),
    key("norandommap", BLOCK),
    key("offset", BLOCK),
    key("offset_increment", BLOCK),
    key("number_ios", BLOCK),
    key("seq_skip", BLOCK),
    key("seq_run", BLOCK),
    key("rate", BLOCK),
    key("rate_iops", BLOCK),
    key("rate_min", BLOCK),
    key("rate_iops_min", BLOCK),
    key("rate_process", BLOCK),
    key("thinktime", BLOCK),
    key("thinktime_spin", BLOCK),
    key("thinktime_blocks", BLOCK),
    key("startdelay", BLOCK),
    key("buffer_compress_percentage", BLOCK),
    key("buffer_compress_chunk", BLOCK),
    key("dedupe_percentage", BLOCK),
    key("dedupe_working_set_percentage", BLOCK),
    key("dedupe_global", BLOCK),
    key("buffer_pattern", BLOCK),
    key("refill_buffers", BLOCK),
    key("invalidate", BLOCK),
    key("fadvise_hint", BLOCK),
    key("zonesize", BLOCK),
    key("zonerange", BLOCK),
    key("zoneskip", BLOCK),
    key("prio", BLOCK),
    key("prioclass", BLOCK),
    key("cmdprio_percentage", BLOCK),
    key("cmdprio_class", BLOCK),
    key("cmdprio", BLOCK),
    key("cmdprio_bssplit", BLOCK),
    key("fill_device", BLOCK),
    key("flow", BLOCK),
    key("flow_id", BLOCK),
    key("flow_sleep", BLOCK),
    key("latency_target", BLOCK),
    key("latency_window", BLOCK),
    key("latency_percentile", BLOCK),
    key("latency_run", BLOCK),
    key("cpus_allowed", BLOCK),
    key("cpus_allowed_policy", BLOCK),
    key("numa_cpu_nodes", BLOCK),
    key("numa_mem_policy", BLOCK),
    key("filename_format", BLOCK),
    key("continue_on_error", BLOCK),
    key("continue_errors", BLOCK),
    key("donorname", BLOCK),
    key("inplace", BLOCK),
    key("program", BLOCK),
    key("arguments", BLOCK),
    key("grace_time", BLOCK),
    key("std_redirect", BLOCK),
    key("atomic", BLOCK),
    key("uncached", TIMED),
    key("nowait", BLOCK),
    key("sqthread_poll", BLOCK),
    key("sqthread_poll_cpu", BLOCK),
    key("write_hint", BLOCK),
    key("sync", BLOCK),
    key("nice", BLOCK),
    key("read_iolog", BLOCK),
    key("replay_no_stall", BLOCK),
    key("replay_time_scale", BLOCK),
    files_key("op", &[]),
    files_key("dest", &[FileOp::Copy, FileOp::Sync]),
    files_key("create_first", &[]),
    files_key("nr_files", CREATE),
    files_key("file_size", CREATE),
    files_key("size_dist", CREATE),
    files_key("size_sigma", CREATE),
    files_key("size_buckets", CREATE),
    files_key("files_per_dir", CREATE),
    files_key("dup_share", CREATE),
    files_key("mutate_share", &[FileOp::Mutate]),
    files_key("mode", &[FileOp::Chmod]),
    files_key("loops", REPEATABLE),
    key("data_size", APP),
    key("log_size", APP),
    key("page_size", APP),
    key("cache_size", APP),
    key("checkpoint_interval", APP),
    key("log_record_size", APP),
    key("txn_reads", OLTP),
    key("txn_writes", OLTP),
    key("scan_share", OLTP),
    key("scan_size", OLTP),
    key("op_mix", MAILSTORE),
    key("lazy_commit_share", MAILSTORE),
    key("maintenance_rate", MAILSTORE),
    key("read_lat_ms_max", MAILSTORE),
    key("log_lat_ms_max", MAILSTORE),
];

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
    /// Sequential trims: each I/O's range is discarded (a hole punched in a file,
    /// a discard on a device). Destroys data like a write.
    Trim,
    /// Uniformly random trims.
    Randtrim,
}

impl Rw {
    pub fn is_random(self) -> bool {
        matches!(
            self,
            Rw::Randread | Rw::Randwrite | Rw::Randrw | Rw::Randtrim
        )
    }
    pub fn is_mixed(self) -> bool {
        matches!(self, Rw::Randrw | Rw::Readwrite)
    }
    pub fn reads(self) -> bool {
        matches!(self, Rw::Read | Rw::Randread | Rw::Randrw | Rw::Readwrite)
    }
    /// Whether the job changes the target's data: writes, and trims, which discard it.
    pub fn writes(self) -> bool {
        !matches!(self, Rw::Read | Rw::Randread)
    }
    pub fn trims(self) -> bool {
        matches!(self, Rw::Trim | Rw::Randtrim)
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
    /// One fallocate per I/O, one at a time (fio's `falloc`): a write allocates its
    /// range (mode 0, growing the file), a read allocates without growing it
    /// (KEEP_SIZE), a trim punches a hole. Files only.
    Falloc,
    /// One ftruncate per write, one at a time (fio's `ftruncate`): the file is cut or
    /// grown to the write's offset. Writes only; files only.
    Ftruncate,
    /// The file (or device) mapped into memory (fio's `mmap`): a read copies from the
    /// mapping, a write copies into it, one at a time; page faults are the I/O. With
    /// `direct`, each I/O's range is written back (msync) and dropped from the page cache
    /// after the copy, as fio does; no trims.
    Mmap,
    /// ext4's online defragmentation, one extent move per write, one at a time (fio's
    /// `e4defrag`): the write's range of the file is moved onto blocks fallocated in the
    /// `donorname` file (EXT4_IOC_MOVE_EXT), its data kept. Writes only; files on ext4.
    E4defrag,
}

impl IoEngine {
    /// The engines whose I/O is not a data transfer: no buffers, no verify.
    pub fn moves_no_data(self) -> bool {
        matches!(
            self,
            IoEngine::Falloc | IoEngine::Ftruncate | IoEngine::E4defrag
        )
    }
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

/// How a rate-limited job spaces its I/O (fio's `rate_process`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RateProcess {
    /// Evenly: one gap after every I/O.
    Linear,
    /// A Poisson process: exponential gaps of the same mean, arrivals independent of each other (an open-loop load).
    Poisson,
}

/// A file's expected data lifetime (fcntl F_SET_RW_HINT; fio's `write_hint`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum WriteHint {
    /// No particular lifetime.
    None,
    Short,
    Medium,
    Long,
    Extreme,
}

impl WriteHint {
    /// The kernel's `RWH_WRITE_LIFE_*` number.
    pub fn value(self) -> u64 {
        match self {
            WriteHint::None => 1,
            WriteHint::Short => 2,
            WriteHint::Medium => 3,
            WriteHint::Long => 4,
            WriteHint::Extreme => 5,
        }
    }
}

/// Whether each write is durable when it returns (the files opened O_SYNC or O_DSYNC;
/// fio's `sync`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SyncMode {
    /// Writes return once in the page cache (or, with `direct`, on the device).
    #[default]
    None,
    /// O_SYNC: each write returns once its data and the file's metadata are durable.
    Sync,
    /// O_DSYNC: each write returns once its data (and what is needed to read it) is durable.
    Dsync,
}

impl SyncMode {
    /// The open(2) flag.
    pub fn open_flag(self) -> libc::c_int {
        match self {
            SyncMode::None => 0,
            SyncMode::Sync => libc::O_SYNC,
            SyncMode::Dsync => libc::O_DSYNC,
        }
    }
}

fn is_no_sync(m: &SyncMode) -> bool {
    *m == SyncMode::None
}

/// Which failed I/Os a job goes on after (fio's `continue_on_error`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ContinueOn {
    /// Any failed I/O ends the job.
    #[default]
    None,
    /// Failed reads.
    Read,
    /// Failed writes and trims.
    Write,
    /// Every failed I/O.
    Io,
}

impl ContinueOn {
    pub fn is_none(&self) -> bool {
        *self == ContinueOn::None
    }
    /// Whether a failed `op` may be gone on after.
    pub fn covers(self, op: crate::record::Op) -> bool {
        use crate::record::Op;
        match self {
            ContinueOn::None => false,
            ContinueOn::Read => op == Op::Read,
            ContinueOn::Write => matches!(op, Op::Write | Op::Trim),
            ContinueOn::Io => true,
        }
    }
}

/// An error number: `"ENOSPC"` or 28.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ErrnoValue {
    Number(i32),
    Name(String),
}

/// A byte offset that may be negative: a number, or a size string with an optional `-`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum SignedSizeValue {
    Bytes(i64),
    Text(String),
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

/// A percentage: a number of percent, or a string ending in `%` (`20` = `"20%"`).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum PercentValue {
    Percent(f64),
    Text(String),
}

/// How a job's threads share its CPUs (fio's `cpus_allowed_policy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CpusPolicy {
    /// Every thread may run on every CPU of the set.
    Shared,
    /// Thread t runs on the set's t-th CPU (round robin).
    Split,
}

/// A percentage for both directions, or `[reads, writes]`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum PercentPair {
    Both(u32),
    Each([u32; 2]),
}

/// A job as written in TOML or JSON. Every key is optional; `Job` holds the defaults.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "fslab-engine job")]
pub struct JobSpec {
    /// The keys the job gives a value (null counts as absent), recorded by
    /// `spec_from_value`: what `is_set` and the key table's checks look at.
    #[serde(skip)]
    #[schemars(skip)]
    given: BTreeSet<String>,
    /// Name of the job; also the stem of per-thread files made in `directory`. Default `job`.
    pub name: Option<String>,
    /// I/O pattern. Default `read`.
    pub rw: Option<Rw>,
    /// Percentage of reads in a mixed job (`randrw`, `readwrite`), 0..=100. Default 50.
    pub rwmixread: Option<u32>,
    /// Block size of each I/O. Default 4KiB.
    pub bs: Option<SizeValue>,
    /// Size of the file (or the region of the device) I/O goes to. Required for a file
    /// that does not exist yet; a device defaults to its whole size. Block jobs may give
    /// it in percent of the device or existing file (`"95%"`), aligned down to the block size.
    pub size: Option<SizeValue>,
    /// Bytes each thread transfers in a size-based job. Default `size`. Not with `runtime`.
    pub io_size: Option<SizeValue>,
    /// File or block device to do I/O on; all threads share it. Relative to `directory` if both are given.
    pub filename: Option<String>,
    /// Directory in which each thread gets its own file `<name>.<thread>.0`.
    pub directory: Option<String>,
    /// Number of threads, each with its own queue. 1..=1024. Default 1.
    pub numjobs: Option<u32>,
    /// Requests in flight per thread (io_uring only). 1..=32768. Default 1.
    pub iodepth: Option<u32>,
    /// Refilled requests gathered before they are submitted (io_uring). 1 submits each one
    /// as soon as its slot is refilled, as fio does by default: the device stays fed
    /// while the thread reaps, and each submission also posts the completions that came
    /// meanwhile. Larger batches make fewer system calls. 0 means `iodepth` (fio's
    /// meaning). 0..=`iodepth` (`sync`, `null`: only 1). Default 1.
    pub iodepth_batch_submit: Option<u32>,
    /// Completions to wait for per wake-up (io_uring). 1 reaps each request as soon as it is
    /// done: the most faithful latency. More saves CPU on a busy machine, but a request
    /// that completed early is timed when it is reaped. 1..=`iodepth` (`sync`, `null`: only 1). Default 1.
    pub iodepth_batch_complete_min: Option<u32>,
    /// How long a thread polls for completions before it sleeps (io_uring). 0 sleeps at
    /// once, as fio does. A sleeping thread's wake-up can cost tens of microseconds on a
    /// virtual machine, more than a fast device's request: a spin of 20us-50us sees those
    /// completions sooner, for CPU the report's `cpu` shows. 0 to 10ms. Default 0.
    pub completion_spin: Option<DurationValue>,
    /// Bypass the page cache with O_DIRECT. Default false.
    pub direct: Option<bool>,
    /// Run for this long (time-based, after `ramp_time`); without it the job is size-based. A files job stops at it, mid-pass if need be (with `loops`, a timed files job).
    pub runtime: Option<DurationValue>,
    /// Run this long before measuring; shown in the series, excluded from the results. Default 0.
    pub ramp_time: Option<DurationValue>,
    /// fsync the file after every N writes; 0 never. Default 0.
    pub fsync: Option<u64>,
    /// Block jobs: fdatasync the file after every N writes (the data and what reading it needs, not every inode change); 0 never. Not with `fsync`. Default 0.
    pub fdatasync: Option<u64>,
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
    /// Stop once the rate is steady (SNIA's rule on rounds of intervals: docs/engine.md); `runtime` is then only the cap, and `results` cover the steady window. Block jobs with `runtime`, oltp, mailstore. Default false.
    pub steady_state: Option<bool>,
    /// Steady state: the shortest round; a round is whole intervals, widened until it holds 200 completions. Default 1s (oltp, mailstore: `checkpoint_interval` when longer, so each round holds one checkpoint).
    pub steady_round: Option<DurationValue>,
    /// Steady state: the rounds judged together (the window), 2..=25. Default 5.
    pub steady_window: Option<u32>,
    /// Steady state: the window's round rates may span (max - min) at most this much of their mean, more than 0 and at most 100%. Default 20%.
    pub steady_range: Option<PercentValue>,
    /// Steady state: the least-squares line through the window's round rates may move at most this much of their mean from its first round to its last, more than 0 and at most 100%. Default 10%.
    pub steady_slope: Option<PercentValue>,
    /// Steady state: once steady, measure this much longer, so that every job's results cover about as much time. Default 0.
    pub steady_measure: Option<DurationValue>,
    /// Block jobs: every block written carries a header (offset, generation, crc32c) and every block read is checked: `corrupt`, `misplaced`, `stale` (a lost write) or `unreadable` blocks are counted in the report's `verify` and warned about, not failed (docs/engine.md, "Verify"). Needs `bs` a multiple of 512; an I/O to a block with one in flight (this thread's, or another's where threads share a region) waits until it completes, so random writes verify at any depth and threads sharing a file check each other's writes. Default false.
    pub verify: Option<bool>,
    /// With `verify`: a file holding each block's expected generation, read before the job when it exists (its `bs` and `size` must be the job's) and written at the end of a job that wrote. Without it every block starts unwritten and nothing is kept.
    pub verify_state: Option<String>,
    /// With `verify` on a writing job: after every N writes completed, the next I/Os read those N blocks back and check them (fio's `verify_backlog`). The read-backs are measured as the job's reads. Default 0: none.
    pub verify_backlog: Option<u64>,
    /// With `verify` on a writing job: once its I/O has ended (a time-based job's `runtime` too), read back every block the job wrote, in offset order, from a cold cache, and check it (fio's verify phase, `do_verify`). Counted in the report's `verify` (`read_back`), not in `results`. Default false.
    pub verify_read_back: Option<bool>,
    /// Block jobs: a mix of I/O sizes in fio's syntax, `size/percent` entries joined by `:` (`"4k/50:8k/30:64k/20"`; a size without a percent shares what the others leave); a `,` gives the writes a mix of their own (`"64k/40:1m/60,1m/100"`). Replaces `bs`. Not with `verify`.
    pub bssplit: Option<String>,
    /// Block jobs: I/O sizes drawn evenly from every multiple of the smaller end up to the larger (`"4k-64k"`; `,` for the writes' own range). Replaces `bs`. Not with `bssplit` or `verify`.
    pub bsrange: Option<String>,
    /// Block jobs: offsets are multiples of this. Default the smallest I/O size (`bs`).
    pub blockalign: Option<SizeValue>,
    /// Block jobs, random `rw`: where offsets land, in fio's syntax: `random` (uniform), `zipf:θ`, `pareto:h`, `normal:σ` (σ in percent of the file), `zoned:access%/size%:...`, `zoned_abs:access%/size:...` (docs/engine.md, "Access patterns"). Default `random`.
    pub random_distribution: Option<String>,
    /// Block jobs: draw uniform random offsets with repeats. Without it (fio's default) every block is done once per pass over the file, in a fresh order each pass. Default false.
    pub norandommap: Option<bool>,
    /// Block jobs: the I/O region starts this far into the file or device (a multiple of 512), or this share of it (`"50%"`). Default 0.
    pub offset: Option<SizeValue>,
    /// Block jobs: each thread's region starts this much further than the one before (thread t at `offset + t * offset_increment`). Default 0.
    pub offset_increment: Option<SizeValue>,
    /// Block jobs: each thread stops after this many I/Os (also in a time-based job). Default no limit.
    pub number_ios: Option<u64>,
    /// Block jobs, sequential: bytes skipped after each I/O (fio's `rw=read:8k`); negative walks backwards (`"-8k"` with 4k I/Os reads the file from its end). Default 0.
    pub seq_skip: Option<SignedSizeValue>,
    /// Block jobs, random `rw`: I/Os issued one after another from each random offset before the next is drawn (fio's `rw=randread:8`). Default 1.
    pub seq_run: Option<u32>,
    /// Block jobs: each thread issues at most this many bytes per second, on a schedule (docs/engine.md, "Pace"). Not with `rate_iops`.
    pub rate: Option<SizeValue>,
    /// Block jobs: each thread issues this many I/Os per second, on a schedule. Not with `rate`.
    pub rate_iops: Option<u64>,
    /// Block jobs, with `rate`: warn (`rate_short`) when a thread's achieved bytes per second fall below this. Default: 95% of `rate`.
    pub rate_min: Option<SizeValue>,
    /// Block jobs, with `rate_iops`: warn (`rate_short`) when a thread's achieved I/Os per second fall below this. Default: 95% of `rate_iops`.
    pub rate_iops_min: Option<u64>,
    /// Block jobs, with a rate: `linear` (even gaps) or `poisson` (exponential gaps, an open-loop load). Default `linear`.
    pub rate_process: Option<RateProcess>,
    /// Block jobs: pause this long after every `thinktime_blocks` I/Os. Default 0.
    pub thinktime: Option<DurationValue>,
    /// Block jobs: of each `thinktime`, spin (burn CPU) this long before sleeping the rest. Default 0.
    pub thinktime_spin: Option<DurationValue>,
    /// Block jobs: I/Os between think times, 1 or more. Default 1.
    pub thinktime_blocks: Option<u64>,
    /// Block jobs: wait this long before starting (a job file's later clients). Default 0.
    pub startdelay: Option<DurationValue>,
    /// Block jobs: each `buffer_compress_chunk` of a write is this percent compressible (zeros, or `buffer_pattern`), the rest random, so a compressor gets about 100/(100 - p) from it (fio's `buffer_compress_percentage`). 0..=100. Default 0.
    pub buffer_compress_percentage: Option<u32>,
    /// Block jobs, with `buffer_compress_percentage`: the unit the compressible share applies to. Default 512.
    pub buffer_compress_chunk: Option<SizeValue>,
    /// Block jobs: this percent of writes repeat the content of an earlier write, so deduplication finds them. 0..=100. Default 0.
    pub dedupe_percentage: Option<u32>,
    /// Block jobs, with `dedupe_percentage`: a dedupe write repeats one of a working set of unique contents, this percent of the region's blocks, instead of one of the thread's last 256 unique writes (fio's `dedupe_mode=working_set`). More than 0, at most 100.
    pub dedupe_working_set_percentage: Option<f64>,
    /// Block jobs, with `dedupe_working_set_percentage`: the working set is the same for every thread and every job with the same `randseed` (fio's `dedupe_global`), so their writes dedupe against each other's. Default false.
    pub dedupe_global: Option<bool>,
    /// Block jobs: write buffers hold this pattern, repeated: `0x` and hex digits, a quoted string, or several joined by `|` (`"0xdead|\"fslab\""`). Not with `verify`.
    pub buffer_pattern: Option<String>,
    /// Block jobs: every write gets fresh random bytes. Without it a thread's few buffers are reused, each write stamped with its offset and a counter: unique blocks, cheaply, but a compressor with a window of a few buffers finds the repeats (fio's default too). `buffer_compress_percentage` and `dedupe_percentage` refill always. Default false.
    pub refill_buffers: Option<bool>,
    /// Block jobs: drop the target's cached pages before the job and, with buffered I/O, again at each new pass over its region (a random map's next order, a sequential walk's return to the start; posix_fadvise DONTNEED on a file, BLKFLSBUF on a device), as fio's default does (fslab's lab drops every cache before each run itself). Default false.
    pub invalidate: Option<bool>,
    /// Block jobs, buffered I/O: tell the kernel the access pattern (posix_fadvise RANDOM for random `rw`, SEQUENTIAL otherwise), which turns read-ahead off for random reads, as fio's default `fadvise_hint` does. Default false.
    pub fadvise_hint: Option<bool>,
    /// Block jobs: strided zones (fio's `zonemode=strided`): I/O stays in one zone of `zonerange` bytes until `zonesize` bytes were transferred, then moves `zonerange + zoneskip` on (wrapping to the region's start; a zone longer than the region is the region, as in fio). Random I/O is uniform within the zone. Default none.
    pub zonesize: Option<SizeValue>,
    /// Block jobs, with `zonesize`: the length of a zone. Default `zonesize`.
    pub zonerange: Option<SizeValue>,
    /// Block jobs, with `zonesize`: bytes skipped between zones. Default 0.
    pub zoneskip: Option<SizeValue>,
    /// Block jobs: each thread's I/O priority level within its class, 0 (highest) to 7 (ioprio_set; io_uring requests carry it). Default: the process's.
    pub prio: Option<u32>,
    /// Block jobs: each thread's I/O priority class: 1 real-time (needs CAP_SYS_ADMIN), 2 best-effort, 3 idle. Default: the process's.
    pub prioclass: Option<u32>,
    /// Block jobs, io_uring: this percent of the I/Os carry the priority `cmdprio_class`/`cmdprio` on their request (fio's `cmdprio_percentage`); a number for both directions or `[reads, writes]`. Default 0.
    pub cmdprio_percentage: Option<PercentPair>,
    /// Block jobs, with `cmdprio_percentage` or `cmdprio_bssplit`: the requests' priority class, 1 (real-time) to 3 (idle). Default 1.
    pub cmdprio_class: Option<u32>,
    /// Block jobs, with `cmdprio_percentage` or `cmdprio_bssplit`: the requests' priority level, 0 (highest) to 7. Default 0.
    pub cmdprio: Option<u32>,
    /// Block jobs, io_uring: per I/O size, the percent of I/Os with a priority, in fio's syntax: `size/percent` (with `cmdprio_class`/`cmdprio`) or `size/percent/class/level` entries joined by `:`, `,` between reads and writes (`"64k/25/1/1:64k/75/3/2:1m/0"`). Not with `cmdprio_percentage`.
    pub cmdprio_bssplit: Option<String>,
    /// Block jobs, `rw = "write"`: write until the file system is full (ENOSPC or EDQUOT ends each thread, as done, not failed); the file's size is the space free (at most `size`, when given), and it is not laid out first (fio's `fill_device`). Default false.
    pub fill_device: Option<bool>,
    /// Block jobs: this thread's weight in its `flow_id` group: threads of the group (of this job and of the other jobs of a job file) keep their I/O counts in proportion to their weights, one ahead of its share waiting `flow_sleep` (fio's `flow`). 1 or more.
    pub flow: Option<u32>,
    /// Block jobs, with `flow`: the group. Default 0.
    pub flow_id: Option<u32>,
    /// Block jobs, with `flow`: how long a thread ahead of its share waits before it looks again. Default 0 (it looks again at once).
    pub flow_sleep: Option<DurationValue>,
    /// Block jobs, io_uring: each thread searches the queue depth (up to `iodepth`) at which `latency_percentile` of its I/Os complete within this, by fio's rule: from depth 1, doubling while a `latency_window` holds, bisecting once one fails; when the same depth comes out twice, one more window runs there and the thread ends (docs/engine.md, "Latency target"). The report's `latency_target` has each thread's depth and windows.
    pub latency_target: Option<DurationValue>,
    /// Block jobs, with `latency_target`: the window each depth is judged over. Default 0 (each I/O judges it, as fio's default).
    pub latency_window: Option<DurationValue>,
    /// Block jobs, with `latency_target`: the share of I/Os that must be within it, percent, more than 0 and at most 100. Default 100 (one I/O over the target lowers the depth at once).
    pub latency_percentile: Option<f64>,
    /// Block jobs, with `latency_target`: keep searching for the whole job instead of ending once settled. Default false.
    pub latency_run: Option<bool>,
    /// Block jobs: the CPUs the threads may run on, as a list (`"0-3,6"`). Default: any.
    pub cpus_allowed: Option<String>,
    /// Block jobs, with `cpus_allowed` or `numa_cpu_nodes`: `shared` (every thread may run on every CPU of the set) or `split` (thread t runs on the set's t-th CPU, round robin). Default `shared`.
    pub cpus_allowed_policy: Option<CpusPolicy>,
    /// Block jobs: the threads run on the CPUs of these NUMA nodes (`"0"`, `"0-1"`); with `cpus_allowed`, on the CPUs in both.
    pub numa_cpu_nodes: Option<String>,
    /// Block jobs: each thread's memory policy (its buffers'): `default`, `local`, `prefer:N`, `bind:LIST`, `interleave:LIST` (set_mempolicy).
    pub numa_mem_policy: Option<String>,
    /// Block jobs with `directory` (and no `filename`): each thread's file name, with `$jobname` (the job's `name`), `$jobnum` (the thread, from 0) and `$filenum` (0) filled in; a relative path, no `..`. Two threads whose names come out equal share one file. Default `"$jobname.$jobnum.$filenum"`.
    pub filename_format: Option<String>,
    /// Block jobs with `directory` (and no `filename`): files per thread, each `size` bytes, named by `filename_format` (`$filenum` from 0); the thread's I/O goes to them in turn (`file_service_type`), each with its own offsets (and random map). `io_size` defaults to every file once. 1..=65536. Default 1.
    pub nrfiles: Option<u32>,
    /// Block jobs with `nrfiles` > 1: which file each I/O goes to: `roundrobin` (the next after every N I/Os: `roundrobin:N`, N = 1 unless given), `sequential` (a whole pass over one file, then the next), `random` (a file drawn uniformly, again after every N I/Os: `random:N`). Default `roundrobin`.
    pub file_service_type: Option<String>,
    /// Block jobs: which failed I/Os the job goes on after, when their error is one of `continue_errors`: `none`, `read`, `write` (trims too) or `io` (all). Each is counted in the report's `errors_continued` and warned about (`errors_continued`) instead of ending the job (fio's `continue_on_error`). Default `none`.
    pub continue_on_error: Option<ContinueOn>,
    /// Block jobs, with `continue_on_error`: the errors it goes on after, by name (`"ENOSPC"`) or number (fio's `ignore_error`). Default `["EIO", "EILSEQ"]` (fio's).
    pub continue_errors: Option<Vec<ErrnoValue>>,
    /// Block jobs, `ioengine = "e4defrag"`: the donor file whose fallocated blocks each write moves the file's range onto, a plain name in `directory` (or in the file's directory); shared by the job's threads, as fio's. Required with e4defrag.
    pub donorname: Option<String>,
    /// Block jobs, `ioengine = "e4defrag"`: fallocate the donor's range at each write and truncate it after (fio's `inplace=1`), instead of the whole region once at the start. Default false.
    pub inplace: Option<bool>,
    /// Block jobs: a program run beside the job (fio's `exec` engine), started as the job's threads start and sent SIGTERM when they end (SIGKILL after `grace_time`): a path, or a name looked up in PATH. Its exit is in the report's `program`.
    pub program: Option<String>,
    /// Block jobs, with `program`: its arguments, split at spaces as fio's are; `%r` becomes the job's `runtime` in whole seconds, `%n` its `name`.
    pub arguments: Option<String>,
    /// Block jobs, with `program`: how long it has to end after SIGTERM before SIGKILL. Default 1s.
    pub grace_time: Option<DurationValue>,
    /// Block jobs, with `program`: its stdout and stderr go to `<name>.stdout` and `<name>.stderr` in `directory` (or the current directory), as fio's; false: both to the engine's stderr (stdout is the report). Default true.
    pub std_redirect: Option<bool>,
    /// Block jobs, io_uring or sync: each write carries RWF_ATOMIC, torn-write protection (after a crash, all of a write's data or none of it is on disk). Needs `direct = true` and I/O sizes that are powers of two within what the target offers: statx's STATX_WRITE_ATOMIC limits, checked before the job starts (xfs offers them in software since Linux 6.16; ext4 only on a device that has atomic writes). Default false.
    pub atomic: Option<bool>,
    /// Block jobs and application models, buffered I/O, io_uring or sync: reads and writes carry RWF_DONTCACHE (Linux 6.14 and later, fio's `uncached`): a read's pages are dropped once copied, a write's writeback starts at once and its pages are to be dropped when it ends (measured on ext4, Linux 6.18: they stayed cached; an application model drops its files' pages after each fdatasync, and reads its data file without readahead). Default false.
    pub uncached: Option<bool>,
    /// Block jobs, io_uring or sync: reads and writes carry RWF_NOWAIT: one that would have to wait (a lock, an allocation, an unwritten extent) fails EAGAIN at once instead, an error like any other (`continue_on_error` with `continue_errors = ["EAGAIN"]` goes on past it). Default false.
    pub nowait: Option<bool>,
    /// Block jobs, io_uring: a kernel thread polls the submission queue (IORING_SETUP_SQPOLL), so submitting needs no system call; the thread keeps a CPU busy while the job runs (it is the engine's: the report's `cpu` counts it). Default false.
    pub sqthread_poll: Option<bool>,
    /// Block jobs, with `sqthread_poll`: the CPU the polling thread is bound to. Default: any.
    pub sqthread_poll_cpu: Option<u32>,
    /// Block jobs: the data lifetime set on each file before the job (fcntl F_SET_RW_HINT): `none`, `short`, `medium`, `long` or `extreme`. A device with data placement (NVMe streams or FDP) may place writes by it; others ignore it. Default: left as it is.
    pub write_hint: Option<WriteHint>,
    /// Block jobs: open the files O_SYNC (`sync`) or O_DSYNC (`dsync`), so each write returns only once it is durable, as a database's log opened that way does (fio's `sync`). A replay of a recorded program's thread that wrote through such descriptors takes it. Default `none`.
    pub sync: Option<SyncMode>,
    /// Block jobs: each thread's nice value, -20 (most CPU) to 19 (least); below 0 needs CAP_SYS_NICE. Default: the engine's.
    pub nice: Option<i32>,
    /// Block jobs: replay this trace (fio's iolog, version 2 or 3) instead of drawing I/O: its reads, writes, trims and syncs, in order, on its files, which are laid out under `directory` (a path in the trace loses its leading `/`) to as far as the trace reaches into each. Streamed: any length replays in constant memory. One thread; `rw`, `bs`, `size` and the other keys that shape I/O do not apply. The report's `replay` says how late the I/Os went against the trace's times (fio's `read_iolog`).
    pub read_iolog: Option<String>,
    /// Block jobs, with `read_iolog`: issue each I/O as soon as the one before allows, not at its time in the trace. Default false.
    pub replay_no_stall: Option<bool>,
    /// Block jobs, with `read_iolog`: the trace's times in percent: 200 replays at half speed, 50 at twice. 1..=100000. Default 100.
    pub replay_time_scale: Option<u32>,
    /// Files job: the operation. Required with `kind = "files"`.
    pub op: Option<FileOp>,
    /// Files job: the tree `copy` and `sync` write to (`directory` is the source).
    pub dest: Option<String>,
    /// Files job, an op on an existing tree (`stat`, `delete`, `scan`...): when `directory` is missing or empty, first create the set there (`nr_files`, `file_size`... as `create` would), unmeasured, as fio lays a job's files out before it runs. Default false.
    pub create_first: Option<bool>,
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
    /// Files job, `stat`, `touch`, `chmod`, `xattr`: passes over the tree, each thread waiting for the others at each pass's end (fio's `loops`; its `time_based` is many passes with `runtime`). A files job stops at `runtime`, mid-pass, whatever `loops` says. 1..=2^32. Default 1.
    pub loops: Option<u64>,
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
    /// `size` in percent of the target (a device, or a file that exists): made bytes
    /// once the target is open.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size_percent: Option<f64>,
    /// `None` in a time-based job.
    pub io_size: Option<u64>,
    pub filename: Option<String>,
    pub directory: Option<String>,
    pub numjobs: u32,
    pub iodepth: u32,
    pub iodepth_batch_submit: u32,
    pub iodepth_batch_complete_min: u32,
    /// Seconds.
    pub completion_spin: f64,
    pub direct: bool,
    /// Seconds; `None` in a size-based job.
    pub runtime: Option<f64>,
    /// Seconds.
    pub ramp_time: f64,
    pub fsync: u64,
    #[serde(skip_serializing_if = "crate::spec::is_zero")]
    pub fdatasync: u64,
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
    /// Left out when false: a files job takes no steady-state key, not even `false`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub steady_state: bool,
    /// The steady-state keys, resolved; absent when `steady_state` is false.
    #[serde(flatten)]
    pub steady: Option<SteadyJob>,
    /// Left out when false, like `steady_state`: only block jobs take it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub verify: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verify_state: Option<String>,
    #[serde(skip_serializing_if = "crate::spec::is_zero")]
    pub verify_backlog: u64,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub verify_read_back: bool,
    /// Block jobs: sizes, offsets, pace and data beyond one `bs` and uniform offsets;
    /// each key left out when it has its default.
    #[serde(flatten)]
    pub pattern: PatternJob,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub op: Option<FileOp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dest: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub create_first: bool,
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
    /// Files job: passes over the tree (1 unless asked).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loops: Option<u64>,
    /// oltp, mailstore: the model's keys, resolved.
    #[serde(flatten)]
    pub app: Option<AppJob>,
    /// `--within DIR` (fio job files): every file of the job is opened beneath DIR,
    /// following no link (beneath.rs). Not a job key: a job names its own paths, and
    /// confinement is for files written by someone else, which the command line asks for.
    #[serde(skip)]
    #[schemars(skip)]
    pub beneath: Option<PathBuf>,
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
    /// Data and log I/O carry RWF_DONTCACHE (`uncached`, buffered only).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub uncached: bool,
}

/// A block job's pattern keys, resolved (`spec/pattern.rs`). Sizes in bytes, durations
/// in seconds; `None` (left out of the echo) is the default.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct PatternJob {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bssplit: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bsrange: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blockalign: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub random_distribution: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub norandommap: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    /// `offset` in percent of the target, made bytes once it is open.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset_percent: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset_increment: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub number_ios: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seq_skip: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seq_run: Option<u32>,
    /// Bytes per second, per thread.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_iops: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_min: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_iops_min: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_process: Option<RateProcess>,
    /// Seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinktime: Option<f64>,
    /// Seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinktime_spin: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinktime_blocks: Option<u64>,
    /// Seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub startdelay: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buffer_compress_percentage: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buffer_compress_chunk: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dedupe_percentage: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dedupe_working_set_percentage: Option<f64>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub dedupe_global: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buffer_pattern: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub refill_buffers: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub invalidate: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub fadvise_hint: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zonesize: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zonerange: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zoneskip: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prio: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prioclass: Option<u32>,
    /// `[reads, writes]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cmdprio_percentage: Option<[u32; 2]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cmdprio_class: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cmdprio: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cmdprio_bssplit: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub fill_device: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flow: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flow_id: Option<u32>,
    /// Seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flow_sleep: Option<f64>,
    /// Seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_target: Option<f64>,
    /// Seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_window: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_percentile: Option<f64>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub latency_run: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpus_allowed: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpus_allowed_policy: Option<CpusPolicy>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub numa_cpu_nodes: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub numa_mem_policy: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filename_format: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nrfiles: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_service_type: Option<String>,
    #[serde(skip_serializing_if = "ContinueOn::is_none")]
    pub continue_on_error: ContinueOn,
    /// Error numbers; left out when `continue_on_error` is `none`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub continue_errors: Vec<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub donorname: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub inplace: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
    /// The program's arguments, `%r` and `%n` filled in.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub arguments: Vec<String>,
    /// Seconds; with `program`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grace_time: Option<f64>,
    /// With `program`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub std_redirect: Option<bool>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub atomic: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub uncached: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub nowait: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub sqthread_poll: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sqthread_poll_cpu: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_hint: Option<WriteHint>,
    #[serde(default, skip_serializing_if = "is_no_sync")]
    pub sync: SyncMode,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nice: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_iolog: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub replay_no_stall: bool,
    /// Percent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay_time_scale: Option<u32>,
}

/// The steady-state keys (`steady_state = true`), resolved.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct SteadyJob {
    /// Seconds.
    pub steady_round: f64,
    pub steady_window: u32,
    /// Percent.
    pub steady_range: f64,
    /// Percent.
    pub steady_slope: f64,
    /// Seconds.
    pub steady_measure: f64,
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

    /// How an io_uring queue submits and reaps.
    pub fn batching(&self) -> crate::io::uring::Batching {
        crate::io::uring::Batching {
            submit: self.iodepth_batch_submit as usize,
            complete_min: self.iodepth_batch_complete_min as usize,
            spin: Duration::from_secs_f64(self.completion_spin),
        }
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
    /// The thread's queue-depth search (`latency_target`), when the job has one.
    pub fn lat_target(
        &self,
        start: crate::clock::Instant,
    ) -> Option<crate::block::lat_target::LatTarget> {
        let p = &self.pattern;
        let target = p.latency_target?;
        Some(crate::block::lat_target::LatTarget::new(
            Duration::from_secs_f64(target),
            p.latency_percentile.unwrap_or(100.0),
            Duration::from_secs_f64(p.latency_window.unwrap_or(0.0)),
            p.latency_run,
            self.iodepth,
            start,
        ))
    }
    /// The per-request priorities (`cmdprio_*`), when the job has any.
    pub fn cmdprio(&self) -> Option<crate::block::cmdprio::CmdPrio> {
        let p = &self.pattern;
        if p.cmdprio_percentage.is_none() && p.cmdprio_bssplit.is_none() {
            return None;
        }
        crate::block::cmdprio::CmdPrio::new(
            p.cmdprio_percentage,
            p.cmdprio_class.unwrap_or(1),
            p.cmdprio.unwrap_or(0),
            p.cmdprio_bssplit.as_deref(),
        )
        .ok()
        .filter(|c| !c.is_empty())
    }
    /// The path each thread does I/O on (`None` for the null engine).
    /// Thread `thread`'s file number `file` in `dir` (`directory` without `filename`).
    fn file_in(&self, dir: &str, thread: u32, file: u32) -> PathBuf {
        PathBuf::from(dir).join(match &self.pattern.filename_format {
            Some(f) => f
                .replace("$jobname", &self.name)
                .replace("$jobnum", &thread.to_string())
                .replace("$filenum", &file.to_string()),
            None => format!("{}.{thread}.{file}", self.name),
        })
    }

    /// The files of a thread: `path_for` and, with `nrfiles` > 1, the others.
    pub fn paths_of(&self, thread: u32) -> Vec<PathBuf> {
        match (self.pattern.nrfiles, &self.directory, &self.filename) {
            (Some(n), Some(dir), None) => (0..n).map(|f| self.file_in(dir, thread, f)).collect(),
            _ => self.path_for(thread).into_iter().collect(),
        }
    }

    /// The files each thread has (`nrfiles`).
    pub fn files_per_thread(&self) -> u32 {
        self.pattern.nrfiles.unwrap_or(1)
    }

    pub fn path_for(&self, thread: u32) -> Option<PathBuf> {
        if self.ioengine == IoEngine::Null {
            return None;
        }
        match (&self.directory, &self.filename) {
            (Some(dir), Some(file)) => Some(PathBuf::from(dir).join(file)),
            (None, Some(file)) => Some(PathBuf::from(file)),
            (Some(dir), None) => Some(self.file_in(dir, thread, 0)),
            (None, None) => None,
        }
    }
}

/// The JSON Schema of a job, as committed in `schemas/job.schema.json`.
pub fn job_schema() -> Value {
    serde_json::to_value(schemars::schema_for!(JobSpec)).unwrap_or_default()
}

/// The keys a job may have, taken from the schema so they cannot drift from `JobSpec`.
pub fn known_keys() -> Vec<String> {
    // Made once: making the schema costs more than checking a job (a fio file of 4096
    // jobs checks each).
    static KEYS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    KEYS.get_or_init(|| {
        let schema = schemars::schema_for!(JobSpec);
        schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default()
    })
    .clone()
}

impl JobSpec {
    /// Checks every value and combination, fills in defaults. Does not look at the target.
    pub fn resolve(&self) -> Result<Job, JobErrors> {
        let mut errors = Vec::new();
        let e = &mut errors;
        let kind = self.kind.unwrap_or_default();
        let mut job = self.resolve_io(kind, e);
        if kind == Kind::Files {
            self.resolve_files(&mut job, e);
        }
        self.refuse_other_kinds_keys(kind, e);
        job.app = self.resolve_app(kind, job.ioengine, job.direct, job.runtime(), e);
        job.steady = self.resolve_steady(&job, e);
        job.steady_state = job.steady.is_some();
        if kind == Kind::Block {
            self.resolve_pattern(&mut job, e);
            self.resolve_verify(&mut job, e);
        }
        self.check_paths(kind, job.ioengine, e);
        if errors.is_empty() {
            Ok(job)
        } else {
            Err(JobErrors(errors))
        }
    }

    /// Whether the job gives `key` a value.
    pub fn is_set(&self, key: &str) -> bool {
        self.given.contains(key)
    }

    /// The keys the job sets, in `KEYS` order.
    fn set_keys(&self) -> impl Iterator<Item = &'static Key> + '_ {
        KEYS.iter().filter(|k| self.is_set(k.name))
    }

    /// Errors for keys set that belong to another kind.
    fn refuse_other_kinds_keys(&self, kind: Kind, e: &mut Vec<JobError>) {
        for k in self.set_keys().filter(|k| !k.kinds.contains(&kind)) {
            let names: Vec<_> = k
                .kinds
                .iter()
                .map(|k| format!("`kind = \"{}\"`", k.name()))
                .collect();
            let hint = if k.kinds == FILES {
                "add `kind = \"files\"` for a file-management job, or remove it"
            } else {
                "remove it, or set the kind it belongs to"
            };
            e.push(
                JobError::new(k.name, format!("only applies to {}", names.join(" or "))).hint(hint),
            );
        }
    }

    /// Warnings for keys the job sets but does not use.
    pub fn warnings(&self, job: &Job) -> Vec<Warning> {
        let mut out = self.ignored_steady_keys(job);
        if job.kind.is_app() {
            return out;
        }
        if job.kind == Kind::Block {
            out.extend(self.ignored_keys().into_iter().map(|k| {
                Warning::new(
                    WarningKind::IgnoredKey,
                    format!("`{k}` has no effect with rw = {:?}", job.rw).to_lowercase(),
                    format!("remove `{k}`, or use a mixed `rw` (randrw, readwrite)"),
                )
            }));
            return out;
        }
        let op = job.op.map_or("", FileOp::name);
        out.extend(
            self.set_keys()
                .filter(|k| k.kinds == FILES && !k.ops.is_empty())
                .filter(|k| !job.op.is_some_and(|op| k.ops.contains(&op)))
                .filter(|k| !(job.create_first && k.ops == CREATE))
                .map(|k| {
                    Warning::new(
                        WarningKind::IgnoredKey,
                        format!("`{}` has no effect with kind = files, op = {op}", k.name),
                        format!("remove `{}`", k.name),
                    )
                }),
        );
        out
    }
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
    fn a_verify_job_echoes_as_a_valid_job_and_others_leave_verify_out() {
        let (_, job) = load("filename = \"/f\"\nsize = \"1m\"\nrw = \"write\"\niodepth = 8\nverify = true\nverify_state = \"/s\"").unwrap();
        let echoed = serde_json::to_value(&job).unwrap();
        assert_eq!(echoed["verify"], true);
        assert_eq!(echoed["verify_state"], "/s");
        let mut map = echoed.as_object().unwrap().clone();
        map.retain(|_, v| !v.is_null());
        let again = spec_from_value(Value::Object(map))
            .unwrap()
            .resolve()
            .unwrap();
        assert_eq!(job, again);
        let (_, plain) = load("filename = \"/f\"\nsize = \"1m\"").unwrap();
        let echoed = serde_json::to_value(&plain).unwrap();
        assert!(echoed.get("verify").is_none() && echoed.get("verify_state").is_none());
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
            text.contains("`iodepth`: 0 is out of range (1..=32768)"),
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

    #[test]
    fn the_key_table_declares_every_key_of_the_schema_once() {
        let mut table: Vec<&str> = KEYS.iter().map(|k| k.name).collect();
        let before = table.len();
        table.sort_unstable();
        table.dedup();
        assert_eq!(table.len(), before, "a key is declared twice in KEYS");
        let mut schema = known_keys();
        schema.sort_unstable();
        assert_eq!(table, schema, "KEYS and JobSpec's fields differ");
    }

    #[test]
    fn a_key_of_another_kind_is_refused_naming_the_kinds_it_belongs_to() {
        let errs = errors("filename = \"/f\"\nop_mix = [1, 1, 1, 1]\nnr_files = 3");
        let text = JobErrors(errs).to_string();
        assert!(
            text.contains(
                "`nr_files`: only applies to `kind = \"files\"`\n  hint: add `kind = \"files\"`"
            ),
            "{text}"
        );
        assert!(
            text.contains("`op_mix`: only applies to `kind = \"mailstore\"`\n  hint: remove it"),
            "{text}"
        );
        // Table order: the files key is reported before the application model's.
        assert!(text.find("nr_files") < text.find("op_mix"), "{text}");
    }

    #[test]
    fn a_null_key_counts_as_absent() {
        let (_, job) =
            load(r#"{"filename": "/f", "size": "1m", "nr_files": null, "op_mix": null}"#).unwrap();
        assert_eq!(job.nr_files, None);
    }

    #[test]
    fn files_keys_another_op_does_not_use_are_warned_about() {
        let (spec, job) = load(
            "kind = \"files\"\nop = \"copy\"\ndirectory = \"/a\"\ndest = \"/b\"\nmode = \"0600\"\nnr_files = 2",
        )
        .unwrap();
        let warned: Vec<String> = spec.warnings(&job).into_iter().map(|w| w.message).collect();
        assert_eq!(
            warned,
            [
                "`nr_files` has no effect with kind = files, op = copy",
                "`mode` has no effect with kind = files, op = copy",
            ]
        );
    }
}
