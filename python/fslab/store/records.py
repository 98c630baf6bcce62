"""What the report, export and bundle read of a results database beyond a comparison's
rows: the study file, its points' specs, where runs ran, environments, telemetry
documents, and runs with their values for export. Reads only, like `fslab.store.query`."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import closing
from pathlib import Path
from typing import NamedTuple, TypeVar

import orjson

from fslab.store.query import ResultsError, id_span

_T = TypeVar("_T")


ENGINE_METRICS = (
    "ios", "bytes", "iops", "bw_bytes", "lat_min_ns", "lat_mean_ns", "lat_stdev_ns",
    "lat_max_ns", "lat_p50_ns", "lat_p90_ns", "lat_p95_ns", "lat_p99_ns", "lat_p999_ns",
    "lat_p9999_ns",
)  # fmt: skip
"""The engine's per-operation numbers (table `metric`), in the order export writes them."""

_IDS_PER_QUERY = 500
"""Ids bound in one `IN (...)` list (older SQLite builds allow 999 parameters)."""


class StudyFile(NamedTuple):
    """A study's row: the study file as given and its text."""

    id: int
    path: str | None
    toml: str


class PointSpecRow(NamedTuple):
    """One point of a study as stored: the target as written and the parameters, both
    JSON text (a report reads them leniently)."""

    id: str
    target: str
    workload: str
    kind: str
    target_spec: str
    params: str


class RunPlaceRow(NamedTuple):
    """A completed run: where it ran (`environment_id`) and the target as made
    (`effective`, JSON text or None)."""

    id: int
    point_id: str
    rep: int
    environment_id: int | None
    effective: str | None


class RunTimeRow(NamedTuple):
    """How long a completed run took and how much of it other work disturbed (its
    `run_fact`, written when it was stored)."""

    run_id: int
    runtime_s: float | None
    intervals: int
    contaminated_intervals: int


class EnvironmentRow(NamedTuple):
    kernel: str
    cpu_model: str
    cores: int
    mem_bytes: int
    tools: str
    """JSON text: {"fio": "3.33", ...}."""


class TelemetryRow(NamedTuple):
    run_id: int
    data: str
    """The sampler's document, JSON text."""


EngineValues = tuple[str, tuple[int | float, ...]]
"""(op, its `ENGINE_METRICS` in that order): one row of table `metric`."""


class IntegrityOutcome(NamedTuple):
    """What an integrity run's file system did with its fault (its `integrity` row)."""

    fault: str
    region: str
    outcome: str
    errno: int | None
    repaired_by: str | None


class ExportRun(NamedTuple):
    """A completed run and every number stored of it: the engine's per operation (by op)
    and the run's own metrics (`run_metric`, by name); an integrity run's outcome."""

    id: int
    point_id: str
    rep: int
    started_at: float
    runtime_s: float | None
    engine: list[EngineValues]
    telemetry: list[tuple[str, float]]
    integrity: IntegrityOutcome | None = None


def study_file(con: sqlite3.Connection, name: str) -> StudyFile:
    """The study named `name` (it must exist: `studies` listed it)."""
    row = con.execute("SELECT id, path, toml FROM study WHERE name = ?", (name,)).fetchone()
    if row is None:
        raise ResultsError(f"no study `{name}` in this results database")
    return StudyFile(int(row[0]), row[1], str(row[2]))


def point_specs(con: sqlite3.Connection, study_id: int) -> list[PointSpecRow]:
    """The study's points in plan order, their target specs and parameters as stored."""
    return [
        PointSpecRow(str(i), str(t), str(w), str(k), str(s), str(p))
        for i, t, w, k, s, p in con.execute(
            "SELECT id, target, workload, kind, target_spec, params FROM point"
            " WHERE study_id = ? ORDER BY seq, id",
            (study_id,),
        )
    ]


def completed_run_places(con: sqlite3.Connection, study_id: int) -> list[RunPlaceRow]:
    """The study's completed runs, by repetition then id, with their environment and
    the target as made."""
    # The runs are found through the index on run(point_id, status); only the completed
    # ones' rows are read (and only up to `effective`, before the engine's report).
    return [
        RunPlaceRow(int(i), str(p), int(r), None if e is None else int(e), eff)
        for i, p, r, e, eff in con.execute(
            "SELECT run.id, run.point_id, run.rep, run.environment_id, run.effective FROM point"
            " JOIN run INDEXED BY run_point ON run.point_id = point.id"
            " WHERE point.study_id = ? AND run.status = 'ok' ORDER BY run.rep, run.id",
            (study_id,),
        )
    ]


def environment(con: sqlite3.Connection, env_id: int) -> EnvironmentRow | None:
    row = con.execute(
        "SELECT kernel, cpu_model, cores, mem_bytes, tools FROM environment WHERE id = ?",
        (env_id,),
    ).fetchone()
    if row is None:
        return None
    kernel, cpu, cores, mem, tools = row
    return EnvironmentRow(str(kernel), str(cpu), int(cores), int(mem), str(tools))


def telemetry_documents(con: sqlite3.Connection, run_ids: Iterable[int]) -> Iterator[TelemetryRow]:
    """The stored sampler documents of these runs (those that have one), by run id."""
    ids = sorted(set(run_ids))
    for chunk in _chunks(ids):
        marks = ",".join("?" * len(chunk))
        for run_id, data in con.execute(
            f"SELECT run_id, data FROM telemetry WHERE run_id IN ({marks}) ORDER BY run_id", chunk
        ):
            yield TelemetryRow(int(run_id), str(data))


def run_times(con: sqlite3.Connection, run_ids: Iterable[int]) -> dict[int, RunTimeRow]:
    """The runtime and disturbed intervals of these runs, by id (a run without a
    `run_fact` row is missing)."""
    out: dict[int, RunTimeRow] = {}
    for chunk in _chunks(sorted(set(run_ids))):
        marks = ",".join("?" * len(chunk))
        for run_id, runtime, n, dirty in con.execute(
            "SELECT run_id, runtime_s, intervals, contaminated_intervals FROM run_fact"
            f" WHERE run_id IN ({marks})",
            chunk,
        ):
            out[int(run_id)] = RunTimeRow(
                int(run_id), None if runtime is None else float(runtime), int(n), int(dirty)
            )
    return out


def runs_with_values(con: sqlite3.Connection, ok: set[int]) -> set[int]:
    """Those of these completed runs that have compared values (a `run_value` row of a
    layout with at least one key): what makes a run count in a comparison's groups."""
    filled = {
        int(i) for i, k in con.execute("SELECT id, keys FROM value_layout") if orjson.loads(k)
    }
    return {
        run_id
        for run_id, layout in con.execute(
            "SELECT run_id, layout_id FROM run_value WHERE run_id BETWEEN ? AND ?", id_span(ok)
        )
        if layout in filled and run_id in ok
    }


def export_runs(con: sqlite3.Connection, point_ids: Iterable[str]) -> Iterator[ExportRun]:
    """The completed runs of these points with all their numbers: point by point in the
    order given, each point's runs by repetition; each run's engine rows by op, its own
    metrics by name. Reads a few hundred runs at a time (memory stays small at any size)
    and never the engine's report of a run."""
    batch: list[str] = []
    for pid in point_ids:
        batch.append(pid)
        if len(batch) == _IDS_PER_QUERY:
            yield from _export_batch(con, batch)
            batch = []
    if batch:
        yield from _export_batch(con, batch)


def _export_batch(con: sqlite3.Connection, point_ids: list[str]) -> Iterator[ExportRun]:
    order = {pid: i for i, pid in enumerate(point_ids)}
    marks = ",".join("?" * len(point_ids))
    # Through the index on run(point_id, status); `rep` and `started_at` come before the
    # engine's report in a run's row, `runtime_s` after it: that one is read from
    # `run_fact` (derived from the run, one small row per completed run).
    runs = sorted(
        con.execute(
            "SELECT run.point_id, run.rep, run.id, run.started_at FROM run INDEXED BY run_point"
            f" WHERE run.point_id IN ({marks}) AND run.status = 'ok'",
            point_ids,
        ),
        key=lambda r: (order[r[0]], r[1]),
    )
    engine_sql = f"SELECT op, {', '.join(ENGINE_METRICS)} FROM metric WHERE run_id = ? ORDER BY op"
    telemetry_sql = "SELECT name, value FROM run_metric WHERE run_id = ? ORDER BY name"
    for chunk in _chunks(runs):
        ids = [r[2] for r in chunk]
        marks = ",".join("?" * len(ids))
        runtime: dict[int, float | None] = dict(
            con.execute(f"SELECT run_id, runtime_s FROM run_fact WHERE run_id IN ({marks})", ids)
        )
        outcomes = {
            int(r[0]): IntegrityOutcome(str(r[1]), str(r[2]), str(r[3]), r[4], r[5])
            for r in con.execute(
                "SELECT run_id, fault, region, outcome, errno, repaired_by FROM integrity"
                f" WHERE run_id IN ({marks})",
                ids,
            )
        }
        # One run at a time: faster than one query for many (no regrouping of 100 rows a
        # run in Python), and the rows come as they are returned.
        for pid, rep, run_id, started_at in chunk:
            if run_id not in runtime:
                runtime[run_id] = _runtime(con, run_id)
            engine = [(op, tuple(values)) for op, *values in con.execute(engine_sql, (run_id,))]
            telemetry = con.execute(telemetry_sql, (run_id,)).fetchall()
            yield ExportRun(
                run_id, pid, rep, started_at, runtime[run_id], engine, telemetry,
                outcomes.get(run_id),
            )  # fmt: skip


def _runtime(con: sqlite3.Connection, run_id: int) -> float | None:
    """A run's `runtime_s` from its own row (a run without derived facts)."""
    row = con.execute("SELECT runtime_s FROM run WHERE id = ?", (run_id,)).fetchone()
    return None if row is None else row[0]


def _chunks(items: Sequence[_T]) -> Iterator[Sequence[_T]]:
    for start in range(0, len(items), _IDS_PER_QUERY):
        yield items[start : start + _IDS_PER_QUERY]


def backup(con: sqlite3.Connection, dst: Path) -> None:
    """A consistent copy of the whole database (all its studies) in a new file at `dst`,
    even while a writer uses it (WAL)."""
    with closing(sqlite3.connect(dst)) as out:
        con.backup(out)
