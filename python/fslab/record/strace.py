"""Reading strace's output (`-f -ttt -y -s 0`): each finished system call, one line per
call, with its thread, start time, name, arguments and result; a call another thread's
line interrupted (`<unfinished ...>`, then `<... name resumed>`) is put back together."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

SYSCALLS = (
    "open", "openat", "openat2", "creat", "close",
    "read", "write", "readv", "writev",
    "pread64", "pwrite64", "preadv", "pwritev", "preadv2", "pwritev2",
    "lseek", "fsync", "fdatasync",
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
