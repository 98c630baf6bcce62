"""The results of one study side by side: per workload point-group, one row per operation
and metric, one column per target, each cell a summary of the repetitions and, for targets
other than the baseline, its difference with the baseline (`fslab.stats.summary` says how).

`build_comparison` reads a study through `fslab.store.query`; `compare_results` is the
comparison itself, a pure function of those rows. Its statistics run over all cells at
once (numpy), so a study of 100,000 runs compares in seconds; the cells of a row are made
when a renderer asks for them.

A *group* is one workload with one value per sweep axis (`rw`, `bs`, `threads`, ...), run on
every target: the same job across file systems, which is what a column comparison means.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any, cast, overload

import numpy as np
import numpy.typing as npt
import orjson

from fslab.catalog import entry
from fslab.errors import ExitStatus, FslabError
from fslab.integrity_words import KIND as INTEGRITY_KIND
from fslab.integrity_words import OUTCOMES
from fslab.metrics import (
    APP_METRICS,
    APP_OP,
    JETSTRESS_METRICS,
    JETSTRESS_OP,
    METRICS,
    NOISE_METRIC,
    TELEMETRY_METRICS,
    TELEMETRY_OP,
    VERDICT_UNIT,
    Direction,
    MetricKind,
    MetricSpec,
    pseudo_metrics,
)
from fslab.params import (
    MISSING,
    WhereError,
    param_order,
    select,
    suggest,
)
from fslab.stats.decision import (
    EQUIVALENCE_MARGIN,
    Decision,
    Judgement,
    NoVerdict,
    decide,
    log_error,
)
from fslab.stats.disturbance import disturbed_runs
from fslab.stats.summary import ALPHA, CONFIDENCE, Summary, t_quantiles
from fslab.stats.warnings import (
    NOISY_CV,
    OUTLIER_Z,
    SUPPRESSING,
    RunFacts,
    StatWarning,
    noisy_warning,
    outlier_warning,
    run_warnings,
    sample_warnings,
)
from fslab.store.query import (
    DEFAULT_RESULTS,
    RUN_HINT,
    BadResultsError,
    IntegrityRow,
    PointRow,
    RankRow,
    ResultsError,
    StudyResults,
    StudyRow,
    open_readonly,
    rank_rows,
    studies,
    study_results,
)
from fslab.store.query import points as study_points

__all__ = [
    "APP_METRICS", "APP_OP", "DEFAULT_RESULTS", "HEADLINE_METRIC", "JETSTRESS_METRICS",
    "JETSTRESS_OP", "METRICS", "TELEMETRY_METRICS", "TELEMETRY_OP",
    "VERDICT_UNIT", "BadResultsError", "Cell", "CompareError", "Comparison", "Group",
    "IntegrityCell", "MetricSpec", "ResultsError", "Row", "build_comparison", "compare_results",
    "is_headline", "keep_ops", "parse_where", "pseudo_metrics", "row_numbers",
]  # fmt: skip

# Operations in the order people expect them; others follow in order of appearance.
_OP_ORDER = ("jetstress", "txn", "read", "write")


_Floats = npt.NDArray[np.float64]
_Ints = npt.NDArray[np.int64]
_Codes = npt.NDArray[np.int8]

_WHY_OF: tuple[NoVerdict | None, ...] = (None, *NoVerdict)
"""A `_WHY` code -> why a cell has no verdict (0: it has one, or needs no reason)."""
_WHY = {w: i for i, w in enumerate(_WHY_OF) if w is not None}
_INTERVAL_KEPT = np.array(
    [_WHY[w] for w in (NoVerdict.WORK, NoVerdict.NO_DIRECTION, NoVerdict.FLAGGED,
                       NoVerdict.BASELINE_FLAGGED)], dtype=np.int8)  # fmt: skip
"""Cells without a verdict that still show the interval of their ratio."""


class CompareError(FslabError):
    """The comparison asked for cannot be made as asked: an unknown study, baseline or
    `--where` key, or a filter that matches nothing."""

    exit_status = ExitStatus.USAGE


@dataclass(frozen=True)
class Cell:
    """One target's repetitions of one metric. `summary` is None when no completed run of
    the target has this operation; `vs` (the decision rule against the baseline) is None
    for the baseline, a pass/fail row, and when either side has no data."""

    target: str
    samples: tuple[float, ...]
    summary: Summary | None
    vs: Judgement | None
    warnings: tuple[StatWarning, ...] = ()
    """What makes these numbers doubtful (noise, outliers, ...); see `fslab.stats.warnings`."""


class _Stats:
    """The statistics of every row of a comparison, one array row per `Row`, one column per
    target: what `compare_results` worked out at once. `values` holds every sample, sorted
    by row, target and run; `start`/`count` locate a cell's samples in it."""

    def __init__(
        self,
        targets: tuple[str, ...],
        base_of: npt.NDArray[np.int64],
        confidence: float,
        alpha: float,
        margin: float,
        values: npt.NDArray[np.float64],
        runs: npt.NDArray[np.int64],
        start: npt.NDArray[np.int64],
        count: npt.NDArray[np.int64],
        mean: npt.NDArray[np.float64],
        var: npt.NDArray[np.float64],
    ) -> None:
        self.targets = targets
        # Per target, the column of its baseline (its question's); a baseline's is its own.
        self.base_of = base_of
        self.is_base = base_of == np.arange(len(targets))
        self.confidence = confidence
        self.alpha, self.margin = alpha, margin
        self.reps: npt.NDArray[np.int64] | None = None
        """Per sample, its run's round or pass where the study is blocked: each target is
        then compared with its baseline per round (`paired`); None: independent."""
        self.values, self.runs, self.start, self.count = values, runs, start, count
        self.mean, self.var = mean, var
        with np.errstate(invalid="ignore", divide="ignore"):
            self.stdev = np.where(count >= 2, np.sqrt(var), np.nan)
            self.ci_half = t_quantiles(confidence, count) * self.stdev / np.sqrt(count)
        shape = count.shape
        self.noise: dict[tuple[int, int], tuple[StatWarning, ...]] = {}
        self.noisy_rows: set[int] = set()
        # Per row, for the decision rule: its metric's direction (1 higher is better, 0
        # lower, -1 neither), minimum effect, why the rule does not judge it (a `_WHY`
        # code, 0 where it does) and whether it was described at all (a pass/fail row is
        # not: it has no ratio).
        self.direction_of = np.full(shape[0], -1, dtype=np.int8)
        self.min_abs_of = np.zeros(shape[0])
        self.why_of = np.zeros(shape[0], dtype=np.int8)
        self.described = np.zeros(shape[0], dtype=bool)
        # Per cell: 0, or the index in `flag_kinds` of the validity warnings that take its
        # verdict away (`cached`, `unsteady`).
        self.flagged = np.zeros(shape, dtype=np.int16)
        self.flag_kinds: list[str] = [""]

    def describe(
        self,
        rows: npt.NDArray[np.int64],
        direction: npt.NDArray[np.int8],
        min_abs: npt.NDArray[np.float64],
        why: npt.NDArray[np.int8],
    ) -> None:
        """Says what these rows' metrics are: `direction` per row 1 (higher is better), 0
        (lower) or -1 (neither), `min_abs` the minimum effect in the metric's unit, `why`
        the `_WHY` code of why the rule does not judge the metric (0: it does)."""
        self.direction_of[rows], self.min_abs_of[rows] = direction, min_abs
        self.why_of[rows] = why
        self.described[rows] = True

    def flag(self, rows: npt.NDArray[np.int64], target: int, flags: str) -> None:
        """Takes the verdicts of a target's cells in these rows (one group's) away: `flags`
        names the validity warnings of its runs (`cached`, ...). A flagged baseline takes
        every target of its question's away (`decisions`)."""
        if flags not in self.flag_kinds:
            self.flag_kinds.append(flags)
        self.flagged[rows, target] = self.flag_kinds.index(flags)

    @cached_property
    def log_stats(self) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """Per cell (row, target): mean and variance (ddof=1) of the logs of its samples;
        NaN where it has none, a sample is not positive, or (the variance) n < 2. Worked
        out when first asked for: compare's output does not need it yet."""
        shape = self.count.shape
        mean, var = np.full(shape, np.nan), np.full(shape, np.nan)
        present = self.count > 0
        if not present.any():
            return mean, var
        # Cells lie in `values` one after another in row-major order of (row, target).
        starts, counts = self.start[present], self.count[present]
        with np.errstate(invalid="ignore", divide="ignore"):
            logs = np.log(np.where(self.values > 0, self.values, np.nan))
            m = np.add.reduceat(logs, starts) / counts
            dev = logs - np.repeat(m, counts)
            ss = np.add.reduceat(dev * dev, starts)
            var[present] = np.where(counts >= 2, ss / np.maximum(counts - 1, 1), np.nan)
        mean[present] = m
        return mean, var

    @cached_property
    def paired(self) -> tuple[npt.NDArray[np.int64], _Floats, _Floats]:
        """Per cell (row, target) of a blocked study: the rounds both it and its
        baseline's cell completed (pairs), and the mean and variance (ddof=1) of the log
        ratios of those rounds' runs, target / baseline; 0 pairs and NaN elsewhere (the
        baselines' own cells, an independent study, a side with no positive value). The
        machine's state shifts from round to round and both runs of a round share it: the
        ratio within a round cancels it (docs/statistics.md, "A blocked design")."""
        shape = self.count.shape
        pairs = np.zeros(shape, dtype=np.int64)
        mean, var = np.full(shape, np.nan), np.full(shape, np.nan)
        if self.reps is None or not len(self.values):
            return pairs, mean, var
        n_rows, n_t = shape
        flat = np.flatnonzero(self.count.ravel() > 0)
        # Samples lie cell after cell in row-major order of (row, target).
        cell = np.repeat(flat, self.count.ravel()[flat])
        row, col = cell // n_t, cell % n_t
        reps = self.reps
        span = int(reps.max()) + 2 if len(reps) else 1
        with np.errstate(invalid="ignore", divide="ignore"):
            logs = np.log(np.where(self.values > 0, self.values, np.nan))
        mine = (reps >= 0) & np.isfinite(logs)
        is_base = self.is_base[col]
        base_key = (row * n_t + col) * span + reps
        keys = base_key[is_base & mine]
        order = np.argsort(keys, kind="stable")
        keys, base_logs = keys[order], logs[is_base & mine][order]
        want = ~is_base & mine
        other = (row * n_t + self.base_of[col]) * span + reps
        at = np.minimum(np.searchsorted(keys, other[want]), max(len(keys) - 1, 0))
        found = np.zeros(len(at), dtype=bool)
        if len(keys):
            found = keys[at] == other[want]
        d = logs[want][found] - base_logs[at[found]]
        where = cell[want][found]
        size = n_rows * n_t
        n = np.bincount(where, minlength=size)
        total = np.bincount(where, weights=d, minlength=size)
        with np.errstate(invalid="ignore", divide="ignore"):
            m = np.where(n > 0, total / np.maximum(n, 1), np.nan)
            dev = d - m[where]
            ss = np.bincount(where, weights=dev * dev, minlength=size)
            v = np.where(n >= 2, ss / np.maximum(n - 1, 1), np.nan)
        return n.reshape(shape), m.reshape(shape), v.reshape(shape)

    @cached_property
    def decisions(self) -> tuple[_Floats, _Floats, _Floats, _Codes, _Ints, _Codes]:
        """`fslab.stats.decision.decide` for every described cell against its baseline's
        cell of its row (`base_of`): (ratio, low, high, `Decision` code, more repetitions,
        `_WHY` code of why there is no verdict), one array each of shape (rows,
        targets). The ratio is there wherever both sides have positive values; the
        baselines' columns have none. Worked out when first asked for."""
        mean_log, var_log = self.log_stats
        b = self.base_of
        n_t = self.count.shape[1]
        shape = self.count.shape

        def per_cell(a: npt.NDArray[Any]) -> npt.NDArray[Any]:
            return np.repeat(a[:, None], n_t, axis=1)

        base_count = self.count[:, b]
        present = per_cell(self.described) & (self.count > 0) & (base_count > 0)
        present[:, self.is_base] = False
        with np.errstate(invalid="ignore", over="ignore"):
            ratio = np.where(present, np.exp(mean_log - mean_log[:, b]), np.nan)
        why = np.zeros(shape, dtype=np.int8)
        why = np.where(present & ~np.isfinite(ratio), _WHY[NoVerdict.NOT_POSITIVE], why)
        single = (self.count < 2) | (base_count < 2)
        why = np.where(present & (why == 0) & single, _WHY[NoVerdict.SINGLE_RUN], why)
        why = np.where(present & (why == 0), per_cell(self.why_of), why)
        suppress = np.where(
            self.flagged[:, b] > 0,
            _WHY[NoVerdict.BASELINE_FLAGGED],
            np.where(self.flagged > 0, _WHY[NoVerdict.FLAGGED], 0),
        )
        why = np.where(present & (why == 0), suppress, why).astype(np.int8)
        low, high = np.full(shape, np.nan), np.full(shape, np.nan)
        verdict = np.full(shape, int(Decision.NONE), dtype=np.int8)
        more = np.full(shape, -1, dtype=np.int64)
        # Only the cells the rule can judge: scipy's t quantiles for half a million cells
        # cost seconds. Flagged and single-run cells keep their interval where they have one.
        judged = present & (why == 0)
        interval = present & np.isin(why, _INTERVAL_KEPT)
        r, t = np.nonzero(judged | interval)
        if len(r):
            bt = b[t]
            n_b, m_b, v_b = self.count[r, bt], mean_log[r, bt], var_log[r, bt]
            n_t_, m_t, v_t = self.count[r, t], mean_log[r, t], var_log[r, t]
            # A blocked study: the per-round log ratios as one sample (n - 1 df); where
            # fewer than two rounds pair up, the runs as independent samples (Welch).
            pairs, m_d, v_d = self.paired
            p = pairs[r, t] >= 2
            if p.any():
                zero = np.zeros(len(r))
                n_b, m_b, v_b = (np.where(p, pairs[r, t], n_b), np.where(p, zero, m_b),
                                 np.where(p, zero, v_b))  # fmt: skip
                n_t_, m_t, v_t = (np.where(p, pairs[r, t], n_t_), np.where(p, m_d[r, t], m_t),
                                  np.where(p, v_d[r, t], v_t))  # fmt: skip
            got = decide(
                n_b, m_b, v_b, n_t_, m_t, v_t,
                higher_is_better=self.direction_of[r], min_abs=self.min_abs_of[r],
                base_mean=self.mean[r, bt], judged=judged[r, t], alpha=self.alpha,
                margin=self.margin,
            )  # fmt: skip
            low[r, t], high[r, t] = got[1], got[2]
            verdict[r, t], more[r, t] = got[3], got[4]
            if p.any():
                ratio[r[p], t[p]] = got[0][p]
        return ratio, low, high, verdict, more, why

    def judgement(self, r: int, t: int) -> Judgement | None:
        """The cell's `Judgement`, or None where it has no ratio (the baseline, no data on
        a side, a pass/fail row)."""
        ratio, low, high, verdict, more, why = self.decisions
        x = float(ratio[r, t])
        code = int(why[r, t])
        if math.isnan(x) and code != _WHY[NoVerdict.NOT_POSITIVE]:
            return None
        lo, hi, m = float(low[r, t]), float(high[r, t]), int(more[r, t])
        reason = _WHY_OF[code]
        flags = ""
        if reason is NoVerdict.FLAGGED:
            flags = self.flag_kinds[int(self.flagged[r, t])]
        elif reason is NoVerdict.BASELINE_FLAGGED:
            flags = self.flag_kinds[int(self.flagged[r, int(self.base_of[t])])]
        return Judgement(
            ratio=None if math.isnan(x) else x,
            low=None if math.isnan(lo) else lo,
            high=None if math.isnan(hi) else hi,
            decision=Decision(int(verdict[r, t])),
            more_runs=m if m >= 0 else None,
            why=reason,
            flags=flags,
        )

    def samples(self, r: int, t: int) -> tuple[float, ...]:
        s = int(self.start[r, t])
        return tuple(self.values[s : s + int(self.count[r, t])].tolist())

    def sample_runs(self, r: int, t: int) -> list[int]:
        s = int(self.start[r, t])
        return [int(x) for x in self.runs[s : s + int(self.count[r, t])]]


class Row:
    """One operation's metric across the targets. Its numbers sit in the comparison's
    arrays (`numbers()`, per target); `cells` makes the cell objects on first use. (A
    plain class: a large study has a million rows, and a dataclass costs more to make.)"""

    __slots__ = ("_cells", "_i", "_stats", "metric", "op")

    def __init__(self, op: str, metric: MetricSpec, stats: _Stats, i: int) -> None:
        self.op = op
        self.metric = metric
        self._stats = stats
        self._i = i
        self._cells: tuple[Cell, ...] | None = None

    def __repr__(self) -> str:
        return f"Row(op={self.op!r}, metric={self.metric.name!r})"

    @property
    def cells(self) -> tuple[Cell, ...]:
        if self._cells is None:
            self._cells = self._make_cells()
        return self._cells

    def _make_cells(self) -> tuple[Cell, ...]:
        st, r = self._stats, self._i
        out: list[Cell] = []
        for t, name in enumerate(st.targets):
            n = int(st.count[r, t])
            if n == 0:
                out.append(Cell(target=name, samples=(), summary=None, vs=None))
                continue
            two = n >= 2
            summary = Summary(
                n=n,
                mean=float(st.mean[r, t]),
                stdev=float(st.stdev[r, t]) if two else None,
                ci_half=float(st.ci_half[r, t]) if two else None,
                confidence=st.confidence,
            )
            out.append(
                Cell(
                    target=name,
                    samples=st.samples(r, t),
                    summary=summary,
                    vs=None if st.is_base[t] else st.judgement(r, t),
                    warnings=st.noise.get((r, t), ()),
                )
            )
        return tuple(out)

    def cell(self, target: str) -> Cell:
        for c in self.cells:
            if c.target == target:
                return c
        raise KeyError(target)

    @property
    def warnings(self) -> tuple[StatWarning, ...]:
        """The noise and outlier warnings of this row's cells, in target order."""
        st = self._stats
        if self._i not in st.noisy_rows:
            return ()
        return tuple(w for t in range(len(st.targets)) for w in st.noise.get((self._i, t), ()))


class _PlannedRows(Sequence[Row]):
    """A group's rows as `_Grouping.build` planned them: the `Row` objects are made when
    someone asks for one; the JSON renderer reads the plan and the indices instead (a
    study of 100,000 runs has half a million rows)."""

    __slots__ = ("_made", "cols", "ids", "plan", "stats")

    def __init__(
        self,
        stats: _Stats,
        plan: Sequence[_Planned],
        cols: npt.NDArray[np.int64],
        ids: npt.NDArray[np.int64],
    ) -> None:
        self.stats, self.plan = stats, plan
        self.cols, self.ids = cols, ids
        """Row j is `plan[cols[j]]`, its numbers in row `ids[j]` of `stats`."""
        self._made: tuple[Row, ...] | None = None

    def _rows(self) -> tuple[Row, ...]:
        if self._made is None:
            plan, stats = self.plan, self.stats
            self._made = tuple(
                Row(plan[j][0], plan[j][1], stats, r)
                for j, r in zip(self.cols.tolist(), self.ids.tolist(), strict=True)
            )
        return self._made

    def __len__(self) -> int:
        return len(self.ids)

    @overload
    def __getitem__(self, i: int) -> Row: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[Row]: ...
    def __getitem__(self, i: int | slice) -> Row | Sequence[Row]:
        return self._rows()[i]

    def __iter__(self) -> Iterator[Row]:
        return iter(self._rows())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence):
            return tuple(self) == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._rows())

    def __repr__(self) -> str:
        return repr(self._rows())

    def cell_warnings(self) -> list[StatWarning]:
        """The noise and outlier warnings of these rows' cells, in row and target order."""
        st = self.stats
        noisy = st.noisy_rows
        if not noisy:
            return []
        noise, n_t = st.noise, len(st.targets)
        return [
            w
            for r in self.ids.tolist()
            if r in noisy
            for t in range(n_t)
            for w in noise.get((r, t), ())
        ]


def log_ratios(rows: Sequence[Row], target: str, other: str) -> tuple[_Floats, _Floats, _Floats]:
    """Per row (of one comparison): the difference of the mean logs of `target`'s and
    `other`'s samples (the log of their ratio of geometric means), its standard error and
    Welch's df (`fslab.stats.decision.log_error`); NaN where a side has no positive
    samples, NaN error where a side has a single run. What a summary over many points
    combines (`fslab.stats.decision.combine`). In a blocked study, a target against its
    own baseline (either way round): the mean per-round log ratio, its error and n - 1
    df, as the cells' verdicts (`_Stats.paired`), so a summary's lead of the baseline
    over a target is the target's own ratio turned over, over the same rounds; two other
    targets are compared as independent samples."""
    if not rows:
        empty = np.zeros(0)
        return empty, empty, empty
    st = rows[0]._stats
    idx = np.fromiter((r._i for r in rows), dtype=np.int64, count=len(rows))
    a, b = st.targets.index(target), st.targets.index(other)
    mean_log, var_log = st.log_stats
    d = mean_log[idx, a] - mean_log[idx, b]
    se, df = log_error(st.count[idx, b], var_log[idx, b], st.count[idx, a], var_log[idx, a])
    paired, sign = (a, 1.0) if int(st.base_of[a]) == b else (b, -1.0)
    if a != b and int(st.base_of[paired]) == (b if paired == a else a):
        pairs, m_d, v_d = st.paired
        n = pairs[idx, paired]
        p = n >= 2
        if p.any():
            with np.errstate(invalid="ignore", divide="ignore"):
                d = np.where(p, sign * m_d[idx, paired], d)
                p_se = np.sqrt(v_d[idx, paired] / n)
                se = np.where(p, p_se, se)
                df = np.where(p, np.where(p_se > 0, n - 1.0, np.inf), df)
    return d, se, df


NUMBERS = ("n", "mean", "stdev", "ci_half", "ratio", "ratio_low", "ratio_high", "verdict",
           "more_runs", "no_verdict")  # fmt: skip
"""The numbers `row_numbers` gives per row and target, in order: the summary (n, mean,
stdev, ci_half) and the decision rule against the baseline (the ratio of geometric means
target / baseline and its interval, the verdict: `baseline` for the baseline's cell, else
better / worse / equivalent / inconclusive or None; the repetitions per side that would
likely decide an inconclusive cell; why there is no verdict)."""


def row_numbers(rows: Sequence[Row]) -> tuple[list[list[Any]], ...]:
    """The `NUMBERS` of these rows (of one comparison), for the data renderers, each a
    list with one element per row holding one per target (NaN or None where there is
    none). One call per group: a large study has a million rows."""
    if not rows:
        return tuple([] for _ in NUMBERS)
    idx = np.fromiter((r._i for r in rows), dtype=np.int64, count=len(rows))
    return _numbers(rows[0]._stats, idx)


def planned_numbers(
    groups: Sequence[Group],
) -> tuple[list[tuple[str, MetricSpec, int, bool, str | None]], tuple[list[list[Any]], ...]] | None:
    """`row_numbers` of all these groups' rows at once, with each row's plan entry (op,
    metric, ...: one shared tuple per planned row, never a copy), without making the
    rows; None unless `_Grouping.build` made every group."""
    planned = [g.rows for g in groups]
    if not all(isinstance(r, _PlannedRows) for r in planned):
        return None
    rows = cast(list[_PlannedRows], planned)
    if not rows:
        return [], tuple([] for _ in NUMBERS)
    heads = [r.plan[j] for r in rows for j in r.cols.tolist()]
    idx = np.concatenate([r.ids for r in rows])
    return heads, _numbers(rows[0].stats, idx)


def _numbers(st: _Stats, idx: npt.NDArray[np.int64]) -> tuple[list[list[Any]], ...]:
    count = st.count[idx]
    ratio, low, high, code, more, why = (a[idx] for a in st.decisions)
    verdict = _DECISION_WORDS[code.astype(np.int64)]
    reason = _WHY_WORDS[why.astype(np.int64)]
    for b in np.flatnonzero(st.is_base).tolist():
        verdict[:, b] = None
        verdict[count[:, b] > 0, b] = "baseline"
    return (
        count.tolist(),
        np.where(count > 0, st.mean[idx], np.nan).tolist(),
        st.stdev[idx].tolist(),
        st.ci_half[idx].tolist(),
        ratio.tolist(),
        low.tolist(),
        high.tolist(),
        verdict.tolist(),
        [[m if m >= 0 else None for m in row] for row in more.tolist()],
        reason.tolist(),
    )


_DECISION_WORDS = np.array([None, *(d.word for d in Decision if d)], dtype=object)
"""`Decision` code -> its word (NONE is None)."""
_WHY_WORDS = np.array([None if w is None else w.name.lower() for w in _WHY_OF], dtype=object)
"""`_WHY` code -> its name in data (`single_run`, `work`, `flagged`, ...)."""


@dataclass(frozen=True)
class Group:
    """One workload with one value per parameter, across the targets.

    `params` are the point's parameters as stored (sizes in bytes), in stored order;
    `runs` the number of completed repetitions per target (0 when none completed)."""

    workload: str
    kind: str
    params: tuple[tuple[str, Any], ...]
    runs: Mapping[str, int]
    rows: Sequence[Row]
    warnings: tuple[StatWarning, ...] = ()
    """Warnings about whole runs of the group (too short, unsteady, cached),
    per target; those about one metric's samples are on the cells."""
    limits: Mapping[str, float] = field(default_factory=dict)
    """The limits a verdict judged the runs by, as the engine stored them per run: its
    check (`db_read_lat_ms_mean`, ...) -> the maximum in ms. Empty without a verdict."""
    points: Mapping[str, str] = field(default_factory=dict)
    """Each target's point (`point.id`): what a repetition of the group runs again."""

    def headline_rows(self) -> tuple[Row, ...]:
        """The rows the group is judged by (`is_headline`)."""
        return tuple(r for r in self.rows if is_headline(self.kind, r))

    def all_warnings(self) -> tuple[StatWarning, ...]:
        """The group's warnings and its cells', each once, in order."""
        rows = self.rows
        if isinstance(rows, _PlannedRows):
            cells = rows.cell_warnings()
        else:
            cells = [w for r in rows for w in r.warnings]
        if not cells:
            return self.warnings
        return tuple(dict.fromkeys((*self.warnings, *cells)))

    def row(self, op: str, metric: str) -> Row:
        for r in self.rows:
            if r.op == op and r.metric.name == metric:
                return r
        raise KeyError((op, metric))

    @property
    def ops(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r.op for r in self.rows))


@dataclass(frozen=True)
class IntegrityCell:
    """One target's completed runs of one integrity point (`kind = "integrity"`): what
    its file system did with the point's fault, run by run. Integrity points have no
    compared numbers (no `Group`); their outcomes are words (`fslab.integrity_words`)."""

    target: str
    workload: str
    point: str
    """The point's id."""
    fault: str
    region: str
    params: tuple[tuple[str, Any], ...]
    """The point's parameters as stored, in the order people read them (`faults` and
    `region` among them)."""
    outcomes: tuple[str, ...]
    """Each completed run's outcome, in run order."""
    runs: tuple[int, ...]
    """The runs' ids, in the same order."""
    errnos: tuple[int | None, ...] = ()
    repaired_by: tuple[str | None, ...] = ()

    def counts(self) -> dict[str, int]:
        """Runs per outcome, most first (ties in `OUTCOMES` order)."""
        tally: dict[str, int] = {}
        for o in self.outcomes:
            tally[o] = tally.get(o, 0) + 1
        rank = {o: i for i, o in enumerate(OUTCOMES)}
        return dict(sorted(tally.items(), key=lambda kv: (-kv[1], rank.get(kv[0], 99), kv[0])))


@dataclass(frozen=True)
class Question:
    """Targets compared with each other: those with one `question` key (`RAID layout`),
    or a study's targets when none has one (`name` is then empty). The first target is
    the baseline the others are compared with."""

    name: str
    targets: tuple[str, ...]

    @property
    def baseline(self) -> str:
        return self.targets[0]


@dataclass(frozen=True)
class Disturber:
    """A process that disturbed runs not counted (`DISTURBED`): named as the kernel names
    it (`comm`), with the pid of the run it disturbed most."""

    name: str
    pid: int
    runs: int
    """Disturbed runs it was named in."""
    cpu_pct: float
    """The most it used, % of one CPU over a disturbed run's contaminated intervals."""


def disturbers_of(facts: Iterable[RunFacts]) -> tuple[Disturber, ...]:
    """The processes named in these runs' facts, by name, most runs (then CPU) first."""
    by: dict[str, Disturber] = {}
    for f in facts:
        seen: set[str] = set()  # a run counts once per name, whatever pids it had
        for name, pid, _cpu_s, pct in f.disturbers:
            d = by.get(name)
            once = 0 if name in seen else 1
            seen.add(name)
            if d is None:
                by[name] = Disturber(name, pid, once, pct)
            else:
                top = pct > d.cpu_pct
                by[name] = Disturber(name, pid if top else d.pid, d.runs + once,
                                     max(pct, d.cpu_pct))  # fmt: skip
    return tuple(sorted(by.values(), key=lambda d: (-d.runs, -d.cpu_pct, d.name)))


@dataclass(frozen=True)
class Comparison:
    """A study's results, grouped and compared with the baseline target.

    `targets` are the columns, in study order (a question's together); `studies` every
    study in the database, most recent first; `skipped_runs` counts the runs not used, by
    status (failed, interrupted, running). Each target is compared with its question's
    baseline; `baseline` is the one asked for, else the first question's (a study without
    questions has one question)."""

    db_path: Path
    study: str
    studies: tuple[str, ...]
    targets: tuple[str, ...]
    baseline: str
    where: tuple[tuple[str, str], ...]
    groups: tuple[Group, ...]
    skipped_runs: Mapping[str, int] = field(default_factory=dict)
    confidence: float = CONFIDENCE
    alpha: float = ALPHA
    margin: float = EQUIVALENCE_MARGIN
    """The equivalence margin the verdicts used (the study's `margin`, else the default)."""
    summary_metrics: tuple[str, ...] = ()
    """The metrics the study's summary answers besides the headline (its `summary` key)."""
    blocked: bool = False
    """The study's runs were blocked: each target is judged against its baseline by the
    per-round log ratios (where two rounds or more pair up)."""
    questions: tuple[Question, ...] = ()
    """The study's questions, each with its baseline first; () means one, of every target."""
    integrity: tuple[IntegrityCell, ...] = ()
    """The integrity points' outcomes, one cell per point (a target's), in plan order."""
    disturbers: tuple[Disturber, ...] = ()
    """Who disturbed the runs not counted as `DISTURBED` (those the telemetry could name)."""
    shared: tuple[Disturber, ...] = ()
    """Who shared the machine with counted runs of a blocked study: alike across each of
    their rounds, which the rounds' ratios cancel (`fslab.stats.disturbance`)."""

    @cached_property
    def _baseline_of(self) -> dict[str, str]:
        return {t: q.baseline for q in self.all_questions for t in q.targets}

    @property
    def all_questions(self) -> tuple[Question, ...]:
        """`questions`, or the one question of every target (baseline first)."""
        if self.questions:
            return self.questions
        rest = tuple(t for t in self.targets if t != self.baseline)
        return (Question("", (self.baseline, *rest)),)

    def baseline_of(self, target: str) -> str:
        """The baseline `target` is compared with (a baseline's is itself)."""
        return self._baseline_of.get(target, self.baseline)

    def is_baseline(self, target: str) -> bool:
        return self.baseline_of(target) == target

    @property
    def param_keys(self) -> tuple[str, ...]:
        """Every parameter name of the groups, in order of appearance."""
        return tuple(dict.fromkeys(k for g in self.groups for k, _ in g.params))

    def common_params(self) -> tuple[tuple[str, Any], ...]:
        """The parameters with one value in every group (said once, above the tables)."""
        if not self.groups:
            return ()
        first = self.groups[0].params
        return tuple(
            (k, v)
            for k, v in first
            if all(_canonical(dict(g.params).get(k, MISSING)) == _canonical(v) for g in self.groups)
        )

    def varying_params(self, group: Group) -> tuple[tuple[str, Any], ...]:
        """The group's parameters that are not common to all groups (its title)."""
        common = {k for k, _ in self.common_params()}
        return tuple((k, v) for k, v in group.params if k not in common)


def parse_where(exprs: Iterable[str | tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """`["bs=8k", "rw=randread"]` -> `(("bs", "8k"), ("rw", "randread"))`."""
    out: list[tuple[str, str]] = []
    for e in exprs:
        if isinstance(e, tuple):
            key, value = e
        else:
            key, sep, value = e.partition("=")
            if not sep:
                raise CompareError(
                    f"`{e}` is not a filter", hint="write `--where KEY=VALUE`, e.g. `--where bs=8k`"
                )
        key, value = key.strip(), value.strip()
        if not key:
            raise CompareError(
                f"`{e}` is not a filter", hint="write `--where KEY=VALUE`, e.g. `--where bs=8k`"
            )
        out.append((key, value))
    return tuple(out)


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
            kept = {p.id for p in _filter_points(study_points(con, chosen[0], db_path), filters)}
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


def compare_results(
    results: StudyResults,
    *,
    study: str,
    studies: tuple[str, ...] = (),
    db_path: Path = DEFAULT_RESULTS,
    baseline: str | None = None,
    where: Iterable[str | tuple[str, str]] = (),
    confidence: float = CONFIDENCE,
    alpha: float | None = None,
    margin: float | None = None,
) -> Comparison:
    """The comparison of one study's results (`fslab.store.query.study_results`): no
    database, no I/O. `alpha` of the verdicts: by default an adaptive study's level per
    look (`fslab.stats.sequential`), else `ALPHA`. Raises `ResultsError` or `CompareError`
    with a hint."""
    if alpha is None:
        alpha = results.level if results.level is not None else ALPHA
    if margin is None:
        margin = results.margin if results.margin is not None else EQUIVALENCE_MARGIN
    filters = parse_where(where)
    points = list(results.points)
    if not points:
        raise ResultsError(f"study `{study}` has no points yet", hint=RUN_HINT)
    targets = tuple(dict.fromkeys(p.target for p in points))
    # `target` is not a parameter: it picks the columns (the baseline among them).
    wanted_targets = [v for k, v in filters if k == "target"]
    if wanted_targets:
        for name in wanted_targets:
            if name not in targets:
                raise CompareError(
                    f"unknown --where target `{name}`: study `{study}` has no such target",
                    hint=suggest(name, targets, "targets"),
                )
        targets = tuple(t for t in targets if t in wanted_targets)
        points = [p for p in points if p.target in targets]
        filters = tuple((k, v) for k, v in filters if k != "target")
    base = _pick_baseline(targets, baseline, study)
    questions = _questions(targets, results.questions, base)
    if len(questions) > 1:
        targets = tuple(t for q in questions for t in q.targets)
    else:
        questions = ()
    points = _filter_points(points, filters)
    kept = {p.id for p in points}
    skipped: dict[str, int] = {}
    ok_runs: dict[int, str] = {}
    disturbed: list[RunFacts] = []
    shared: list[RunFacts] = []
    hit = _disturbed(results)
    for run in results.runs:
        if run.point_id not in kept:
            continue
        facts = results.facts.get(run.id)
        if run.status == "ok" and _never_steady(facts):
            # Its numbers are a window that never settled: no sample of the steady state.
            # Left out like a failed run (an adaptive study runs the point again).
            skipped[NOT_STEADY] = skipped.get(NOT_STEADY, 0) + 1
        elif run.status == "ok" and facts is not None and run.id in hit:
            # Other work shared the machine: a sample of something else. Left out too, and
            # measured again (`fslab.run`: an adaptive study's next round, or a re-run).
            skipped[DISTURBED] = skipped.get(DISTURBED, 0) + 1
            disturbed.append(facts)
        elif run.status == "ok":
            ok_runs[run.id] = run.point_id
            if facts is not None and facts.disturbed:
                shared.append(facts)
        else:
            skipped[run.status] = skipped.get(run.status, 0) + 1
    if not ok_runs:
        scope = " matching the filter" if filters else ""
        done = ", ".join(f"{n} {s}" for s, n in sorted(skipped.items()))
        raise ResultsError(
            f"study `{study}` has no completed runs{scope}" + (f" ({done})" if done else ""),
            hint="`fslab run STUDY.toml` runs the points still to do (it resumes)",
        )
    base_of = {t: q.baseline for q in questions for t in q.targets}
    columns = np.array([targets.index(base_of.get(t, base)) for t in targets], dtype=np.int64)
    integrity = _integrity_cells(results, kept)
    if integrity:
        # Their runs have no compared values: no group, no row (`fslab.metrics`).
        faulted = {c.point for c in integrity}
        ok_runs = {r: p for r, p in ok_runs.items() if p not in faulted}
    groups = _Grouping(points, targets, columns, ok_runs, results)
    return Comparison(
        db_path=db_path,
        study=study,
        studies=studies or (study,),
        targets=targets,
        baseline=base,
        where=filters,
        groups=groups.build(confidence, alpha, margin),
        skipped_runs=skipped,
        confidence=confidence,
        alpha=alpha,
        margin=margin,
        summary_metrics=results.summary,
        blocked=results.blocked,
        questions=questions,
        integrity=integrity,
        disturbers=disturbers_of(disturbed),
        shared=disturbers_of(shared),
    )


def _disturbed(results: StudyResults) -> set[int]:
    """The completed runs other work disturbed (`fslab.stats.disturbance`): in a blocked
    study judged against their block (the runs of their group and round, whatever the
    filters keep), else alone."""
    facts = results.facts
    if not results.blocked:
        return {r for r, f in facts.items() if f.disturbed}
    if not any(f.disturbed for f in facts.values()):
        return set()
    group = {p.id: (p.workload, _canonical(p.params)) for p in results.points}
    runs: list[tuple[RunFacts, tuple[Any, ...] | None]] = []
    for r in results.runs:
        f = facts.get(r.id)
        if r.status == "ok" and f is not None:
            runs.append((f, (group[r.point_id], f.rep) if f.rep is not None else None))
    return {f.run_id for f in disturbed_runs(runs)}


def _integrity_cells(results: StudyResults, kept: set[str]) -> tuple[IntegrityCell, ...]:
    """One cell per integrity point kept (the filters and `--where target=`) that has
    completed runs, in plan order."""
    by_point: dict[str, list[IntegrityRow]] = {}
    for row in results.integrity:
        if row.point_id in kept:
            by_point.setdefault(row.point_id, []).append(row)
    return tuple(
        IntegrityCell(
            target=rows[0].target,
            workload=rows[0].workload,
            point=pid,
            fault=rows[0].fault,
            region=rows[0].region,
            params=_ordered(rows[0].params),
            outcomes=tuple(r.outcome for r in rows),
            runs=tuple(r.run_id for r in rows),
            errnos=tuple(r.errno for r in rows),
            repaired_by=tuple(r.repaired_by for r in rows),
        )
        for pid, rows in by_point.items()
    )


NOT_STEADY = "not steady"
"""How `skipped_runs` counts completed runs whose engine found no steady window."""
DISTURBED = "disturbed"
"""How `skipped_runs` counts completed runs other work disturbed (`RunFacts.disturbed`)."""


def _never_steady(facts: RunFacts | None) -> bool:
    return facts is not None and any(w[0] == "not_steady" for w in facts.engine_warnings)


def _questions(
    targets: tuple[str, ...], asked: Mapping[str, str], baseline: str
) -> tuple[Question, ...]:
    """The targets by question (their `question` key; "" for those without one), in order
    of first appearance, each in study order with its baseline first: `baseline` in its
    own question, the first target in the others."""
    by: dict[str, list[str]] = {}
    for t in targets:
        by.setdefault(asked.get(t, ""), []).append(t)
    out: list[Question] = []
    for name, members in by.items():
        if baseline in members:
            members = [baseline, *(t for t in members if t != baseline)]
        out.append(Question(name, tuple(members)))
    return tuple(out)


def _ordered(params: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple((k, params[k]) for k in param_order(tuple(params)))


class _Grouping:
    """The points of a comparison in groups, their runs' values in cells, and the rows."""

    def __init__(
        self,
        points: list[PointRow],
        targets: tuple[str, ...],
        base_of: npt.NDArray[np.int64],
        ok_runs: Mapping[int, str],
        results: StudyResults,
    ) -> None:
        self.targets, self.base_of, self.results = targets, base_of, results
        # (workload, params) -> group; dicts keep first-appearance order.
        keyed: dict[tuple[str, bytes], int] = {}
        self.group_points: list[list[PointRow]] = []
        point_cell: dict[str, tuple[int, int]] = {}
        t_of = {t: i for i, t in enumerate(targets)}
        for p in points:
            g = keyed.setdefault((p.workload, _canonical(p.params)), len(keyed))
            if g == len(self.group_points):
                self.group_points.append([])
            self.group_points[g].append(p)
            point_cell[p.id] = (g, t_of[p.target])
        self.runs_of: dict[str, list[int]] = {}
        for run_id, point_id in sorted(ok_runs.items()):
            self.runs_of.setdefault(point_id, []).append(run_id)
        # Each completed run's group and target, in run order.
        ids = np.fromiter(ok_runs, dtype=np.int64, count=len(ok_runs))
        order = np.argsort(ids)
        self.run_ids = ids[order]
        cell = np.array([point_cell[p] for p in ok_runs.values()], dtype=np.int64)
        cell = cell.reshape(-1, 2)[order]
        self.run_group, self.run_target = cell[:, 0], cell[:, 1]

    def run_reps(self) -> npt.NDArray[np.int64]:
        """Each completed run's round or pass (in `run_ids` order; -1: none known), what a
        blocked design pairs by. Only a blocked study asks: it is a Python pass over the
        runs."""
        facts = self.results.facts
        return np.fromiter(
            (
                -1 if (f := facts.get(int(r))) is None or f.rep is None else f.rep
                for r in self.run_ids
            ),
            dtype=np.int64,
            count=len(self.run_ids),
        )

    def build(self, confidence: float, alpha: float, margin: float) -> tuple[Group, ...]:
        n_t = len(self.targets)
        keys: dict[tuple[str, str], int] = {}
        layout_of: dict[int, int] = {}
        layout_ops: list[tuple[str, ...]] = []
        for block in self.results.values:
            for key in block.keys:
                keys.setdefault(key, len(keys))
        n_k = max(1, len(keys))
        # One entry per stored value: its cell ((group * n_k + key) * n_t + target), its
        # value and its run.
        parts_c, parts_v, parts_r = [], [], []
        for li, block in enumerate(self.results.values):
            kid = np.array([keys[k] for k in block.keys], dtype=np.int64)
            layout_ops.append(tuple(dict.fromkeys(op for op, _ in block.keys)))
            pos = np.searchsorted(self.run_ids, block.runs)
            pos = np.minimum(pos, max(0, len(self.run_ids) - 1))
            keep = self.run_ids[pos] == block.runs if len(self.run_ids) else pos < 0
            if not keep.any():
                continue
            runs, at = block.runs[keep], pos[keep]
            layout_of.update(dict.fromkeys(runs.tolist(), li))
            data = block.data[keep]
            present = ~np.isnan(data)
            r_i, k_i = np.nonzero(present)
            g, t = self.run_group[at], self.run_target[at]
            parts_c.append((g[r_i] * n_k + kid[k_i]) * n_t + t[r_i])
            parts_v.append(data[present])
            parts_r.append(runs[r_i])
        if parts_v:
            cell_code = np.concatenate(parts_c)
            v_, r_ = np.concatenate(parts_v), np.concatenate(parts_r)
        else:
            cell_code = r_ = np.zeros(0, dtype=np.int64)
            v_ = np.zeros(0, dtype=np.float64)
        del parts_c, parts_v, parts_r
        order = np.lexsort((r_, cell_code))
        cell_code, v_, r_ = cell_code[order], v_[order], r_[order]
        del order
        cell_codes, cell_start, cell_count = np.unique(
            cell_code, return_index=True, return_counts=True
        )
        del cell_code
        row_codes, row_of_cell = np.unique(cell_codes // n_t, return_inverse=True)
        n_rows = len(row_codes)
        t_of_cell = cell_codes % n_t
        if len(v_):
            cell_mean = np.add.reduceat(v_, cell_start) / cell_count
            dev = v_ - np.repeat(cell_mean, cell_count)
            ss = np.add.reduceat(dev * dev, cell_start)
            del dev
            # Equal samples have their value as the mean and no spread, exactly (a sum
            # divided by n can be off in the last bit).
            low, high = np.minimum.reduceat(v_, cell_start), np.maximum.reduceat(v_, cell_start)
            flat = low == high
            cell_mean = np.where(flat, low, cell_mean)
            ss = np.where(flat, 0.0, ss)
            nonzero = np.add.reduceat((v_ != 0).astype(np.int64), cell_start)
        else:
            cell_mean = ss = np.zeros(0)
            nonzero = np.zeros(0, dtype=np.int64)
        with np.errstate(invalid="ignore", divide="ignore"):
            cell_var = np.where(cell_count >= 2, ss / (cell_count - 1), np.nan)
        row_nonzero = np.zeros(n_rows, dtype=np.int64)
        np.add.at(row_nonzero, row_of_cell, nonzero)

        def dense(values: npt.NDArray[Any], fill: Any, dtype: Any) -> npt.NDArray[Any]:
            out = np.full((n_rows, n_t), fill, dtype=dtype)
            out[row_of_cell, t_of_cell] = values
            return out

        stats = _Stats(
            self.targets, self.base_of, confidence, alpha, margin, v_, r_,
            dense(cell_start, 0, np.int64), dense(cell_count, 0, np.int64),
            dense(cell_mean, np.nan, np.float64), dense(cell_var, np.nan, np.float64),
        )  # fmt: skip
        if self.results.blocked and len(r_):
            pos = np.minimum(np.searchsorted(self.run_ids, r_), len(self.run_ids) - 1)
            stats.reps = self.run_reps()[pos]

        # Each group's facts, and its shape: the rows it may have.
        metas: list[tuple[PointRow, dict[str, int], list[StatWarning], dict[str, float]]] = []
        shape_of: list[int] = []
        shapes: dict[tuple[str, tuple[str, ...]], int] = {}
        facts, limits = self.results.facts, self.results.limits
        for group_points in self.group_points:
            first = group_points[0]
            n_runs = dict.fromkeys(self.targets, 0)
            ops: dict[str, None] = {}
            warnings: list[StatWarning] = []
            judged_by: dict[str, float] = {}
            seen: set[int] = set()
            for p in group_points:
                ids = self.runs_of.get(p.id, [])
                known = [facts[r] for r in ids if r in facts]
                if known:
                    warnings += run_warnings(p.target, p.kind, p.params, known)
                n_runs[p.target] += len(ids)
                for run_id in ids:
                    if limits and (judged := limits.get(run_id)):
                        judged_by.update(judged)
                    layout = layout_of.get(run_id)
                    if layout is not None and layout not in seen:
                        seen.add(layout)
                        ops.update(dict.fromkeys(layout_ops[layout]))
            if not ops:
                shape_of.append(-1)
                continue
            shape_of.append(shapes.setdefault((first.kind, tuple(ops)), len(shapes)))
            metas.append((first, n_runs, warnings, judged_by))

        # Per shape at once: which planned rows each of its groups has.
        group_ids = np.arange(len(shape_of), dtype=np.int64)
        shape_arr = np.array(shape_of, dtype=np.int64)
        planned: list[tuple[list[_Planned], npt.NDArray[np.int64]]] = []
        tested: list[npt.NDArray[np.int64]] = []
        direction: list[npt.NDArray[np.int8]] = []
        min_abs: list[npt.NDArray[np.float64]] = []
        whys: list[npt.NDArray[np.int8]] = []
        noise_r: list[npt.NDArray[np.int64]] = []
        noise_what: list[str] = []
        noise_w: list[npt.NDArray[np.int64]] = []
        code = {Direction.HIGHER: 1, Direction.LOWER: 0, Direction.NEITHER: -1}
        for (kind, ops_), s in shapes.items():
            plan = _row_plan(kind, ops_, keys)
            gs = group_ids[shape_arr == s]
            if not plan:
                planned.append((plan, np.full((len(gs), 0), -1, dtype=np.int64)))
                continue
            k = np.array([x[2] for x in plan], dtype=np.int64)
            want = gs[:, None] * n_k + k[None, :]
            pos = np.minimum(np.searchsorted(row_codes, want), max(0, n_rows - 1))
            found = row_codes[pos] == want if n_rows else np.zeros(want.shape, dtype=bool)
            verdict_col = np.array([x[3] for x in plan], dtype=bool)
            # All zero (bytes of a chmod): no row.
            found &= verdict_col[None, :] | (row_nonzero[pos] > 0)
            rows_of = np.where(found, pos, -1)
            planned.append((plan, rows_of))
            judged = found & ~verdict_col[None, :]
            cols = np.nonzero(judged)[1]
            tested.append(rows_of[judged])
            direction.append(np.array([code[x[1].direction] for x in plan], np.int8)[cols])
            min_abs.append(np.array([x[1].min_abs for x in plan], np.float64)[cols])
            whys.append(np.array([_why_not(x[1]) for x in plan], np.int8)[cols])
            for j, x in enumerate(plan):
                if x[4] is not None:
                    r = rows_of[:, j]
                    noise_r.append(r[r >= 0])
                    noise_w.append(np.full(int((r >= 0).sum()), len(noise_what), np.int64))
                    noise_what.append(x[4])
        if tested:
            stats.describe(
                np.concatenate(tested),
                np.concatenate(direction),
                np.concatenate(min_abs),
                np.concatenate(whys),
            )
        if noise_r:
            _noise(stats, np.concatenate(noise_r), np.concatenate(noise_w), noise_what)

        groups: list[Group] = []
        timed_of: dict[int, npt.NDArray[np.bool_]] = {}
        local = np.zeros(len(shape_of), dtype=np.int64)
        for s in range(len(shapes)):
            local[shape_arr == s] = np.arange(int((shape_arr == s).sum()))
        metas_it = iter(metas)
        for g, s in enumerate(shape_of):
            if s < 0:
                continue
            first, n_runs, warnings, judged_by = next(metas_it)
            plan, rows_of = planned[s]
            ids = rows_of[local[g]]
            cols = np.flatnonzero(ids >= 0)
            rows = _PlannedRows(stats, plan, cols, ids[cols])
            flagged = _flagged(warnings)
            if flagged:
                timed = timed_of.get(s)
                if timed is None:
                    timed = timed_of[s] = np.array([x[1].timed for x in plan], dtype=bool)
                doubtful = ids[cols[timed[cols]]]
                for target, flags in flagged.items():
                    stats.flag(doubtful, self.targets.index(target), flags)
            groups.append(
                Group(
                    workload=first.workload,
                    kind=first.kind,
                    params=_ordered(first.params),
                    runs=n_runs,
                    rows=rows,
                    warnings=tuple(warnings),
                    limits=judged_by,
                    points={p.target: p.id for p in self.group_points[g]},
                )
            )
        return tuple(groups)


HEADLINE_METRIC = "iops"
"""The metric a family is judged by: IOPS for block I/O, files/s for files ops, tps for
the application models (all stored as `iops`)."""


def is_headline(kind: str, row: Row) -> bool:
    """Whether `row` is one a point of `kind` is judged by: its headline metric, for each
    of the workload's own operations (block reads and writes, files ops), or transactions
    for the application models; not the devices' (telemetry) nor JetStress's verdict."""
    if row.metric.name != HEADLINE_METRIC or row.op.endswith(TELEMETRY_OP):
        return False
    e = entry(kind)
    return row.op == e.headline_op if e.headline_op is not None else row.op != JETSTRESS_OP


_JUDGED = (MetricKind.RATE, MetricKind.LATENCY, MetricKind.EFFICIENCY)
"""The sorts of metric the decision rule judges; work (bytes, counts) and shares of the
machine (CPU busy) are described, not judged: they grow with the work a run did."""


def _why_not(metric: MetricSpec) -> int:
    """The `_WHY` code of why the decision rule does not judge this metric; 0 if it does."""
    if metric.direction is Direction.NEITHER:
        return _WHY[NoVerdict.NO_DIRECTION]
    if metric.kind not in _JUDGED:
        return _WHY[NoVerdict.WORK]
    return 0


def _flagged(warnings: Sequence[StatWarning]) -> dict[str, str]:
    """Target -> the kinds of its validity warnings (`cached, unsteady`), for the targets
    whose verdicts they suppress (`fslab.stats.warnings.SUPPRESSING`)."""
    out: dict[str, dict[str, None]] = {}
    for w in warnings:
        if w.kind in SUPPRESSING:
            out.setdefault(w.target, {})[w.kind.value] = None
    return {t: ", ".join(kinds) for t, kinds in out.items()}


_Planned = tuple[str, MetricSpec, int, bool, str | None]
"""(op, metric, key, whether it is a pass/fail verdict, what a noise warning calls it
or None where the spread is not judged): one possible row of a group."""


def _row_plan(
    kind: str, ops: tuple[str, ...], keys: Mapping[tuple[str, str], int]
) -> list[_Planned]:
    """The rows a group of this kind whose runs have these ops (in order of appearance)
    may have, in the order they are shown: ops as `_OP_ORDER` says, then as they
    appeared; each op's metrics in the catalog's order."""
    out: list[_Planned] = []
    e = entry(kind)
    ordered = [o for o in _OP_ORDER if o in ops] + [o for o in ops if o not in _OP_ORDER]
    for op in ordered:
        pseudo = pseudo_metrics(op)
        for metric in pseudo if pseudo is not None else e.op_metrics(op):
            k = keys.get((op, metric.name))
            if k is None:
                continue
            what = None
            if metric.name == NOISE_METRIC and pseudo is None and e.is_headline_op(op):
                what = f"{op} {metric.label}" if e.ops_apart else metric.label
            out.append((op, metric, k, metric.unit == VERDICT_UNIT, what))
    return out


_BORDER = 1e-3
"""Relative margin around the noise and outlier thresholds inside which numpy's sums
(which may differ from exact ones in the last bits) do not decide: `sample_warnings` does."""


def _noise(
    stats: _Stats,
    rows: npt.NDArray[np.int64],
    what_of: npt.NDArray[np.int64],
    what: Sequence[str],
) -> None:
    """Noise and outlier warnings on the cells of these rows (`what[what_of[i]]` names
    row i's metric for people), worked out for all cells at once; the few cells within
    `_BORDER` of a threshold are judged by `sample_warnings`, the one definition."""
    count, mean, stdev = stats.count[rows], stats.mean[rows], stats.stdev[rows]
    with np.errstate(invalid="ignore", divide="ignore"):
        cv = np.nan_to_num(np.where(mean != 0, stdev / np.abs(mean), 0.0))
    two = count >= 2
    noisy = two & (cv > NOISY_CV * (1 + _BORDER))
    border = two & ~noisy & (cv > NOISY_CV * (1 - _BORDER))
    found: dict[tuple[int, int], list[StatWarning]] = {}
    outliers: list[tuple[int, int, int, float, float, float, int]] = []
    for n in np.unique(count[count >= 3]).tolist():
        where = np.argwhere(count == n)
        starts = stats.start[rows[where[:, 0]], where[:, 1]]
        at = starts[:, None] + np.arange(n)[None, :]
        samples = stats.values[at]
        med = np.median(samples, axis=1, keepdims=True)
        mad = np.median(np.abs(samples - med), axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            z = np.where(mad > 0, 0.6745 * (samples - med) / mad, 0.0)
        far = np.abs(z) > OUTLIER_Z * (1 + _BORDER)
        near = np.any((np.abs(z) > OUTLIER_Z * (1 - _BORDER)) & ~far, axis=1)
        border[where[near, 0], where[near, 1]] = True
        cells, i = np.nonzero(far & ~near[:, None])
        x, t = where[cells, 0], where[cells, 1]
        keep = ~border[x, t]
        cells, i, x, t = cells[keep], i[keep], x[keep], t[keep]
        outliers.extend(
            zip(
                x.tolist(), t.tolist(), i.tolist(), samples[cells, i].tolist(),
                med[cells, 0].tolist(), z[cells, i].tolist(), stats.runs[at[cells, i]].tolist(),
                strict=True,
            )
        )  # fmt: skip
    targets, row_l, what_l = stats.targets, rows.tolist(), [what[w] for w in what_of.tolist()]
    x, t = np.nonzero(noisy & ~border)
    for xi, ti, n, v in zip(
        x.tolist(), t.tolist(), count[x, t].tolist(), cv[x, t].tolist(), strict=True
    ):
        found[(xi, ti)] = [noisy_warning(targets[ti], what_l[xi], n, v)]
    n_of = count.tolist()
    for xi, ti, j, value, m, zz, run in outliers:
        w = outlier_warning(targets[ti], what_l[xi], j, n_of[xi][ti], value, m, zz, run)
        found.setdefault((xi, ti), []).append(w)
    for xi, ti in np.argwhere(border).tolist():
        row = row_l[xi]
        exact = sample_warnings(
            targets[ti], what_l[xi], stats.samples(row, ti), stats.sample_runs(row, ti)
        )
        if exact:
            found[(xi, ti)] = exact
    for (xi, ti), ws in found.items():
        row = row_l[xi]
        stats.noise[(row, ti)] = tuple(ws)
        stats.noisy_rows.add(row)


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
        present = (*present, INTEGRITY_KIND)

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
    integrity = comparison.integrity if INTEGRITY_KIND in wanted else ()
    return replace(comparison, groups=tuple(groups), integrity=integrity)


def _filter_points(points: list[PointRow], filters: tuple[tuple[str, str], ...]) -> list[PointRow]:
    # `workload` is not a parameter but names what people filter by first.
    keys = ("workload", *param_order(tuple(dict.fromkeys(k for p in points for k in p.params))))

    def value(p: PointRow, k: str) -> Any:
        return p.workload if k == "workload" else p.params.get(k, MISSING)

    try:
        return select(points, filters, keys, value)
    except WhereError as e:
        raise CompareError(e.message, hint=e.hint) from e


def _canonical(value: Any) -> bytes:
    if value is MISSING:
        return b"\0missing"
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)


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


def _pick_baseline(targets: tuple[str, ...], wanted: str | None, study: str) -> str:
    if wanted is None:
        return targets[0]
    if wanted in targets:
        return wanted
    raise CompareError(
        f"unknown baseline `{wanted}`: study `{study}` has no such target",
        hint=suggest(wanted, targets, "targets"),
    )
