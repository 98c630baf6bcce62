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
import random
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from fslab.catalog import DURATION_KEYS, SIZE_KEYS, entry
from fslab.kinds import AnySpec, Kind, kind_of
from fslab.params import MISSING, param_order, select
from fslab.study.model import Study, TargetSpec
from fslab.study.problems import Problem, StudyError, where
from fslab.study.workload import Value
from fslab.units import parse_duration

# Seconds a run costs besides its own time (`Kind.estimate_s`): dropping caches, starting
# the engine; and what making and removing a file system adds (measured on loop devices).
RUN_OVERHEAD_S = 0.5
PROVISION_S = 2.5

__all__ = [
    "DURATION_KEYS",
    "SIZE_KEYS",
    "Plan",
    "Point",
    "expand",
    "parse_duration",
    "point_id",
    "workload_name",
]


@dataclass(frozen=True)
class Point:
    id: str
    seq: int
    target: TargetSpec
    workload: str
    kind: str
    params: dict[str, Any] = field(hash=False)
    """Canonical values, scaled: sizes in bytes, durations in seconds."""
    workload_spec: AnySpec = field(hash=False, compare=False, repr=False)
    """The workload as written, typed: what is no sweep axis (a files workload's `ops`)."""

    @property
    def group_key(self) -> tuple[str, str]:
        """What the point shares with the other targets' points of its group (the
        workload and its parameters): compare's group, a blocked design's block."""
        return self.workload, json.dumps(self.params, sort_keys=True, default=str)

    @property
    def kind_spec(self) -> Kind:
        """The point's kind (`fslab.kinds`), which knows what to do with it."""
        return kind_of(self.kind)

    def label(self) -> str:
        return self.kind_spec.label(self)

    def engine_jobs(self, directory: Path) -> list[dict[str, Any]]:
        """Every engine job the point runs (none for pgbench, which runs a database)."""
        return self.kind_spec.engine_jobs(self, directory)

    def estimate_s(self, fresh_target: bool = True) -> float:
        setup = RUN_OVERHEAD_S + (PROVISION_S if fresh_target else 0)
        return setup + self.kind_spec.estimate_s(self)


@dataclass(frozen=True)
class Plan:
    study: Study
    points: list[Point]
    scale: float
    where: tuple[tuple[str, str], ...] = ()
    """The `--where` filters that made this plan a slice of the study (`select`)."""

    @property
    def repeat(self) -> int:
        """The most runs a point gets (exactly this many unless the study is adaptive)."""
        return self.study.repeat_max

    @property
    def seed(self) -> int:
        """The seed of an adaptive study's round order: the study's `seed`, else one
        from its name (so a resumed study runs its rounds in the same order)."""
        if self.study.seed is not None:
            return self.study.seed
        return zlib.crc32(self.study.name.encode())

    def most_runs(self, point: Point) -> int:
        """The most runs `point` gets: `repeat` (an adaptive study's max), but only the
        `min` of an adaptive study for a kind with nothing to compare (an integrity
        run's outcome is a word: no look can want more of it)."""
        return self.repeat if entry(point.kind).compared else self.study.repeat_min

    @property
    def blocked(self) -> bool:
        """Whether a group's targets run back to back in each pass or round and are
        compared per round (`design = "blocked"`, the default; `fslab.stats.decision`)."""
        return self.study.design == "blocked"

    def runs(self) -> list[tuple[int, Point]]:
        """(repetition, point) in the order they run: repetitions interleaved (for an
        adaptive study, the most it may run), each pass in `round_order`."""
        return [
            (rep, p) for rep in range(self.repeat)
            for p in self.round_order(rep, [p for p in self.points if rep < self.most_runs(p)])
        ]  # fmt: skip

    def blocks(self, points: list[Point]) -> list[list[Point]]:
        """`points` by group (`Point.group_key`), in order of first appearance: a blocked
        design's blocks, whose runs of a round run, are judged and run again together."""
        groups: dict[tuple[str, str], list[Point]] = {}
        for p in points:
            groups.setdefault(p.group_key, []).append(p)
        return list(groups.values())

    def round_order(self, round_: int, points: list[Point]) -> list[Point]:
        """The order `points` run in pass or round `round_`. Blocked (the default): a
        group's targets back to back, in a fresh random order per round (from `seed`),
        each question's together, so the pairs a round's ratios compare ran minutes apart
        at most and no target is always first; the groups in plan order for fixed
        repetitions, shuffled per round for an adaptive study. Independent: plan order
        for fixed repetitions, every point shuffled per round for an adaptive study, so
        drift of the machine lands on no target in particular."""
        rng = random.Random(f"{self.seed}:{round_}")
        if not self.blocked:
            if not self.study.adaptive:
                return points
            out = list(points)
            rng.shuffle(out)
            return out
        blocks = self.blocks(points)
        if self.study.adaptive:
            rng.shuffle(blocks)
        for block in blocks:
            rng.shuffle(block)
            questions = self._by_question(block)
            if len(questions) > 1:
                # A target is compared with its question's baseline only: a question's
                # targets run back to back (questions in random order), so each pair is
                # a few runs apart instead of up to the whole block.
                rng.shuffle(questions)
                block[:] = [p for q in questions for p in q]
        return [p for block in blocks for p in block]

    def _by_question(self, block: list[Point]) -> list[list[Point]]:
        by: dict[str, list[Point]] = {}
        for p in block:
            by.setdefault(p.target.question or "", []).append(p)
        return list(by.values())

    def estimate_s(self, repeat: int | None = None) -> float:
        """Seconds for `repeat` runs of every point (default: the most, `repeat`)."""
        fresh = not self.study.reuse
        reps = self.repeat if repeat is None else repeat
        runs = sum(p.estimate_s(fresh) * min(reps, self.most_runs(p)) for p in self.points)
        kept = 0.0 if fresh else PROVISION_S * len(self.targets())
        return runs + kept

    def estimate_min_s(self) -> float:
        """Seconds for the runs every point gets (`repeat.min` of an adaptive study)."""
        return self.estimate_s(self.study.repeat_min)

    def targets(self) -> list[TargetSpec]:
        """The targets the plan's points use (their own and any they read from: a copy's
        source), in the study's order: all of them unless `--where` left some out, which
        are then neither made, nor checked, nor counted."""
        return list(self._targets)

    @cached_property
    def _targets(self) -> tuple[TargetSpec, ...]:
        # Every point's footprints name its own target first; plan and its checks ask
        # several times, and a files or fio point's footprints take some working out.
        used = {t.name for p in self.points for t, _ in p.kind_spec.footprints(self.study, p)}
        return tuple(t for t in self.study.target if t.name in used)

    def select(self, where: Sequence[tuple[str, str]]) -> Plan:
        """Only the points `--where KEY=VALUE` keeps (`target`, `workload` or a swept
        parameter, as in `fslab compare`): a slice of the study to plan or run. Raises
        `WhereError` for a key no point has, or when no point matches."""
        if not where:
            return self
        params = tuple(dict.fromkeys(k for p in self.points for k in p.params))
        keys = ("target", "workload", *param_order(params))

        def value(p: Point, key: str) -> Any:
            if key == "target":
                return p.target.name
            if key == "workload":
                return p.workload
            return p.params.get(key, MISSING)

        return replace(self, points=select(self.points, where, keys, value), where=tuple(where))


def workload_name(w: AnySpec, i: int, all_: list[AnySpec]) -> str:
    if w.name:
        return w.name
    same_kind = [x for x in all_ if x.kind == w.kind]
    return w.kind if len(same_kind) == 1 else f"{w.kind}{i + 1}"


def point_id(target: TargetSpec, kind: str, params: dict[str, Value]) -> str:
    key = {
        # Which question a target answers is how it is compared, not what is measured.
        "target": target.model_dump(mode="json", exclude_none=True, exclude={"question"}),
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
            kind = kind_of(w.kind)
            axes = w.params()
            keys = list(axes)
            for combo in itertools.product(*(axes[k] for k in keys)):
                params = {k: kind.normalize(k, v) for k, v in zip(keys, combo, strict=True)}
                params = kind.point_params(w, params, scale)
                point = Point(
                    id=point_id(target, w.kind, params),
                    seq=len(points),
                    target=target,
                    workload=name,
                    kind=w.kind,
                    params=params,
                    workload_spec=w,
                )
                points.append((wi, point))
    return points


def _same_twice(study: Study, wi: int) -> Problem:
    """Why workload `wi` makes one point twice: a sweep list with one value twice."""
    w = study.workload[wi]
    kind = kind_of(w.kind)
    for key, values in w.params().items():
        seen: dict[str, Any] = {}
        for v in values:
            canon = json.dumps(kind.normalize(key, v), sort_keys=True)
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
