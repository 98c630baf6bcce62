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
from typing import Any

import numpy as np
import numpy.typing as npt

from fslab.errors import ExitStatus, FslabError
from fslab.stats.warnings import RunFacts
from fslab.store.db import SCHEMA_VERSION, Results, StoreError

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


@dataclass(frozen=True)
class PointRow:
    """One point of a study's plan; `params` decoded, in stored order."""

    id: str
    seq: int
    target: str
    workload: str
    kind: str
    params: dict[str, Any]


@dataclass(frozen=True)
class RunRow:
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
            params = json.loads(params_json)
        except json.JSONDecodeError as e:
            raise ResultsError(f"{db}: point `{pid}`: its params are not JSON ({e})") from e
        if not isinstance(params, dict):
            raise ResultsError(f"{db}: point `{pid}`: its params are not a JSON object")
        out.append(PointRow(str(pid), int(seq), str(target), str(workload), str(kind), params))
    return out


def study_results(con: sqlite3.Connection, study_id: int, db: Path) -> StudyResults:
    """Everything a comparison of the study reads."""
    pts = points(con, study_id, db)
    # Through the index on run(point_id, status): `run` rows hold the engine's whole
    # report, and reading 100,000 of them costs seconds.
    runs = tuple(
        RunRow(i, p, s)
        for i, p, s in sorted(
            con.execute(
                "SELECT run.id, run.point_id, run.status FROM point"
                " JOIN run INDEXED BY run_point ON run.point_id = point.id"
                " WHERE point.study_id = ?",
                (study_id,),
            ).fetchall()
        )
    )
    facts, limits = run_facts(con, study_id)
    return StudyResults(tuple(pts), runs, run_values(con, study_id), facts, limits)


_OK_RUNS = (
    "WITH ok AS (SELECT run.id AS id FROM point JOIN run INDEXED BY run_point"
    " ON run.point_id = point.id WHERE point.study_id = ? AND run.status = 'ok')"
)
"""A study's completed runs, from the index alone."""


def run_values(con: sqlite3.Connection, study_id: int) -> tuple[RunValues, ...]:
    """The study's completed runs' values, grouped by layout."""
    layouts = {
        int(i): tuple((str(op), str(m)) for op, m in json.loads(k))
        for i, k in con.execute("SELECT id, keys FROM value_layout")
    }
    per_layout: dict[int, tuple[list[int], list[bytes]]] = {}
    for run_id, layout, data in con.execute(
        f"{_OK_RUNS} SELECT rv.run_id, rv.layout_id, rv.data FROM ok"
        " JOIN run_value rv ON rv.run_id = ok.id ORDER BY rv.run_id",
        (study_id,),
    ):
        ids, blobs = per_layout.setdefault(int(layout), ([], []))
        ids.append(int(run_id))
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
    con: sqlite3.Connection, study_id: int
) -> tuple[dict[int, RunFacts], dict[int, dict[str, float]]]:
    """What each completed run of the study says about itself (`run_fact`), and the
    limits of the runs a verdict judged."""
    out: dict[int, RunFacts] = {}
    limits: dict[int, dict[str, float]] = {}
    rows = con.execute(
        f"{_OK_RUNS} SELECT f.run_id, f.runtime_s, f.engine_warnings, f.intervals,"
        " f.contaminated_intervals, f.reasons, f.trend_drift, f.trend_p, f.available_min_bytes,"
        " f.workload_read_bytes, f.device_read_bytes, f.limits FROM ok"
        " JOIN run_fact f ON f.run_id = ok.id",
        (study_id,),
    ).fetchall()
    for run_id, runtime_s, engine, intervals, dirty, reasons, drift, p, *read, judged in rows:
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
            limits[run_id] = {str(k): float(v) for k, v in json.loads(judged).items()}
    return out, limits


def _warnings(text: str) -> tuple[tuple[str, str | None, str, str | None], ...]:
    if text == "[]":
        return ()
    return tuple((str(k), o, str(m), h) for k, o, m, h in json.loads(text))
