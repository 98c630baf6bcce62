"""The safety gate for `device` targets: block devices a user names, which fslab will
format.

A device passes only when all of this holds (device numbers, never names, are compared,
so a symlink alias or another name for the same device is caught):

- the path resolves to a block device;
- neither it nor any of its partitions is mounted (the major:minor of each entry in
  /proc/self/mountinfo and the device behind each mount source), used as swap
  (/proc/swaps) or held by another kernel device (sysfs `holders/`: md, dm, ...);
- the kernel grants an exclusive open (O_EXCL): this also catches what the lists above
  cannot see, e.g. the second member of a mounted multi-device btrfs, or a device
  another program opened exclusively;
- it carries no signature (file system, partition table, swap, RAID member...) besides
  a file system fslab made itself: one whose UUID is among those fslab recorded when it
  made them (`made`, from the results database) *and* which holds the token fslab wrote
  into it then (`fstoken`: the proof is on the device; a UUID is public and a database
  can be forged; a `fslab-` label proves nothing). A device with any other data on it
  passes only with `--force` and when the user named it again with `--device`
  (`confirmed`).

Each refusal comes with a hint saying what to do about it (unmount, swapoff, find the
holder, or `--force --device PATH`).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from fslab.errors import SafetyError
from fslab.targets import fstoken
from fslab.targets._proc import run
from fslab.targets.families import FAMILIES
from fslab.targets.fstoken import Made
from fslab.targets.mount import block_rdev, mountinfo, unescape

# File systems fslab makes, whose signature may be its own (by UUID).
_OWN_TYPES = tuple(dict.fromkeys(f.blkid_type for f in FAMILIES.values()))


@dataclass(frozen=True)
class Refusal:
    """One reason the gate refuses a device, and what the user can do about it."""

    why: str
    """`is mounted at /mnt/x (it is /dev/sdb)`: completes "the device ..."."""
    hint: str
    forceable: bool = False
    """Only `--force` with `--device` is missing (the device holds data)."""

    def __str__(self) -> str:
        return self.why


def force_hint(path: str) -> str:
    return (
        "fslab formats a device that holds data only when told twice: if its data may go, "
        f"run again with `--force --device {path}`"
    )


def _sys_dir(rdev: int) -> Path:
    return Path("/sys/dev/block") / f"{os.major(rdev)}:{os.minor(rdev)}"


def _read_dev(path: Path) -> int | None:
    try:
        major, minor = path.read_text().strip().split(":")
        return os.makedev(int(major), int(minor))
    except (OSError, ValueError):
        return None


def partitions(rdev: int) -> dict[str, int]:
    """Partitions of the whole disk `rdev`: name -> device number."""
    out: dict[str, int] = {}
    base = _sys_dir(rdev)
    try:
        entries = list(base.iterdir())
    except OSError:
        return out
    for entry in entries:
        if (entry / "partition").is_file():
            dev = _read_dev(entry / "dev")
            if dev is not None:
                out[entry.name] = dev
    return out


def holders(rdev: int) -> list[str]:
    try:
        return sorted(p.name for p in (_sys_dir(rdev) / "holders").iterdir())
    except OSError:
        return []


def swap_devices() -> dict[int, str]:
    """Device number -> name of each block device used as swap."""
    out: dict[int, str] = {}
    try:
        lines = Path("/proc/swaps").read_text().splitlines()[1:]
    except OSError:
        return out
    for line in lines:
        if not line.strip():
            continue
        name = unescape(line.split()[0])
        rdev = block_rdev(name)
        if rdev is not None:
            out[rdev] = name
    return out


def device_size(path: str) -> int | None:
    """Size of block device `path` in bytes, or None when unknown."""
    rdev = block_rdev(path)
    if rdev is None:
        return None
    try:
        return int((_sys_dir(rdev) / "size").read_text()) * 512
    except (OSError, ValueError):
        return None


def signatures(path: str) -> list[dict[str, str]]:
    """Every signature `wipefs` finds on `path` (read only): type, label, offset, ..."""
    proc = run(["wipefs", "--no-act", "--json", path], check=True, timeout=60)
    if not proc.stdout.strip():
        return []
    data = json.loads(proc.stdout)
    return [
        {k: str(v) for k, v in sig.items() if v is not None}
        for sig in data.get("signatures", [])
        if isinstance(sig, dict)
    ]


def _is_confirmed(path: str, confirmed: Collection[str]) -> bool:
    real = os.path.realpath(path)
    return any(c == path or os.path.realpath(c) == real for c in confirmed)


def _exclusive_problem(real: str) -> str | None:
    try:
        fd = os.open(real, os.O_RDONLY | os.O_EXCL | os.O_CLOEXEC)
    except OSError as e:
        if e.errno == errno.EBUSY:
            return (
                "is in use: the kernel refuses an exclusive open (EBUSY), so a mounted "
                "file system (e.g. as a member of a multi-device btrfs), md/dm or another "
                "program holds it"
            )
        return f"cannot be opened: {e.strerror}"
    os.close(fd)
    return None


def _is_ours(sig: dict[str, str], made: Made, devices: Sequence[str]) -> bool:
    """A signature of a file system fslab made: its UUID recorded and its token on the
    device (never its label)."""
    fstype, uuid = sig.get("type", ""), sig.get("uuid", "")
    return fstype in _OWN_TYPES and fstoken.proven(fstype, uuid, devices, made)


def refusals(
    path: str,
    *,
    force: bool = False,
    confirmed: Collection[str] = (),
    made: Made | None = None,
    members: Sequence[str] = (),
) -> list[Refusal]:
    """Every reason the gate refuses `path` (empty: it passes), each with a hint. `made`:
    the file systems fslab made (`fstoken.Made`: a device holding one of them, token and
    all, is its own); `members`: the other devices of the same target (a multi-device
    btrfs is read through all of them). Reads only (a token is read through a private
    read-only mount)."""
    real = os.path.realpath(path)
    alias = f" (it is {real})" if real != path else ""
    try:
        st = Path(real).stat()
    except OSError as e:
        why = "does not exist" if e.errno == errno.ENOENT else str(e.strerror)
        return [Refusal(why + alias, "check the path in `device`")]
    if not stat.S_ISBLK(st.st_mode):
        return [
            Refusal(
                f"is not a block device{alias}",
                "name a block device in `device`; for a directory use `dir`, for an image "
                "file `loop`",
            )
        ]
    rdev = st.st_rdev
    parts = partitions(rdev)
    names = {rdev: Path(real).name} | {dev: name for name, dev in parts.items()}

    def it(dev: int) -> str:
        """The subject of a sentence about `dev`: the device, or one of its partitions."""
        return "is" if dev == rdev else f"has partition {names[dev]} which is"

    out: list[Refusal] = []
    for m in mountinfo():
        hit = m.rdev if m.rdev in names else None
        if hit is None and m.source.startswith("/"):
            src = block_rdev(m.source)
            hit = src if src in names else None
        if hit is not None:
            out.append(
                Refusal(
                    f"{it(hit)} mounted at {m.mountpoint}{alias}",
                    f"fslab formats only devices nothing uses: if its data may go, unmount "
                    f"it first (`umount {m.mountpoint}`)",
                )
            )
    for dev, name in swap_devices().items():
        if dev in names:
            out.append(
                Refusal(
                    f"{it(dev)} used as swap ({name}){alias}",
                    f"if it may go, stop swapping to it first (`swapoff {name}`)",
                )
            )
    for dev in names:
        held = holders(dev)
        if held:
            out.append(
                Refusal(
                    f"{it(dev)} held by {', '.join(held)} (sysfs holders){alias}",
                    f"it is part of {', '.join(held)} (md RAID, device-mapper): take it out "
                    f"of that first",
                )
            )
    try:
        if (_sys_dir(rdev) / "ro").read_text().strip() == "1":
            out.append(
                Refusal(
                    f"is read-only{alias}",
                    f"fslab cannot format it; if it may be written, `blockdev --setrw {real}`",
                )
            )
    except OSError:
        pass
    busy = _exclusive_problem(real)
    if busy:
        out.append(
            Refusal(
                busy + alias,
                f"see what holds it with `fuser -v {real}` and `lsblk {real}`, and release it",
            )
        )
    if out:
        return out  # in use: do not even probe its contents

    others = [os.path.realpath(m) for m in members]
    devices = [real, *(m for m in others if m != real)]
    foreign = [s for s in signatures(real) if not _is_ours(s, made or {}, devices)]
    if foreign and not (force and _is_confirmed(path, confirmed)):
        kinds = ", ".join(
            s.get("type", "?") + (f" labelled {s['label']!r}" if s.get("label") else "")
            for s in foreign
        )
        need = "it is not named again with `--device`" if force else "`--force` is not given"
        out.append(
            Refusal(
                f"holds data fslab did not make (signatures: {kinds}), and {need}{alias}",
                force_hint(path),
                forceable=True,
            )
        )
    return out


def device_problems(
    path: str,
    *,
    force: bool = False,
    confirmed: Collection[str] = (),
    made: Made | None = None,
) -> list[str]:
    """`refusals`, as sentences."""
    return [r.why for r in refusals(path, force=force, confirmed=confirmed, made=made)]


def check_device(
    path: str,
    *,
    force: bool,
    confirmed: Collection[str],
    made: Made | None = None,
    members: Sequence[str] = (),
) -> None:
    """Raises `SafetyError` unless `path` passes the gate (see the module text)."""
    found = refusals(path, force=force, confirmed=confirmed, made=made, members=members)
    if found:
        raise SafetyError(
            f"refusing to format {path}: it {'; it '.join(r.why for r in found)}",
            hint="\n".join(dict.fromkeys(r.hint for r in found)),
        )


@contextlib.contextmanager
def hold(path: str) -> Iterator[int]:
    """Keeps `path` open with O_EXCL while the block runs, so no file system, md/dm or
    other program can claim it meanwhile. Note that mkfs and mount claim the device
    exclusively themselves: hold it around work on the raw device, not around those."""
    real = os.path.realpath(path)
    try:
        fd = os.open(real, os.O_RDWR | os.O_EXCL | os.O_CLOEXEC)
    except OSError as e:
        raise SafetyError(
            f"cannot hold {path} exclusively: {e.strerror}",
            hint="something else uses the device; release it first",
        ) from e
    try:
        yield fd
    finally:
        os.close(fd)
