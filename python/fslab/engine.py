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
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, Literal, cast

from fslab.errors import EngineError, ExitStatus, JobError

ENGINE_NAME = "fslab-engine"
ENGINE_ENV = "FSLAB_ENGINE"
SCHEMA_VERSION = 1
"""The newest report layout this lab understands; newer reports are refused."""

# The engine's exit statuses (engine/src/main.rs).
EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_KILLED = 131

# `--progress` lines start like `[    0.5s]` (engine/src/main.rs `progress_line`).
_PROGRESS_PREFIX = "["

Status = Literal["ok", "interrupted", "failed"]
_STATUSES: tuple[Status, ...] = ("ok", "interrupted", "failed")

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


class _Fields:
    """Reads one JSON object of the report with its types checked; a wrong or missing
    field names its path, e.g. `results[0].lat_ns.p99`."""

    def __init__(self, data: object, where: str) -> None:
        if not isinstance(data, Mapping):
            raise _malformed(where, "expected an object", data)
        self._data = cast(Mapping[str, object], data)
        self._where = where

    def _path(self, key: str) -> str:
        return f"{self._where}.{key}" if self._where else key

    def _get(self, key: str) -> object:
        if key not in self._data:
            raise _malformed(self._path(key), "missing", None)
        return self._data[key]

    def has(self, key: str) -> bool:
        return self._data.get(key) is not None

    def integer(self, key: str) -> int:
        value = self._get(key)
        if isinstance(value, bool) or not isinstance(value, int):
            raise _malformed(self._path(key), "expected an integer", value)
        return value

    def number(self, key: str) -> float:
        value = self._get(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _malformed(self._path(key), "expected a number", value)
        return float(value)

    def text(self, key: str) -> str:
        value = self._get(key)
        if not isinstance(value, str):
            raise _malformed(self._path(key), "expected a string", value)
        return value

    def flag(self, key: str) -> bool:
        value = self._get(key)
        if not isinstance(value, bool):
            raise _malformed(self._path(key), "expected true or false", value)
        return value

    def opt_integer(self, key: str) -> int | None:
        return self.integer(key) if self.has(key) else None

    def opt_number(self, key: str) -> float | None:
        return self.number(key) if self.has(key) else None

    def opt_text(self, key: str) -> str | None:
        return self.text(key) if self.has(key) else None

    def obj(self, key: str) -> _Fields:
        return _Fields(self._get(key), self._path(key))

    def opt_obj(self, key: str) -> _Fields | None:
        return self.obj(key) if self.has(key) else None

    def items(self, key: str) -> list[_Fields]:
        value = self._get(key)
        if not isinstance(value, list):
            raise _malformed(self._path(key), "expected a list", value)
        return [_Fields(item, f"{self._path(key)}[{i}]") for i, item in enumerate(value)]

    def texts(self, key: str) -> tuple[str, ...]:
        value = self._get(key)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise _malformed(self._path(key), "expected a list of strings", value)
        return tuple(cast(list[str], value))


def _malformed(where: str, problem: str, value: object) -> EngineError:
    got = "" if value is None else f", got `{json.dumps(value)[:60]}`"
    return EngineError(
        f"the engine's report is malformed: `{where}`: {problem}{got}",
        hint=f"the lab and `{ENGINE_NAME}` disagree on the report; rebuild both with `make setup`",
    )


@dataclass(frozen=True)
class EngineInfo:
    name: str
    version: str
    clock: str

    @classmethod
    def _read(cls, f: _Fields) -> EngineInfo:
        return cls(name=f.text("name"), version=f.text("version"), clock=f.text("clock"))


@dataclass(frozen=True)
class Job:
    """The job as the engine understood it, every default filled in: sizes in bytes,
    durations in seconds. It is itself a valid job (`dataclasses.asdict`)."""

    name: str
    rw: str
    rwmixread: int
    bs: int
    size: int | None
    io_size: int | None
    filename: str | None
    directory: str | None
    numjobs: int
    iodepth: int
    direct: bool
    runtime: float | None
    ramp_time: float
    fsync: int
    end_fsync: bool
    ioengine: str
    buffer_content: str
    randseed: int
    interval: float
    allow_device_write: bool
    null_lat: float

    @classmethod
    def _read(cls, f: _Fields) -> Job:
        return cls(
            name=f.text("name"),
            rw=f.text("rw"),
            rwmixread=f.integer("rwmixread"),
            bs=f.integer("bs"),
            size=f.opt_integer("size"),
            io_size=f.opt_integer("io_size"),
            filename=f.opt_text("filename"),
            directory=f.opt_text("directory"),
            numjobs=f.integer("numjobs"),
            iodepth=f.integer("iodepth"),
            direct=f.flag("direct"),
            runtime=f.opt_number("runtime"),
            ramp_time=f.number("ramp_time"),
            fsync=f.integer("fsync"),
            end_fsync=f.flag("end_fsync"),
            ioengine=f.text("ioengine"),
            buffer_content=f.text("buffer_content"),
            randseed=f.integer("randseed"),
            interval=f.number("interval"),
            allow_device_write=f.flag("allow_device_write"),
            null_lat=f.number("null_lat"),
        )


@dataclass(frozen=True)
class Target:
    kind: str
    """`file`, `block` or `none` (the null engine)."""
    paths: tuple[str, ...]
    size_bytes: int
    """Bytes addressed by each thread."""
    dio_align_bytes: int | None

    @classmethod
    def _read(cls, f: _Fields) -> Target:
        return cls(
            kind=f.text("kind"),
            paths=f.texts("paths"),
            size_bytes=f.integer("size_bytes"),
            dio_align_bytes=f.opt_integer("dio_align_bytes"),
        )


@dataclass(frozen=True)
class Layout:
    """The file was written once before timing, because the job reads it."""

    bytes: int
    runtime_s: float

    @classmethod
    def _read(cls, f: _Fields) -> Layout:
        return cls(bytes=f.integer("bytes"), runtime_s=f.number("runtime_s"))


@dataclass(frozen=True)
class LatNs:
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

    @classmethod
    def _read(cls, f: _Fields) -> LatNs:
        return cls(
            min=f.integer("min"),
            mean=f.number("mean"),
            stdev=f.number("stdev"),
            max=f.integer("max"),
            p50=f.integer("p50"),
            p90=f.integer("p90"),
            p95=f.integer("p95"),
            p99=f.integer("p99"),
            p999=f.integer("p999"),
            p9999=f.integer("p9999"),
        )


@dataclass(frozen=True)
class OpResult:
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

    @classmethod
    def _read(cls, f: _Fields) -> OpResult:
        return cls(
            op=f.text("op"),
            ios=f.integer("ios"),
            bytes=f.integer("bytes"),
            iops=f.number("iops"),
            bw_bytes=f.number("bw_bytes"),
            lat_ns=LatNs._read(f.obj("lat_ns")),
            hist=f.text("hist"),
        )


@dataclass(frozen=True)
class Fsync:
    """fsync calls (`fsync`, `end_fsync`), timed apart from the writes."""

    count: int
    lat_ns: LatNs

    @classmethod
    def _read(cls, f: _Fields) -> Fsync:
        return cls(count=f.integer("count"), lat_ns=LatNs._read(f.obj("lat_ns")))


@dataclass(frozen=True)
class IntervalOp:
    """One direction during one interval of the series."""

    ios: int
    bytes: int
    iops: float
    bw_bytes: float
    lat_mean_ns: float
    lat_p99_ns: int

    @classmethod
    def _read(cls, f: _Fields) -> IntervalOp:
        return cls(
            ios=f.integer("ios"),
            bytes=f.integer("bytes"),
            iops=f.number("iops"),
            bw_bytes=f.number("bw_bytes"),
            lat_mean_ns=f.number("lat_mean_ns"),
            lat_p99_ns=f.integer("lat_p99_ns"),
        )


@dataclass(frozen=True)
class SeriesPoint:
    t_s: float
    """End of this interval, seconds from the start of the job (the ramp included)."""
    dur_s: float
    """Length of this interval (the last one may be shorter)."""
    ramp: bool
    """Inside `ramp_time`: shown, but not part of `results`."""
    read: IntervalOp | None
    write: IntervalOp | None

    @classmethod
    def _read(cls, f: _Fields) -> SeriesPoint:
        read, write = f.opt_obj("read"), f.opt_obj("write")
        return cls(
            t_s=f.number("t_s"),
            dur_s=f.number("dur_s"),
            ramp=f.flag("ramp"),
            read=IntervalOp._read(read) if read else None,
            write=IntervalOp._read(write) if write else None,
        )


@dataclass(frozen=True)
class Series:
    interval_s: float
    points: tuple[SeriesPoint, ...]

    @classmethod
    def _read(cls, f: _Fields) -> Series:
        return cls(
            interval_s=f.number("interval_s"),
            points=tuple(SeriesPoint._read(p) for p in f.items("points")),
        )


@dataclass(frozen=True)
class Cpu:
    """CPU the engine itself used, all threads, for the whole job (layout excluded)."""

    user_s: float
    sys_s: float
    usage_pct: float
    """(user + sys) / wall time x 100: 100 is one core busy."""
    ctx_voluntary: int
    ctx_involuntary: int

    @classmethod
    def _read(cls, f: _Fields) -> Cpu:
        return cls(
            user_s=f.number("user_s"),
            sys_s=f.number("sys_s"),
            usage_pct=f.number("usage_pct"),
            ctx_voluntary=f.integer("ctx_voluntary"),
            ctx_involuntary=f.integer("ctx_involuntary"),
        )


@dataclass(frozen=True)
class IoError:
    """An I/O error; the job stops at the first one."""

    op: str
    thread: int
    offset: int
    errno: int | None
    message: str

    @classmethod
    def _read(cls, f: _Fields) -> IoError:
        return cls(
            op=f.text("op"),
            thread=f.integer("thread"),
            offset=f.integer("offset"),
            errno=f.opt_integer("errno"),
            message=f.text("message"),
        )


@dataclass(frozen=True)
class EngineWarning:
    """Something that may make the numbers mean less than they seem."""

    kind: str
    """Stable identifier, e.g. `ignored_key`, `short_run`."""
    message: str
    hint: str | None

    @classmethod
    def _read(cls, f: _Fields) -> EngineWarning:
        return cls(kind=f.text("kind"), message=f.text("message"), hint=f.opt_text("hint"))


@dataclass(frozen=True)
class Report:
    """The whole output of one engine job (`fslab-engine schema report`)."""

    schema_version: int
    engine: EngineInfo
    job: Job
    status: Status
    interrupted: bool
    start_unix_s: float
    runtime_s: float
    """Measured time after the ramp: the denominator of every rate."""
    ramp_s: float
    target: Target
    layout: Layout | None
    results: tuple[OpResult, ...]
    """One entry per direction that did I/O: `read` first, then `write`."""
    fsync: Fsync
    series: Series
    cpu: Cpu
    errors: tuple[IoError, ...]
    warnings: tuple[EngineWarning, ...]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Report:
        """Builds a report from the engine's parsed JSON, checking every field's type.

        Raises `EngineError` for a report newer than this lab understands (the hint says
        to upgrade) or one that is malformed (naming the field at fault).
        """
        f = _Fields(data, "")
        version = f.integer("schema_version")
        if version > SCHEMA_VERSION:
            raise EngineError(
                f"the engine's report has schema_version {version}, newer than this fslab "
                f"understands (up to {SCHEMA_VERSION})",
                hint="upgrade fslab to the version that comes with this engine, or point "
                f"${ENGINE_ENV} at an older `{ENGINE_NAME}`",
            )
        if version < 1:
            raise _malformed("schema_version", "expected 1 or more", version)
        status = f.text("status")
        if status not in _STATUSES:
            raise _malformed("status", f"expected one of {', '.join(_STATUSES)}", status)
        layout = f.opt_obj("layout")
        return cls(
            schema_version=version,
            engine=EngineInfo._read(f.obj("engine")),
            job=Job._read(f.obj("job")),
            status=status,
            interrupted=f.flag("interrupted"),
            start_unix_s=f.number("start_unix_s"),
            runtime_s=f.number("runtime_s"),
            ramp_s=f.number("ramp_s"),
            target=Target._read(f.obj("target")),
            layout=Layout._read(layout) if layout else None,
            results=tuple(OpResult._read(r) for r in f.items("results")),
            fsync=Fsync._read(f.obj("fsync")),
            series=Series._read(f.obj("series")),
            cpu=Cpu._read(f.obj("cpu")),
            errors=tuple(IoError._read(e) for e in f.items("errors")),
            warnings=tuple(EngineWarning._read(w) for w in f.items("warnings")),
        )

    def result(self, op: str) -> OpResult | None:
        """The totals of one direction (`read`, `write`), or None if it did no I/O."""
        return next((r for r in self.results if r.op == op), None)


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
    quantile = min(max(percentile / 100.0, 0.0), 1.0)
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
    progress_cb: Callable[[str], None] | None = None,
    engine: Path | None = None,
) -> EngineRun:
    """Runs one job in `fslab-engine` and returns its report.

    `job` is a job file (`.toml`, `.json`; `Path("-")` reads this process's stdin) or a
    mapping of job keys, sent to the engine as JSON on its stdin. With `progress_cb`, the
    engine prints a progress line per interval and each is handed to it as it comes.

    A first SIGINT or SIGTERM to this process is passed to the engine, which winds down
    and reports what ran (exit 130); a second one stops it at once.

    Raises `JobError` when the engine refuses the job (exit 2, its messages in
    `stderr`), and `EngineError` when it cannot run or ends without a report.
    """
    exe = engine or find_engine()
    cmd = [str(exe), "run"]
    if progress_cb is not None:
        cmd.append("--progress")
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
    return _finish(exe, proc.returncode, stdout, stderr)


def _communicate(
    proc: subprocess.Popen[bytes],
    stdin_data: bytes | None,
    progress_cb: Callable[[str], None] | None,
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
        if progress_cb is not None and line.startswith(_PROGRESS_PREFIX):
            progress_cb(line)
        else:
            said.append(line)
    reader.join()
    proc.wait()
    stdout = b"".join(out_chunks).decode(errors="replace")
    stderr = "".join(f"{line}\n" for line in said)
    return stdout, stderr


@contextlib.contextmanager
def _forward_signals(proc: subprocess.Popen[bytes]) -> Iterator[None]:
    """While the engine runs, SIGINT and SIGTERM to us go to it instead (main thread only:
    Python handles signals there)."""
    if threading.current_thread() is not threading.main_thread():
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


def engine_version(engine: Path | None = None) -> str:
    """`fslab-engine --version`, e.g. `fslab-engine 0.1.0`."""
    exe = engine or find_engine()
    try:
        done = subprocess.run(
            [str(exe), "--version"], capture_output=True, text=True, check=True, timeout=30
        )
    except (OSError, subprocess.SubprocessError) as e:
        raise EngineError(f"cannot run `{exe} --version`: {e}") from e
    return done.stdout.strip()
