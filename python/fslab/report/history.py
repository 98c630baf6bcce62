"""A study's points across passes: the series `fslab history` shows and checks.

A **pass** is one run of the whole study: a results database or a bundle given to
`fslab history` (the nightly `fslab run` writes one each night), or the runs one
`fslab import --as LABEL` brought into a database (their targets are `TARGET@LABEL`
there). The passes are ordered by their first run's start. Each (point, headline
operation, target) is a **series**: per pass the geometric mean of its counted runs
(disturbed runs are not counted, as in `fslab compare`) with its confidence interval,
checked against the passes before it (`fslab.stats.regression`), and again with the
pass's day factor taken out: the machine's state on the day moves every series alike (on
this VM, the passes of ext4, xfs and btrfs rise and fall together, correlation 0.2-0.8),
and the median of the pass's series' moves measures it, one target's own change hardly
moving the median. What changed between
two passes of the machine (the kernel, a tool's version, the engine) is named with the
pass, and a change of the engine's major.minor starts a new era whose passes are not
checked against the ones before it.
"""

from __future__ import annotations

import datetime as dt
import math
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy import special as _special  # type: ignore[import-untyped]

from fslab.compare import Comparison, build_comparison
from fslab.metrics import MetricSpec
from fslab.report.format import format_ratio, short_title, varying_by_workload
from fslab.stats.regression import ALPHA, WINDOW, Check, Trend, check
from fslab.stats.summary import CONFIDENCE
from fslab.stats.warnings import SUPPRESSING
from fslab.store.merge import (
    Environment,
    environment_changes,
    environments,
    results_view,
    source_label,
)
from fslab.store.query import open_readonly


@dataclass(frozen=True)
class Pass:
    """One run of the whole study."""

    label: str
    """The database's or bundle's file name without its suffix, or the import's label."""
    started_at: float | None
    """Its first run's start (unix seconds); None where none completed."""
    environment: Environment | None
    """The machine most of its runs ran on."""
    changes: tuple[str, ...] = ()
    """What differs from the pass before it: `kernel 6.18.0 (before: 6.12.1)`."""
    comparable: bool = True
    """False where the engine's major.minor differs from the pass before's."""

    @property
    def day(self) -> str:
        """`2026-11-28 04:10`, in UTC: when it began."""
        if self.started_at is None:
            return "-"
        return dt.datetime.fromtimestamp(self.started_at, tz=dt.UTC).strftime("%Y-%m-%d %H:%M")


@dataclass(frozen=True)
class Value:
    """One pass's counted runs of one series."""

    n: int
    mean: float
    """Their geometric mean."""
    low: float | None
    high: float | None
    """Its confidence interval (Student's t on the logs); None for a single run."""
    flagged: str = ""
    """The validity warnings that take the runs' verdicts away (`cached, unsteady`)."""


@dataclass(frozen=True)
class Series:
    """One target's values of one point's headline operation, pass by pass."""

    target: str
    workload: str
    title: str
    """`randio rw=randread bs=4KiB`: the point among the study's (and its operation where
    the point has several: `mixed rw=randrw write`)."""
    op: str
    metric: MetricSpec
    values: tuple[Value | None, ...]
    checks: tuple[Check, ...]
    """Each pass's value against the passes before it."""
    relative: tuple[Check, ...] = ()
    """Each pass's value over the pass's day factor (what the machine's state that day
    did to all the pass's series alike: `_day_factors`) against the same before: a
    blocked design over passes. Empty where no pass has enough series for a factor."""

    @property
    def latest(self) -> Check:
        return self.checks[-1]

    @property
    def latest_relative(self) -> Check | None:
        return self.relative[-1] if self.relative else None

    @property
    def trend(self) -> Trend:
        """The latest pass's verdict: a regression (or an improvement) where either check
        finds one, a regression first."""
        found = [self.latest.trend]
        if self.relative:
            found.append(self.relative[-1].trend)
        for t in (Trend.REGRESSION, Trend.IMPROVEMENT, Trend.IN_LINE, Trend.SHORT):
            if t in found:
                return t
        return Trend.NONE

    def latest_value(self) -> Value | None:
        return self.values[-1]


@dataclass(frozen=True)
class History:
    study: str
    passes: tuple[Pass, ...]
    series: tuple[Series, ...]
    alpha: float = ALPHA
    window: int = WINDOW

    def regressions(self) -> list[Series]:
        """The series whose latest pass is a regression."""
        return [s for s in self.series if s.trend is Trend.REGRESSION]


def history(
    sources: Sequence[Path],
    study: str | None = None,
    where: Sequence[str] = (),
    *,
    alpha: float = ALPHA,
    window: int = WINDOW,
) -> History:
    """The study's series over the passes the sources hold (see the module). Raises
    `fslab.errors.FslabError`s with hints (no study, a source that is not a database)."""
    with _one_database(sources, study) as (db, name, first_label):
        comparison = build_comparison(db, study=name, where=where)
        with open_readonly(db) as con:
            passes, names = _passes(con, comparison, first_label)
    order = sorted(range(len(passes)), key=lambda i: (passes[i].started_at or math.inf, i))
    ordered = _with_changes([passes[i] for i in order])
    series = _series(comparison, [names[i] for i in order], ordered, alpha, window)
    return History(comparison.study, tuple(ordered), tuple(series), alpha, window)


@contextmanager
def _one_database(
    sources: Sequence[Path], study: str | None
) -> Iterator[tuple[Path, str | None, str]]:
    """(one database holding every pass, its study, the first source's label): the one
    source itself (a bundle's unpacked), or several merged into a temporary copy, each
    after the first under its file name's label (`results_view`)."""
    first_label = source_label(sources[0], set())
    with results_view(sources, study, first=first_label) as (db, name, _):
        yield db, name, first_label


def _passes(
    con: sqlite3.Connection, comparison: Comparison, first_label: str
) -> tuple[list[Pass], list[dict[str, str]]]:
    """The passes in the database (its own runs, then one per labelled origin), and per
    pass each base target's name there (`ext4` -> `ext4@2026-11-27`)."""
    (sid,) = con.execute("SELECT id FROM study WHERE name = ?", (comparison.study,)).fetchone()
    labels: dict[str, int] = {}
    # `origin` and `run.origin_id` came in one schema version (14).
    imported = _column(con, "run", "origin_id")
    if imported:
        labels = {str(label): int(i) for i, label in con.execute(
            "SELECT id, label FROM origin WHERE label IS NOT NULL ORDER BY id")}  # fmt: skip
    names: dict[str | None, dict[str, str]] = {None: {}}
    for t in comparison.targets:
        base, _, suffix = t.rpartition("@")
        if base and suffix in labels:
            names.setdefault(suffix, {})[base] = t
        else:
            names[None][t] = t
    starts = _starts(con, sid, imported)
    passes: list[Pass] = []
    maps: list[dict[str, str]] = []
    for label, targets in names.items():
        origin = None if label is None else labels[label]
        if label is not None and not targets:
            continue
        envs = environments(con, sid, origin)
        passes.append(Pass(first_label if label is None else label,
                           starts.get(origin), envs[0] if envs else None))  # fmt: skip
        maps.append(targets)
    return passes, maps


def _starts(con: sqlite3.Connection, study_id: int, imported: bool) -> dict[int | None, float]:
    """Each origin's first completed run's start (None: the database's own runs)."""
    origin = "run.origin_id" if imported else "NULL"
    rows = con.execute(
        f"SELECT {origin}, min(run.started_at) FROM run JOIN point ON point.id = run.point_id"
        f" WHERE point.study_id = ? AND run.status = 'ok' GROUP BY {origin}",
        (study_id,),
    ).fetchall()
    return {None if o is None else int(o): float(s) for o, s in rows if s is not None}


def _column(con: sqlite3.Connection, table: str, column: str) -> bool:
    return any(row[1] == column for row in con.execute(f"PRAGMA table_info({table})"))


def _with_changes(passes: list[Pass]) -> list[Pass]:
    """Each pass with what changed since the pass before it, and whether the engine's
    major.minor did (its numbers are then not comparable)."""
    out: list[Pass] = []
    for i, p in enumerate(passes):
        if i == 0 or p.environment is None or passes[i - 1].environment is None:
            out.append(p)
            continue
        a, b = passes[i - 1].environment, p.environment
        assert a is not None and b is not None
        changes, engine = environment_changes(a, b, "before")
        out.append(Pass(p.label, p.started_at, p.environment, tuple(changes), not engine))
    return out


MIN_SERIES_FOR_DAY = 3
"""Fewer series in a pass than this give no day factor (a median of two is their mean:
one series' regression would move it by half)."""


def _series(
    comparison: Comparison,
    names: Sequence[dict[str, str]],
    passes: Sequence[Pass],
    alpha: float,
    window: int,
) -> list[Series]:
    """Every (point, headline op, target) series, checked twice at `alpha / 2` each (so
    that together they cry wolf no more often than one at `alpha`): its values against
    the passes before, and its values over the pass's day factor (`_day_factors`)
    against the same before."""
    comparable = [p.comparable for p in passes]
    bases = list(dict.fromkeys(b for n in names for b in n))
    varying = varying_by_workload(comparison)
    found: list[tuple[str, str, str, str, MetricSpec, list[Value | None]]] = []
    for group in comparison.groups:
        title = short_title(comparison, group, varying)
        flagged: dict[str, dict[str, None]] = {}
        for w in group.warnings:
            if w.kind in SUPPRESSING:
                flagged.setdefault(w.target, {})[w.kind.value] = None
        headline = group.headline_rows()
        for row in headline:
            named = f"{title} {row.op}" if len(headline) > 1 and row.op else title
            cells = {c.target: c for c in row.cells}
            for base in bases:
                got: list[Value | None] = []
                for n in names:
                    cell = cells.get(n.get(base, ""))
                    if cell is None or not cell.samples:
                        got.append(None)
                        continue
                    got.append(_value(cell.samples, ", ".join(flagged.get(cell.target, {}))))
                if any(v is not None for v in got):
                    found.append((base, group.workload, named, row.op, row.metric, got))
    day = _day_factors([[v.mean if v else None for v in f[5]] for f in found], len(passes))
    half = alpha / 2
    out: list[Series] = []
    for base, workload, named, op, metric, got in found:
        better = metric.higher_is_better
        means = [v.mean if v is not None else None for v in got]
        checks = check(means, better, comparable=comparable, window=window, alpha=half)
        adjusted = [m / d if m is not None and d is not None else None
                    for m, d in zip(means, day, strict=True)]  # fmt: skip
        relative = (
            check(adjusted, better, comparable=comparable, window=window, alpha=half)
            if any(d is not None for d in day)
            else ()
        )
        out.append(Series(base, workload, named, op, metric, tuple(got), checks, relative))
    return out


def _day_factors(series: Sequence[Sequence[float | None]], passes: int) -> list[float | None]:
    """Per pass, what the machine's state that day did to every series alike: the median,
    over the pass's series, of each one's value over its own geometric mean across the
    passes (None where the pass has fewer than `MIN_SERIES_FOR_DAY`). A median, so that
    one target's own change hardly moves it."""
    logs = [[math.log(v) if v is not None and v > 0 else None for v in s] for s in series]
    centre = [float(np.mean(got)) if (got := [x for x in s if x is not None]) else 0.0
              for s in logs]  # fmt: skip
    out: list[float | None] = []
    for p in range(passes):
        moved = [x - c for s, c in zip(logs, centre, strict=True) if (x := s[p]) is not None]
        out.append(math.exp(float(np.median(moved))) if len(moved) >= MIN_SERIES_FOR_DAY else None)
    return out


def _value(samples: Sequence[float], flagged: str) -> Value | None:
    """The geometric mean of a pass's samples with Student's interval on their logs."""
    x = np.asarray([s for s in samples if s > 0], dtype=float)
    if len(x) == 0:
        return None
    logs = np.log(x)
    mean = float(logs.mean())
    if len(x) < 2:
        return Value(1, math.exp(mean), None, None, flagged)
    half = (
        float(_special.stdtrit(len(x) - 1, 0.5 + CONFIDENCE / 2))
        * float(logs.std(ddof=1))
        / math.sqrt(len(x))
    )
    return Value(len(x), math.exp(mean), math.exp(mean - half), math.exp(mean + half), flagged)


def against(c: Check | None) -> str:
    """`0.791x`, `0.791x!` where the check flags it; `-` without a check."""
    if c is None or c.change is None:
        return "-"
    flag = "!" if c.trend in (Trend.REGRESSION, Trend.IMPROVEMENT) else ""
    return f"{format_ratio(c.change)}{flag}"


def sentence(s: Series) -> str:
    """`xfs: randio rw=randread IOPS 0.791x of the 10 passes before it (they predict
    0.81-1.23x); with the day's factor out, 0.80x (0.90-1.11x)`."""
    parts = [f"{s.target}: {s.title} {s.metric.label}"]
    c = s.latest
    if c.change is not None and c.low is not None and c.high is not None:
        parts.append(f" {format_ratio(c.change)} of the {c.reference} passes before it "
                     f"(they predict {c.low:.2f}-{c.high:.2f}x)")  # fmt: skip
    r = s.latest_relative
    if r is not None and r.change is not None and r.low is not None and r.high is not None:
        parts.append(f"; with the day's factor out, {format_ratio(r.change)} "
                     f"({r.low:.2f}-{r.high:.2f}x)")  # fmt: skip
    return "".join(parts)


HISTORY_SCHEMA_VERSION = 1
"""`fslab history --format json`'s layout: bumped on any change a reader could notice (a
key removed, renamed or its meaning changed); new keys keep it."""


def as_json(h: History) -> dict[str, Any]:
    """The history as `fslab history --format json` writes it."""
    return {
        "schema_version": HISTORY_SCHEMA_VERSION,
        "study": h.study,
        "alpha": h.alpha,
        "window": h.window,
        "passes": [
            {
                "label": p.label,
                "started_at": p.started_at,
                "kernel": p.environment.kernel if p.environment else None,
                "tools": p.environment.tools if p.environment else {},
                "changes": list(p.changes),
                "comparable": p.comparable,
            }
            for p in h.passes
        ],
        "series": [
            {
                "target": s.target,
                "workload": s.workload,
                "point": s.title,
                "op": s.op,
                "metric": s.metric.name,
                "unit": s.metric.unit,
                "values": [
                    None
                    if v is None
                    else {
                        "n": v.n,
                        "mean": v.mean,
                        "low": v.low,
                        "high": v.high,
                        "flagged": v.flagged or None,
                    }
                    for v in s.values
                ],
                "trend": s.trend.value,
                "checks": [_check_json(c) for c in s.checks],
                "relative": [_check_json(c) for c in s.relative],
            }
            for s in h.series
        ],
    }


def _check_json(c: Check) -> dict[str, Any]:
    return {"trend": c.trend.value, "reference": c.reference, "change": c.change,
            "low": c.low, "high": c.high}  # fmt: skip
