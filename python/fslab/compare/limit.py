"""The most load under a latency limit (a workload's `latency_limit`): per target, the
highest value of the load axis (`vary`: queue depth, threads, an offered rate) at which
the latency percentile of every operation stays under the limit in every run, with the
loads that bracket it; then each target against its baseline by the rate achieved at its
own answer (the decision rule of `fslab.stats.decision`, on independent samples).

A load holds when every run's percentile is under the limit, fails when every run's is
at or over it, and is mixed otherwise; the answer is the highest load at which it and
every lower load held. A mixed load ends the climb as a failed one does, and says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from fslab.compare.model import Comparison, Group
from fslab.params import format_param
from fslab.stats.decision import Decision, decide, log_stats
from fslab.stats.warnings import SUPPRESSING
from fslab.study.workload import LIMIT_PERCENTILES
from fslab.units import parse_duration


@dataclass(frozen=True)
class Step:
    """One load of one target: the worst operation's percentile per run (ns), and whether
    it held (`held`, `failed`, `mixed`, or `unmeasured`: no run has the percentile)."""

    load: float
    lat_ns: tuple[float, ...]
    status: str
    rate: tuple[float, ...]
    """The rate achieved per run (the group's headline rate, summed over operations)."""
    flagged: str = ""
    """The validity warnings (cached, unsteady, corrupt) that take this load's verdict
    away, as the group's cells would say them."""


@dataclass(frozen=True)
class Answer:
    """One target's answer at one combination of the other keys."""

    target: str
    steps: tuple[Step, ...]
    best: Step | None
    """The highest load held with every lower one; None when the lowest did not hold."""
    above: Step | None
    """The next load up (where the climb ended), None when every load held."""
    ratio: float | None = None
    low: float | None = None
    high: float | None = None
    decision: Decision = Decision.NONE


@dataclass(frozen=True)
class LimitResult:
    workload: str
    vary: str
    percentile: int
    under_ns: float
    op: str | None
    fixed: tuple[tuple[str, Any], ...]
    """The group's other keys (those that vary in the study), shared by its answers."""
    answers: tuple[Answer, ...]
    baseline: str
    rate_label: str


def _rate(group: Group, target: str) -> tuple[tuple[float, ...], str]:
    """The rate the group is judged by, per run, summed over its headline rate rows."""
    rows = [r for r in group.headline_rows() if r.metric.unit in ("count", "bytes_per_s")]
    rows = [r for r in rows if r.metric.name == rows[0].metric.name] if rows else []
    parts = [r.cell(target).samples for r in rows]
    parts = [p for p in parts if p]
    if not parts or len({len(p) for p in parts}) != 1:
        return (), ""
    total = tuple(float(x) for x in np.sum(np.asarray(parts, dtype=float), axis=0))
    label = rows[0].metric.label
    return total, label


def _worst_lat(group: Group, target: str, metric: str, op: str | None) -> tuple[float, ...]:
    rows = [r for r in group.rows if r.metric.name == metric and (op is None or r.op == op)]
    parts = [r.cell(target).samples for r in rows if r.cell(target).samples]
    if not parts or len({len(p) for p in parts}) != 1:
        return ()
    return tuple(float(x) for x in np.max(np.asarray(parts, dtype=float), axis=0))


def _status(lat: Sequence[float], under: float) -> str:
    if not lat:
        return "unmeasured"
    if all(x < under for x in lat):
        return "held"
    return "failed" if all(x >= under for x in lat) else "mixed"


def climb(steps: Sequence[Step]) -> tuple[Step | None, Step | None]:
    """The highest load held with every lower one, and the load above it (where the
    climb ended; None when every load held). `steps` go up in load."""
    best = None
    for s in steps:
        if s.status != "held":
            return best, s
        best = s
    return best, None


def latency_limits(comparison: Comparison) -> list[LimitResult]:
    """Every `latency_limit` of the study, answered per target and other keys."""
    out: list[LimitResult] = []
    for workload, spec in comparison.latency_limits.items():
        vary = str(spec.get("vary", ""))
        percentile = int(spec.get("percentile", 99))
        metric = LIMIT_PERCENTILES.get(percentile)
        under = spec.get("under")
        if metric is None or under is None:
            continue
        try:
            under_ns = parse_duration(under) * 1e9
        except (TypeError, ValueError):
            continue
        op = spec.get("op")
        groups = [g for g in comparison.groups if g.workload == workload]
        # The workload's own other axes: what tells its answers apart.
        keys = dict.fromkeys(k for g in groups for k, _ in g.params if k != vary)
        axes = [k for k in keys if len({repr(dict(g.params).get(k)) for g in groups}) > 1]
        by_rest: dict[tuple[tuple[str, Any], ...], list[Group]] = {}
        for g in groups:
            params = dict(g.params)
            if not isinstance(params.get(vary), int | float):
                continue
            rest = tuple((k, params.get(k)) for k in axes)
            by_rest.setdefault(rest, []).append(g)
        for rest, gs in by_rest.items():
            gs.sort(key=lambda g: float(dict(g.params)[vary]))
            answers: list[Answer] = []
            label = ""
            for target in comparison.targets:
                steps: list[Step] = []
                for g in gs:
                    if not g.runs.get(target):
                        continue
                    lat = _worst_lat(g, target, metric, op if isinstance(op, str) else None)
                    rate, lab = _rate(g, target)
                    label = label or lab
                    flags = sorted(
                        {w.kind.value for w in g.warnings
                         if w.target == target and w.kind in SUPPRESSING}
                    )  # fmt: skip
                    steps.append(
                        Step(float(dict(g.params)[vary]), lat, _status(lat, under_ns), rate,
                             ", ".join(flags))
                    )  # fmt: skip
                if steps:
                    answers.append(Answer(target, tuple(steps), *climb(steps)))
            out.append(
                LimitResult(
                    workload, vary, percentile, under_ns, op if isinstance(op, str) else None,
                    rest, tuple(_judged(answers, comparison)), comparison.baseline, label,
                )
            )  # fmt: skip
    return out


def _judged(answers: list[Answer], comparison: Comparison) -> list[Answer]:
    """Each target's rate at its answer against its baseline's at the baseline's."""
    by_target = {a.target: a for a in answers}
    out = []
    for a in answers:
        base = by_target.get(comparison.baseline_of(a.target))
        if base is None or base is a or a.best is None or base.best is None:
            out.append(a)
            continue
        if a.best.flagged or base.best.flagged:
            out.append(a)
            continue
        bn, bm, bv = log_stats(base.best.rate)
        n, m, v = log_stats(a.best.rate)
        ratio, low, high, verdict, _ = decide(
            np.array([bn]), np.array([bm]), np.array([bv]), np.array([n]), np.array([m]),
            np.array([v]), higher_is_better=np.array([1], dtype=np.int8),
            min_abs=np.array([0.0]), base_mean=np.array([float(np.mean(base.best.rate))]),
            judged=np.array([True]), alpha=comparison.alpha, margin=comparison.margin,
        )  # fmt: skip
        finite = bool(np.isfinite(ratio[0]))
        out.append(
            Answer(
                a.target, a.steps, a.best, a.above,
                float(ratio[0]) if finite else None,
                float(low[0]) if np.isfinite(low[0]) else None,
                float(high[0]) if np.isfinite(high[0]) else None,
                Decision(int(verdict[0])),
            )
        )  # fmt: skip
    return out


def as_json(results: Sequence[LimitResult]) -> list[dict[str, Any]]:
    """The answers as the JSON output carries them."""

    def step(s: Step | None) -> dict[str, Any] | None:
        if s is None:
            return None
        return {"load": s.load, "status": s.status, "lat_ns": list(s.lat_ns),
                "rate": list(s.rate), "flagged": s.flagged}  # fmt: skip

    return [
        {
            "workload": r.workload,
            "vary": r.vary,
            "percentile": r.percentile,
            "under_ns": r.under_ns,
            "op": r.op,
            "params": dict(r.fixed),
            "baseline": r.baseline,
            "answers": [
                {
                    "target": a.target,
                    "load": a.best.load if a.best else None,
                    "at": step(a.best),
                    "above": step(a.above),
                    "steps": [step(s) for s in a.steps],
                    "vs_baseline": None
                    if a.ratio is None
                    else {
                        "ratio": a.ratio,
                        "low": a.low,
                        "high": a.high,
                        "verdict": a.decision.word,
                    },
                }
                for a in r.answers
            ],
        }
        for r in results
    ]


def sentences(results: Sequence[LimitResult], fmt_ns: Any, fmt_rate: Any) -> list[str]:
    """One line per target and combination, for people: `ext4: iodepth 16 holds p99 under
    2ms (1.41ms; 32: 3.2ms), 41.2k IOPS`, then the verdict against the baseline."""
    lines: list[str] = []
    for r in results:
        where = " ".join(f"{k}={format_param(k, v)}" for k, v in r.fixed)
        head = f"{r.workload}{' ' + where if where else ''}: the most {r.vary} with"
        head += f" p{r.percentile}{' of ' + r.op if r.op else ''} under {fmt_ns(r.under_ns)}"
        lines.append(head)
        for a in r.answers:
            if a.best is None:
                first = a.steps[0]
                worst = fmt_ns(max(first.lat_ns)) if first.lat_ns else "?"
                lines.append(f"  {a.target}: none: {r.vary} {first.load:g} already "
                             f"{first.status} ({worst})")  # fmt: skip
                continue
            at = a.best
            text = (f"  {a.target}: {r.vary} {at.load:g}, p{r.percentile} "
                    f"{fmt_ns(max(at.lat_ns))}")  # fmt: skip
            if a.above is not None:
                worst = fmt_ns(max(a.above.lat_ns)) if a.above.lat_ns else "?"
                text += f" ({a.above.load:g} {a.above.status}: {worst})"
            else:
                text += " (the highest load tried: more may hold)"
            if at.rate:
                text += f", {fmt_rate(float(np.mean(at.rate)))} {r.rate_label}"
            if a.target == r.baseline:
                pass
            elif at.flagged:
                text += f"; no verdict: its runs are flagged ({at.flagged})"
            elif a.ratio is not None:
                text += f"; {a.ratio:.3g}x {r.baseline}'s"
                if a.low is not None and a.high is not None:
                    text += f" [{a.low:.3g}-{a.high:.3g}]"
                text += f" {a.decision.word}"
            lines.append(text)
    return lines
