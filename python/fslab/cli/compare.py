"""`fslab compare`: a study's targets side by side, with the statistics to say which
differences are real. The tables (or Markdown, CSV, JSON) go to stdout; notes to stderr."""

from __future__ import annotations

import io
import os
import shutil
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from fslab.cli.options import baseline_option, results_db_option, study_option, where_option
from fslab.compare import Comparison, build_comparison, build_ranks, keep_ops
from fslab.params import format_param
from fslab.report.render import render_csv, render_markdown, render_table
from fslab.report.render.json import write_json
from fslab.report.render.terminal import DEFAULT_WIDTH
from fslab.safe_text import safe_text
from fslab.store.query import RankRow
from fslab.units import format_count


@click.command("compare")
@results_db_option
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
    "host, rate and start, and its share of the run.",
)  # fmt: skip
@click.option(
    "--op", "ops", multiple=True, metavar="OP",
    help="Show only the rows of this operation (txn, read, copy, jetstress, device, ...); "
    "repeat for several.",
)  # fmt: skip
def compare(
    results: Path,
    study: str | None,
    baseline: str | None,
    where: tuple[str, ...],
    fmt: str,
    ops: tuple[str, ...],
    show_ranks: bool,
) -> None:
    """Compare the targets of a study: one table per workload point, one column per target.

    The summary comes first: per workload and sweep family, each target's geometric mean
    ratio to the baseline over the family's points, with its 95% interval and how many
    points were better, worse, equivalent (within 5%) or inconclusive; then the best
    target. Then the tables: each cell is the mean over the completed runs ± the half-width
    of its 95% confidence interval (Student's t), and for each target but the baseline its
    ratio to the baseline, judged by the decision rule (docs/statistics.md). Runs flagged
    as cached, contaminated or unsteady get no verdict.
    """
    if show_ranks:
        click.echo(_ranks_table(*build_ranks(results, study=study)), nl=False)
        return
    comparison = keep_ops(
        build_comparison(results, study=study, baseline=baseline, where=where), ops
    )
    _notes(comparison, study_given=study is not None)
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
        return
    else:
        tty = sys.stdout.isatty()
        # A terminal's width; COLUMNS where set (for a pipe too), else 100 for a pipe.
        width = shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns
        text = render_table(comparison, width=width, color=tty and not os.environ.get("NO_COLOR"))
    click.echo(text, nl=False)


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
    if c.skipped_runs:
        total = sum(c.skipped_runs.values())
        detail = ", ".join(
            f"{n} {safe_text(status)}" for status, n in sorted(c.skipped_runs.items())
        )
        click.echo(f"note: {total} run{'s' if total > 1 else ''} not counted ({detail})", err=True)


command = compare


_RANK_KEYS = ("rw", "bs", "ranks")
"""The parameters that name a point in the ranks' table."""


def _ranks_table(study: str, rows: list[RankRow]) -> str:
    """Each rank of each multi-host run: where it ran, its rate over its own runtime, its
    share of the run's I/Os, and when it started after the run's first rank."""
    if not rows:
        return f"study `{safe_text(study)}`: no multi-host runs (`fslab run --hosts`)\n"
    table = Table(title=f"study `{safe_text(study)}`: the ranks of its multi-host runs",
                  title_justify="left", box=None)  # fmt: skip
    for col in ("point", "run", "rank", "host", "IOPS", "MiB/s", "share", "start"):
        table.add_column(col, justify="right" if col not in ("point", "host") else "left")
    runs: dict[tuple[str, str, str, int], list[RankRow]] = {}
    for r in rows:
        said = " ".join(f"{k}={format_param(k, r.params[k])}" for k in _RANK_KEYS
                        if k in r.params)  # fmt: skip
        key = (r.target, r.workload, said, r.rep)
        runs.setdefault(key, []).append(r)
    for (target, workload, params, rep), ranks in runs.items():
        total = sum(r.ios for r in ranks) or 1
        first = min(r.start_unix_s for r in ranks)
        for i, r in enumerate(ranks):
            label = f"{target} {workload} {params}" if i == 0 else ""
            table.add_row(
                safe_text(label), str(rep + 1) if i == 0 else "", str(r.rank), safe_text(r.host),
                format_count(r.ios / r.runtime_s if r.runtime_s else 0.0),
                f"{r.bytes / (1 << 20) / r.runtime_s:.1f}" if r.runtime_s else "-",
                f"{r.ios / total:.0%}", f"+{(r.start_unix_s - first) * 1e3:.1f} ms",
            )  # fmt: skip
    console = Console(width=shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns,
                      highlight=False, markup=False, record=True, file=io.StringIO())  # fmt: skip
    console.print(table)
    return console.export_text()
