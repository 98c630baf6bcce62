"""Loop devices over fslab's image files.

sysfs is the truth here: `losetup -d` on a busy device returns 0 and only sets
autoclear, so a detach is checked through /sys/block/loopN/loop/backing_file.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import struct
import time
from pathlib import Path

from fslab.errors import TargetError
from fslab.targets._proc import run

DETACH_RETRY_S = 10.0
_DELETED = " (deleted)"


def _sysfs(device: str) -> Path:
    return Path("/sys/block") / Path(os.path.realpath(device)).name / "loop"


def backing_file(device: str) -> str | None:
    """The file behind loop device `device`, or None when it is not attached (or not a
    loop device). A backing file deleted since has its old path (the kernel's
    ` (deleted)` suffix is dropped)."""
    try:
        text = (_sysfs(device) / "backing_file").read_text().rstrip("\n")
    except OSError:
        return None
    return text.removesuffix(_DELETED) or None


_LOOP_GET_STATUS64 = 0x4C05
# struct loop_info64 (linux/loop.h): lo_device and lo_inode first, 232 bytes in all.
_LOOP_INFO64 = struct.Struct("=QQQQQIIII64s64s32sQQ")


def backing_identity(device: str) -> tuple[int, int] | None:
    """(st_dev, st_ino) of the file behind loop device `device`, as the kernel holds it
    (LOOP_GET_STATUS64), or None when it is not an attached loop device: unlike a path,
    this names the very file the device writes, whatever was renamed or linked since."""
    try:
        fd = os.open(device, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        raw = fcntl.ioctl(fd, _LOOP_GET_STATUS64, bytes(_LOOP_INFO64.size))
    except OSError:
        return None
    finally:
        os.close(fd)
    lo_device, lo_inode = _LOOP_INFO64.unpack(raw)[:2]
    return int(lo_device), int(lo_inode)


def direct_io(device: str) -> bool | None:
    """Whether the loop driver does direct I/O to the backing file (sysfs `dio`)."""
    try:
        return (_sysfs(device) / "dio").read_text().strip() == "1"
    except OSError:
        return None


def loop_info(device: str) -> dict[str, object]:
    """What sysfs says about an attached loop device, for the record."""
    info: dict[str, object] = {"device": device, "backing_file": backing_file(device)}
    for key in ("dio", "autoclear", "sizelimit", "offset"):
        with contextlib.suppress(OSError):
            info[key] = (_sysfs(device) / key).read_text().strip()
    try:
        name = Path(os.path.realpath(device)).name
        info["logical_block_size"] = int(
            Path(f"/sys/block/{name}/queue/logical_block_size").read_text()
        )
    except (OSError, ValueError):
        pass
    return info


def loops_backed_by(image: str | Path) -> list[str]:
    """Every loop device whose backing file is `image`."""
    want = os.path.realpath(image)
    found: list[str] = []
    for entry in Path("/sys/block").glob("loop*"):
        if not re.fullmatch(r"loop\d+", entry.name):
            continue
        dev = f"/dev/{entry.name}"
        if backing_file(dev) == want:
            found.append(dev)
    return sorted(found, key=lambda d: int(d.removeprefix("/dev/loop")))


def next_free() -> str:
    """A free loop device (`losetup --find`), created when none is free. Not reserved:
    `attach` may still find it taken and must be retried."""
    return run(["losetup", "--find"]).stdout.strip()


def attach(device: str, image: Path, *, direct_io: bool) -> list[str]:
    """Attaches `image` to `device`; returns the command used. Raises `TargetError` when
    the device was taken meanwhile or losetup failed."""
    argv = ["losetup"]
    if direct_io:
        argv.append("--direct-io=on")
    argv += [device, str(image)]
    run(argv)
    if backing_file(device) != os.path.realpath(image):
        raise TargetError(f"{device} is not backed by {image} after `losetup`")
    return argv


def detach(device: str, image: str | Path, *, retry_s: float = DETACH_RETRY_S) -> None:
    """Detaches `device` if, and only if, its backing file is `image`; verified through
    sysfs, retried while the device is busy (udev's blkid may hold it a moment after
    mkfs). Nothing attached, or another file attached, is left as it is."""
    want = os.path.realpath(image)
    deadline = time.monotonic() + retry_s
    delay = 0.05
    while backing_file(device) == want:
        run(["losetup", "-d", device], check=False, timeout=60)
        if backing_file(device) != want:
            return
        if time.monotonic() > deadline:
            raise TargetError(
                f"cannot detach {device} from {image}: it is still in use",
                hint=f"something holds {device} open (a mount, a process); release it and "
                f"run `fslab cleanup`",
            )
        time.sleep(delay)
        delay = min(delay * 2, 0.5)
