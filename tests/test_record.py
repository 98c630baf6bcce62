"""`fslab record`: a real program's file I/O under a directory, recorded through strace
as fio iologs, then replayed by fslab-engine and by fio from the job file it writes."""

from __future__ import annotations

import contextlib
import json
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import fslab

from fslab.record import iolog, strace

pytestmark = pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")

PROGRAM = """
import os, threading
fd = os.open("data/a", os.O_CREAT | os.O_RDWR | os.O_TRUNC)
os.write(fd, b"x" * 8192)
os.lseek(fd, 0, os.SEEK_SET)
os.read(fd, 4096)
os.pwrite(fd, b"y" * 4096, 16384)
os.fsync(fd)
os.writev(fd, [b"a" * 512, b"b" * 512])
os.fdatasync(fd)
def other():
    f = os.open("data/sub/b", os.O_CREAT | os.O_WRONLY)
    os.write(f, b"z" * 4096)
    os.close(f)
t = threading.Thread(target=other)
t.start()
t.join()
os.close(fd)
with open("/etc/hostname", "rb") as f:
    f.read()
"""


def actions(trace: Path) -> list[str]:
    """The trace's lines without their times."""
    lines = trace.read_text().splitlines()
    assert lines[0] == "fio version 3 iolog"
    return [" ".join(line.split()[1:]) for line in lines[1:]]


@pytest.mark.engine
def test_a_programs_io_is_recorded_per_thread_and_replays_in_both_tools(
    tmp_path: Path, engine: Path
) -> None:
    (tmp_path / "data" / "sub").mkdir(parents=True)
    done = fslab("record", "--dir", "data", "--out", "trace", "--", sys.executable, "-c", PROGRAM,
                 cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    traces = sorted((tmp_path / "trace").glob("trace.*.log"))
    assert [Path(p) for p in done.stdout.split()] == [Path("trace") / t.name for t in traces]
    assert len(traces) == 2, "the main thread and the other, each a trace"
    by_file = {actions(t)[0].split()[0]: actions(t) for t in traces}
    assert by_file["a"] == [
        "a add", "a open", "a write 0 8192", "a read 0 4096", "a write 16384 4096",
        "a sync 0 0", "a write 4096 1024", "a datasync 0 0",
    ]  # fmt: skip
    assert by_file["sub/b"] == ["sub/b add", "sub/b open", "sub/b write 0 4096"]
    assert "hostname" not in "".join(t.read_text() for t in traces), "outside --dir"
    assert "recorded 5 I/Os" in done.stderr

    out = tmp_path / "trace"
    ours = subprocess.run([str(engine), "run", "--fio", "replay.fio"], cwd=out,
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert ours.returncode == 0, ours.stderr
    jobs = json.loads(ours.stdout)["jobs"]
    counts = sorted((r["op"], r["ios"]) for j in jobs for r in j["report"]["results"] if r["ios"])
    assert counts == [("read", 1), ("write", 1), ("write", 3)]
    assert sum(j["report"]["fsync"]["count"] for j in jobs) == 2
    assert (out / "a").stat().st_size == 20480, "laid out as far as the trace reaches"
    if shutil.which("fio") is None:
        return
    theirs = subprocess.run(["fio", "--output-format=json", "replay.fio"], cwd=out,
                            capture_output=True, text=True, check=False)  # fmt: skip
    assert theirs.returncode == 0, theirs.stderr
    fio_jobs = json.loads(theirs.stdout)["jobs"]
    assert sum(j["read"]["total_ios"] for j in fio_jobs) == 1
    assert sum(j["write"]["total_ios"] for j in fio_jobs) == 4


def test_a_record_without_a_command_or_directory_is_refused_and_makes_nothing(
    tmp_path: Path,
) -> None:
    done = fslab("record", "--dir", "nowhere", "--out", "trace", "--", "true", cwd=tmp_path)
    assert done.returncode == 2
    assert "error: record: --dir nowhere is not a directory" in done.stderr
    assert not (tmp_path / "trace").exists()
    # an --out that holds something (an earlier recording's traces) is left as it was,
    # and the program is not run
    (tmp_path / "trace").mkdir()
    (tmp_path / "trace" / "trace.9.log").write_text("fio version 3 iolog\n")
    done = fslab("record", "--out", "trace", "--", "touch", "ran", cwd=tmp_path)
    assert done.returncode == 2
    assert "error: record: --out trace is not an empty directory" in done.stderr
    assert "hint: give a new directory" in done.stderr
    assert [p.name for p in (tmp_path / "trace").iterdir()] == ["trace.9.log"]
    assert not (tmp_path / "ran").exists()


def test_interrupted_calls_are_put_back_together() -> None:
    out = [
        "10 1.000000 read(3</d/a>,  <unfinished ...>\n",
        '11 1.000100 write(4</d/b>, ""..., 10) = 10\n',
        '10 1.000200 <... read resumed>""..., 4096) = 4096\n',
        '10 1.000300 openat(AT_FDCWD</d>, "/d/c", O_RDONLY) = -1 ENOENT (No such file)\n',
    ]
    calls = list(strace.calls(out))
    assert [(c.tid, c.name, c.result, c.fd()) for c in calls] == [
        (11, "write", 10, (4, "/d/b")),
        (10, "read", 4096, (3, "/d/a")),
        (10, "openat", -1, None),
    ]
    assert calls[1].at_s == 1.0, "timed from when the call began"
    rec = iolog.convert(calls, Path("/d"))
    assert rec.unknown_offset == 2, "descriptors opened before the recording began"


@pytest.mark.root
@pytest.mark.engine
@pytest.mark.slow
def test_the_recorded_example_replays_on_every_target(lab: Path) -> None:
    """examples/replay.toml: a SQLite application's recorded trace, replayed by the fio
    kind on ext4, xfs and btrfs, every run complete, the three compared."""
    study = Path(__file__).resolve().parents[1] / "examples" / "replay.toml"
    done = fslab("run", str(study), "--results", str(lab / "r.db"), "--workdir",
                 str(lab / "w"), cwd=lab)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "runs ok, 0 failed" in done.stderr
    shown = fslab("compare", "--results", str(lab / "r.db"), "--format", "json", cwd=lab)
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    assert all(t in text for t in ('"ext4"', '"xfs"', '"btrfs"')), text[:300]


RISING = """name = "a paced replay"

[[target]]
name = "here"
dir = "{root}/t"

[[workload]]
kind = "fio"
job_file = "replay.fio"
"""


@pytest.mark.engine
def test_a_replay_whose_rate_follows_the_application_is_not_called_unsteady(
    tmp_path: Path,
) -> None:
    """A replay at its recorded times does what the application did: here four times
    the I/O in its last second as in its first. That is no drift of the target's, so
    the lab's trend check leaves replays alone (the same rise in a block job would be
    `unsteady` and get no verdict)."""
    lines = ["fio version 3 iolog", "0 data add", "0 data open"]
    for second in range(7):
        n = 50 * (1 + second // 2)
        # times in microseconds from the trace's zero
        lines += [f"{second * 10**6 + k * 10**6 // n} data read {k % 64 * 4096} 4096"
                  for k in range(n)]  # fmt: skip
    (tmp_path / "trace.log").write_text("\n".join(lines) + "\n")
    (tmp_path / "replay.fio").write_text("[app]\nread_iolog=trace.log\n")
    (tmp_path / "t").mkdir()
    (tmp_path / "s.toml").write_text(RISING.format(root=tmp_path))
    done = fslab("run", "s.toml", "--results", "r.db", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    con = sqlite3.connect(tmp_path / "r.db")
    try:
        (drift, intervals) = con.execute("SELECT trend_drift, intervals FROM run_fact").fetchone()
    finally:
        con.close()
    assert intervals >= 6 and drift is None
    shown = fslab("compare", "--results", "r.db", "--format", "json", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert '"unsteady"' not in shown.stdout


@pytest.mark.engine
@pytest.mark.slow
def test_a_long_trace_replays_in_memory_that_does_not_grow_with_it(
    tmp_path: Path, engine: Path
) -> None:
    """The trace is streamed: replaying one of 256 MB (10 million I/Os) takes a few MB
    of memory. (fio reads a whole trace into memory unless
    told `read_iolog_chunked`; a 2 GB trace replayed here in 8.9 MB, docs/record.md.)"""
    body = "".join(f"/data/f read {i % 4096 * 4096} 4096\n" for i in range(25_000))

    def peak_kib(ios: int) -> int:
        trace = tmp_path / f"t{ios}.log"
        with trace.open("w") as f:
            f.write("fio version 2 iolog\n/data/f add\n/data/f open\n")
            for _ in range(ios // 25_000):
                f.write(body)
        job = tmp_path / f"j{ios}.fio"
        job.write_text(f"[r]\nread_iolog={trace}\nreplay_no_stall=1\nioengine=psync\n"
                       f"directory={tmp_path / 'd'}\n")  # fmt: skip
        out, err = tmp_path / "out", tmp_path / "err"
        with out.open("wb") as o, err.open("wb") as e:
            child = subprocess.Popen([str(engine), "run", "--fio", str(job)], stdout=o, stderr=e)
            # The engine's own high-water mark (VmHWM: since its exec, unlike a child's
            # ru_maxrss, which keeps the forking Python's), read until it exits.
            peak = 0
            while child.poll() is None:
                with contextlib.suppress(OSError):
                    for line in Path(f"/proc/{child.pid}/status").read_text().splitlines():
                        if line.startswith("VmHWM:"):
                            peak = max(peak, int(line.split()[1]))
                time.sleep(0.02)
        assert child.returncode == 0, err.read_text()
        assert json.loads(out.read_text())["jobs"][0]["report"]["replay"]["actions"] == ios
        trace.unlink()
        return peak

    # Held whole, the trace alone would be 256 MB; streamed, the engine needs a few.
    peak = peak_kib(10_000_000)
    assert 0 < peak < 32 * 1024, f"{peak} KiB"
