"""The comparison tables of a report as rows of cells, for the HTML and Markdown
renderers: the same columns and numbers as `fslab compare` (`fslab.report.format`),
with each ratio cell's judgement and details (n, CI, the ratio's interval) kept for
styling and tooltips."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from fslab.compare import Cell, Comparison, Group, each_row
from fslab.report.format import format_cell, format_vs, group_title, passed, slug, vs_title
from fslab.stats.decision import Judgement
from fslab.stats.warnings import StatWarning

COMPACT_TABLES = 100
"""More comparison tables than this make a report compact: no hover details in the HTML
tables (half a table's bytes) and the warnings one line per kind, not point by point, so
a 10,000-run study's report stays under 15 MB."""


def is_compact(c: Comparison) -> bool:
    """Whether a report of `c` is compact (`COMPACT_TABLES`)."""
    return len(c.groups) > COMPACT_TABLES


@dataclass(frozen=True)
class TableCell:
    text: str
    kind: Literal["label", "value", "delta"] = "value"
    verdict: Judgement | None = None
    """A ratio cell's judgement against the baseline."""
    title: str = ""
    """Details for a tooltip: n, standard deviation, CI; a ratio's interval and verdict."""
    passed: bool | None = None
    """A verdict cell's outcome (PASS: True, FAIL: False)."""


@dataclass(frozen=True)
class Column:
    text: str
    target: str | None
    """The target whose values the column holds; None for the label and ratio columns."""
    delta: bool = False


@dataclass(frozen=True)
class TableView:
    """One group's table. Its `rows` are made each time they are read, not kept: a
    study of 100,000 runs has millions of cells, and a renderer reads each table once."""

    comparison: Comparison
    group: Group
    title: str
    anchor: str
    columns: tuple[Column, ...]
    warnings: tuple[StatWarning, ...]
    titles: bool = True
    """Whether cells carry their `title` (a compact report shows none)."""

    @property
    def rows(self) -> tuple[tuple[TableCell, ...], ...]:
        return _rows(self.comparison, self.group, titles=self.titles)


def _columns(c: Comparison) -> tuple[Column, ...]:
    cols = [Column("", None)]
    for t in c.targets:
        if c.is_baseline(t):
            cols.append(Column(f"{t} (baseline)", t))
        else:
            cols += [Column(t, t), Column("ratio", None, delta=True)]
    return tuple(cols)


def _value_title(cell: Cell) -> str:
    s = cell.summary
    if s is None:
        return "no completed run with this value"
    if s.stdev is None or s.ci_half is None:
        return f"n={s.n}: a single run, no interval"
    low, high = s.mean - s.ci_half, s.mean + s.ci_half
    return f"n={s.n}, stdev {s.stdev:.4g}, {s.confidence:.0%} CI {low:.4g} to {high:.4g}"


def table_views(c: Comparison, *, titles: bool = True) -> tuple[TableView, ...]:
    """One table per group: a `runs` row, then one row per operation and metric; its
    cells with their tooltips' `title` unless `titles` is False."""
    views: list[TableView] = []
    cols = _columns(c)
    anchors: set[str] = set()
    # The next number to try per slug: thousands of points can share one (a sweep whose
    # title leaves the swept value out), and trying from 2 each time is quadratic.
    next_number: dict[str, int] = {}
    for group in c.groups:
        title = group_title(c, group)
        anchor = base = "table-" + slug(title)
        i = next_number.get(base, 2)
        while anchor in anchors:
            anchor, i = f"{base}-{i}", i + 1
        next_number[base] = i
        anchors.add(anchor)
        views.append(TableView(c, group, title, anchor, cols, group.all_warnings(), titles))
    return tuple(views)


def _rows(c: Comparison, group: Group, *, titles: bool) -> tuple[tuple[TableCell, ...], ...]:
    rows: list[tuple[TableCell, ...]] = []
    runs: list[TableCell] = [TableCell("runs", "label")]
    for t in c.targets:
        runs.append(TableCell(str(group.runs.get(t, 0))))
        if not c.is_baseline(t):
            runs.append(TableCell("", "delta"))
    rows.append(tuple(runs))
    for row in each_row(group.rows):
        out: list[TableCell] = [TableCell(f"{row.op} {row.metric.label}", "label")]
        for t in c.targets:
            cell = row.cell(t)
            out.append(
                TableCell(
                    format_cell(row.metric, cell, group.runs.get(t, 0)),
                    title=_value_title(cell) if titles else "",
                    passed=passed(row.metric, cell),
                )
            )
            if not c.is_baseline(t):
                out.append(
                    TableCell(
                        format_vs(cell.vs),
                        "delta",
                        verdict=cell.vs,
                        title=vs_title(cell.vs, c.baseline_of(t)) if titles else "",
                    )
                )
        rows.append(tuple(out))
    return tuple(rows)
