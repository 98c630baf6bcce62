"""The pre-flight of a study: load it, expand its plan and run every check (parameters,
targets and the safety gate, capacity, the engine's own job checks, each kind's machine
checks) before anything is made; `fslab plan` shows the result and `fslab run` starts
from it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from fslab.errors import FslabError
from fslab.hosts import plan_problems
from fslab.params import WhereError
from fslab.store.db import made_filesystems
from fslab.store.lock import waiting_for
from fslab.store.merge import reference_points, source_label
from fslab.store.reference import Reference
from fslab.study.check import (
    capacity_problems,
    engine_problems,
    kind_problems,
    param_problems,
    target_problems,
)
from fslab.study.load import Problem, StudyError, load_study, where
from fslab.study.model import Study
from fslab.study.plan import Plan, expand
from fslab.targets.fstoken import Made
from fslab.targets.system import System
from fslab.targets.workdir import default_workdir, memory_problems
from fslab.targets.workdir import problems as workdir_problems
from fslab.targets.workdir import taken as workdir_taken


@dataclass(frozen=True)
class Checked:
    """A study that passed every check, and what running it needs."""

    plan: Plan
    text: str
    """The study file's text, stored with the results."""
    workdir: Path
    """`--workdir`, else the study's `workdir` (relative to the study file), else
    `fslab-work` beside the results."""
    made: Made
    """The file systems fslab made on `device` targets, as the results database recorded
    them: a device holding one of them, with its token, is fslab's own (no `--force`)."""
    workdir_named: str
    """Where the work directory was named (`--workdir`, the study's key, the default),
    for problems found later."""
    reference: str | None = None
    """What the study's `[baseline]` is, in a sentence (`fslab plan` shows it)."""

    def taken(self) -> StudyError | None:
        """Target directories already in the work directory (check under the lock)."""
        found = workdir_taken(self.workdir, self.plan.targets())
        return StudyError([Problem(self.workdir_named, w) for w in found]) if found else None


def checked_plan(
    study_path: Path,
    scale: float,
    *,
    results: Path,
    force: bool = False,
    confirmed: frozenset[str] = frozenset(),
    workdir: Path | None = None,
    only: Sequence[tuple[str, str]] = (),
) -> Checked:
    """Loads, expands and checks a study, or the slice `only` (`--where`) keeps of it;
    raises StudyError listing every problem."""
    study, text = load_study(study_path)
    given = workdir
    if workdir is None and study.workdir is not None:
        workdir = (study_path.parent / study.workdir).resolve()
    workdir = workdir or default_workdir(results)
    place = str(study_path)
    problems = param_problems(study, place)
    if problems:
        raise StudyError(problems)
    plan = expand(study, scale)
    try:
        plan = plan.select(only)
    except WhereError as e:
        raise StudyError([Problem("--where", e.message, hint=e.hint)]) from e
    system = System.probe()
    made = made_filesystems(results) if any(t.device for t in study.target) else {}
    said = (
        "--workdir" if given is not None
        else where(study, "workdir", place=place) if study.workdir is not None
        else f"{place}: the default work directory"
    )  # fmt: skip
    found = workdir_problems(workdir) or memory_problems(workdir, plan.targets(), force=force)
    if not found and waiting_for(results) is None:
        # While a run holds the results database its targets are there: `fslab run`
        # checks again under the lock.
        found = workdir_taken(workdir, plan.targets())
    problems = [Problem(said, w) for w in found]
    problems += target_problems(plan, system, place, force=force, confirmed=confirmed, made=made)
    if not problems:
        problems += capacity_problems(plan, place, workdir)
    if study.hosts:
        at = where(study, "hosts", place=place)
        fewest = min(study.hosts.values())
        problems += [Problem(at, e.message, hint=e.hint) for e in plan_problems(plan, fewest)]
    problems += engine_problems(plan, place)
    problems += kind_problems(plan, place, workdir)
    reference, wrong = reference_sentence(study, plan, place)
    problems += wrong
    if problems:
        raise StudyError(problems)
    return Checked(plan, text, workdir, made, said, reference)


def reference_sentence(study: Study, plan: Plan, place: str) -> tuple[str | None, list[Problem]]:
    """The study's `[baseline]` in a sentence: which target of which study, and how many
    of the planned points it measured; or the problem that makes it unusable (a database
    that is not one, no such study or target)."""
    b = study.baseline
    if b is None:
        return None, []
    ref = Reference(Path(b.results), b.target, b.study, b.label, b.results)
    try:
        theirs, target, points = reference_points(ref, study.name)
    except FslabError as e:
        return None, [Problem(where(study, "baseline", place=place), e.message, hint=e.hint)]
    label = b.label or source_label(ref.source, {study.name})
    groups = {(p.workload, json.dumps(p.params, sort_keys=True)) for p in plan.points}
    return (
        f"baseline: `{target}` of study `{theirs}` in {b.results}, as `{target}@{label}`: "
        f"compare and report judge every target against it (as independent runs); it "
        f"measured {len(groups & points)} of the {len(groups)} workload points planned"
    ), []
