"""Steady state (issue 14): studies turn the engine's on where a run can hold a window, its
keys in every workload the engine runs for a time, the engine's `not_steady` as the lab's
`unsteady`, no drift estimate of the lab's own for a run the engine judged; and, with the
real engine, a steady 60 s job on tmpfs that ends in seconds."""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO
from hdr import decode_hist

from fslab.engine import Report, check_job, run_job
from fslab.report.job_summary import render_summary
from fslab.store.db import ResultsWriter
from fslab.study.check import param_problems
from fslab.study.load import StudyError, parse_study
from fslab.study.plan import expand

STUDY = """name = "s"

[[target]]
name = "d"
dir = "/tmp"

[[workload]]
{keys}
"""


def job_of(keys: str) -> dict[str, Any]:
    """The engine job of a one-point study whose workload has `keys`."""
    [point] = expand(parse_study(STUDY.format(keys=keys), "s.toml")).points
    [job] = point.engine_jobs(Path("/x"))
    return job


def problems(keys: str) -> list[str]:
    """What reading the study, then checking its values, says is wrong with it."""
    text = STUDY.format(keys=keys)
    try:
        study = parse_study(text, "s.toml")
    except StudyError as e:
        return [f"{p.where}: {p.what}" for p in e.problems]
    return [f"{p.where}: {p.what}" for p in param_problems(study, "s.toml")]


# -- the study's default -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("keys", "on"),
    [
        ('runtime = "10s"', True),  # the block default
        ('runtime = "5s"', True),  # exactly a window of 5 rounds of 1 s
        ('runtime = "4.9s"', False),
        ('runtime = "3s"\nramp_time = "1s"', False),  # the demo's
        # The first interval judged starts after the ramp: 0.5 s of 5 are lost.
        ('runtime = "5s"\nramp_time = "0.5s"', False),
        ('runtime = "5.5s"\nramp_time = "0.5s"', True),
        ('runtime = "3s"\nsteady_window = 3', True),
        ('runtime = "5s"\nsteady_round = "2s"', False),
        ('runtime = "6s"\ninterval = "2s"\nsteady_window = 3', True),
        ('runtime = "6s"\ninterval = "4s"\nsteady_window = 3', False),  # rounds of 4 s
    ],
)
def test_a_study_turns_steady_state_on_where_the_runtime_holds_a_window(
    keys: str, on: bool
) -> None:
    job = job_of(keys)
    assert job.get("steady_state", False) is on, job


def test_a_study_that_says_so_sends_its_steady_keys_as_written() -> None:
    job = job_of('runtime = "3s"\nsteady_state = true\nsteady_range = "15%"\nsteady_round = "2s"')
    assert job["steady_state"] is True, "asked for, whether or not it can be attained"
    assert (job["steady_range"], job["steady_round"]) == (15.0, 2.0)
    assert job_of('runtime = "60s"\nsteady_state = false')["steady_state"] is False


def test_steady_state_can_be_a_sweep_axis_and_unset_leaves_the_point_ids_alone() -> None:
    plan = expand(parse_study(STUDY.format(keys="steady_state = [false, true]"), "s.toml"))
    assert [p.params["steady_state"] for p in plan.points] == [False, True]
    # A study that never names it keeps the ids its results were stored under.
    [point] = expand(parse_study(STUDY.format(keys='runtime = "10s"'), "s.toml")).points
    assert not any(k.startswith("steady") for k in point.params)


@pytest.mark.parametrize(
    ("keys", "on"),
    [
        ('kind = "oltp"\nruntime = "30s"', True),  # a round holds a 5 s checkpoint: 25 s
        ('kind = "oltp"\nruntime = "20s"', False),
        ('kind = "oltp"\nruntime = "10s"\ncheckpoint_interval = "1s"', True),
        ('kind = "oltp"\nruntime = "10s"\nsteady_round = "1s"', True),
        ('kind = "mailstore"\nruntime = "5s"', True),
        ('kind = "mailstore"\nruntime = "3s"', False),  # the demo's
    ],
)
def test_an_application_models_round_holds_a_checkpoint(keys: str, on: bool) -> None:
    assert job_of(keys).get("steady_state", False) is on


def test_a_bad_percentage_is_a_problem_at_its_key() -> None:
    [said] = problems('steady_slope = "ten"')
    assert said.endswith("steady_slope: 'ten' is not a percentage; write e.g. \"20%\", or 20")


def test_a_files_workload_takes_no_steady_keys() -> None:
    """A files op is a fixed amount of work (and the next op needs all of it done)."""
    [said] = problems('kind = "files"\nsteady_state = true')
    assert "steady_state" in said


# -- the engine's verdict in the lab -------------------------------------------------------


def _report(steady: bool) -> Report:
    """The fake engine's block report, its IOPS doubling over ten intervals; with the
    `steady_state` section of a run the engine found steady."""
    doc: dict[str, Any] = json.loads((REPO / "tests/fakes/reports/block.json").read_text())
    first = doc["series"]["points"][0]
    points = []
    for i in range(10):
        p = copy.deepcopy(first)
        p["t_s"] = 0.1 * (i + 1)
        p["read"]["iops"] = 1000.0 * (1 + i / 9)
        p["write"] = None
        points.append(p)
    doc["series"]["points"] = points
    if steady:
        doc["steady_state"] = {
            "attained": True, "rounds": 5, "window_start_s": 0.5, "window_end_s": 1.0,
            "range_pct": 5.0, "slope_pct": 2.0, "window_rounds": [],
            "results_start_s": 0.5, "results_end_s": 1.0,
            "limits": {"round_s": 0.1, "window": 5, "range_pct": 20.0, "slope_pct": 10.0,
                       "measure_s": 0.0},
        }  # fmt: skip
    return Report.from_json(doc)


def test_a_run_the_engine_judged_has_no_drift_estimate_of_the_labs(tmp_path: Path) -> None:
    db = ResultsWriter.open(tmp_path / "r.db")
    try:
        study = db.upsert_study("s", None, "")
        env = db.environment_id(
            {"kernel": "test", "cpu_model": "cpu", "cores": 2, "mem_bytes": 1 << 30}
        )
        drift: dict[bool, float | None] = {}
        read: dict[bool, float] = {}
        results: dict[bool, int] = {}
        series: dict[bool, int] = {}
        for steady in (False, True):
            pid = f"p{int(steady)}"
            db.add_point(pid, study, int(steady), "d", "w", "block", {}, {})
            run = db.start_run(pid, 0, env)
            report = _report(steady)
            db.finish_run(run, "ok", report=report, engine_json=report.model_dump_json())
            drift[steady], read[steady] = db.con.execute(
                "SELECT trend_drift, workload_read_bytes FROM run_fact WHERE run_id = ?", (run,)
            ).fetchone()
            results[steady] = sum(r.bytes for r in report.results if r.op == "read")
            series[steady] = report.measured_bytes(("read",))
    finally:
        db.close()
    assert drift[False] is not None and drift[False] > 0.5, "doubling IOPS drift"
    assert drift[True] is None, "its window is steady by construction"
    # What the run read, against what its devices read over the whole run: the results
    # of a plain run, the whole series of a steady one (its results are its window's).
    assert read[False] == results[False]
    assert read[True] == series[True] > results[True]


# -- the real engine -----------------------------------------------------------------------


@pytest.mark.engine
def test_a_steady_60s_job_on_tmpfs_ends_well_before_its_runtime(shm_file: Path) -> None:
    started = time.monotonic()
    run = run_job(
        {"filename": str(shm_file), "size": "64m", "rw": "randread", "bs": "4k",
         "ioengine": "sync", "runtime": "60s", "steady_state": True}
    )  # fmt: skip
    elapsed = time.monotonic() - started
    r = run.report
    s = r.steady_state
    assert s is not None and s.attained, s
    assert elapsed < 20, f"{elapsed:.1f} s"
    assert r.status == "ok" and not r.interrupted
    assert not [w for w in r.warnings if w.kind == "not_steady"]
    # The results are the window's: its rounds' I/Os, over its span.
    read = r.result("read")
    assert read is not None
    assert read.ios == sum(x.ios for x in s.window_rounds)
    assert r.runtime_s == pytest.approx(s.results_end_s - s.results_start_s)
    # 5 rounds of 1 s; where a neighbour made the 1 s rounds swing (a CI runner did), the
    # window may be of 2 s or 4 s rounds instead, each merged from closed 1 s rounds.
    spans = [x.end_s - x.start_s for x in s.window_rounds]
    assert spans == pytest.approx([2.0**s.widened] * 5), (s.widened, spans)
    assert r.runtime_s == pytest.approx(5.0 * 2**s.widened), "5 rounds, all one length"
    assert read.iops == pytest.approx(read.ios / r.runtime_s)
    hist = decode_hist(read.hist)
    assert hist.get_total_count() == read.ios
    assert s.window_end_s is not None and s.window_end_s < r.series.points[-1].t_s + 1e-9
    said = render_summary(r)
    assert f"steady: after {s.rounds} rounds; window " in said, said
    assert "(limit 20%)" in said and "(limit 10%)" in said


@pytest.mark.engine
def test_a_run_too_short_for_a_window_is_not_steady(shm_file: Path) -> None:
    run = run_job(
        {"filename": str(shm_file), "size": "16m", "rw": "randwrite", "bs": "4k",
         "ioengine": "sync", "runtime": "3s", "steady_state": True}
    )  # fmt: skip
    r = run.report
    assert r.status == "ok" and r.steady_state is not None
    assert not r.steady_state.attained and r.steady_state.window_start_s is None
    [w] = [w for w in r.warnings if w.kind == "not_steady"]
    assert "3 of the 5 rounds" in w.message, w.message
    assert w.hint and "`runtime`" in w.hint
    assert "steady: not attained (3 rounds), a window needs 5; results 0.0-3.0" in render_summary(r)


@pytest.mark.engine
def test_the_engine_takes_the_steady_keys_a_study_sends() -> None:
    job = job_of(
        'runtime = "30s"\nsteady_round = "2s"\nsteady_window = 4\nsteady_range = "15%"\n'
        'steady_slope = 5\nsteady_measure = "10s"'
    )
    assert job["steady_state"] is True
    assert check_job(job) == ()
