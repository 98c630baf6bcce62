"""The results database: creation, forward migration, refusals, the journal."""

from __future__ import annotations

import csv
import io
import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from conftest import undisturbed

from fslab.catalog import compared
from fslab.compare import build_comparison
from fslab.metrics import CPU_PER_OP, CPU_SHARE
from fslab.report.render import render_csv
from fslab.store.db import SCHEMA_VERSION, ResultsWriter, StoreError
from fslab.store.derive import derive


def test_a_new_database_has_the_current_schema(tmp_path: Path) -> None:
    db = ResultsWriter.open(tmp_path / "r.db")
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
        "look",
        "integrity",
        "rank",
    } <= tables


def _make_v1(path: Path) -> None:
    """A version-1 file: today's schema without what version 2 added."""
    db = ResultsWriter.open(path)
    db.upsert_study("old study", "s.toml", "name = 'old study'")
    db.close()
    con = sqlite3.connect(path)
    con.executescript(
        "DROP TABLE run_fact; DROP TABLE run_value; DROP TABLE value_layout;"
        " DROP TABLE run_metric; DROP TABLE telemetry; DROP TABLE look; DROP TABLE integrity;"
        " DROP TABLE rank; ALTER TABLE study DROP COLUMN design;"
        " ALTER TABLE run DROP COLUMN engine_shape; ALTER TABLE run DROP COLUMN origin_id;"
        " DROP TABLE origin; PRAGMA user_version = 1;"
    )
    con.close()


def test_a_version_1_file_is_migrated_forward_intact(tmp_path: Path) -> None:
    path = tmp_path / "v1.db"
    _make_v1(path)
    db = ResultsWriter.open(path)
    try:
        version = db.con.execute("PRAGMA user_version").fetchone()[0]
        assert version == SCHEMA_VERSION
        assert db.con.execute("SELECT name FROM study").fetchall() == [("old study",)]
        db.con.execute("SELECT run_id, name, value FROM run_metric").fetchall()
    finally:
        db.close()


def test_a_newer_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    ResultsWriter.open(path).close()
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    con.close()
    with pytest.raises(StoreError, match="newer fslab") as e:
        ResultsWriter.open(path)
    assert e.value.hint == "upgrade fslab to read it"


def test_a_foreign_sqlite_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (x)")
    con.close()
    with pytest.raises(StoreError, match="not a fslab results database"):
        ResultsWriter.open(path)


def test_missing_database_without_create(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no results database"):
        ResultsWriter.open(tmp_path / "none.db", create=False)
    assert not (tmp_path / "none.db").exists()


def test_journal_entries_are_open_until_undone(tmp_path: Path) -> None:
    db = ResultsWriter.open(tmp_path / "r.db")
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


# -- files written by earlier releases -----------------------------------------------------
# tests/data/results-v2.db: real runs of every workload kind (block, files, oltp,
# mailstore, pgbench) on ext4 and xfs loop devices, three repetitions each, at schema
# version 2 (the study: results-v2.toml); results-v2.compare.csv: what that release's
# `fslab compare --format csv` printed for it.
DATA = Path(__file__).parent / "data"


def _copy_of(name: str, tmp_path: Path) -> Path:
    path = tmp_path / name
    shutil.copyfile(DATA / name, path)
    return path


def _read_csv(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def test_a_version_2_file_of_real_runs_compares_as_the_release_that_wrote_it(
    tmp_path: Path,
) -> None:
    path = undisturbed(_copy_of("results-v2.db", tmp_path))
    # The catalog has since gained the workload's own CPU (version 4) and its CPU per
    # operation (version 5): new rows, which the release that wrote the file did not
    # compare.
    new = {"workload_cpu_pct_avg", "workload_cpu_ns_per_op"}
    got = [r for r in _read_csv(render_csv(build_comparison(path))) if r["metric"] not in new]
    want = _read_csv((DATA / "results-v2.compare.csv").read_text())
    assert len(got) == len(want) > 300
    kinds = {row["kind"] for row in want}
    assert kinds == {"block", "files", "oltp", "mailstore", "pgbench"}
    # The comparison with the baseline changed meaning since (Welch's test of the means,
    # then the decision rule of compare JSON v3): the summaries must not have.
    changed = {"delta_pct", "p_value", "verdict"}
    for g, w in zip(got, want, strict=True):
        assert set(w) - changed <= set(g)
        for key, value in w.items():
            if key in changed:
                continue
            try:
                expected = float(value)
            except ValueError:
                assert g[key] == value, (key, w)
                continue
            assert float(g[key]) == pytest.approx(expected, rel=1e-9, abs=1e-12), (key, w)


def test_the_runs_of_a_busy_machine_are_not_counted_and_say_so(tmp_path: Path) -> None:
    c = build_comparison(_copy_of("results-v2.db", tmp_path))
    assert c.skipped_runs == {"disturbed": 31}
    assert sum(n for g in c.groups for n in g.runs.values()) == 36 - 31


def test_a_migrated_file_has_the_tables_of_a_new_one(tmp_path: Path) -> None:
    old = _copy_of("results-v2.db", tmp_path)
    ResultsWriter.open(old, create=False).close()
    ResultsWriter.open(tmp_path / "new.db").close()

    def layout(path: Path) -> dict[str, list[tuple[str, str, int, int]]]:
        con = sqlite3.connect(path)
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        out = {
            t: [(r[1], r[2], r[3], r[5]) for r in con.execute(f"PRAGMA table_info({t})")]
            for t in tables
        }
        con.close()
        return out

    assert layout(old) == layout(tmp_path / "new.db")


def test_a_migration_derives_what_compare_reads_for_every_completed_run(
    tmp_path: Path,
) -> None:
    path = _copy_of("results-v2.db", tmp_path)
    db = ResultsWriter.open(path, create=False)
    try:
        ok = db.con.execute("SELECT count(*) FROM run WHERE status = 'ok'").fetchone()[0]
        values = db.con.execute("SELECT count(*) FROM run_value").fetchone()[0]
        facts = db.con.execute("SELECT count(*) FROM run_fact").fetchone()[0]
        assert ok == values == facts == 36
        # Deriving again gives the same rows: the store and the migration share `derive`.
        before = db.con.execute("SELECT * FROM run_value ORDER BY run_id").fetchall()
        with db.tx() as c:
            derive(c)
        assert db.con.execute("SELECT * FROM run_value ORDER BY run_id").fetchall() == before
    finally:
        db.close()


def test_a_version_1_file_of_real_runs_migrates_and_compares(tmp_path: Path) -> None:
    path = _copy_of("results-v2.db", tmp_path)
    con = sqlite3.connect(path)
    con.executescript("DROP TABLE run_metric; DROP TABLE telemetry; PRAGMA user_version = 1;")
    con.close()
    comparison = build_comparison(path)
    ops = {r.op for g in comparison.groups for r in g.rows}
    assert {"read", "write", "copy", "txn"} <= ops
    assert not any(op.endswith("device") for op in ops), "version 1 had no telemetry"


def test_the_workloads_cpu_per_op_is_its_share_over_its_rate() -> None:
    def per_op(kind: str, ops: dict[str, float], shares: dict[str, float]) -> dict[str, float]:
        rows = [(op, {"iops": iops}) for op, iops in ops.items()]
        got = compared(kind, rows, list(shares.items()))
        return {op: v for op, name, v in got if name == CPU_PER_OP}

    # a block run: half a CPU over 2,000 reads and writes a second is 250 us per I/O
    assert per_op("block", {"read": 1000, "write": 1000}, {CPU_SHARE: 50.0}) == {
        "device": pytest.approx(250_000)
    }
    # a files run: each op's CPU over its own files/s
    got = per_op("files", {"copy": 100, "scan": 1000},
                 {f"copy.{CPU_SHARE}": 20.0, f"scan.{CPU_SHARE}": 10.0})  # fmt: skip
    assert got == {"copy device": pytest.approx(2e6), "scan device": pytest.approx(1e5)}
    # an application: per transaction, not per page read
    assert per_op("oltp", {"txn": 500, "data_read": 5000}, {CPU_SHARE: 100.0}) == {
        "device": pytest.approx(2e6)
    }
    # nothing done, nothing to divide by
    assert per_op("block", {"read": 0}, {CPU_SHARE: 5.0}) == {}


def test_a_files_runs_disturbers_are_summed_over_its_ops() -> None:
    """A files run stores one telemetry per op; who disturbed it is named once, its CPU
    seconds summed over the ops, the most first."""
    from fslab.store.derive import _disturbers

    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE telemetry (run_id INTEGER, interval_s REAL, data TEXT)")
    ops = {
        "copy": {"disturbers": [{"name": "cc1", "pid": 9, "cpu_s": 1.0, "cpu_pct": 40.0}]},
        "scan": {"disturbers": [{"name": "cc1", "pid": 9, "cpu_s": 0.5, "cpu_pct": 60.0},
                                {"name": "sh", "pid": 3, "cpu_s": 2.0, "cpu_pct": 20.0}]},
    }  # fmt: skip
    con.execute("INSERT INTO telemetry VALUES (1, 1.0, ?)", (json.dumps(ops),))
    block = {"series": [], "disturbers": [{"name": "x", "pid": 5, "cpu_s": 1, "cpu_pct": 90}]}
    con.execute("INSERT INTO telemetry VALUES (2, 1.0, ?)", (json.dumps(block),))
    assert _disturbers(con, 1) == [["sh", 3, 2.0, 20.0], ["cc1", 9, 1.5, 60.0]]
    assert _disturbers(con, 2) == [["x", 5, 1.0, 90.0]]
    assert _disturbers(con, 3) == []


OLD_FIO_DOCUMENT = {
    "files": ["j.fio"], "status": "ok", "groups": [], "inert": [],
    "jobs": [{"name": "quick", "place": "j.fio:1", "phase": 0, "group": 0, "error": None,
              "report": {"job": {"name": "quick"}, "series": {"points": []},
                         "warnings": [{"kind": "short_run", "hint": None,
                                       "message": "the measured part took 0.050 s"}]}}],
}  # fmt: skip
"""What a fio run stored before version 13: the engine's job-file document, each job's
report (cut to what the warnings read) under `jobs`."""


def _a_run(db: ResultsWriter, kind: str, engine_json: str) -> int:
    study = db.upsert_study("s", "s.toml", "name = 's'")
    db.add_point(f"p-{kind}", study, 0, "t", "w", kind, {"name": "t"}, {})
    env = {"kernel": "6.18", "cpu_model": "test", "cores": 2, "mem_bytes": 1 << 30}
    run_id = db.start_run(f"p-{kind}", 0, db.environment_id(env))
    db.finish_run(run_id, "ok", engine_json=engine_json, runtime_s=1.0)
    return run_id


def test_each_run_says_what_its_engine_json_holds(tmp_path: Path) -> None:
    db = ResultsWriter.open(tmp_path / "r.db")
    try:
        shapes = {
            kind: _a_run(db, kind, "{}")
            for kind in ("block", "files", "pgbench", "integrity", "fio", "oltp")
        }
        got = dict(db.con.execute(
            "SELECT point.kind, run.engine_shape FROM run JOIN point ON point.id = run.point_id"
        ).fetchall())  # fmt: skip
    finally:
        db.close()
    assert set(got) == set(shapes)
    assert got == {"block": "report", "files": "reports", "pgbench": "pgbench",
                   "integrity": "integrity", "fio": "report", "oltp": "report"}  # fmt: skip


def test_an_old_fio_run_is_named_for_its_document_and_its_jobs_warnings_reach_compare(
    tmp_path: Path,
) -> None:
    path = tmp_path / "r.db"
    db = ResultsWriter.open(path)
    try:
        run_id = _a_run(db, "fio", json.dumps(OLD_FIO_DOCUMENT))
    finally:
        db.close()
    con = sqlite3.connect(path)
    con.executescript(
        "UPDATE run_fact SET engine_warnings = '[]';"  # as version 12 derived it
        " ALTER TABLE run DROP COLUMN engine_shape; ALTER TABLE run DROP COLUMN origin_id;"
        " DROP TABLE origin; PRAGMA user_version = 12;"
    )
    con.close()
    db = ResultsWriter.open(path, create=False)  # migrates
    try:
        shape = db.con.execute("SELECT engine_shape FROM run WHERE id = ?", (run_id,)).fetchone()
        said = db.con.execute(
            "SELECT engine_warnings FROM run_fact WHERE run_id = ?", (run_id,)
        ).fetchone()
    finally:
        db.close()
    assert shape == ("fio_file",)
    assert json.loads(said[0]) == [
        ["short_run", None, "[quick] the measured part took 0.050 s", None]
    ]


_ADDED = {
    14: "ALTER TABLE run DROP COLUMN origin_id; DROP TABLE origin;",
    13: "ALTER TABLE run DROP COLUMN engine_shape;",
    12: "ALTER TABLE run_fact DROP COLUMN workload_write_bytes;"
    " ALTER TABLE run_fact DROP COLUMN dirty_rise_bytes;",
    11: "ALTER TABLE run_fact DROP COLUMN foreign_cpu_pct;",
    10: "ALTER TABLE study DROP COLUMN design; ALTER TABLE run_fact DROP COLUMN rep;",
    9: "ALTER TABLE run_fact DROP COLUMN disturbers;",
    8: "DROP TABLE rank;",
    7: "DROP TABLE integrity;",
    6: "DROP TABLE look;",
    5: "",  # versions 4 and 5 changed no table: they derived new metrics' values again
    4: "",
    3: "DROP TABLE run_fact; DROP TABLE run_value; DROP TABLE value_layout;",
}
"""What each version added, undone: a file of every older version, made from a new one."""


def test_the_versions_are_all_undone_here() -> None:
    assert set(_ADDED) == set(range(3, SCHEMA_VERSION + 1))


@pytest.mark.parametrize("version", range(2, SCHEMA_VERSION))
def test_a_file_of_every_older_version_migrates_forward_and_compares_alike(
    tmp_path: Path, version: int
) -> None:
    current = _copy_of("results-v2.db", tmp_path)
    ResultsWriter.open(current, create=False).close()
    older = tmp_path / f"v{version}.db"
    shutil.copyfile(current, older)
    con = sqlite3.connect(older)
    con.executescript(
        "".join(_ADDED[v] for v in range(SCHEMA_VERSION, version, -1))
        + f" PRAGMA user_version = {version};"
    )
    con.close()
    assert render_csv(build_comparison(older)) == render_csv(build_comparison(current))
    got = sqlite3.connect(older)
    try:
        assert got.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    finally:
        got.close()
