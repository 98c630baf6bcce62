"""From a target's first-class settings to the mkfs command line and mount options.

Pure functions: nothing here runs a tool. What each setting maps to:

- `block_size`: ext4 `-b N`; xfs `-b size=N`; btrfs `-s N` (sectorsize).
- `cluster_size`: ext4 `-O bigalloc -C N` (the model refuses it for xfs and btrfs).
- `checksums`: ext4 `-O metadata_csum` / `-O ^metadata_csum`; xfs `-m crc=1` / V4
  (`-m crc=0,...`, which needs CONFIG_XFS_SUPPORT_V4 to mount); btrfs: data checksums
  are the default, `false` mounts with `-o nodatasum`.
- `profile` / `metadata_profile`: btrfs `-d PROFILE` / `-m PROFILE` over all devices.
- `encryption = "fscrypt"`: ext4 `-O encrypt`, then a key and a policy (`fscrypt.py`).
- `compression`: btrfs mounted `-o compress=ALG[:LEVEL]`, or `compress-force=` with
  `compression_force = true`.

Every file system gets the label `fslab-<target>` (cut to what the file system allows),
for people: a label proves nothing. What the safety gate recognises as fslab's own is
the UUID fslab names it with (`uuid`: ext4 and btrfs `-U`, xfs `-m uuid=`), recorded in
the journal. ext4 always gets
`-E lazy_itable_init=0,lazy_journal_init=0` so that no background initialisation runs
while workloads are measured. `mkfs_args` come after fslab's options, so a user's `-E`
replaces fslab's (mke2fs keeps the last `-E`), and before a `--` that ends the options:
the devices follow it, where no option can take one as its value (`args.py` refuses
`mkfs_args` that could name another device). `-F`/`-f` (force) is always passed:
`provision` only runs mkfs on an image fslab has just created, or on a device that has
passed the safety gate.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from uuid import uuid4

from fslab.targets import mountopts
from fslab.targets.args import has_option, parse_mkfs_args, suboptions, user_arg_problems
from fslab.targets.families import FAMILIES
from fslab.targets.spec import TargetSpec
from fslab.units import parse_size

KiB = 1 << 10
MiB = 1 << 20

LABEL_PREFIX = "fslab-"
# Per file system (`families.FAMILIES` is the one source): the longest label, the mkfs
# tool, the smallest device (loop image) fslab makes, per device (`--scale` never
# shrinks an image below it; a size written in the study must not be below it), and the
# block sizes mkfs accepts (powers of two in this range; whether the kernel mounts a
# given size is a separate question, answered in `system.block_size_problem`).
LABEL_MAX = {n: f.label_max for n, f in FAMILIES.items()}
MKFS_TOOL = {n: f.mkfs for n, f in FAMILIES.items()}
MIN_DEVICE_BYTES = {n: f.min_device_bytes for n, f in FAMILIES.items()}
MKFS_BLOCK_SIZES = {n: f.block_sizes for n, f in FAMILIES.items() if f.block_sizes}
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


def mkfs_argv(
    spec: TargetSpec, devices: Sequence[str], size: int | None = None, *, uuid: str | None = None
) -> list[str]:
    """The mkfs command for `spec` on `devices` of `size` bytes each (forced: see the
    module text), naming the file system `uuid` when given."""
    fs = spec.fs
    if fs is None:
        raise ValueError(f"target `{spec.name}` has no file system to make")
    # `check` refuses these first; this keeps any other caller from running them.
    refused = user_arg_problems(spec)
    if refused:
        raise ValueError("; ".join(refused))
    label = label_for(fs, spec.name)
    block = size_of(spec.block_size)
    argv: list[str]
    if fs == "ext4":
        argv = ["mkfs.ext4", "-F", "-L", label, "-E", "lazy_itable_init=0,lazy_journal_init=0"]
        if size is not None and size < EXT4_SMALL_BELOW and not has_option(spec, "-T"):
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
    elif fs == "btrfs":
        argv = ["mkfs.btrfs", "-f", "-L", label]
        if spec.profile is not None:
            argv += ["-d", spec.profile]
        if spec.metadata_profile is not None:
            argv += ["-m", spec.metadata_profile]
        if block is not None:
            argv += ["-s", str(block)]
    elif fs in ("ntfs", "ntfs3"):
        # -f: a quick format (no zeroing, no bad-sector scan: the image is new).
        argv = ["mkntfs", "-F", "-f", "-q", "-L", label]
        cluster = size_of(spec.cluster_size)
        if cluster is not None:
            argv += ["-c", str(cluster)]
    elif fs == "f2fs":
        argv = ["mkfs.f2fs", "-f", "-q", "-l", label]
    else:
        argv = ["mkfs.exfat", "-L", label]
        cluster = size_of(spec.cluster_size)
        if cluster is not None:
            argv += ["-c", str(cluster)]
    if uuid is not None and FAMILIES[fs].uuid == "uuid":
        argv += ["-m", f"uuid={uuid}"] if fs == "xfs" else ["-U", uuid]
    end = ["--"] if FAMILIES[fs].takes_end_of_options else []
    return [*argv, *spec.mkfs_args, *end, *devices]


def new_uuid(fs: str) -> str:
    """A fresh name for a file system of `fs`, as blkid will print it: a UUID, or a
    volume serial (`families.UuidStyle`)."""
    style = FAMILIES[fs].uuid
    if style == "uuid":
        return str(uuid4())
    if style == "serial64":
        return secrets.token_hex(8).upper()
    hex8 = secrets.token_hex(4).upper()
    return f"{hex8[:4]}-{hex8[4:]}"


def name_argv(fs: str, device: str, uuid: str) -> list[str] | None:
    """The command that gives the file system on `device` the serial `uuid` after mkfs
    (mkntfs and mkfs.exfat take none), or None where mkfs took it (`mkfs_argv`)."""
    style = FAMILIES[fs].uuid
    if style == "serial64":
        return ["ntfslabel", f"--new-serial={uuid}", device]
    if style == "serial32":
        return ["tune.exfat", "-I", "0x" + uuid.replace("-", ""), device]
    return None


def mount_options(spec: TargetSpec) -> list[str]:
    """Mount options: those the first-class settings need, then the study's own."""
    opts: list[str] = []
    if spec.fs == "btrfs" and spec.checksums is False:
        # No data checksums for files created from now on. Copy-on-write stays on
        # (`nodatacow` would imply `nodatasum`, not the other way round); metadata
        # is always checksummed on btrfs.
        opts.append("nodatasum")
    if spec.compression is not None:
        opts.append(f"compress{'-force' if spec.compression_force else ''}={spec.compression}")
    if spec.mount is not None:
        opts += mountopts.words(spec.mount.given())
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


# mke2fs's journal size for a file system of this many blocks (ext2fs_default_journal_size,
# e2fsprogs lib/ext2fs/mkjournal.c): (below this many blocks, journal blocks); 262144
# blocks (1 GiB at 4 KiB) above.
_EXT4_JOURNAL_BLOCKS = (
    (2048, 0),
    (32768, 1024),
    (256 << 10, 4096),
    (512 << 10, 8192),
    (4096 << 10, 16384),
    (8192 << 10, 32768),
    (16384 << 10, 65536),
    (32768 << 10, 131072),
)
_EXT4_JOURNAL_MAX_BLOCKS = 262144
# mkfs.xfs makes a log of at least 64 MiB (xfsprogs >= 5.19) and at most 2 GiB.
_XFS_LOG = (64 * MiB, 2 << 30)
# Measured here: mkfs.btrfs writes under 5 MiB to a fresh device, whatever its size.
_BTRFS_WRITES = 16 * MiB


def _number(value: str | None) -> int | None:
    """An option's number as mke2fs reads it (`4096`, or with a suffix: `4k`)."""
    try:
        return parse_size(value) if value is not None else None
    except ValueError:
        return None


def mkfs_write_bytes(spec: TargetSpec, size: int) -> int:
    """About how many bytes mkfs writes to one device of `size` bytes: what a fresh
    sparse loop image takes on the host before any data. Measured through a loop device
    here (a 4 GiB image took 130 MiB with ext4, 64 MiB with xfs, 5 MiB with btrfs):

    - ext4 (`lazy_itable_init=0,lazy_journal_init=0`): every inode table (an inode of
      `-I` bytes, 256, per `-i` bytes of space, 16 KiB: size/64), the journal (4 MiB to
      1 GiB by size, or `-J size=` MiB) and two bitmap blocks per block group (size/16384).
    - xfs: the log, written whole (64 MiB, growing as size/2048 up to 2 GiB).
    - btrfs: superblocks and the first trees (`_BTRFS_WRITES`).
    """
    if spec.fs == "btrfs":
        return min(size, _BTRFS_WRITES)
    if spec.fs not in ("ext4", "xfs"):
        # mkntfs -f, mkfs.f2fs and mkfs.exfat write their metadata only (a 256 MiB
        # NTFS image took under 3 MiB here).
        return min(size, _BTRFS_WRITES)
    if spec.fs == "xfs":
        return min(size // 4, max(_XFS_LOG[0], min(size // 2048, _XFS_LOG[1])))
    block = size_of(spec.block_size) or 4 * KiB
    ratio, inode_size, inodes, journal_mib = 16 * KiB, 256, None, None
    for o in parse_mkfs_args("ext4", spec.mkfs_args)[0]:
        if o.name == "-b":
            block = _number(o.value) or block
        elif o.name == "-i":
            ratio = _number(o.value) or ratio
        elif o.name == "-I":
            inode_size = _number(o.value) or inode_size
        elif o.name == "-N":
            inodes = _number(o.value)
        elif o.name == "-J":
            sizes = [_number(v) for k, v in suboptions(o.value or "") if k == "size"]
            journal_mib = sizes[-1] if sizes else journal_mib
    blocks = size // block
    if journal_mib is not None:
        journal = journal_mib * MiB
    else:
        below = [j for n, j in _EXT4_JOURNAL_BLOCKS if blocks < n]
        journal = (below[0] if below else _EXT4_JOURNAL_MAX_BLOCKS) * block
    n_inodes = inodes if inodes is not None else size // ratio
    # A group of 8 * block blocks has a block and an inode bitmap: 2 * block bytes.
    return min(size, n_inodes * inode_size + journal + size // (4 * block))
