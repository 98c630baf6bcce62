"""`fslab compare --format md`: one Markdown section per group, a pipe table with numbers
right-aligned and marks in bold. (The Markdown *report*, with charts and findings, is
`fslab.report.markdown`.)"""

from __future__ import annotations

from collections.abc import Callable

from fslab.compare import Comparison
from fslab.integrity_words import SILENT
from fslab.report.format import (
    code,
    group_title,
    header,
    legend,
    mark,
    markdown_sentence,
    md,
    md_markup,
    row_cells,
    runs_cells,
    table_columns,
    warning_hints,
    warning_summary,
)
from fslab.report.integrity import (
    OutcomeCell,
    integrity_lines,
    integrity_table,
    trade_off_lines,
)
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


# -- the integrity points (`fslab compare --format md` and the Markdown report) -------------


def outcome_cell(cell: OutcomeCell, text: Callable[[str], str] = md) -> str:
    """A cell for a pipe table: the silent outcomes in bold (words through `text`)."""
    parts = cell.parts
    if not parts:
        return cell.text

    def word(outcome: str, said: str) -> str:
        return f"**{text(said)}**" if outcome in SILENT else text(said)

    if len(parts) == 1:
        return word(parts[0][0], parts[0][0])
    return ", ".join(word(o, f"{o} {n}") for o, n in parts)


def integrity_markdown(
    c: Comparison,
    heading: str = "###",
    text: Callable[[str], str] = md,
    name: Callable[[str], str] = code,
    *,
    sentences: bool = True,
) -> list[str]:
    """The integrity table as a pipe table under `heading`, what its points share, the
    legend and (with `sentences`) the summary sentences, then the lines that put
    integrity beside speed; nothing without integrity points. Text from the database
    goes through `text` (escaped for the report; `fslab compare` keeps it as Markdown),
    target names through `name`."""
    table = integrity_table(c)
    if table is None:
        return []
    lines = [f"{heading} {text(table.title)}", ""]
    lines.append("| fault | " + " | ".join(name(t) for t in table.targets) + " |")
    lines.append("|:---|" + ":---|" * len(table.targets))
    for row in table.rows:
        cells = [outcome_cell(x, text) for x in row.cells]
        lines.append(f"| {text(row.label)} | " + " | ".join(cells) + " |")
    lines.append("")
    shared = "; ".join(f"{w}: {p}" if p else w for w, p in table.workloads)
    lines += [f"_points: {text(shared)}_", "", f"_{text(table.legend)}_", ""]
    if sentences:
        lines += [f"- {markdown_sentence(s, text, name)}" for s in integrity_lines(c)]
    both = trade_off_lines(c)
    if both:
        lines += ["", "Integrity beside speed:", ""]
        lines += [f"- {markdown_sentence(s, text, name)}" for s in both]
    if lines[-1]:
        lines.append("")
    return lines
