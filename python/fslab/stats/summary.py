"""Summaries of repeated measurements, and when to call two of them different.

Method
------
A study runs every point `repeat` times; each repetition gives one number per metric
(IOPS, bandwidth, mean latency, p99 latency). We treat those n numbers as a sample from
the distribution of results this configuration produces on this machine.

**Summary: mean ± half-width of the 95% confidence interval.** With n >= 2 the half-width
is `t(0.975, n-1) * s / sqrt(n)` (Student's t; `s` the sample standard deviation, ddof=1).
It means: if the repetitions are independent and roughly normal, intervals built this
way contain the true mean 95% of the time. The t quantile, not 1.96, is used because `s`
is itself estimated from few runs: with n = 3, t = 4.303, so three runs give a wide
interval, honestly. With n = 1 there is no spread to estimate and no interval is given.

**Difference: Welch's t-test, two-sided, alpha = 0.05**, as `scipy.stats.ttest_ind(...,
equal_var=False)` computes it (t from the means and the per-sample variances over n,
Welch-Satterthwaite degrees of freedom, p from Student's t distribution of scipy.special;
`tests/test_stats.py` checks it against scipy.stats). Welch's test, not Student's pooled
test, because two storage configurations have no reason to share a variance (a
copy-on-write file system is often noisier than an in-place one), and Welch stays correct
when variances and n differ while losing almost nothing when they are equal. The verdict is:

- `better` / `worse`: p < alpha; the direction comes from the metric (higher IOPS and
  bandwidth are better, lower latency is better).
- `same`: p >= alpha: *no significant difference*. It does not prove the two are equal;
  it says these runs cannot tell them apart (more repetitions narrow that down).
- `untested`: either side has n < 2, so there is no variance to test against. The delta
  of the means is still shown, without a verdict.

Two corner cases the t-test leaves undefined: when both samples have zero variance
(quantized values such as histogram percentiles can repeat exactly), equal means are
`same` (p = 1) and different means are a difference (p = 0), which is the limit of the
test as the variances go to zero. Every cell is tested on its own at alpha = 0.05, with no
correction for multiple comparisons: in a table of 40 cells about 2 can be marked by
chance alone when nothing differs. Treat a lone mark in a large table with that in mind.

References: Welch, B. L. (1947), "The generalization of Student's problem when several
different population variances are involved", Biometrika 34; NIST/SEMATECH e-Handbook of
Statistical Methods, section 7.3.1 (two-sample t-test for equal means).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
import numpy.typing as npt
from scipy import special as _special  # type: ignore[import-untyped]

CONFIDENCE = 0.95
"""Level of the confidence intervals."""
ALPHA = 0.05
"""Significance level of the difference tests."""


@dataclass(frozen=True)
class Summary:
    """n repetitions of one metric: mean, sample standard deviation and the half-width of
    the confidence interval (None for both when n < 2)."""

    n: int
    mean: float
    stdev: float | None
    ci_half: float | None
    confidence: float = CONFIDENCE

    @property
    def ci(self) -> tuple[float, float] | None:
        """The confidence interval `(low, high)`, or None when n < 2."""
        if self.ci_half is None:
            return None
        return (self.mean - self.ci_half, self.mean + self.ci_half)

    @property
    def cv(self) -> float | None:
        """Coefficient of variation (stdev / mean), a noise measure; None when undefined."""
        if self.stdev is None or self.mean == 0:
            return None
        return self.stdev / abs(self.mean)


def t_quantile(confidence: float, n: int) -> float:
    """Two-sided Student's t quantile for n samples: `t.ppf((1 + confidence) / 2, n - 1)`
    (4.303 for 95% and n = 3)."""
    return float(_special.stdtrit(n - 1, (1 + confidence) / 2))


def summarize(samples: Sequence[float], confidence: float = CONFIDENCE) -> Summary:
    """Mean, standard deviation and CI half-width `t * s / sqrt(n)` of `samples`; e.g.
    [10, 12, 14]: mean 12, s = 2, t(0.975, 2) = 4.303, half-width 4.303 * 2 / sqrt(3) = 4.969.
    """
    n = len(samples)
    if n == 0:
        raise ValueError("no samples to summarize")
    mean = statistics.fmean(samples)
    if n < 2:
        return Summary(n=n, mean=mean, stdev=None, ci_half=None, confidence=confidence)
    s = statistics.stdev(samples)
    half = t_quantile(confidence, n) * s / math.sqrt(n)
    return Summary(n=n, mean=mean, stdev=s, ci_half=half, confidence=confidence)


class Verdict(StrEnum):
    """What a comparison with the baseline says; see the module docstring."""

    BETTER = "better"
    WORSE = "worse"
    SAME = "same"
    """No significant difference."""
    UNTESTED = "untested"
    """n < 2 on either side: no test possible."""
    DIFFERENT = "different"
    """Significant, for a metric with no better direction (a peak IOPS, a read:write ratio)."""

    @property
    def label(self) -> str:
        """The verdict for people."""
        return {
            Verdict.BETTER: "better",
            Verdict.WORSE: "worse",
            Verdict.SAME: "no significant difference",
            Verdict.UNTESTED: "n=1: not tested",
            Verdict.DIFFERENT: "different",
        }[self]


@dataclass(frozen=True)
class Difference:
    """One sample against the baseline's.

    `delta_pct` is the change of the mean in percent of the baseline's mean (None when the
    baseline's mean is 0); `p_value` is Welch's two-sided p (None when untested)."""

    delta_pct: float | None
    p_value: float | None
    verdict: Verdict
    alpha: float = ALPHA

    @property
    def significant(self) -> bool:
        return self.verdict in (Verdict.BETTER, Verdict.WORSE, Verdict.DIFFERENT)


def welch_p_value(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided p of Welch's t-test of `a` against `b` (each n >= 2).

    When both variances are zero the test is undefined: equal means give 1.0, different
    means 0.0 (the limit as the variances go to zero)."""
    if len(a) < 2 or len(b) < 2:
        raise ValueError("Welch's t-test needs at least 2 samples on each side")
    va, vb = statistics.variance(a), statistics.variance(b)
    ma, mb = statistics.fmean(a), statistics.fmean(b)
    if va == 0 and vb == 0:
        return 1.0 if ma == mb else 0.0
    sa, sb = va / len(a), vb / len(b)
    t = (ma - mb) / math.sqrt(sa + sb)
    df = (sa + sb) ** 2 / (sa**2 / (len(a) - 1) + sb**2 / (len(b) - 1))
    p = float(2 * _special.stdtr(df, -abs(t)))
    return 1.0 if math.isnan(p) else p


MIN_EFFECT_PCT = 1.0
"""Differences of the mean below this share of the baseline are never called better/worse."""


def compare_samples(
    baseline: Sequence[float],
    other: Sequence[float],
    *,
    higher_is_better: bool | None,
    alpha: float = ALPHA,
    min_abs: float = 0.0,
) -> Difference:
    """`other` against `baseline`: % delta of the means and a verdict (Welch, two-sided).

    `higher_is_better` is True for IOPS and bandwidth, False for latencies, None for
    metrics with no better direction (a significant difference is then `different`). A
    verdict of `same` means the runs cannot tell the two apart at `alpha`, not that they
    are equal.

    A difference smaller than `MIN_EFFECT_PCT` of the baseline, or than `min_abs` in the
    metric's own unit, is `same` however small its p-value: with (nearly) no spread, as
    device byte counts often have, Welch's test calls 0.1% (or 0.6 MiB read by a delete)
    significant, which is true and useless for choosing a configuration.
    """
    if not baseline or not other:
        raise ValueError("both samples need at least one value")
    base_mean = statistics.fmean(baseline)
    other_mean = statistics.fmean(other)
    delta = (other_mean - base_mean) / abs(base_mean) * 100 if base_mean != 0 else None
    if len(baseline) < 2 or len(other) < 2:
        return Difference(delta_pct=delta, p_value=None, verdict=Verdict.UNTESTED, alpha=alpha)
    p = welch_p_value(other, baseline)
    too_small = (delta is not None and abs(delta) < MIN_EFFECT_PCT) or abs(
        other_mean - base_mean
    ) < min_abs
    if p >= alpha or other_mean == base_mean or too_small:
        verdict = Verdict.SAME
    elif higher_is_better is None:
        verdict = Verdict.DIFFERENT
    elif (other_mean > base_mean) == higher_is_better:
        verdict = Verdict.BETTER
    else:
        verdict = Verdict.WORSE
    return Difference(delta_pct=delta, p_value=p, verdict=verdict, alpha=alpha)


# ------------------------------------------------------------------------ many at once
# The same summaries and tests over arrays of cells (one element per cell), for `compare`:
# a study of 100,000 runs has about a million cells, too many for a scipy call each.
# `tests/test_stats.py` checks them against the functions above.

Floats = npt.NDArray[np.float64]
VERDICT_CODES: tuple[Verdict, ...] = (
    Verdict.SAME, Verdict.BETTER, Verdict.WORSE, Verdict.DIFFERENT, Verdict.UNTESTED
)  # fmt: skip
"""`compare_many`'s verdict codes: the verdict is `VERDICT_CODES[code]`; -1 is none."""


def t_quantiles(confidence: float, n: npt.NDArray[np.int64]) -> Floats:
    """`t_quantile(confidence, n)` per element; NaN where n < 2."""
    df = np.where(n >= 2, n - 1, np.nan).astype(np.float64)
    out: Floats = _special.stdtrit(df, (1 + confidence) / 2)
    return out


def compare_many(
    base_n: npt.NDArray[np.int64],
    base_mean: Floats,
    base_var: Floats,
    n: npt.NDArray[np.int64],
    mean: Floats,
    var: Floats,
    *,
    higher_is_better: npt.NDArray[np.int8],
    min_abs: Floats,
    alpha: float = ALPHA,
) -> tuple[Floats, Floats, npt.NDArray[np.int8]]:
    """`compare_samples` per element, from each side's n, mean and variance (ddof=1):
    (delta_pct, NaN where the baseline's mean is 0; p-value, NaN where untested; verdict
    code, -1 where either side has no sample). `higher_is_better` is 1, 0, or -1 for a
    metric with no better direction."""
    with np.errstate(divide="ignore", invalid="ignore"):
        delta = np.where(base_mean != 0, (mean - base_mean) / np.abs(base_mean) * 100, np.nan)
        tested = (base_n >= 2) & (n >= 2)
        a, b = var / n, base_var / base_n
        se2 = a + b
        both_flat = tested & (var == 0) & (base_var == 0)
        tstat = (mean - base_mean) / np.sqrt(se2)
        df = se2**2 / (a**2 / (n - 1) + b**2 / (base_n - 1))
        p = 2 * _special.stdtr(df, -np.abs(tstat))
    p = np.where(both_flat, np.where(mean == base_mean, 1.0, 0.0), p)
    p = np.where(tested, np.where(np.isnan(p), 1.0, p), np.nan)
    too_small = (np.abs(np.nan_to_num(delta, nan=np.inf)) < MIN_EFFECT_PCT) | (
        np.abs(mean - base_mean) < min_abs
    )
    same = (p >= alpha) | (mean == base_mean) | too_small
    up = mean > base_mean
    directed = np.where(up == (higher_is_better == 1), 1, 2)
    verdict = np.where(same, 0, np.where(higher_is_better < 0, 3, directed))
    verdict = np.where(tested, verdict, 4)
    verdict = np.where((base_n > 0) & (n > 0), verdict, -1).astype(np.int8)
    return delta, p, verdict
