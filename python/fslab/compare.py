"""The results of one study side by side: per workload point-group, one row per operation
and metric, one column per target, each cell a summary of the repetitions and, for targets
other than the baseline, its difference with the baseline (`fslab.stats.summary` says how).

Pure data: this module reads the results database with plain, read-only SQL queries and
returns typed dataclasses; `fslab.report` turns them into tables, Markdown, CSV and JSON.

A *group* is one workload with one value per sweep axis (`rw`, `bs`, `threads`, ...), run on
every target: the same job across file systems, which is what a column comparison means.
"""

from __future__ import annotations

import difflib
import json
import math
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from fslab.errors import ExitStatus, FslabError
from fslab.stats.summary import ALPHA, CONFIDENCE, Difference, Summary, compare_samples, summarize
from fslab.stats.warnings import RunFacts, StatWarning, run_warnings, sample_warnings
from fslab.store.db import SCHEMA_VERSION
from fslab.study.model import APP_KINDS, parse_size
from fslab.study.plan import DURATION_KEYS, SIZE_KEYS, parse_duration
from fslab.units import format_bytes

DEFAULT_RESULTS = Path("fslab-results.db")
"""Where `fslab run` writes and `fslab compare` reads when `--results` is not given."""


_RUN_HINT = "run a study first: `fslab run STUDY.toml`"
# Operations in the order people expect them; others follow in order of appearance.
_OP_ORDER = ("jetstress", "txn", "read", "write", "trim")
# The study's words first, in the order people read a job; others follow as stored.
_PARAM_ORDER = (
    "rw", "rwmixread", "bs", "threads", "iodepth", "file_size", "io_size", "runtime", "ramp_time",
)  # fmt: skip


class CompareError(FslabError):
    """The comparison asked for cannot be made as asked: an unknown study, baseline or
    `--where` key, or a filter that matches nothing."""

    exit_status = ExitStatus.USAGE


class ResultsError(FslabError):
    """The results database holds nothing to compare (yet)."""

    exit_status = ExitStatus.FAILED


class BadResultsError(ResultsError):
    """`--results` names no usable results database: missing, unreadable, damaged, not
    fslab's, or from a newer fslab (bad input, like a bad study)."""

    exit_status = ExitStatus.USAGE


@dataclass(frozen=True)
class MetricSpec:
    """One compared metric: its column in the `metric` table (and its name in CSV/JSON),
    its label for people, its unit and which direction is an improvement."""

    name: str
    label: str
    unit: str
    """`count` (per second), `bytes_per_s`, `ns`, `bytes`, `ratio` or `pct`."""
    higher_is_better: bool | None
    """None: no direction is better (a peak, a ratio of reads to writes): a significant
    difference is marked `different`."""
    min_abs: float = 0.0
    """Differences of the means below this (in `unit`) are never significant."""


METRICS: tuple[MetricSpec, ...] = (
    MetricSpec("iops", "IOPS", "count", higher_is_better=True),
    MetricSpec("bw_bytes", "MiB/s", "bytes_per_s", higher_is_better=True),
    MetricSpec("lat_mean_ns", "lat mean", "ns", higher_is_better=False),
    MetricSpec("lat_p99_ns", "lat p99", "ns", higher_is_better=False),
)


# The same columns for file operations: `ios` counts files there.
FILES_METRICS: tuple[MetricSpec, ...] = (
    MetricSpec("iops", "files/s", "count", higher_is_better=True),
    *METRICS[1:],
)

# pgbench's transactions (op `txn`): tps and latency from its per-transaction log.
PGBENCH_METRICS: tuple[MetricSpec, ...] = (
    MetricSpec("iops", "tps", "count", higher_is_better=True),
    METRICS[2],
    MetricSpec("lat_p95_ns", "lat p95", "ns", higher_is_better=False),
    METRICS[3],
)
_KIND_METRICS = {"files": FILES_METRICS, "pgbench": PGBENCH_METRICS}
# The `metric` columns read, in this order, for every kind.
_COLUMNS = tuple(dict.fromkeys(m.name for m in (*METRICS, *PGBENCH_METRICS)))

# The application models' operations (`fslab.apps.profiles`): transactions, then the data
# file's reads and writes, the log's writes and the mailstore's maintenance reads.
_TXN_METRICS = (MetricSpec("iops", "tps", "count", higher_is_better=True), *METRICS[2:])
_APP_OP_METRICS: dict[str, tuple[MetricSpec, ...]] = {
    "txn": _TXN_METRICS,
    "data_read": (METRICS[0], *METRICS[2:]),
    "data_write": (METRICS[0], *METRICS[2:]),
    "log_write": METRICS,
    "maintenance_read": (METRICS[1], METRICS[2]),
}
# The mailstore's data and log rates and means are in its JetStress rows: only the tail.
_MAILSTORE_OP_METRICS = {**_APP_OP_METRICS, **dict.fromkeys(
    ("data_read", "data_write", "log_write"), (METRICS[3],))}  # fmt: skip

VERDICT_UNIT = "verdict"
"""A pass (1) or fail (0) per run: shown as `PASS (3/3)`, never tested for a difference."""

# Run-level metrics of the application models (table `run_metric`, `fslab.apps.profiles`),
# each family shown as the rows of a pseudo-operation named for its prefix.
JETSTRESS_OP = "jetstress"
JETSTRESS_METRICS: tuple[MetricSpec, ...] = (
    MetricSpec("verdict_pass", "verdict", VERDICT_UNIT, None),
    MetricSpec("transactional_iops", "transactional IOPS", "count", True, min_abs=1.0),
    MetricSpec("db_reads_per_s", "DB reads/s", "count", True, min_abs=1.0),
    MetricSpec("db_writes_per_s", "DB writes/s", "count", True, min_abs=1.0),
    MetricSpec("db_read_lat_ns", "DB read lat", "ns", False),
    MetricSpec("db_write_lat_ns", "DB write lat", "ns", False),
    MetricSpec("db_read_avg_bytes", "DB read size", "size", None, min_abs=512.0),
    MetricSpec("db_write_avg_bytes", "DB write size", "size", None, min_abs=512.0),
    MetricSpec("log_writes_per_s", "log writes/s", "count", None, min_abs=1.0),
    MetricSpec("log_write_lat_ns", "log write lat", "ns", False),
    MetricSpec("log_write_avg_bytes", "log write size", "size", None, min_abs=512.0),
    MetricSpec("cpu_pct", "CPU", "pct", False, min_abs=1.0),
)
APP_OP = "app"
APP_METRICS: tuple[MetricSpec, ...] = (
    MetricSpec("cache_hit_pct", "cache hits", "pct", True, min_abs=1.0),
    MetricSpec("records_per_flush", "commits per log flush", "count", None, min_abs=0.1),
    MetricSpec("checkpoints", "checkpoints", "count", None, min_abs=1.0),
    MetricSpec("checkpoint_iops_peak", "checkpoint IOPS peak", "count", None, min_abs=1.0),
)

# Run-level metrics from the telemetry sampler (table `run_metric`), shown as the rows of
# a pseudo-operation after the engine's; each one where a direction is unambiguous.
TELEMETRY_OP = "device"
_MiB = float(1 << 20)
TELEMETRY_METRICS: tuple[MetricSpec, ...] = (
    MetricSpec("written_bytes", "MiB written", "bytes", False, min_abs=_MiB),
    MetricSpec("read_bytes", "MiB read", "bytes", False, min_abs=_MiB),
    MetricSpec("write_amplification", "write amp", "ratio", False, min_abs=0.01),
    MetricSpec("space_amplification", "space amp", "ratio", False, min_abs=0.01),
    # The seeds' OLTP finding was the peak IOPS of checkpoints; neither direction is better.
    MetricSpec("iops_avg", "IOPS avg", "count", None, min_abs=1.0),
    MetricSpec("iops_peak", "IOPS peak", "count", None, min_abs=1.0),
    MetricSpec("read_io_size_bytes", "avg read size", "size", None, min_abs=512.0),
    MetricSpec("write_io_size_bytes", "avg write size", "size", None, min_abs=512.0),
    MetricSpec("read_write_ratio", "reads:writes", "ratio", None, min_abs=0.01),
    MetricSpec("cpu_busy_pct_avg", "CPU busy", "pct", False, min_abs=1.0),
    # The seeds' SysGauge finding: one file system's copy filled the page cache, another's not.
    MetricSpec("cached_growth_bytes", "page cache growth MiB", "bytes", False, min_abs=_MiB),
    MetricSpec("dirty_peak_bytes", "peak dirty MiB", "bytes", None, min_abs=_MiB),
)


@dataclass(frozen=True)
class Cell:
    """One target's repetitions of one metric. `summary` is None when no completed run of
    the target has this operation; `diff` is None for the baseline and when either side
    has no data."""

    target: str
    samples: tuple[float, ...]
    summary: Summary | None
    diff: Difference | None
    warnings: tuple[StatWarning, ...] = ()
    """What makes these numbers doubtful (noise, outliers, ...); see `fslab.stats.warnings`."""


@dataclass(frozen=True)
class Row:
    """One operation's metric across the targets (cells in column order)."""

    op: str
    metric: MetricSpec
    cells: tuple[Cell, ...]

    def cell(self, target: str) -> Cell:
        for c in self.cells:
            if c.target == target:
                return c
        raise KeyError(target)


@dataclass(frozen=True)
class Group:
    """One workload with one value per parameter, across the targets.

    `params` are the point's parameters as stored (sizes in bytes), in stored order;
    `runs` the number of completed repetitions per target (0 when none completed)."""

    workload: str
    kind: str
    params: tuple[tuple[str, Any], ...]
    runs: Mapping[str, int]
    rows: tuple[Row, ...]
    warnings: tuple[StatWarning, ...] = ()
    """Warnings about whole runs of the group (too short, unsteady, contaminated, cached),
    per target; those about one metric's samples are on the cells."""
    limits: Mapping[str, float] = field(default_factory=dict)
    """The limits a verdict judged the runs by, as the engine stored them per run: its
    check (`db_read_lat_ms_mean`, ...) -> the maximum in ms. Empty without a verdict."""

    def all_warnings(self) -> tuple[StatWarning, ...]:
        """The group's warnings and its cells', each once, in order."""
        cells = (w for r in self.rows for c in r.cells for w in c.warnings)
        return tuple(dict.fromkeys((*self.warnings, *cells)))

    def row(self, op: str, metric: str) -> Row:
        for r in self.rows:
            if r.op == op and r.metric.name == metric:
                return r
        raise KeyError((op, metric))

    @property
    def ops(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r.op for r in self.rows))


@dataclass(frozen=True)
class Comparison:
    """A study's results, grouped and compared with the baseline target.

    `targets` are the columns, in study order; `studies` every study in the database, most
    recent first; `skipped_runs` counts the runs not used, by status (failed, interrupted,
    running)."""

    db_path: Path
    study: str
    studies: tuple[str, ...]
    targets: tuple[str, ...]
    baseline: str
    where: tuple[tuple[str, str], ...]
    groups: tuple[Group, ...]
    skipped_runs: Mapping[str, int] = field(default_factory=dict)
    confidence: float = CONFIDENCE
    alpha: float = ALPHA

    @property
    def param_keys(self) -> tuple[str, ...]:
        """Every parameter name of the groups, in order of appearance."""
        return tuple(dict.fromkeys(k for g in self.groups for k, _ in g.params))

    def common_params(self) -> tuple[tuple[str, Any], ...]:
        """The parameters with one value in every group (said once, above the tables)."""
        if not self.groups:
            return ()
        first = self.groups[0].params
        return tuple(
            (k, v)
            for k, v in first
            if all(
                _canonical(dict(g.params).get(k, _MISSING)) == _canonical(v) for g in self.groups
            )
        )

    def varying_params(self, group: Group) -> tuple[tuple[str, Any], ...]:
        """The group's parameters that are not common to all groups (its title)."""
        common = {k for k, _ in self.common_params()}
        return tuple((k, v) for k, v in group.params if k not in common)


_MISSING = object()


def _is_size_key(key: str) -> bool:
    return key in SIZE_KEYS or key.endswith("_size")


def format_param(key: str, value: Any) -> str:
    """A parameter value for people: sizes as `8KiB`, durations as `10s`, booleans as
    `true`, lists with commas (the plan stores sizes in bytes, durations in seconds)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if key == "size_buckets" and isinstance(value, list):
        return " ".join(f"{format_bytes(int(s))}:{w:g}" for s, w in value)
    if isinstance(value, int) and _is_size_key(key):
        return format_bytes(value)
    if isinstance(value, int | float) and key in DURATION_KEYS:
        return f"{value:g}s"
    if isinstance(value, list):
        return ",".join(format_param(key, v) for v in value)
    return str(value)


def parse_where(exprs: Iterable[str | tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """`["bs=8k", "rw=randread"]` -> `(("bs", "8k"), ("rw", "randread"))`."""
    out: list[tuple[str, str]] = []
    for e in exprs:
        if isinstance(e, tuple):
            key, value = e
        else:
            key, sep, value = e.partition("=")
            if not sep:
                raise CompareError(
                    f"`{e}` is not a filter", hint="write `--where KEY=VALUE`, e.g. `--where bs=8k`"
                )
        key, value = key.strip(), value.strip()
        if not key:
            raise CompareError(
                f"`{e}` is not a filter", hint="write `--where KEY=VALUE`, e.g. `--where bs=8k`"
            )
        out.append((key, value))
    return tuple(out)


def param_matches(key: str, stored: Any, wanted: str) -> bool:
    """Whether the stored value of parameter `key` equals a `--where` value.

    Sizes are compared in bytes when both sides read as sizes (`8k`, `8KiB` and `8192` are
    one value); durations in seconds (`runtime=30s` matches a stored 30.0); booleans accept
    `true/false/1/0/yes/no`; anything else compares as text."""
    if isinstance(stored, bool):
        truthy, falsy = ("true", "1", "yes", "on"), ("false", "0", "no", "off")
        return wanted.lower() in (truthy if stored else falsy)
    a, b = _as_size(stored), _as_size(wanted)
    if a is not None and b is not None:
        return a == b
    if key in DURATION_KEYS and isinstance(stored, int | float):
        try:
            return math.isclose(parse_duration(wanted), stored, rel_tol=1e-9)
        except ValueError:
            return False
    if isinstance(stored, float):
        try:
            return float(wanted) == stored
        except ValueError:
            return False
    if isinstance(stored, list):
        return ",".join(map(str, stored)) == wanted
    return str(stored) == wanted


def _as_size(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, str | int):
        return None
    try:
        return parse_size(value)
    except ValueError:
        return None


def build_comparison(
    db_path: Path | str = DEFAULT_RESULTS,
    study: str | None = None,
    baseline: str | None = None,
    where: Iterable[str | tuple[str, str]] = (),
    *,
    confidence: float = CONFIDENCE,
    alpha: float = ALPHA,
) -> Comparison:
    """Reads the results database at `db_path` and compares the targets of one study.

    `study` defaults to the most recent one; `baseline` to the study's first target;
    `where` keeps the points whose parameters match every `KEY=VALUE` (a key given
    several times matches any of its values). Only runs with status `ok` count.
    Raises `ResultsError` or `CompareError` with a hint."""
    db_path = Path(db_path)
    filters = parse_where(where)
    with closing(_connect(db_path)) as con:
        studies = con.execute(
            "SELECT id, name FROM study ORDER BY created_at DESC, id DESC"
        ).fetchall()
        if not studies:
            raise ResultsError(f"{db_path}: no studies in this results database", hint=_RUN_HINT)
        study_id, study_name = _pick_study(studies, study, db_path)
        points = _load_points(con, study_id, db_path)
        if not points:
            raise ResultsError(f"study `{study_name}` has no points yet", hint=_RUN_HINT)
        targets = tuple(dict.fromkeys(p.target for p in points))
        base = _pick_baseline(targets, baseline, study_name)
        points = _filter_points(points, filters)
        ids = {p.id for p in points}
        runs = [
            (run_id, point_id, status)
            for run_id, point_id, status in con.execute(
                "SELECT run.id, run.point_id, run.status FROM run"
                " JOIN point ON point.id = run.point_id WHERE point.study_id = ?",
                (study_id,),
            )
            if point_id in ids
        ]
        metric_rows = con.execute(
            "SELECT metric.run_id, metric.op, "
            + ", ".join(f"metric.{name}" for name in _COLUMNS)
            + " FROM metric JOIN run ON run.id = metric.run_id"
            " JOIN point ON point.id = run.point_id"
            " WHERE point.study_id = ? AND run.status = 'ok'",
            (study_id,),
        ).fetchall()
        telemetry_rows = _telemetry_rows(con, study_id)
        facts = _run_facts(con, study_id)
        limits = _verdict_limits(con, study_id)

    skipped: dict[str, int] = {}
    ok_runs: dict[int, str] = {}
    for run_id, point_id, status in runs:
        if status == "ok":
            ok_runs[run_id] = point_id
        else:
            skipped[status] = skipped.get(status, 0) + 1
    if not ok_runs:
        scope = " matching the filter" if filters else ""
        done = ", ".join(f"{n} {s}" for s, n in sorted(skipped.items()))
        raise ResultsError(
            f"study `{study_name}` has no completed runs{scope}" + (f" ({done})" if done else ""),
            hint="`fslab run STUDY.toml` runs the points still to do (it resumes)",
        )
    by_run: dict[int, list[tuple[str, tuple[float, ...]]]] = {}
    for run_id, op, *values in metric_rows:
        if run_id in ok_runs:
            by_run.setdefault(run_id, []).append((op, tuple(float(v) for v in values)))
    for run_id, entries in telemetry_rows.items():
        if run_id in ok_runs:
            by_run.setdefault(run_id, []).extend(entries)

    groups = _build_groups(points, targets, base, ok_runs, by_run, facts, limits, confidence, alpha)
    return Comparison(
        db_path=db_path,
        study=study_name,
        studies=tuple(name for _, name in studies),
        targets=targets,
        baseline=base,
        where=filters,
        groups=groups,
        skipped_runs=skipped,
        confidence=confidence,
        alpha=alpha,
    )


@dataclass(frozen=True)
class _Point:
    id: str
    seq: int
    target: str
    workload: str
    kind: str
    params: dict[str, Any]


def _connect(db_path: Path) -> sqlite3.Connection:
    if not db_path.exists():
        raise BadResultsError(f"{db_path}: no results database here", hint=_RUN_HINT)
    if not db_path.is_file():
        raise BadResultsError(
            f"{db_path}: not a file", hint="give the results database with --results"
        )
    try:
        con = sqlite3.connect(f"{db_path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as e:
        raise BadResultsError(
            f"{db_path}: cannot open it ({e})", hint="check its permissions"
        ) from e
    try:
        version = con.execute("PRAGMA user_version").fetchone()[0]
        tables = {
            name for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
    except sqlite3.DatabaseError as e:
        con.close()
        raise BadResultsError(
            f"{db_path}: cannot read it as a results database ({e})",
            hint="give the database `fslab run` wrote with --results",
        ) from e
    missing = {"study", "point", "run", "metric"} - tables
    if missing:
        con.close()
        raise BadResultsError(
            f"{db_path}: not an fslab results database (no {', '.join(sorted(missing))} table)",
            hint="give the database `fslab run` wrote with --results",
        )
    if version > SCHEMA_VERSION:
        con.close()
        raise BadResultsError(
            f"{db_path}: written by a newer fslab (layout {version}, this one reads up to "
            f"{SCHEMA_VERSION})",
            hint="upgrade fslab",
        )
    return con


def _suggest(name: str, choices: Sequence[str], what: str) -> str:
    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.5)
    listed = ", ".join(f"`{c}`" for c in choices)
    if close:
        return f"did you mean `{close[0]}`? {what}: {listed}"
    return f"{what}: {listed}"


def _pick_study(
    studies: Sequence[tuple[int, str]], wanted: str | None, db: Path
) -> tuple[int, str]:
    for sid, name in studies:
        if wanted is None or name == wanted:
            return int(sid), str(name)
    assert wanted is not None  # the first study matches when none is asked for
    raise CompareError(
        f"no study `{wanted}` in {db}", hint=_suggest(wanted, [n for _, n in studies], "studies")
    )


def _pick_baseline(targets: tuple[str, ...], wanted: str | None, study: str) -> str:
    if wanted is None:
        return targets[0]
    if wanted in targets:
        return wanted
    raise CompareError(
        f"unknown baseline `{wanted}`: study `{study}` has no such target",
        hint=_suggest(wanted, targets, "targets"),
    )


_PSEUDO_OPS = {TELEMETRY_OP: TELEMETRY_METRICS, JETSTRESS_OP: JETSTRESS_METRICS,
               APP_OP: APP_METRICS}  # fmt: skip


def pseudo_metrics(op: str) -> tuple[MetricSpec, ...] | None:
    """The metrics of a run-level pseudo-operation (`device`, `copy device`, `jetstress`,
    `app`), or None for an engine operation."""
    return _PSEUDO_OPS.get(op.rpartition(" ")[2])


def _run_metric_name(full: str) -> tuple[str, str] | None:
    """(pseudo-op, metric) of a stored run metric, or None when it is not compared:
    `written_bytes` (block), `copy.written_bytes` (files), `jetstress.cpu_pct` and
    `verdict.pass` (mailstore), `app.cache_hit_pct`. Per-device keys such as
    `device.loop0.written_bytes` and per-check verdicts are not compared."""
    head, _, rest = full.partition(".")
    if full == "verdict.pass":
        return JETSTRESS_OP, "verdict_pass"
    if head in (JETSTRESS_OP, APP_OP) and "." not in rest:
        return head, rest
    prefix, name = (head, rest) if rest else ("", head)
    if "." in name:
        return None
    return (f"{prefix} {TELEMETRY_OP}" if prefix else TELEMETRY_OP), name


def _telemetry_rows(
    con: sqlite3.Connection, study_id: int
) -> dict[int, list[tuple[str, tuple[float, ...]]]]:
    """Per completed run, (pseudo-op, values in the order of its metrics, NaN where one is
    missing). A block run has `device`; a files run one per op, `copy device` from the
    names `copy.written_bytes`, ...; an application model's run `jetstress` and `app` as
    well. A version-1 database has none."""
    has = con.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'run_metric'"
    ).fetchone()
    if not has:
        return {}
    values: dict[int, dict[str, dict[str, float]]] = {}
    for run_id, full, value in con.execute(
        "SELECT rm.run_id, rm.name, rm.value FROM run_metric rm JOIN run ON run.id = rm.run_id"
        " JOIN point ON point.id = run.point_id WHERE point.study_id = ? AND run.status = 'ok'",
        (study_id,),
    ):
        named = _run_metric_name(str(full))
        if named is None:
            continue
        op, name = named
        metrics = pseudo_metrics(op) or ()
        if any(m.name == name for m in metrics):
            values.setdefault(int(run_id), {}).setdefault(op, {})[name] = float(value)
    return {
        run_id: [
            (op, tuple(got.get(m.name, math.nan) for m in pseudo_metrics(op) or ()))
            for op, got in per_op.items()
        ]
        for run_id, per_op in values.items()
    }


def _verdict_limits(con: sqlite3.Connection, study_id: int) -> dict[int, dict[str, float]]:
    """Per completed run, the limits its verdict judged by (`verdict.<check>.max`)."""
    has = con.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'run_metric'"
    ).fetchone()
    if not has:
        return {}
    out: dict[int, dict[str, float]] = {}
    for run_id, name, value in con.execute(
        "SELECT rm.run_id, rm.name, rm.value FROM run_metric rm JOIN run ON run.id = rm.run_id"
        " JOIN point ON point.id = run.point_id WHERE point.study_id = ? AND run.status = 'ok'"
        " AND rm.name LIKE 'verdict.%.max'",
        (study_id,),
    ):
        check = str(name).removeprefix("verdict.").removesuffix(".max")
        out.setdefault(int(run_id), {})[check] = float(value)
    return out


def _op_metrics(kind: str, op: str) -> tuple[MetricSpec, ...]:
    """The metrics compared for an engine operation of a point of this kind."""
    if kind == "mailstore":
        return _MAILSTORE_OP_METRICS.get(op, METRICS)
    if kind == "oltp":
        return _APP_OP_METRICS.get(op, METRICS)
    return _KIND_METRICS.get(kind, METRICS)


def _load_points(con: sqlite3.Connection, study_id: int, db: Path) -> list[_Point]:
    points: list[_Point] = []
    for pid, seq, target, workload, kind, params_json in con.execute(
        "SELECT id, seq, target, workload, kind, params FROM point"
        " WHERE study_id = ? ORDER BY seq, id",
        (study_id,),
    ):
        try:
            params = json.loads(params_json)
        except json.JSONDecodeError as e:
            raise ResultsError(f"{db}: point `{pid}`: its params are not JSON ({e})") from e
        if not isinstance(params, dict):
            raise ResultsError(f"{db}: point `{pid}`: its params are not a JSON object")
        params.pop("target", None)
        first = [k for k in _PARAM_ORDER if k in params]
        params = {k: params[k] for k in [*first, *(k for k in params if k not in first)]}
        points.append(_Point(pid, seq, target, workload, kind, params))
    return points


def _filter_points(points: list[_Point], filters: tuple[tuple[str, str], ...]) -> list[_Point]:
    if not filters:
        return points
    # `workload` is not a parameter but names what people filter by first.
    keys = ("workload", *dict.fromkeys(k for p in points for k in p.params))
    wanted: dict[str, list[str]] = {}
    for key, wanted_value in filters:
        if key not in keys:
            raise CompareError(
                f"unknown --where key `{key}`: no point has this parameter",
                hint=_suggest(key, keys, "the parameters are"),
            )
        wanted.setdefault(key, []).append(wanted_value)

    def value(p: _Point, k: str) -> Any:
        return p.workload if k == "workload" else p.params.get(k, _MISSING)

    kept = [
        p
        for p in points
        if all(
            value(p, k) is not _MISSING and any(param_matches(k, value(p, k), v) for v in vs)
            for k, vs in wanted.items()
        )
    ]
    if not kept:
        present = "; ".join(
            f"`{k}` is "
            + ", ".join(
                dict.fromkeys(
                    format_param(k, value(p, k)) for p in points if value(p, k) is not _MISSING
                )
            )
            for k in wanted
        )
        expr = " ".join(f"{k}={v}" for k, v in filters)
        raise CompareError(f"no point matches `{expr}`", hint=f"in this study {present}")
    return kept


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True) if value is not _MISSING else "\0missing"


def _build_groups(
    points: list[_Point],
    targets: tuple[str, ...],
    baseline: str,
    ok_runs: Mapping[int, str],
    by_run: Mapping[int, list[tuple[str, tuple[float, ...]]]],
    facts: Mapping[int, RunFacts],
    limits: Mapping[int, Mapping[str, float]],
    confidence: float,
    alpha: float,
) -> tuple[Group, ...]:
    # (workload, params) -> the points of each target; dicts keep first-appearance order.
    keyed: dict[tuple[str, str], list[_Point]] = {}
    for p in points:
        keyed.setdefault((p.workload, _canonical(p.params)), []).append(p)
    runs_of: dict[str, list[int]] = {}
    for run_id, point_id in sorted(ok_runs.items()):
        runs_of.setdefault(point_id, []).append(run_id)

    groups: list[Group] = []
    for group_points in keyed.values():
        first = group_points[0]
        n_runs = dict.fromkeys(targets, 0)
        # (target, op) -> one tuple of metric values per completed run, and those runs
        samples: dict[tuple[str, str], list[tuple[float, ...]]] = {}
        sample_runs: dict[tuple[str, str], list[int]] = {}
        ops: list[str] = []
        warnings: list[StatWarning] = []
        # The same for every run of the group: workload keys, or the engine's defaults.
        judged_by: dict[str, float] = {}
        for p in group_points:
            ids = runs_of.get(p.id, [])
            known = [facts[r] for r in ids if r in facts]
            if known:
                warnings += run_warnings(p.target, p.kind, p.params, known)
            for run_id in ids:
                n_runs[p.target] += 1
                judged_by.update(limits.get(run_id, {}))
                for op, values in by_run.get(run_id, []):
                    if op not in ops:
                        ops.append(op)
                    samples.setdefault((p.target, op), []).append(values)
                    sample_runs.setdefault((p.target, op), []).append(run_id)
        if not ops:
            continue
        rows: list[Row] = []
        ordered = [o for o in _OP_ORDER if o in ops] + [o for o in ops if o not in _OP_ORDER]
        for op in ordered:
            pseudo = pseudo_metrics(op)
            metrics = pseudo if pseudo is not None else _op_metrics(first.kind, op)
            columns = [m.name for m in pseudo] if pseudo is not None else list(_COLUMNS)
            for metric in metrics:
                i = columns.index(metric.name)
                per_target = {
                    t: tuple(v[i] for v in samples.get((t, op), []) if not math.isnan(v[i]))
                    for t in targets
                }
                if not any(per_target.values()) or (
                    metric.unit != VERDICT_UNIT
                    and not any(v for vs in per_target.values() for v in vs)
                ):
                    continue  # nothing, or all zero (bytes of a chmod): no row
                base = per_target[baseline]
                cells: list[Cell] = []
                for t in targets:
                    s = per_target[t]
                    noise: list[StatWarning] = []
                    if metric.name == "iops" and pseudo is None and _noise_op(first.kind, op):
                        what = f"{op} {metric.label}" if first.kind == "files" else metric.label
                        noise = sample_warnings(t, what, s, sample_runs.get((t, op), []))
                    diff = None
                    if t != baseline and s and base and metric.unit != VERDICT_UNIT:
                        diff = compare_samples(
                            base,
                            s,
                            higher_is_better=metric.higher_is_better,
                            alpha=alpha,
                            min_abs=metric.min_abs,
                        )
                    summary = summarize(s, confidence) if s else None
                    cells.append(
                        Cell(target=t, samples=s, summary=summary, diff=diff, warnings=tuple(noise))
                    )
                rows.append(Row(op=op, metric=metric, cells=tuple(cells)))
        groups.append(
            Group(
                workload=first.workload,
                kind=first.kind,
                params=tuple(first.params.items()),
                runs=n_runs,
                rows=tuple(rows),
                warnings=tuple(warnings),
                limits=judged_by,
            )
        )
    return tuple(groups)


def keep_ops(comparison: Comparison, ops: Iterable[str]) -> Comparison:
    """The comparison with only the rows of these operations (`txn`, `jetstress`,
    `data_read`, `copy`, ...); `device` keeps every telemetry row (`copy device` too).
    Groups left without rows go. Raises `CompareError` for an op no group has."""
    wanted = tuple(dict.fromkeys(ops))
    if not wanted:
        return comparison
    present = tuple(dict.fromkeys(op for g in comparison.groups for op in g.ops))

    def kept(op: str) -> bool:
        return op in wanted or (TELEMETRY_OP in wanted and op.endswith(TELEMETRY_OP))

    for op in wanted:
        if not any(op == p or (op == TELEMETRY_OP and p.endswith(TELEMETRY_OP)) for p in present):
            raise CompareError(
                f"unknown --op `{op}`: no row of this comparison is of that operation",
                hint=_suggest(op, present, "the operations are"),
            )
    groups = []
    for g in comparison.groups:
        rows = tuple(r for r in g.rows if kept(r.op))
        if rows:
            groups.append(replace(g, rows=rows))
    return replace(comparison, groups=tuple(groups))


def _noise_op(kind: str, op: str) -> bool:
    """Whether the spread of this op's rate is worth a warning: an application model's
    transactions stand for its operations (their reads and writes follow them)."""
    return op == "txn" if kind in APP_KINDS else True


_APP_PLACES = ", ".join("?" * len(APP_KINDS))
_REASON_KEYS = ("foreign_cpu", "steal", "memory_pressure")


def _run_facts(con: sqlite3.Connection, study_id: int) -> dict[int, RunFacts]:
    """What each completed run says about itself: its engine warnings, its telemetry's
    contamination and free memory, its IOPS over time (block runs)."""
    runs = con.execute(
        "SELECT run.id, run.runtime_s, run.engine_json FROM run"
        " JOIN point ON point.id = run.point_id WHERE point.study_id = ? AND run.status = 'ok'",
        (study_id,),
    ).fetchall()
    metrics: dict[int, dict[str, float]] = {}
    has_rm = con.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'run_metric'"
    ).fetchone()
    if has_rm:
        for run_id, name, value in con.execute(
            "SELECT rm.run_id, rm.name, rm.value FROM run_metric rm"
            " JOIN run ON run.id = rm.run_id JOIN point ON point.id = run.point_id"
            " WHERE point.study_id = ? AND run.status = 'ok'"
            " AND (rm.name LIKE '%intervals' OR rm.name LIKE '%available_min_bytes'"
            " OR rm.name = 'read_bytes')",
            (study_id,),
        ):
            # `copy.contaminated_intervals` (files) and `contaminated_intervals` (block)
            # add up over a run's ops; free memory is the least of them.
            key = str(name).rpartition(".")[2]
            got = metrics.setdefault(int(run_id), {})
            if name == "read_bytes":
                got[name] = float(value)
            elif key == "available_min_bytes":
                got[key] = min(got.get(key, math.inf), float(value))
            else:
                got[key] = got.get(key, 0.0) + float(value)
    # What block and application runs read (a files run's ops are judged by their own).
    read: dict[int, float] = {}
    for run_id, total in con.execute(
        "SELECT metric.run_id, sum(metric.bytes) FROM metric JOIN run ON run.id = metric.run_id"
        " JOIN point ON point.id = run.point_id WHERE point.study_id = ? AND run.status = 'ok'"
        " AND metric.op IN ('read', 'data_read', 'maintenance_read')"
        f" AND point.kind IN ('block', {_APP_PLACES}) GROUP BY metric.run_id",
        (study_id, *APP_KINDS),
    ):
        read[int(run_id)] = float(total)
    series: dict[int, dict[float, float]] = {}
    # An application model's trend is its transactions' (checkpoints make its I/O bursty).
    for run_id, t_s, iops in con.execute(
        "SELECT series.run_id, series.t_s, series.iops FROM series"
        " JOIN run ON run.id = series.run_id JOIN point ON point.id = run.point_id"
        " WHERE point.study_id = ? AND run.status = 'ok' AND series.ramp = 0"
        f" AND (point.kind NOT IN ({_APP_PLACES}) OR series.op = 'txn')",
        (study_id, *APP_KINDS),
    ):
        per_t = series.setdefault(int(run_id), {})
        per_t[float(t_s)] = per_t.get(float(t_s), 0.0) + float(iops)
    out: dict[int, RunFacts] = {}
    for run_id, runtime_s, engine_json in runs:
        m = metrics.get(int(run_id), {})
        points = sorted(series.get(int(run_id), {}).items())
        # The last interval is usually partial (the job ends inside it): leave it out.
        out[int(run_id)] = RunFacts(
            run_id=int(run_id),
            runtime_s=float(runtime_s) if runtime_s is not None else None,
            engine_warnings=_engine_warnings(engine_json),
            intervals=int(m.get("intervals", 0)),
            contaminated_intervals=int(m.get("contaminated_intervals", 0)),
            reasons=tuple(r for r in _REASON_KEYS if m.get(f"contaminated_{r}_intervals")),
            iops_series=tuple(points[:-1]),
            available_min_bytes=m.get("available_min_bytes"),
            workload_read_bytes=read.get(int(run_id)),
            device_read_bytes=m.get("read_bytes"),
        )
    return out


def _engine_warnings(
    engine_json: str | None,
) -> tuple[tuple[str, str | None, str, str | None], ...]:
    """The engine's warnings in a run's stored report(s): one document (block) or a list
    of them, one per op (files)."""
    if not engine_json:
        return ()
    try:
        doc = json.loads(engine_json)
    except json.JSONDecodeError:
        return ()
    docs = doc if isinstance(doc, list) else [doc]
    out: list[tuple[str, str | None, str, str | None]] = []
    for d in docs:
        if not isinstance(d, dict):
            continue
        op = (d.get("job") or {}).get("op") if isinstance(doc, list) else None
        for w in d.get("warnings") or []:
            if isinstance(w, dict) and "kind" in w:
                msg = str(w.get("message", ""))
                hint = w.get("hint")
                out.append(
                    (str(w["kind"]), str(op) if op else None, msg, str(hint) if hint else None)
                )
    return tuple(out)
