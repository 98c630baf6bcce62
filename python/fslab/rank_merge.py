"""One report from many: the engine reports of the ranks of a multi-host run, merged as
IOR and elbencho do it (docs/multihost.md).

Every rank ran the same engine job on its own host, started after a common barrier and
stopped after the same duration (the stonewall). The aggregate is one report of the same
shape, so the store, compare and the reports read it like any run:

- counts (ios, bytes, fsyncs, CPU seconds) are summed;
- rates are the total over the span: from the earliest measured start to the latest
  measured end over the ranks (IOR's `max(stop) - min(start)`), so a rank that started
  late or ran long lowers the aggregate instead of hiding;
- latency histograms (HdrHistogram) are added, and the percentiles, mean and deviation
  come from the sum: percentiles are never averaged;
- the series is summed interval by interval (the ranks' intervals are aligned on their
  common start); an interval's mean latency is the mean weighted by completions, its
  p99 the largest rank's (an upper bound: intervals carry no histogram);
- warnings and errors are kept, each prefixed with its rank;
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
from typing import Any

from fslab.engine import (
    EngineRun,
    IntervalOp,
    OpResult,
    Report,
    SteadyAnswer,
    decode_hist,
    hist_percentile,
)
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


def merged_lat(same: Sequence[OpResult]) -> dict[str, Any]:
    """The latency of several results of one operation taken together: their HDR
    histograms added, the percentiles, mean and deviation from the sum (never averaged):
    `{"lat": <lat_ns>, "hist": <encoded sum>}`."""
    hists = [decode_hist(o.hist) for o in same]
    lows, highs = [o.lat_ns.min for o in same], [o.lat_ns.max for o in same]
    total = hists[0]
    for h in hists[1:]:
        total.add(h)
    pct = {
        "p50": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0, "p999": 99.9, "p9999": 99.99,
    }  # fmt: skip
    lat: dict[str, Any] = {
        "min": min(lows),
        "max": max(highs),
        "mean": float(total.get_mean_value()),
        "stdev": float(total.get_stddev()),
    }
    lat |= {k: hist_percentile(total, q) for k, q in pct.items()}
    return {"lat": lat, "hist": total.encode().decode("ascii")}


def merge(ranks: Sequence[RankReport]) -> tuple[Report, RankFacts]:
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
    f = facts(ranks)
    doc = first.model_dump(mode="json", by_alias=True)
    span = max(f.span_s, 1e-9)
    results = summed_results([r.report for r in ranks], span)
    doc["results"] = results
    doc["runtime_s"] = f.span_s
    doc["start_unix_s"] = min(r.report.start_unix_s for r in ranks)
    doc["series"]["points"] = _series(ranks)
    doc["fsync"]["count"] = sum(r.report.fsync.count for r in ranks)
    cpu = doc["cpu"]
    for key in ("user_s", "sys_s", "ctx_voluntary", "ctx_involuntary"):
        cpu[key] = sum(getattr(r.report.cpu, key) for r in ranks)
    cpu["usage_pct"] = (cpu["user_s"] + cpu["sys_s"]) / span * 100
    doc["warnings"] = [
        {**w.model_dump(mode="json"), "message": f"rank {r.rank} ({r.host}): {w.message}"}
        for r in ranks for w in r.report.warnings
    ]  # fmt: skip
    doc["errors"] = [e.model_dump(mode="json") for r in ranks for e in r.report.errors]
    statuses = [r.report.status for r in ranks]
    doc["status"] = next((s for s in ("failed", "interrupted") if s in statuses), "ok")
    doc["interrupted"] = any(r.report.interrupted for r in ranks)
    return Report.model_validate(doc), f


SERIES_OPS = ("read", "write", "log", "txn", "background", "files")
"""The op fields of a series point."""


def summed_results(reports: Sequence[Report], span_s: float) -> list[dict[str, Any]]:
    """The results of several reports taken together, op by op in order of appearance:
    counts summed, HDR histograms added (`merged_lat`), rates over `span_s`."""
    out = []
    for op in dict.fromkeys(o.op for r in reports for o in r.results):
        same = [o for r in reports for o in r.results if o.op == op]
        ios, nbytes = sum(o.ios for o in same), sum(o.bytes for o in same)
        lat = merged_lat(same)
        out.append({
            "op": op, "ios": ios, "bytes": nbytes, "iops": ios / span_s,
            "bw_bytes": nbytes / span_s, "lat_ns": lat["lat"], "hist": lat["hist"],
        })  # fmt: skip
    return out


def summed_interval(ops: Sequence[IntervalOp]) -> dict[str, Any]:
    """One op's intervals of several runs over the same stretch of time as one: counts
    and rates summed, the mean latency weighted by completions, the p99 the largest
    (an upper bound: intervals carry no histogram)."""
    ios = sum(o.ios for o in ops)
    return {
        "ios": ios,
        "bytes": sum(o.bytes for o in ops),
        "iops": sum(o.iops for o in ops),
        "bw_bytes": sum(o.bw_bytes for o in ops),
        "lat_mean_ns": sum(o.lat_mean_ns * o.ios for o in ops) / ios if ios else 0.0,
        "lat_p99_ns": max(o.lat_p99_ns for o in ops),
    }


def _series(ranks: Sequence[RankReport]) -> list[dict[str, Any]]:
    """The ranks' series summed interval by interval (as long as the longest)."""
    longest = max((r.report.series.points for r in ranks), key=len)
    out: list[dict[str, Any]] = []
    for i, base in enumerate(longest):
        point = base.model_dump(mode="json")
        for field in SERIES_OPS:
            ops = [
                getattr(r.report.series.points[i], field)
                for r in ranks
                if i < len(r.report.series.points)
                and getattr(r.report.series.points[i], field) is not None
            ]
            if not ops:
                continue
            point[field] = summed_interval(ops)
        out.append(point)
    return out


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
