"""`fslab compare` in the terminal: the header, the summary (the study's answers), one rich
table per group, the warnings (one line per kind) and the legend. Everything fits the
width it is given: a group with more targets than fit is shown in blocks of targets, the
baseline first in each (a study with questions has a block per question at least, its
baseline first)."""

from __future__ import annotations

import io
from collections.abc import Iterator, Sequence

from rich import box
from rich.console import Console, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from fslab.compare import Comparison
from fslab.compare import Group as CompareGroup
from fslab.metrics import MetricSpec
from fslab.report.findings import (
    GRID_LEGEND,
    MOVES_SHOWN,
    SPREAD_SHOWN,
    Grid,
    Sentence,
    moves,
    summary,
)
from fslab.report.format import (
    against_text,
    format_ratio,
    group_title,
    header,
    interval_level,
    legend,
    limit_lines,
    mark,
    row_cells,
    runs_cells,
    table_columns,
    warning_hints,
    warning_summary,
)
from fslab.report.integrity import (
    IntegrityTable,
    OutcomeCell,
    integrity_lines,
    integrity_table,
    trade_off_lines,
)
from fslab.report.verdicts import failed_verdicts
from fslab.safe_text import safe_text
from fslab.stats.decision import Decision, Judgement

_STYLES = {Decision.BETTER: "bold green", Decision.WORSE: "bold red",
           Decision.EQUIVALENT: "cyan", Decision.INCONCLUSIVE: "dim"}  # fmt: skip
_PASS_STYLES = {True: "bold green", False: "bold red"}
OUTCOME_STYLES = {"repaired": "green", "detected": "cyan", "silent_wrong": "bold red",
                  "silent_stale": "red", "unaffected": "dim"}  # fmt: skip
"""An integrity outcome's colour: repaired green, detected cyan, silent red (wrong data
bold), unaffected dim."""
_SPAN_STYLES = {"target": "bold", "strong": "bold", "plain": ""}
_GAP = 3
"""rich's simple box between two columns: their padding and a blank divider."""
DEFAULT_WIDTH = 100
"""The width of the text when it goes to a pipe or a file and COLUMNS is not set."""


def _sentence(spans: Sentence, indent: str = "") -> Text:
    text = Text(indent)
    for s in spans:
        text.append(safe_text(s.text), style=_SPAN_STYLES[s.style])
    return text


def summary_renderables(comparison: Comparison, width: int = DEFAULT_WIDTH) -> list[RenderableType]:
    """The summary: per family, its headline and one line per target; grids for questions
    of many families and for write and space amplification."""
    found = summary(comparison)
    with_verdicts, failed = failed_verdicts(comparison)
    if not found and not with_verdicts:
        return []
    against = against_text(comparison, lambda name: f"`{safe_text(name)}`")
    parts: list[RenderableType] = [
        Text(
            f"Summary: each target against {against}, the geometric mean of its ratios over "
            f"a family's points ({interval_level(comparison.alpha)} interval)",
            style="bold",
        )
    ]
    if with_verdicts and not failed:
        n = with_verdicts
        parts.append(Text(f"verdicts: every run of every target passed ({n} point"
                          f"{'s' if n != 1 else ''} with limits)"))  # fmt: skip
    for v in failed:
        line = Text(safe_text(f"verdict · {v.row.title}: "), style="bold")
        line.append_text(_sentence(v.sentence()))
        parts.append(line)
    if failed and with_verdicts > len(failed):
        n = with_verdicts - len(failed)
        parts.append(Text(f"verdicts: every run of every target passed at the other {n} "
                          f"point{'s' if n != 1 else ''} with limits"))  # fmt: skip
    said = False
    for item in found:
        if isinstance(item, Grid):
            if said:  # a grid's title is not a sentence's next line
                parts.append(Text(""))
                said = False
            parts += _grid(item, width)
            parts += _moves(item)
            continue
        points = f"{item.points} point{'s' if item.points != 1 else ''}"
        head = Text(safe_text(f"{item.title} ({points}): "), style="bold")
        head.append_text(_sentence(item.headline()))
        parts.append(head)
        parts += [_sentence(line, "  ") for line in item.lines()]
        said = True
    if any(isinstance(item, Grid) for item in found):
        parts.append(Text(GRID_LEGEND, style="dim"))
    parts.append(Text(""))
    return parts


def _moves(g: Grid) -> list[RenderableType]:
    """The largest `moves` of a grid, one line each: `btrfs · random writes by threads:
    1: 0.13x, 4: 0.09x, 16: 0.06x, 64: 0.05x`."""
    found = moves(g)
    if not found:
        return []
    lines: list[RenderableType] = []
    for m in found[:MOVES_SHOWN]:
        line = Text(safe_text(m.target), style="bold")
        values = ", ".join(f"{v}: {format_ratio(r)}" for v, r in m.values)
        line.append(safe_text(f" · {m.family} by {m.axis}: {values}"))
        lines.append(Padding(line, (0, 0, 0, 2)))  # wrapped lines stay indented
    more = len(found) - MOVES_SHOWN
    tail = f" ({more} more in the report's sentences)" if more > 0 else ""
    head = Text(f"where a swept axis moves a ratio more than {SPREAD_SHOWN:g}x{tail}:", style="dim")
    return [head, *lines, Text("")]


def _grid(g: Grid, width: int) -> list[Table]:
    """A grid in blocks of targets where they do not fit `width` (the best in the last)."""
    cells = [
        {
            n: Text(
                c.text,
                style="yellow" if c.flagged else _STYLES.get(c.decision, "") if c.decision else "",
            )
            for n, c in zip(g.targets, row.cells, strict=True)
            if c is not None
        }
        for row in g.rows
    ]
    labels = [row.label for row in g.rows]
    bests = [row.best for row in g.rows]
    need = {n: _GAP + max([len(n), *(len(r[n].plain) for r in cells if n in r)]) for n in g.targets}
    best_w = _GAP + max(len("best"), *(len(b) for b in bests))
    # The label wraps to its longest word at worst; the numbers never do.
    label_w = max(len(w) for text in labels for w in text.split())
    blocks = _pack(g.targets, need, width - label_w - 2 - best_w)
    tables: list[Table] = []
    for j, block in enumerate(blocks):
        last = j == len(blocks) - 1
        more = f" ({j + 1}/{len(blocks)})" if len(blocks) > 1 else ""
        table = Table(
            title=Text(safe_text(g.title + more)),
            title_justify="left",
            title_style="bold",
            box=box.SIMPLE_HEAD,
            pad_edge=False,
        )
        table.add_column("")
        for name in block:
            table.add_column(Text(safe_text(name)), justify="right", no_wrap=True)
        if last:
            table.add_column("best", no_wrap=True)
        for label, row, best in zip(labels, cells, bests, strict=True):
            rendered: list[RenderableType] = [Text(safe_text(label))]
            rendered += [row.get(n, Text("")) for n in block]
            if last:
                rendered.append(Text(safe_text(best), style="bold"))
            table.add_row(*rendered)
        tables.append(table)
    return tables


_Cells = list[list[tuple[str, Judgement | None, bool | None]]]
"""A group's cells, a row per metric, a column per `table_columns` (`row_cells`)."""


def _spans(comparison: Comparison) -> dict[str, range]:
    """Each target's columns among `table_columns`: its value, and its ratio but the
    baseline's."""
    out: dict[str, range] = {}
    i = 0
    for t in comparison.targets:
        span = 1 if comparison.is_baseline(t) else 2
        out[t] = range(i, i + span)
        i += span
    return out


def _blocks(
    comparison: Comparison, group: CompareGroup, cells: _Cells, width: int
) -> list[list[str]]:
    """The group's targets in blocks whose tables fit `width`, each question's baseline
    first in each of its blocks."""
    label = max([4, *(len(f"{r.op} {r.metric.label}") for r in group.rows)])
    widths = [
        max([len(name), *(len(_cell_text(row[i][0], row[i][1])) for row in cells)])
        for i, name in enumerate(table_columns(comparison))
    ]
    need = {t: sum(widths[i] + _GAP for i in cols) for t, cols in _spans(comparison).items()}
    out: list[list[str]] = []
    for question in comparison.all_questions:
        base = question.baseline
        room = width - label - 2 - need[base]  # the box's blank edges, left and right
        out += [[base, *b] for b in _pack(question.targets[1:], need, room)]
    return out


def _pack(names: Sequence[str], need: dict[str, int], room: int) -> list[list[str]]:
    """`names` in order, in blocks whose `need` adds up to at most `room` (one name per
    block where even one does not fit); one empty block when there are none."""
    blocks: list[list[str]] = [[]]
    used = 0
    for n in names:
        if blocks[-1] and used + need[n] > room:
            blocks.append([])
            used = 0
        blocks[-1].append(n)
        used += need[n]
    return blocks


def _cell_text(text: str, vs: Judgement | None) -> str:
    word = mark(vs)
    return f"{text} {word}" if word else text


def _table(
    comparison: Comparison,
    group: CompareGroup,
    cells: _Cells,
    targets: Sequence[str],
    title: str,
) -> Table:
    table = Table(
        title=Text(safe_text(title)),
        title_justify="left",
        title_style="bold",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    spans = _spans(comparison)
    keep = sorted(i for t in targets for i in spans[t])
    cols = table_columns(comparison)
    # Labels wrap (a word per line if need be) when even one target beside the baseline
    # does not fit: numbers never do.
    table.add_column("")
    for i in keep:
        table.add_column(Text(safe_text(cols[i])), justify="right", no_wrap=True)
    runs = runs_cells(comparison, group)
    table.add_row("runs", *(runs[i] for i in keep), end_section=True)
    ops = group.ops
    for row, texts in zip(group.rows, cells, strict=True):
        rendered: list[RenderableType] = [Text(safe_text(f"{row.op} {row.metric.label}"))]
        for i in keep:
            text, vs, ok = texts[i]
            word = mark(vs)
            if ok is not None:
                rendered.append(Text(text, style=_PASS_STYLES[ok]))
            elif vs is not None and word:
                style = _STYLES.get(vs.decision, "yellow")
                rendered.append(Text.assemble(text, " ", (word, style)))
            else:
                rendered.append(Text(text))
        last_of_op = row.metric.name == _last_metric(group, row.op).name
        table.add_row(*rendered, end_section=last_of_op and row.op != ops[-1])
    return table


TABLE_LINES = 600
"""The most lines of per-point tables `fslab compare` prints unasked: past it, the summary
alone (a 100,000-run sweep's tables are half a million lines), the tables on request."""


def table_lines(comparison: Comparison, width: int = DEFAULT_WIDTH) -> int:
    """About how many lines the per-point tables take at `width` (a title, the header,
    the runs row, a line per row and per op's rule, a blank; again for each block of
    targets, as many as the first group needs): what decides whether they are shown."""
    groups = comparison.groups
    if not groups:
        return 0
    first = groups[0]
    cells = [row_cells(comparison, first, {c.target: c for c in r.cells}, r.metric)
             for r in first.rows]  # fmt: skip
    blocks = len(_blocks(comparison, first, cells, width))
    # an op's rule line per row as often as in the first group (counting every group's
    # ops would make each group's rows)
    per_row = 1 + len(first.ops) / max(len(first.rows), 1)
    return round(blocks * sum(len(g.rows) * per_row + 6 for g in groups))


def table_parts(
    comparison: Comparison, width: int = DEFAULT_WIDTH, *, tables: bool = True
) -> Iterator[RenderableType]:
    """The header, the summary, one rich table per group (in blocks of targets where
    they do not fit `width`; none where `tables` is False), the warnings and the legend,
    one renderable at a time (so a long output streams). Every name in it (study,
    targets, workloads, parameters, ops, warnings) comes from a results database, which
    may be someone else's: each is terminal-safe (`safe_text`), and rich reads no markup
    in it (`render_table`'s console has none, and the rest are `Text`)."""
    yield Text(safe_text(header(comparison)), style="bold")
    yield Text("")
    yield from summary_renderables(comparison, width)
    if lines := limit_lines(comparison):
        yield Text("The most load under a latency limit:", style="bold")
        yield from (Text(safe_text(line)) for line in lines)
        yield Text("")
    for group in comparison.groups if tables else ():
        title = group_title(comparison, group)
        cells = [row_cells(comparison, group, {c.target: c for c in r.cells}, r.metric)
                 for r in group.rows]  # fmt: skip
        blocks = _blocks(comparison, group, cells, width)
        for j, targets in enumerate(blocks):
            more = f" ({j + 1}/{len(blocks)})" if len(blocks) > 1 else ""
            yield _table(comparison, group, cells, targets, title + more)
    warned = warning_summary(comparison)
    if warned:
        yield Text("warnings (details: --format json, or the HTML report):", style="yellow")
        yield Text("\n".join(f"  ! {safe_text(w)}" for w in warned), style="yellow")
    hints = warning_hints(comparison)
    if hints:
        yield Text("\n".join(f"hint: {safe_text(h)}" for h in hints), style="yellow")
    if tables and (comparison.groups or not comparison.integrity):
        yield Text(safe_text(legend(comparison)), style="dim")
    yield from integrity_renderables(comparison, width)


def integrity_renderables(
    comparison: Comparison, width: int = DEFAULT_WIDTH
) -> list[RenderableType]:
    """The integrity points' table (in blocks of targets where they do not fit
    `width`), what the points share, the legend of the five words and one sentence per
    target; nothing for a comparison without integrity points."""
    table = integrity_table(comparison)
    if table is None:
        return []
    parts: list[RenderableType] = []
    if comparison.groups:
        parts.append(Text(""))
    parts += _integrity_tables(table, width)
    shared = "; ".join(f"{w}: {p}" if p else w for w, p in table.workloads)
    parts.append(Text(safe_text(f"points: {shared}"), style="dim"))
    parts.append(Text(safe_text(table.legend), style="dim"))
    parts.append(Text(""))
    parts += [_sentence(line) for line in integrity_lines(comparison)]
    both = trade_off_lines(comparison)
    if both:
        parts.append(Text(""))
        parts.append(Text("integrity beside speed:", style="bold"))
        parts += [Padding(_sentence(line), (0, 0, 0, 2)) for line in both]
    return parts


def _outcome_text(cell: OutcomeCell, *, one_line: bool) -> Text:
    """A cell's outcomes, each in its colour: `detected 2, silent_wrong 1` (a part per
    line unless `one_line`)."""
    parts = cell.parts
    if not parts:
        return Text(cell.text, style="dim")
    if len(parts) == 1:
        return Text(parts[0][0], style=OUTCOME_STYLES.get(parts[0][0], ""))
    text = Text()
    for i, (outcome, n) in enumerate(parts):
        if i:
            text.append(", " if one_line else ",\n")
        text.append(f"{outcome} {n}", style=OUTCOME_STYLES.get(outcome, ""))
    return text


def _integrity_tables(table: IntegrityTable, width: int) -> list[RenderableType]:
    label_w = max(len(r.label) for r in table.rows)
    room = width - label_w - 2

    def need(one_line: bool) -> dict[str, int]:
        out: dict[str, int] = {}
        for i, t in enumerate(table.targets):
            texts = [_outcome_text(r.cells[i], one_line=one_line).plain for r in table.rows]
            out[t] = _GAP + max([len(t), *(len(x) for s in texts for x in s.splitlines())])
        return out

    one_line = sum(need(True).values()) <= room
    blocks = _pack(table.targets, need(one_line), room)
    tables: list[RenderableType] = []
    for j, block in enumerate(blocks):
        more = f" ({j + 1}/{len(blocks)})" if len(blocks) > 1 else ""
        # The title above, not the table's own: that one wraps at a narrow table's width.
        tables.append(Text(table.title + more, style="bold"))
        out = Table(box=box.SIMPLE_HEAD, pad_edge=False)
        out.add_column("", no_wrap=True)
        for name in block:
            out.add_column(Text(safe_text(name)), no_wrap=True)
        cols = [table.targets.index(n) for n in block]
        for k, row in enumerate(table.rows):
            last = k + 1 == len(table.rows) or table.rows[k + 1].section != row.section
            out.add_row(
                Text(safe_text(row.label)),
                *(_outcome_text(row.cells[i], one_line=one_line) for i in cols),
                end_section=last and k + 1 < len(table.rows),
            )
        tables.append(out)
    return tables


def _last_metric(group: CompareGroup, op: str) -> MetricSpec:
    return [r.metric for r in group.rows if r.op == op][-1]


def render_table(
    comparison: Comparison,
    *,
    width: int | None = None,
    color: bool = False,
    tables: bool = True,
) -> str:
    """The terminal text at `width` columns (`DEFAULT_WIDTH` when None); `color` adds ANSI
    styles; `tables` False leaves the per-point tables out."""
    return "".join(iter_table_text(comparison, width=width, color=color, tables=tables))


def iter_table_text(
    comparison: Comparison,
    *,
    width: int | None = None,
    color: bool = False,
    tables: bool = True,
) -> Iterator[str]:
    """`render_table`'s text, a part (a table, a summary line) at a time: a reader sees
    the first table before the last is drawn, and memory stays that of one table."""
    width = width or DEFAULT_WIDTH
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
    for part in table_parts(comparison, width, tables=tables):
        console.print(part)
        text = out.getvalue()
        out.seek(0)
        out.truncate()
        yield "".join(line.rstrip() + "\n" for line in text.splitlines())
