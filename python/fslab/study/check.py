"""Everything that can be known wrong about a plan before anything is touched: parameter
values, the engine's view of every distinct job, and what this machine can provision."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from fslab.engine import find_engine
from fslab.study.load import Problem
from fslab.study.model import APP_KINDS, Study, TargetSpec, parse_size
from fslab.study.plan import PGBENCH_BYTES_PER_SCALE, Plan, Point, normalize
from fslab.targets.mkfs import loop_image_size
from fslab.targets.system import System, check

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
    """Sizes and durations in workloads that do not parse."""
    problems = []
    for i, w in enumerate(study.workload):
        for key, values in w.params().items():
            for v in values:
                try:
                    normalize(key, v)
                except ValueError as e:
                    where = f"{place}: workload[{i}]" + (f" ({w.name})" if w.name else "")
                    problems.append(Problem(f"{where}.{key}", str(e)))
    return problems


def app_problems(plan: Plan, place: str, workdir: Path) -> list[Problem]:
    """What application workloads need from this machine: PostgreSQL and its user, and a
    work directory that user can reach."""
    if not any(p.kind == "pgbench" for p in plan.points):
        return []
    from fslab.apps.pgbench import PG_USER, AppError, find_postgres, pg_user, unreachable_parent

    where = f"{place}: pgbench"
    try:
        find_postgres()
        user = pg_user()
    except AppError as e:
        return [Problem(where, e.message, hint=e.hint)]
    blocked = unreachable_parent(workdir, user.pw_uid)
    if blocked is not None:
        return [
            Problem(
                where,
                f"the `{PG_USER}` user cannot reach the work directory {workdir}: "
                f"{blocked} is closed to others",
                hint="give a --workdir under a directory others may pass through, e.g. "
                "/var/tmp/fslab",
            )
        ]
    return []


def engine_problems(plan: Plan, place: str) -> list[Problem]:
    """Asks the engine about every distinct job (its checks are the only source of truth
    for job keys and ranges); one problem per job it refuses."""
    engine = find_engine()
    seen: dict[str, str] = {}
    problems = []
    jobs = [(p, job) for p in plan.points for job in p.engine_jobs(Path("/fslab-plan"))]
    for p, job in jobs:
        key = json.dumps(job, sort_keys=True)
        if key in seen:
            continue
        done = subprocess.run(
            [str(engine), "check", "-"], input=key, capture_output=True, text=True, check=False
        )
        seen[key] = done.stderr
        if done.returncode != 0:
            said = [
                line.removeprefix("error: <stdin>: ").strip()
                for line in done.stderr.splitlines()
                if line.strip()
            ]
            problems.append(
                Problem(f"{place}: workload `{p.workload}` ({p.label()})", "; ".join(said))
            )
    return problems


def target_problems(
    plan: Plan,
    system: System,
    place: str,
    *,
    force: bool = False,
    confirmed: frozenset[str] = frozenset(),
) -> list[Problem]:
    problems = []
    for i, t in enumerate(plan.study.target):
        for msg in check(t, system, plan.scale, force=force, confirmed=confirmed):
            problems.append(Problem(f"{place}: target[{i}] ({t.name})", msg))
    return problems


def capacity_bytes(spec: TargetSpec, scale: float) -> int | None:
    """About how much data a loop target holds, or None when fslab does not make it."""
    loop = spec.effective_loop
    if loop is None or spec.fs is None:
        return None
    per_device = loop_image_size(spec, scale)
    n = loop.count
    profile = spec.profile or "single"
    if profile == "raid5":
        return per_device * (n - 1)
    if profile == "raid6":
        return per_device * (n - 2)
    return per_device * n // _COPIES.get(profile, 1)


def _files_footprint(target: TargetSpec, params: dict[str, Any], copies: int) -> int | None:
    """Space `copies` of a file set take at most: each file rounded up to the allocation
    unit (64 KiB clusters make a 16 KiB file take 64 KiB)."""
    nr = params.get("nr_files")
    buckets = params.get("size_buckets")
    sizes = (
        [(int(s), float(w)) for s, w in buckets]
        if isinstance(buckets, list)
        else [(params["file_size"], 1.0)]
        if isinstance(params.get("file_size"), int)
        else []
    )
    if not isinstance(nr, int) or not sizes:
        return None
    unit = max(parse_size(target.cluster_size or 0), parse_size(target.block_size or 0), 4096)
    total_w = sum(w for _, w in sizes)
    # Lognormal sizes have this mean; buckets their weighted mean.
    per_file = sum(-(-size // unit) * unit * w for size, w in sizes) / total_w
    return int(nr * per_file * copies)


def _footprints(plan: Plan, p: Point) -> list[tuple[TargetSpec, int | None]]:
    """What a point stores on each target it touches."""
    if p.kind == "pgbench":
        # tables and indexes with room to grow, the cluster's own files and some WAL
        # (measured here after `pgbench -i -s 2`: 52 MiB under base/, 33 MiB of WAL, 85 in all)
        scale = int(p.params.get("scale", 1))
        return [(p.target, scale * PGBENCH_BYTES_PER_SCALE * 3 // 2 + (96 << 20))]
    if p.kind in APP_KINDS:
        # The engine's defaults when the study leaves them out (docs/job-keys.md).
        data, log = p.params.get("data_size", 256 << 20), p.params.get("log_size", 64 << 20)
        return [(p.target, int(data) + int(log))]
    if p.kind != "files":
        size = p.params.get("file_size")
        return [(p.target, size if isinstance(size, int) else None)]
    if p.source is not None:
        src = plan.study.target_named(p.source)
        return [
            (src, _files_footprint(src, p.params, 1)),
            (p.target, _files_footprint(p.target, p.params, 1)),
        ]
    ops = str(p.params.get("ops", "")).split(",")
    copies = 2 if "copy" in ops or "sync" in ops else 1
    return [(p.target, _files_footprint(p.target, p.params, copies))]


_WHAT = {"files": "the file set", "pgbench": "the database (pgbench scale) with its WAL",
         "oltp": "the data and log files", "mailstore": "the data and log files"}  # fmt: skip
_SHRINK = {"files": "nr_files", "pgbench": "scale", "oltp": "data_size", "mailstore": "data_size"}


def capacity_problems(plan: Plan, place: str) -> list[Problem]:
    """A test file that would not fit (or would fill) its target, caught before any mkfs."""
    problems = []
    seen: set[tuple[str, int]] = set()
    for p in plan.points:
        for target, size in _footprints(plan, p):
            cap = capacity_bytes(target, plan.scale)
            if not isinstance(size, int) or cap is None or (target.name, size) in seen:
                continue
            seen.add((target.name, size))
            fill = _FILL.get(target.fs or "", _FILL_DEFAULT)
            if size > cap * fill:
                role = " (its source)" if target is not p.target else ""
                problems.append(
                    Problem(
                        f"{place}: workload `{p.workload}` on target `{target.name}`{role}",
                        f"{_WHAT.get(p.kind, 'file_size')} "
                        f"{size >> 20} MiB does not fit: the target holds about "
                        f"{cap >> 20} MiB, and a test file may fill {fill:.0%} of it"
                        + (" (copy on write)" if target.fs == "btrfs" else ""),
                        hint="give the target a larger `loop.size` (or more devices), or the "
                        f"workload a smaller `{_SHRINK.get(p.kind, 'file_size')}`",
                    )
                )
    return problems
