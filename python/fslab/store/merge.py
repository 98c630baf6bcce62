"""Results from elsewhere merged into this database: another machine's, an unpacked
bundle's, an earlier database of this machine's (`fslab import`, and `fslab compare`
given several `--results`).

**What is copied.** Each study's points and their finished runs with everything measured
(`metric`, `series`, `telemetry`, `run_metric`, `integrity`, `rank`), the environment
each run ran in (kernel, CPU, memory, tool versions: the other machine's, kept), and the
study itself where this database lacks it, with its looks (an adaptive study keeps the
level its looks judged at). The derived tables are worked out here again
(`fslab.store.derive`). **What never is:** the journal (the other machine's side
effects: `fslab cleanup` here must never act on them) and runs still `running`.

**An origin per import.** Every imported run names its `origin` (the source, the label,
when). A blocked design pairs a target's runs with its baseline's by round; a round of
another machine, or of another day, shares nothing with this one's, so an imported run's
round is its origin's own (`fslab.store.derive.ROUNDS_PER_ORIGIN`): runs pair within an
origin, never across.
Across origins a target is compared with its baseline as independent samples (Welch).

**Labels.** Without one, imported points keep their names and ids: a study split between
two machines (ext4 measured here, xfs there) comes together as one. A point measured on
both is a conflict, refused before anything is written. With `label`, every imported
target is named `TARGET@LABEL` (point ids follow), beside this database's own: `ext4`
and `ext4@old` in one comparison, the same decision rule between them.

**Idempotent.** A run is known by its point, repetition and start time: importing the
same source again adds nothing.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from fslab.errors import ExitStatus, FslabError
from fslab.params import suggest
from fslab.store.db import ResultsWriter
from fslab.store.derive import derive
from fslab.store.query import BadResultsError, open_readonly
from fslab.store.records import backup
from fslab.store.reference import Reference, ReferenceError, reference_of

_RUN_TABLES = ("metric", "series", "telemetry", "run_metric", "integrity", "rank")
"""The tables whose rows belong to one run (`run_id`), copied with it."""

LABEL_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-+")


class MergeError(FslabError):
    """A source that cannot be merged as asked; nothing was written."""

    exit_status = ExitStatus.USAGE


def check_label(label: str) -> str:
    """The label as given, or `MergeError` naming what is wrong with it."""
    bad = sorted(set(label) - LABEL_CHARS)
    if not label or bad or len(label) > 40:
        why = (
            "empty"
            if not label
            else (f"it holds {''.join(bad)!r}" if bad else "over 40 characters")
        )
        raise MergeError(
            f"--as {label!r}: not a label fslab can add to target names ({why})",
            hint="use letters, digits and . _ - + (up to 40): `--as old`, `--as kernel-6.1`",
        )
    return label


@dataclass
class StudyMerge:
    """What one source study brought."""

    source: str
    """Its name in the source."""
    into: str
    """The study here it joined."""
    created: bool
    """Whether this database had no such study before."""
    targets: list[str] = field(default_factory=list)
    """The targets its runs belong to here (labelled)."""
    points: int = 0
    """Points added here."""
    runs: int = 0
    """Runs added."""
    already: int = 0
    """Runs this database already held (an earlier import of the same source)."""
    point_ids: dict[str, str] = field(default_factory=dict)
    """Each source point's id here."""
    names: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    """Each source point's (target, workload, params JSON) as the source names it."""


@dataclass
class Merged:
    """What a merge did."""

    source: Path
    label: str | None
    origin_id: int | None
    studies: list[StudyMerge]

    @property
    def runs(self) -> int:
        return sum(s.runs for s in self.studies)

    @property
    def already(self) -> int:
        return sum(s.already for s in self.studies)


@contextmanager
def source_database(source: Path) -> Iterator[Path]:
    """The results database a source is or holds: the file itself, or a bundle's
    `results.db` (`fslab bundle`'s `.tar.gz`, `.tgz` or `.zip`) unpacked into a temporary
    directory that is removed afterwards. Only that member is read: nothing else of the
    archive is written anywhere."""
    if not source.exists():
        raise MergeError(f"{source}: no such file", hint="name a results database or a bundle")
    if source.is_dir():
        raise MergeError(
            f"{source}: a directory", hint="name a results database or a bundle archive in it"
        )
    name = source.name.lower()
    archive = name.endswith(ARCHIVES)
    if not archive:
        with source.open("rb") as f:
            sqlite = f.read(16) == b"SQLite format 3\x00"
        if not sqlite:
            raise MergeError(
                f"{source}: neither a results database, a bundle, fio's JSON output nor "
                "DiskSpd's XML results",
                hint="import the database `fslab run` wrote, the archive `fslab bundle` "
                "wrote (.tar.gz, .tgz, .zip), fio's `--output-format=json` file (.json) or "
                "DiskSpd's `-Rxml` output",
            )
        yield source
        return
    with tempfile.TemporaryDirectory(prefix="fslab-import-") as tmp:
        out = Path(tmp) / "results.db"
        try:
            if name.endswith(".zip"):
                with zipfile.ZipFile(source) as z:
                    member = _one_results(source, [n for n in z.namelist() if not n.endswith("/")])
                    with z.open(member) as f, out.open("wb") as w:
                        shutil.copyfileobj(f, w, 1 << 20)
            else:
                with tarfile.open(source, "r:gz") as t:
                    members = {m.name: m for m in t.getmembers() if m.isfile()}
                    extracted = t.extractfile(members[_one_results(source, list(members))])
                    assert extracted is not None
                    with extracted as f, out.open("wb") as w:
                        shutil.copyfileobj(f, w, 1 << 20)
        except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError) as e:
            raise MergeError(
                f"{source}: not an archive fslab can read ({e})",
                hint="pass the `.tar.gz` or `.zip` `fslab bundle` wrote, or a results database",
            ) from e
        yield out


def _one_results(source: Path, names: Sequence[str]) -> str:
    found = [n for n in names if n == "results.db" or n.endswith("/results.db")]
    if len(found) != 1:
        raise MergeError(
            f"{source}: {'no' if not found else len(found)} `results.db` in the archive "
            "(a bundle holds one)",
            hint="pass a bundle `fslab bundle` wrote, or the results database itself",
        )
    return found[0]


def labelled_point(point_id: str, label: str | None) -> str:
    """A point's id here: its own, or a labelled point's (the same configuration from
    another origin is another point of the study)."""
    if label is None:
        return point_id
    return hashlib.sha256(f"{point_id}@{label}".encode()).hexdigest()[:16]


def merge(
    dest: ResultsWriter,
    source: Path,
    *,
    label: str | None = None,
    study: str | None = None,
    into: str | None = None,
    targets: Collection[str] | None = None,
) -> Merged:
    """Merges the results database `source` (see the module) into `dest`: every study of
    it, or the one named `study`, into the study of the same name here (or `into`);
    with `targets`, only their points (the names as the source has them).
    All or nothing: a conflict raises `MergeError` before anything is written."""
    if label is not None:
        check_label(label)
    check_source(source, dest.path)
    names = source_studies(source, study, into)
    with open_readonly(source) as src, dest.tx() as c:
        origin = None
        merged: list[StudyMerge] = []
        for name in names:
            got, origin = _merge_study(c, src, source, name, into or name, label, origin,
                                       targets)  # fmt: skip
            merged.append(got)
        new_runs = [
            int(r)
            for (r,) in c.execute(
                "SELECT id FROM run WHERE origin_id = ?", (origin,)
            ).fetchall()
        ] if origin is not None else []  # fmt: skip
        derive(c, new_runs)
    return Merged(source, label, origin, merged)


def check_source(source: Path, dest: Path) -> None:
    """`MergeError` where the source is the database merged into."""
    if source.exists() and dest.exists() and source.resolve() == dest.resolve():
        raise MergeError(
            f"{source}: the database being imported into", hint="name another results database"
        )


def source_studies(source: Path, study: str | None = None, into: str | None = None) -> list[str]:
    """The studies of `source` a merge takes (all, oldest first, or `study`); `MergeError`
    where there is none, `study` is not one, or several cannot all go `into` one."""
    with open_readonly(source) as src:
        names = [str(n) for (n,) in src.execute("SELECT name FROM study ORDER BY created_at, id")]
    if study is not None:
        if study not in names:
            raise MergeError(
                f"{source}: no study `{study}`",
                hint=f"it holds {', '.join(f'`{n}`' for n in names) or 'none'}",
            )
        names = [study]
    if not names:
        raise MergeError(f"{source}: no study in it", hint="name a database `fslab run` wrote")
    if into is not None and len(names) > 1:
        raise MergeError(
            f"{source}: {len(names)} studies, and they cannot all go into `{into}`",
            hint="choose one with --study",
        )
    return names


def _merge_study(
    c: sqlite3.Connection,
    src: sqlite3.Connection,
    source: Path,
    name: str,
    into: str,
    label: str | None,
    origin: int | None,
    targets: Collection[str] | None = None,
) -> tuple[StudyMerge, int | None]:
    sid, path, toml, created_at, design = src.execute(
        "SELECT id, path, toml, created_at, design FROM study WHERE name = ?", (name,)
    ).fetchone()
    row = c.execute("SELECT id FROM study WHERE name = ?", (into,)).fetchone()
    created = row is None
    if created:
        here = int(
            c.execute(
                "INSERT INTO study (name, path, toml, created_at, design) VALUES (?, ?, ?, ?, ?)",
                (into, path, toml, created_at, design),
            ).lastrowid
            or 0
        )
    else:
        here = int(row[0])
    out = StudyMerge(name, into, created)
    # Labelled points go after this study's own, so its own targets come first (the
    # baseline stays the study's first target).
    seq_base = 0
    if label is not None and not created:
        seq_base = int(
            c.execute("SELECT coalesce(max(seq), -1) + 1 FROM point WHERE study_id = ?", (here,))
            .fetchone()[0]
        )  # fmt: skip
    envs: dict[int, int] = {}
    conflicts: list[str] = []
    point_map: dict[str, str] = {}
    for pid, seq, target, workload, kind, spec, params in src.execute(
        "SELECT id, seq, target, workload, kind, target_spec, params FROM point"
        " WHERE study_id = ? ORDER BY seq, id",
        (sid,),
    ).fetchall():
        if targets is not None and target not in targets:
            continue
        new_id = labelled_point(str(pid), label)
        new_target = f"{target}@{label}" if label is not None else str(target)
        point_map[str(pid)] = new_id
        out.names[str(pid)] = (str(target), str(workload), str(params))
        have = c.execute("SELECT study_id FROM point WHERE id = ?", (new_id,)).fetchone()
        if have is not None and int(have[0]) != here:
            other = c.execute("SELECT name FROM study WHERE id = ?", (have[0],)).fetchone()[0]
            conflicts.append(
                f"point {new_target} {workload} {params} belongs to study `{other}` here"
            )
            continue
        if have is None:
            c.execute(
                "INSERT INTO point (id, study_id, seq, target, workload, kind, target_spec,"
                " params) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (new_id, here, seq_base + int(seq), new_target, workload, kind, spec, params),
            )
            out.points += 1
        if new_target not in out.targets:
            out.targets.append(new_target)
        for rid, rep, status, started, ended, env, eff, ej, runtime, err, shape in src.execute(
            "SELECT id, rep, status, started_at, ended_at, environment_id, effective,"
            " engine_json, runtime_s, error, engine_shape FROM run"
            " WHERE point_id = ? AND status != 'running' ORDER BY rep",
            (pid,),
        ).fetchall():
            there = c.execute(
                "SELECT started_at FROM run WHERE point_id = ? AND rep = ?", (new_id, rep)
            ).fetchone()
            if there is not None:
                if abs(float(there[0]) - float(started)) < 1e-6:
                    out.already += 1
                else:
                    conflicts.append(
                        f"{new_target} {workload} {params} run {int(rep) + 1}: measured here "
                        f"too ({_when(float(there[0]))}; the source's {_when(float(started))})"
                    )
                continue
            if origin is None:
                origin = int(
                    c.execute(
                        "INSERT INTO origin (label, source, imported_at) VALUES (?, ?, ?)",
                        (label, str(source), time.time()),
                    ).lastrowid
                    or 0
                )
            if env is not None and int(env) not in envs:
                envs[int(env)] = _environment(c, src, int(env))
            new_run = int(
                c.execute(
                    "INSERT INTO run (point_id, rep, status, started_at, ended_at,"
                    " environment_id, effective, engine_json, runtime_s, error, engine_shape,"
                    " origin_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (new_id, rep, status, started, ended, envs.get(int(env)) if env else None,
                     eff, ej, runtime, err, shape, origin),
                ).lastrowid
                or 0
            )  # fmt: skip
            for table in _RUN_TABLES:
                _copy_rows(c, src, table, int(rid), new_run)
            out.runs += 1
    if conflicts:
        shown = "\n  ".join(conflicts[:5])
        more = f"\n  ... and {len(conflicts) - 5} more" if len(conflicts) > 5 else ""
        raise MergeError(
            f"{source}: study `{name}`: {len(conflicts)} of its points or runs are this "
            f"database's own already:\n  {shown}{more}",
            hint="import with `--as LABEL`: its targets become TARGET@LABEL, compared with "
            "these (`fslab compare --results A --results B` does that for you)",
        )
    out.point_ids = point_map
    if created:
        for row in src.execute(
            "SELECT round, point_id, op, level, seed, runs, verdict, ratio, low, high, state,"
            " at FROM look WHERE study_id = ?",
            (sid,),
        ).fetchall():
            c.execute(
                "INSERT OR IGNORE INTO look (study_id, round, point_id, op, level, seed, runs,"
                " verdict, ratio, low, high, state, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
                " ?, ?, ?)",
                (here, row[0], point_map.get(str(row[1]), str(row[1])), *row[2:]),
            )
    return out, origin


def _when(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


def _environment(c: sqlite3.Connection, src: sqlite3.Connection, env_id: int) -> int:
    """The source's environment row here (the same machine state is one row)."""
    h, kernel, cpu, cores, mem, tools = src.execute(
        "SELECT hash, kernel, cpu_model, cores, mem_bytes, tools FROM environment WHERE id = ?",
        (env_id,),
    ).fetchone()
    c.execute(
        "INSERT OR IGNORE INTO environment (hash, kernel, cpu_model, cores, mem_bytes, tools)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (h, kernel, cpu, cores, mem, tools),
    )
    return int(c.execute("SELECT id FROM environment WHERE hash = ?", (h,)).fetchone()[0])


def _copy_rows(
    c: sqlite3.Connection, src: sqlite3.Connection, table: str, run_id: int, new_id: int
) -> None:
    cur = src.execute(f"SELECT * FROM {table} WHERE run_id = ?", (run_id,))
    names = [d[0] for d in cur.description]
    rows = cur.fetchall()
    if not rows:
        return
    at = names.index("run_id")
    marks = ", ".join("?" * len(names))
    c.executemany(
        f"INSERT INTO {table} ({', '.join(names)}) VALUES ({marks})",
        [(*r[:at], new_id, *r[at + 1 :]) for r in rows],
    )


# ------------------------------------------------------------------ several databases


def source_label(path: Path, taken: set[str]) -> str:
    """The label a database given to `fslab compare` beside the first is shown under:
    its file name without `.db` (`old.db`: `old`), made unique (`old-2`)."""
    stem = path.name
    for suffix in (".tar.gz", ".tgz", ".zip", ".db", ".sqlite"):
        if stem.lower().endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    base = "".join(ch if ch in LABEL_CHARS else "-" for ch in stem)[:32] or "results"
    label, n = base, 1
    while label in taken:
        n += 1
        label = f"{base}-{n}"
    taken.add(label)
    return label


@dataclass(frozen=True)
class Side:
    """One database of several compared: its label and what differs from the first's."""

    source: Path
    label: str
    study: str
    matched: int
    """Its points that the first database's study measured too (same configuration)."""
    only_here: int
    """Its points the first's study has not."""
    only_there: int
    """The first's study's points it has not."""
    configured: tuple[str, ...]
    """What keeps points apart: a target key that differs where a point has the same
    target, workload and parameters on both sides (ext4's `mkfs_args`), or a parameter
    that differs from the nearest point of the same target and workload (`runtime`)."""
    differences: tuple[str, ...]
    """How the machine its runs ran on differs: `kernel 6.1.0 (first: 6.18.4)`."""
    engine_changed: bool
    """Whether the engine's major.minor differs: its numbers may move by the engine alone."""
    reference_target: str | None = None
    """The study's `[baseline]` (`fslab.store.reference`): its target as named here
    (`ext4@nightly`), whose points are matched by workload and parameters, not by
    configuration. None: a database given beside the first."""

    def note(self, first: str) -> str:
        """What the comparison should say of this side, in one paragraph."""
        if self.reference_target is not None:
            return self._reference_note(first)
        parts = [
            f"`{self.label}` is {self.source} (study `{self.study}`): {self.matched} points "
            f"matched {first}'s by configuration"
        ]
        if self.only_here:
            parts.append(f"{self.only_here} only in `{self.label}`")
        if self.only_there:
            parts.append(f"{self.only_there} only in {first}")
        text = ", ".join(parts)
        if self.configured:
            text += f" (they differ in {', '.join(self.configured)})"
        if self.differences:
            text += "; ran on " + ", ".join(self.differences)
        else:
            text += "; the same machine and tools"
        if self.engine_changed:
            text += " (not comparable as measurements of the storage alone: the engine differs)"
        return text

    def _reference_note(self, first: str) -> str:
        target = self.reference_target
        text = (
            f"the baseline, `{target}`, is study `{self.study}`'s target in {self.source} "
            f"(the study's `[baseline]`): it measured {self.matched} of {first}'s "
            f"{self.matched + self.only_there} workload points"
        )
        if self.configured:
            text += f" (the others differ in {', '.join(self.configured)})"
        if self.differences:
            text += "; it ran on " + ", ".join(self.differences)
        else:
            text += "; the same machine and tools"
        if self.engine_changed:
            text += " (not comparable as measurements of the storage alone: the engine differs)"
        return text + "; compared as independent runs (its rounds are not this study's)"


@contextmanager
def merged_view(
    sources: Sequence[Path],
    study: str | None = None,
    *,
    first: str | None = None,
    reference: Reference | None = None,
) -> Iterator[tuple[Path, str | None, tuple[Side, ...]]]:
    """Several results databases (or bundles) as one, for `fslab compare`: a temporary
    copy of the first, with each other's study of the same name (else its most recent)
    merged in under a label (`source_label`), and the `reference`'s target last (the
    study's `[baseline]`: the last side, its `reference_target` set). Yields (the merged
    database, the study to compare there, each other side). `first`: a label the
    others' may not take (the first's own, where it is shown under one). The copy is
    removed afterwards; nothing given is written, except that an older database is
    migrated where it lies, as compare does."""
    reserved = first
    first_path = sources[0]
    with (
        tempfile.TemporaryDirectory(prefix="fslab-compare-") as tmp,
        source_database(first_path) as first_db,
    ):
        merged = Path(tmp) / "merged.db"
        with open_readonly(first_db) as con:
            backup(con, merged)
        db = ResultsWriter.open(merged, create=False)
        try:
            names = [str(n) for (n,) in db.con.execute(
                "SELECT name FROM study ORDER BY created_at DESC, id DESC")]  # fmt: skip
            if study is None:
                if not names:
                    raise MergeError(f"{first_path}: no study in it", hint="run a study first")
                study = names[0]
            elif study not in names:
                raise MergeError(
                    f"{first_path}: no study `{study}`",
                    hint=f"it holds {', '.join(f'`{n}`' for n in names) or 'none'}",
                )
            taken = {study} if reserved is None else {study, reserved}
            sides: list[Side] = []
            for other in sources[1:]:
                label = source_label(other, taken)
                with source_database(other) as path:
                    theirs = _study_of(path, study)
                    got = merge(db, path, label=label, study=theirs, into=study)
                sides.append(
                    _side(db.con, other, label, theirs, study, got.studies[0], got.origin_id)
                )
            if reference is not None:
                sides.append(_merge_reference(db, reference, study, taken))
        finally:
            db.close()
        yield merged, study, tuple(sides)


def baseline_among(sides: Sequence[Side], given: str | None) -> str | None:
    """The baseline to compare with: the one asked for, else the study's `[baseline]`
    target where a side brought it, else None (the study's first target)."""
    return given or next((s.reference_target for s in sides if s.reference_target), None)


def reference_points(ref: Reference, study: str) -> tuple[str, str, set[tuple[str, str]]]:
    """The reference's study and target (`_reference_target`) and that target's points,
    as (workload, parameters JSON): what `fslab plan` matches the study's points with."""
    with source_database(ref.source) as path, open_readonly(path) as con:
        theirs, target = _reference_target(con, ref, study)
        points = {(str(w), str(p)) for w, p in con.execute(
            "SELECT workload, params FROM point JOIN study ON study.id = point.study_id"
            " WHERE study.name = ? AND point.target = ?", (theirs, target))}  # fmt: skip
    return theirs, target, points


def _reference_target(con: sqlite3.Connection, ref: Reference, study: str) -> tuple[str, str]:
    """(its study, its target) in the reference's database: as named, else the study of
    `study`'s name there (else its most recent) and that study's first target."""
    names = [str(n) for (n,) in con.execute(
        "SELECT name FROM study ORDER BY created_at DESC, id DESC")]  # fmt: skip
    if ref.study is not None and ref.study not in names:
        raise ReferenceError(
            f"[baseline]: {ref.source} has no study `{ref.study}`",
            hint=f"it holds {', '.join(f'`{n}`' for n in names) or 'none'}",
        )
    theirs = ref.study or (study if study in names else (names or [""])[0])
    targets = [str(t) for (t,) in con.execute(
        "SELECT target FROM point JOIN study ON study.id = point.study_id"
        " WHERE study.name = ? GROUP BY target ORDER BY min(seq)", (theirs,))]  # fmt: skip
    if not targets:
        raise ReferenceError(
            f"[baseline]: {ref.source} has no study with points"
            + (f" (`{theirs}` has none)" if theirs else ""),
            hint="name a results database `fslab run` wrote, and its study with `study`",
        )
    target = ref.target or targets[0]
    if target not in targets:
        raise ReferenceError(
            f"[baseline]: study `{theirs}` in {ref.source} has no target `{target}`",
            hint=suggest(target, targets, "targets"),
        )
    return theirs, target


def _merge_reference(db: ResultsWriter, ref: Reference, study: str, taken: set[str]) -> Side:
    """Merges the reference's one target into `study` under its label; its side."""
    if ref.label in taken:
        raise ReferenceError(
            f"[baseline] label `{ref.label}`: taken by another database in this comparison",
            hint="give the baseline another `label`",
        )
    label = ref.label or source_label(ref.source, taken)
    taken.add(label)
    with source_database(ref.source) as path:
        with open_readonly(path) as con:
            theirs, target = _reference_target(con, ref, study)
        got = merge(db, path, label=label, study=theirs, into=study, targets={target})
    return _reference_side(db.con, ref.source, label, theirs, study, got, f"{target}@{label}")


def _reference_side(
    con: sqlite3.Connection,
    source: Path,
    label: str,
    theirs: str,
    study: str,
    got: Merged,
    target: str,
) -> Side:
    """How the reference's points meet the study's own: by workload and parameters (its
    target is another); and how its machine differs."""
    sid = int(con.execute("SELECT id FROM study WHERE name = ?", (study,)).fetchone()[0])
    own = {
        (str(w), str(p))
        for w, p in con.execute(
            "SELECT workload, params FROM point WHERE study_id = ? AND target NOT LIKE ?",
            (sid, f"%@{label}"),
        )
    }
    mine = {(w, p) for (_, w, p) in got.studies[0].names.values()}
    differ: dict[str, None] = {}
    for w, p in own - mine:
        # The reference's nearest point of the same workload: which parameters differ.
        near = [json.loads(q) for v, q in mine if v == w]
        if near:
            wanted = json.loads(p)
            keys = min((sorted(k for k in set(m) | set(wanted) if m.get(k) != wanted.get(k))
                        for m in near), key=len)  # fmt: skip
            for key in keys:
                differ[f"`{key}`"] = None
    here = environments(con, sid, None)
    there = environments(con, sid, got.origin_id) if got.origin_id is not None else []
    differences: list[str] = []
    engine_changed = False
    if here and there:
        differences, engine_changed = environment_changes(here[0], there[0], "this study's")
    return Side(source, label, theirs, len(own & mine), len(mine - own), len(own - mine),
                tuple(differ), tuple(differences), engine_changed, target)  # fmt: skip


ARCHIVES = (".tar.gz", ".tgz", ".zip")
"""The archives `fslab bundle` writes, which hold a results database."""


@contextmanager
def results_view(
    sources: Sequence[Path],
    study: str | None = None,
    *,
    first: str | None = None,
    reference: bool = False,
) -> Iterator[tuple[Path, str | None, tuple[Side, ...]]]:
    """What `fslab compare`, `report` and `history` read: the one database given, as it is
    (its own errors come from the reader; a bundle's is unpacked: `source_database`), or
    several merged into a temporary copy (`merged_view`). With `reference`, the study's
    `[baseline]` too, where it names one (`fslab.store.reference`). Yields (the database,
    the study to read there, each other side: empty for one)."""
    ref = None
    if reference:
        try:
            with source_database(sources[0]) as db:
                ref = reference_of(db, sources[0], study)
        except (MergeError, BadResultsError):
            pass  # not a results database: the reader below says so, as without one

    if len(sources) > 1 or ref is not None:
        with merged_view(sources, study, first=first, reference=ref) as view:
            yield view
        return
    if sources[0].name.lower().endswith(ARCHIVES):
        with source_database(sources[0]) as db:
            yield db, study, ()
        return
    yield sources[0], study, ()


def _study_of(path: Path, study: str) -> str:
    """The study of this name in the database, else its most recent one."""
    with open_readonly(path) as con:
        names = [str(n) for (n,) in con.execute(
            "SELECT name FROM study ORDER BY created_at DESC, id DESC")]  # fmt: skip
    if not names:
        raise MergeError(f"{path}: no study in it", hint="name a database `fslab run` wrote")
    return study if study in names else names[0]


def _side(
    con: sqlite3.Connection,
    source: Path,
    label: str,
    theirs: str,
    study: str,
    got: StudyMerge,
    origin: int | None,
) -> Side:
    """How the points `got` brought match the first database's study: by configuration
    (the point's id: its target's spec, kind and parameters), else by name (then the spec's
    keys that differ are named), else not at all; and how its machine differs."""
    sid = int(con.execute("SELECT id FROM study WHERE name = ?", (study,)).fetchone()[0])
    own: dict[str, tuple[str, str, str, str]] = {
        str(i): (str(t), str(w), str(p), str(spec))
        for i, t, w, p, spec in con.execute(
            "SELECT id, target, workload, params, target_spec FROM point"
            " WHERE study_id = ? AND id NOT IN (SELECT point_id FROM run WHERE origin_id"
            " IS NOT NULL)",
            (sid,),
        )
    }
    by_name = {(t, w, p): spec for t, w, p, spec in own.values()}
    specs = {
        str(i): str(spec)
        for i, spec in con.execute("SELECT id, target_spec FROM point WHERE study_id = ?", (sid,))
    }
    matched, only_theirs = 0, 0
    differ: dict[str, None] = {}
    seen: set[tuple[str, str, str]] = set()
    for orig, (target, workload, params) in got.names.items():
        if orig in own:
            matched += 1
            seen.add((target, workload, params))
        elif (target, workload, params) in by_name:
            seen.add((target, workload, params))
            mine = json.loads(by_name[(target, workload, params)])
            other = json.loads(specs.get(got.point_ids[orig], "{}"))
            for key in sorted(set(mine) | set(other)):
                if mine.get(key) != other.get(key):
                    differ[f"{target}'s `{key}`"] = None
        else:
            only_theirs += 1
            # The nearest point of the same target and workload: which parameters differ.
            mine_params = [json.loads(p) for t, w, p, _ in own.values()
                           if (t, w) == (target, workload)]  # fmt: skip
            if mine_params:
                theirs_params = json.loads(params)
                keys = min(
                    (sorted(k for k in set(m) | set(theirs_params)
                            if m.get(k) != theirs_params.get(k)) for m in mine_params),
                    key=len,
                )  # fmt: skip
                for key in keys:
                    differ[f"`{key}`"] = None
    only_first = sum(1 for t, w, p, _ in own.values() if (t, w, p) not in seen)
    here = environments(con, sid, None)
    there = environments(con, sid, origin) if origin is not None else []
    differences: list[str] = []
    engine_changed = False
    if here and there:
        differences, engine_changed = environment_changes(here[0], there[0], "first")
    return Side(source, label, theirs, matched, only_theirs, only_first, tuple(differ),
                tuple(differences), engine_changed)  # fmt: skip


class Environment(NamedTuple):
    """The machine a run ran on, as its `environment` row says."""

    kernel: str
    cpu_model: str
    cores: int
    mem_bytes: int
    tools: dict[str, str]


def environments(con: sqlite3.Connection, study_id: int, origin: int | None) -> list[Environment]:
    """The environments of the study's runs measured here (`origin` None) or of one
    origin, the most used first."""
    which = "run.origin_id IS NULL" if origin is None else "run.origin_id = ?"
    rows = con.execute(
        "SELECT e.kernel, e.cpu_model, e.cores, e.mem_bytes, e.tools, count(*) AS n FROM run"
        " JOIN point ON point.id = run.point_id"
        " JOIN environment AS e ON e.id = run.environment_id"
        f" WHERE point.study_id = ? AND {which} GROUP BY e.id ORDER BY n DESC",
        (study_id,) if origin is None else (study_id, origin),
    ).fetchall()
    return [
        Environment(str(k), str(c), int(n), int(m), dict(json.loads(t)))
        for k, c, n, m, t, _ in rows
    ]


def environment_changes(a: Environment, b: Environment, word: str) -> tuple[list[str], bool]:
    """What differs from machine `a` on machine `b` (`kernel 6.19.0 (first: 6.18.4)`,
    `word` naming `a`), and whether the engine's major.minor did: their numbers are then
    not comparable as measurements of the storage alone."""
    out: list[str] = []
    for name, x, y in (("kernel", a.kernel, b.kernel), ("CPU", a.cpu_model, b.cpu_model),
                       ("cores", str(a.cores), str(b.cores)),
                       ("memory", _gib(a.mem_bytes), _gib(b.mem_bytes))):  # fmt: skip
        if x != y:
            out.append(f"{name} {y} ({word}: {x})")
    for tool in sorted(set(a.tools) | set(b.tools)):
        mine, theirs = a.tools.get(tool), b.tools.get(tool)
        if mine != theirs:
            out.append(f"{tool} {theirs or 'absent'} ({word}: {mine or 'absent'})")
    engine = major_minor(a.tools.get("fslab-engine")) != major_minor(b.tools.get("fslab-engine"))
    return out, engine


def _gib(n: int) -> str:
    return f"{n / 2**30:.1f} GiB"


def major_minor(version: object) -> tuple[str, ...] | None:
    """`fslab-engine 0.5.2` -> ("0", "5")."""
    if not isinstance(version, str):
        return None
    word = next((w for w in version.split() if w[:1].isdigit()), "")
    return tuple(word.split(".")[:2]) or None
