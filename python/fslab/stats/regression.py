"""Regressions in a series of passes: is a point's latest pass out of line with the
passes before it?

Method
------
A study run again and again (nightly, per kernel) gives each point and operation one
value per pass: the geometric mean of the pass's counted runs (`fslab.report.history`).
Each pass is checked against the `WINDOW` passes before it (at least `MIN_REFERENCE`) by
a **prediction interval on logs**: with `m` and `s` the mean and the standard deviation
of the `k` reference passes' log values, the next pass of an unchanged machine lies
within `m ± t(1 - alpha/2, k - 1) · s · sqrt(1 + 1/k)` in `1 - alpha` of cases, if passes
vary as they did before (independently, normal on logs). A pass outside it, and at least
`MIN_CHANGE` away from the reference's geometric mean, is a **regression** (in the
metric's worse direction) or an **improvement**; else it is **in line**. Passes after a
change of the engine's major.minor version are not checked against passes before it
(its numbers are not comparable: `fslab.store.merge`).

Why this rule. fsperf flags a run outside the mean ± 1.96 standard deviations of its last
7 to 28 days; that is this rule with a normal quantile, which forgets that a standard
deviation from a few passes is itself uncertain: against 5 reference passes it flags 15%
of an unchanged machine's passes, not 5% (9% against 10). asv finds steps by fitting a
piecewise-constant model to the whole history, which places a slow change on the right
commit but needs passes after the step to see it; a nightly check must speak the
morning after. The rolling interval speaks at once, and its false-alarm rate is `alpha`
per check by construction where its assumptions hold; `MIN_CHANGE` keeps a very steady
series from flagging a change too small to matter (the equivalence margin's 5%: fslab
calls a smaller difference "the same"). How often it cries wolf on this machine's real
passes, where the assumptions hold only roughly, is measured in docs/statistics.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
from scipy import special as _special  # type: ignore[import-untyped]

WINDOW = 10
"""Reference passes a pass is checked against: the ones just before it, at most this many."""
MIN_REFERENCE = 4
"""Fewer reference passes than this check nothing (t(0.995, 2) = 9.9: too wide to see
anything but a collapse)."""
ALPHA = 0.01
"""A pass's false-alarm rate (two-sided) where passes vary as the rule assumes: 0.5% of
an unchanged series' passes called regressions. `fslab history` spends it on two checks,
`alpha / 2` each (`fslab.report.history`). `--alpha` trades false alarms against the
changes it can see."""
MIN_CHANGE = 0.05
"""A change smaller than this share of the reference is not flagged, however steady."""


class Trend(StrEnum):
    """A pass's verdict against the passes before it."""

    REGRESSION = "regression"
    IMPROVEMENT = "improvement"
    IN_LINE = "in line"
    SHORT = "short"
    """Fewer than `MIN_REFERENCE` comparable passes before it."""
    NONE = "none"
    """Not measured in this pass, or a value that is not positive."""


@dataclass(frozen=True)
class Check:
    """One pass against the passes before it."""

    trend: Trend
    reference: int
    """How many passes it was checked against."""
    change: float | None = None
    """Its value over the reference passes' geometric mean."""
    low: float | None = None
    high: float | None = None
    """The prediction interval, as ratios to the reference's geometric mean."""


def check(
    values: Sequence[float | None],
    higher_is_better: bool | None,
    *,
    comparable: Sequence[bool] | None = None,
    window: int = WINDOW,
    alpha: float = ALPHA,
    min_change: float = MIN_CHANGE,
) -> tuple[Check, ...]:
    """Every pass of one series (its values in pass order, None where the pass did not
    measure it) against the passes before it. `comparable[i]` False starts a new era at
    pass i (the engine changed): passes before it are not its reference. A metric
    without a better direction moves `up`/`down` but never regresses: `higher_is_better`
    None reports IN_LINE or the change only."""
    logs = [math.log(v) if v is not None and v > 0 else None for v in values]
    era_start = 0
    out: list[Check] = []
    for i, x in enumerate(logs):
        if comparable is not None and i > 0 and not comparable[i]:
            era_start = i
        if x is None:
            out.append(Check(Trend.NONE, 0))
            continue
        ref = [v for v in logs[era_start:i] if v is not None][-window:]
        k = len(ref)
        if k < MIN_REFERENCE:
            out.append(Check(Trend.SHORT, k))
            continue
        m, s = float(np.mean(ref)), float(np.std(ref, ddof=1))
        half = float(_special.stdtrit(k - 1, 1 - alpha / 2)) * s * math.sqrt(1 + 1 / k)
        change = math.exp(x - m)
        low, high = math.exp(-half), math.exp(half)
        outside = (change < low or change > high) and abs(change - 1) >= min_change
        if not outside or higher_is_better is None:
            trend = Trend.IN_LINE
        else:
            trend = Trend.IMPROVEMENT if (change > 1) == higher_is_better else Trend.REGRESSION
        out.append(Check(trend, k, change, low, high))
    return tuple(out)
