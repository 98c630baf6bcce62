"""The results database: creation, forward migration, refusals, the journal."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from fslab.store.db import SCHEMA_VERSION, Results, StoreError


def test_a_new_database_has_the_current_schema(tmp_path: Path) -> None:
    db = Results.open(tmp_path / "r.db")
    db.close()
    con = sqlite3.connect(tmp_path / "r.db")
    assert con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {
        "study",
        "point",
        "run",
        "metric",
        "series",
        "journal",
        "telemetry",
        "run_metric",
    } <= tables


def _make_v1(path: Path) -> None:
    """A version-1 file: today's schema without what version 2 added."""
    db = Results.open(path)
    db.upsert_study("old study", "s.toml", "name = 'old study'")
    db.close()
    con = sqlite3.connect(path)
    con.executescript("DROP TABLE run_metric; DROP TABLE telemetry; PRAGMA user_version = 1;")
    con.close()


def test_a_version_1_file_is_migrated_forward_intact(tmp_path: Path) -> None:
    path = tmp_path / "v1.db"
    _make_v1(path)
    db = Results.open(path)
    try:
        version = db.con.execute("PRAGMA user_version").fetchone()[0]
        assert version == SCHEMA_VERSION
        assert db.con.execute("SELECT name FROM study").fetchall() == [("old study",)]
        db.con.execute("SELECT run_id, name, value FROM run_metric").fetchall()
    finally:
        db.close()


def test_a_newer_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    Results.open(path).close()
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    con.close()
    with pytest.raises(StoreError, match="newer fslab") as e:
        Results.open(path)
    assert e.value.hint == "upgrade fslab to read it"


def test_a_foreign_sqlite_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (x)")
    con.close()
    with pytest.raises(StoreError, match="not a fslab results database"):
        Results.open(path)


def test_missing_database_without_create(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no results database"):
        Results.open(tmp_path / "none.db", create=False)
    assert not (tmp_path / "none.db").exists()


def test_journal_entries_are_open_until_undone(tmp_path: Path) -> None:
    db = Results.open(tmp_path / "r.db")
    try:
        j = db.journal(None)
        a = j.record("image", "/x/img", {"size": 1})
        b = j.record("loop", "/dev/loop9", {"image": "/x/img"})
        j.done(a)
        assert [e.id for e in db.open_journal_entries()] == [b, a], "newest first"
        j.undone(b)
        j.undone(a)
        assert db.open_journal_entries() == []
    finally:
        db.close()
