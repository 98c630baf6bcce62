"""The arrays a comparison's numbers sit in (`Stats`: every row's statistics and
decisions at once, one array row per `Row`, one column per target), the codes of why a cell
has no verdict, and the numbers the data renderers read from them."""

from __future__ import annotations

from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from fslab.metrics import (
    MetricSpec,
)
from fslab.stats.decision import (
    MIN_PAIRS,
    Decision,
    Judgement,
    NoVerdict,
    decide,
)
from fslab.stats.summary import t_quantiles
from fslab.stats.warnings import (
    StatWarning,
)

Planned = tuple[str, MetricSpec, int, bool, str | None]
"""(op, metric, key, whether it is a pass/fail verdict, what a noise warning calls it
or None where the spread is not judged): one possible row of a group."""


Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]
Codes = npt.NDArray[np.int8]

WHY_OF: tuple[NoVerdict | None, ...] = (None, *NoVerdict)
"""A `WHY` code -> why a cell has no verdict (0: it has one, or needs no reason)."""
WHY = {w: i for i, w in enumerate(WHY_OF) if w is not None}
_DECISIONS = {d.value: d for d in Decision}
"""A verdict code -> its `Decision` (a dict: the enum's own lookup costs a microsecond)."""
INTERVAL_KEPT = np.array(
    [WHY[w] for w in (NoVerdict.WORK, NoVerdict.NO_DIRECTION, NoVerdict.FLAGGED,
                       NoVerdict.BASELINE_FLAGGED)], dtype=np.int8)  # fmt: skip
"""Cells without a verdict that still show the interval of their ratio."""


class Stats:
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
        # lower, -1 neither), minimum effect, why the rule does not judge it (a `WHY`
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
        the `WHY` code of why the rule does not judge the metric (0: it does)."""
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
    def paired(self) -> tuple[npt.NDArray[np.int64], Floats, Floats]:
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
    def decisions(self) -> tuple[Floats, Floats, Floats, Codes, Ints, Codes]:
        """`fslab.stats.decision.decide` for every described cell against its baseline's
        cell of its row (`base_of`): (ratio, low, high, `Decision` code, more repetitions,
        `WHY` code of why there is no verdict), one array each of shape (rows,
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
        why = np.where(present & ~np.isfinite(ratio), WHY[NoVerdict.NOT_POSITIVE], why)
        single = (self.count < 2) | (base_count < 2)
        why = np.where(present & (why == 0) & single, WHY[NoVerdict.SINGLE_RUN], why)
        why = np.where(present & (why == 0), per_cell(self.why_of), why)
        suppress = np.where(
            self.flagged[:, b] > 0,
            WHY[NoVerdict.BASELINE_FLAGGED],
            np.where(self.flagged > 0, WHY[NoVerdict.FLAGGED], 0),
        )
        why = np.where(present & (why == 0), suppress, why).astype(np.int8)
        low, high = np.full(shape, np.nan), np.full(shape, np.nan)
        verdict = np.full(shape, int(Decision.NONE), dtype=np.int8)
        more = np.full(shape, -1, dtype=np.int64)
        # Only the cells the rule can judge: scipy's t quantiles for half a million cells
        # cost seconds. Flagged and single-run cells keep their interval where they have one.
        judged = present & (why == 0)
        interval = present & np.isin(why, INTERVAL_KEPT)
        r, t = np.nonzero(judged | interval)
        if len(r):
            bt = b[t]
            n_b, m_b, v_b = self.count[r, bt], mean_log[r, bt], var_log[r, bt]
            n_t_, m_t, v_t = self.count[r, t], mean_log[r, t], var_log[r, t]
            # A blocked study: the per-round log ratios as one sample (n - 1 df); where
            # fewer than `MIN_PAIRS` rounds pair up, the runs as independent samples.
            pairs, m_d, v_d = self.paired
            p = pairs[r, t] >= MIN_PAIRS
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
        return self.judgements(r)[t]

    def judgements(self, r: int) -> list[Judgement | None]:
        """`judgement` of each target of row `r`, the row's numbers read at once (a
        summary of a large study reads a hundred thousand rows)."""
        ratio, low, high, verdict, more, why = self.decisions
        xs, los, his = ratio[r].tolist(), low[r].tolist(), high[r].tolist()
        verdicts, mores, codes = verdict[r].tolist(), more[r].tolist(), why[r].tolist()
        not_positive = WHY[NoVerdict.NOT_POSITIVE]
        out: list[Judgement | None] = []
        for t, x in enumerate(xs):
            code = int(codes[t])
            if x != x and code != not_positive:  # NaN: no ratio
                out.append(None)
                continue
            lo, hi, m = los[t], his[t], int(mores[t])
            reason = WHY_OF[code]
            flags = ""
            if reason is NoVerdict.FLAGGED:
                flags = self.flag_kinds[int(self.flagged[r, t])]
            elif reason is NoVerdict.BASELINE_FLAGGED:
                flags = self.flag_kinds[int(self.flagged[r, int(self.base_of[t])])]
            out.append(
                Judgement(
                    ratio=None if x != x else x,
                    low=None if lo != lo else lo,
                    high=None if hi != hi else hi,
                    decision=_DECISIONS[int(verdicts[t])],
                    more_runs=m if m >= 0 else None,
                    why=reason,
                    flags=flags,
                )
            )
        return out

    def samples(self, r: int, t: int) -> tuple[float, ...]:
        s = int(self.start[r, t])
        return tuple(self.values[s : s + int(self.count[r, t])].tolist())

    def sample_runs(self, r: int, t: int) -> list[int]:
        s = int(self.start[r, t])
        return [int(x) for x in self.runs[s : s + int(self.count[r, t])]]


def numbers_of(st: Stats, idx: npt.NDArray[np.int64]) -> tuple[list[list[Any]], ...]:
    count = st.count[idx]
    ratio, low, high, code, more, why = (a[idx] for a in st.decisions)
    verdict = DECISION_WORDS[code.astype(np.int64)]
    reason = WHY_WORDS[why.astype(np.int64)]
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


DECISION_WORDS = np.array([None, *(d.word for d in Decision if d)], dtype=object)
"""`Decision` code -> its word (NONE is None)."""
WHY_WORDS = np.array([None if w is None else w.name.lower() for w in WHY_OF], dtype=object)
"""`WHY` code -> its name in data (`single_run`, `work`, `flagged`, ...)."""
