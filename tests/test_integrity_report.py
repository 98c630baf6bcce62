"""Integrity studies in compare, export and the reports: the faults x targets table with
its outcome words, counts where repetitions disagree, one sentence per target, the
integrity rows of the CSV, JSON and export, and a report of a study with integrity points
alone or beside block runs. The databases are written through the real store
(`tests/integrity_fixture.py`, `tests/report_fixture.py`)."""

from __future__ import annotations

import csv
import io
import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner
from integrity_fixture import (
    EFFECTIVE,
    OUTCOMES,
    READ_REPAIR,
    SILENT,
    STUDY,
    IntegrityWriter,
    add_integrity_points,
    make_integrity_db,
    params,
)
from report_fixture import EVIL, make_fixture_db
from report_fixture import STUDY as BLOCK_STUDY
from report_fixture import TARGETS as BLOCK_TARGETS

from fslab.catalog import compared, entry
from fslab.cli.compare import command
from fslab.compare import build_comparison, keep_ops
from fslab.integrity_words import FAULTS, OUTCOME_MEANING
from fslab.integrity_words import OUTCOMES as OUTCOME_WORDS
from fslab.report.charts import build_charts
from fslab.report.context import load_report
from fslab.report.export import (
    export_rows,
    plan_export,
    render_export_csv,
    render_export_json,
    write_export_csv,
    write_export_json,
)
from fslab.report.html import render_html
from fslab.report.integrity import integrity_lines, integrity_table, trade_off_lines
from fslab.report.markdown import render_markdown_report
from fslab.report.render import render_csv, render_json, render_markdown, render_table
from fslab.store.db import ResultsWriter
from fslab.store.query import integrity_rows, open_readonly

WHEN = datetime(2024, 1, 2, 3, 4, tzinfo=UTC)
MIXED_TARGETS = (*BLOCK_TARGETS, "btrfs-raid1")
"""The block fixture's targets (ext4, xfs, a btrfs with markup in its name) and one more
that ran only integrity points."""


def _text(spans: object) -> str:
    return "".join(s.text for s in spans)  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def integrity_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_integrity_db(tmp_path_factory.mktemp("integrity") / "integrity.db")


@pytest.fixture(scope="module")
def mixed_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report fixture's block and files runs, and integrity points of its targets
    (and of `btrfs-raid1`) in the same study."""
    path = make_fixture_db(tmp_path_factory.mktemp("mixed") / "mixed.db")
    results = ResultsWriter.open(path)
    try:
        sid = results.upsert_study(BLOCK_STUDY, "examples/report-fixture.toml", "x = 1\n")
        add_integrity_points(results, sid, targets=MIXED_TARGETS)
    finally:
        results.close()
    return path


# -- the read path ---------------------------------------------------------------------------


def test_the_read_path_gives_each_completed_integrity_run(integrity_db: Path) -> None:
    with open_readonly(integrity_db) as con:
        rows = integrity_rows(con, 1, integrity_db)
    # ext4 8 faults, xfs 6 (its bit flip three times), btrfs 8, btrfs-raid1 8
    assert len(rows) == 8 + 8 + 8 + 8
    first = rows[0]
    assert (first.target, first.workload, first.fault, first.region) == (
        "ext4", "data", "bitflip", "data",
    )  # fmt: skip
    assert (first.outcome, first.errno, first.repaired_by, first.rep) == (
        "silent_wrong", None, None, 0,
    )  # fmt: skip
    assert first.params == params("bitflip")
    xfs_flip = [r for r in rows if r.target == "xfs" and r.fault == "bitflip"]
    assert [(r.rep, r.outcome, r.errno) for r in xfs_flip] == [
        (0, "detected", 5), (1, "silent_wrong", None), (2, "detected", 5),
    ]  # fmt: skip
    repaired = [r for r in rows if r.target == "btrfs-raid1" and r.region == "metadata"]
    assert {(r.outcome, r.repaired_by) for r in repaired} == {("repaired", "scrub")}


def test_the_read_path_leaves_out_runs_that_did_not_complete(
    integrity_db: Path, tmp_path: Path
) -> None:
    path = tmp_path / "failed.db"
    shutil.copyfile(integrity_db, path)
    results = ResultsWriter.open(path)
    try:
        w = IntegrityWriter(results, 1)
        p = params("bitflip")
        pid = w.point("ext4", "data", p, EFFECTIVE["ext4"])
        run = w.run(pid, 0, p, SILENT, EFFECTIVE["ext4"])
        results.con.execute("UPDATE run SET status = 'failed' WHERE id = ?", (run,))
        # a block point of the same study is not an integrity point
        results.add_point("b0", 1, 99, "ext4", "rand", "block", {"name": "ext4"}, {"rw": "read"})
    finally:
        results.close()
    with open_readonly(path) as con:
        rows = integrity_rows(con, 1, path)
    assert run not in {r.run_id for r in rows}
    assert len(rows) == 32


def test_integrity_runs_have_no_compared_numbers() -> None:
    assert entry("integrity").op_metrics("read") == ()
    ops = [("read", {"iops": 10.0, "bw_bytes": 1.0})]
    assert list(compared("integrity", ops, [("written_bytes", 4096.0)])) == []
    assert list(compared("block", ops, []))  # the others keep theirs


# -- compare ---------------------------------------------------------------------------------


def test_a_study_of_integrity_points_alone_compares(integrity_db: Path) -> None:
    c = build_comparison(integrity_db)
    assert c.groups == ()
    assert c.targets == ("ext4", "xfs", "btrfs", "btrfs-raid1")
    assert len(c.integrity) == 8 + 6 + 8 + 8
    [cell] = [x for x in c.integrity if x.target == "xfs" and x.fault == "bitflip"]
    assert cell.outcomes == ("detected", "silent_wrong", "detected")
    assert cell.counts() == {"detected": 2, "silent_wrong": 1}
    assert cell.errnos == (5, None, 5)


def test_the_table_has_a_row_per_fault_data_first_and_a_column_per_target(
    integrity_db: Path,
) -> None:
    table = integrity_table(build_comparison(integrity_db))
    assert table is not None
    assert table.targets == ("ext4", "xfs", "btrfs", "btrfs-raid1")
    assert [r.label for r in table.rows] == [*FAULTS, "bitflip (inode)", "zero_block (inode)"]
    assert [r.section for r in table.rows] == [0] * 6 + [1] * 2
    texts = {r.label: [x.text for x in r.cells] for r in table.rows}
    assert texts["bitflip"] == [
        "silent_wrong",
        "detected 2, silent_wrong 1",
        "detected",
        "repaired",
    ]
    assert texts["lost_write"] == ["silent_stale", "silent_stale", "detected", "repaired"]
    assert texts["torn"] == ["silent_wrong", "silent_wrong", "detected", "detected"]
    assert texts["zero_block (inode)"] == ["detected", "—", "repaired", "repaired"]
    assert table.cell("bitflip", "xfs").worst == "silent_wrong"
    assert table.cell("bitflip", "xfs").title == (
        "run 7: detected, errno 5 (EIO); run 8: silent_wrong; run 9: detected, errno 5 (EIO)"
    )
    assert table.workloads == (
        ("data", "bs=4KiB file_size=4MiB blocks=2 mirrors=one scrub=true seed=1"),
        ("inode", "bs=4KiB file_size=4MiB blocks=1 mirrors=one scrub=true seed=1"),
    )


def test_one_sentence_per_target(integrity_db: Path) -> None:
    lines = [_text(s) for s in integrity_lines(build_comparison(integrity_db))]
    assert lines == [
        "ext4 returned corrupted data silently after 5 of 8 faults (bitflip, zero_block, "
        "random_block, misdirected, torn), stale data after 1 (lost_write), detected 2 "
        "(bitflip (inode), zero_block (inode))",
        # its bit flip was detected in two of three runs: not "detected none"
        "xfs returned corrupted data silently after 5 of 6 faults (bitflip in 1 of 3 runs, "
        "zero_block, random_block, misdirected, torn), stale data after 1 (lost_write)",
        "btrfs detected 6 of 8 faults, repaired 2 on the read itself (bitflip (inode), "
        "zero_block (inode))",
        "btrfs-raid1 repaired 7 of 8 faults (5 on the read itself, 2 by the scrub), "
        "detected 1 (torn)",
    ]


def test_a_target_that_caught_nothing_says_so(tmp_path: Path) -> None:
    path = tmp_path / "ext4-only.db"
    results = ResultsWriter.open(path)
    try:
        sid = results.upsert_study("only data", None, "x = 1\n")
        data_only = {k: v for k, v in OUTCOMES["ext4"].items() if k[0] == "data"}
        add_integrity_points(results, sid, targets=("ext4",), outcomes={"ext4": data_only})
    finally:
        results.close()
    [line] = [_text(s) for s in integrity_lines(build_comparison(path))]
    assert line == (
        "ext4 returned corrupted data silently after 5 of 6 faults (bitflip, zero_block, "
        "random_block, misdirected, torn), stale data after 1 (lost_write); detected none"
    )


def test_terminal_at_80_columns(integrity_db: Path) -> None:
    text = render_table(build_comparison(integrity_db), width=80)
    lines = text.splitlines()
    assert lines[0] == "study `integrity fixture`"  # no baseline: nothing is a ratio
    at = lines.index("Integrity: what each target returned after each fault")
    assert lines[at + 2 : at + 16] == [
        "                      ext4           xfs              btrfs      btrfs-raid1",
        " " + "─" * 75,
        " bitflip              silent_wrong   detected 2,      detected   repaired",
        "                                     silent_wrong 1",
        " zero_block           silent_wrong   silent_wrong     detected   repaired",
        " random_block         silent_wrong   silent_wrong     detected   repaired",
        " lost_write           silent_stale   silent_stale     detected   repaired",
        " misdirected          silent_wrong   silent_wrong     detected   repaired",
        " torn                 silent_wrong   silent_wrong     detected   detected",
        "",
        " bitflip (inode)      detected       —                repaired   repaired",
        " zero_block (inode)   detected       —                repaired   repaired",
        "",
        "points: data: bs=4KiB file_size=4MiB blocks=2 mirrors=one scrub=true seed=1;",
    ]
    flat = " ".join(text.split())
    assert "repaired: correct data came back and the file system reports a fix;" in flat
    assert "silent_stale: an older write's data without an error;" in flat
    assert (
        "btrfs-raid1 repaired 7 of 8 faults (5 on the read itself, 2 by the scrub), "
        "detected 1 (torn)" in flat
    )
    assert "mean ± 95% CI" not in text  # no numeric legend without numbers
    assert max(len(line) for line in lines) <= 80


def test_terminal_at_200_columns_keeps_counts_on_one_line(integrity_db: Path) -> None:
    text = render_table(build_comparison(integrity_db), width=200)
    assert (
        " bitflip              silent_wrong   detected 2, silent_wrong 1   detected   repaired"
        in text.splitlines()
    )
    assert max(len(line) for line in text.splitlines()) <= 200


def test_terminal_colours_each_outcome(integrity_db: Path) -> None:
    text = render_table(build_comparison(integrity_db), width=200, color=True)
    bold_red, red, cyan, green = "\x1b[1;31m", "\x1b[31m", "\x1b[36m", "\x1b[32m"
    assert f"{bold_red}silent_wrong\x1b[0m" in text
    assert f"{red}silent_stale\x1b[0m" in text
    assert f"{cyan}detected 2\x1b[0m, {bold_red}silent_wrong 1\x1b[0m" in text
    assert f"{green}repaired\x1b[0m" in text


def test_cli_compare_prints_the_integrity_table(integrity_db: Path) -> None:
    done = CliRunner().invoke(command, ["--results", str(integrity_db)], env={"COLUMNS": "80"})
    assert done.exit_code == 0, done.output
    assert "Integrity: what each target returned after each fault" in done.stdout
    assert " torn                 silent_wrong   silent_wrong     detected   detected" in (
        done.stdout.splitlines()
    )
    only = CliRunner().invoke(
        command, ["--results", str(integrity_db), "--where", "faults=torn", "--format", "md"]
    )
    assert only.exit_code == 0, only.output
    rows = [line for line in only.stdout.splitlines() if line.startswith("| torn")]
    assert rows == ["| torn | **silent_wrong** | **silent_wrong** | detected | detected |"]
    assert "bitflip" not in only.stdout.split("###")[1].split("_points")[0]


def test_markdown_table(integrity_db: Path) -> None:
    md = render_markdown(build_comparison(integrity_db))
    lines = md.splitlines()
    assert lines[:6] == [
        "study `integrity fixture`",
        "",
        "### Integrity: what each target returned after each fault",
        "",
        "| fault | ext4 | xfs | btrfs | btrfs-raid1 |",
        "|:---|:---|:---|:---|:---|",
    ]
    assert (
        "| bitflip | **silent_wrong** | detected 2, **silent_wrong 1** | detected | repaired |"
        in lines
    )
    assert "| zero_block (inode) | detected | — | repaired | repaired |" in lines
    assert (
        "- btrfs detected 6 of 8 faults, repaired 2 on the read itself (bitflip (inode), "
        "zero_block (inode))" in lines
    )


def test_csv_has_a_row_per_point_target_and_outcome(integrity_db: Path) -> None:
    text = render_csv(build_comparison(integrity_db))
    rows = list(csv.DictReader(io.StringIO(text)))
    header = text.splitlines()[0].split(",")
    assert header[-1] == "outcome"
    assert header[:3] == ["study", "workload", "kind"]
    flip = [r for r in rows if r["target"] == "xfs" and r["faults"] == "bitflip"]
    assert [(r["outcome"], r["n"]) for r in flip] == [("detected", "2"), ("silent_wrong", "1")]
    r = flip[0]
    assert (r["kind"], r["op"], r["metric"], r["baseline"], r["mean"]) == (
        "integrity", "integrity", "outcome", "", "",
    )  # fmt: skip
    assert (r["region"], r["file_size"], r["blocks"]) == ("data", "4194304", "2")
    assert len(rows) == 8 + 7 + 8 + 8


def test_csv_of_a_study_without_integrity_keeps_its_columns(tmp_path: Path) -> None:
    path = make_fixture_db(tmp_path / "block.db")
    header = render_csv(build_comparison(path)).splitlines()[0]
    assert "outcome" not in header.split(",")
    assert header.endswith("verdict,more_runs,no_verdict")


def test_json_lists_the_integrity_points(integrity_db: Path) -> None:
    doc = json.loads(render_json(build_comparison(integrity_db)))
    assert doc["groups"] == []
    [flip] = [x for x in doc["integrity"] if x["target"] == "xfs" and x["fault"] == "bitflip"]
    assert flip["workload"] == "data" and flip["region"] == "data"
    assert flip["params"]["faults"] == "bitflip" and flip["params"]["file_size"] == 4 << 20
    assert flip["outcomes"] == {"detected": 2, "silent_wrong": 1}
    assert flip["runs"] == [
        {"run_id": 7, "outcome": "detected", "errno": 5, "repaired_by": None},
        {"run_id": 8, "outcome": "silent_wrong", "errno": None, "repaired_by": None},
        {"run_id": 9, "outcome": "detected", "errno": 5, "repaired_by": None},
    ]
    assert len(doc["integrity"]) == 30


def test_op_integrity_keeps_the_integrity_table_alone(mixed_db: Path) -> None:
    c = build_comparison(mixed_db)
    assert c.groups and c.integrity
    only = keep_ops(c, ["integrity"])
    assert only.groups == () and only.integrity == c.integrity
    reads = keep_ops(c, ["read"])
    assert reads.groups and reads.integrity == ()


def test_where_target_keeps_that_targets_cells(integrity_db: Path) -> None:
    c = build_comparison(integrity_db, where=["target=btrfs", "target=ext4"])
    assert {x.target for x in c.integrity} == {"btrfs", "ext4"}
    table = integrity_table(c)
    assert table is not None and table.targets == ("ext4", "btrfs")


def test_swept_axes_and_workloads_tell_rows_apart(tmp_path: Path) -> None:
    path = tmp_path / "sweep.db"
    results = ResultsWriter.open(path)
    try:
        sid = results.upsert_study("sweep", None, "x = 1\n")
        w = IntegrityWriter(results, sid)
        eff = EFFECTIVE["btrfs-raid1"]
        for blocks in (1, 4):
            for fault in ("bitflip", "torn"):
                p = params(fault, blocks=blocks)
                w.run(w.point("btrfs-raid1", "sweep", p, eff), 0, p, READ_REPAIR, eff)
        # another workload whose rows would read the same: named after its workload
        p = params("bitflip", file_size=1 << 20)
        w.run(w.point("btrfs-raid1", "small", p, eff), 0, p, SILENT, eff)
    finally:
        results.close()
    table = integrity_table(build_comparison(path))
    assert table is not None
    assert [(r.label, r.section) for r in table.rows] == [
        ("bitflip blocks=1", 0), ("torn blocks=1", 0),
        ("bitflip blocks=4", 1), ("torn blocks=4", 1),
        ("bitflip", 2),
    ]  # fmt: skip
    text = render_table(build_comparison(path), width=80)
    assert " bitflip blocks=4   repaired" in text.splitlines()


# -- export ----------------------------------------------------------------------------------


def test_export_has_a_row_per_integrity_run(integrity_db: Path) -> None:
    columns, rows = export_rows(integrity_db)
    assert columns[-6:] == ["value", "fault", "region", "outcome", "errno", "repaired_by"]
    # the point's own `region` parameter is named apart from the run's column
    assert columns[:8] == ["study", "workload", "kind", "target", "bs", "file_size", "blocks",
                           "faults"]  # fmt: skip
    assert "param_region" in columns
    assert len(rows) == 32
    flip = [r for r in rows if r["target"] == "xfs" and r["fault"] == "bitflip"]
    assert [(r["rep"], r["outcome"], r["errno"], r["repaired_by"]) for r in flip] == [
        (0, "detected", 5, None), (1, "silent_wrong", None, None), (2, "detected", 5, None),
    ]  # fmt: skip
    r = flip[0]
    assert (r["study"], r["workload"], r["kind"], r["source"]) == (
        STUDY, "data", "integrity", "integrity",
    )  # fmt: skip
    assert (r["op"], r["metric"], r["value"], r["region"], r["param_region"]) == (
        "", "", None, "data", "data",
    )  # fmt: skip
    assert r["run_id"] == 7 and r["file_size"] == 4 << 20
    scrubbed = [r for r in rows if r["target"] == "btrfs-raid1" and r["region"] == "metadata"]
    assert {(r["outcome"], r["repaired_by"]) for r in scrubbed} == {("repaired", "scrub")}


@pytest.mark.parametrize("db", ["integrity_db", "mixed_db"])
def test_export_streams_what_export_rows_renders(db: str, request: pytest.FixtureRequest) -> None:
    path = request.getfixturevalue(db)
    columns, rows = export_rows(path)
    plan = plan_export(path)
    out = io.BytesIO()
    assert write_export_csv(plan, out) == len(rows)
    assert out.getvalue().decode() == render_export_csv(columns, rows)
    out = io.BytesIO()
    assert write_export_json(plan, out) == len(rows)
    assert out.getvalue().decode() == render_export_json(columns, rows)


def test_export_of_a_mixed_study_keeps_block_rows_and_adds_integrity_rows(
    mixed_db: Path, tmp_path: Path
) -> None:
    columns, rows = export_rows(mixed_db)
    block = make_fixture_db(tmp_path / "block.db")
    block_columns, block_rows = export_rows(block)
    assert "outcome" not in block_columns  # a study without integrity points: as before
    assert columns[: len(block_columns) - 9] == block_columns[: len(block_columns) - 9]
    engine = [r for r in rows if r["source"] == "engine"]
    assert len(engine) == sum(r["source"] == "engine" for r in block_rows)
    assert all(r["outcome"] is None and r["fault"] is None for r in engine)
    faults = [r for r in rows if r["source"] == "integrity"]
    assert len(faults) == 32
    assert {r["target"] for r in faults} == set(MIXED_TARGETS)


# -- reports ---------------------------------------------------------------------------------


def test_html_report_of_integrity_points_alone(integrity_db: Path) -> None:
    data = load_report(integrity_db, generated_at=WHEN)
    charts = build_charts(data)
    assert charts == ()
    page = render_html(data, charts, plotly_js="")
    assert '<section id="integrity">' in page
    assert '<section id="tables">' not in page  # no numbers, no comparison tables
    assert "No point has a headline metric to compare." not in page
    assert "8 points x 4 targets" in page
    assert (
        '<td class="outcome o-silent_wrong" title="run 1: silent_wrong">silent_wrong</td>' in page
    )
    assert (
        '<span class="o-detected">detected 2</span>, '
        '<span class="o-silent_wrong">silent_wrong 1</span>' in page
    )
    for word, meaning in OUTCOME_MEANING.items():
        assert f'<dt class="o-{word}">{word}</dt><dd>{meaning}</dd>' in page.replace("&#39;", "'")
    # what explains it: checksums and profiles in effect
    assert (
        '<td class="label">btrfs</td><td class="label">on</td><td class="label">on</td>'
        '<td class="label">raid1</td><td class="label">raid1</td>' in page
    )
    assert "<strong>returned corrupted data silently</strong> after 5 of 8 faults" in page


def test_markdown_report_of_integrity_points_alone(integrity_db: Path) -> None:
    data = load_report(integrity_db, generated_at=WHEN)
    text = render_markdown_report(data, build_charts(data))
    assert "## Comparison tables" not in text
    assert "No point has a headline metric" not in text
    summary = text.split("\n## Summary\n")[1].split("\n## Integrity\n")[0]
    assert (
        "- `btrfs-raid1` repaired 7 of 8 faults (5 on the read itself, 2 by the scrub), "
        "detected 1 (torn)" in summary
    )
    section = text.split("\n## Integrity\n")[1].split("\n## Configuration\n")[0]
    assert (
        "| bitflip | **silent\\_wrong** | detected 2, **silent\\_wrong 1** | detected | repaired |"
        in section
    )
    assert "| `ext4` | ext4 | off | on | — | — |" in section
    assert "| `btrfs` | btrfs | on | on | single | dup |" in section


def test_report_of_block_and_integrity_points_shows_both(mixed_db: Path) -> None:
    data = load_report(mixed_db, generated_at=WHEN)
    c = data.comparison
    assert len(c.groups) == 8 and len(c.integrity) == 30
    assert c.targets == MIXED_TARGETS
    charts = build_charts(data)
    assert charts  # the block and files runs' charts are still drawn
    page = render_html(data, charts, plotly_js="")
    assert '<section id="tables">' in page and '<section id="integrity">' in page
    assert page.index('id="summary"') < page.index('<section id="integrity">')
    assert page.index('<section id="integrity">') < page.index('<section id="tables">')
    assert "16 points x 4 targets" in page
    assert "<script>alert" not in page  # the target with markup in its name, escaped
    # the target that ran integrity points only has its configuration too
    assert data.target("btrfs-raid1").effective == {**EFFECTIVE["btrfs-raid1"]}
    both = [_text(s) for s in trade_off_lines(c)]
    assert both[0] == (
        "ext4: 5 of 8 faults corrupted silently, 1 stale silently, 2 detected; speed: the "
        "baseline the others are compared with"
    )
    assert both[1].startswith(
        "xfs: 5 of 6 faults corrupted silently, 1 stale silently; speed: 1.35x ext4's IOPS "
        "in random reads, 0.987x ext4's IOPS in random writes"
    )
    assert both[2].startswith(f"{EVIL}: 6 of 8 faults detected, 2 repaired; speed: 0.794x")
    assert len(both) == 3  # btrfs-raid1 has no performance results
    md = render_markdown_report(data, charts)
    assert "## Comparison tables" in md and "## Integrity" in md
    assert "Integrity beside speed:" in md


def test_compare_of_a_mixed_study_prints_both(mixed_db: Path) -> None:
    text = render_table(build_comparison(mixed_db), width=120)
    assert "sweep: rw=randread bs=8KiB threads=1 iodepth=1" in text
    assert "mean ± 95% CI" in text
    tables = text.index("sweep: rw=randread bs=8KiB threads=1 iodepth=1")
    assert tables < text.index("Integrity: what each target returned after each fault")
    assert "integrity beside speed:" in text
    rows = list(csv.DictReader(io.StringIO(render_csv(build_comparison(mixed_db)))))
    assert {r["kind"] for r in rows} == {"block", "files", "integrity"}
    assert all(r["outcome"] == "" for r in rows if r["kind"] != "integrity")
    assert {r["outcome"] for r in rows if r["kind"] == "integrity"} <= set(OUTCOME_WORDS)
