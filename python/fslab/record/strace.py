"""Reading strace's output (`-f -ttt -y -s 0`): each finished system call, one line per
call, with its thread, start time, name, arguments and result; a call another thread's
line interrupted (`<unfinished ...>`, then `<... name resumed>`) is put back together."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from fslab.record.iolog import Io

SYSCALLS = (
    "open", "openat", "openat2", "creat", "close",
    "read", "write", "readv", "writev",
    "pread64", "pwrite64", "preadv", "pwritev", "preadv2", "pwritev2",
    "lseek", "fsync", "fdatasync", "dup", "dup2", "dup3", "fcntl",
)  # fmt: skip
"""The calls recorded: those that open, move through, read, write or flush a file."""

_LINE = re.compile(r"^(\d+)\s+(\d+\.\d+)\s+(.*)$")
_CALL = re.compile(r"^(\w+)\((.*)\)\s+=\s+(-?\d+)(?:<(.*)>)?(?:\s.*)?$")
_UNFINISHED = " <unfinished ...>"
_RESUMED = re.compile(r"^<\.\.\. (\w+) resumed>\s?(.*)$")
_FD = re.compile(r"^(-?\d+)<(.*?)>(?:,|$)")


@dataclass(frozen=True)
class Call:
    """One finished system call."""

    tid: int
    at_s: float
    """When it was entered, seconds since the epoch."""
    name: str
    args: str
    """Its arguments as strace printed them (buffers as `""...`)."""
    result: int
    result_path: str | None
    """The path of the descriptor it returned (open calls, with `-y`)."""

    def fd(self) -> tuple[int, str] | None:
        """The descriptor the call names first and its path (`-y`), if it names one."""
        m = _FD.match(self.args)
        return (int(m.group(1)), m.group(2)) if m else None

    def arg(self, i: int) -> str:
        """Its `i`th argument (from 0) as printed; arguments holding commas (a vector)
        are kept whole where strace brackets them."""
        parts: list[str] = []
        depth = 0
        cur = ""
        for ch in self.args:
            if ch in "[{(":
                depth += 1
            elif ch in "]})":
                depth -= 1
            if ch == "," and depth == 0:
                parts.append(cur.strip())
                cur = ""
            else:
                cur += ch
        parts.append(cur.strip())
        return parts[i] if i < len(parts) else ""


def calls(lines: Iterable[str]) -> Iterator[Call]:
    """The finished calls of strace's output, in the order they finished."""
    pending: dict[int, tuple[float, str]] = {}
    for raw in lines:
        m = _LINE.match(raw.rstrip("\n"))
        if not m:
            continue
        tid, at_s, text = int(m.group(1)), float(m.group(2)), m.group(3)
        if text.endswith(_UNFINISHED):
            pending[tid] = (at_s, text[: -len(_UNFINISHED)])
            continue
        resumed = _RESUMED.match(text)
        if resumed:
            began = pending.pop(tid, None)
            if began is None:
                continue
            at_s, head = began
            text = head + resumed.group(2)
        c = _CALL.match(text)
        if c:
            yield Call(tid, at_s, c.group(1), c.group(2), int(c.group(3)), c.group(4))


_AT_OFFSET = {"pread64": 3, "pwrite64": 3, "preadv": 3, "pwritev": 3, "preadv2": 3, "pwritev2": 3}
"""Calls that name their offset, and which argument it is (-1 for preadv2/pwritev2:
the descriptor's position)."""
_READS = {"read", "readv", "pread64", "preadv", "preadv2"}
_WRITES = {"write", "writev", "pwrite64", "pwritev", "pwritev2"}
_OPENS = {"open", "openat", "openat2", "creat"}


def ios(finished: Iterable[Call]) -> Iterator[Io]:
    """The reads, writes and syncs of the calls, each at the offset it named or, for
    `read`/`write`, at the descriptor's position as the calls moved it (strace does not
    print a position: it is followed from the open, `lseek`s and transfers)."""
    positions: dict[tuple[int, str], int] = {}
    ends: dict[str, int] = {}
    for c in finished:
        if c.result < 0:
            continue
        if c.name in _OPENS:
            if c.result_path is None:
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
        key = named
        path = named[1]
        if c.name in ("dup", "dup2", "dup3", "fcntl"):
            # The new descriptor starts where the old one is (strace -y prints its path
            # with the result). Moved later, the two are followed apart, where the
            # kernel shares one position: eBPF reads the shared one.
            if c.result_path is not None and key in positions:
                positions[(c.result, c.result_path)] = positions[key]
            continue
        if c.name == "lseek":
            positions[key] = c.result
        elif c.name == "close":
            positions.pop(key, None)
        elif c.name in ("fsync", "fdatasync"):
            yield Io(c.tid, c.at_s, path, "sync" if c.name == "fsync" else "datasync")
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
            write = c.name in _WRITES
            yield Io(c.tid, c.at_s, path, "write" if write else "read", offset, n)
            if offset is None:
                continue
            if moves:
                positions[key] = offset + n
            if write:
                ends[path] = max(ends.get(path, 0), offset + n)
