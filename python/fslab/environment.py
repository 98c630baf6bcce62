"""The machine a run runs on, and getting it ready for a measurement."""

from __future__ import annotations

import os
import platform
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fslab import __version__


def _meminfo() -> dict[str, int]:
    out: dict[str, int] = {}
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            key, _, rest = line.partition(":")
            parts = rest.split()
            if parts:
                out[key] = int(parts[0]) * (1024 if len(parts) > 1 else 1)
    except OSError:
        pass
    return out


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def version_line(cmd: list[str]) -> str | None:
    """The first line a `--version` style command prints, or None where it does not run."""
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (done.stdout or done.stderr).strip().splitlines()
    return text[0].strip() if text else None


def describe(engine: Path) -> dict[str, Any]:
    """Kernel, CPU, memory and the versions of every tool a result depends on."""
    tools = {
        "fslab": __version__,
        "fslab-engine": version_line([str(engine), "--version"]),
        "mkfs.ext4": version_line(["mke2fs", "-V"]),
        "mkfs.xfs": version_line(["mkfs.xfs", "-V"]),
        "mkfs.btrfs": version_line(["mkfs.btrfs", "--version"]),
        "util-linux": version_line(["losetup", "--version"]),
    }
    return {
        "kernel": platform.release(),
        "cpu_model": _cpu_model(),
        "cores": os.cpu_count() or 0,
        "mem_bytes": _meminfo().get("MemTotal", 0),
        "tools": {k: v for k, v in tools.items() if v is not None},
    }


@dataclass(frozen=True)
class CacheDrop:
    dropped: bool
    cached_before: int
    cached_after: int
    note: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "dropped": self.dropped,
            "cached_before_bytes": self.cached_before,
            "cached_after_bytes": self.cached_after,
            "note": self.note,
        }


def drop_caches() -> CacheDrop:
    """sync, then drop the page cache, and check that it fell: drop_caches frees only
    clean pages, and writing to it silently does nothing without root."""
    before = _meminfo().get("Cached", 0)
    os.sync()
    try:
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
    except OSError as e:
        return CacheDrop(False, before, before, f"cannot drop caches: {e.strerror or e}")
    after = _meminfo().get("Cached", 0)
    fell = after < before or after < (64 << 20)
    return CacheDrop(fell, before, after, None if fell else "Cached did not fall")
