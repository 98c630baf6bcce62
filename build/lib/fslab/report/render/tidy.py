"""The tidy rows of a comparison, which CSV and JSON share: one row per group, target,
operation and metric, with values in stored units (`bw_bytes` in bytes per second,
latencies in ns) under the stored names.

Integrity points (kind `integrity`) have no metrics: theirs are rows of op `integrity`
and metric `outcome`, one per point, target and outcome, `n` the runs that had it and
the word in an `outcome` column, which the table has only when it holds such rows."""

from __future__ import annotations

from typing import Any

from fslab.compare import Comparison
from fslab.integrity_words import KIND as INTEGRITY_KIND
from fslab.integrity_words import OP as INTEGRITY_OP
from fslab.report.format import param_column

FIXED = ("study", "workload", "kind", "target", "baseline", "op", "metric")
VALUES = ("mean", "stdev", "ci_half", "n", "ratio", "ratio_low", "ratio_high", "verdict",
          "more_runs", "no_verdict")  # fmt: skip
INTEGRITY = ("outcome",)
"""After the values where the comparison has integrity points: the outcome's word."""
_RESERVED = frozenset(FIXED + VALUES + INTEGRITY)


def _param_keys(comparison: Comparison) -> tuple[str, ...]:
    """The groups' parameters, then those only integrity points have."""
    keys = comparison.param_keys
    extra = [k for c in comparison.integrity for k, _ in c.params if k not in keys]
    return (*keys, *dict.fromkeys(extra))


def tidy_columns(comparison: Comparison) -> list[str]:
    """The CSV header: study, workload, kind, the parameters, target, baseline, op, metric,
    then the values (and `outcome` where the comparison has integrity points)."""
    params = [param_column(k, _RESERVED) for k in _param_keys(comparison)]
    tail = INTEGRITY if comparison.integrity else ()
    return [*FIXED[:3], *params, *FIXED[3:], *VALUES, *tail]


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
    rows += integrity_rows(comparison)
    return rows


def integrity_rows(comparison: Comparison) -> list[dict[str, Any]]:
    """One row per integrity point, target and outcome: op `integrity`, metric
    `outcome`, `n` its runs, `outcome` the word; no baseline, no statistics."""
    keys = _param_keys(comparison)
    rows: list[dict[str, Any]] = []
    for cell in comparison.integrity:
        params = dict(cell.params)
        for outcome, n in cell.counts().items():
            out: dict[str, Any] = {
                "study": comparison.study, "workload": cell.workload, "kind": INTEGRITY_KIND,
            }  # fmt: skip
            out.update({param_column(k, _RESERVED): params.get(k) for k in keys})
            out.update(dict.fromkeys(FIXED[3:] + VALUES))
            out.update(target=cell.target, op=INTEGRITY_OP, metric="outcome", n=n,
                       outcome=outcome)  # fmt: skip
            rows.append(out)
    return rows
