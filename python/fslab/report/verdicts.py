"""The application models' pass/fail verdicts (the mail store's JetStress limits): each
check's limit, the verdict table per point and target, and its headlines."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fslab.compare import Comparison, Group, Row, rows_matching
from fslab.metrics import JETSTRESS_OP, VERDICT_UNIT, MetricSpec
from fslab.report.findings import Sentence, Span
from fslab.report.format import (
    format_cell,
    format_stat,
    group_title,
    passed,
)


@dataclass(frozen=True)
class Limit:
    """One of a verdict's checks: a run passes when the mean of `metric` (a row of the
    `jetstress` pseudo-operation) stays under `max_ms`."""

    words: str
    """`DB read`: what is limited, as people say it."""
    metric: str
    param: str
    """The workload parameter that sets it."""
    max_ms: float
    default: bool
    """Not in the group's parameters: the engine's default."""


# The engine's checks (engine/src/app/mailstore.rs): what each limits, in words, the
# JetStress row of its mean and the workload key that sets it. Their values are stored
# per run (`Group.limits`), so the engine's defaults are never repeated here.
_CHECKS = {
    "db_read_lat_ms_mean": ("DB read", "db_read_lat_ns", "read_lat_ms_max"),
    "log_write_lat_ms_mean": ("log write", "log_write_lat_ns", "log_lat_ms_max"),
}


def limits(group: Group) -> tuple[Limit, ...]:
    """The limits a group's verdict judged by, as stored with its runs; `default` when
    the workload did not set them."""
    params = dict(group.params)
    out: list[Limit] = []
    for check, max_ms in group.limits.items():
        words, metric, param = _CHECKS.get(check, (check, "", ""))
        out.append(Limit(words, metric, param, max_ms, default=param not in params))
    return tuple(out)


def limits_text(group: Group) -> str:
    """`DB read < 1 ms, log write < 0.5 ms`; `(defaults)` after limits none of which the
    study set, `(default)` after each one it did not set when it set the other."""
    lims = limits(group)
    every = all(lim.default for lim in lims)
    parts = [
        f"{lim.words} < {lim.max_ms:g} ms" + (" (default)" if lim.default and not every else "")
        for lim in lims
    ]
    return ", ".join(parts) + (" (defaults)" if every else "")


@dataclass(frozen=True)
class VerdictCell:
    target: str
    text: str
    """`PASS (3/3)`, `FAIL (0/3)`, or `—` without runs."""
    passed: bool | None


@dataclass(frozen=True)
class VerdictRow:
    """One group's verdicts, one cell per target (in column order)."""

    group: Group
    title: str
    cells: tuple[VerdictCell, ...]
    limits: str
    """The limits judged by, as `limits_text` says them."""

    @property
    def failed(self) -> tuple[str, ...]:
        return tuple(c.target for c in self.cells if c.passed is False)


def _is_verdict(op: str, metric: MetricSpec) -> bool:
    return op == JETSTRESS_OP and metric.unit == VERDICT_UNIT


def _verdict_row(group: Group, memo: dict[int, frozenset[int]] | None = None) -> Row | None:
    return next(rows_matching(group.rows, _is_verdict, memo), None)


def verdicts(comparison: Comparison) -> tuple[VerdictRow, ...]:
    """A row per group that has a verdict, in table order; none when no group has one."""
    return tuple(_verdicts(comparison, failed_only=False)[1])


def failed_verdicts(comparison: Comparison) -> tuple[int, tuple[VerdictHeadline, ...]]:
    """How many groups have a verdict, and a headline for each where some target fails:
    only those are formatted (a summary at 100,000 runs has thousands that pass)."""
    n, rows = _verdicts(comparison, failed_only=True)
    return n, tuple(VerdictHeadline(v) for v in rows)


def _verdicts(comparison: Comparison, *, failed_only: bool) -> tuple[int, list[VerdictRow]]:
    out: list[VerdictRow] = []
    n = 0
    memo: dict[int, frozenset[int]] = {}
    for group in comparison.groups:
        row = _verdict_row(group, memo)
        if row is None:
            continue
        n += 1
        if failed_only and all(passed(row.metric, row.cell(t)) is not False
                               for t in comparison.targets):  # fmt: skip
            continue
        cells = tuple(
            VerdictCell(
                t,
                format_cell(row.metric, row.cell(t), group.runs.get(t, 0)),
                passed(row.metric, row.cell(t)),
            )
            for t in comparison.targets
        )
        out.append(VerdictRow(group, group_title(comparison, group), cells, limits_text(group)))
    return n, out


@dataclass(frozen=True)
class VerdictHeadline:
    """A group where some target fails its verdict: who, and which means broke which
    limit (from the stored per-run JetStress numbers)."""

    row: VerdictRow

    def sentence(self) -> Sentence:
        """`a` and `b` FAIL (0/3 runs pass each): mean log write latency 2.98ms and 1.20ms,
        over the 0.5 ms limit. `c` passes."""
        group = self.row.group
        cells = {c.target: c for c in self.row.cells}
        lims = limits(group)
        # the targets that fail, gathered by the limits they broke
        clusters: dict[tuple[str, ...], list[str]] = {}
        for t in self.row.failed:
            broke = tuple(lim.metric for lim in lims if _runs_over(group, t, lim)[0])
            clusters.setdefault(broke, []).append(t)
        spans: list[Span] = []
        for i, (broke, targets) in enumerate(clusters.items()):
            if i:
                spans.append(Span("; "))
            spans += _names(targets)
            spans.append(Span(" FAIL", "strong"))
            spans.append(Span(f" ({_runs_text([cells[t].text for t in targets])})"))
            said: list[Span] = []
            for lim in lims:
                if lim.metric not in broke:
                    continue
                row = _jetstress_row(group, lim.metric)
                if row is None:
                    continue
                means = [_mean_text(row, t) for t in targets]
                partly = [
                    f"{t} over it in {over} of {n} runs"
                    for t in targets
                    for over, n in [_runs_over(group, t, lim)]
                    if over < n
                ]
                limit = f"the {lim.max_ms:g} ms limit{' (default)' if lim.default else ''}"
                if said:
                    said.append(Span(" and "))
                said.append(
                    Span(
                        f"mean {lim.words} latency {_and(means)}, "
                        + (f"against {limit} ({'; '.join(partly)})" if partly else f"over {limit}")
                    )
                )
            if said:
                spans.append(Span(": "))
                spans += said
        passing = [c.target for c in self.row.cells if c.passed]
        if passing:
            spans.append(Span(". "))
            spans += _names(passing)
            spans.append(Span(" pass" if len(passing) > 1 else " passes"))
            if len(passing) == 1:  # with its means of what the others broke
                broken = {m for b in clusters for m in b}
                means = [
                    f"{lim.words} {_mean_text(r, passing[0])}"
                    for lim in lims
                    if lim.metric in broken and (r := _jetstress_row(group, lim.metric))
                ]
                if means:
                    spans.append(Span(f" ({', '.join(means)})"))
        spans.append(Span("."))
        return tuple(spans)


def verdict_headlines(
    comparison: Comparison, rows: Sequence[VerdictRow] | None = None
) -> tuple[VerdictHeadline, ...]:
    """One per group where some target fails its verdict, in table order; from `rows`
    where the caller has the `verdicts` already (each is a pass over every group)."""
    found = verdicts(comparison) if rows is None else rows
    return tuple(VerdictHeadline(v) for v in found if v.failed)


def _jetstress_row(group: Group, metric: str) -> Row | None:
    try:
        return group.row(JETSTRESS_OP, metric)
    except KeyError:
        return None


def _runs_over(group: Group, target: str, lim: Limit) -> tuple[int, int]:
    """(runs whose mean broke the limit, runs with the number) of one target."""
    row = _jetstress_row(group, lim.metric)
    if row is None:
        return 0, 0
    samples = row.cell(target).samples
    return sum(v >= lim.max_ms * 1e6 for v in samples), len(samples)


def _mean_text(row: Row, target: str) -> str:
    s = row.cell(target).summary
    return "—" if s is None else format_stat(row.metric, s.mean, None)


def _runs_text(texts: Sequence[str]) -> str:
    """`0/3 runs pass` (`each` when several targets say the same), else each one's."""
    counts = [t.partition("(")[2].rstrip(")") for t in texts]
    if len(set(counts)) == 1:
        return f"{counts[0]} runs pass" + (" each" if len(counts) > 1 else "")
    return ", ".join(counts) + " runs pass"


def _and(words: Sequence[str]) -> str:
    if len(words) <= 1:
        return "".join(words)
    return ", ".join(words[:-1]) + " and " + words[-1]


def _names(targets: Sequence[str]) -> list[Span]:
    """`a`, `b` and `c` as spans."""
    spans: list[Span] = []
    for i, t in enumerate(targets):
        if i:
            spans.append(Span(" and " if i == len(targets) - 1 else ", "))
        spans.append(Span(t, "target"))
    return spans
