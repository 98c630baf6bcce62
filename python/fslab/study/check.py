"""Everything that can be known wrong about a plan before anything is touched: parameter
values, the engine's view of every distinct job, and what this machine can provision."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from fslab.engine import JobProblem, check_job, find_engine
from fslab.kinds import kind_of
from fslab.study.load import written
from fslab.study.model import Study, TargetSpec
from fslab.study.plan import Plan, Point, workload_name
from fslab.study.problems import Problem, unique, where
from fslab.targets import gate
from fslab.targets.args import mkfs_size
from fslab.targets.fstoken import Made
from fslab.targets.mkfs import loop_image_size, mkfs_write_bytes, size_of
from fslab.targets.mount import mount_containing
from fslab.targets.system import DOCTOR_HINT, System, keyed_check
from fslab.units import format_bytes

# Copies of the data each btrfs profile keeps; parity profiles are handled apart.
_COPIES = {"single": 1, "dup": 2, "raid0": 1, "raid1": 2, "raid1c3": 3, "raid1c4": 4, "raid10": 2}
# Share of a file system a test file may fill: journals, metadata and free-space
# reserves take the rest, and a file system filled to the brim measures something else.
# btrfs copies on write: an overwritten extent stays allocated until every block of it
# is rewritten, so random overwrites of a file need up to twice its size (measured: a
# 163 MiB file on a 328 MiB btrfs hit ENOSPC under 64 KiB random writes).
_FILL = {"btrfs": 0.4}
_FILL_DEFAULT = 0.8


def param_problems(study: Study, place: str) -> list[Problem]:
    """Sizes, durations and counts in workloads that do not parse, each at its line."""
    problems = []
    for i, w in enumerate(study.workload):
        kind = kind_of(w.kind)
        for key, values in w.params().items():
            for v in values:
                try:
                    kind.normalize(key, v)
                except ValueError as e:
                    problems.append(Problem(where(study, "workload", i, key, place=place), str(e)))
    return unique(problems)


def kind_problems(plan: Plan, place: str, workdir: Path) -> list[Problem]:
    """What the plan's kinds of workload need from this machine (PostgreSQL and its user
    for pgbench), each kind asked once."""
    used = dict.fromkeys(p.kind for p in plan.points)
    return [p for name in used for p in kind_of(name).machine_problems(plan, place, workdir)]


def engine_problems(plan: Plan, place: str) -> list[Problem]:
    """Asks the engine about every distinct job (its checks are the only source of truth
    for job keys and ranges); one problem per thing it refuses, at the workload key's line.

    Raises EngineError when the engine fails otherwise (a crash, a signal, an exit
    status other than ok and "job refused"): that says nothing about the study."""
    engine = find_engine()
    study = plan.study
    index = {workload_name(w, i, study.workload): i for i, w in enumerate(study.workload)}
    seen: set[str] = set()
    problems: list[Problem] = []
    jobs = [(p, job) for p in plan.points for job in p.engine_jobs(Path("/fslab-plan"))]
    for p, job in jobs:
        key = json.dumps(job, sort_keys=True)
        if key in seen:
            continue
        seen.add(key)
        what = f"the job of workload `{p.workload}` ({p.label()})"
        refused = check_job(job, engine=engine, what=what)
        if refused:
            problems += _refusals(refused, study, index[p.workload], p, place)
    return unique(problems)


# serde's words for a negative number where the engine takes an unsigned one.
_UNSIGNED = re.compile(r"invalid value: integer `(-\d+)`, expected u\d+(?: \(got -?\d+\))?")


def _refusals(
    errors: tuple[JobProblem, ...],
    study: Study,
    i: int,
    p: Point,
    place: str,
) -> list[Problem]:
    """The engine's errors as problems of workload `i`, in the study's words
    (`Kind.study_key`: the engine's `numjobs` is the study's `threads`, its `size` a block
    workload's `file_size`), each key as the study wrote it (`numjobs` where it says
    `numjobs`) and at its line."""
    said = errors or (JobProblem(None, "the engine refused the job without saying why", None),)
    kind = kind_of(p.kind)
    # The engine's key -> the key as the study wrote it.
    names = {
        theirs: written(study, i, ours)
        for ours, theirs in kind.engine_keys.items()
        if written(study, i, ours) != theirs
    }

    def ours(text: str) -> str:
        for engine_key, study_key in names.items():
            text = text.replace(f"`{engine_key}`", f"`{study_key}`")
        return _UNSIGNED.sub(lambda m: f"{m.group(1)} is not a whole number of 0 or more", text)

    problems = []
    for engine_key, what, hint in said:
        key = kind.study_key(engine_key) if engine_key else None
        if key is not None and key in p.params:
            at = where(study, "workload", i, key, place=place)
        else:
            # A key the lab sets itself (the file, the op): the point tells which job.
            at = where(study, "workload", i, place=place) + f", point `{p.label()}`"
            what = f"`{engine_key}`: {what}" if engine_key else what
        problems.append(Problem(at, ours(what), ours(hint) if hint else None))
    return problems


def target_problems(
    plan: Plan,
    system: System,
    place: str,
    *,
    force: bool = False,
    confirmed: frozenset[str] = frozenset(),
    made: Made | None = None,
) -> list[Problem]:
    """What keeps each target from being made here, and the safety gate's refusals of
    `device` targets (`refused`: the exit status says so), each with its hint."""
    problems = []
    study = plan.study
    # A slice (`--where`) leaves some targets unmade: what would keep them is no problem.
    used = {t.name for t in plan.targets()}
    for i, t in enumerate(study.target):
        if t.name not in used:
            continue
        for key, msg, machine in keyed_check(t, system, plan.scale):
            at: tuple[int | str, ...] = ("target", i, *(key.split(".") if key else ()))
            # The place names the target; the sentence need not say it again.
            said = msg.removeprefix(f"target `{t.name}`: ")
            hint = DOCTOR_HINT if machine else None
            problems.append(Problem(where(study, *at, place=place), said, hint=hint))
        if t.device is None or not system.is_root:
            continue  # without root `check` already says so; the gate needs root to look
        for dev in t.device:
            found = gate.refusals(
                dev, force=force, confirmed=confirmed, made=made, members=t.device
            )
            for r in found:
                problems.append(
                    Problem(
                        where(study, "target", i, "device", place=place),
                        f"`device` {dev!r} {r.why}",
                        hint=r.hint,
                        refused=True,
                    )
                )
    return problems


def capacity_bytes(spec: TargetSpec, scale: float) -> int | None:
    """About how much data a loop target holds, or None when fslab does not make it."""
    loop = spec.effective_loop
    if loop is None or spec.fs is None:
        return None
    per_device = loop_image_size(spec, scale)
    asked = mkfs_size(spec, size_of(spec.block_size) or 4096)
    if asked is not None:
        per_device = min(per_device, asked)  # btrfs `-b`, xfs `-d size=`
    n = loop.count
    profile = spec.profile or "single"
    if profile == "raid5":
        return per_device * (n - 1)
    if profile == "raid6":
        return per_device * (n - 2)
    return per_device * n // _COPIES.get(profile, 1)


def _footprints(plan: Plan, p: Point) -> list[tuple[TargetSpec, int | None]]:
    """What a point stores on each target it touches (its kind knows)."""
    return kind_of(p.kind).footprints(plan.study, p)


def capacity_problems(plan: Plan, place: str, workdir: Path | None = None) -> list[Problem]:
    """A test file that would not fit (or would fill) its target, caught before any mkfs;
    with `workdir`, also loop images its file system cannot hold (`host_problems`)."""
    problems = []
    seen: set[tuple[str, int]] = set()
    specs = plan.study.workload
    names = [workload_name(w, i, specs) for i, w in enumerate(specs)]
    for p in plan.points:
        for target, size in _footprints(plan, p):
            if not isinstance(size, int) or (target.name, size) in seen:
                continue
            seen.add((target.name, size))
            role = " (its source)" if target is not p.target else ""
            kind, wi = kind_of(p.kind), names.index(p.workload)
            # A key as the study wrote it (a block workload's `file_size` may be `size`).
            key = written(plan.study, wi, kind.footprint_key)
            at = where(plan.study, "workload", wi, kind.footprint_key, place=place)
            on = f"{at} on target `{target.name}`{role}"
            stored = written(plan.study, wi, kind.footprint_what)
            what = f"{stored} {format_bytes(size)} does not fit"
            smaller = f"the workload a smaller `{key}`"
            if target.dir is not None:
                problems += _dir_problems(target.dir, size, on, what, smaller)
                continue
            cap = capacity_bytes(target, plan.scale)
            if cap is None:
                continue
            fill = _FILL.get(target.fs or "", _FILL_DEFAULT)
            if size > cap * fill:
                sized = mkfs_size(target) is not None
                problems.append(
                    Problem(
                        on,
                        f"{what}: the target holds about {format_bytes(cap)}"
                        + (" (the size its `mkfs_args` give it)" if sized else "")
                        + f", and a test file may fill {fill:.0%} of it"
                        + (" (copy on write)" if target.fs == "btrfs" else ""),
                        hint="give the target "
                        + (
                            "a larger size in `mkfs_args`"
                            if sized
                            else "a larger `loop.size` (or more devices)"
                        )
                        + f", or {smaller}",
                    )
                )
    if workdir is not None:
        problems += host_problems(plan, place, workdir)
    return problems


def _dir_problems(directory: str, size: int, where: str, what: str, smaller: str) -> list[Problem]:
    """A test file that would not fit (or would fill) the free space of a `dir` target's
    file system, by the same rule as a loop target's."""
    free = free_bytes(Path(directory))
    m = mount_containing(directory)
    fill = _FILL.get(m.fstype if m else "", _FILL_DEFAULT)
    if free is None or size <= free * fill:
        return []
    return [
        Problem(
            where,
            f"{what}: {directory} has {format_bytes(free)} free, and a test file may fill "
            f"{fill:.0%} of that",
            hint=f"free space there, give the target a `dir` on a larger file system, or {smaller}",
        )
    ]


def free_bytes(path: Path) -> int | None:
    """Bytes an unprivileged user may still write on `path`'s file system."""
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


def existing_parent(path: Path) -> Path:
    """`path`, or its nearest parent that exists (where it would be made)."""
    p = Path(os.path.realpath(path))  # as `provision` resolves it
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


# ext4 maps a file's blocks with 32-bit logical block numbers (extents), so a file holds
# at most 2^32 - 1 blocks: 16 TiB with 4 KiB blocks. ext2 and ext3 count a file's 512-byte
# sectors in 32 bits (without huge_file): 2 TiB.
_EXT4_MAX_BLOCKS = (1 << 32) - 1
_EXT23_MAX_FILE = 2 << 40
_OFF_T_MAX = (1 << 63) - 1


def max_file_bytes(path: Path) -> int | None:
    """The largest file `path`'s file system holds, or None when unknown. FILESIZEBITS
    comes from glibc, which knows ext4 only as "ext2" (64 bits) and answers 32 for every
    file system it does not know, tmpfs and overlay among them, so that 32 means nothing."""
    m = mount_containing(path)
    fstype = m.fstype if m else ""
    try:
        if fstype == "ext4":
            return _EXT4_MAX_BLOCKS * os.statvfs(path).f_bsize
        bits = os.pathconf(path, "PC_FILESIZEBITS")
    except (OSError, ValueError):
        return None
    if fstype in ("ext2", "ext3"):
        return _EXT23_MAX_FILE
    if bits > 32:
        return min((1 << (bits - 1)) - 1, _OFF_T_MAX)
    return (1 << 32) - 1 if fstype in ("vfat", "msdos") else None


def _loop_targets(plan: Plan) -> dict[str, TargetSpec]:
    """The loop targets the plan's points use, by name."""
    return {
        t.name: t
        for p in plan.points
        for t, _ in _footprints(plan, p)
        if t.effective_loop is not None and t.fs is not None
    }


def _data_on_host(target: TargetSpec, size: int | None, scale: float) -> int:
    """What `size` bytes of workload data take in the target's images: each copy the
    btrfs profile keeps, at most the images' size."""
    loop = target.effective_loop
    if size is None or loop is None:
        return 0
    n = loop.count
    profile = target.profile or "single"
    parity = {"raid5": 1, "raid6": 2}.get(profile)
    on_disk = size * n // (n - parity) if parity else size * _COPIES.get(profile, 1)
    return min(on_disk, loop_image_size(target, scale) * n)


def host_problems(plan: Plan, place: str, workdir: Path) -> list[Problem]:
    """Loop images the work directory's file system cannot hold: one larger than the
    largest file it takes, or all that a run needs at once (what mkfs writes into the
    images, then the workloads' data) more than its free space. The images are sparse,
    so nothing else of them takes space."""
    base = existing_parent(workdir)
    limit = max_file_bytes(base)
    m = mount_containing(base)
    problems: list[Problem] = []
    mkfs_writes: dict[str, int] = {}
    for name, t in _loop_targets(plan).items():
        loop = t.effective_loop
        assert loop is not None
        image = loop_image_size(t, plan.scale)
        if limit is not None and image > limit:
            problems.append(
                Problem(
                    f"{place}: target `{name}`",
                    f"`loop.size = {loop.size!r}` makes a {format_bytes(image)} image file, but "
                    f"the work directory is on {m.fstype if m else 'a file system'} "
                    f"({base}), whose files hold at most {format_bytes(limit)}",
                    hint="give the target a smaller `loop.size`, or the study a work "
                    "directory (--workdir) on a file system that takes larger files (xfs, btrfs)",
                )
            )
            continue
        fs_size = min(image, mkfs_size(t, size_of(t.block_size) or 4096) or image)
        mkfs_writes[name] = loop.count * mkfs_write_bytes(t, fs_size)
    if not mkfs_writes:
        return problems
    # What exists at once: without `reuse`, the target of one run (and the source it copies
    # from); with it, every target, each with the most data any of its runs writes.
    needs: list[tuple[int, int]] = []
    if plan.study.reuse:
        data: dict[str, int] = {}
        for p in plan.points:
            for t, size in _footprints(plan, p):
                if t.name in mkfs_writes:
                    data[t.name] = max(data.get(t.name, 0), _data_on_host(t, size, plan.scale))
        needs.append((sum(mkfs_writes.values()), sum(data.values())))
    for p in [] if plan.study.reuse else plan.points:
        used = [(t, size) for t, size in _footprints(plan, p) if t.name in mkfs_writes]
        needs.append(
            (
                sum(mkfs_writes[t.name] for t, _ in used),
                sum(_data_on_host(t, size, plan.scale) for t, size in used),
            )
        )
    by_mkfs, by_data = max(needs, key=sum)
    free = free_bytes(base)
    if free is not None and by_mkfs + by_data > free:
        problems.append(
            Problem(
                f"{place}: workdir",
                f"the loop images need about {format_bytes(by_mkfs + by_data)} in {base} "
                f"({format_bytes(by_mkfs)} that mkfs writes, {format_bytes(by_data)} of "
                f"workload data), and its file system has {format_bytes(free)} free",
                hint="free space there, give the study a work directory (--workdir) on a "
                "larger file system, or make the targets (`loop.size`) or the workloads' "
                "data smaller",
            )
        )
    return problems
