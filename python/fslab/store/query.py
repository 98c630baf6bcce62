"""Every read of the results database, as typed rows: compare, the reports, export and
bundle read through here (`fslab.store.db` writes).

A reader opens the file read-only (`open_readonly`); a file of an older fslab is first
migrated forward by the writer (`Results.open`), which needs write access to it.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
import orjson

from fslab.errors import ExitStatus, FslabError
from fslab.stats.warnings import RunFacts
from fslab.store.migrations import SCHEMA_VERSION

DEFAULT_RESULTS = Path("fslab-results.db")
"""Where `fslab run` writes and `fslab compare` reads when `--results` is not given."""

RUN_HINT = "run a study first: `fslab run STUDY.toml`"
_TABLES = frozenset({"study", "point", "run", "metric"})


class ResultsError(FslabError):
    """The results database holds nothing to compare (yet), or a row fslab cannot read."""

    exit_status = ExitStatus.FAILED


class BadResultsError(ResultsError):
    """`--results` names no usable results database: missing, unreadable, damaged, not
    fslab's, or from a newer fslab (bad input, like a bad study)."""

    exit_status = ExitStatus.USAGE


@contextmanager
def open_readonly(db_path: Path) -> Iterator[sqlite3.Connection]:
    """The results database at `db_path`, read-only, at the current schema (an older one
    is migrated first). Raises BadResultsError for anything that is not one."""
    con = _connect(db_path)
    try:
        yield con
    finally:
        con.close()


def _connect(db_path: Path) -> sqlite3.Connection:
    if not db_path.exists():
        raise BadResultsError(f"{db_path}: no results database here", hint=RUN_HINT)
    if not db_path.is_file():
        raise BadResultsError(
            f"{db_path}: not a file", hint="give the results database with --results"
        )
    for attempt in (0, 1):
        try:
            con = sqlite3.connect(f"{db_path.resolve().as_uri()}?mode=ro", uri=True)
        except sqlite3.Error as e:
            raise BadResultsError(
                f"{db_path}: cannot open it ({e})", hint="check its permissions"
            ) from e
        try:
            version = con.execute("PRAGMA user_version").fetchone()[0]
            tables = {
                name
                for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
        except sqlite3.DatabaseError as e:
            con.close()
            raise BadResultsError(
                f"{db_path}: cannot read it as a results database ({e})",
                hint="give the database `fslab run` wrote with --results",
            ) from e
        missing = _TABLES - tables
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
        if version == SCHEMA_VERSION or attempt:
            return con
        con.close()
        _migrate(db_path, version)
    raise AssertionError("unreachable")


def _migrate(db_path: Path, version: int) -> None:
    # The writer imports the engine's models and the study's: only here, not to read.
    from fslab.store.db import Results, StoreError

    try:
        Results.open(db_path, create=False).close()
    except StoreError as e:
        raise BadResultsError(e.message, hint=e.hint) from e
    except sqlite3.OperationalError as e:
        raise BadResultsError(
            f"{db_path}: written by an older fslab (layout {version}); reading it needs it "
            f"moved to layout {SCHEMA_VERSION} first, which failed ({e})",
            hint="run fslab as a user who may write the file, or copy it somewhere writable "
            "and pass the copy with --results",
        ) from e


# ------------------------------------------------------------------------------ rows


@dataclass(frozen=True)
class StudyRow:
    id: int
    name: str


class PointRow(NamedTuple):
    """One point of a study's plan; `params` decoded, in stored order, without `target`
    (older plans stored it there too: it is the point's own column)."""

    id: str
    seq: int
    target: str
    workload: str
    kind: str
    params: dict[str, Any]


class RunRow(NamedTuple):
    id: int
    point_id: str
    status: str


@dataclass(frozen=True)
class RunValues:
    """The compared values of a study's completed runs (`run_value`), one block per
    layout: `runs[i]`'s values are `data[i]`, in the order of `keys` ((op, metric))."""

    keys: tuple[tuple[str, str], ...]
    runs: npt.NDArray[np.int64]
    data: npt.NDArray[np.float64]


@dataclass(frozen=True)
class StudyResults:
    """What a comparison reads of one study: points in plan order, every run, the
    completed runs' values and facts."""

    points: tuple[PointRow, ...]
    runs: tuple[RunRow, ...]
    values: tuple[RunValues, ...]
    facts: dict[int, RunFacts]
    limits: dict[int, dict[str, float]]
    """Per completed run with a verdict, the limits it judged by (`check` -> max in ms)."""


def studies(con: sqlite3.Connection) -> list[StudyRow]:
    """Every study, most recent first."""
    return [
        StudyRow(int(i), str(n))
        for i, n in con.execute("SELECT id, name FROM study ORDER BY created_at DESC, id DESC")
    ]


def points(con: sqlite3.Connection, study_id: int, db: Path) -> list[PointRow]:
    """The study's points in plan order."""
    out: list[PointRow] = []
    for pid, seq, target, workload, kind, params_json in con.execute(
        "SELECT id, seq, target, workload, kind, params FROM point"
        " WHERE study_id = ? ORDER BY seq, id",
        (study_id,),
    ):
        try:
            params = orjson.loads(params_json)
        except orjson.JSONDecodeError as e:
            raise ResultsError(f"{db}: point `{pid}`: its params are not JSON ({e})") from e
        if not isinstance(params, dict):
            raise ResultsError(f"{db}: point `{pid}`: its params are not a JSON object")
        params.pop("target", None)
        out.append(PointRow(str(pid), int(seq), str(target), str(workload), str(kind), params))
    return out


def study_results(con: sqlite3.Connection, study_id: int, db: Path) -> StudyResults:
    """Everything a comparison of the study reads."""
    pts = points(con, study_id, db)
    # Through the index on run(point_id, status): `run` rows hold the engine's whole
    # report, and reading 100,000 of them costs seconds.
    rows = con.execute(
        "SELECT run.id, run.point_id, run.status FROM point"
        " JOIN run INDEXED BY run_point ON run.point_id = point.id"
        " WHERE point.study_id = ?",
        (study_id,),
    ).fetchall()
    runs = tuple(map(RunRow._make, sorted(rows)))
    ok = {r.id for r in runs if r.status == "ok"}
    facts, limits = run_facts(con, ok)
    return StudyResults(tuple(pts), runs, run_values(con, ok), facts, limits)


def _span(ok: set[int]) -> tuple[int, int]:
    """The range of run ids to scan for these runs. A study's runs are (nearly) one range
    of ids, and a range of the integer primary key is read straight from the table, 4x
    faster than a join per run; the few other runs a range may hold are dropped."""
    return (min(ok), max(ok)) if ok else (1, 0)


def run_values(con: sqlite3.Connection, ok: set[int]) -> tuple[RunValues, ...]:
    """These completed runs' values, grouped by layout, in run order."""
    layouts = {
        int(i): tuple((str(op), str(m)) for op, m in json.loads(k))
        for i, k in con.execute("SELECT id, keys FROM value_layout")
    }
    per_layout: dict[int, tuple[list[int], list[bytes]]] = {}
    for run_id, layout, data in con.execute(
        "SELECT run_id, layout_id, data FROM run_value WHERE run_id BETWEEN ? AND ?"
        " ORDER BY run_id",
        _span(ok),
    ):
        if run_id in ok:
            ids, blobs = per_layout.setdefault(layout, ([], []))
            ids.append(run_id)
            blobs.append(data)
    out: list[RunValues] = []
    for layout, (ids, blobs) in per_layout.items():
        keys = layouts[layout]
        flat = np.frombuffer(b"".join(blobs), dtype="<f8").astype(np.float64)
        out.append(
            RunValues(keys, np.array(ids, dtype=np.int64), flat.reshape(len(ids), len(keys)))
        )
    return tuple(out)


def run_facts(
    con: sqlite3.Connection, ok: set[int]
) -> tuple[dict[int, RunFacts], dict[int, dict[str, float]]]:
    """What each of these completed runs says about itself (`run_fact`), and the limits
    of the runs a verdict judged."""
    out: dict[int, RunFacts] = {}
    limits: dict[int, dict[str, float]] = {}
    rows = con.execute(
        "SELECT run_id, runtime_s, engine_warnings, intervals, contaminated_intervals,"
        " reasons, trend_drift, trend_p, available_min_bytes, workload_read_bytes,"
        " device_read_bytes, limits FROM run_fact WHERE run_id BETWEEN ? AND ?",
        _span(ok),
    ).fetchall()
    for run_id, runtime_s, engine, intervals, dirty, reasons, drift, p, *read, judged in rows:
        if run_id not in ok:
            continue
        out[run_id] = RunFacts(
            run_id,
            runtime_s,
            _warnings(engine),
            intervals,
            dirty,
            tuple(reasons.split(",")) if reasons else (),
            (drift, p) if drift is not None else None,
            *read,
        )
        if judged != "{}":
            limits[run_id] = {str(k): float(v) for k, v in orjson.loads(judged).items()}
    return out, limits


def _warnings(text: str) -> tuple[tuple[str, str | None, str, str | None], ...]:
    if text == "[]":
        return ()
    return tuple((str(k), o, str(m), h) for k, o, m, h in orjson.loads(text))
