"""The file systems fslab can make, one row each: everything that differs between them
and is a fact rather than logic (tools, packages, limits, what the kernel must have) is
in `FAMILIES`, so that a new file system is one row here plus its mkfs options in
`mkfs.mkfs_argv` and what it reads back in `provision`.

A row is also what `fslab plan` checks before it makes anything: the kernel must list
`kernel` in /proc/filesystems (or have it as a module), and the tools must be
installed. A family this kernel lacks is refused at the `fs` key with what is missing;
its command lines are still built (and tested against the real mkfs on an image file,
which needs no kernel support), so that the same study runs where the kernel has it.

Where each row was verified is in `verified`; docs/study.md has the table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

KiB = 1 << 10
MiB = 1 << 20

FsName = Literal["ext4", "xfs", "btrfs", "ntfs", "ntfs3", "f2fs", "exfat"]
"""A study's `fs`: the file systems fslab knows how to make (`FAMILIES`)."""

UuidStyle = Literal["uuid", "serial64", "serial32"]
"""How a file system is named: a 128-bit UUID given to mkfs, or a volume serial set
right after mkfs (NTFS: 64 bits, `ntfslabel --new-serial`; exFAT: 32 bits,
`tune.exfat -I`). blkid prints serials in upper case (`00112233AABBCCDD`,
`1234-ABCD`)."""


@dataclass(frozen=True)
class Family:
    name: str
    title: str
    """For people: `NTFS through ntfs-3g (FUSE)`."""
    mkfs: str
    package: str
    """The Debian package with `mkfs` and `inspect`."""
    inspect: str
    """The tool that reads the made file system back (its version goes in the record)."""
    mount_type: str
    """`mount -t`'s type."""
    kernel: str
    """The name /proc/filesystems must list for the mount to work."""
    kernel_config: str
    """The kernel option that provides `kernel`, for the refusal's words."""
    blkid_type: str
    """blkid's TYPE for it: how the safety gate recognises one fslab made."""
    label_max: int
    """Longest label mkfs takes (ASCII characters)."""
    min_device_bytes: int
    """Smallest device fslab makes or accepts for it (see `mkfs.MIN_DEVICE_BYTES`)."""
    block_sizes: tuple[int, int] | None
    """`block_size`'s range (powers of two); None: the key does not apply."""
    cluster_sizes: tuple[int, int] | None
    """`cluster_size`'s range (powers of two); None: the key does not apply."""
    uuid: UuidStyle
    ro_options: str
    """Read-only mount options that replay nothing (the safety gate's token check)."""
    direct_io: bool
    """Whether O_DIRECT reaches the device. ntfs-3g accepts the flag and serves the I/O
    through the page cache."""
    checksums: bool
    """Whether `checksums` applies (the file system checksums data or metadata)."""
    mount_tool: str | None = None
    """A program `mount -t` runs (`mount.ntfs-3g`), when the mount is not the kernel's."""
    max_devices: int = 1
    takes_end_of_options: bool = True
    """Whether mkfs takes `--` before the devices. mkntfs reads its arguments in order
    and takes `--` for none: the device then follows its options directly (it starts
    with `/`, and `args.py` refuses `mkfs_args` that end in an option wanting a value)."""
    verified: str = ""
    """Where fslab has made, mounted and measured it."""


FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family(
            "ext4", "ext4", "mkfs.ext4", "e2fsprogs", "tune2fs", "ext4", "ext4", "CONFIG_EXT4_FS",
            "ext4", label_max=16,
            # mke2fs makes tiny file systems, but 64 MiB keeps a normal journal (4 MiB+)
            # and room for a 64 KiB bigalloc layout.
            min_device_bytes=64 * MiB, block_sizes=(1 * KiB, 64 * KiB),
            cluster_sizes=(2 * KiB, 1 << 30), uuid="uuid", ro_options="ro,noload",
            direct_io=True, checksums=True, verified="Linux 6.18 (this project's VM)",
        ),
        Family(
            "xfs", "xfs", "mkfs.xfs", "xfsprogs", "xfs_info", "xfs", "xfs", "CONFIG_XFS_FS",
            "xfs", label_max=12,
            # mkfs.xfs (xfsprogs >= 5.19) refuses file systems under 300 MiB.
            min_device_bytes=300 * MiB, block_sizes=(512, 64 * KiB), cluster_sizes=None,
            uuid="uuid", ro_options="ro,norecovery", direct_io=True, checksums=True,
            verified="Linux 6.18 (this project's VM)",
        ),
        Family(
            "btrfs", "btrfs", "mkfs.btrfs", "btrfs-progs", "btrfs", "btrfs", "btrfs",
            "CONFIG_BTRFS_FS", "btrfs", label_max=255,
            # About 114 MiB per device for the non-mixed layout; 128 MiB worked here for
            # every profile, raid5/raid6 included.
            min_device_bytes=128 * MiB, block_sizes=(4 * KiB, 64 * KiB), cluster_sizes=None,
            uuid="uuid", ro_options="ro,rescue=nologreplay", direct_io=True, checksums=True,
            max_devices=16, verified="Linux 6.18 (this project's VM)",
        ),
        Family(
            "ntfs", "NTFS through ntfs-3g (FUSE)", "mkntfs", "ntfs-3g", "ntfsinfo", "ntfs-3g",
            "fuseblk", "CONFIG_FUSE_FS", "ntfs", label_max=128,
            # mkntfs refuses a $LogFile it cannot size below a few MiB; 16 MiB is ample.
            min_device_bytes=16 * MiB, block_sizes=None,
            # Windows' classic range; mkntfs 2022.10 refused 2 MiB clusters on 256 MiB.
            cluster_sizes=(512, 64 * KiB), uuid="serial64", ro_options="ro",
            direct_io=False, checksums=False, mount_tool="mount.ntfs-3g",
            takes_end_of_options=False,
            verified="Linux 6.18 with ntfs-3g 2022.10.3 (this project's VM)",
        ),
        Family(
            "ntfs3", "NTFS through the kernel's ntfs3", "mkntfs", "ntfs-3g", "ntfsinfo",
            "ntfs3", "ntfs3", "CONFIG_NTFS3_FS", "ntfs", label_max=128,
            min_device_bytes=16 * MiB, block_sizes=None, cluster_sizes=(512, 64 * KiB),
            uuid="serial64", ro_options="ro", direct_io=True, checksums=False,
            takes_end_of_options=False,
            verified="command lines only: this project's kernel has no ntfs3",
        ),
        Family(
            "f2fs", "F2FS", "mkfs.f2fs", "f2fs-tools", "dump.f2fs", "f2fs", "f2fs",
            "CONFIG_F2FS_FS", "f2fs", label_max=512,
            # mkfs.f2fs needs room for its six logs' segments; 64 MiB made one here.
            min_device_bytes=64 * MiB, block_sizes=None, cluster_sizes=None, uuid="uuid",
            ro_options="ro,norecovery", direct_io=True, checksums=False,
            verified="command lines only: this project's kernel has no f2fs",
        ),
        Family(
            "exfat", "exFAT", "mkfs.exfat", "exfatprogs", "dump.exfat", "exfat", "exfat",
            "CONFIG_EXFAT_FS", "exfat", label_max=11,
            min_device_bytes=16 * MiB, block_sizes=None, cluster_sizes=(512, 32 * MiB),
            uuid="serial32", ro_options="ro", direct_io=True, checksums=False,
            verified="command lines only: this project's kernel has no exfat",
        ),
    )
}  # fmt: skip

FS_NAMES: tuple[str, ...] = get_args(FsName)
assert set(FS_NAMES) == set(FAMILIES), "FsName and FAMILIES must name the same file systems"


def names_with(predicate: str) -> str:
    """`ext4, ntfs, ntfs3 and exfat`: the families whose `predicate` field is set."""
    names = [f.name for f in FAMILIES.values() if getattr(f, predicate)]
    return ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else "".join(names)
