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

**Difference: Welch's t-test, two-sided, alpha = 0.05.** `scipy.stats.ttest_ind(...,
equal_var=False)`. Welch's test, not Student's pooled test, because two storage
configurations have no reason to share a variance (a copy-on-write file system is often
noisier than an in-place one), and Welch stays correct when variances and n differ while
losing almost nothing when they are equal. The verdict is:

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
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from scipy import stats as _scipy_stats  # type: ignore[import-untyped]

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
    return float(_scipy_stats.t.ppf((1 + confidence) / 2, n - 1))


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
    if statistics.variance(a) == 0 and statistics.variance(b) == 0:
        return 1.0 if statistics.fmean(a) == statistics.fmean(b) else 0.0
    with warnings.catch_warnings():
        # Near-constant samples make scipy warn about precision; the p it returns is fine.
        warnings.simplefilter("ignore", RuntimeWarning)
        result = _scipy_stats.ttest_ind(a, b, equal_var=False)
    p = float(result.pvalue)
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
