"""Running a program under strace and turning what it did under a directory into
traces: the library half of `fslab record`."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from fslab.errors import ExitStatus, FslabError
from fslab.record import iolog, strace


class RecordUsageError(FslabError):
    """A command line `fslab record` cannot run: no command, no such directory."""

    exit_status = ExitStatus.USAGE


def record(
    command: Sequence[str], root: Path, out: Path
) -> tuple[int, iolog.Recording, list[Path]]:
    """Runs `command` under strace, following its threads and children, and writes the
    traces of its I/O on files under `root` to `out`. Returns the command's exit status,
    the recording and the traces written."""
    if not command:
        raise RecordUsageError(
            "record: no command to run", "give it after `--`: fslab record -- CMD ARGS"
        )
    if not root.is_dir():
        raise RecordUsageError(
            f"record: --dir {root} is not a directory",
            "give the directory the program's files are in",
        )
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        # Traces of an earlier, larger recording would stay beside the new ones, and a
        # replay of the directory would mix the two.
        raise RecordUsageError(
            f"record: --out {out} is not an empty directory",
            "give a new directory, or remove that one first",
        )
    if shutil.which("strace") is None:
        raise FslabError(
            "record: strace is not installed",
            "install it (`apt-get install strace`); scripts/setup does",
        )
    with tempfile.TemporaryDirectory(prefix="fslab-record-") as tmp:
        log = Path(tmp) / "strace.out"
        argv = ["strace", "-f", "-qq", "-ttt", "-y", "-s", "0",
                "-e", "trace=" + ",".join(strace.SYSCALLS),
                "-o", str(log), "--", *command]  # fmt: skip
        try:
            status = subprocess.run(argv, check=False).returncode
        except FileNotFoundError as e:
            raise RecordUsageError(f"record: cannot run {command[0]}: {e.strerror}") from e
        with log.open(errors="replace") as f:
            rec = iolog.convert(strace.calls(f), root)
    paths = iolog.write(rec, out)
    return status, rec, paths
