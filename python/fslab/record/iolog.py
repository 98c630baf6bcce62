"""A program's recorded I/O as fio iologs (version 3): one trace per thread, each file
added and opened before its first I/O, times in microseconds from the first call
recorded, so the threads' traces stay in step when replayed side by side. Size changes
and path actions (unlink, rename, mkdir, rmdir, stat) are fslab's own lines, which the
engine replays and fio skips. The recorders
(`strace.py`, `ebpf.py`) turn what they saw into `Io`s; this module keeps those on files
under the recorded directory."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

HEADER = "fio version 3 iolog"


@dataclass(frozen=True)
class Io:
    """One read, write or sync of a file, as a recorder saw it (strace or eBPF)."""

    tid: int
    at_s: float
    """When the call began, in seconds (from any fixed zero: the traces count from the
    first call recorded)."""
    path: str | None
    """The file's absolute path; None where the descriptor was opened before the
    recording began and its path is not known."""
    action: str
    """`read`, `write`, `sync`, `datasync`, `trim` or `fallocate` (offset and length),
    `truncate` (the size in `offset`), a path action (`PATHS`: the name in `path`, a
    rename's new one in `to`), or one that is only counted (`COUNTED`)."""
    offset: int | None = None
    """Where a read or write began (None where the descriptor's position was not known);
    a truncate's size."""
    n: int = 0
    """Bytes transferred (the call's result, not what it asked for)."""
    flags: int = 0
    """The descriptor's open flags, where the recorder saw them (eBPF), else 0."""
    to: str | None = None
    """A rename's new name (absolute; None where it is not known)."""


@dataclass
class Trace:
    """One thread's trace, as lines, and the files it has added."""

    tid: int
    lines: list[str] = field(default_factory=list)
    files: set[str] = field(default_factory=set)
    ios: int = 0
    paths: int = 0
    """Path actions (`PATHS`)."""
    bytes: int = 0
    direct: bool = True
    """Every read and write went through a descriptor opened with O_DIRECT."""
    writes: int = 0
    dsync_writes: int = 0
    """Writes through a descriptor opened O_DSYNC (O_SYNC included: it has that bit)."""
    sync_writes: int = 0
    """Writes through a descriptor opened O_SYNC."""


@dataclass
class Recording:
    """Every thread's trace, and what the recording left out."""

    traces: dict[int, Trace]
    outside: int = 0
    """Calls on files outside the directory (libraries, /proc...)."""
    opened_before: int = 0
    """Reads, writes and syncs on a descriptor opened before the recording began, whose
    path or position was not known: left out."""
    lost: int = 0
    """Events the recorder itself lost (eBPF's buffers overflowed): the traces miss them."""
    counted: dict[str, int] = field(default_factory=dict)
    """Calls on files under the directory that no trace holds, by name: fio's iolog and
    the engine have no action for them (`COUNTED`)."""
    spaced: int = 0
    """Calls on names with white space in them, which an iolog line cannot hold."""


COUNTED = ("fallocate-other",)
"""Calls recorded only as counts: a fallocate that zeroes, collapses or inserts a range."""
PATHS = ("unlink", "rmdir", "mkdir", "stat", "rename")
"""Actions on a name, not an open file: fslab's own lines (`<time> <name> unlink`,
`<time> <name> rename <new name>`), which the engine replays in the job's directory and
fio skips."""


def _relative(path: str, roots: tuple[str, ...]) -> str | None:
    for root in roots:
        if path != root and path.startswith(root.rstrip("/") + "/"):
            return os.path.relpath(path, root)
    return None


def convert(ios: Iterable[Io], root: Path) -> Recording:
    """The I/O on files under `root` as one trace per thread."""
    # The recorded path may name the directory as given or as resolved (symlinks).
    roots = tuple(dict.fromkeys((str(Path.cwd() / root), str(root.resolve()))))
    rec = Recording(traces={})
    zero: float | None = None
    for io in ios:
        if io.action in COUNTED:
            if io.path is not None and _relative(io.path, roots) is not None:
                rec.counted[io.action] = rec.counted.get(io.action, 0) + 1
            continue
        if io.path is None:
            # A path action on an unknown descriptor (an fstat of a pipe) is no file's.
            rec.opened_before += io.action not in PATHS
            continue
        rel = _relative(io.path, roots)
        to = None
        if io.action == "rename":
            to = None if io.to is None else _relative(io.to, roots)
            if rel is None:
                # Moved in from outside: where from is not in the traces.
                rec.outside += 1
                continue
            if to is None:
                # Moved out: for the directory, the name is gone.
                io = replace(io, action="unlink")
            elif any(c.isspace() for c in to):
                rec.spaced += 1
                continue
        if rel is None:
            rec.outside += 1
            continue
        if any(c.isspace() for c in rel):
            rec.spaced += 1
            continue
        if io.action in ("read", "write") and io.offset is None:
            rec.opened_before += 1
            continue
        zero = io.at_s if zero is None else zero
        us = max(0, round((io.at_s - zero) * 1e6))
        t = rec.traces.setdefault(io.tid, Trace(io.tid))
        if io.action in PATHS:
            # A name needs no `add`: it may be a directory, or gone, or not there yet.
            t.lines.append(f"{us} {rel} {io.action}" + (f" {to}" if io.action == "rename" else ""))
            t.paths += 1
            continue
        if rel not in t.files:
            t.files.add(rel)
            t.lines += [f"{us} {rel} add", f"{us} {rel} open"]
        if io.action in ("sync", "datasync"):
            # fio reads a line of three fields as a file action: a sync needs all five.
            t.lines.append(f"{us} {rel} {io.action} 0 0")
        elif io.action == "truncate":
            # fslab's own action: fio skips the line (with a message) and replays on.
            t.lines.append(f"{us} {rel} truncate {io.offset} 0")
        elif io.action in ("fallocate", "trim"):
            if io.n > 0:
                t.lines.append(f"{us} {rel} {io.action} {io.offset} {io.n}")
                t.ios += io.action == "trim"
        else:
            t.lines.append(f"{us} {rel} {io.action} {io.offset} {io.n}")
            t.ios += 1
            t.bytes += io.n
            t.direct = t.direct and bool(io.flags & os.O_DIRECT)
            if io.action == "write":
                t.writes += 1
                t.dsync_writes += bool(io.flags & os.O_DSYNC)
                t.sync_writes += io.flags & os.O_SYNC == os.O_SYNC
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
    recorded = [t for _, t in sorted(rec.traces.items()) if t.ios or t.paths]
    for n, t in enumerate(recorded, 1):
        path = out / f"trace.{n}.log"
        # No `close` lines: fio closes every file at the end anyway, and fio 3.33 crashes
        # (SIGSEGV) replaying a close that follows a sync.
        path.write_text("\n".join([HEADER, *t.lines]) + "\n")
        paths.append(path)
        jobs += [f"; recorded as thread {t.tid}", f"[thread-{n}]", f"read_iolog={path.name}"]
        if t.direct:
            jobs.append("direct=1")
        if t.writes and t.dsync_writes == t.writes:
            # Durable writes are replayed as such: the files opened O_SYNC or O_DSYNC.
            jobs.append("sync=1" if t.sync_writes == t.writes else "sync=dsync")
        elif t.dsync_writes:
            jobs.append(
                f"; {t.dsync_writes} of its {t.writes} writes went through O_SYNC or "
                "O_DSYNC descriptors: replayed as plain writes (`sync` is per job)"
            )
        jobs.append("")
    (out / "replay.fio").write_text("\n".join(jobs) + "\n")
    return paths
