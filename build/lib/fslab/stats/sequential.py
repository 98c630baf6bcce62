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
preceded this module). So each look uses the level `alpha / L`, with `L = max -
min + 1` the looks planned (Bonferroni's split: 0.05 over 8 looks is a 99.375% interval
per look); tests/test_sequential.py checks by simulation that identical targets are called
different in at most 5% of studies, and `fslab compare` judges an adaptive study's runs
at that same level, so the report says what the stopping rule saw.

**Each comparison stops on its own.** A target whose comparisons with its baseline are
all decided runs no more, while a near-equal one in the same group goes on; the baseline
runs as long as one of its targets does. A comparison is also settled when more runs
cannot give it a verdict: its runs are flagged (served from the cache, unsteady) or its
metric has none.

**Futility.** A comparison that `max` runs would not decide at the noise seen stops early
instead of running to the cap: inconclusive, with the runs per side that would likely
decide it (`fslab.stats.decision`) beyond `max` even if the true spread were as low as
the runs plausibly allow (the 99% lower confidence bound of a variance with the
comparison's degrees of freedom, `2 (n - 1)`: 0.30 of the spread seen at 3 runs, 0.52
at 10; a 90% bound gave up 9 in 100 of the verdicts a 10% difference at a 5% CV gets
by the cap, bench/stopping-rule). Stopping without a verdict calls nothing different,
so it cannot raise the rate of false differences; tests/test_sequential.py measures what
it costs in verdicts.

A run other work disturbed is not counted (`fslab.compare`): the point simply has fewer
runs, and runs again. A study-level `budget` stops adding rounds once the runs took that
long; the points still open stay inconclusive, and say so. Every look is stored (`look`
table, each comparison's state) so the stopping path can be audited.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np
import numpy.typing as npt
from scipy import stats as _stats  # type: ignore[import-untyped]

from fslab.compare import Comparison, Group
from fslab.stats.decision import MAX_MORE_REPS, Decision, Ints, Judgement, NoVerdict
from fslab.stats.summary import ALPHA

SETTLED = frozenset({Decision.BETTER, Decision.WORSE, Decision.EQUIVALENT})
"""The verdicts that end a point's repetitions."""
FINAL = frozenset({NoVerdict.WORK, NoVerdict.NO_DIRECTION, NoVerdict.NOT_POSITIVE,
                   NoVerdict.FLAGGED, NoVerdict.BASELINE_FLAGGED})  # fmt: skip
"""Reasons for no verdict that more runs do not change."""


def look_level(repeat_min: int, repeat_max: int, alpha: float = ALPHA) -> float:
    """The level of each look: `alpha` split evenly over the looks planned, one after
    every round from `repeat_min` to `repeat_max`."""
    return alpha / (repeat_max - repeat_min + 1)


FUTILITY_CONFIDENCE = 0.99
"""How sure a futile stop is that the spread is not lower than it takes to decide by
`max`: the one-sided level of the variance's lower bound."""


class State(StrEnum):
    """Where a comparison, a target or a group stands after a look."""

    OPEN = "open"
    """Undecided, and more runs may decide it: another round."""
    DECIDED = "decided"
    """Better, worse or equivalent (a target or group: every comparison is)."""
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


def futile_runs(more_runs: Ints, runs: Ints, repeat_max: int) -> npt.NDArray[np.bool_]:
    """Whether inconclusive comparisons at `runs` runs per side, `more_runs` short of a
    verdict (`fslab.stats.decision`), would likely stay so at `repeat_max`, even with
    the spread at its `FUTILITY_CONFIDENCE` lower bound (the runs needed scale with the
    spread). Many at once: the simulation in tests/test_sequential.py judges thousands."""
    more, n = np.asarray(more_runs), np.asarray(runs)
    df = np.maximum(2 * (n - 1), 1)
    low = df / _stats.chi2.ppf(FUTILITY_CONFIDENCE, df)
    out: npt.NDArray[np.bool_] = (n < repeat_max) & (
        (more > MAX_MORE_REPS) | (low * (n + more) > repeat_max)
    )
    return out


def futile(j: Judgement | None, runs: int, repeat_max: int | None) -> bool:
    """`futile_runs` for one comparison: False unless it is inconclusive."""
    if j is None or repeat_max is None or j.decision != Decision.INCONCLUSIVE:
        return False
    if j.more_runs is None:
        return False
    return bool(futile_runs(np.array([j.more_runs]), np.array([runs]), repeat_max)[0])


def comparison_state(j: Judgement | None, runs: int, repeat_max: int | None = None) -> State:
    """Where one comparison stands: decided, undecidable, futile or open."""
    s = settled(j)
    if s is True:
        return State.DECIDED
    if s is None:
        return State.UNDECIDABLE
    return State.FUTILE if futile(j, runs, repeat_max) else State.OPEN


def combined_state(states: Iterable[State]) -> State:
    """Several comparisons' state together: open while one is, else decided when all
    are, else futile when one is, else undecidable; alone when there are none."""
    got = set(states) - {State.ALONE}
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


def _verdicts(group: Group, repeat_max: int | None) -> tuple[CellLook, ...]:
    out: list[CellLook] = []
    for row in group.headline_rows():
        for cell in row.cells:
            if cell.target not in group.points:
                continue
            if cell.summary is not None:
                n, j = cell.summary.n, cell.vs
                state = State.ALONE if j is None else comparison_state(j, n, repeat_max)
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


def look(comparison: Comparison, repeat_max: int | None = None) -> tuple[GroupLook, ...]:
    """Every group's and target's state at this look: the comparison must be judged at
    the look's level (`look_level`); with `repeat_max`, a comparison that cannot be
    decided by then is futile. A group none of whose runs completed is not in a
    comparison: the caller keeps running the points no look settled."""
    out: list[GroupLook] = []
    for g in comparison.groups:
        verdicts = _verdicts(g, repeat_max)
        if not verdicts:
            # Nothing measured yet that could be judged (every run failed): run again.
            opened = dict.fromkeys(g.points, State.OPEN)
            out.append(GroupLook(g.workload, g.params, dict(g.points), State.OPEN, (), opened))
            continue
        targets = _target_states(g, verdicts, comparison.baseline_of)
        state = combined_state(targets.values())
        out.append(GroupLook(g.workload, g.params, dict(g.points), state, verdicts, targets))
    return tuple(out)
