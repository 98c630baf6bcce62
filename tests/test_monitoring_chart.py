"""The report's monitoring view (seed 003's SysGauge picture): a row per quantity (disk
transfer rate, disk I/Os, page cache, memory available), a column per target on one scale,
a files run's operations named along its time axis; which points and which run it draws,
bounded for large studies; and the view as a person sees it in headless Chromium: every
panel drawn, the operations named, no two texts on top of each other.

Screenshots go to $FSLAB_TEST_OUTPUT where that is set (`monitoring*.png`)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from conftest import fslab
from report_fixture import TARGETS, make_fixture_db
from test_report import WHEN, browser, charts_drawn, screenshot  # noqa: F401  (a fixture)

from fslab.compare import Group
from fslab.report.charts import Chart, build_charts
from fslab.report.charts.timeline import MAX_STEPS, read_run
from fslab.report.context import ReportData, RunTelemetry, load_report
from fslab.report.html import render_html
from fslab.report.monitoring import (
    MONITORED_POINTS,
    Candidate,
    monitored_groups,
    representative,
)


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> ReportData:
    return load_report(make_fixture_db(tmp_path_factory.mktemp("monitor") / "f.db"),
                       generated_at=WHEN)  # fmt: skip


def _monitors(data: ReportData) -> list[Chart]:
    return [c for c in build_charts(data) if c.kind == "monitor"]


# -- which run, which points, how many steps ---------------------------------------------------


def test_the_run_drawn_is_the_median_of_those_no_one_disturbed() -> None:
    runs = [
        Candidate(1, 0, 9.0, disturbed=False),  # a cold first run: the slowest
        Candidate(2, 1, 5.0, disturbed=True),
        Candidate(3, 2, 6.0, disturbed=False),
        Candidate(4, 3, 7.0, disturbed=False),
        Candidate(5, 4, 6.5, disturbed=False),
    ]
    assert representative(runs).run_id == 5  # 6.0, 6.5, 7.0, 9.0: the lower middle
    assert representative([r for r in runs if r.disturbed]).run_id == 2  # none clean: all
    untimed = [Candidate(7, 1, None, False), Candidate(6, 0, None, False)]
    assert representative(untimed).run_id == 6  # no runtimes: the first repetition


def _group(**params: Any) -> Group:
    return Group("w", "block", tuple(params.items()), {}, ())


def test_a_workload_of_many_points_is_monitored_at_a_few() -> None:
    few = [_group(set="small", threads=t) for t in (1, 2)]
    assert monitored_groups(few) == few
    many = [_group(set=s, threads=t) for s in ("small", "medium", "large", "huge")
            for t in (1, 2, 3, 4)]  # fmt: skip
    got = monitored_groups(many)
    # a file set each, at the first thread count
    assert [dict(g.params) for g in got] == [
        {"set": s, "threads": 1} for s in ("small", "medium", "large", "huge")
    ]
    depths = [_group(iodepth=d) for d in range(1, 61)]
    got = monitored_groups(depths)
    assert len(got) == MONITORED_POINTS
    assert [dict(g.params)["iodepth"] for g in got] == [1, 21, 40, 60]  # spread, both ends


def test_a_long_run_is_drawn_in_bounded_steps_of_the_same_bytes() -> None:
    """20,000 intervals of 0.1 s: at most MAX_STEPS steps a line, each the mean over its
    intervals, so the bytes the steps add up to are the run's."""
    n = 20_000
    series = [
        {"t_s": (i + 1) / 10, "dt_s": 0.1, "cached_bytes": i, "dirty_bytes": 0,
         "available_bytes": 1 << 30,
         "devices": {"loop0": {"write_bytes_per_s": float(i % 7) * 1e6, "read_iops": 1.0}}}
        for i in range(n)
    ]  # fmt: skip
    doc = {"interval_s": 0.1, "series": series, "roles": {"members": ["loop0"]}}
    run = read_run(RunTelemetry(1, 0, "files", (("copy", doc), ("scan", doc))))
    assert len(run.starts) <= MAX_STEPS
    written = sum(
        v * (b - a) for v, a, b in zip(run.rates["write_bytes_per_s"], run.starts, run.ends,
                                       strict=True)
    )  # fmt: skip
    expected = 2 * sum(float(i % 7) * 1e6 * 0.1 for i in range(n))
    assert written == pytest.approx(expected, rel=1e-9)
    assert [(b.label, b.start, b.end) for b in run.bands] == [
        ("copy", 0.0, pytest.approx(2000.0)), ("scan", pytest.approx(2000.0), pytest.approx(4000.0))
    ]  # fmt: skip


def test_only_the_monitored_points_telemetry_is_read(data: ReportData) -> None:
    assert len(data.telemetry) == len(monitored_groups(data.comparison.groups))
    for runs in data.telemetry.values():
        assert set(runs) == set(TARGETS)
        # three repetitions of equal runtime: the middle one
        assert {r.rep for r in runs.values()} <= {0, 1}


# -- in a browser --------------------------------------------------------------------------------

_MONITOR_STATE = """
return Array.from(document.querySelectorAll('#section-timeline .fslab-chart')).map(function (el) {
  function box(e) { var r = e.getBoundingClientRect();
    return {text: e.textContent, l: r.left, r: r.right, t: r.top, b: r.bottom}; }
  return {
    id: el.id,
    subplots: el.querySelectorAll('.cartesianlayer > .subplot').length,
    lines: el.querySelectorAll('.scatterlayer .trace .js-line').length,
    texts: Array.from(el.querySelectorAll('.infolayer .annotation-text')).map(box),
  };
});
"""


def _overlaps(texts: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Pairs of texts whose boxes cross (a pixel of slack)."""
    out = []
    for i, a in enumerate(texts):
        for b in texts[i + 1 :]:
            if (min(a["r"], b["r"]) - max(a["l"], b["l"]) > 1
                    and min(a["b"], b["b"]) - max(a["t"], b["t"]) > 1):  # fmt: skip
                out.append((a["text"], b["text"]))
    return out


def check_monitoring(driver: Any, page: Path, charts: list[Chart], shot: Path) -> None:
    """Every monitor chart drawn: a subplot per panel and per column's strip of
    operations, a line per trace, each operation named in every column, the column and
    row titles there, no two texts overlapping; then a screenshot of the section."""
    assert charts_drawn(driver, page) > 0
    states = {s["id"]: s for s in driver.execute_script(_MONITOR_STATE)}
    assert list(states) == [f"chart-{c.id}" for c in charts]
    for chart in charts:
        state = states[f"chart-{chart.id}"]
        ops = [b.label for b in chart.panels[0].bands]
        strips = chart.columns if ops else 0
        assert state["subplots"] == len(chart.panels) + strips, state
        assert state["lines"] == sum(len(p.traces) for p in chart.panels)
        texts = [t["text"] for t in state["texts"]]
        for op in ops:
            assert texts.count(op) == chart.columns, (op, texts)
        for panel in chart.panels[: chart.columns]:
            assert any(t.startswith(panel.title.split(" · ")[0]) for t in texts), panel.title
        for panel in chart.panels[:: chart.columns]:
            assert any(t.startswith(panel.y_label.split(" (")[0]) for t in texts)
        assert _overlaps(state["texts"]) == [], chart.id
    severe = [e for e in driver.get_log("driver") if e.get("level") == "SEVERE"]
    assert severe == []
    top, height = driver.execute_script(
        "var s = document.getElementById('section-timeline'); var r = s.getBoundingClientRect();"
        " return [r.top + window.scrollY, r.height];"
    )
    # the window's height holds its frame too: the section needs that much more
    frame = driver.execute_script("return window.outerHeight - window.innerHeight")
    tall = min(int(height) + 20 + int(frame), 16000)
    driver.set_window_size(1400, tall)
    driver.execute_script(f"window.scrollTo(0, {int(top) - 10});")
    screenshot(driver, shot, tall)


def test_monitoring_view_in_headless_chromium(
    browser: Any,  # noqa: F811  (the fixture)
    data: ReportData,
    tmp_path: Path,
) -> None:
    charts = build_charts(data)
    page = tmp_path / "report.html"
    page.write_text(render_html(data, charts), encoding="utf-8")
    monitors = [c for c in charts if c.kind == "monitor"]
    assert len(monitors) == 4 and any(c.panels[0].bands for c in monitors)
    check_monitoring(browser, page, monitors, tmp_path / "monitoring-fixture.png")


# -- a real files run --------------------------------------------------------------------------

STUDY = """
name = "monitoring"

[[target]]
name = "ext4"
fs = "ext4"
loop = { size = "256MiB" }

[[target]]
name = "xfs"
fs = "xfs"
loop = { size = "512MiB" }

[[workload]]
kind = "files"
set = "custom"
nr_files = 600
file_size = "16KiB"
ops = ["copy", "scan", "touch", "delete"]
"""


@pytest.mark.root
@pytest.mark.engine
def test_a_real_files_run_s_monitoring_view(
    lab: Path,
    browser: Any,  # noqa: F811  (the fixture)
) -> None:
    """A small files study run for real (ext4 and xfs on loop devices): its report's
    monitoring view has the four quantities, both targets side by side and the
    operations in the order they ran, and reads in a browser."""
    study = lab / "monitoring.toml"
    study.write_text(STUDY)
    done = fslab("run", str(study), "--results", "r.db", cwd=lab)
    assert done.returncode == 0, done.stderr
    con = sqlite3.connect(lab / "r.db")
    try:
        docs = [json.loads(d) for (d,) in con.execute("SELECT data FROM telemetry")]
    finally:
        con.close()
    assert docs and all(list(d)[:2] == ["create", "copy"] for d in docs)
    data = load_report(lab / "r.db")
    monitors = _monitors(data)
    assert len(monitors) == 1
    chart = monitors[0]
    assert chart.columns == 2
    rows = [p.y_label.split(" (")[0] for p in chart.panels[:: chart.columns]]
    assert rows == ["Disk transfer rate", "Disk I/Os", "Page cache", "Memory available"]
    ops = [b.label for b in chart.panels[0].bands]
    asked = ["copy", "scan", "touch", "delete"]
    assert ops[0] == "create" and [op for op in ops if op in asked] == asked, ops
    assert all(p.note for p in chart.panels[: chart.columns])  # bytes each target moved
    page = lab / "report.html"
    done = fslab("report", "--results", "r.db", "-o", str(page), cwd=lab)
    assert done.returncode == 0, done.stderr
    check_monitoring(browser, page, monitors, lab / "monitoring-files-run.png")
