"""DiskSpd command lines (issue #39): `fslab-engine diskspd` runs one as DiskSpd would
and prints DiskSpd's text layout; a switch with no Linux meaning is refused at the
switch before any I/O; `kind = "diskspd"` makes a study's workload of a line."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
from pathlib import Path

import pytest
from conftest import fslab, fslab_command, fslab_env

from fslab.compare import build_comparison
from fslab.kinds import kind_of
from fslab.store.diskspd_xml import read_diskspd_xml
from fslab.study.load import StudyError, parse_study
from fslab.study.plan import expand

pytestmark = pytest.mark.engine

ROW = re.compile(r"^total:\s+(\d+) \|\s+(\d+) \|\s+([\d.]+) \|\s+([\d.]+)")


def diskspd(engine: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(engine), "diskspd", *args], cwd=cwd, capture_output=True, text=True, check=False
    )


def _totals(text: str) -> list[tuple[int, int, float, float]]:
    """The `total:` line of the Total, Read and Write IO tables, in that order."""
    return [
        (int(m[1]), int(m[2]), float(m[3]), float(m[4]))
        for line in text.splitlines()
        if (m := ROW.match(line))
    ]


def test_a_diskspd_line_runs_and_reports_in_diskspds_layout(engine: Path, disk_dir: Path) -> None:
    done = diskspd(engine, "-b8K", "-d1", "-W0", "-o4", "-t2", "-r", "-w30", "-Su", "-L",
                   "-c16M", "testfile.dat", cwd=disk_dir)  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith("\nCommand Line: diskspd -b8K -d1 -W0 -o4 -t2 -r -w30 -Su -L -c16M")
    for expected in (
        "\t\tperforming mix test (read/write ratio: 70/30)\n",
        "\t\tusing random I/O (alignment: 8KiB)\n",
        "\nTotal IO\nthread |       bytes     |     I/Os     |    MiB/s   |  I/O per s |  AvgLat"
        "  | LatStdDev |  file\n",
        "\nRead IO\n",
        "\nWrite IO\n",
        "\nTotal latency distribution:\n  %-ile |  Read (ms) | Write (ms) | Total (ms)\n",
        "\n    max | ",
    ):
        assert expected in out, expected
    total, read, write = _totals(out)
    assert total[1] == read[1] + write[1] > 0
    assert total[0] == read[0] + write[0] == total[1] * 8192
    # about 70% reads, and the rates are the counts over the measured time
    assert 0.55 < read[1] / total[1] < 0.85
    secs = float(re.search(r"actual test time:\t([\d.]+)s", out)[1])  # type: ignore[index]
    assert total[3] == pytest.approx(total[1] / secs, rel=0.01)
    assert (disk_dir / "testfile.dat").stat().st_size == 16 << 20


def test_json_output_is_the_engines_report(engine: Path, disk_dir: Path) -> None:
    done = diskspd(engine, "-b4K", "-d1", "-W0", "-Su", "-c8M", "-Rjson", "f.dat", cwd=disk_dir)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["job"]["bs"] == 4096 and report["job"]["iodepth"] == 2
    assert [r["op"] for r in report["results"]] == ["read"]


def test_windows_switches_are_refused_at_the_switch_before_any_io(
    engine: Path, tmp_path: Path
) -> None:
    done = diskspd(engine, "-x", "-l", "-Sm", "-ag", "-b8K", "-c1G", "#1", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stdout == ""
    said = re.findall(r"^error: diskspd (\S+): (.*)$", done.stderr, re.M)
    assert [s for s, _ in said] == ["-x", "-l", "-Sm", "-ag", "target"]
    assert "completion routines (ReadFileEx/WriteFileEx) are Windows's" in said[0][1]
    assert done.stderr.count("\n  hint: ") == len(said)
    assert list(tmp_path.iterdir()) == [], "nothing is created"


def test_the_profile_alone_runs_nothing(engine: Path, tmp_path: Path) -> None:
    done = diskspd(engine, "-Rp", "-b64K", "-c1G", "-Sh", "f.dat", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "\t\tsoftware cache disabled\n\t\thardware write cache disabled, writethrough on\n" in (
        done.stdout
    )
    assert "Results for timespan" not in done.stdout
    assert list(tmp_path.iterdir()) == []


STUDY = """
name = "d"
[[target]]
name = "t"
dir = "/tmp"
[defaults]
threads = 2
[[workload]]
name = "oltp"
kind = "diskspd"
line = "{line}"
{more}
"""


def _study(line: str, more: str = "") -> str:
    return STUDY.format(line=line, more=more)


def test_a_studys_diskspd_workload_is_the_block_workload_its_line_is() -> None:
    study = parse_study(_study("-b8K -d30 -W3 -o8 -t8 -r -w30 -Sh -L -c4G"), "s.toml")
    [w] = study.workload
    assert w.kind == "block"
    got = w.model_dump(exclude_none=True)
    assert {k: got[k] for k in ("rw", "bs", "threads", "iodepth", "file_size", "runtime",
                                "ramp_time", "direct", "sync", "rwmixread")} == {
        "rw": "randrw", "bs": 8192, "threads": 8, "iodepth": 8, "file_size": 4 << 30,
        "runtime": "30s", "ramp_time": "3s", "direct": True, "sync": "dsync", "rwmixread": 70,
    }  # fmt: skip
    assert got["diskspd"] == "-b8K -d30 -W3 -o8 -t8 -r -w30 -Sh -L -c4G"
    [point] = expand(study, 1.0).points
    assert "diskspd" not in kind_of(point.kind).engine_params(point), "never given the engine"


def test_block_keys_beside_the_line_win_and_sweep() -> None:
    study = parse_study(_study("-b8K -o8 -r -c1G", "iodepth = [1, 32]"), "s.toml")
    points = expand(study, 1.0).points
    assert sorted(p.params["iodepth"] for p in points) == [1, 32]
    assert {p.params["threads"] for p in points} == {1}, "the line's -t (1), not [defaults]'"


def test_a_refused_switch_is_a_problem_at_the_workloads_line() -> None:
    with pytest.raises(StudyError) as e:
        parse_study(_study("-b8K -x -Sr -c1G"), "s.toml")
    where = {p.where for p in e.value.problems}
    assert where == {"s.toml:11: workload[0].line"}
    what = [p.what for p in e.value.problems]
    assert what[0].startswith("-x: completion routines") and what[1].startswith("-Sr: remote")
    with pytest.raises(StudyError, match="one DiskSpd command line"):
        parse_study(_study("-b8K").replace('line = "-b8K"', 'line = ["-b8K", "-b64K"]'), "s.toml")


# -- DiskSpd's XML results, from Windows ----------------------------------------------------

XML = Path(__file__).parent / "data" / "diskspd" / "diskspd-result.xml"


def _variant(out: Path, day: int, factor: float) -> Path:
    """The fixture as another run: another day, its I/O counts (and bytes) times `factor`."""
    text = XML.read_text().replace("2026/11/20 09:15:02", f"2026/11/{day:02d} 09:15:02")

    def scaled(m: re.Match[str]) -> str:
        return f"<{m[1]}>{round(int(m[2]) * factor)}</{m[1]}>"

    text = re.sub(r"<(ReadCount|WriteCount|ReadBytes|WriteBytes)>(\d+)</\1>", scaled, text)
    out.write_text(text)
    return out


def _import(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*fslab_command(), "import", *map(str, args)], capture_output=True,
                          text=True, check=False, env=fslab_env())  # fmt: skip


def test_a_windows_diskspd_xml_result_imports_as_a_run(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    done = _import(XML, "--results", db, "--target", "D-ntfs-64k", "--describe", "fs=NTFS")
    assert done.returncode == 0, done.stderr
    assert "DiskSpd XML as target `D-ntfs-64k` in `imported-diskspd`: 1 run added" in done.stderr
    again = _import(XML, "--results", db, "--target", "D-ntfs-64k", "--describe", "fs=NTFS")
    assert "already here" in again.stderr
    c = build_comparison(db)
    [group] = c.groups
    assert dict(group.params)["rw"] == "randrw" and dict(group.params)["sync"] == "dsync"
    read = next(r for r in group.rows if r.op == "read" and r.metric.name == "iops")
    cell = read.cell("D-ntfs-64k")
    assert cell.summary is not None and cell.summary.n == 1
    assert cell.summary.mean == pytest.approx(3_999_350 / 30.0)
    con = sqlite3.connect(db)
    effective, kernel = con.execute(
        "SELECT effective, e.kernel FROM run JOIN environment AS e ON e.id = environment_id"
    ).fetchone()
    p99 = con.execute("SELECT lat_p99_ns FROM metric WHERE op = 'read'").fetchone()[0]
    con.close()
    assert "approximate" in json.loads(effective)["imported"]["percentiles"]
    assert kernel == "Windows" and p99 == 513_000
    # -D's buckets are the run's series: reads and writes a second apart
    con = sqlite3.connect(db)
    series = con.execute("SELECT t_s, op, iops, bw_bytes FROM series ORDER BY t_s, op").fetchall()
    con.close()
    assert len(series) == 60
    assert series[0] == (1.0, "read", 133_450.0, 133_450.0 * 8192)
    assert series[1][:3] == (1.0, "write", 57_200.0)


def test_ntfs_and_refs_runs_from_windows_compare_with_a_verdict(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    for target, factor in (("ntfs", 1.0), ("refs", 0.8)):
        files = [_variant(tmp_path / f"{target}-{i}.xml", 20 + i, factor * (1 + 0.01 * i))
                 for i in range(3)]  # fmt: skip
        done = _import(*files, "--results", db, "--target", target, "--describe", "fs=" + target)
        assert done.returncode == 0, done.stderr
    [group] = build_comparison(db).groups
    read = next(r for r in group.rows if r.op == "read" and r.metric.name == "iops")
    refs = read.cell("refs").vs
    assert refs is not None and refs.ratio == pytest.approx(0.8, abs=0.01)
    assert refs.decision.name == "WORSE"


def test_a_file_that_is_not_diskspds_xml_touches_nothing(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    bad = tmp_path / "bad.xml"
    bad.write_text("<Results><TimeSpan><Error>interrupted</Error></TimeSpan></Results>")
    done = _import(bad, "--results", db, "--target", "t")
    assert done.returncode == 2 and "DiskSpd says: interrupted" in done.stderr
    two = tmp_path / "two.xml"
    two.write_text(XML.read_text().replace("</Results>", "<TimeSpan/></Results>"))
    done = _import(two, "--results", db, "--target", "t")
    assert done.returncode == 2 and "2 timespans in it" in done.stderr
    done = _import(XML, "--results", db)
    assert done.returncode == 2 and "DiskSpd's XML results, and fslab does not know" in done.stderr
    assert not db.exists()


def test_the_engines_diskspd_xml_imports_back(engine: Path, disk_dir: Path) -> None:
    """`-Rxml` writes DiskSpd's XML layout, which `fslab import` reads: a round trip."""
    done = diskspd(engine, "-b8K", "-d1", "-W0", "-o4", "-t2", "-r", "-w30", "-Su", "-L",
                   "-c16M", "-Rxml", "testfile.dat", cwd=disk_dir)  # fmt: skip
    assert done.returncode == 0, done.stderr
    xml = disk_dir / "r.xml"
    xml.write_text(done.stdout)
    result = read_diskspd_xml(xml)
    assert result.params["rw"] == "randrw" and result.params["threads"] == 2
    assert result.params["file_size"] == 16 << 20 and result.latency
    reads = int(re.search(r"<ReadCount>(\d+)</ReadCount>", done.stdout)[1])  # type: ignore[index]
    secs = float(re.search(r"<TestTimeSeconds>([\d.]+)<", done.stdout)[1])  # type: ignore[index]
    [read, _write] = result.ops
    assert read.ios == reads and read.iops == pytest.approx(reads / secs)
    p99 = re.search(r"<Percentile>99</Percentile>\s*<ReadMilliseconds>([\d.]+)<", done.stdout)[1]  # type: ignore[index]
    assert read.lat_ns["p99"] == pytest.approx(float(p99) * 1e6)
    assert done.stdout.count("<Bucket>") == 108, "0, 1 to 99, 99.9 to 99.9999999, 100"


SEED_004 = [
    "-b8K -o8 -t8 -r -w0",
    "-b64K -o8 -t8 -r -w0",
    "-b8K -o8 -t8 -r -w100",
    "-b64K -o8 -t8 -s -w0",
    "-b8K -o8 -t8 -s -w100",
    "-b256K -o8 -t8 -s -w0",
]
"""Seed 004's six DiskSpd patterns (8 threads x 8 outstanding I/Os each), as its study
ran them but for a second each on a small file."""


@pytest.mark.parametrize("line", SEED_004)
def test_seed_004s_lines_run_as_written(engine: Path, disk_dir: Path, line: str) -> None:
    done = diskspd(engine, *line.split(), "-d1", "-W0", "-Sh", "-L", "-c32M", "f.dat",
                   cwd=disk_dir)  # fmt: skip
    assert done.returncode == 0, done.stderr
    total, read, write = _totals(done.stdout)
    assert total[1] > 0 and total[1] == read[1] + write[1]
    assert (read if "-w0" in line else write)[1] == total[1]


def test_an_xml_profile_runs_as_its_line_does(engine: Path, tmp_path: Path) -> None:
    """`-Rpxml` writes the line's profile as DiskSpd does; `-X` reads it back into the
    same job. A profile inside DiskSpd's results (Windows's, the fixture) reads too, its
    target given on the command line."""
    line = ["-b8K", "-d30", "-W3", "-o8", "-t8", "-r", "-w30", "-Sh", "-L", "-D", "-z7", "-c1G"]
    written = diskspd(engine, *line, "-Rpxml", "t.dat", cwd=tmp_path)
    assert written.returncode == 0 and written.stdout.startswith("<Profile>\n")
    (tmp_path / "p.xml").write_text(written.stdout)
    direct = json.loads(diskspd(engine, *line, "-Rpjson", "t.dat", cwd=tmp_path).stdout)
    again = diskspd(engine, "-Xp.xml", "-Rpjson", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout) == direct
    windows = diskspd(engine, f"-X{XML}", "-Rpjson", "here.dat", cwd=tmp_path)
    assert windows.returncode == 0, windows.stderr
    job = json.loads(windows.stdout)
    assert (job["filename"], job["bs"], job["numjobs"], job["iodepth"], job["rwmixread"]) == (
        "here.dat", 8192, 4, 8, 70,
    )  # fmt: skip
    assert job["sync"] == "dsync" and job["direct"] is True and job["size"] == 1 << 30
    beside = diskspd(engine, "-Xp.xml", "-b4K", "t.dat", cwd=tmp_path)
    assert beside.returncode == 2 and "a switch beside -X" in beside.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.xml"], "nothing run, nothing made"


def test_a_study_of_two_diskspd_lines_runs_and_compares(disk_dir: Path) -> None:
    """Seed 004's OLTP read and write lines as a study's workloads, run for real on a
    directory target: each line a workload, its points compared as any block points'."""
    study = disk_dir / "s.toml"
    study.write_text(
        'name = "diskspd"\nrepeat = 2\n'
        f'[[target]]\nname = "here"\ndir = "{disk_dir}"\n'
        '[[workload]]\nname = "rand-read-8k"\nkind = "diskspd"\n'
        'line = "-b8K -d1 -W0 -o8 -t8 -r -w0 -Su -L -c16M"\n'
        '[[workload]]\nname = "rand-write-8k"\nkind = "diskspd"\n'
        'line = "-b8K -d1 -W0 -o8 -t8 -r -w100 -Su -L -c16M"\n'
    )
    done = fslab("run", str(study), "--results", "r.db", cwd=disk_dir)
    assert done.returncode == 0, done.stderr
    assert "4 runs ok, 0 failed" in done.stderr
    doc = json.loads(fslab("compare", "--results", "r.db", "--format", "json", cwd=disk_dir).stdout)
    by = {g["workload"]: g for g in doc["groups"]}
    assert set(by) == {"rand-read-8k", "rand-write-8k"}
    assert by["rand-read-8k"]["params"]["diskspd"] == "-b8K -d1 -W0 -o8 -t8 -r -w0 -Su -L -c16M"
    ops = {w: {r["op"] for r in g["rows"]} for w, g in by.items()}
    assert "read" in ops["rand-read-8k"] and "write" not in ops["rand-read-8k"]
    assert "write" in ops["rand-write-8k"] and "read" not in ops["rand-write-8k"]
