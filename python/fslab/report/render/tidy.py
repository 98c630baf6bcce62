"""The tidy rows of a comparison, which CSV and JSON share: one row per group, target,
operation and metric, with values in stored units (`bw_bytes` in bytes per second,
latencies in ns) under the stored names."""

from __future__ import annotations

from typing import Any

from fslab.compare import Comparison
from fslab.report.format import param_column

FIXED = ("study", "workload", "kind", "target", "baseline", "op", "metric")
VALUES = ("mean", "stdev", "ci_half", "n", "delta_pct", "p_value", "verdict")
_RESERVED = frozenset(FIXED + VALUES)


def tidy_columns(comparison: Comparison) -> list[str]:
    """The CSV header: study, workload, kind, the parameters, target, baseline, op, metric,
    then the values."""
    params = [param_column(k, _RESERVED) for k in comparison.param_keys]
    return [*FIXED[:3], *params, *FIXED[3:], *VALUES]


def tidy_rows(comparison: Comparison) -> list[dict[str, Any]]:
    """One row per (group, target, op, metric) that has data. Values in stored units;
    `verdict` is `baseline` on the baseline's rows; absent values are None."""
    rows: list[dict[str, Any]] = []
    keys = comparison.param_keys
    for group in comparison.groups:
        params = dict(group.params)
        for row in group.rows:
            for cell in row.cells:
                s = cell.summary
                if s is None:
                    continue
                d = cell.diff
                if cell.target == comparison.baseline:
                    verdict: str | None = "baseline"
                else:
                    verdict = d.verdict.value if d else None
                out: dict[str, Any] = {
                    "study": comparison.study,
                    "workload": group.workload,
                    "kind": group.kind,
                }
                out.update({param_column(k, _RESERVED): params.get(k) for k in keys})
                out.update(
                    target=cell.target,
                    baseline=comparison.baseline,
                    op=row.op,
                    metric=row.metric.name,
                    mean=s.mean,
                    stdev=s.stdev,
                    ci_half=s.ci_half,
                    n=s.n,
                    delta_pct=d.delta_pct if d else None,
                    p_value=d.p_value if d else None,
                    verdict=verdict,
                )
                rows.append(out)
    return rows
