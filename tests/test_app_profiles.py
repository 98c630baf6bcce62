"""The engine's application models as study workloads (`kind = "oltp"`, `"mailstore"`):
parsing and scaling, the jobs the lab makes, and a study run through the lab whose
verdicts come out PASS and FAIL in `fslab compare`."""

from __future__ import annotations

import csv
import io
import sqlite3
from pathlib import Path

import pytest
from conftest import fslab

from fslab.compare import build_comparison
from fslab.engine import IntervalOp, SeriesPoint, run_job
from fslab.kinds.app import app_metrics
from fslab.report.job_summary import live_summary, progress_line, stored_summary
from fslab.study.load import StudyError, parse_study
from fslab.study.plan import expand

STUDY = """
name = "apps"

[[target]]
name = "a"
dir = "{a}"

[[target]]
name = "b"
dir = "{b}"

[[workload]]
kind = "mailstore"
name = "store"
threads = 2
runtime = "{runtime}"
data_size = "64MiB"
log_size = "4MiB"
cache_size = "{cache}"
read_lat_ms_max = {read_max}

[[workload]]
kind = "oltp"
name = "db"
threads = [1, 4]
runtime = "{runtime}"
data_size = "64MiB"
log_size = "4MiB"
checkpoint_interval = "1s"
"""


def study_text(
    a: str = "/x/a", b: str = "/x/b", runtime: str = "30s", cache: str = "16MiB",
    read_max: str = "20",
) -> str:  # fmt: skip
    return STUDY.format(a=a, b=b, runtime=runtime, cache=cache, read_max=read_max)


def problems(text: str) -> list[str]:
    with pytest.raises(StudyError) as e:
        parse_study(text, "s.toml")
    return [f"{p.where}: {p.what}" for p in e.value.problems]


def test_app_workloads_expand_into_engine_jobs() -> None:
    plan = expand(parse_study(study_text(read_max="[20, 0.5]"), "s.toml"))
    kinds = [(p.target.name, p.workload, p.kind) for p in plan.points]
    assert kinds == [
        ("a", "store", "mailstore"), ("a", "store", "mailstore"),
        ("a", "db", "oltp"), ("a", "db", "oltp"),
        ("b", "store", "mailstore"), ("b", "store", "mailstore"),
        ("b", "db", "oltp"), ("b", "db", "oltp"),
    ]  # fmt: skip
    [job] = plan.points[0].engine_jobs(Path("/t"))
    assert job == {
        "kind": "mailstore", "name": "fslab", "directory": "/t", "ioengine": "sync",
        "numjobs": 2, "runtime": 30.0, "ramp_time": 0.0, "data_size": 64 << 20,
        "log_size": 4 << 20, "cache_size": 16 << 20, "read_lat_ms_max": 20,
        "steady_state": True,  # 30 s holds a window of 5 rounds of 1 s (its checkpoints)
    }  # fmt: skip
    assert plan.points[1].params["read_lat_ms_max"] == 0.5
    [oltp] = plan.points[3].engine_jobs(Path("/t"))
    assert oltp["kind"] == "oltp" and oltp["numjobs"] == 4 and oltp["checkpoint_interval"] == 1.0
    assert "cache_size" not in oltp, "the oltp model's cache defaults to the engine's (none)"
    assert plan.points[3].label() == "a db x4"


def test_scale_shrinks_data_log_cache_runtime_and_checkpoints_together() -> None:
    text = study_text(cache="32MiB").replace('data_size = "64MiB"', 'data_size = "1GiB"')
    plan = expand(parse_study(text, "s.toml"), scale=0.1)
    store, db = plan.points[0].params, plan.points[1].params
    # 30 s x 0.1 is 3 s, under one steady window (5 rounds of its 1 s checkpoints): kept.
    assert store["data_size"] == 102 << 20 and store["runtime"] == 5.0
    # The cache keeps its share of the data file: the hit ratio is what it was.
    assert store["cache_size"] / store["data_size"] == pytest.approx(32 / 1024, rel=0.01)
    assert store["log_size"] == 1 << 20, "the engine's least log"
    assert db["checkpoint_interval"] == 0.5, "a floor, so a short run still checkpoints"


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("threads = 2", "threads = 2\nop_mix = [40, 20, 5]", "is not an op mix"),
        ("threads = 2", "threads = 2\nop_mix = [40, 20, 5, -1]", "is not an op mix"),
        ("threads = 2", 'threads = 2\nioengine = "io_uring"', "ioengine"),
        ('checkpoint_interval = "1s"', 'checkpoint_interval = "1s"\nop_mix = [1, 1, 1, 1]',
         "op_mix"),
    ],
)  # fmt: skip
def test_bad_app_keys_are_named(old: str, new: str, expected: str) -> None:
    text = study_text()
    assert old in text
    found = problems(text.replace(old, new))
    assert any(expected in p for p in found), found


def test_op_mix_is_one_value_and_a_list_of_them_a_sweep() -> None:
    text = study_text().replace(
        "threads = 2", "threads = 2\nop_mix = [[40, 20, 5, 35], [0, 0, 0, 1]]"
    )
    plan = expand(parse_study(text, "s.toml"))
    mixes = [p.params["op_mix"] for p in plan.points if p.kind == "mailstore"]
    assert mixes == [[40.0, 20.0, 5.0, 35.0], [0.0, 0.0, 0.0, 1.0]] * 2


@pytest.mark.engine
def test_app_metrics_keep_the_verdict_and_jetstress_in_base_units(tmp_path: Path) -> None:
    """What a real mailstore run reports becomes run metrics: latencies in ns, the
    verdict with its limits, the model's facts without the final flush."""
    job = {"kind": "mailstore", "directory": str(tmp_path), "ioengine": "sync",
           "direct": False, "data_size": "16MiB", "log_size": "1MiB", "cache_size": "1MiB",
           "runtime": "1.5s", "checkpoint_interval": "0.5s",
           "read_lat_ms_max": 0.000001}  # fmt: skip
    run = run_job(job)
    assert run.exit_code == 0, run.stderr
    app = run.report.app
    assert app is not None and app.jetstress is not None and app.verdict is not None
    m = app_metrics(app)
    assert m["jetstress.db_read_lat_ns"] == pytest.approx(app.jetstress.db_read_lat_ms * 1e6)
    assert "jetstress.db_read_lat_ms" not in m
    assert m["verdict.pass"] == 0.0 and m["verdict.db_read_lat_ms_mean.pass"] == 0.0
    assert m["verdict.db_read_lat_ms_mean.max"] == 0.000001
    assert m["verdict.log_write_lat_ms_mean.max"] == 10.0, "the engine's default limit"
    assert m["app.cache_hit_pct"] == pytest.approx(100 * app.cache.hit_ratio)
    steady = [c for c in app.checkpoints if not c.last]
    assert any(c.last for c in app.checkpoints), "the final flush is reported"
    assert m["app.checkpoints"] == len(steady) >= 1
    assert m["app.checkpoint_iops_peak"] == max(c.iops for c in steady)


@pytest.mark.engine
def test_a_study_of_both_models_gives_pass_and_fail_in_compare(tmp_path: Path) -> None:
    """Two thresholds on one store: 20 ms, which these targets meet, and 1 ns, which no
    read meets; the verdicts come out PASS and FAIL per target, with every run counted."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    text = study_text(
        a=str(tmp_path / "a"), b=str(tmp_path / "b"), runtime="1s", read_max="[20, 0.000001]"
    ).replace('name = "apps"', 'name = "apps"\nrepeat = 2')
    study = tmp_path / "apps.toml"
    study.write_text(text)
    done = fslab("run", str(study), "--results", "r.db", "--workdir", "w", cwd=tmp_path)
    assert done.returncode == 0, done.stderr

    con = sqlite3.connect(tmp_path / "r.db")
    try:
        ops = {op for (op,) in con.execute("SELECT DISTINCT op FROM metric")}
        verdicts = sorted(
            con.execute(
                "SELECT json_extract(p.params, '$.read_lat_ms_max'), rm.value FROM run_metric rm"
                " JOIN run r ON r.id = rm.run_id JOIN point p ON p.id = r.point_id"
                " JOIN run_fact f ON f.run_id = r.id"
                # A run other work disturbed is not counted (and was run again).
                " WHERE rm.name = 'verdict.pass' AND f.contaminated_intervals = 0"
            ).fetchall()
        )
        series_ops = {op for (op,) in con.execute("SELECT DISTINCT op FROM series")}
        engine_cpu = con.execute(
            "SELECT min(value) FROM run_metric WHERE name = 'workload_cpu_pct_avg'"
        ).fetchone()[0]
    finally:
        con.close()
    assert {"data_read", "data_write", "log_write", "txn"} <= ops
    assert {"data_read", "log_write", "txn"} <= series_ops
    assert verdicts == [(1e-06, 0.0)] * 4 + [(20, 1.0)] * 4
    # The engine is the workload, not another process sharing the machine.
    assert engine_cpu > 5, engine_cpu

    # The limits each verdict judged by come from the runs: the workload's, else the
    # engine's own defaults (never repeated in the lab).
    stores = [g for g in build_comparison(tmp_path / "r.db").groups if g.kind == "mailstore"]
    assert [dict(g.limits) for g in stores] == [
        {"db_read_lat_ms_mean": 20.0, "log_write_lat_ms_mean": 10.0},
        {"db_read_lat_ms_mean": 1e-06, "log_write_lat_ms_mean": 10.0},
    ]

    table = fslab("compare", "--results", "r.db", "--where", "workload=store", cwd=tmp_path)
    assert table.returncode == 0, table.stderr
    assert "jetstress verdict" in table.stdout and "transactional IOPS" in table.stdout
    assert table.stdout.count("PASS (2/2)") == 2 and table.stdout.count("FAIL (0/2)") == 2
    md = fslab("compare", "--results", "r.db", "--format", "md", cwd=tmp_path).stdout
    assert "| jetstress verdict | **FAIL (0/2)** | **FAIL (0/2)** | — |" in md, md

    rows = list(
        csv.DictReader(
            io.StringIO(
                fslab("compare", "--results", "r.db", "--format", "csv", cwd=tmp_path).stdout
            )
        )
    )
    verdict_rows = [r for r in rows if r["metric"] == "verdict_pass"]
    assert len(verdict_rows) == 4 and all(r["ratio"] == "" for r in verdict_rows)
    oltp = {(r["op"], r["metric"]) for r in rows if r["kind"] == "oltp"}
    assert {("txn", "iops"), ("data_read", "iops"), ("log_write", "lat_p99_ns")} <= oltp
    assert ("app", "checkpoints") in oltp

    report = fslab("report", "--results", "r.db", "-o", "report.html", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    html = (tmp_path / "report.html").read_text()
    assert 'class="value  pass"' in html or 'pass"' in html
    assert "FAIL (0/2)" in html


def test_progress_of_a_model_names_its_transactions(tmp_path: Path) -> None:
    """The engine's progress (JSON lines) carries the transaction rate and the log's
    writes; the runner's live line shows the rate first."""
    points: list[SeriesPoint] = []
    job = {"kind": "mailstore", "directory": str(tmp_path), "ioengine": "sync",
           "direct": False, "data_size": "16MiB", "log_size": "1MiB", "cache_size": "1MiB",
           "runtime": "1s", "interval": "250ms"}  # fmt: skip
    run = run_job(job, progress_cb=points.append)
    assert run.exit_code == 0, run.stderr
    assert "t_s" not in run.stderr  # progress lines are not kept as messages
    measured = [p for p in points if p.txn is not None]
    # An interval whose reads all hit the cache has no `read` part, and one in which no
    # log write completed (a busy machine) has no `log` part: take one with both.
    with_both = [p for p in measured if p.read is not None and p.log is not None]
    assert with_both, points
    live = live_summary(with_both[-1])
    assert live.startswith("txn ") and "/s  read " in live and " log " in live, live
    # The report's series has the same intervals (its last one takes in the sliver past
    # the last boundary, which the live lines do not show).
    series = run.report.series.points
    assert len(points) == len(series) and tuple(points[:-1]) == series[:-1]


def test_the_live_line_of_a_block_interval() -> None:
    read = IntervalOp(
        ios=9890, bytes=9890 * 32768, iops=9890.4, bw_bytes=309.1 * (1 << 20),
        lat_mean_ns=280000.0, lat_p99_ns=1220600,
    )  # fmt: skip
    block = SeriesPoint(t_s=1.0, dur_s=1.0, ramp=False, read=read)
    assert live_summary(block) == "read 9,890 IOPS 309 MiB/s"
    stored = [("txn", 9120.0, 0.0), ("data_read", 5000.0, 5000.0 * 32768)]
    assert stored_summary("oltp", stored) == "txn 9,120/s  data_read 5,000 IOPS 156 MiB/s"
    assert stored_summary("files", [("copy", 3100.0, 3100.0 * 65536)]) == (
        "copy 3,100 files/s 194 MiB/s"
    )
    assert progress_line(block) == "[    1.0s]  read 9,890 IOPS 309 MiB/s"
