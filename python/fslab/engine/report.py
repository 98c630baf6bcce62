"""The layout of the JSON report the engine prints (`fslab-engine schema report`), as
typed models: everything else in the lab reads `Report`, never the engine's JSON itself.
Also what `fslab-engine steady` prints, and the HDR histograms a report carries."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import ErrorDetails

from fslab.engine.find import ENGINE_ENV, ENGINE_NAME
from fslab.errors import EngineError

SCHEMA_VERSION = 1
"""The newest report layout this lab understands; newer reports are refused."""

Status = Literal["ok", "interrupted", "failed"]


class _Model(BaseModel):
    """One JSON object of the report. Scalars are strict (an integer is never a bool or
    `1.0`, a string never a number); keys the engine adds without a schema bump are
    ignored (`fslab-engine schema report`: new keys keep `schema_version`)."""

    model_config = ConfigDict(extra="ignore", frozen=True, strict=True)


_T = TypeVar("_T")
_Items = Annotated[tuple[_T, ...], Field(strict=False)]
"""A JSON list (strict tuples would take only Python tuples); its items stay strict."""
_Pair = Annotated[tuple[int, float], Field(strict=False)]
"""A JSON `[integer, number]`."""


class EngineInfo(_Model):
    name: str
    version: str
    clock: str


class Job(_Model):
    """The job as the engine understood it, every default filled in: sizes in bytes,
    durations in seconds. It is itself a valid job (`job.model_dump()`)."""

    name: str
    rw: str
    rwmixread: int
    bs: int
    size: int | None = None
    io_size: int | None = None
    filename: str | None = None
    directory: str | None = None
    numjobs: int
    iodepth: int
    iodepth_batch_submit: int = 1
    iodepth_batch_complete_min: int = 1
    completion_spin: float = 0.0
    direct: bool
    runtime: float | None = None
    ramp_time: float
    fsync: int
    end_fsync: bool
    ioengine: str
    buffer_content: str
    randseed: int
    interval: float
    allow_device_write: bool
    null_lat: float
    kind: str = "block"
    """`block`, `files`, `oltp` or `mailstore` (the engine leaves it out for `block`)."""
    steady_state: bool = False
    """Stop once steady (the engine leaves it out when false); the keys below with it."""
    steady_round: float | None = None
    """Seconds: the shortest round (rounds widen to hold 200 completions)."""
    steady_window: int | None = None
    steady_range: float | None = None
    """Percent of the window's mean its rates may span (max - min)."""
    steady_slope: float | None = None
    """Percent of the window's mean its fitted line may move across it."""
    steady_measure: float | None = None
    """Seconds measured after the window was steady."""
    # files jobs (`None` where the job's kind or `op` does not use the key)
    op: str | None = None
    """A files job's operation: `create`, `copy`, `sync`, `mutate`, `scan`, ..."""
    dest: str | None = None
    nr_files: int | None = None
    file_size: int | None = None
    size_dist: str | None = None
    size_sigma: float | None = None
    size_buckets: _Items[_Pair] | None = None
    """`size_dist = "buckets"`: (bytes, weight) pairs."""
    files_per_dir: int | None = None
    dup_share: float | None = None
    mutate_share: float | None = None
    mode: str | None = None
    # application models (oltp, mailstore): sizes in bytes, durations in seconds
    data_size: int | None = None
    log_size: int | None = None
    page_size: int | None = None
    cache_size: int | None = None
    checkpoint_interval: float | None = None
    log_record_size: int | None = None
    txn_reads: int | None = None
    """oltp only, as are `txn_writes`, `scan_share` and `scan_size`."""
    txn_writes: int | None = None
    scan_share: float | None = None
    scan_size: int | None = None
    op_mix: _Items[float] | None = None
    """mailstore only, as are the keys below: `[insert, delete, replace, read]` weights."""
    lazy_commit_share: float | None = None
    maintenance_rate: int | None = None
    """Bytes per second."""
    read_lat_ms_max: float | None = None
    log_lat_ms_max: float | None = None
    verify: bool = False
    """Block jobs: every block written is stamped, every block read checked (the engine
    leaves it out when false); what was found is the report's `verify`."""
    verify_state: str | None = None
    """With `verify`: the file of each block's expected write generation."""
    fdatasync: int = 0
    """Block jobs: fdatasync after every N writes (0: never)."""
    size_percent: float | None = None
    """Block jobs: `size` given in percent of the target (`size` is then the bytes)."""
    offset_percent: float | None = None
    """Block jobs: `offset` given in percent of the target."""
    verify_backlog: int = 0
    """With `verify` on a writing job: after every N writes, those blocks are read back."""
    verify_read_back: bool = False
    """With `verify` on a writing job: every block written is read back once its I/O ends."""
    # block jobs: the user's workload (docs/engine.md); left out at their defaults
    bssplit: str | None = None
    bsrange: str | None = None
    blockalign: int | None = None
    random_distribution: str | None = None
    norandommap: bool = False
    offset: int | None = None
    offset_increment: int | None = None
    number_ios: int | None = None
    seq_skip: int | None = None
    seq_run: int | None = None
    rate: int | None = None
    """Bytes per second, per thread."""
    rate_iops: int | None = None
    rate_min: int | None = None
    rate_iops_min: int | None = None
    rate_process: str | None = None
    thinktime: float | None = None
    thinktime_spin: float | None = None
    thinktime_blocks: int | None = None
    startdelay: float | None = None
    buffer_compress_percentage: int | None = None
    buffer_compress_chunk: int | None = None
    dedupe_percentage: int | None = None
    dedupe_working_set_percentage: float | None = None
    dedupe_global: bool = False
    buffer_pattern: str | None = None
    refill_buffers: bool = False
    invalidate: bool = False
    fadvise_hint: bool = False
    zonesize: int | None = None
    zonerange: int | None = None
    zoneskip: int | None = None
    prio: int | None = None
    prioclass: int | None = None
    filename_format: str | None = None
    nrfiles: int | None = None
    """Block jobs: files per thread (left out when 1)."""
    file_service_type: str | None = None
    cmdprio_percentage: _Items[int] | None = None
    """`[reads, writes]`: the share of requests with a priority of their own."""
    cmdprio_class: int | None = None
    cmdprio: int | None = None
    cmdprio_bssplit: str | None = None
    fill_device: bool = False
    flow: int | None = None
    flow_id: int | None = None
    flow_sleep: float | None = None
    latency_target: float | None = None
    """Seconds: the queue-depth search's latency (`latency_target` in the report)."""
    latency_window: float | None = None
    latency_percentile: float | None = None
    latency_run: bool = False
    donorname: str | None = None
    """`ioengine = "e4defrag"`: the donor file."""
    inplace: bool = False
    program: str | None = None
    """A program run beside the job (fio's `exec` engine)."""
    arguments: _Items[str] = ()
    grace_time: float | None = None
    std_redirect: bool | None = None
    atomic: bool = False
    """Writes carry RWF_ATOMIC (torn-write protection)."""
    uncached: bool = False
    nowait: bool = False
    sqthread_poll: bool = False
    sqthread_poll_cpu: int | None = None
    write_hint: str | None = None
    sync: str = "none"
    """`sync` (O_SYNC) or `dsync` (O_DSYNC): each write durable when it returns."""
    nice: int | None = None
    read_iolog: str | None = None
    """A trace (fio's iolog) the job replayed."""
    replay_no_stall: bool = False
    replay_time_scale: int | None = None
    cpus_allowed: str | None = None
    cpus_allowed_policy: str | None = None
    numa_cpu_nodes: str | None = None
    numa_mem_policy: str | None = None
    continue_on_error: str | None = None
    """`read`, `write` or `io`; absent: a failed I/O ends the job."""
    continue_errors: _Items[int] = ()
    create_first: bool = False
    """Files jobs: the set was created first, unmeasured."""
    loops: int | None = None
    """Files jobs (stat, touch, chmod, xattr): passes over the tree."""


class ContinuedErrors(_Model):
    """Failed I/Os of one op and one error that a job went on after."""

    op: str
    errno: int
    name: str | None = None
    count: int
    first_offset: int


class LatWindow(_Model):
    end_s: float
    depth: int
    ios: int
    within_pct: float


class LatThread(_Model):
    """One thread's queue-depth search (`latency_target`)."""

    depth: int
    settled: bool
    windows: _Items[LatWindow]


class LatTarget(_Model):
    target_ns: int
    percentile: float
    window_s: float
    threads: _Items[LatThread]


class Program(_Model):
    """The program a job ran beside it (`program`, fio's `exec` engine)."""

    argv: _Items[str]
    pid: int
    exit_code: int | None = None
    signal: int | None = None
    stopped: bool
    """Still running when the job ended: sent SIGTERM."""
    killed: bool
    """Outlived `grace_time` after SIGTERM: killed."""
    ran_s: float


class Replay(_Model):
    """A trace replayed (`read_iolog`) and how late its actions went against its times."""

    log: str
    timed: bool
    actions: int
    paths: int = 0
    """Of the actions, unlinks, renames, mkdirs, rmdirs and stats (fslab's traces)."""
    paths_skipped: int = 0
    """Of those, skipped: the name was already there, or not (the replay lays its files
    out first)."""
    short_reads: int = 0
    """Reads that found their file shorter than the recording did (counted as done)."""
    late: int
    late_mean_s: float
    late_max_s: float


class Rate(_Model):
    """What a rate-limited job asked for and achieved, all threads together."""

    unit: str
    """`bytes` (`rate`) or `iops` (`rate_iops`)."""
    asked_per_s: float
    least_per_s: float
    """Below it the engine warns `rate_short`."""
    achieved_per_s: float
    share: float


class Target(_Model):
    kind: str
    """`file`, `block` or `none` (the null engine)."""
    paths: _Items[str]
    size_bytes: int
    """Bytes addressed by each thread."""
    dio_align_bytes: int | None = None


class Layout(_Model):
    """The file was written once before timing, because the job reads it."""

    bytes: int
    runtime_s: float


class LatNs(_Model):
    """Latency summary in nanoseconds, from an HDR histogram with 3 significant digits."""

    min: int
    mean: float
    stdev: float
    max: int
    p50: int
    p90: int
    p95: int
    p99: int
    p999: int
    p9999: int


class OpResult(_Model):
    """One direction's totals over the measured time (the ramp excluded)."""

    op: str
    """`read` or `write`."""
    ios: int
    bytes: int
    iops: float
    bw_bytes: float
    """Bytes per second."""
    lat_ns: LatNs
    """Submission to completion."""
    hist: str
    """The latency histogram: HdrHistogram V2 + DEFLATE, base64; the engine merges them
    (`merge_reports`)."""


class Fsync(_Model):
    """fsync calls (`fsync`, `end_fsync`), timed apart from the writes."""

    count: int
    lat_ns: LatNs


class IntervalOp(_Model):
    """One direction during one interval of the series."""

    ios: int
    bytes: int
    iops: float
    bw_bytes: float
    lat_mean_ns: float
    lat_p99_ns: int


class SeriesPoint(_Model):
    t_s: float
    """End of this interval, seconds from the start of the job (the ramp included)."""
    dur_s: float
    """Length of this interval (the last one may be shorter)."""
    ramp: bool
    """Inside `ramp_time`: shown, but not part of `results`."""
    read: IntervalOp | None = None
    """A block job's reads; an application model's data file reads."""
    write: IntervalOp | None = None
    log: IntervalOp | None = None
    """An application model's log writes."""
    txn: IntervalOp | None = None
    """An application model's transactions."""
    background: IntervalOp | None = None
    """The mailstore's maintenance reads."""
    files: IntervalOp | None = None
    """A files job's operation: files handled (`ios`), their bytes read + written."""
    trim: IntervalOp | None = None
    """A block job's trims."""


class Series(_Model):
    interval_s: float
    points: _Items[SeriesPoint]


class Cpu(_Model):
    """CPU the engine itself used, all threads, for the whole job (layout excluded)."""

    user_s: float
    sys_s: float
    usage_pct: float
    """(user + sys) / wall time x 100: 100 is one core busy."""
    ctx_voluntary: int
    ctx_involuntary: int


class IoError(_Model):
    """An I/O error; the job stops at the first one."""

    op: str
    thread: int
    offset: int
    errno: int | None = None
    message: str


class EngineWarning(_Model):
    """Something that may make the numbers mean less than they seem."""

    kind: str
    """Stable identifier, e.g. `ignored_key`, `short_run`."""
    message: str
    hint: str | None = None


class AppSide(_Model):
    """One direction on one file of an application model, over the measured time."""

    ios: int
    bytes: int
    iops: float
    avg_bytes: float
    lat_ns: LatNs


class AppFile(_Model):
    path: str
    read: AppSide
    write: AppSide
    fsyncs: int
    """fsync/fdatasync calls on this file (data: one per checkpoint; log: one per flush,
    none when `direct` opens it O_DSYNC)."""
    iops: float
    """Reads + writes per second."""


class AppFiles(_Model):
    data: AppFile
    log: AppFile


class Commits(_Model):
    count: int
    """Transactions that wrote a commit record."""
    sync: int
    """Of those, the ones that waited for their record to be durable."""
    lazy: int
    """Of those, the ones that did not wait (mailstore's lazy commits)."""
    flushes: int
    """Log flushes; fewer than `count` when commits were grouped."""
    records_per_flush: float
    sync_lat_ns: LatNs
    """Appending the record to its being durable."""
    lazy_lat_ns: LatNs
    """Appending the record only."""


class CacheStats(_Model):
    pages: int
    """Capacity in pages (0: no cache, every page read is an I/O)."""
    lookups: int
    hits: int
    hit_ratio: float


class Checkpoint(_Model):
    t_s: float
    """Start, seconds from the start of the job (the ramp included)."""
    pages: int
    dur_s: float
    iops: float
    """pages / dur_s: the burst's IOPS."""
    last: bool
    """The one at the end of the job, which writes what is left."""


class JetStress(_Model):
    """The numbers Microsoft JetStress reports (mailstore)."""

    transactional_iops: float
    db_reads_per_s: float
    db_writes_per_s: float
    db_read_lat_ms: float
    db_write_lat_ms: float
    db_read_avg_bytes: float
    db_write_avg_bytes: float
    log_writes_per_s: float
    log_write_lat_ms: float
    log_write_avg_bytes: float
    cpu_pct: float


class Check(_Model):
    """One threshold of a verdict: passes when `value < max`."""

    name: str
    """e.g. `db_read_lat_ms_mean`; `_ms` names a value in milliseconds."""
    value: float
    max: float
    passed: bool = Field(alias="pass")


class Verdict(_Model):
    passed: bool = Field(alias="pass")
    """True when every check passes."""
    checks: _Items[Check]


class App(_Model):
    """What an application model (`kind = "oltp"`, `"mailstore"`) did; counts cover the
    measured time, like `results`."""

    model: str
    """`oltp` or `mailstore`."""
    txn: int
    """Transactions completed (scans and mailstore reads included)."""
    txn_per_s: float
    files: AppFiles
    commits: Commits
    cache: CacheStats
    pages_dirtied: int
    checkpoints: _Items[Checkpoint]
    """Every checkpoint, the final one included (at most 10000 listed)."""
    scans: int | None = None
    """oltp: read-ahead scans done."""
    ops: dict[str, int] | None = None
    """mailstore: operations done, by name (`insert`, `delete`, `replace`, `read`)."""
    maintenance: AppSide | None = None
    """mailstore: background maintenance reads of the data file."""
    jetstress: JetStress | None = None
    verdict: Verdict | None = None
    """mailstore: PASS or FAIL against the job's thresholds."""


class SteadyRound(_Model):
    """One round of a steady-state window: whole series intervals."""

    start_s: float
    end_s: float
    ios: int
    """Completions of the tracked operations (block: reads + writes; oltp, mailstore:
    transactions)."""
    rate: float
    """`ios` per second."""


class SteadyLimits(_Model):
    """The steady-state keys the run was judged by, resolved."""

    round_s: float
    window: int
    range_pct: float
    slope_pct: float
    measure_s: float


class SteadyState(_Model):
    """A steady-state run's verdict (`steady_state = true`; docs/engine.md). Times are
    seconds from the start of the job, the ramp included, as in `series`."""

    attained: bool
    """The rate settled before `runtime` (then only the cap) ran out; false comes with the
    engine's `not_steady` warning."""
    rounds: int
    widened: int = 0
    """How often the reported window's rounds are doubled from the shortest, merged from
    the rounds closed (engines before this key: 0)."""
    window_start_s: float | None = None
    """The last window judged (the steady one when attained); None when the run completed
    fewer rounds than a window holds."""
    window_end_s: float | None = None
    range_pct: float | None = None
    """That window's rates, max - min, in percent of their mean."""
    slope_pct: float | None = None
    """How far the line fitted through them moves across the window, percent of the mean."""
    window_rounds: _Items[SteadyRound]
    results_start_s: float
    """What `results` and `runtime_s` cover: the steady window and the measure after it;
    the last window when never steady; the whole measured run when it held none."""
    results_end_s: float
    limits: SteadyLimits


class ScanTotal(_Model):
    bytes: int
    """As `du -sb` counts them: files and directories."""
    files: int


class FilesResult(_Model):
    """What a files job found and did, beside its rates in `results`."""

    op: str
    files: int
    """Files (every entry that is not a directory) the operation handled."""
    bytes: int
    dirs: int
    created: int
    deleted: int
    copied: int
    scan_totals: dict[str, ScanTotal] | None = None
    """`scan`: per top-level directory (`.` for the root's own entries)."""
    dupe_groups: _Items[_Items[str]] | None = None
    """`dupes`: groups of paths with equal content (at most 1000 groups)."""
    dupe_group_count: int | None = None
    dupe_files: int | None = None
    dupe_wasted_bytes: int | None = None


VerifyClass = Literal["corrupt", "misplaced", "stale", "unreadable"]


class VerifyBad(_Model):
    """One block that did not read back as written. `model_dump()` gives the engine's own
    keys (`class`, not `class_`), so a stored copy reads like the report."""

    model_config = ConfigDict(serialize_by_alias=True)

    offset: int
    """Byte offset of the block in the file or device."""
    class_: VerifyClass = Field(alias="class")
    """`corrupt` (no valid header, a crc32c mismatch: zeroed, random, bit-flipped or torn;
    or an impossible generation), `misplaced` (a valid block of another offset), `stale`
    (a valid older generation: a lost write) or `unreadable` (the read failed)."""
    errno: int | None = None
    """`unreadable`: the OS error number (None for a short read)."""
    expected_generation: int
    """The generation the last recorded write gave the block (0: never written)."""
    found_generation: int | None = None
    """The generation in the block's header, when the header is valid."""
    found_offset: int | None = None
    """The offset in the block's header, when the header is valid."""
    detail: str


class Verify(_Model):
    """What `verify = true` found (docs/engine.md, "Verify"). Each read is classified
    once, ramp included: `good + corrupt + misplaced + stale + unreadable + unwritten ==
    blocks_read`. Bad blocks leave the job `ok` (exit 0): these counts are the answer."""

    blocks_written: int
    """Writes that completed, each stamped with its block's next generation."""
    blocks_read: int
    good: int
    corrupt: int
    misplaced: int
    stale: int
    unreadable: int
    """Reads that failed or came back short; the engine went on with the next block."""
    unwritten: int
    """Blocks no recorded write reached (generation 0): not checked."""
    read_back_blocks: int = 0
    """`verify_read_back`: blocks read back once the job's I/O ended (also in
    `blocks_read`), not in `results`."""
    read_back_s: float = 0.0
    state_file: str | None = None
    bad: _Items[VerifyBad]
    """The first 16 bad blocks, each once, in the order met."""

    @property
    def bad_blocks(self) -> int:
        """Reads that found a block corrupt, misplaced, stale or unreadable."""
        return self.corrupt + self.misplaced + self.stale + self.unreadable


class Report(_Model):
    """The whole output of one engine job (`fslab-engine schema report`)."""

    schema_version: int = Field(ge=1)
    engine: EngineInfo
    job: Job
    status: Status
    interrupted: bool
    start_unix_s: float
    runtime_s: float
    """Measured time after the ramp: the denominator of every rate."""
    ramp_s: float
    target: Target
    layout: Layout | None = None
    results: _Items[OpResult]
    """One entry per direction that did I/O: `read` first, then `write`."""
    fsync: Fsync
    series: Series
    cpu: Cpu
    errors: _Items[IoError]
    warnings: _Items[EngineWarning]
    app: App | None = None
    """An application model's answers; absent for block and files jobs."""
    files: FilesResult | None = None
    """A files job's answers; absent for block jobs and application models."""
    steady_state: SteadyState | None = None
    """Whether a steady-state run settled and what `results` cover; absent when the job
    did not ask for steady state."""
    verify: Verify | None = None
    """What `verify = true` found; absent when the job did not verify."""
    rate: Rate | None = None
    """A paced job's asked and achieved rate (all threads); absent without a rate."""
    errors_continued: _Items[ContinuedErrors] = ()
    """With `continue_on_error`: the failed I/Os the job went on after."""
    latency_target: LatTarget | None = None
    """With `latency_target`: each thread's queue-depth search."""
    program: Program | None = None
    """With `program`: the program run beside the job and how it ended."""
    replay: Replay | None = None
    """With `read_iolog`: the trace replayed and how late its actions went."""

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Report:
        """Builds a report from the engine's parsed JSON, checking every field's type.

        Raises `EngineError` for a report newer than this lab understands (the hint says
        to upgrade) or one that is malformed (naming the field at fault).
        """
        # Before the layout is checked: a newer report may well not fit this one.
        version = data.get("schema_version") if isinstance(data, Mapping) else None
        if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
            raise EngineError(
                f"the engine's report has schema_version {version}, newer than this fslab "
                f"understands (up to {SCHEMA_VERSION})",
                hint="upgrade fslab to the version that comes with this engine, or point "
                f"${ENGINE_ENV} at an older `{ENGINE_NAME}`",
            )
        try:
            # A strict model takes only a dict, not any other mapping.
            return cls.model_validate(dict(data) if isinstance(data, Mapping) else data)
        except ValidationError as e:
            first = e.errors()[0]
            raise malformed(
                field_path(first["loc"]),
                problem_words(first),
                None if first["type"] == "missing" else first["input"],
            ) from None

    def result(self, op: str) -> OpResult | None:
        """The totals of one direction (`read`, `write`), or None if it did no I/O."""
        return next((r for r in self.results if r.op == op), None)

    def measured_bytes(self, ops: tuple[str, ...]) -> int:
        """Bytes of the series' `ops` (`read`, `write`, `log`, `background`) over the
        whole measured run, ramp intervals left out: what `results` count, but for a
        steady-state run, whose `results` cover its steady window alone while whatever
        watched the run (telemetry) saw all of it."""
        return sum(
            o.bytes
            for p in self.series.points
            if not p.ramp
            for o in (getattr(p, op) for op in ops)
            if o is not None
        )


def field_path(loc: tuple[int | str, ...]) -> str:
    """A pydantic error's location as a field path, e.g. `results[0].lat_ns.p99`."""
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else f".{part}" if path else part
    return path


_PROBLEMS = {
    "missing": "missing",
    "int_type": "expected an integer",
    "float_type": "expected a number",
    "string_type": "expected a string",
    "bool_type": "expected true or false",
    "tuple_type": "expected a list",
    "model_type": "expected an object",
}


def problem_words(error: ErrorDetails) -> str:
    ctx = error.get("ctx", {})
    if error["type"] == "literal_error":
        return f"expected one of {ctx['expected']}"
    if error["type"] == "greater_than_equal":
        return f"expected {ctx['ge']} or more"
    return _PROBLEMS.get(error["type"], error["msg"])


def malformed(where: str, problem: str, value: object) -> EngineError:
    got = "" if value is None else f", got `{json.dumps(value, default=repr)[:60]}`"
    return EngineError(
        f"the engine's report is malformed: `{where}`: {problem}{got}",
        hint=f"the lab and `{ENGINE_NAME}` disagree on the report; rebuild both with `make setup`",
    )


class SteadyAnswer(_Model):
    """What `fslab-engine steady` prints: a finished series judged by a job's steady keys."""

    steady_state: SteadyState
    warnings: _Items[EngineWarning]
