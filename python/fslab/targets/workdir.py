"""The work directory: where loop images and mount points go.

fslab removes only what it made. An existing directory given as the work directory is
used as it is and never removed: fslab adds a directory per target to it (each with its
marker, `owner.py`) and removes just those. A work directory that does not exist is made
by `fslab run` (its parent must exist) and removed after the run once it is empty.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from fslab.targets.mount import mount_containing
from fslab.targets.spec import TargetSpec

# Never a work directory: the root, the system's own trees, and kernel file systems.
_SYSTEM_DIRS = frozenset(
    {
        "/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32",
        "/media", "/mnt", "/opt", "/proc", "/root", "/run", "/sbin", "/srv", "/sys", "/tmp",
        "/usr", "/usr/local", "/var", "/var/lib", "/var/log", "/var/tmp",
    }
)  # fmt: skip
_KERNEL_TREES = ("/proc", "/sys", "/dev")
# File systems whose files live in memory: a loop image there measures RAM, not a disk.
RAM_FS = ("tmpfs", "ramfs")


def default_workdir(results: Path) -> Path:
    """The work directory when neither --workdir nor the study names one: `fslab-work`
    beside the results database."""
    return results.resolve().parent / "fslab-work"


def nearest_existing(path: Path) -> Path:
    """`path`, or its nearest parent that exists."""
    for p in [path, *path.parents]:
        if p.exists():
            return p
    return Path("/")


def problems(workdir: Path) -> list[str]:
    """Why `workdir` cannot be a work directory, as sentences (empty: it can). Touches
    nothing."""
    if workdir.is_symlink() and not workdir.exists():
        return [
            f"the work directory {workdir} is a symlink to {workdir.readlink()}, which "
            f"does not exist; create that directory or choose another --workdir"
        ]
    real = Path(os.path.realpath(workdir))
    if str(real) in _SYSTEM_DIRS or any(
        str(real).startswith(t + "/") and not str(real).startswith("/dev/shm")
        for t in _KERNEL_TREES
    ):
        return [
            f"the work directory {real} is a system directory; give fslab a directory of "
            f"its own, e.g. --workdir /var/tmp/fslab-work"
        ]
    if real.exists() and not real.is_dir():
        return [f"the work directory {real} exists and is not a directory"]
    if not real.exists() and not real.parent.is_dir():
        return [
            f"the work directory {real} cannot be made: its parent {real.parent} does not "
            f"exist; create it first"
        ]
    return []


def taken(workdir: Path, targets: Iterable[TargetSpec]) -> list[str]:
    """Target directories that already exist in `workdir` (fslab makes each itself), as
    sentences. A live run of the same results database has its own there: check under
    its lock (`store/lock.py`)."""
    real = Path(os.path.realpath(workdir))
    out = []
    for t in targets:
        if t.dir is not None:
            continue
        base = real / t.name
        if os.path.lexists(base):
            out.append(
                f"target `{t.name}`: {base} already exists; fslab makes that directory "
                f"itself and never takes over one it did not make (left by an interrupted "
                f"run? `fslab cleanup` removes fslab's own; else remove it or choose "
                f"another --workdir)"
            )
    return out


def _in_memory(workdir: Path) -> str | None:
    """The memory file system (`tmpfs`, `ramfs`) the work directory is on, or None."""
    m = mount_containing(nearest_existing(Path(os.path.realpath(workdir))))
    return m.fstype if m is not None and m.fstype in RAM_FS else None


def memory_problems(workdir: Path, targets: Iterable[TargetSpec], *, force: bool) -> list[str]:
    """Loop images in memory measure RAM whatever the loop driver does: refused, as
    sentences, unless `force` (the user wants to measure memory). Touches nothing."""
    fstype = _in_memory(workdir)
    loops = [t.name for t in targets if t.effective_loop]
    if fstype is None or not loops or force:
        return []
    real = Path(os.path.realpath(workdir))
    return [
        f"the work directory {real} is on {fstype} (memory): the loop images of "
        f"{', '.join(f'`{n}`' for n in loops)} would measure RAM, not a disk; choose a "
        f"--workdir on a disk file system (ext4, xfs), or give --force to measure memory "
        f"on purpose"
    ]


def notes(workdir: Path, targets: Iterable[TargetSpec]) -> list[str]:
    """What `fslab plan` says about the work directory: whether it exists (and so is
    left alone) or will be made, and whether loop images there would measure RAM."""
    real = Path(os.path.realpath(workdir))
    if real.is_dir():
        out = [
            f"{real} exists: fslab adds one directory per target to it, removes only those, "
            f"and leaves everything else in it alone"
        ]
    else:
        out = [f"{real} will be made for the run and removed afterwards once empty"]
    targets = list(targets)
    fstype = _in_memory(real)
    if fstype is not None and any(t.effective_loop for t in targets):
        out.append(
            f"note: {real} is on {fstype} (memory): loop images there measure RAM, not a "
            f"disk (allowed by --force); choose a --workdir on a disk file system to "
            f"measure one"
        )
    buffered = [t.name for t in targets if (lp := t.effective_loop) and not lp.direct_io]
    if buffered:
        out.append(
            f"note: {', '.join(f'`{n}`' for n in buffered)}: `loop.direct_io = false`, so "
            f"the results include the host's page cache over the loop images"
        )
    return out
