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
of identical targets end "different" (../shared/notes/research-next-capabilities.md
§1.4, 20,000 simulated studies). So each look uses the level `alpha / L`, with `L = max -
min + 1` the looks planned (Bonferroni's split: 0.05 over 8 looks is a 99.375% interval
per look); tests/test_sequential.py checks by simulation that identical targets are called
different in at most 5% of studies, and `fslab compare` judges an adaptive study's runs
at that same level, so the report says what the stopping rule saw.

A group is also settled when more runs cannot give it a verdict: its runs are flagged
(served from the cache, unsteady) or its metric has none. A run other work disturbed
is not counted (`fslab.compare`): the point simply has fewer runs, and runs again. A study-level
`budget` stops adding rounds once the runs took that long; the points still open stay
inconclusive, and say so. Every look is stored (`look` table) so the stopping path can
be audited.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from fslab.compare import Comparison, Group
from fslab.stats.decision import Decision, Judgement, NoVerdict
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


class State(StrEnum):
    """Where a group stands after a look."""

    OPEN = "open"
    """Some comparison is undecided: another round."""
    DECIDED = "decided"
    """Every comparison is better, worse or equivalent."""
    UNDECIDABLE = "undecidable"
    """Some comparison can get no verdict however many runs (flagged runs); the rest are
    decided."""
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


@dataclass(frozen=True)
class Verdict:
    """One target of a group against its baseline at a look, by one headline row."""

    target: str
    op: str
    runs: int
    judgement: Judgement | None
    """None for the baseline itself."""


@dataclass(frozen=True)
class GroupLook:
    workload: str
    params: tuple[tuple[str, object], ...]
    points: dict[str, str]
    """Each target's point id."""
    state: State
    verdicts: tuple[Verdict, ...]


def group_state(verdicts: Iterable[Verdict]) -> State:
    """The group's state from its comparisons (the baseline's own rows aside)."""
    states = [settled(v.judgement) for v in verdicts if v.judgement is not None]
    if not states:
        return State.ALONE
    if any(s is False for s in states):
        return State.OPEN
    return State.DECIDED if all(states) else State.UNDECIDABLE


def _verdicts(group: Group) -> tuple[Verdict, ...]:
    out: list[Verdict] = []
    for row in group.headline_rows():
        for cell in row.cells:
            if cell.target not in group.points:
                continue
            if cell.summary is not None:
                out.append(Verdict(cell.target, row.op, cell.summary.n, cell.vs))
    return tuple(out)


def look(comparison: Comparison) -> tuple[GroupLook, ...]:
    """Every group's state at this look: the comparison must be judged at the look's
    level (`look_level`). A group none of whose runs completed is not in a comparison:
    the caller keeps running the points no look settled."""
    out: list[GroupLook] = []
    for g in comparison.groups:
        verdicts = _verdicts(g)
        if not verdicts:
            # Nothing measured yet that could be judged (every run failed): run again.
            out.append(GroupLook(g.workload, g.params, dict(g.points), State.OPEN, ()))
            continue
        missing = [t for t in g.points if not any(v.target == t for v in verdicts)]
        state = State.OPEN if missing else group_state(verdicts)
        out.append(GroupLook(g.workload, g.params, dict(g.points), state, verdicts))
    return tuple(out)
