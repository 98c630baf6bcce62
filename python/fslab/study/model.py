"""A study as written: targets x workloads, typed and checked (pydantic, all errors at once).

Sizes are kept as the user wrote them (`"8GiB"`) and parsed with `parse_size`; the
resolved byte counts live in the plan. A target is `fslab.targets.spec.TargetSpec`; a
workload is one of the kinds in `fslab.kinds` (`kind = "block"` when it names none), each
with its own keys. Any workload parameter given as a list is a sweep axis.

The names below that live elsewhere now are re-exported so that older imports keep
working: the target parts (`TargetSpec`, `LoopSpec`, ...), the workload specs and their
constants (from their kind's module), and `parse_size` (`fslab.units`).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Literal

from pydantic import (
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from fslab.catalog import METRIC_NAMES
from fslab.kinds import AnySpec, AnyWorkload
from fslab.kinds.app import (
    AppWorkloadSpec,
    MailstoreWorkloadSpec,
    OltpWorkloadSpec,
    mix_sweep,
)
from fslab.kinds.block import BlockWorkloadSpec
from fslab.kinds.files import FILE_SETS, FileOp, FilesWorkloadSpec, bucket_sweep
from fslab.kinds.pgbench import PGBENCH_BUILTINS, PgbenchWorkloadSpec
from fslab.params import suggest
from fslab.safe_text import safe_text
from fslab.store.merge import LABEL_CHARS
from fslab.study.workload import Param, Scalar, Strict, SweepSpec, Value, beside_the_study
from fslab.targets.spec import (
    BTRFS_MIN_DEVICES,
    BTRFS_PROFILES,
    ENCRYPTIONS,
    FS_KINDS,
    LoopSpec,
    Size,
    TargetSpec,
)
from fslab.units import parse_duration, parse_percent, parse_size

WorkloadSpec = BlockWorkloadSpec
"""The block workload's spec (its old name)."""

__all__ = [
    "BTRFS_MIN_DEVICES",
    "BTRFS_PROFILES",
    "ENCRYPTIONS",
    "FILE_SETS",
    "FS_KINDS",
    "PGBENCH_BUILTINS",
    "AnySpec",
    "AnyWorkload",
    "AppWorkloadSpec",
    "BlockWorkloadSpec",
    "FileOp",
    "FilesWorkloadSpec",
    "LoopSpec",
    "MailstoreWorkloadSpec",
    "OltpWorkloadSpec",
    "Param",
    "PgbenchWorkloadSpec",
    "Scalar",
    "Size",
    "Strict",
    "Study",
    "SweepSpec",
    "TargetSpec",
    "Value",
    "WorkloadSpec",
    "bucket_sweep",
    "mix_sweep",
    "parse_size",
]


def _closest(name: str, names: list[str]) -> str:
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.5)
    return f"did you mean `{close[0]}`?" if close else "name one of the targets, or add it"


MAX_REPEAT = 100
MIN_MARGIN, MAX_MARGIN = 0.001, 0.5
MIN_BOUND, MAX_BOUND = 0.005, 0.5


def _percent_within(v: str | None, low: float, high: float, what: str, means: str) -> str | None:
    """A percentage key's check: `v` parses as a percentage between `low` and `high`."""
    if v is not None and not low <= parse_percent(v) <= high:
        raise ValueError(f"`{v}` is out of range: {what} is {low:.1%} to {high:.0%} ({means})")
    return v


class Repeat(Strict):
    """`repeat = { min = 3, max = 10 }`: every point `min` times, then more rounds of the
    points whose comparisons are still undecided, up to `max` (`fslab.stats.sequential`)."""

    min: int = Field(3, ge=2, le=MAX_REPEAT)
    max: int = Field(10, ge=2, le=MAX_REPEAT)
    bound: str | None = None
    """`"10%"`: a comparison left undecided whose interval lies within this share of
    its baseline either way is answered too (by how much, if not which way), and its
    point stops; futility then gives up only where `max` rounds could neither decide nor
    bound it (`fslab.stats.sequential`). Default: only a verdict stops a point."""

    @model_validator(mode="after")
    def _order(self) -> Repeat:
        if self.min > self.max:
            raise ValueError(f"`min` ({self.min}) is more than `max` ({self.max})")
        return self

    @field_validator("bound")
    @classmethod
    def _bound(cls, v: str | None) -> str | None:
        means = "how far either way of its baseline an undecided target may lie"
        return _percent_within(v, MIN_BOUND, MAX_BOUND, "a bound", means)

    @property
    def bound_frac(self) -> float | None:
        return parse_percent(self.bound) if self.bound is not None else None


class Reference(Strict):
    """`[baseline]`: another study's target that this study's targets are compared with,
    in another results database (another day's, or a bundle from another machine):
    `fslab compare` and `fslab report` bring its runs in as `TARGET@LABEL`
    (`fslab.compare.reference`)."""

    results: str = Field(min_length=1)
    """The results database or bundle that holds it (beside the study file when relative)."""
    target: str | None = Field(None, min_length=1)
    """Its target the others are compared with; default: its study's first."""
    study: str | None = Field(None, min_length=1)
    """Its study; default: the one of this study's name there, else its most recent."""
    label: str | None = Field(None, min_length=1, max_length=40)
    """How its targets are named here (`ext4@LABEL`); default: the file's name."""

    @field_validator("results")
    @classmethod
    def _beside_the_study(cls, v: str, info: ValidationInfo) -> str:
        path = beside_the_study(v, info)
        if not path.is_file():
            raise ValueError(
                f"no results database at {safe_text(str(path))}\n"
                "  hint: name the database (or bundle) `fslab run` wrote for the reference "
                "study, relative to this study file"
            )
        return str(path)

    @field_validator("label")
    @classmethod
    def _label(cls, v: str | None) -> str | None:
        if v is not None and not set(v) <= LABEL_CHARS:
            raise ValueError(
                f"`{safe_text(v)}` is not a label: letters, digits and . _ - + only\n"
                "  hint: it names the reference's targets (`ext4@LABEL`)"
            )
        return v


class Study(Strict):
    name: str
    description: str | None = None
    # A number: exactly that many runs of every point; a table: adaptive (`Repeat`).
    repeat: int | Repeat = 1
    budget: str | None = None
    """Adaptive repetition stops adding rounds once the study's runs took this long
    (`2h`); the `min` rounds always run."""
    margin: str | None = None
    """Equivalence margin: a target within this share of its baseline, by the whole
    interval, is equivalent (`3%`; default 5%, `fslab.stats.decision`)."""
    design: Literal["blocked", "independent"] = "blocked"
    """`blocked`: a group's targets run back to back in each pass or round and each is
    compared with its baseline per round (paired), which cancels the machine's drift
    between rounds; `independent`: runs compared as independent samples (Welch)."""
    baseline: Reference | None = None
    """Another study's target that this study's targets are compared with (`Reference`)."""
    summary: list[str] | None = None
    """Metrics the summary answers besides the headline one (IOPS, files/s, tps): the
    study's question's own (`["iops_peak", "write_io_size_bytes", "lat_p99_ns"]`)."""
    seed: int | None = Field(None, ge=0)
    """The seed of an adaptive study's run order (default: from the study's name)."""
    # A fresh file system for every run (the default), or one per target kept for all.
    reuse: bool = False
    hosts: dict[str, int] | None = None
    """`[hosts]`: host name -> ranks (slots) on it; `fslab run` then runs every point on
    all of them at once over MPI, as `--hosts` does (docs/multihost.md)."""
    workdir: str | None = None
    target: list[TargetSpec] = Field(min_length=1)
    workload: list[AnyWorkload] = Field(min_length=1)

    # Where each key is written, for messages: set by `fslab.study.load.parse_study`
    # (a key path such as ("workload", 0, "bs") -> `study.toml:12: workload[0] (w).bs`).
    _locator: Callable[[tuple[int | str, ...]], str] | None = PrivateAttr(default=None)

    @property
    def locator(self) -> Callable[[tuple[int | str, ...]], str] | None:
        return self._locator

    @model_validator(mode="after")
    def _cross_references(self) -> Study:
        """Names that must be unique and names that must exist. Every problem is one line
        that starts with its key path (`workload[1].name: ...`), a hint on the line after
        it (`  hint: ...`): `fslab.study.load` turns each into a located problem."""
        problems: list[str] = []
        targets: dict[str, int] = {}
        for i, t in enumerate(self.target):
            if t.name in targets:
                problems += [
                    f"target[{i}].name: `{t.name}` is already the name of target[{targets[t.name]}]"
                    "; target names must be unique",
                    "  hint: rename one of them",
                ]
            targets.setdefault(t.name, i)
        names = list(targets)
        workloads: dict[str, int] = {}
        for i, w in enumerate(self.workload):
            if w.name is not None:
                if w.name in workloads:
                    problems += [
                        f"workload[{i}].name: `{w.name}` is already the name of "
                        f"workload[{workloads[w.name]}]; workload names must be unique "
                        "(the runs of one would replace the other's)",
                        "  hint: rename one of them",
                    ]
                workloads.setdefault(w.name, i)
            for name in w.targets or []:
                if name not in targets:
                    problems += [
                        f"workload[{i}].targets: no target `{safe_text(name)}`; the targets are "
                        f"{', '.join(names)}",
                        f"  hint: {_closest(name, names)}",
                    ]
            source = getattr(w, "source", None)
            if source is None:
                continue
            if source not in targets:
                problems += [
                    f"workload[{i}].source: no target `{safe_text(source)}`; the targets are "
                    f"{', '.join(names)}",
                    f"  hint: {_closest(source, names)}",
                ]
            elif source in (w.targets or []):
                problems.append(
                    f"workload[{i}].source: `{source}` cannot be both the source and a target"
                )
        asking = [t.name for t in self.target if t.question is not None]
        if self.baseline is not None and asking:
            problems += [
                f"baseline: a study whose targets answer questions ({', '.join(asking)}) "
                "compares each question with its own first target, not with another study's",
                "  hint: drop `baseline`, or the targets' `question` keys",
            ]
        if problems:
            raise ValueError("\n".join(problems))
        return self

    @field_validator("repeat", mode="before")
    @classmethod
    def _repeat(cls, v: object) -> object:
        """One error for a bad `repeat`, not one per form it could have had."""
        if isinstance(v, dict):
            try:
                return Repeat.model_validate(v)
            except ValidationError as e:
                raise ValueError(
                    "; ".join(
                        ".".join(map(str, err["loc"]))
                        + ": " * bool(err["loc"])
                        + str(err["msg"]).removeprefix("Value error, ")
                        for err in e.errors()
                    )
                ) from None
        if isinstance(v, int) and not isinstance(v, bool):
            if v < 1:
                raise ValueError(f"`{v}` is too small: it must be at least 1")
            if v > MAX_REPEAT:
                raise ValueError(f"`{v}` is too large: it must be at most {MAX_REPEAT}")
            return v
        raise ValueError(
            f"`{v}` is not a number of runs from 1 to {MAX_REPEAT}; write `repeat = 3`, or "
            f"`repeat = {{ min = 3, max = 10 }}` to repeat each point until it is decided"
        )

    @field_validator("hosts")
    @classmethod
    def _hosts(cls, v: dict[str, int] | None) -> dict[str, int] | None:
        for name, slots in (v or {}).items():
            if isinstance(slots, bool) or not 1 <= slots <= 1024:
                raise ValueError(f"`{name} = {slots}`: the ranks on a host are 1 to 1024")
        if v is not None and not v:
            raise ValueError("`[hosts]` is empty: name each host with its ranks, "
                             "e.g. `localhost = 2`")  # fmt: skip
        return v

    @field_validator("budget")
    @classmethod
    def _budget(cls, v: str | None) -> str | None:
        if v is not None and parse_duration(v) <= 0:
            raise ValueError(f"`{v}` is no time to spend; give a duration such as `2h`")
        return v

    @field_validator("margin")
    @classmethod
    def _margin(cls, v: str | None) -> str | None:
        means = "the share two targets may differ and still be the same"
        return _percent_within(v, MIN_MARGIN, MAX_MARGIN, "an equivalence margin", means)

    @field_validator("summary")
    @classmethod
    def _summary(cls, v: list[str] | None) -> list[str] | None:
        for name in v or []:
            if name not in METRIC_NAMES:
                raise ValueError(
                    f"`{safe_text(name)}` is not a compared metric; "
                    + suggest(name, sorted(METRIC_NAMES), "the metrics are")
                )
        return v

    @property
    def margin_frac(self) -> float | None:
        """The equivalence margin as a fraction; None: the default."""
        return parse_percent(self.margin) if self.margin is not None else None

    @property
    def adaptive(self) -> bool:
        return isinstance(self.repeat, Repeat)

    @property
    def repeat_min(self) -> int:
        return self.repeat.min if isinstance(self.repeat, Repeat) else self.repeat

    @property
    def repeat_max(self) -> int:
        return self.repeat.max if isinstance(self.repeat, Repeat) else self.repeat

    @property
    def bound(self) -> float | None:
        """An adaptive study's `repeat.bound` as a fraction (`Repeat.bound`)."""
        return self.repeat.bound_frac if isinstance(self.repeat, Repeat) else None

    @property
    def budget_s(self) -> float | None:
        return parse_duration(self.budget) if self.budget is not None else None

    def targets_of(self, w: AnySpec) -> list[TargetSpec]:
        """The targets a workload runs on: its `targets`, else every target that is not
        some workload's `source` (a source disk is not a column unless named)."""
        if w.targets:
            return [t for t in self.target if t.name in w.targets]
        sources = {getattr(x, "source", None) for x in self.workload}
        return [t for t in self.target if t.name not in sources]

    def target_named(self, name: str) -> TargetSpec:
        return next(t for t in self.target if t.name == name)
