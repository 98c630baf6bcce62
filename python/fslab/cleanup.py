"""Undoes journaled side effects: what a killed run left, or a half-made target.

Only what the machine proves fslab made is undone (`fslab.targets.owner`); an entry it
cannot prove, however it got into the database, is reported and left alone."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

# Imported for the undo it registers with the journal (action `postgres`): cleanup must
# know every action a run may have journaled.
import fslab.apps.postgres  # noqa: F401
from fslab.store.db import Results
from fslab.targets.journal import undo
from fslab.targets.owner import NotOurs


@dataclass
class CleanupReport:
    undone: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    """fslab's own, but could not be undone now (still busy): `what: why`."""
    not_ours: list[str] = field(default_factory=list)
    """Entries fslab cannot prove it made: left alone, `what: why`."""
    kept: list[str] = field(default_factory=list)
    """Shared directories still in use, kept on purpose (their entries stay open)."""


def undo_open(
    db: Results, run_id: int | None = None, only: Collection[int] | None = None
) -> CleanupReport:
    """Undoes every side effect not yet undone (only `run_id`'s, and only the entries
    `only`, when given), newest first, and marks each undone. Idempotent: a thing
    already gone counts as undone."""
    report = CleanupReport()
    journal = db.journal(None)
    for e in db.open_journal_entries():
        if (run_id is not None and e.run_id != run_id) or (only is not None and e.id not in only):
            continue
        what = f"{e.action} {e.subject}"
        try:
            if not undo(e.action, e.subject, e.details):
                report.kept.append(what)
                continue
        except NotOurs as exc:
            report.not_ours.append(f"{what}: {exc}")
            continue
        except Exception as exc:  # keep going: undo as much as possible
            report.failed.append(f"{what}: {exc}")
            continue
        journal.undone(e.id)
        report.undone.append(what)
    return report
