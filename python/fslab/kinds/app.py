"""`kind = "oltp"` and `kind = "mailstore"`: the engine's application I/O models
(engine/src/app/), a data file and a log file under the target, `threads` users, sync
I/O. Keys are the engine's (docs/job-keys.md) but `threads` (the engine's `numjobs`) and
`runtime`; unset ones take the engine's default.

Besides the per-operation results (`metric` table), a run keeps these numbers of the
engine's `app` section in `run_metric` (`app_metrics`):
- `jetstress.<key>`: the mailstore's JetStress set (`transactional_iops`,
  `db_read_lat_ns`, ...), as the engine computed it (latencies turned from ms to ns,
  the store's unit);
- `verdict.pass` (1 or 0) and `verdict.<check>.pass`: the mailstore's verdict against its
  thresholds, with `verdict.<check>.max` the threshold it was judged by;
- `app.<key>`: what explains the numbers: the cache's hit ratio, log records per flush,
  checkpoints and their peak rate.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field, field_validator

from fslab.catalog import Entry
from fslab.catalog.app import MAILSTORE as MAILSTORE_ENTRY
from fslab.catalog.app import OLTP as OLTP_ENTRY
from fslab.engine import App, Report
from fslab.kinds.base import MIN_FILE_SIZE, EngineJobKind, scale_sizes_and_times
from fslab.study.workload import NAME_PATTERN, Param, SteadySpec, Value
from fslab.units import format_bytes

if TYPE_CHECKING:
    from fslab.study.model import Study
    from fslab.study.plan import Point
    from fslab.targets.spec import TargetSpec

MIN_LOG_SIZE = 1 << 20
MIN_CHECKPOINT_S = 0.5
# The engine's defaults when a study leaves them out (docs/job-keys.md), for capacity
# and for how long a steady-state round is.
ENGINE_DATA_SIZE = 256 << 20
ENGINE_LOG_SIZE = 64 << 20
ENGINE_CHECKPOINT_S = {"oltp": 5.0, "mailstore": 1.0}


def mix_sweep(v: list[Any]) -> list[list[Any]]:
    """`op_mix` as a list of values: `[40, 20, 5, 35]` is one, a list of those a sweep."""
    if v and all(isinstance(x, list) for x in v):
        return v
    return [v]


class AppWorkloadSpec(SteadySpec):
    """An application I/O model in the engine (`kind = "oltp"` or `"mailstore"`): a data
    file and a log file under the target, `threads` users, sync I/O. Keys are the engine's
    (docs/job-keys.md) but `threads` and `runtime`; unset ones take the engine's default.
    Lists are sweep axes."""

    name: str | None = Field(None, pattern=NAME_PATTERN, max_length=64)
    targets: list[str] | None = Field(None, min_length=1)
    threads: Param = 8
    runtime: Param = "30s"
    ramp_time: Param = "0s"
    data_size: Param = "1GiB"
    log_size: Param = "64MiB"
    page_size: Param | None = None
    cache_size: Param | None = None
    checkpoint_interval: Param | None = None
    log_record_size: Param | None = None
    direct: Param | None = None
    uncached: Param | None = None
    """With `direct = false`: data and log I/O carry RWF_DONTCACHE, so it reaches the
    devices and leaves no page cache behind (fscrypt's buffered fallback measured)."""
    randseed: Param | None = None
    interval: Param | None = None


class OltpWorkloadSpec(AppWorkloadSpec):
    """A database's I/O (TPC-E-like): 8 KiB page reads and updates, a log appended and
    fsynced per commit, checkpoints that flush dirty pages in bursts, read-ahead scans."""

    kind: Literal["oltp"]
    txn_reads: Param | None = None
    txn_writes: Param | None = None
    scan_share: Param | None = None
    scan_size: Param | None = None


class MailstoreWorkloadSpec(AppWorkloadSpec):
    """An Exchange-like mail store's I/O (JetStress): 32 KiB pages behind a buffer cache,
    an insert/delete/replace/read mix, lazy commits, background maintenance; each run
    gets a PASS/FAIL verdict against `read_lat_ms_max` and `log_lat_ms_max`."""

    STRUCTURED: ClassVar[dict[str, Callable[[list[Any]], list[list[Any]]]]] = {"op_mix": mix_sweep}

    kind: Literal["mailstore"]
    threads: Param = 12
    cache_size: Param | None = "64MiB"
    # `[insert, delete, replace, read]` is one value; a list of such lists is a sweep.
    op_mix: list[Any] | None = None
    lazy_commit_share: Param | None = None
    maintenance_rate: Param | None = None
    read_lat_ms_max: Param | None = None
    log_lat_ms_max: Param | None = None

    @field_validator("op_mix")
    @classmethod
    def _mix(cls, v: list[Any] | None) -> list[Any] | None:
        if v is None:
            return v
        for mix in mix_sweep(v):
            if (
                len(mix) != 4
                or any(isinstance(x, bool) or not isinstance(x, int | float) or x < 0 for x in mix)
                or not sum(mix) > 0
            ):
                raise ValueError(
                    f"`{mix}` is not an op mix: write four weights [insert, delete, replace, "
                    "read], e.g. `[40, 20, 5, 35]`"
                )
        return v


def app_metrics(app: App) -> dict[str, float]:
    """The run metrics of an engine report's `app` section (see the module text)."""
    out: dict[str, float] = {}
    if app.jetstress is not None:
        for key, value in app.jetstress.model_dump().items():
            if key.endswith("_lat_ms"):
                key, value = key.removesuffix("_ms") + "_ns", value * 1e6
            out[f"jetstress.{key}"] = float(value)
    if app.verdict is not None:
        out["verdict.pass"] = 1.0 if app.verdict.passed else 0.0
        for check in app.verdict.checks:
            out[f"verdict.{check.name}.pass"] = 1.0 if check.passed else 0.0
            out[f"verdict.{check.name}.max"] = check.max
    if app.cache.lookups:
        out["app.cache_hit_pct"] = 100.0 * app.cache.hit_ratio
    out["app.records_per_flush"] = app.commits.records_per_flush
    # The last checkpoint is the job's final flush, not part of the steady rhythm.
    checkpoints = [c for c in app.checkpoints if not c.last]
    out["app.checkpoints"] = float(len(checkpoints))
    if checkpoints:
        out["app.checkpoint_pages_max"] = float(max(c.pages for c in checkpoints))
        out["app.checkpoint_iops_peak"] = max(c.iops for c in checkpoints)
    return out


class AppKind(EngineJobKind):
    """One of the engine's application models; `oltp` and `mailstore` differ only in
    their spec (and the engine's model)."""

    engine_keys: Mapping[str, str] = {"threads": "numjobs"}
    duration_keys = OLTP_ENTRY.duration_keys
    count_keys = OLTP_ENTRY.count_keys
    footprint_what = "the data and log files"
    footprint_key = "data_size"
    layout_keys = ("data_size", "log_size")

    def __init__(self, spec: type[AppWorkloadSpec], entry: Entry) -> None:
        self.name = entry.name
        self.spec = spec
        self.size_keys = entry.size_keys

    def normalize(self, key: str, value: Value) -> Value:
        if key == "op_mix" and isinstance(value, list):
            return [float(x) for x in value]
        return super().normalize(key, value)

    def scale(self, params: dict[str, Value], scale: float) -> dict[str, Value]:
        """`--scale` shrinks the run, the data file and the log; the buffer cache shrinks
        with the data file (the share of reads it serves stays), checkpoints come as often
        per run."""
        if scale == 1.0:
            return params
        out = scale_sizes_and_times(params, scale)
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
        return self.keep_window(params, out)

    def default_round_s(self, params: Mapping[str, Value]) -> float:
        """The engine's: one checkpoint (and its dip in the rate) per round."""
        ckpt = params.get("checkpoint_interval", ENGINE_CHECKPOINT_S[self.name])
        return max(1.0, float(ckpt) if isinstance(ckpt, int | float) else 0.0)

    def label(self, point: Point) -> str:
        """`ext4 store x12 cache 64MiB`."""
        p = point.params
        cache = p.get("cache_size")
        return (
            f"{point.target.name} {point.workload} x{p.get('threads', 1)}"
            + (f" cache {format_bytes(cache)}" if isinstance(cache, int) else "")
            + (f" {p['ranks']} ranks/host" if "ranks" in p else "")
        )

    def job(self, point: Point, directory: Path) -> dict[str, Any]:
        """The model's data and log files (`fslab.data`, `fslab.log`) inside `directory`;
        the models do sync I/O only (docs/engine.md)."""
        return {"kind": self.name, "name": "fslab", "directory": str(directory),
                "ioengine": "sync", **self.engine_params(point)}  # fmt: skip

    def footprints(self, study: Study, point: Point) -> list[tuple[TargetSpec, int | None]]:
        data = point.params.get("data_size", ENGINE_DATA_SIZE)
        log = point.params.get("log_size", ENGINE_LOG_SIZE)
        return [(point.target, int(data) + int(log))]

    def run_metrics(self, report: Report) -> dict[str, float]:
        return app_metrics(report.app) if report.app is not None else {}


OLTP = AppKind(OltpWorkloadSpec, OLTP_ENTRY)
MAILSTORE = AppKind(MailstoreWorkloadSpec, MAILSTORE_ENTRY)
