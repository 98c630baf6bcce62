"""Where reports, exports and bundles are written: checked before anything is read or
made, and written whole or not at all (a temporary file beside the target, renamed over
it at the end), so a failed command leaves nothing half-written behind."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from fslab.errors import ExitStatus, FslabError


class OutputError(FslabError):
    """The output path cannot be written as asked (a missing folder, a directory)."""

    exit_status = ExitStatus.USAGE


def check_output(path: Path, example: str) -> Path:
    """`path` if a file can be written there; else `OutputError` with a hint. `example`
    is a file name for the hint (`report.html`)."""
    if path.is_dir():
        raise OutputError(
            f"{path}: is a directory", hint=f"give a file name, e.g. `-o {path / example}`"
        )
    check_parent(path)
    return path


def check_parent(path: Path) -> None:
    """`OutputError` with a hint unless `path` can be made in its directory."""
    parent = path.parent
    if not parent.is_dir():
        raise OutputError(
            f"{path}: the directory `{parent}` does not exist",
            hint=f"create it first (`mkdir -p {parent}`), or give another path with -o",
        )
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(
            f"{path}: cannot write in `{parent}` (permission denied)",
            hint="give a path in a directory you can write with -o",
        )


@contextmanager
def staged(path: Path) -> Iterator[Path]:
    """A temporary path beside `path`; renamed to `path` when the block succeeds,
    removed when it fails."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        tmp_path.chmod(0o644)
        tmp_path.replace(path)
    finally:
        tmp_path.unlink(missing_ok=True)


def write_text(path: Path, text: str) -> None:
    """`text` into `path`, whole or not at all."""
    with staged(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


@contextmanager
def staged_dir(path: Path) -> Iterator[Path]:
    """A temporary folder beside `path` (a folder); it replaces `path` when the block
    succeeds (an older `path` is removed then), and is removed when it fails."""
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    try:
        yield tmp
        tmp.chmod(0o755)
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        tmp.replace(path)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def on_stdout(path: Path) -> bool:
    """`-o -` means standard output."""
    return str(path) == "-"
