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

**Comparisons** with the baseline are the decision rule's (`fslab.stats.decision`): the
ratio of geometric means with Welch's interval on log values. `MIN_EFFECT_PCT` is the
smallest change it calls better or worse.

References: Welch, B. L. (1947), "The generalization of Student's problem when several
different population variances are involved", Biometrika 34; NIST/SEMATECH e-Handbook of
Statistical Methods, section 7.3.1 (two-sample t-test for equal means).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

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


MIN_EFFECT_PCT = 1.0
"""Differences of the mean below this share of the baseline are never called better/worse."""


Floats = npt.NDArray[np.float64]


def t_quantiles(confidence: float, n: npt.NDArray[np.int64]) -> Floats:
    """`t_quantile(confidence, n)` per element; NaN where n < 2."""
    df = np.where(n >= 2, n - 1, np.nan).astype(np.float64)
    out: Floats = _special.stdtrit(df, (1 + confidence) / 2)
    return out
