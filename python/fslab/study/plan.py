"""A study expanded into points: targets x workloads x one value per sweep axis.

Each point has a stable id, a hash of its normalized configuration (the target as
written, the workload kind, every parameter with sizes in bytes and durations in
seconds), so a re-run finds what is done and skips it. Repetitions are interleaved
(every point once, then every point again) so a slow drift of the machine spreads
over all targets instead of landing on the last one.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fslab.study.load import Problem, StudyError, where
from fslab.study.model import (
    APP_KINDS,
    FILE_SETS,
    AnySpec,
    AppWorkloadSpec,
    FilesWorkloadSpec,
    PgbenchWorkloadSpec,
    Scalar,
    Study,
    TargetSpec,
    Value,
    parse_size,
)
from fslab.units import format_bytes

# Study words that the engine spells the fio way (block jobs; files jobs keep `file_size`).
ENGINE_KEY = {"threads": "numjobs", "file_size": "size"}
FILES_ENGINE_KEY = {"threads": "numjobs"}
# Keys only some file ops use (the engine warns about the others): the set's shape for
# `create`, the changed share for `mutate`, the mode for `chmod`.
FILES_OP_KEYS = {
    "create": ("nr_files", "file_size", "size_dist", "size_sigma", "size_buckets",
               "files_per_dir", "dup_share"),
    "mutate": ("mutate_share",),
    "chmod": ("mode",),
}  # fmt: skip
_OP_ONLY = {k for keys in FILES_OP_KEYS.values() for k in keys}
MIN_FILES = 20
MIN_SCALED_FILE = 16 << 10
# Rough cost of one file operation and of copying data, for the estimate only.
FILE_OP_S = 20e-6
COPY_BYTES_PER_S = 300 << 20
SIZE_KEYS = ("bs", "file_size", "io_size", "data_size", "log_size", "page_size", "cache_size",
             "log_record_size", "scan_size", "maintenance_rate")  # fmt: skip
DURATION_KEYS = ("runtime", "ramp_time", "interval", "duration", "checkpoint_interval")
MIN_RUNTIME_S = 1.0
MIN_FILE_SIZE = 16 << 20
# Seconds a run costs besides its runtime and ramp: dropping caches, starting the engine;
# and what making and removing a file system adds (measured on loop devices here).
RUN_OVERHEAD_S = 0.5
PROVISION_S = 2.5
LAYOUT_BYTES_PER_S = 400 << 20

_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ns|us|ms|s|m|min|h)?\s*$")
_DURATION_UNIT = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, None: 1.0, "m": 60.0,
                  "min": 60.0, "h": 3600.0}  # fmt: skip


def parse_duration(value: Scalar) -> float:
    """`30s`, `500ms`, `2m` or a number of seconds -> seconds."""
    if isinstance(value, bool):
        raise ValueError(f"`{value}` is not a duration")
    if isinstance(value, int | float):
        return float(value)
    m = _DURATION_RE.match(value)
    if not m:
        raise ValueError(f"`{value}` is not a duration (write e.g. `500ms`, `30s`, `2m`)")
    return float(m.group(1)) * _DURATION_UNIT[m.group(2)]


# Keys that count something (threads, requests in flight): whole numbers from 1. The
# engine would say the same in its own words ("integer `-1`, expected u32").
COUNT_KEYS = ("threads", "iodepth")


def normalize(key: str, value: Value) -> Value:
    """A parameter in canonical form: sizes in bytes, durations in seconds."""
    if key == "size_buckets" and isinstance(value, list):
        return [[parse_size(size), weight] for size, weight in value]
    if key == "op_mix" and isinstance(value, list):
        return [float(x) for x in value]
    if isinstance(value, list):
        return value
    if key in COUNT_KEYS and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"{value} is not a count (1 or more)")
    if key in SIZE_KEYS:
        return parse_size(value) if not isinstance(value, float | bool) else value
    if key in DURATION_KEYS:
        return parse_duration(value)
    return value


def _files_params(params: dict[str, Value]) -> dict[str, Value]:
    """A named set spelled out as `nr_files` and `file_size` (explicit keys win)."""
    out = dict(params)
    name = out.get("set")
    if isinstance(name, str) and name in FILE_SETS:
        nr, size = FILE_SETS[name]
        out.setdefault("nr_files", nr)
        out.setdefault("file_size", parse_size(size))
    return out


def _scale_files(params: dict[str, Value], scale: float) -> dict[str, Value]:
    """The set's bytes scale with `scale`: by fewer files while at least MIN_FILES
    remain, then by smaller files (a set of few big files keeps its count)."""
    out = dict(params)
    nr, size = out.get("nr_files"), out.get("file_size")
    if isinstance(nr, int) and isinstance(out.get("size_buckets"), list):
        # Bucketed sizes keep their shape: fewer files only.
        out["nr_files"] = max(min(nr, MIN_FILES), int(nr * scale))
        return out
    if not isinstance(nr, int) or not isinstance(size, int):
        return out
    if nr * scale >= MIN_FILES:
        out["nr_files"] = int(nr * scale)
        return out
    count = min(nr, MIN_FILES)
    out["nr_files"] = count
    shrunk = int(size * nr * scale / count)
    out["file_size"] = max(MIN_SCALED_FILE, shrunk // 4096 * 4096)
    return out


def _scale_params(params: dict[str, Value], scale: float) -> dict[str, Value]:
    if scale == 1.0:
        return params
    out = dict(params)
    for key in ("file_size", "io_size"):
        size = out.get(key)
        if isinstance(size, int):
            scaled = int(size * scale) // (1 << 20) * (1 << 20)
            out[key] = max(MIN_FILE_SIZE, scaled)
    for key in ("runtime", "ramp_time"):
        secs = out.get(key)
        if isinstance(secs, float) and secs > 0:
            out[key] = max(MIN_RUNTIME_S if key == "runtime" else 0.0, round(secs * scale, 3))
    return out


# About what `pgbench -i` takes per unit of scale (100,000 accounts), and how long one
# unit takes to load here, for capacity checks and estimates.
PGBENCH_BYTES_PER_SCALE = 16 << 20
PGBENCH_INIT_S_PER_SCALE = 0.6
PG_START_S = 3.0


def _scale_pgbench(params: dict[str, Value], scale: float) -> dict[str, Value]:
    """`--scale` shrinks the database (pgbench's scale factor, at least 1) and the run."""
    if scale == 1.0:
        return params
    out = dict(params)
    if isinstance(out.get("scale"), int):
        out["scale"] = max(1, int(int(out["scale"]) * scale))  # type: ignore[arg-type]
    if isinstance(out.get("duration"), float):
        out["duration"] = max(MIN_RUNTIME_S, round(float(out["duration"]) * scale, 3))  # type: ignore[arg-type]
    return out


MIN_LOG_SIZE = 1 << 20
MIN_CHECKPOINT_S = 0.5


def _scale_app(params: dict[str, Value], scale: float) -> dict[str, Value]:
    """`--scale` shrinks the run, the data file and the log; the buffer cache shrinks with
    the data file (the share of reads it serves stays), checkpoints come as often per run."""
    if scale == 1.0:
        return params
    out = _scale_params(params, scale)
    data = params.get("data_size")
    if isinstance(data, int):
        scaled = max(MIN_FILE_SIZE, int(data * scale) // (1 << 20) * (1 << 20))
        out["data_size"] = scaled
        cache = params.get("cache_size")
        if isinstance(cache, int) and data:
            out["cache_size"] = int(cache * scaled / data) // 4096 * 4096
    log = params.get("log_size")
    if isinstance(log, int):
        out["log_size"] = max(MIN_LOG_SIZE, int(log * scale) // (1 << 20) * (1 << 20))
    ckpt = params.get("checkpoint_interval")
    if isinstance(ckpt, float):
        out["checkpoint_interval"] = max(MIN_CHECKPOINT_S, round(ckpt * scale, 3))
    return out


@dataclass(frozen=True)
class Point:
    id: str
    seq: int
    target: TargetSpec
    workload: str
    kind: str
    params: dict[str, Any] = field(hash=False)
    """Canonical values, scaled: sizes in bytes, durations in seconds."""

    def label(self) -> str:
        p = self.params
        if self.kind == "pgbench":
            return (f"{self.target.name} {self.workload} s{p.get('scale')} "
                    f"c{p.get('clients')} j{p.get('jobs')}")  # fmt: skip
        if self.kind == "files":
            threads = f" x{p['threads']}" if p.get("threads", 1) != 1 else ""
            return f"{self.target.name} {self.workload} {p.get('set', '')}{threads}"
        if self.kind in APP_KINDS:
            cache = p.get("cache_size")
            return f"{self.target.name} {self.workload} x{p.get('threads', 1)}" + (
                f" cache {format_bytes(cache)}" if isinstance(cache, int) else ""
            )
        parts = [str(p.get("rw", "")), _human_size(p.get("bs")), f"QD{p.get('iodepth', 1)}"]
        if p.get("threads", 1) != 1:
            parts.append(f"x{p['threads']}")
        return f"{self.target.name} {self.workload} " + " ".join(x for x in parts if x)

    @property
    def source(self) -> str | None:
        """The target holding the set when it is copied in from another (`source`)."""
        s = self.params.get("source")
        return s if isinstance(s, str) else None

    def file_jobs(
        self, directory: Path, source_dir: Path | None = None
    ) -> list[tuple[str, dict[str, Any]]]:
        """A files point's engine jobs in order: create the set, then each op (a sync is
        preceded by `mutate`, which changes part of the set so the sync has work).

        With `source_dir` (a `source` target's work directory) the set is created and
        mutated there; `copy`/`sync` copy it into `directory`, and the other ops run on
        that copy."""
        src = (source_dir or directory) / "set"
        dst = directory / "copy"
        base: dict[str, Any] = {"kind": "files", "name": "fslab", "directory": str(src)}
        for key, value in self.params.items():
            if key not in ("set", "ops", "source") and key not in _OP_ONLY:
                base[FILES_ENGINE_KEY.get(key, key)] = value

        def job_for(op: str) -> dict[str, Any]:
            own = {k: self.params[k] for k in FILES_OP_KEYS.get(op, ()) if k in self.params}
            return {**base, **own, "op": op}

        ops = str(self.params.get("ops", "")).split(",")
        jobs: list[tuple[str, dict[str, Any]]] = [("create", job_for("create"))]
        for op in filter(None, ops):
            if op == "sync":
                jobs.append(("mutate", job_for("mutate")))
            job = job_for(op)
            if op in ("copy", "sync"):
                job["dest"] = str(dst)
            elif source_dir is not None:
                job["directory"] = str(dst)
            jobs.append((op, job))
        return jobs

    def engine_jobs(self, directory: Path) -> list[dict[str, Any]]:
        """Every engine job the point runs (none for pgbench, which runs a database)."""
        if self.kind == "files":
            return [j for _, j in self.file_jobs(directory, directory if self.source else None)]
        if self.kind in ("block", *APP_KINDS):
            return [self.job(directory)]
        return []

    def job(self, directory: Path) -> dict[str, Any]:
        """The engine job for this point, its file inside `directory` (an application
        model's data and log files: `fslab.data`, `fslab.log`)."""
        job: dict[str, Any] = {"name": "fslab", "filename": str(directory / "fslab.dat")}
        if self.kind in APP_KINDS:
            # The models do sync I/O only (docs/engine.md).
            job = {"kind": self.kind, "name": "fslab", "directory": str(directory),
                   "ioengine": "sync"}  # fmt: skip
        for key, value in self.params.items():
            job[ENGINE_KEY.get(key, key)] = value
        return job

    def estimate_s(self, fresh_target: bool = True) -> float:
        setup = RUN_OVERHEAD_S + (PROVISION_S if fresh_target else 0)
        if self.kind == "pgbench":
            init = int(self.params.get("scale", 1)) * PGBENCH_INIT_S_PER_SCALE
            return setup + PG_START_S + init + float(self.params.get("duration", 0))
        if self.kind == "files":
            nr = int(self.params.get("nr_files", 0) or 0)
            size = int(self.params.get("file_size", 0) or 0)
            buckets = self.params.get("size_buckets")
            if isinstance(buckets, list):
                total = sum(w for _, w in buckets)
                size = int(sum(s * w for s, w in buckets) / total)
            ops = 1 + len(str(self.params.get("ops", "")).split(","))
            copies = sum(
                op in ("copy", "sync", "dupes") for op in str(self.params["ops"]).split(",")
            )
            return setup + nr * ops * FILE_OP_S + nr * size * (1 + copies) / COPY_BYTES_PER_S
        runtime = float(self.params.get("runtime", 0) or 0)
        ramp = float(self.params.get("ramp_time", 0) or 0)
        size = sum(int(self.params.get(k, 0) or 0) for k in ("file_size", "data_size", "log_size"))
        layout = size / LAYOUT_BYTES_PER_S
        return runtime + ramp + layout + setup


def _human_size(v: Scalar | None) -> str:
    if not isinstance(v, int) or isinstance(v, bool):
        return ""
    for unit, mult in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if v >= mult and v % mult == 0:
            return f"{v // mult}{unit}"
    return str(v)


@dataclass(frozen=True)
class Plan:
    study: Study
    points: list[Point]
    scale: float

    @property
    def repeat(self) -> int:
        return self.study.repeat

    def runs(self) -> list[tuple[int, Point]]:
        """(repetition, point) in the order they run: repetitions interleaved."""
        return [(rep, p) for rep in range(self.repeat) for p in self.points]

    def estimate_s(self) -> float:
        fresh = not self.study.reuse
        per_rep = sum(p.estimate_s(fresh) for p in self.points)
        kept = 0.0 if fresh else PROVISION_S * len(self.study.target)
        return per_rep * self.repeat + kept

    def targets(self) -> list[TargetSpec]:
        return list(self.study.target)


def workload_name(w: AnySpec, i: int, all_: list[AnySpec]) -> str:
    if w.name:
        return w.name
    same_kind = [x for x in all_ if x.kind == w.kind]
    return w.kind if len(same_kind) == 1 else f"{w.kind}{i + 1}"


def point_id(target: TargetSpec, kind: str, params: dict[str, Value]) -> str:
    key = {
        "target": target.model_dump(mode="json", exclude_none=True),
        "kind": kind,
        "params": params,
    }
    blob = json.dumps(key, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _points(study: Study, scale: float) -> list[tuple[int, Point]]:
    """(workload index, point) for every point of the study, in order."""
    points: list[tuple[int, Point]] = []
    for target in study.target:
        for wi, w in enumerate(study.workload):
            if target not in study.targets_of(w):
                continue
            name = workload_name(w, wi, study.workload)
            axes = w.params()
            keys = list(axes)
            for combo in itertools.product(*(axes[k] for k in keys)):
                params = {k: normalize(k, v) for k, v in zip(keys, combo, strict=True)}
                if isinstance(w, FilesWorkloadSpec):
                    params = _scale_files(_files_params(params), scale)
                    params["ops"] = ",".join(w.ops)
                elif isinstance(w, PgbenchWorkloadSpec):
                    params = _scale_pgbench(params, scale)
                elif isinstance(w, AppWorkloadSpec):
                    params = _scale_app(params, scale)
                else:
                    params = _scale_params(params, scale)
                point = Point(
                    id=point_id(target, w.kind, params),
                    seq=len(points),
                    target=target,
                    workload=name,
                    kind=w.kind,
                    params=params,
                )
                points.append((wi, point))
    return points


def _same_twice(study: Study, wi: int) -> Problem:
    """Why workload `wi` makes one point twice: a sweep list with one value twice."""
    w = study.workload[wi]
    for key, values in w.params().items():
        seen: dict[str, Any] = {}
        for v in values:
            canon = json.dumps(normalize(key, v), sort_keys=True)
            if canon in seen:
                return Problem(
                    where(study, "workload", wi, key),
                    f"lists one value twice (`{seen[canon]}` and `{v}`): a sweep value is "
                    "measured once per repetition",
                    hint="remove one of them; `repeat` measures a point again",
                )
            seen[canon] = v
    return Problem(where(study, "workload", wi), "makes the same point twice")


def _duplicates(study: Study, points: list[tuple[int, Point]]) -> list[Problem]:
    """Workloads whose names or points are one and the same: the runs of one would be
    stored as, and replace, the other's (a point's id leaves the workload's name out)."""
    problems: list[Problem] = []
    named: dict[str, int] = {}
    for wi, w in enumerate(study.workload):
        name = workload_name(w, wi, study.workload)
        if name in named:
            # Explicit names are checked with the model; this is an implicit one.
            problems.append(
                Problem(
                    where(study, "workload", wi),
                    f"has no `name`, and the one it gets, `{name}`, is workload[{named[name]}]'s",
                    hint="give it a `name`",
                )
            )
        named.setdefault(name, wi)
    first: dict[str, tuple[int, Point]] = {}
    told: set[tuple[int, int]] = set()
    for wi, p in points:
        if p.id not in first:
            first[p.id] = (wi, p)
            continue
        wj, q = first[p.id]
        if (wj, wi) in told:
            continue
        told.add((wj, wi))
        if wj == wi:
            problems.append(_same_twice(study, wi))
            continue
        problems.append(
            Problem(
                where(study, "workload", wi),
                f"runs the same points as workload[{wj}] (`{q.workload}`), e.g. `{p.label()}`: "
                f"the runs of `{p.workload}` would replace those of `{q.workload}`",
                hint="give one of them other parameters or `targets`, or remove it",
            )
        )
    return problems


def expand(study: Study, scale: float = 1.0) -> Plan:
    """Every point of the study, in order: target-major, then workload, then sweeps.

    Raises StudyError when two workloads (or two values of one sweep) make the same
    point; that is judged at full scale, where `--scale`'s floors do not merge points."""
    full = _points(study, 1.0)
    problems = _duplicates(study, full)
    if problems:
        raise StudyError(problems)
    points = full if scale == 1.0 else _points(study, scale)
    return Plan(study=study, points=[p for _, p in points], scale=scale)
