"""`fslab compare` in the terminal: the header, one rich table per group, the warnings and
the legend."""

from __future__ import annotations

import io

from rich import box
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from fslab.compare import Comparison, MetricSpec
from fslab.compare import Group as CompareGroup
from fslab.report.format import (
    group_title,
    header,
    legend,
    mark,
    row_cells,
    runs_cells,
    table_columns,
    warning_hints,
    warning_lines,
)
from fslab.safe_text import safe_text
from fslab.stats.summary import Verdict

_STYLES = {Verdict.BETTER: "bold green", Verdict.WORSE: "bold red", Verdict.UNTESTED: "dim",
           Verdict.DIFFERENT: "bold yellow"}  # fmt: skip
_PASS_STYLES = {True: "bold green", False: "bold red"}


def table_renderable(comparison: Comparison) -> RenderableType:
    """The header, one rich table per group, and the legend. Every name in it (study,
    targets, workloads, parameters, ops, warnings) comes from a results database, which
    may be someone else's: each is terminal-safe (`safe_text`), and rich reads no markup
    in it (`render_table`'s console has none, and the rest are `Text`)."""
    parts: list[RenderableType] = [Text(safe_text(header(comparison)), style="bold")]
    for i, group in enumerate(comparison.groups):
        table = Table(
            title=Text(safe_text(group_title(comparison, group))),
            title_justify="left",
            title_style="bold",
            box=box.SIMPLE_HEAD,
            pad_edge=False,
        )
        table.add_column("")
        for name in table_columns(comparison):
            table.add_column(Text(safe_text(name)), justify="right", no_wrap=True)
        table.add_row("runs", *runs_cells(comparison, group), end_section=True)
        ops = group.ops
        for row in group.rows:
            cells = {c.target: c for c in row.cells}
            rendered: list[RenderableType] = [Text(safe_text(f"{row.op} {row.metric.label}"))]
            for text, verdict, ok in row_cells(comparison, group, cells, row.metric):
                word = mark(verdict)
                if ok is not None:
                    rendered.append(Text(text, style=_PASS_STYLES[ok]))
                elif verdict and word:
                    rendered.append(Text.assemble(text, " ", (word, _STYLES[verdict])))
                else:
                    rendered.append(Text(text))
            last_of_op = row.metric.name == _last_metric(group, row.op).name
            table.add_row(*rendered, end_section=last_of_op and row.op != ops[-1])
        if i == 0:
            parts.append(Text(""))  # tables end with a blank line of their own
        parts.append(table)
        warned = warning_lines(group)
        if warned:
            lines = "\n".join(f"  ! {safe_text(line)}" for line in warned)
            parts.append(Text(lines + "\n", style="yellow"))
    hints = warning_hints(comparison)
    if hints:
        parts.append(Text("\n".join(f"hint: {safe_text(h)}" for h in hints), style="yellow"))
    parts.append(Text(safe_text(legend(comparison)), style="dim"))
    return Group(*parts)


def _last_metric(group: CompareGroup, op: str) -> MetricSpec:
    return [r.metric for r in group.rows if r.op == op][-1]


def render_table(comparison: Comparison, *, width: int | None = None, color: bool = False) -> str:
    """The terminal tables as text. `width` None sizes the text to the widest table (for a
    pipe or a file: no wrapping); `color` adds ANSI styles."""
    renderable = table_renderable(comparison)
    if width is None:
        probe = Console(width=100_000, color_system=None, file=io.StringIO())
        width = max(80, probe.measure(renderable).maximum)
    out = io.StringIO()
    console = Console(
        file=out,
        width=width,
        color_system="standard" if color else None,
        force_terminal=color,
        highlight=False,
        soft_wrap=False,
        emoji=False,
        markup=False,
    )
    console.print(renderable)
    return "\n".join(line.rstrip() for line in out.getvalue().splitlines()) + "\n"
