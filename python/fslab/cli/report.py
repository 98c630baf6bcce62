"""`fslab report`: a study's results as one self-contained HTML file with interactive
charts, or as Markdown with SVG charts beside it."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click

from fslab.cli.options import (
    baseline_option,
    output_option,
    results_dbs_option,
    study_option,
    where_option,
)
from fslab.report.charts import build_charts
from fslab.report.context import ReportData, load_report
from fslab.report.html import write_html
from fslab.report.markdown import image_dir_name, write_markdown_report
from fslab.report.output import check_output
from fslab.safe_text import safe_text
from fslab.store.merge import baseline_among, results_view

_MD_SUFFIXES = (".md", ".markdown")


@click.command("report")
@results_dbs_option
@study_option("report")
@baseline_option
@where_option
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["html", "md"]),
    help="html: one self-contained file with interactive charts; md: Markdown with SVG "
    "charts in FILE's `<name>_files/` folder. Default: from FILE's suffix, else html.",
)
@click.option(
    "--ranks", "show_ranks", is_flag=True,
    help="Add a section with each rank of the study's multi-host runs (`fslab run --hosts`): "
    "its host, rate, share of the run and start, and how even each point's ranks were. "
    "Exit 1 where the study has none.",
)  # fmt: skip
@output_option("Where to write the report; default: fslab-report.html (or .md).")
def report(
    results: tuple[Path, ...],
    study: str | None,
    baseline: str | None,
    where: tuple[str, ...],
    fmt: str | None,
    output: Path | None,
    show_ranks: bool,
) -> None:
    """Write a report of a study: the conclusions the statistics support, charts, the
    comparison tables, each target's configuration, the machine and the method.

    With --ranks, each rank of its multi-host runs too.

    The HTML report opens offline (plotly.js is inlined, once); the Markdown report is
    ready to paste into a blog post or an issue, its images beside it. Several --results
    report as one study, as `fslab compare` compares them: the others' targets are
    TARGET@NAME, and the summary says what matched and how the machines differ.
    """
    if fmt is None:
        fmt = "md" if output is not None and output.suffix.lower() in _MD_SUFFIXES else "html"
    out = check_output(output or Path(f"fslab-report.{fmt}"), f"report.{fmt}")
    with _report_data(results, study, baseline, where, show_ranks) as data:
        _write(data, fmt, out)


@contextmanager
def _report_data(
    results: tuple[Path, ...],
    study: str | None,
    baseline: str | None,
    where: tuple[str, ...],
    ranks: bool,
) -> Iterator[ReportData]:
    """What the report shows: of the one database (a bundle's), or of several merged into
    a temporary copy (`results_view`, removed afterwards) with what matched said."""
    with results_view(results, study, reference=baseline is None) as (db, name, sides):
        notes = tuple(side.note(str(results[0])) for side in sides)
        for note in notes:
            click.echo(safe_text(f"note: {note}"), err=True)
        data = load_report(db, study=name, baseline=baseline_among(sides, baseline),
                           where=where, ranks=ranks)  # fmt: skip
        yield dataclasses.replace(data, sources=notes)


def _write(data: ReportData, fmt: str, out: Path) -> None:
    charts = build_charts(data)
    if fmt == "md":
        written = write_markdown_report(data, charts, out)
        images = len(written) - 1
        folder = out.parent / image_dir_name(out)
        extra = f", {images} chart image{'s' if images != 1 else ''} in {folder}/"
        click.echo(f"report: wrote {out}{extra if images else ''}", err=True)
    else:
        write_html(out, data, charts)
        n_charts, n_tables = len(charts), len(data.comparison.groups)
        faults = ", an integrity table" if data.comparison.integrity else ""
        ranks = ""
        if data.ranks is not None:
            n = data.ranks.runs
            ranks = f", the ranks of {n} multi-host run{'s' if n != 1 else ''}"
        click.echo(
            f"report: wrote {out} ({n_charts} chart{'s' if n_charts != 1 else ''}, "
            f"{n_tables} table{'s' if n_tables != 1 else ''}{faults}{ranks}); open it in a "
            "browser",
            err=True,
        )


command = report
