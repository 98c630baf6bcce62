"""A small results database with fixed numbers, made through the real schema
(`Results.open`), for the report tests: a block workload swept over iodepth and a files
workload swept over threads, three targets (one with markup in its name), telemetry with
a peak, write and space amplification, one failed run. Same input, same bytes out."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fslab.store.db import Results

EVIL = 'btrfs<script>alert("x")</script>'
"""A target name that must come out escaped everywhere."""
TARGETS = ("ext4", "xfs", EVIL)
STUDY = "report fixture: ext4 vs xfs"
STUDY_TOML = f'''name = "{STUDY}"
repeat = 3

[[target]]
name = "ext4"
fs = "ext4"

[[target]]
name = "xfs"
fs = "xfs"

[[target]]
name = 'btrfs<script>alert("x")</script>'
fs = "btrfs"

[[workload]]
name = "sweep"
rw = ["randread", "randwrite"]
bs = "8KiB"
iodepth = [1, 4, 16]
runtime = "10s"
'''

# IOPS at iodepth 1 per target and rw; more depth helps, less and less.
_BASE = {
    ("ext4", "randread"): 20_000.0,
    ("xfs", "randread"): 27_000.0,
    (EVIL, "randread"): 16_000.0,
    ("ext4", "randwrite"): 15_000.0,
    ("xfs", "randwrite"): 14_800.0,
    (EVIL, "randwrite"): 6_000.0,
}
_REP = (0.97, 1.0, 1.03)
_NOISY_REP = (0.85, 1.0, 1.15)
_FS = {"ext4": "ext4", "xfs": "xfs", EVIL: "btrfs"}


def _effective(target: str) -> dict[str, Any]:
    fs = _FS[target]
    return {
        "fs": fs,
        "kind": "loop",
        "devices": ["/dev/loop0"],
        "image_size": 1 << 30,
        "block_size": 4096,
        "data_checksums": fs == "btrfs",
        "metadata_checksums": True,
        "encryption": None,
        "mkfs": {"command": f"mkfs.{fs} -L fslab /dev/loop0", "argv": [f"mkfs.{fs}"]},
        "mount_command": f"mount -t {fs} /dev/loop0 /mnt",
        "mount": {"options": ["rw", "relatime"], "fstype": fs},
        "caches": {"dropped": True},
        "raw": {"mkfs": "tool output\nline two"},
    }


def _telemetry(peak_iops: float, seconds: int, t_peak: int, written_bps: float) -> dict[str, Any]:
    series = []
    for i in range(seconds):
        shape = 1.0 if i == t_peak else 0.55 + 0.05 * (i % 3)
        series.append(
            {
                "t_s": float(i + 1),
                "dt_s": 1.0,
                "devices": {
                    "loop0": {
                        "read_iops": peak_iops * shape * 0.5,
                        "write_iops": peak_iops * shape * 0.5,
                        "read_bytes_per_s": written_bps * shape * 0.25,
                        "write_bytes_per_s": written_bps * shape,
                    },
                    "vda": {
                        "read_iops": 1.0,
                        "write_iops": 1.0,
                        "read_bytes_per_s": 4096.0,
                        "write_bytes_per_s": 4096.0,
                    },
                },
            }
        )
    return {
        "interval_s": 1.0,
        "series": series,
        "roles": {"members": ["loop0"], "stacked": [], "backing": ["vda"]},
    }


class _Db:
    def __init__(self, path: Path) -> None:
        self.results = Results.open(path)
        self.con = self.results.con
        self.seq = 0
        self.run_seq = 0
        self.study_id = self.results.upsert_study(STUDY, "examples/report-fixture.toml", STUDY_TOML)
        self.con.execute("UPDATE study SET created_at = 1700000000.0")
        self.env_id = self.results.environment_id(
            {
                "kernel": "6.1.0-test",
                "cpu_model": "Test CPU @ 2.0GHz",
                "cores": 2,
                "mem_bytes": 8 << 30,
                "tools": {"fslab": "0.1.0", "mkfs.ext4": "mke2fs 1.47.0 (5-Feb-2023)"},
            }
        )

    def point(self, target: str, workload: str, kind: str, params: Mapping[str, Any]) -> str:
        pid = f"p{self.seq:03d}"
        self.results.add_point(
            pid, self.study_id, self.seq, target, workload, kind,
            {"name": target, "fs": _FS[target]}, params,
        )  # fmt: skip
        self.seq += 1
        return pid

    def run(
        self,
        point_id: str,
        rep: int,
        target: str,
        ops: Mapping[str, tuple[float, float, float]],
        telemetry: Mapping[str, Any] | None,
        metrics: Mapping[str, float],
        status: str = "ok",
    ) -> int:
        """`ops`: op -> (iops, bw_bytes, lat_mean_ns)."""
        self.run_seq += 1
        started = 1_700_000_000.0 + 60 * self.run_seq
        cur = self.con.execute(
            "INSERT INTO run (point_id, rep, status, started_at, ended_at, environment_id,"
            " effective, runtime_s) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (point_id, rep, status, started, started + 10, self.env_id,
             json.dumps(_effective(target), sort_keys=True), 10.0),
        )  # fmt: skip
        run_id = int(cur.lastrowid or 0)
        for op, (iops, bw, lat) in ops.items():
            self.con.execute(
                "INSERT INTO metric VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (run_id, op, int(iops * 10), int(bw * 10), iops, bw, int(lat / 4), lat,
                 lat / 5, int(lat * 9), int(lat), int(lat * 1.6), int(lat * 2), int(lat * 2.5),
                 int(lat * 4), int(lat * 6), ""),
            )  # fmt: skip
        if telemetry is not None:
            self.con.execute(
                "INSERT INTO telemetry VALUES (?, ?, ?)", (run_id, 1.0, json.dumps(telemetry))
            )
        for name, value in metrics.items():
            self.con.execute("INSERT INTO run_metric VALUES (?, ?, ?)", (run_id, name, value))
        return run_id


def make_fixture_db(path: Path) -> Path:
    """Writes the fixture database at `path` and returns it."""
    db = _Db(path)
    try:
        _block(db)
        _files(db)
    finally:
        db.results.close()
    return path


def _block(db: _Db) -> None:
    for target in TARGETS:
        for rw in ("randread", "randwrite"):
            for depth in (1, 4, 16):
                params = {
                    "rw": rw, "bs": 8192, "threads": 1, "iodepth": depth,
                    "file_size": 256 << 20, "runtime": 10.0, "direct": True,
                }  # fmt: skip
                pid = db.point(target, "sweep", "block", params)
                reps = _NOISY_REP if target == EVIL else _REP
                for rep, f in enumerate(reps):
                    iops = _BASE[(target, rw)] * (1 + math.log2(depth) * 0.6) * f
                    op = "read" if rw == "randread" else "write"
                    lat = depth / iops * 1e9
                    written = iops * 8192 * 10 if op == "write" else 256 << 20
                    amp = {"ext4": 1.05, "xfs": 1.02, EVIL: 1.6}[target] * (1 + 0.01 * rep)
                    metrics = {
                        "written_bytes": written * amp,
                        "read_bytes": iops * 8192 * 10 if op == "read" else 0.0,
                        "write_amplification": amp,
                        "space_amplification": {"ext4": 1.0, "xfs": 1.0, EVIL: 1.01}[target],
                        "cpu_busy_pct_avg": 30.0 + rep,
                        "cached_growth_bytes": 1 << 20,
                    }
                    tele = _telemetry(iops * amp, 8, 2 + rep, iops * 8192 * amp)
                    db.run(pid, rep, target, {op: (iops, iops * 8192, lat)}, tele, metrics)
                if target == EVIL and rw == "randwrite" and depth == 16:
                    db.run(pid, 3, target, {}, None, {}, status="failed")


_FILE_OPS = {"create": 40_000.0, "copy": 9_000.0, "scan": 120_000.0}
_FILES_FACTOR = {"ext4": 1.0, "xfs": 1.25, EVIL: 0.8}


def _files(db: _Db) -> None:
    for target in TARGETS:
        for threads in (1, 2):
            params = {
                "set": "small", "threads": threads, "nr_files": 2000, "file_size": 16384,
                "ops": ["copy", "scan"],
            }  # fmt: skip
            pid = db.point(target, "manage", "files", params)
            for rep, f in enumerate((0.98, 1.02)):
                ops: dict[str, tuple[float, float, float]] = {}
                tele: dict[str, Any] = {}
                metrics: dict[str, float] = {}
                for i, (op, base) in enumerate(_FILE_OPS.items()):
                    rate = base * _FILES_FACTOR[target] * (1 + 0.4 * (threads - 1)) * f
                    ops[op] = (rate, rate * 16384, threads / rate * 1e9)
                    tele[op] = _telemetry(rate * 2, 3 + i, 1, rate * 16384)
                    if op in ("create", "copy"):
                        amp = {"ext4": 1.1, "xfs": 1.05, EVIL: 1.4}[target]
                        space = {"ext4": 1.02, "xfs": 1.01, EVIL: 1.1}[target]
                        metrics[f"{op}.written_bytes"] = 2000 * 16384 * amp
                        metrics[f"{op}.write_amplification"] = amp + 0.01 * rep
                        metrics[f"{op}.space_amplification"] = space
                db.run(pid, rep, target, ops, tele, metrics)
