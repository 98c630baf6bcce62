"""`fslab plan STUDY`: validate, expand, and show what a run would do. Touches nothing."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from fslab.compare import format_param
from fslab.errors import ExitStatus
from fslab.study.check import (
    app_problems,
    capacity_problems,
    engine_problems,
    param_problems,
    target_problems,
)
from fslab.study.load import StudyError, load_study
from fslab.study.plan import Plan, expand
from fslab.targets.provision import side_effects
from fslab.targets.system import System
from fslab.units import format_s


def checked_plan(
    study_path: Path,
    scale: float,
    *,
    results: Path,
    force: bool = False,
    confirmed: frozenset[str] = frozenset(),
    workdir: Path | None = None,
) -> tuple[Plan, str, Path]:
    """Loads, expands and checks a study; raises StudyError listing every problem.
    Returns the plan, the study's text and the work directory: `workdir` (--workdir),
    else the study's `workdir` (relative to the study file), else `fslab-work` beside
    the results."""
    study, text = load_study(study_path)
    if workdir is None and study.workdir is not None:
        workdir = (study_path.parent / study.workdir).resolve()
    workdir = workdir or default_workdir(results)
    place = str(study_path)
    problems = param_problems(study, place)
    if problems:
        raise StudyError(problems)
    plan = expand(study, scale)
    system = System.probe()
    problems = target_problems(plan, system, place, force=force, confirmed=confirmed)
    if not problems:
        problems += capacity_problems(plan, place)
    problems += engine_problems(plan, place)
    problems += app_problems(plan, place, workdir)
    if problems:
        raise StudyError(problems)
    return plan, text, workdir


def default_workdir(results: Path) -> Path:
    return results.resolve().parent / "fslab-work"


def _scale(ctx: click.Context, param: click.Parameter, value: float) -> float:
    if not 0 < value <= 1:
        raise click.BadParameter(f"{value} is out of range (more than 0, at most 1)")
    return value


scale_option = click.option(
    "--scale", type=float, default=1.0, show_default=True, callback=_scale,
    help="Shrink file sizes, runtimes and images by this factor for a quick run.",
)  # fmt: skip
force_option = click.option(
    "--force", is_flag=True,
    help="Let the safety gate accept a `device` that carries a signature, if it is also "
    "named with --device.",
)  # fmt: skip
device_option = click.option(
    "--device", "devices", multiple=True, metavar="PATH",
    help="Name a `device` target's device again to confirm overwriting it (with --force).",
)  # fmt: skip
workdir_option = click.option(
    "--workdir", type=click.Path(path_type=Path), default=None,
    help="Where images and mount points go. Default: the study's `workdir`, else "
    "fslab-work beside the results.",
)  # fmt: skip
results_option = click.option(
    "--results", type=click.Path(path_type=Path), default=Path("fslab-results.db"),
    show_default=True, help="The results database.",
)  # fmt: skip


@click.command()
@click.argument("study", type=click.Path(path_type=Path))
@scale_option
@results_option
@force_option
@device_option
@workdir_option
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
def plan(
    study: Path,
    scale: float,
    results: Path,
    force: bool,
    devices: tuple[str, ...],
    workdir: Path | None,
    as_json: bool,
) -> ExitStatus:
    """Check a study and show its points, time estimate and side effects; touch nothing."""
    p, _, workdir = checked_plan(
        study, scale, results=results, force=force, confirmed=frozenset(devices), workdir=workdir
    )
    effects = {t.name: side_effects(t, workdir, scale) for t in p.targets()}
    if as_json:
        doc = {
            "study": p.study.name,
            "scale": scale,
            "repeat": p.repeat,
            "runs": len(p.runs()),
            "estimate_s": round(p.estimate_s(), 1),
            "workdir": str(workdir),
            "points": [
                {
                    "id": pt.id,
                    "target": pt.target.name,
                    "workload": pt.workload,
                    "kind": pt.kind,
                    "params": pt.params,
                }
                for pt in p.points
            ],
            "side_effects": effects,
        }
        click.echo(json.dumps(doc, indent=2))
        return ExitStatus.OK
    out = Console(highlight=False)
    table = Table(title=f"{p.study.name}: {len(p.points)} points x {p.repeat} repeats")
    keys = list(dict.fromkeys(k for pt in p.points for k in pt.params))
    # Parameters with one value everywhere are said once, under the table.
    common = [
        k
        for k in keys
        if len({json.dumps(pt.params.get(k), sort_keys=True) for pt in p.points}) == 1
    ]
    varying = [k for k in keys if k not in common]
    for col in ["#", "target", "workload", *varying]:
        table.add_column(col)
    for pt in p.points:
        table.add_row(str(pt.seq + 1), pt.target.name, pt.workload,
                      *[_value(k, pt.params.get(k)) for k in varying])  # fmt: skip
    out.print(table)
    if common:
        said = ", ".join(f"{k}={_value(k, p.points[0].params[k])}" for k in common)
        out.print(f"every point: {said}", soft_wrap=True)
    out.print(f"runs: {len(p.runs())}, estimated time: {format_s(p.estimate_s())}")
    out.print(f"work directory: {workdir}", soft_wrap=True)
    for name, lines in effects.items():
        out.print(f"target {name}:")
        for line in lines:
            out.print(f"  - {line}", soft_wrap=True)
    return ExitStatus.OK


command = plan


def _value(key: str, value: object) -> str:
    return "" if value is None else format_param(key, value)
