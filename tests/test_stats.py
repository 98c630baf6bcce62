"""The statistics fslab computes itself agree with scipy.stats, case by case: the t
quantile, Welch's test, the trend's regression, and the array form compare uses."""

from __future__ import annotations

import random

import numpy as np
import pytest
from scipy import stats as scipy_stats  # type: ignore[import-untyped]

from fslab.stats.summary import (
    VERDICT_CODES,
    compare_many,
    compare_samples,
    t_quantile,
    t_quantiles,
    welch_p_value,
)
from fslab.stats.warnings import trend


@pytest.mark.parametrize("n", [2, 3, 5, 10, 100])
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_the_t_quantile_is_scipys(n: int, confidence: float) -> None:
    want = scipy_stats.t.ppf((1 + confidence) / 2, n - 1)
    assert t_quantile(confidence, n) == pytest.approx(want, rel=1e-12)
    assert t_quantiles(confidence, np.array([n]))[0] == pytest.approx(want, rel=1e-12)


def test_t_quantiles_of_fewer_than_two_samples_are_nan() -> None:
    assert np.isnan(t_quantiles(0.95, np.array([0, 1]))).all()


def _samples(rng: random.Random) -> list[float]:
    n = rng.choice([2, 3, 5, 8])
    return [rng.gauss(rng.choice([100.0, 104.0]), rng.choice([0.5, 5.0, 40.0])) for _ in range(n)]


def test_welchs_p_value_is_scipys() -> None:
    rng = random.Random(7)
    for _ in range(300):
        a, b = _samples(rng), _samples(rng)
        want = scipy_stats.ttest_ind(a, b, equal_var=False).pvalue
        assert welch_p_value(a, b) == pytest.approx(want, rel=1e-9, abs=1e-15)


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


def test_compare_many_gives_compare_samples_verdicts_cell_by_cell() -> None:
    rng = random.Random(11)
    for _ in range(2000):
        base = [round(x, rng.choice([0, 2])) for x in _samples(rng)][: rng.choice([1, 2, 3, 5])]
        other = [round(x, rng.choice([0, 2])) for x in _samples(rng)][: rng.choice([1, 2, 3, 5])]
        if rng.random() < 0.1:
            base = other = [100.0, 100.0, 100.0]
        direction = rng.choice([True, False, None])
        min_abs = rng.choice([0.0, 0.5, 5.0])
        want = compare_samples(base, other, higher_is_better=direction, min_abs=min_abs)

        def arr(x: list[float]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            var = np.var(x, ddof=1) if len(x) > 1 else np.nan
            return np.array([len(x)]), np.array([np.mean(x)]), np.array([var])

        (bn, bm, bv), (on, om, ov) = arr(base), arr(other)
        code = {True: 1, False: 0, None: -1}[direction]
        delta, p, verdict = compare_many(
            bn, bm, bv, on, om, ov,
            higher_is_better=np.array([code], dtype=np.int8), min_abs=np.array([min_abs]),
        )  # fmt: skip
        assert VERDICT_CODES[verdict[0]] is want.verdict, (base, other, direction, min_abs)
        if want.p_value is None:
            assert np.isnan(p[0])
        else:
            assert p[0] == pytest.approx(want.p_value, rel=1e-9, abs=1e-15)
        assert delta[0] == pytest.approx(want.delta_pct, rel=1e-9)
