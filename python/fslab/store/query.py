"""Every read of the results database, as typed rows: compare, the reports, export and
bundle read through here (`fslab.store.db` writes).

A reader opens the file read-only (`open_readonly`); a file of an older fslab is first
migrated forward by the writer (`ResultsWriter.open`), which needs write access to it.
"""

from __future__ import annotations

import json
import sqlite3
import tomllib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import numpy as np
import numpy.typing as npt
import orjson

from fslab.catalog import entry
from fslab.errors import ExitStatus, FslabError
from fslab.integrity_words import KIND as INTEGRITY_KIND
from fslab.stats.warnings import RunFacts
from fslab.store.lock import READ_ONLY_FS, unwritable
from fslab.store.migrations import SCHEMA_VERSION
from fslab.units import parse_percent

DEFAULT_RESULTS = Path("fslab-results.db")
"""Where `fslab run` writes and `fslab compare` reads when `--results` is not given."""

RUN_HINT = "run a study first: `fslab run STUDY.toml`"
_TABLES = frozenset({"study", "point", "run", "metric"})
_T = TypeVar("_T")


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
    uri = f"{db_path.resolve().as_uri()}?mode=ro"
    if _unwritable_dir(db_path):
        # A WAL database is read through its `-shm` file, which SQLite must be able to
        # make beside it; where it cannot (a read-only mount, an unpacked bundle on a
        # share, an archive), nothing can be writing it either: read it as immutable.
        uri += "&immutable=1"
    for attempt in (0, 1):
        try:
            con = sqlite3.connect(uri, uri=True)
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


def _unwritable_dir(db_path: Path) -> bool:
    """Whether SQLite cannot make files beside `db_path`, and no writer can be at work:
    the file system is read-only, or the directory is not ours to write and holds no
    `-wal` file (a writer keeps one while it has the database open)."""
    why = unwritable(db_path)
    if why is None:
        return False
    wal = db_path.resolve().with_name(f"{db_path.resolve().name}-wal")
    return why.endswith(READ_ONLY_FS) or not wal.exists()


def _migrate(db_path: Path, version: int) -> None:
    # The writer imports the engine's models and the study's: only here, not to read.
    from fslab.store.db import ResultsWriter, StoreError

    try:
        ResultsWriter.open(db_path, create=False).close()
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
    questions: dict[str, str] = field(default_factory=dict)
    """Per target that answers one of the study's questions (its `question` key): which."""
    level: float | None = None
    """An adaptive study's level per look (`fslab.stats.sequential`): what its runs are
    judged by; None for a study of fixed repetitions."""
    integrity: tuple[IntegrityRow, ...] = ()
    """The completed integrity runs (`integrity_rows`): what each did with its fault."""
    margin: float | None = None
    """The study's equivalence margin (its `margin` key); None: the default."""
    summary: tuple[str, ...] = ()
    """The metrics its summary answers besides the headline one (its `summary` key)."""
    blocked: bool = False
    """Its runs were blocked (`study.design`): each target is compared with its baseline
    per round (`fslab.compare`)."""
    latency_limits: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per workload with a `latency_limit` key, that table as written."""


class IntegrityRow(NamedTuple):
    """One completed run of an integrity point (`kind = "integrity"`, table `integrity`):
    the point's target, workload and parameters, and what the file system did with the
    run's fault (`fslab.integrity_words`)."""

    run_id: int
    point_id: str
    rep: int
    target: str
    workload: str
    params: dict[str, Any]
    fault: str
    region: str
    outcome: str
    errno: int | None
    """The first error the read after the fault met; None: none."""
    repaired_by: str | None
    """`read` or `scrub`; None: not repaired."""


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
    runs = tuple(study_runs(con, study_id))
    ok = {r.id for r in runs if r.status == "ok"}
    facts, limits = run_facts(con, ok)
    return StudyResults(
        tuple(pts), runs, run_values(con, ok), facts, limits, target_questions(con, study_id),
        look_level(con, study_id), tuple(integrity_rows(con, study_id, db, pts)),
        *study_keys(con, study_id),
    )  # fmt: skip


@dataclass(frozen=True)
class RankRow:
    """One rank of a completed multi-host run (table `rank`, docs/multihost.md), with
    how even its run's ranks were as stored beside it (`ranks.*` run metrics)."""

    point_id: str
    run_id: int
    target: str
    workload: str
    params: dict[str, Any]
    rep: int
    rank: int
    host: str
    status: str
    start_unix_s: float
    runtime_s: float
    ios: int
    bytes: int
    run_imbalance: float | None
    """The run's `ranks.imbalance` (its fastest rank's rate over its slowest's); None
    where a rank did no I/O."""
    run_start_skew_s: float | None
    """The run's `ranks.start_skew_s`."""


def rank_rows(con: sqlite3.Connection, study_id: int) -> list[RankRow]:
    """The ranks of the study's completed multi-host runs, point by point in plan order,
    each run's by repetition and rank; one query, which finds nothing at once in a study
    without multi-host runs."""
    rows = con.execute(
        "SELECT p.id, p.target, p.workload, p.params, r.id, r.rep, k.rank, k.host, k.status,"
        " k.start_unix_s, k.runtime_s, k.ios, k.bytes, i.value, s.value FROM rank AS k"
        " JOIN run AS r ON r.id = k.run_id JOIN point AS p ON p.id = r.point_id"
        " LEFT JOIN run_metric AS i ON i.run_id = k.run_id AND i.name = 'ranks.imbalance'"
        " LEFT JOIN run_metric AS s ON s.run_id = k.run_id AND s.name = 'ranks.start_skew_s'"
        " WHERE p.study_id = ? AND r.status = 'ok' ORDER BY p.seq, r.rep, r.id, k.rank",
        (study_id,),
    ).fetchall()
    params: dict[str, dict[str, Any]] = {}
    out: list[RankRow] = []
    for pid, t, w, pr, run_id, rep, rk, h, st, start, rt, ios, nb, imb, skew in rows:
        if pid not in params:
            decoded = orjson.loads(pr)
            decoded.pop("target", None)  # older plans stored it there too (`points`)
            params[pid] = decoded
        out.append(
            RankRow(str(pid), int(run_id), str(t), str(w), params[pid], int(rep), int(rk),
                    str(h), str(st), float(start), float(rt), int(ios), int(nb),
                    None if imb is None else float(imb), None if skew is None else float(skew))
        )  # fmt: skip
    return out


def integrity_rows(
    con: sqlite3.Connection, study_id: int, db: Path, pts: Sequence[PointRow] | None = None
) -> list[IntegrityRow]:
    """The study's completed integrity runs (status ok, points of kind `integrity`, with
    their `integrity` row), point by point in plan order, each point's by repetition.
    `pts`: the study's points when already read (`points`)."""
    if pts is None:
        pts = points(con, study_id, db)
    mine = {p.id: p for p in pts if entry(p.kind).outcome_rows}
    if not mine:
        return []
    order = {pid: i for i, pid in enumerate(mine)}
    rows = con.execute(
        "SELECT run.point_id, run.id, run.rep, i.fault, i.region, i.outcome, i.errno,"
        " i.repaired_by FROM point JOIN run INDEXED BY run_point ON run.point_id = point.id"
        " JOIN integrity AS i ON i.run_id = run.id"
        " WHERE point.study_id = ? AND point.kind = ? AND run.status = 'ok'",
        (study_id, INTEGRITY_KIND),
    ).fetchall()
    out: list[IntegrityRow] = []
    for pid, run_id, rep, fault, region, outcome, errno, repaired_by in sorted(
        rows, key=lambda r: (order.get(r[0], len(order)), r[2], r[1])
    ):
        p = mine.get(pid)
        if p is None:
            continue
        out.append(
            IntegrityRow(
                int(run_id), str(pid), int(rep), p.target, p.workload, p.params, str(fault),
                str(region), str(outcome), None if errno is None else int(errno),
                None if repaired_by is None else str(repaired_by),
            )
        )  # fmt: skip
    return out


def look_level(con: sqlite3.Connection, study_id: int) -> float | None:
    """The level of the study's latest look, None when it has none."""
    row = con.execute(
        "SELECT level FROM look WHERE study_id = ? ORDER BY round DESC LIMIT 1", (study_id,)
    ).fetchone()
    return float(row[0]) if row else None


def study_keys(
    con: sqlite3.Connection, study_id: int
) -> tuple[float | None, tuple[str, ...], bool, dict[str, dict[str, Any]]]:
    """What says how to judge and summarize the study: its TOML's (as last run) `margin`
    (None: the default) and `summary` (the metrics named), and whether its runs were
    blocked (`study.design`). A key that cannot be read is left at its default: the
    study was checked when it ran."""
    row = con.execute("SELECT toml, design FROM study WHERE id = ?", (study_id,)).fetchone()
    blocked = bool(row and row[1] == "blocked")
    try:
        doc = tomllib.loads(str(row[0])) if row and row[0] else {}
    except tomllib.TOMLDecodeError:
        doc = {}
    margin, summary = doc.get("margin"), doc.get("summary")
    try:
        m = parse_percent(margin) if isinstance(margin, str) else None
    except ValueError:
        m = None
    names = tuple(str(s) for s in summary) if isinstance(summary, list) else ()
    return m, names, blocked, latency_limits(doc)


def latency_limits(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per workload with a `latency_limit`, that table, by the workload's name as the
    plan names it (`fslab.study.plan.workload_name`)."""
    workloads = doc.get("workload")
    if not isinstance(workloads, list):
        return {}
    kinds = [str(w.get("kind", "block")) if isinstance(w, dict) else "" for w in workloads]
    out: dict[str, dict[str, Any]] = {}
    for i, w in enumerate(workloads):
        if not isinstance(w, dict) or not isinstance(w.get("latency_limit"), dict):
            continue
        kind = kinds[i]
        name = w.get("name") or (kind if kinds.count(kind) == 1 else f"{kind}{i + 1}")
        out[str(name)] = dict(w["latency_limit"])
    return out


def target_questions(con: sqlite3.Connection, study_id: int) -> dict[str, str]:
    """Per target with a `question` key, its question (the target as last planned)."""
    return {
        str(t): str(q)
        for t, q in con.execute(
            "SELECT target, json_extract(target_spec, '$.question') FROM point"
            " WHERE study_id = ? ORDER BY seq, id",
            (study_id,),
        )
        if isinstance(q, str)
    }


def id_span(ok: set[int]) -> tuple[int, int]:
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
        id_span(ok),
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
        " device_read_bytes, limits, disturbers, rep, foreign_cpu_pct, workload_write_bytes,"
        " dirty_rise_bytes FROM run_fact"
        " WHERE run_id BETWEEN ? AND ?",
        id_span(ok),
    ).fetchall()
    for row in rows:
        run_id, runtime_s, engine, intervals, dirty, reasons, drift, p = row[:8]
        available, workload_read, device_read, judged, named, rep, foreign = row[8:15]
        workload_write, dirty_rise = row[15:]
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
            available,
            workload_read,
            device_read,
            _disturbers(named),
            rep,
            foreign,
            workload_write,
            dirty_rise,
        )
        if judged != "{}":
            limits[run_id] = {str(k): float(v) for k, v in orjson.loads(judged).items()}
    return out, limits


def _disturbers(text: str) -> tuple[tuple[str, int, float, float], ...]:
    if text == "[]":
        return ()
    return tuple((str(n), int(p), float(s), float(c)) for n, p, s, c in orjson.loads(text))


def _warnings(text: str) -> tuple[tuple[str, str | None, str, str | None], ...]:
    if text == "[]":
        return ()
    return tuple((str(k), o, str(m), h) for k, o, m, h in orjson.loads(text))


def study_runs(con: sqlite3.Connection, study_id: int) -> list[RunRow]:
    """Every run of the study (any status), by id. Through the index on
    run(point_id, status) alone: `run` rows hold the engine's whole report, and reading
    100,000 of them costs seconds."""
    rows = con.execute(
        "SELECT run.id, run.point_id, run.status FROM point"
        " JOIN run INDEXED BY run_point ON run.point_id = point.id"
        " WHERE point.study_id = ?",
        (study_id,),
    ).fetchall()
    return list(map(RunRow._make, sorted(rows)))
