"""`fslab cleanup`: undo what an interrupted or killed run left behind (idempotent)."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console

from fslab.cleanup import undo_open
from fslab.cli.plan import results_option
from fslab.errors import ExitStatus
from fslab.store.db import Results


@click.command()
@results_option
def cleanup(results: Path) -> ExitStatus:
    """Unmount, detach and delete whatever fslab's journal says is still there."""
    db = Results.open(results, create=False)
    try:
        stale = db.mark_stale_runs()
        report = undo_open(db)
    finally:
        db.close()
    err = Console(stderr=True, highlight=False)
    for what in report.undone:
        err.print(f"undone: {what}")
    for what in report.failed:
        err.print(f"could not undo: {what}")
    err.print(
        f"{len(report.undone)} side effects undone, {len(report.failed)} left"
        + (f"; {stale} unfinished runs marked interrupted" if stale else "")
    )
    return ExitStatus.FAILED if report.failed else ExitStatus.OK


command = cleanup
