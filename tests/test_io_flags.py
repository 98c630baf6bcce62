"""What each request carries and how the ring submits it (`atomic`, `uncached`, `nowait`,
`sqthread_poll`) and what a thread is told (`write_hint`, `nice`), checked where the
kernel shows the effect: xfs and ext4 on loop devices, the page cache, /proc."""

from __future__ import annotations

import fcntl
import json
import shutil
import struct
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import sh, write_job

pytestmark = [pytest.mark.root, pytest.mark.engine]

F_GET_RW_HINT = 1024 + 11


@pytest.fixture
def fs(lab: Path) -> Iterator[dict[str, Path]]:
    """xfs and ext4, each on a loop device of its own, mounted under `lab` and taken
    down afterwards whatever happens (`lab` then checks that nothing is left)."""
    made: dict[str, Path] = {}
    try:
        for kind in ("xfs", "ext4"):
            image = lab / f"{kind}.img"
            with image.open("wb") as f:
                f.truncate(512 << 20)
            sh(f"mkfs.{kind}", "-q", *(["-F"] if kind == "ext4" else []), str(image))
            mnt = lab / kind
            mnt.mkdir()
            sh("mount", "-o", "loop", str(image), str(mnt))
            made[kind] = mnt
        yield made
    finally:
        for mnt in made.values():
            subprocess.run(["umount", str(mnt)], check=False)


def run(engine: Path, job: dict[str, Any], where: Path) -> tuple[int, dict[str, Any], str]:
    path = write_job(where.parent / f"{where.name}-job.toml", job)
    done = subprocess.run(
        [str(engine), "run", str(path)], capture_output=True, text=True, check=False, timeout=60
    )
    report = json.loads(done.stdout) if done.stdout.strip() else {}
    return done.returncode, report, done.stderr


def ios(report: dict[str, Any], op: str) -> int:
    return sum(int(r["ios"]) for r in report["results"] if r["op"] == op)


def test_atomic_writes_run_on_xfs_and_are_refused_on_ext4_before_anything_is_made(
    engine: Path, fs: dict[str, Path]
) -> None:
    job = {"size": "16m", "rw": "randwrite", "bs": "16k", "direct": True, "atomic": True}
    for ioengine, depth in (("io_uring", 8), ("sync", 1)):
        target = fs["xfs"] / f"a-{ioengine}"
        code, report, err = run(
            engine,
            {**job, "filename": str(target), "ioengine": ioengine, "iodepth": depth,
             "io_size": "4m"},
            fs["xfs"],
        )  # fmt: skip
        assert code == 0, err
        assert report["job"]["atomic"] is True
        assert ios(report, "write") == 256, f"{ioengine}: every 16k write of 4m was taken"
    before = sorted(p.name for p in fs["ext4"].iterdir())
    code, _, err = run(engine, {**job, "filename": str(fs["ext4"] / "a")}, fs["ext4"])
    assert code == 2, err
    assert "`atomic`:" in err and "offers no atomic writes" in err, err
    assert "hint: xfs offers them" in err, err
    assert sorted(p.name for p in fs["ext4"].iterdir()) == before, "a refused job makes nothing"


def test_a_nowait_read_of_data_not_in_the_page_cache_fails_eagain(
    engine: Path, fs: dict[str, Path]
) -> None:
    """RWF_NOWAIT reaches the kernel: a buffered read that would have to go to the disk
    is answered EAGAIN at once; `continue_errors` can go on past it."""
    for ioengine, depth in (("io_uring", 4), ("sync", 1)):
        target = fs["xfs"] / f"n-{ioengine}"
        job = {"filename": str(target), "size": "32m", "rw": "randread", "bs": "4k",
               "nowait": True, "invalidate": True, "ioengine": ioengine, "iodepth": depth,
               "runtime": "300ms"}  # fmt: skip
        code, report, err = run(engine, job, fs["xfs"])
        assert code == 1, err
        assert report["errors"][0]["errno"] == 11, report["errors"]
        code, report, err = run(
            engine,
            {**job, "continue_on_error": "read", "continue_errors": ["EAGAIN"]},
            fs["xfs"],
        )
        assert code == 0, err


@pytest.mark.skipif(shutil.which("fincore") is None, reason="needs fincore (util-linux)")
def test_uncached_reads_leave_nothing_in_the_page_cache(engine: Path, fs: dict[str, Path]) -> None:
    def resident(path: Path) -> int:
        return int(sh("fincore", "--bytes", "--noheadings", "--output", "RES", str(path)))

    target = fs["xfs"] / "u"
    job = {"filename": str(target), "size": "32m", "rw": "read", "bs": "64k", "invalidate": True}
    for uncached, expect_cached in ((True, False), (False, True)):
        code, _, err = run(engine, {**job, "uncached": uncached}, fs["xfs"])
        assert code == 0, err
        cached = resident(target)
        assert (cached > 16 << 20) == expect_cached, f"uncached={uncached}: {cached} resident"


def test_a_polling_ring_a_nice_value_and_a_write_hint_are_set(
    engine: Path, fs: dict[str, Path]
) -> None:
    target = fs["xfs"] / "p"
    job = {"filename": str(target), "size": "32m", "rw": "randread", "bs": "4k",
           "direct": True, "iodepth": 16, "runtime": "2s", "sqthread_poll": True,
           "nice": 7, "write_hint": "long"}  # fmt: skip
    path = write_job(fs["xfs"].parent / "p-job.toml", job)
    proc = subprocess.Popen(
        [str(engine), "run", str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    seen: dict[str, int] = {}
    try:
        deadline = time.monotonic() + 1.8
        while time.monotonic() < deadline and not {"iou-sqp", "nice"} <= seen.keys():
            for task in Path(f"/proc/{proc.pid}/task").glob("*"):
                try:
                    comm = (task / "comm").read_text().strip()
                    nice = int((task / "stat").read_text().rsplit(")", 1)[1].split()[16])
                except (OSError, IndexError, ValueError):
                    continue
                if comm.startswith("iou-sqp"):
                    seen["iou-sqp"] = 1
                if nice == 7:
                    seen["nice"] = nice
            time.sleep(0.05)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert seen == {"iou-sqp": 1, "nice": 7}, "the ring's polling thread and a thread at nice 7"
    assert json.loads(out)["job"]["sqthread_poll"] is True
    with target.open("rb") as f:
        (hint,) = struct.unpack("Q", fcntl.fcntl(f.fileno(), F_GET_RW_HINT, struct.pack("Q", 0)))
    assert hint == 4, "RWH_WRITE_LIFE_LONG"


def test_verify_holds_with_a_polling_ring(engine: Path, fs: dict[str, Path]) -> None:
    job = {"filename": str(fs["xfs"] / "v"), "size": "16m", "rw": "randwrite", "bs": "4k",
           "direct": True, "iodepth": 16, "sqthread_poll": True, "verify": True,
           "verify_read_back": True}  # fmt: skip
    code, report, err = run(engine, job, fs["xfs"])
    assert code == 0, err
    v = report["verify"]
    assert (v["good"], v["read_back_blocks"]) == (4096, 4096), v
