//! The engine's output: one JSON document, the only contract between engine and lab.
//!
//! Bump `SCHEMA_VERSION` on any change a reader could notice (a key removed, renamed,
//! or with a new meaning); adding a key does not need a bump. `schemas/report.schema.json`
//! is generated from these types, and a test fails when the committed copy is stale.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::diagnostics::Warning;
use crate::error::JobError;
use crate::spec::{FileOp, Job, Kind};

pub const SCHEMA_VERSION: u32 = 1;

/// The whole output of one job.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(title = "fslab-engine report")]
pub struct Report {
    /// Version of this document's layout.
    pub schema_version: u32,
    pub engine: EngineInfo,
    /// The job as understood, with every default filled in.
    pub job: Job,
    /// `ok`, `interrupted` (a signal stopped it; the numbers cover the part that ran) or
    /// `failed` (an I/O error stopped it; see `errors`).
    pub status: Status,
    /// True when a signal stopped the job early.
    pub interrupted: bool,
    /// Wall-clock start of the job (after layout), seconds since the Unix epoch.
    pub start_unix_s: f64,
    /// Measured time after the ramp, seconds (the denominator of every rate below).
    pub runtime_s: f64,
    /// Time spent in the ramp, seconds.
    pub ramp_s: f64,
    pub target: TargetInfo,
    /// The file was laid out (written once) before timing because it had to be read.
    pub layout: Option<Layout>,
    /// One entry per direction that did I/O: `read` first, then `write`.
    pub results: Vec<OpResult>,
    /// fsync calls (`fsync`, `end_fsync`), timed separately from the writes.
    pub fsync: FsyncResult,
    pub series: Series,
    pub cpu: Cpu,
    /// I/O errors; the job stops at the first one. With `verify`, a failed read is not
    /// one: it is counted as `unreadable` in `verify` and the job goes on.
    pub errors: Vec<IoErrorEntry>,
    /// Things that may make the numbers mean less than they seem.
    pub warnings: Vec<Warning>,
    /// What a files job (`kind = "files"`) found and did; absent in block jobs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files: Option<FilesResult>,
    /// What an application model (`kind = "oltp"`, `"mailstore"`) did; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub app: Option<AppResult>,
    /// With `steady_state = true`: whether the rate settled before `runtime`, and the
    /// span `results` cover; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steady_state: Option<SteadyState>,
    /// With `verify = true`: how the blocks read back compared with what was written
    /// (docs/engine.md, "Verify"); absent otherwise. Bad blocks do not fail the job: they
    /// are counted here and warned about (`verify_failed`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verify: Option<VerifyResult>,
    /// With `rate` or `rate_iops`: the rate asked and the rate achieved over `runtime_s`,
    /// all threads together; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<RateResult>,
    /// With `continue_on_error`: the failed I/Os the job went on after, by op and error,
    /// all threads together; absent when there were none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors_continued: Vec<ContinuedErrors>,
    /// With `latency_target`: each thread's queue-depth search; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_target: Option<LatTargetResult>,
    /// With `program`: the program run beside the job and how it ended; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<ProgramResult>,
    /// With `read_iolog`: the trace replayed and how late its actions went against its
    /// times; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<ReplayResult>,
}

/// A trace replayed (`read_iolog`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReplayResult {
    /// The trace.
    pub log: String,
    /// Its actions were issued at their times in the trace (scaled by
    /// `replay_time_scale`); false: each as soon as the one before allowed
    /// (`replay_no_stall`).
    pub timed: bool,
    /// Actions issued: reads, writes, trims, syncs, size changes and path actions.
    pub actions: u64,
    /// Of them, path actions: unlinks, renames, mkdirs, rmdirs and stats of names in
    /// the directory (fslab's traces).
    #[serde(default)]
    pub paths: u64,
    /// Of those, skipped because the name was already there or not there: the replay
    /// lays every file out before it starts, so the directory is not as the recorded
    /// program found it.
    #[serde(default)]
    pub paths_skipped: u64,
    /// Reads that found their file shorter than the recorded program did, counted as
    /// done: the threads' traces keep their order between them only by their times, so
    /// one may read where another has truncated (as fast as allowed, or late).
    #[serde(default)]
    pub short_reads: u64,
    /// Of them, issued more than 100 us after their time (timed replays only).
    pub late: u64,
    /// How late those were, on average and at most, seconds.
    pub late_mean_s: f64,
    pub late_max_s: f64,
}

/// The program a job ran beside it (`program`, fio's `exec` engine).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ProgramResult {
    /// The program and its arguments, as run.
    pub argv: Vec<String>,
    pub pid: u32,
    /// Its exit status, when it exited.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The signal that ended it, when one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// It was still running when the job ended, and was sent SIGTERM.
    pub stopped: bool,
    /// It outlived `grace_time` after SIGTERM, and was killed (SIGKILL).
    pub killed: bool,
    /// Seconds from its start until the job stopped it or saw it had ended.
    pub ran_s: f64,
}

/// The queue-depth searches of a job with `latency_target`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct LatTargetResult {
    pub target_ns: u64,
    pub percentile: f64,
    pub window_s: f64,
    pub threads: Vec<crate::block::lat_target::LatThread>,
}

/// Failed I/Os of one op and one error that a job went on after (`continue_on_error`).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ContinuedErrors {
    pub op: String,
    pub errno: i32,
    /// The error's name (`ENOSPC`), when the engine knows it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub count: u64,
    /// The offset of the first one.
    pub first_offset: u64,
}

/// What a rate-limited job asked for and achieved (all threads together).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RateResult {
    /// `bytes` (`rate`) or `iops` (`rate_iops`): what the rates below count per second.
    pub unit: RateUnit,
    pub asked_per_s: f64,
    /// The least accepted (`rate_min`, `rate_iops_min`; else 95% of the asked rate);
    /// below it the report warns `rate_short`.
    pub least_per_s: f64,
    pub achieved_per_s: f64,
    /// `achieved_per_s / asked_per_s`.
    pub share: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RateUnit {
    Bytes,
    Iops,
}

/// What `verify = true` found. Counts cover the whole job, the ramp included (unlike
/// `results`): each read is classified once, so a block read three times counts three
/// times. `good + corrupt + misplaced + stale + unreadable + unwritten = blocks_read`.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
pub struct VerifyResult {
    /// Writes that completed, each stamped with its block's next generation.
    pub blocks_written: u64,
    /// Blocks read and classified (unreadable and unwritten ones included).
    pub blocks_read: u64,
    /// Header, checksum, offset and generation as expected.
    pub good: u64,
    /// No valid header, a checksum mismatch (zeroed, random, bit-flipped or torn), or a
    /// generation newer than any write recorded.
    pub corrupt: u64,
    /// A valid block, written for another offset.
    pub misplaced: u64,
    /// A valid block of this offset, but an older generation than the last write: a
    /// lost write.
    pub stale: u64,
    /// The read failed (an errno) or came back short; the job went on with the next block.
    pub unreadable: u64,
    /// Never written as far as the engine knows (generation 0): not checked.
    pub unwritten: u64,
    /// `verify_read_back`: blocks read back once the job's I/O had ended (also counted in
    /// `blocks_read` and their classes, not in `results`), and how long that took.
    pub read_back_blocks: u64,
    pub read_back_s: f64,
    /// `verify_state`, when the job has one.
    pub state_file: Option<String>,
    /// The first 16 bad blocks (each block once), in the order they were met.
    pub bad: Vec<VerifyBad>,
}

/// One block that did not read back as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct VerifyBad {
    /// Byte offset of the block in the file or device.
    pub offset: u64,
    pub class: VerifyClass,
    /// `unreadable`: the OS error number (null for a short read).
    pub errno: Option<i32>,
    /// The generation the last recorded write gave this block.
    pub expected_generation: u32,
    /// The generation the block's header holds, when its header is valid.
    pub found_generation: Option<u32>,
    /// The offset the block's header holds, when its header is valid.
    pub found_offset: Option<u64>,
    /// What was wrong, in words (`generation 1, expected 2`, `crc32c mismatch ...`).
    pub detail: String,
}

/// Why a block is bad.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum VerifyClass {
    /// No valid header, a checksum mismatch, or an impossible generation.
    Corrupt,
    /// A valid block written for another offset.
    Misplaced,
    /// A valid block of an older generation than the last write (a lost write).
    Stale,
    /// The read failed or came back short.
    Unreadable,
}

impl VerifyClass {
    pub fn name(self) -> &'static str {
        match self {
            VerifyClass::Corrupt => "corrupt",
            VerifyClass::Misplaced => "misplaced",
            VerifyClass::Stale => "stale",
            VerifyClass::Unreadable => "unreadable",
        }
    }
}

/// A steady-state job's verdict (docs/engine.md, "Steady state"). Times are seconds from
/// the start of the job, the ramp included, as in `series`. The rate is completions per
/// second of the job's tracked operations: a block job's reads and writes, an
/// application model's transactions.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SteadyState {
    /// True when a window was steady before `runtime` (then only the cap) ran out; false
    /// comes with a `not_steady` warning.
    pub attained: bool,
    /// Rounds completed over the whole job.
    pub rounds: u32,
    /// How often the reported window's rounds are doubled from the shortest (at most 2:
    /// rounds of up to 4 x `steady_round`, merged from the rounds closed); the window's
    /// rounds show their lengths.
    pub widened: u32,
    /// The last window judged (the steady one when `attained`); null when the job
    /// completed fewer rounds than a window holds.
    pub window_start_s: Option<f64>,
    pub window_end_s: Option<f64>,
    /// That window's rates, max - min, in percent of their mean.
    pub range_pct: Option<f64>,
    /// How far the least-squares line through that window's rates moves from its first
    /// round to its last, in percent of their mean.
    pub slope_pct: Option<f64>,
    /// That window's rounds, oldest first (empty with no whole window).
    pub window_rounds: Vec<SteadyRound>,
    /// What `results` and `runtime_s` cover: the steady window and `steady_measure` after
    /// it; when never steady, the last window judged, or the whole measured job when it
    /// held none.
    pub results_start_s: f64,
    pub results_end_s: f64,
    /// The job's limits, resolved.
    pub limits: SteadyLimits,
}

/// One round of a steady-state window: whole series intervals.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SteadyRound {
    pub start_s: f64,
    pub end_s: f64,
    /// Completions of the tracked operations.
    pub ios: u64,
    /// `ios` per second.
    pub rate: f64,
}

/// The limits the job was judged by: its steady-state keys, resolved.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SteadyLimits {
    /// `steady_round`: the shortest round, seconds (rounds widen to hold 200 completions).
    pub round_s: f64,
    /// `steady_window`: rounds judged together.
    pub window: u32,
    /// `steady_range`, percent.
    pub range_pct: f64,
    /// `steady_slope`, percent.
    pub slope_pct: f64,
    /// `steady_measure`: seconds measured after the window was steady.
    pub measure_s: f64,
}

/// An application model's answers. Counts cover the measured time (after the ramp),
/// like `results`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct AppResult {
    /// `oltp` or `mailstore`.
    pub model: Kind,
    /// Transactions completed (scans and mailstore reads included).
    pub txn: u64,
    pub txn_per_s: f64,
    /// Per file, `data` and `log`: the engine's own counters.
    pub files: std::collections::BTreeMap<String, AppFile>,
    pub commits: Commits,
    pub cache: CacheStats,
    /// Page updates by transactions (a page updated twice before a checkpoint is written once).
    pub pages_dirtied: u64,
    /// Every checkpoint, the final one included (at most 10000 listed).
    pub checkpoints: Vec<Checkpoint>,
    /// oltp: read-ahead scans done.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scans: Option<u64>,
    /// mailstore: operations done, by name (`insert`, `delete`, `replace`, `read`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ops: Option<std::collections::BTreeMap<String, u64>>,
    /// mailstore: background maintenance reads of the data file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub maintenance: Option<AppSide>,
    /// mailstore: the JetStress set of numbers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jetstress: Option<JetStress>,
    /// mailstore: PASS (`pass: true`) when every check is under its threshold.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
}

/// One file of an application model.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
pub struct AppFile {
    pub path: String,
    pub read: AppSide,
    pub write: AppSide,
    /// fsync/fdatasync calls on this file (the data file: one per checkpoint; the log:
    /// one per flush, none when `direct` opens it O_DSYNC).
    pub fsyncs: u64,
    /// Reads + writes per second.
    pub iops: f64,
}

/// One direction on one file.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
pub struct AppSide {
    pub ios: u64,
    pub bytes: u64,
    pub iops: f64,
    pub avg_bytes: f64,
    pub lat_ns: LatNs,
}

#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
pub struct Commits {
    /// Transactions that wrote a commit record.
    pub count: u64,
    /// Of those, the ones that waited for their record to be durable.
    pub sync: u64,
    /// Of those, the ones that did not wait (mailstore's lazy commits).
    pub lazy: u64,
    /// Log flushes (write + fdatasync, or one O_DSYNC write); fewer than `count` when commits were grouped.
    pub flushes: u64,
    /// Commit records per flush, mean.
    pub records_per_flush: f64,
    /// Time a synchronous commit took, from appending the record to its being durable.
    pub sync_lat_ns: LatNs,
    /// Time a lazy commit took (appending the record only).
    pub lazy_lat_ns: LatNs,
}

#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
pub struct CacheStats {
    /// Capacity, pages (0: no cache, every page read is an I/O).
    pub pages: u64,
    /// Page reads transactions asked for.
    pub lookups: u64,
    /// Of those, served from the cache without I/O.
    pub hits: u64,
    pub hit_ratio: f64,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Checkpoint {
    /// Start, seconds from the start of the job (the ramp included).
    pub t_s: f64,
    pub pages: u64,
    /// Writes and the data file's fdatasync.
    pub dur_s: f64,
    /// pages / dur_s: the burst's IOPS.
    pub iops: f64,
    /// The one at the end of the job, which writes what is left.
    pub last: bool,
}

/// The numbers Microsoft JetStress reports, from this run.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct JetStress {
    /// Data reads + writes per second (maintenance and log excluded).
    pub transactional_iops: f64,
    pub db_reads_per_s: f64,
    pub db_writes_per_s: f64,
    pub db_read_lat_ms: f64,
    pub db_write_lat_ms: f64,
    pub db_read_avg_bytes: f64,
    pub db_write_avg_bytes: f64,
    pub log_writes_per_s: f64,
    pub log_write_lat_ms: f64,
    pub log_write_avg_bytes: f64,
    /// The engine's CPU, as in `cpu.usage_pct`.
    pub cpu_pct: f64,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Verdict {
    pub pass: bool,
    pub checks: Vec<Check>,
}

/// One threshold: passes when `value < max`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Check {
    pub name: String,
    pub value: f64,
    pub max: f64,
    pub pass: bool,
}

/// The answers of a files job, beside its rates in `results`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct FilesResult {
    /// The operation (`create`, `copy`, `sync`, `mutate`, `scan`, `dupes`, `touch`, `chmod`, `xattr`, `delete`, `stat`).
    pub op: FileOp,
    /// Files (every entry that is not a directory) the operation handled.
    pub files: u64,
    /// Sum of those files' sizes (apparent bytes).
    pub bytes: u64,
    /// Directories walked, made or removed.
    pub dirs: u64,
    /// Files created (`create`, `copy`, `mutate`; `sync`: new in `dest`).
    pub created: u64,
    /// Files deleted (`delete`; `sync`: gone from the source; `mutate`).
    pub deleted: u64,
    /// Files whose content was written again (`sync`: copied because size or mtime differed; `copy`: every file; `mutate`: changed in place).
    pub copied: u64,
    /// `scan`: per top-level directory (`.` for the root's own entries): `bytes` as `du -sb` counts them (files and directories) and `files`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scan_totals: Option<std::collections::BTreeMap<String, ScanTotal>>,
    /// `dupes`: groups of files with equal content (paths relative to `directory`, sorted), at most 1000 groups; empty files are not counted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dupe_groups: Option<Vec<Vec<String>>>,
    /// `dupes`: number of groups (all of them, also those past the list's cap).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dupe_group_count: Option<u64>,
    /// `dupes`: files in all groups.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dupe_files: Option<u64>,
    /// `dupes`: bytes that removing all but one file of each group would free.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dupe_wasted_bytes: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct ScanTotal {
    pub bytes: u64,
    pub files: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Interrupted,
    Failed,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct EngineInfo {
    pub name: String,
    pub version: String,
    /// The clock latencies are read from.
    pub clock: String,
}

impl EngineInfo {
    /// This engine: every report, whatever the job's kind, names it the same way.
    pub fn this() -> Self {
        Self {
            name: "fslab-engine".into(),
            version: crate::VERSION.into(),
            clock: crate::clock::source().name().into(),
        }
    }
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TargetInfo {
    /// `file`, `block`, `none` (null engine) or `tree` (a files job: `paths` are `directory` and `dest`).
    pub kind: TargetKind,
    /// Every path I/O went to (one per thread with `directory`).
    pub paths: Vec<String>,
    /// Bytes addressed by each thread.
    pub size_bytes: u64,
    /// Alignment O_DIRECT needs on this target (from statx or the device), when known.
    pub dio_align_bytes: Option<u64>,
}

/// What a job's I/O went to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TargetKind {
    /// A regular file (one per thread with `directory`), or an application model's files.
    File,
    /// A block device.
    Block,
    /// Nothing: the `null` engine.
    #[serde(rename = "none")]
    Nothing,
    /// A tree of files under `directory` (a files job).
    Tree,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Layout {
    pub bytes: u64,
    pub runtime_s: f64,
}

/// Latency summary in nanoseconds, from an HDR histogram (3 significant digits).
#[derive(Debug, Clone, Default, Serialize, JsonSchema, Deserialize)]
pub struct LatNs {
    pub min: u64,
    pub mean: f64,
    pub stdev: f64,
    pub max: u64,
    pub p50: u64,
    pub p90: u64,
    pub p95: u64,
    pub p99: u64,
    pub p999: u64,
    pub p9999: u64,
}

/// One direction's totals over the measured time.
#[derive(Debug, Clone, Serialize, JsonSchema, Deserialize)]
pub struct OpResult {
    /// `read` or `write`; in a files job the operation (`create`, `copy`...; `ios` are
    /// files), and for `dupes` also `hash` (the files read to compare them); in an
    /// application model `data_read`, `data_write`, `log_write`, `txn`, `maintenance_read`.
    pub op: ResultOp,
    pub ios: u64,
    pub bytes: u64,
    pub iops: f64,
    /// Bytes per second.
    pub bw_bytes: f64,
    /// Submission to completion.
    pub lat_ns: LatNs,
    /// The latency histogram, HdrHistogram V2 + DEFLATE, base64; merge runs and threads with it.
    pub hist: String,
}

/// What one `results` entry counts: an I/O direction or model operation, or a files
/// job's operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema, Deserialize)]
#[serde(untagged)]
pub enum ResultOp {
    Io(IoOp),
    Files(FileOp),
}

/// The operations of block jobs, application models and the `dupes` hash pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IoOp {
    /// A block job's reads.
    Read,
    /// A block job's writes.
    Write,
    /// A block job's trims.
    Trim,
    /// `dupes`: the files read to compare them.
    Hash,
    /// An application model's page reads (and scans) of the data file.
    DataRead,
    /// An application model's checkpoint writes of the data file.
    DataWrite,
    /// An application model's log flushes (write + flush).
    LogWrite,
    /// An application model's whole transactions (`bytes` 0).
    Txn,
    /// mailstore: background maintenance reads of the data file.
    MaintenanceRead,
}

impl From<IoOp> for ResultOp {
    fn from(op: IoOp) -> Self {
        ResultOp::Io(op)
    }
}

impl From<FileOp> for ResultOp {
    fn from(op: FileOp) -> Self {
        ResultOp::Files(op)
    }
}

#[derive(Debug, Clone, Default, Serialize, JsonSchema, Deserialize)]
pub struct FsyncResult {
    pub count: u64,
    pub lat_ns: LatNs,
}

/// The job over time, one point per `interval`.
#[derive(Debug, Clone, Serialize, JsonSchema, Deserialize)]
pub struct Series {
    pub interval_s: f64,
    pub points: Vec<SeriesPoint>,
}

/// One interval of the job: a point of `series.points`, and one line of
/// `run --progress=jsonl` as the interval completes.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SeriesPoint {
    /// End of this interval, seconds from the start of the job (the ramp included).
    pub t_s: f64,
    /// Length of this interval, seconds (the last one may be shorter).
    pub dur_s: f64,
    /// Inside `ramp_time`: shown, but not part of `results`.
    pub ramp: bool,
    pub read: Option<IntervalOp>,
    pub write: Option<IntervalOp>,
    /// A files job's operation (files handled, their bytes read + written); absent in block jobs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files: Option<IntervalOp>,
    /// An application model's log writes (each a write + flush); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log: Option<IntervalOp>,
    /// An application model's transactions (`bytes` 0); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub txn: Option<IntervalOp>,
    /// An application model's background reads (mailstore maintenance); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub background: Option<IntervalOp>,
    /// A block job's trims; absent when it has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trim: Option<IntervalOp>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct IntervalOp {
    pub ios: u64,
    pub bytes: u64,
    pub iops: f64,
    pub bw_bytes: f64,
    pub lat_mean_ns: f64,
    pub lat_p99_ns: u64,
}

/// CPU the engine itself used, all threads, for the whole job (layout excluded).
#[derive(Debug, Clone, Default, Serialize, JsonSchema, Deserialize)]
pub struct Cpu {
    pub user_s: f64,
    pub sys_s: f64,
    /// (user + sys) / wall time x 100: 100 is one core busy.
    pub usage_pct: f64,
    pub ctx_voluntary: u64,
    pub ctx_involuntary: u64,
}

#[derive(Debug, Clone, Serialize, JsonSchema, Deserialize)]
pub struct IoErrorEntry {
    pub op: String,
    pub thread: u32,
    pub offset: u64,
    /// The OS error number, when there is one.
    pub errno: Option<i32>,
    pub message: String,
}

/// What `fslab-engine check --format json` prints: whether the job is valid, every
/// problem with it, the warnings it would run with, and the job resolved.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(title = "fslab-engine check")]
pub struct CheckReport {
    /// True when the job has no errors (exit 0); false is exit 2.
    pub ok: bool,
    /// Every problem found, all at once; `key` is null for the job as a whole.
    pub errors: Vec<JobError>,
    /// Keys the job sets that have no effect.
    pub warnings: Vec<Warning>,
    /// The job with every default filled in (what `check` prints as text); null when
    /// there are errors.
    pub job: Option<Job>,
}

/// What `fslab-engine steady` prints: a finished series judged by a job's steady-state
/// keys (docs/engine.md, "Steady state").
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(title = "fslab-engine steady")]
pub struct SteadyAnswer {
    /// As a report's `steady_state`; `results_*_s` span the whole measured series.
    pub steady_state: SteadyState,
    /// `not_steady` when no window was steady; empty otherwise.
    pub warnings: Vec<Warning>,
}

/// The JSON Schema of `steady`'s answer, as committed in `schemas/steady.schema.json`.
pub fn steady_schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(SteadyAnswer)).unwrap_or_default()
}

/// The JSON Schema of `check --format json`, as committed in `schemas/check.schema.json`.
pub fn check_schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(CheckReport)).unwrap_or_default()
}

/// The JSON Schema of one `run --progress=jsonl` line (a series point), as committed in
/// `schemas/progress.schema.json`.
pub fn progress_schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(SeriesPoint)).unwrap_or_default()
}

/// The JSON Schema of the report, as committed in `schemas/report.schema.json`.
pub fn report_schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(Report)).unwrap_or_default()
}
