"""Adaptive repetition: repeat a point until its comparisons are decided, not N times.

Method
------
A study with `repeat = { min = 3, max = 10 }` runs in **rounds**: every point once per
round, in a fresh random order (seeded: `Plan.round_order`), so slow drift of the machine
spreads over all targets. After round `min` and every round after it, fslab **looks**: for
each group of points (one workload, one value per parameter, across the targets) it
compares every target with its baseline by the decision rule (`fslab.stats.decision`) on
the group's headline metric (`fslab.compare.is_headline`). A group whose comparisons are
all decided, better, worse or equivalent, is **settled** and runs no more; the others run
another round, until `max`.

Looking after every round and stopping at the first decision inflates the chance of
calling equal targets different: with a 95% interval at each of 8 looks, 17% of studies
of identical targets end "different" (20,000 simulated studies, in the research that
preceded this module). So each look uses one stricter level, **calibrated by simulation**
so that over all the looks planned, one after every round from `min` to `max`, identical
targets are called different in at most 5% of studies (Pocock's idea: the same boundary
at every look, set for the whole sequence; Pocock 1977, "Group sequential methods in the
design and analysis of clinical trials", Biometrika 64). `look_level` simulates 100,000
studies of identical targets, computes each look's p-value exactly as `decide` would (a
blocked design: Student's t on the per-round log ratios, `n - 1` df; an independent one:
Welch's t with the two sides' spreads 6x apart, the ratio at which Welch's test errs most
at a few runs) and takes the level at which 4.75% of them reject at some look (5% less a
margin for the simulation's own error, 0.07 points). Its looks are strongly correlated
(each adds one run to the last), so the level is well above Bonferroni's even split,
`alpha / L`, which fslab used before and which assumed nothing about them: 1.1% instead
of 0.625% per look for 3 to 10 blocked rounds, an interval 25% narrower at 3 rounds and
10% at 10.
tests/test_sequential.py checks with `decide` itself that identical targets are called
different in at most 5% of studies, and `fslab compare` judges an adaptive study's runs
at the level its looks used (stored with each look), so the report says what the
stopping rule saw.

**Each comparison stops on its own.** A target whose comparisons with its baseline are
all decided runs no more, while a near-equal one in the same group goes on; the baseline
runs as long as one of its targets does. A comparison is also settled when more runs
cannot give it a verdict: its runs are flagged (served from the cache, unsteady) or its
metric has none.

**A family decides for its points.** The summary answers per family (a workload's
points with one `rw`, across the swept sizes and depths: `fslab.report.findings`), by the
geometric mean of the points' ratios with its pooled interval. Where that interval is
decided at the look's level (better, worse, or equivalent by two one-sided tests), the
family's points stop though some are undecided alone: more runs would sharpen a cell of
the detail tables, not the answer. Judging the pooled interval at every look as well
adds looks at a second statistic; simulated (tests/test_sequential.py: two points, 3 to 6
blocked rounds, 2,000 studies a case), a family of identical targets is called different
in at most 3.7% of studies at 2-10% noise, and targets off by the margin are called
equivalent in at most 2.5%; equal targets at 3% noise take 4.3 runs a point instead of
5.3, and their family is answered as often (77% against 74%). The cells of the detail
tables are decided less often: that is the price.

**A family too noisy to decide stops its points** (`family_futile`): where the family's
pooled interval is undecided and `max` rounds would likely not decide it, judged as
futility below but with the points' spreads pooled (more degrees of freedom, so a
tighter bound on the noise), its points stop unless a point's own runs would likely
decide it by `max`. It calls nothing different; simulated, it cost no family verdict and
at most 3 cells in 1,000 (docs/statistics.md).

**Futility.** A comparison that `max` runs would not decide at the noise seen stops early
instead of running to the cap: inconclusive, with the runs per side that would likely
decide it (`fslab.stats.decision`) beyond `max` even if the true spread were as low as
the runs plausibly allow (the 99% lower confidence bound of a variance with the
comparison's degrees of freedom: `2 (n - 1)` for independent sides, 0.30 of the spread
seen at 3 runs, 0.52 at 10; `n - 1` for a blocked design's per-round ratios, 0.22 at 3
rounds, 0.42 at 10; a 90% bound gave up 9 in 100 of the verdicts a 10% difference at a 5% CV gets
by the cap, bench/stopping-rule). Stopping without a verdict calls nothing different,
so it cannot raise the rate of false differences; tests/test_sequential.py measures what
it costs in verdicts.

A run other work disturbed is not counted (`fslab.compare`): the point simply has fewer
runs, and runs again. A study-level `budget` stops adding rounds once the runs took that
long; the points still open stay inconclusive, and say so. Every look is stored (`look`
table, each comparison's state) so the stopping path can be audited.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np
import numpy.typing as npt
from scipy import special as _special  # type: ignore[import-untyped]

from fslab.compare import Comparison, Group
from fslab.stats.decision import (
    MAX_MORE_REPS,
    MIN_PAIRS,
    Decision,
    Floats,
    Ints,
    Judgement,
    NoVerdict,
)
from fslab.stats.summary import ALPHA, MIN_EFFECT_PCT

SETTLED = frozenset({Decision.BETTER, Decision.WORSE, Decision.EQUIVALENT})
"""The verdicts that end a point's repetitions."""
FINAL = frozenset({NoVerdict.WORK, NoVerdict.NO_DIRECTION, NoVerdict.NOT_POSITIVE,
                   NoVerdict.FLAGGED, NoVerdict.BASELINE_FLAGGED})  # fmt: skip
"""Reasons for no verdict that more runs do not change."""


CALIBRATION_STUDIES = 100_000
"""Simulated studies of identical targets behind each look level."""
CALIBRATION_SHARE = 0.95
"""The share of `alpha` the level is set to spend: the rest covers the simulation's own
error (0.07 points of a 5% rate at 100,000 studies) and Welch's spread ratios other
than the one simulated."""
WELCH_SPREAD_RATIO = 6.0
"""The independent design's sides' spreads (standard deviations) in its calibration:
Welch's test calls identical targets different most often near this ratio at 3 to 10
runs (1x: a level of 1.6% per look for 3 to 10; 6x: 0.92%; 12x: 0.98%)."""


@functools.lru_cache(maxsize=64)
def look_level(repeat_min: int, repeat_max: int, alpha: float = ALPHA, *, paired: bool) -> float:
    """The level of each look, one after every round from `repeat_min` to `repeat_max`:
    the one at which identical targets are called different at some look in
    `CALIBRATION_SHARE` x `alpha` of simulated studies (see the module), rounded down to
    two significant digits, never above `alpha`. `paired`: a blocked design's per-round
    ratios, else independent sides."""
    if repeat_max <= repeat_min:
        return alpha
    rng = np.random.default_rng(20261128)
    # Running sums, one run per side drawn per look: memory stays one column at 100 runs.
    sides = 1 if paired else 2
    spread = np.array([1.0, WELCH_SPREAD_RATIO])[:sides, None]
    total, squares = np.zeros((sides, CALIBRATION_STUDIES)), np.zeros((sides, CALIBRATION_STUDIES))
    lowest = np.ones(CALIBRATION_STUDIES)
    for n in range(1, repeat_max + 1):
        x = rng.standard_normal((sides, CALIBRATION_STUDIES)) * spread
        total += x
        squares += x * x
        if n < max(repeat_min, 2):
            continue
        mean = total / n
        var = np.maximum(squares - n * mean * mean, 0.0) / (n - 1) / n  # of each mean
        if paired:
            t, df = mean[0] / np.sqrt(var[0]), np.full(1, n - 1.0)
        else:
            t = (mean[0] - mean[1]) / np.sqrt(var.sum(0))
            df = var.sum(0) ** 2 / ((var**2).sum(0) / (n - 1))
        np.minimum(lowest, 2 * _special.stdtr(df, -np.abs(t)), out=lowest)
    level = float(np.quantile(lowest, CALIBRATION_SHARE * alpha))
    # Down to two digits: a stricter level by a hair, and an interval people can read
    # (98.9%, not 98.867%), the same on every machine whatever its last bits.
    unit = 10.0 ** (math.floor(math.log10(level)) - 1)
    return min(alpha, round(math.floor(level / unit) * unit, 12))


FUTILITY_CONFIDENCE = 0.99
"""How sure a futile stop is that the spread is not lower than it takes to decide by
`max`: the one-sided level of the variance's lower bound."""


class State(StrEnum):
    """Where a comparison, a target or a group stands after a look."""

    OPEN = "open"
    """Undecided, and more runs may decide it: another round."""
    DECIDED = "decided"
    """Better, worse or equivalent (a target or group: every comparison is)."""
    POOLED = "pooled"
    """Undecided alone, but its family's pooled interval is decided (`look`): the
    question it is asked for is answered. A target or group counts it as decided."""
    BOUNDED = "bounded"
    """Undecided, `max` runs would likely not decide it (or it is at `max`), but its
    interval lies within the study's `repeat.bound` either way of the baseline: by how
    much is answered, if not which way. Counts as decided."""
    UNDECIDABLE = "undecidable"
    """No verdict however many runs (flagged runs); the rest decided."""
    FUTILE = "futile"
    """Undecided, and `max` runs would not decide it at the noise seen; the rest
    decided or undecidable."""
    ALONE = "alone"
    """No comparison at all (one target): the `min` rounds are all it needs."""


def settled(j: Judgement | None) -> bool | None:
    """Whether a comparison needs no more runs: True when decided, None when no run can
    decide it, False when more runs may."""
    if j is None:
        return False
    if j.decision in SETTLED:
        return True
    if j.decision == Decision.NONE and j.why in FINAL:
        return None
    return False


def futile_runs(
    more_runs: Ints, runs: Ints, repeat_max: int, *, paired: bool = False
) -> npt.NDArray[np.bool_]:
    """Whether inconclusive comparisons at `runs` runs per side, `more_runs` short of a
    verdict (`fslab.stats.decision`), would likely stay so at `repeat_max`, even with
    the spread at its `FUTILITY_CONFIDENCE` lower bound (the runs needed scale with the
    spread). `paired`: a blocked design's, whose spread is the per-round ratios' (n - 1
    df, not two sides' 2n - 2: at 3 rounds its lower bound is 0.22 of the spread seen,
    not 0.30, so it gives up less readily where `MIN_PAIRS` rounds pair up). Many at once:
    the simulation in tests/test_sequential.py judges thousands."""
    more, n = np.asarray(more_runs), np.asarray(runs)
    low = spread_floor(spread_df(n, paired=paired))
    out: npt.NDArray[np.bool_] = (n < repeat_max) & (
        (more > MAX_MORE_REPS) | (low * (n + more) > repeat_max)
    )
    return out


def spread_df(runs: Ints, *, paired: bool) -> Ints:
    """The degrees of freedom a comparison at `runs` runs per side knows its spread by:
    `n - 1` for a blocked design's per-round ratios (from `MIN_PAIRS` rounds on), else
    two sides' `2 (n - 1)`; at least 1."""
    n = np.asarray(runs)
    out: Ints = np.maximum(np.where(paired & (n >= MIN_PAIRS), n - 1, 2 * (n - 1)), 1)
    return out


def spread_floor(df: Floats | Ints | float) -> Floats:
    """The share of the spread seen (a variance) that its `FUTILITY_CONFIDENCE` lower
    confidence bound keeps at `df` degrees of freedom: what every futility test assumes
    the spread might really be (0.22 at 2 df, 0.30 at 4, 0.42 at 9)."""
    d = np.asarray(df, dtype=np.float64)
    # chi2's `FUTILITY_CONFIDENCE` quantile, from scipy.special: scipy.stats would add
    # 0.7 s to the start of every command that reads a comparison.
    out: Floats = d / _special.chdtri(d, 1 - FUTILITY_CONFIDENCE)
    return out


def family_futile(
    d: Floats, se: Floats, df: Floats, runs: Ints, repeat_max: int, alpha: float, margin: float
) -> bool:
    """Whether a family's pooled interval (the geometric mean of its points' ratios:
    `fslab.stats.decision.combine` over each point's log ratio `d`, its error `se` and df,
    from `runs` runs or rounds) would likely stay undecided with every point at
    `repeat_max`: neither the difference's interval (`1 - alpha`) excluding 1 by the
    minimum effect, nor the equivalence one (`1 - 2 alpha`) inside the margin, even with
    the spread at its `FUTILITY_CONFIDENCE` lower bound. The points' spreads are pooled
    (their df added: they are one target pair on one operation, measured alike), so the
    noise is known far better than by one point: 2 points x 3 rounds give a bound of 0.30
    of the spread seen, one point's 0.22. False where a point has no spread yet or every
    point is at `max`."""
    d, se, df, n = (np.asarray(x, dtype=np.float64) for x in (d, se, df, runs))
    k = len(d)
    if k < 2 or (n >= repeat_max).all() or not np.isfinite(d).all():
        return False
    if not (np.isfinite(se).all() and np.isfinite(df).all() and (df > 0).all()):
        return False
    var = se**2 * n  # each point's spread of one run (a round's log ratio)
    total_df = float(df.sum())
    pooled = float((df * var).sum()) / total_df
    low = pooled * float(spread_floor(total_df))
    se_max = math.sqrt(low / repeat_max / k)
    df_max = k * (repeat_max - 1)
    mean = float(d.mean())
    room_diff = abs(mean) if abs(math.expm1(mean)) * 100 >= MIN_EFFECT_PCT else 0.0
    room_equiv = -math.log1p(-margin) - abs(mean)
    t_diff = float(_special.stdtrit(df_max, 1 - alpha / 2))
    t_equiv = float(_special.stdtrit(df_max, 1 - alpha))
    return t_diff * se_max >= room_diff and t_equiv * se_max >= room_equiv


def futile(j: Judgement | None, runs: int, repeat_max: int | None, *, paired: bool = False) -> bool:
    """`futile_runs` for one comparison: False unless it is inconclusive."""
    if j is None or repeat_max is None or j.decision != Decision.INCONCLUSIVE:
        return False
    if j.more_runs is None:
        return False
    more, n = np.array([j.more_runs]), np.array([runs])
    return bool(futile_runs(more, n, repeat_max, paired=paired)[0])


def bounded(j: Judgement | None, bound: float | None) -> bool:
    """Whether an inconclusive comparison's interval lies within `bound` either way of 1
    (`0.9`-`1.1` for 10%)."""
    if bound is None or j is None or j.decision != Decision.INCONCLUSIVE:
        return False
    if j.low is None or j.high is None:
        return False
    return 1 - bound <= j.low and j.high <= 1 + bound


def bound_reachable(
    j: Judgement | None,
    runs: int,
    repeat_max: int | None,
    bound: float | None,
    alpha: float = ALPHA,
    *,
    paired: bool = False,
) -> bool:
    """Whether `repeat_max` runs could likely bring an inconclusive comparison's interval
    within `bound`: its half-width now (on logs, `t` at `runs - 1` df: the widest `t`, so
    the spread is not overstated) shrunk to `max` runs with the spread at its
    `FUTILITY_CONFIDENCE` lower bound, as `futile_runs` judges a verdict, fits between
    its centre and the nearer end of the bound."""
    if bound is None or repeat_max is None or j is None or runs >= repeat_max:
        return False
    if j.decision != Decision.INCONCLUSIVE or j.low is None or j.high is None:
        return False
    if not (0 < j.low <= j.high and math.isfinite(j.high)):
        return False
    lo, hi = math.log(j.low), math.log(j.high)
    centre, half = (lo + hi) / 2, (hi - lo) / 2
    room = min(math.log1p(bound) - centre, centre - math.log1p(-bound))
    if room <= 0:
        return False
    se = half / float(_special.stdtrit(max(runs - 1, 1), 1 - alpha / 2))
    low = float(spread_floor(spread_df(np.asarray(runs), paired=paired)))
    se_max = se * math.sqrt(runs / repeat_max * low)
    df_max = repeat_max - 1 if paired else 2 * (repeat_max - 1)
    return float(_special.stdtrit(df_max, 1 - alpha / 2)) * se_max <= room


def comparison_state(
    j: Judgement | None,
    runs: int,
    repeat_max: int | None = None,
    *,
    paired: bool = False,
    bound: float | None = None,
    alpha: float = ALPHA,
) -> State:
    """Where one comparison stands: decided, undecidable, futile or open. With a
    `bound`, one that `max` runs would likely not decide (or that is at `max`) is bounded
    where its interval lies within the bound, and futile only where `max` runs could not
    bound it either: a verdict still within reach is not given up for a bound."""
    s = settled(j)
    if s is True:
        return State.DECIDED
    if s is None:
        return State.UNDECIDABLE
    at_max = repeat_max is not None and runs >= repeat_max
    if not (at_max or futile(j, runs, repeat_max, paired=paired)):
        return State.OPEN
    if bounded(j, bound):
        return State.BOUNDED
    if at_max or bound_reachable(j, runs, repeat_max, bound, alpha, paired=paired):
        return State.OPEN
    return State.FUTILE


def combined_state(states: Iterable[State]) -> State:
    """Several comparisons' state together: open while one is, else decided when all
    are, else futile when one is, else undecidable; alone when there are none."""
    answered = (State.POOLED, State.BOUNDED)
    got = {State.DECIDED if s in answered else s for s in states} - {State.ALONE}
    if not got:
        return State.ALONE
    if State.OPEN in got:
        return State.OPEN
    if got == {State.DECIDED}:
        return State.DECIDED
    return State.FUTILE if State.FUTILE in got else State.UNDECIDABLE


@dataclass(frozen=True)
class CellLook:
    """One target of a group against its baseline at a look, by one headline row."""

    target: str
    op: str
    runs: int
    judgement: Judgement | None
    """None for the baseline itself."""
    state: State = State.ALONE
    """The comparison's (`comparison_state`); ALONE for the baseline's own row."""


@dataclass(frozen=True)
class GroupLook:
    workload: str
    params: tuple[tuple[str, object], ...]
    points: dict[str, str]
    """Each target's point id."""
    state: State
    """The group's: OPEN while some target of it runs on."""
    verdicts: tuple[CellLook, ...]
    targets: dict[str, State] = field(default_factory=dict)
    """Each target's state: its comparisons' together, a baseline's its targets'; a target
    not OPEN runs no more."""

    @property
    def open_points(self) -> set[str]:
        """The points to run another round."""
        return {p for t, p in self.points.items() if self.targets.get(t, State.OPEN) is State.OPEN}


def group_state(verdicts: Iterable[CellLook], repeat_max: int | None = None) -> State:
    """The group's state from its comparisons (the baseline's own rows aside)."""
    return combined_state(
        comparison_state(v.judgement, v.runs, repeat_max)
        for v in verdicts
        if v.judgement is not None
    )


def _likely_decided(j: Judgement | None, runs: int, repeat_max: int | None) -> bool:
    """Whether a comparison's own runs, at the spread they show, would likely decide it
    by `max`: then its family's futility does not stop it (a point may differ where the
    family's mean does not)."""
    if j is None or j.more_runs is None or repeat_max is None:
        return False
    return 0 <= j.more_runs <= MAX_MORE_REPS and runs + j.more_runs <= repeat_max


def _verdicts(
    group: Group,
    repeat_max: int | None,
    pooled: Collection[tuple[str, str]],
    *,
    paired: bool,
    futile_family: Collection[tuple[str, str]] = (),
    bound: float | None = None,
    alpha: float = ALPHA,
) -> tuple[CellLook, ...]:
    out: list[CellLook] = []
    for row in group.headline_rows():
        for cell in row.cells:
            if cell.target not in group.points:
                continue
            if cell.summary is not None:
                n, j = cell.summary.n, cell.vs
                state = (State.ALONE if j is None
                         else comparison_state(j, n, repeat_max, paired=paired, bound=bound,
                                               alpha=alpha))  # fmt: skip
                if state in (State.OPEN, State.FUTILE) and (
                    (group.points[cell.target], row.op) in pooled
                ):
                    state = State.POOLED
                elif state is State.OPEN and (group.points[cell.target], row.op) in futile_family:
                    hope = _likely_decided(j, n, repeat_max) or bound_reachable(
                        j, n, repeat_max, bound, alpha, paired=paired
                    )
                    state = State.OPEN if hope else State.FUTILE
                out.append(CellLook(cell.target, row.op, n, j, state))
    return tuple(out)


def _target_states(
    group: Group, verdicts: tuple[CellLook, ...], baseline_of: Callable[[str], str]
) -> dict[str, State]:
    """Each target's state: its comparisons' (OPEN where it has no summary yet); each
    baseline's, OPEN while one of its targets is, else theirs together."""
    mine: dict[str, list[State]] = {t: [] for t in group.points}
    measured = {v.target for v in verdicts}
    for v in verdicts:
        if v.judgement is not None:
            mine[v.target].append(v.state)
    out = {t: combined_state(s) if t in measured else State.OPEN for t, s in mine.items()}
    for t in group.points:
        b = baseline_of(t)
        if b != t and b in group.points and b not in measured:
            out[t] = State.OPEN  # nothing to compare with yet: its baseline runs again
    for t in group.points:
        if baseline_of(t) == t and t in measured:
            theirs = [out[o] for o in group.points if o != t and baseline_of(o) == t]
            out[t] = combined_state(theirs) if theirs else State.ALONE
    return out


def look(
    comparison: Comparison,
    repeat_max: int | None = None,
    pooled: Collection[tuple[str, str]] = (),
    futile_family: Collection[tuple[str, str]] = (),
    bound: float | None = None,
) -> tuple[GroupLook, ...]:
    """Every group's and target's state at this look: the comparison must be judged at
    the look's level (`look_level`); with `repeat_max`, a comparison that cannot be
    decided by then is futile. `pooled`: the (point, headline op) comparisons whose
    family's pooled interval is decided at this look (`fslab.report.findings.pooled`),
    settled though undecided alone. `futile_family`: those whose family's pooled interval
    `max` rounds would likely not decide (`family_futile`), futile unless their own runs
    would likely decide them. `bound`: the study's `repeat.bound` (`comparison_state`).
    A group none of whose runs completed is not in a
    comparison: the caller keeps running the points no look settled."""
    out: list[GroupLook] = []
    for g in comparison.groups:
        verdicts = _verdicts(g, repeat_max, pooled, paired=comparison.blocked,
                             futile_family=futile_family, bound=bound,
                             alpha=comparison.alpha)  # fmt: skip
        if not verdicts:
            # Nothing measured yet that could be judged (every run failed): run again.
            opened = dict.fromkeys(g.points, State.OPEN)
            out.append(GroupLook(g.workload, g.params, dict(g.points), State.OPEN, (), opened))
            continue
        targets = _target_states(g, verdicts, comparison.baseline_of)
        state = combined_state(targets.values())
        out.append(GroupLook(g.workload, g.params, dict(g.points), state, verdicts, targets))
    return tuple(out)
