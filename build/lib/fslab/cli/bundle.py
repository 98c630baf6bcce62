"""`fslab bundle`: one archive with a study's file, results database, reports and CSVs."""

from __future__ import annotations

from pathlib import Path

import click

from fslab.cli.options import (
    baseline_option,
    output_option,
    results_db_option,
    study_option,
    where_option,
)
from fslab.report.bundle import archive_format, make_bundle
from fslab.report.output import check_output


@click.command("bundle")
@results_db_option
@study_option("bundle")
@baseline_option
@where_option
@output_option("The archive to write: `.tar.gz` or `.zip`.", default=Path("fslab-bundle.tar.gz"))
def bundle(
    results: Path,
    study: str | None,
    baseline: str | None,
    where: tuple[str, ...],
    output: Path,
) -> None:
    """Bundle a study into one archive: the study file, the results database, the HTML
    and Markdown reports, the comparison and the per-run CSV, and a README."""
    check_output(output, "bundle.tar.gz")
    archive_format(output)
    names = make_bundle(output, results, study=study, baseline=baseline, where=where)
    click.echo(f"bundle: wrote {output} ({len(names)} files)", err=True)


command = bundle
