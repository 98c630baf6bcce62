"""`fslab job JOB`: one engine job, with a readable summary (or the engine's JSON)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from fslab.engine import SeriesPoint, run_job
from fslab.errors import ExitStatus
from fslab.report.job_summary import progress_line, render_summary


@click.command()
@click.argument("job_file", metavar="JOB", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--json", "as_json", is_flag=True, help="Print the engine's JSON report as is.")
@click.option("--progress", is_flag=True, help="Print one line per interval on stderr.")
def job(job_file: str, as_json: bool, progress: bool) -> ExitStatus | int:
    """Run one engine job (a .toml or .json file, or - for stdin) and summarize it.

    The exit status is the engine's: 0 ok, 1 failed, 2 bad job, 130 interrupted (the
    summary then covers the part that ran).
    """
    run = run_job(Path(job_file), progress_cb=_echo_progress if progress else None)
    if as_json:
        sys.stdout.write(run.stdout)
        sys.stdout.flush()
    else:
        click.echo(render_summary(run.report))
    # The engine's own diagnostics, as it said them; its warnings are in the summary.
    said = run.stderr.splitlines(keepends=True)
    if not as_json:
        said = [line for line in said if not line.startswith("warning: ")]
    if said:
        click.echo("".join(said), err=True, nl=False)
    return run.exit_code


def _echo_progress(point: SeriesPoint) -> None:
    click.echo(progress_line(point), err=True)


command = job
