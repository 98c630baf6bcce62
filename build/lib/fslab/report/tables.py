"""The comparison tables of a report as rows of cells, for the HTML and Markdown
renderers: the same columns and numbers as `fslab compare` (`fslab.report.format`),
with each ratio cell's judgement and details (n, CI, the ratio's interval) kept for
styling and tooltips."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from fslab.compare import Cell, Comparison, Group
from fslab.report.format import format_cell, format_vs, group_title, passed, slug, vs_title
from fslab.stats.decision import Judgement
from fslab.stats.warnings import StatWarning

COMPACT_TABLES = 100
"""More comparison tables than this make a report compact: no hover details in the HTML
tables (half a table's bytes) and the warnings one line per kind, not point by point, so
a 10,000-run study's report stays under 15 MB."""


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
    group: Group
    title: str
    anchor: str
    columns: tuple[Column, ...]
    rows: tuple[tuple[TableCell, ...], ...]
    warnings: tuple[StatWarning, ...]


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


def table_views(c: Comparison) -> tuple[TableView, ...]:
    """One table per group: a `runs` row, then one row per operation and metric."""
    views: list[TableView] = []
    cols = _columns(c)
    anchors: set[str] = set()
    for group in c.groups:
        title = group_title(c, group)
        anchor = base = "table-" + slug(title)
        i = 2
        while anchor in anchors:
            anchor, i = f"{base}-{i}", i + 1
        anchors.add(anchor)
        rows: list[tuple[TableCell, ...]] = []
        runs: list[TableCell] = [TableCell("runs", "label")]
        for t in c.targets:
            runs.append(TableCell(str(group.runs.get(t, 0))))
            if not c.is_baseline(t):
                runs.append(TableCell("", "delta"))
        rows.append(tuple(runs))
        for row in group.rows:
            out: list[TableCell] = [TableCell(f"{row.op} {row.metric.label}", "label")]
            for t in c.targets:
                cell = row.cell(t)
                out.append(
                    TableCell(
                        format_cell(row.metric, cell, group.runs.get(t, 0)),
                        title=_value_title(cell),
                        passed=passed(row.metric, cell),
                    )
                )
                if not c.is_baseline(t):
                    out.append(
                        TableCell(
                            format_vs(cell.vs),
                            "delta",
                            verdict=cell.vs,
                            title=vs_title(cell.vs, c.baseline_of(t)),
                        )
                    )
            rows.append(tuple(out))
        views.append(TableView(group, title, anchor, cols, tuple(rows), group.all_warnings()))
    return tuple(views)
