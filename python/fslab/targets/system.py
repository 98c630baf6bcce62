"""What this machine can provision: a `System` snapshot, and `check`, which says every
reason a target cannot be made here. Neither has side effects (probing runs only
`--version` style commands and reads /proc and /sys)."""

from __future__ import annotations

import gzip
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from fslab.targets import gate, layers, scheduler
from fslab.targets._proc import run, which
from fslab.targets.args import mkfs_problems, mount_problems
from fslab.targets.families import FAMILIES
from fslab.targets.mkfs import (
    EXT4_MAX_CLUSTER_RATIO,
    MIN_DEVICE_BYTES,
    MKFS_BLOCK_SIZES,
    MKFS_TOOL,
    is_power_of_two,
    loop_image_size,
)
from fslab.targets.mount import block_rdev
from fslab.targets.spec import TargetSpec
from fslab.units import format_bytes, parse_size

# tool -> (Debian package, command printing its version or None): the one table of
# which package brings which tool (`check`'s sentences, `fslab doctor`).
TOOLS: dict[str, tuple[str, tuple[str, ...] | None]] = {
    "mkfs.ext4": ("e2fsprogs", ("mkfs.ext4", "-V")),
    "tune2fs": ("e2fsprogs", None),
    "e4crypt": ("e2fsprogs", None),
    "mkfs.xfs": ("xfsprogs", ("mkfs.xfs", "-V")),
    "xfs_info": ("xfsprogs", None),
    "mkfs.btrfs": ("btrfs-progs", ("mkfs.btrfs", "--version")),
    "btrfs": ("btrfs-progs", ("btrfs", "--version")),
    "losetup": ("util-linux", ("losetup", "--version")),
    "mount": ("mount", ("mount", "--version")),
    "umount": ("mount", None),
    "blkid": ("util-linux", ("blkid", "--version")),
    "wipefs": ("util-linux", ("wipefs", "--version")),
    "mkntfs": ("ntfs-3g", ("mkntfs", "--version")),
    "ntfsinfo": ("ntfs-3g", None),
    "ntfslabel": ("ntfs-3g", None),
    "mount.ntfs-3g": ("ntfs-3g", ("ntfs-3g", "--version")),
    "mkfs.f2fs": ("f2fs-tools", ("mkfs.f2fs", "-V")),
    "dump.f2fs": ("f2fs-tools", None),
    "mkfs.exfat": ("exfatprogs", ("mkfs.exfat", "-V")),
    "dump.exfat": ("exfatprogs", None),
    "tune.exfat": ("exfatprogs", None),
    "fscrypt": ("fscrypt", ("fscrypt", "--version")),
    "cryptsetup": ("cryptsetup-bin", ("cryptsetup", "--version")),
    "dmsetup": ("dmsetup", ("dmsetup", "--version")),
    "mdadm": ("mdadm", ("mdadm", "--version")),
    "lvm": ("lvm2", ("lvm", "version")),
    "fio": ("fio", ("fio", "--version")),
    # The rest of fslab's tools, not the targets' (`OTHER_TOOLS`).
    "bpftrace": ("bpftrace", ("bpftrace", "--version")),
    "strace": ("strace", ("strace", "-V")),
    "initdb": ("postgresql", None),
    "chromium": ("chromium", ("chromium", "--version")),
    "chromedriver": ("chromium-driver", ("chromedriver", "--version")),
    "rsync": ("rsync", ("rsync", "--version")),
    "fdupes": ("fdupes", ("fdupes", "--version")),
}
OTHER_TOOLS = frozenset(
    {"bpftrace", "strace", "initdb", "chromium", "chromedriver", "rsync", "fdupes"}
)
"""Tools of `fslab record` (bpftrace, strace), pgbench (PostgreSQL: Debian keeps its
programs off PATH, `apps.postgres.find_postgres` finds them), the browser tests and
bench/: in `TOOLS` for their packages, left out of `System.probe` and of the record
(bpftrace and chromium take half a second to say their versions)."""
# What reading the results back needs, per file system (`effective`).
INSPECT_TOOL = {n: f.inspect for n, f in FAMILIES.items()}
# What names a file system after mkfs, where mkfs cannot (`mkfs.name_argv`).
NAME_TOOL = {"serial64": "ntfslabel", "serial32": "tune.exfat"}

# Kernel options that decide what works; read from /proc/config.gz when the kernel has it.
CONFIG_KEYS = (
    "XFS_SUPPORT_V4",
    "BTRFS_EXPERIMENTAL",
    "FS_ENCRYPTION",
    "BLK_INLINE_ENCRYPTION",
    "BLK_DEV_WRITE_MOUNTED",
    "BLK_DEV_MD",
    "BLK_DEV_DM",
    "FTRACE_SYSCALLS",
)

# xfs mounts blocks larger than the page size from Linux 6.12 on ("large block size"
# support). Measured here on 6.18 with a 4 KiB page: 8, 16 and 64 KiB blocks mount.
XFS_LARGE_BLOCKS_SINCE = (6, 12)

_VERSION_RE = re.compile(r"\d+(?:\.\d+)+")


@dataclass(frozen=True)
class System:
    """The machine as provisioning sees it, probed once (`System.probe()`)."""

    kernel: str
    page_size: int
    filesystems: frozenset[str]
    """File systems the kernel has: listed in /proc/filesystems or built as a module."""
    has_md: bool
    has_device_mapper: bool
    has_loop: bool
    is_root: bool
    tools: Mapping[str, str | None] = field(hash=False)
    """tool -> full path, or None when missing."""
    versions: Mapping[str, str | None] = field(hash=False)
    """tool -> version (`1.47.0`), or None when missing or unknown."""
    kernel_config: Mapping[str, bool] | None = field(hash=False, default=None)
    """Selected CONFIG_ options (`CONFIG_KEYS`), or None when the config is unreadable."""
    ext4_encryption: bool = False
    """ext4 can encrypt (/sys/fs/ext4/features/encryption)."""
    btrfs_sectorsizes: tuple[int, ...] | None = None
    """Sector sizes this kernel's btrfs mounts (/sys/fs/btrfs/features), None if unknown."""
    dm_crypt: bool = False
    """The dm-crypt target is loaded (`dmsetup targets`) or built as a module."""
    md_personalities: frozenset[str] = frozenset()
    """md RAID levels the kernel runs: loaded (/proc/mdstat) or built as modules."""
    btrfs_features: frozenset[str] | None = None
    """What this kernel's btrfs offers (/sys/fs/btrfs/features: `raid56`, `raid1c34`,
    ...), None when btrfs is not loaded yet (its first mount loads it)."""

    @classmethod
    def probe(cls) -> System:
        release = os.uname().release
        tools = {name: which(name) for name in TOOLS if name not in OTHER_TOOLS}
        versions = {name: tool_version(name, path) for name, path in tools.items()}
        # Tools without a version flag have their package's version (tune2fs: e2fsprogs).
        by_package = {TOOLS[n][0]: v for n, v in versions.items() if v is not None}
        for name, path in tools.items():
            if path is not None and versions[name] is None:
                versions[name] = by_package.get(TOOLS[name][0])
        return cls(
            kernel=release,
            page_size=os.sysconf("SC_PAGE_SIZE"),
            filesystems=_filesystems(release),
            has_md=Path("/proc/mdstat").exists(),
            has_device_mapper=_has_device_mapper(release),
            has_loop=Path("/dev/loop-control").exists(),
            is_root=os.geteuid() == 0,
            tools=tools,
            versions=versions,
            kernel_config=_kernel_config(release),
            ext4_encryption=Path("/sys/fs/ext4/features/encryption").exists(),
            btrfs_sectorsizes=_btrfs_sectorsizes(),
            dm_crypt=_has_dm_crypt(release, tools.get("dmsetup")),
            md_personalities=_md_personalities(release),
            btrfs_features=_btrfs_features(),
        )

    @property
    def kernel_version(self) -> tuple[int, int]:
        m = re.match(r"(\d+)\.(\d+)", self.kernel)
        return (int(m.group(1)), int(m.group(2))) if m else (0, 0)

    def has_tool(self, name: str) -> bool:
        return self.tools.get(name) is not None

    def config(self, key: str) -> bool | None:
        """CONFIG_`key` is set (True), not set (False) or unknown (None)."""
        return None if self.kernel_config is None else self.kernel_config.get(key, False)

    def tool_versions(self) -> dict[str, str]:
        """Installed tools with their versions, for the record."""
        return {
            name: self.versions.get(name) or "unknown"
            for name, path in sorted(self.tools.items())
            if path is not None
        }


def tool_version(name: str, path: str | None) -> str | None:
    """The version of tool `name` (of `TOOLS`) installed at `path` (`1.47.0`), or None
    when it is missing or says none."""
    argv = TOOLS[name][1]
    if path is None or argv is None:
        return None
    try:
        proc = run([path, *argv[1:]], check=False, timeout=10)
    except Exception:
        return None
    m = _VERSION_RE.search(proc.stdout + proc.stderr)
    return m.group(0) if m else None


def _filesystems(release: str) -> frozenset[str]:
    names: set[str] = set()
    try:
        for line in Path("/proc/filesystems").read_text().splitlines():
            if line.strip():
                names.add(line.split()[-1])
    except OSError:
        pass
    modules = Path("/lib/modules") / release / "kernel" / "fs"
    for f in FAMILIES.values():
        # A module not loaded yet: mount loads it. (fuseblk's module is fs/fuse.)
        if (modules / ("fuse" if f.kernel == "fuseblk" else f.kernel)).is_dir():
            names.add(f.kernel)
    return frozenset(names)


def _kernel_config(release: str) -> dict[str, bool] | None:
    text: str | None = None
    try:
        with gzip.open("/proc/config.gz", "rt") as f:
            text = f.read()
    except OSError:
        try:
            text = (Path("/boot") / f"config-{release}").read_text()
        except OSError:
            return None
    found = {k: False for k in CONFIG_KEYS}
    for line in text.splitlines():
        m = re.match(r"CONFIG_(\w+)=([ym])", line)
        if m and m.group(1) in found:
            found[m.group(1)] = True
    return found


def _has_device_mapper(release: str) -> bool:
    """Device-mapper is in the kernel (/proc/misc lists it) or can be loaded (dm-mod).
    /dev/mapper/control proves nothing: installing dmsetup makes the node on a kernel
    without device-mapper (measured here: opening it fails with ENODEV)."""
    try:
        if "device-mapper" in Path("/proc/misc").read_text():
            return True
    except OSError:
        pass
    return any((Path("/lib/modules") / release / "kernel/drivers/md").glob("dm-mod.ko*"))


def _has_dm_crypt(release: str, dmsetup: str | None) -> bool:
    if any((Path("/lib/modules") / release / "kernel/drivers/md").glob("dm-crypt.ko*")):
        return True
    if dmsetup is None:
        return False
    try:
        proc = run([dmsetup, "targets"], check=False, timeout=10)
    except Exception:
        return False
    return "crypt" in layers.dm_targets(proc.stdout)


# md personalities by the module that provides them (drivers/md).
_MD_MODULES = {"raid0": ("raid0",), "raid1": ("raid1",), "raid10": ("raid10",),
               "raid456": ("raid4", "raid5", "raid6")}  # fmt: skip


def _md_personalities(release: str) -> frozenset[str]:
    found: set[str] = set()
    try:
        found |= layers.personalities(Path("/proc/mdstat").read_text())
    except OSError:
        return frozenset()  # no md in the kernel: its modules cannot load either
    md = Path("/lib/modules") / release / "kernel/drivers/md"
    for module, levels in _MD_MODULES.items():
        if any(md.glob(f"{module}.ko*")):
            found.update(levels)
    return frozenset(found)


# btrfs profiles that older kernels lack: the /sys/fs/btrfs/features entry that says the
# kernel has them, and the release that brought it (for a btrfs not loaded yet).
BTRFS_PROFILE_FEATURE = {
    "raid5": ("raid56", (3, 9)),
    "raid6": ("raid56", (3, 9)),
    "raid1c3": ("raid1c34", (5, 5)),
    "raid1c4": ("raid1c34", (5, 5)),
}


def btrfs_has_profile(system: System, profile: str) -> bool | None:
    """Whether this kernel's btrfs makes `profile`: from /sys/fs/btrfs/features once btrfs
    is loaded, else from the kernel's release; None when neither tells."""
    if profile not in BTRFS_PROFILE_FEATURE:
        return True
    feature, since = BTRFS_PROFILE_FEATURE[profile]
    if system.btrfs_features is not None:
        return feature in system.btrfs_features
    return None if system.kernel_version == (0, 0) else system.kernel_version >= since


def _btrfs_features() -> frozenset[str] | None:
    try:
        return frozenset(p.name for p in Path("/sys/fs/btrfs/features").iterdir())
    except OSError:
        return None


def _btrfs_sectorsizes() -> tuple[int, ...] | None:
    try:
        text = Path("/sys/fs/btrfs/features/supported_sectorsizes").read_text()
    except OSError:
        return None
    return tuple(int(x) for x in text.split() if x.isdigit())


# --------------------------------------------------------------------------- checks


def block_size_problem(fs: str, size: int, system: System, *, checksums: bool | None) -> str | None:
    """Why `size` cannot be `fs`'s block size here (mkfs's range, then what the kernel
    mounts), or None."""
    return _mkfs_block_size_problem(fs, size, checksums=checksums) or kernel_block_size_problem(
        fs, size, system
    )


def _mkfs_block_size_problem(fs: str, size: int, *, checksums: bool | None) -> str | None:
    low, high = MKFS_BLOCK_SIZES[fs]
    if fs == "xfs" and checksums is not False:
        low = 1024  # V5 (crc=1) needs 1 KiB blocks at least
    if not is_power_of_two(size) or not low <= size <= high:
        return f"{fs} takes a power of two from {format_bytes(low)} to {format_bytes(high)}" + (
            " (512 B only without checksums, V4)" if fs == "xfs" and low == 1024 else ""
        )
    return None


def kernel_block_size_problem(fs: str, size: int, system: System) -> str | None:
    """Why this kernel does not mount `fs` with blocks of `size` (one mkfs makes), or
    None."""
    page = system.page_size
    if fs == "ext4" and size > page:
        # Measured on 6.18: mke2fs makes a 64 KiB-block ext4, the kernel refuses to
        # mount it ("bad block size"). ext4 blocks above the page size are newer.
        return (
            f"this kernel mounts ext4 only with blocks up to the page size ({format_bytes(page)})"
        )
    if fs == "xfs" and size > page and system.kernel_version < XFS_LARGE_BLOCKS_SINCE:
        return (
            f"xfs blocks above the page size ({format_bytes(page)}) need Linux 6.12 or "
            f"newer; this is {system.kernel}"
        )
    if fs == "btrfs":
        sizes = system.btrfs_sectorsizes or (page,)
        if size not in sizes:
            return (
                f"this kernel's btrfs mounts sector sizes {', '.join(map(format_bytes, sizes))} "
                f"only (/sys/fs/btrfs/features/supported_sectorsizes; larger ones need "
                f"CONFIG_BTRFS_EXPERIMENTAL)"
            )
    return None


DOCTOR_HINT = "`fslab doctor` lists what this machine has and lacks"
"""The hint of a problem that is this machine's, not the study's (`TargetProblem.machine`)."""


class TargetProblem(NamedTuple):
    """One reason a target cannot be made here (`keyed_check`)."""

    key: str | None
    """The target's key at fault (`loop.size`, `block_size`, ...), None when the sentence
    is about this machine only (root, a tool)."""
    message: str
    machine: bool = False
    """This machine lacks what the target needs (root, a tool, a kernel feature): the
    study is right, and runs where those are (`DOCTOR_HINT`)."""


def family_tools(fs: str) -> list[str]:
    """The tools making, mounting and reading back a file system of family `fs` needs."""
    fam = FAMILIES[fs]
    wanted = [MKFS_TOOL[fs], INSPECT_TOOL[fs], "mount", "umount"]
    return wanted + [t for t in (fam.mount_tool, NAME_TOOL.get(fam.uuid)) if t is not None]


def check(spec: TargetSpec, system: System, scale: float = 1.0) -> list[str]:
    """Every reason `spec` cannot be provisioned on `system`, as sentences naming the key
    at fault; empty when it can. No side effects. What the safety gate says about a
    `device` target's devices is apart: `gate.refusals`."""
    return [p.message for p in keyed_check(spec, system, scale)]


def keyed_check(spec: TargetSpec, system: System, scale: float = 1.0) -> list[TargetProblem]:
    """`check`, each problem with the target's key at fault, so that a study can say at
    which line, and whether it is what this machine lacks."""
    who = f"target `{spec.name}`"
    problems: list[TargetProblem] = []

    def add(key: str | None, msg: str, *, machine: bool = False) -> None:
        problems.append(TargetProblem(key, msg, machine))

    if spec.dir is not None:
        path = Path(spec.dir)
        if not path.exists():
            add("dir", f"{who}: `dir = {spec.dir!r}` does not exist; create it first")
        elif not path.is_dir():
            add("dir", f"{who}: `dir = {spec.dir!r}` is not a directory")
        elif not os.access(path, os.W_OK | os.X_OK):
            add("dir", f"{who}: `dir = {spec.dir!r}` is not writable by this user")
        return problems

    fs = spec.fs
    assert fs is not None  # the model requires `fs` unless `dir` is given
    if not system.is_root:
        add(
            None,
            f"{who}: making a file system needs root (losetup, mkfs, mount); run fslab as "
            f"root, or use a `dir` target",
            machine=True,
        )
    fam = FAMILIES[fs]
    if fam.kernel not in system.filesystems:
        add(
            "fs",
            f"{who}: `fs = {fs!r}` needs {fam.kernel} in the kernel ({fam.kernel_config}), "
            f"and this kernel ({system.kernel}) has none (not in /proc/filesystems, no "
            f"module); run the study on a kernel built with it, or choose another `fs`",
            machine=True,
        )
    for tool in family_tools(fs):
        if not system.has_tool(tool):
            add(
                None,
                f"{who}: `{tool}` is not installed; install {TOOLS[tool][0]} (`make setup` does)",
                machine=True,
            )

    loop = spec.effective_loop
    if loop is not None:
        if not system.has_loop:
            add(
                "loop",
                f"{who}: loop devices are not available (no /dev/loop-control); load the "
                f"`loop` module or name real devices with `device`",
                machine=True,
            )
        if not system.has_tool("losetup"):
            add(None, f"{who}: `losetup` is not installed; install util-linux", machine=True)
        minimum = MIN_DEVICE_BYTES[fs]
        size = loop_image_size(spec, scale)
        if size < minimum:
            add(
                "loop.size",
                f"{who}: `loop.size = {loop.size!r}` is below the {format_bytes(minimum)} "
                f"{fs} needs per device",
            )

    if spec.block_size is not None:
        size = parse_size(spec.block_size)
        why = _mkfs_block_size_problem(fs, size, checksums=spec.checksums)
        kernel_why = None if why else kernel_block_size_problem(fs, size, system)
        if why or kernel_why:
            add(
                "block_size",
                f"{who}: `block_size = {spec.block_size!r}` cannot be used: {why or kernel_why}",
                machine=kernel_why is not None,
            )
    if spec.cluster_size is not None and fam.cluster_sizes is not None and fs != "ext4":
        cluster = parse_size(spec.cluster_size)
        low, high = fam.cluster_sizes
        if not is_power_of_two(cluster) or not low <= cluster <= high:
            add(
                "cluster_size",
                f"{who}: `cluster_size = {spec.cluster_size!r}` cannot be used: {fs} takes a "
                f"power of two from {format_bytes(low)} to {format_bytes(high)}",
            )
    elif spec.cluster_size is not None:
        cluster = parse_size(spec.cluster_size)
        block = parse_size(spec.block_size) if spec.block_size is not None else 4096
        if not is_power_of_two(cluster) or cluster <= block:
            add(
                "cluster_size",
                f"{who}: `cluster_size = {spec.cluster_size!r}` must be a power of two larger "
                f"than the block size ({format_bytes(block)})",
            )
        elif cluster > block * EXT4_MAX_CLUSTER_RATIO:
            add(
                "cluster_size",
                f"{who}: `cluster_size = {spec.cluster_size!r}` is above {EXT4_MAX_CLUSTER_RATIO}"
                f" blocks, the most mke2fs takes",
            )

    if fs == "xfs" and spec.checksums is False and system.config("XFS_SUPPORT_V4") is False:
        add(
            "checksums",
            f"{who}: `checksums = false` on xfs means the old V4 format (`-m crc=0`), which "
            f"this kernel cannot mount (CONFIG_XFS_SUPPORT_V4 is off); xfs V5 always "
            f"checksums its metadata: leave `checksums` out, or compare checksums on ext4 "
            f"(metadata_csum) or btrfs (nodatasum)",
            machine=True,
        )

    if fs == "btrfs":
        for setting in ("profile", "metadata_profile"):
            profile = getattr(spec, setting)
            if profile is not None and btrfs_has_profile(system, profile) is False:
                feature = BTRFS_PROFILE_FEATURE[profile][0]
                add(
                    setting,
                    f"{who}: `{setting} = {profile!r}` needs btrfs's {feature} feature, which this "
                    f"kernel ({system.kernel}) lacks (/sys/fs/btrfs/features); choose another "
                    f"profile, or run the study on a newer kernel",
                    machine=True,
                )

    if spec.encryption == "dm-crypt" and (why := _dm_crypt_problem(system, who)):
        add("encryption", why, machine=True)
    if spec.raid is not None and spec.device is not None:
        # Undo stops an array only when every member is provably fslab's, which for a
        # real device is not built yet (a loop over fslab's image is).
        add(
            "raid",
            f"{who}: `raid = {str(spec.raid)!r}` is built on loop devices only; name no "
            f"`device`, or let the devices' own RAID do it",
        )
    elif spec.raid is not None and (why := _md_problem(spec, system, who)):
        add("raid", why, machine=True)
    if spec.lvm is not None and spec.device is not None:
        add("lvm", f"{who}: `lvm = {spec.lvm!r}` is built on loop devices only; name no `device`")
    elif spec.lvm is not None and (why := _lvm_problem(spec, system, who)):
        add("lvm", why, machine=True)
    if spec.encryption == "fscrypt" and (
        not system.ext4_encryption or system.config("FS_ENCRYPTION") is False
    ):
        add(
            "encryption",
            f'{who}: `encryption = "fscrypt"` needs ext4 encryption in the kernel '
            f"(CONFIG_FS_ENCRYPTION; /sys/fs/ext4/features/encryption is missing)",
            machine=True,
        )

    if spec.scheduler is not None and (why := _scheduler_problem(spec, who)):
        add("scheduler", why, machine=True)

    if spec.device is not None:
        seen: dict[int | str, str] = {}
        for dev in spec.device:
            # The same device under two names (a symlink, another node) is caught by number.
            key: int | str = block_rdev(dev) or os.path.realpath(dev)
            if key in seen:
                add(
                    "device",
                    f"{who}: `device` names one device twice ({seen[key]!r} and {dev!r} are "
                    f"{os.path.realpath(dev)}); name each device once",
                )
            seen.setdefault(key, dev)
            dev_size = gate.device_size(dev)
            if dev_size is not None and dev_size < MIN_DEVICE_BYTES[fs]:
                add(
                    "device",
                    f"{who}: `device` {dev!r} holds {format_bytes(dev_size)}, below the "
                    f"{format_bytes(MIN_DEVICE_BYTES[fs])} {fs} needs",
                )
        if not system.has_tool("wipefs"):
            add(None, f"{who}: `wipefs` is not installed (the safety gate needs it)", machine=True)
    for m in dict.fromkeys(mkfs_problems(spec)):
        add("mkfs_args", f"{who}: {m}")
    for m in dict.fromkeys(mount_problems(spec)):
        add("mount_options", f"{who}: {m}")
    return problems


def _dm_crypt_problem(system: System, who: str) -> str | None:
    """Why a dm-crypt target cannot be made here (what is missing), or None."""
    missing = []
    if not system.has_device_mapper:
        missing.append("device-mapper (CONFIG_BLK_DEV_DM; not in /proc/misc)")
    if not system.dm_crypt:
        missing.append("the dm-crypt target (CONFIG_DM_CRYPT)")
    if not system.has_tool("cryptsetup"):
        missing.append("cryptsetup (install cryptsetup-bin)")
    if missing:
        return (
            f'{who}: `encryption = "dm-crypt"` needs {", ".join(missing)}, which this '
            f'machine lacks; use `encryption = "fscrypt"` on ext4'
        )
    return None


def _md_problem(spec: TargetSpec, system: System, who: str) -> str | None:
    """Why an md RAID target cannot be made here (what is missing), or None."""
    level = str(spec.raid)
    missing = []
    if not system.has_md:
        missing.append("md RAID (CONFIG_BLK_DEV_MD; no /proc/mdstat)")
    elif level not in system.md_personalities:
        module = "raid456" if level in ("raid4", "raid5", "raid6") else level
        missing.append(f"the {level} personality (CONFIG_MD_{module.upper()}, module {module})")
    if not system.has_tool("mdadm"):
        missing.append("mdadm (install mdadm)")
    if missing:
        return (
            f"{who}: `raid = {level!r}` needs {', '.join(missing)}, which this machine lacks; "
            f'btrfs spans devices itself (`fs = "btrfs"` with a `profile`)'
        )
    return None


def _lvm_problem(spec: TargetSpec, system: System, who: str) -> str | None:
    """Why an LVM target cannot be made here (what is missing), or None."""
    missing = []
    if not system.has_device_mapper:
        missing.append("device-mapper (CONFIG_BLK_DEV_DM; not in /proc/misc)")
    if not system.has_tool("lvm"):
        missing.append("the LVM tools (install lvm2)")
    if missing:
        return f"{who}: `lvm = {spec.lvm!r}` needs {', '.join(missing)}, which this machine lacks"
    return None


def _scheduler_problem(spec: TargetSpec, who: str) -> str | None:
    """Why `scheduler` cannot be set on the target's devices here, or None."""
    name = spec.scheduler
    assert name is not None
    # Loop devices all get the loop driver's offer; none attached yet: provision tells.
    offers = (
        [(dev, scheduler.read(dev)[0]) for dev in spec.device]
        if spec.device is not None
        else [("loop devices", o)]
        if (o := scheduler.offered_for_loop())
        else []
    )
    for where, offered in offers:
        if name not in offered:
            return (
                f"{who}: `scheduler = {name!r}`: the kernel offers {where} "
                f"{' '.join(offered) or 'no scheduler'}; load its module "
                f"(`modprobe {scheduler.MODULES.get(name, name)}`) or choose one of those"
            )
    return None
