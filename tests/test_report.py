"""`fslab report`, `export` and `bundle`: the charts and conclusions built from a fixed
results database, Markdown and CSV against committed snapshots, the HTML as a person sees
it in headless Chromium, and the commands with their errors.

Snapshots live in tests/snapshots/; after an intended change, regenerate them with
`FSLAB_UPDATE_SNAPSHOTS=1 .venv/bin/pytest tests/test_report.py` and review the diff.
"""

from __future__ import annotations

import dataclasses
import difflib
import io
import json
import os
import re
import shutil
import tarfile
import zipfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from conftest import run_fslab
from report_fixture import (
    APP_TARGETS,
    EVIL,
    STUDY,
    TARGETS,
    _Db,
    make_app_fixture_db,
    make_fixture_db,
)

from fslab.compare import Comparison, build_comparison, each_row
from fslab.compare.model import PlannedRows
from fslab.report.charts import (
    MAX_POINT_CHARTS,
    Chart,
    Section,
    build_charts,
    chart_notes,
    target_styles,
)
from fslab.report.context import ReportData, load_report
from fslab.report.export import (
    export_rows,
    plan_export,
    render_export_csv,
    render_export_json,
    write_export_csv,
    write_export_json,
)
from fslab.report.findings import Answer, Gap, Grid, answers, summary
from fslab.report.format import code, md
from fslab.report.html import code_spans, figure, render_html, write_html
from fslab.report.markdown import render_markdown_report, render_svg
from fslab.report.render import render_table
from fslab.report.tables import table_views
from fslab.report.verdicts import verdict_headlines, verdicts
from fslab.stats.decision import Decision

SNAPSHOTS = Path(__file__).parent / "snapshots"
WHEN = datetime(2024, 1, 2, 3, 4, tzinfo=UTC)


@pytest.fixture(scope="module")
def fixture_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_fixture_db(tmp_path_factory.mktemp("report") / "fixture.db")


@pytest.fixture(scope="module")
def data(fixture_db: Path) -> ReportData:
    return load_report(fixture_db, generated_at=WHEN)


@pytest.fixture(scope="module")
def charts(data: ReportData) -> tuple[Chart, ...]:
    return build_charts(data)


def assert_snapshot(name: str, text: str) -> None:
    """`text` must equal tests/snapshots/`name`; FSLAB_UPDATE_SNAPSHOTS=1 rewrites it."""
    path = SNAPSHOTS / name
    if os.environ.get("FSLAB_UPDATE_SNAPSHOTS") == "1":
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    how = f"FSLAB_UPDATE_SNAPSHOTS=1 .venv/bin/pytest {Path(__file__).name}"
    if not path.exists():
        pytest.fail(f"no snapshot {path}: make it with `{how}` and review it")
    expected = path.read_text(encoding="utf-8")
    if text != expected:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(keepends=True),
                text.splitlines(keepends=True),
                f"snapshots/{name}",
                "rendered now",
                n=2,
            )
        )
        pytest.fail(
            f"{name} differs from its snapshot (first 80 lines of the diff below); if the "
            f"change is intended, update it with `{how}` and review the diff\n"
            + "\n".join(diff.splitlines()[:80]),
            pytrace=False,
        )


# -- what the report concludes ----------------------------------------------------------------


def test_answers_follow_the_decision_rule(data: ReportData) -> None:
    """Per family, each target against the baseline over all its points, the verdicts
    counted, and the best target with its margin: decided only where the data decide."""
    by = {(a.workload, a.family): a for a in answers(data.comparison)}
    assert set(by) == {("sweep", "random reads"), ("sweep", "random writes"),
                       ("manage", "copy"), ("manage", "create"), ("manage", "scan")}  # fmt: skip
    # randread: xfs leads ext4 by ~35% with 3% noise at every point
    reads = by[("sweep", "random reads")]
    assert (reads.best, reads.runner_up, reads.points) == ("xfs", "ext4", 3)
    assert reads.margin is not None and reads.margin.decided
    assert reads.margin.ratio == pytest.approx(1.35, rel=0.02)
    assert _text(reads.headline()).startswith("best: xfs, 35% ahead of ext4 in IOPS")
    xfs = next(t for t in reads.targets if t.target == "xfs")
    assert xfs.counts == {Decision.BETTER: 3}
    assert "35% higher IOPS than ext4" in _text(reads.lines()[0])
    assert "better at 3 of 3 points" in _text(reads.lines()[0])
    # randwrite: ext4 15000 vs xfs 14800 (1.4%) with 3% noise: no best, but the pooled
    # equivalence interval (90%, two one-sided tests) lies within the ±5% margin, so the
    # two are the same (no "not decided");
    # btrfs is 2.5x slower, worse at every point
    writes = by[("sweep", "random writes")]
    assert writes.best == "ext4" and writes.margin is not None and not writes.margin.decided
    assert _text(writes.headline()) == (
        "no best: ext4 and xfs the same within ±5% in IOPS (-1.2% to +3.9%)"
    )
    # wider than the margin: the interval is the answer, with no promise about more runs
    wide = dataclasses.replace(writes, margin=Gap(1.014, 0.93, 1.10, 3))
    assert _text(wide.headline()) == (
        "highest mean IOPS: ext4, 1.4% ahead of xfs (-7.0% to +10%): not decided"
    )
    btrfs = _text(writes.lines()[1])
    assert "2.52x lower IOPS than ext4 (2.23-2.85x), worse at 3 of 3 points" in btrfs
    # the pooled interval decides what no single point does, and the line says which
    xfs_w = _text(writes.lines()[0])
    assert (
        "equivalent to ext4 in IOPS (within ±5%: -3.8% to +1.2%); decided by the 3 "
        "points together, on their own: inconclusive at 3 of 3 points" in xfs_w
    ), xfs_w
    # files: xfs has 25% more files/s than ext4 with 2% noise
    copy = by[("manage", "copy")]
    assert copy.best == "xfs" and copy.margin is not None and copy.margin.decided


def test_flagged_points_get_no_verdict_and_stay_out_of_the_mean(app_data: ReportData) -> None:
    """btrfs's mail store runs are flagged as served from the cache: no verdict at any
    point, the ratio said only as measured, and never the best."""
    by = {a.workload: a for a in answers(app_data.comparison)}
    mail = by["mail"]
    btrfs = next(t for t in mail.targets if t.target == "btrfs")
    assert btrfs.gap is None and btrfs.measured is not None
    assert btrfs.flagged == {"cached": 2} and not btrfs.counts
    line = _text(mail.lines()[1])
    assert "as measured; no verdict, flagged (cached) at 2 of 2 points" in line
    kept = []
    for row in (r for g in app_data.comparison.groups if g.workload == "mail" for r in g.rows):
        vs = row.cell("btrfs").vs
        if row.metric.timed:
            assert vs is None or vs.decision is Decision.NONE, (row, vs)
        elif vs is not None and vs.decision is not Decision.NONE:
            kept.append(row.metric.name)
    # what counts pages, not time, keeps its verdict: a warm page cache does not change it
    assert set(kept) == {"cache_hit_pct"}


def test_a_flagged_baseline_is_named_not_its_targets(app_db: Path) -> None:
    """With btrfs (cached mail runs) as the baseline, the other targets get no verdict
    at the mail points because of the *baseline's* runs: the summary says so, and does
    not call their own runs flagged."""
    found = answers(build_comparison(app_db, baseline="btrfs"))
    mail = next(a for a in found if a.workload == "mail")
    others = {t.target: t for t in mail.targets}
    assert set(others) == {"ext4", "xfs"}
    for t in others.values():
        assert t.gap is None and not t.flagged and t.baseline_flagged == {"cached": 2}
    headline = _text(mail.headline())
    assert headline == (
        "no best named: the baseline btrfs's runs are flagged (cached), "
        "so no other target gets a verdict"
    ), headline
    line = _text(mail.lines()[0])
    assert "no verdict, btrfs's runs flagged (cached) at 2 of 2 points" in line, line
    assert "flagged (cached) at 2," not in line


# -- charts ------------------------------------------------------------------------------------


def test_charts_cover_sweeps_bars_telemetry_and_amplification(charts: tuple[Chart, ...]) -> None:
    ids = [c.id for c in charts]
    assert ids == [
        "sweep-iops-vs-iodepth",
        "sweep-bw-bytes-vs-iodepth",
        "sweep-lat-mean-ns-vs-iodepth",
        "sweep-lat-p99-ns-vs-iodepth",
        "manage-iops-vs-threads",
        "sweep-iops",
        "sweep-bw-bytes",
        "sweep-lat-mean-ns",
        "sweep-lat-p99-ns",
        "manage-iops",
        "manage-bw-bytes",
        "manage-lat-mean-ns",
        "sweep-rw-randread-iodepth-1-monitor",
        "sweep-rw-randwrite-iodepth-1-monitor",
        "manage-threads-1-monitor",
        "manage-threads-2-monitor",
        "sweep-write-amplification",
        "sweep-space-amplification",
        "manage-write-amplification",
        "manage-space-amplification",
    ]
    sweep = charts[0]
    assert sweep.section is Section.SWEEP and sweep.x_log
    assert [p.title for p in sweep.panels] == ["rw=randread", "rw=randwrite"]
    assert [t.target for t in sweep.panels[0].traces] == list(TARGETS)
    assert sweep.panels[0].traces[0].x == (1, 4, 16)
    assert sweep.y_label == "IOPS"
    lat = charts[2]
    assert lat.y_label == "mean latency (µs)"
    files = charts[4]
    assert files.x_label == "threads"
    assert sorted(p.title for p in files.panels) == ["copy", "create", "scan"]
    for c in charts:
        assert c.points() > 0, c.id


def test_monitoring_puts_targets_side_by_side_and_ops_on_the_time_axis(
    charts: tuple[Chart, ...],
) -> None:
    """A row per quantity and a column per target, each row on one scale; a files run's
    operations back to back on the time axis, its rates drawn as steps."""
    block = next(c for c in charts if c.id == "sweep-rw-randread-iodepth-1-monitor")
    assert block.kind == "monitor" and block.columns == len(TARGETS)
    rows = [block.panels[i : i + block.columns] for i in range(0, len(block.panels), 3)]
    assert [r[0].y_label.split(" (")[0] for r in rows] == [
        "Disk transfer rate", "Disk I/Os", "Page cache", "Memory available",
    ]  # fmt: skip
    assert [p.title.split(" · ")[0] for p in rows[0]] == list(TARGETS)
    for row in rows:
        assert len({p.y_top for p in row}) == 1  # one scale across the targets
        assert all(p.traces[0].target == t for p, t in zip(row, TARGETS, strict=True))
    assert not any(p.bands for p in block.panels)  # a block run has no operations
    rate = rows[0][0].traces[0]
    assert rate.shape == "hv" and rate.x[0] == 0.0 and rate.x[-1] == 8.0 and len(rate.x) == 9
    assert "written" in rows[0][0].note and rows[2][0].note.startswith("peak")
    files = next(c for c in charts if c.id == "manage-threads-1-monitor")
    bands = files.panels[0].bands
    assert [b.label for b in bands] == ["create", "copy", "scan"]
    assert [(b.start, b.end) for b in bands] == [(0.0, 3.0), (3.0, 7.0), (7.0, 12.0)]
    assert all(p.bands == bands for p in files.panels[:: files.columns])
    assert files.x_top == 12.0
    assert any("copy" in h for h in files.panels[0].traces[0].hover)


def test_every_figure_is_valid_plotly(data: ReportData, charts: tuple[Chart, ...]) -> None:
    go = pytest.importorskip("plotly.graph_objects")
    styles = target_styles(data.comparison.targets)
    for chart in charts:
        fig = figure(chart, styles)
        go.Figure({"data": fig["data"], "layout": fig["layout"]})  # raises on a bad key


def test_one_colour_per_target_in_every_chart(data: ReportData, charts: tuple[Chart, ...]) -> None:
    styles = target_styles(data.comparison.targets)
    colors: dict[str, set[str]] = {}
    for chart in charts:
        for trace in figure(chart, styles)["data"]:
            name = trace["legendgroup"]
            color = trace.get("line", trace.get("marker", {})).get("color")
            colors.setdefault(name, set()).add(color)
    assert all(len(c) == 1 for c in colors.values()), colors
    assert len({next(iter(c)) for c in colors.values()}) == len(TARGETS)


def test_svg_charts_are_drawn_and_escape_names(charts: tuple[Chart, ...], data: ReportData) -> None:
    styles = target_styles(data.comparison.targets)
    svg = render_svg(charts[0], styles)
    assert svg.startswith("<?xml") and "<svg" in svg
    assert "alert(" in svg and "<script>" not in svg  # the name is text, escaped by XML
    assert render_svg(charts[0], styles) == svg  # deterministic


# -- Markdown and CSV snapshots ----------------------------------------------------------------


def test_markdown_report_snapshot(data: ReportData, charts: tuple[Chart, ...]) -> None:
    text = render_markdown_report(data, charts, "report_files")
    # markup in names only inside code (spans and blocks show it as text), else escaped
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    prose = re.sub(r"(`+).*?\1", "", prose)
    assert "<script>" not in prose
    assert 'btrfs&lt;script&gt;alert("x")&lt;/script&gt;' in prose
    assert_snapshot("report.md", text)


def test_export_csv_snapshot(fixture_db: Path) -> None:
    columns, rows = export_rows(fixture_db)
    assert columns[:4] == ["study", "workload", "kind", "target"]
    assert {"rw", "bs", "iodepth", "threads", "set"} <= set(columns)
    assert_snapshot("runs.csv", render_export_csv(columns, rows))


def test_export_json_has_the_same_rows(fixture_db: Path) -> None:
    columns, rows = export_rows(fixture_db, where=["rw=randread", "rw=randwrite"])
    doc = json.loads(render_export_json(columns, rows))
    assert doc["schema_version"] == 1
    assert doc["columns"] == columns
    assert len(doc["rows"]) == len(rows) > 0
    assert {r["workload"] for r in doc["rows"]} == {"sweep"}
    # one row per completed run x metric: 3 targets x 6 points x 3 reps x (14 + 6)
    assert len(rows) == 3 * 6 * 3 * (14 + 6)


def test_export_filters_by_workload_as_compare_does(fixture_db: Path) -> None:
    _, rows = export_rows(fixture_db, where=["workload=sweep"])
    compared = {g.workload for g in build_comparison(fixture_db, where=["workload=sweep"]).groups}
    assert rows and {r["workload"] for r in rows} == compared == {"sweep"}


@pytest.fixture(scope="module")
def odd_db(fixture_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture and points that test export's columns and quoting: a group whose only
    run failed and one whose first point failed (each with a parameter of its own), and
    values, names and metrics that CSV must quote and JSON must nest."""
    path = tmp_path_factory.mktemp("export") / "odd.db"
    shutil.copyfile(fixture_db, path)
    db = _Db(path)
    try:
        db.seq = 1000
        failed = db.point("ext4", "alone", "block", {"zeta": 1, "rw": "read", "bs": 4096})
        db.run(failed, 0, "ext4", {}, None, {}, status="failed")
        params = {
            "omega": 2, "bs": [4096, 1], "opts": {"a": "x,y", "b": [1, {"c": None}]},
            "label": 'say "hi",\nbye', "ünï": "ö", "direct": False, "none": None,
        }  # fmt: skip
        first = db.point("ext4", 'odd, "workload"', "files", params)
        db.run(first, 0, "ext4", {}, None, {}, status="failed")
        later = db.point("xfs", 'odd, "workload"', "files", params)
        for rep in (0, 1):
            db.run(
                later, rep, "xfs", {'cre,ate"': (10.0, 0.0, 1e5)}, None,
                {'cre,ate".files_per_s': 10.5 + rep, "stat.ms": float("-inf"), "x": 1e300},
            )  # fmt: skip
    finally:
        db.results.close()
    return path


def test_export_orders_parameters_as_compare_does(odd_db: Path) -> None:
    columns, rows = export_rows(odd_db)
    keys = build_comparison(odd_db).param_keys
    assert "zeta" not in keys and {"omega", "opts"} <= set(keys)  # as compare groups them
    assert columns[4 : 4 + len(keys)] == list(keys)
    assert columns[-10] == "zeta"  # only in a group without a completed run: last
    assert any(r["workload"] == 'odd, "workload"' for r in rows)


@pytest.mark.parametrize("where", [(), ("rw=randread", "rw=randwrite"), ("omega=2",)])
def test_export_streams_what_export_rows_renders(odd_db: Path, where: tuple[str, ...]) -> None:
    plan = plan_export(odd_db, where=where)
    columns, rows = export_rows(odd_db, where=where)
    assert plan.columns == columns and rows
    out = io.BytesIO()
    assert write_export_csv(plan, out) == len(rows)
    assert out.getvalue() == render_export_csv(columns, rows).encode()
    out = io.BytesIO()
    assert write_export_json(plan, out) == len(rows)
    assert out.getvalue() == render_export_json(columns, rows).encode()
    none = dataclasses.replace(plan, points=())
    out = io.BytesIO()
    assert write_export_json(none, out) == 0
    assert out.getvalue() == render_export_json(columns, []).encode()
    out = io.BytesIO()
    assert write_export_csv(none, out) == 0
    assert out.getvalue() == render_export_csv(columns, []).encode()


@pytest.mark.parametrize(
    "args",
    [("--study", "nope"), ("--where", "nokey=1"), ("--where", "rw=sideways"), ("--where", "bad")],
)
def test_export_refuses_what_compare_refuses(fixture_db: Path, args: tuple[str, ...]) -> None:
    done = run_fslab("export", "--results", fixture_db, *args)
    compare = run_fslab("compare", "--results", fixture_db, *args)
    assert done.returncode == compare.returncode == 2
    assert done.stderr == compare.stderr and "error: " in done.stderr
    assert done.stdout == ""


def test_export_refuses_a_filter_without_completed_runs(odd_db: Path) -> None:
    done = run_fslab("export", "--results", odd_db, "--where", "zeta=1")
    compare = run_fslab("compare", "--results", odd_db, "--where", "zeta=1")
    assert done.returncode == compare.returncode == 1
    assert done.stderr == compare.stderr and "no completed runs matching" in done.stderr


def test_export_refuses_a_missing_database(tmp_path: Path) -> None:
    done = run_fslab("export", "--results", tmp_path / "none.db")
    assert done.returncode == 2 and "no results database here" in done.stderr
    assert done.stdout == ""


def test_markdown_escaping() -> None:
    assert md("a|b <i>_x_</i> *y* [z](u) & #1") == (
        "a\\|b &lt;i&gt;\\_x\\_&lt;/i&gt; \\*y\\* \\[z\\](u) &amp; \\#1"
    )
    assert code("plain") == "`plain`"
    assert code("has ` tick") == "``has ` tick``"


# -- HTML -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def html_path(
    data: ReportData, charts: tuple[Chart, ...], tmp_path_factory: pytest.TempPathFactory
) -> Path:
    path = tmp_path_factory.mktemp("html") / "report.html"
    path.write_text(render_html(data, charts), encoding="utf-8")
    return path


def test_html_is_self_contained_and_escaped(html_path: Path) -> None:
    text = html_path.read_text(encoding="utf-8")
    # no script, stylesheet, image or frame from elsewhere
    refs = re.findall(r"<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)\s*=", text, re.I)
    assert refs == []
    # ... and no link to one in the page itself (plotly.js, inlined, mentions its site)
    page = re.sub(r"(<script\b[^>]*>).*?(</script>)", r"\1\2", text, flags=re.S | re.I)
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", page, re.I)
    assert not re.search(r"""@import|url\(\s*['"]?(?:https?:)?//""", page, re.I)
    assert text.count("plotly.js v") == 1  # the library, inlined once
    assert EVIL not in text
    assert "btrfs&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in text
    assert "alert(\\u0022x\\u0022)" in text or 'alert(\\"x\\")' in text  # in the chart JSON
    assert text.count('class="plot fslab-chart"') == 20


def test_the_html_report_is_written_as_it_is_made(
    fixture_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`fslab report` writes the page piece by piece (a study of 100,000 runs makes 90 MB
    of it), the same page `render_html` makes whole, and nothing beside it; the tables'
    rows are made for the page and not kept (the summary keeps the few it answers by);
    tables that share a title get anchors numbered in order, each once."""
    data = load_report(fixture_db, generated_at=WHEN)
    # Without charts: a small study's charts read every row (a large one's do not).
    path = tmp_path / "report.html"
    write_html(path, data, ())
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]
    c = data.comparison
    planned = [g for g in c.groups if isinstance(g.rows, PlannedRows)]
    assert planned, "the fixture's groups are planned"
    for g in planned:
        once, again = list(each_row(g.rows)), list(each_row(g.rows))
        assert [(r.op, r.metric) for r in once] == [(r.op, r.metric) for r in again]
        kept = sum(a is b for a, b in zip(once, again, strict=True))
        assert kept < len(once), f"{g.workload}: all {len(once)} rows kept"
    assert path.read_text(encoding="utf-8") == render_html(data, ())
    monkeypatch.setattr("fslab.report.tables.group_title", lambda c, g: "same")
    anchors = [v.anchor for v in table_views(c)]
    assert anchors == ["table-same"] + [f"table-same-{i}" for i in range(2, len(c.groups) + 1)]
    assert len(anchors) >= 3, anchors


def _chromium() -> tuple[str, str]:
    browser = next(
        (
            p
            for p in ("/usr/lib/chromium/chromium", shutil.which("chromium") or "")
            if p and Path(p).is_file()
        ),
        None,
    )
    driver = shutil.which("chromedriver")
    if not browser or not driver:
        pytest.skip("needs Debian's chromium and chromium-driver (`scripts/setup` installs them)")
    return browser, driver


@pytest.fixture
def browser() -> Iterator[Any]:
    """Headless Chromium driven by the system chromedriver (nothing is downloaded); quit
    afterwards whatever happens, so no browser process is left behind."""
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    binary, driver_path = _chromium()
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for arg in (
        "--headless=new",
        "--no-sandbox",  # root in a container: the sandbox needs user namespaces
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1400,1000",
        "--hide-scrollbars",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def screenshot(browser: Any, shot: Path, height: int) -> None:
    """The page as drawn, `height` pixels tall at 1400 wide, into `shot`: not blank (over
    10 kB), and kept in $FSLAB_TEST_OUTPUT where that is set."""
    browser.set_window_size(1400, height)
    assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
    keep = os.environ.get("FSLAB_TEST_OUTPUT")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / shot.name)


def charts_drawn(browser: Any, page: Path) -> int:
    """Opens `page` and waits for its script to mark the body: how many charts it drew
    (a chart that failed fails the test)."""
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(page.as_uri())
    WebDriverWait(browser, 60).until(
        lambda d: d.execute_script(
            "return document.body.getAttribute('data-charts-drawn')"
            " || document.body.getAttribute('data-charts-error')"
        )
    )
    assert browser.execute_script("return document.body.getAttribute('data-charts-error')") is None
    return int(browser.execute_script("return document.body.getAttribute('data-charts-drawn')"))


_CHART_STATE = """
return Array.from(document.querySelectorAll('.fslab-chart')).map(function (el) {
  var traces = (el.data || []).map(function (t) {
    return {x: (t.x || []).length, y: (t.y || []).length};
  });
  return {id: el.id, drawn: !!el._fullLayout && !!el.querySelector('svg.main-svg'),
          traces: traces};
});
"""


def test_html_report_in_headless_chromium(
    browser: Any, html_path: Path, charts: tuple[Chart, ...], data: ReportData, tmp_path: Path
) -> None:

    assert charts_drawn(browser, html_path) == len(charts)

    states = browser.execute_script(_CHART_STATE)
    assert [s["id"] for s in states] == [f"chart-{c.id}" for c in charts]
    for state in states:
        assert state["drawn"], state["id"]
        assert state["traces"], f"{state['id']}: no traces"
        assert all(t["x"] > 0 and t["y"] > 0 for t in state["traces"]), state
    # drawn points: markers and bars plotly put in the SVG
    points = browser.execute_script(
        "return document.querySelectorAll('.fslab-chart .point').length"
    )
    assert points > 0

    tables = browser.execute_script("return document.querySelectorAll('table.comparison').length")
    assert tables == len(data.comparison.groups)
    found = summary(data.comparison)
    assert browser.execute_script("return document.querySelectorAll('div.answer').length") == len(
        _summary_answers(data.comparison)
    )
    grids = browser.execute_script("return document.querySelectorAll('table.grid').length")
    assert grids == sum(isinstance(item, Grid) for item in found) > 0
    kinds = browser.execute_script(
        "return document.querySelectorAll('table.warning-kinds tbody tr').length"
    )
    assert kinds == len({w.kind for g in data.comparison.groups for w in g.all_warnings()})
    for section in ("summary", "tables", "configuration", "methodology"):
        assert browser.execute_script(f"return !!document.getElementById('{section}')"), section
    # the name with markup is shown as text, and ran nothing
    assert EVIL in browser.execute_script("return document.body.innerText")
    assert browser.execute_script("return typeof window.alert") == "function"

    severe = [e for e in browser.get_log("browser") if e.get("level") == "SEVERE"]
    assert severe == []

    height = browser.execute_script("return document.documentElement.scrollHeight")
    screenshot(browser, tmp_path / "report.png", min(int(height), 16000))


# -- application models (oltp, mailstore) ------------------------------------------------------


@pytest.fixture(scope="module")
def app_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_app_fixture_db(tmp_path_factory.mktemp("app") / "app.db")


@pytest.fixture(scope="module")
def app_data(app_db: Path) -> ReportData:
    return load_report(app_db, generated_at=WHEN)


@pytest.fixture(scope="module")
def app_charts(app_data: ReportData) -> tuple[Chart, ...]:
    return build_charts(app_data)


def _text(spans: Any) -> str:
    return "".join(s.text for s in spans)


def test_app_charts_show_tps_jetstress_and_peaks_not_other_rates(
    app_charts: tuple[Chart, ...],
) -> None:
    by = {c.id: c for c in app_charts}
    for c in app_charts:
        if c.section in (Section.BARS, Section.SWEEP):
            # the maintenance reads' MiB/s (or any op's) is no headline; nor is the verdict
            assert "MiB/s" not in c.y_label and "bw-bytes" not in c.id, c.id
            assert "verdict" not in c.id and "maintenance" not in c.id, c.id
    bars = [c.id for c in app_charts if c.section is Section.BARS]
    assert bars == [
        f"{w}-{chart}"
        for w, charts in (
            ("mail", _MAIL_CHARTS),
            ("budget", _MAIL_CHARTS),
            ("synthetic", _OLTP_CHARTS),
        )
        for chart in charts
    ]
    sweeps = [c.id for c in app_charts if c.section is Section.SWEEP]
    assert sweeps == [f"synthetic-{chart}-vs-threads" for chart in _OLTP_CHARTS]

    tps = by["mail-txn-iops"]
    assert tps.title == "mail: transactions per second" and tps.y_label == "tps"
    assert tps.panels[0].traces[0].x == ("cache_size=8MiB", "cache_size=32MiB")
    assert [t.target for t in tps.panels[0].traces] == list(APP_TARGETS)
    assert tps.panels[0].traces[0].y == pytest.approx((2000.0, 2000.0))
    log = by["budget-jetstress-log-write-lat-ns"]
    assert log.y_label == "mean log write latency (µs)"
    assert log.panels[0].traces[1].y == pytest.approx((850.0,))  # xfs, over the 0.5 ms
    assert "The verdict's limit: under 0.5 ms." in log.caption
    assert "under 10 ms (the default)" in by["mail-jetstress-log-write-lat-ns"].caption
    sweep = by["synthetic-txn-iops-vs-threads"]
    assert sweep.x_label == "threads" and sweep.x_log
    assert sweep.panels[0].traces[0].x == (1, 8)
    assert sweep.panels[0].traces[0].y == pytest.approx((2000.0, 5000.0))
    peak = by["synthetic-device-iops-peak"]
    assert peak.y_label == "device IOPS peak" and "checkpoints" in peak.caption


_MAIL_CHARTS = (
    "txn-iops",
    "jetstress-transactional-iops",
    "jetstress-db-read-lat-ns",
    "jetstress-db-write-lat-ns",
    "jetstress-log-write-lat-ns",
    "device-iops-peak",
)
_OLTP_CHARTS = (
    "txn-iops",
    "data-read-iops",
    "data-read-lat-p99-ns",
    "log-write-lat-mean-ns",
    "log-write-lat-p99-ns",
    "device-iops-peak",
)


def test_app_points_are_named_by_their_transactions(app_data: ReportData) -> None:
    found = answers(app_data.comparison)
    assert {a.op for a in found} == {"txn"} and {a.family for a in found} == {"transactions"}
    assert sum(a.points for a in found) == len(app_data.comparison.groups)
    assert all(a.metric.label == "tps" for a in found)


def test_verdicts_count_passing_runs_and_name_their_limits(
    app_data: ReportData, data: ReportData
) -> None:
    rows = verdicts(app_data.comparison)
    assert [r.title for r in rows] == [
        "mail: threads=4 cache_size=8MiB",
        "mail: threads=4 cache_size=32MiB",
        "budget: threads=4 cache_size=8MiB log_lat_ms_max=0.5 read_lat_ms_max=1",
    ]
    assert all(c.text == "PASS (3/3)" and c.passed for r in rows[:2] for c in r.cells)
    assert rows[0].limits == "DB read < 20 ms, log write < 10 ms (defaults)"
    budget = rows[2]
    assert [(c.target, c.text, c.passed) for c in budget.cells] == [
        ("ext4", "PASS (3/3)", True),
        ("xfs", "FAIL (0/3)", False),
        ("btrfs", "FAIL (2/3)", False),
    ]
    assert budget.limits == "DB read < 1 ms, log write < 0.5 ms"
    assert budget.failed == ("xfs", "btrfs")

    (line,) = verdict_headlines(app_data.comparison)
    assert line.row == budget
    assert _text(line.sentence()) == (
        "xfs and btrfs FAIL (0/3, 2/3 runs pass): mean log write latency 850us and 483us, "
        "against the 0.5 ms limit (btrfs over it in 1 of 3 runs). ext4 passes (log write "
        "310us)."
    )
    assert verdicts(data.comparison) == () and verdict_headlines(data.comparison) == ()


def test_markdown_report_of_app_models(app_data: ReportData, app_charts: tuple[Chart, ...]) -> None:
    text = render_markdown_report(app_data, app_charts, "report_files")
    start = text.index("## Summary")
    summary = text[start : text.index("\n## ", start)]
    assert summary.startswith("## Summary\n\n### Verdicts\n\n")
    assert "| point | ext4 | xfs | btrfs | limits (mean latency) |" in summary
    assert (
        "| budget: threads=4 cache\\_size=8MiB log\\_lat\\_ms\\_max=0.5 "
        "read\\_lat\\_ms\\_max=1 | **PASS (3/3)** | **FAIL (0/3)** | **FAIL (2/3)** | "
        "DB read &lt; 1 ms, log write &lt; 0.5 ms |"
    ) in summary
    assert summary.count("**PASS (3/3)**") == 7
    assert "(defaults)" in summary
    # the failure heads the findings
    bullets = [line for line in summary.splitlines() if line.startswith("- ")]
    assert "`xfs` and `btrfs` **FAIL**" in bullets[0]
    assert bullets[1].startswith("- **mail · transactions** (2 points, txn tps): ")
    # the comparison tables' verdict rows: PASS and FAIL in bold, no Δ
    row = "| jetstress verdict | **PASS (3/3)** | **FAIL (0/3)** | — | **FAIL (2/3)** | — |"
    assert row in text
    assert "maintenance\\_read MiB/s" in text  # in the tables, not in a chart
    assert "report_files/mail-txn-iops.svg" in text
    assert "MiB/s](" not in text


def test_html_report_of_app_models(app_data: ReportData, app_charts: tuple[Chart, ...]) -> None:
    text = render_html(app_data, app_charts, plotly_js="")
    summary = text[text.index('<section id="summary">') : text.index("</section>")]
    assert summary.index('id="verdict-table"') < summary.index('class="headlines"')
    assert summary.count('<td class="pass">PASS (3/3)</td>') == 7
    assert summary.count('<td class="fail">FAIL (0/3)</td>') == 1
    assert summary.count('<td class="fail">FAIL (2/3)</td>') == 1
    assert "DB read &lt; 1 ms, log write &lt; 0.5 ms" in summary
    assert summary.count("(defaults)") == 2
    assert '<li class="verdict-line">' in summary
    # the comparison tables' verdict cells are styled too
    assert re.search(r'<td class="fail"[^>]*>FAIL \(0/3\)</td>', text)
    assert re.search(r'<td class="pass"[^>]*>PASS \(3/3\)</td>', text)


def test_app_report_in_headless_chromium(
    browser: Any, app_data: ReportData, app_charts: tuple[Chart, ...], tmp_path: Path
) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    path = tmp_path / "app.html"
    path.write_text(render_html(app_data, app_charts), encoding="utf-8")
    browser.get(path.as_uri())
    WebDriverWait(browser, 60).until(
        lambda d: d.execute_script("return document.body.getAttribute('data-charts-drawn')")
    )
    cells = browser.execute_script(
        "return Array.from(document.querySelectorAll('#verdict-table td.pass, "
        "#verdict-table td.fail')).map(function (td) {"
        " return [td.className, td.innerText, getComputedStyle(td).color]; })"
    )
    assert len(cells) == 9
    colors = {cls: color for cls, _, color in cells}
    assert colors["pass"] != colors["fail"]
    assert [text for cls, text, _ in cells if cls == "fail"] == ["FAIL (0/3)", "FAIL (2/3)"]
    # a long hint wraps: the warnings table stays inside the page
    width = browser.execute_script("return document.querySelector('main').clientWidth")
    table = browser.execute_script(
        "return document.querySelector('table.warning-kinds').getBoundingClientRect().width"
    )
    assert 0 < table <= width
    assert browser.execute_script(
        "return document.documentElement.scrollWidth <= document.documentElement.clientWidth"
    )
    severe = [e for e in browser.get_log("browser") if e.get("level") == "SEVERE"]
    assert severe == []


# -- the commands ------------------------------------------------------------------------------


def test_report_command_writes_html(fixture_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    done = run_fslab("report", "--results", fixture_db, "-o", out, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert f"report: wrote {out} (20 charts, 8 tables)" in done.stderr
    assert out.read_text(encoding="utf-8").startswith("<!doctype html>")
    assert [p.name for p in tmp_path.iterdir()] == ["r.html"]  # no temporary file left


def test_report_command_writes_markdown_and_images(fixture_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.md"
    done = run_fslab("report", "--results", fixture_db, "-o", out, timeout=120)
    assert done.returncode == 0, done.stderr
    images = sorted((tmp_path / "r_files").iterdir())
    assert len(images) == 20 and all(p.suffix == ".svg" for p in images)
    text = out.read_text(encoding="utf-8")
    for image in images:
        assert f"](r_files/{image.name})" in text


def test_report_into_a_missing_directory_writes_nothing(fixture_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "nowhere" / "r.html"
    done = run_fslab("report", "--results", fixture_db, "-o", out)
    assert done.returncode == 2
    assert done.stderr.startswith(f"error: {out}: the directory `{out.parent}` does not exist")
    assert "hint: create it first" in done.stderr
    assert not out.parent.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("args", "status", "message"),
    [
        (["--results", "{tmp}/none.db"], 2, "none.db: no results database here"),
        (["--study", "nope"], 2, "no study `nope` in"),
        (["--baseline", "zfs"], 2, "unknown baseline `zfs`"),
        (["--where", "bs=1m"], 2, "no point matches `bs=1m`"),
    ],
)
def test_report_errors_name_what_is_wrong(
    fixture_db: Path, tmp_path: Path, args: list[str], status: int, message: str
) -> None:
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    if "--results" not in args:
        args = ["--results", str(fixture_db), *args]
    out = tmp_path / "r.html"
    done = run_fslab("report", *args, "-o", out)
    assert done.returncode == status, done.stderr
    assert done.stderr.startswith("error: ") and message in done.stderr
    assert "hint: " in done.stderr
    assert not out.exists()


def test_report_of_an_empty_database(tmp_path: Path) -> None:
    from fslab.store.db import ResultsWriter

    ResultsWriter.open(tmp_path / "empty.db").close()
    done = run_fslab("report", "--results", tmp_path / "empty.db", "-o", tmp_path / "r.html")
    assert done.returncode == 1
    assert "no studies in this results database" in done.stderr
    assert not (tmp_path / "r.html").exists()


def test_export_command_to_stdout_and_file(fixture_db: Path, tmp_path: Path) -> None:
    done = run_fslab("export", "--results", fixture_db, "--where", "iodepth=4")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("study,workload,kind,target,rw,bs,")
    assert all(",4," in line for line in lines[1:])
    out = tmp_path / "runs.json"
    done = run_fslab("export", "--results", fixture_db, "-o", out)
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text())["rows"]
    done = run_fslab("export", "--results", fixture_db, "-o", tmp_path / "no" / "x.csv")
    assert done.returncode == 2 and "does not exist" in done.stderr


@pytest.mark.parametrize("name", ["b.tar.gz", "b.zip"])
def test_bundle_holds_study_db_reports_and_csvs(
    fixture_db: Path, tmp_path: Path, name: str
) -> None:
    out = tmp_path / name
    done = run_fslab("bundle", "--results", fixture_db, "-o", out, timeout=180)
    assert done.returncode == 0, done.stderr
    if name.endswith(".zip"):
        with zipfile.ZipFile(out) as z:
            names = z.namelist()
    else:
        with tarfile.open(out) as t:
            names = [m.name for m in t.getmembers() if m.isfile()]
    top = "report-fixture-ext4-vs-xfs"
    expected = {"README.md", "study.toml", "results.db", "report.html", "report.md",
                "summary.csv", "runs.csv"}  # fmt: skip
    assert expected <= {n.removeprefix(f"{top}/") for n in names}
    assert sum(n.startswith(f"{top}/report_files/") for n in names) == 20


def test_bundle_refuses_an_unknown_archive_name(fixture_db: Path, tmp_path: Path) -> None:
    done = run_fslab("bundle", "--results", fixture_db, "-o", tmp_path / "b.rar")
    assert done.returncode == 2
    assert "hint: end it with `.tar.gz`" in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_fixture_names_the_study(data: ReportData) -> None:
    assert data.comparison.study == STUDY
    assert data.comparison.targets == TARGETS
    assert dict(data.comparison.skipped_runs) == {"failed": 1}
    assert data.environments[0].runs == 3 * 6 * 3 + 3 * 2 * 2


def test_backticks_in_hints_become_code_and_the_rest_is_escaped() -> None:
    assert str(code_spans("use `direct = true` & <b>")) == (
        "use <code>direct = true</code> &amp; &lt;b&gt;"
    )
    assert str(code_spans("a `<script>` b")) == "a <code>&lt;script&gt;</code> b"


# -- a large study -----------------------------------------------------------------------------


def test_a_large_study_s_report_grows_with_its_workloads_not_its_points(
    tmp_path_factory: pytest.TempPathFactory, data: ReportData, charts: tuple[Chart, ...]
) -> None:
    """120 block points (60 queue depths x 2): no per-point bars or amplification, the
    monitoring of one point per `rw` only, every point in the overview, compact tables;
    the charts no more than the small study's, the bytes per point bounded."""
    depths = tuple(range(1, 61))
    db = make_fixture_db(tmp_path_factory.mktemp("large") / "large.db", depths=depths)
    large = load_report(db, generated_at=WHEN)
    groups = [g for g in large.comparison.groups if g.workload == "sweep"]
    assert len(groups) == 120 > MAX_POINT_CHARTS and len(large.comparison.groups) > 100
    got = build_charts(large)
    sweep = [c for c in got if c.id.startswith("sweep")]
    assert not [c for c in sweep if c.section in (Section.BARS, Section.AMPLIFICATION)]
    timelines = [c for c in sweep if c.section is Section.TIMELINE]
    assert [c.id for c in timelines] == [
        "sweep-rw-randread-iodepth-1-monitor", "sweep-rw-randwrite-iodepth-1-monitor",
    ]  # fmt: skip
    assert len(got) <= len(charts)
    assert chart_notes(large) == (
        "`sweep` has 120 points: no per-point bars; the summary's overview shows every "
        "point's ratio, the tables every number, and `fslab report --where KEY=VALUE` draws "
        "a part in full.",
        "The monitoring view of `sweep` draws 2 of its 120 points (`rw` randread, randwrite "
        "at iodepth=1); `fslab report --where KEY=VALUE` draws another.",
    )
    html = render_html(large, got, plotly_js="")
    # every point in the overview of its family, and a table each, without hover details
    overview = html[html.index('<section id="summary">') : html.index("</section>")]
    found = _summary_answers(large.comparison)
    assert overview.count('<table class="overview">') == len(found)
    assert overview.count('<tr><td class="label"><a href=') == sum(a.points for a in found)
    assert html.count('<table class="comparison">') == len(large.comparison.groups)
    tables = html[html.index('<section id="tables">') :]
    assert ' title="' not in tables.split("</section>")[0]
    # Twenty more depths (40 more points): each adds its table (about 3 KB here: three
    # targets, ten rows), its row in the overview and its x (with hover texts) in the
    # sweeps (about 1.5 KB): no chart.
    db = make_fixture_db(
        tmp_path_factory.mktemp("larger") / "larger.db", depths=depths + tuple(range(61, 81))
    )
    larger = load_report(db, generated_at=WHEN)
    more = build_charts(larger)
    assert [c.id for c in more] == [c.id for c in got]
    per_point = (len(render_html(larger, more, plotly_js="")) - len(html)) / 40
    assert per_point < 6_000, per_point


def test_the_terminal_summary_names_who_failed_which_limit(app_data: ReportData) -> None:
    text = render_table(app_data.comparison, width=100)
    summary = text[: text.index("\n\n", text.index("Summary:"))]
    assert "verdict · budget: " in summary and "xfs and btrfs FAIL" in summary
    assert "verdicts: every run of every target passed at the other" in summary
    assert "mail · transactions (2 points): " in summary


@pytest.mark.parametrize("width", [80, 100])
def test_the_terminal_never_cuts_a_number(app_data: ReportData, width: int) -> None:
    """Long labels (`device page cache growth MiB`) and five targets: blocks of targets,
    labels wrapped where even one target does not fit beside them, numbers whole."""
    text = render_table(app_data.comparison, width=width)
    assert max(len(line) for line in text.splitlines()) <= width
    assert "…" not in text


def _summary_answers(c: Comparison) -> list[Answer]:
    """Every family the summary answers, in sentences or in a grid's rows."""
    out: list[Answer] = []
    for item in summary(c):
        out += [r.answer for r in item.rows] if isinstance(item, Grid) else [item]
    return out
