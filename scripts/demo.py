"""The README's demo: a few engine jobs on the null backend, a tmpfs file and ext4 on a
loop device, printed as one table.

The loop device and everything on it are made here and removed in `finally`, also on
Ctrl-C. (Provisioning moves into fslab's targets with studies; this demo then becomes a
small study.)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from fslab.engine import run_job
from fslab.units import format_bytes, format_ns

RUNTIME = "3s"
RAMP = "1s"


def sh(*args: str) -> str:
    done = subprocess.run(args, check=True, capture_output=True, text=True)
    return done.stdout.strip()


@contextmanager
def ext4_on_loop(size: str = "1G") -> Iterator[Path]:
    """Yields the mount point of a fresh ext4 on a loop device; removes all of it after."""
    work = Path(tempfile.mkdtemp(prefix="fslab-demo-", dir="/var/tmp"))
    image, mnt = work / "ext4.img", work / "mnt"
    dev = ""
    mounted = False
    try:
        sh("truncate", "-s", size, str(image))
        dev = sh("losetup", "--find", "--show", str(image))
        sh("mkfs.ext4", "-q", "-F", dev)
        mnt.mkdir()
        sh("mount", dev, str(mnt))
        mounted = True
        yield mnt
    finally:
        if mounted:
            for _ in range(50):
                if subprocess.run(["umount", str(mnt)], check=False).returncode == 0:
                    mounted = False
                    break
                time.sleep(0.1)
        if dev and not mounted:
            # `losetup -d` on a busy device returns 0 and detaches nothing: check sysfs.
            sysfs = Path("/sys/block") / Path(dev).name / "loop" / "backing_file"
            for _ in range(50):
                subprocess.run(["losetup", "-d", dev], check=False, capture_output=True)
                if not sysfs.exists():
                    break
                time.sleep(0.1)
        if mounted:
            # Never delete through a mount point that is still there.
            print(f"demo: error: {mnt} is still mounted from {dev}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


def row(table: Table, where: str, job: dict[str, Any]) -> None:
    job = {"runtime": RUNTIME, "ramp_time": RAMP, "bs": "4k", **job}
    threads = job.get("numjobs", 1)
    depth = job.get("iodepth", 1)
    what = f"{job['rw']} {job['bs']} QD{depth}" + (f" x{threads}" if threads > 1 else "")
    print(f"demo: {where}: {what} ...", file=sys.stderr)
    report = run_job(job).report
    for r in report.results:
        table.add_row(
            where,
            what,
            job.get("ioengine", "io_uring"),
            f"{r.iops:,.0f}",
            f"{format_bytes(r.bw_bytes)}/s",
            format_ns(r.lat_ns.mean),
            format_ns(r.lat_ns.p99),
            f"{report.cpu.usage_pct:.0f}%",
        )


def main() -> int:
    table = Table(title=f"fslab-engine: {RUNTIME} per job after a {RAMP} ramp")
    for col in ("target", "job", "engine", "IOPS", "bandwidth", "mean", "p99", "CPU"):
        table.add_column(col, justify="left" if col in ("target", "job", "engine") else "right")

    row(table, "none", {"ioengine": "null", "rw": "randread"})
    row(table, "none", {"ioengine": "null", "rw": "randread", "numjobs": 2})
    with tempfile.TemporaryDirectory(prefix="fslab-demo-", dir="/dev/shm") as shm:
        base: dict[str, Any] = {
            "filename": str(Path(shm) / "demo.dat"),
            "size": "256m",
            "ioengine": "sync",
        }
        row(table, "tmpfs", {**base, "rw": "randread"})
        row(table, "tmpfs", {**base, "rw": "randwrite"})
    if os.geteuid() != 0:
        print("demo: not root, so no loop device: skipping ext4", file=sys.stderr)
    else:
        with ext4_on_loop() as mnt:
            base = {
                "filename": str(mnt / "demo.dat"),
                "size": "512m",
                "direct": True,
            }
            row(table, "ext4/loop", {**base, "rw": "randread"})
            row(table, "ext4/loop", {**base, "rw": "randread", "iodepth": 32})
            row(table, "ext4/loop", {**base, "rw": "randwrite", "iodepth": 32})
    Console(width=max(100, shutil.get_terminal_size().columns)).print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
