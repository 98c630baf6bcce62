"""Results from elsewhere (`fslab.store.merge`): `fslab import` of a database or a bundle,
idempotent and all or nothing, never the journal; `fslab compare` of several databases
with the others' targets labelled, matched by configuration, the machines' differences
named; an imported run pairs by round only within its own origin."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import subprocess
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from scipy import stats  # type: ignore[import-untyped]
from test_compare import IOPS, PARAMS, ResultsDb, _ops, _set_study, _two_targets, make_study

from fslab.cli import main
from fslab.compare import build_comparison
from fslab.kinds.fio import _sha as _fio_sha
from fslab.report.bundle import make_bundle
from fslab.report.render import render_csv
from fslab.store.db import ResultsWriter
from fslab.store.derive import ROUNDS_PER_ORIGIN
from fslab.store.fio_json import FioJsonError, fio_params, import_fio_json, read_fio_json
from fslab.store.merge import MergeError, merge, merged_view, source_database

ENV = {
    "kernel": "6.18.4", "cpu_model": "Test CPU", "cores": 2, "mem_bytes": 24 << 30,
    "tools": {"fslab-engine": "fslab-engine 0.5.0", "mkfs.xfs": "mkfs.xfs version 6.1.0"},
}  # fmt: skip


def _with_environment(path: Path, **changes: object) -> None:
    """Every run of the database ran in ENV (with `changes`)."""
    env = {**ENV, **changes}
    con = sqlite3.connect(path)
    with con:
        cur = con.execute(
            "INSERT INTO environment (hash, kernel, cpu_model, cores, mem_bytes, tools)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (hashlib.sha256(json.dumps(env, sort_keys=True).encode()).hexdigest(),
             env["kernel"], env["cpu_model"],
             env["cores"], env["mem_bytes"], json.dumps(env["tools"])),
        )  # fmt: skip
        con.execute("UPDATE run SET environment_id = ?", (cur.lastrowid,))
    con.close()


def _study_db(path: Path, **env: object) -> Path:
    db = ResultsDb(path)
    make_study(db)
    db.close()
    _with_environment(path, **env)
    return path


def _count(path: Path, table: str) -> int:
    con = sqlite3.connect(path)
    try:
        return int(con.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
    finally:
        con.close()


def _merge(dest: Path, source: Path, **kw: str) -> tuple[int, int]:
    db = ResultsWriter.open(dest)
    try:
        got = merge(db, source, **kw)  # type: ignore[arg-type]
    finally:
        db.close()
    return got.runs, got.already


def test_an_imported_study_compares_as_it_did_where_it_ran(tmp_path: Path) -> None:
    source = _study_db(tmp_path / "there.db")
    dest = tmp_path / "here.db"
    added, already = _merge(dest, source)
    assert (added, already) == (_count(source, "run"), 0)
    assert render_csv(build_comparison(dest)) == render_csv(build_comparison(source))
    # the machine the runs ran on comes with them
    con = sqlite3.connect(dest)
    kernels = {k for (k,) in con.execute(
        "SELECT e.kernel FROM run JOIN environment AS e ON e.id = run.environment_id")}  # fmt: skip
    origins = con.execute("SELECT label, source FROM origin").fetchall()
    con.close()
    assert kernels == {"6.18.4"}
    assert origins == [(None, str(source))]


def test_importing_twice_adds_nothing(tmp_path: Path) -> None:
    source = _study_db(tmp_path / "there.db")
    dest = tmp_path / "here.db"
    _merge(dest, source)
    runs, metrics = _count(dest, "run"), _count(dest, "metric")
    assert _merge(dest, source) == (0, runs)
    assert (_count(dest, "run"), _count(dest, "metric"), _count(dest, "origin")) == (
        runs, metrics, 1,
    )  # fmt: skip


def test_the_journal_is_never_imported(tmp_path: Path) -> None:
    """The other machine's side effects: `fslab cleanup` here must never act on them."""
    source = _study_db(tmp_path / "there.db")
    con = sqlite3.connect(source)
    with con:
        con.execute(
            "INSERT INTO journal (run_id, action, subject, details, state, created_at)"
            " VALUES (1, 'mount', '/mnt/there', '{}', 'pending', 0)"
        )
    con.close()
    dest = tmp_path / "here.db"
    _merge(dest, source)
    assert _count(dest, "journal") == 0


def test_a_point_measured_on_both_sides_is_refused_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    source = _study_db(tmp_path / "there.db")
    dest = _study_db(tmp_path / "here.db")
    con = sqlite3.connect(source)
    with con:
        con.execute("UPDATE run SET started_at = started_at + 86400")  # another day
    con.close()
    before = (_count(dest, "run"), _count(dest, "metric"), _count(dest, "point"))
    with pytest.raises(MergeError) as e:
        _merge(dest, source)
    assert "measured here too" in str(e.value) and "--as LABEL" in (e.value.hint or "")
    assert (_count(dest, "run"), _count(dest, "metric"), _count(dest, "point")) == before
    assert _count(dest, "origin") == 0


def test_a_label_puts_the_other_targets_beside_these(tmp_path: Path) -> None:
    source = _study_db(tmp_path / "there.db")
    dest = _study_db(tmp_path / "here.db")
    added, _ = _merge(dest, source, label="old")
    assert added == _count(source, "run")
    c = build_comparison(dest)
    assert c.targets == ("ext4", "xfs", "btrfs", "ext4@old", "xfs@old", "btrfs@old")
    assert c.baseline == "ext4"
    # the same runs on both sides: ext4@old is ext4's twin, xfs@old xfs's
    read = c.groups[0].row("read", "iops")
    assert read.cell("ext4@old").vs is not None
    assert read.cell("ext4@old").vs.ratio == pytest.approx(1.0)
    assert read.cell("xfs@old").vs.ratio == pytest.approx(read.cell("xfs").vs.ratio)


def test_an_imported_run_pairs_by_round_only_within_its_origin(tmp_path: Path) -> None:
    """A blocked study pairs a target's runs with its baseline's by round; round 1 on the
    other machine shares nothing with round 1 here."""
    here, there = tmp_path / "here.db", tmp_path / "there.db"
    _set_study(here, _two_targets(here, "s", 1.0, (0.9, 1.0, 1.1)), "design", "blocked")
    _set_study(there, _two_targets(there, "s", 1.0, (1.1, 1.0, 0.9)), "design", "blocked")
    _merge(here, there, label="b")
    con = sqlite3.connect(here)
    reps = dict(con.execute(
        "SELECT point.target, group_concat(run_fact.rep) FROM run_fact"
        " JOIN run ON run.id = run_fact.run_id JOIN point ON point.id = run.point_id"
        " GROUP BY point.target"))  # fmt: skip
    con.close()
    assert reps["ext4"] == "0,1,2"
    assert reps["ext4@b"] == ",".join(str(ROUNDS_PER_ORIGIN + r) for r in range(3))
    c = build_comparison(here)
    cell = c.groups[0].row("read", "iops").cell("ext4@b")
    # Unpaired, both sides are the same three numbers: Welch's interval on logs with 4 df
    # (at a single look's 95%). Paired by round across machines, the rounds' ratios
    # (0.9/1.1, 1, 1.1/0.9) would give one twice as wide on 2 df.
    assert cell.vs is not None and cell.vs.ratio == pytest.approx(1.0)
    logs = np.log([0.9, 1.0, 1.1])
    half = stats.t.ppf(0.975, 4) * np.sqrt(2 * logs.var(ddof=1) / 3)
    assert (cell.vs.low, cell.vs.high) == pytest.approx((np.exp(-half), np.exp(half)))


def test_a_bundle_is_imported_from_its_archive(tmp_path: Path) -> None:
    source = _study_db(tmp_path / "there.db")
    archive = tmp_path / "b.tar.gz"
    make_bundle(archive, source)
    dest = tmp_path / "here.db"
    with source_database(archive) as db:
        _merge(dest, db)
    assert render_csv(build_comparison(dest)) == render_csv(build_comparison(source))


def test_compare_of_several_databases_names_what_matched_and_what_differs(
    tmp_path: Path,
) -> None:
    first = _study_db(tmp_path / "new.db")
    other = _study_db(tmp_path / "old.db", kernel="6.1.0",
                      tools={**ENV["tools"], "fslab-engine": "fslab-engine 0.4.2"})  # fmt: skip
    with merged_view([first, other]) as (merged, study, sides):
        c = build_comparison(merged, study=study)
        assert c.targets == ("ext4", "xfs", "btrfs", "ext4@old", "xfs@old", "btrfs@old")
    assert not merged.exists()  # the merged copy is gone
    [side] = sides
    assert (side.label, side.matched, side.only_here, side.only_there) == ("old", 6, 0, 0)
    assert "kernel 6.1.0 (first: 6.18.4)" in side.differences
    assert side.engine_changed
    note = side.note("new.db")
    assert "6 points matched new.db's by configuration" in note
    assert "not comparable as measurements of the storage alone" in note


def test_a_point_configured_otherwise_is_named_not_matched(tmp_path: Path) -> None:
    first = _study_db(tmp_path / "a.db")
    other = _study_db(tmp_path / "b.db")
    con = sqlite3.connect(other)
    with con:  # xfs there was made with other mkfs arguments
        rows = con.execute("SELECT id, target_spec FROM point WHERE target = 'xfs'").fetchall()
        for pid, spec in rows:
            new = json.dumps({**json.loads(spec), "mkfs_args": "-m crc=0"})
            con.execute("UPDATE point SET target_spec = ?, id = ? WHERE id = ?",
                        (new, pid + "x", pid))  # fmt: skip
            con.execute("UPDATE run SET point_id = ? WHERE point_id = ?", (pid + "x", pid))
    con.close()
    with merged_view([first, other]) as (_, _, sides):
        pass
    [side] = sides
    assert (side.matched, side.only_here) == (4, 0)
    assert side.configured == ("xfs's `mkfs_args`",)


def test_the_cli_imports_and_compares_several(tmp_path: Path) -> None:
    source = _study_db(tmp_path / "old.db")
    dest = tmp_path / "here.db"
    runner = CliRunner()
    got = runner.invoke(main, ["import", str(source), "--results", str(dest), "--as", "old"])
    assert got.exit_code == 0, got.output
    assert "17 runs added, 0 already here; targets ext4@old, xfs@old, btrfs@old" in got.output
    first = _study_db(tmp_path / "new.db")
    got = runner.invoke(
        main, ["compare", "--results", str(first), "--results", str(source), "--format", "csv"]
    )
    assert got.exit_code == 0, got.output
    assert "ext4@old" in got.output
    assert "note: `old` is" in got.output and "6 points matched" in got.output


def test_a_report_of_several_databases_says_what_matched(tmp_path: Path) -> None:
    """`fslab report --results new.db --results old.db`: one report, the others' targets
    beside the first's, and its summary names what matched and how the machines differ
    (HTML and Markdown alike); a bundle given alone reports as its database."""
    first = _study_db(tmp_path / "new.db")
    other = _study_db(tmp_path / "old.db", kernel="6.1.0")
    runner = CliRunner()
    page = tmp_path / "r.html"
    got = runner.invoke(main, ["report", "--results", str(first), "--results", str(other),
                               "-o", str(page)])  # fmt: skip
    assert got.exit_code == 0, got.output
    assert "note: `old` is" in got.stderr
    text = page.read_text()
    assert "Several results databases, compared as one study" in text
    assert "6 points matched" in text and "kernel 6.1.0 (first: 6.18.4)" in text
    assert "ext4@old" in text
    md = tmp_path / "r.md"
    got = runner.invoke(main, ["report", "--results", str(first), "--results", str(other),
                               "-o", str(md)])  # fmt: skip
    assert got.exit_code == 0, got.output
    assert "- `old` is" in md.read_text()
    bundle = tmp_path / "b.tar.gz"
    make_bundle(bundle, first)
    one = tmp_path / "one.html"
    got = runner.invoke(main, ["report", "--results", str(bundle), "-o", str(one)])
    assert got.exit_code == 0, got.output
    assert "Several results databases" not in one.read_text()


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["import", "missing.db"], "missing.db: no such file"),
        (["import", "{src}", "--as", "a b"], "not a label fslab can add"),
        (["import", "{src}", "--study", "nope"], "no study `nope`"),
        (["import", "{src}", "--results", "{src}"], "the database being imported into"),
        (
            ["import", "{src}.txt"],
            "neither a results database, a bundle, fio's JSON output nor DiskSpd's XML",
        ),
    ],
)
def test_bad_imports_exit_2_and_touch_nothing(
    tmp_path: Path, args: list[str], says: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    source = _study_db(tmp_path / "src.db")
    (tmp_path / "src.db.txt").write_text("not a database\n")
    dest = tmp_path / "dest.db"
    argv = [a.replace("{src}", str(source)) for a in args]
    if "--results" not in argv:
        argv += ["--results", str(dest)]
    got = CliRunner().invoke(main, argv)
    assert got.exit_code == 2, got.output
    assert says in got.output
    assert not (tmp_path / "dest.db").exists() or _count(dest, "run") == 0


def test_an_archive_without_a_results_database_is_refused(tmp_path: Path) -> None:
    import tarfile

    archive = tmp_path / "x.tar.gz"
    (tmp_path / "README.md").write_text("hi")
    with tarfile.open(archive, "w:gz") as t:
        t.add(tmp_path / "README.md", arcname="x/README.md")
    with (
        pytest.raises(MergeError, match=r"no `results\.db` in the archive"),
        source_database(archive),
    ):
        pass


# -- fio's own JSON ------------------------------------------------------------------------

FIO_JOB = """[global]
directory={dir}
size=8m
bs=4k
rw=randread
ioengine=psync
[a]
[b]
[c]
stonewall
numjobs=2
group_reporting
"""


def _fio(tmp_path: Path, fmt: str, name: str = "out.json") -> Path:
    """A real fio run (two jobs, 8 MiB random reads each from the page cache), its output
    in `fmt` (json or json+)."""
    work = tmp_path / "fio-files"
    work.mkdir(exist_ok=True)
    job = tmp_path / "job.fio"
    job.write_text(FIO_JOB.format(dir=work))
    out = tmp_path / name
    subprocess.run(
        ["fio", f"--output-format={fmt}", f"--output={out}", str(job)],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    return out


needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="needs fio")


@needs_fio
def test_fio_json_plus_comes_in_as_one_run_with_fios_numbers(tmp_path: Path) -> None:
    out = _fio(tmp_path, "json+")
    doc = json.loads(out.read_text())
    dest = tmp_path / "here.db"
    got = CliRunner().invoke(main, ["import", str(out), "--results", str(dest), "--target",
                                    "laptop-ext4", "--describe", "fs=ext4"])  # fmt: skip
    assert got.exit_code == 0, got.output
    assert "fio JSON as target `laptop-ext4` in `imported-fio`: 1 run added" in got.output
    c = build_comparison(dest)
    assert c.targets == ("laptop-ext4",)
    row = c.groups[0].row("read", "iops")
    jobs = doc["jobs"]
    ios = sum(j["read"]["total_ios"] for j in jobs)
    assert ios == 4 * 8 * 256  # a, b and c's two clones read their 8 MiB in 4 KiB
    # a and b ran together, then c (stonewall): its clones together, reported as one
    # job whose `job_runtime` sums theirs, so a job's length is its read's `runtime`
    a, b, c = jobs
    span = (max(a["read"]["runtime"], b["read"]["runtime"]) + c["read"]["runtime"]) / 1000
    assert c["job_runtime"] > c["read"]["runtime"] * 1.5
    assert row.cell("laptop-ext4").summary.mean == pytest.approx(ios / span, rel=1e-9)
    con = sqlite3.connect(dest)
    p99, hist, effective = con.execute(
        "SELECT lat_p99_ns, hist, effective FROM metric JOIN run ON run.id = metric.run_id"
    ).fetchone()
    con.close()
    # the percentile of both jobs' merged bins lies between the two jobs' own
    own = [j["read"]["clat_ns"]["percentile"]["99.000000"] for j in jobs]
    assert min(own) * 0.95 <= p99 <= max(own) * 1.05
    assert hist  # json+'s bins make the run's histogram
    assert json.loads(effective)["imported"]["percentiles"] == "bins"
    assert json.loads(effective)["imported"]["latency"] == "clat"
    # the same file again adds nothing
    again = CliRunner().invoke(main, ["import", str(out), "--results", str(dest), "--target",
                                      "laptop-ext4", "--describe", "fs=ext4"])  # fmt: skip
    assert again.exit_code == 0 and "already here" in again.output
    assert _count(dest, "run") == 1


@needs_fio
def test_fio_json_without_bins_says_how_its_percentiles_were_made(tmp_path: Path) -> None:
    out = _fio(tmp_path, "json")
    dest = tmp_path / "here.db"
    db = ResultsWriter.open(dest)
    try:
        import_fio_json(db, out, target="t", study="s")
    finally:
        db.close()
    con = sqlite3.connect(dest)
    effective, hist = con.execute(
        "SELECT effective, hist FROM run JOIN metric ON metric.run_id = run.id"
    ).fetchone()
    con.close()
    assert json.loads(effective)["imported"]["percentiles"] == "weighted mean of 3 jobs"
    assert hist == ""
    # one job of it: c, two clones reported as one, at fio's own rate for them
    c = read_fio_json(out, measure=["c"])
    [op] = c.ops
    doc = json.loads(out.read_text())
    assert op.ios == 2 * 8 * 256
    assert op.iops == pytest.approx(doc["jobs"][2]["read"]["iops"], rel=0.01)
    with pytest.raises(FioJsonError, match="no job d in it"):
        read_fio_json(out, measure=["d"])


@needs_fio
def test_fio_json_with_its_job_file_shares_a_studys_fio_rows(tmp_path: Path) -> None:
    out = _fio(tmp_path, "json")
    job = tmp_path / "job.fio"
    result = read_fio_json(out)
    params = fio_params(result, job)
    # what a study's `kind = "fio"` point of this file holds (fslab.kinds.fio)
    assert params == {"job_file": str(job), "job_file_sha256": _fio_sha(str(job))}
    without = fio_params(result, None)
    assert without == {"bs": 4096, "file_size": 8 << 20, "ioengine": "psync", "rw": "randread",
                       "threads": 2}  # fmt: skip


@needs_fio
def test_fio_json_needs_its_target_and_touches_nothing_without_it(tmp_path: Path) -> None:
    out = _fio(tmp_path, "json")
    dest = tmp_path / "here.db"
    got = CliRunner().invoke(main, ["import", str(out), "--results", str(dest)])
    assert got.exit_code == 2
    assert "--target NAME" in got.output
    assert not dest.exists()


def test_a_json_file_that_is_not_fios_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text('{"fio version": "fio-3.33", "jobs": []}')
    with pytest.raises(FioJsonError, match="no `fio version` and `jobs`"):
        read_fio_json(bad)


# -- a study's [baseline]: another study's target -------------------------------------------


def _tuned(path: Path, toml: str, factor: float = 1.5) -> Path:
    """Study `tuned`: one target, xfs-tuned, at `factor` times ext4's random-read IOPS of
    `make_study`'s study, at the same points; its TOML `toml`."""
    db = ResultsDb(path)
    sid = db.study("tuned")
    for rw in ("randread", "randwrite"):
        pid = db.point(sid, "xfs-tuned", {**PARAMS, "rw": rw})
        for rep, iops in enumerate(IOPS[("ext4", rw)]):
            db.run(pid, rep, _ops(rw, iops * factor))
    db.close()
    _with_environment(path, kernel="6.19.0")
    _set_study(path, sid, "toml", toml)
    return path


def test_a_study_names_another_study_s_target_as_its_baseline(tmp_path: Path) -> None:
    """`[baseline]`: compare and report bring in that one target, from the other database,
    as TARGET@LABEL, and judge the study's targets against it, saying what it is."""
    _study_db(tmp_path / "nightly.db")
    toml = 'name = "tuned"\n[baseline]\nresults = "nightly.db"\ntarget = "ext4"\n'
    new = _tuned(tmp_path / "new.db", toml)
    got = CliRunner().invoke(main, ["compare", "--results", str(new), "--format", "json"])
    assert got.exit_code == 0, got.output
    doc = json.loads(got.stdout)
    assert doc["targets"] == ["xfs-tuned", "ext4@nightly"], "only the named target comes in"
    assert doc["baseline"] == "ext4@nightly"
    read = next(r for g in doc["groups"] for r in g["rows"]
                if r["metric"] == "iops" and r["op"] == "read")  # fmt: skip
    assert read["ratio"][0] == pytest.approx(1.5) and read["verdict"][0] == "better"
    assert "the baseline, `ext4@nightly`, is study `small-random`'s target" in got.stderr
    assert "it measured 2 of" in got.stderr and "kernel 6.18.4" in got.stderr
    # --baseline chooses one of the study's own: the reference stays out
    own = CliRunner().invoke(main, ["compare", "--results", str(new), "--format", "json",
                                    "--baseline", "xfs-tuned"])  # fmt: skip
    assert own.exit_code == 0, own.output
    assert json.loads(own.stdout)["targets"] == ["xfs-tuned"]
    # the report says the same
    html = tmp_path / "r.html"
    rep = CliRunner().invoke(main, ["report", "--results", str(new), "-o", str(html)])
    assert rep.exit_code == 0, rep.output
    assert "ext4@nightly" in html.read_text()


def test_a_baseline_that_is_not_there_is_an_error_naming_where_it_looked(tmp_path: Path) -> None:
    new = _tuned(tmp_path / "new.db", 'name = "tuned"\n[baseline]\nresults = "gone.db"\n')
    got = CliRunner().invoke(main, ["compare", "--results", str(new)])
    assert got.exit_code == 2
    assert "compares with the baseline in `gone.db`, and it is not there" in got.output
    assert str(tmp_path / "gone.db") in got.output and "--baseline TARGET" in got.output
    _study_db(tmp_path / "gone.db")
    _set_study(new, 1, "toml", 'name = "tuned"\n[baseline]\nresults = "gone.db"\ntarget = "ext5"\n')
    got = CliRunner().invoke(main, ["compare", "--results", str(new)])
    assert got.exit_code == 2
    assert "has no target `ext5`" in got.output and "ext4" in got.output


def test_plan_says_what_the_baseline_is_and_refuses_one_it_cannot_use(tmp_path: Path) -> None:
    _study_db(tmp_path / "nightly.db")
    study = tmp_path / "s.toml"
    text = (
        'name = "tuned"\n[baseline]\nresults = "nightly.db"\nlabel = "n"\n'
        '[[target]]\nname = "t"\ndir = "{dir}"\n'
        '[[workload]]\nrw = "randread"\nbs = "8KiB"\niodepth = 8\nfile_size = "2GiB"\n'
        'runtime = "10s"\n'
    )
    study.write_text(text.format(dir=tmp_path))
    got = CliRunner().invoke(main, ["plan", str(study), "--results", str(tmp_path / "r.db")])
    assert got.exit_code == 0, got.output
    said = f"baseline: `ext4` of study `small-random` in {tmp_path / 'nightly.db'}, as `ext4@n`"
    assert said in got.output.replace("\n", " ")
    assert "it measured 0 of the 1 workload points planned" in got.output.replace("\n", " ")
    study.write_text(text.format(dir=tmp_path).replace('label = "n"', 'study = "nope"'))
    got = CliRunner().invoke(main, ["plan", str(study), "--results", str(tmp_path / "r.db")])
    assert got.exit_code == 2
    assert "has no study `nope`" in got.output and "small-random" in got.output
    assert not (tmp_path / "r.db").exists()
