"""A study across passes (`fslab history`, `fslab.report.history`,
`fslab.stats.regression`): each night's database a pass, ordered by when it ran; a
regression injected into the latest pass is flagged and `--fail-on regression` exits 1,
a series without one passes; what changed between passes is named; the trend charts
open offline in headless Chromium."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from test_compare import PARAMS, ResultsDb, _ops
from test_merge import ENV, _with_environment
from test_report import EVIL, browser, charts_drawn, screenshot  # noqa: F401  (a fixture)

from fslab.cli import main
from fslab.report.history import history
from fslab.stats.regression import ALPHA, MIN_REFERENCE, Trend, check
from fslab.store.db import ResultsWriter
from fslab.store.merge import merge

DAY = 86_400.0
BASE = {("ext4", "randread"): 70_000.0, ("ext4", "randwrite"): 50_000.0,
        ("xfs", "randread"): 72_000.0, ("xfs", "randwrite"): 61_000.0}  # fmt: skip


def _night(
    path: Path,
    day: int,
    *,
    factor: Mapping[tuple[str, str], float] | None = None,
    targets: Sequence[str] = ("ext4", "xfs"),
    seed: int = 0,
    drift: float = 0.015,
    **env: object,
) -> Path:
    """One pass of the `nightly` study on day `day`: each point's three runs 2% apart
    around its base rate, the night itself `drift` off, every target alike (the
    machine's state that day), and `factor` on some (target, rw): a regression
    injected."""
    rng = np.random.default_rng(seed * 1000 + day)
    db = ResultsDb(path)
    sid = db.study("nightly")
    night = float(np.exp(rng.normal(0, drift)))
    for target in targets:
        for rw in ("randread", "randwrite"):
            pid = db.point(sid, target, {**PARAMS, "rw": rw})
            f = (factor or {}).get((target, rw), 1.0)
            for rep in range(3):
                iops = BASE[(target, rw)] * night * f * float(np.exp(rng.normal(0, 0.02)))
                db.run(pid, rep, _ops(rw, iops))
    db.close()
    con = sqlite3.connect(path)
    with con:
        con.execute("UPDATE run SET started_at = started_at + ?, ended_at = ended_at + ?",
                    (day * DAY, day * DAY))  # fmt: skip
    con.close()
    _with_environment(path, **env)
    return path


def _nights(tmp: Path, n: int, **last: Any) -> list[Path]:
    """`n` nights, the last with `last` (a factor, an environment change)."""
    return [_night(tmp / f"night-{d:02d}.db", d, **(last if d == n - 1 else {})) for d in range(n)]


def _run(*args: str | Path) -> Any:
    return CliRunner().invoke(main, ["history", *(str(a) for a in args)])


def _results(paths: Sequence[Path]) -> list[str]:
    return [x for p in paths for x in ("--results", str(p))]


def test_a_regression_injected_into_the_latest_pass_is_flagged(tmp_path: Path) -> None:
    """xfs's random reads 20% slower in the twelfth night: that series, and only it, is a
    regression; `--fail-on regression` exits 1 and names it."""
    paths = _nights(tmp_path, 12, factor={("xfs", "randread"): 0.8})
    h = history(paths)
    assert [p.label for p in h.passes] == [f"night-{d:02d}" for d in range(12)]
    latest = {(s.target, s.op): s.latest for s in h.series}
    assert latest[("xfs", "read")].trend is Trend.REGRESSION, latest
    assert latest[("xfs", "read")].change == pytest.approx(0.8, abs=0.04)
    assert all(c.trend is Trend.IN_LINE for k, c in latest.items() if k != ("xfs", "read"))
    done = _run(*_results(paths), "--fail-on", "regression")
    assert done.exit_code == 1, done.output
    assert "fail-on regression: 1 regression(s) in the latest pass" in done.stderr
    assert re.search(r"xfs: randio rw=randread IOPS 0\.[78]\d*x of the 10 passes", done.stderr)
    assert "1 regression(s) in the latest pass (night-11)" in done.stdout


def test_a_series_without_a_regression_passes(tmp_path: Path) -> None:
    """The same twelve nights without the injection: nothing flagged, exit 0; given in
    any order, the passes are ordered by when they ran."""
    paths = _nights(tmp_path, 12)
    done = _run(*reversed(paths), "--fail-on", "regression")  # as arguments (a shell's glob)
    assert done.exit_code == 0, done.output
    assert "no regression in the latest pass (night-11)" in done.stdout
    assert "fail-on regression: no regression" in done.stderr
    doc = json.loads(_run(*_results(paths[::2] + paths[1::2]), "--format", "json").stdout)
    assert [p["label"] for p in doc["passes"]] == [f"night-{d:02d}" for d in range(12)]
    checks = [c["trend"] for s in doc["series"] for c in s["checks"]]
    # Four passes before a check, at least: the first four of each series say so.
    assert checks.count("short") == 4 * MIN_REFERENCE
    assert set(checks) == {"short", "in line"}


def test_a_regression_hidden_in_the_machines_drift_is_seen_against_the_baseline(
    tmp_path: Path,
) -> None:
    """Nights 8% apart, all targets alike (as this VM's passes are), and xfs's random
    reads 15% slower in the last: within what the passes before predict for xfs alone,
    far outside what they predict with the day's factor (the median move of the night's
    four series) taken out."""
    paths = [_night(tmp_path / f"n{d:02d}.db", d, drift=0.08, seed=5,
                    factor={("xfs", "randread"): 0.85} if d == 11 else None)
             for d in range(12)]  # fmt: skip
    h = history(paths)
    s = next(s for s in h.series if (s.target, s.op) == ("xfs", "read"))
    r = s.latest_relative
    assert r is not None and r.trend is Trend.REGRESSION, (s.latest, r)
    assert r.change == pytest.approx(0.85, abs=0.05)
    assert s.trend is Trend.REGRESSION
    assert s.latest.low is not None and r.low is not None and s.latest.low < r.low
    assert [x.target for x in h.regressions()] == ["xfs"]
    assert all(x.trend is Trend.IN_LINE for x in h.series if x is not s)


def test_too_few_passes_check_nothing(tmp_path: Path) -> None:
    paths = _nights(tmp_path, 3, factor={("xfs", "randread"): 0.5})
    h = history(paths)
    assert {s.latest.trend for s in h.series} == {Trend.SHORT}
    assert _run(*_results(paths), "--fail-on", "regression").exit_code == 0


def test_what_changed_between_passes_is_named_and_a_new_engine_starts_afresh(
    tmp_path: Path,
) -> None:
    """A kernel upgrade is named with the pass that first ran on it; a new engine
    major.minor starts a new era: its passes are not checked against the ones before."""
    kernel = {**ENV}
    paths = _nights(tmp_path, 8, kernel="6.19.0")
    h = history(paths)
    assert h.passes[-1].changes == (f"kernel 6.19.0 (before: {kernel['kernel']})",)
    assert h.passes[-1].comparable and not h.passes[-2].changes
    tools = {**ENV["tools"], "fslab-engine": "fslab-engine 0.6.0"}  # type: ignore[dict-item]
    paths[-1].unlink()
    _night(paths[-1], 7, tools=tools, factor={("xfs", "randread"): 0.5})
    h = history(paths)
    assert not h.passes[-1].comparable
    assert "fslab-engine fslab-engine 0.6.0 (before: fslab-engine 0.5.0)" in h.passes[-1].changes
    # Halved, but by an engine whose numbers do not compare: nothing to check it against.
    assert {s.latest.trend for s in h.series} == {Trend.SHORT}
    out = _run(*_results(paths)).stdout
    assert "a new era, not checked against the passes before it" in " ".join(out.split())


def test_passes_imported_into_one_database_are_the_same_history(tmp_path: Path) -> None:
    """`fslab import NIGHT --as LABEL` into one database: its passes are the labels, its
    series the same as the nights given one by one."""
    paths = _nights(tmp_path, 6, factor={("ext4", "randwrite"): 0.7})
    one = tmp_path / "history.db"
    shutil.copy(paths[0], one)
    db = ResultsWriter.open(one, create=False)
    try:
        for p in paths[1:]:
            merge(db, p, label=p.stem)
    finally:
        db.close()
    a, b = history(paths), history([one])
    # The database's own runs are a pass under its file name; the imports under their labels.
    assert [p.label for p in b.passes] == ["history", *(p.label for p in a.passes[1:])]
    assert [(s.target, s.op, [v.mean if v else None for v in s.values]) for s in b.series] == [
        (s.target, s.op, [pytest.approx(v.mean) if v else None for v in s.values]) for s in a.series
    ]
    assert [s.latest.trend for s in b.series] == [s.latest.trend for s in a.series]


def test_a_point_missing_from_a_pass_is_a_gap(tmp_path: Path) -> None:
    paths = [_night(tmp_path / f"n{d}.db", d, targets=("ext4",) if d == 2 else ("ext4", "xfs"))
             for d in range(6)]  # fmt: skip
    h = history(paths)
    xfs = [s for s in h.series if s.target == "xfs"]
    assert xfs and all(s.values[2] is None and s.checks[2].trend is Trend.NONE for s in xfs)
    assert all(s.latest.trend is Trend.IN_LINE for s in xfs)


def test_bad_input_is_named_and_exits_2(tmp_path: Path) -> None:
    done = _run("--results", tmp_path / "nope.db")
    assert done.exit_code == 2
    assert "nope.db" in done.stderr and "hint:" in done.stderr
    paths = _nights(tmp_path, 2)
    done = _run(*_results(paths), "--study", "other")
    assert done.exit_code == 2 and "other" in done.stderr, done.output


# -- the rule, simulated ---------------------------------------------------------------------


def test_the_rule_cries_wolf_at_its_stated_rate() -> None:
    """Passes that vary as before (normal on logs): a check calls one a regression in
    alpha/2 of cases, at 4 reference passes and at 10 (the prediction interval is exact
    there); with the minimum change, a very steady series flags nothing."""
    rng = np.random.default_rng(3)
    for k in (4, 10):
        logs = rng.normal(0, 0.03, (20_000, k + 1))
        flagged = sum(
            check(list(np.exp(row)), True, window=k)[-1].trend is Trend.REGRESSION
            for row in logs[:, : k + 1]
        )
        rate = flagged / len(logs)
        # Half of alpha below (worse), half above; MIN_CHANGE keeps a few more in line.
        assert rate <= ALPHA / 2 + 0.0015, (k, rate)
    steady = np.exp(rng.normal(0, 0.002, 11))
    steady[-1] *= 0.97  # far outside a 0.2% spread, but within 5%
    assert check(list(steady), True)[-1].trend is Trend.IN_LINE


def test_the_rule_sees_a_20_percent_drop_in_a_series_of_3_percent_noise() -> None:
    rng = np.random.default_rng(4)
    seen = 0
    for _ in range(2000):
        values = list(np.exp(rng.normal(0, 0.03, 11)))
        values[-1] *= 0.8
        seen += check(values, True)[-1].trend is Trend.REGRESSION
    assert seen / 2000 > 0.95
    # Lower latency is better: a 20% rise is the regression, a 20% fall an improvement.
    values = [100.0, 101.0, 99.0, 100.5, 99.5, 100.0, 120.0]
    assert check(values, False)[-1].trend is Trend.REGRESSION
    values[-1] = 80.0
    assert check(values, False)[-1].trend is Trend.IMPROVEMENT


# -- the charts ------------------------------------------------------------------------------


def test_the_trend_charts_open_offline_in_headless_chromium(
    browser: Any,  # noqa: F811
    tmp_path: Path,
) -> None:
    paths = _nights(tmp_path, 10, factor={("xfs", "randread"): 0.8})
    con = sqlite3.connect(paths[-1])
    with con:
        con.execute("UPDATE point SET target = ? WHERE target = 'ext4'", (EVIL,))
    con.close()
    page = tmp_path / "history.html"
    done = _run(*_results(paths), "--html", page)
    assert done.exit_code == 0, done.output
    text = page.read_text()
    assert "<script src" not in text and EVIL not in text
    assert charts_drawn(browser, page) == 2
    assert (
        browser.execute_script(
            "return document.querySelectorAll('.fslab-chart svg.main-svg').length"
        )
        >= 2
    )
    body = browser.execute_script("return document.body.innerText")
    assert "1 regression(s) in night-09" in body and EVIL in body
    assert [e for e in browser.get_log("browser") if e.get("level") == "SEVERE"] == []
    screenshot(browser, tmp_path / "history.png", 2400)
