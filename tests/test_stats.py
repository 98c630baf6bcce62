"""The statistics fslab computes itself agree with scipy.stats, case by case: the t
quantile, Welch's test, the trend's regression, the futility rule's chi-square floor,
and the array form compare uses; and reading a comparison does not import scipy.stats."""

from __future__ import annotations

import random
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats as scipy_stats  # type: ignore[import-untyped]

from fslab.stats.decision import combine, log_error
from fslab.stats.sequential import FUTILITY_CONFIDENCE, spread_floor
from fslab.stats.summary import t_quantile, t_quantiles
from fslab.stats.warnings import trend


@pytest.mark.parametrize("n", [2, 3, 5, 10, 100])
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_the_t_quantile_is_scipys(n: int, confidence: float) -> None:
    want = scipy_stats.t.ppf((1 + confidence) / 2, n - 1)
    assert t_quantile(confidence, n) == pytest.approx(want, rel=1e-12)
    assert t_quantiles(confidence, np.array([n]))[0] == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("df", [1, 2, 3, 4, 9, 30.5, 200])
def test_the_futility_floor_is_chi_squares_quantile(df: float) -> None:
    want = df / scipy_stats.chi2.ppf(FUTILITY_CONFIDENCE, df)
    assert float(spread_floor(df)) == pytest.approx(want, rel=1e-12)


def test_reading_a_comparison_does_not_import_scipy_stats() -> None:
    """scipy.stats takes 0.7 s to import here, more than a tenth of `fslab compare` at
    100,000 runs: the commands that read results use scipy.special alone."""
    readers = ("fslab.cli.compare", "fslab.cli.report", "fslab.cli.history", "fslab.cli.site",
               "fslab.stats.sequential", "fslab.report.html")  # fmt: skip
    code = f"import sys; import {', '.join(readers)}; print(sorted(m for m in sys.modules"
    code += " if m.startswith('scipy.stats')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", done.stdout


def test_t_quantiles_of_fewer_than_two_samples_are_nan() -> None:
    assert np.isnan(t_quantiles(0.95, np.array([0, 1]))).all()


def _samples(rng: random.Random) -> list[float]:
    n = rng.choice([2, 3, 5, 8])
    return [rng.gauss(rng.choice([100.0, 104.0]), rng.choice([0.5, 5.0, 40.0])) for _ in range(n)]


def test_combined_ratio_of_many_points() -> None:
    """The geometric mean of points' ratios, its interval from the points' standard errors
    (Welch-Satterthwaite df for their sum): one point gives that point's own interval, as
    scipy's Welch interval of the log samples gives it; more identical points narrow it."""
    rng = np.random.default_rng(3)
    a, b = rng.lognormal(np.log(100), 0.05, 4), rng.lognormal(np.log(80), 0.08, 3)
    la, lb = np.log(a), np.log(b)
    se, df = log_error(np.array([4]), np.array([la.var(ddof=1)]),
                       np.array([3]), np.array([lb.var(ddof=1)]))  # fmt: skip
    d = np.array([lb.mean() - la.mean()])
    ratio, low, high = combine(d, se, df)  # type: ignore[misc]
    want = scipy_stats.ttest_ind(lb, la, equal_var=False).confidence_interval(0.95)
    assert (low, high) == (pytest.approx(np.exp(want.low)), pytest.approx(np.exp(want.high)))
    assert ratio == pytest.approx(np.exp(d[0]))
    ratio4, low4, high4 = combine(np.repeat(d, 4), np.repeat(se, 4), np.repeat(df, 4))  # type: ignore[misc]
    assert ratio4 == pytest.approx(ratio) and low < low4 < ratio4 < high4 < high
    assert combine(np.zeros(0), np.zeros(0), np.zeros(0)) is None
    single = combine(d, np.array([np.nan]), np.array([np.nan]))
    assert single is not None and np.isnan(single[1])


def test_the_trend_is_scipys_linear_regression() -> None:
    rng = random.Random(3)
    for _ in range(100):
        series = [
            (float(t), 1000 + rng.choice([0, 5, 50]) * t + rng.gauss(0, 30)) for t in range(9)
        ]
        fit = scipy_stats.linregress([t for t, _ in series], [y for _, y in series])
        got = trend(series)
        assert got is not None
        mean = sum(y for _, y in series) / len(series)
        assert got[0] == pytest.approx(fit.slope * 8 / mean, rel=1e-9)
        assert got[1] == pytest.approx(fit.pvalue, rel=1e-7, abs=1e-15)
