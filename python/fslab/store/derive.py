"""What `fslab compare` needs of a run, worked out once, when the run is stored.

Two tables (schema version 3, schema.sql), both derived from what a run stored elsewhere
and rebuilt from it by the migration to version 3:

- `run_value`: every compared number of the run (`fslab.catalog.compared`) as one row:
  a layout (the `(op, metric)` pairs, shared by all runs of one shape, in `value_layout`)
  and the values as packed little-endian doubles. Compare reads one row per run instead of
  thirty, and never parses a stored metric name or the engine's report again.
- `run_fact`: what the run says about itself for the warnings (`RunFacts`): intervals
  and contaminated intervals, free memory, what the workload and the devices read, the
  trend of its IOPS (none for a run the engine judged for steady state itself: its
  `steady_state` and `not_steady` warning say it; none for a replay, whose rate is the
  recorded application's) and the engine's own warnings.

`derive(con, run_ids)` (re)writes both for completed runs and drops them for others; the
store calls it whenever a completed run's rows change.
"""

from __future__ import annotations

import json
import math
import sqlite3
import sys
from array import array
from collections.abc import Iterable, Sequence
from typing import Any

from fslab.catalog import COLUMNS, compared, entry
from fslab.stats.warnings import trend
from fslab.telemetry.series import FOREIGN_TOP

_CHUNK = 500

ROUNDS_PER_ORIGIN = 1_000_000
"""An imported run's round is kept apart from every other origin's: its repetition plus
this times its origin's id (`fslab.store.merge`). No study has a million rounds."""
"""Runs read per round by a bulk derivation (a migration): bounds its memory."""

_ENGINE_READ_OPS = ("read", "data_read", "maintenance_read")
"""The engine operations whose bytes are what a block or application run read."""
ENGINE_WRITE_OPS = ("write", "data_write", "log_write")
"""The engine operations whose bytes are what a block or application run wrote."""


REASON_KEYS = ("foreign_cpu", "steal", "memory_pressure")


def derive(con: sqlite3.Connection, run_ids: Iterable[int] | None = None) -> int:
    """Writes `run_value` and `run_fact` of the given runs (every run when None) that
    completed, removes them for the others; returns how many completed runs it wrote.
    Runs inside the caller's transaction."""
    if run_ids is None:
        ids = [int(r[0]) for r in con.execute("SELECT id FROM run ORDER BY id")]
    else:
        ids = sorted(set(run_ids))
    layouts = {str(k): int(i) for i, k in con.execute("SELECT id, keys FROM value_layout")}
    # A migration of an older file derives before `disturbers` (version 9), `rep` (version
    # 10) and `foreign_cpu_pct` (version 11) exist.
    columns = {str(r[1]) for r in con.execute("PRAGMA table_info(run_fact)")}
    run_columns = {str(r[1]) for r in con.execute("PRAGMA table_info(run)")}
    written = 0
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start : start + _CHUNK]
        written += _derive_chunk(con, chunk, layouts, columns, run_columns)
    return written


def _derive_chunk(
    con: sqlite3.Connection,
    ids: Sequence[int],
    layouts: dict[str, int],
    columns: set[str],
    run_columns: set[str],
) -> int:
    marks = ",".join("?" * len(ids))
    con.execute(f"DELETE FROM run_value WHERE run_id IN ({marks})", ids)
    con.execute(f"DELETE FROM run_fact WHERE run_id IN ({marks})", ids)
    # A migration of a file older than version 13 derives before `engine_shape` exists.
    shape = "run.engine_shape" if "engine_shape" in run_columns else "NULL"
    # An imported run pairs by its origin's rounds, never this database's (merge.py).
    rep = (
        f"run.rep + {ROUNDS_PER_ORIGIN} * coalesce(run.origin_id, 0)"
        if "origin_id" in run_columns
        else "run.rep"
    )
    runs = con.execute(
        f"SELECT run.id, point.kind, run.engine_json, {shape}, run.runtime_s, {rep} FROM run"
        " JOIN point ON point.id = run.point_id"
        f" WHERE run.id IN ({marks}) AND run.status = 'ok'",
        ids,
    ).fetchall()
    if not runs:
        return 0
    ok = [int(r[0]) for r in runs]
    marks = ",".join("?" * len(ok))
    op_rows: dict[int, list[tuple[str, dict[str, float]]]] = {}
    read: dict[int, float] = {}
    write: dict[int, float] = {}
    cols = ", ".join(COLUMNS)
    for run_id, op, nbytes, *values in con.execute(
        f"SELECT run_id, op, bytes, {cols} FROM metric WHERE run_id IN ({marks})", ok
    ):
        op_rows.setdefault(run_id, []).append((op, dict(zip(COLUMNS, values, strict=True))))
        if op in _ENGINE_READ_OPS:
            read[run_id] = read.get(run_id, 0.0) + float(nbytes)
        elif op in ENGINE_WRITE_OPS:
            write[run_id] = write.get(run_id, 0.0) + float(nbytes)
    run_metrics: dict[int, list[tuple[str, float]]] = {}
    for run_id, name, value in con.execute(
        f"SELECT run_id, name, value FROM run_metric WHERE run_id IN ({marks})", ok
    ):
        run_metrics.setdefault(run_id, []).append((str(name), float(value)))
    series: dict[int, dict[float, float]] = {}
    kinds = {int(r[0]): entry(str(r[1])) for r in runs}
    for run_id, t_s, op, iops in con.execute(
        f"SELECT run_id, t_s, op, iops FROM series WHERE run_id IN ({marks}) AND ramp = 0", ok
    ):
        # An application's IOPS trend is its transactions' (checkpoints make its I/O
        # bursty): its `series` ops are the model's.
        if not kinds[run_id].is_headline_op(op):
            continue
        per_t = series.setdefault(run_id, {})
        per_t[float(t_s)] = per_t.get(float(t_s), 0.0) + float(iops)

    for run_id, kind, engine_json, stored, runtime_s, rep in runs:
        triples = list(compared(kind, op_rows.get(run_id, []), run_metrics.get(run_id, [])))
        keys = json.dumps([[op, name] for op, name, _ in triples], separators=(",", ":"))
        layout = layouts.get(keys)
        if layout is None:
            cur = con.execute("INSERT INTO value_layout (keys) VALUES (?)", (keys,))
            layout = layouts[keys] = int(cur.lastrowid or 0)
        data = array("d", (v for _, _, v in triples))
        con.execute(
            "INSERT INTO run_value VALUES (?, ?, ?)", (run_id, layout, _little_endian(data))
        )
        docs = reports(engine_json, stored or entry(kind).stored)
        # A steady-state run's results are its window's; the devices were watched over
        # the whole run, and so is what it read compared with them.
        workload_read = (
            _measured(docs, ("read", "background")) if _judged(docs) else read.get(run_id)
        )
        facts = _facts(kind, run_metrics.get(run_id, []), workload_read, docs)
        points = sorted(series.get(run_id, {}).items())
        # The last interval is usually partial (the job ends inside it): leave it out. A
        # steady-state run's engine judged its steadiness on its own rounds: a window it
        # found steady is steady by construction, one it did not comes with `not_steady`.
        # A replay's rate is the recorded application's, which rises and falls as the
        # application did: no trend of it says the target was unsteady.
        t = None if _judged(docs) or _replayed(docs) else trend(points[:-1])
        row = (run_id, runtime_s, *facts[:6], *(t if t is not None else (None, None)), *facts[6:])
        names = list(_FACT_COLUMNS)
        if "disturbers" in columns:
            who = _disturbers(con, run_id) if facts[1] else []
            row += (json.dumps(who, separators=(",", ":")),)
            names.append("disturbers")
        if "rep" in columns:
            row += (rep,)
            names.append("rep")
        if "foreign_cpu_pct" in columns:
            row += (foreign_cpu_pct(run_metrics.get(run_id, [])),)
            names.append("foreign_cpu_pct")
        if "dirty_rise_bytes" in columns:
            written = _measured(docs, ("write", "log")) if _judged(docs) else write.get(run_id)
            row += (written if kinds[run_id].counts_bytes else None,
                    _dirty_rise(run_metrics.get(run_id, [])))  # fmt: skip
            names += ["workload_write_bytes", "dirty_rise_bytes"]
        con.execute(
            f"INSERT INTO run_fact ({', '.join(names)}) VALUES ({', '.join('?' * len(row))})", row
        )
    return len(runs)


_FACT_COLUMNS = (
    "run_id", "runtime_s", "intervals", "contaminated_intervals", "reasons",
    "available_min_bytes", "workload_read_bytes", "device_read_bytes", "trend_drift",
    "trend_p", "engine_warnings", "limits",
)  # fmt: skip
"""`run_fact`'s columns every version has, in the order `_derive_chunk` fills them."""


def _disturbers(con: sqlite3.Connection, run_id: int) -> list[list[Any]]:
    """Who disturbed a contaminated run, as its telemetry named them (`Telemetry.
    disturbers`; a files run's ops summed): [[name, pid, cpu_s, cpu_pct], ...], the most
    CPU first. Read only for the few contaminated runs: the series are large."""
    row = con.execute("SELECT data FROM telemetry WHERE run_id = ?", (run_id,)).fetchone()
    try:
        data = json.loads(row[0]) if row else {}
    except ValueError:
        return []
    parts = [data] if "series" in data else [d for d in data.values() if isinstance(d, dict)]
    used: dict[tuple[str, int], list[float]] = {}
    for part in parts:
        for d in part.get("disturbers") or []:
            got = used.setdefault((str(d["name"]), int(d["pid"])), [0.0, 0.0])
            got[0] += float(d["cpu_s"])
            got[1] = max(got[1], float(d["cpu_pct"]))
    top = sorted(used.items(), key=lambda kv: -kv[1][0])[:FOREIGN_TOP]
    return [[name, pid, cpu_s, pct] for (name, pid), (cpu_s, pct) in top]


def foreign_cpu_pct(run_metrics: Sequence[tuple[str, float]]) -> float | None:
    """The CPU other processes used over a run, % of one CPU, from its telemetry summary
    (`foreign_cpu_pct_avg`; a files run's ops weighted by their intervals); None when the
    run was not watched."""
    avg: dict[str, float] = {}
    intervals: dict[str, float] = {}
    for name, value in run_metrics:
        prefix, _, key = name.rpartition(".")
        if key == "foreign_cpu_pct_avg":
            avg[prefix] = value
        elif key == "intervals":
            intervals[prefix] = value
    if not avg:
        return None
    weights = [intervals.get(op, 0.0) for op in avg]
    if sum(weights) <= 0:
        return sum(avg.values()) / len(avg)
    return sum(a * w for a, w in zip(avg.values(), weights, strict=True)) / sum(weights)


def _dirty_rise(run_metrics: Sequence[tuple[str, float]]) -> float | None:
    """How far dirty memory rose over the run's measured part; None where the telemetry
    could not tell that part from the layout before it (no `measured_from_s`)."""
    got = dict(run_metrics)
    return got.get("dirty_rise_bytes") if "measured_from_s" in got else None


def _judged(docs: Sequence[dict[str, Any]]) -> bool:
    """Whether the engine judged the run's steadiness itself (`steady_state = true`)."""
    return any(isinstance(d.get("steady_state"), dict) for d in docs)


def _replayed(docs: Sequence[dict[str, Any]]) -> bool:
    """Whether the run replayed a recording (`read_iolog`: the report's `replay`)."""
    return any(isinstance(d.get("replay"), dict) for d in docs)


def _measured(docs: Sequence[dict[str, Any]], ops: Sequence[str]) -> float:
    """The bytes of the series' `ops` over a run's whole measured time (ramp left out):
    `read` and `background` (the mailstore's maintenance reads) are what it read, `write`
    and `log` what it wrote."""
    total = 0.0
    for d in docs:
        for p in (d.get("series") or {}).get("points") or []:
            if isinstance(p, dict) and not p.get("ramp"):
                for op in ops:
                    o = p.get(op)
                    if isinstance(o, dict):
                        total += float(o.get("bytes") or 0)
    return total


def _little_endian(data: array[float]) -> bytes:
    if sys.byteorder != "little":
        data.byteswap()
    return data.tobytes()


def _facts(
    kind: str,
    run_metrics: Sequence[tuple[str, float]],
    read: float | None,
    docs: Sequence[dict[str, Any]],
) -> tuple[int, int, str, float | None, float | None, float | None, str, str]:
    """(intervals, contaminated intervals, reasons, least available memory, what the
    workload read, what the devices read, the engine's warnings and the verdict's limits,
    both as JSON)."""
    got: dict[str, float] = {}
    limits: dict[str, float] = {}
    for name, value in run_metrics:
        if name.startswith("verdict.") and name.endswith(".max"):
            limits[name.removeprefix("verdict.").removesuffix(".max")] = value
        # `copy.contaminated_intervals` (files) and `contaminated_intervals` (block) add up
        # over a run's ops; free memory is the least of them.
        key = name.rpartition(".")[2]
        if name in ("read_bytes", "backing_read_bytes"):
            got[name] = value
        elif key == "available_min_bytes":
            got[key] = min(got.get(key, math.inf), value)
        elif key.endswith("intervals"):
            got[key] = got.get(key, 0.0) + value
    reasons = ",".join(r for r in REASON_KEYS if got.get(f"contaminated_{r}_intervals"))
    # What one workload read over the run (a files run's ops are judged by their own).
    workload_read = read if entry(kind).counts_bytes else None
    # What reached a disk: a loop device's reads may stop in the host's page cache over
    # its image (a buffered loop device), so the disk under it bounds them too. That disk
    # also carries the rest of the machine's reads: an upper bound, never too low.
    device_read = got.get("read_bytes")
    if device_read is not None and "backing_read_bytes" in got:
        device_read = min(device_read, got["backing_read_bytes"])
    return (
        int(got.get("intervals", 0)),
        int(got.get("contaminated_intervals", 0)),
        reasons,
        got.get("available_min_bytes"),
        workload_read,
        device_read,
        json.dumps(engine_warnings(docs), separators=(",", ":")),
        json.dumps(limits, separators=(",", ":")),
    )


def reports(engine_json: str | None, shape: str) -> list[dict[str, Any]]:
    """A run's stored engine report(s), by what `engine_json` holds (`run.engine_shape`):
    one report (`report`: block, application models, a fio job file's measured jobs as
    one) or a list, one per op (`reports`: files); an old fio run's job-file document
    (`fio_file`): each job's report, its warnings named by the job; none for the shapes
    that hold no engine report (pgbench's summary, an integrity run's detail)."""
    if not engine_json or shape not in ("report", "reports", "fio_file"):
        return []
    try:
        doc = json.loads(engine_json)
    except json.JSONDecodeError:
        return []
    if shape == "fio_file":
        jobs = doc.get("jobs") if isinstance(doc, dict) else None
        return [_named_by_job(j) for j in jobs or [] if isinstance(j, dict)
                and isinstance(j.get("report"), dict)]  # fmt: skip
    return [d for d in (doc if isinstance(doc, list) else [doc]) if isinstance(d, dict)]


def _named_by_job(job: dict[str, Any]) -> dict[str, Any]:
    report: dict[str, Any] = job["report"]
    name = job.get("name")
    said = [{**w, "message": f"[{name}] {w.get('message', '')}"}
            for w in report.get("warnings") or [] if isinstance(w, dict)]  # fmt: skip
    return {**report, "warnings": said}


def engine_warnings(
    docs: Sequence[dict[str, Any]],
) -> list[tuple[str, str | None, str, str | None]]:
    """The engine's warnings in a run's reports (`reports`): (kind, op of a files run or
    None, message, hint)."""
    out: list[tuple[str, str | None, str, str | None]] = []
    for d in docs:
        # Only a files job names an `op`: each of its ops is one report.
        op = (d.get("job") or {}).get("op")
        for w in d.get("warnings") or []:
            if isinstance(w, dict) and "kind" in w:
                hint = w.get("hint")
                out.append(
                    (str(w["kind"]), str(op) if op else None, str(w.get("message", "")),
                     str(hint) if hint else None)
                )  # fmt: skip
    return out
