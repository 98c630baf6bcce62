"""`fslab compare --format json`: what was compared, how, and every group with its rows
and cells.

Layout (version 3): the comparison's facts, then `groups`, each with its workload, kind,
`params` (stored units: sizes in bytes, durations in s), completed `runs` per target, its
`rows` and its `warnings`. A row is one op and metric (with its unit and better
`direction`) and its numbers as lists with one element per target, in the order of
`targets`: `fslab.compare.NUMBERS` (n, mean, stdev, ci_half, ratio, ratio_low,
ratio_high, verdict: `baseline` for a baseline; more_runs, no_verdict; null where a
target has none). Values are in stored units. `questions` lists the targets compared
with each other, each with its baseline (a study whose targets have no `question` key
has one, named ""); a target's ratio is to its question's baseline. `integrity` lists
the integrity points (kind `integrity`, which have no rows): per point and target its
`fault`, `region`, `params`, `outcomes` (runs per outcome word) and `runs` (each run's
`run_id`, `outcome`, `errno` and `repaired_by`); empty without them. `summary` is the
summary's answers by the headline metric (`fslab.report.findings`): per question,
workload and family, each target's geometric mean `ratio` over the family's points with
its interval `[ratio_low, ratio_high]` and the `verdict` on it (inconclusive: the
interval is the bound the runs set on the difference), and its `points` per verdict.

Version 2 had Welch's test of the means (delta_pct, p_value, verdict same/untested/
different); version 3 has the decision rule (`fslab.stats.decision`).

Version 1 was one object per cell repeating the study and every parameter: 141 MB for
10,000 runs. `fslab compare --format csv` keeps that flat form.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence
from itertools import islice
from typing import Any, BinaryIO

import orjson

from fslab.compare import Comparison, Disturber, Group, planned_numbers, row_numbers
from fslab.compare.limit import as_json, latency_limits
from fslab.metrics import MetricSpec
from fslab.report.findings import answers

JSON_SCHEMA_VERSION = 4
"""Version of the `render_json` document; bumped when a field changes meaning or goes."""

METHOD = (
    "mean ± ci_half: Student's t confidence interval over n runs; ratio: the target's "
    "geometric mean over its question's baseline's, with its 1 - alpha interval [ratio_low, "
    "ratio_high] from Welch's interval on log values (design `blocked`: the mean of the "
    "per-round log ratios with Student's interval, where two rounds or more pair up); "
    "verdict: better/worse when the "
    "interval excludes 1 and the change is at least the minimum effect, equivalent when "
    "the 1 - 2 alpha interval (two one-sided tests at alpha) lies within "
    "[1 - equivalence_margin, 1 / (1 - equivalence_margin)] (an equivalent cell's "
    "[ratio_low, ratio_high] is that interval), "
    "inconclusive otherwise (more_runs: the runs "
    "per side that would likely decide it); none (null, with no_verdict saying why) for "
    "a single run, an amount of work, a metric without a better direction, or runs "
    "flagged as cached or unsteady"
)


def _head(comparison: Comparison) -> dict[str, Any]:
    return {
        "schema_version": JSON_SCHEMA_VERSION,
        "study": comparison.study,
        "baseline": comparison.baseline,
        "targets": list(comparison.targets),
        "questions": [
            {"name": q.name, "baseline": q.baseline, "targets": list(q.targets)}
            for q in comparison.all_questions
        ],
        "where": [f"{k}={v}" for k, v in comparison.where],
        "confidence": comparison.confidence,
        "alpha": comparison.alpha,
        "equivalence_margin": comparison.margin,
        "design": "blocked" if comparison.blocked else "independent",
        "method": METHOD,
        "skipped_runs": dict(comparison.skipped_runs),
        "disturbers": _disturber_docs(comparison.disturbers),
        "shared": _disturber_docs(comparison.shared),
        "integrity": integrity_docs(comparison),
        "summary": summary_docs(comparison),
        "latency_limit": as_json(latency_limits(comparison)),
    }


def _disturber_docs(who: Iterable[Disturber]) -> list[dict[str, Any]]:
    return [{"name": d.name, "pid": d.pid, "runs": d.runs, "cpu_pct": d.cpu_pct} for d in who]


def summary_docs(comparison: Comparison) -> list[dict[str, Any]]:
    """The document's `summary`: each family's answer by the headline metric."""
    out: list[dict[str, Any]] = []
    for a in answers(comparison):
        targets = []
        for t in a.targets:
            gap = t.gap
            targets.append({
                "target": t.target,
                "ratio": gap.ratio if gap else None,
                "ratio_low": gap.low if gap else None,
                "ratio_high": gap.high if gap else None,
                "verdict": gap.verdict(a.metric, a.equivalence).word if gap else None,
                "points": {d.word: n for d, n in t.counts.items()},
                "flagged_points": dict(t.flagged),
                "baseline_flagged_points": dict(t.baseline_flagged),
            })  # fmt: skip
        out.append({
            "question": a.question, "workload": a.workload, "family": a.family, "op": a.op,
            "metric": a.metric.name, "baseline": a.baseline, "points": a.points,
            "best": a.best, "best_decided": a.margin.decided if a.margin else None,
            "targets": targets,
        })  # fmt: skip
    return out


def integrity_docs(comparison: Comparison) -> list[dict[str, Any]]:
    """The document's `integrity`: per integrity point (one target's), its fault, region
    and parameters, its runs per outcome, and each run's outcome, errno and what
    repaired it."""
    return [
        {
            "target": c.target,
            "workload": c.workload,
            "fault": c.fault,
            "region": c.region,
            "params": dict(c.params),
            "outcomes": c.counts(),
            "runs": [
                {"run_id": r, "outcome": o, "errno": e, "repaired_by": by}
                for r, o, e, by in zip(c.runs, c.outcomes, c.errnos, c.repaired_by, strict=True)
            ],
        }
        for c in comparison.integrity
    ]


def group_docs(groups: Sequence[Group]) -> list[dict[str, Any]]:
    """The elements of the document's `groups` for these groups (of one comparison)."""
    planned = planned_numbers(groups)
    if planned is None:
        rows = [r for g in groups for r in g.rows]
        heads: Sequence[tuple[str, MetricSpec, Any]] = [(r.op, r.metric, None) for r in rows]
        numbers = zip(heads, *row_numbers(rows), strict=True)
    else:
        numbers = zip(planned[0], *planned[1], strict=True)
    # A row's words, once per planned row (the same tuple object for every group).
    words: dict[int, tuple[str, str, str, str]] = {}
    out: list[dict[str, Any]] = []
    for g in groups:
        docs: list[dict[str, Any]] = []
        for entry, n, mean, stdev, ci_half, ratio, low, high, verdict, more, why in islice(
            numbers, len(g.rows)
        ):
            head = words.get(id(entry))
            if head is None:
                op, m = entry[0], entry[1]
                head = words[id(entry)] = (op, m.name, m.unit, m.direction.value)
            docs.append(
                {
                    "op": head[0],
                    "metric": head[1],
                    "unit": head[2],
                    "direction": head[3],
                    "n": n,
                    "mean": mean,
                    "stdev": stdev,
                    "ci_half": ci_half,
                    "ratio": ratio,
                    "ratio_low": low,
                    "ratio_high": high,
                    "verdict": verdict,
                    "more_runs": more,
                    "no_verdict": why,
                }
            )
        out.append(
            {
                "workload": g.workload,
                "kind": g.kind,
                "params": dict(g.params),
                "runs": dict(g.runs),
                "rows": docs,
                "warnings": [
                    {
                        "target": w.target,
                        "kind": w.kind.value,
                        "message": w.message,
                        "hint": w.hint,
                        "run_ids": list(w.runs),
                    }
                    for w in g.all_warnings()
                ],
            }
        )
    return out


_CHUNK = 1024
"""Groups serialized at once by `write_json`."""


def write_json(comparison: Comparison, out: BinaryIO, *, indent: bool = True) -> None:
    """Writes the comparison as a JSON document (absent values are null), `_CHUNK`
    groups at a time: a study of 100,000 runs makes hundreds of MB of it. `indent`
    puts one value per line, indented by two spaces per level (twice the bytes);
    without it the document is one line."""
    opt = orjson.OPT_INDENT_2 if indent else 0
    nl, pad = (b"\n", b"  ") if indent else (b"", b"")
    colon = b": " if indent else b":"
    head = orjson.dumps(_head(comparison), option=opt)
    out.write(head[: -len(nl + b"}")])  # the document goes on: "groups" comes last
    groups = comparison.groups
    out.write(b"," + nl + pad + b'"groups"' + colon + b"[")
    # Dumped inside a `{"groups": [...]}` of their own, the groups come out indented as
    # in the whole document; the wrapper's first and last lines are cut.
    opening = len(b"{" + nl + pad + b'"groups"' + colon + b"[")
    closing = len(nl + pad + b"]" + nl + b"}")
    for start in range(0, len(groups), _CHUNK):
        chunk = group_docs(groups[start : start + _CHUNK])
        text = memoryview(orjson.dumps({"groups": chunk}, option=opt))
        if start:
            out.write(b",")
        out.write(text[opening:-closing])
    out.write((nl + pad if groups else b"") + b"]" + nl + b"}\n")


def render_json(comparison: Comparison, *, indent: bool = True) -> str:
    """The comparison as a JSON document (absent values are null); `write_json` says
    what `indent` does."""
    buf = io.BytesIO()
    write_json(comparison, buf, indent=indent)
    return buf.getvalue().decode()
