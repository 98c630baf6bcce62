"""`fslab compare --format json`: what was compared, how, and every group with its rows
and cells.

Layout (version 2): the comparison's facts, then `groups`, each with its workload, kind,
`params` (stored units: sizes in bytes, durations in s), completed `runs` per target, its
`rows` and its `warnings`. A row is one op and metric (with its unit and better
`direction`) and its numbers as lists with one element per target, in the order of
`targets`: n, mean, stdev, ci_half, delta_pct, p_value, verdict (`baseline` for the
baseline; null where a target has no value). Values are in stored units.

Version 1 was one object per cell repeating the study and every parameter: 141 MB for
10,000 runs. `fslab compare --format csv` keeps that flat form.
"""

from __future__ import annotations

from typing import Any

import orjson

from fslab.compare import Comparison

JSON_SCHEMA_VERSION = 2
"""Version of the `render_json` document; bumped when a field changes meaning or goes."""

METHOD = (
    "mean ± ci_half: Student's t confidence interval over n runs; delta_pct: change "
    "of the mean vs the baseline; verdict: Welch's t-test (two-sided), better/worse "
    "when p_value < alpha (different for a metric without a better direction), same "
    "otherwise or when the change is under the minimum effect, untested when either "
    "side has n < 2"
)


def comparison_doc(comparison: Comparison) -> dict[str, Any]:
    """The document `render_json` writes, as Python data (NaN stands for none)."""
    groups: list[dict[str, Any]] = []
    for g in comparison.groups:
        rows: list[dict[str, Any]] = []
        for row in g.rows:
            metric = row.metric
            n, mean, stdev, ci_half, delta_pct, p_value, verdict = row.numbers()
            rows.append(
                {
                    "op": row.op,
                    "metric": metric.name,
                    "unit": metric.unit,
                    "direction": metric.direction.value,
                    "n": n,
                    "mean": mean,
                    "stdev": stdev,
                    "ci_half": ci_half,
                    "delta_pct": delta_pct,
                    "p_value": p_value,
                    "verdict": verdict,
                }
            )
        groups.append(
            {
                "workload": g.workload,
                "kind": g.kind,
                "params": dict(g.params),
                "runs": dict(g.runs),
                "rows": rows,
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
    return {
        "schema_version": JSON_SCHEMA_VERSION,
        "study": comparison.study,
        "baseline": comparison.baseline,
        "targets": list(comparison.targets),
        "where": [f"{k}={v}" for k, v in comparison.where],
        "confidence": comparison.confidence,
        "alpha": comparison.alpha,
        "method": METHOD,
        "skipped_runs": dict(comparison.skipped_runs),
        "groups": groups,
    }


def render_json(comparison: Comparison) -> str:
    """The comparison as a JSON document (indented; absent values are null)."""
    data = orjson.dumps(
        comparison_doc(comparison), option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY
    )
    return data.decode() + "\n"
