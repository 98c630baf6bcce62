"""`fslab export`: every completed run x metric of a study as tidy CSV or JSON, for
notebooks (pandas, polars, R). Data goes to FILE, or to stdout with `-o -`."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO

import click

from fslab.cli.options import output_option, results_db_option, study_option, where_option
from fslab.report.export import (
    ExportPlan,
    plan_export,
    rank_export_rows,
    render_export_csv,
    render_export_json,
    write_export_csv,
    write_export_json,
)
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
@click.option(
    "--ranks", "show_ranks", is_flag=True,
    help="One row per rank of the study's multi-host runs instead (`fslab run --hosts`): its "
    "host, status, start_unix_s, start_offset_s, runtime_s, ios, bytes, iops, bw_bytes and "
    "share (of its run's I/Os, 0 to 1). Exit 1 where the study has none.",
)  # fmt: skip
@output_option("Where to write; `-` is stdout.", default=Path("-"))
def export(
    results: Path,
    study: str | None,
    where: tuple[str, ...],
    fmt: str | None,
    output: Path,
    show_ranks: bool,
) -> None:
    """Export a study's results as one row per completed run and metric, with every
    parameter as a column (values in base units: bytes, ns, per second).

    With --ranks: one row per rank of its multi-host runs instead."""
    if fmt is None:
        fmt = "json" if output.suffix.lower() == ".json" else "csv"
    if not on_stdout(output):
        check_output(output, f"runs.{fmt}")
    # Checked whole before a row is written; the rows are written as they are read.
    plan = plan_export(results, study=study, where=where)
    write: Callable[[ExportPlan, IO[bytes]], int]
    if show_ranks:
        # A row per rank: few enough to hold, and all read before anything is written.
        columns, ranks = rank_export_rows(plan)
        text = (render_export_json if fmt == "json" else render_export_csv)(columns, ranks)
        write = functools.partial(_write_whole, text.encode(), len(ranks))
    else:
        write = write_export_json if fmt == "json" else write_export_csv
    if on_stdout(output):
        sys.stdout.flush()
        write(plan, sys.stdout.buffer)
        sys.stdout.buffer.flush()
    else:
        with staged(output) as part, part.open("wb") as f:
            rows = write(plan, f)
        click.echo(f"export: wrote {output} ({rows} rows)", err=True)


def _write_whole(data: bytes, rows: int, _: ExportPlan, out: IO[bytes]) -> int:
    out.write(data)
    return rows


command = export
