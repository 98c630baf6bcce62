"""`fslab doctor`: what this machine can and cannot do for fslab, one finding per part
(root, loop devices and direct I/O, each file system and its features, encryption,
multi-device layers, io_uring, eBPF, PostgreSQL, MPI, the reference and test tools).

Each finding is `ok`, `limited` (it works, with less than fslab can use) or `missing`,
with what it affects and, where something is missing, what fixes it (the Debian packages
come from `targets.system.TOOLS`, the one table of them). The machine is read through
`targets.system.System`, the same snapshot `fslab plan` checks targets against.

Probing changes nothing: it reads /proc and /sys, asks tools their versions, runs the
engine on two tiny jobs (the null backend, then io_uring on a file in a temporary
directory), opens a temporary file with O_DIRECT where the work directory is, and, as
root, loads an eBPF program that exits at once. Every temporary file is removed; nothing
is mounted and no loop device is attached. The slow probes run side by side (about half
a second in all on the project's VM).
"""

from __future__ import annotations

import contextlib
import json
import mmap
import os
import platform
import pwd
import re
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from fslab import __version__
from fslab.errors import EngineError, FslabError
from fslab.targets._proc import which
from fslab.targets.families import FAMILIES
from fslab.targets.mkfs import MKFS_BLOCK_SIZES
from fslab.targets.mount import mount_containing, mountinfo
from fslab.targets.spec import BTRFS_PROFILES
from fslab.targets.system import (
    BTRFS_PROFILE_FEATURE,
    TOOLS,
    System,
    btrfs_has_profile,
    family_tools,
    kernel_block_size_problem,
    tool_version,
)
from fslab.targets.workdir import RAM_FS, nearest_existing
from fslab.units import format_bytes

SCHEMA_VERSION = 1
"""The version of `--format json`'s document (`schema_version`). Adding a finding or a
key keeps it; renaming or removing one, or changing a key's meaning, raises it."""

Status = Literal["ok", "limited", "missing"]
STATUSES: tuple[Status, ...] = ("ok", "limited", "missing")

SECTIONS = (
    "fslab",
    "privileges",
    "loop devices",
    "file systems",
    "encryption",
    "multi-device",
    "I/O",
    "recording",
    "applications",
    "tests and bench",
)
"""The sections, in the order they are shown."""

CORE = ("root", "loop driver", "losetup", "ext4", "fslab-engine")
"""The findings fslab's core needs (a file system made on a loop device, measured by the
engine): one of them missing makes `fslab doctor` exit 1."""

_PROBE_TIMEOUT_S = 10.0
_BLOCK = 4096
"""What the O_DIRECT probe writes and reads: one page, page-aligned."""
# `losetup --direct-io` came with util-linux 2.30.
_LOSETUP_DIRECT_IO_SINCE = (2, 30)
# io_uring_disabled (Linux 6.6+): 0 on, 1 only for root and io_uring_group, 2 off.
_IO_URING_SYSCTL = Path("/proc/sys/kernel/io_uring_disabled")


@dataclass(frozen=True)
class Finding:
    """One thing fslab may need, and how this machine stands with it."""

    section: str
    name: str
    """Stable within a schema version: `root`, `ext4`, `xfs large blocks`, `io_uring`."""
    status: Status
    detail: str
    """What was found, in a sentence."""
    affects: str | None = None
    """What fslab cannot do, or does less well, while this is not `ok`."""
    fix: str | None = None
    """What to do about it."""
    packages: tuple[str, ...] = ()
    """The Debian packages that fix it, when packages do."""
    core: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "section": self.section,
            "name": self.name,
            "status": self.status,
            "core": self.core,
            "detail": self.detail,
            "affects": self.affects,
            "fix": self.fix,
            "packages": list(self.packages),
        }


@dataclass(frozen=True)
class Engine:
    path: Path | None
    version: str | None
    runs: bool
    """It ran a job (the null backend) and printed a report."""
    said: str | None = None
    """Why it could not be found or run."""
    hint: str | None = None


@dataclass(frozen=True)
class Diagnosis:
    findings: tuple[Finding, ...]
    system: System
    engine: Engine
    workdir: Path
    """The work directory whose file system the direct I/O finding is about."""

    @property
    def core_missing(self) -> list[str]:
        return [f.name for f in self.findings if f.core and f.status == "missing"]

    @property
    def ready(self) -> bool:
        """Everything fslab's core needs (`CORE`) is here."""
        return not self.core_missing

    def counts(self) -> dict[str, int]:
        return {s: sum(f.status == s for f in self.findings) for s in STATUSES}

    def as_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "fslab": __version__,
            "engine": {
                "path": str(self.engine.path) if self.engine.path else None,
                "version": self.engine.version,
            },
            "kernel": self.system.kernel,
            "machine": platform.machine(),
            "root": self.system.is_root,
            "workdir": str(self.workdir),
            "ready": self.ready,
            "core": list(CORE),
            "core_missing": self.core_missing,
            "counts": self.counts(),
            "findings": [f.as_dict() for f in self.findings],
        }

    def to_json(self) -> str:
        return json.dumps(self.as_json(), indent=2)


def diagnose(workdir: Path, system: System | None = None) -> Diagnosis:
    """Every finding about this machine, `workdir` being where loop images would go.
    Raises nothing for what is missing: that is a finding."""
    with ThreadPoolExecutor(max_workers=8) as pool:
        probed = pool.submit(System.probe) if system is None else None
        engine_f = pool.submit(_engine)
        direct_f = pool.submit(_direct_io, workdir)
        ebpf_f = pool.submit(_ebpf)
        pg_f = pool.submit(_postgres)
        mpi_f = pool.submit(_mpi)
        others_f = pool.submit(_other_tools)
        engine = engine_f.result()
        uring_f = pool.submit(_io_uring, engine)
        snap = probed.result() if probed is not None else system
        assert snap is not None
        tools = others_f.result()
        findings = [
            *_fslab(engine),
            _root(snap),
            *_loop(snap, direct_f.result()),
            *_filesystems(snap),
            *_encryption(snap),
            *_multi_device(snap),
            uring_f.result(),
            *_recording(snap, ebpf_f.result(), tools),
            pg_f.result(),
            mpi_f.result(),
            *_test_tools(snap, tools),
        ]
    return Diagnosis(tuple(findings), snap, engine, workdir)


# --------------------------------------------------------------------------- probes


def _run(argv: list[str], stdin: str | None = None) -> subprocess.CompletedProcess[str] | None:
    """`argv`'s outcome, or None when it could not start or took too long."""
    try:
        return subprocess.run(
            argv,
            input=stdin,
            stdin=None if stdin is not None else subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=_PROBE_TIMEOUT_S,
            check=False,
            env={**os.environ, "LC_ALL": "C"},
        )
    except (OSError, subprocess.TimeoutExpired):
        return None


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1].removeprefix("error: ") if lines else ""


def _engine() -> Engine:
    from fslab.engine.find import find_engine

    try:
        path = find_engine()
    except EngineError as e:
        return Engine(None, None, False, e.message, e.hint)
    done = _run([str(path), "--version"])
    if done is None or done.returncode != 0:
        why = _last_line(done.stderr) if done else "it did not start"
        return Engine(path, None, False, f"`{path} --version` failed: {why}")
    version = done.stdout.strip().removeprefix("fslab-engine").strip() or None
    with tempfile.TemporaryDirectory(prefix="fslab-doctor-") as tmp:
        # The null backend does no I/O: this is the engine alone, job in, report out.
        job = _job(Path(tmp) / "null", ioengine="null")
        ran = _run([str(path), "run", "-"], stdin=json.dumps(job))
    if ran is None or ran.returncode != 0:
        why = _last_line(ran.stderr) if ran else "it did not finish"
        return Engine(path, version, False, f"it did not run a job: {why}")
    return Engine(path, version, True)


def _job(filename: Path, *, ioengine: str) -> dict[str, Any]:
    return {
        "kind": "block", "ioengine": ioengine, "filename": str(filename), "size": "64KiB",
        "bs": "4KiB", "rw": "read", "number_ios": 16, "direct": False,
    }  # fmt: skip


@dataclass(frozen=True)
class _DirectIo:
    workdir: Path
    where: Path
    """The work directory, or its nearest parent that exists: where the file was made."""
    fstype: str | None
    error: str | None
    """Why O_DIRECT failed there (None: it worked)."""
    tested: bool


def _direct_io(workdir: Path) -> _DirectIo:
    """Whether a file in the work directory (or the directory that would hold it) can be
    opened, written and read with O_DIRECT: what the loop driver's direct I/O needs of
    its backing file. The file is removed at once."""
    workdir = Path(os.path.realpath(workdir))
    where = nearest_existing(workdir)
    m = mount_containing(where)
    fstype = m.fstype if m is not None else None
    try:
        fd, name = tempfile.mkstemp(prefix=".fslab-doctor-", dir=where)
    except OSError as e:
        return _DirectIo(workdir, where, fstype, f"cannot make a file ({e.strerror})", False)
    try:
        os.close(fd)
        return _DirectIo(workdir, where, fstype, _o_direct(Path(name)), True)
    finally:
        with contextlib.suppress(OSError):
            Path(name).unlink()


def _o_direct(path: Path) -> str | None:
    """Why one page cannot be written to and read from `path` with O_DIRECT, or None."""
    with mmap.mmap(-1, _BLOCK) as buf:  # page-aligned, as O_DIRECT wants
        buf.write(b"fslab doctor\n".ljust(_BLOCK, b"\0"))
        try:
            fd = os.open(path, os.O_RDWR | os.O_DIRECT | os.O_CLOEXEC)
        except OSError as e:
            return f"O_DIRECT open: {e.strerror}"
        try:
            os.pwritev(fd, [buf], 0)
            os.preadv(fd, [buf], 0)
        except OSError as e:
            return f"O_DIRECT I/O: {e.strerror}"
        finally:
            os.close(fd)
    return None


def _ebpf() -> tuple[str | None, str | None]:
    """(why eBPF cannot record here or None, bpftrace's version). A program that exits
    at once is loaded and run: bpftrace may be there and the kernel refuse it."""
    from fslab.record.ebpf import unavailable

    path = which("bpftrace")
    version = tool_version("bpftrace", path)
    why = unavailable()
    if why is not None:
        return why, version
    done = _run([str(path), "-e", "BEGIN { exit(); }"])
    if done is None or done.returncode != 0:
        said = _last_line(done.stderr) if done else "it did not finish"
        return f"bpftrace could not run a program: {said}", version
    return None, version


def _other_tools() -> dict[str, tuple[str | None, str | None]]:
    """`targets.system.OTHER_TOOLS` that doctor reports: tool -> (path, version)."""
    names = ("strace", "chromium", "chromedriver", "rsync", "fdupes")
    found = {n: which(n) for n in names}
    return {n: (p, tool_version(n, p)) for n, p in found.items()}


# --------------------------------------------------------------------------- findings


def _install(*packages: str) -> str:
    return f"apt-get install {' '.join(packages)}"


def _tool_gap(system: System, tool: str, lacks: list[str], fixes: list[str]) -> tuple[str, ...]:
    """Where `tool` is missing, its line in `lacks` and its install in `fixes`; the
    package that brings it (none where it is there)."""
    if system.has_tool(tool):
        return ()
    packages = (TOOLS[tool][0],)
    lacks.append(f"`{tool}` not installed")
    fixes.append(_install(*packages))
    return packages


def _fslab(engine: Engine) -> list[Finding]:
    here = Path(__file__).resolve().parent
    out = [
        Finding(
            "fslab", "fslab", "ok",
            f"{__version__}, Python {platform.python_version()}, at {here}",
        ),
    ]  # fmt: skip
    if engine.path is None:
        out.append(Finding(
            "fslab", "fslab-engine", "missing", engine.said or "not found",
            affects="every workload: the engine runs the jobs",
            fix=engine.hint, core=True,
        ))  # fmt: skip
    elif not engine.runs:
        out.append(Finding(
            "fslab", "fslab-engine", "missing", f"{engine.path}: {engine.said}",
            affects="every workload: the engine runs the jobs",
            fix="rebuild it: `make setup` in the fslab repository", core=True,
        ))  # fmt: skip
    else:
        how = " ($FSLAB_ENGINE)" if os.environ.get("FSLAB_ENGINE") else ""
        out.append(Finding(
            "fslab", "fslab-engine", "ok",
            f"{engine.version or 'unknown version'} at {engine.path}{how}; runs a job",
            core=True,
        ))  # fmt: skip
    return out


def _root(system: System) -> Finding:
    if system.is_root:
        return Finding("privileges", "root", "ok", "running as root", core=True)
    try:
        user = pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        user = f"uid {os.geteuid()}"
    return Finding(
        "privileges", "root", "missing", f"running as {user}, not root",
        affects="making file systems (losetup, mkfs, mount), dropping the page cache "
        "before a run, integrity workloads, eBPF recording; without root only `dir` "
        "targets run",
        fix="run fslab as root (`sudo fslab ...`)", core=True,
    )  # fmt: skip


def _version_tuple(text: str | None) -> tuple[int, ...]:
    if not text:
        return ()
    try:
        return tuple(int(x) for x in text.split(".")[:2])
    except ValueError:
        return ()


def _loop(system: System, direct: _DirectIo) -> list[Finding]:
    out: list[Finding] = []
    attached = sum(1 for p in Path("/sys/block").glob("loop*/loop/backing_file"))
    loaded = Path("/sys/module/loop").is_dir()  # built in, or its module loaded
    if system.has_loop:
        there = (
            "the loop driver and /dev/loop-control are there" if loaded
            else "/dev/loop-control is there"
        )  # fmt: skip
        out.append(Finding(
            "loop devices", "loop driver", "ok",
            f"{there}; {attached} loop device(s) attached now",
            core=True,
        ))  # fmt: skip
    else:
        out.append(Finding(
            "loop devices", "loop driver", "missing", "no /dev/loop-control",
            affects="loop targets (the default: image files on loop devices); only `dir` "
            "and `device` targets run",
            fix="`modprobe loop`, or a kernel with CONFIG_BLK_DEV_LOOP", core=True,
        ))  # fmt: skip
    losetup = system.tools.get("losetup")
    version = system.versions.get("losetup")
    if losetup is None:
        out.append(Finding(
            "loop devices", "losetup", "missing", "`losetup` is not installed",
            affects="loop targets", fix=_install(TOOLS["losetup"][0]),
            packages=(TOOLS["losetup"][0],), core=True,
        ))  # fmt: skip
    elif _version_tuple(version) and _version_tuple(version) < _LOSETUP_DIRECT_IO_SINCE:
        out.append(Finding(
            "loop devices", "losetup", "limited",
            f"util-linux {version} at {losetup} has no --direct-io (2.30 and newer)",
            affects="`loop.direct_io`: loop devices go through the host's page cache",
            fix="a newer util-linux", packages=(TOOLS["losetup"][0],), core=True,
        ))  # fmt: skip
    else:
        out.append(Finding(
            "loop devices", "losetup", "ok",
            f"util-linux {version or '(unknown version)'} at {losetup}, with --direct-io",
            core=True,
        ))  # fmt: skip
    fstype = direct.fstype or "an unknown file system"
    on = f"{fstype} at {direct.where}"
    if direct.where != direct.workdir:
        on += f" (where the work directory {direct.workdir} would be made)"
    name = "direct I/O"
    if direct.fstype in RAM_FS:
        out.append(Finding(
            "loop devices", name, "limited",
            f"the work directory {direct.workdir} is on {direct.fstype} (memory): loop "
            "images there measure RAM, not a disk",
            affects="loop targets in this work directory (`fslab plan` refuses them "
            "without --force)",
            fix="give a --workdir on a disk file system (ext4, xfs)",
        ))  # fmt: skip
    elif direct.error is None:
        out.append(Finding(
            "loop devices", name, "ok",
            f"O_DIRECT works on {on}: loop devices over images there bypass the host's "
            "page cache",
        ))  # fmt: skip
    else:
        out.append(Finding(
            "loop devices", name, "limited",
            f"{'' if direct.tested else 'not tested: '}{direct.error} on {on}",
            affects="loop devices with direct I/O (`loop.direct_io`, the default): without "
            "it their results include the host's page cache",
            fix="give a --workdir on a file system with O_DIRECT (ext4, xfs, btrfs)"
            if direct.tested else "run it as a user who may write there, or give --workdir",
        ))  # fmt: skip
    return out


def _filesystems(system: System) -> list[Finding]:
    out: list[Finding] = []
    page = system.page_size
    for name, fam in FAMILIES.items():
        kernel = fam.kernel in system.filesystems
        missing = [t for t in family_tools(name) if not system.has_tool(t)]
        packages = tuple(dict.fromkeys(TOOLS[t][0] for t in missing))
        version = system.versions.get(fam.mkfs)
        title = "" if fam.title == name else f"{fam.title}: "
        tools = f"{fam.mkfs} {version}" if version else fam.mkfs
        affects = f'`fs = "{name}"` targets'
        if kernel and not missing:
            out.append(Finding(
                "file systems", name, "ok", f"{title}{tools} ({fam.package}), {fam.kernel} in "
                f"the kernel", core=name == "ext4",
            ))  # fmt: skip
        else:
            said, fixes = [], []
            if not kernel:
                said.append(f"the kernel has no {fam.kernel} ({fam.kernel_config})")
            if missing:
                said.append(f"{', '.join(f'`{t}`' for t in missing)} not installed")
                fixes.append(_install(*packages))
            else:
                said.append(f"{tools} is installed")
            if not kernel:
                fixes.append(f"a kernel with {fam.kernel_config} (built in or a module)")
            out.append(Finding(
                "file systems", name, "missing", title + "; ".join(said), affects=affects,
                fix="; ".join(fixes), packages=packages, core=name == "ext4",
            ))  # fmt: skip
            continue
        if name in ("ext4", "xfs", "btrfs"):
            out.append(_large_blocks(name, system))
        if name == "xfs":
            out.append(_xfs_v4(system))
        if name == "btrfs":
            out.append(_btrfs_profiles(system, page))
    return out


def _large_blocks(fs: str, system: System) -> Finding:
    largest = MKFS_BLOCK_SIZES[fs][1]
    page = format_bytes(system.page_size)
    why = kernel_block_size_problem(fs, largest, system)
    name = f"{fs} large blocks"
    if why is None:
        return Finding(
            "file systems", name, "ok",
            f"blocks up to {format_bytes(largest)}, above the {page} page (Linux "
            f"{system.kernel})",
        )  # fmt: skip
    fix = {
        "ext4": "`cluster_size` (bigalloc) gives ext4 allocation units up to 64KiB and more "
        "with page-sized blocks",
        "xfs": "Linux 6.12 or newer",
        "btrfs": "a kernel with CONFIG_BTRFS_EXPERIMENTAL",
    }[fs]
    return Finding(
        "file systems", name, "limited", why,
        affects=f"`block_size` above {page} on {fs}", fix=fix,
    )  # fmt: skip


def _xfs_v4(system: System) -> Finding:
    has = system.config("XFS_SUPPORT_V4")
    affects = "xfs `checksums = false` (the old V4 format, `-m crc=0`)"
    if has:
        return Finding("file systems", "xfs V4", "ok", "the kernel mounts V4 xfs")
    if has is None:
        return Finding(
            "file systems", "xfs V4", "limited",
            "cannot tell whether the kernel mounts V4 xfs (no /proc/config.gz or "
            "/boot/config-*)",
            affects=affects,
        )  # fmt: skip
    return Finding(
        "file systems", "xfs V4", "missing",
        "the kernel cannot mount V4 xfs (CONFIG_XFS_SUPPORT_V4 is off); V5 always "
        "checksums its metadata",
        affects=affects,
        fix="a kernel with CONFIG_XFS_SUPPORT_V4, or compare checksums on ext4 "
        "(metadata_csum) or btrfs (nodatasum)",
    )  # fmt: skip


def _btrfs_profiles(system: System, page: int) -> Finding:
    features = system.btrfs_features
    name = "btrfs profiles"
    affects = "btrfs `profile` across several devices (`loop.count`)"
    if features is None:
        always = [p for p in BTRFS_PROFILES if p not in BTRFS_PROFILE_FEATURE]
        return Finding(
            "file systems", name, "ok",
            f"{', '.join(always)}; raid5/6 and raid1c3/4 are known once btrfs is loaded "
            "(its first mount loads it)",
        )  # fmt: skip
    has = [p for p in BTRFS_PROFILES if btrfs_has_profile(system, p)]
    lacks = [p for p in BTRFS_PROFILES if p not in has]
    if not lacks:
        return Finding("file systems", name, "ok", ", ".join(has))
    return Finding(
        "file systems", name, "limited",
        f"{', '.join(has)}; not {', '.join(lacks)} (/sys/fs/btrfs/features)",
        affects=affects, fix="a newer kernel",
    )  # fmt: skip


def _encryption(system: System) -> list[Finding]:
    out: list[Finding] = []
    if system.ext4_encryption and system.config("FS_ENCRYPTION") is not False:
        out.append(Finding(
            "encryption", "fscrypt", "ok",
            "ext4 encryption in the kernel (/sys/fs/ext4/features/encryption); fslab "
            "uses the kernel's own calls, no `fscrypt` tool needed",
        ))  # fmt: skip
    else:
        out.append(Finding(
            "encryption", "fscrypt", "missing",
            "no ext4 encryption in the kernel (CONFIG_FS_ENCRYPTION; "
            "/sys/fs/ext4/features/encryption is missing)",
            affects='`encryption = "fscrypt"` targets',
            fix="a kernel with CONFIG_FS_ENCRYPTION",
        ))  # fmt: skip
    lacks: list[str] = []
    fixes: list[str] = []
    if not system.has_device_mapper:
        lacks.append("no device-mapper")
    elif not system.dm_crypt:
        lacks.append("no dm-crypt target")
    if not system.has_device_mapper or not system.dm_crypt:
        fixes.append("a kernel with CONFIG_BLK_DEV_DM and CONFIG_DM_CRYPT")
    packages = _tool_gap(system, "cryptsetup", lacks, fixes)
    if lacks:
        out.append(Finding(
            "encryption", "dm-crypt", "missing", "; ".join(lacks),
            affects='`encryption = "dm-crypt"` targets (`encryption = "fscrypt"` on ext4 '
            "encrypts without it)",
            fix="; ".join(fixes), packages=packages,
        ))  # fmt: skip
    else:
        version = system.versions.get("cryptsetup")
        out.append(Finding(
            "encryption", "dm-crypt", "ok", f"dm-crypt in the kernel; cryptsetup {version}"
        ))  # fmt: skip
    return out


def _multi_device(system: System) -> list[Finding]:
    out: list[Finding] = []
    dm_fix = "a kernel with CONFIG_BLK_DEV_DM"
    if system.has_device_mapper:
        out.append(Finding("multi-device", "device-mapper", "ok", "in the kernel"))
    else:
        out.append(Finding(
            "multi-device", "device-mapper", "missing",
            "not in this kernel (not in /proc/misc, no dm-mod module)"
            + ("; `dmsetup` is installed but has nothing to drive" if system.has_tool(
                "dmsetup") else ""),
            affects="dm-crypt and LVM targets", fix=dm_fix,
        ))  # fmt: skip
    md_lacks: list[str] = []
    md_fixes: list[str] = []
    if not system.has_md:
        md_lacks.append("no md RAID in the kernel (no /proc/mdstat)")
        md_fixes.append("a kernel with CONFIG_BLK_DEV_MD and its RAID levels")
    md_packages = _tool_gap(system, "mdadm", md_lacks, md_fixes)
    affects = "`raid` targets (md RAID on loop devices); btrfs `profile`s span devices without md"
    if md_lacks:
        out.append(Finding(
            "multi-device", "md RAID", "missing", "; ".join(md_lacks), affects=affects,
            fix="; ".join(md_fixes), packages=md_packages,
        ))  # fmt: skip
    else:
        levels = ", ".join(sorted(system.md_personalities)) or "none"
        status: Status = "ok" if system.md_personalities else "limited"
        out.append(Finding(
            "multi-device", "md RAID", status,
            f"levels {levels}; mdadm {system.versions.get('mdadm')}",
            affects=None if status == "ok" else affects,
            fix=None if status == "ok" else "load the RAID levels' modules (raid0, raid1, "
            "raid10, raid456)",
        ))  # fmt: skip
    lvm_lacks: list[str] = []
    lvm_fixes: list[str] = []
    if not system.has_device_mapper:
        lvm_lacks.append("no device-mapper")
        lvm_fixes.append(dm_fix)
    lvm_packages = _tool_gap(system, "lvm", lvm_lacks, lvm_fixes)
    if lvm_lacks:
        out.append(Finding(
            "multi-device", "LVM", "missing", "; ".join(lvm_lacks),
            affects="`lvm` targets", fix="; ".join(lvm_fixes), packages=lvm_packages,
        ))  # fmt: skip
    else:
        out.append(Finding(
            "multi-device", "LVM", "ok", f"lvm {system.versions.get('lvm')}"
        ))  # fmt: skip
    return out


def _io_uring(engine: Engine) -> Finding:
    try:
        setting = _IO_URING_SYSCTL.read_text().strip()
    except OSError:
        setting = None
    said = {
        "0": "enabled",
        "1": "only for root and the io_uring_group (kernel.io_uring_disabled = 1)",
        "2": "disabled (kernel.io_uring_disabled = 2)",
    }.get(setting or "", "no kernel.io_uring_disabled (before Linux 6.6: enabled)")
    affects = (
        'the engine\'s default backend (`ioengine = "io_uring"`), `iodepth` above 1 and '
        'the options only io_uring has; jobs still run with `ioengine = "sync"`'
    )
    fix = (
        "`sysctl kernel.io_uring_disabled=0`"
        if setting in ("1", "2")
        else "allow io_uring (a container's seccomp profile may block it), or run jobs "
        'with `ioengine = "sync"`'
    )
    if engine.path is None or not engine.runs:
        status: Status = "limited" if setting in ("1", "2") else "ok"
        return Finding(
            "I/O", "io_uring", status, f"{said}; the engine's io_uring backend was not "
            "tried (no engine that runs)",
            affects=None if status == "ok" else affects, fix=None if status == "ok" else fix,
        )  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="fslab-doctor-") as tmp:
        job = _job(Path(tmp) / "uring", ioengine="io_uring")
        done = _run([str(engine.path), "run", "-"], stdin=json.dumps(job))
    if done is not None and done.returncode == 0:
        return Finding("I/O", "io_uring", "ok", f"{said}; the engine's io_uring backend ran")
    why = _last_line(done.stderr) if done is not None else "it did not finish"
    return Finding(
        "I/O", "io_uring", "limited", f"{said}; the engine's io_uring backend failed: {why}",
        affects=affects, fix=fix,
    )  # fmt: skip


def _tracefs() -> bool:
    """tracefs is mounted somewhere (where the system-call tracepoints are listed)."""
    return any(m.fstype == "tracefs" for m in mountinfo())


def _recording(
    system: System, ebpf: tuple[str | None, str | None], tools: dict[str, Any]
) -> list[Finding]:
    why, version = ebpf
    out: list[Finding] = []
    affects = "`fslab record` through eBPF (a running --pid; far cheaper than strace)"
    package = TOOLS["bpftrace"][0]
    if why is None:
        out.append(Finding(
            "recording", "eBPF", "ok", f"bpftrace {version} runs a program",
        ))  # fmt: skip
    elif version is None and which("bpftrace") is None:
        out.append(Finding(
            "recording", "eBPF", "missing", why, affects=affects, fix=_install(package),
            packages=(package,),
        ))  # fmt: skip
    else:
        fix = "run fslab as root" if os.geteuid() != 0 else None
        if "tracepoints" in why and system.config("FTRACE_SYSCALLS") and not _tracefs():
            fix = (
                "mount tracefs (`mount -t tracefs tracefs /sys/kernel/tracing`): the kernel "
                "has the system-call tracepoints (CONFIG_FTRACE_SYSCALLS) but none is mounted"
            )
        out.append(Finding(
            "recording", "eBPF", "limited", f"bpftrace {version}: {why}" if version else why,
            affects=affects, fix=fix,
        ))  # fmt: skip
    path, version = tools["strace"]
    if path is None:
        out.append(Finding(
            "recording", "strace", "missing", "`strace` is not installed",
            affects="`fslab record --via strace` (the recorder without eBPF)",
            fix=_install(TOOLS["strace"][0]), packages=(TOOLS["strace"][0],),
        ))  # fmt: skip
    else:
        out.append(Finding("recording", "strace", "ok", f"strace {version} at {path}"))
    return out


def _postgres() -> Finding:
    from fslab.apps.postgres import AppError, find_postgres, pg_user

    package = TOOLS["initdb"][0]
    affects = "`pgbench` workloads (a real PostgreSQL on each target)"
    try:
        pg = find_postgres()
    except AppError as e:
        return Finding(
            "applications", "PostgreSQL", "missing", e.message, affects=affects,
            fix=_install(package), packages=(package,),
        )  # fmt: skip
    number = re.search(r"\d+(?:\.\d+)+", pg.version)
    detail = f"PostgreSQL {number.group(0) if number else '(unknown version)'} in {pg.bindir}"
    try:
        pg_user()
    except FslabError as e:
        return Finding(
            "applications", "PostgreSQL", "limited", f"{detail}; {e.message}",
            affects=affects, fix=e.hint,
        )  # fmt: skip
    return Finding("applications", "PostgreSQL", "ok", detail)


def _mpi() -> Finding:
    from fslab.hosts import MPI_HINT, mpiexec

    affects = "multi-host runs (`fslab run --hosts`, a study's `[hosts]`)"
    try:
        path = mpiexec()
    except FslabError as e:
        return Finding(
            "applications", "MPI", "missing", e.message, affects=affects, fix=MPI_HINT
        )  # fmt: skip
    import mpi4py

    return Finding(
        "applications", "MPI", "ok", f"mpi4py {mpi4py.__version__}; mpiexec at {path}"
    )  # fmt: skip


def _test_tools(system: System, tools: dict[str, tuple[str | None, str | None]]) -> list[Finding]:
    out: list[Finding] = []
    fio = system.tools.get("fio")
    if fio is None:
        out.append(Finding(
            "tests and bench", "fio", "missing", "`fio` is not installed",
            affects="bench/vs-fio and the tests that hold the engine to fio (the "
            "reference engine); fslab's own runs do not need it",
            fix=_install(TOOLS["fio"][0]), packages=(TOOLS["fio"][0],),
        ))  # fmt: skip
    else:
        out.append(Finding(
            "tests and bench", "fio", "ok", f"fio {system.versions.get('fio')} at {fio}"
        ))  # fmt: skip
    for group, names, affects in (
        ("Chromium", ("chromium", "chromedriver"),
         "the browser tests of the HTML report, history and site (tests only)"),
        ("rsync, fdupes", ("rsync", "fdupes"),
         "bench/vs-tools (file management next to cp, rsync, find, fdupes)"),
    ):  # fmt: skip
        lacking = [n for n in names if tools[n][0] is None]
        if lacking:
            packages = tuple(TOOLS[n][0] for n in lacking)
            out.append(Finding(
                "tests and bench", group, "missing",
                f"{', '.join(f'`{n}`' for n in lacking)} not installed", affects=affects,
                fix=_install(*packages), packages=packages,
            ))  # fmt: skip
        else:
            said = ", ".join(f"{n} {tools[n][1] or '(unknown version)'}" for n in names)
            out.append(Finding("tests and bench", group, "ok", said))
    return out
