"""`fslab export`: every number of a study as a tidy table for notebooks: one row per
completed run and metric, every parameter a column.

Columns: `study`, `workload`, `kind`, `target`, the parameters (one column each, sizes in
bytes, durations in seconds, as stored), `point_id`, `run_id`, `rep` (0-based),
`started_at` (unix seconds), `runtime_s`, then `source` (`engine`: the engine's
per-operation results, table `metric`; `telemetry`: what the sampler measured, table
`run_metric`), `op` (`read`, `write`, `copy`, ...; empty for a block run's telemetry),
`metric` (the stored name: `iops`, `bw_bytes`, `lat_p99_ns`, `written_bytes`,
`write_amplification`, `device.loop0.written_bytes`, ...) and `value` (base units).

An integrity run (`kind = "integrity"`) has no metrics: it is one row of `source`
`integrity` (empty `op`, `metric` and `value`) whose last columns say what its file system
did with the point's fault: `fault`, `region`, `outcome`, `errno` and `repaired_by`
(`fslab.integrity_words`). An export has these five columns only when it holds integrity
points; the other rows leave them empty. (The point's own `region` parameter is then the
column `param_region`, as any parameter named like a fixed column.)

`fslab export --ranks` (`rank_export_rows`) writes one row per rank of the completed
multi-host runs instead (`fslab run --hosts`; the same `study`, `workload`, `kind`,
`target`, parameters, `point_id`, `run_id` and `rep`), then `rank`, `host`, `status` (the
rank's engine's), `start_unix_s` (its measured start by its host's clock), `start_offset_s`
(after its run's earliest), `runtime_s`, `ios`, `bytes`, `iops` and `bw_bytes` (over its
own runtime) and `share` (of its run's I/Os, 0 to 1): the numbers `fslab compare --ranks`
and `fslab report --ranks` show (`fslab.report.rank_views`). A run's ranks' `ios` add up to
its own.

With pandas: `pd.read_csv("runs.csv").pivot_table(index=["target", "iodepth"],
columns="metric", values="value")`; with polars: `pl.read_csv(...)`.

The rows are written as they are read (`write_export_csv`, `write_export_json`), a few
hundred runs at a time: a study of 100,000 runs (14 million rows) exports in constant
memory. `export_rows` holds them all, for small studies and tests.
"""

from __future__ import annotations

import csv
import functools
import io
import json
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, NoReturn

from fslab.catalog import entry
from fslab.compare import build_comparison, parse_where
from fslab.params import param_matches, param_order
from fslab.report.context import group_key
from fslab.report.format import param_column
from fslab.report.rank_views import rank_views
from fslab.report.render.csv import csv_text
from fslab.store.query import (
    DEFAULT_RESULTS,
    PointRow,
    open_readonly,
    points,
    rank_rows,
    studies,
    study_runs,
)
from fslab.store.records import ENGINE_METRICS, ExportRun, export_runs, runs_with_values

__all__ = [
    "ENGINE_METRICS", "EXPORT_SCHEMA_VERSION", "ExportPlan", "export_rows", "plan_export",
    "rank_export_rows", "render_export_csv", "render_export_json", "write_export_csv",
    "write_export_json",
]  # fmt: skip

EXPORT_SCHEMA_VERSION = 1
"""Version of the `render_export_json` document."""

_FIXED_HEAD = ("study", "workload", "kind", "target")
_FIXED_TAIL = (
    "point_id",
    "run_id",
    "rep",
    "started_at",
    "runtime_s",
    "source",
    "op",
    "metric",
    "value",
)


_INTEGRITY_TAIL = ("fault", "region", "outcome", "errno", "repaired_by")
"""After `value` where the export holds integrity points: what each one's run did."""
_RANK_TAIL = (
    "point_id",
    "run_id",
    "rep",
    "rank",
    "host",
    "status",
    "start_unix_s",
    "start_offset_s",
    "runtime_s",
    "ios",
    "bytes",
    "iops",
    "bw_bytes",
    "share",
)
"""After the parameters in `fslab export --ranks`: one rank of a multi-host run."""
_RESERVED = frozenset(_FIXED_HEAD + _FIXED_TAIL)
_RESERVED_RANKS = frozenset(_FIXED_HEAD + _RANK_TAIL)
_RESERVED_INTEGRITY = _RESERVED | frozenset(_INTEGRITY_TAIL)
_RUNS_PER_WRITE = 20
"""Runs whose rows are joined into one write (a few MB)."""


@dataclass(frozen=True)
class ExportPlan:
    """What an export writes, checked before a row is read: the study, the columns and
    the points whose completed runs are the rows (in plan order)."""

    db_path: Path
    study: str
    param_keys: tuple[str, ...]
    points: tuple[PointRow, ...]
    study_id: int
    filtered: bool
    """Whether `--where` chose the points."""

    @property
    def integrity(self) -> bool:
        """Whether it exports integrity points (and has their columns)."""
        return any(entry(p.kind).outcome_rows for p in self.points)

    @property
    def columns(self) -> list[str]:
        faults = self.integrity
        reserved = _RESERVED_INTEGRITY if faults else _RESERVED
        return [
            *_FIXED_HEAD,
            *(param_column(k, reserved) for k in self.param_keys),
            *_FIXED_TAIL,
            *(_INTEGRITY_TAIL if faults else ()),
        ]

    def runs(self) -> Iterator[tuple[PointRow, ExportRun]]:
        """The completed runs of the points, by point then repetition, with their
        numbers; read as they are consumed."""
        by_id = {p.id: p for p in self.points}
        with open_readonly(self.db_path) as con:
            for run in export_runs(con, by_id):
                yield by_id[run.point_id], run


def plan_export(
    db_path: Path | str = DEFAULT_RESULTS,
    study: str | None = None,
    where: Iterable[str | tuple[str, str]] = (),
) -> ExportPlan:
    """The export of the study's completed runs matching `where`. Raises `ResultsError`
    or `CompareError` (with hints) as `fslab compare` does, for the same inputs."""
    path = Path(db_path)
    where = tuple(where)
    with open_readonly(path) as con:
        chosen = next((s for s in studies(con) if study is None or s.name == study), None)
        if chosen is None:
            _refused(path, study, where)
        pts = points(con, chosen.id, path)
        filters = parse_where(where)
        compared = _compared_points(pts, filters)
        if compared is None:
            _refused(path, study, where)
        ok = {r.id: r.point_id for r in study_runs(con, chosen.id) if r.status == "ok"}
        kept_ids = {p.id for p in compared}
        ok = {run_id: pid for run_id, pid in ok.items() if pid in kept_ids}
        if not ok:
            _refused(path, study, where)
        with_values = {ok[r] for r in runs_with_values(con, set(ok))}
    wanted = _grouped(filters)
    exported = [p for p in pts if all(_matches(p, k, vs) for k, vs in wanted.items())]
    # In the order `fslab compare` shows them (rw, bs, threads, iodepth, ...): first the
    # parameters of the groups it compares (those with a completed run that has values),
    # then any other.
    first: dict[tuple[str, str], PointRow] = {}
    has_values: set[tuple[str, str]] = set()
    for p in compared:
        key = group_key(p.workload, p.params)
        first.setdefault(key, p)
        if p.id in with_values or entry(p.kind).outcome_rows:
            has_values.add(key)
    compared_keys = [
        k for key, p in first.items() if key in has_values for k in param_order(tuple(p.params))
    ]
    param_keys = dict.fromkeys([*compared_keys, *(k for p in exported for k in p.params)])
    return ExportPlan(path, chosen.name, tuple(param_keys), tuple(exported), chosen.id,
                      bool(filters))  # fmt: skip


def _compared_points(
    pts: list[PointRow], filters: tuple[tuple[str, str], ...]
) -> list[PointRow] | None:
    """The points `fslab compare` keeps for these filters (`workload` is one too), or
    None where it refuses them (no points, an unknown key, nothing matches)."""
    if not pts:
        return None
    if not filters:
        return pts
    keys = {"workload", "target", *(k for p in pts for k in p.params)}
    wanted = _grouped(filters)
    if not wanted.keys() <= keys:
        return None

    kept = [p for p in pts if all(_matches(p, k, vs) for k, vs in wanted.items())]
    return kept or None


def _matches(p: PointRow, k: str, values: list[str]) -> bool:
    """Whether point `p` matches any of a `--where` key's values (`workload` and `target`
    included)."""
    if k == "workload":
        return any(param_matches(k, p.workload, v) for v in values)
    if k == "target":
        return p.target in values
    return k in p.params and any(param_matches(k, p.params[k], v) for v in values)


def _refused(
    db_path: Path, study: str | None, where: tuple[str | tuple[str, str], ...]
) -> NoReturn:
    """Raises the error `fslab compare` gives for these inputs (with its hint)."""
    build_comparison(db_path, study=study, where=where)
    raise AssertionError(f"{db_path}: compare accepts what export refused")


def _grouped(where: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    """`--where` as `fslab compare` reads it: all keys must match, any of a key's values."""
    out: dict[str, list[str]] = {}
    for key, value in where:
        out.setdefault(key, []).append(value)
    return out


# -- rows ------------------------------------------------------------------------------------


def export_rows(
    db_path: Path | str = DEFAULT_RESULTS,
    study: str | None = None,
    where: Iterable[str | tuple[str, str]] = (),
) -> tuple[list[str], list[dict[str, Any]]]:
    """(columns, rows) of the study's completed runs (see the module docstring), all in
    memory. Raises `ResultsError` or `CompareError` (with hints) as `fslab compare` does."""
    plan = plan_export(db_path, study, where)
    columns = plan.columns
    rows = [dict(zip(columns, row, strict=True)) for row in _records(plan)]
    return columns, rows


def _records(plan: ExportPlan) -> Iterator[list[Any]]:
    """Each row's values, in the order of `plan.columns`."""
    # Where the export has integrity columns, the other rows leave them empty.
    empty = [None] * len(_INTEGRITY_TAIL) if plan.integrity else []
    for point, run in plan.runs():
        head = [
            plan.study,
            point.workload,
            point.kind,
            point.target,
            *(point.params.get(k) for k in plan.param_keys),
            run.point_id,
            run.id,
            run.rep,
            run.started_at,
            run.runtime_s,
        ]
        for op, values in run.engine:
            for name, value in zip(ENGINE_METRICS, values, strict=True):
                yield [*head, "engine", op, name, value, *empty]
        for name, value in run.telemetry:
            op, metric = _telemetry_op(point.kind, name)
            yield [*head, "telemetry", op, metric, value, *empty]
        if run.integrity is not None:
            yield [*head, INTEGRITY_SOURCE, "", "", None, *run.integrity]


def rank_export_rows(plan: ExportPlan) -> tuple[list[str], list[dict[str, Any]]]:
    """(columns, rows) of `fslab export --ranks`: one row per rank of the plan's completed
    multi-host runs (see the module docstring). Raises `ResultsError` where there is none,
    as `fslab compare --ranks` does."""
    with open_readonly(plan.db_path) as con:
        rows = rank_rows(con, plan.study_id)
    ranks = rank_views(plan.study, rows, points={p.id for p in plan.points},
                       filtered=plan.filtered)  # fmt: skip
    kinds = {p.id: p.kind for p in plan.points}
    columns = [
        *_FIXED_HEAD,
        *(param_column(k, _RESERVED_RANKS) for k in plan.param_keys),
        *_RANK_TAIL,
    ]
    out: list[dict[str, Any]] = []
    for point in ranks.points:
        head = [plan.study, point.workload, kinds[point.point_id], point.target,
                *(point.params.get(k) for k in plan.param_keys), point.point_id]  # fmt: skip
        for run in point.runs:
            for r in run.ranks:
                values = [*head, run.run_id, run.rep, r.rank, r.host, r.status, r.start_unix_s,
                          r.start_offset_s, r.runtime_s, r.ios, r.bytes, r.iops, r.bw_bytes,
                          r.share]  # fmt: skip
                out.append(dict(zip(columns, values, strict=True)))
    return columns, out


INTEGRITY_SOURCE = "integrity"
"""The `source` of an integrity run's row."""


def _telemetry_op(kind: str, name: str) -> tuple[str, str]:
    """(op, metric) of a stored run metric: a files run's are `op.metric`."""
    if entry(kind).ops_apart:
        op, _, metric = name.partition(".")
        return op, metric
    return "", name


def render_export_csv(columns: list[str], rows: list[dict[str, Any]]) -> str:
    return csv_text(columns, rows)


def render_export_json(columns: list[str], rows: list[dict[str, Any]]) -> str:
    doc = {
        "schema_version": EXPORT_SCHEMA_VERSION,
        "columns": columns,
        "rows": rows,
    }
    return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"


# -- streaming -------------------------------------------------------------------------------


def write_export_csv(plan: ExportPlan, out: IO[bytes]) -> int:
    """Writes what `render_export_csv` makes of the plan's rows (the same bytes, UTF-8)
    to `out` as they are read; returns how many rows it wrote."""
    out.write(_csv_line(plan.columns).encode())
    rows = 0
    texts: list[str] = []
    heads: dict[str, str] = {}
    # The fields after a run's head but for the value, made once: per op its metrics', per
    # kind and stored run metric name its own.
    engine = _Fields(lambda op: [f"engine,{_csv_field(op)},{m}," for m in ENGINE_METRICS])
    telemetry = _Fields(lambda kind: _Fields(functools.partial(_telemetry_fields, kind)))
    # Where the export has integrity columns, the other rows end with them empty.
    empty = "," * len(_INTEGRITY_TAIL) if plan.integrity else ""
    for n, (point, run) in enumerate(plan.runs(), 1):
        head = heads.get(point.id)
        if head is None:
            head = heads[point.id] = _csv_line(
                [plan.study, point.workload, point.kind, point.target,
                 *(_csv_value(point.params.get(k)) for k in plan.param_keys), point.id, ""]
            )[:-1]  # fmt: skip
        runtime = "" if run.runtime_s is None else run.runtime_s
        head = f"{head}{run.id},{run.rep},{run.started_at},{runtime},"
        # Every row of the run is its head and a tail: joined with "\n" + head.
        tails: list[str] = []
        for op, values in run.engine:
            tails += [f"{f}{v}{empty}" for f, v in zip(engine[op], values, strict=True)]
        fields = telemetry[point.kind]
        tails += [f"{fields[name]}{value}{empty}" for name, value in run.telemetry]
        if run.integrity is not None:
            said = ",".join(_csv_field(str(_csv_value(v))) for v in run.integrity)
            tails.append(f"{INTEGRITY_SOURCE},,,,{said}")
        if tails:
            texts.append(head + ("\n" + head).join(tails) + "\n")
            rows += len(tails)
        if n % _RUNS_PER_WRITE == 0:
            out.write("".join(texts).encode())
            texts.clear()
        if len(heads) > 4 * _RUNS_PER_WRITE:  # a point's runs come together
            heads.clear()
    out.write("".join(texts).encode())
    return rows


def _telemetry_fields(kind: str, name: str) -> str:
    return "telemetry,{},{},".format(*map(_csv_field, _telemetry_op(kind, name)))


class _Fields(dict[str, Any]):
    """Made once per key by `make` (a dict that fills itself)."""

    def __init__(self, make: Callable[[str], Any]) -> None:
        super().__init__()
        self.make = make

    def __missing__(self, key: str) -> Any:
        value = self[key] = self.make(key)
        return value


def _csv_line(fields: list[Any]) -> str:
    """One CSV line (with its newline) as `csv_text` writes it."""
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(fields)
    return buf.getvalue()


@functools.cache
def _csv_field(text: str) -> str:
    """`text` as a field of a CSV line of several fields (quoted where it must be)."""
    return _csv_line([text, ""])[:-2]


def _csv_value(value: Any) -> Any:
    """A parameter's value as `csv_text` writes it: absent as empty, a list, a dict or a
    bool as JSON."""
    if value is None:
        return ""
    return json.dumps(value) if isinstance(value, list | dict | bool) else value


def write_export_json(plan: ExportPlan, out: IO[bytes]) -> int:
    """Writes what `render_export_json` makes of the plan's rows (the same document,
    UTF-8) to `out` as they are read; returns how many rows it wrote."""
    doc = {"schema_version": EXPORT_SCHEMA_VERSION, "columns": plan.columns, "rows": []}
    top = json.dumps(doc, indent=1, ensure_ascii=False)
    assert top.endswith("[]\n}")
    out.write(top[:-4].encode())
    # Each row as json.dumps(doc, indent=1) writes it, two levels deep: `  {`, its items
    # at three spaces, `  }`; rows after the first follow a `,`.
    columns = plan.columns
    n_params = len(plan.param_keys)
    item = [f"   {_json(c)}: " for c in columns]
    # Where the export has integrity columns, the other rows end with them null.
    empty = "".join(f",\n{i}null" for i in item[len(item) - len(_INTEGRITY_TAIL) :])
    empty = empty if plan.integrity else ""
    rows = 0
    parts: list[str] = []
    sep = "[\n  {\n"
    heads: dict[str, str] = {}
    for n, (point, run) in enumerate(plan.runs(), 1):
        head = heads.get(point.id)
        if head is None:
            fields = [plan.study, point.workload, point.kind, point.target,
                      *(point.params.get(k) for k in plan.param_keys), point.id]  # fmt: skip
            head = heads[point.id] = "".join(
                f"{item[i]}{_json_nested(v)},\n" for i, v in enumerate(fields)
            )
        at = 5 + n_params
        head = (
            f"{head}{item[at]}{run.id},\n{item[at + 1]}{run.rep},\n"
            f"{item[at + 2]}{_json_number(run.started_at)},\n"
            f"{item[at + 3]}{_json_number(run.runtime_s)},\n"
        )
        engine = f'{item[at + 4]}"engine",\n{item[at + 5]}'
        telemetry = f'{item[at + 4]}"telemetry",\n{item[at + 5]}'
        metric, value = f",\n{item[at + 6]}", f",\n{item[at + 7]}"
        for op, values in run.engine:
            prefix = f"{head}{engine}{_json(op)}{metric}"
            for name, v in zip(ENGINE_METRICS, values, strict=True):
                parts.append(f'{sep}{prefix}"{name}"{value}{_json_number(v)}{empty}\n  }}')
                sep = ",\n  {\n"
            rows += len(values)
        for name, v in run.telemetry:
            op, metric_name = _telemetry_op(point.kind, name)
            parts.append(
                f"{sep}{head}{telemetry}{_json(op)}{metric}{_json(metric_name)}"
                f"{value}{_json_number(v)}{empty}\n  }}"
            )
            sep = ",\n  {\n"
        rows += len(run.telemetry)
        if run.integrity is not None:
            said = "".join(
                f",\n{item[at + 8 + i]}{json.dumps(v, ensure_ascii=False)}"
                for i, v in enumerate(run.integrity)
            )
            source = f'{item[at + 4]}"{INTEGRITY_SOURCE}",\n{item[at + 5]}'
            parts.append(f'{sep}{head}{source}""{metric}""{value}null{said}\n  }}')
            sep = ",\n  {\n"
            rows += 1
        if n % _RUNS_PER_WRITE == 0:
            out.write("".join(parts).encode())
            parts.clear()
        if len(heads) > 4 * _RUNS_PER_WRITE:
            heads.clear()
    parts.append("\n ]\n}\n" if rows else "[]\n}\n")
    out.write("".join(parts).encode())
    return rows


@functools.cache
def _json(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _json_nested(value: Any) -> str:
    """A value as `json.dumps(..., indent=1)` writes it three levels deep."""
    flat = json.dumps(value, ensure_ascii=False)
    return _json_indented(flat) if isinstance(value, list | dict) else flat


@functools.cache
def _json_indented(flat: str) -> str:
    # Once per distinct value: the indenting encoder is pure Python, its closures a cycle
    # that only the collector frees (the reading commands run without it).
    return json.dumps(json.loads(flat), indent=1, ensure_ascii=False).replace("\n", "\n   ")


def _json_number(value: float | None) -> str:
    """A number from the database as `json.dumps` writes it (`NaN`, `Infinity`, `null`)."""
    if isinstance(value, float) and not math.isfinite(value):
        return json.dumps(value)
    return "null" if value is None else repr(value)
