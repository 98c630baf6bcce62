"""Undoes journaled side effects: what a killed run left, or a half-made target.

Only what the machine proves fslab made is undone (`fslab.targets.owner`); an entry it
cannot prove, however it got into the database, is reported and left alone."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

# Imported for the undo it registers with the journal (action `postgres`): cleanup must
# know every action a run may have journaled.
import fslab.apps.postgres  # noqa: F401
from fslab.store.db import ResultsWriter
from fslab.store.lock import exclusive
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
    db: ResultsWriter, run_id: int | None = None, only: Collection[int] | None = None
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


RANK_JOURNALS = "rank*.journal.db"
"""The journals of a multi-host run's other ranks, in its work directory on each host
(`fslab.mpi_rank`): results databases holding only their journal."""


def rank_journals(workdirs: Collection[Path]) -> list[Path]:
    """The other ranks' journals found in these work directories, also one whose lock
    alone is left: its guard is removing it right now (`undo_rank_journals` waits for it,
    or the work directory would not yet be empty when it is undone)."""
    found: set[Path] = set()
    for w in workdirs:
        if w.is_dir():
            found.update(w.glob(RANK_JOURNALS))
            found.update(p.with_suffix("") for p in w.glob(f"{RANK_JOURNALS}.lock"))
    return sorted(found)


def undo_rank_journals(paths: Collection[Path]) -> CleanupReport:
    """Undoes every open entry of these rank journals; a journal left with nothing open
    is deleted."""
    report = CleanupReport()
    for path in paths:
        # A rank's guard (`fslab.guard`) may be undoing it right now: after it.
        with exclusive(path, "cleanup", wait=True):
            if not path.exists():
                continue  # its guard undid everything and removed it
            db = ResultsWriter.open(path, create=False)
            try:
                got = undo_open(db)
                left = db.open_journal_entries()
            finally:
                db.close()
            if not left:
                for suffix in ("", "-wal", "-shm"):
                    Path(f"{path}{suffix}").unlink(missing_ok=True)
        for name in ("undone", "failed", "not_ours", "kept"):
            getattr(report, name).extend(f"{x} ({path.name})" for x in getattr(got, name))
    return report


def workdirs_of(db: ResultsWriter) -> set[Path]:
    """The work directories a database's open journal entries lie in (where a
    multi-host run's other ranks keep their journals)."""
    out: set[Path] = set()
    for e in db.open_journal_entries():
        if e.action == "mkdir":
            out.add(Path(e.subject))
        owner = e.details.get("owner")
        if isinstance(owner, str):
            out.add(Path(owner).parent)
    return out
