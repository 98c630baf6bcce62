"""Mounting, unmounting and reading /proc/self/mountinfo."""

from __future__ import annotations

import os
import re
import shlex
import stat
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from fslab.errors import TargetError
from fslab.targets._proc import reason, run

# `umount` right after a process used the file system may say "target is busy" for a
# moment (an io_uring or a just-closed fd being released): retry for this long.
UMOUNT_RETRY_S = 10.0
# Kernel log lines about a failed mount that its error message keeps.
KERNEL_LINES = 3


def unescape(field: str) -> str:
    """mountinfo and /proc/swaps write space, tab, newline and backslash as octal."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


@dataclass(frozen=True)
class MountInfo:
    """One line of /proc/self/mountinfo."""

    mount_id: int
    parent_id: int
    major: int
    minor: int
    root: str
    mountpoint: str
    options: tuple[str, ...]
    """Per-mount options (rw, noatime, ...)."""
    fstype: str
    source: str
    super_options: tuple[str, ...]
    """The file system's own options (data=ordered, nodatasum, space_cache=v2, ...)."""

    @property
    def rdev(self) -> int:
        """The device number, comparable with `st_rdev` (for btrfs an anonymous one)."""
        return os.makedev(self.major, self.minor)


def mountinfo() -> list[MountInfo]:
    out: list[MountInfo] = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        try:
            sep = fields.index("-")
            major, minor = fields[2].split(":")
            out.append(
                MountInfo(
                    mount_id=int(fields[0]),
                    parent_id=int(fields[1]),
                    major=int(major),
                    minor=int(minor),
                    root=unescape(fields[3]),
                    mountpoint=unescape(fields[4]),
                    options=tuple(fields[5].split(",")),
                    fstype=fields[sep + 1],
                    source=unescape(fields[sep + 2]),
                    super_options=tuple(fields[sep + 3].split(","))
                    if len(fields) > sep + 3
                    else (),
                )
            )
        except (ValueError, IndexError):
            continue
    return out


def mounts_at(path: str | Path) -> list[MountInfo]:
    """Mounts whose mount point is `path` (symlinks resolved), the topmost last."""
    real = os.path.realpath(path)
    return [m for m in mountinfo() if m.mountpoint == real]


def mounts_under(path: str | Path) -> list[MountInfo]:
    """Mounts at `path` or anywhere below it."""
    real = os.path.realpath(path).rstrip("/") or "/"
    prefix = real if real == "/" else real + "/"
    return [m for m in mountinfo() if m.mountpoint == real or m.mountpoint.startswith(prefix)]


def mount_containing(path: str | Path) -> MountInfo | None:
    """The mount holding `path`: the deepest mount point above it (the topmost mount
    there)."""
    real = os.path.realpath(path)
    best: MountInfo | None = None
    for m in mountinfo():
        mp = m.mountpoint
        inside = real == mp or mp == "/" or real.startswith(mp.rstrip("/") + "/")
        if inside and (best is None or len(mp) >= len(best.mountpoint)):
            best = m
    return best


def block_rdev(path: str) -> int | None:
    """st_rdev of `path` when it is a block device (symlinks followed), else None."""
    try:
        st = Path(path).stat()
    except OSError:
        return None
    return st.st_rdev if stat.S_ISBLK(st.st_mode) else None


def same_device(a: str, b: str) -> bool:
    """Whether two device paths name the same block device (or the same string)."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    ra, rb = block_rdev(a), block_rdev(b)
    return ra is not None and ra == rb


def mount(device: str, mountpoint: Path, fstype: str, options: Sequence[str]) -> list[str]:
    """Mounts `device` on `mountpoint`; returns the command used."""
    argv = ["mount", "-t", fstype]
    if options:
        argv += ["-o", ",".join(options)]
    argv += [device, str(mountpoint)]
    kmsg = _kmsg_open()
    try:
        proc = run(argv, check=False)
        if proc.returncode == 0:
            return argv
        said = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
        kernel = _about(_kmsg_read(kmsg), device, fstype) if kmsg is not None else []
    finally:
        if kmsg is not None:
            os.close(kmsg)
    why = reason(said) or f"exit status {proc.returncode}"
    raise TargetError(
        f"`{shlex.join(argv)}` failed: {why}"
        + (f"; the kernel said: {'; '.join(kernel[-KERNEL_LINES:])}" if kernel else ""),
        hint="check the target's `mount_options` (and `mkfs_args`): this kernel's "
        f"{fstype} may not take them" + ("" if kernel else "; `dmesg` may say more"),
    )


def _kmsg_open() -> int | None:
    """/dev/kmsg, read from its end (only what the kernel logs from now on), or None
    when it cannot be read (no CAP_SYSLOG, no /dev/kmsg)."""
    try:
        fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        os.lseek(fd, 0, os.SEEK_END)
    except OSError:
        os.close(fd)
        return None
    return fd


def _kmsg_read(fd: int) -> list[str]:
    """The messages logged since `_kmsg_open`: one record per read, `prio,seq,...;text`."""
    out: list[str] = []
    for _ in range(4096):  # a kernel logging without pause cannot keep us here
        try:
            record = os.read(fd, 8192)
        except BrokenPipeError:
            continue  # records were overwritten before we read them; go on with the next
        except OSError:
            break  # EAGAIN: nothing more
        if not record:
            break
        text = record.decode(errors="replace").partition(";")[2]
        out.append(text.splitlines()[0] if text else "")
    return out


def _about(lines: Sequence[str], device: str, fstype: str) -> list[str]:
    """The kernel's lines about `device` (`EXT4-fs (loop3): ...`) or its file system
    (`ext4: Unknown parameter 'x'`): other programs log meanwhile too."""
    name = Path(os.path.realpath(device)).name
    return [
        line.strip()
        for line in lines
        if re.search(rf"\b{re.escape(name)}\b", line)
        or line.lower().startswith((f"{fstype}:", f"{fstype}-fs", f"{fstype} "))
    ]


def umount(mountpoint: str | Path, *, retry_s: float = UMOUNT_RETRY_S) -> None:
    """Unmounts everything mounted at `mountpoint`, retrying while it is busy. Nothing
    mounted there is fine."""
    deadline = time.monotonic() + retry_s
    delay = 0.05
    while mounts_at(mountpoint):
        proc = run(["umount", str(mountpoint)], check=False, timeout=60)
        if proc.returncode == 0:
            continue
        if not mounts_at(mountpoint):
            return
        if time.monotonic() > deadline:
            said = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
            raise TargetError(
                f"cannot unmount {mountpoint}: {reason(said) or 'busy'}",
                hint=f"a process still uses it (see `fuser -vm {mountpoint}`); stop it and "
                f"run `fslab cleanup`",
            )
        time.sleep(delay)
        delay = min(delay * 2, 0.5)


def fuse_servers(mountpoint: Path) -> tuple[int, ...]:
    """The processes serving a FUSE mount at `mountpoint` (ntfs-3g's daemon): those whose
    command line names it. The daemon forks away from `mount`, so it is found by what it
    serves, not by who started it."""
    want = os.fsencode(str(mountpoint))
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if want in argv:
            found.append(int(entry.name))
    return tuple(sorted(found))
