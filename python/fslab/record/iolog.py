"""A program's recorded calls as fio iologs (version 3): one trace per thread, each file
added and opened before its first I/O, offsets from the calls (or, for `read`/`write`,
the descriptor's position as the calls moved it), times in microseconds from the first
call recorded, so the threads' traces stay in step when replayed side by side."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from fslab.record.strace import Call

HEADER = "fio version 3 iolog"

_AT_OFFSET = {"pread64": 3, "pwrite64": 3, "preadv": 3, "pwritev": 3, "preadv2": 3, "pwritev2": 3}
"""Calls that name their offset, and which argument it is (-1 for preadv2/pwritev2:
the descriptor's position)."""
_READS = {"read", "readv", "pread64", "preadv", "preadv2"}
_WRITES = {"write", "writev", "pwrite64", "pwritev", "pwritev2"}
_OPENS = {"open", "openat", "openat2", "creat"}


@dataclass
class Trace:
    """One thread's trace, as lines, and the files it has added."""

    tid: int
    lines: list[str] = field(default_factory=list)
    files: set[str] = field(default_factory=set)
    ios: int = 0
    bytes: int = 0


@dataclass
class Recording:
    """Every thread's trace, and what the recording left out."""

    traces: dict[int, Trace]
    outside: int = 0
    """Calls on files outside the directory (libraries, /proc...)."""
    unknown_offset: int = 0
    """`read`/`write` calls on a descriptor whose position was not known (opened before
    the recording began): left out."""


def _relative(path: str, root: str) -> str | None:
    if path == root or not path.startswith(root.rstrip("/") + "/"):
        return None
    return os.path.relpath(path, root)


def convert(calls: Iterable[Call], root: Path) -> Recording:
    """The calls on files under `root` as one trace per thread."""
    top = str(root.resolve())
    rec = Recording(traces={})
    positions: dict[tuple[int, str], int] = {}
    ends: dict[str, int] = {}
    zero: float | None = None

    def trace(c: Call) -> Trace:
        return rec.traces.setdefault(c.tid, Trace(c.tid))

    def emit(c: Call, rel: str, action: str, offset: int | None = None, n: int = 0) -> None:
        nonlocal zero
        zero = c.at_s if zero is None else zero
        us = max(0, round((c.at_s - zero) * 1e6))
        t = trace(c)
        if rel not in t.files:
            t.files.add(rel)
            t.lines += [f"{us} {rel} add", f"{us} {rel} open"]
        if offset is None:
            # fio reads a line of three fields as a file action: a sync needs all five.
            t.lines.append(f"{us} {rel} {action} 0 0")
        else:
            t.lines.append(f"{us} {rel} {action} {offset} {n}")
            t.ios += 1
            t.bytes += n

    for c in calls:
        if c.result < 0:
            continue
        if c.name in _OPENS:
            if c.result_path is None:
                continue
            if _relative(c.result_path, top) is None:
                rec.outside += 1
                continue
            flags = "" if c.name == "creat" else c.arg(2 if c.name.startswith("openat") else 1)
            if "O_TRUNC" in flags or c.name == "creat":
                ends[c.result_path] = 0
            append = "O_APPEND" in flags
            positions[(c.result, c.result_path)] = ends.get(c.result_path, 0) if append else 0
            continue
        named = c.fd()
        if named is None:
            continue
        fd, path = named
        rel = _relative(path, top)
        if rel is None:
            rec.outside += 1
            continue
        key = (fd, path)
        if c.name == "lseek":
            positions[key] = c.result
        elif c.name == "close":
            positions.pop(key, None)
        elif c.name in ("fsync", "fdatasync"):
            emit(c, rel, "sync" if c.name == "fsync" else "datasync")
        elif c.name in _READS or c.name in _WRITES:
            n = c.result
            if n == 0:
                continue
            offset: int | None = None
            if c.name in _AT_OFFSET:
                printed = c.arg(_AT_OFFSET[c.name])
                offset = int(printed) if printed.lstrip("-").isdigit() else None
                if offset == -1:
                    offset = None
            moves = offset is None
            if offset is None:
                offset = positions.get(key)
                if offset is None:
                    rec.unknown_offset += 1
                    continue
            write = c.name in _WRITES
            emit(c, rel, "write" if write else "read", offset, n)
            if moves:
                positions[key] = offset + n
            if write:
                ends[path] = max(ends.get(path, 0), offset + n)
    return rec


def write(rec: Recording, out: Path) -> list[Path]:
    """Each thread's trace as `trace.<n>.log` in `out` (threads numbered from 1 in the
    order of their ids), and `replay.fio`, a job file with
    a job per trace that fio and fslab-engine both run (`fslab-engine run --fio`) in the
    directory the files are to be replayed in."""
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    # The traces' paths are relative: both tools find the files in the current
    # directory (fio 3.33 crashes replaying a trace under `directory=.`).
    jobs = ["[global]", "replay_no_stall=0", ""]
    recorded = [t for _, t in sorted(rec.traces.items()) if t.ios]
    for n, t in enumerate(recorded, 1):
        path = out / f"trace.{n}.log"
        # No `close` lines: fio closes every file at the end anyway, and fio 3.33 crashes
        # (SIGSEGV) replaying a close that follows a sync.
        path.write_text("\n".join([HEADER, *t.lines]) + "\n")
        paths.append(path)
        jobs += [f"; recorded as thread {t.tid}", f"[thread-{n}]", f"read_iolog={path.name}", ""]
    (out / "replay.fio").write_text("\n".join(jobs) + "\n")
    return paths
