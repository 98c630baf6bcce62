"""`fslab compare --format md`: one Markdown section per group, a pipe table with numbers
right-aligned and marks in bold. (The Markdown *report*, with charts and findings, is
`fslab.report.markdown`.)"""

from __future__ import annotations

from fslab.compare import Comparison
from fslab.report.format import (
    group_title,
    header,
    legend,
    mark,
    md_markup,
    row_cells,
    runs_cells,
    table_columns,
    warning_hints,
    warning_summary,
)
from fslab.report.integrity import markdown_lines as integrity_markdown
from fslab.stats.decision import Decision, Judgement


def _md_cell(text: str, vs: Judgement | None, ok: bool | None) -> str:
    if ok is not None:
        return f"**{text}**"
    word = mark(vs)
    if vs is not None and vs.decision in (Decision.BETTER, Decision.WORSE):
        return f"{text} **{word}**"
    return f"{text} {word}" if word else text


def render_markdown(comparison: Comparison) -> str:
    """One Markdown section per group: a pipe table, numbers right-aligned, marks in bold;
    then the integrity points' table (`fslab.report.integrity`)."""
    lines = [md_markup(header(comparison)), ""]
    cols = table_columns(comparison)
    for group in comparison.groups:
        lines.append(f"### {md_markup(group_title(comparison, group))}")
        lines.append("")
        lines.append("| | " + " | ".join(md_markup(name) for name in cols) + " |")
        lines.append("|:---|" + "---:|" * len(cols))
        lines.append("| runs | " + " | ".join(runs_cells(comparison, group)) + " |")
        for row in group.rows:
            cells = {c.target: c for c in row.cells}
            texts = [
                _md_cell(text, verdict, ok)
                for text, verdict, ok in row_cells(comparison, group, cells, row.metric)
            ]
            label = f"{row.op} {row.metric.label}"
            lines.append(
                f"| {md_markup(label)} | " + " | ".join(md_markup(t) for t in texts) + " |"
            )
        lines.append("")
    warned = warning_summary(comparison)
    if warned:
        lines += [f"- ⚠ {md_markup(w)}" for w in warned]
        lines.append("")
    hints = warning_hints(comparison)
    if hints:
        lines += [f"- hint: {md_markup(h)}" for h in hints]
        lines.append("")
    if comparison.groups or not comparison.integrity:
        lines.append(f"_{md_markup(legend(comparison))}_")
        lines.append("")
    lines += integrity_markdown(comparison, text=md_markup, name=md_markup)
    return "\n".join(lines).rstrip("\n") + "\n"
