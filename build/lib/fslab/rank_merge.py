"""One report from many: the engine reports of the ranks of a multi-host run, merged as
IOR and elbencho do it (docs/multihost.md).

Every rank ran the same engine job on its own host, started after a common barrier and
stopped after the same duration (the stonewall). The aggregate is one report of the same
shape, so the store, compare and the reports read it like any run:

- the engine merges the reports (`fslab-engine merge`, `how = "ranks"`: the one rule
  fio job files and their groups use too, docs/engine.md): counts (ios, bytes, fsyncs,
  CPU seconds) summed; rates over the span from the earliest measured start to the
  latest measured end (IOR's `max(stop) - min(start)`), so a rank that started late or
  ran long lowers the aggregate instead of hiding; latency histograms added, the
  percentiles from the sum, never averaged; the series summed interval by interval
  (aligned on the ranks' common start); warnings and errors kept, each prefixed with its
  rank;
- a steady-state job is judged on the summed series (`with_steady`): each rank ran the
  whole `runtime`, so the verdict is the sum's, by the engine's own rule, and the results
  stay the whole stonewall.

`RankFacts` says how even the ranks were: start skew, span, imbalance (max / min rank
throughput), first-done and last-done for size-based jobs.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from fslab.engine import EngineRun, Report, SteadyAnswer, merge_reports
from fslab.errors import FslabError


@dataclass(frozen=True)
class RankReport:
    """One rank's engine report and where it ran."""

    rank: int
    host: str
    report: Report


@dataclass(frozen=True)
class RankFacts:
    """How even the ranks were (per run, stored beside the aggregate)."""

    ranks: int
    hosts: int
    start_skew_s: float
    """Latest minus earliest measured start (after the common barrier and the ramp)."""
    span_s: float
    """Earliest measured start to latest measured end: the aggregate rates' denominator."""
    imbalance: float | None
    """Largest rank's rate (ios/s over its own runtime) over the smallest's; None when a
    rank did no I/O."""
    first_done_s: float
    """From the earliest start until the first rank ended (elbencho's "first done")."""
    last_done_s: float
    """... until the last rank ended ("last done")."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _window(r: Report) -> tuple[float, float]:
    start = r.start_unix_s + r.ramp_s
    return start, start + r.runtime_s


def facts(ranks: Sequence[RankReport]) -> RankFacts:
    windows = [_window(r.report) for r in ranks]
    starts, ends = [w[0] for w in windows], [w[1] for w in windows]
    rates = [sum(o.ios for o in r.report.results) / max(r.report.runtime_s, 1e-9) for r in ranks]
    return RankFacts(
        ranks=len(ranks),
        hosts=len({r.host for r in ranks}),
        start_skew_s=max(starts) - min(starts),
        span_s=max(ends) - min(starts),
        imbalance=(max(rates) / min(rates)) if min(rates) > 0 else None,
        first_done_s=min(ends) - min(starts),
        last_done_s=max(ends) - min(starts),
    )


def merge(ranks: Sequence[RankReport], *, engine: Path | None = None) -> tuple[Report, RankFacts]:
    """The aggregate report of `ranks` (rank 0's job, summed results) and their facts.
    Raises FslabError when the ranks ran different jobs."""
    if not ranks:
        raise FslabError("no rank reported")
    first = ranks[0].report
    for r in ranks[1:]:
        if r.report.job.kind != first.job.kind or r.report.job.rw != first.job.rw:
            raise FslabError(
                f"rank {r.rank} ran a different job ({r.report.job.kind} {r.report.job.rw}) "
                f"than rank 0 ({first.job.kind} {first.job.rw})"
            )
    merged = merge_reports(
        "ranks", [(f"rank {r.rank} ({r.host}):", r.report) for r in ranks], engine=engine
    )
    return merged, facts(ranks)


def with_steady(run: EngineRun, answer: SteadyAnswer) -> EngineRun:
    """The aggregate `run` with the verdict of its summed series (`fslab-engine steady`):
    its `steady_state` section, and a `not_steady` warning when no window was steady
    (which keeps compare's verdict off the run, as for a one-host run)."""
    doc = run.report.model_dump(mode="json", by_alias=True)
    doc["steady_state"] = answer.steady_state.model_dump(mode="json")
    doc["warnings"] += [
        {**w.model_dump(mode="json"), "message": f"ranks summed: {w.message}"}
        for w in answer.warnings
    ]
    report = Report.model_validate(doc)
    text = report.model_dump_json(by_alias=True)
    return EngineRun(report=report, document=json.loads(text), stdout=text,
                     stderr=run.stderr, exit_code=run.exit_code)  # fmt: skip
