"""`fslab site`: a static HTML site over results databases, to browse offline."""

from __future__ import annotations

from pathlib import Path

import click

from fslab.cli.options import results_sources_option
from fslab.safe_text import safe_text


@click.command("site")
@click.argument(
    "sources", nargs=-1, metavar="[DB]...", type=click.Path(dir_okay=False, path_type=Path)
)
@results_sources_option
@click.option(
    "-o", "--output", "output", metavar="DIR", type=click.Path(path_type=Path),
    default=Path("fslab-site"), show_default=True,
    help="The folder to write: a new or empty one, or a site `fslab site` made before "
    "(replaced whole).",
)  # fmt: skip
@click.pass_context
def site_command(
    ctx: click.Context, sources: tuple[Path, ...], results: tuple[Path, ...], output: Path
) -> None:
    """Write a static HTML site of the studies in results databases, to browse offline.

    Give the databases (or bundles) as arguments or with --results. DIR/index.html lists
    every study with its summary; each study has a page (the summary and its points, and
    the whole `fslab report` page where it is small enough to draw), each point one (its
    comparison table and each target's runs), and a study found in several databases
    (nightly passes) its history. Links are relative and plotly.js is written once into
    DIR: the folder opens from the file system with no network, copied anywhere.
    """
    from fslab.report.site import build_site

    given = ctx.get_parameter_source("results") is not click.core.ParameterSource.DEFAULT
    site = build_site((*sources, *results) if given or not sources else sources, output)
    n, passes = len({s.name for s in site.studies}), len(site.studies)
    runs = f", {passes} passes" if passes != n else ""
    history = f", {site.histories} histor{'ies' if site.histories != 1 else 'y'}"
    click.echo(
        safe_text(
            f"site: wrote {output}/index.html ({n} stud{'ies' if n != 1 else 'y'}{runs}, "
            f"{site.pages} pages{history if site.histories else ''}); open it in a browser"
        ),
        err=True,
    )


command = site_command
