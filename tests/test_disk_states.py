"""The results database on a disk that fills up, and on a read-only mount (the second
reliability audit's N5 and N6, 2f and 2g): a full disk ends the study with a
located message after its targets are torn down, and `fslab cleanup` undoes what it can
read even while nothing can be written; a database on a read-only file system is read
where it lies and never written. Needs root (a small file system of its own)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import fslab, loops_under, mounts_under, sh, start_fslab
from report_fixture import make_fixture_db

pytestmark = pytest.mark.root


@pytest.fixture
def small_fs(lab: Path) -> Iterator[Path]:
    """A 320 MiB ext4 of this test's own (no reserved blocks: a full disk is full for
    root too), mounted at `lab/mnt`; unmounted and detached afterwards (the `lab` fixture
    catches what a failing test left)."""
    image = lab / "image-of-the-disk.img"
    with image.open("wb") as f:
        f.truncate(320 << 20)
    sh("mkfs.ext4", "-q", "-m", "0", str(image))
    mnt = lab / "mnt"
    mnt.mkdir()
    sh("mount", "-o", "loop", str(image), str(mnt))
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


STUDY = """
name = "full disk"
repeat = 1

[[target]]
name = "ext4"
fs = "ext4"
loop = { size = "128MiB" }

[[workload]]
name = "reads"
rw = "randread"
bs = "4KiB"
file_size = "32MiB"
runtime = "4s"
steady_state = false
"""


def _engine_running(pid: int) -> bool:
    """Whether a descendant of `pid` is `fslab-engine run` (not plan's `check`)."""
    todo = [pid]
    while todo:
        p = todo.pop()
        for task in Path(f"/proc/{p}/task").glob("*/children"):
            try:
                children = task.read_text().split()
            except OSError:
                continue  # the task ended between the listing and the read
            for child in children:
                try:
                    argv = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
                except OSError:
                    continue
                if any(a.endswith(b"fslab-engine") for a in argv) and b"run" in argv:
                    return True
                todo.append(int(child))
    return False


def _fill(mnt: Path) -> Path:
    """Takes every free block of the file system at `mnt`."""
    filler = mnt / "filler"
    st = os.statvfs(mnt)
    subprocess.run(["fallocate", "-l", str(st.f_bfree * st.f_frsize), str(filler)], check=False)
    with filler.open("ab") as f:  # whatever fallocate's rounding left
        for _ in range(4096):
            try:
                f.write(b"\0" * 4096)
                f.flush()
            except OSError:
                break
    return filler


def test_a_full_disk_under_the_results_ends_the_study_cleanly(small_fs: Path) -> None:
    """Audit N5: the disk filled while the engine ran; the final write was a traceback
    that left the loop device, the image and the work directories, and `fslab cleanup`
    tracebacked too until space was freed."""
    study = small_fs / "s.toml"
    study.write_text(STUDY)
    proc = subprocess.Popen(
        [sys.executable, "-m", "fslab", "run", str(study), "--results", "r.db"],
        cwd=small_fs, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not _engine_running(proc.pid):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the engine never started"
            time.sleep(0.05)
        time.sleep(1.0)  # past the layout: the run only reads now
        filler = _fill(small_fs)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 1, err
    assert "Traceback" not in err and "bug in fslab" not in err, err
    assert "the file system holding the results database is full" in err, err
    assert "hint: free space there" in err
    # Torn down before giving up: nothing attached, mounted or left in the work tree.
    assert not loops_under(small_fs) and mounts_under(small_fs) == [str(small_fs)], err
    work = small_fs / "fslab-work"
    assert not work.exists() or not any(work.rglob("*.img")), list(work.rglob("*"))

    # Still full: cleanup reads the journal and undoes what is left, without a trace.
    again = fslab("cleanup", "--results", "r.db", cwd=small_fs)
    assert again.returncode in (0, 1), again.stderr
    assert "Traceback" not in again.stderr and "bug in fslab" not in again.stderr

    filler.unlink()
    done = fslab("cleanup", "--results", "r.db", cwd=small_fs)
    assert done.returncode == 0, done.stderr
    con = sqlite3.connect(small_fs / "r.db")
    try:
        assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert con.execute("SELECT count(*) FROM run WHERE status = 'running'").fetchone() == (0,)
        left = con.execute("SELECT count(*) FROM journal WHERE state != 'undone'").fetchone()[0]
    finally:
        con.close()
    assert left == 0
    assert not work.exists()


def test_cleanup_undoes_what_it_reads_while_nothing_can_be_written(small_fs: Path) -> None:
    """A run killed, then its database's disk filled (the work tree elsewhere): cleanup
    still unmounts, detaches and deletes what the journal names; it says what it could
    not record, and records it once there is space."""
    lab = small_fs.parent
    study = lab / "s.toml"
    study.write_text(STUDY)
    proc = start_fslab("run", str(study), "--results", str(small_fs / "r.db"), "--workdir", "w",
                       cwd=lab)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not _engine_running(proc.pid):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the engine never started"
            time.sleep(0.05)
    finally:
        proc.kill()
        proc.communicate()
    assert mounts_under(lab / "w") and loops_under(lab / "w"), "the killed run left its target"
    filler = _fill(small_fs)

    full = fslab("cleanup", "--results", str(small_fs / "r.db"), cwd=lab)
    assert full.returncode == 1, full.stderr
    assert "Traceback" not in full.stderr and "bug in fslab" not in full.stderr
    assert "the file system holding the results database is full" in full.stderr, full.stderr
    assert "run `fslab cleanup` again" in full.stderr
    assert not mounts_under(lab / "w") and not loops_under(lab / "w")
    assert not (lab / "w").exists()

    filler.unlink()
    done = fslab("cleanup", "--results", str(small_fs / "r.db"), cwd=lab)
    assert done.returncode == 0, done.stderr
    con = sqlite3.connect(small_fs / "r.db")
    try:
        open_entries = con.execute("SELECT count(*) FROM journal WHERE state != 'undone'")
        assert open_entries.fetchone() == (0,)
        assert con.execute("SELECT count(*) FROM run WHERE status = 'running'").fetchone() == (0,)
    finally:
        con.close()


def test_a_run_does_not_start_without_room_for_its_results(small_fs: Path) -> None:
    """A run is not started when its results could not be stored: the database lies on
    a nearly full file system (the work directory elsewhere)."""
    lab = small_fs.parent
    study = lab / "s.toml"
    study.write_text(STUDY)
    st = os.statvfs(small_fs)
    sh("fallocate", "-l", str(st.f_bavail * st.f_frsize - (16 << 20)), str(small_fs / "filler"))
    done = fslab("run", str(study), "--results", str(small_fs / "r.db"), "--workdir", "w",
                 cwd=lab)  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "MiB free on the file system holding the results database" in done.stderr
    assert "a run needs 32 MiB to store its results" in done.stderr
    assert "Traceback" not in done.stderr
    assert not loops_under(lab / "w") and not (lab / "w").exists()


def test_a_database_on_a_read_only_mount_is_read_where_it_lies(small_fs: Path) -> None:
    """Audit N6: compare, report and export said `unable to open database file`, and
    `run` was a traceback about its lock file."""
    make_fixture_db(small_fs / "r.db")
    sh("mount", "-o", "remount,ro", str(small_fs))
    out = small_fs.parent
    for args in (
        ["compare"],
        ["report", "-o", str(out / "r.html")],
        ["export", "-o", str(out / "r.csv")],
    ):
        done = fslab(*args, "--results", str(small_fs / "r.db"), cwd=out)
        assert done.returncode == 0, (args, done.stderr)
    assert (out / "r.html").stat().st_size > 0 and (out / "r.csv").stat().st_size > 0
    study = out / "s.toml"
    study.write_text(STUDY)
    for args in (["run", str(study), "--workdir", str(out / "w")], ["cleanup"]):
        done = fslab(*args, "--results", str(small_fs / "r.db"), cwd=out)
        assert done.returncode == 2, done.stderr
        assert "is on a read-only file system" in done.stderr, done.stderr
        assert "copy it to a writable place" in done.stderr
        assert "Traceback" not in done.stderr
    assert not (out / "w").exists()
    assert sorted(p.name for p in small_fs.iterdir()) == ["lost+found", "r.db"]
