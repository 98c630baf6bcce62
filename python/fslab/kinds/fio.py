"""`kind = "fio"`: a user's fio job file, run by the engine on every target.

The engine reads the file with fio's grammar and runs its jobs as fio would (phases,
groups; docs/fio.md). The lab moves every job's files into the target (`--within`: a
job file written for another machine touches nothing outside it), sets swept keys on
every job (`bs = ["4k", "64k"]` is a sweep axis like in a block workload, `--set` to the
engine), and stores one run per point: the jobs named by `measure` (default: all) as one
result, counts summed and histograms added over their span, as fio's `group_reporting`
does; each job's own report stays in the run's engine document. The file's text and
hash are kept with the run; the hash is part of the point, so results of an edited file
never mix with the old ones.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field, ValidationInfo, field_validator

from fslab.catalog.fio import ENTRY
from fslab.engine import FioJobRun, Report, check_fio, merge_reports, run_fio
from fslab.environment import drop_caches
from fslab.errors import FslabError, JobError
from fslab.kinds.base import (
    LAYOUT_BYTES_PER_S,
    MIN_FILE_SIZE,
    Kind,
    RunContext,
    RunStatus,
    run_status,
)
from fslab.params import format_param
from fslab.study.problems import Problem, where
from fslab.study.workload import NAME_PATTERN, Param, SweepSpec, Value, beside_the_study
from fslab.telemetry.sampler import interval_for
from fslab.textfile import NotText, read_text

if TYPE_CHECKING:
    from fslab.study.model import Study
    from fslab.study.plan import Plan, Point
    from fslab.targets.provision import Provisioned
    from fslab.targets.spec import TargetSpec

KIND = "fio"
LAB_PARAMS = ("job_file", "job_file_sha256")
"""A point's parameters that are not engine keys: the file and its hash."""


class FioWorkloadSpec(SweepSpec):
    """A fio job file; the other keys are engine keys set on every job of it (a list is
    a sweep axis)."""

    NOT_AXES: ClassVar[frozenset[str]] = frozenset({"kind", "name", "targets", "measure"})

    kind: Literal["fio"]
    name: str | None = Field(None, pattern=NAME_PATTERN, max_length=64)
    targets: list[str] | None = Field(None, min_length=1)
    job_file: str
    """The fio job file, relative to the study file."""
    measure: list[str] | None = Field(None, min_length=1)
    """The jobs (by name) whose results make the run's; default all."""
    rw: Param | None = None
    bs: Param | None = None
    size: Param | None = None
    io_size: Param | None = None
    numjobs: Param | None = None
    iodepth: Param | None = None
    runtime: Param | None = None
    ramp_time: Param | None = None
    direct: Param | None = None
    ioengine: Param | None = None
    rwmixread: Param | None = None
    fsync: Param | None = None
    randseed: Param | None = None
    replay_no_stall: Param | None = None
    """A recording's replay (`read_iolog`): as fast as each I/O allows, or at its times."""
    replay_time_scale: Param | None = None

    @field_validator("job_file")
    @classmethod
    def _beside_the_study(cls, v: str, info: ValidationInfo) -> str:
        return str(beside_the_study(v, info))


@cache
def _text(path: str) -> str:
    """The job file's text: a regular file of bounded size (`NotText` otherwise)."""
    return read_text(Path(path), what="fio job file")


def _sha(path: str) -> str:
    return hashlib.sha256(_text(path).encode()).hexdigest()[:16]


def _measured(point: Point) -> list[str] | None:
    """The jobs whose results make the point's (`measure`); None: all."""
    return getattr(point.workload_spec, "measure", None)


def _sets(point: Point) -> dict[str, Any]:
    return _engine_sets(point.params)


def _engine_sets(params: Mapping[str, Any]) -> dict[str, Any]:
    """The engine keys a point sets on every job of its file (`--set`)."""
    return {k: v for k, v in params.items() if k not in LAB_PARAMS}


class FioKind(Kind):
    name = KIND
    spec = FioWorkloadSpec
    size_keys = ENTRY.size_keys
    duration_keys = ENTRY.duration_keys
    count_keys = ENTRY.count_keys
    footprint_what = "the job file's files"
    footprint_key = "size"

    def point_params(
        self, workload: SweepSpec, params: dict[str, Value], scale: float
    ) -> dict[str, Value]:
        out = dict(params)
        path = str(out["job_file"])
        # An unreadable file is said by machine_problems, at the study's line.
        with contextlib.suppress(NotText):
            out["job_file_sha256"] = _sha(path)
        if scale < 1.0 and "size" not in out:
            # `--scale` shrinks the file's data like a block workload's: every job's
            # `size` at most the largest one scaled (16 MiB at least).
            plan = _checked(path, json.dumps(_engine_sets(out), sort_keys=True))
            largest = max((int(j["job"].get("size") or 0) for j in (plan or {}).get("jobs", [])),
                          default=0)  # fmt: skip
            scaled = max(MIN_FILE_SIZE, int(largest * scale) >> 20 << 20)
            if largest > scaled:
                out["size"] = scaled
        return out

    def label(self, point: Point) -> str:
        sets = " ".join(f"{k}={format_param(k, v)}" for k, v in _sets(point).items())
        name = Path(str(point.params["job_file"])).name
        return f"{point.target.name} {point.workload} {name}" + (f" {sets}" if sets else "")

    def _plan(self, point: Point) -> dict[str, Any] | None:
        """The engine's plan of the point's job file (`check --format json`), or None."""
        return _checked(str(point.params["job_file"]), json.dumps(_sets(point), sort_keys=True))

    def estimate_s(self, point: Point) -> float:
        plan = self._plan(point)
        if plan is None:
            return 0.0
        total = 0.0
        for phase in sorted({j["phase"] for j in plan["jobs"]}):
            jobs = [j["job"] for j in plan["jobs"] if j["phase"] == phase]
            total += max(
                (j.get("runtime") or 0) + (j.get("ramp_time") or 0)
                + (j.get("size") or 0) * j.get("numjobs", 1) / LAYOUT_BYTES_PER_S
                for j in jobs
            )  # fmt: skip
        return total

    def footprints(self, study: Study, point: Point) -> list[tuple[TargetSpec, int | None]]:
        plan = self._plan(point)
        if plan is None:
            return [(point.target, None)]
        files: dict[str, int] = {}
        for j in plan["jobs"]:
            job = j["job"]
            size = int(job.get("size") or 0)
            if job.get("filename"):
                files[job["filename"]] = max(files.get(job["filename"], 0), size)
            else:
                for clone in range(int(job.get("numjobs", 1))):
                    files[f"{job['name']}.{clone}.0"] = size
        return [(point.target, sum(files.values()))]

    def machine_problems(self, plan: Plan, place: str, workdir: Path) -> list[Problem]:
        """The engine's view of every distinct job file and set of swept keys: all its
        problems, at the workload's `job_file` line."""
        from fslab.study.plan import workload_name

        study = plan.study
        index = {workload_name(w, i, study.workload): i for i, w in enumerate(study.workload)}
        problems: list[Problem] = []
        seen: set[tuple[str, str]] = set()
        for p in plan.points:
            if p.kind != KIND:
                continue
            i = index[p.workload]
            key = (str(p.params["job_file"]), json.dumps(_sets(p), sort_keys=True))
            if key in seen:
                continue
            seen.add(key)
            at = where(study, "workload", i, "job_file", place=place)
            try:
                _text(key[0])
            except NotText as e:
                hint = f"{e.hint} (a job file is found relative to the study file)"
                problems.append(Problem(at, f"`{key[0]}`: {e.message}", hint))
                continue
            answer = _check(*key)
            for prob in answer.get("problems", []):
                said = f"{prob['place']}"
                if prob.get("section"):
                    said += f" [{prob['section']}]"
                if prob.get("option"):
                    said += f" {prob['option']}"
                problems.append(Problem(at, f"{said}: {prob['message']}", hint=prob.get("hint")))
            names = {j["name"] for j in (answer.get("plan") or {}).get("jobs", [])}
            for name in _measured(p) or []:
                if answer.get("plan") and name not in names:
                    problems.append(Problem(
                        where(study, "workload", i, "measure", place=place),
                        f"`{name}` is not a job of {Path(key[0]).name}",
                        hint=f"its jobs: {', '.join(sorted(names))}",
                    ))  # fmt: skip
        return problems

    def run(self, ctx: RunContext, run_id: int, point: Point, prov: Provisioned) -> RunStatus:
        path = Path(str(point.params["job_file"]))
        try:
            text = _text(str(path))
        except NotText as e:
            raise JobError(f"{path}: {e.message}", hint=e.hint) from e
        caches = drop_caches()
        effective = {
            **prov.effective, "caches": caches.as_dict(),
            "job_file": {"path": str(path), "sha256": hashlib.sha256(text.encode()).hexdigest(),
                         "text": text},
        }  # fmt: skip
        ctx.db.set_effective(run_id, effective)
        plan = self._plan(point)
        jobs = (plan or {}).get("jobs", [])
        shortest = min((float(j["job"].get("runtime") or 1.0) for j in jobs), default=1.0)
        watch = ctx.watch(prov, interval_for(shortest))
        ctx.live(f"fio job file {path.name}")
        try:
            done = run_fio(path, within=prov.workdir, sets=_sets(point), engine=ctx.engine)
        finally:
            watch.stop()
        wanted = _measured(point)
        measured = [j for j in done.jobs if wanted is None or j.name in wanted]
        # Every job's own numbers, the measured ones and the others, beside the job file.
        jobs = [_job_line(j, wanted is None or j.name in wanted) for j in done.jobs]
        ctx.db.set_effective(run_id, {**effective, "fio_jobs": jobs})
        report = merge_jobs(measured, engine=ctx.engine)
        watch.store_block(ctx.db, run_id, report)
        status = run_status(done.exit_code)
        err = None
        if status != "ok":
            errs = [f"[{j.name}] {j.error}" for j in done.jobs if j.error]
            err = "; ".join(errs) or done.stderr.strip() or report.status
        # The run's report is the measured jobs as one, in the engine's report shape (as a
        # block run's): its warnings, series and steadiness are what the read side judges.
        stored = report.model_dump_json(by_alias=True)
        ctx.db.finish_run(run_id, status, report=report, engine_json=stored, error=err)
        return status, err


@cache
def _checked(path: str, sets_json: str) -> dict[str, Any] | None:
    answer = _check(path, sets_json)
    return answer.get("plan") if answer.get("ok") else None


@cache
def _check(path: str, sets_json: str) -> dict[str, Any]:
    try:
        _text(path)
    except NotText:
        return {"ok": False, "problems": []}  # said by machine_problems
    # Files moved into a directory that is never made: check touches nothing.
    return check_fio(Path(path), within=Path("/fslab-plan"), sets=json.loads(sets_json))


def _job_line(job: FioJobRun, measured: bool) -> dict[str, Any]:
    """One job of the file as the run's `effective` keeps it: where it is, whether it is
    measured, how it ended and its operations' rates."""
    r = job.report
    return {
        "name": job.name, "place": job.place, "phase": job.phase, "group": job.group,
        "measured": measured, "error": job.error,
        "status": r.status if r else None, "runtime_s": r.runtime_s if r else None,
        "ops": {x.op: {"iops": x.iops, "bw_bytes": x.bw_bytes, "lat_mean_ns": x.lat_ns.mean}
                for x in (r.results if r else ())},
        "warnings": [w.kind for w in r.warnings] if r else [],
    }  # fmt: skip


def merge_jobs(jobs: Sequence[FioJobRun], *, engine: Path | None = None) -> Report:
    """The measured jobs of a job file as one report, by the engine's one rule
    (`fslab-engine merge`, `how = "jobs"`): per operation, counts summed and histograms
    added; rates over the span from the earliest measured start to the latest measured
    end; the series summed per interval of wall-clock time; each job's warnings named by
    it. Raises JobError when no measured job reported."""
    if not any(j.report is not None for j in jobs):
        failed = "; ".join(f"[{j.name}] {j.error}" for j in jobs if j.error)
        raise JobError(f"no job of the file reported{': ' + failed if failed else ''}")
    # A job another job's `exitall` kept from starting has no report, and no error.
    parts = [(f"[{j.name}]", j.report) for j in jobs if j.report is not None or j.error]
    return merge_reports("jobs", parts, engine=engine)


FIO = FioKind()

__all__ = ["FIO", "KIND", "FioKind", "FioWorkloadSpec", "FslabError", "merge_jobs"]
