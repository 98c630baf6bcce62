"""`fslab compare`: a study's targets side by side, with the statistics to say which
differences are real. The tables (or Markdown, CSV, JSON) go to stdout; notes to stderr."""

from __future__ import annotations

import io
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from fslab.cli.console import no_color
from fslab.cli.options import (
    baseline_option,
    exit_on_findings,
    results_dbs_option,
    study_option,
    where_option,
)
from fslab.compare import Comparison, build_comparison, build_ranks, keep_ops
from fslab.report.findings import worse_findings
from fslab.report.format import not_counted, shared_note
from fslab.report.rank_views import RANK_COLUMNS, Ranks, rank_cells, rank_views, sentence_text
from fslab.report.render import render_csv, render_markdown
from fslab.report.render.json import write_json
from fslab.report.render.terminal import (
    DEFAULT_WIDTH,
    TABLE_LINES,
    iter_table_text,
    table_lines,
)
from fslab.safe_text import safe_text
from fslab.store.merge import baseline_among, results_view


@click.command("compare")
@results_dbs_option
@study_option("compare")
@baseline_option
@where_option
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "md", "csv", "json"]),
    default="table",
    show_default=True,
    help="table for people; md (the tables), csv (one row per group, target, op and "
    "metric), json (every group with its rows: indented at a terminal, one line otherwise).",
)
@click.option(
    "--ranks", "show_ranks", is_flag=True,
    help="Show each rank of the study's multi-host runs instead (`fslab run --hosts`): its "
    "host, rate and start, and its share of the run; then how even each point's ranks "
    "were. Exit 1 where the study has none.",
)  # fmt: skip
@click.option(
    "--op", "ops", multiple=True, metavar="OP",
    help="Show only the rows of this operation (txn, read, copy, jetstress, device, ...); "
    "repeat for several.",
)  # fmt: skip
@click.option(
    "--detail/--summary", "detail", default=None,
    help="Show every point's table (--detail), or the summary alone (--summary). Unasked, "
    f"the tables are shown where they take at most {TABLE_LINES} lines or --where chose "
    "a slice; at a terminal a long output goes through a pager ($PAGER, else less).",
)  # fmt: skip
@click.option(
    "--fail-on", "fail_on", type=click.Choice(["worse"]), default=None,
    help="Exit 1 (after the output) when the summary finds some target worse than its "
    "baseline at some point, naming each on stderr: a check for CI pipelines.",
)  # fmt: skip
def compare(
    results: tuple[Path, ...],
    study: str | None,
    baseline: str | None,
    where: tuple[str, ...],
    fmt: str,
    ops: tuple[str, ...],
    show_ranks: bool,
    detail: bool | None,
    fail_on: str | None,
) -> None:
    """Compare the targets of a study: one table per workload point, one column per target.

    The summary comes first: per workload and sweep family, each target's geometric mean
    ratio to the baseline over the family's points, with its 95% interval and how many
    points were better, worse, equivalent (within 5%) or inconclusive; then the best
    target. Then the tables: each cell is the mean over the completed runs ± the half-width
    of its 95% confidence interval (Student's t), and for each target but the baseline its
    ratio to the baseline, judged by the decision rule (docs/statistics.md). Runs flagged
    as cached or unsteady get no verdict; runs other work disturbed are not counted.

    Several `--results` (databases or bundles, from other machines or days) compare as
    one study: the others' targets are named TARGET@NAME beside the first's, and stderr
    says which points matched by configuration and how the machines differ.
    """
    with _database(results, study, baseline, show_ranks) as (db, study, study_given, baseline):
        if show_ranks:
            name, rows = build_ranks(db, study=study, where=where)
            ranks = rank_views(name, rows, filtered=bool(where))
            click.echo(_ranks_table(ranks, where), nl=False)
            return
        _compare(db, study, baseline, where, fmt, ops, fail_on, study_given, detail)


@contextmanager
def _database(
    results: tuple[Path, ...], study: str | None, baseline: str | None, ranks: bool
) -> Iterator[tuple[Path, str | None, bool, str | None]]:
    """(the database to compare, its study, whether the user chose it, the baseline): the
    one given, or several merged into one (`results_view`), with the study's `[baseline]`
    unless --baseline chose another, what matched and what did not said."""
    with results_view(results, study, reference=baseline is None and not ranks) as (
        db, name, sides,
    ):  # fmt: skip
        for side in sides:
            click.echo(safe_text(f"note: {side.note(str(results[0]))}"), err=True)
        yield db, name, study is not None or bool(sides), baseline_among(sides, baseline)


def _compare(
    results: Path,
    study: str | None,
    baseline: str | None,
    where: tuple[str, ...],
    fmt: str,
    ops: tuple[str, ...],
    fail_on: str | None,
    study_given: bool,
    detail: bool | None,
) -> None:
    comparison = keep_ops(
        build_comparison(results, study=study, baseline=baseline, where=where), ops
    )
    _notes(comparison, study_given=study_given)
    if fmt == "md":
        text = render_markdown(comparison)
    elif fmt == "csv":
        text = render_csv(comparison)
    elif fmt == "json":
        # Streamed as bytes: hundreds of MB for a large study. Indented for people at a
        # terminal, one line for programs (as `gh --json` does): half the bytes.
        sys.stdout.flush()
        write_json(comparison, sys.stdout.buffer, indent=sys.stdout.isatty())
        sys.stdout.buffer.flush()
        _fail_on(comparison, fail_on)
        return
    else:
        _terminal(comparison, detail=detail, sliced=bool(where))
        _fail_on(comparison, fail_on)
        return
    click.echo(text, nl=False)
    _fail_on(comparison, fail_on)


def _terminal(comparison: Comparison, *, detail: bool | None, sliced: bool) -> None:
    """The tables for people: streamed a part at a time (a pager at a terminal when they
    are taller than it), or the summary alone where they would be long and nobody asked."""
    # A terminal's width; COLUMNS where set (for a pipe too), else 100 for a pipe.
    size = shutil.get_terminal_size((DEFAULT_WIDTH, 24))
    lines = table_lines(comparison, size.columns)
    tables = detail if detail is not None else sliced or lines <= TABLE_LINES
    if detail is None and not tables:
        n = len(comparison.groups)
        click.echo(
            f"note: the {n} points' tables are left out (about {lines:,} lines): --detail "
            "shows them all, --where KEY=VALUE the points of a slice",
            err=True,
        )
    tty = sys.stdout.isatty()
    color = tty and not no_color()
    parts = iter_table_text(comparison, width=size.columns, color=color, tables=tables)
    if tty and tables and lines > size.lines:
        click.echo_via_pager(parts, color=color)
        return
    for text in parts:
        sys.stdout.write(text)


def _fail_on(c: Comparison, fail_on: str | None) -> None:
    """Exits 1 when `fail_on` is `worse` and the summary decided a target worse than its
    baseline at some point (the points of every answer the summary gives: the headline,
    the study's named metrics, the efficiency grids)."""
    if fail_on is None:
        return
    exit_on_findings("worse", worse_findings(c), "no target is worse than its baseline",
                     "finding(s) worse than the baseline")  # fmt: skip


def _notes(c: Comparison, *, study_given: bool) -> None:
    """What people should know about what was (not) compared, on stderr."""
    if len(c.studies) > 1 and not study_given:
        others = len(c.studies) - 1
        click.echo(
            f"note: comparing `{safe_text(c.study)}`, the most recent of {len(c.studies)} "
            f"studies in {safe_text(c.db_path)} ({others} other{'s' if others > 1 else ''}: "
            "choose with --study)",
            err=True,
        )
    if (left_out := not_counted(c)) is not None:
        click.echo(f"note: {left_out}", err=True)
    if (shared := shared_note(c)) is not None:
        click.echo(f"note: {shared}", err=True)


command = compare


def _ranks_table(ranks: Ranks, where: tuple[str, ...]) -> str:
    """Each rank of each multi-host run: where it ran, its rate over its own runtime, its
    share of the run's I/Os, and when it started after the run's first rank; then a
    sentence per point on how even its ranks were."""
    table = Table(box=None)
    for col in ("point", "run", *RANK_COLUMNS):
        table.add_column(col, justify="left" if col in ("point", "host") else "right")
    for point in ranks.points:
        for run in point.runs:
            for i, r in enumerate(run.ranks):
                head = (f"{point.target} {point.title}", str(run.rep + 1)) if i == 0 else ("", "")
                table.add_row(*(safe_text(x) for x in (*head, *rank_cells(r))))
    console = Console(width=shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns,
                      highlight=False, markup=False, record=True, file=io.StringIO())  # fmt: skip
    filtered = f" (where {' '.join(where)})" if where else ""
    console.print(safe_text(f"study `{ranks.study}`: the ranks of its multi-host runs{filtered}"))
    console.print(table)
    console.print()
    for sentence in ranks.sentences():
        console.print(safe_text(sentence_text(sentence)))
    return console.export_text()
