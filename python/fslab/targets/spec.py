"""A target as a study writes it: a provisioned file system, an existing directory, or
devices (pydantic, checked as a whole: a `dir` target takes no mkfs settings, a btrfs
profile needs its devices).

Sizes are kept as the user wrote them (`"8GiB"`) and parsed with `fslab.units.parse_size`
where they are used. This module is the leaf of `fslab.targets`: it imports nothing of the
study, so that the study may import the targets and not the other way round.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from fslab.targets.families import FAMILIES, FS_NAMES, FsName, names_with
from fslab.targets.layers import CRYPT_SECTOR_SIZES, RAID_MIN_DEVICES, LvmLayout, RaidLevel
from fslab.targets.mountopts import SETTINGS
from fslab.units import parse_size

FS_KINDS = FS_NAMES
Scheduler = Literal["none", "mq-deadline", "kyber", "bfq"]
"""The blk-mq I/O schedulers Linux has; which of them a kernel offers is per device."""
SCHEDULERS: tuple[str, ...] = get_args(Scheduler)
BTRFS_PROFILES = (
    "single",
    "dup",
    "raid0",
    "raid1",
    "raid1c3",
    "raid1c4",
    "raid10",
    "raid5",
    "raid6",
)
# Devices each btrfs profile needs at least (mkfs.btrfs refuses fewer).
BTRFS_MIN_DEVICES = {
    "single": 1, "dup": 1, "raid0": 2, "raid1": 2, "raid1c3": 3, "raid1c4": 4,
    "raid10": 2, "raid5": 2, "raid6": 3,
}  # fmt: skip
ENCRYPTIONS = ("fscrypt", "dm-crypt")

Size = Annotated[str | int, Field(description="bytes, or a string such as `4KiB`, `8GiB`")]


def check_size(v: str | int | None) -> str | int | None:
    """A size field's validator: it must parse (kept as written)."""
    if v is not None:
        parse_size(v)
    return v


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


COMPRESSION_PATTERN = r"^(zstd(:([1-9]|1[0-5]))?|zlib(:[1-9])?|lzo)$"
"""btrfs's algorithms and their levels, as its `compress=` mount option takes them."""


class MountSpec(_Strict):
    """Mount options as named settings (`fslab.targets.mountopts` has what each means,
    which file systems take it and how it is read back)."""

    atime: Literal["noatime", "relatime", "strictatime"] | None = None
    lazytime: bool | None = None
    discard: bool | Literal["async"] | None = None
    commit_s: int | None = Field(None, ge=1, le=300)
    data: Literal["ordered", "writeback", "journal"] | None = None
    logbsize: Size | None = None
    ssd: bool | None = None
    space_cache: Literal["v2", False] | None = None
    autodefrag: bool | None = None

    @field_validator("logbsize")
    @classmethod
    def _logbsize(cls, v: str | int | None) -> str | int | None:
        if v is not None:
            n = parse_size(v)
            if n not in (16 << 10, 32 << 10, 64 << 10, 128 << 10, 256 << 10):
                raise ValueError(f"`{v}` is no xfs log buffer size: 16, 32, 64, 128 or 256 KiB")
        return v

    def given(self) -> dict[str, object]:
        """The settings written, with `logbsize` in bytes."""
        out = self.model_dump(exclude_none=True)
        if self.logbsize is not None:
            out["logbsize"] = parse_size(self.logbsize)
        return out


class LoopSpec(_Strict):
    """Image files in the work directory, attached as loop devices."""

    size: Size = "4GiB"
    count: int = Field(1, ge=1, le=16)
    # The loop driver's own direct I/O to its backing file (`losetup --direct-io=on`):
    # I/O then reaches the backing disk instead of stopping in the host's page cache.
    # On by default: buffered, ext4 4k random reads at QD16 measured 220k IOPS on this
    # project's VM against 50k with it on, i.e. memory, not the disk a study is about.
    direct_io: bool = True

    _size = field_validator("size")(check_size)


class TargetSpec(_Strict):
    """Where workloads run: a provisioned file system, an existing directory, or devices."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$", max_length=64)
    question: str | None = Field(None, min_length=1, max_length=64)
    """Which of the study's questions the target answers (`RAID layout`, `cluster size`):
    targets of one question are compared with each other, against its own baseline (its
    first target). Without it, every target answers the study's one question."""
    fs: FsName | None = None
    loop: LoopSpec | None = None
    dir: str | None = None
    device: list[str] | None = None
    block_size: Size | None = None
    cluster_size: Size | None = None
    checksums: bool | None = None
    profile: str | None = None
    metadata_profile: str | None = None
    encryption: Literal["none", "fscrypt", "dm-crypt"] | None = None
    """`"none"` is no encryption, written out for a sweep (`["none", "fscrypt"]`)."""
    compression: str | None = None
    """btrfs's transparent compression (`zstd`, `zstd:1`..`zstd:15`, `zlib`, `zlib:1`..
    `zlib:9`, `lzo`), mounted `compress=`: btrfs stops compressing a file whose first
    writes do not shrink. `compression_force = true` mounts `compress-force=` instead:
    every write is compressed and kept compressed when it shrinks."""
    compression_force: bool | None = None
    scheduler: Scheduler | None = None
    """The I/O scheduler of the target's devices for its runs (`fslab.targets.scheduler`):
    set after the file system is made, put back when the target is taken down. Unset,
    the devices keep the kernel's (recorded either way)."""
    crypt_sector_size: int | None = None
    """dm-crypt's sector size (512, 1024, 2048 or 4096 bytes): `cryptsetup --sector-size`."""
    crypt_workqueues: bool | None = None
    """`false`: dm-crypt encrypts in the submitting thread (`--perf-no_read_workqueue
    --perf-no_write_workqueue`) instead of kcryptd's queues."""
    raid: RaidLevel | None = None
    """md RAID (`mdadm --create --level`) across the target's devices, for a file system
    of one device; btrfs spans devices with `profile` instead."""
    raid_chunk: Size | None = None
    """md's chunk size (`mdadm --chunk`), the stripe unit: Storage Spaces' interleave."""
    lvm: LvmLayout | None = None
    """One LVM logical volume over all the target's devices, `linear` or `striped`, for
    a file system of one device."""
    lvm_stripe: Size | None = None
    """The stripe size of a `striped` LV (`lvcreate --stripesize`)."""
    mount: MountSpec | None = None
    """Mount options as named settings, recorded as in effect (`mount_options` is free
    text for the rest)."""
    mkfs_args: list[str] = []
    mount_options: list[str] = []

    _sizes = field_validator("block_size", "cluster_size", "raid_chunk", "lvm_stripe")(check_size)

    @field_validator("encryption")
    @classmethod
    def _no_encryption(cls, v: str | None) -> str | None:
        return None if v == "none" else v

    @field_validator("compression")
    @classmethod
    def _compression(cls, v: str | None) -> str | None:
        if v == "none":
            return None  # written out for a sweep: `["none", "zstd"]`
        if v is not None and not re.fullmatch(COMPRESSION_PATTERN, v):
            raise ValueError(
                f"`{v}` is not a btrfs compression; use zstd, zstd:1 to zstd:15, zlib, "
                f"zlib:1 to zlib:9, or lzo"
            )
        return v

    @field_validator("profile", "metadata_profile")
    @classmethod
    def _profile(cls, v: str | None) -> str | None:
        if v is not None and v not in BTRFS_PROFILES:
            raise ValueError(f"`{v}` is not a btrfs profile; allowed: {', '.join(BTRFS_PROFILES)}")
        return v

    @model_validator(mode="after")
    def _combinations(self) -> TargetSpec:
        places = [k for k in ("loop", "dir", "device") if getattr(self, k) is not None]
        if len(places) > 1:
            raise ValueError(f"give one of `loop`, `dir`, `device`, not {' and '.join(places)}")
        if self.dir is not None:
            extra = [
                k
                for k in ("fs", "block_size", "cluster_size", "checksums", "profile",
                          "metadata_profile", "encryption", "scheduler", "compression",
                          "compression_force", "mount", "crypt_sector_size",
                          "crypt_workqueues", "raid", "raid_chunk", "lvm", "lvm_stripe")
                if getattr(self, k) is not None
            ] + [k for k in ("mkfs_args", "mount_options") if getattr(self, k)]  # fmt: skip
            if extra:
                raise ValueError(
                    f"a `dir` target is used as it is: {', '.join(extra)} cannot apply to it"
                )
            return self
        if self.fs is None:
            raise ValueError(
                f"needs `fs` ({', '.join(FS_NAMES)}), or `dir` for an existing directory"
            )
        fs = self.fs
        fam = FAMILIES[fs]
        if (self.profile or self.metadata_profile) and fs != "btrfs":
            raise ValueError("`profile` and `metadata_profile` are btrfs settings")
        if (self.compression or self.compression_force is not None) and fs != "btrfs":
            raise ValueError(
                '`compression` is btrfs\'s here (ext4 and xfs do not compress); set `fs = "btrfs"`'
            )
        for key in self.mount.given() if self.mount is not None else ():
            takes = SETTINGS[key].filesystems
            if fs not in takes:
                raise ValueError(
                    f"`mount.{key}` is not a {fs} mount option (it applies to {', '.join(takes)})"
                )
        if self.compression_force is not None and self.compression is None:
            raise ValueError("`compression_force` needs `compression` (`zstd:3`, `lzo`, ...)")
        if self.cluster_size is not None and fam.cluster_sizes is None:
            raise ValueError(
                f"{fs} has no `cluster_size` (it applies to {names_with('cluster_sizes')}); "
                + ("use `block_size`" if fam.block_sizes else "leave it out")
            )
        if self.block_size is not None and fam.block_sizes is None:
            raise ValueError(
                f"{fs} has no `block_size` here (it applies to {names_with('block_sizes')})"
                + ("; use `cluster_size`" if fam.cluster_sizes else "")
            )
        if self.checksums is not None and not fam.checksums:
            raise ValueError(
                f"{fs} has no checksums to turn on or off (`checksums` applies to "
                f"{names_with('checksums')})"
            )
        if self.encryption == "fscrypt" and fs != "ext4":
            raise ValueError('`encryption = "fscrypt"` is supported on ext4 here')
        devices = self.device_count
        for key in ("profile", "metadata_profile"):
            p = getattr(self, key)
            if p is not None and devices < BTRFS_MIN_DEVICES[p]:
                raise ValueError(
                    f"btrfs {key} `{p}` needs at least {BTRFS_MIN_DEVICES[p]} devices, "
                    f"the target has {devices} (set `loop.count`)"
                )
        if (self.crypt_sector_size is not None or self.crypt_workqueues is not None) and (
            self.encryption != "dm-crypt"
        ):
            raise ValueError(
                "`crypt_sector_size` and `crypt_workqueues` are dm-crypt's: set "
                '`encryption = "dm-crypt"`'
            )
        if self.crypt_sector_size is not None and self.crypt_sector_size not in CRYPT_SECTOR_SIZES:
            raise ValueError(
                f"`crypt_sector_size = {self.crypt_sector_size}`: dm-crypt takes "
                f"{', '.join(map(str, CRYPT_SECTOR_SIZES))}"
            )
        if self.raid_chunk is not None and self.raid is None:
            raise ValueError("`raid_chunk` needs `raid` (`raid0`, `raid5`, ...)")
        if self.lvm_stripe is not None and self.lvm != "striped":
            raise ValueError('`lvm_stripe` needs `lvm = "striped"`')
        if self.lvm is not None and self.raid is not None:
            raise ValueError("give `raid` (md) or `lvm`, not both: each spans the devices")
        if self.lvm is not None:
            if fs == "btrfs":
                raise ValueError("btrfs spans devices itself: use `profile`, not `lvm`")
            if self.lvm == "striped" and devices < 2:
                raise ValueError(
                    "a `striped` LV needs at least 2 devices, the target has 1 (set `loop.count`)"
                )
        elif self.raid is not None:
            if fs == "btrfs":
                raise ValueError(
                    "btrfs spans devices itself: use `profile` (`raid1`, `raid5`, ...), not `raid`"
                )
            if devices < RAID_MIN_DEVICES[self.raid]:
                raise ValueError(
                    f"md {self.raid} needs at least {RAID_MIN_DEVICES[self.raid]} devices, the "
                    f"target has {devices} (set `loop.count`)"
                )
        elif devices > fam.max_devices:
            raise ValueError(
                f"{fs} uses one device; across several, set `raid` (md RAID: `raid0`, "
                f"`raid5`, ...) or use btrfs with a `profile`"
            )
        return self

    @property
    def device_count(self) -> int:
        if self.device is not None:
            return len(self.device)
        return self.loop.count if self.loop is not None else 1

    @property
    def effective_loop(self) -> LoopSpec | None:
        """The loop devices to make: the spec's, or the default when nothing else is given."""
        if self.dir is not None or self.device is not None:
            return None
        return self.loop or LoopSpec.model_validate({})
