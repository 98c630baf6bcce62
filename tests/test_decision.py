"""The decision rule (`fslab.stats.decision`) on synthetic data whose answer is known."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest
from scipy import stats  # type: ignore[import-untyped]

from fslab.stats.decision import MAX_MORE_REPS, Decision, decide, log_stats, margin_bounds


def _decide(
    base: Sequence[float],
    other: Sequence[float],
    *,
    higher: bool = True,
    judged: bool = True,
    suppressed: bool = False,
    min_abs: float = 0.0,
) -> tuple[float, float, float, Decision, int]:
    nb, mb, vb = log_stats(base)
    nt, mt, vt = log_stats(other)
    one = np.ones(1)
    ratio, low, high, verdict, more = decide(
        nb * one.astype(np.int64), mb * one, vb * one, nt * one.astype(np.int64), mt * one,
        vt * one, higher_is_better=np.array([1 if higher else 0], dtype=np.int8),
        min_abs=min_abs * one, base_mean=float(np.mean(base)) * one,
        judged=np.array([judged]), suppressed=np.array([suppressed]),
    )  # fmt: skip
    return float(ratio[0]), float(low[0]), float(high[0]), Decision(verdict[0]), int(more[0])


def test_the_ratio_and_its_interval_are_welchs_on_logs() -> None:
    base, other = [100.0, 104.0, 97.0, 101.0], [80.0, 91.0, 86.0]
    ratio, low, high, _, _ = _decide(base, other)
    ref = stats.ttest_ind(np.log(other), np.log(base), equal_var=False)
    lo, hi = ref.confidence_interval(0.95)
    assert ratio == pytest.approx(math.exp(np.mean(np.log(other)) - np.mean(np.log(base))))
    assert (low, high) == (pytest.approx(math.exp(lo)), pytest.approx(math.exp(hi)))


def test_a_clear_loss_is_worse_and_a_halved_latency_better() -> None:
    ratio, _, high, verdict, more = _decide([100, 101, 99], [50, 51, 49])
    assert verdict is Decision.WORSE and more == -1
    assert ratio == pytest.approx(0.5, rel=0.01) and high < 1
    _, _, _, verdict, _ = _decide([100, 101, 99], [50, 51, 49], higher=False)
    assert verdict is Decision.BETTER


def test_identical_samples_are_equivalent() -> None:
    ratio, low, high, verdict, _ = _decide([7.0, 7.0, 7.0], [7.0, 7.0, 7.0])
    assert (ratio, low, high, verdict) == (1.0, 1.0, 1.0, Decision.EQUIVALENT)


def test_close_and_tight_is_equivalent_close_and_loose_is_inconclusive() -> None:
    tight = _decide([100, 100.5, 99.5, 100.2], [101, 101.4, 100.6, 100.9])
    assert tight[3] is Decision.EQUIVALENT and 1 < tight[0] < 1.05
    loose = _decide([100, 110, 90], [101, 115, 88])
    assert loose[3] is Decision.INCONCLUSIVE and loose[1] < 0.95 and loose[2] > 1.05


def test_one_run_gives_no_verdict_at_all() -> None:
    ratio, low, high, verdict, more = _decide([100.0], [50.0, 51.0])
    assert verdict is Decision.NONE and more == -1
    assert ratio == pytest.approx(50.5 / 100, rel=0.01) and math.isnan(low) and math.isnan(high)


def test_work_metrics_and_flagged_cells_get_no_verdict() -> None:
    assert _decide([100, 101, 99], [50, 51, 49], judged=False)[3] is Decision.NONE
    assert _decide([100, 101, 99], [50, 51, 49], suppressed=True)[3] is Decision.NONE


def test_a_change_under_the_minimum_effect_is_no_win() -> None:
    # 0.5% apart with no spread to speak of: excludes 1, but under 1%: equivalent.
    assert _decide([1000, 1000.1, 999.9], [1005, 1005.1, 1004.9])[3] is Decision.EQUIVALENT
    # 3% apart, but under the metric's own minimum (100 units on a mean of 1000).
    verdict = _decide([1000, 1001, 999], [1030, 1031, 1029], min_abs=100.0)[3]
    assert verdict is Decision.EQUIVALENT


@pytest.mark.parametrize(
    ("base", "other"),
    [([100, 120, 85], [80, 95, 70]), ([100, 103, 98], [101, 106, 99]), ([10, 14, 8, 11], [9, 7])],
)
def test_the_more_repetitions_it_asks_for_decide_when_the_spread_holds(
    base: list[float], other: list[float]
) -> None:
    """Runs with the same mean and spread (on logs) as those seen, as many as it asked
    for, decide the cell."""
    *_, verdict, more = _decide(base, other)
    assert verdict is Decision.INCONCLUSIVE and 0 < more <= MAX_MORE_REPS
    n = max(len(base), len(other)) + more

    def like(sample: list[float]) -> list[float]:
        logs = np.log(sample)
        z = np.linspace(-1.0, 1.0, n)
        z = (z - z.mean()) / z.std(ddof=1)
        return list(np.exp(logs.mean() + z * logs.std(ddof=1)))

    assert _decide(like(base), like(other))[3] is not Decision.INCONCLUSIVE


def test_log_stats_of_a_non_positive_sample_has_no_mean() -> None:
    n, mean, var = log_stats([1.0, 0.0])
    assert n == 2 and math.isnan(mean) and math.isnan(var)
    assert _decide([1.0, 0.0], [1.0, 2.0])[3] is Decision.NONE


def test_equivalence_reads_the_same_either_way_round() -> None:
    # xfs within 5% of ext4 is ext4 within 5% of xfs: the margin is as far from 1 on logs
    # on both sides (0.95x to 1/0.95x). `1 ± 5%` was not, and a demo called xfs
    # equivalent to ext4 while its grid, comparing the other way, left them undecided.
    rng = np.random.default_rng(7)
    disagree, near_edge = 0, 0
    for _ in range(3000):
        a = 100 * np.exp(rng.normal(0, 0.02, 4))
        b = 100 * rng.uniform(0.95, 1.05) * np.exp(rng.normal(0, 0.02, 4))
        ab, ba = _decide(list(a), list(b)), _decide(list(b), list(a))
        disagree += (ab[3] is Decision.EQUIVALENT) != (ba[3] is Decision.EQUIVALENT)
        near_edge += ab[3] is Decision.EQUIVALENT and (ab[1] < 0.952 or ab[2] > 1.05)
    assert disagree == 0
    assert margin_bounds(0.05) == (0.95, pytest.approx(1 / 0.95))
    assert near_edge > 0  # the sweep reaches the edges the old margin got wrong
