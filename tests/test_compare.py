"""`fslab compare`: statistics against hand-computed numbers, the comparison built from a
results database made here with the real schema, its renderers, and the command."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import shutil
import sqlite3
import statistics
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import click
import numpy as np
import orjson
import pytest
from click.testing import CliRunner
from conftest import fslab_command, fslab_env, undisturbed

import fslab
from fslab.cli import FslabGroup
from fslab.cli.compare import command
from fslab.compare import (
    CompareError,
    Comparison,
    build_comparison,
    compare_results,
    keep_ops,
    parse_where,
)
from fslab.errors import ExitStatus, FslabError
from fslab.metrics import Direction, MetricKind, MetricSpec
from fslab.params import param_matches, varying_keys
from fslab.report.context import load_report
from fslab.report.findings import Gap, Grid, answers, different, pooled, summary
from fslab.report.format import format_stat, legend
from fslab.report.html import render_html
from fslab.report.markdown import render_markdown_report
from fslab.report.render import render_csv, render_json, render_markdown, render_table
from fslab.stats.decision import Decision, NoVerdict, decide, log_stats
from fslab.stats.summary import summarize, t_quantile
from fslab.stats.warnings import sample_warnings
from fslab.store.db import SCHEMA_VERSION
from fslab.store.derive import derive
from fslab.store.query import PointRow, ResultsError, RunRow, RunValues, StudyResults
from fslab.study.load import StudyError, parse_study

SCHEMA = Path(fslab.__file__).parent / "store" / "schema.sql"

# -- statistics -----------------------------------------------------------------------------


def test_summary_of_three_runs_is_mean_and_student_t_half_width() -> None:
    s = summarize([10, 12, 14])
    assert s.n == 3
    assert s.mean == 12
    assert s.stdev == pytest.approx(2.0)
    assert t_quantile(0.95, 3) == pytest.approx(4.303, abs=5e-4)
    # 4.303 * 2 / sqrt(3)
    assert s.ci_half == pytest.approx(4.9683, abs=1e-3)
    assert s.ci == pytest.approx((12 - 4.9683, 12 + 4.9683), abs=1e-3)


def test_summary_of_one_run_has_no_interval() -> None:
    s = summarize([7.5])
    assert (s.n, s.mean, s.stdev, s.ci_half, s.ci) == (1, 7.5, None, None, None)


class ResultsDb:
    """Writes studies, points, runs and metrics with known numbers into a fresh database."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.con = sqlite3.connect(path)
        self.con.executescript(SCHEMA.read_text())
        self._seq: dict[int, int] = {}

    def study(self, name: str, created_at: float = 1_700_000_000.0) -> int:
        cur = self.con.execute(
            "INSERT INTO study (name, path, toml, created_at) VALUES (?, ?, ?, ?)",
            (name, f"{name}.toml", f'name = "{name}"\n', created_at),
        )
        assert cur.lastrowid is not None
        return cur.lastrowid

    def point(
        self,
        study_id: int,
        target: str,
        params: Mapping[str, object],
        workload: str = "randio",
        kind: str = "block",
        question: str | None = None,
    ) -> str:
        seq = self._seq.get(study_id, 0)
        self._seq[study_id] = seq + 1
        spec = {"name": target} | ({"question": question} if question else {})
        pid = f"s{study_id}-p{seq}"
        self.con.execute(
            "INSERT INTO point (id, study_id, seq, target, workload, kind, target_spec, params)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            # sorted keys, as the store writes them
            (pid, study_id, seq, target, workload, kind, json.dumps(spec),
             json.dumps(params, sort_keys=True)),
        )  # fmt: skip
        return pid

    def run(
        self,
        point_id: str,
        rep: int,
        ops: Mapping[str, tuple[float, float, float, float]],
        status: str = "ok",
    ) -> int:
        """`ops`: op -> (iops, bw_bytes, lat_mean_ns, lat_p99_ns)."""
        cur = self.con.execute(
            "INSERT INTO run (point_id, rep, status, started_at, ended_at, runtime_s)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (point_id, rep, status, 1_700_000_100.0 + rep, 1_700_000_110.0 + rep, 10.0),
        )
        run_id = cur.lastrowid
        assert run_id is not None
        for op, (iops, bw, lat_mean, lat_p99) in ops.items():
            self.con.execute(
                "INSERT INTO metric (run_id, op, ios, bytes, iops, bw_bytes, lat_min_ns,"
                " lat_mean_ns, lat_stdev_ns, lat_max_ns, lat_p50_ns, lat_p90_ns, lat_p95_ns,"
                " lat_p99_ns, lat_p999_ns, lat_p9999_ns, hist)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id, op, int(iops * 10), int(bw * 10), iops, bw, 1000, lat_mean, 100.0,
                    int(lat_p99 * 4), int(lat_mean), int(lat_p99 * 0.8), int(lat_p99 * 0.9),
                    int(lat_p99), int(lat_p99 * 2), int(lat_p99 * 3), "",
                ),
            )  # fmt: skip
        return run_id

    def close(self) -> None:
        # What the store derives from a run when it stores one, and its schema version.
        derive(self.con)
        self.con.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        self.con.commit()
        self.con.close()


PARAMS = {
    "rw": "randread",
    "bs": 8192,
    "threads": 1,
    "iodepth": 8,
    "file_size": 2 << 30,
    "runtime": 10.0,
}

# iops per repetition, per (target, rw); 8 KiB blocks; mean latency ~ iodepth / iops.
IOPS: dict[tuple[str, str], Sequence[float]] = {
    ("ext4", "randread"): [70_000, 72_000, 74_000],
    ("xfs", "randread"): [98_000, 99_000, 100_000],
    ("btrfs", "randread"): [71_000, 73_000, 72_000],
    ("ext4", "randwrite"): [50_000, 52_000, 54_000],
    ("xfs", "randwrite"): [60_000, 61_000, 62_000],
    ("btrfs", "randwrite"): [10_600],  # one ok run (and one failed below): not tested
}


def _ops(rw: str, iops: float) -> dict[str, tuple[float, float, float, float]]:
    op = "read" if rw == "randread" else "write"
    lat = 8 / iops * 1e9
    return {op: (iops, iops * 8192, lat, lat * 3)}


def make_study(db: ResultsDb, name: str = "small-random", created_at: float = 1.7e9) -> int:
    sid = db.study(name, created_at)
    for target in ("ext4", "xfs", "btrfs"):
        for rw in ("randread", "randwrite"):
            pid = db.point(sid, target, {**PARAMS, "rw": rw})
            reps = IOPS[(target, rw)]
            for rep, iops in enumerate(reps):
                db.run(pid, rep, _ops(rw, iops))
            if target == "btrfs" and rw == "randwrite":
                db.run(pid, len(reps), {}, status="failed")
    return sid


@pytest.fixture
def results(tmp_path: Path) -> Path:
    db = ResultsDb(tmp_path / "fslab-results.db")
    make_study(db)
    db.close()
    return db.path


# -- the comparison -------------------------------------------------------------------------


def test_groups_targets_and_baseline(results: Path) -> None:
    c = build_comparison(results)
    assert c.study == "small-random"
    assert c.targets == ("ext4", "xfs", "btrfs")
    assert c.baseline == "ext4"
    assert [dict(g.params)["rw"] for g in c.groups] == ["randread", "randwrite"]
    assert [g.ops for g in c.groups] == [("read",), ("write",)]
    read, write = c.groups
    assert dict(read.runs) == {"ext4": 3, "xfs": 3, "btrfs": 3}
    assert dict(write.runs) == {"ext4": 3, "xfs": 3, "btrfs": 1}
    assert dict(c.skipped_runs) == {"failed": 1}
    assert [r.metric.name for r in read.rows] == ["iops", "bw_bytes", "lat_mean_ns", "lat_p99_ns"]


def test_cells_hold_mean_ci_ratio_and_verdict(results: Path) -> None:
    read = build_comparison(results).groups[0]
    iops = read.row("read", "iops")
    ext4, xfs, btrfs = (iops.cell(t) for t in ("ext4", "xfs", "btrfs"))
    assert ext4.summary is not None and ext4.vs is None
    assert ext4.summary.mean == 72_000
    assert ext4.summary.ci_half == pytest.approx(4.3027 * 2000 / math.sqrt(3), rel=1e-4)
    assert xfs.vs is not None and btrfs.vs is not None
    assert xfs.vs.ratio == pytest.approx(99_000 / 72_000, rel=1e-3)
    assert xfs.vs.decision is Decision.BETTER
    assert xfs.vs.low is not None and xfs.vs.high is not None and 1 < xfs.vs.low < xfs.vs.high
    # the same mean with 1.4-2.8% noise over 3 runs: equivalent within ±5% by its 90%
    # interval (two one-sided tests at 5%; Welch's df 2.96, t 2.36), the interval shown;
    # its 95% one (0.947-1.056x) would not have fit
    assert btrfs.vs.ratio == pytest.approx(1.0, abs=1e-3)
    assert btrfs.vs.decision is Decision.EQUIVALENT
    assert (btrfs.vs.low, btrfs.vs.high) == pytest.approx((0.9585, 1.0437), abs=2e-4)
    assert btrfs.vs.more_runs is None
    # bandwidth follows IOPS; latency goes down where IOPS go up, and that is better too
    bw = read.row("read", "bw_bytes").cell("xfs").vs
    assert bw is not None and bw.decision is Decision.BETTER
    lat = read.row("read", "lat_mean_ns").cell("xfs").vs
    assert lat is not None and lat.ratio is not None
    assert lat.ratio < 1 and lat.decision is Decision.BETTER


def test_single_run_is_shown_but_not_judged(results: Path) -> None:
    write = build_comparison(results).groups[1]
    cell = write.row("write", "iops").cell("btrfs")
    assert cell.summary is not None
    assert (cell.summary.n, cell.summary.mean, cell.summary.ci_half) == (1, 10_600, None)
    assert cell.vs is not None and cell.vs.decision is Decision.NONE
    assert cell.vs.why is NoVerdict.SINGLE_RUN and cell.vs.low is None
    assert cell.vs.ratio is not None and cell.vs.ratio < 0.25


def test_another_baseline_turns_the_verdicts_around(results: Path) -> None:
    c = build_comparison(results, baseline="xfs")
    assert c.baseline == "xfs"
    cell = c.groups[0].row("read", "iops").cell("ext4")
    assert cell.vs is not None and cell.vs.decision is Decision.WORSE
    assert c.groups[0].row("read", "iops").cell("xfs").vs is None


def test_unknown_baseline_names_the_targets_and_suggests(results: Path) -> None:
    with pytest.raises(CompareError) as e:
        build_comparison(results, baseline="xsf")
    assert "`xsf`" in e.value.message
    assert e.value.hint is not None
    assert "did you mean `xfs`?" in e.value.hint
    assert "`ext4`, `xfs`, `btrfs`" in e.value.hint
    assert e.value.exit_status is ExitStatus.USAGE


@pytest.mark.parametrize("bs", ["8k", "8KiB", "8192", "8K", "8kib"])
def test_where_compares_sizes_in_bytes(results: Path, bs: str) -> None:
    c = build_comparison(results, where=[f"bs={bs}"])
    assert len(c.groups) == 2
    c = build_comparison(results, where=[f"bs={bs}", "rw=randwrite"])
    assert [dict(g.params)["rw"] for g in c.groups] == ["randwrite"]
    assert c.where == (("bs", bs), ("rw", "randwrite"))


def test_where_reads_durations_in_seconds(results: Path) -> None:
    assert len(build_comparison(results, where=["runtime=10s", "threads=1"]).groups) == 2
    with pytest.raises(CompareError) as e:
        build_comparison(results, where=["runtime=30s"])
    assert e.value.hint == "in this study `runtime` is 10s"


def test_where_with_one_key_twice_matches_either_value(results: Path) -> None:
    c = build_comparison(results, where=["rw=randread", "rw=randwrite"])
    assert len(c.groups) == 2


def test_param_matches() -> None:
    assert param_matches("bs", 8192, "8k")
    assert param_matches("bs", "8KiB", "8192")
    assert param_matches("bs", "8KiB", "8k")
    assert not param_matches("bs", 8192, "4k")
    assert param_matches("rw", "randread", "randread")
    assert not param_matches("rw", "randread", "randwrite")
    assert param_matches("direct", True, "true") and param_matches("direct", False, "0")
    assert not param_matches("direct", True, "false")
    # the plan stores durations in seconds
    assert param_matches("runtime", 30.0, "30s") and param_matches("runtime", 30.0, "30")
    assert param_matches("ramp_time", 0.5, "500ms")
    assert not param_matches("runtime", 30.0, "1m")
    assert param_matches("runtime", "10s", "10s")
    assert param_matches("rwmixread", 0.5, "0.5")
    assert parse_where(["bs = 8k"]) == (("bs", "8k"),)
    with pytest.raises(CompareError, match="is not a filter"):
        parse_where(["bs"])


def test_where_with_an_unknown_key_lists_the_keys_and_suggests(results: Path) -> None:
    with pytest.raises(CompareError) as e:
        build_comparison(results, where=["iodepht=8"])
    assert "`iodepht`" in e.value.message
    assert e.value.hint is not None
    assert "did you mean `iodepth`?" in e.value.hint
    assert "`rw`, `bs`, `threads`, `iodepth`, `file_size`, `runtime`" in e.value.hint


def test_op_keeps_the_rows_of_an_operation_and_names_the_others(results: Path) -> None:
    c = keep_ops(build_comparison(results), ["write"])
    assert [g.ops for g in c.groups] == [("write",)], "the group of reads goes"
    assert keep_ops(c, []) is c
    with pytest.raises(CompareError) as e:
        keep_ops(build_comparison(results), ["wirte"])
    assert e.value.message.startswith("unknown --op `wirte`")
    assert e.value.hint is not None and "did you mean `write`?" in e.value.hint


def test_where_that_matches_nothing_says_what_there_is(results: Path) -> None:
    with pytest.raises(CompareError) as e:
        build_comparison(results, where=["bs=64k"])
    assert e.value.message == "no point matches `bs=64k`"
    assert e.value.hint == "in this study `bs` is 8KiB"


def test_missing_database_names_the_path(tmp_path: Path) -> None:
    path = tmp_path / "nowhere.db"
    with pytest.raises(ResultsError) as e:
        build_comparison(path)
    assert str(path) in e.value.message
    assert e.value.hint == "run a study first: `fslab run STUDY.toml`"
    assert not path.exists()  # a read-only open creates nothing


def test_empty_database_says_to_run_a_study(tmp_path: Path) -> None:
    db = ResultsDb(tmp_path / "empty.db")
    db.close()
    with pytest.raises(ResultsError) as e:
        build_comparison(db.path)
    assert "no studies" in e.value.message
    assert e.value.hint == "run a study first: `fslab run STUDY.toml`"


def test_study_with_only_failed_runs(tmp_path: Path) -> None:
    db = ResultsDb(tmp_path / "failed.db")
    sid = db.study("broken")
    db.run(db.point(sid, "ext4", PARAMS), 0, {}, status="failed")
    db.run(db.point(sid, "xfs", PARAMS), 0, {}, status="interrupted")
    db.close()
    with pytest.raises(ResultsError) as e:
        build_comparison(db.path)
    assert e.value.message == "study `broken` has no completed runs (1 failed, 1 interrupted)"
    assert e.value.hint is not None and "resumes" in e.value.hint


def test_a_file_that_is_not_a_results_database(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_text("hello, this is not SQLite\n" * 100)
    with pytest.raises(ResultsError, match="cannot read it as a results database"):
        build_comparison(path)
    other = tmp_path / "other.db"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE notes (text TEXT)")
    con.commit()
    con.close()
    with pytest.raises(ResultsError, match="not an fslab results database"):
        build_comparison(other)


def test_most_recent_study_by_default_and_study_picks(tmp_path: Path) -> None:
    db = ResultsDb(tmp_path / "two.db")
    make_study(db, "older", created_at=1.6e9)
    sid = db.study("newer", created_at=1.8e9)
    for target, iops in (("xfs", [1.0, 2.0]), ("ext4", [3.0, 4.0])):
        pid = db.point(sid, target, PARAMS)
        for rep, v in enumerate(iops):
            db.run(pid, rep, _ops("randread", v))
    db.close()
    newer = build_comparison(db.path)
    assert (newer.study, newer.studies) == ("newer", ("newer", "older"))
    assert newer.targets == ("xfs", "ext4")  # study order, not alphabetical
    assert build_comparison(db.path, study="older").targets == ("ext4", "xfs", "btrfs")
    with pytest.raises(CompareError) as e:
        build_comparison(db.path, study="olde")
    assert e.value.hint is not None and "did you mean `older`?" in e.value.hint


def test_groups_keep_their_workload_apart(tmp_path: Path) -> None:
    # Same params, two workloads: two groups; a target missing in a group shows no data.
    db = ResultsDb(tmp_path / "w.db")
    sid = db.study("two-workloads")
    for workload in ("a", "b"):
        for target in ("ext4", "xfs") if workload == "a" else ("ext4",):
            pid = db.point(sid, target, PARAMS, workload=workload)
            db.run(pid, 0, _ops("randread", 100.0))
    db.close()
    c = build_comparison(db.path)
    assert [g.workload for g in c.groups] == ["a", "b"]
    cell = c.groups[1].row("read", "iops").cell("xfs")
    assert (cell.summary, cell.vs, cell.samples) == (None, None, ())
    assert "| — | — |" in render_markdown(c)


# -- renderers ------------------------------------------------------------------------------


def test_format_stat_units() -> None:
    from fslab.metrics import METRICS

    iops, bw, lat, _ = METRICS
    assert format_stat(iops, 72_000, 4968.3) == "72.0k ± 5.0k"
    assert format_stat(iops, 950, None) == "950"
    assert format_stat(bw, 100 * 2**20, 2.6 * 2**20) == "100 ± 3"
    assert format_stat(lat, 111_111, 7_000) == "111us ± 7us"
    assert format_stat(lat, 850, 20) == "850ns ± 20ns"
    assert format_stat(lat, 2_500_000, None) == "2.50ms"
    # the half-width never shows more decimals than the mean
    assert format_stat(iops, 1000, 63.5) == "1.00k ± 0.06k"
    assert format_stat(iops, 9996, 0) == "10.0k ± 0k"
    # a half-width wider than the mean is no result; tiny ratios get an exponent
    assert format_stat(iops, 143_000, 1_695_000) == "143k ± >100%"
    ratio = MetricSpec("read_write_ratio", "reads:writes", "ratio", Direction.NEITHER,
                       MetricKind.RATIO)  # fmt: skip
    assert format_stat(ratio, 0.0000215, 0.0000021) == "2.15e-05x ± 2.10e-06x"


def _by(rows: list[dict[str, str]], **keys: str) -> dict[str, str]:
    found = [r for r in rows if all(r[k] == v for k, v in keys.items())]
    assert len(found) == 1, (keys, found)
    return found[0]


def test_csv_is_tidy_and_parses(results: Path) -> None:
    c = build_comparison(results)
    rows = list(csv.DictReader(io.StringIO(render_csv(c))))
    assert list(rows[0]) == [
        "study", "workload", "kind", "rw", "bs", "threads", "iodepth", "file_size", "runtime",
        "target", "baseline", "op", "metric",
        "mean", "stdev", "ci_half", "n", "ratio", "ratio_low", "ratio_high", "verdict",
        "more_runs", "no_verdict",
    ]  # fmt: skip
    # 2 groups x 4 metrics x 3 targets
    assert len(rows) == 24
    xfs = _by(rows, rw="randread", target="xfs", metric="iops")
    assert float(xfs["ratio"]) == pytest.approx(1.375, rel=1e-3)
    assert xfs["verdict"] == "better"
    assert 1 < float(xfs["ratio_low"]) < float(xfs["ratio_high"])
    assert (xfs["bs"], xfs["baseline"], xfs["n"], xfs["op"]) == ("8192", "ext4", "3", "read")
    base = _by(rows, rw="randread", target="ext4", metric="iops")
    assert (base["verdict"], base["ratio"], base["ratio_low"]) == ("baseline", "", "")
    assert float(base["ci_half"]) == pytest.approx(4968.3, abs=0.1)
    one = _by(rows, rw="randwrite", target="btrfs", metric="iops")
    assert (one["n"], one["ci_half"], one["stdev"], one["verdict"]) == ("1", "", "", "")
    assert one["no_verdict"] == "single_run"


def test_json_has_the_groups_with_their_rows_and_cells(results: Path) -> None:
    doc = json.loads(render_json(build_comparison(results)))
    assert doc["schema_version"] == 4
    assert (doc["study"], doc["baseline"]) == ("small-random", "ext4")
    assert doc["targets"] == ["ext4", "xfs", "btrfs"]
    assert (doc["confidence"], doc["alpha"]) == (0.95, 0.05)
    assert "Welch" in doc["method"]
    assert doc["skipped_runs"] == {"failed": 1}
    groups = {g["params"]["rw"]: g for g in doc["groups"]}
    read = groups["randread"]
    assert (read["workload"], read["kind"], read["params"]["bs"]) == ("randio", "block", 8192)
    assert read["runs"] == {"ext4": 3, "xfs": 3, "btrfs": 3}
    assert groups["randwrite"]["runs"]["btrfs"] == 1
    cells = [n for g in doc["groups"] for r in g["rows"] for n in r["n"] if n]
    assert len(cells) == 24
    [lat] = [r for r in read["rows"] if r["metric"] == "lat_mean_ns"]
    assert (lat["op"], lat["unit"], lat["direction"]) == ("read", "ns", "lower")
    ext4, xfs, btrfs = 0, 1, 2
    assert lat["n"][xfs] == 3 and lat["verdict"][ext4] == "baseline"
    assert lat["ratio"][ext4] is None and lat["ratio_low"][ext4] is None
    ext4_lat = [8e9 / v for v in IOPS[("ext4", "randread")]]
    xfs_lat = [8e9 / v for v in IOPS[("xfs", "randread")]]
    assert lat["mean"][xfs] == pytest.approx(statistics.fmean(xfs_lat))
    geo = statistics.geometric_mean(xfs_lat) / statistics.geometric_mean(ext4_lat)
    assert lat["ratio"][xfs] == pytest.approx(geo)
    assert lat["ratio"][xfs] < 1 and lat["verdict"][xfs] == "better"
    [iops] = [r for r in read["rows"] if r["metric"] == "iops"]
    # equivalent by its 90% interval, which the cell's bounds then are
    assert iops["verdict"][btrfs] == "equivalent" and iops["more_runs"][btrfs] is None
    assert 0.95 < iops["ratio_low"][btrfs] < 1 < iops["ratio_high"][btrfs] < 1.05
    [one] = [r for r in groups["randwrite"]["rows"] if r["metric"] == "iops"]
    assert (one["n"][btrfs], one["stdev"][btrfs], one["ci_half"][btrfs]) == (1, None, None)
    assert (one["verdict"][btrfs], one["no_verdict"][btrfs]) == (None, "single_run")


def test_markdown_has_one_table_per_group_with_marks(results: Path) -> None:
    md = render_markdown(build_comparison(results))
    lines = md.splitlines()
    assert lines[0] == (
        "study `small-random` · baseline `ext4` · bs=8KiB threads=1 iodepth=8 "
        "file_size=2GiB runtime=10s"
    )
    assert "### randio: rw=randread" in lines
    assert "### randio: rw=randwrite" in lines
    assert "| | ext4 (baseline) | xfs | ratio | btrfs | ratio |" in lines
    assert "| runs | 3 | 3 |  | 3 |  |" in lines
    iops = next(line for line in lines if line.startswith("| read IOPS |"))
    assert iops == (
        "| read IOPS | 72.0k ± 5.0k | 99.0k ± 2.5k | 1.38x **better** | 72.0k ± 2.5k | 1.00x ≈ |"
    )
    wiops = next(line for line in lines if line.startswith("| write IOPS |"))
    assert wiops.endswith("| 10.6k | 0.204x |")
    assert lines[-1].startswith("_mean ± 95% CI half-width (Student's t)")
    assert "Welch, on logs" in lines[-1]


def test_terminal_table(results: Path) -> None:
    text = render_table(build_comparison(results))
    assert "\x1b[" not in text
    assert "ext4 (baseline)" in text
    assert "randio: rw=randread" in text
    iops = next(line for line in text.splitlines() if line.lstrip().startswith("read IOPS"))
    assert iops.split() == [
        "read", "IOPS", "72.0k", "±", "5.0k", "99.0k", "±", "2.5k", "1.38x", "better",
        "72.0k", "±", "2.5k", "1.00x", "≈",
    ]  # fmt: skip
    # the summary comes first, and answers: xfs is best at random reads
    lines = text.splitlines()
    assert lines[2].startswith("Summary: each target against `ext4`")
    summary = " ".join(line.strip() for line in lines[2:14])
    assert "randio · random reads (1 point): best: xfs, 38% ahead of btrfs in IOPS" in summary
    assert "xfs: 38% higher IOPS than ext4" in summary
    assert "on logs" in text
    assert "\x1b[" in render_table(build_comparison(results), width=200, color=True)


@pytest.mark.parametrize("width", [80, 100, 200])
def test_terminal_fits_its_width(results: Path, width: int) -> None:
    """Every line fits; where a group's targets do not, they go in blocks, the baseline
    first in each, and no cell is cut."""
    c = build_comparison(results)
    text = render_table(c, width=width)
    assert max(len(line) for line in text.splitlines()) <= width
    assert "…" not in text
    blocks = text.count("randio: rw=randread")
    assert blocks == (2 if width == 80 else 1), text
    assert text.count("ext4 (baseline)") == 2 * blocks


# -- the command ----------------------------------------------------------------------------


def _fslab() -> click.Group:
    """The command inside the real `fslab` group, which turns errors into exit statuses."""
    return FslabGroup(name="fslab", commands={"compare": command})


def test_cli_prints_the_table(results: Path) -> None:
    done = CliRunner().invoke(command, ["--results", str(results)])
    assert done.exit_code == 0, done.output
    assert "ext4 (baseline)" in done.stdout
    assert "1.38x better" in done.stdout
    assert done.stderr == "note: 1 run not counted (1 failed)\n"


@pytest.mark.parametrize("fmt", ["md", "csv", "json"])
def test_cli_formats_write_data_to_stdout(results: Path, fmt: str) -> None:
    done = CliRunner().invoke(command, ["--results", str(results), "--format", fmt])
    assert done.exit_code == 0, done.output
    c = build_comparison(results)
    if fmt == "json":  # not a terminal: one line
        expected = render_json(c, indent=False)
    else:
        expected = {"md": render_markdown, "csv": render_csv}[fmt](c)
    assert done.stdout == expected


def test_json_is_indented_for_people_and_one_line_for_programs(results: Path) -> None:
    c = build_comparison(results)
    indented, line = render_json(c), render_json(c, indent=False)
    assert json.loads(indented) == json.loads(line)
    assert line.count("\n") == 1 and line.endswith("}\n")
    assert indented.startswith('{\n  "schema_version": 4,\n')
    assert '\n  "groups": [\n    {\n      "workload": ' in indented


def test_cli_defaults_to_the_database_in_the_current_folder(
    results: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    here = tmp_path / "here"
    here.mkdir()
    (here / "fslab-results.db").write_bytes(results.read_bytes())
    monkeypatch.chdir(here)
    done = CliRunner().invoke(command, ["--format", "json", "--where", "rw=randread"])
    assert done.exit_code == 0, done.output
    assert {g["params"]["rw"] for g in json.loads(done.stdout)["groups"]} == {"randread"}


def test_cli_notes_the_study_it_chose(tmp_path: Path) -> None:
    db = ResultsDb(tmp_path / "two.db")
    make_study(db, "older", created_at=1.6e9)
    make_study(db, "newer", created_at=1.8e9)
    db.close()
    done = CliRunner().invoke(command, ["--results", str(db.path), "--format", "csv"])
    assert done.exit_code == 0, done.output
    assert "note: comparing `newer`, the most recent of 2 studies" in done.stderr
    picked = CliRunner().invoke(command, ["--results", str(db.path), "--study", "older"])
    assert "most recent" not in picked.stderr


@pytest.mark.parametrize(
    ("args", "status", "error", "hint"),
    [
        (["--baseline", "zzz"], 2, "error: unknown baseline `zzz`", "hint: targets: `ext4`"),
        (["--where", "qd=8"], 2, "error: unknown --where key `qd`", "hint: the parameters are"),
        (["--where", "bs=1m"], 2, "error: no point matches `bs=1m`", "hint: in this study"),
        (["--study", "x"], 2, "error: no study `x` in", "hint: studies: `small-random`"),
    ],
)
def test_cli_errors_exit_with_a_hint(
    results: Path, args: list[str], status: int, error: str, hint: str
) -> None:
    done = CliRunner().invoke(_fslab(), ["compare", "--results", str(results), *args])
    assert done.exit_code == status, done.output
    assert done.stdout == ""
    assert done.stderr.startswith(error)
    assert hint in done.stderr


def test_cli_missing_database(tmp_path: Path) -> None:
    path = tmp_path / "none.db"
    done = CliRunner().invoke(_fslab(), ["compare", "--results", str(path)])
    assert done.exit_code == 2  # bad input, like a bad study
    assert done.stderr == (
        f"error: {path}: no results database here\n\n"
        "hint: run a study first: `fslab run STUDY.toml`\n"
    )


def test_cli_bad_format_is_a_usage_error(results: Path) -> None:
    done = CliRunner().invoke(command, ["--results", str(results), "--format", "html"])
    assert done.exit_code == 2
    assert "Invalid value for '--format'" in done.stderr


def test_errors_are_fslab_errors() -> None:
    assert issubclass(CompareError, FslabError) and issubclass(ResultsError, FslabError)
    assert Comparison.__dataclass_params__.frozen  # type: ignore[attr-defined]


def test_where_filters_by_workload_too(results: Path) -> None:
    c = build_comparison(results, where=["workload=randio"])
    assert c.groups and {g.workload for g in c.groups} == {"randio"}
    with pytest.raises(CompareError, match="no point matches"):
        build_comparison(results, where=["workload=nope"])


def _results_of(cells: Sequence[Sequence[float]]) -> tuple[StudyResults, list[list[int]]]:
    """A study of one block point per sample set, each on targets `a` (the samples) and
    `b` (quiet ones, the baseline); and target `a`'s run ids per set."""
    points, runs, ids, data = [], [], [], []
    of_a: list[list[int]] = []
    run_id = 0
    for i, samples in enumerate(cells):
        for target, values in (("a", samples), ("b", [100.0] * len(samples))):
            pid = f"p{i}-{target}"
            points.append(PointRow(pid, i, target, "w", "block", {"rw": "randread", "n": i}))
            if target == "a":
                of_a.append([])
            for v in values:
                run_id += 1
                if target == "a":
                    of_a[-1].append(run_id)
                runs.append(RunRow(run_id, pid, "ok"))
                ids.append(run_id)
                data.append([v])
    values = RunValues(
        (("read", "iops"),), np.array(ids, dtype=np.int64), np.array(data, dtype=np.float64)
    )
    return StudyResults(tuple(points), tuple(runs), (values,), {}, {}), of_a


def test_noise_warnings_for_all_cells_at_once_match_the_one_definition() -> None:
    # Random sample sets, and sets on the thresholds: CV exactly 10% (to the last bit or
    # so) and a modified z of exactly 3.5, where numpy's sums could tip a verdict.
    rng = np.random.default_rng(7)
    cells: list[list[float]] = []
    for _ in range(300):
        n = int(rng.integers(2, 8))
        cells.append((rng.normal(1000, rng.uniform(10, 300), n)).tolist())
    cells += [[90.0, 110.0], [100 - 10 / math.sqrt(2), 100 + 10 / math.sqrt(2)]]
    cells += [[10.0, 10.0, 11.0, 12.0, 10.0 + 3.5 / 0.6745], [1.0, 1.0, 2.0, 2.0, 50.0]]
    results, run_ids = _results_of(cells)
    comparison = compare_results(results, study="noise", baseline="b")
    assert len(comparison.groups) == len(cells)
    flagged = 0
    for group, samples, ids in zip(comparison.groups, cells, run_ids, strict=True):
        [row] = [r for r in group.rows if r.metric.name == "iops"]
        cell = row.cell("a")
        expected = sample_warnings("a", "IOPS", samples, ids)
        assert list(cell.warnings) == expected, samples
        flagged += bool(expected)
    assert 30 < flagged < len(cells)


def test_a_reader_that_goes_away_ends_compare_quietly(results: Path) -> None:
    """`fslab compare --format json | head -c 10`: no trace, no "bug", exit 1."""
    with subprocess.Popen(
        [*fslab_command(), "compare", "--results", str(results), "--format", "json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=fslab_env(),
    ) as proc:  # fmt: skip
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()  # before it writes: its first write meets a closed pipe
        stderr = proc.stderr.read().decode()
        assert proc.wait(timeout=30) == 1
    assert "Traceback" not in stderr and "bug" not in stderr and "Broken pipe" not in stderr


def test_the_decision_rule_over_all_cells_matches_it_cell_by_cell(tmp_path: Path) -> None:
    """compare's arrays (made when asked for) give what `decide` gives one cell at a
    time from the samples, for every row of a study of real runs of every kind."""
    db = tmp_path / "v2.db"
    shutil.copyfile(Path(__file__).parent / "data" / "results-v2.db", db)
    comparison = build_comparison(undisturbed(db))
    base = comparison.targets.index(comparison.baseline)
    judged = 0
    for group in comparison.groups:
        for row in group.rows:
            cells = row.cells
            b = cells[base]
            for t, cell in enumerate(cells):
                vs = cell.vs
                if t == base or not cell.samples or not b.samples or row.metric.unit == "verdict":
                    assert vs is None
                    continue
                assert vs is not None
                nb, mb, vb = log_stats(b.samples)
                nt, mt, vt = log_stats(cell.samples)
                rule = row.metric.kind in (MetricKind.RATE, MetricKind.LATENCY,
                                           MetricKind.EFFICIENCY)  # fmt: skip
                rule = rule and row.metric.higher_is_better is not None
                flagged = vs.why in (NoVerdict.FLAGGED, NoVerdict.BASELINE_FLAGGED)
                one = np.ones(1)
                want = decide(
                    np.array([nb]), mb * one, vb * one, np.array([nt]), mt * one, vt * one,
                    higher_is_better=np.array([1 if row.metric.higher_is_better else 0], np.int8),
                    min_abs=row.metric.min_abs * one, base_mean=float(np.mean(b.samples)) * one,
                    judged=np.array([rule]), suppressed=np.array([flagged]),
                )  # fmt: skip
                assert vs.decision == Decision(int(want[3][0])), (group.workload, row)
                if vs.ratio is not None and not math.isnan(float(want[0][0])):
                    assert vs.ratio == pytest.approx(float(want[0][0]), rel=1e-9)
                    if vs.low is not None:
                        assert vs.low == pytest.approx(float(want[1][0]), rel=1e-9)
                    judged += 1
                if vs.decision is not Decision.NONE:
                    assert (vs.more_runs or -1) == int(want[4][0])
    assert judged > 20


def test_where_target_keeps_those_targets_and_picks_the_baseline_among_them(
    results: Path,
) -> None:
    c = build_comparison(results, where=["target=xfs", "target=btrfs"])
    assert (c.targets, c.baseline) == (("xfs", "btrfs"), "xfs")
    assert c.groups[0].row("read", "iops").cell("btrfs").vs is not None
    c = build_comparison(results, baseline="btrfs", where=["target=xfs", "target=btrfs"])
    assert c.baseline == "btrfs"
    with pytest.raises(CompareError) as e:
        build_comparison(results, where=["target=xsf"])
    assert e.value.hint is not None and "did you mean `xfs`?" in e.value.hint
    with pytest.raises(CompareError):
        build_comparison(results, baseline="ext4", where=["target=xfs"])


def test_varying_keys_are_the_parameters_that_tell_points_apart() -> None:
    points = [
        (("rw", "read"), ("bs", 8192), ("iodepth", 1)),
        (("rw", "read"), ("bs", 65536), ("iodepth", 1)),
        (("rw", "read"), ("bs", 8192)),
    ]
    assert varying_keys(points) == ["bs", "iodepth"]
    assert varying_keys(points[:1]) == [] and varying_keys([]) == []


# -- questions: targets compared among themselves --------------------------------------------


@pytest.fixture
def questions_db(tmp_path: Path) -> Path:
    """Two questions: which file system (ext4, xfs) and which layout (raid0, raid1, raid5),
    with raid0 8x ext4's IOPS: a layout must never be judged against ext4."""
    db = ResultsDb(tmp_path / "fslab-results.db")
    sid = db.study("two questions")
    iops = {"ext4": 70_000.0, "xfs": 99_000.0, "raid0": 560_000.0, "raid1": 280_000.0,
            "raid5": 560_000.0}  # fmt: skip
    asked = {"ext4": "file system", "xfs": "file system", "raid0": "layout",
             "raid1": "layout", "raid5": "layout"}  # fmt: skip
    for target, q in asked.items():
        pid = db.point(sid, target, PARAMS, question=q)
        for rep, f in enumerate((0.99, 1.0, 1.01)):
            db.run(pid, rep, _ops("randread", iops[target] * f))
    db.close()
    return db.path


def test_each_target_is_judged_against_its_questions_baseline(questions_db: Path) -> None:
    c = build_comparison(questions_db)
    assert [(q.name, q.baseline, q.targets) for q in c.questions] == [
        ("file system", "ext4", ("ext4", "xfs")),
        ("layout", "raid0", ("raid0", "raid1", "raid5")),
    ]
    row = c.groups[0].row("read", "iops")
    assert row.cell("ext4").vs is None and row.cell("raid0").vs is None
    xfs, raid1, raid5 = (row.cell(t).vs for t in ("xfs", "raid1", "raid5"))
    assert xfs is not None and xfs.ratio == pytest.approx(99 / 70)
    assert raid1 is not None and raid1.ratio == pytest.approx(0.5)
    assert raid1.decision is Decision.WORSE
    assert raid5 is not None and raid5.decision is Decision.EQUIVALENT
    assert (c.baseline_of("raid5"), c.baseline_of("xfs")) == ("raid0", "ext4")
    # --baseline picks the baseline of its own question; the other keeps its first target
    c = build_comparison(questions_db, baseline="raid1")
    assert [q.baseline for q in c.questions] == ["ext4", "raid1"]
    assert c.targets == ("ext4", "xfs", "raid1", "raid0", "raid5")
    vs = c.groups[0].row("read", "iops").cell("raid0").vs
    assert vs is not None and vs.ratio == pytest.approx(2.0)
    # one question left by the filter: a plain comparison
    c = build_comparison(questions_db, where=["target=raid1", "target=raid5"])
    assert (c.questions, c.baseline) == ((), "raid1")


def test_the_summary_answers_each_question_on_its_own(questions_db: Path) -> None:
    c = build_comparison(questions_db)
    found = answers(c)
    assert [(a.question, a.baseline, [t.target for t in a.targets]) for a in found] == [
        ("file system", "ext4", ["xfs"]),
        ("layout", "raid0", ["raid1", "raid5"]),
    ]
    assert found[0].best == "xfs" and found[1].best in ("raid0", "raid5")
    text = render_table(c, width=100)
    assert "baselines: file system `ext4`, layout `raid0`" in text
    assert "layout · randio" in text
    lines = text.splitlines()
    raid1 = next(line for line in lines if line.strip().startswith("raid1:"))
    assert "2.00x lower IOPS than raid0" in raid1 and "ext4" not in raid1
    # the tables: each question's baseline first in its own block
    heads = [line for line in lines if "(baseline)" in line]
    assert any("ext4 (baseline)" in h and "raid" not in h for h in heads)
    assert any("raid0 (baseline)" in h and "ext4" not in h for h in heads)
    data = orjson.loads(render_json(c))
    assert data["questions"][1] == {
        "name": "layout", "baseline": "raid0", "targets": ["raid0", "raid1", "raid5"]
    }  # fmt: skip
    rows = list(csv.DictReader(io.StringIO(render_csv(c))))
    assert _by(rows, target="raid1", metric="iops")["baseline"] == "raid0"
    assert _by(rows, target="raid0", metric="iops")["verdict"] == "baseline"
    assert _by(rows, target="xfs", metric="iops")["baseline"] == "ext4"


def test_a_question_of_many_families_is_a_grid_in_the_terminal(tmp_path: Path) -> None:
    """diskspd's six patterns on three layouts: a row per pattern, a column per layout
    with the ratio and the verdict, and the best, instead of eighteen sentences."""
    db = ResultsDb(tmp_path / "fslab-results.db")
    sid = db.study("patterns")
    patterns = ["rand-read-8k", "rand-read-64k", "rand-write-8k", "seq-read-64k", "seq-write-8k"]
    scale = {"raid0": 1.0, "raid10": 0.5, "raid5": 1.0}
    for target, f in scale.items():
        for i, w in enumerate(patterns):
            pid = db.point(sid, target, PARAMS, workload=w, question="layout")
            for rep, noise in enumerate((0.99, 1.0, 1.01)):
                db.run(pid, rep, _ops("randread", 10_000.0 * (i + 1) * f * noise))
    db.close()
    c = build_comparison(db.path)
    text = render_table(c, width=100)
    lines = text.splitlines()
    title = next(i for i, line in enumerate(lines) if line.startswith("IOPS against raid0"))
    grid = lines[title : title + 12]
    rows = [line for line in grid if line.strip().startswith(tuple(patterns))]
    assert len(rows) == len(patterns)
    for row in rows:
        assert "0.500x worse" in row and "1.00x ≈" in row
        # raid0 and raid5 are equal, and the grid's best says they tie
        assert row.rstrip().endswith(("raid0 ≈ raid5", "raid5 ≈ raid0"))
    assert not any(line.strip().startswith("raid10:") for line in lines)  # no sentences
    assert max(len(line) for line in lines) <= 100


def test_a_grid_cell_gives_the_range_of_its_decided_points(tmp_path: Path) -> None:
    """A mean over points that differ a lot is not an answer on its own (64K clusters cost
    4x the space of small files and nothing on large ones): the cell names the lowest and
    highest decided point instead of their mean (written `a…b`: a range of points, not an
    interval); a family worse at some points and equivalent at the others is `worse n/N`,
    not `better at some, worse at others`."""
    db = ResultsDb(tmp_path / "fslab-results.db")
    sid = db.study("spread")
    patterns = [f"pattern-{i}" for i in range(5)]
    # per target: its ratio to ext4 at iodepth 1 and at iodepth 8
    scale = {"ext4": (1.0, 1.0), "wide": (0.25, 0.8), "half": (0.5, 1.0)}
    for target, (at1, at8) in scale.items():
        for w in patterns:
            for qd, f in ((1, at1), (8, at8)):
                pid = db.point(sid, target, {**PARAMS, "iodepth": qd}, workload=w)
                for rep, noise in enumerate((0.995, 1.0, 1.005)):
                    db.run(pid, rep, _ops("randread", 10_000.0 * f * noise))
    db.close()
    c = build_comparison(db.path)
    text = render_table(c, width=120)
    rows = [line for line in text.splitlines() if line.startswith(" pattern-")]  # the grid's
    assert len(rows) == len(patterns)
    for row in rows:
        assert "0.250x…0.800x worse" in row, row
        assert "0.500x…1.00x worse 1/2" in row and "·" not in row, row
    # how the swept axis moves it, under the grid (the largest first, six at most)
    assert "where a swept axis moves a ratio more than 1.5x (4 more" in text
    assert text.count("wide · pattern-") == 6 - text.count("half · pattern-")
    assert "  wide · pattern-0 by iodepth: 1: 0.250x, 8: 0.800x" in text
    data = load_report(db.path)
    md = render_markdown_report(data, (), "report_files")
    assert (
        "| pattern-0 (2) | **0.250x…0.800x worse** | **0.500x…1.00x worse 1/2** | **ext4** |"
    ) in md
    page = render_html(data, (), plotly_js="")
    assert page.count('<table class="overview grid">') == 1
    assert '<td class="v-worse">0.250x…0.800x worse</td>' in page


def _two_targets(path: Path, name: str, xfs: float, noise: Sequence[float]) -> int:
    """A study of ext4 and xfs at `xfs` times ext4's random-read IOPS, a run per `noise`
    factor on each, written to `path`; its study id."""
    db = ResultsDb(path)
    sid = db.study(name)
    for target, f in (("ext4", 1.0), ("xfs", xfs)):
        pid = db.point(sid, target, PARAMS)
        for rep, n in enumerate(noise):
            db.run(pid, rep, _ops("randread", 10_000.0 * f * n))
    db.close()
    return sid


def _set_study(path: Path, sid: int, column: str, value: str) -> None:
    """Rewrites one column of a stored study (its TOML, its design), as a later run would."""
    con = sqlite3.connect(path)
    with con:
        con.execute(f"UPDATE study SET {column} = ? WHERE id = ?", (value, sid))
    con.close()


@pytest.mark.parametrize(("xfs", "fails"), [(0.5, True), (1.0, False), (1.6, False)])
def test_fail_on_worse_exits_1_naming_what_is_worse(
    tmp_path: Path, xfs: float, fails: bool
) -> None:
    """`--fail-on worse` for a CI pipeline: exit 1 after the output when the summary
    decided a target worse than its baseline, naming it; 0 for an equal or better one."""
    path = tmp_path / "fslab-results.db"
    _two_targets(path, "gate", xfs, (0.99, 1.0, 1.01))
    done = CliRunner().invoke(command, ["--results", str(path), "--fail-on", "worse"])
    assert done.exit_code == (1 if fails else 0), done.output
    assert "Summary" in done.stdout
    if fails:
        assert "fail-on worse: 1 finding(s) worse than the baseline" in done.stderr
        assert "xfs: randio · random reads IOPS worse than ext4 at 1 of 1 point (0.500x)" in (
            done.stderr
        )
    else:
        assert "no target is worse than its baseline" in done.stderr


def test_a_study_sets_its_equivalence_margin(tmp_path: Path) -> None:
    """`margin = "20%"`: a target 3% below the baseline, by an interval of about ±11%, is
    equivalent within 20%, where the default 5% leaves it undecided; compare says which
    margin it used."""
    path = tmp_path / "fslab-results.db"
    sid = _two_targets(path, "margin", 0.97, (0.95, 1.0, 1.05))

    def verdict() -> tuple[str, float]:
        doc = json.loads(render_json(build_comparison(path)))
        row = next(r for r in doc["groups"][0]["rows"] if r["metric"] == "iops")
        return row["verdict"][1], doc["equivalence_margin"]

    assert verdict() == ("inconclusive", 0.05)
    _set_study(path, sid, "toml", 'name = "margin"\nmargin = "20%"\n')
    assert verdict() == ("equivalent", 0.2)
    assert "lies within ±20%" in legend(build_comparison(path))


def test_a_study_names_the_metrics_its_summary_answers(tmp_path: Path) -> None:
    """`summary = ["lat_p99_ns"]`: the seed's question is about latency too, so the summary
    answers it as a grid after the headline's; without the key it does not. A metric no
    direction of which is better reads `higher`/`lower`, never better or worse."""
    path = tmp_path / "fslab-results.db"
    sid = _two_targets(path, "named", 0.5, (0.99, 1.0, 1.01))
    titles = [getattr(a, "title", "") for a in summary(build_comparison(path))]
    assert not any("lat p99" in t for t in titles), titles
    _set_study(path, sid, "toml", 'name = "named"\nsummary = ["lat_p99_ns"]\n')
    found = summary(build_comparison(path))
    [lat] = [a for a in found if isinstance(a, Grid) and "lat p99" in a.title]
    assert lat.title == "lat p99 against ext4"
    [row] = lat.rows
    [cell] = row.cells
    assert cell is not None and cell.text == "2.00x worse", cell
    peak = MetricSpec("iops_peak", "IOPS peak", "count", Direction.NEITHER, MetricKind.RATE)
    assert different(Gap(0.5, 0.45, 0.55, 3), peak)
    assert Gap(0.5, 0.45, 0.55, 3).verdict(peak, 0.05) is Decision.NONE
    assert not different(Gap(0.99, 0.9, 1.1, 3), peak)


def test_a_target_that_measured_none_where_the_baseline_measured_some_is_best(
    tmp_path: Path,
) -> None:
    """`noatime` writes no bytes while reading where `relatime` writes 24 MiB: no ratio of
    logs exists, yet the grid must say `none` and name it best, not leave the cell empty
    and crown the next target."""
    path = tmp_path / "fslab-results.db"
    db = ResultsDb(path)
    sid = db.study("atime")
    written = {"relatime": 24.0, "noatime": 0.0, "strictatime": 32.0}
    for target, mib in written.items():
        pid = db.point(sid, target, PARAMS)
        for rep, n in enumerate((0.99, 1.0, 1.01)):
            run = db.run(pid, rep, _ops("randread", 10_000.0 * n))
            db.con.execute(
                "INSERT INTO run_metric VALUES (?, ?, ?)",
                (run, "randread.written_bytes", mib * n * (1 << 20)),
            )
    db.close()
    _set_study(path, sid, "toml", 'name = "atime"\nsummary = ["written_bytes"]\n')
    [grid] = [a for a in summary(build_comparison(path)) if isinstance(a, Grid)]
    [row] = grid.rows
    cells = dict(zip(grid.targets, row.cells, strict=True))
    assert cells["noatime"] is not None and cells["noatime"].text == "none"
    assert row.answer.best == "noatime"


def test_a_summary_metric_that_does_not_exist_is_named_with_the_ones_that_do() -> None:
    with pytest.raises(StudyError) as e:
        parse_study(
            'name = "s"\nsummary = ["iops_peek"]\n[[target]]\nname = "t"\ndir = "/x"\n'
            '[[workload]]\nrw = "read"\n',
            "s.toml",
        )
    [p] = e.value.problems
    assert p.where.startswith("s.toml:2") and "summary" in p.where, p.where
    assert "`iops_peek` is not a compared metric; did you mean `iops_peak`?" in p.what


def test_a_disturber_counts_each_run_once_whatever_its_pids() -> None:
    """Two `python` processes in one run are one run disturbed by `python`, not two."""
    from fslab.compare import disturbers_of
    from fslab.stats.warnings import RunFacts

    a = RunFacts(1, disturbers=(("python", 10, 1.0, 40.0), ("python", 11, 0.5, 60.0)))
    b = RunFacts(2, disturbers=(("python", 12, 0.2, 20.0), ("cc1", 13, 0.9, 90.0)))
    [py, cc] = disturbers_of([a, b])
    assert (py.name, py.runs, py.pid, py.cpu_pct) == ("python", 2, 11, 60.0)
    assert (cc.name, cc.runs) == ("cc1", 1)


def test_a_blocked_study_compares_each_round_s_runs(tmp_path: Path) -> None:
    """Rounds that moved both targets by up to 30% together (the machine's state) and a
    steady 8% between them: as independent samples the interval spans 1; paired by
    round it is 0.92x, worse. A round the target missed pairs with nothing."""
    db = ResultsDb(tmp_path / "fslab-results.db")
    sid = db.study("blocked")
    shifts = (1.0, 1.3, 0.8, 1.15, 0.9)
    for target, f in (("ext4", 1.0), ("xfs", 0.92)):
        pid = db.point(sid, target, PARAMS)
        for rep, shift in enumerate(shifts):
            if target == "xfs" and rep == 4:
                continue
            db.run(pid, rep, _ops("randread", 10_000.0 * f * shift * (1.002 if rep % 2 else 0.998)))
    db.close()

    def read_iops() -> dict[str, Any]:
        doc = json.loads(render_json(build_comparison(db.path)))
        row = next(r for r in doc["groups"][0]["rows"] if r["metric"] == "iops")
        return {"design": doc["design"], "verdict": row["verdict"][1], "ratio": row["ratio"][1]}

    apart = read_iops()
    assert apart["design"] == "independent" and apart["verdict"] == "inconclusive", apart
    _set_study(db.path, sid, "design", "blocked")
    paired = read_iops()
    assert paired["design"] == "blocked" and paired["verdict"] == "worse", paired
    assert paired["ratio"] == pytest.approx(0.92, abs=0.003), "rounds 0-3, the pairs"
    assert "paired by round" in legend(build_comparison(db.path))
    # The summary's lead of the baseline over xfs is xfs's own ratio turned over, over
    # the same rounds: not ext4's five runs against xfs's four as independent samples.
    [answer] = answers(build_comparison(db.path))
    assert (answer.best, answer.runner_up) == ("ext4", "xfs")
    assert answer.margin is not None and answer.margin.decided
    assert answer.margin.ratio == pytest.approx(1 / 0.92, abs=0.004)
    [xfs] = answer.targets
    assert xfs.gap is not None and answer.margin.ratio == pytest.approx(1 / xfs.gap.ratio)


def test_a_blocked_study_of_two_rounds_judges_its_runs_as_independent(tmp_path: Path) -> None:
    """Two pairs leave Student's t one degree of freedom: the cell is judged as four
    runs apart (Welch), its interval the independent study's, not three times wider."""
    db = ResultsDb(tmp_path / "fslab-results.db")
    sid = db.study("two")
    for target, values in (("ext4", (10_000.0, 10_400.0)), ("xfs", (7_350.0, 7_000.0))):
        pid = db.point(sid, target, PARAMS)
        for rep, v in enumerate(values):
            db.run(pid, rep, _ops("randread", v))
    db.close()

    def read_iops() -> tuple[Any, ...]:
        doc = json.loads(render_json(build_comparison(db.path)))
        row = next(r for r in doc["groups"][0]["rows"] if r["metric"] == "iops")
        return row["ratio"][1], row["ratio_low"][1], row["ratio_high"][1], row["verdict"][1]

    apart = read_iops()
    _set_study(db.path, sid, "design", "blocked")
    assert read_iops() == apart
    assert apart[2] / apart[1] < 1.5, apart  # paired at one degree of freedom: 0.42x-1.22x


def test_a_blocked_study_judges_foreign_cpu_against_the_round(tmp_path: Path) -> None:
    """A neighbour at half a CPU through every run of rounds 0-3 shifts both targets
    alike: a blocked study counts those runs (alone, each would be disturbed); in round 4
    it hit xfs's run and not ext4's, so that run alone is left out, in either design.
    Memory pressure is judged alone whatever the design."""
    path = tmp_path / "fslab-results.db"
    sid = _two_targets(path, "neighbour", 0.9, (1.0, 1.01, 0.99, 1.02, 0.98))
    con = sqlite3.connect(path)
    with con:
        con.execute(
            "UPDATE run_fact SET contaminated_intervals = 8, reasons = 'foreign_cpu',"
            " foreign_cpu_pct = 50, disturbers = '[[\"backup\", 7, 4.0, 50.0]]'"
        )
        con.execute(
            "UPDATE run_fact SET contaminated_intervals = 0, reasons = '', foreign_cpu_pct = 3,"
            " disturbers = '[]' WHERE rep = 4 AND run_id IN (SELECT r.id FROM run r"
            " JOIN point p ON p.id = r.point_id WHERE p.target = 'ext4')"
        )
    con.close()

    def counted() -> tuple[dict[str, int], dict[str, int]]:
        doc = json.loads(render_json(build_comparison(path)))
        return doc["skipped_runs"], doc["groups"][0]["runs"]

    assert counted() == ({"disturbed": 9}, {"ext4": 1, "xfs": 0})
    _set_study(path, sid, "design", "blocked")
    assert counted() == ({"disturbed": 1}, {"ext4": 5, "xfs": 4})
    c = build_comparison(path)
    assert [(d.name, d.runs) for d in c.shared] == [("backup", 8)]
    assert [(d.name, d.runs) for d in c.disturbers] == [("backup", 1)]
    con = sqlite3.connect(path)
    with con:
        con.execute("UPDATE run_fact SET reasons = 'foreign_cpu,memory_pressure' WHERE rep = 0")
    con.close()
    assert counted() == ({"disturbed": 3}, {"ext4": 4, "xfs": 3})


def test_a_block_judges_its_runs_alone_where_it_cannot_compare_them() -> None:
    from fslab.stats.disturbance import disturbed_in_block, disturbed_runs
    from fslab.stats.warnings import RunFacts

    def run(i: int, load: float | None, hit: bool = True) -> RunFacts:
        return RunFacts(i, intervals=10, contaminated_intervals=5 if hit else 0,
                        reasons=("foreign_cpu",) if hit else (), foreign_cpu_pct=load)  # fmt: skip

    assert disturbed_in_block([run(1, 50)]) == [run(1, 50)], "no partner: alone"
    assert disturbed_in_block([run(1, 50), run(2, None, hit=False)]) == [run(1, 50)], "older"
    assert disturbed_in_block([run(1, 50), run(2, 45)]) == []
    assert disturbed_in_block([run(1, 50), run(2, 39.9, hit=False)]) == [run(1, 50)]
    # Only a run disturbed alone can be disturbed in its block.
    assert disturbed_in_block([run(1, 50, hit=False), run(2, 0, hit=False)]) == []
    found = disturbed_runs([(run(1, 50), "a"), (run(2, 0, hit=False), "a"), (run(3, 50), None),
                            (run(4, 50), "b"), (run(5, 48), "b")])  # fmt: skip
    assert [f.run_id for f in found] == [1, 3]


def test_a_metric_with_no_better_direction_names_no_best(tmp_path: Path) -> None:
    """A peak or a size is higher or lower, never better: its grid's best column is `-`,
    and a decided lead reads `highest mean`, not `best`."""
    from fslab.report.findings import _best_cell, answers_by_metric

    path = tmp_path / "fslab-results.db"
    _two_targets(path, "peaks", 0.5, (0.99, 1.0, 1.01))
    found = answers_by_metric(build_comparison(path), ("iops",))
    [a] = found["iops"]
    assert a.best == "ext4" and "best: " in "".join(s.text for s in a.headline())
    peak = MetricSpec("iops", "IOPS", "count", Direction.NEITHER, MetricKind.RATE)
    b = dataclasses.replace(a, metric=peak)
    said = "".join(s.text for s in b.headline())
    assert said.startswith("highest mean IOPS: ext4") and "best" not in said, said
    assert _best_cell(b) == "-" and _best_cell(a) == "ext4"


def test_a_family_decided_as_a_whole_settles_its_undecided_points(tmp_path: Path) -> None:
    """Two file sizes, xfs at 0.85x ext4 with runs ±10%: neither point alone decides it
    (3 runs a side), their family's pooled interval does, so the adaptive loop stops
    both (`findings.pooled`); at 0.97x the family is undecided too, and nothing stops."""
    for xfs, settles in ((0.85, True), (0.97, False)):
        path = tmp_path / f"family-{xfs}.db"
        db = ResultsDb(path)
        sid = db.study("family")
        points: dict[str, list[str]] = {}
        for size in (256 << 20, 2 << 30):
            for target, f in (("ext4", 1.0), ("xfs", xfs)):
                pid = db.point(sid, target, {**PARAMS, "file_size": size})
                points.setdefault(target, []).append(pid)
                for rep, n in enumerate((0.9, 1.0, 1.1)):
                    db.run(pid, rep, _ops("randread", 10_000.0 * f * n))
        db.close()
        c = build_comparison(path)
        cells = [r.cell("xfs").vs for g in c.groups for r in g.headline_rows()]
        assert [j.decision if j else None for j in cells] == [Decision.INCONCLUSIVE] * 2
        got = pooled(c)
        assert got == ({(p, "read") for p in points["xfs"]} if settles else set()), got


def test_a_family_no_max_would_decide_stops_its_points_as_futile(tmp_path: Path) -> None:
    """A blocked study, xfs level with ext4 at two file sizes, its rounds ±8% at one and
    ±20% at the other: the first is open alone (6 rounds might show it within 5%), the
    second futile alone; their family, its spreads pooled, would likely stay undecided
    at 6 rounds, so the adaptive loop stops the first too (`findings.futile_families`)
    and the baseline with it. With room for 100 rounds nothing is futile."""
    from fslab.report.findings import futile_families
    from fslab.stats import sequential

    path = tmp_path / "family-noisy.db"
    db = ResultsDb(path)
    sid = db.study("family")
    xfs: list[str] = []
    for size, x in ((256 << 20, 0.08), (2 << 30, 0.2)):
        for target, spread in (("ext4", (1.0, 1.0, 1.0)), ("xfs", (1 + x, 1 - x, 1.0))):
            pid = db.point(sid, target, {**PARAMS, "file_size": size})
            if target == "xfs":
                xfs.append(pid)
            for rep, n in enumerate(spread):
                db.run(pid, rep, _ops("randread", 10_000.0 * n))
    db.close()
    _set_study(path, sid, "design", "blocked")
    c = build_comparison(path)
    alone = [g.targets["xfs"] for g in sequential.look(c, 6)]
    assert alone == [sequential.State.OPEN, sequential.State.FUTILE], alone
    assert futile_families(c, 6) == {(p, "read") for p in xfs}
    assert futile_families(c, 100) == set()
    looked = sequential.look(c, 6, (), futile_families(c, 6))
    assert [g.targets["xfs"] for g in looked] == [sequential.State.FUTILE] * 2
    assert all(not g.open_points for g in looked), "the baseline runs on for nothing"


# -- a long study at the terminal --------------------------------------------------------------


@pytest.fixture
def v2(tmp_path: Path) -> Path:
    """Real runs of every kind at 6 points (about 240 lines of tables)."""
    db = tmp_path / "v2.db"
    shutil.copyfile(Path(__file__).parent / "data" / "results-v2.db", db)
    return undisturbed(db)


def test_long_tables_are_left_out_unasked_and_the_summary_stays(
    v2: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fslab.cli.compare as cli

    full = CliRunner().invoke(command, ["--results", str(v2)])
    assert full.exit_code == 0, full.output
    assert "note: the" not in full.stderr and "rand4k: rw=randread" in full.stdout
    monkeypatch.setattr(cli, "TABLE_LINES", 50)
    short = CliRunner().invoke(command, ["--results", str(v2)])
    assert short.exit_code == 0, short.output
    assert "note: the 6 points' tables are left out (about 2" in short.stderr
    assert "--detail shows them all" in short.stderr
    # the summary and the warnings are what is left, as they were
    assert "rand4k: rw=randread" not in short.stdout
    summary = short.stdout.split("warnings (details")[0]
    assert summary.strip() and full.stdout.startswith(summary)
    assert "warnings (details" in short.stdout
    # asked for: every table, as unasked below the limit
    asked = CliRunner().invoke(command, ["--results", str(v2), "--detail"])
    assert asked.stdout == full.stdout and "note: the" not in asked.stderr
    # a slice: its tables
    sliced = CliRunner().invoke(command, ["--results", str(v2), "--where", "rw=randwrite"])
    assert "where rw=randwrite" in sliced.stdout and "write IOPS" in sliced.stdout
    assert "read IOPS" not in sliced.stdout and "note: the" not in sliced.stderr
    # --summary: no tables and no note about them
    quiet = CliRunner().invoke(command, ["--results", str(v2), "--summary"])
    assert quiet.stdout == short.stdout and "note: the" not in quiet.stderr


def test_the_terminal_text_streams_part_by_part_as_it_renders_whole(v2: Path) -> None:
    from fslab.report.render.terminal import iter_table_text, table_lines

    c = build_comparison(v2)
    parts = list(iter_table_text(c, width=120))
    assert len(parts) > len(c.groups) and "".join(parts) == render_table(c, width=120)
    # the estimate that decides is near the lines the tables take
    tables = render_table(c, width=120).count("\n") - render_table(
        c, width=120, tables=False
    ).count("\n")
    assert 0.8 * tables <= table_lines(c) <= 1.25 * tables, (tables, table_lines(c))
