"""`fslab plan STUDY`: validate, expand, and show what a run would do. Touches nothing."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from fslab.cli.console import console
from fslab.compare import CompareError, parse_where
from fslab.errors import ExitStatus
from fslab.kinds import kind_of
from fslab.kinds.base import EngineJobKind
from fslab.params import format_param
from fslab.safe_text import safe_text
from fslab.stats.sequential import look_level
from fslab.store.lock import waiting_for
from fslab.study.plan import Plan, Point
from fslab.study.preflight import checked_plan
from fslab.targets.provision import side_effects
from fslab.targets.workdir import notes as workdir_notes
from fslab.units import format_s


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
    "named with --device; let loop images live on tmpfs (to measure memory).",
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


def _only(
    ctx: click.Context, param: click.Parameter, value: tuple[str, ...]
) -> tuple[tuple[str, str], ...]:
    try:
        return parse_where(value)
    except CompareError as e:
        raise click.BadParameter(f"{e.message} ({e.hint})") from e


only_option = click.option(
    "--where", "only", metavar="KEY=VALUE", multiple=True, callback=_only,
    help="Only the points whose parameter KEY is VALUE: a slice of the study (`target=NAME`, "
    "`workload=NAME`, a swept key such as `bs=8k`; repeat a key for any of several values, "
    "several keys for all). The study's other points are left for another run.",
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
@only_option
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
def plan(
    study: Path,
    scale: float,
    results: Path,
    force: bool,
    devices: tuple[str, ...],
    workdir: Path | None,
    only: tuple[tuple[str, str], ...],
    as_json: bool,
) -> ExitStatus:
    """Check a study and show its points, time estimate and side effects; touch nothing."""
    checked = checked_plan(
        study, scale, results=results, force=force, confirmed=frozenset(devices),
        workdir=workdir, only=only,
    )  # fmt: skip
    p, workdir = checked.plan, checked.workdir
    st = p.study
    effects = {t.name: side_effects(t, workdir, scale) for t in p.targets()}
    about_workdir = workdir_notes(workdir, p.targets())
    holder = waiting_for(results)
    if holder is not None:
        about_workdir.append(
            f"{holder} is using {results} now; `fslab run` stops (or, with --wait, waits) "
            f"until it is done"
        )
    if as_json:
        doc = {
            "study": p.study.name,
            "scale": scale,
            "where": [f"{k}={v}" for k, v in p.where],
            "repeat": (
                {"min": st.repeat_min, "max": st.repeat_max, "seed": p.seed}
                if st.adaptive
                else p.repeat
            ),
            "budget_s": st.budget_s,
            "runs": len(p.runs()),
            "runs_min": len(p.points) * st.repeat_min,
            "estimate_s": round(p.estimate_s(), 1),
            "estimate_min_s": round(p.estimate_min_s(), 1),
            "baseline": checked.reference,
            "workdir": str(workdir),
            "workdir_notes": about_workdir,
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
    # Names and values are the study's own text: shown as written, never as markup.
    out = console(markup=False)
    repeats = (
        f"{st.repeat_min}-{st.repeat_max} repeats" if st.adaptive
        else f"{p.repeat} repeats"
    )  # fmt: skip
    out.print(f"{safe_text(p.study.name)}: {len(p.points)} points x {repeats}", soft_wrap=True)
    if p.where:
        said = " ".join(f"{k}={v}" for k, v in p.where)
        out.print(f"a slice of the study: the points `--where {safe_text(said)}` keeps",
                  soft_wrap=True)  # fmt: skip
    # One table per workload: each kind has its own keys, and one table of all of them is
    # mostly empty columns too narrow to read.
    for workload in dict.fromkeys(pt.workload for pt in p.points):
        _points_table(out, [pt for pt in p.points if pt.workload == workload])
    steady = _steady_line(p)
    if steady:
        out.print(steady, soft_wrap=True)
    for kind in dict.fromkeys(pt.kind for pt in p.points):
        mine = [pt for pt in p.points if pt.kind == kind]
        for note in kind_of(kind).plan_notes(mine):
            out.print(note, soft_wrap=True)
    if st.adaptive:
        level = look_level(st.repeat_min, st.repeat_max, paired=p.blocked)
        out.print(
            f"runs: {len(p.points) * st.repeat_min} to {len(p.runs())}, estimated time: "
            f"{format_s(p.estimate_min_s())} to {format_s(p.estimate_s())}"
            + (f" (budget {format_s(st.budget_s)})" if st.budget_s is not None else ""),
            soft_wrap=True,
        )
        out.print(
            f"adaptive: every point {st.repeat_min} times, then rounds of the points still "
            f"undecided up to {st.repeat_max}"
            + (f" (or bounded within ±{st.bound * 100:g}%)" if st.bound is not None else "")
            + f", each look a {(1 - level) * 100:.4g}% interval "
            f"(5% over all {st.repeat_max - st.repeat_min + 1} looks, by simulation); "
            f"order seed {p.seed}",
            soft_wrap=True,
        )
        if st.budget_s is not None and st.budget_s < p.estimate_min_s():
            out.print(
                f"note: the budget ({format_s(st.budget_s)}) is less than the {st.repeat_min} "
                f"rounds every point gets ({format_s(p.estimate_min_s())}): they all run "
                f"anyway, and no more",
                soft_wrap=True,
            )
    else:
        out.print(f"runs: {len(p.runs())}, estimated time: {format_s(p.estimate_s())}")
    if checked.reference is not None:
        out.print(safe_text(checked.reference), soft_wrap=True)
    out.print(f"work directory: {safe_text(workdir)}", soft_wrap=True)
    for line in about_workdir:
        out.print(f"  - {safe_text(line)}", soft_wrap=True)
    for name, lines in effects.items():
        out.print(f"target {safe_text(name)}:")
        for line in lines:
            out.print(f"  - {safe_text(line)}", soft_wrap=True)
    return ExitStatus.OK


command = plan


def _points_table(out: Console, points: list[Point]) -> None:
    """One workload's points: the parameters that vary as columns, the others said once
    under the table."""
    first = points[0]
    out.print(f"workload {safe_text(first.workload)} ({first.kind}): {len(points)} points",
              soft_wrap=True)  # fmt: skip
    table = Table()
    keys = list(dict.fromkeys(k for pt in points for k in pt.params))
    common = [
        k for k in keys
        if len({json.dumps(pt.params.get(k), sort_keys=True) for pt in points}) == 1
    ]  # fmt: skip
    varying = [k for k in keys if k not in common]
    for col in ["#", "target", *varying]:
        table.add_column(col)
    for pt in points:
        table.add_row(str(pt.seq + 1), safe_text(pt.target.name),
                      *[_value(k, pt.params.get(k)) for k in varying])  # fmt: skip
    out.print(table)
    if common:
        said = ", ".join(f"{k}={_value(k, first.params[k])}" for k in common)
        out.print(f"every point: {said}", soft_wrap=True)
    limit = getattr(first.workload_spec, "latency_limit", None)
    if limit is not None:
        of = f" of {limit.op}" if limit.op else ""
        out.print(
            f"latency limit: per target, the most {limit.vary} whose p{limit.percentile}{of}"
            f" stays under {_value('runtime', limit.under)} in every run (`fslab compare`)",
            soft_wrap=True,
        )


def _steady_line(p: Plan) -> str:
    """Which points run to a steady state and which their whole runtime."""
    on = off = 0
    for pt in p.points:
        kind = pt.kind_spec
        if not isinstance(kind, EngineJobKind) or "runtime" not in pt.params:
            continue
        if kind.engine_params(pt).get("steady_state") is True:
            on += 1
        else:
            off += 1
    if not on and not off:
        return ""
    if not on:
        return (
            "steady state: off (each run measures its whole runtime; a runtime of 5 rounds "
            "or more stops each run once steady)"
        )
    if p.study.hosts:
        # Every rank runs the whole runtime (the stonewall); the sum is judged afterwards.
        said = (f"steady state: judged on the ranks' summed series for {on} "
                f"point{'s' if on != 1 else ''} (each rank runs its whole runtime)")  # fmt: skip
    else:
        said = f"steady state: on for {on} point{'s' if on != 1 else ''} (runtime is the cap)"
    if off:
        said += f", off for {off} whose runtime cannot hold a window of rounds"
    return said


def _value(key: str, value: object) -> str:
    return "" if value is None else safe_text(format_param(key, value))
