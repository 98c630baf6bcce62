"""The side-effect journal, and how to undo each entry.

Provisioning calls `Journal.record` *before* each side effect (the entry is then
pending), `done` once it happened, and `undone` once teardown reverted it. After a crash
(even SIGKILL) the entries not yet undone say exactly what to revert, newest first;
`undo` reverts one, and is safe to run again, or on something that was never made or
is already gone.

The journal is a record, not a script: a results database can come from anywhere, so
`undo` acts only on what this machine proves fslab made (`owner.py`): every entry names
the directory fslab made it in (`owner`, with that directory's marker `token`), and its
subject must lie there. Anything else raises `NotOurs` and is left alone.

Actions, their subject and details (besides `owner` and `token`):

- `mkdir`: subject the directory; details `recursive` (its contents are all fslab's) or
  `if_empty` (shared: kept while other targets use it). Undo: the owned directory itself
  is removed with its marker (rm -r if recursive); a directory inside one (a mount
  point) only when empty.
- `image`: subject the image file; details `size`. Undo: delete it if it is a regular
  file, never while a loop device still uses it.
- `loop`: subject `/dev/loopN`; details `image`, `direct_io`. Undo: detach, only if the
  device's backing file is `image` (checked in sysfs), which must lie in the owner.
- `mkfs`: subject the device(s), `,`-joined; details `argv`, `uuid`, `kind`. Undo:
  nothing (recorded; the UUID is how the gate knows a device target's file system is
  fslab's own).
- `mount`: subject the mount point; details `device`, `devices`, `fstype`, `uuid`.
  Undo: umount (retried while busy), only if mounted from one of those devices and that
  device is a loop over an image in the owner or holds the file system `uuid`.
- `scheduler`: subject a device of the target; details `previous` (the I/O scheduler
  before), `scheduler` (the one set), `uuid` and `image` (for a loop device). Undo: put
  `previous` back, only while the device is a loop over an image in the owner or holds
  the file system `uuid` (a device fslab formatted); nothing when it is already back or
  the device is gone.
- `md_create`: subject the array (`/dev/md/fslab-<target>-<tag>`); details `devices`.
  Undo: `mdadm --stop`, only while the array's members are exactly those devices and
  each is a loop over an image in the owner (fslab builds md on loop devices only);
  nothing when it is not assembled.
- `lvm_create`: subject the volume group (`fslab-<target>-<tag>`); details `devices`.
  Undo: deactivate and remove it, only while its physical volumes are exactly those
  devices and each is a loop over an image in the owner; nothing when it is gone.
- `crypt_open`: subject a device-mapper name (`fslab-<target>-<tag>-<i>`); details
  `device` (what it maps), `luks_uuid`. Undo: `cryptsetup close`, only while the
  mapping sits on exactly that device and the device is a loop over an image in the
  owner or carries the LUKS header `luks_uuid`; nothing when the mapping is gone.
- `fscrypt_key`: subject the mount point; details `identifier` and the mount's. Undo:
  remove the key if still mounted (unmounting drops it anyway).
- `postgres`: subject a PostgreSQL data directory. Undo: stop its server if one still
  runs (fast, then immediate shutdown, then SIGKILL), with the `pg_ctl` of this
  machine's PostgreSQL. That undo is `fslab.apps.postgres`'s, registered with
  `register_undo`: an action whose thing this package does not make (a program's server)
  is undone by the module that makes it, and the targets import no application.

Nothing is ever deleted through a mount point that is still mounted: a directory at or
above a mount is refused, and images are deleted only when no loop device uses them.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from fslab.errors import TargetError
from fslab.targets import fscrypt, layers, loop, scheduler
from fslab.targets._proc import run, which
from fslab.targets.mount import mounts_at, mounts_under, same_device, umount
from fslab.targets.owner import NotOurs, Owned, inside, prove

ACTIONS = (
    "image", "loop", "mkdir", "mkfs", "scheduler", "md_create", "lvm_create", "crypt_open",
    "mount", "fscrypt_key", "postgres", "inject",
)  # fmt: skip
State = Literal["pending", "done", "undone"]
Undo = Callable[[str, Mapping[str, Any]], bool]
"""How to revert one entry of an action: (subject, details) -> undone (see `undo`)."""
_UNDO: dict[str, Undo] = {}


def register_undo(action: str, fn: Undo) -> None:
    """Lets the module that journals `action` (one of `ACTIONS` this package does not
    undo itself, e.g. `postgres`) say how to revert it. `fn` must keep `undo`'s promises:
    prove the thing is fslab's (`owner.prove`) before touching it, and be idempotent."""
    if action not in ACTIONS:
        raise ValueError(f"unknown journal action {action!r}")
    _UNDO[action] = fn


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


@dataclass(frozen=True)
class JournalRef:
    """A journal entry a caller made, kept so that it can undo it (`undo_refs`)."""

    id: int
    action: str
    subject: str
    details: Mapping[str, Any] = field(hash=False)


def undo_refs(refs: Collection[JournalRef], journal: Journal) -> None:
    """Undoes `refs` newest first, marking each undone (one kept on purpose, a shared
    directory still in use, stays open); stops at the first that cannot be undone (what
    follows usually depends on it), leaving the rest open in the journal."""
    for ref in sorted(refs, key=lambda r: r.id, reverse=True):
        if undo(ref.action, ref.subject, ref.details):
            journal.undone(ref.id)


def make_dir(
    journal: Journal, path: Path, *, mode: int = 0o755, **details: Any
) -> tuple[Owned, JournalRef]:
    """Makes `path` as a directory fslab owns (`owner.py`), journaled first: never an
    existing one, which fslab would then remove as its own. `details`: `recursive` or
    `if_empty`, for its undo."""
    owned = Owned.new(path)
    if os.path.lexists(owned.path):
        raise TargetError(
            f"{owned.path} already exists; fslab makes this directory itself and never "
            f"takes over one it did not make",
            hint="if an interrupted run left it, `fslab cleanup --results DB` removes it; "
            "else remove it yourself or choose another --workdir",
        )
    subject, said = str(owned.path), {**details, **owned.details()}
    entry = journal.record("mkdir", subject, said)
    try:
        owned.create(mode)
    except FileExistsError:
        journal.undone(entry)  # made by someone else meanwhile: not ours to remove
        raise TargetError(f"{owned.path} appeared while fslab was making it") from None
    journal.done(entry)
    return owned, JournalRef(entry, "mkdir", subject, said)


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
            if undo(entry.action, entry.subject, entry.details):
                self.undone(entry.id)


def undo(action: str, subject: str, details: Mapping[str, Any]) -> bool:
    """Reverts one journal entry once the machine proves fslab made what it names
    (`owner.prove`). Returns True when it is undone (or there was nothing to undo), False
    when it is deliberately kept (a shared directory others still use: the entry stays
    open). Idempotent. Raises `NotOurs` when fslab cannot prove the thing is its own
    (left alone), `TargetError` when it is fslab's but cannot be reverted safely now
    (still busy)."""
    if action == "mount":
        return _undo_mount(subject, details)
    if action == "loop":
        return _undo_loop(subject, details)
    if action == "image":
        return _undo_image(subject, details)
    if action == "mkdir":
        return _undo_mkdir(subject, details)
    if action == "fscrypt_key":
        return _undo_key(subject, details)
    if action == "scheduler":
        return _undo_scheduler(subject, details)
    if action == "crypt_open":
        return _undo_crypt(subject, details)
    if action == "md_create":
        return _undo_md(subject, details)
    if action == "lvm_create":
        return _undo_lvm(subject, details)
    if action in ("mkfs", "inject"):
        return True  # a file system (or a fault) in fslab's own image goes with the image
    registered = _UNDO.get(action)
    if registered is not None:
        return registered(subject, details)
    if action in ACTIONS:
        raise TargetError(
            f"{subject}: no undo is registered for journal action {action!r}",
            hint=f"this is a bug in fslab: the module that journals {action!r} registers "
            "its undo when imported (`register_undo`)",
        )
    raise NotOurs(f"{subject}: the journal holds an unknown action {action!r}")


def _recorded_devices(details: Mapping[str, Any]) -> list[str]:
    devices = [str(d) for d in details.get("devices") or ()]
    if details.get("device"):
        devices.append(str(details["device"]))
    return devices


def _ours(mountpoint: str, details: Mapping[str, Any]) -> bool:
    """Whether something is mounted at `mountpoint`; raises `NotOurs` unless it is the
    file system fslab mounted there: the mount point inside a directory fslab made, and
    each device the entry names either a loop device backed by an image in that
    directory or one holding the file system (UUID) fslab made."""
    mounted = mounts_at(mountpoint)
    if not mounted:
        return False
    owned = prove(mountpoint, details)
    devices = _recorded_devices(details)
    if not devices:
        raise NotOurs(f"{mountpoint}: the entry names no device fslab mounted there")
    for m in mounted:
        if not any(same_device(m.source, d) for d in devices):
            raise NotOurs(
                f"{mountpoint} is mounted from {m.source}, not from {', '.join(devices)} "
                f"as fslab mounted it; leaving it alone",
                hint=f"unmount {mountpoint} yourself if it is a leftover, then run `fslab "
                f"cleanup` again",
            )
    uuid = details.get("uuid")
    for dev in {m.source for m in mounted}:
        if _device_is_ours(dev, owned, uuid):
            continue
        raise NotOurs(
            f"{mountpoint}: {dev} is neither a loop device over fslab's image nor the file "
            f"system fslab made (UUID {uuid or 'unrecorded'}); leaving it alone"
        )
    return True


def _device_is_ours(device: str, owned: Owned, uuid: object) -> bool:
    """Whether `device` is a loop device over an image in `owned`, or holds the file
    system fslab made (`uuid`): what lets undo touch it."""
    backing = loop.backing_file(device)
    if backing is not None and inside(backing, owned.path):
        return True
    return isinstance(uuid, str) and bool(uuid) and fs_uuid(device) == uuid


def fs_uuid(device: str) -> str | None:
    """The UUID of the file system on `device` (read from the device, not a cache)."""
    proc = run(["blkid", "-p", "-s", "UUID", "-o", "value", device], check=False, timeout=60)
    return (proc.stdout.strip() or None) if proc.returncode == 0 else None


def _undo_mount(mountpoint: str, details: Mapping[str, Any]) -> bool:
    if _ours(mountpoint, details):
        umount(mountpoint)
    return True


def _undo_key(mountpoint: str, details: Mapping[str, Any]) -> bool:
    identifier = details.get("identifier")
    if identifier and _ours(mountpoint, details):
        fscrypt.remove_key(Path(mountpoint), str(identifier))
    # Not mounted: the file system's keyring went with the unmount.
    return True


def _undo_scheduler(device: str, details: Mapping[str, Any]) -> bool:
    previous = details.get("previous")
    if not isinstance(previous, str) or previous not in scheduler.SCHEDULERS:
        raise NotOurs(f"{device}: the entry names no I/O scheduler to put back")
    _, current = scheduler.read(device)
    if current is None or current == previous:
        return True  # the device is gone, or has its scheduler back
    owned = prove(str(details.get("owner") or ""), details)
    uuid = details.get("uuid")
    if not _device_is_ours(device, owned, uuid):
        raise NotOurs(
            f"{device}: neither a loop device over fslab's image nor the file system fslab "
            f"made (UUID {uuid or 'unrecorded'}); leaving its I/O scheduler ({current}) alone"
        )
    scheduler.switch(device, previous)
    return True


def _undo_md(md_device: str, details: Mapping[str, Any]) -> bool:
    if not re.fullmatch(r"/dev/md/fslab-[A-Za-z0-9_.+-]+", md_device):
        raise NotOurs(f"{md_device}: not an md array name fslab gives")
    slaves = layers.md_slaves(md_device)
    if slaves is None:
        return True  # stopped already, or never assembled
    owned = prove(str(details.get("owner") or ""), details)
    devices = details.get("devices")
    if not isinstance(devices, list) or not devices:
        raise NotOurs(f"{md_device}: the entry names no member devices")
    want = sorted(Path(os.path.realpath(str(d))).name for d in devices)
    if slaves != want:
        raise NotOurs(
            f"{md_device} has the members {', '.join(slaves)}, not {', '.join(want)} as fslab "
            f"made it; leaving it alone"
        )
    for dev in devices:
        if not _device_is_ours(str(dev), owned, None):
            raise NotOurs(
                f"{md_device}: its member {dev} is not a loop device over fslab's image; "
                f"leaving it alone"
            )
    run(layers.md_stop_argv(md_device), timeout=120)
    return True


def _undo_lvm(vg: str, details: Mapping[str, Any]) -> bool:
    if not re.fullmatch(r"fslab-[A-Za-z0-9_.+-]+", vg):
        raise NotOurs(f"{vg}: not a volume group name fslab gives")
    if which("pvs") is None:
        return True  # no LVM tools: no volume group can be active either
    listed = run(["pvs", "--noheadings", "-o", "pv_name,vg_name"], check=False, timeout=60)
    members = layers.vg_members(vg, listed.stdout)
    if not members:
        return True  # removed already, or never made
    owned = prove(str(details.get("owner") or ""), details)
    devices = details.get("devices")
    if not isinstance(devices, list) or not devices:
        raise NotOurs(f"{vg}: the entry names no physical volumes")
    want = sorted(os.path.realpath(str(d)) for d in devices)
    if sorted(os.path.realpath(m) for m in members) != want:
        raise NotOurs(
            f"volume group {vg} is on {', '.join(members)}, not on {', '.join(want)} as fslab "
            f"made it; leaving it alone"
        )
    for dev in devices:
        if not _device_is_ours(str(dev), owned, None):
            raise NotOurs(f"{vg}: {dev} is not a loop device over fslab's image; leaving it")
    for argv in layers.lvm_remove_argvs(vg):
        run(argv, timeout=120)
    return True


def _undo_crypt(name: str, details: Mapping[str, Any]) -> bool:
    if not re.fullmatch(r"fslab-[A-Za-z0-9_.+-]+", name):
        raise NotOurs(f"{name}: not a device-mapper name fslab gives")
    slaves = layers.mapping_slaves(name)
    if slaves is None:
        return True  # closed already, or never opened
    owned = prove(str(details.get("owner") or ""), details)
    device = str(details.get("device") or "")
    if not device or slaves != [Path(os.path.realpath(device)).name]:
        raise NotOurs(
            f"/dev/mapper/{name} sits on {', '.join(slaves) or 'nothing'}, not on {device or '?'} "
            f"as fslab opened it; leaving it alone"
        )
    luks = details.get("luks_uuid")
    header = run(["cryptsetup", "luksUUID", device], check=False, timeout=60).stdout.strip()
    if not _device_is_ours(device, owned, None) and not (luks and header == luks):
        raise NotOurs(
            f"/dev/mapper/{name}: {device} is neither a loop device over fslab's image nor "
            f"the LUKS device fslab made (UUID {luks or 'unrecorded'}); leaving it alone"
        )
    run(layers.luks_close_argv(name), timeout=120)
    return True


def _undo_loop(device: str, details: Mapping[str, Any]) -> bool:
    image = details.get("image")
    if not isinstance(image, str) or not image:
        raise NotOurs(f"{device}: the entry names no image behind it")
    if not re.fullmatch(r"/dev/loop\d+", device):
        raise NotOurs(f"{device}: not a loop device name")
    attached = [d for d in [device] if loop.backing_file(d) == os.path.realpath(image)]
    # A device attached after a race with another `losetup` is found by its backing file.
    attached += [d for d in loop.loops_backed_by(image) if d not in attached]
    if not attached:
        return True  # nothing of this entry is attached
    prove(image, details)
    for dev in attached:
        loop.detach(dev, image)
    return True


def _undo_image(subject: str, details: Mapping[str, Any]) -> bool:
    path = Path(subject)
    if not os.path.lexists(path):
        return True
    prove(subject, details)
    if path.is_symlink() or not path.is_file():
        raise NotOurs(f"{path}: not a regular file, so not fslab's image")
    users = loop.loops_backed_by(path)
    if users:
        raise TargetError(
            f"not deleting {path}: {', '.join(users)} still uses it",
            hint="run `fslab cleanup` again once the loop device is released",
        )
    path.unlink()
    return True


def _undo_mkdir(subject: str, details: Mapping[str, Any]) -> bool:
    path = Path(subject)
    if not os.path.lexists(path):
        return True
    owned = prove(subject, details)
    if path.is_symlink() or not path.is_dir():
        raise NotOurs(f"{path}: no longer the directory fslab made")
    mounted = mounts_under(path)
    if mounted:
        raise TargetError(
            f"not removing {path}: {mounted[0].mountpoint} is still mounted",
            hint=f"unmount {mounted[0].mountpoint} first (or run `fslab cleanup`, which does)",
        )
    if os.path.realpath(path) != str(owned.path):
        _rmdir(path)  # a directory inside an owned one (a mount point): empty or kept
        return True
    if details.get("recursive"):
        shutil.rmtree(path)
        return True
    left = owned.contents()
    if left and details.get("if_empty"):
        return False  # shared (the work directory): other targets still use it
    if left:
        raise TargetError(
            f"cannot remove {path}: it holds {', '.join(left[:5])}",
            hint="fslab removes only what it made; delete the rest yourself",
        )
    owned.remove()
    return True


def _rmdir(path: Path) -> None:
    try:
        path.rmdir()
    except OSError as e:
        left = sorted(p.name for p in path.iterdir())[:5] if path.is_dir() else []
        raise TargetError(
            f"cannot remove {path}: {e.strerror}"
            + (f" (it holds {', '.join(left)})" if left else ""),
            hint="fslab removes only what it made; delete the rest yourself",
        ) from e
