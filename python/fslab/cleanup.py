"""Undoes journaled side effects: what a killed run left, or a half-made target."""

from __future__ import annotations

from dataclasses import dataclass, field

from fslab.store.db import Results
from fslab.targets.journal import undo


@dataclass
class CleanupReport:
    undone: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


def undo_open(db: Results, run_id: int | None = None) -> CleanupReport:
    """Undoes every side effect not yet undone (only `run_id`'s when given), newest
    first, and marks each undone. Idempotent: a thing already gone counts as undone."""
    report = CleanupReport()
    journal = db.journal(None)
    for e in db.open_journal_entries():
        if run_id is not None and e.run_id != run_id:
            continue
        what = f"{e.action} {e.subject}"
        try:
            undo(e.action, e.subject, e.details)
        except Exception as exc:  # keep going: undo as much as possible
            report.failed.append(f"{what}: {exc}")
            continue
        journal.undone(e.id)
        report.undone.append(what)
    return report
