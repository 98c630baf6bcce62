"""Forward migrations of the results database: `MIGRATIONS[n]` turns version n-1 into n.

Version 1 is schema.sql as first released. Each later change to schema.sql adds a
migration here and bumps `db.SCHEMA_VERSION`; tests/test_store.py opens a file of every
older version and checks it arrives intact.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from fslab.store.derive import SCHEMA_V3, derive


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


def _to_3(con: sqlite3.Connection) -> None:
    """What compare needs of each completed run, derived once (`fslab.store.derive`)."""
    for statement in SCHEMA_V3.split(";"):
        if statement.strip():
            con.execute(statement)
    derive(con)


MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {2: _to_2, 3: _to_3}
