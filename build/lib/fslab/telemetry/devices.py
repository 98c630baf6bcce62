"""Which block devices to watch for a target, and how they relate.

A target's I/O shows up on more than the device it is mounted from: a dm-crypt or md
device passes it to the devices it is built on, and a loop device to the disk holding its
image file. This module follows those links through sysfs, so the sampler counts the
target's real storage (and tells the machine's shared disks apart); it also measures the
space a file system uses, the other half of space amplification.
"""

from __future__ import annotations

import ctypes
import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from fslab.telemetry.procfs import TelemetryError, TelemetryUsageError

_SYS_CLASS_BLOCK = Path("/sys/class/block")
_SYS_DEV_BLOCK = Path("/sys/dev/block")


def kernel_name(device: str) -> str:
    """The kernel's name (`loop3`, `vda`, `dm-0`) of `device`: a name or a path to a block
    device node (`/dev/loop3`, `/dev/mapper/x`, `/dev/disk/by-id/...`)."""
    name: str | None = device
    if "/" in device:
        try:
            st = Path(device).stat()
        except OSError as e:
            raise TelemetryUsageError(f"{device}: {e.strerror}") from e
        if not stat.S_ISBLK(st.st_mode):
            raise TelemetryUsageError(f"{device}: not a block device")
        name = _name_of_devnum(st.st_rdev)
    if name is None or not (_SYS_CLASS_BLOCK / name).exists():
        raise TelemetryUsageError(
            f"{device}: not a block device the kernel knows",
            hint="name a device listed by `lsblk` (or in /proc/diskstats)",
        )
    return name


def _name_of_devnum(dev: int) -> str | None:
    path = _SYS_DEV_BLOCK / f"{os.major(dev)}:{os.minor(dev)}"
    return Path(os.path.realpath(path)).name if path.exists() else None


def _whole_disk(name: str) -> str:
    """The disk a partition is on (its parent in sysfs); any other device itself."""
    entry = _SYS_CLASS_BLOCK / name
    if (entry / "partition").exists():
        return Path(os.path.realpath(entry)).parent.name
    return name


def _slaves(name: str) -> list[str]:
    """The devices a dm or md device is built on."""
    try:
        return sorted(p.name for p in (_SYS_CLASS_BLOCK / name / "slaves").iterdir())
    except OSError:
        return []


def _mount_source_disk(st_dev: int) -> str | None:
    """The block device named as source of the mount whose device number is `st_dev`:
    btrfs gives its files an anonymous device number that sysfs does not know."""
    # Imported here: the targets package is heavier, and only this fallback needs it.
    from fslab.targets.mount import mountinfo

    for m in mountinfo():
        if m.rdev != st_dev or not m.source.startswith("/dev/"):
            continue
        try:
            st = Path(m.source).stat()
        except OSError:
            continue
        if stat.S_ISBLK(st.st_mode):
            return _name_of_devnum(st.st_rdev)
    return None


def backing_disk(name: str) -> str | None:
    """The whole disk holding the backing file of loop device `name`, or None: not a loop
    device, not attached, a deleted file, or a file on tmpfs, overlay or anything else
    without a block device."""
    try:
        text = (_SYS_CLASS_BLOCK / name / "loop" / "backing_file").read_text().rstrip("\n")
    except OSError:
        return None
    try:
        st_dev = Path(text.removesuffix(" (deleted)")).stat().st_dev
    except OSError:
        return None
    disk = _name_of_devnum(st_dev) or _mount_source_disk(st_dev)
    return _whole_disk(disk) if disk is not None else None


def _closure(start: Iterable[str], seen: set[str]) -> list[str]:
    """`start` and everything under it through dm/md slaves, in breadth-first order."""
    out: list[str] = []
    queue = [n for n in start if n not in seen]
    seen.update(queue)
    while queue:
        name = queue.pop(0)
        out.append(name)
        for s in _slaves(name):
            if s not in seen:
                seen.add(s)
                queue.append(s)
    return out


def devices_under(devices: Iterable[str]) -> list[str]:
    """The kernel names of the block devices to watch for a target on `devices` (every
    member of a multi-device file system): those devices, what they are built on (the
    slaves of a dm-crypt or md device), then the disks holding loop devices' backing
    files (themselves followed down, for an image on a loop-mounted file system). A
    backing file without a nameable disk (tmpfs) is skipped."""
    seen: set[str] = set()
    own = _closure([kernel_name(d) for d in devices], seen)
    backing: list[str] = []
    frontier = list(own)
    while frontier:
        disk = backing_disk(frontier.pop(0))
        if disk is not None and disk not in seen:
            found = _closure([disk], seen)
            backing += found
            frontier += found
    return own + backing


@dataclass(frozen=True, slots=True)
class DeviceRoles:
    """How the watched devices relate, for the sums of `Telemetry.summary`."""

    members: tuple[str, ...]
    """The bottom of the target's own stack (loop devices, disks): the summed I/O is
    what the target's storage did."""
    stacked: tuple[str, ...]
    """dm/md devices built on members: reported per device, not summed (their I/O is
    also the members' I/O)."""
    backing: tuple[str, ...]
    """Disks holding loop devices' backing files: reported apart, since they also carry
    the rest of the machine's I/O."""

    @property
    def all(self) -> tuple[str, ...]:
        return self.members + self.stacked + self.backing


def device_roles(names: Sequence[str]) -> DeviceRoles:
    """Sorts kernel names (as `devices_under` returns them) into their roles, from sysfs."""
    watched = set(names)
    backing: set[str] = set()
    frontier = list(names)
    while frontier:
        disk = backing_disk(frontier.pop(0))
        if disk is None:
            continue
        for n in _closure([disk], set()):
            if n in watched and n not in backing:
                backing.add(n)
                frontier.append(n)
    own = [n for n in names if n not in backing]
    stacked = {n for n in own if any(s in own for s in _slaves(n))}
    return DeviceRoles(
        members=tuple(n for n in own if n not in stacked),
        stacked=tuple(n for n in own if n in stacked),
        backing=tuple(n for n in names if n in backing),
    )


def statvfs_used_bytes(path: str | os.PathLike[str], *, sync: bool = False) -> int:
    """Space used on the file system holding `path`: (blocks - free blocks) x fragment
    size, file data and metadata alike. With `sync`, the file system is synced first
    (syncfs): btrfs updates its free space only when a transaction commits, and delayed
    allocation makes the count before writeback an estimate."""
    try:
        if sync:
            fd = os.open(path, os.O_RDONLY)
            try:
                libc = ctypes.CDLL(None, use_errno=True)
                if libc.syncfs(fd) != 0:
                    err = ctypes.get_errno()
                    raise OSError(err, os.strerror(err))
            finally:
                os.close(fd)
        st = os.statvfs(path)
    except OSError as e:
        raise TelemetryError(f"{os.fspath(path)}: cannot measure space used: {e}") from e
    return (st.f_blocks - st.f_bfree) * st.f_frsize
