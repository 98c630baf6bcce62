"""A rank's guard: when a rank of a multi-host run ends, however it ends, what its
journal says is still there is undone on its host.

`fslab run --hosts` can be stopped in ways no rank sees coming: its launcher killed
(`mpiexec` then ends every rank), a rank killed, a host's `prted` gone. Open MPI ends
ranks with SIGTERM and, a moment later, SIGKILL: too soon for a teardown (unmount,
detach, delete) to finish, and a rank blocked in an MPI call runs no Python signal
handler at all. So each rank starts a guard, a small process in a session of its own
(no terminal, no `mpiexec` signal reaches it) holding the read end of a pipe whose
write end only the rank holds. When the rank ends, the pipe ends; the guard then takes
the journal's lock (waiting for anyone still using it), undoes every open entry
(`fslab.cleanup`: only what this machine proves fslab made) and, for another rank's
journal, deletes it once nothing in it is open. The runs' status is left to the
launcher, which knows why they ended (or to the next `fslab run` or `cleanup`).
A rank holds its journal's lock while it lives: no guard undoes what a live rank is
still tearing down. A rank that ends normally has nothing open: its guard finds nothing to do.

`python -m fslab.guard JOURNAL [--rank-journal]`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

from fslab.errors import FslabError

_LIVE: list[subprocess.Popen[bytes]] = []
"""This process's guards: their pipes stay open until it ends."""


def start(journal: Path, *, rank_journal: bool) -> None:
    """Starts the guard of `journal` (the results database for rank 0, the rank's own
    journal for the others), for as long as this process lives. The pipe's write end is
    not inherited by this process's other children (Python's descriptors are
    close-on-exec), so only this process's end ends it."""
    argv = [sys.executable, "-m", "fslab.guard", str(journal)]
    if rank_journal:
        argv.append("--rank-journal")
    proc = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True, close_fds=True,
    )  # fmt: skip
    _LIVE.append(proc)


def _wait_for_the_rank() -> None:
    """Blocks until the rank's end of the pipe is closed (it ended, or said so)."""
    while True:
        try:
            if not os.read(0, 4096):
                return
        except InterruptedError:
            continue
        except OSError:
            return


def undo(journal: Path, *, rank_journal: bool) -> None:
    """Undoes what `journal` says is still there (see the module text)."""
    if not journal.exists():
        return  # the rank ended normally and removed it, or never made it
    if not rank_journal:
        # Rank 0's results database: all `fslab cleanup` does, the other ranks' journals
        # on this host first (they lie in its work directory); nothing when rank 0 ended
        # normally (cleanup would read the whole database to check it).
        from rich.console import Console

        from fslab.cli.cleanup import clean

        if not _left_open(journal):
            return

        with Path(os.devnull).open("w") as quiet:
            clean(journal, Console(file=quiet), wait=True, mark_stale=False)
        return
    from fslab.cleanup import undo_rank_journals

    undo_rank_journals([journal])


def _left_open(results: Path) -> bool:
    """Whether the results database has journal entries a rank left open."""
    import sqlite3

    try:
        # Read-write, never created: the last connection to close a WAL database removes
        # its `-wal` and `-shm` files, and only a writer may.
        con = sqlite3.connect(f"{results.resolve().as_uri()}?mode=rw", uri=True, timeout=30)
        try:
            entries = con.execute("SELECT count(*) FROM journal WHERE state != 'undone'")
            return bool(entries.fetchone()[0])
        finally:
            con.close()
    except sqlite3.Error:
        return True  # let cleanup say what is wrong (to no one) and do what it can


def main(argv: list[str]) -> int:
    # Nothing but the pipe ends a guard: it has work to do after every signal the run got.
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_IGN)
    journal = Path(argv[0])
    _wait_for_the_rank()
    with contextlib.suppress(FslabError):
        undo(journal, rank_journal="--rank-journal" in argv[1:])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
