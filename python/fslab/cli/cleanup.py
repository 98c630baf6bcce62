"""`fslab cleanup`: undo what an interrupted or killed run left behind (idempotent)."""

from __future__ import annotations

from contextlib import suppress
from pathlib import Path

import click
from rich.console import Console

from fslab.cleanup import rank_journals, undo_open, undo_rank_journals, workdirs_of
from fslab.cli.console import console
from fslab.cli.plan import results_option
from fslab.errors import ExitStatus
from fslab.safe_text import safe_text
from fslab.store.db import ResultsWriter, StoreFull
from fslab.store.lock import exclusive
from fslab.targets.workdir import default_workdir


@click.command()
@results_option
def cleanup(results: Path) -> ExitStatus:
    """Unmount, detach and delete what fslab's journal says is still there, where this
    machine proves fslab made it; anything else is reported and left alone. Refused
    while a run uses the results database. The journals a multi-host run's other ranks
    keep in its work directory on this machine are undone first."""
    return clean(results, console(stderr=True))


def clean(
    results: Path, err: Console, *, wait: bool = False, mark_stale: bool = True
) -> ExitStatus:
    """`fslab cleanup`, also after a multi-host run whose ranks were killed (by the
    launcher, and by rank 0's guard: `wait` for whoever holds the database first; the
    guard leaves the runs' status to the launcher, which knows why they ended)."""
    db = ResultsWriter.open(results, create=False)
    full: StoreFull | None = None
    try:
        db.check_integrity()
        with exclusive(results, "cleanup", wait=wait):
            # On a full disk nothing can be written, but everything can be undone: what
            # the journal says is read, and its marks wait for space (`db.unmarked`).
            try:
                stale = db.mark_stale_runs() if mark_stale else 0
            except StoreFull as e:
                full, stale = e, 0
            workdirs = workdirs_of(db) | {default_workdir(results)}
            # The other ranks' directories lie inside the work directory: theirs first.
            report = undo_rank_journals(rank_journals(workdirs))
            mine = undo_open(db)
            db.record_unmarked()  # undoing may have freed space (an image deleted)
            if full is not None and not db.unmarked:
                with suppress(StoreFull):
                    stale, full = db.mark_stale_runs() if mark_stale else 0, None
            if db.unmarked:
                full = full or db.full()
    finally:
        db.close()
    for name in ("undone", "kept", "failed", "not_ours"):
        getattr(report, name).extend(getattr(mine, name))
    for what in report.undone:
        err.print(f"undone: {safe_text(what)}", markup=False, soft_wrap=True)
    for what in report.kept:
        err.print(f"kept (still in use): {safe_text(what)}", markup=False, soft_wrap=True)
    for what in report.failed:
        err.print(f"could not undo: {safe_text(what)}", markup=False, soft_wrap=True)
    for what in report.not_ours:
        err.print(
            f"left alone (not proven fslab's): {safe_text(what)}", markup=False, soft_wrap=True
        )
    left = len(report.failed) + len(report.not_ours)
    err.print(
        f"{len(report.undone)} side effects undone, {left} left"
        + (f" ({len(report.not_ours)} not proven fslab's)" if report.not_ours else "")
        + (f"; {stale} unfinished runs marked interrupted" if stale else "")
    )
    if report.not_ours:
        err.print(
            "hint: fslab acts only on what it can prove it made on this machine (a "
            "directory it made holding its marker); remove the rest yourself if it is a "
            "leftover",
            markup=False,
        )
    if full is not None:
        err.print(
            f"error: {safe_text(full.message)}; what was undone could not all be recorded "
            f"({len(db.unmarked)} journal entries)",
            markup=False, soft_wrap=True,
        )  # fmt: skip
        err.print(
            "hint: free space there and run `fslab cleanup` again: it finds those entries "
            "undone already and records it",
            markup=False, soft_wrap=True,
        )  # fmt: skip
        return ExitStatus.FAILED
    return ExitStatus.FAILED if left else ExitStatus.OK


command = cleanup
