"""Which comparison: a results database's study, its baseline and the points `--where`
keeps (`build_comparison`), the ranks of a multi-host study, and keeping some ops."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from fslab.compare.build import (
    compare_results,
)
from fslab.compare.model import (
    Comparison,
)
from fslab.compare.where import CompareError, filter_points, parse_where
from fslab.integrity_words import OP as INTEGRITY_OP
from fslab.metrics import (
    TELEMETRY_OP,
)
from fslab.params import (
    suggest,
)
from fslab.stats.summary import CONFIDENCE
from fslab.store.query import (
    DEFAULT_RESULTS,
    RUN_HINT,
    RankRow,
    ResultsError,
    StudyRow,
    open_readonly,
    rank_rows,
    studies,
    study_results,
)
from fslab.store.query import points as study_points


def build_comparison(
    db_path: Path | str = DEFAULT_RESULTS,
    study: str | None = None,
    baseline: str | None = None,
    where: Iterable[str | tuple[str, str]] = (),
    *,
    confidence: float = CONFIDENCE,
    alpha: float | None = None,
) -> Comparison:
    """Reads the results database at `db_path` and compares the targets of one study.

    `study` defaults to the most recent one; `baseline` to the study's first target (a
    baseline given is its question's: each other question keeps its first); `where`
    keeps the points whose parameters match every `KEY=VALUE` (a key given several times
    matches any of its values). Only runs with status `ok` count.
    Raises `ResultsError` or `CompareError` with a hint."""
    db_path = Path(db_path)
    with open_readonly(db_path) as con:
        chosen, listed = _chosen_study(con, study, db_path)
        results = study_results(con, chosen[0], db_path)
    return compare_results(
        results,
        study=chosen[1],
        studies=tuple(s.name for s in listed),
        db_path=db_path,
        baseline=baseline,
        where=where,
        confidence=confidence,
        alpha=alpha,
    )


def build_ranks(
    db_path: Path | str = DEFAULT_RESULTS,
    study: str | None = None,
    where: Iterable[str | tuple[str, str]] = (),
) -> tuple[str, list[RankRow]]:
    """The ranks of a study's completed multi-host runs (`fslab compare --ranks`): the
    study's name (the most recent by default, as `build_comparison`) and the rank rows of
    the points `where` keeps. Raises `CompareError` for a filter `build_comparison`
    refuses."""
    db_path = Path(db_path)
    filters = parse_where(where)
    with open_readonly(db_path) as con:
        chosen, _ = _chosen_study(con, study, db_path)
        rows = rank_rows(con, chosen[0])
        if filters:
            kept = {p.id for p in filter_points(study_points(con, chosen[0], db_path), filters)}
            rows = [r for r in rows if r.point_id in kept]
        return chosen[1], rows


def _chosen_study(
    con: sqlite3.Connection, study: str | None, db_path: Path
) -> tuple[tuple[int, str], list[StudyRow]]:
    """(id, name) of the study asked for (the most recent by default) and every study."""
    listed = studies(con)
    if not listed:
        raise ResultsError(f"{db_path}: no studies in this results database", hint=RUN_HINT)
    return _pick_study([(s.id, s.name) for s in listed], study, db_path), listed


def keep_ops(comparison: Comparison, ops: Iterable[str]) -> Comparison:
    """The comparison with only the rows of these operations (`txn`, `jetstress`,
    `data_read`, `copy`, ...); `device` keeps every telemetry row (`copy device` too),
    `integrity` the integrity points' outcomes (which other ops leave out). Groups left
    without rows go. Raises `CompareError` for an op no group has."""
    wanted = tuple(dict.fromkeys(ops))
    if not wanted:
        return comparison
    present = tuple(dict.fromkeys(op for g in comparison.groups for op in g.ops))
    if comparison.integrity:
        present = (*present, INTEGRITY_OP)

    def kept(op: str) -> bool:
        return op in wanted or (TELEMETRY_OP in wanted and op.endswith(TELEMETRY_OP))

    for op in wanted:
        if not any(op == p or (op == TELEMETRY_OP and p.endswith(TELEMETRY_OP)) for p in present):
            raise CompareError(
                f"unknown --op `{op}`: no row of this comparison is of that operation",
                hint=suggest(op, present, "the operations are"),
            )
    groups = []
    for g in comparison.groups:
        rows = tuple(r for r in g.rows if kept(r.op))
        if rows:
            groups.append(replace(g, rows=rows))
    integrity = comparison.integrity if INTEGRITY_OP in wanted else ()
    return replace(comparison, groups=tuple(groups), integrity=integrity)


def _pick_study(
    studies: Sequence[tuple[int, str]], wanted: str | None, db: Path
) -> tuple[int, str]:
    for sid, name in studies:
        if wanted is None or name == wanted:
            return int(sid), str(name)
    assert wanted is not None  # the first study matches when none is asked for
    raise CompareError(
        f"no study `{wanted}` in {db}", hint=suggest(wanted, [n for _, n in studies], "studies")
    )
