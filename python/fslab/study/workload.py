"""What the spec of every workload kind shares: parameter values and sweep axes.

A workload's keys are its kind's (`fslab.kinds`); any key given as a list is a sweep axis
(`SweepSpec.params`), unless the kind says it is one structured value (`STRUCTURED`) or no
axis at all (`NOT_AXES`). A leaf of `fslab.study`: the kinds build on it, and the study
model imports the kinds.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, ValidationInfo, model_validator

Scalar = str | int | float | bool
Param = Scalar | list[Scalar]
Value = Scalar | list[Any]
"""A point's parameter value: a scalar, or a structured one such as `size_buckets`."""
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$"
"""What a workload's (and a target's) `name` may be: it becomes part of paths."""


def beside_the_study(path: str, info: ValidationInfo) -> Path:
    """A path a study names (a fio job file, a baseline's results): as given when absolute,
    else beside the study file (`study_dir` in the validation context, set by
    `fslab.study.load`)."""
    base = (info.context or {}).get("study_dir")
    p = Path(path)
    return Path(base) / p if not p.is_absolute() and base is not None else p


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SweepSpec(Strict):
    """A workload whose list-valued keys are sweep axes; `name`, `kind` and `targets`
    are not, and a key in `STRUCTURED` holds a list as one value (a list of those is
    the sweep)."""

    NOT_AXES: ClassVar[frozenset[str]] = frozenset({"kind", "name", "targets", "latency_limit"})
    STRUCTURED: ClassVar[dict[str, Callable[[list[Any]], list[list[Any]]]]] = {}

    def params(self) -> dict[str, list[Any]]:
        """Every parameter as a list of values (a sweep axis of length 1 when scalar);
        unset ones (None) are left to the engine's defaults."""
        out: dict[str, list[Any]] = {}
        for key, value in self.model_dump(exclude=set(self.NOT_AXES)).items():
            if value is None:
                continue
            if key in self.STRUCTURED:
                out[key] = list(self.STRUCTURED[key](value))
            else:
                out[key] = list(value) if isinstance(value, list) else [value]
        return out

    @model_validator(mode="before")
    @classmethod
    def _no_empty_axes(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for k, v in data.items():
                if isinstance(v, list) and not v and k not in cls.NOT_AXES:
                    raise ValueError(f"`{k}` is an empty list: a sweep axis needs a value")
        return data


LIMIT_PERCENTILES = {99: "lat_p99_ns"}
"""The latency percentiles a `latency_limit` may hold, and the metric each is: those
the comparison keeps per operation."""


class LatencyLimit(Strict):
    """The most load under a latency limit (`latency_limit = { vary = "iodepth", under =
    "2ms" }`): of the values of the sweep axis `vary` (a load: queue depth, threads, an
    offered rate), the highest at which every run's `percentile` latency of every
    operation (or of `op`) stays under `under`, per target; compared across targets by the
    rate achieved there (docs/statistics.md, "The most load under a latency limit")."""

    vary: str
    under: str | float
    """The limit: a duration (`"2ms"`), or a number of seconds."""
    percentile: int = 99
    op: str | None = None
    """Only this operation's latency (`read`, `write`, ...); default every one."""

    @model_validator(mode="after")
    def _known_percentile(self) -> LatencyLimit:
        if self.percentile not in LIMIT_PERCENTILES:
            raise ValueError(
                f"`percentile` = {self.percentile}: the runs keep "
                + " and ".join(f"p{p}" for p in LIMIT_PERCENTILES)
            )
        return self


class LimitSweepSpec(SweepSpec):
    """A workload that may ask for the most load under a latency limit: `vary` must be
    one of its own sweep axes, with two values or more."""

    latency_limit: LatencyLimit | None = None

    @model_validator(mode="after")
    def _limit_varies_an_axis(self) -> LimitSweepSpec:
        limit = self.latency_limit
        if limit is None:
            return self
        values = self.params().get(limit.vary)
        if values is None or limit.vary in self.NOT_AXES:
            raise ValueError(
                f"latency_limit.vary = `{limit.vary}` is not a key of this workload: name the "
                "sweep axis that is the load (`iodepth`, `threads`, `rate_iops`)"
            )
        if len(values) < 2 or not all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in values
        ):
            raise ValueError(
                f"latency_limit.vary = `{limit.vary}` needs a list of two loads or more, "
                f"numbers (`{limit.vary} = [1, 4, 16, 64]`)"
            )
        return self


STEADY_PERCENT_KEYS = ("steady_range", "steady_slope")
"""The steady-state keys that are percentages (a number of percent once planned)."""
LAB_KEYS = ("ranks", "diskspd")
"""Keys of an engine workload the lab acts on itself and never passes to the engine."""


class SteadySpec(LimitSweepSpec):
    """The engine's steady-state keys (docs/engine.md, "Steady state"), which every
    workload the engine runs for a time takes (block, oltp, mailstore): the run stops
    once its rate is steady, `runtime` is only the cap, and the results cover the steady
    window. Left unset, steady state is on wherever the runtime can hold a window
    (`fslab.kinds.base.EngineJobKind.steady_params`); unset keys take the engine's
    defaults. Like any key, a list is a sweep axis (`steady_state = [false, true]`)."""

    steady_state: Param | None = None
    ranks: Param | None = None
    """Ranks (clients) per host in a multi-host run (`fslab run --hosts`,
    docs/multihost.md): a sweep axis like `threads`; the lab's, never the engine's."""
    steady_round: Param | None = None
    steady_window: Param | None = None
    steady_range: Param | None = None
    steady_slope: Param | None = None
    steady_measure: Param | None = None
