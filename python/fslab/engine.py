"""The one module that knows `fslab-engine`: where it is, how to run it, and the layout of
the JSON report it prints (`fslab-engine schema report`). Everything else in the lab uses
the typed `Report` below and never reads the engine's JSON itself.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import signal
import subprocess
import sysconfig
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Annotated, Any, Literal, NamedTuple, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import ErrorDetails

from fslab.errors import EngineError, ExitStatus, JobError
from fslab.procs import DIE_WITH_US, handles_signals

ENGINE_NAME = "fslab-engine"
ENGINE_ENV = "FSLAB_ENGINE"
SCHEMA_VERSION = 1
"""The newest report layout this lab understands; newer reports are refused."""

# The engine's exit statuses (engine/src/main.rs).
EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_KILLED = 131

# `--progress=jsonl` lines are JSON objects (`fslab-engine schema progress`); nothing else
# the engine says on stderr starts with a brace.
_PROGRESS_PREFIX = "{"

Status = Literal["ok", "interrupted", "failed"]

# The repository root when running from a checkout (python/fslab/engine.py -> ../../..).
_REPO = Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------------- finding


def find_engine() -> Path:
    """Path of the `fslab-engine` binary.

    Looks in order at `$FSLAB_ENGINE`, this interpreter's scripts directory (a venv's
    `bin/`, where `make setup` installs it), `<repo>/target/release` and
    `<repo>/target/debug` of a source checkout, then `PATH`. `$FSLAB_ENGINE`, when set,
    is the only place looked at: naming an engine and silently getting another would
    make numbers lie.
    """
    named = os.environ.get(ENGINE_ENV)
    if named:
        path = Path(named).expanduser()
        if _is_executable(path):
            return path
        raise EngineError(
            f"${ENGINE_ENV} is `{named}`, which is not an executable file",
            hint=f"point ${ENGINE_ENV} at a built `{ENGINE_NAME}`, or unset it",
        )
    looked: list[str] = [f"${ENGINE_ENV} (not set)"]
    for folder in _candidate_dirs():
        path = folder / ENGINE_NAME
        if _is_executable(path):
            return path
        looked.append(str(folder))
    on_path = shutil.which(ENGINE_NAME)
    if on_path:
        return Path(on_path)
    looked.append("PATH")
    raise EngineError(
        f"cannot find `{ENGINE_NAME}`; looked in {', '.join(looked)}",
        hint=f"run `make setup` in the fslab repository, "
        f"or set ${ENGINE_ENV}=/path/to/{ENGINE_NAME}",
    )


def _candidate_dirs() -> Iterator[Path]:
    yield Path(sysconfig.get_path("scripts"))
    if (_REPO / "Cargo.toml").is_file():
        yield _REPO / "target" / "release"
        yield _REPO / "target" / "debug"


def _is_executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


# --------------------------------------------------------------------------- the report


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
    """The latency histogram: HdrHistogram V2 + DEFLATE, base64 (see `decode_hist`)."""


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
    """How often the rounds doubled because window after window failed (engines before
    this key: 0)."""
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
            raise _malformed(
                _where(first["loc"]),
                _problem(first),
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


def _where(loc: tuple[int | str, ...]) -> str:
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


def _problem(error: ErrorDetails) -> str:
    ctx = error.get("ctx", {})
    if error["type"] == "literal_error":
        return f"expected one of {ctx['expected']}"
    if error["type"] == "greater_than_equal":
        return f"expected {ctx['ge']} or more"
    return _PROBLEMS.get(error["type"], error["msg"])


def _malformed(where: str, problem: str, value: object) -> EngineError:
    got = "" if value is None else f", got `{json.dumps(value, default=repr)[:60]}`"
    return EngineError(
        f"the engine's report is malformed: `{where}`: {problem}{got}",
        hint=f"the lab and `{ENGINE_NAME}` disagree on the report; rebuild both with `make setup`",
    )


# --------------------------------------------------------------------------- histograms


def decode_hist(b64: str) -> Any:
    """Decodes a report's `hist` (HdrHistogram V2 + DEFLATE, base64) into an
    `hdrh.histogram.HdrHistogram`, e.g. to merge repeats or threads.

    Its percentiles equal the engine's when read with `hist_percentile`; the package's
    own `get_value_at_percentile` rounds the rank differently and may land one bucket lower.
    """
    try:
        from hdrh.histogram import HdrHistogram
    except ImportError as e:
        raise EngineError(
            "decoding latency histograms needs the `hdrhistogram` package",
            hint="install it with `pip install hdrhistogram` (it is in fslab's `dev` extra)",
        ) from e
    try:
        return HdrHistogram.decode(b64)
    except Exception as e:  # the package raises bare exceptions of several kinds
        raise EngineError(
            f"the engine's latency histogram does not decode: {e}",
            hint=f"the lab and `{ENGINE_NAME}` disagree on the histogram; rebuild both",
        ) from e


def hist_percentile(hist: Any, percentile: float) -> int:
    """The value at `percentile` (0-100) of a decoded histogram, ranked as the engine
    ranks it (Rust `hdrhistogram` and Java HdrHistogram: the rank is ceil(q x count)),
    so that the lab's percentiles of merged histograms agree with the engine's."""
    total = int(hist.get_total_count())
    if total == 0:
        return 0
    # 99.9 / 100 is 0.9990000000000001, not the 0.999 the engine ranks by: at a total
    # where 0.999 x total is whole, the rank would be one higher than the engine's.
    quantile = min(max(round(percentile / 100.0, 12), 0.0), 1.0)
    rank = max(math.ceil(quantile * total), 1)
    seen = 0
    for index in range(int(hist.counts_len)):
        seen += int(hist.get_count_at_index(index))
        if seen >= rank:
            value = hist.get_value_from_index(index)
            if quantile == 0.0:
                return int(hist.get_lowest_equivalent_value(value))
            return int(hist.get_highest_equivalent_value(value))
    return int(hist.get_max_value())


# --------------------------------------------------------------------------- running


@dataclass(frozen=True)
class EngineRun:
    """One run of the engine that produced a report (ok, failed or interrupted)."""

    report: Report
    document: Mapping[str, Any]
    """The report as the engine's parsed JSON."""
    stdout: str
    """The engine's JSON document exactly as printed."""
    stderr: str
    """What the engine said on stderr, less the progress lines."""
    exit_code: int
    """The engine's exit status: 0 ok, 1 failed, 130 interrupted."""


def run_job(
    job: Mapping[str, Any] | Path,
    *,
    progress_cb: Callable[[SeriesPoint], None] | None = None,
    engine: Path | None = None,
) -> EngineRun:
    """Runs one job in `fslab-engine` and returns its report.

    `job` is a job file (`.toml`, `.json`; `Path("-")` reads this process's stdin) or a
    mapping of job keys, sent to the engine as JSON on its stdin. With `progress_cb`, the
    engine reports each interval as it completes (`--progress=jsonl`), and the callback
    gets it as a `SeriesPoint`.

    A first SIGINT or SIGTERM to this process is passed to the engine, which winds down
    and reports what ran (exit 130); a second one stops it at once.

    Raises `JobError` when the engine refuses the job (exit 2, its messages in
    `stderr`), and `EngineError` when it cannot run or ends without a report.
    """
    exe = engine or find_engine()
    cmd = [str(exe), "run"]
    if progress_cb is not None:
        cmd.append("--progress=jsonl")
    stdin_data: bytes | None = None
    stdin: int | None = subprocess.DEVNULL
    if isinstance(job, Path):
        cmd.append(str(job))
        if str(job) == "-":
            stdin = None  # the engine reads ours
    else:
        cmd.append("-")
        stdin_data = json.dumps(dict(job)).encode()
        stdin = subprocess.PIPE
    code, stdout, stderr = _run_engine(exe, cmd, stdin, stdin_data, progress_cb)
    return _finish(exe, code, stdout, stderr)


def _run_engine(
    exe: Path,
    cmd: list[str],
    stdin: int | None,
    stdin_data: bytes | None,
    progress_cb: Callable[[SeriesPoint], None] | None,
) -> tuple[int, str, str]:
    """Runs the engine command `cmd` to its end, signals passed on, the engine stopped
    with us: (exit status, stdout, stderr less progress lines)."""
    # The engine stops (SIGTERM: it winds down and reports) when fslab dies, even by
    # SIGKILL: an engine left running keeps its target busy (`fslab.procs`).
    cmd = [*DIE_WITH_US, *cmd]
    try:
        # Its own process group: a Ctrl-C at the terminal reaches only us, and we pass it
        # on once. Otherwise the engine would get it twice and take it as "stop now".
        proc = subprocess.Popen(
            cmd,
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            process_group=0,
        )
    except OSError as e:
        raise EngineError(
            f"cannot start `{exe}`: {e.strerror or e}",
            hint=f"check that it is a `{ENGINE_NAME}` built for this machine (`make setup`)",
        ) from e
    with proc, _forward_signals(proc):  # closing `proc` closes its pipes and reaps it
        try:
            stdout, stderr = _communicate(proc, stdin_data, progress_cb)
        except BaseException:
            proc.kill()  # e.g. the callback raised: leave no engine running on its own
            raise
    return proc.returncode, stdout, stderr


@dataclass(frozen=True)
class FioJobRun:
    """One job of a fio job file, as `fslab-engine run FILE.fio` reported it."""

    name: str
    place: str
    """Where its section starts (`file:line`)."""
    phase: int
    group: int
    report: Report | None
    error: str | None


@dataclass(frozen=True)
class FioRun:
    """A fio job file run by the engine (docs/fio.md): every job's report."""

    jobs: tuple[FioJobRun, ...]
    document: Mapping[str, Any]
    stdout: str
    stderr: str
    exit_code: int


def fio_args(within: Path | None, sets: Mapping[str, Any]) -> list[str]:
    """The engine's options that move a job file's files into `within` and set `sets` on
    every job."""
    out = ["--fio"]
    if within is not None:
        out += ["--within", str(within)]
    for key, value in sets.items():
        shown = json.dumps(value) if isinstance(value, bool) else str(value)
        out += ["--set", f"{key}={shown}"]
    return out


def check_fio(
    job_file: Path,
    *,
    within: Path | None = None,
    sets: Mapping[str, Any] | None = None,
    engine: Path | None = None,
) -> dict[str, Any]:
    """The engine's view of a fio job file (`check --format json`): `{"ok", "problems",
    "plan"}`, every problem at once. Raises `EngineError` when the engine cannot answer."""
    exe = engine or find_engine()
    cmd = [str(exe), "check", "--format", "json", *fio_args(within, sets or {}), str(job_file)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    except OSError as e:
        raise EngineError(
            f"cannot start `{exe}`: {e.strerror or e}",
            hint=f"check that it is a `{ENGINE_NAME}` built for this machine (`make setup`)",
        ) from e
    try:
        answer: dict[str, Any] = json.loads(done.stdout)
    except ValueError:
        answer = {}
    if done.returncode not in (EXIT_OK, EXIT_USAGE) or "ok" not in answer:
        raise _check_failed(exe, done, f"the fio job file {job_file}")
    return answer


def run_fio(
    job_file: Path,
    *,
    within: Path | None = None,
    sets: Mapping[str, Any] | None = None,
    engine: Path | None = None,
) -> FioRun:
    """Runs the fio job file `job_file` in the engine, its files inside `within`, with
    `sets` on every job. Raises `JobError` when the engine refuses the file (every
    problem in its stderr) and `EngineError` when it cannot run or ends without a report."""
    exe = engine or find_engine()
    cmd = [str(exe), "run", *fio_args(within, sets or {}), str(job_file)]
    code, stdout, stderr = _run_engine(exe, cmd, subprocess.DEVNULL, None, None)
    if code in (EXIT_USAGE, EXIT_KILLED) or code < 0 or not stdout.strip():
        _finish(exe, code, stdout, stderr)  # raises the matching error
    try:
        document = json.loads(stdout)
        jobs = tuple(
            FioJobRun(
                name=str(j["name"]), place=str(j["place"]), phase=int(j["phase"]),
                group=int(j["group"]),
                report=Report.from_json(j["report"]) if j.get("report") else None,
                error=j.get("error"),
            )
            for j in document["jobs"]
        )  # fmt: skip
    except (ValueError, KeyError, TypeError) as e:
        raise EngineError(
            f"`{ENGINE_NAME}` printed a job-file report this lab cannot read: {e}",
            hint="rebuild both with `make setup`",
            stderr=stderr,
        ) from e
    return FioRun(jobs=jobs, document=document, stdout=stdout, stderr=stderr, exit_code=code)


class JobProblem(NamedTuple):
    """One thing the engine's checks refuse in a job (`check --format json`)."""

    key: str | None
    """The job key at fault; None for the job as a whole (`missing target`, ...)."""
    message: str
    hint: str | None


def check_job(
    job: Mapping[str, Any], *, engine: Path | None = None, what: str = "a job"
) -> tuple[JobProblem, ...]:
    """The engine's own checks of a job, without running it (`check --format json`):
    nothing when the job is valid, else every problem at once.

    Raises `EngineError` when the engine cannot answer: it does not start, crashes, exits
    otherwise than 0 (valid) or 2 (refused), or answers something that is not a check.
    `what` names the job in that message (`the job of workload `w` (...)`)."""
    exe = engine or find_engine()
    try:
        done = subprocess.run(
            [str(exe), "check", "--format", "json", "-"],
            input=json.dumps(dict(job), sort_keys=True),
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError as e:
        raise EngineError(
            f"cannot start `{exe}`: {e.strerror or e}",
            hint=f"check that it is a `{ENGINE_NAME}` built for this machine (`make setup`)",
        ) from e
    if done.returncode == EXIT_OK:
        # An engine that says nothing (or anything but its check) about a job it accepts
        # is not one this lab can use: `run` would not read its report either.
        try:
            if json.loads(done.stdout).get("ok") is True:
                return ()
        except (ValueError, AttributeError):
            pass
        raise _check_failed(exe, done, what)
    if done.returncode == EXIT_USAGE:
        try:
            answer = json.loads(done.stdout)
            return tuple(
                JobProblem(e["key"], str(e["message"]), e["hint"]) for e in answer["errors"]
            )
        except (ValueError, KeyError, TypeError):
            pass  # not the check document: the engine is not one this lab can use
    raise _check_failed(exe, done, what)


class SteadyAnswer(_Model):
    """What `fslab-engine steady` prints: a finished series judged by a job's steady keys."""

    steady_state: SteadyState
    warnings: _Items[EngineWarning]


def judge_steady(
    job: Mapping[str, Any], points: Sequence[SeriesPoint], *, engine: Path | None = None
) -> SteadyAnswer:
    """`points` (a finished series) judged by `job`'s steady-state keys with the engine's
    own rule (`fslab-engine steady`), as a live run of `job` would have been judged.

    Raises `EngineError` when the engine refuses (the job has no steady state, or the
    input is malformed) or cannot answer."""
    exe = engine or find_engine()
    doc = {"job": dict(job), "series": [p.model_dump(mode="json") for p in points]}
    try:
        done = subprocess.run(
            [str(exe), "steady", "-"], input=json.dumps(doc), capture_output=True,
            text=True, check=False,
        )  # fmt: skip
    except OSError as e:
        raise EngineError(
            f"cannot start `{exe}`: {e.strerror or e}",
            hint=f"check that it is a `{ENGINE_NAME}` built for this machine (`make setup`)",
        ) from e
    if done.returncode != EXIT_OK:
        raise EngineError(
            f"{exe}: the engine could not judge the series (exit {done.returncode}): "
            f"{done.stderr.strip()[-500:]}",
            hint="rebuild the engine (`make setup`): this lab needs `fslab-engine steady`",
        )
    try:
        return SteadyAnswer.model_validate_json(done.stdout)
    except ValidationError as e:
        err = e.errors()[0]
        raise _malformed(_where(err["loc"]), _problem(err), err.get("input")) from e


def _check_failed(exe: Path, done: subprocess.CompletedProcess[str], what: str) -> EngineError:
    rc = done.returncode
    if rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = "unknown"
        how = f"crashed (killed by signal {-rc} ({name}))"
    elif rc == EXIT_USAGE:
        how = "refused the job without the JSON answer `check --format json` gives"
    elif rc == EXIT_OK:
        how = "accepted the job without the JSON answer `check --format json` gives"
    else:
        how = f"exited with status {rc} (neither 0, ok, nor 2, job refused)"
    tail = [line for line in done.stderr.splitlines() if line.strip()][-5:]
    said = "; the last lines it wrote:\n" + "\n".join(f"  {line}" for line in tail) if tail else ""
    named = os.environ.get(ENGINE_ENV)
    return EngineError(
        f"{exe}: the engine {how} while checking {what}{said}",
        hint=(
            f"${ENGINE_ENV} is `{named}`: point it at a working `{ENGINE_NAME}` built for "
            "this machine (`make setup` builds one), or unset it"
            if named
            else "rebuild the engine (`make setup`) and try again"
        ),
    )


def _communicate(
    proc: subprocess.Popen[bytes],
    stdin_data: bytes | None,
    progress_cb: Callable[[SeriesPoint], None] | None,
) -> tuple[str, str]:
    """Feeds stdin, collects stdout in a thread, and reads stderr line by line here so
    progress lines reach the callback while the job runs."""
    assert proc.stdout is not None and proc.stderr is not None
    out_chunks: list[bytes] = []
    stdout_pipe = proc.stdout
    reader = threading.Thread(target=lambda: out_chunks.append(stdout_pipe.read()), daemon=True)
    reader.start()
    if proc.stdin is not None:
        # A job is small and the engine reads all of it before anything else; a broken
        # pipe means it exited early, and its stderr will say why.
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.write(stdin_data or b"")
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.close()
    said: list[str] = []
    for raw in proc.stderr:
        line = raw.decode(errors="replace").rstrip("\n")
        point = _progress(line) if progress_cb is not None else None
        if point is not None and progress_cb is not None:
            progress_cb(point)
        else:
            said.append(line)
    reader.join()
    proc.wait()
    stdout = b"".join(out_chunks).decode(errors="replace")
    stderr = "".join(f"{line}\n" for line in said)
    return stdout, stderr


def _progress(line: str) -> SeriesPoint | None:
    """The interval a `--progress=jsonl` line reports; None for any other line."""
    if not line.startswith(_PROGRESS_PREFIX):
        return None
    try:
        return SeriesPoint.model_validate(json.loads(line))
    except (ValueError, ValidationError):
        return None  # not a progress line after all: it is kept with the messages


@contextlib.contextmanager
def _forward_signals(proc: subprocess.Popen[bytes]) -> Iterator[None]:
    """While the engine runs, SIGINT and SIGTERM to us go to it instead (main thread only:
    Python handles signals there)."""
    if threading.current_thread() is not threading.main_thread() or not handles_signals():
        yield
        return

    def forward(signum: int, _frame: FrameType | None) -> None:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _finish(exe: Path, code: int, stdout: str, stderr: str) -> EngineRun:
    if code == EXIT_USAGE:
        first = next((ln for ln in stderr.splitlines() if ln.startswith("error: ")), "")
        raise JobError(
            first.removeprefix("error: ") or "the engine refused the job",
            stderr=stderr,
            verbatim=bool(stderr.strip()),
        )
    if code == EXIT_KILLED:
        raise EngineError(
            "the engine was stopped by a second signal, before it could report",
            stderr=stderr,
            exit_status=ExitStatus.INTERRUPTED,
        )
    if code < 0:
        name = _signal_name(-code)
        raise EngineError(
            f"`{ENGINE_NAME}` was killed by {name}, before it could report",
            hint=f"this is a bug in {ENGINE_NAME} unless something else killed it; "
            "please report it with the job and the engine's output above",
            stderr=stderr,
            exit_status=ExitStatus.INTERRUPTED
            if -code in (signal.SIGINT, signal.SIGTERM)
            else ExitStatus.FAILED,
        )
    if not stdout.strip():
        if code == EXIT_FAILED and stderr.strip():
            # The job did not start (the system refused something); the engine said why.
            raise EngineError(
                stderr.strip().splitlines()[0].removeprefix("error: "),
                stderr=stderr,
                verbatim=True,
            )
        raise EngineError(
            f"`{ENGINE_NAME}` exited with status {code} and printed no report",
            hint=f"run `{exe} run JOB` by hand to see what it does",
            stderr=stderr,
        )
    try:
        document = json.loads(stdout)
    except json.JSONDecodeError as e:
        raise EngineError(
            f"`{ENGINE_NAME}` printed a report that is not valid JSON: {e}",
            hint=f"this is a bug in {ENGINE_NAME}; please report it with the job",
            stderr=stderr,
        ) from e
    if not isinstance(document, dict):
        raise _malformed("", "expected an object", document)
    report = Report.from_json(document)
    return EngineRun(report=report, document=document, stdout=stdout, stderr=stderr, exit_code=code)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
