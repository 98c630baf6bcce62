"""`kind = "pgbench"`: a real PostgreSQL on the target, driven by pgbench: `pgbench -i -s
scale`, then `clients` connections on `jobs` threads for `duration`. No engine job: the
server's lifecycle (initdb, start, stop, its journal undo) is `fslab.apps.postgres`; this
module is the study's side (keys, scaling, estimate, capacity) and the run step.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import Field, field_validator, model_validator

from fslab.apps.postgres import (
    PG_USER,
    AppError,
    PgbenchSpec,
    cluster,
    find_postgres,
    initialize,
    pg_user,
    run_pgbench,
    unreachable_parent,
)
from fslab.catalog.pgbench import ENTRY
from fslab.environment import drop_caches
from fslab.kinds.base import MIN_RUNTIME_S, Kind, RunContext, RunStatus
from fslab.study.problems import Problem
from fslab.study.workload import NAME_PATTERN, Param, SweepSpec, Value
from fslab.targets.system import DOCTOR_HINT
from fslab.telemetry.sampler import interval_for

if TYPE_CHECKING:
    from fslab.study.model import Study
    from fslab.study.plan import Plan, Point
    from fslab.targets.provision import Provisioned
    from fslab.targets.spec import TargetSpec

PGBENCH_BUILTINS = ("tpcb-like", "simple-update", "select-only")
# About what `pgbench -i` takes per unit of scale (100,000 accounts), and how long one
# unit takes to load here, for capacity checks and estimates.
PGBENCH_BYTES_PER_SCALE = 16 << 20
PGBENCH_INIT_S_PER_SCALE = 0.6
PG_START_S = 3.0


class PgbenchWorkloadSpec(SweepSpec):
    """A real PostgreSQL on the target, driven by pgbench: `pgbench -i -s scale`, then
    `clients` connections on `jobs` threads for `duration`. Lists are sweep axes."""

    kind: Literal["pgbench"]
    name: str | None = Field(None, pattern=NAME_PATTERN, max_length=64)
    targets: list[str] | None = Field(None, min_length=1)
    scale: Param = 10
    clients: Param = 4
    jobs: Param = 1
    duration: Param = "30s"
    builtin: Param = "tpcb-like"
    shared_buffers: Param = "128MB"
    synchronous_commit: Param = True

    @field_validator("scale", "clients", "jobs")
    @classmethod
    def _counts(cls, v: Param) -> Param:
        for x in v if isinstance(v, list) else [v]:
            if isinstance(x, bool) or not isinstance(x, int) or not 1 <= x <= 100_000:
                raise ValueError(f"`{x}` is not a count from 1 to 100000")
        return v

    @field_validator("builtin")
    @classmethod
    def _builtin(cls, v: Param) -> Param:
        for x in v if isinstance(v, list) else [v]:
            if x not in PGBENCH_BUILTINS:
                raise ValueError(
                    f"`{x}` is not a pgbench builtin; allowed: {', '.join(PGBENCH_BUILTINS)}"
                )
        return v

    @field_validator("shared_buffers")
    @classmethod
    def _pg_size(cls, v: Param) -> Param:
        for x in v if isinstance(v, list) else [v]:
            if not isinstance(x, str) or not re.fullmatch(r"\d+(kB|MB|GB)", x):
                raise ValueError(f"`{x}` is not a PostgreSQL size (write e.g. `128MB`)")
        return v

    @model_validator(mode="after")
    def _jobs_le_clients(self) -> PgbenchWorkloadSpec:
        clients = self.clients if isinstance(self.clients, list) else [self.clients]
        jobs = self.jobs if isinstance(self.jobs, list) else [self.jobs]
        if max(int(j) for j in jobs) > min(int(c) for c in clients):
            raise ValueError("pgbench needs `jobs` <= `clients` (each thread drives clients)")
        return self


class PgbenchKind(Kind):
    name = "pgbench"
    spec = PgbenchWorkloadSpec
    duration_keys = ENTRY.duration_keys
    footprint_what = "the database (pgbench scale) with its WAL"
    footprint_key = "scale"

    def scale(self, params: dict[str, Value], scale: float) -> dict[str, Value]:
        """`--scale` shrinks the database (pgbench's scale factor, at least 1) and the run."""
        if scale == 1.0:
            return params
        out = dict(params)
        if isinstance(out.get("scale"), int):
            out["scale"] = max(1, int(int(out["scale"]) * scale))  # type: ignore[arg-type]
        if isinstance(out.get("duration"), float):
            out["duration"] = max(MIN_RUNTIME_S, round(float(out["duration"]) * scale, 3))  # type: ignore[arg-type]
        return out

    def label(self, point: Point) -> str:
        """`ext4 pgbench s10 c4 j1`."""
        p = point.params
        return (f"{point.target.name} {point.workload} s{p.get('scale')} "
                f"c{p.get('clients')} j{p.get('jobs')}")  # fmt: skip

    def estimate_s(self, point: Point) -> float:
        init = int(point.params.get("scale", 1)) * PGBENCH_INIT_S_PER_SCALE
        return PG_START_S + init + float(point.params.get("duration", 0))

    def footprints(self, study: Study, point: Point) -> list[tuple[TargetSpec, int | None]]:
        # tables and indexes with room to grow, the cluster's own files and some WAL
        # (measured here after `pgbench -i -s 2`: 52 MiB under base/, 33 MiB of WAL, 85 in all)
        scale = int(point.params.get("scale", 1))
        return [(point.target, scale * PGBENCH_BYTES_PER_SCALE * 3 // 2 + (96 << 20))]

    def machine_problems(self, plan: Plan, place: str, workdir: Path) -> list[Problem]:
        """PostgreSQL and its user, and a work directory that user can reach."""
        where = f"{place}: pgbench"
        try:
            find_postgres()
            user = pg_user()
        except AppError as e:
            return [Problem(where, e.message, hint=f"{e.hint}; {DOCTOR_HINT}")]
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

    def run(self, ctx: RunContext, run_id: int, point: Point, prov: Provisioned) -> RunStatus:
        """A real PostgreSQL in the target: initialize, load, then the measured pgbench run
        from a cold cache with telemetry; the server is stopped whatever happens."""
        p = point.params
        spec = PgbenchSpec(
            scale=int(p["scale"]),
            clients=int(p["clients"]),
            jobs=int(p["jobs"]),
            duration_s=float(p["duration"]),
            builtin=str(p["builtin"]),
        )
        settings = {
            "shared_buffers": str(p["shared_buffers"]),
            "synchronous_commit": "on" if p.get("synchronous_commit", True) else "off",
        }
        tools = find_postgres()
        assert prov.owner is not None
        journal = ctx.db.journal(run_id)
        with cluster(prov.workdir, prov.owner, journal, tools, settings) as server:
            ctx.live(f"pgbench -i -s {spec.scale}")
            initialize(server, spec.scale)
            caches = drop_caches()
            effective = {**prov.effective, "caches": caches.as_dict(),
                         "postgres": {"version": tools.version, **settings}}  # fmt: skip
            ctx.db.set_effective(run_id, effective)
            ctx.live(f"pgbench -c {spec.clients} -j {spec.jobs}")
            every = interval_for(float(point.params.get("duration", 0) or 0))
            watch = ctx.watch(prov, every, pids=server.pids)
            try:
                result = run_pgbench(server, spec)
            finally:
                watch.stop()
        ctx.db.store_telemetry(run_id, 1.0, watch.data(), watch.summary(0, 0))
        ctx.db.add_metric(
            run_id, "txn", ios=result.transactions, iops=result.tps, lat_ns=result.latency_ns()
        )
        status = "ok" if result.failed == 0 else "failed"
        err = None if status == "ok" else f"{result.failed} pgbench transactions failed"
        ctx.db.finish_run(
            run_id, status, engine_json=json.dumps(result.as_dict()), error=err,
            runtime_s=result.duration_s,
        )  # fmt: skip
        return status, err


PGBENCH = PgbenchKind()
