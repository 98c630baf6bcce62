"""A study's `[baseline]`: another study's target, in another results database (another
day's, another machine's bundle), that the study's targets are compared with.

`fslab compare` and `fslab report` bring the reference's runs of that one target into
their temporary merged view (`fslab.store.merge.merged_view`) as `TARGET@LABEL` and make
it the baseline, so the decision rule and the summary are the same as within a study.
Its rounds pair with nothing here (another origin's), so each target is judged against
it as independent samples (Welch). A study that names one is still run and looked at on
its own: the adaptive loop compares its targets with its own first target.

The reference is found where the study file said, relative to the study file as it was
last run, else beside the results database; the TOML stored with the results is the
source (`study.toml`), so a database moved with its reference keeps working.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from fslab.errors import ExitStatus, FslabError
from fslab.store.query import open_readonly


@dataclass(frozen=True)
class Reference:
    """Where a study's baseline lies, as its `[baseline]` table says."""

    source: Path
    """The results database or bundle, found (`reference_of`)."""
    target: str | None
    """Its target the others are compared with; None: its study's first."""
    study: str | None
    """Its study; None: the one of the comparing study's name there, else its most recent."""
    label: str | None
    """How its target is named here; None: from the file's name."""
    named: str
    """`results` as the study file wrote it, for messages."""


class ReferenceError(FslabError):
    """A study's `[baseline]` that cannot be compared with: nothing was written."""

    exit_status = ExitStatus.USAGE


def reference_of(db: Path, near: Path, study: str | None) -> Reference | None:
    """The `[baseline]` of `study` (default: the most recent) in the results database
    `db` (given as `near`: a bundle's unpacked database lies elsewhere), or None where it
    names none. Raises `ReferenceError` where its database is not where it says."""
    with open_readonly(db) as con:
        if study is None:
            row = con.execute(
                "SELECT name, path, toml FROM study ORDER BY created_at DESC, id DESC LIMIT 1"
            ).fetchone()
        else:
            row = con.execute(
                "SELECT name, path, toml FROM study WHERE name = ?", (study,)
            ).fetchone()
    if row is None:
        return None
    name, study_path, text = str(row[0]), row[1], str(row[2] or "")
    try:
        table = tomllib.loads(text).get("baseline")
    except tomllib.TOMLDecodeError:
        return None
    if not isinstance(table, dict) or not isinstance(table.get("results"), str):
        return None
    named = str(table["results"])
    given = Path(named)
    looked = [given] if given.is_absolute() else []
    if not given.is_absolute():
        if study_path:
            looked.append(Path(str(study_path)).parent / given)
        looked.append(near.parent / given)
    looked = list(dict.fromkeys(looked))
    found = next((p for p in looked if p.is_file()), None)
    if found is None:
        raise ReferenceError(
            f"study `{name}` compares with the baseline in `{named}`, and it is not there "
            f"(looked at {', '.join(str(p) for p in looked)})",
            hint="put that results database (or bundle) there, or pass --baseline TARGET "
            "to compare with one of the study's own targets instead",
        )

    def text_of(key: str) -> str | None:
        v = table.get(key)
        return str(v) if isinstance(v, str) and v else None

    return Reference(found, text_of("target"), text_of("study"), text_of("label"), named)
