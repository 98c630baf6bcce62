"""Everything that can be known wrong about a plan before anything is touched: parameter
values, the engine's view of every distinct job, and what this machine can provision."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from fslab.engine import find_engine
from fslab.study.load import Problem
from fslab.study.model import Study
from fslab.study.plan import Plan, normalize
from fslab.targets.system import System, check


def param_problems(study: Study, place: str) -> list[Problem]:
    """Sizes and durations in workloads that do not parse."""
    problems = []
    for i, w in enumerate(study.workload):
        for key, values in w.params().items():
            for v in values:
                try:
                    normalize(key, v)
                except ValueError as e:
                    where = f"{place}: workload[{i}]" + (f" ({w.name})" if w.name else "")
                    problems.append(Problem(f"{where}.{key}", str(e)))
    return problems


def engine_problems(plan: Plan, place: str) -> list[Problem]:
    """Asks the engine about every distinct job (its checks are the only source of truth
    for job keys and ranges); one problem per job it refuses."""
    engine = find_engine()
    seen: dict[str, str] = {}
    problems = []
    for p in plan.points:
        job = p.job(Path("/fslab-plan"))
        key = json.dumps(job, sort_keys=True)
        if key in seen:
            continue
        done = subprocess.run(
            [str(engine), "check", "-"], input=key, capture_output=True, text=True, check=False
        )
        seen[key] = done.stderr
        if done.returncode != 0:
            said = [
                line.removeprefix("error: <stdin>: ").strip()
                for line in done.stderr.splitlines()
                if line.strip()
            ]
            problems.append(
                Problem(f"{place}: workload `{p.workload}` ({p.label()})", "; ".join(said))
            )
    return problems


def target_problems(
    plan: Plan,
    system: System,
    place: str,
    *,
    force: bool = False,
    confirmed: frozenset[str] = frozenset(),
) -> list[Problem]:
    problems = []
    for i, t in enumerate(plan.study.target):
        for msg in check(t, system, plan.scale, force=force, confirmed=confirmed):
            problems.append(Problem(f"{place}: target[{i}] ({t.name})", msg))
    return problems
