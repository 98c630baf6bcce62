"""`kind = "fio"`: a user's fio job file run by the engine on every target of a study
(docs/fio.md): its problems at plan time, its files kept inside the target, swept keys
set on every job, the measured jobs stored as one result and compared."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest
from conftest import fslab, fslab_env, loops_under, mounts_under

from fslab.engine import run_fio
from fslab.kinds.fio import merge_jobs

JOB_FILE = """\
; lay the file down, then two jobs at once, one of them measured
[global]
ioengine=psync
size=16m
filename=/somewhere/else/entirely/data.bin

[lay-down]
rw=write
bs=1m

[reads]
stonewall
rw=randread
bs=4k
time_based
runtime=1

[writes]
rw=randwrite
bs=4k
time_based
runtime=1
"""


@pytest.mark.engine
def test_the_measured_jobs_are_one_result_with_summed_counts(tmp_path: Path) -> None:
    job_file = tmp_path / "j.fio"
    job_file.write_text(JOB_FILE)
    done = run_fio(job_file, within=tmp_path, sets={"bs": "8k"})
    assert done.exit_code == 0, done.stderr
    names = [j.name for j in done.jobs]
    assert names == ["lay-down", "reads", "writes"]
    # the file went into `within`, whatever the job file said
    assert (tmp_path / "data.bin").exists() and not Path("/somewhere").exists()
    by = {j.name: j for j in done.jobs}
    assert all(j.report is not None and j.report.job.bs == 8192 for j in done.jobs)
    merged = merge_jobs([by["reads"], by["writes"]])
    ops = {r.op: r for r in merged.results}
    assert set(ops) == {"read", "write"}
    reads, writes = by["reads"].report, by["writes"].report
    assert reads is not None and writes is not None
    assert ops["read"].ios == reads.results[0].ios and ops["write"].ios == writes.results[0].ios
    assert 0.9 < merged.runtime_s < 1.5, "the two ran at once: the span is about one second"
    assert ops["read"].iops == pytest.approx(ops["read"].ios / merged.runtime_s)
    total = sum((p.read.ios if p.read else 0) for p in merged.series.points)
    assert total == ops["read"].ios, "the series holds every measured read"


STUDY = """
name = "fio file"
repeat = 1

[[target]]
name = "ext4"
fs = "ext4"
loop = {{ size = "256MiB" }}

[[target]]
name = "xfs"
fs = "xfs"
loop = {{ size = "320MiB" }}

[[target]]
name = "btrfs"
fs = "btrfs"
loop = {{ size = "320MiB" }}

[[workload]]
name = "file"
kind = "fio"
job_file = "{job_file}"
measure = {measure}
"""


@pytest.mark.parametrize(
    ("job_file", "said"),
    [
        ("/dev/zero", "a character device, not a fio job file"),
        ("/dev/urandom", "a character device, not a fio job file"),
        ("fifo", "a FIFO (named pipe), not a fio job file"),
        ("/proc/self/environ", "not a fio job file"),
        ("big.fio", "larger than 4 MiB: too large for a fio job file"),
        (".", "a directory, not a fio job file"),
    ],
)
def test_a_job_file_that_is_no_file_is_refused_at_once(
    tmp_path: Path, job_file: str, said: str
) -> None:
    """Audit N3 and N9: `job_file = "/dev/zero"` grew `fslab plan` to 11 GB, a FIFO hung
    it, and `/proc/self/environ` printed the environment into the error."""
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "big.fio").write_text("[j]\nrw=read\nsize=1m\n" + ";" * (5 << 20))
    (tmp_path / "s.toml").write_text(STUDY.format(job_file=job_file, measure='["j"]'))
    before = sorted(tmp_path.iterdir())
    done = fslab("plan", "s.toml", cwd=tmp_path, timeout=30,
                 env=fslab_env(FSLAB_TEST_SECRET="do-not-print-me"))  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "s.toml:23: workload[0] (file).job_file: " in done.stderr, done.stderr
    assert said in done.stderr, done.stderr
    assert "do-not-print-me" not in done.stdout + done.stderr
    assert sorted(tmp_path.iterdir()) == before, "nothing made"


def test_a_study_that_is_no_file_is_refused_at_once(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    for study, said in [
        ("/dev/zero", "/dev/zero: a character device, not a study"),
        ("fifo", "fifo: a FIFO (named pipe), not a study"),
        ("/proc/self/environ", "not a study"),
    ]:
        done = fslab("plan", study, cwd=tmp_path, timeout=30,
                     env=fslab_env(FSLAB_TEST_SECRET="do-not-print-me"))  # fmt: skip
        assert done.returncode == 2 and said in done.stderr, done.stderr
        assert "do-not-print-me" not in done.stdout + done.stderr


@pytest.mark.engine  # the engine reads the job file and names its problems
def test_plan_tells_every_problem_of_the_job_file_at_the_workload(tmp_path: Path) -> None:
    (tmp_path / "bad.fio").write_text("[j]\nrw=randread\nzonemode=zbd\nthred=1\n")
    (tmp_path / "s.toml").write_text(STUDY.format(job_file="bad.fio", measure='["nope"]'))
    done = fslab("plan", "s.toml", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "s.toml:23: workload[0] (file).job_file: " in done.stderr, done.stderr
    assert "bad.fio:3 [j] zonemode: `zbd` needs a zoned block device" in done.stderr
    assert "bad.fio:4 [j] thred: is not an option fslab-engine knows" in done.stderr
    assert "did you mean `thread`?" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.fio", "s.toml"], "nothing made"
    (tmp_path / "good.fio").write_text("[j]\nrw=read\nsize=1m\n")
    (tmp_path / "s.toml").write_text(STUDY.format(job_file="good.fio", measure='["nope"]'))
    done = fslab("plan", "s.toml", cwd=tmp_path)
    assert done.returncode == 2
    assert "measure: `nope` is not a job of good.fio" in done.stderr, done.stderr
    assert "its jobs: j" in done.stderr


@pytest.mark.root
@pytest.mark.engine
def test_a_job_file_is_compared_across_ext4_xfs_and_btrfs(lab: Path) -> None:
    (lab / "j.fio").write_text(JOB_FILE)
    (lab / "s.toml").write_text(STUDY.format(job_file="j.fio", measure='["reads", "writes"]'))
    done = fslab("run", "s.toml", "--results", "r.db", cwd=lab, timeout=600)
    assert done.returncode == 0, done.stderr
    con = sqlite3.connect(lab / "r.db")
    try:
        rows = con.execute(
            "SELECT p.target, r.effective, r.engine_json FROM run r"
            " JOIN point p ON p.id = r.point_id WHERE r.status = 'ok' ORDER BY p.target"
        ).fetchall()
        stored = dict(con.execute(
            "SELECT p.target || ' ' || m.op, m.ios FROM metric m JOIN run r ON r.id = m.run_id"
            " JOIN point p ON p.id = r.point_id"
        ).fetchall())  # fmt: skip
    finally:
        con.close()
    assert [r[0] for r in rows] == ["btrfs", "ext4", "xfs"]
    for target, effective, engine_json in rows:
        kept = json.loads(effective)["job_file"]
        assert kept["text"] == JOB_FILE and len(kept["sha256"]) == 64
        jobs = {j["name"]: j for j in json.loads(effective)["fio_jobs"]}
        assert [jobs[n]["measured"] for n in ("lay-down", "reads", "writes")] == [False, True, True]
        # the stored report is the measured jobs as one; the lay-down is not in it
        doc = json.loads(engine_json)
        ios = {r["op"]: r["ios"] for r in doc["results"]}
        assert ios == {"read": stored[f"{target} read"], "write": stored[f"{target} write"]}
        assert jobs["reads"]["ops"]["read"]["iops"] > 0 and jobs["lay-down"]["status"] == "ok"
    shown = fslab("compare", "--results", "r.db", cwd=lab)
    assert shown.returncode == 0, shown.stderr
    assert "xfs" in shown.stdout and "btrfs" in shown.stdout and "read IOPS" in shown.stdout
    assert not mounts_under(lab) and not loops_under(lab)
    assert not Path("/somewhere").exists()


SHORT_JOB = """\
[global]
ioengine=psync
size=4m
bs=4k

[quick]
rw=randread
time_based
runtime=50ms
"""

# A job that checks what it reads while another job of the file overwrites the same blocks
# without the engine's headers: it reads back data it did not write.
SCRIBBLED_JOB = """\
[global]
ioengine=psync
size=4m
bs=4k
filename=shared.bin
time_based
runtime=1

[checked]
rw=randrw
verify=crc32c

[scribbler]
rw=randwrite
"""

DIR_STUDY = """
name = "fio warnings"
repeat = 2

[[target]]
name = "a"
dir = "{a}"

[[target]]
name = "b"
dir = "{b}"

[[workload]]
name = "quick"
kind = "fio"
job_file = "quick.fio"

[[workload]]
name = "scribbled"
kind = "fio"
job_file = "scribbled.fio"
measure = ["checked"]
"""


@pytest.mark.engine
def test_a_fio_points_engine_warnings_reach_compare_and_a_failed_verify_takes_its_verdict(
    tmp_path: Path,
) -> None:
    """The engine's warnings of a fio run (its jobs' own, named by job) reach compare as a
    block run's do: a 50 ms job is `short`, a job that read back data it did not write is
    `corrupt`, and a corrupt target gets no verdict (review-architecture-2 S1)."""
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
    (tmp_path / "quick.fio").write_text(SHORT_JOB)
    (tmp_path / "scribbled.fio").write_text(SCRIBBLED_JOB)
    (tmp_path / "s.toml").write_text(DIR_STUDY.format(a=tmp_path / "a", b=tmp_path / "b"))
    done = fslab("run", "s.toml", "--results", "r.db", cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    shown = fslab("compare", "--results", "r.db", "--format", "json", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    groups = {g["workload"]: g for g in json.loads(shown.stdout)["groups"]}
    quick = {(w["target"], w["kind"]) for w in groups["quick"]["warnings"]}
    assert {("a", "short"), ("b", "short")} <= quick, groups["quick"]["warnings"]
    bad = [w for w in groups["scribbled"]["warnings"] if w["kind"] == "corrupt"]
    assert {w["target"] for w in bad} == {"a", "b"}, groups["scribbled"]["warnings"]
    assert all("[checked] verify:" in w["message"] and "corrupt" in w["message"] for w in bad)
    iops = next(r for r in groups["scribbled"]["rows"] if r["metric"] == "iops")
    # both targets returned wrong data: b's verdict is taken by the baseline a's flag
    assert iops["verdict"][1] is None, iops
    assert iops["no_verdict"][1] in ("flagged", "baseline_flagged"), iops
    text = fslab("compare", "--results", "r.db", cwd=tmp_path, env=fslab_env(COLUMNS="200"))
    assert "corrupt: a at 1 point, b at 1" in text.stdout, text.stdout
    assert "short: a at 2 points, b at 2" in text.stdout, text.stdout
