"""The results database: one SQLite file (WAL), schema in schema.sql, versioned by
`PRAGMA user_version` and migrated forward; a file from a newer fslab is refused.

Every point is committed as soon as it completes, so a study can be resumed, and every
side effect is journaled before it happens, so `fslab cleanup` can undo a killed run.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

from fslab.catalog import entry
from fslab.engine import Report
from fslab.errors import ExitStatus, FslabError
from fslab.stats.warnings import RunFacts
from fslab.store.derive import derive
from fslab.store.lock import WRITE_ELSEWHERE, unwritable
from fslab.store.migrations import MIGRATIONS, SCHEMA_VERSION
from fslab.store.query import run_facts

# (field of an engine series point, op stored): the series of an application model use
# its results' names (`data_read`, ...), as the `metric` table does.
_BLOCK_SERIES = (("read", "read"), ("write", "write"))
_APP_SERIES = (("read", "data_read"), ("write", "data_write"), ("log", "log_write"),
               ("txn", "txn"), ("background", "maintenance_read"))  # fmt: skip


class StoreError(FslabError):
    """The results database cannot be used: missing, not one, another program's, a newer
    fslab's, or damaged. The file given is at fault, as with a bad study: exit status 2."""

    exit_status = ExitStatus.USAGE


class StoreFull(FslabError):
    """The file system holding the results database is full: the study stops (nothing
    more can be stored), after tearing its targets down."""

    exit_status = ExitStatus.FAILED


RESERVE_BYTES = 32 << 20
"""Free space a run needs under the results database before it starts, so that none is
started only to find it cannot be stored: hundreds of times what one stores (two 10 s
block runs made a 176 KiB database here: report, histograms, series, telemetry)."""

_SQLITE_FULL = 13


def _full(e: sqlite3.Error) -> bool:
    return getattr(e, "sqlite_errorcode", None) == _SQLITE_FULL


@dataclass(frozen=True)
class JournalEntry:
    id: int
    run_id: int | None
    action: str
    subject: str
    details: dict[str, Any]
    state: str


def _schema_sql() -> str:
    return files("fslab.store").joinpath("schema.sql").read_text()


class ResultsWriter:
    """An open results database."""

    def __init__(self, con: sqlite3.Connection, path: Path) -> None:
        self.con = con
        self.path = path
        self.recorded: set[int] = set()
        """Journal entries this process wrote: the only ones a run may undo itself."""
        self.unmarked: dict[int, str] = {}
        """Journal entries whose new state (done, undone) could not be written (the disk
        was full): what happened happened; `fslab cleanup` finds them open and marks them
        once it can (undo is idempotent)."""

    @classmethod
    def open(cls, path: Path, *, create: bool = True) -> ResultsWriter:
        """Opens (with `create`, makes) the results database at `path`, migrating an older
        one forward. Raises StoreError for every file it cannot use as one: missing
        (without `create`), not SQLite, another program's SQLite, a newer fslab's, or
        damaged where opening reads."""
        if not path.exists() and not create:
            raise StoreError(
                f"{path}: no results database here",
                hint="run a study first: `fslab run STUDY.toml`, or pass `--results DB`",
            )
        if not path.parent.is_dir():
            raise StoreError(
                f"{path}: the directory `{path.parent}` does not exist",
                hint="create it, or pass `--results` with a path in an existing directory",
            )
        why = unwritable(path)
        if why is not None:
            raise StoreError(
                f"{path}: fslab cannot write this results database: {why}", hint=WRITE_ELSEWHERE
            )
        if not create and path.is_file() and path.stat().st_size == 0:
            # SQLite takes an empty file for a new database; only `create` may make one.
            raise StoreError(
                f"{path}: not a results database (the file is empty)",
                hint="pass `--results` with the database `fslab run` wrote",
            )
        try:
            con = sqlite3.connect(path, isolation_level=None, timeout=30)
            con.execute("PRAGMA journal_mode = WAL")
            con.execute("PRAGMA foreign_keys = ON")
            con.execute("PRAGMA synchronous = NORMAL")
            version = con.execute("PRAGMA user_version").fetchone()[0]
        except sqlite3.DatabaseError as e:
            raise StoreError(
                f"{path}: not a results database ({e})",
                hint="pass `--results` with another path",
            ) from e
        if version > SCHEMA_VERSION:
            con.close()
            raise StoreError(
                f"{path}: written by a newer fslab (schema {version}, this one reads up to "
                f"{SCHEMA_VERSION})",
                hint="upgrade fslab to read it",
            )
        db = cls(con, path)
        try:
            if version == 0:
                if con.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
                    con.close()
                    raise StoreError(
                        f"{path}: an SQLite file that is not a fslab results database",
                        hint="pass `--results` with another path",
                    )
                # executescript commits on its own, so the transaction is part of the script.
                con.executescript(
                    f"BEGIN;\n{_schema_sql()}\nPRAGMA user_version = {SCHEMA_VERSION};\nCOMMIT;"
                )
            else:
                for to in range(version + 1, SCHEMA_VERSION + 1):
                    with db.tx():
                        MIGRATIONS[to](con)
                        con.execute(f"PRAGMA user_version = {to}")
        except sqlite3.DatabaseError as e:
            con.close()
            raise ResultsWriter.damaged(path, str(e)) from e
        return db

    @staticmethod
    def damaged(path: Path, detail: str) -> StoreError:
        """The error for a results database SQLite finds damaged (`detail`: what it said)."""
        return StoreError(
            f"{path}: the results database is damaged ({detail})",
            hint=f'recover what it still holds with `sqlite3 {path} ".recover" | sqlite3 '
            "recovered.db` and pass `--results recovered.db`, or pass `--results` with "
            "another database",
        )

    def check_integrity(self) -> None:
        """Raises StoreError naming the first problems `PRAGMA quick_check` finds: pages
        that are damaged or lost, broken indexes. It reads the whole file, so a command
        that is about to write to the database calls it first, not every reader."""
        try:
            rows = [str(r[0]) for r in self.con.execute("PRAGMA quick_check(3)")]
        except sqlite3.DatabaseError as e:
            raise ResultsWriter.damaged(self.path, str(e)) from e
        if rows != ["ok"]:
            # A row may hold several lines, under a `*** in database main ***` heading.
            said = [s for r in rows for s in r.splitlines() if s and not s.startswith("***")]
            raise ResultsWriter.damaged(self.path, "; ".join(said[:3]))

    def close(self) -> None:
        self.con.close()

    @contextmanager
    def tx(self) -> Iterator[sqlite3.Connection]:
        """One write transaction. Raises `StoreFull` when the disk is full."""
        try:
            self.con.execute("BEGIN IMMEDIATE")
            try:
                yield self.con
                self.con.execute("COMMIT")
            except BaseException:
                if self.con.in_transaction:
                    with suppress(sqlite3.Error):
                        self.con.execute("ROLLBACK")
                raise
        except sqlite3.OperationalError as e:
            if _full(e):
                raise self.full() from e
            raise

    def free_bytes(self) -> int | None:
        """Free space on the file system holding the database (for an unprivileged user)."""
        try:
            st = os.statvfs(self.path.resolve().parent)
        except OSError:
            return None
        return st.f_bavail * st.f_frsize

    def full(self) -> StoreFull:
        """The error for a results database whose file system is full."""
        free = self.free_bytes()
        return StoreFull(
            f"{self.path}: the file system holding the results database is full"
            + (f" ({free >> 20} MiB free)" if free is not None else ""),
            hint="free space there (or move the results database with `--results`), then "
            "run `fslab cleanup` and the study again: what is stored so far stays",
        )

    def record_unmarked(self) -> None:
        """Writes the journal states a full disk kept from being written, where it can
        now (what is still left stays in `unmarked`)."""
        journal = self.journal(None)
        for entry_id, state in list(self.unmarked.items()):
            journal.set_state(entry_id, state)

    def check_space(self) -> None:
        """Raises `StoreFull` unless `RESERVE_BYTES` are free under the database."""
        free = self.free_bytes()
        if free is not None and free < RESERVE_BYTES:
            raise StoreFull(
                f"{self.path}: {free >> 20} MiB free on the file system holding the results "
                f"database, and a run needs {RESERVE_BYTES >> 20} MiB to store its results",
                hint="free space there (or move the results database with `--results`), "
                "then run the study again: what is stored so far stays",
            )

    # ------------------------------------------------------------------ studies, points

    def upsert_study(
        self, name: str, path: str | None, toml_text: str, design: str | None = None
    ) -> int:
        """The study's id, its text and `design` (`blocked`, or None: independent) as of
        this run. A study whose runs began independent stays so: its runs were not
        blocked, so they cannot be paired."""
        with self.tx() as c:
            row = c.execute("SELECT id, design FROM study WHERE name = ?", (name,)).fetchone()
            if row:
                done = c.execute(
                    "SELECT 1 FROM run JOIN point ON point.id = run.point_id"
                    " WHERE point.study_id = ? LIMIT 1",
                    (row[0],),
                ).fetchone()
                kept = row[1] if done else design
                c.execute(
                    "UPDATE study SET path = ?, toml = ?, design = ? WHERE id = ?",
                    (path, toml_text, kept, row[0]),
                )
                return int(row[0])
            cur = c.execute(
                "INSERT INTO study (name, path, toml, created_at, design) VALUES (?, ?, ?, ?, ?)",
                (name, path, toml_text, time.time(), design),
            )
            return int(cur.lastrowid or 0)

    def add_point(
        self,
        point_id: str,
        study_id: int,
        seq: int,
        target: str,
        workload: str,
        kind: str,
        target_spec: Mapping[str, Any],
        params: Mapping[str, Any],
    ) -> None:
        with self.tx() as c:
            c.execute(
                "INSERT INTO point (id, study_id, seq, target, workload, kind, target_spec, params)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, study_id = excluded.study_id,"
                " target_spec = excluded.target_spec",
                (point_id, study_id, seq, target, workload, kind,
                 json.dumps(target_spec, sort_keys=True), json.dumps(params, sort_keys=True)),
            )  # fmt: skip

    def add_look(
        self, study_id: int, round_: int, level: float, seed: int,
        rows: Iterable[tuple[str, str, int, str | None, float | None, float | None,
                             float | None, str]],
    ) -> None:  # fmt: skip
        """One look of adaptive repetition: per (point, op) its runs, verdict, ratio and
        interval, and its group's state (`fslab.stats.sequential`). A look taken again
        (a resumed study) replaces the earlier one."""
        at = time.time()
        with self.tx() as c:
            c.execute("DELETE FROM look WHERE study_id = ? AND round = ?", (study_id, round_))
            c.executemany(
                "INSERT INTO look (study_id, round, point_id, op, level, seed, runs, verdict,"
                " ratio, low, high, state, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(study_id, round_, *r[:2], level, seed, *r[2:], at) for r in rows],
            )

    def add_integrity(
        self, run_id: int, *, fault: str, region: str, outcome: str, errno: int | None,
        repaired_by: str | None, detail: Mapping[str, Any],
    ) -> None:  # fmt: skip
        """What the file system did with an integrity run's fault (`fslab.kinds.integrity`)."""
        with self.tx() as c:
            c.execute(
                "INSERT OR REPLACE INTO integrity VALUES (?, ?, ?, ?, ?, ?, ?)",
                (run_id, fault, region, outcome, errno, repaired_by,
                 json.dumps(detail, sort_keys=True, default=str)),
            )  # fmt: skip

    def add_ranks(
        self, run_id: int, ranks: Iterable[tuple[int, str, Report]], facts: Mapping[str, Any]
    ) -> None:
        """A multi-host run's ranks (each one's engine report) and how even they were
        (`ranks.*` run metrics: skew, span, imbalance, first and last done)."""
        with self.tx() as c:
            c.executemany(
                "INSERT OR REPLACE INTO rank VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(run_id, rank, host, str(r.status), r.start_unix_s + r.ramp_s, r.runtime_s,
                  sum(o.ios for o in r.results), sum(o.bytes for o in r.results),
                  r.model_dump_json(by_alias=True))
                 for rank, host, r in ranks],
            )  # fmt: skip
            self._run_metrics(c, run_id, {f"ranks.{k}": v for k, v in facts.items()
                                          if isinstance(v, int | float)})  # fmt: skip

    def run_time_s(self, study_id: int) -> float:
        """Seconds the study's runs took, start to end (provisioning included)."""
        row = self.con.execute(
            "SELECT sum(r.ended_at - r.started_at) FROM run r JOIN point p ON p.id = r.point_id"
            " WHERE p.study_id = ? AND r.ended_at IS NOT NULL",
            (study_id,),
        ).fetchone()
        return float(row[0] or 0.0)

    def done_reps(self, point_id: str) -> set[int]:
        rows = self.con.execute(
            "SELECT rep FROM run WHERE point_id = ? AND status = 'ok'", (point_id,)
        ).fetchall()
        return {int(r[0]) for r in rows}

    def block_facts(self, point_ids: Sequence[str], rep: int) -> list[RunFacts]:
        """What the completed runs of these points at repetition `rep` say about
        themselves: a blocked design's block (a group's targets in one round), whose runs
        are judged together (`fslab.stats.disturbance`)."""
        marks = ",".join("?" * len(point_ids))
        ids = {
            int(r[0])
            for r in self.con.execute(
                f"SELECT id FROM run WHERE status = 'ok' AND rep = ? AND point_id IN ({marks})",
                (rep, *point_ids),
            )
        }
        return list(run_facts(self.con, ids)[0].values())

    def environment_id(self, env: Mapping[str, Any]) -> int:
        key = json.dumps(env, sort_keys=True)
        h = hashlib.sha256(key.encode()).hexdigest()[:16]
        with self.tx() as c:
            row = c.execute("SELECT id FROM environment WHERE hash = ?", (h,)).fetchone()
            if row:
                return int(row[0])
            cur = c.execute(
                "INSERT INTO environment (hash, kernel, cpu_model, cores, mem_bytes, tools)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (h, env["kernel"], env["cpu_model"], env["cores"], env["mem_bytes"],
                 json.dumps(env.get("tools", {}), sort_keys=True)),
            )  # fmt: skip
            return int(cur.lastrowid or 0)

    # ------------------------------------------------------------------------- runs

    def start_run(self, point_id: str, rep: int, environment_id: int) -> int:
        """A new run of `point_id`; an earlier failed or interrupted run of the same
        repetition is replaced."""
        with self.tx() as c:
            old = c.execute(
                "SELECT id FROM run WHERE point_id = ? AND rep = ?", (point_id, rep)
            ).fetchone()
            if old:
                c.execute("UPDATE journal SET run_id = NULL WHERE run_id = ?", (old[0],))
                c.execute("DELETE FROM run WHERE id = ?", (old[0],))
            cur = c.execute(
                "INSERT INTO run (point_id, rep, status, started_at, environment_id)"
                " VALUES (?, ?, 'running', ?, ?)",
                (point_id, rep, time.time(), environment_id),
            )
            return int(cur.lastrowid or 0)

    def run_rates(self, run_id: int) -> list[tuple[str, float, float]]:
        """(op, iops, bw_bytes) of each operation a run stored, in the order stored: what
        the run's log line says it measured."""
        rows = self.con.execute(
            "SELECT op, iops, bw_bytes FROM metric WHERE run_id = ? ORDER BY rowid", (run_id,)
        )
        return [(str(op), float(iops), float(bw)) for op, iops, bw in rows]

    def set_effective(self, run_id: int, effective: Mapping[str, Any]) -> None:
        with self.tx() as c:
            c.execute(
                "UPDATE run SET effective = ? WHERE id = ?",
                (json.dumps(effective, sort_keys=True, default=str), run_id),
            )

    def finish_run(
        self,
        run_id: int,
        status: str,
        *,
        report: Report | None = None,
        reports: list[Report] | None = None,
        engine_json: str | None = None,
        error: str | None = None,
        runtime_s: float | None = None,
    ) -> None:
        """Ends a run. `report` is a block run's engine report (metrics and series);
        `reports` are a files run's, one per op (metrics only: their series overlap)."""
        runtime = runtime_s or (
            report.runtime_s if report else sum(r.runtime_s for r in reports or [])
        )
        with self.tx() as c:
            shape = None
            if engine_json is not None:
                (kind,) = c.execute(
                    "SELECT point.kind FROM run JOIN point ON point.id = run.point_id"
                    " WHERE run.id = ?",
                    (run_id,),
                ).fetchone()
                shape = entry(str(kind)).stored
            c.execute(
                "UPDATE run SET status = ?, ended_at = ?, engine_json = ?, engine_shape = ?,"
                " runtime_s = ?, error = ? WHERE id = ?",
                (status, time.time(), engine_json, shape, runtime or None, error, run_id),
            )
            for r in reports or []:
                self._metrics(c, run_id, r)
            if report is not None:
                self._metrics(c, run_id, report)
                self._series(c, run_id, report)
            derive(c, [run_id])

    @staticmethod
    def _series(c: sqlite3.Connection, run_id: int, report: Report) -> None:
        names = _APP_SERIES if entry(report.job.kind).model else _BLOCK_SERIES
        for p in report.series.points:
            for field, op in names:
                o = getattr(p, field, None)
                if o is None:
                    continue
                c.execute(
                    "INSERT INTO series VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (run_id, p.t_s, op, int(p.ramp), o.iops, o.bw_bytes, o.lat_mean_ns,
                     o.lat_p99_ns),
                )  # fmt: skip

    def add_metric(
        self, run_id: int, op: str, *, ios: int, iops: float, lat_ns: Mapping[str, float],
        bytes_: int = 0, bw_bytes: float = 0.0,
    ) -> None:  # fmt: skip
        """One operation's results measured by something other than the engine (pgbench's
        transactions): latencies in ns under the engine's names (`mean`, `p99`, ...); no
        HDR histogram (`hist` is empty)."""
        with self.tx() as c:
            metric_row(c, run_id, op, ios=ios, iops=iops, lat_ns=lat_ns, bytes_=bytes_,
                       bw_bytes=bw_bytes)  # fmt: skip
            derive(c, [run_id])

    @staticmethod
    def _metrics(c: sqlite3.Connection, run_id: int, report: Report) -> None:
        for r in report.results:
            lat = r.lat_ns
            c.execute(
                "INSERT INTO metric VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (run_id, r.op, r.ios, r.bytes, r.iops, r.bw_bytes, lat.min, lat.mean,
                 lat.stdev, lat.max, lat.p50, lat.p90, lat.p95, lat.p99, lat.p999,
                 lat.p9999, r.hist),
            )  # fmt: skip

    def store_telemetry(
        self, run_id: int, interval_s: float, data: Mapping[str, Any], metrics: Mapping[str, Any]
    ) -> None:
        """The sampler's series and its derived metrics (numbers only; None is left out)."""
        with self.tx() as c:
            c.execute(
                "INSERT OR REPLACE INTO telemetry VALUES (?, ?, ?)",
                (run_id, interval_s, json.dumps(data, default=str)),
            )
            self._run_metrics(c, run_id, metrics)
            derive(c, [run_id])

    def add_run_metrics(self, run_id: int, metrics: Mapping[str, Any]) -> None:
        """Run-level numbers besides telemetry's (an application model's verdict, ...)."""
        with self.tx() as c:
            self._run_metrics(c, run_id, metrics)
            derive(c, [run_id])

    @staticmethod
    def _run_metrics(c: sqlite3.Connection, run_id: int, metrics: Mapping[str, Any]) -> None:
        for name, value in metrics.items():
            if isinstance(value, bool):
                value = int(value)
            if isinstance(value, int | float):
                c.execute(
                    "INSERT OR REPLACE INTO run_metric VALUES (?, ?, ?)",
                    (run_id, name, float(value)),
                )

    def mark_stale_runs(self, status: str = "interrupted", error: str | None = None) -> int:
        """Runs left `running` by a killed fslab become `interrupted` (or `status`, with
        `error`: `failed` when a rank of a multi-host run died)."""
        with self.tx() as c:
            cur = c.execute(
                "UPDATE run SET status = ?, ended_at = ?, error = coalesce(?, error)"
                " WHERE status = 'running'",
                (status, time.time(), error),
            )
            return cur.rowcount

    # ---------------------------------------------------------------------- journal

    def journal(self, run_id: int | None) -> SQLiteJournal:
        return SQLiteJournal(self, run_id)

    def open_journal_entries(self) -> list[JournalEntry]:
        """Side effects not yet undone, newest first (the order to undo them in)."""
        rows = self.con.execute(
            "SELECT id, run_id, action, subject, details, state FROM journal"
            " WHERE state != 'undone' ORDER BY id DESC"
        ).fetchall()
        return [JournalEntry(int(r[0]), r[1], r[2], r[3], json.loads(r[4]), r[5]) for r in rows]


def metric_row(
    c: sqlite3.Connection, run_id: int, op: str, *, ios: int, iops: float,
    lat_ns: Mapping[str, float], bytes_: int = 0, bw_bytes: float = 0.0, hist: str = "",
) -> None:  # fmt: skip
    """One operation's `metric` row from results the engine did not measure (pgbench's,
    fio's own JSON): latencies in ns under the engine's names (`min`, `mean`, `p99`, ...,
    0 where absent), an HDR histogram where there is one."""
    names = ("min", "mean", "stdev", "max", "p50", "p90", "p95", "p99", "p999", "p9999")
    lat = {k: float(lat_ns.get(k, 0.0)) for k in names}
    c.execute(
        "INSERT INTO metric VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (run_id, op, ios, bytes_, iops, bw_bytes, round(lat["min"]), lat["mean"],
         lat["stdev"], round(lat["max"]), round(lat["p50"]), round(lat["p90"]),
         round(lat["p95"]), round(lat["p99"]), round(lat["p999"]), round(lat["p9999"]), hist),
    )  # fmt: skip


class SQLiteJournal:
    """`fslab.targets.journal.Journal` backed by the results database."""

    def __init__(self, db: ResultsWriter, run_id: int | None) -> None:
        self.db = db
        self.run_id = run_id

    def record(self, action: str, subject: str, details: dict[str, Any]) -> int:
        with self.db.tx() as c:
            cur = c.execute(
                "INSERT INTO journal (run_id, action, subject, details, state, created_at)"
                " VALUES (?, ?, ?, ?, 'pending', ?)",
                (self.run_id, action, subject, json.dumps(details, default=str), time.time()),
            )
            entry = int(cur.lastrowid or 0)
        self.db.recorded.add(entry)
        return entry

    def done(self, entry_id: int) -> None:
        self.set_state(entry_id, "done")

    def undone(self, entry_id: int) -> None:
        self.set_state(entry_id, "undone")

    def set_state(self, entry_id: int, state: str) -> None:
        # The side effect happened (or was reverted) whether or not this is written: a
        # full disk must not stop a teardown halfway. An entry left open is found by
        # `fslab cleanup`, whose undo of a thing already gone does nothing.
        try:
            with self.db.tx() as c:
                c.execute("UPDATE journal SET state = ? WHERE id = ?", (state, entry_id))
        except StoreFull:
            self.db.unmarked[entry_id] = state
        else:
            self.db.unmarked.pop(entry_id, None)


def made_filesystems(path: Path) -> dict[str, str | None]:
    """The file systems fslab made on `device` targets as the results database at `path`
    recorded them: UUID -> the SHA-256 of the token fslab wrote into each (none when there
    is no database yet). A claim to check on the device (`fstoken`), never proof: rows
    without a token prove nothing and are left out. Reads only."""
    if not path.exists():
        return {}
    db = ResultsWriter.open(path, create=False)
    try:
        rows = db.con.execute(
            "SELECT json_extract(details, '$.uuid'), json_extract(details, '$.token_sha256')"
            " FROM journal WHERE action = 'mkfs' AND json_extract(details, '$.kind') = 'device'"
        ).fetchall()
    finally:
        db.close()
    return {u: t for u, t in rows if isinstance(u, str) and isinstance(t, str) and u and t}
