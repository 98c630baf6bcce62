"""`kind = "files"`: file management on a generated file set (the engine's files jobs,
engine/src/files/): `create` (generating the set, measured), then each of `ops` in order
on the same set, each op one engine job from a cold cache with its own telemetry.

A point's `ops` is the workload's typed list (`ops(point)`); `params["ops"]` holds it
comma-joined only because that is how point ids and results databases have always
stored it (an id is a hash of the params: another form would re-run every finished point).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, cast

from pydantic import Field, field_validator, model_validator

from fslab.catalog.files import ENTRY
from fslab.engine import Report, run_job
from fslab.environment import drop_caches
from fslab.kinds.base import Kind, RunContext, RunStatus, run_status
from fslab.study.workload import NAME_PATTERN, Param, SweepSpec, Value
from fslab.telemetry.sampler import interval_for
from fslab.units import parse_size

if TYPE_CHECKING:
    from fslab.run import Watch
    from fslab.study.model import Study
    from fslab.study.plan import Point
    from fslab.targets.provision import Provisioned
    from fslab.targets.spec import TargetSpec

FileOp = Literal["copy", "sync", "scan", "dupes", "touch", "chmod", "xattr", "stat", "delete"]
# The named file sets of the file-management seed study (DiskBoss's):
# (number of files, size of each).
FILE_SETS = {
    "small": (250_000, "16KiB"),
    "medium": (50_000, "64KiB"),
    "large": (1_000, "4MiB"),
    "huge": (32, "1GiB"),
}
# Keys only some file ops use (the engine warns about the others): the set's shape for
# `create`, the changed share for `mutate`, the mode for `chmod`.
FILES_OP_KEYS = {
    "create": ("nr_files", "file_size", "size_dist", "size_sigma", "size_buckets",
               "files_per_dir", "dup_share"),
    "mutate": ("mutate_share",),
    "chmod": ("mode",),
}  # fmt: skip
_OP_ONLY = {k for keys in FILES_OP_KEYS.values() for k in keys}
# Ops that copy the set (a second copy on the target) or read all of it again.
_COPIES = ("copy", "sync")
MIN_FILES = 20
MIN_SCALED_FILE = 16 << 10
# Rough cost of one file operation and of copying data, for the estimate only.
FILE_OP_S = 20e-6
COPY_BYTES_PER_S = 300 << 20


def bucket_sweep(v: list[Any]) -> list[list[Any]]:
    """`size_buckets` as a list of values: `[[s, w], ...]` is one, a list of those a sweep."""
    if v and isinstance(v[0], list) and v[0] and isinstance(v[0][0], list):
        return v
    return [v]


class FilesWorkloadSpec(SweepSpec):
    """File management on a generated file set: `create` (generating it, measured), then
    each of `ops` in order on the same set. `ops` is a sequence, not a sweep axis;
    `threads` and the set's keys may be lists (sweep axes)."""

    NOT_AXES: ClassVar[frozenset[str]] = SweepSpec.NOT_AXES | {"ops"}
    STRUCTURED: ClassVar[dict[str, Callable[[list[Any]], list[list[Any]]]]] = {
        "size_buckets": bucket_sweep
    }

    kind: Literal["files"]
    name: str | None = Field(None, pattern=NAME_PATTERN, max_length=64)
    targets: list[str] | None = Field(None, min_length=1)
    # A target that holds the set: it is created (and mutated) there, and `copy`/`sync`
    # copy it into the point's target, where the other ops then run on the copy.
    source: str | None = None
    set: Param = "small"
    # pydantic copies a default per instance, so one list is safe here.
    ops: list[FileOp] = Field(default=["copy", "sync", "scan", "dupes", "touch", "chmod", "delete"])
    threads: Param = 1
    nr_files: Param | None = None
    file_size: Param | None = None
    size_dist: Param | None = None
    size_sigma: Param | None = None
    files_per_dir: Param | None = None
    dup_share: Param = 0.05
    mutate_share: Param = 0.1
    mode: Param | None = None
    randseed: Param | None = None
    # `[[size, weight], ...]` is one value; a list of such lists is a sweep axis.
    size_buckets: list[Any] | None = None

    @field_validator("size_buckets")
    @classmethod
    def _buckets(cls, v: list[Any] | None) -> list[Any] | None:
        if v is None:
            return v
        for buckets in bucket_sweep(v):
            if not buckets:
                raise ValueError('is empty; write e.g. `[["16k", 7], ["1m", 3]]`')
            for pair in buckets:
                if not (isinstance(pair, list) and len(pair) == 2):
                    raise ValueError(
                        f"`{pair}` is not a [size, weight] pair; write e.g. "
                        '`[["16k", 7], ["1m", 3]]`'
                    )
                size, weight = pair
                parse_size(size)
                if isinstance(weight, bool) or not isinstance(weight, int | float) or weight <= 0:
                    raise ValueError(f"the weight of `{size}` must be a number above 0")
        return v

    @field_validator("set")
    @classmethod
    def _set(cls, v: Param) -> Param:
        for name in v if isinstance(v, list) else [v]:
            if name not in (*FILE_SETS, "custom"):
                raise ValueError(
                    f"`{name}` is not a file set; allowed: {', '.join(FILE_SETS)}, custom"
                )
        return v

    @field_validator("ops")
    @classmethod
    def _ops_once(cls, v: list[str]) -> list[str]:
        twice = sorted({op for op in v if v.count(op) > 1})
        if twice:
            raise ValueError(f"each op runs once per set; repeated: {', '.join(twice)}")
        return v

    @model_validator(mode="after")
    def _custom(self) -> FilesWorkloadSpec:
        sets = self.set if isinstance(self.set, list) else [self.set]
        if self.size_buckets is not None:
            if set(sets) != {"custom"}:
                raise ValueError('`size_buckets` describe a custom set: write `set = "custom"`')
            for key in ("file_size", "size_dist", "size_sigma"):
                if getattr(self, key) is not None:
                    raise ValueError(f"`{key}` cannot be combined with `size_buckets`")
            if self.nr_files is None:
                raise ValueError("a `custom` set needs `nr_files`")
        elif "custom" in sets and (self.nr_files is None or self.file_size is None):
            raise ValueError("a `custom` set needs `nr_files` and `file_size` (or `size_buckets`)")
        if self.source is not None and (not self.ops or self.ops[0] not in _COPIES):
            raise ValueError(
                "with `source`, the first op must be `copy` or `sync`: it brings the set to "
                "the target the other ops measure"
            )
        return self


def _spec(point: Point) -> FilesWorkloadSpec:
    return cast(FilesWorkloadSpec, point.workload_spec)


def ops(point: Point) -> list[FileOp]:
    """The ops a files point runs after `create`, in order."""
    return list(_spec(point).ops)


def source(point: Point) -> str | None:
    """The target holding the set when it is copied in from another (`source`)."""
    return _spec(point).source


def _footprint(target: TargetSpec, params: dict[str, Any], copies: int) -> int | None:
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


class FilesKind(Kind):
    name = "files"
    spec = FilesWorkloadSpec
    engine_keys: Mapping[str, str] = {"threads": "numjobs"}
    size_keys = ENTRY.size_keys
    count_keys = ENTRY.count_keys
    footprint_what = "the file set"
    footprint_key = "nr_files"

    def normalize(self, key: str, value: Value) -> Value:
        if key == "size_buckets" and isinstance(value, list):
            return [[parse_size(size), weight] for size, weight in value]
        return super().normalize(key, value)

    def point_params(
        self, workload: SweepSpec, params: dict[str, Value], scale: float
    ) -> dict[str, Value]:
        """A named set spelled out as `nr_files` and `file_size` (explicit keys win),
        scaled; then `ops` in its stored form (see the module text)."""
        out = dict(params)
        name = out.get("set")
        if isinstance(name, str) and name in FILE_SETS:
            nr, size = FILE_SETS[name]
            out.setdefault("nr_files", nr)
            out.setdefault("file_size", parse_size(size))
        out = self.scale(out, scale)
        out["ops"] = ",".join(cast(FilesWorkloadSpec, workload).ops)
        return out

    def scale(self, params: dict[str, Value], scale: float) -> dict[str, Value]:
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

    def label(self, point: Point) -> str:
        """`ext4 files small x4`."""
        p = point.params
        threads = f" x{p['threads']}" if p.get("threads", 1) != 1 else ""
        return f"{point.target.name} {point.workload} {p.get('set', '')}{threads}"

    def file_jobs(
        self, point: Point, directory: Path, source_dir: Path | None = None
    ) -> list[tuple[str, dict[str, Any]]]:
        """A files point's engine jobs in order: create the set, then each op (a sync is
        preceded by `mutate`, which changes part of the set so the sync has work).

        With `source_dir` (a `source` target's work directory) the set is created and
        mutated there; `copy`/`sync` copy it into `directory`, and the other ops run on
        that copy."""
        src = (source_dir or directory) / "set"
        dst = directory / "copy"
        base: dict[str, Any] = {"kind": "files", "name": "fslab", "directory": str(src)}
        for key, value in point.params.items():
            if key not in ("set", "ops", "source") and key not in _OP_ONLY:
                base[self.engine_key(key)] = value

        def job_for(op: str) -> dict[str, Any]:
            own = {k: point.params[k] for k in FILES_OP_KEYS.get(op, ()) if k in point.params}
            return {**base, **own, "op": op}

        jobs: list[tuple[str, dict[str, Any]]] = [("create", job_for("create"))]
        for op in ops(point):
            if op == "sync":
                jobs.append(("mutate", job_for("mutate")))
            job = job_for(op)
            if op in _COPIES:
                job["dest"] = str(dst)
            elif source_dir is not None:
                job["directory"] = str(dst)
            jobs.append((op, job))
        return jobs

    def engine_jobs(self, point: Point, directory: Path) -> list[dict[str, Any]]:
        return [
            j for _, j in self.file_jobs(point, directory, directory if source(point) else None)
        ]

    def estimate_s(self, point: Point) -> float:
        p = point.params
        nr = int(p.get("nr_files", 0) or 0)
        size = int(p.get("file_size", 0) or 0)
        buckets = p.get("size_buckets")
        if isinstance(buckets, list):
            total = sum(w for _, w in buckets)
            size = int(sum(s * w for s, w in buckets) / total)
        done = ops(point)
        steps = 1 + len(done)
        copies = sum(op in (*_COPIES, "dupes") for op in done)
        return nr * steps * FILE_OP_S + nr * size * (1 + copies) / COPY_BYTES_PER_S

    def footprints(self, study: Study, point: Point) -> list[tuple[TargetSpec, int | None]]:
        name = source(point)
        if name is not None:
            src = study.target_named(name)
            return [
                (src, _footprint(src, point.params, 1)),
                (point.target, _footprint(point.target, point.params, 1)),
            ]
        copies = 2 if any(op in _COPIES for op in ops(point)) else 1
        return [(point.target, _footprint(point.target, point.params, copies))]

    def run(self, ctx: RunContext, run_id: int, point: Point, prov: Provisioned) -> RunStatus:
        """Create the set, then each op in order, each from a cold cache and with its own
        telemetry; metrics are stored per op (`copy`, `scan`, ...). With a `source`
        target, the set lives there and is copied into `prov`."""
        name = source(point)
        if name is None:
            return self._ops(ctx, run_id, point, prov, None)
        with ctx.other_target(name, run_id) as src:
            return self._ops(ctx, run_id, point, prov, src)

    def _ops(
        self,
        ctx: RunContext,
        run_id: int,
        point: Point,
        prov: Provisioned,
        src: Provisioned | None,
    ) -> RunStatus:
        documents: list[Any] = []
        telemetry: dict[str, Any] = {}
        metrics: dict[str, Any] = {}
        caches: dict[str, Any] = {}
        status, err = "ok", None
        reports: list[Report] = []
        jobs = self.file_jobs(point, prov.workdir, src.workdir if src else None)
        # Each op is a share of the point's work: sampled to give each its 20 samples.
        every = interval_for(self.estimate_s(point) / max(1, len(jobs)))
        for op, job in jobs:
            caches[op] = drop_caches().as_dict()
            watch: Watch
            if src is None:
                watch = ctx.watch(prov, every)
            elif op in ("create", "mutate"):
                watch = ctx.watch(src, every)
            else:
                watch = ctx.watch(prov, every, also=src, space_at=prov.workdir)
            try:
                result = run_job(job, engine=ctx.engine, progress_cb=ctx.engine_live(f"{op}: "))
            finally:
                watch.stop()
            reports.append(result.report)
            documents.append(result.document)
            # The engine counts bytes read + written; a copy or sync reads what it writes.
            moved = sum(r.bytes for r in result.report.results if r.op == op)
            written = {"create": moved, "mutate": moved, "copy": moved // 2, "sync": moved // 2}
            stored = written.get(op, 0) if op in ("create", "copy") else 0
            summary = watch.summary(written.get(op, 0), stored)
            telemetry[op] = watch.data()
            metrics.update({f"{op}.{k}": v for k, v in summary.items()})
            if result.exit_code != 0:
                status = run_status(result.exit_code)
                err = result.stderr.strip() or result.report.status
                break
        effective = {**prov.effective, "caches": caches}
        if src is not None:
            effective["source"] = src.effective
        ctx.db.set_effective(run_id, effective)
        ctx.db.store_telemetry(run_id, 1.0, telemetry, metrics)
        ctx.db.finish_run(
            run_id, status, reports=reports, engine_json=json.dumps(documents), error=err
        )
        return status, err


FILES = FilesKind()
