"""The conclusions a report states: for each point of a study, which target has the best
headline metric (IOPS, or files/s for file operations), by how much it leads the next
best, and whether that lead is significant.

No statistics are made here: each lead is `fslab.stats.summary.compare_samples` of the
runner-up's samples (as the baseline) against the leader's, the same test `fslab
compare` applies against the study's baseline. A lead is only called a lead when that
test says `better`; `same` is said as "no significant difference", `untested` (a side
with one run) as such.

The sentences are made of `Span`s (plain text, a target name, emphasis) so that the
HTML and Markdown renderers escape and style them each in their own way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from fslab.compare import TELEMETRY_OP, Cell, Comparison, Group, MetricSpec, Row
from fslab.report.terminal import format_stat, group_title
from fslab.stats.summary import Difference, Summary, Verdict, compare_samples
from fslab.stats.warnings import StatWarning

HEADLINE_METRIC = "iops"
"""The metric a point's winner is named by: IOPS for block I/O, files/s for files ops."""


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
