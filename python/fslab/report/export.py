"""`fslab export`: every number of a study as a tidy table for notebooks: one row per
completed run and metric, every parameter a column.

Columns: `study`, `workload`, `kind`, `target`, the parameters (one column each, sizes in
bytes, durations in seconds, as stored), `point_id`, `run_id`, `rep` (0-based),
`started_at` (unix seconds), `runtime_s`, then `source` (`engine`: the engine's
per-operation results, table `metric`; `telemetry`: what the sampler measured, table
`run_metric`), `op` (`read`, `write`, `copy`, ...; empty for a block run's telemetry),
`metric` (the stored name: `iops`, `bw_bytes`, `lat_p99_ns`, `written_bytes`,
`write_amplification`, `device.loop0.written_bytes`, ...) and `value` (base units).

With pandas: `pd.read_csv("runs.csv").pivot_table(index=["target", "iodepth"],
columns="metric", values="value")`; with polars: `pl.read_csv(...)`.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from contextlib import closing
from pathlib import Path
from typing import Any

from fslab.compare import DEFAULT_RESULTS, build_comparison
from fslab.params import param_matches
from fslab.report.format import param_column
from fslab.report.render.csv import csv_text

EXPORT_SCHEMA_VERSION = 1
"""Version of the `render_export_json` document."""

ENGINE_METRICS = (
    "ios", "bytes", "iops", "bw_bytes", "lat_min_ns", "lat_mean_ns", "lat_stdev_ns",
    "lat_max_ns", "lat_p50_ns", "lat_p90_ns", "lat_p95_ns", "lat_p99_ns", "lat_p999_ns",
    "lat_p9999_ns",
)  # fmt: skip
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


_RESERVED = frozenset(_FIXED_HEAD + _FIXED_TAIL)


def export_rows(
    db_path: Path | str = DEFAULT_RESULTS,
    study: str | None = None,
    where: Iterable[str | tuple[str, str]] = (),
) -> tuple[list[str], list[dict[str, Any]]]:
    """(columns, rows) of the study's completed runs (see the module docstring). Raises
    `ResultsError` or `CompareError` (with hints) as `fslab compare` does."""
    # The comparison checks the database, the study and the filter, with the same errors
    # and hints as `fslab compare`.
    c = build_comparison(db_path, study=study, where=where)
    path = Path(db_path)
    with closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as con:
        (study_id,) = con.execute("SELECT id FROM study WHERE name = ?", (c.study,)).fetchone()
        points: dict[str, tuple[str, str, str, dict[str, Any]]] = {}
        for pid, target, workload, kind, params_json in con.execute(
            "SELECT id, target, workload, kind, params FROM point WHERE study_id = ?"
            " ORDER BY seq, id",
            (study_id,),
        ):
            params = json.loads(params_json)
            params.pop("target", None)
            if all(
                k in params and any(param_matches(k, params[k], v) for v in values)
                for k, values in _grouped(c.where).items()
            ):
                points[pid] = (target, workload, kind, params)
        runs = [
            r
            for r in con.execute(
                "SELECT run.id, run.point_id, run.rep, run.started_at, run.runtime_s FROM run"
                " JOIN point ON point.id = run.point_id"
                " WHERE point.study_id = ? AND run.status = 'ok' ORDER BY point.seq, run.rep",
                (study_id,),
            )
            if r[1] in points
        ]
        engine = _by_run(
            con,
            "SELECT metric.run_id, metric.op, "
            + ", ".join(f"metric.{m}" for m in ENGINE_METRICS)
            + " FROM metric JOIN run ON run.id = metric.run_id"
            " JOIN point ON point.id = run.point_id"
            " WHERE point.study_id = ? AND run.status = 'ok' ORDER BY metric.run_id, metric.op",
            study_id,
        )
        telemetry = _by_run(
            con,
            "SELECT rm.run_id, rm.name, rm.value FROM run_metric rm"
            " JOIN run ON run.id = rm.run_id JOIN point ON point.id = run.point_id"
            " WHERE point.study_id = ? AND run.status = 'ok' ORDER BY rm.run_id, rm.name",
            study_id,
        )

    # In the order `fslab compare` shows them (rw, bs, threads, iodepth, ...).
    param_keys = list(dict.fromkeys([*c.param_keys, *(k for *_, p in points.values() for k in p)]))
    columns = [*_FIXED_HEAD, *(param_column(k, _RESERVED) for k in param_keys), *_FIXED_TAIL]
    rows: list[dict[str, Any]] = []
    for run_id, point_id, rep, started_at, runtime_s in runs:
        target, workload, kind, params = points[point_id]
        head: dict[str, Any] = {
            "study": c.study,
            "workload": workload,
            "kind": kind,
            "target": target,
        }
        head.update({param_column(k, _RESERVED): params.get(k) for k in param_keys})
        head.update(
            point_id=point_id, run_id=run_id, rep=rep, started_at=started_at, runtime_s=runtime_s
        )
        for op, *values in engine.get(run_id, []):
            for name, value in zip(ENGINE_METRICS, values, strict=True):
                rows.append({**head, "source": "engine", "op": op, "metric": name, "value": value})
        for name, value in telemetry.get(run_id, []):
            op, metric = "", str(name)
            if kind == "files":
                op, _, metric = metric.partition(".")
            rows.append({**head, "source": "telemetry", "op": op, "metric": metric, "value": value})
    return columns, rows


def _grouped(where: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    """`--where` as `fslab compare` reads it: all keys must match, any of a key's values."""
    out: dict[str, list[str]] = {}
    for key, value in where:
        out.setdefault(key, []).append(value)
    return out


def _by_run(con: sqlite3.Connection, sql: str, study_id: int) -> dict[int, list[tuple[Any, ...]]]:
    out: dict[int, list[tuple[Any, ...]]] = {}
    for run_id, *rest in con.execute(sql, (study_id,)):
        out.setdefault(int(run_id), []).append(tuple(rest))
    return out


def render_export_csv(columns: list[str], rows: list[dict[str, Any]]) -> str:
    return csv_text(columns, rows)


def render_export_json(columns: list[str], rows: list[dict[str, Any]]) -> str:
    doc = {
        "schema_version": EXPORT_SCHEMA_VERSION,
        "columns": columns,
        "rows": rows,
    }
    return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
