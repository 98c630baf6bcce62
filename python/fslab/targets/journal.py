"""The side-effect journal, and how to undo each entry.

Provisioning calls `Journal.record` *before* each side effect (the entry is then
pending), `done` once it happened, and `undone` once teardown reverted it. After a crash
(even SIGKILL) the entries not yet undone say exactly what to revert, newest first;
`undo` reverts one, and is safe to run again, or on something that was never made or
is already gone.

Actions, their subject and details:

- `image`: subject the image file; details `size`. Undo: delete it, never while a loop
  device still uses it.
- `loop`: subject `/dev/loopN`; details `image`, `direct_io`. Undo: detach, only if the
  device's backing file is `image` (checked in sysfs).
- `mkdir`: subject the directory; details `recursive` (its contents are all fslab's) or
  `if_empty` (shared: left while other targets use it). Undo: rmdir (rm -r if recursive).
- `mkfs`: subject the device(s), `,`-joined; details `argv`. Undo: nothing (recorded).
- `mount`: subject the mount point; details `device`, `devices`, `fstype`. Undo: umount
  (retried while busy), only if mounted from one of those devices.
- `fscrypt_key`: subject the mount point; details `identifier`, `device`, `devices`.
  Undo: remove the key if still mounted (unmounting drops it anyway).
- `postgres`: subject a PostgreSQL data directory; details `pg_ctl`. Undo: stop its
  server if one still runs (fast, then immediate shutdown, then SIGKILL).

Nothing is ever deleted through a mount point that is still mounted: a directory at or
above a mount is refused, and images are deleted only when no loop device uses them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from fslab.errors import TargetError
from fslab.targets import fscrypt, loop
from fslab.targets.mount import mounts_at, mounts_under, same_device, umount

ACTIONS = ("image", "loop", "mkdir", "mkfs", "mount", "fscrypt_key", "postgres")
State = Literal["pending", "done", "undone"]


class Journal(Protocol):
    def record(self, action: str, subject: str, details: dict[str, Any]) -> int:
        """Notes a side effect about to happen (state pending); returns its entry id."""
        ...

    def done(self, entry_id: int) -> None:
        """The side effect happened."""
        ...

    def undone(self, entry_id: int) -> None:
        """The side effect was reverted (or never happened)."""
        ...


@dataclass
class JournalEntry:
    id: int
    action: str
    subject: str
    details: dict[str, Any]
    state: State = "pending"


@dataclass
class MemoryJournal:
    """A journal in a list, for tests and for callers that need no persistence."""

    entries: list[JournalEntry] = field(default_factory=list)

    def record(self, action: str, subject: str, details: dict[str, Any]) -> int:
        if action not in ACTIONS:
            raise ValueError(f"unknown journal action {action!r}")
        entry = JournalEntry(len(self.entries) + 1, action, subject, dict(details))
        self.entries.append(entry)
        return entry.id

    def _get(self, entry_id: int) -> JournalEntry:
        return self.entries[entry_id - 1]

    def done(self, entry_id: int) -> None:
        self._get(entry_id).state = "done"

    def undone(self, entry_id: int) -> None:
        self._get(entry_id).state = "undone"

    def open_entries(self) -> list[JournalEntry]:
        """Entries not undone, newest first: the order to undo them in."""
        return [e for e in reversed(self.entries) if e.state != "undone"]

    def undo_all(self) -> None:
        """Undoes every open entry, newest first (what `fslab cleanup` does)."""
        for entry in self.open_entries():
            undo(entry.action, entry.subject, entry.details)
            self.undone(entry.id)


def undo(action: str, subject: str, details: Mapping[str, Any]) -> None:
    """Reverts one journal entry. Idempotent; raises `TargetError` only when the thing
    exists and cannot be reverted safely (still busy, mounted by someone else)."""
    if action == "mount":
        _undo_mount(subject, details)
    elif action == "loop":
        _undo_loop(subject, details)
    elif action == "image":
        _undo_image(subject)
    elif action == "mkdir":
        _undo_mkdir(
            subject,
            recursive=bool(details.get("recursive", False)),
            if_empty=bool(details.get("if_empty", False)),
        )
    elif action == "fscrypt_key":
        _undo_key(subject, details)
    elif action == "mkfs":
        pass  # a file system on fslab's own image goes with the image
    elif action == "postgres":
        from fslab.apps.pgbench import stop_cluster  # the apps import this module

        stop_cluster(str(details.get("pg_ctl") or "pg_ctl"), Path(subject))
    else:
        raise TargetError(f"the journal holds an unknown action {action!r} (for {subject})")


def _recorded_devices(details: Mapping[str, Any]) -> list[str]:
    devices = [str(d) for d in details.get("devices") or ()]
    if details.get("device"):
        devices.append(str(details["device"]))
    return devices


def _ours(mountpoint: str, details: Mapping[str, Any]) -> bool:
    """Whether what is mounted at `mountpoint` is the device fslab mounted there."""
    devices = _recorded_devices(details)
    mounted = mounts_at(mountpoint)
    if not mounted:
        return False
    if not devices:
        return True
    for m in mounted:
        if not any(same_device(m.source, d) for d in devices):
            raise TargetError(
                f"{mountpoint} is mounted from {m.source}, not from {', '.join(devices)} "
                f"as fslab mounted it; leaving it alone",
                hint=f"unmount {mountpoint} yourself if it is a leftover, then run `fslab "
                f"cleanup` again",
            )
    return True


def _undo_mount(mountpoint: str, details: Mapping[str, Any]) -> None:
    if _ours(mountpoint, details):
        umount(mountpoint)


def _undo_key(mountpoint: str, details: Mapping[str, Any]) -> None:
    identifier = details.get("identifier")
    if identifier and _ours(mountpoint, details):
        fscrypt.remove_key(Path(mountpoint), str(identifier))
    # Not mounted: the file system's keyring went with the unmount.


def _undo_loop(device: str, details: Mapping[str, Any]) -> None:
    image = details.get("image")
    if not image:
        return
    loop.detach(device, str(image))
    # A device attached after a race with another `losetup` is found by its backing file
    # (the image is fslab's own, so whatever loop uses it is fslab's too).
    for other in loop.loops_backed_by(str(image)):
        loop.detach(other, str(image))


def _undo_image(subject: str) -> None:
    path = Path(subject)
    if not os.path.lexists(path):
        return
    users = loop.loops_backed_by(path)
    if users:
        raise TargetError(
            f"not deleting {path}: {', '.join(users)} still uses it",
            hint="run `fslab cleanup` again once the loop device is released",
        )
    if path.is_dir() and not path.is_symlink():
        raise TargetError(f"not deleting {path}: it is a directory, not fslab's image")
    path.unlink()


def _undo_mkdir(subject: str, *, recursive: bool, if_empty: bool) -> None:
    path = Path(subject)
    if not os.path.lexists(path):
        return
    if path.is_symlink() or not path.is_dir():
        raise TargetError(f"not removing {path}: it is no longer the directory fslab made")
    if if_empty and any(path.iterdir()):
        return  # shared (fslab's work directory): other targets still use it
    mounted = mounts_under(path)
    if mounted:
        raise TargetError(
            f"not removing {path}: {mounted[0].mountpoint} is still mounted",
            hint=f"unmount {mounted[0].mountpoint} first (or run `fslab cleanup`, which does)",
        )
    if recursive:
        shutil.rmtree(path)
        return
    try:
        path.rmdir()
    except OSError as e:
        left = sorted(p.name for p in path.iterdir())[:5] if path.is_dir() else []
        raise TargetError(
            f"cannot remove {path}: {e.strerror}"
            + (f" (it holds {', '.join(left)})" if left else ""),
            hint="fslab removes only what it made; delete the rest yourself",
        ) from e
