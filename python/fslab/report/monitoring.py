"""Which points, and which run of each, the report's monitoring view draws.

The monitoring view (`fslab.report.charts.timeline`) draws what the machine did while a
point ran, one run per target. A study of thousands of points cannot have a chart each,
and the telemetry of runs no chart shows should not be read at all: so the points are
chosen here, from the comparison's groups alone, before anything is read, and the run
from the few facts `run_fact` already holds. Kept out of the charts package so the
report's context can ask without importing the renderers' models.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fslab.compare import Group
from fslab.params import format_param, varying_keys

MONITORED_POINTS = 4
"""Points per workload the monitoring view draws at most: a chart each."""


def monitored_groups(groups: Sequence[Group]) -> list[Group]:
    """Per workload, its points when they are few; else one per value of the first
    parameter that varies, the others at the workload's first point's values (a files
    study's sets at its first thread count, a block sweep's `rw` at its first depth),
    at most `MONITORED_POINTS` of them, spread over those values."""
    by: dict[str, list[Group]] = {}
    for g in groups:
        by.setdefault(g.workload, []).append(g)
    return [g for gs in by.values() for g in _pick(gs)]


def _pick(groups: Sequence[Group]) -> list[Group]:
    if len(groups) <= MONITORED_POINTS:
        return list(groups)
    keys = varying_keys(g.params for g in groups)
    first = dict(groups[0].params)
    along = [g for g in groups if all(dict(g.params).get(k) == first.get(k) for k in keys[1:])]
    if len(along) <= MONITORED_POINTS:
        return along
    last = len(along) - 1
    at = sorted({round(i * last / (MONITORED_POINTS - 1)) for i in range(MONITORED_POINTS)})
    return [along[i] for i in at]


def monitor_note(groups: Sequence[Group]) -> tuple[str, ...]:
    """Per workload whose monitoring shows only some of its points, which (a note under
    the summary, beside `per_point_note`'s)."""
    shown = {id(g) for g in monitored_groups(groups)}
    by: dict[str, list[Group]] = {}
    for g in groups:
        by.setdefault(g.workload, []).append(g)
    notes: list[str] = []
    for workload, gs in by.items():
        picked = [g for g in gs if id(g) in shown]
        if len(picked) == len(gs):
            continue
        keys = varying_keys(g.params for g in gs)
        if not keys:
            continue
        first = dict(gs[0].params)
        held = ", ".join(f"{k}={format_param(k, first[k])}" for k in keys[1:] if k in first)
        values = [dict(g.params).get(keys[0]) for g in picked]
        notes.append(
            f"The monitoring view of `{workload}` draws {len(picked)} of its {len(gs)} points "
            f"(`{keys[0]}` "
            + ", ".join("none" if v is None else format_param(keys[0], v) for v in values)
            + (f" at {held}" if held else "")
            + "); `fslab report --where KEY=VALUE` draws another."
        )
    return tuple(notes)


@dataclass(frozen=True)
class Candidate:
    """A completed run of a point and target, as `run_fact` knows it."""

    run_id: int
    rep: int
    runtime_s: float | None
    disturbed: bool
    """Some of its intervals were contaminated by other work."""


def representative(runs: Sequence[Candidate]) -> Candidate:
    """The run to draw: of median runtime (the lower of the middle two), among the runs
    no other work disturbed where there are some; the first repetition when no runtime is
    known. The first repetition alone would often be the odd one (a cold machine)."""
    if not runs:
        raise ValueError("no runs to choose from")
    clean = [r for r in runs if not r.disturbed] or list(runs)
    timed = sorted(
        (r for r in clean if r.runtime_s is not None), key=lambda r: (r.runtime_s, r.rep)
    )
    if not timed:
        return min(clean, key=lambda r: (r.rep, r.run_id))
    return timed[(len(timed) - 1) // 2]
