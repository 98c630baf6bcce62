"""`fslab export`: every completed run x metric of a study as tidy CSV or JSON, for
notebooks (pandas, polars, R). Data goes to FILE, or to stdout with `-o -`."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO

import click

from fslab.cli.options import output_option, results_db_option, study_option, where_option
from fslab.report.export import ExportPlan, plan_export, write_export_csv, write_export_json
from fslab.report.output import check_output, on_stdout, staged


@click.command("export")
@results_db_option
@study_option("export")
@where_option
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["csv", "json"]),
    help="csv (a header row) or json (`columns` and `rows`). Default: from FILE's suffix, "
    "else csv.",
)
@output_option("Where to write; `-` is stdout.", default=Path("-"))
def export(
    results: Path, study: str | None, where: tuple[str, ...], fmt: str | None, output: Path
) -> None:
    """Export a study's results as one row per completed run and metric, with every
    parameter as a column (values in base units: bytes, ns, per second)."""
    if fmt is None:
        fmt = "json" if output.suffix.lower() == ".json" else "csv"
    if not on_stdout(output):
        check_output(output, f"runs.{fmt}")
    # Checked whole before a row is written; the rows are written as they are read.
    plan = plan_export(results, study=study, where=where)
    write: Callable[[ExportPlan, IO[bytes]], int] = (
        write_export_json if fmt == "json" else write_export_csv
    )
    if on_stdout(output):
        sys.stdout.flush()
        write(plan, sys.stdout.buffer)
        sys.stdout.buffer.flush()
    else:
        with staged(output) as part, part.open("wb") as f:
            rows = write(plan, f)
        click.echo(f"export: wrote {output} ({rows} rows)", err=True)


command = export
