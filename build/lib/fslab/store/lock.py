"""One writer per results database: `fslab run` and `fslab cleanup` hold an exclusive
lock for as long as they work, so two runs never interleave their points and cleanup
never tears down a live run's target.

The lock is `flock(2)` on `<DB>.lock` beside the database, which says who holds it (pid,
command, start time). The kernel drops a flock when its holder dies, even by SIGKILL,
so a stale file never blocks anyone. The file is removed on release; a process that
opened it just before is not fooled: after locking it checks that the path still names
the file it locked, and starts again if not.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

from fslab.errors import ExitStatus, FslabError


class Busy(FslabError):
    """Another fslab process holds the results database."""

    exit_status = ExitStatus.FAILED


class Unwritable(FslabError):
    """Nothing can be written beside the results database (a read-only mount, a directory
    of someone else's): bad input for a command that writes, as a bad path would be."""

    exit_status = ExitStatus.USAGE


READ_ONLY_FS = "is on a read-only file system"
WRITE_ELSEWHERE = (
    "`fslab compare`, `report`, `export` and `bundle` read it where it is; to run a study "
    "or clean up, copy it to a writable place and pass the copy with `--results`"
)


def unwritable(db: Path) -> str | None:
    """Why fslab cannot write `db` and the files beside it (`-wal`, `-shm`, the lock), or
    None when it can."""
    parent = db.resolve().parent
    try:
        if os.statvfs(parent).f_flag & os.ST_RDONLY:
            return f"`{parent}` {READ_ONLY_FS}"
    except OSError:
        return None  # a missing directory is said where it matters
    if not os.access(parent, os.W_OK):
        return f"this user may not write in `{parent}`"
    return None


def lock_path(db: Path) -> Path:
    return db.with_name(db.name + ".lock")


def holder(db: Path) -> dict[str, object] | None:
    """Who holds `db`'s lock, as its lock file says (None: nobody, or unreadable)."""
    try:
        data = json.loads(lock_path(db).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _describe(db: Path) -> str:
    who = holder(db)
    if not who:
        return "another fslab process"
    since = who.get("since")
    when = time.strftime("%H:%M:%S", time.localtime(since)) if isinstance(since, float) else "?"
    return f"`fslab {who.get('command', '?')}` (pid {who.get('pid', '?')}, since {when})"


def _try_lock(path: Path, *, wait: bool) -> int | None:
    """An fd holding an exclusive flock on the file now at `path`, or None if it is held
    and `wait` is false."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            os.close(fd)
            return None
        except BaseException:
            os.close(fd)
            raise
        try:
            same = path.lstat().st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            return fd
        os.close(fd)  # the holder removed it as we locked: lock the new one


@contextlib.contextmanager
def exclusive(db: Path, command: str, *, wait: bool = False) -> Iterator[None]:
    """Holds `db`'s lock while the block runs. Raises `Busy` naming the holder when it is
    taken and `wait` is false; with `wait`, blocks until the holder is done (see
    `waiting_for` to say whom for)."""
    path = lock_path(db)
    if not db.parent.is_dir():
        raise Busy(
            f"{db}: the directory `{db.parent}` does not exist",
            hint="create it, or pass `--results` with a path in an existing directory",
        )
    why = unwritable(db)
    if why is not None:
        raise Unwritable(f"{db}: fslab cannot write this results database: {why}",
                         hint=WRITE_ELSEWHERE)  # fmt: skip
    fd = _try_lock(path, wait=False)
    if fd is None:
        if not wait:
            raise Busy(
                f"{db}: {_describe(db)} is using this results database",
                hint="wait for it to finish (or pass `--wait`), or use another `--results`",
            )
        fd = _try_lock(path, wait=True)
        assert fd is not None
    try:
        me = {"pid": os.getpid(), "command": command, "since": time.time()}
        # Who holds it is for messages only: on a full disk the lock holds without it.
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(me).encode(), 0)
        yield
    finally:
        with contextlib.suppress(OSError):
            path.unlink()
        os.close(fd)


def waiting_for(db: Path) -> str | None:
    """Whom a `--wait` would wait for, or None when the lock is free."""
    path = lock_path(db)
    if not path.exists():
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return _describe(db)
    finally:
        os.close(fd)
    return None
