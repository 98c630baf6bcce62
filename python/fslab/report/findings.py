"""The answers a study's author came for: per workload and sweep family, how each target
compares with the baseline over all the family's points, which target is best and by how
much, and how the gap moves along each swept axis. Then the mail store's PASS/FAIL
verdicts, and the sentences that name who failed which limit.

No statistics are made here. A family's ratio is the geometric mean of its points' ratios
(`fslab.stats.decision.combine` of `fslab.compare.log_ratios`), the count of better /
worse / equivalent / inconclusive points is the decision rule's per point (the cells'
`vs`), and a point whose runs are flagged (cached, unsteady) is counted as
such and left out of the mean.

A *family* is one workload's points with one value of `rw` and one operation (random
writes, the copies of a file set, a database's transactions), judged by its headline
metric: IOPS for block I/O, files/s for file operations, transactions per second for the
application models. The sentences are made of `Span`s (plain text, a target name,
emphasis) so that the terminal, HTML and Markdown renderers style them each their way.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

import numpy as np

from fslab.catalog import APP_HEADLINE_OP, entry
from fslab.compare import (
    HEADLINE_METRIC,
    Comparison,
    Group,
    Question,
    Row,
    is_headline,
    log_ratios,
    rows_matching,
    summaries,
)
from fslab.metrics import TELEMETRY_OP, MetricSpec
from fslab.params import format_param, varying_keys
from fslab.report.format import (
    FLAGGED_MARK,
    MARKS,
    format_range,
    format_ratio,
    format_span,
    varying_by_workload,
)
from fslab.stats.decision import (
    EQUIVALENCE_MARGIN,
    Decision,
    Judgement,
    NoVerdict,
    combine,
    within_margin,
)
from fslab.stats.sequential import family_futile
from fslab.stats.summary import MIN_EFFECT_PCT

AXIS_VALUES = 8
"""At most this many values of a swept axis are spelled out in a summary line."""


@dataclass(frozen=True)
class Span:
    """A piece of a sentence: `target` is a target's name (coloured in HTML, code in
    Markdown), `strong` emphasized, `plain` as is."""

    text: str
    style: Literal["plain", "target", "strong"] = "plain"


Sentence = tuple[Span, ...]

_RW_WORDS = {
    "randread": "random reads", "randwrite": "random writes", "read": "sequential reads",
    "write": "sequential writes", "randrw": "random mix", "rw": "sequential mix",
    "readwrite": "sequential mix", "trim": "trims", "randtrim": "random trims",
}  # fmt: skip


@dataclass(frozen=True)
class Gap:
    """A ratio over several points: the geometric mean and its interval (None where a
    point has a single run), over `points` points."""

    ratio: float
    low: float | None
    high: float | None
    points: int
    equivalent: bool = False
    """The interval is the equivalence test's (`1 - 2 alpha`, `fslab.stats.decision`)
    and lies within the margin: where the difference's interval does not decide, the
    one that does, shown."""

    @property
    def decided(self) -> bool:
        if self.equivalent or self.low is None or self.high is None:
            return False
        return self.low > 1 or self.high < 1

    def verdict(self, metric: MetricSpec, margin: float) -> Decision:
        """The decision rule's verdict on the points' geometric mean, by its interval:
        better or worse where it excludes 1 and the change is at least the minimum effect,
        equivalent where it lies within the margin (`margin_bounds`), inconclusive otherwise; NONE
        without an interval (single runs)."""
        if self.low is None or self.high is None:
            return Decision.NONE
        if self.equivalent:
            return Decision.EQUIVALENT
        if self.decided and abs(self.ratio - 1) * 100 >= MIN_EFFECT_PCT:
            if metric.higher_is_better is None:
                return Decision.NONE  # different, neither better nor worse: `different`
            return Decision.BETTER if _better(metric, self.ratio) else Decision.WORSE
        if within_margin(self.low, self.high, margin):
            return Decision.EQUIVALENT
        return Decision.INCONCLUSIVE


def _gap(rows: Sequence[Row], target: str, other: str, alpha: float, margin: float) -> Gap | None:
    """The points' geometric mean ratio with the interval that decides it: the
    difference's (`1 - alpha`) unless it does not exclude 1 by the minimum effect and the
    equivalence interval (`1 - 2 alpha`) lies within the margin."""
    d, se, df = log_ratios(rows, target, other)
    keep = np.isfinite(d)
    got = combine(d[keep], se[keep], df[keep], alpha)
    if got is None:
        return None
    ratio, low, high = got
    points = int(keep.sum())
    if math.isnan(low) or math.isnan(high):
        return Gap(ratio, None, None, points)
    different = (low > 1 or high < 1) and abs(ratio - 1) * 100 >= MIN_EFFECT_PCT
    if not different:
        eq = combine(d[keep], se[keep], df[keep], 2 * alpha)
        if eq is not None and within_margin(eq[1], eq[2], margin):
            return Gap(ratio, eq[1], eq[2], points, equivalent=True)
    return Gap(ratio, low, high, points)


@dataclass(frozen=True)
class TargetAnswer:
    """One target against the baseline over a family's points."""

    target: str
    gap: Gap | None
    """Over the points with a verdict or an inconclusive one: flagged points left out."""
    measured: Gap | None
    """Over every point with a ratio, flagged ones included: said when all are flagged."""
    counts: dict[Decision, int]
    """Points per verdict (NONE: no verdict for a single run or a non-positive value)."""
    flagged: dict[str, int]
    """Points without a verdict because of validity warnings, by their kinds."""
    by_axis: tuple[tuple[str, tuple[tuple[str, Gap | None], ...]], ...]
    """Per swept axis of the family, per value: the gap at that value."""
    spread: tuple[float, float] | None = None
    """The lowest and the highest ratio of a decided point (better, worse, equivalent):
    an inconclusive point's ratio is as much noise as answer."""
    baseline_flagged: dict[str, int] = field(default_factory=dict)
    """Points without a verdict because the *baseline's* runs there are flagged, by the
    kinds of its warnings: the target's own runs may be fine."""
    none_where_base_some: bool = False
    """Every run of the target measured 0 where every run of the baseline measured more
    (no bytes written with `noatime`): no ratio of logs exists, and none is needed."""


@dataclass(frozen=True)
class Answer:
    """A family's answer: each target against the baseline, and the best target."""

    workload: str
    family: str
    """`random writes`, `copy`, `transactions`: what the family's points do."""
    op: str
    metric: MetricSpec
    baseline: str
    points: int
    targets: tuple[TargetAnswer, ...]
    best: str
    runner_up: str | None
    margin: Gap | None
    """The best target's geometric mean over the runner-up's, over their common points."""
    members: tuple[tuple[Group, Row], ...] = field(default=(), repr=False, compare=False)
    """The family's points: each group and its row of the answer's metric."""
    axes: tuple[str, ...] = ()
    """The family's swept axes (`rw` aside): what names a point among the others."""
    question: str = ""
    """The question whose targets these are (`RAID layout`); "" in a study without."""
    equivalence: float = EQUIVALENCE_MARGIN
    """The comparison's equivalence margin."""

    @cached_property
    def overview(self) -> tuple[tuple[Group, str, tuple[Judgement | None, ...]], ...]:
        """Every point: its group, its name among the family's (`iodepth=16 bs=8KiB`) and
        each target's judgement against the baseline (in `targets` order): the overview's
        rows. Made when asked for (the HTML report's table): a summary at the terminal
        names none of a hundred thousand points."""
        names = [t.target for t in self.targets]
        return tuple(
            (g, _point_name(g, self.axes), tuple(r.cell(t).vs for t in names))
            for g, r in self.members
        )

    @property
    def title(self) -> str:
        parts = [self.question] if self.question else []
        parts += [self.workload, self.family] if self.family else [self.workload]
        return " · ".join(parts)

    def headline(self) -> Sentence:
        """`best: xfs, 1.08x ext4's IOPS (1.02-1.15x)` or `highest mean: ... not decided`."""
        m = self.metric
        label = m.label
        if self.runner_up is None or self.margin is None:
            flagged = [t for t in self.targets if t.gap is None and t.measured is not None]
            if flagged:
                return (Span("no best named: ", "strong"), *self._why_flagged(flagged))
            return (Span("only "), Span(self.best, "target"), Span(f" has {label} here."))
        lead = _lead(self.margin, m)
        if self.margin.decided and m.higher_is_better is None:
            # A peak, a size: the highest is not the best.
            return (Span(f"highest mean {label}: "), Span(self.best, "target"),
                    Span(f", {lead} "), Span(self.runner_up, "target"),
                    Span(_interval(self.margin, m)))  # fmt: skip
        if self.margin.decided:
            return (Span("best: ", "strong"), Span(self.best, "target"),
                    Span(f", {lead} "), Span(self.runner_up, "target"),
                    Span(f" in {label}{_interval(self.margin, m)}"))  # fmt: skip
        if self.margin.verdict(m, self.equivalence) is Decision.EQUIVALENT:
            # Bounded inside the margin: an answer, though no best.
            return (Span("no best: ", "strong"), Span(self.best, "target"), Span(" and "),
                    Span(self.runner_up, "target"),
                    Span(f" the same within ±{self.equivalence * 100:g}% in {label}"
                         f"{_interval(self.margin, m)}"))  # fmt: skip
        return (Span(f"{_best_word(m)} mean {label}: "), Span(self.best, "target"),
                Span(f", {lead} "), Span(self.runner_up, "target"),
                Span(f"{_interval(self.margin, m)}: "), Span("not decided", "strong"),
                Span(_more_hint(self.margin)))  # fmt: skip

    def _why_flagged(self, flagged: Sequence[TargetAnswer]) -> Sentence:
        """Why targets whose points are all flagged get no verdict: their own runs, the
        baseline's, or both."""
        own = ", ".join(dict.fromkeys(k for t in flagged for k in t.flagged))
        base = ", ".join(dict.fromkeys(k for t in flagged for k in t.baseline_flagged))
        if not own:
            why = f"'s runs are flagged ({base}), so no other target gets a verdict"
            return (Span("the baseline "), Span(self.baseline, "target"), Span(why))
        spans: tuple[Span, ...] = (
            Span(f"{len(flagged)} of the {len(self.targets)} other targets get no verdict: "
                 f"their runs are flagged ({own})"),
        )  # fmt: skip
        if base:
            spans += (Span(", and the baseline "), Span(self.baseline, "target"),
                      Span(f"'s are ({base})"))  # fmt: skip
        return spans

    def lines(self) -> list[Sentence]:
        """One sentence per target but the baseline: `btrfs: 7.7x lower IOPS than ext4
        (7.1-8.4x), worse at 2 of 2 points; by bs: 4KiB 0.13x, 64KiB 0.5x`. Only a
        decided difference (or equivalence) is said as a finding; an undecided one says
        the bound its runs set: `xfs: within -9.0% to +6.0% of ext4's IOPS, not decided`."""
        out: list[Sentence] = []
        m = self.metric
        for t in self.targets:
            spans: list[Span] = [Span(t.target, "target"), Span(": ")]
            verdict = t.gap.verdict(m, self.equivalence) if t.gap is not None else None
            if t.gap is None and t.measured is not None:
                spans.append(Span(f"{format_ratio(t.measured.ratio)} of "))
                spans += [Span(self.baseline, "target"), Span(" as measured; no verdict")]
            elif t.gap is None:
                spans.append(Span("no ratio to " + self.baseline))
            elif verdict in (Decision.BETTER, Decision.WORSE) or different(t.gap, m):
                spans.append(Span(_change(t.gap, m), "strong"))
                spans += [Span(" than "), Span(self.baseline, "target")]
                spans.append(Span(_interval(t.gap, m)))
            elif verdict is Decision.EQUIVALENT:
                spans += [Span("equivalent", "strong"), Span(" to "),
                          Span(self.baseline, "target"),
                          Span(f" in {m.label} (within ±{self.equivalence * 100:.3g}%: "
                               f"{_interval(t.gap, m).removeprefix(' (')}")]  # fmt: skip
            elif verdict is Decision.INCONCLUSIVE:
                spans += [Span(f"within {_bound(t.gap)} of "), Span(self.baseline, "target"),
                          Span(f"'s {m.label}, not decided")]  # fmt: skip
            else:
                spans += [Span(f"measured {_change(t.gap, m)} than "),
                          Span(self.baseline, "target"), Span(_interval(t.gap, m))]  # fmt: skip
            # A family's interval pools its points: it may decide what no point does on
            # its own, and the line says so rather than seem to contradict itself.
            pooled = (verdict in (Decision.BETTER, Decision.WORSE, Decision.EQUIVALENT)
                      and self.points > 1 and t.counts.get(verdict, 0) < self.points)  # fmt: skip
            lead = f"; decided by the {self.points} points together, on their own: "
            spans.append(Span((lead if pooled else ", ") + _counts(t, self.points, self.baseline)))
            for axis, values in t.by_axis:
                shown = [f"{v}: {format_ratio(g.ratio)}" for v, g in values if g is not None]
                if len(shown) > 1:
                    spans.append(Span(f"; by {axis}: " + ", ".join(shown)))
            out.append(tuple(spans))
        return out


GRID_ANSWERS = 4
"""A question with more families than this is summarized as a grid (a row per family, a
column per target) instead of sentences: diskspd's six patterns on five layouts would be
thirty sentences."""
MIXED_MARK = "·"
"""A family's mark where its points were found better at some and worse at others."""
SPREAD_SHOWN = 1.5
"""A grid cell gives the lowest and highest ratio of its decided points where the one is
this many times the other: a mean of 1.4x and 4.0x is not a 2.4x answer."""
GRID_LEGEND = (
    "grids: each target's geometric mean ratio over a family's points, or the lowest…highest "
    f"decided point where they differ by more than {SPREAD_SHOWN:g}x, and the verdict on "
    "the mean's interval (better, worse, ≈ equivalent, ! flagged) with the points that are "
    "so on their own where not all are (worse 12/18); undecided: the interval itself "
    f"(0.91-1.06x ?), the bound the runs set; {MIXED_MARK}: better at some points, worse at "
    "others. best: the highest mean (the lowest latency), ? where its lead over the next is "
    "not decided; - for a peak or a size, which no direction makes better"
)


@dataclass(frozen=True)
class GridCell:
    """A target's family in a grid: `0.44x [0.12-0.91] worse 12/18`."""

    text: str
    decision: Decision | None
    """Worse or better where some points are (never both), else equivalent where some
    are; None where they point both ways, none is decided, or the runs are flagged."""
    flagged: bool


@dataclass(frozen=True)
class GridRow:
    label: str
    """The family (`seq-read-64k`, `files · copy`), without the question's name."""
    answer: Answer
    cells: tuple[GridCell | None, ...]
    """One per target of the grid (None: the target has no ratio here)."""
    best: str
    """The best target, `?` after it where its lead is not decided; `-` where flagged
    runs leave none named."""


@dataclass(frozen=True)
class Grid:
    """A question's families by one metric, a row per family and a column per target."""

    question: str
    title: str
    """`RAID layout: IOPS against raid0`."""
    baseline: str
    targets: tuple[str, ...]
    rows: tuple[GridRow, ...]


def grid(question: str, listed: Sequence[Answer]) -> Grid:
    """The families of a question as a grid."""
    base = listed[0].baseline
    names = tuple(dict.fromkeys(t.target for a in listed for t in a.targets))
    metrics = ", ".join(dict.fromkeys(a.metric.label for a in listed))
    # A workload of one family is named by the workload alone (diskspd's patterns).
    per_workload: dict[str, int] = {}
    for a in listed:
        per_workload[a.workload] = per_workload.get(a.workload, 0) + 1
    rows: list[GridRow] = []
    for a in listed:
        label = a.title.removeprefix(f"{question} · ") if question else a.title
        by_target = {t.target: _grid_cell(t, a) for t in a.targets}
        rows.append(GridRow(a.workload if per_workload[a.workload] == 1 else label, a,
                            tuple(by_target.get(n) for n in names), _best_cell(a)))  # fmt: skip
    title = f"{question + ': ' if question else ''}{metrics} against {base}"
    return Grid(question, title, base, names, tuple(rows))


MOVES_SHOWN = 6
"""Under a grid in the terminal, at most this many of `moves`: the rest are in the
reports' sentences."""


@dataclass(frozen=True)
class Move:
    """How a swept axis moves a target's ratio within one of a grid's families."""

    family: str
    target: str
    axis: str
    values: tuple[tuple[str, float], ...]
    """Each value of the axis and the target's geometric mean ratio there."""

    @property
    def factor(self) -> float:
        ratios = [r for _, r in self.values]
        return max(ratios) / min(ratios)


def moves(g: Grid) -> tuple[Move, ...]:
    """Where a swept axis (threads, bs, a file set, ...) moves a target's ratio within a
    family by more than `SPREAD_SHOWN`, the largest first: what the grid's one number per
    cell cannot say, and the sentences' `by threads: ...` would."""
    out: list[Move] = []
    for row in g.rows:
        for t in row.answer.targets:
            for axis, values in t.by_axis:
                shown = tuple((v, gap.ratio) for v, gap in values if gap is not None)
                if len(shown) < 2:
                    continue
                m = Move(row.label, t.target, axis, shown)
                if m.factor > SPREAD_SHOWN:
                    out.append(m)
    return tuple(sorted(out, key=lambda m: -m.factor))


def different(gap: Gap, m: MetricSpec) -> bool:
    """A metric no direction of which is better (a peak, an I/O size) whose mean's
    interval excludes 1 by at least the minimum effect: `higher` or `lower`, no verdict."""
    return m.higher_is_better is None and gap.decided and abs(gap.ratio - 1) * 100 >= MIN_EFFECT_PCT


def _grid_cell(t: TargetAnswer, a: Answer) -> GridCell | None:
    """`0.44x worse`, `0.44x worse 12/18`, `1.01x…4.00x worse`, `0.91-1.06x ?`: the mark is
    the verdict on the family's geometric mean (its interval, as the sentences say it), the
    count the points that are so on their own where not all are."""
    points = a.points
    if t.none_where_base_some:
        return GridCell("none", None, False)
    if t.gap is None:
        if t.measured is None:
            return None
        return GridCell(f"{format_ratio(t.measured.ratio)} {FLAGGED_MARK}", None, True)
    # Points far apart: their range is the answer, not the mean between them.
    wide = t.spread is not None and t.spread[1] > SPREAD_SHOWN * t.spread[0]
    ratio = format_span(*t.spread) if wide and t.spread else format_ratio(t.gap.ratio)
    if t.counts.get(Decision.BETTER) and t.counts.get(Decision.WORSE):
        return GridCell(f"{ratio} {MIXED_MARK}", None, False)
    d = t.gap.verdict(a.metric, a.equivalence)
    if different(t.gap, a.metric):
        return GridCell(f"{ratio} {'higher' if t.gap.ratio > 1 else 'lower'}", None, False)
    if d in _DECIDED:
        n = t.counts.get(d, 0)
        # An amount of work (bytes written) gets no verdict per point, only on the mean:
        # `0/1` would read as a contradiction of the mark.
        judged = sum(t.counts.get(k, 0) for k in (*_DECIDED, Decision.INCONCLUSIVE))
        text = (
            f"{ratio} {MARKS[d]}"
            if n == points or judged == 0
            else f"{ratio} {MARKS[d]} {n}/{points}"
        )
        return GridCell(text, d, False)
    if d is Decision.INCONCLUSIVE and t.gap.low is not None and t.gap.high is not None:
        bound = ratio if wide else format_range(t.gap.low, t.gap.high)
        return GridCell(f"{bound} {MARKS[Decision.INCONCLUSIVE]}", None, False)
    return GridCell(ratio, None, False)


_DECIDED = (Decision.WORSE, Decision.BETTER, Decision.EQUIVALENT)
_AGAINST = {Decision.BETTER: Decision.WORSE, Decision.WORSE: Decision.BETTER}


def _best_cell(a: Answer) -> str:
    if a.metric.higher_is_better is None:
        return "-"  # a peak, a size: no value of it is better
    if a.runner_up is None or a.margin is None:
        return "-" if any(t.gap is None and t.measured for t in a.targets) else a.best
    if a.margin.verdict(a.metric, a.equivalence) is Decision.EQUIVALENT:
        return f"{a.best} {MARKS[Decision.EQUIVALENT]} {a.runner_up}"  # a tie, shown
    return a.best if a.margin.decided else f"{a.best} ?"


def decides(a: Answer) -> bool:
    """Whether some point found some target better or worse than the baseline."""
    return any(t.counts.get(Decision.BETTER) or t.counts.get(Decision.WORSE) for t in a.targets)


def pooled(
    comparison: Comparison, answered: Sequence[Answer] | None = None
) -> set[tuple[str, str]]:
    """The (point, headline op) comparisons that their family's pooled interval decides:
    better, worse or equivalent over two points or more, no point of it decided the
    other way (a family better at some points and worse at others is not answered by its
    mean). The adaptive loop stops them (`fslab.stats.sequential.look`). `answered`: the
    comparison's `answers`, where the caller has them."""
    out: set[tuple[str, str]] = set()
    for a in answers(comparison) if answered is None else answered:
        for t in a.targets:
            if t.gap is None or t.gap.points < 2:
                continue
            verdict = t.gap.verdict(a.metric, a.equivalence)
            if verdict not in _DECIDED:
                continue
            if t.counts.get(_AGAINST.get(verdict, Decision.NONE)):
                continue
            out |= {(g.points[t.target], a.op) for g, _, _ in a.overview if t.target in g.points}
    return out


def futile_families(
    comparison: Comparison, repeat_max: int, answered: Sequence[Answer] | None = None
) -> set[tuple[str, str]]:
    """The (point, headline op) comparisons whose family's pooled interval is undecided
    and `repeat_max` rounds would likely not decide (`fslab.stats.sequential.
    family_futile`, the points' spreads pooled): the adaptive loop stops those of them
    whose own runs would not likely decide them either (`fslab.stats.sequential.look`)."""
    out: set[tuple[str, str]] = set()
    flagged = (NoVerdict.FLAGGED, NoVerdict.BASELINE_FLAGGED)
    for a in answers(comparison) if answered is None else answered:
        for t in a.targets:
            if t.gap is None or t.gap.points < 2:
                continue
            if t.gap.verdict(a.metric, a.equivalence) is not Decision.INCONCLUSIVE:
                continue
            # The points the family's interval stands on (`_answer`'s fair ones).
            rows = [r for _, r in a.members if _fair(r.cell(t.target).vs, flagged)]
            d, se, df = log_ratios(rows, t.target, a.baseline)
            n = np.array([_runs(r, t.target, a.baseline) for r in rows], dtype=np.int64)
            keep = np.isfinite(d)
            if keep.sum() < 2 or not family_futile(
                d[keep], se[keep], df[keep], n[keep], repeat_max, comparison.alpha,
                a.equivalence,
            ):  # fmt: skip
                continue
            out |= {(g.points[t.target], a.op) for g, _ in a.members if t.target in g.points}
    return out


def _fair(vs: Judgement | None, flagged: Collection[NoVerdict]) -> bool:
    return vs is not None and vs.why not in flagged


def _runs(row: Row, target: str, baseline: str) -> int:
    """The runs a comparison of `target` with `baseline` stands on: the fewer side's."""
    a, b = row.cell(target).summary, row.cell(baseline).summary
    return min(a.n, b.n) if a is not None and b is not None else 0


def summary(comparison: Comparison) -> tuple[Answer | Grid, ...]:
    """The summary's answers in order, the same in the terminal, HTML and Markdown: per
    question its families by the headline metric (as sentences, or a grid where more than
    `GRID_ANSWERS`), then a grid per question for each metric the study names (its
    `summary` key: the seed's own question, a peak, an I/O size, a latency), then for each
    of the `EFFICIENCY_METRICS` where some point tells its targets apart (write
    amplification of read-only runs is nothing to report)."""
    named = tuple(m for m in dict.fromkeys(comparison.summary_metrics) if m != HEADLINE_METRIC)
    extra = tuple(m for m in EFFICIENCY_METRICS if m not in named)
    found = answers_by_metric(comparison, (HEADLINE_METRIC, *named, *extra), named=named)
    out: list[Answer | Grid] = []
    for question, listed in _by_question(found[HEADLINE_METRIC]).items():
        if len(listed) > GRID_ANSWERS:
            out.append(grid(question, listed))
        else:
            out += listed
    for metric in named:
        for question, listed in _by_question(found[metric]).items():
            out.append(grid(question, listed))
    for metric in extra:
        for question, listed in _by_question(a for a in found[metric] if decides(a)).items():
            out.append(grid(question, listed))
    return tuple(out)


def worse_findings(comparison: Comparison) -> list[str]:
    """`xfs: files · create files/s worse than ext4 at 2 of 3 points (0.81x)`: each
    target the summary decided worse than its baseline at some point, per family and
    metric (`fslab compare --fail-on worse`)."""
    out: list[str] = []
    for item in summary(comparison):
        answers = [r.answer for r in item.rows] if isinstance(item, Grid) else [item]
        for a in answers:
            for t in a.targets:
                n = t.counts.get(Decision.WORSE, 0)
                if n or (t.gap is not None and t.gap.verdict(a.metric, a.equivalence)
                         is Decision.WORSE):  # fmt: skip
                    ratio = f" ({format_ratio(t.gap.ratio)})" if t.gap is not None else ""
                    where = (
                        f"at {n} of {a.points} point{'s' if a.points != 1 else ''}"
                        if n
                        else "over its points' mean"
                    )
                    out.append(
                        f"{t.target}: {a.workload} · {a.family} {a.metric.label} worse than "
                        f"{a.baseline} {where}{ratio}"
                    )
    return list(dict.fromkeys(out))


def _by_question(found: Iterable[Answer]) -> dict[str, list[Answer]]:
    out: dict[str, list[Answer]] = {}
    for a in found:
        out.setdefault(a.question, []).append(a)
    return out


def _best_word(m: MetricSpec) -> str:
    return "lowest" if m.higher_is_better is False else "highest"


def _better(m: MetricSpec, ratio: float) -> bool:
    return ratio >= 1 if m.higher_is_better else ratio <= 1


def _change(gap: Gap, m: MetricSpec) -> str:
    """`7.7x lower IOPS`, `8.0% higher IOPS`, `0.3% lower IOPS`: never "the same", which
    only an `equivalent` verdict may say."""
    r = gap.ratio
    word = "higher" if r >= 1 else "lower"
    if r >= 1.5 or r <= 1 / 1.5:
        times = r if r >= 1 else 1 / r
        return f"{format_ratio(times)} {word} {m.label}"
    return f"{_pct(r).lstrip('+-')} {word} {m.label}"


def _interval(gap: Gap, m: MetricSpec) -> str:
    """` (7.1-8.4x)` in the words of `_change`; ` (no interval: single runs)`."""
    if gap.low is None or gap.high is None:
        return " (no interval: single runs)"
    r, lo, hi = gap.ratio, gap.low, gap.high
    if r >= 1.5 or r <= 1 / 1.5:
        if r < 1:
            lo, hi = 1 / hi, 1 / lo
        return f" ({sig(lo)}-{sig(hi)}x)"
    return f" ({_pct(lo)} to {_pct(hi)})"


def _bound(gap: Gap) -> str:
    """`-9.0% to +6.0%`, `0.20x to 5.00x`: where an undecided ratio lies, by its interval."""
    assert gap.low is not None and gap.high is not None
    lo, hi = gap.low, gap.high
    if hi >= 1.5 or lo <= 1 / 1.5:
        return f"{format_ratio(lo)} to {format_ratio(hi)}"
    return f"{_pct(lo)} to {_pct(hi)}"


def _pct(ratio: float) -> str:
    """A ratio as a signed change: `+24%`, `-0.2%` (a decimal under 10%)."""
    x = (ratio - 1) * 100
    return f"{round(x, 1) + 0.0:+.1f}%" if abs(x) < 9.95 else f"{x:+.0f}%"


def sig(x: float) -> str:
    return format_ratio(x).removesuffix("x")


def _lead(gap: Gap, m: MetricSpec) -> str:
    """How the best leads the runner-up: `1.4x the IOPS of`, `8% ahead of`."""
    r = 1 / gap.ratio if m.higher_is_better is False else gap.ratio
    if r >= 1.5:
        return f"{format_ratio(r)} ahead of"
    return f"{_pct(r).lstrip('+-')} ahead of"


def _more_hint(gap: Gap) -> str:
    """Nothing where there is an interval: it bounds the difference, and whether more
    runs would decide it is for each point's cell to say (its runs to go, or an adaptive
    study's early stop at the noise seen)."""
    return "" if gap.low is not None else " (single runs)"


def _counts(t: TargetAnswer, points: int, baseline: str) -> str:
    """`worse at 20 of 20 points`; `worse at 18, inconclusive at 2 of 20 points`;
    `ext4's runs flagged (unsteady) at 3 of 3 points`."""
    parts = [f"{d.word} at {t.counts[d]}" for d in _ORDER if t.counts.get(d)]
    parts += [f"flagged ({k}) at {n}" for k, n in t.flagged.items()]
    parts += [f"{baseline}'s runs flagged ({k}) at {n}" for k, n in t.baseline_flagged.items()]
    if t.counts.get(Decision.NONE):
        parts.append(f"no verdict at {t.counts[Decision.NONE]}")
    if not parts:
        return f"{points} point{'s' if points != 1 else ''}"
    if len(parts) == 1 and parts[0].endswith(f" at {points}"):
        return f"{parts[0]} of {points} point{'s' if points != 1 else ''}"
    return ", ".join(parts) + f" of {points} point{'s' if points != 1 else ''}"


_ORDER = (Decision.WORSE, Decision.BETTER, Decision.EQUIVALENT, Decision.INCONCLUSIVE)


def _family(group: Group, op: str) -> str:
    rw = dict(group.params).get("rw")
    kind = entry(group.kind)
    if kind.model or op == APP_HEADLINE_OP:
        return "transactions"
    if not op:  # a block run's device
        return _RW_WORDS.get(str(rw), f"rw={rw}") if rw is not None else ""
    if rw is None:
        # A files op is its own family; a fio job file's reads and writes are too.
        return kind.family(op)
    words = _RW_WORDS.get(str(rw), f"rw={rw}")
    mixed = str(rw) in ("randrw", "rw", "readwrite")
    return f"{words}, {op}s" if mixed else words


EFFICIENCY_METRICS = ("write_amplification", "space_amplification")
"""What else a summary answers where the points tell targets apart: the seeds' bytes to
disk and size on disk, per unit of work."""


def answers(comparison: Comparison, metric: str = HEADLINE_METRIC) -> tuple[Answer, ...]:
    """The answer of every question's every family of the comparison, in order of
    appearance (a question of one target has nothing to answer): by the headline metric,
    or by one of the device's `EFFICIENCY_METRICS` (a family is then its op's)."""
    return answers_by_metric(comparison, (metric,))[metric]


def answers_by_metric(
    comparison: Comparison, metrics: Sequence[str], named: Collection[str] = ()
) -> dict[str, tuple[Answer, ...]]:
    """`answers` by each of `metrics`, from one pass over the comparison's rows (a large
    study has half a million): the headline metric's rows, the devices' rows of the
    others, and every row of the `named` ones (a study's `summary` key: an application's
    log write latency is its own family)."""
    fams: dict[str, dict[tuple[str, str, str], list[tuple[Group, Row]]]] = {m: {} for m in metrics}
    memo: dict[int, frozenset[int]] = {}
    for group in comparison.groups:
        for row in rows_matching(group.rows, lambda _op, m: m.name in fams, memo):
            metric = row.metric.name
            if metric == HEADLINE_METRIC:
                if not is_headline(group.kind, row):
                    continue
                op = row.op
            elif row.op.endswith(TELEMETRY_OP):
                op = row.op.removesuffix(TELEMETRY_OP).strip()
            elif metric in named:
                op = row.op
            else:
                continue
            family = _family(group, op)
            if entry(group.kind).model and op not in ("", APP_HEADLINE_OP):
                family = op.replace("_", " ")  # an application's own operation: log writes
            key = (group.workload, family, row.op)
            fams[metric].setdefault(key, []).append((group, row))
    questions = [q for q in comparison.all_questions if len(q.targets) > 1]
    if not questions:
        questions = list(comparison.all_questions[:1])
    # A family's axes are among its workload's: each family looks at those keys alone.
    varying = varying_by_workload(comparison) if any(fams.values()) else {}
    return {
        m: tuple(
            a
            for q in questions
            for (workload, family, op), members in by.items()
            if (a := _answer(comparison, q, workload, family, op, members, varying[workload]))
            is not None
        )
        for m, by in fams.items()
    }


def _answer(
    c: Comparison,
    question: Question,
    workload: str,
    family: str,
    op: str,
    members: Sequence[tuple[Group, Row]],
    among: Collection[str],
) -> Answer | None:
    rows = [r for _, r in members]
    metric = rows[0].metric
    base = question.baseline
    present = [t for t in question.targets if any(r.measured(t) for r in rows)]
    if not present:
        return None
    axes = _axes([g for g, _ in members], among)
    targets: list[TargetAnswer] = []
    for t in question.targets:
        if t == base or t not in present:
            continue
        counts: dict[Decision, int] = {}
        flagged: dict[str, int] = {}
        base_flagged: dict[str, int] = {}
        fair: list[Row] = []
        measured: list[Row] = []
        decided: list[float] = []
        for r in rows:
            vs = r.vs(t)
            if vs is None:
                continue
            measured.append(r)
            if vs.why in (NoVerdict.FLAGGED, NoVerdict.BASELINE_FLAGGED):
                by = flagged if vs.why is NoVerdict.FLAGGED else base_flagged
                by[vs.flags] = by.get(vs.flags, 0) + 1
                continue
            counts[vs.decision] = counts.get(vs.decision, 0) + 1
            fair.append(r)
            if vs.decision in _DECIDED and vs.ratio is not None:
                decided.append(vs.ratio)
        by_axis = tuple(
            (axis, tuple((text, _gap(sub, t, base, c.alpha, c.margin))
                         for text, sub in _split(members, axis, fair)))
            for axis in axes
        )  # fmt: skip
        targets.append(
            TargetAnswer(t, _gap(fair, t, base, c.alpha, c.margin),
                         _gap(measured, t, base, c.alpha, c.margin), counts, flagged, by_axis,
                         (min(decided), max(decided)) if decided else None, base_flagged,
                         _none_where_base_some(rows, t, base))
        )  # fmt: skip
    # The best: the highest geometric mean ratio to the baseline (the lowest for latency;
    # the highest for a peak or a size, which no direction makes better).
    means = {base: 1.0} if base in present else {}
    means.update({a.target: a.gap.ratio for a in targets if a.gap is not None})
    means.update({a.target: 0.0 for a in targets if a.none_where_base_some})
    sign = -1.0 if metric.higher_is_better is False else 1.0
    ranked = sorted(means, key=lambda t: -sign * (math.log(means[t]) if means[t] else -math.inf))
    if not ranked:
        return None
    best = ranked[0]
    runner = ranked[1] if len(ranked) > 1 else None
    margin = _gap(rows, best, runner, c.alpha, c.margin) if runner else None
    return Answer(workload, family, op, metric, base, len(rows), tuple(targets), best,
                  runner, margin, tuple(members), tuple(axes), question.name,
                  c.margin)  # fmt: skip


def _none_where_base_some(rows: Sequence[Row], target: str, base: str) -> bool:
    """Whether at every point both measured, the target's runs all measured 0 and the
    baseline's all more (a mean of 0 over values that are never negative)."""
    n_t, mean_t, _ = summaries(rows, target)
    n_b, mean_b, stdev_b = summaries(rows, base)
    both = (n_t > 0) & (n_b > 0)
    if not both.any():
        return False
    mean_t, mean_b, stdev_b = mean_t[both], mean_b[both], np.nan_to_num(stdev_b[both])
    return bool(((mean_t == 0) & (mean_b > 0) & (stdev_b < mean_b)).all())


def _point_name(group: Group, keys: Sequence[str]) -> str:
    params = dict(group.params)
    shown = [f"{k}={format_param(k, params[k])}" for k in keys if k in params]
    return " ".join(shown) or "(one point)"


def _axes(groups: Sequence[Group], among: Collection[str]) -> list[str]:
    """The swept axes of a family (`rw` is what sets families apart), of the keys
    `among` (its workload's)."""
    return [k for k in varying_keys((g.params for g in groups), among=among) if k != "rw"]


def _split(
    members: Sequence[tuple[Group, Row]], axis: str, fair: Sequence[Row]
) -> list[tuple[str, list[Row]]]:
    """The fair rows per value of `axis`, in the order of its values (numbers by size)."""
    keep = {id(r) for r in fair}
    by: dict[Any, list[Row]] = {}
    for g, r in members:
        if id(r) in keep:
            by.setdefault(dict(g.params).get(axis), []).append(r)

    def key(v: Any) -> tuple[bool, float, str]:
        number = isinstance(v, int | float) and not isinstance(v, bool)
        return (not number, float(v) if number else 0.0, "" if number else str(v))

    order = sorted(by, key=key)
    out = [(format_param(axis, v), by[v]) for v in order]
    return out if len(out) <= AXIS_VALUES else out[:AXIS_VALUES]
