"""`fslab export`: every completed run x metric of a study as tidy CSV or JSON, for
notebooks (pandas, polars, R). Data goes to FILE, or to stdout with `-o -`."""

from __future__ import annotations

from pathlib import Path

import click

from fslab.cli.options import output_option, results_db_option, study_option, where_option
from fslab.report.export import export_rows, render_export_csv, render_export_json
from fslab.report.output import check_output, on_stdout, write_text


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
    columns, rows = export_rows(results, study=study, where=where)
    text = render_export_json(columns, rows) if fmt == "json" else render_export_csv(columns, rows)
    if on_stdout(output):
        click.echo(text, nl=False)
    else:
        write_text(output, text)
        click.echo(f"export: wrote {output} ({len(rows)} rows)", err=True)


command = export
