"""The most load under a latency limit (a workload's `latency_limit`): the climb's rule,
and a study's answer end to end on real runs of the engine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import fslab

from fslab.compare.limit import Step, _status, climb


def step(load: float, *lat: float) -> Step:
    return Step(load, lat, _status(lat, 1000.0), (1.0,) * len(lat))


def test_a_load_holds_only_when_every_run_is_under_the_limit() -> None:
    assert step(1, 10, 999).status == "held"
    assert step(1, 1000, 2000).status == "failed"
    assert step(1, 10, 1000).status == "mixed"
    assert step(1).status == "unmeasured", "no runs: nothing held"


def test_the_climb_stops_at_the_first_load_that_does_not_hold() -> None:
    steps = [step(1, 10), step(4, 20), step(16, 2000), step(64, 30)]
    best, above = climb(steps)
    assert (best and best.load, above and above.load) == (4, 16), "a later hold does not count"
    best, above = climb([step(1, 10, 5000), step(4, 20)])
    assert (best, above and above.status) == (None, "mixed")
    best, above = climb([step(1, 10), step(2, 20)])
    assert (best and best.load, above) == (2, None)


STUDY = """
name = "limit"
repeat = 2

[[target]]
name = "a"
dir = "{root}/a"

[[target]]
name = "b"
dir = "{root}/b"

[[workload]]
name = "loose"
rw = "randread"
iodepth = [1, 8]
file_size = "8MiB"
runtime = "1s"
direct = false
latency_limit = {{ vary = "iodepth", under = "10s" }}

[[workload]]
name = "tight"
rw = "randread"
bs = "8k"
iodepth = [1, 8]
file_size = "8MiB"
runtime = "1s"
direct = false
latency_limit = {{ vary = "iodepth", under = "1ns" }}
"""


@pytest.mark.engine
def test_a_study_answers_its_latency_limit_per_target(tmp_path: Path) -> None:
    for t in ("a", "b"):
        (tmp_path / t).mkdir()
    (tmp_path / "s.toml").write_text(STUDY.format(root=tmp_path))
    planned = fslab("plan", "s.toml", cwd=tmp_path)
    assert "latency limit: per target, the most iodepth whose p99 stays under 10s" in (
        planned.stdout
    ), planned.stdout
    done = fslab("run", "s.toml", "--results", "r.db", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    shown = fslab("compare", "--results", "r.db", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert "The most load under a latency limit:" in out, out
    assert "loose: the most iodepth with p99 under 10.0s" in out, out
    assert "a: iodepth 8, p99" in out and "(the highest load tried: more may hold)" in out, out
    assert "tight: the most iodepth with p99 under 1ns" in out, out
    assert "a: none: iodepth 1 already failed" in out, out
    doc = json.loads(fslab("compare", "--results", "r.db", "--format", "json", cwd=tmp_path).stdout)
    loose = next(r for r in doc["latency_limit"] if r["workload"] == "loose")
    answers = {a["target"]: a for a in loose["answers"]}
    assert answers["a"]["load"] == 8 and answers["a"]["above"] is None
    assert answers["b"]["vs_baseline"] is None or "verdict" in answers["b"]["vs_baseline"]
    tight = next(r for r in doc["latency_limit"] if r["workload"] == "tight")
    assert all(a["load"] is None for a in tight["answers"])
    for t in ("a", "b"):
        assert list((tmp_path / t).iterdir()) == [], "the targets' directories are left empty"


def test_a_latency_limit_must_name_a_load_axis(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    text = STUDY.format(root=tmp_path).replace('vary = "iodepth", under = "10s"',
                                               'vary = "threads", under = "10s"')  # fmt: skip
    (tmp_path / "s.toml").write_text(text)
    done = fslab("plan", "s.toml", cwd=tmp_path)
    assert done.returncode == 2
    assert "latency_limit.vary = `threads` needs a list of two loads or more" in done.stderr
    text = STUDY.format(root=tmp_path).replace('under = "1ns"', 'under = "1ns", percentile = 42')
    (tmp_path / "s.toml").write_text(text)
    done = fslab("plan", "s.toml", cwd=tmp_path)
    assert done.returncode == 2
    assert "`percentile` = 42: the runs keep p99" in done.stderr, done.stderr
