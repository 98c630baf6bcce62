"""The tidy rows of a comparison, which CSV and JSON share: one row per group, target,
operation and metric, with values in stored units (`bw_bytes` in bytes per second,
latencies in ns) under the stored names."""

from __future__ import annotations

from typing import Any

from fslab.compare import Comparison
from fslab.report.format import param_column

FIXED = ("study", "workload", "kind", "target", "baseline", "op", "metric")
VALUES = ("mean", "stdev", "ci_half", "n", "ratio", "ratio_low", "ratio_high", "verdict",
          "more_runs", "no_verdict")  # fmt: skip
_RESERVED = frozenset(FIXED + VALUES)


def tidy_columns(comparison: Comparison) -> list[str]:
    """The CSV header: study, workload, kind, the parameters, target, baseline, op, metric,
    then the values."""
    params = [param_column(k, _RESERVED) for k in comparison.param_keys]
    return [*FIXED[:3], *params, *FIXED[3:], *VALUES]


def tidy_rows(comparison: Comparison) -> list[dict[str, Any]]:
    """One row per (group, target, op, metric) that has data. Values in stored units;
    `verdict` is `baseline` on the baseline's rows, else the decision rule's; absent values
    are None."""
    rows: list[dict[str, Any]] = []
    keys = comparison.param_keys
    for group in comparison.groups:
        params = dict(group.params)
        for row in group.rows:
            for cell in row.cells:
                s = cell.summary
                if s is None:
                    continue
                vs = cell.vs
                if comparison.is_baseline(cell.target):
                    verdict: str | None = "baseline"
                else:
                    verdict = vs.decision.word if vs and vs.decision.value else None
                out: dict[str, Any] = {
                    "study": comparison.study,
                    "workload": group.workload,
                    "kind": group.kind,
                }
                out.update({param_column(k, _RESERVED): params.get(k) for k in keys})
                out.update(
                    target=cell.target,
                    baseline=comparison.baseline_of(cell.target),
                    op=row.op,
                    metric=row.metric.name,
                    mean=s.mean,
                    stdev=s.stdev,
                    ci_half=s.ci_half,
                    n=s.n,
                    ratio=vs.ratio if vs else None,
                    ratio_low=vs.low if vs else None,
                    ratio_high=vs.high if vs else None,
                    verdict=verdict,
                    more_runs=vs.more_runs if vs else None,
                    no_verdict=vs.why.name.lower() if vs and vs.why else None,
                )
                rows.append(out)
    return rows
