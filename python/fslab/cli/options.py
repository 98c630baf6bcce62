"""Options the commands that read a results database share (compare, report, export,
bundle): one spelling, one help text."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

from fslab.safe_text import safe_text
from fslab.store.query import DEFAULT_RESULTS

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def _results(help: str, *, several: bool = False) -> Decorator:
    """`--results DB`; with `several`, repeatable (a tuple, the default one database)."""
    return click.option(
        "--results", "results", metavar="DB",
        type=click.Path(dir_okay=False, path_type=Path), multiple=several,
        default=(DEFAULT_RESULTS,) if several else DEFAULT_RESULTS, show_default=True, help=help,
    )  # fmt: skip


results_db_option = _results("The results database `fslab run` wrote.")

results_dbs_option = _results(
    "The results database `fslab run` wrote (or a bundle). Repeat to compare several: the "
    "others' targets join the first's as TARGET@NAME (`old.db`: `ext4@old`), matched by "
    "configuration, and what differs between the machines is named.",
    several=True,
)

results_sources_option = _results(
    "A results database `fslab run` wrote, or a bundle; repeat for several (each of their "
    "studies is shown on its own, not merged).",
    several=True,
)

baseline_option: Decorator = click.option(
    "--baseline",
    metavar="NAME",
    help="The target the others are compared with; default: the study's first.",
)

where_option: Decorator = click.option(
    "--where",
    "where",
    metavar="KEY=VALUE",
    multiple=True,
    help="Keep the points whose parameter KEY is VALUE (sizes compare in bytes: 8k = 8KiB; "
    "`workload=NAME` keeps a workload, `target=NAME` a target: compare those alone); repeat "
    "for several keys (all must match) or values (any may match).",
)


def study_option(verb: str) -> Decorator:
    """`--study NAME`: which study to `verb`."""
    return click.option(
        "--study", metavar="NAME", help=f"The study to {verb}; default: the most recent."
    )


def output_option(help: str, default: Path | None = None) -> Decorator:
    """`-o/--output FILE`: where a command writes (its default shown when it has one)."""
    return click.option(
        "-o",
        "--output",
        "output",
        metavar="FILE",
        type=click.Path(path_type=Path),
        default=default,
        show_default=default is not None,
        help=help,
    )


def exit_on_findings(gate: str, found: Sequence[str], none: str, some: str) -> None:
    """`--fail-on GATE`: on stderr, `none` where nothing was found, else `some` (with the
    count) and each finding; then exit 1 if anything was (a check for CI pipelines)."""
    if not found:
        click.echo(f"fail-on {gate}: {none}", err=True)
        return
    click.echo(f"fail-on {gate}: {len(found)} {some}:", err=True)
    for line in found:
        click.echo(f"  {safe_text(line)}", err=True)
    sys.exit(1)
