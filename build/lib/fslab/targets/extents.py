"""Where a file's bytes, or its inode, lie in the loop images under its file system.

An integrity study (`fslab.kinds.integrity`) hits a file's blocks in the images while the
file system is unmounted, so it must know, for a byte range of the file, each copy's
image and offset. The file systems say it in their own units, and none may be assumed:

- ext4: FIEMAP (`filefrag -v`) in file system blocks, whose size `filefrag` prints
  (mke2fs picks 1 KiB blocks on small images);
- xfs: `xfs_bmap`, in 512-byte sectors;
- btrfs: FIEMAP gives btrfs *logical* addresses; `btrfs-map-logical` turns each into one
  (device, physical offset) per mirror (raid1 and DUP keep two).

The inode (the metadata variant): ext4 `debugfs -R "imap"`, xfs `xfs_db convert inode N
byte`, btrfs the fs tree leaf holding the file's INODE_ITEM (`dump-tree`), mapped like
data. Everything here only reads; `fslab.targets.inject` writes.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from fslab.errors import TargetError
from fslab.targets._proc import run

SECTOR = 512


@dataclass(frozen=True)
class Extent:
    """`length` bytes of the file from `file_offset`, stored from `address` (bytes): a
    device offset (ext4, xfs) or a btrfs logical address."""

    file_offset: int
    address: int
    length: int
    flags: tuple[str, ...] = ()


@dataclass(frozen=True)
class Place:
    """One copy of some bytes: `length` bytes at `offset` of the image behind `device`."""

    device: str
    image: Path
    offset: int
    length: int
    mirror: int = 1
    file_offset: int = 0
    """Where these bytes are in the file (0 for metadata)."""


# Extents whose bytes in the image are not the file's bytes as read: a study that hit
# them would test something else (compression, inline data in metadata) or nothing.
_REFUSED_FLAGS = {
    "encoded": "compressed or otherwise encoded",
    "inline": "stored inline in metadata",
    "unknown_loc": "not yet placed (delayed allocation)",
    "delalloc": "not yet placed (delayed allocation)",
    "unwritten": "allocated but unwritten",
}


def parse_filefrag(text: str) -> tuple[int, list[Extent]]:
    """`filefrag -v` -> (its block size, the extents in bytes)."""
    m = re.search(r"\((\d+) blocks? of (\d+) bytes\)", text)
    if not m:
        raise TargetError(
            "filefrag printed no block size",
            hint=f"its output was: {text.strip()[:300]}",
        )
    bs = int(m.group(2))
    out = []
    row = re.compile(
        r"^\s*\d+:\s*(\d+)\.\.\s*(\d+):\s*(\d+)\.\.\s*(\d+):\s*(\d+):\s*(?:\d+:)?\s*(.*)$"
    )
    for line in text.splitlines():
        r = row.match(line)
        if not r:
            continue
        logical, _, physical, _, length, flags = r.groups()
        out.append(
            Extent(
                int(logical) * bs,
                int(physical) * bs,
                int(length) * bs,
                tuple(f for f in flags.replace(" ", "").split(",") if f),
            )
        )
    return bs, out


def parse_xfs_bmap(text: str) -> list[Extent]:
    """`xfs_bmap FILE` (`N: [a..b]: c..d` in 512-byte sectors; holes say `hole`)."""
    out = []
    for m in re.finditer(r"^\s*\d+: \[(\d+)\.\.(\d+)\]: (\d+)\.\.(\d+)\s*$", text, re.MULTILINE):
        a, b, c, _ = (int(x) for x in m.groups())
        out.append(Extent(a * SECTOR, c * SECTOR, (b - a + 1) * SECTOR))
    return out


def parse_map_logical(text: str) -> list[tuple[int, int, str]]:
    """`btrfs-map-logical` -> [(mirror, physical, device)]."""
    return [
        (int(m.group(1)), int(m.group(2)), m.group(3))
        for m in re.finditer(r"mirror (\d+) logical \d+ physical (\d+) device (\S+)", text)
    ]


def file_extents(path: Path, fs: str) -> list[Extent]:
    """The extents of `path` on its mounted file system (synced first: a delayed
    allocation has no place yet)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    os.sync()
    if fs == "xfs":
        extents = parse_xfs_bmap(run(["xfs_bmap", str(path)]).stdout)
    else:
        _, extents = parse_filefrag(run(["filefrag", "-v", str(path)]).stdout)
    for e in extents:
        for flag in e.flags:
            if flag in _REFUSED_FLAGS:
                raise TargetError(
                    f"{path}: bytes {e.file_offset}..{e.file_offset + e.length} are "
                    f"{_REFUSED_FLAGS[flag]} (`{flag}`): their place in the image is not "
                    f"the file's bytes",
                    hint="integrity studies need plain extents: no `compress` mount "
                    "option, and a file_size of 64 KiB or more",
                )
    if not extents:
        raise TargetError(f"{path}: the file system reports no extents for it")
    return extents


def _image_of(device: str, devices: tuple[str, ...], images: tuple[Path, ...]) -> Path:
    for d, img in zip(devices, images, strict=True):
        if os.path.realpath(d) == os.path.realpath(device):
            return img
    raise TargetError(
        f"{device} is not one of this target's loop devices ({', '.join(devices)})",
        hint="btrfs named a device this study did not make; nothing was written",
    )


def btrfs_places(
    logical: int,
    length: int,
    devices: tuple[str, ...],
    images: tuple[Path, ...],
    file_offset: int = 0,
) -> list[Place]:
    """Each mirror of `length` bytes at btrfs `logical` (the file system unmounted)."""
    text = run(["btrfs-map-logical", "-l", str(logical), "-b", str(length), devices[0]]).stdout
    rows = parse_map_logical(text)
    if not rows:
        raise TargetError(
            f"btrfs-map-logical found no copy of logical {logical}",
            hint=f"it said: {text.strip()[:300]}",
        )
    seen: dict[int, Place] = {}
    for mirror, physical, dev in rows:
        # It prints one line per mirror and per stripe it crosses; a block never crosses
        # a stripe here (64 KiB stripes, blocks aligned to their size).
        image = _image_of(dev, devices, images)
        seen.setdefault(mirror, Place(dev, image, physical, length, mirror, file_offset))
    return [seen[m] for m in sorted(seen)]


def places(
    extents: list[Extent],
    file_offset: int,
    length: int,
    fs: str,
    devices: tuple[str, ...],
    images: tuple[Path, ...],
) -> list[Place]:
    """Every copy of the file's bytes [file_offset, file_offset + length): one place per
    mirror and per extent the range crosses."""
    out: list[Place] = []
    end = file_offset + length
    for e in extents:
        lo, hi = max(file_offset, e.file_offset), min(end, e.file_offset + e.length)
        if lo >= hi:
            continue
        address = e.address + (lo - e.file_offset)
        if fs == "btrfs":
            out += btrfs_places(address, hi - lo, devices, images, lo)
        else:
            out.append(Place(devices[0], images[0], address, hi - lo, 1, lo))
    if sum(p.length for p in out if p.mirror == 1) != length:
        raise TargetError(
            f"bytes {file_offset}..{end} of the file are not all mapped (a hole?)",
            hint="the file was written whole before mapping; this is a bug in fslab",
        )
    return out


def inode_places(
    fs: str, ino: int, rel: str, devices: tuple[str, ...], images: tuple[Path, ...]
) -> list[Place]:
    """Where inode `ino` (the file at `rel`, its path inside the file system) lies: ext4
    and xfs one record, btrfs each copy of the tree leaf holding its INODE_ITEM. Call it
    with the file system unmounted: the tools read the device."""
    dev = devices[0]
    if fs == "ext4":
        text = run(["debugfs", "-R", f"imap {rel}", dev]).stdout
        m = re.search(r"located at block (\d+), offset (0x[0-9a-f]+)", text)
        head = run(["dumpe2fs", "-h", dev]).stdout
        bs = re.search(r"Block size:\s*(\d+)", head)
        isz = re.search(r"Inode size:\s*(\d+)", head)
        if not m or not bs or not isz:
            raise TargetError(f"debugfs could not locate the inode of {rel}", hint=text[:300])
        offset = int(m.group(1)) * int(bs.group(1)) + int(m.group(2), 16)
        return [Place(dev, images[0], offset, int(isz.group(1)))]
    if fs == "xfs":
        text = run(["xfs_db", "-r", "-c", f"convert inode {ino} byte", dev]).stdout
        size = run(["xfs_db", "-r", "-c", "sb 0", "-c", "p inodesize", dev]).stdout
        m, s = re.search(r"\((\d+)\)", text), re.search(r"inodesize = (\d+)", size)
        if not m or not s:
            raise TargetError(f"xfs_db could not locate inode {ino}", hint=text[:300])
        return [Place(dev, images[0], int(m.group(1)), int(s.group(1)))]
    dump = run(["btrfs", "inspect-internal", "dump-tree", "-t", "5", dev]).stdout
    leaf, nodesize = None, 16384
    for line in dump.splitlines():
        lm = re.match(r"leaf (\d+) items", line)
        if lm:
            leaf = int(lm.group(1))
        elif re.search(rf"key \({ino} INODE_ITEM 0\) itemoff", line) and leaf is not None:
            break
    else:
        raise TargetError(f"btrfs: no INODE_ITEM for inode {ino} in the fs tree")
    super_ = run(["btrfs", "inspect-internal", "dump-super", dev]).stdout
    if ns := re.search(r"^nodesize\s+(\d+)", super_, re.MULTILINE):
        nodesize = int(ns.group(1))
    assert leaf is not None
    return btrfs_places(leaf, nodesize, devices, images)
