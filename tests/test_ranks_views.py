"""The ranks of multi-host runs in every view (`fslab.report.rank_views`): `fslab compare
--ranks`, `fslab report --ranks` (HTML and Markdown) and `fslab export --ranks`. One
study run once with two ranks on this machine serves every test that reads one; the
views' numbers are checked against the run's aggregate."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import fslab, loops_under, mounts_under, run_fslab
from report_fixture import make_fixture_db

from fslab.report.context import load_report
from fslab.report.html import render_html
from fslab.report.markdown import render_markdown_report
from fslab.report.rank_views import rank_views, ranks_sentence, sentence_text
from fslab.store.query import RankRow, ResultsError

# -- the views of rank rows ------------------------------------------------------------------


def _row(run: int, rank: int, ios: int, *, start: float = 100.0, runtime: float = 2.0,
         point: str = "p1", params: dict[str, object] | None = None, rep: int = 0,
         imbalance: float | None = 1.5, skew: float | None = 0.004) -> RankRow:  # fmt: skip
    return RankRow(point, run, "ext4", "block", params or {"bs": 4096}, rep, rank, f"h{rank}",
                   "ok", start, runtime, ios, ios * 4096, imbalance, skew)  # fmt: skip


def test_each_rank_s_rate_share_and_start_are_its_own() -> None:
    ranks = rank_views("s", [_row(1, 0, 3000, start=100.004), _row(1, 1, 1000, runtime=0.5)])
    (point,) = ranks.points
    (run,) = point.runs
    first, second = run.ranks
    assert (first.iops, second.iops) == (1500.0, 2000.0)  # over its own runtime
    assert (first.bw_bytes, first.share, second.share) == (1500.0 * 4096, 0.75, 0.25)
    assert first.start_offset_s == pytest.approx(0.004) and second.start_offset_s == 0.0
    assert (run.ios, run.hosts, run.imbalance, run.start_skew_s) == (4000, 2, 1.5, 0.004)
    assert sentence_text(ranks_sentence(point)) == (
        "ext4 block: 2 ranks on 2 hosts, imbalance 1.50x, start skew 4.0 ms"
    )


def test_a_point_of_several_runs_says_the_range_and_the_largest_skew() -> None:
    rows = [
        _row(1, 0, 10, imbalance=1.02, skew=0.001), _row(1, 1, 10, imbalance=1.02, skew=0.001),
        _row(2, 0, 10, rep=1, imbalance=None, skew=1.5),
        _row(2, 1, 0, rep=1, imbalance=None, skew=1.5),
        _row(3, 0, 10, point="p2", params={"bs": 16384}, imbalance=1.2),
        _row(3, 1, 10, point="p2", params={"bs": 16384}, imbalance=1.2),
        _row(4, 0, 0, point="p3", params={"bs": 65536}, imbalance=None),
    ]  # fmt: skip
    ranks = rank_views("s", rows)
    assert [p.title for p in ranks.points] == ["block bs=4KiB", "block bs=16KiB", "block bs=64KiB"]
    assert ranks.runs == 4
    said = [sentence_text(s) for s in ranks.sentences()]
    assert said == [
        "ext4 block bs=4KiB: 2 ranks on 2 hosts, 2 runs, imbalance 1.02x (and 1 run with a "
        "rank that did no I/O), start skew up to 1.50 s",
        "ext4 block bs=16KiB: 2 ranks on 2 hosts, imbalance 1.20x, start skew 4.0 ms",
        "ext4 block bs=64KiB: 1 rank on 1 host",
    ]
    # a run that did no I/O has no shares
    assert ranks.points[2].runs[0].ranks[0].share is None


def test_no_ranks_is_an_error_that_says_whether_a_filter_chose_them() -> None:
    with pytest.raises(ResultsError, match=r"^study `s` has no completed multi-host runs$"):
        rank_views("s", [])
    with pytest.raises(ResultsError, match="multi-host runs matching the filter") as e:
        rank_views("s", [_row(1, 0, 10)], points={"other"}, filtered=True)
    assert e.value.hint is not None and "--hosts" in e.value.hint


# -- a study without multi-host runs ---------------------------------------------------------


@pytest.fixture(scope="module")
def single_host_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_fixture_db(tmp_path_factory.mktemp("single") / "fixture.db")


def test_without_multi_host_runs_every_view_of_ranks_says_so_alike(
    single_host_db: Path, tmp_path: Path
) -> None:
    compared = run_fslab("compare", "--results", single_host_db, "--ranks")
    assert compared.returncode == 1 and compared.stdout == ""
    assert compared.stderr.startswith(
        "error: study `report fixture: ext4 vs xfs` has no completed multi-host runs\n"
    )
    assert "hint: `fslab run STUDY.toml --hosts HOST:SLOTS,...`" in compared.stderr
    for args in (("export",), ("export", "-o", str(tmp_path / "ranks.csv")),
                 ("report", "-o", str(tmp_path / "r.html"))):  # fmt: skip
        done = run_fslab(args[0], "--results", single_host_db, "--ranks", *args[1:])
        assert (done.returncode, done.stdout, done.stderr) == (1, "", compared.stderr), args
    assert list(tmp_path.iterdir()) == [], "nothing written"
    filtered = run_fslab("export", "--results", single_host_db, "--ranks", "--where", "iodepth=4")
    assert filtered.returncode == 1 and "multi-host runs matching the filter" in filtered.stderr


def test_a_report_without_ranks_reads_no_ranks_and_has_no_section(single_host_db: Path) -> None:
    data = load_report(single_host_db)
    assert data.ranks is None
    assert 'id="ranks"' not in render_html(data, (), plotly_js="")
    assert "## Ranks" not in render_markdown_report(data, ())


# -- a study run on two ranks ----------------------------------------------------------------

STUDY = """
name = "ranks views"

[[target]]
name = "a"
dir = "{root}/a"

[[target]]
name = "b"
dir = "{root}/b"

[[workload]]
rw = "randread"
bs = "4k"
file_size = "8MiB"
runtime = "1s"
ioengine = "sync"
direct = false
ranks = [1, 2]
"""


@pytest.fixture(scope="module")
def ranked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The results of one study run on two ranks of this machine (`--hosts localhost:2`):
    two targets x `ranks = [1, 2]`, a run each, about 10 s for every test here. Its folder
    is removed afterwards, after checking that nothing under it is mounted or attached."""
    if os.geteuid() != 0:
        pytest.skip("needs root (as every multi-host run's test: docs/multihost.md)")
    root = Path(str(tmp_path_factory.mktemp("ranks", numbered=True))).resolve()
    try:
        for target in ("a", "b"):
            (root / target).mkdir()
        (root / "s.toml").write_text(STUDY.format(root=root))
        done = fslab("run", "s.toml", "--results", "r.db", "--hosts", "localhost:2", cwd=root,
                     timeout=600)  # fmt: skip
        assert done.returncode == 0, done.stderr
        yield root / "r.db"
    finally:
        leaked = mounts_under(root) + loops_under(root)
        if not leaked:  # never remove a tree something is still mounted in
            shutil.rmtree(root, ignore_errors=True)
        assert not leaked, f"left behind: {leaked}"


def _aggregate(db: Path) -> dict[int, dict[str, float]]:
    """Per run id, the aggregate's read numbers as `fslab export` writes them (in its
    order: plan order, then repetition)."""
    done = run_fslab("export", "--results", db)
    assert done.returncode == 0, done.stderr
    out: dict[int, dict[str, float]] = {}
    for row in csv.DictReader(io.StringIO(done.stdout)):
        if row["source"] == "engine" and row["op"] == "read":
            out.setdefault(int(row["run_id"]), {})[row["metric"]] = float(row["value"])
    return out


@pytest.mark.root
@pytest.mark.engine
def test_export_ranks_rows_add_up_to_their_runs(ranked: Path, tmp_path: Path) -> None:
    done = run_fslab("export", "--results", ranked, "--ranks")
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(io.StringIO(done.stdout)))
    head = done.stdout.splitlines()[0].split(",")
    assert head[:4] == ["study", "workload", "kind", "target"]
    assert head[-14:] == [
        "point_id", "run_id", "rep", "rank", "host", "status", "start_unix_s",
        "start_offset_s", "runtime_s", "ios", "bytes", "iops", "bw_bytes", "share",
    ]  # fmt: skip
    assert "ranks" in head  # the parameters, the sweep axis among them
    aggregate = _aggregate(ranked)
    assert len(aggregate) == 4 and len(rows) == 2 * (1 + 2)
    for run_id, agg in aggregate.items():
        mine = [r for r in rows if int(r["run_id"]) == run_id]
        assert [int(r["rank"]) for r in mine] == list(range(int(mine[0]["ranks"])))
        assert sum(int(r["ios"]) for r in mine) == agg["ios"] > 0
        assert sum(int(r["bytes"]) for r in mine) == agg["bytes"]
        assert sum(float(r["share"]) for r in mine) == pytest.approx(1.0)
        for r in mine:
            assert r["status"] == "ok" and r["host"]
            assert float(r["iops"]) == pytest.approx(int(r["ios"]) / float(r["runtime_s"]))
            assert float(r["start_offset_s"]) >= 0.0
        assert min(float(r["start_offset_s"]) for r in mine) == 0.0
    # JSON holds the same rows, numbers as numbers
    out = tmp_path / "ranks.json"
    done = run_fslab("export", "--results", ranked, "--ranks", "-o", out)
    assert done.returncode == 0 and "(6 rows)" in done.stderr, done.stderr
    doc = json.loads(out.read_text())
    assert doc["columns"] == head and len(doc["rows"]) == len(rows)
    assert [r["ios"] for r in doc["rows"]] == [int(r["ios"]) for r in rows]
    # --where keeps the points it names, as everywhere
    two = run_fslab("export", "--results", ranked, "--ranks", "--where", "ranks=2")
    assert two.returncode == 0 and len(two.stdout.splitlines()) == 1 + 2 * 2, two.stderr


_TD = re.compile(r"<td[^>]*>(.*?)</td>", re.S)


def _ranks_table(html: str) -> list[list[str]]:
    """The cells of the report's table of ranks, row by row, as text."""
    table = html[html.index('<table id="ranks-table"') :]
    table = table[: table.index("</table>")]
    rows = re.findall(r"<tr>(.*?)</tr>", table[table.index("</thead>") :], re.S)
    return [[re.sub(r"<[^>]+>", "", c).strip() for c in _TD.findall(r)] for r in rows]


@pytest.mark.root
@pytest.mark.engine
def test_report_ranks_shows_each_rank_and_they_add_up(ranked: Path, tmp_path: Path) -> None:
    aggregate = _aggregate(ranked)
    done = run_fslab("report", "--results", ranked, "--ranks", "-o", tmp_path / "r.html",
                     timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "the ranks of 4 multi-host runs" in done.stderr
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert '<a href="#ranks">Ranks</a>' in html and '<section id="ranks">' in html
    # one line per point: how many ranks on how many hosts, how even
    lines = re.findall(r'<ul class="headlines ranks-lines">(.*?)</ul>', html, re.S)[0]
    said = [re.sub(r"<[^>]+>", "", x).strip() for x in re.findall(r"<li>(.*?)</li>", lines)]
    assert [s.split(":")[0] for s in said] == [
        "a block ranks=1", "a block ranks=2", "b block ranks=1", "b block ranks=2",
    ]  # fmt: skip
    assert all(s.endswith(": 1 rank on 1 host") for s in said[::2]), said
    assert all(re.search(r": 2 ranks on 1 host, imbalance \d+\.\d\dx, start skew [\d.]+ m?s$", s)
               for s in said[1::2]), said  # fmt: skip
    # a row per rank; each run's shares make its whole, its ranks' MiB/s its aggregate's
    runs: list[list[list[str]]] = []
    for cells in _ranks_table(html):
        if len(cells) == 9:
            runs.append([])
            cells = cells[3:]
        runs[-1].append(cells)
    assert [len(r) for r in runs] == [1, 2, 1, 2]
    # the table and the export list the runs in the same order: plan order, then repetition
    for ranks, agg in zip(runs, aggregate.values(), strict=True):
        assert [c[0] for c in ranks] == [str(i) for i in range(len(ranks))]
        assert sum(int(c[4].rstrip("%")) for c in ranks) in (99, 100, 101)
        assert all(c[5].startswith("+") and c[5].endswith("ms") for c in ranks)
        rate = sum(float(c[3]) for c in ranks)
        assert rate == pytest.approx(agg["bw_bytes"] / (1 << 20), rel=0.05), (rate, agg)
    # Markdown (in this process, without its charts): the same lines and rows
    md = render_markdown_report(load_report(ranked, ranks=True), ())
    section = md[md.index("## Ranks") : md.index("## Configuration")]
    assert sum(line.startswith("- `") for line in section.splitlines()) == 4
    rows = [x for x in section.splitlines() if re.match(r"\| (`[ab]`)? +\|", x)]
    assert len(rows) == 6 and sum(x.count("%") for x in rows) == 6
    # without --ranks the report is the aggregate's alone
    plain = load_report(ranked)
    assert plain.ranks is None and 'id="ranks"' not in render_html(plain, (), plotly_js="")


@pytest.mark.root
@pytest.mark.engine
def test_compare_ranks_lists_the_same_ranks_and_sentences(ranked: Path) -> None:
    done = run_fslab("compare", "--results", ranked, "--ranks")
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert text.startswith("study `ranks views`: the ranks of its multi-host runs\n")
    assert sum("%" in line for line in text.splitlines()) == 6
    assert "a block ranks=2: 2 ranks on 1 host, imbalance " in text
    two = run_fslab("compare", "--results", ranked, "--ranks", "--where", "ranks=2")
    assert two.returncode == 0, two.stderr
    assert "(where ranks=2)" in two.stdout and "ranks=1" not in two.stdout
