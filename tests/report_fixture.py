"""A small results database with fixed numbers, made through the real schema
(`ResultsWriter.open`), for the report tests: a block workload swept over iodepth and a files
workload swept over threads, three targets (one with markup in its name), telemetry with
a peak and a page cache that fills, write and space amplification, one failed run. Same
input, same bytes out.

`make_app_fixture_db` writes another, of the application models: two mailstore workloads
(one under the default limits, every target passing; one under a tight budget that one
target fails in every run and another in one of three) and an oltp workload swept over
threads. Its mail store's `btrfs` reads from memory (a `cached` warning)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from fslab.store.db import ResultsWriter
from fslab.store.derive import derive

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


def _effective(target: str, fs_of: Mapping[str, str] = _FS) -> dict[str, Any]:
    fs = fs_of[target]
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


_CACHED = 64 << 20
_AVAILABLE = 6 << 30


def _telemetry(peak_iops: float, seconds: int, t_peak: int, written_bps: float) -> dict[str, Any]:
    """`seconds` one-second intervals, the `t_peak`th the busiest; the page cache grows
    by what was written and the memory available shrinks as much."""
    series = []
    cached = _CACHED
    for i in range(seconds):
        shape = 1.0 if i == t_peak else 0.55 + 0.05 * (i % 3)
        cached += int(written_bps * shape)
        series.append(
            {
                "t_s": float(i + 1),
                "dt_s": 1.0,
                "cached_bytes": cached,
                "dirty_bytes": int(written_bps * shape / 4),
                "writeback_bytes": 0,
                "available_bytes": max(_AVAILABLE - (cached - _CACHED), 1 << 30),
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
        "start_memory": {
            "cached_bytes": _CACHED,
            "dirty_bytes": 0,
            "writeback_bytes": 0,
            "available_bytes": _AVAILABLE,
        },
    }


class _Db:
    def __init__(
        self,
        path: Path,
        study: str = STUDY,
        toml: str = STUDY_TOML,
        fs_of: Mapping[str, str] = _FS,
    ) -> None:
        self.results = ResultsWriter.open(path)
        self.con = self.results.con
        self.seq = 0
        self.run_seq = 0
        self.fs_of = fs_of
        self.study_id = self.results.upsert_study(study, "examples/report-fixture.toml", toml)
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
            {"name": target, "fs": self.fs_of[target]}, params,
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
             json.dumps(_effective(target, self.fs_of), sort_keys=True), 10.0),
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
        derive(self.con, [run_id])  # as the store does when a run is stored
        return run_id


def make_fixture_db(path: Path, depths: Sequence[int] = (1, 4, 16)) -> Path:
    """Writes the fixture database at `path` and returns it; `depths` are the block
    sweep's queue depths (many of them: a large study)."""
    db = _Db(path)
    try:
        _block(db, depths)
        _files(db)
    finally:
        db.results.close()
    return path


def _block(db: _Db, depths: Sequence[int]) -> None:
    for target in TARGETS:
        for rw in ("randread", "randwrite"):
            for depth in depths:
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


# -- the application models -------------------------------------------------------------------

APP_TARGETS = ("ext4", "xfs", "btrfs")
APP_STUDY = "app fixture: mail store and oltp"
APP_STUDY_TOML = f'''name = "{APP_STUDY}"
repeat = 3

[[target]]
name = "ext4"
fs = "ext4"

[[target]]
name = "xfs"
fs = "xfs"

[[target]]
name = "btrfs"
fs = "btrfs"

[[workload]]
kind = "mailstore"
name = "mail"
threads = 4
runtime = "10s"
data_size = "256MiB"
log_size = "16MiB"
cache_size = ["8MiB", "32MiB"]

[[workload]]
kind = "mailstore"
name = "budget"
threads = 4
runtime = "10s"
data_size = "256MiB"
log_size = "16MiB"
cache_size = "8MiB"
read_lat_ms_max = 1
log_lat_ms_max = 0.5

[[workload]]
kind = "oltp"
name = "synthetic"
threads = [1, 8]
runtime = "10s"
data_size = "256MiB"
log_size = "16MiB"
'''
_APP_FS = {t: t for t in APP_TARGETS}
_TPS = {"ext4": 2000.0, "xfs": 1500.0, "btrfs": 900.0}
# Mean DB read and log write latency (ms) per target and repetition in workload `budget`,
# whose limits are 1 ms and 0.5 ms: ext4 passes, xfs fails its log writes in every run,
# btrfs in its third run only (its mean stays under the limit).
BUDGET_LOG_MS = {
    "ext4": (0.30, 0.32, 0.31), "xfs": (0.80, 0.85, 0.90), "btrfs": (0.40, 0.45, 0.60),
}  # fmt: skip
BUDGET_READ_MS = {
    "ext4": (0.20, 0.21, 0.22), "xfs": (0.40, 0.41, 0.42), "btrfs": (0.50, 0.55, 0.52),
}  # fmt: skip


def make_app_fixture_db(path: Path) -> Path:
    """Writes the application models' fixture database at `path` and returns it."""
    db = _Db(path, APP_STUDY, APP_STUDY_TOML, _APP_FS)
    try:
        common = {"threads": 4, "runtime": 10.0, "data_size": 256 << 20, "log_size": 16 << 20}
        for target in APP_TARGETS:
            for cache in (8 << 20, 32 << 20):
                pid = db.point(target, "mail", "mailstore", {**common, "cache_size": cache})
                for rep, f in enumerate(_REP):
                    log_ms = BUDGET_LOG_MS[target][rep] * 2  # far under the default 10 ms
                    read_ms = BUDGET_READ_MS[target][rep] * (1.5 if cache == 8 << 20 else 1.0)
                    _mail_run(db, pid, rep, target, f, read_ms, log_ms, (20.0, 10.0))
        for target in APP_TARGETS:
            params = {**common, "cache_size": 8 << 20, "read_lat_ms_max": 1,
                      "log_lat_ms_max": 0.5}  # fmt: skip
            pid = db.point(target, "budget", "mailstore", params)
            for rep, f in enumerate(_REP):
                read_ms, log_ms = BUDGET_READ_MS[target][rep], BUDGET_LOG_MS[target][rep]
                _mail_run(db, pid, rep, target, f, read_ms, log_ms, (1.0, 0.5))
        for target in APP_TARGETS:
            for threads in (1, 8):
                pid = db.point(target, "synthetic", "oltp", {**common, "threads": threads})
                for rep, f in enumerate(_REP):
                    tps = _TPS[target] * (1 + 0.5 * math.log2(threads)) * f
                    lat = threads / tps * 1e9
                    ops = {
                        "txn": (tps, 0.0, lat),
                        "data_read": (tps * 5.5, tps * 5.5 * 8192, lat / 8),
                        "data_write": (tps * 2, tps * 2 * 8192, lat / 6),
                        "log_write": (tps, tps * 4096, lat / 3),
                    }
                    metrics = {
                        "app.cache_hit_pct": 80.0 + rep,
                        "app.records_per_flush": 1.0 + threads / 4,
                        "app.checkpoints": 3.0,
                        "app.checkpoint_iops_peak": tps * 12,
                        "iops_avg": tps * 8.5,
                        "iops_peak": tps * 14,
                        "written_bytes": tps * 10 * 3 * 8192,
                    }
                    db.run(pid, rep, target, ops, None, metrics)
    finally:
        db.results.close()
    return path


def _mail_run(
    db: _Db,
    pid: str,
    rep: int,
    target: str,
    f: float,
    read_ms: float,
    log_ms: float,
    limits: tuple[float, float],
) -> None:
    tps = _TPS[target] * f
    ops = {
        "txn": (tps, 0.0, (read_ms + log_ms) * 1e6),
        "data_read": (tps * 3, tps * 3 * 32768, read_ms * 1e6),
        "data_write": (tps, tps * 32768, read_ms * 0.8e6),
        "log_write": (tps / 2, tps * 8192, log_ms * 1e6),
        # slow and small: its MiB/s must not make a chart
        "maintenance_read": (40.0, 40.0 * 262144, 2e6),
    }
    read_ok, log_ok = read_ms < limits[0], log_ms < limits[1]
    metrics = {
        "jetstress.transactional_iops": tps * 4,
        "jetstress.db_reads_per_s": tps * 3,
        "jetstress.db_writes_per_s": tps,
        "jetstress.db_read_lat_ns": read_ms * 1e6,
        "jetstress.db_write_lat_ns": read_ms * 0.8e6,
        "jetstress.log_writes_per_s": tps / 2,
        "jetstress.log_write_lat_ns": log_ms * 1e6,
        "verdict.pass": 1.0 if read_ok and log_ok else 0.0,
        "verdict.db_read_lat_ms_mean.pass": 1.0 if read_ok else 0.0,
        "verdict.db_read_lat_ms_mean.max": limits[0],
        "verdict.log_write_lat_ms_mean.pass": 1.0 if log_ok else 0.0,
        "verdict.log_write_lat_ms_mean.max": limits[1],
        "app.cache_hit_pct": 60.0 + rep,
        "app.checkpoints": 2.0,
        "iops_peak": tps * 10,
        "written_bytes": tps * 10 * 32768,
        # btrfs's devices read next to nothing: a `cached` warning, whose hint is long
        "read_bytes": tps * 3 * 32768 * 10 * (0.005 if target == "btrfs" else 1.0),
    }
    db.run(pid, rep, target, ops, None, metrics)
