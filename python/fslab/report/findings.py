"""The conclusions a report states: for each point of a study, which target has the best
headline metric (IOPS, or files/s for file operations), by how much it leads the next
best, and whether that lead is significant.

No statistics are made here: each lead is `fslab.stats.summary.compare_samples` of the
runner-up's samples (as the baseline) against the leader's, the same test `fslab
compare` applies against the study's baseline. A lead is only called a lead when that
test says `better`; `same` is said as "no significant difference", `untested` (a side
with one run) as such.

An application model's points (`oltp`, `mailstore`) are named by their transactions per
second alone: their data and log I/O follows from them. A mailstore's verdicts (PASS or
FAIL per run against its latency limits) are gathered in `verdicts`, and each point
where a target fails gets a sentence of its own (`verdict_headlines`), with the means
that broke the limits.

The sentences are made of `Span`s (plain text, a target name, emphasis) so that the
HTML and Markdown renderers escape and style them each in their own way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from fslab.compare import (
    JETSTRESS_OP,
    TELEMETRY_OP,
    VERDICT_UNIT,
    Cell,
    Comparison,
    Group,
    MetricSpec,
    Row,
)
from fslab.report.format import format_cell, format_stat, group_title, passed
from fslab.stats.summary import Difference, Summary, Verdict, compare_samples
from fslab.stats.warnings import StatWarning
from fslab.study.model import APP_KINDS

HEADLINE_METRIC = "iops"
"""The metric a point's winner is named by: IOPS for block I/O, files/s for files ops."""
APP_HEADLINE_OP = "txn"
"""An application model's headline operation: its transactions (tps)."""


@dataclass(frozen=True)
class Span:
    """A piece of a sentence: `target` is a target's name (coloured in HTML, code in
    Markdown), `strong` emphasized, `plain` as is."""

    text: str
    style: Literal["plain", "target", "strong"] = "plain"


Sentence = tuple[Span, ...]


@dataclass(frozen=True)
class Finding:
    """The best target of one point (group and operation) by the headline metric."""

    group: Group
    title: str
    """The group's title (`cached: rw=randread bs=8KiB`), as in the tables."""
    op: str
    metric: MetricSpec
    best: str
    best_summary: Summary
    runner_up: str | None
    runner_summary: Summary | None
    margin: Difference | None
    """The leader against the runner-up (delta in % of the runner-up's mean); None when
    only one target has data."""
    warnings: tuple[StatWarning, ...]
    """Warnings on the cells of the two targets compared, and the group's about them."""

    @property
    def verdict(self) -> Verdict | None:
        return self.margin.verdict if self.margin else None

    @property
    def significant(self) -> bool:
        return self.margin is not None and self.margin.verdict is Verdict.BETTER

    def sentence(self) -> Sentence:
        """`xfs` has the highest IOPS, 99.0k ± 2.5k: +37.5% over `ext4` (significant,
        p = 0.0036)."""
        m = self.metric
        label = _metric_words(m)
        best = format_stat(m, self.best_summary.mean, self.best_summary.ci_half)
        if self.runner_up is None or self.margin is None:
            return (
                Span(self.best, "target"),
                Span(f" is the only target with {label} here: {best}."),
            )
        delta = _pct(self.margin.delta_pct)
        if self.margin.verdict is Verdict.BETTER:
            return (
                Span(self.best, "target"),
                Span(f" has the {_best_word(m)} {label}, {best}: "),
                Span(f"{delta} over ", "strong"),
                Span(self.runner_up, "target"),
                Span(f" (significant, {_p(self.margin)})."),
            )
        if self.margin.verdict is Verdict.UNTESTED:
            return (
                Span(self.best, "target"),
                Span(f" has the {_best_word(m)} mean {label}, {best}, {delta} over "),
                Span(self.runner_up, "target"),
                Span("; not tested: a side has a single run."),
            )
        return (
            Span("No significant difference", "strong"),
            Span(f" in {label} between "),
            Span(self.best, "target"),
            Span(" and "),
            Span(self.runner_up, "target"),
            Span(f" ({delta} in the mean, {_p(self.margin)})."),
        )


@dataclass(frozen=True)
class Headline:
    """A workload's conclusion over all its points for one operation."""

    workload: str
    op: str
    findings: tuple[Finding, ...]

    def sentence(self) -> Sentence:
        """One finding: its own sentence. Several: how many points each target leads
        significantly, and how many show no significant difference."""
        if len(self.findings) == 1:
            return self.findings[0].sentence()
        n = len(self.findings)
        label = _metric_words(self.findings[0].metric)
        sig = [f for f in self.findings if f.significant]
        untested = sum(1 for f in self.findings if f.verdict is Verdict.UNTESTED)
        spans: list[Span] = []
        if sig:
            spans.append(Span(f"Significantly best {label} in {len(sig)} of the {n} points: "))
            spans += _tally(sig)
            rest = n - len(sig)
            if rest:
                spans.append(
                    Span(
                        f". In the other {rest}, no significant difference between the top two"
                        + (f" ({untested} not tested: a single run)" if untested else "")
                        + "; highest mean there: "
                    )
                )
                spans += _tally([f for f in self.findings if not f.significant])
        else:
            spans.append(Span("No significant difference", "strong"))
            spans.append(
                Span(
                    f" between the top two in any of the {n} points"
                    + (f" ({untested} not tested: a single run)" if untested else "")
                    + f"; highest mean {label}: "
                )
            )
            spans += _tally(list(self.findings))
        spans.append(Span("."))
        return tuple(spans)


def _tally(findings: Sequence[Finding]) -> list[Span]:
    """`xfs` in 8, `ext4` in 2: the leaders of `findings`, most often first."""
    wins: dict[str, int] = {}
    for f in findings:
        wins[f.best] = wins.get(f.best, 0) + 1
    spans: list[Span] = []
    for i, (target, count) in enumerate(sorted(wins.items(), key=lambda kv: -kv[1])):
        if i:
            spans.append(Span(", "))
        spans += [Span(target, "target"), Span(f" in {count}")]
    return spans


def _sig_count(findings: Sequence[Finding]) -> int:
    return sum(f.significant for f in findings)


def _metric_words(metric: MetricSpec) -> str:
    return metric.label  # IOPS, or files/s for file operations


def _best_word(metric: MetricSpec) -> str:
    return "highest" if metric.higher_is_better else "lowest"


def _pct(delta: float | None) -> str:
    if delta is None:
        return "n/a"
    return f"{round(delta, 1) + 0.0:+.1f}%"


def _p(diff: Difference) -> str:
    if diff.p_value is None:
        return "not tested"
    if diff.p_value < 0.0001:
        return "p < 0.0001"
    return f"p = {diff.p_value:.2g}" if diff.p_value < 0.01 else f"p = {diff.p_value:.2f}"


def _ranked(row: Row) -> list[Cell]:
    cells = [c for c in row.cells if c.summary is not None]
    sign = -1.0 if row.metric.higher_is_better else 1.0
    return sorted(cells, key=lambda c: sign * c.summary.mean if c.summary else 0.0)


def find(comparison: Comparison) -> tuple[Finding, ...]:
    """The best target of every (group, engine operation) by the headline metric."""
    out: list[Finding] = []
    for group in comparison.groups:
        title = group_title(comparison, group)
        for row in group.rows:
            if row.metric.name != HEADLINE_METRIC or row.op.endswith(TELEMETRY_OP):
                continue
            if group.kind in APP_KINDS and row.op != APP_HEADLINE_OP:
                continue
            ranked = _ranked(row)
            if not ranked:
                continue
            best = ranked[0]
            runner = ranked[1] if len(ranked) > 1 else None
            assert best.summary is not None
            margin = None
            if runner is not None:
                margin = compare_samples(
                    runner.samples,
                    best.samples,
                    higher_is_better=row.metric.higher_is_better,
                    alpha=comparison.alpha,
                )
            names = {best.target} | ({runner.target} if runner else set())
            cell_warnings = (*best.warnings, *(runner.warnings if runner else ()))
            group_warnings = tuple(w for w in group.warnings if w.target in names)
            out.append(
                Finding(
                    group=group,
                    title=title,
                    op=row.op,
                    metric=row.metric,
                    best=best.target,
                    best_summary=best.summary,
                    runner_up=runner.target if runner else None,
                    runner_summary=runner.summary if runner else None,
                    margin=margin,
                    warnings=tuple(dict.fromkeys((*group_warnings, *cell_warnings))),
                )
            )
    return tuple(out)


def headlines(findings: Sequence[Finding]) -> tuple[Headline, ...]:
    """The findings gathered by workload and operation, in order of appearance."""
    by: dict[tuple[str, str], list[Finding]] = {}
    for f in findings:
        by.setdefault((f.group.workload, f.op), []).append(f)
    return tuple(Headline(w, op, tuple(fs)) for (w, op), fs in by.items())


# -- verdicts --------------------------------------------------------------------------------


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


def _verdict_row(group: Group) -> Row | None:
    return next(
        (r for r in group.rows if r.op == JETSTRESS_OP and r.metric.unit == VERDICT_UNIT), None
    )


def verdicts(comparison: Comparison) -> tuple[VerdictRow, ...]:
    """A row per group that has a verdict, in table order; none when no group has one."""
    out: list[VerdictRow] = []
    for group in comparison.groups:
        row = _verdict_row(group)
        if row is None:
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
    return tuple(out)


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


def verdict_headlines(comparison: Comparison) -> tuple[VerdictHeadline, ...]:
    """One per group where some target fails its verdict, in table order."""
    return tuple(VerdictHeadline(v) for v in verdicts(comparison) if v.failed)


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
