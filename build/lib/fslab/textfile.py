"""Reading a text file the user names (a study, a fio job file): a regular file of
bounded size, or a clear refusal.

A path in a study or on the command line can name anything: `/dev/zero` would grow the
reader without end, a FIFO would block it forever, `/proc/self/environ` would put the
environment into an error message. So the file is opened without blocking (a FIFO opens
at once), judged by what the open descriptor is (`fstat`, not the name: no race), and
read to at most `MAX_BYTES` + 1 bytes. The engine applies the same rules to the job files
and includes it reads itself (docs/fio.md).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

MAX_BYTES = 4 << 20
"""The largest study or job file read: far above any written by hand, far below what
would hurt."""


class NotText(Exception):
    """Why a file cannot be read as a text file: `message` follows "`path`: " in an
    error; `hint` says what to do."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def read_text(path: Path, *, what: str = "text file") -> str:
    """The text of `path` (UTF-8), or `NotText` saying why not. `what` names what the
    file should be ("study", "fio job file"), for the messages."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as e:
        raise NotText(
            f"cannot read the {what}: {e.strerror or e}", f"check the path: it should name a {what}"
        ) from e
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotText(f"{_kind(st.st_mode)}, not a {what}", f"name a {what}: a regular file")
        chunks: list[bytes] = []
        size = 0
        while size <= MAX_BYTES:
            chunk = os.read(fd, min(1 << 20, MAX_BYTES + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as e:
        raise NotText(
            f"cannot read the {what}: {e.strerror or e}", f"check the path: it should name a {what}"
        ) from e
    finally:
        os.close(fd)
    if size > MAX_BYTES:
        raise NotText(
            f"larger than {MAX_BYTES >> 20} MiB: too large for a {what}",
            f"check that it is the file you meant; a {what} written by hand is a few KiB",
        )
    raw = b"".join(chunks)
    if st.st_size == 0 and raw:
        # /proc and /sys files report size 0 and hold what the kernel makes up.
        raise NotText(
            f"a kernel pseudo-file (its size reads 0, yet it holds data), not a {what}",
            f"name a {what}: a file you wrote",
        )
    nul = raw.find(b"\0")
    if nul >= 0:
        raise NotText(
            f"binary data (a NUL byte at offset {nul}), not a {what}",
            f"check that it is the file you meant; a {what} is text",
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise NotText(
            f"not UTF-8 text (byte 0x{raw[e.start]:02x} at offset {e.start} cannot be decoded)",
            f"a {what} is a text file in UTF-8; check that this is the file you meant, or "
            "convert it (`iconv -t UTF-8`)",
        ) from e
