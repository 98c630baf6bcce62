"""`fslab bundle`: one archive with a study's file, results database, reports and CSVs."""

from __future__ import annotations

from pathlib import Path

import click

from fslab.compare import DEFAULT_RESULTS
from fslab.report.bundle import archive_format, make_bundle
from fslab.report.output import check_output


@click.command("bundle")
@click.option(
    "--results",
    "results",
    metavar="DB",
    type=click.Path(dir_okay=False, path_type=Path),
    default=DEFAULT_RESULTS,
    show_default=True,
    help="The results database `fslab run` wrote.",
)
@click.option("--study", metavar="NAME", help="The study to bundle; default: the most recent.")
@click.option(
    "--baseline",
    metavar="NAME",
    help="The target the reports compare with; default: the study's first.",
)
@click.option(
    "--where",
    "where",
    metavar="KEY=VALUE",
    multiple=True,
    help="Keep the points whose parameter KEY is VALUE in the reports and CSVs.",
)
@click.option(
    "-o",
    "--output",
    "output",
    metavar="FILE",
    type=click.Path(path_type=Path),
    default=Path("fslab-bundle.tar.gz"),
    show_default=True,
    help="The archive to write: `.tar.gz` or `.zip`.",
)
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
