"""`Kind`: everything the lab knows about one kind of workload, in one object.

fio gives each I/O engine one `struct ioengine_ops` and one file; fslab gives each
workload kind one `Kind` and one module (`fslab/kinds/<kind>.py`), registered in
`fslab.kinds.KINDS`. The planner, the pre-flight checks, the study reader and the runner
ask the kind instead of testing `kind == ...`: a new kind is one module here (and, when
the engine runs it, one module in the engine).

A kind holds:

- its spec model (`spec`, pydantic) and the keys it accepts (`keys`, with `aliases`: other
  spellings it takes, such as fio's `numjobs` for `threads`);
- how a value is made canonical (`normalize`: sizes in bytes, durations in seconds) and
  how a point is completed and shrunk by `--scale` (`point_params`, `scale`);
- what a point is called (`label`), which engine jobs it runs (`engine_jobs`, with the
  study words turned into the engine's by `engine_keys`, and back by `study_key` for the
  engine's errors), how long it takes (`estimate_s`), and what it stores on which target
  (`footprints`, with `footprint_what`/`footprint_key` for the message);
- what it needs from the machine (`machine_problems`), and its run step (`run`), which
  gets the runner as a `RunContext`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from fslab.engine import EngineRun, Report, SeriesPoint
from fslab.environment import drop_caches
from fslab.study.workload import LAB_KEYS, STEADY_PERCENT_KEYS, SweepSpec, Value
from fslab.telemetry.sampler import interval_for
from fslab.units import parse_duration, parse_size

if TYPE_CHECKING:
    from fslab.run import Watch
    from fslab.store.db import ResultsWriter
    from fslab.study.model import Study
    from fslab.study.plan import Plan, Point
    from fslab.study.problems import Problem
    from fslab.targets.provision import Provisioned
    from fslab.targets.spec import TargetSpec

# `--scale` never shrinks a run below a second or a test file below 16 MiB: shorter runs
# and smaller files measure start-up and caches, not the storage.
MIN_RUNTIME_S = 1.0
MIN_FILE_SIZE = 16 << 20
# How fast the engine lays out a test file here, for estimates only.
LAYOUT_BYTES_PER_S = 400 << 20
# The engine's steady-state window when a study leaves it out (docs/job-keys.md).
ENGINE_STEADY_WINDOW = 5
RunStatus = tuple[str, str | None]
"""A run's status (`ok`, `failed`, `interrupted`) and, unless ok, why."""
_STATUS = {0: "ok", 130: "interrupted"}


def run_status(exit_code: int) -> str:
    """The status of a run from the exit code of the engine that ran it."""
    return _STATUS.get(exit_code, "failed")


BOUNDED_S = 2.0
"""What a job a count of I/Os or bytes ends is expected to last, for its telemetry: its
length is the work's, not the runtime's, and a file written once can take a second. At
2 s telemetry samples every 0.1 s, so a device's bytes are counted over the job and not
over whole seconds around it."""


class RunContext(Protocol):
    """What a kind's run step gets from the runner (`fslab.run.Runner`): the results
    database, the engine, telemetry around a measured step, progress lines, and other
    targets a point touches (a files point's `source`)."""

    @property
    def db(self) -> ResultsWriter: ...

    @property
    def engine(self) -> Path: ...

    def watch(
        self,
        prov: Provisioned,
        interval_s: float,
        *,
        also: Provisioned | None = None,
        space_at: Path | None = None,
        pids: Callable[[], set[int]] | None = None,
    ) -> Watch:
        """Starts the telemetry sampler on `prov`'s devices (and `also`'s)."""
        ...

    def live(self, line: str) -> None:
        """Shows what the run does now (one short line)."""
        ...

    def engine_live(self, prefix: str = "") -> Callable[[SeriesPoint], None]:
        """A progress callback for `run_job` that shows the engine's live rates."""
        ...

    def run_engine(
        self,
        run_id: int,
        job: dict[str, Any],
        prov: Provisioned,
        progress_cb: Callable[[SeriesPoint], None] | None = None,
    ) -> EngineRun:
        """Runs the engine job `job` (its files inside `prov`): here, or on every rank of
        a multi-host run at once (`fslab.mpi_rank`), the ranks stored and merged into one
        report."""
        ...

    def other_target(self, name: str, run_id: int) -> AbstractContextManager[Provisioned]:
        """The study's target `name`, provisioned for this run (and torn down after it,
        unless the study reuses targets)."""
        ...


class Kind:
    """One workload kind. Subclasses set the class attributes and override what their
    kind does differently; the defaults suit a kind with no engine job and no data."""

    name: str
    """The study's `kind = "..."`, and `point.kind` in the results."""
    spec: type[SweepSpec]
    aliases: Mapping[str, str] = {}
    """Other spellings a study may use -> the study's word (normalized on reading)."""
    engine_keys: Mapping[str, str] = {}
    """Study words the engine spells otherwise -> the engine's job key."""
    size_keys: tuple[str, ...] = ()
    duration_keys: tuple[str, ...] = ()
    count_keys: tuple[str, ...] = ()
    """Keys that count something (threads, requests in flight): whole numbers from 1.
    The engine would say the same in its own words ("integer `-1`, expected u32")."""
    footprint_what: str = "the data"
    """What a point stores, for "... does not fit" (`footprints`)."""
    footprint_key: str = ""
    """The key that makes it smaller, for the hint."""

    def keys(self) -> list[str]:
        """Every key a workload of this kind accepts: the study's words, then the other
        spellings (for the closest-key suggestion of a misspelt one)."""
        return [*self.spec.model_fields, *self.aliases]

    def canonical(self, key: str) -> str:
        """The study's word for `key` (`numjobs` -> `threads` for a block workload)."""
        return self.aliases.get(key, key)

    def engine_key(self, key: str) -> str:
        return self.engine_keys.get(key, key)

    def study_key(self, engine_key: str) -> str:
        """The study's word for an engine job key, for the engine's messages."""
        for ours, theirs in self.engine_keys.items():
            if theirs == engine_key:
                return ours
        return engine_key

    def normalize(self, key: str, value: Value) -> Value:
        """A parameter in canonical form: sizes in bytes, durations in seconds; raises
        ValueError saying why a value is none of what its key takes."""
        if isinstance(value, list):
            return value
        if key in self.count_keys and (
            isinstance(value, bool) or not isinstance(value, int) or value < 1
        ):
            raise ValueError(f"{value} is not a count (1 or more)")
        if key in self.size_keys:
            return parse_size(value) if not isinstance(value, float | bool) else value
        if key in self.duration_keys:
            return parse_duration(value)
        return value

    def point_params(
        self, workload: SweepSpec, params: dict[str, Value], scale: float
    ) -> dict[str, Value]:
        """One point's parameters from one value per axis (already normalized): completed
        with what the kind derives from the workload, then scaled."""
        return self.scale(params, scale)

    def scale(self, params: dict[str, Value], scale: float) -> dict[str, Value]:
        """`--scale`: the point shrunk for a quick run (with floors)."""
        return params

    def label(self, point: Point) -> str:
        raise NotImplementedError

    def engine_jobs(self, point: Point, directory: Path) -> list[dict[str, Any]]:
        """Every engine job the point runs, its files inside `directory` (none for a kind
        that runs a real program)."""
        return []

    def estimate_s(self, point: Point) -> float:
        """About how long one run of the point takes, besides making its target."""
        return 0.0

    def footprints(self, study: Study, point: Point) -> list[tuple[TargetSpec, int | None]]:
        """What a point stores on each target it touches (None: not known before)."""
        return [(point.target, None)]

    def machine_problems(self, plan: Plan, place: str, workdir: Path) -> list[Problem]:
        """What points of this kind need from this machine that it lacks."""
        return []

    def plan_notes(self, points: list[Point]) -> list[str]:
        """What `fslab plan` should say about this kind's points beyond the targets' own
        side effects (what else they touch, and how)."""
        return []

    def run(self, ctx: RunContext, run_id: int, point: Point, prov: Provisioned) -> RunStatus:
        """Runs one repetition of `point` on the provisioned target and stores it
        (`ctx.db.finish_run`)."""
        raise NotImplementedError


def percent(value: Value) -> float:
    """A percentage as the engine takes it (`"20%"` or 20) in percent; ValueError says
    why a value is not one."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str) and value.strip().endswith("%"):
        try:
            return float(value.strip()[:-1])
        except ValueError:
            pass
    raise ValueError(f'{value!r} is not a percentage; write e.g. "20%", or 20')


def scale_sizes_and_times(params: dict[str, Value], scale: float) -> dict[str, Value]:
    """An engine job's test file (`file_size`), its amount of I/O (`io_size`), runtime
    and ramp, shrunk by `scale` (sizes in whole MiB), never below the floors."""
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


def _num(params: Mapping[str, Value], key: str, default: float) -> float:
    """A number of the point's, `default` where it has none."""
    v = params.get(key)
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else default


class EngineJobKind(Kind):
    """A kind the engine runs as one job per point (block, the application models): one
    engine job from a cold cache, with telemetry."""

    layout_keys: tuple[str, ...] = ()
    """The keys whose bytes the engine lays out before it measures (for the estimate)."""

    def job(self, point: Point, directory: Path) -> dict[str, Any]:
        """The point's engine job, its files inside `directory`."""
        raise NotImplementedError

    def engine_params(self, point: Point) -> dict[str, Any]:
        """The point's parameters under the engine's names, with steady state on unless
        the point says otherwise or cannot hold a window (`steady_params`)."""
        params = {self.engine_key(k): v for k, v in point.params.items() if k not in LAB_KEYS}
        return {**self.steady_params(params), **params}

    def normalize(self, key: str, value: Value) -> Value:
        if key in STEADY_PERCENT_KEYS and not isinstance(value, list):
            return percent(value)
        return super().normalize(key, value)

    def default_round_s(self, params: Mapping[str, Value]) -> float:
        """The engine's `steady_round` when the point leaves it out."""
        return 1.0

    def steady_params(self, params: Mapping[str, Value]) -> dict[str, Any]:
        """`steady_state = true` for a point that leaves it unset and whose runtime can
        hold one window of rounds: a study stops each run once steady, with `runtime` as
        the cap. A shorter run (a demo's seconds, `--scale`) could never be steady, and
        its `not_steady` warning would take every verdict away: it runs its `runtime` as
        without steady state; so does a job that ends after a count of I/Os
        (`number_ios`: a file written once), whose work, not a window, is the measure.
        Nothing when the point sets `steady_state` itself."""
        if "steady_state" in params or params.get("number_ios") is not None:
            return {}
        runtime = params.get("runtime")
        if not isinstance(runtime, int | float) or isinstance(runtime, bool):
            return {}
        interval = _num(params, "interval", 1.0)
        ramp = _num(params, "ramp_time", 0.0)
        judged_from = math.ceil(ramp / interval - 1e-9) * interval
        if ramp + float(runtime) - judged_from < self.window_s(params) - 1e-9:
            return {}
        return {"steady_state": True}

    def keep_window(self, full: Mapping[str, Value], scaled: dict[str, Value]) -> dict[str, Value]:
        """`scaled` (a point's parameters after `--scale`), its runtime raised to one
        steady-state window where the point would run to steady state at full scale: a
        shorter run measures start-up (issue #33). Sizes and everything else stay scaled;
        a point that turns steady state off keeps its time."""
        if full.get("steady_state") is False:
            return scaled
        if full.get("steady_state") is not True and not self.steady_params(full):
            return scaled
        runtime = scaled.get("runtime")
        if not isinstance(runtime, float):
            return scaled
        interval = _num(scaled, "interval", 1.0)
        ramp = _num(scaled, "ramp_time", 0.0)
        judged_from = math.ceil(ramp / interval - 1e-9) * interval
        need = round(self.window_s(scaled) + judged_from - ramp, 3)
        if runtime >= need:
            return scaled
        # One window long, a run has one chance to be steady, and an unsteady run is not
        # counted: measured at the mailstore example's --scale 0.05, 24 of 27 runs were lost.
        # So it runs the window's length without judging steadiness, unless asked to.
        steady = full.get("steady_state") is True
        return {**scaled, "runtime": need, "steady_state": steady}

    def window_s(self, params: Mapping[str, Value]) -> float:
        """The shortest steady-state window of a point's engine job: `steady_window`
        rounds, each whole intervals (the engine's defaults where the point sets none)."""
        interval = _num(params, "interval", 1.0)
        round_s = _num(params, "steady_round", self.default_round_s(params))
        window = _num(params, "steady_window", float(ENGINE_STEADY_WINDOW))
        return window * math.ceil(round_s / interval - 1e-9) * interval

    def engine_jobs(self, point: Point, directory: Path) -> list[dict[str, Any]]:
        return [self.job(point, directory)]

    def shortest_s(self, point: Point) -> float:
        """The least a run of the point can measure: its runtime, or one steady-state
        window where the run may stop once steady, or `BOUNDED_S` where a count of I/Os
        or bytes may end it sooner (for telemetry's sampling interval)."""
        params = self.engine_params(point)
        runtime = _num(params, "runtime", 0.0)
        if params.get("number_ios") is not None or params.get("io_size") is not None:
            return min(runtime, BOUNDED_S) if runtime else BOUNDED_S
        if params.get("steady_state") is not True:
            return runtime
        return min(runtime, self.window_s(params)) if runtime else self.window_s(params)

    def estimate_s(self, point: Point) -> float:
        runtime = float(point.params.get("runtime", 0) or 0)
        ramp = float(point.params.get("ramp_time", 0) or 0)
        size = sum(int(point.params.get(k, 0) or 0) for k in self.layout_keys)
        return runtime + ramp + size / LAYOUT_BYTES_PER_S

    def run_metrics(self, report: Report) -> dict[str, float]:
        """Numbers kept per run besides the per-operation results (`run_metric`)."""
        return {}

    def run(self, ctx: RunContext, run_id: int, point: Point, prov: Provisioned) -> RunStatus:
        caches = drop_caches()
        ctx.db.set_effective(run_id, {**prov.effective, "caches": caches.as_dict()})
        given = point.params.get("interval")
        watch = ctx.watch(prov, float(given) if given else interval_for(self.shortest_s(point)))
        try:
            result = ctx.run_engine(
                run_id, self.job(point, prov.workdir), prov,
                progress_cb=watch.follow(ctx.engine_live()),
            )  # fmt: skip
        finally:
            watch.stop()
        watch.store_block(ctx.db, run_id, result.report)
        metrics = self.run_metrics(result.report)
        if metrics:
            ctx.db.add_run_metrics(run_id, metrics)
        status = run_status(result.exit_code)
        err = None if status == "ok" else (result.stderr.strip() or result.report.status)
        ctx.db.finish_run(
            run_id, status, report=result.report, engine_json=result.stdout, error=err
        )
        return status, err
