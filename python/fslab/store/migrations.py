"""Forward migrations of the results database: `MIGRATIONS[n]` turns version n-1 into n.

Version 1 is schema.sql as first released. Each later change to schema.sql adds a
migration here and bumps `db.SCHEMA_VERSION`; tests/test_store.py opens a file of every
older version and checks it arrives intact.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from fslab.catalog import entry
from fslab.store.derive import derive, foreign_cpu_pct


def _to_2(con: sqlite3.Connection) -> None:
    """Telemetry: the sampler's series per run and the metrics derived from it."""
    con.execute(
        "CREATE TABLE telemetry (run_id INTEGER PRIMARY KEY REFERENCES run(id) ON DELETE CASCADE,"
        " interval_s REAL NOT NULL, data TEXT NOT NULL) STRICT"
    )
    con.execute(
        "CREATE TABLE run_metric (run_id INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,"
        " name TEXT NOT NULL, value REAL NOT NULL, PRIMARY KEY (run_id, name)) STRICT"
    )


_V3 = """
CREATE TABLE value_layout (
    id          INTEGER PRIMARY KEY,
    keys        TEXT NOT NULL UNIQUE    -- JSON [[op, metric], ...]: what run_value.data holds
) STRICT;
CREATE TABLE run_value (
    run_id      INTEGER PRIMARY KEY REFERENCES run(id) ON DELETE CASCADE,
    layout_id   INTEGER NOT NULL REFERENCES value_layout(id),
    data        BLOB NOT NULL           -- float64 little-endian, one per layout key
) STRICT;
CREATE TABLE run_fact (
    run_id      INTEGER PRIMARY KEY REFERENCES run(id) ON DELETE CASCADE,
    runtime_s   REAL,                   -- run.runtime_s, here so compare never reads `run`
    intervals   INTEGER NOT NULL,
    contaminated_intervals INTEGER NOT NULL,
    reasons     TEXT NOT NULL,          -- comma-separated: foreign_cpu, steal, memory_pressure
    available_min_bytes REAL,
    workload_read_bytes REAL,
    device_read_bytes REAL,
    trend_drift REAL,
    trend_p     REAL,
    engine_warnings TEXT NOT NULL,      -- JSON [[kind, op or null, message, hint or null], ...]
    limits      TEXT NOT NULL           -- JSON {check: max}: what a verdict judged by (ms)
) STRICT;
DROP INDEX run_point;
CREATE INDEX run_point ON run(point_id, status);
"""
"""The tables version 3 adds, as they were then: a migration keeps its own DDL (schema.sql
moves on; tests/test_store.py checks a migrated file against a new one)."""


def _to_3(con: sqlite3.Connection) -> None:
    """What compare needs of each completed run, derived once (`fslab.store.derive`): the
    tables here, their rows by `_to_4`, which every file of version 2 goes on to (one
    derivation, not two: it is most of a migration's time)."""
    for statement in _V3.split(";"):
        if statement.strip():
            con.execute(statement)


def _to_4(con: sqlite3.Connection) -> None:
    """The metric catalog gained the workload's own CPU (`workload_cpu_pct_avg`, stored
    since version 2): the compared values again, by `_to_5`. No table changes."""


def _to_5(con: sqlite3.Connection) -> None:
    """The compared values again: the catalog gained the workload's CPU per operation
    (`workload_cpu_ns_per_op`, from what version 2 stored). No table changes."""
    derive(con)


def _to_6(con: sqlite3.Connection) -> None:
    """Adaptive repetition's looks (`look`); an older study has none. The facts again:
    what the devices read now counts the disk under a loop image (`fslab.store.derive`)."""
    con.execute(_V6)
    derive(con)


_V6 = """CREATE TABLE look (
    study_id    INTEGER NOT NULL REFERENCES study(id),
    round       INTEGER NOT NULL,   -- rounds done at this look (1-based)
    point_id    TEXT NOT NULL REFERENCES point(id),
    op          TEXT NOT NULL,      -- the headline row's operation ('' for a row-less point)
    level       REAL NOT NULL,      -- alpha of each look: the study's alpha / looks planned
    seed        INTEGER NOT NULL,   -- the rounds' random order
    runs        INTEGER NOT NULL,   -- completed runs of the point at this look
    verdict     TEXT,      -- better, worse, equivalent, inconclusive, none (NULL: baseline)
    ratio       REAL,
    low         REAL,
    high        REAL,
    state       TEXT NOT NULL,      -- the group's: open | decided | undecidable | alone | budget
    at          REAL NOT NULL,      -- unix seconds
    PRIMARY KEY (study_id, round, point_id, op)
) STRICT;
"""


def _to_7(con: sqlite3.Connection) -> None:
    """Integrity runs' outcomes (`integrity`); an older study has none."""
    con.execute(_V7)


_V7 = """CREATE TABLE integrity (
    run_id      INTEGER PRIMARY KEY REFERENCES run(id) ON DELETE CASCADE,
    fault       TEXT NOT NULL,
    region      TEXT NOT NULL,
    outcome     TEXT NOT NULL,
    errno       INTEGER,
    repaired_by TEXT,
    detail      TEXT NOT NULL
) STRICT;
"""


def _to_8(con: sqlite3.Connection) -> None:
    """Multi-host runs' ranks (`rank`); an older study ran on one host."""
    con.execute(_V8)


_V8 = """CREATE TABLE rank (
    run_id      INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
    rank        INTEGER NOT NULL,
    host        TEXT NOT NULL,
    status      TEXT NOT NULL,
    start_unix_s REAL NOT NULL,
    runtime_s   REAL NOT NULL,
    ios         INTEGER NOT NULL,
    bytes       INTEGER NOT NULL,
    report      TEXT NOT NULL,
    PRIMARY KEY (run_id, rank)
) STRICT;
"""


def _to_9(con: sqlite3.Connection) -> None:
    """Who disturbed a run (`run_fact.disturbers`); older series named nobody."""
    con.execute("ALTER TABLE run_fact ADD COLUMN disturbers TEXT NOT NULL DEFAULT '[]'")


def _to_10(con: sqlite3.Connection) -> None:
    """A blocked design (`study.design`; an older study's runs were not blocked: NULL) and
    each completed run's round or pass (`run_fact.rep`), what a blocked design pairs by."""
    con.execute("ALTER TABLE study ADD COLUMN design TEXT")
    con.execute("ALTER TABLE run_fact ADD COLUMN rep INTEGER")
    con.execute("UPDATE run_fact SET rep = (SELECT rep FROM run WHERE run.id = run_fact.run_id)")


def _to_11(con: sqlite3.Connection) -> None:
    """The CPU other processes used over each completed run (`run_fact.foreign_cpu_pct`),
    from the telemetry summary it stored: what a blocked design judges disturbance by."""
    con.execute("ALTER TABLE run_fact ADD COLUMN foreign_cpu_pct REAL")
    by_run: dict[int, list[tuple[str, float]]] = {}
    for run_id, name, value in con.execute(
        "SELECT run_id, name, value FROM run_metric"
        " WHERE name LIKE '%intervals' OR name LIKE '%foreign_cpu_pct_avg'"
    ):
        by_run.setdefault(int(run_id), []).append((str(name), float(value)))
    con.executemany(
        "UPDATE run_fact SET foreign_cpu_pct = ? WHERE run_id = ?",
        ((foreign_cpu_pct(m), r) for r, m in by_run.items()),
    )


def _to_12(con: sqlite3.Connection) -> None:
    """What a run wrote and how far dirty memory rose while it did (`run_fact.
    workload_write_bytes`, `dirty_rise_bytes`): direct writes that went through the page
    cache. Runs stored before this version keep NULL: their telemetry covered the layout
    of their files, whose buffered writes would read as the run's own."""
    con.execute("ALTER TABLE run_fact ADD COLUMN workload_write_bytes REAL")
    con.execute("ALTER TABLE run_fact ADD COLUMN dirty_rise_bytes REAL")


def _to_13(con: sqlite3.Connection) -> None:
    """What `run.engine_json` holds, said (`run.engine_shape`) instead of guessed: its
    kind's (`fslab.catalog.Entry.stored`), except a fio run stored before its measured
    jobs were stored as one report, which kept the engine's job-file document
    (`fio_file`: each job's report, under `jobs`)."""
    con.execute("ALTER TABLE run ADD COLUMN engine_shape TEXT")
    kinds = [str(k) for (k,) in con.execute("SELECT DISTINCT kind FROM point")]
    for kind in kinds:
        con.execute(
            "UPDATE run SET engine_shape = ? WHERE engine_json IS NOT NULL"
            " AND point_id IN (SELECT id FROM point WHERE kind = ?)",
            (entry(kind).stored, kind),
        )
    con.execute(
        "UPDATE run SET engine_shape = 'fio_file' WHERE engine_shape = 'report'"
        " AND json_valid(engine_json) AND json_type(engine_json, '$.jobs') = 'array'"
    )
    # Their warnings were read from a top-level `warnings` they do not have: read again.
    derive(con, [int(r) for (r,) in con.execute(
        "SELECT id FROM run WHERE engine_shape = 'fio_file'")])  # fmt: skip


def _to_14(con: sqlite3.Connection) -> None:
    """Imported runs (`fslab import`): where each came from (`origin`, `run.origin_id`);
    every run before was measured into its own database."""
    con.execute(
        "CREATE TABLE origin (id INTEGER PRIMARY KEY, label TEXT, source TEXT NOT NULL,"
        " imported_at REAL NOT NULL) STRICT"
    )
    con.execute("ALTER TABLE run ADD COLUMN origin_id INTEGER")


MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {
    2: _to_2, 3: _to_3, 4: _to_4, 5: _to_5, 6: _to_6, 7: _to_7, 8: _to_8, 9: _to_9,
    10: _to_10, 11: _to_11, 12: _to_12, 13: _to_13, 14: _to_14,
}  # fmt: skip

SCHEMA_VERSION = max(MIGRATIONS)
"""The layout this fslab writes and reads (`PRAGMA user_version`)."""
