"""From a target's first-class settings to the mkfs command line and mount options.

Pure functions: nothing here runs a tool. What each setting maps to:

- `block_size`: ext4 `-b N`; xfs `-b size=N`; btrfs `-s N` (sectorsize).
- `cluster_size`: ext4 `-O bigalloc -C N` (the model refuses it for xfs and btrfs).
- `checksums`: ext4 `-O metadata_csum` / `-O ^metadata_csum`; xfs `-m crc=1` / V4
  (`-m crc=0,...`, which needs CONFIG_XFS_SUPPORT_V4 to mount); btrfs: data checksums
  are the default, `false` mounts with `-o nodatasum`.
- `profile` / `metadata_profile`: btrfs `-d PROFILE` / `-m PROFILE` over all devices.
- `encryption = "fscrypt"`: ext4 `-O encrypt`, then a key and a policy (`fscrypt.py`).

Every file system gets the label `fslab-<target>` (cut to what the file system allows),
which the safety gate recognises as fslab's own. ext4 always gets
`-E lazy_itable_init=0,lazy_journal_init=0` so that no background initialisation runs
while workloads are measured. `mkfs_args` come last, so a user's `-E` replaces fslab's
(mke2fs keeps the last `-E`). `-F`/`-f` (force) is always passed: `provision` only runs
mkfs on an image fslab has just created, or on a device that has passed the safety gate.
"""

from __future__ import annotations

from collections.abc import Sequence

from fslab.study.model import TargetSpec, parse_size

KiB = 1 << 10
MiB = 1 << 20

LABEL_PREFIX = "fslab-"
# Longest label each file system takes (ext4: 16 bytes; xfs: 12; btrfs: 255).
LABEL_MAX = {"ext4": 16, "xfs": 12, "btrfs": 255}

MKFS_TOOL = {"ext4": "mkfs.ext4", "xfs": "mkfs.xfs", "btrfs": "mkfs.btrfs"}

# Smallest device (loop image) fslab makes for each file system, per device. `--scale`
# never shrinks an image below these; sizes written in a study must not be below them.
# - xfs: mkfs.xfs (xfsprogs >= 5.19) refuses file systems under 300 MiB.
# - btrfs: mkfs.btrfs needs about 114 MiB per device for the non-mixed layout; 128 MiB
#   worked here for every profile, raid5/raid6 included.
# - ext4: mke2fs makes tiny file systems, but 64 MiB keeps a normal journal (4 MiB+)
#   and room for a 64 KiB bigalloc layout.
MIN_DEVICE_BYTES = {"ext4": 64 * MiB, "xfs": 300 * MiB, "btrfs": 128 * MiB}

# Block sizes each mkfs accepts (powers of two in this range). Whether the kernel mounts
# a given size is a separate question, answered in `system.block_size_problem`.
MKFS_BLOCK_SIZES = {
    "ext4": (1 * KiB, 64 * KiB),
    "xfs": (512, 64 * KiB),
    "btrfs": (4 * KiB, 64 * KiB),
}
# mke2fs takes a bigalloc cluster of 2 to 2^15 blocks (`-C`, a power of two).
EXT4_MAX_CLUSTER_RATIO = 1 << 15

# mke2fs picks its "small" usage type (1 KiB blocks, an inode per 4 KiB) for file
# systems under 512 MiB: measured here, a 64 MiB image got 1 KiB blocks. A target that
# `--scale` shrank must keep the layout of the full-size one, so it gets `-T default`.
EXT4_SMALL_BELOW = 512 * MiB

# xfs V4 (crc=0) cannot have the V5-only features xfsprogs 6.x turns on by default.
XFS_NO_CRC = "crc=0,finobt=0,rmapbt=0,reflink=0,inobtcount=0,bigtime=0"


def is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def label_for(fs: str, name: str) -> str:
    """`fslab-<name>`, cut to the longest label `fs` allows."""
    return (LABEL_PREFIX + name)[: LABEL_MAX[fs]]


def size_of(value: str | int | None) -> int | None:
    return None if value is None else parse_size(value)


def mkfs_argv(spec: TargetSpec, devices: Sequence[str], size: int | None = None) -> list[str]:
    """The mkfs command for `spec` on `devices` of `size` bytes each (forced: see the
    module text)."""
    fs = spec.fs
    if fs is None:
        raise ValueError(f"target `{spec.name}` has no file system to make")
    label = label_for(fs, spec.name)
    block = size_of(spec.block_size)
    argv: list[str]
    if fs == "ext4":
        argv = ["mkfs.ext4", "-F", "-L", label, "-E", "lazy_itable_init=0,lazy_journal_init=0"]
        if size is not None and size < EXT4_SMALL_BELOW and "-T" not in spec.mkfs_args:
            argv += ["-T", "default"]
        features: list[str] = []
        if block is not None:
            argv += ["-b", str(block)]
        cluster = size_of(spec.cluster_size)
        if cluster is not None:
            features.append("bigalloc")
            argv += ["-C", str(cluster)]
        if spec.checksums is not None:
            features.append("metadata_csum" if spec.checksums else "^metadata_csum")
        if spec.encryption == "fscrypt":
            features.append("encrypt")
        if features:
            argv += ["-O", ",".join(features)]
    elif fs == "xfs":
        argv = ["mkfs.xfs", "-f", "-L", label]
        if block is not None:
            argv += ["-b", f"size={block}"]
        if spec.checksums is not None:
            argv += ["-m", "crc=1" if spec.checksums else XFS_NO_CRC]
    else:
        argv = ["mkfs.btrfs", "-f", "-L", label]
        if spec.profile is not None:
            argv += ["-d", spec.profile]
        if spec.metadata_profile is not None:
            argv += ["-m", spec.metadata_profile]
        if block is not None:
            argv += ["-s", str(block)]
    return [*argv, *spec.mkfs_args, *devices]


def mount_options(spec: TargetSpec) -> list[str]:
    """Mount options: those the first-class settings need, then the study's own."""
    opts: list[str] = []
    if spec.fs == "btrfs" and spec.checksums is False:
        # No data checksums for files created from now on. Copy-on-write stays on
        # (`nodatacow` would imply `nodatasum`, not the other way round); metadata
        # is always checksummed on btrfs.
        opts.append("nodatasum")
    return [*opts, *spec.mount_options]


def loop_image_size(spec: TargetSpec, scale: float = 1.0) -> int:
    """Bytes per loop image: the study's size times `scale`, rounded up to a MiB and
    never below the file system's minimum (`MIN_DEVICE_BYTES`)."""
    loop = spec.effective_loop
    if loop is None or spec.fs is None:
        raise ValueError(f"target `{spec.name}` has no loop images")
    size = parse_size(loop.size)
    scaled = max(-(-int(size * scale) // MiB) * MiB, MiB)
    if scale != 1.0:
        # A size written in the study and below the minimum is an error (`check`);
        # one that only `--scale` made too small is raised to the minimum.
        scaled = max(scaled, MIN_DEVICE_BYTES[spec.fs])
    return scaled
