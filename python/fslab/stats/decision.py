"""The decision rule: is a target better than, worse than, or equivalent to the baseline
at one point, for one metric, or can the runs not tell yet?

Method
------
**The ratio, with its interval on log values.** For a metric with a better direction
(IOPS, bandwidth, latency), each target is compared with the baseline as the ratio of
their geometric means, target / baseline. Its confidence interval comes from Welch's
two-sample interval on the logarithms of the repetitions: with `d` the difference of the
mean logs, `se = sqrt(s_t^2 / n_t + s_b^2 / n_b)` and Welch-Satterthwaite degrees of
freedom `df`, the interval is `exp(d ± t(1 - alpha/2, df) * se)`. Logs, because storage
results are ratios at heart (2x the IOPS, half the latency): on logs a 2x and a 0.5x are
equally far from 1, spreads that grow with the mean stay comparable, and the interval of
a ratio never crosses 0.

**The verdict**, in this order:

- *none*: either side has fewer than 2 repetitions (no spread to judge), a value is not
  positive (no log), or the metric has no better direction or counts work (device bytes,
  I/O counts: compare those per unit of work instead). Never "no significant difference".
- *better* / *worse*: the interval excludes 1 and the change exceeds the metric's minimum
  effect (`MIN_EFFECT_PCT` of the baseline, and `min_abs` in the metric's unit); the
  direction comes from the metric (higher IOPS is better, lower latency is better).
- *equivalent*: the equivalence interval lies within the margin, `1 - margin` to
  `1 / (1 - margin)` (default 5%: 0.95x to 1.053x, as far from 1 on logs either way, so
  A within the margin of B is B within the margin of A): the runs show the two are the
  same within 5%, which "no significant difference" never did. The equivalence interval
  is the `1 - 2 alpha` one (90% where the difference is judged at 95%): Schuirmann's two
  one-sided tests, each at `alpha`, which is what "within the margin at level alpha"
  takes. Where a cell is equivalent, that interval is the one it shows, so its mark and
  its interval agree. (fslab judged equivalence by the `1 - alpha` interval before
  2026-11-28: stricter than the test needs, it left equal targets undecided, 19% against
  33% equivalent within 5% at 3 to 6 rounds of 3% noise; tests/test_sequential.py
  measures that calling targets equivalent that are off by the margin stays at or under
  alpha.)
- *inconclusive*: neither. The interval is given, and an estimate of how many more
  repetitions per side would likely decide it: the `n` per side at which, with the spreads
  and the ratio seen so far, the interval would exclude 1 (if the ratio is off 1 by more
  than the minimum effect) or fit in the margin (if the ratio is within it), whichever
  comes first, minus the repetitions done. "Likely": the spreads and the ratio are
  themselves estimates.

A cell a validity warning flags (served from the page cache, not steady) gets no verdict
either; the caller passes those cells as `suppressed`.

References: Welch (1947); for equivalence by interval inclusion, Schuirmann (1987), "A
comparison of the two one-sided tests procedure and the power approach for assessing
the equivalence of average bioavailability", J. Pharmacokinet. Biopharm. 15 (the
`1 - 2 alpha` interval: a 90% one at alpha = 5%).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum, StrEnum

import numpy as np
import numpy.typing as npt
from scipy import special as _special  # type: ignore[import-untyped]

from fslab.stats.summary import ALPHA, MIN_EFFECT_PCT

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]

EQUIVALENCE_MARGIN = 0.05
"""Ratios within ± this are equivalent (a study key may change it; `margin_bounds`)."""
MAX_MORE_REPS = 1000
"""Beyond this many more repetitions per side the estimate says "more than"."""
MIN_PAIRS = 3
"""The fewest paired rounds a blocked cell is judged by: with two, Student's t at one
degree of freedom (12.7) makes an interval about three times as wide as Welch's over the
same four runs (the demo's two-round mailstore read 0.057x to 17.7x); below, the runs
are judged as independent samples."""


def margin_bounds(margin: float) -> tuple[float, float]:
    """The ratios a margin of `margin` calls the same: `1 - margin` to `1 / (1 - margin)`
    (0.95x to 1.053x at 5%). Symmetric on logs, as the intervals are, so that A within
    the margin of B is B within the margin of A; `1 ± margin` was not (0.95x to 1.05x
    called xfs/ext4's 0.952-1.039 equivalent and its reverse, 0.962-1.051, not)."""
    return 1 - margin, 1 / (1 - margin)


def within_margin(
    low: Floats | float, high: Floats | float, margin: float
) -> npt.NDArray[np.bool_]:
    """Whether an interval `[low, high]` lies within `margin_bounds(margin)`."""
    lo, hi = margin_bounds(margin)
    return np.asarray((np.asarray(low) >= lo) & (np.asarray(high) <= hi))


class Decision(IntEnum):
    """A verdict code of `decide`, with its word for people."""

    NONE = 0
    BETTER = 1
    WORSE = 2
    EQUIVALENT = 3
    INCONCLUSIVE = 4

    @property
    def word(self) -> str:
        return self.name.lower()


class NoVerdict(StrEnum):
    """Why a cell compared with the baseline has no verdict, in words for people."""

    SINGLE_RUN = "a side has a single run"
    WORK = "an amount of work: compare it per unit of work"
    NO_DIRECTION = "no direction of it is better"
    NOT_POSITIVE = "a value is not positive"
    FLAGGED = "its runs are flagged"
    BASELINE_FLAGGED = "the baseline's runs are flagged"


@dataclass(frozen=True)
class Judgement:
    """One target against the baseline, for one metric at one point: the ratio of the
    geometric means (target / baseline) with its interval, the verdict, and either the
    repetitions per side that would likely decide it (inconclusive) or why there is no
    verdict (`why`, with `flags`: the warning kinds that suppressed it)."""

    ratio: float | None
    low: float | None
    high: float | None
    decision: Decision
    more_runs: int | None = None
    why: NoVerdict | None = None
    flags: str = ""
    """`cached`, `cached, unsteady`: the validity warnings behind FLAGGED."""

    @property
    def reason(self) -> str:
        """Why there is no verdict, in full: `its runs are flagged (cached)`; empty when
        there is one."""
        if self.why is None:
            return ""
        return f"{self.why.value} ({self.flags})" if self.flags else self.why.value


def log_stats(samples: Sequence[float]) -> tuple[int, float, float]:
    """(n, mean, variance with ddof=1) of the logs of positive samples; NaN mean when a
    sample is not positive, NaN variance when n < 2."""
    x = np.asarray(samples, dtype=np.float64)
    n = len(x)
    if n == 0 or (x <= 0).any():
        return n, float("nan"), float("nan")
    logs = np.log(x)
    return n, float(logs.mean()), float(logs.var(ddof=1)) if n >= 2 else float("nan")


def decide(
    base_n: Ints,
    base_mean_log: Floats,
    base_var_log: Floats,
    n: Ints,
    mean_log: Floats,
    var_log: Floats,
    *,
    higher_is_better: npt.NDArray[np.int8],
    min_abs: Floats,
    base_mean: Floats,
    judged: npt.NDArray[np.bool_],
    suppressed: npt.NDArray[np.bool_] | None = None,
    alpha: float = ALPHA,
    margin: float = EQUIVALENCE_MARGIN,
) -> tuple[Floats, Floats, Floats, npt.NDArray[np.int8], Ints]:
    """The decision rule (see the module) for many cells at once, each a target against
    the baseline: the log statistics of both sides (`log_stats`), the metric's direction
    (1 higher is better, 0 lower), its minimum effect `min_abs` in its unit (checked
    against the baseline's arithmetic mean `base_mean` times the ratio), and `judged`
    (False for metrics without a direction and work metrics).

    Returns (ratio, low, high, verdict as `Decision` codes, more repetitions per side:
    -1 unless inconclusive, `MAX_MORE_REPS + 1` for "more than that"). Ratio and interval
    are NaN where there is none; an equivalent cell's interval is its equivalence one."""
    base_n, n = np.asarray(base_n), np.asarray(n)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        d = mean_log - base_mean_log
        se, df = log_error(base_n, base_var_log, n, var_log)
        two = (n >= 2) & (base_n >= 2) & np.isfinite(d)
        dfs = np.where(two, df, 1.0)
        t = np.where(two, _special.stdtrit(dfs, 1 - alpha / 2), np.nan)
        t_eq = np.where(two, _special.stdtrit(dfs, 1 - alpha), np.nan)
        ratio = np.exp(d)
        low, high = np.exp(d - t * se), np.exp(d + t * se)
        eq_low, eq_high = np.exp(d - t_eq * se), np.exp(d + t_eq * se)
        change = np.abs(ratio - 1)
        big = (change * 100 >= MIN_EFFECT_PCT) & (np.abs(base_mean * (ratio - 1)) >= min_abs)
    excludes = (low > 1) | (high < 1)
    inside = within_margin(eq_low, eq_high, margin)
    up = ratio > 1
    better = np.where(higher_is_better == 1, up, ~up)
    verdict = np.full(d.shape, Decision.INCONCLUSIVE, dtype=np.int8)
    verdict = np.where(inside, Decision.EQUIVALENT, verdict)
    verdict = np.where(excludes & big, np.where(better, Decision.BETTER, Decision.WORSE), verdict)
    # An equivalent cell shows the interval that decided it.
    shown_eq = verdict == Decision.EQUIVALENT
    low, high = np.where(shown_eq, eq_low, low), np.where(shown_eq, eq_high, high)
    none = ~two | ~judged
    if suppressed is not None:
        none |= suppressed
    verdict = np.where(none, Decision.NONE, verdict).astype(np.int8)
    # Only where it is asked for: the estimate costs t quantiles per cell.
    open_ = np.flatnonzero(verdict == Decision.INCONCLUSIVE)
    more = np.full(d.shape, -1, dtype=np.int64)
    if len(open_):
        more[open_] = _more_reps(
            d[open_], big[open_], np.broadcast_to(var_log, d.shape)[open_],
            np.broadcast_to(base_var_log, d.shape)[open_], np.broadcast_to(n, d.shape)[open_],
            np.broadcast_to(base_n, d.shape)[open_], alpha, margin,
        )  # fmt: skip
    nan = ~two
    ratio = np.where(np.isfinite(d), ratio, np.nan)
    return ratio, np.where(nan, np.nan, low), np.where(nan, np.nan, high), verdict, more


def _more_reps(
    d: Floats,
    big: npt.NDArray[np.bool_],
    var_t: Floats,
    var_b: Floats,
    n: Ints,
    base_n: Ints,
    alpha: float,
    margin: float,
) -> Ints:
    """Repetitions per side still needed, from here on equal on both sides, for the
    interval to exclude 1 (when the change is past the minimum effect: `big`) or the
    equivalence interval to fit in the margin (when the ratio is inside it): the smaller
    of the two that can happen."""
    spread = var_t + var_b
    done = np.maximum(n, base_n)
    with np.errstate(divide="ignore", invalid="ignore"):
        room_diff = np.where(big, np.abs(d), 0.0)
        # The margin on logs is symmetric (`margin_bounds`): -log(1 - m) either side.
        room_equiv = -np.log1p(-margin) - np.abs(d)
        need = np.full(d.shape, np.inf)
        # The difference's interval is two-sided at alpha; the equivalence one's each
        # side at alpha (`decide`).
        for room, q in ((room_diff, 1 - alpha / 2), (room_equiv, 1 - alpha)):
            # t * sqrt(spread / k) <= room  ->  k >= spread * (t / room)^2; t depends on
            # k through Welch's df, between k - 1 and 2k - 2 for equal n: the smaller,
            # so the estimate errs on the side of enough. A few passes from the normal
            # quantile settle it.
            k = np.full(d.shape, np.inf)
            ok = room > 0
            t = np.full(d.shape, _special.ndtri(q))
            for _ in range(3):
                k = np.where(ok, np.ceil(spread * (t / room) ** 2), np.inf)
                k = np.maximum(k, 2)
                t = _special.stdtrit(np.clip(k - 1, 1, 1e9), q)
            need = np.minimum(need, np.where(ok, k, np.inf))
    more = need - done
    more = np.where(np.isfinite(more), np.maximum(more, 1), MAX_MORE_REPS + 1)
    out: Ints = np.minimum(more, MAX_MORE_REPS + 1).astype(np.int64)
    return out


def combine(
    d: Floats, se: Floats, df: Floats, alpha: float = ALPHA
) -> tuple[float, float, float] | None:
    """The geometric mean of several points' ratios (their log ratios `d`) with its
    interval: the mean of the logs, its standard error `sqrt(sum se^2) / k` (the points'
    repetitions are independent) and Welch-Satterthwaite's df for a sum of independent
    estimates. (ratio, low, high); NaN bounds where a point has no spread (n = 1); None
    for no points. The interval speaks of these points as measured, not of points not run.
    """
    d, se, df = np.asarray(d), np.asarray(se), np.asarray(df)
    k = len(d)
    if k == 0:
        return None
    ratio = float(np.exp(d.mean()))
    # An infinite df is a point whose runs did not spread at all (`log_error`): it adds
    # nothing to the sum's variance, and nothing to its df's denominator.
    if not (np.isfinite(se).all() and not np.isnan(df).any()):
        return ratio, float("nan"), float("nan")
    var = se**2
    total = float(var.sum())
    if total == 0.0:
        return ratio, ratio, ratio
    with np.errstate(divide="ignore", invalid="ignore"):
        parts = np.where(np.isinf(df), 0.0, var**2 / df)
    spread = float(parts.sum())
    dof = total**2 / spread if spread > 0 else np.inf
    q = _special.ndtri(1 - alpha / 2) if np.isinf(dof) else _special.stdtrit(dof, 1 - alpha / 2)
    half = float(q) * np.sqrt(total) / k
    mean = float(d.mean())
    return ratio, float(np.exp(mean - half)), float(np.exp(mean + half))


def log_error(
    base_n: Ints, base_var_log: Floats, n: Ints, var_log: Floats
) -> tuple[Floats, Floats]:
    """(standard error, Welch-Satterthwaite df) of the difference of two mean logs; NaN
    where a side has n < 2; df infinite where both spreads are zero (any df will do: the
    interval is the point). `decide` and `combine`'s callers share it."""
    with np.errstate(divide="ignore", invalid="ignore"):
        a, b = var_log / n, base_var_log / base_n
        se = np.sqrt(a + b)
        df = np.where(se > 0, (a + b) ** 2 / (a**2 / (n - 1) + b**2 / (base_n - 1)), np.inf)
    two = (np.asarray(n) >= 2) & (np.asarray(base_n) >= 2)
    return np.where(two, se, np.nan), np.where(two, df, np.nan)
