"""`fslab record`: a real program's file I/O under a directory, recorded through eBPF
(bpftrace) and through strace as fio iologs, then replayed by fslab-engine and by fio
from the job file it writes."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from conftest import fslab

from fslab.record import ebpf, iolog, strace

NO_EBPF = ebpf.unavailable()
VIA = [
    pytest.param("strace", marks=pytest.mark.skipif(
        shutil.which("strace") is None, reason="needs strace")),
    pytest.param("ebpf", marks=[pytest.mark.root, pytest.mark.skipif(
        NO_EBPF is not None, reason=f"eBPF: {NO_EBPF}")]),
]  # fmt: skip

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
@pytest.mark.parametrize("via", VIA)
def test_a_programs_io_is_recorded_per_thread_and_replays_in_both_tools(
    tmp_path: Path, engine: Path, via: str
) -> None:
    (tmp_path / "data" / "sub").mkdir(parents=True)
    done = fslab("record", "--via", via, "--dir", "data", "--out", "trace", "--",
                 sys.executable, "-c", PROGRAM, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    traces = sorted((tmp_path / "trace").glob("trace.*.log"))
    assert [Path(p) for p in done.stdout.split()] == [Path("trace") / t.name for t in traces]
    assert len(traces) == 2, "the main thread and the other, each a trace"
    by_file = {actions(t)[0].split()[0]: actions(t) for t in traces}
    # Through eBPF, a file a creating open found empty is emptied there in the replay.
    made = ["truncate 0 0"] if via == "ebpf" else []
    assert by_file["a"] == [
        "a add", "a open", *(f"a {m}" for m in made), "a write 0 8192", "a read 0 4096",
        "a write 16384 4096", "a sync 0 0", "a write 4096 1024", "a datasync 0 0",
    ]  # fmt: skip
    assert by_file["sub/b"] == ["sub/b add", "sub/b open", *(f"sub/b {m}" for m in made),
                                "sub/b write 0 4096"]  # fmt: skip
    assert "hostname" not in "".join(t.read_text() for t in traces), "outside --dir"
    assert "recorded 5 I/Os" in done.stderr
    assert f"through {'eBPF' if via == 'ebpf' else 'strace'}" in done.stderr

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
    rec = iolog.convert(strace.ios(calls), Path("/d"))
    assert rec.opened_before == 2, "descriptors opened before the recording began"


# What strace cannot follow and the kernel can: a directory descriptor, a dup sharing a
# position, a forked child writing at the position it shares with its parent, chdir,
# and a program (dd) that opens its output and dup2s it onto stdout.
FAMILY = """
import os, subprocess
d = os.open("data", os.O_RDONLY | os.O_DIRECTORY)
fd = os.open("sub/c", os.O_CREAT | os.O_RDWR | os.O_TRUNC, dir_fd=d)
os.write(fd, b"c" * 3000)
g = os.dup(fd)
os.lseek(g, 100, os.SEEK_SET)
os.read(g, 50)
ap = os.open("data/log", os.O_CREAT | os.O_WRONLY | os.O_APPEND)
os.write(ap, b"l" * 100)
os.write(ap, b"l" * 100)
pid = os.fork()
if pid == 0:
    os.write(fd, b"k" * 10)
    os.chdir("data")
    h = os.open("sub/c", os.O_RDONLY)
    os.pread(h, 7, 5)
    os._exit(0)
os.waitpid(pid, 0)
os.chdir("data/sub")
subprocess.run(["dd", "if=c", "of=../copy", "bs=1000", "status=none"], check=True)
os.fsync(ap)
"""


@pytest.mark.root
@pytest.mark.skipif(NO_EBPF is not None, reason=f"eBPF: {NO_EBPF}")
def test_ebpf_follows_descriptors_and_positions_across_dups_forks_and_programs(
    tmp_path: Path,
) -> None:
    (tmp_path / "data" / "sub").mkdir(parents=True)
    done = fslab("record", "--via", "ebpf", "--dir", "data", "--out", "trace", "--",
                 sys.executable, "-c", FAMILY, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "record: probes attached in" in done.stderr
    assert "left out" not in done.stderr and "lost" not in done.stderr, done.stderr
    traces = {tuple(actions(t)) for t in (tmp_path / "trace").glob("trace.*.log")}
    assert traces == {
        # made (or emptied) by their opens: emptied there in the replay too
        ("sub/c add", "sub/c open", "sub/c truncate 0 0", "sub/c write 0 3000",
         "sub/c read 100 50", "log add", "log open", "log truncate 0 0", "log write 0 100",
         "log write 100 100", "log sync 0 0"),
        # the child's write lands where the dup's read left the shared position
        ("sub/c add", "sub/c open", "sub/c write 150 10", "sub/c read 5 7"),
        # dd empties its output as it opens it, before its first read
        ("copy add", "copy open", "copy truncate 0 0", "sub/c add", "sub/c open",
         "sub/c read 0 1000", "copy write 0 1000", "sub/c read 1000 1000",
         "copy write 1000 1000",
         "sub/c read 2000 1000", "copy write 2000 1000"),
    }  # fmt: skip


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_strace_follows_a_dup_but_not_a_shared_position(tmp_path: Path) -> None:
    """The fallback recorder follows dd's output (opened, then dup2ed onto stdout) from
    the path strace prints with each result; a position a child shares with its parent
    it follows apart (the kernel's shared one is eBPF's to read)."""
    (tmp_path / "data" / "sub").mkdir(parents=True)
    done = fslab("record", "--via", "strace", "--dir", "data", "--out", "trace", "--",
                 sys.executable, "-c", FAMILY, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    traces = {tuple(actions(t)) for t in (tmp_path / "trace").glob("trace.*.log")}
    assert ("sub/c add", "sub/c open", "sub/c read 0 1000", "copy add", "copy open",
            "copy write 0 1000", "sub/c read 1000 1000", "copy write 1000 1000",
            "sub/c read 2000 1000", "copy write 2000 1000") in traces  # fmt: skip
    assert ("sub/c add", "sub/c open", "sub/c write 3000 10", "sub/c read 5 7") in traces


SHAPES = """
import os
fd = os.open("data/f", os.O_CREAT | os.O_RDWR)
os.write(fd, b"x" * 8192)
os.ftruncate(fd, 4096)
os.posix_fallocate(fd, 8192, 4096)
os.truncate("data/f", 16384)
os.write(fd, b"y" * 100)
os.stat("data/f")
os.fstat(fd)
os.mkdir("data/d")
os.mkdir("data/e")
os.rename("data/f", "data/d/g")
os.rmdir("data/e")
os.stat("/etc/hostname")
"""


@pytest.mark.root
@pytest.mark.engine
@pytest.mark.skipif(NO_EBPF is not None, reason=f"eBPF: {NO_EBPF}")
def test_ebpf_records_size_changes_and_names_as_actions_that_the_engine_replays(
    tmp_path: Path, engine: Path
) -> None:
    """ftruncate, truncate and fallocate, and stat, mkdir, rename and rmdir of names
    under the directory, go into the trace as fslab's own actions (those outside it do
    not), which the engine replays in the job's directory and fio skips."""
    (tmp_path / "data").mkdir()
    done = fslab("record", "--dir", "data", "--out", "trace", "--", sys.executable, "-c",
                 SHAPES, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "recorded 2 I/Os (8292 bytes) and 6 path actions in 1 thread traces" in done.stderr
    (trace,) = (tmp_path / "trace").glob("trace.*.log")
    assert actions(trace) == [
        "f add", "f open", "f truncate 0 0", "f write 0 8192", "f truncate 4096 0",
        "f fallocate 8192 4096",
        "f truncate 16384 0", "f write 8192 100", "f stat", "f stat", "d mkdir", "e mkdir",
        "f rename d/g", "e rmdir",
    ]  # fmt: skip
    out = tmp_path / "trace"
    ours = subprocess.run([str(engine), "run", "--fio", "replay.fio"], cwd=out,
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert ours.returncode == 0, ours.stderr
    (job,) = json.loads(ours.stdout)["jobs"]
    replay = job["report"]["replay"]
    assert (replay["actions"], replay["paths"], replay["paths_skipped"]) == (12, 6, 0)
    assert (out / "d" / "g").stat().st_size == 16384, "the last truncate, a write, the move"
    assert not (out / "f").exists() and not (out / "e").exists()
    if shutil.which("fio") is not None:
        for p in (out / "d" / "g", out / "d"):
            p.rmdir() if p.is_dir() else p.unlink()
        theirs = subprocess.run(["fio", "--output-format=json", "replay.fio"], cwd=out,
                                capture_output=True, text=True, check=False)  # fmt: skip
        assert theirs.returncode == 0, theirs.stderr
        assert json.loads(theirs.stdout)["jobs"][0]["write"]["total_ios"] == 2
        assert "fio: bad iolog file action: rename" in theirs.stderr


def test_a_threads_direct_and_durable_writes_replay_as_such(tmp_path: Path) -> None:
    """The eBPF recorder sees each open's flags: a thread whose every read and write
    went through an O_DIRECT descriptor replays with `direct=1`, one whose every write
    went through an O_DSYNC (O_SYNC) one with `sync=dsync` (`sync=1`), and one that
    mixed says so in a comment."""
    lines = [
        f"O 1 1 1 3 -100 {os.O_RDWR | os.O_DIRECT} 4096 d/a",
        f"O 2 1 2 4 -100 {os.O_WRONLY | os.O_DSYNC} 4096 d/b",
        f"O 3 1 3 6 -100 {os.O_WRONLY | os.O_SYNC} 4096 d/c",
        "D 4 1 1 3 5",
        "W 5 1 1 5 0 4096",
        "R 6 1 1 3 4096 4096",
        "W 7 1 2 4 0 100",
        "W 8 1 3 6 0 100",
        "O 9 1 3 7 -100 1 4096 d/e",
        "W 10 1 3 7 0 100",
    ]
    rec = iolog.convert(ebpf.ios(lines, "/w"), Path("/w/d"))
    iolog.write(rec, tmp_path)
    jobs = (tmp_path / "replay.fio").read_text().split("\n\n")
    assert "[thread-1]\nread_iolog=trace.1.log\ndirect=1\n" in jobs[1] + "\n"
    assert "[thread-2]\nread_iolog=trace.2.log\nsync=dsync\n" in jobs[2] + "\n"
    assert "sync=" not in jobs[3] and "1 of its 2 writes went through O_SYNC" in jobs[3]
    rec.traces[3].lines = rec.traces[3].lines[:4]  # d/c's writes only
    rec.traces[3].writes, rec.traces[3].dsync_writes = 1, 1
    iolog.write(rec, tmp_path)
    jobs = (tmp_path / "replay.fio").read_text().split("\n\n")
    assert "[thread-3]\nread_iolog=trace.3.log\nsync=1\n" in jobs[3] + "\n"


@pytest.mark.engine
def test_a_sync_job_opens_its_files_for_durable_writes(tmp_path: Path, engine: Path) -> None:
    """`sync=dsync` (fio's key, as a recording's replay.fio writes it): the replaying
    thread's file is open O_DSYNC, as /proc shows while it waits for its second write."""
    (tmp_path / "t.log").write_text(
        "fio version 3 iolog\n0 a add\n0 a write 0 4096\n2000000 a write 4096 4096\n"
    )
    (tmp_path / "r.fio").write_text("[t]\nread_iolog=t.log\nsync=dsync\n")
    run = subprocess.Popen([str(engine), "run", "--fio", "r.fio"], cwd=tmp_path,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    flags = None
    try:
        deadline = time.monotonic() + 10
        while flags is None and time.monotonic() < deadline and run.poll() is None:
            # Each thread holds its files in a table of its own: look in every task's.
            for fd in Path(f"/proc/{run.pid}/task").glob("*/fd/*"):
                with contextlib.suppress(OSError):
                    if fd.readlink() == tmp_path / "a":
                        info = (fd.parent.parent / "fdinfo" / fd.name).read_text()
                        flags = int(info.split("flags:")[1].split()[0], 8)
            time.sleep(0.05)
        out, err = run.communicate(timeout=30)
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()
    assert run.returncode == 0, err
    assert flags is not None and flags & os.O_DSYNC, oct(flags or 0)
    assert json.loads(out)["jobs"][0]["report"]["replay"]["actions"] == 2


ATTACHED = """
import os, sys, time
fd = os.open(sys.argv[1] + "/f", os.O_CREAT | os.O_RDWR)
os.write(fd, b"a" * 4096)
print("open", flush=True)
while not os.path.exists(sys.argv[1] + "/go"):
    time.sleep(0.01)
os.write(fd, b"b" * 512)
os.pread(fd, 100, 10)
os.fdatasync(fd)
"""


@pytest.mark.root
@pytest.mark.skipif(NO_EBPF is not None, reason=f"eBPF: {NO_EBPF}")
def test_a_running_process_is_recorded_from_its_open_descriptors_on(tmp_path: Path) -> None:
    """`--pid`: the descriptors the process holds come from /proc, so its I/O on a file
    opened before the recording began is recorded at the right offsets."""
    data = tmp_path / "data"
    data.mkdir()
    app = subprocess.Popen([sys.executable, "-c", ATTACHED, str(data)], stdout=subprocess.PIPE,
                           text=True)  # fmt: skip
    recorder = None
    try:
        assert app.stdout is not None and app.stdout.readline() == "open\n"
        recorder = subprocess.Popen(
            [sys.executable, "-m", "fslab", "record", "--dir", "data", "--out", "trace",
             "--pid", str(app.pid)],
            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert recorder.stderr is not None
        said = recorder.stderr.readline()
        assert f"recording pid {app.pid} until it ends" in said, said
        (data / "go").touch()
        assert app.wait(timeout=30) == 0
        _, err = recorder.communicate(timeout=60)
    finally:
        for p in (app, recorder):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
        for stream in (app.stdout, recorder and recorder.stdout, recorder and recorder.stderr):
            if stream is not None:
                stream.close()
    assert recorder.returncode == 0, err
    (trace,) = (tmp_path / "trace").glob("trace.*.log")
    # Its wait for `go` ends at the one stat that found it (failed calls are left out).
    assert actions(trace) == ["go stat", "f add", "f open", "f write 4096 512",
                              "f read 10 100", "f datasync 0 0"]  # fmt: skip


@pytest.mark.root
@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_a_user_without_root_records_through_strace_and_is_told_why() -> None:
    """`--via auto` as an ordinary user: eBPF needs root, so strace records, and
    `fslab record` says so and what it costs."""
    user = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    can = subprocess.run([*user, sys.executable, "-c", "import fslab"], capture_output=True,
                         check=False)  # fmt: skip
    if can.returncode != 0:
        pytest.skip(f"user nobody cannot run this checkout's fslab: {can.stderr[-200:]!r}")
    work = Path(tempfile.mkdtemp(prefix="fslab-record-user-"))
    try:
        work.chmod(0o777)
        (work / "data").mkdir(mode=0o777)
        (work / "data").chmod(0o777)
        done = subprocess.run(
            [*user, sys.executable, "-m", "fslab", "record", "--dir", "data", "--out", "trace",
             "--", "dd", "if=/dev/zero", "of=data/a", "bs=100", "count=1", "status=none"],
            cwd=work, capture_output=True, text=True, check=False, timeout=120,
            env={**os.environ, "HOME": str(work)},
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert "through strace" in done.stderr, done.stderr
        assert "not eBPF (loading eBPF programs needs root)" in done.stderr, done.stderr
        (trace,) = (work / "trace").glob("trace.*.log")
        assert actions(trace) == ["a add", "a open", "a write 0 100"]
    finally:
        shutil.rmtree(work)


def test_a_record_that_cannot_run_is_refused_before_anything_runs(tmp_path: Path) -> None:
    both = fslab("record", "--pid", "1", "--", "touch", "ran", cwd=tmp_path)
    assert both.returncode == 2
    assert "error: record: both --pid and a command given" in both.stderr
    missing = fslab("record", "--", "no-such-program-here", cwd=tmp_path)
    assert missing.returncode == 2
    assert "error: record: cannot run no-such-program-here: not found" in missing.stderr
    strace_pid = fslab("record", "--via", "strace", "--pid", str(os.getpid()), cwd=tmp_path)
    assert strace_pid.returncode == 2
    assert "--pid needs the eBPF recorder" in strace_pid.stderr
    assert not (tmp_path / "ran").exists() and not (tmp_path / "trace").exists()


def test_ebpf_lines_become_io_on_the_right_files() -> None:
    """The recorder's own bookkeeping, from lines as the bpftrace program prints them:
    opens relative to the directory and to a directory descriptor, dups, closes,
    a fork's copied table, chdir and fchdir; a descriptor it never saw opened has no
    file."""
    lines = [
        "O 10 1 1 3 -100 0 8192 data/a",    # /w/data/a
        "O 11 1 1 4 -100 0 -1 data",        # a directory descriptor
        "O 12 1 1 5 4 64 0 sub/b",          # /w/data/sub/b, made (O_CREAT) here
        "D 13 1 1 5 6",                      # 6 -> sub/b
        "W 14 1 1 6 0 10",
        "C 15 1 1 5",
        "F 16 1 1 2",                        # process 2: a copy of 1's table
        "R 17 2 2 3 4096 4096",
        "K 18 2 2 -100 data/sub",
        "O 19 2 2 7 -100 0 8192 ../a",       # /w/data/a again
        "K 20 2 2 4 .",                      # fchdir to the directory descriptor
        "O 21 2 2 8 -100 512 4096 c",        # /w/data/c, found full (O_TRUNC)
        "S 22 2 2 8",
        "Y 23 1 1 9",                        # never opened
        "R 24 1 1 5 0 1",                    # closed
        "M 25 1 1 u 4 512 sub",              # rmdir /w/data/sub
        "M 26 1 1 s -100 0 data",            # the directory itself: outside
        "N 27 2 2 -100 a",                   # /w/data/a (its cwd) ->
        "n 27 2 2 4 z",                      #   /w/data/z
        "N 28 2 2 -100 z",                   # moved out: gone
        "n 28 2 2 -100 /y",
        "M 29 2 2 u -100 0 /w/data/my file",  # a name an iolog cannot hold
    ]  # fmt: skip
    got = [(io.tid, io.path, io.action, io.offset, io.n)
           for io in ebpf.ios(lines, "/w")]  # fmt: skip
    assert got == [
        (1, "/w/data/sub/b", "truncate", 0, 0),
        (1, "/w/data/sub/b", "write", 0, 10),
        (2, "/w/data/a", "read", 4096, 4096),
        (2, "/w/data/c", "sync", None, 0),
        (1, None, "datasync", None, 0),
        (1, None, "read", 0, 1),
        (1, "/w/data/sub", "rmdir", None, 0),
        (1, "/w/data", "stat", None, 0),
        (2, "/w/data/a", "rename", None, 0),
        (2, "/w/data/z", "rename", None, 0),
        (2, "/w/data/my file", "unlink", None, 0),
    ]
    assert [io.to for io in ebpf.ios(lines, "/w") if io.action == "rename"] == ["/w/data/z", "/y"]
    rec = iolog.convert(ebpf.ios(lines, "/w"), Path("/w/data"))
    assert (rec.opened_before, rec.outside, rec.spaced) == (2, 1, 1)
    assert [t.lines for t in rec.traces.values()] == [
        ["0 sub/b add", "0 sub/b open", "0 sub/b truncate 0 0", "0 sub/b write 0 10",
         "0 sub rmdir"],
        ["0 a add", "0 a open", "0 a read 4096 4096", "0 c add", "0 c open", "0 c sync 0 0",
         "0 a rename z", "0 z unlink"],
    ]  # fmt: skip


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
