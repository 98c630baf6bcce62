"""`fslab report --format md`: the report as Markdown, with its charts as static SVG
images (matplotlib) in a folder beside it, ready to paste into a blog post or an issue.

`report.md` links its images as `report_files/<chart>.svg`; move the two together.
Names and parameters from the database are escaped for Markdown (and inline HTML), so a
target called `a|b` or `<b>x</b>` reads as written.
"""

from __future__ import annotations

import io
import json
import multiprocessing
import os
import re
import textwrap
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, cast

import matplotlib as mpl
from matplotlib.figure import Figure
from matplotlib.ticker import EngFormatter

from fslab.params import format_param
from fslab.report.charts import Chart, Section, TargetStyle, dodge, target_styles
from fslab.report.context import ReportData, methodology, target_facts
from fslab.report.findings import GRID_LEGEND, Answer, Grid, summary
from fslab.report.format import (
    against_text,
    baselines_text,
    code,
    interval_level,
    legend,
    margin_text,
    mark,
    markdown_sentence,
    md,
    md_markup,
    not_counted,
    shared_note,
    warning_hints,
    warning_summary,
)
from fslab.report.integrity import (
    fact_columns,
    integrity_facts,
    integrity_lines,
    integrity_table,
)
from fslab.report.monitor_figure import matplotlib_figure
from fslab.report.output import staged_dir, write_text
from fslab.report.rank_views import INTRO as RANKS_INTRO
from fslab.report.rank_views import RANK_COLUMNS, rank_cells
from fslab.report.render.markdown_table import integrity_markdown
from fslab.report.tables import TableCell, is_compact, table_views
from fslab.report.verdicts import VerdictRow, verdict_headlines, verdicts
from fslab.stats.decision import Decision, Judgement

_MARKERS = {
    "circle": "o",
    "square": "s",
    "diamond": "D",
    "triangle-up": "^",
    "x": "x",
    "triangle-down": "v",
    "cross": "P",
    "star": "*",
}
_RC = {
    "svg.hashsalt": "fslab",  # stable ids: the same data gives the same file
    "svg.fonttype": "none",  # text stays text: smaller, selectable, searchable
    "text.parse_math": False,  # a `$` in a name is a dollar sign
    "font.family": "DejaVu Sans",
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#e4e4e4",
    "axes.facecolor": "#fbfbfb",
}

# -- escaping (`md` and `code` are `fslab.report.format`'s) ---------------------------------


def _fenced(text: str, lang: str = "") -> str:
    runs = [len(m) for m in re.findall(r"`{3,}", text)]
    fence = "`" * max(3, max(runs, default=0) + 1)
    return f"{fence}{lang}\n{text.rstrip()}\n{fence}"


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


# -- the document --------------------------------------------------------------------------


def image_dir_name(report: Path) -> str:
    """`report.md` -> `report_files`: where its images go, beside it."""
    return f"{report.stem}_files"


def render_markdown_report(
    data: ReportData, charts: Sequence[Chart], image_dir: str = "report_files"
) -> str:
    """The Markdown text; images are linked as `<image_dir>/<chart id>.svg`."""
    c = data.comparison
    lines: list[str] = [f"# {md(c.study)}", ""]
    integrity = integrity_table(c)
    points = len(c.groups) + (len(integrity.rows) if integrity else 0)
    meta = [
        f"{points} point{'s' if points != 1 else ''} x {len(c.targets)} "
        f"target{'s' if len(c.targets) != 1 else ''}",
    ]
    if c.groups or integrity is None:
        meta.append(baselines_text(c, code, md))
    if c.where:
        meta.append("filtered: " + code(" ".join(f"{k}={v}" for k, v in c.where)))
    common = " ".join(f"{k}={format_param(k, v)}" for k, v in c.common_params())
    if common:
        meta.append(code(common))
    meta.append(f"results {code(c.db_path.name)}")
    meta.append(f"generated {data.generated_at.strftime('%Y-%m-%d %H:%M UTC')}")
    lines += [" · ".join(meta), "", "Targets: " + ", ".join(code(t) for t in c.targets), ""]

    lines += _summary(data)
    views = table_views(c, titles=False)
    warned = [(v, w) for v in views for w in v.warnings]
    if warned and is_compact(c):
        # A large study: one line per kind (as `fslab compare`), not thousands.
        lines += ["## Warnings", ""]
        lines += [f"- {_inline_code(line)}" for line in warning_summary(c)]
        lines += [f"- hint: {_inline_code(h)}" for h in warning_hints(c)]
        lines += ["", f"_The {len(warned)} warnings point by point: `fslab compare "
                  "--format json`._", ""]  # fmt: skip
    elif warned:
        lines += ["## Warnings", ""]
        for v, w in warned:
            lines.append(
                f"- **{md(v.title)}** · {code(w.target)} · **{md(w.kind.value)}**: "
                f"{_inline_code(w.message)} — {_inline_code(w.hint)}"
            )
        lines.append("")
    lines += _integrity(data)

    for section in Section:
        mine = [ch for ch in charts if ch.section is section]
        if not mine:
            continue
        lines += [f"## {section.heading}", "", md(section.intro), ""]
        for ch in mine:
            lines += [
                f"### {md(ch.title)}",
                "",
                f"![{md(ch.title)}]({image_dir}/{ch.id}.svg)",
                "",
            ]
            if ch.caption:
                lines += [f"_{md(ch.caption)}_", ""]

    if views or integrity is None:
        lines += ["## Comparison tables", "", f"_{md(legend(c))}_", ""]
    for v in views:
        lines += [f"### {md(v.title)}", ""]
        lines.append(_row([md(col.text) for col in v.columns]))
        lines.append("|:---|" + "---:|" * (len(v.columns) - 1))
        for row in v.rows:
            lines.append(_row([_table_cell(cell) for cell in row]))
        lines.append("")
        for w in v.warnings:
            lines.append(
                f"- ⚠ {code(w.target)} **{md(w.kind.value)}**: {_inline_code(w.message)} — "
                f"{_inline_code(w.hint)}"
            )
        if v.warnings:
            lines.append("")

    lines += _ranks(data)
    lines += _configuration(data)
    lines += ["## Methodology", ""]
    for p in methodology(c):
        lines += [_inline_code(p), ""]
    return "\n".join(lines).rstrip() + "\n"


def _inline_code(text: str) -> str:
    """Plain text whose `backquoted` words are code: escaped outside them."""
    parts = re.split(r"(`[^`]*`)", text)
    return "".join(p if p.startswith("`") and p.endswith("`") else md(p) for p in parts)


def _table_cell(cell: TableCell) -> str:
    """A comparison table's cell: a verdict's PASS or FAIL in bold, else `_cell`."""
    if cell.passed is not None:
        return f"**{md(cell.text)}**"
    return _cell(cell.text, cell.verdict)


def _cell(text: str, vs: Judgement | None) -> str:
    word = mark(vs)
    if vs is not None and vs.decision in (Decision.BETTER, Decision.WORSE):
        return f"{md(text)} **{word}**"
    return f"{md(text)} {word}" if word else md(text)


def _summary(data: ReportData) -> list[str]:
    c = data.comparison
    lines = ["## Summary", ""]
    for note in (not_counted(c), shared_note(c)):
        if note is not None:
            lines += [f"{note[0].upper()}{note[1:]}.", ""]
    if data.sources:
        lines += ["Several results databases, compared as one study (the others' targets are "
                  "named `TARGET@NAME`):", ""]  # fmt: skip
        lines += [f"- {md_markup(note)}" for note in data.sources] + [""]
    rows = verdicts(c)
    if rows:
        lines += _verdict_table(data, rows)
    failed = verdict_headlines(c, rows)
    for v in failed:
        lines.append(f"- **{md(v.row.title)}**: {markdown_sentence(v.sentence())}")
    if failed:
        lines.append("")
    found = summary(c)
    said = integrity_lines(c)
    if said:
        lines += ["**Integrity** ([the table](#integrity)):", ""]
        lines += [f"- {markdown_sentence(s)}" for s in said]
        lines.append("")
    if not found:
        if rows or said:
            return lines
        return [*lines, "No point has a headline metric to compare.", ""]
    against = against_text(c, code)
    lines += [
        f"_Each target against {against}: the geometric mean of its ratios over a "
        f"family's points with its {interval_level(c.alpha)} interval, and at how many points "
        "the decision rule "
        f"found it better, worse, equivalent (within ±{margin_text(c.margin)}) or inconclusive. "
        "Points whose runs "
        "are flagged (cached, unsteady) get no verdict and are left out of the "
        "mean._",
        "",
    ]
    listed = False
    for item in found:
        if isinstance(item, Answer):
            lines += _answer(item)
            listed = True
            continue
        if listed:
            lines.append("")
            listed = False
        lines += _grid(item)
    if listed:
        lines.append("")
    if any(isinstance(item, Grid) for item in found):
        lines += [f"_{md(GRID_LEGEND)}._", ""]
    return lines


def _integrity(data: ReportData) -> list[str]:
    """The integrity section: the faults x targets table, its legend, integrity beside
    speed, and the configuration facts that explain the outcomes."""
    c = data.comparison
    table = integrity_table(c)
    if table is None:
        return []
    lines = [
        "## Integrity",
        "",
        "_One fault per point, injected into the target's loop image under a file written "
        "with the engine's `verify`; the file is read back from a cold cache and each cell "
        "says what the file system returned (a cell whose runs disagree counts each "
        "outcome)._",
        "",
    ]
    lines += integrity_markdown(c, sentences=False)
    facts = integrity_facts(table.targets, {t.name: t.effective for t in data.targets})
    lines += ["### What explains it", ""]
    lines.append(_row(["target", *(md(x) for x in fact_columns())]))
    lines.append("|:---|" + ":---|" * len(fact_columns()))
    lines += [_row([code(t), *(md(v) for v in values)]) for t, values in facts]
    lines.append("")
    return lines


def _answer(a: Answer) -> list[str]:
    n = f"{a.points} point{'s' if a.points != 1 else ''}"
    said = markdown_sentence(a.headline())
    head = f"- **{md(a.title)}** ({n}, {md(a.op)} {md(a.metric.label)}): {said}"
    return [head, *(f"  - {markdown_sentence(line)}" for line in a.lines())]


def _grid(g: Grid) -> list[str]:
    """A grid as a table (better and worse in bold), its families in words folded below."""
    lines = [f"**{md(g.title)}**", ""]
    lines.append(_row(["family (points)", *(code(t) for t in g.targets), "best"]))
    lines.append("|:---|" + "---:|" * len(g.targets) + ":---|")
    for r in g.rows:
        cells = []
        for cell in r.cells:
            if cell is None:
                cells.append("")
            elif cell.decision in (Decision.BETTER, Decision.WORSE):
                cells.append(f"**{md(cell.text)}**")
            else:
                cells.append(md(cell.text))
        label = f"{md(r.label)} ({r.answer.points})"
        lines.append(_row([label, *cells, f"**{md(r.best)}**"]))
    lines += ["", "<details><summary>Each family in words</summary>", ""]
    for r in g.rows:
        lines += _answer(r.answer)
    lines += ["", "</details>", ""]
    return lines


def _verdict_table(data: ReportData, rows: Sequence[VerdictRow]) -> list[str]:
    """The verdicts, a row per point and a column per target, PASS and FAIL in bold."""
    c = data.comparison
    lines = ["### Verdicts", ""]
    lines.append(_row(["point", *(md(t) for t in c.targets), "limits (mean latency)"]))
    lines.append("|:---|" + "---:|" * len(c.targets) + ":---|")
    for v in rows:
        cells = [f"**{md(x.text)}**" if x.passed is not None else md(x.text) for x in v.cells]
        lines.append(_row([md(v.title), *cells, md(v.limits)]))
    lines += [
        "",
        "_A run passes when its mean DB read latency and its mean log write latency both stay "
        "under their limits (the workload's `read_lat_ms_max` and `log_lat_ms_max`; "
        "JetStress's 20 ms and 10 ms by default). PASS: every completed run passed; in "
        "brackets the runs that passed of those that ran._",
        "",
    ]
    return lines


def _ranks(data: ReportData) -> list[str]:
    """The multi-host runs rank by rank (`--ranks`): a sentence per point, then a row per
    rank, its point and run on its run's first row."""
    ranks = data.ranks
    if ranks is None:
        return []
    lines = ["## Ranks", "", f"_{_inline_code(RANKS_INTRO)}_", ""]
    lines += [f"- {markdown_sentence(s)}" for s in ranks.sentences()]
    lines += ["", _row(["target", "point", "run", *RANK_COLUMNS])]
    lines.append("|:---|:---|---:|" + "".join(":---|" if c == "host" else "---:|"
                                              for c in RANK_COLUMNS))  # fmt: skip
    for point in ranks.points:
        for run in point.runs:
            head = [code(point.target), md(point.title), str(run.rep + 1)]
            for r in run.ranks:
                lines.append(_row([*head, *(md(c) for c in rank_cells(r))]))
                head = ["", "", ""]
    lines.append("")
    return lines


def _configuration(data: ReportData) -> list[str]:
    lines = ["## Configuration", ""]
    for t in data.targets:
        lines += [f"### {code(t.name)}", ""]
        facts = target_facts(t)
        if facts:
            lines += ["| | |", "|:---|:---|"]
            lines += [_row([md(label), code(value.replace("|", "/"))]) for label, value in facts]
        else:
            lines.append("No effective configuration was recorded for this target.")
        lines += [
            "",
            "<details><summary>As the study wrote it</summary>",
            "",
            _fenced(json.dumps(t.spec, indent=2, sort_keys=True, ensure_ascii=False), "json"),
            "",
            "</details>",
            "",
        ]
    lines += ["### Environment", ""]
    if len(data.environments) > 1:
        lines += [
            f"**The runs compared here ran on {len(data.environments)} different machine "
            "states**; differences between targets may be differences between machines.",
            "",
        ]
    for e in data.environments:
        lines += ["| | |", "|:---|:---|"]
        lines.append(_row(["kernel", code(e.kernel)]))
        lines.append(_row(["CPU", md(f"{e.cpu_model}, {e.cores} cores")]))
        lines.append(_row(["memory", f"{e.mem_bytes / (1 << 30):.1f} GiB"]))
        for tool, version in sorted(e.tools.items()):
            lines.append(_row([md(tool), code(version) if version else "—"]))
        lines.append(_row(["runs", str(e.runs)]))
        lines.append("")
    if not data.environments:
        lines += ["No environment was recorded.", ""]
    lines += ["### Study file", ""]
    if data.study_path:
        lines += [code(data.study_path), ""]
    lines += [_fenced(data.study_toml, "toml"), ""]
    return lines


# -- images --------------------------------------------------------------------------------


def render_svg(chart: Chart, styles: Mapping[str, TargetStyle]) -> str:
    """The chart as an SVG document (matplotlib): small multiples, one colour and marker
    per target, error bars of the 95% CI (a monitor chart: `monitor_figure`'s grid)."""
    with mpl.rc_context(cast(Any, _RC)):
        fig = _figure(chart, styles)
        out = io.StringIO()
        fig.savefig(out, format="svg", metadata={"Date": None})
    return out.getvalue()


_TITLE_IN = 0.42
"""Above the panels: the chart's title."""
_LEGEND_IN = 0.42
_XLABEL_IN = 0.38
_YLABEL_IN = 0.78
"""Left of a row of panels: the y label and tick labels of up to six characters
(`12000`, `300k`, `1.5m`)."""
_GAP_IN = 0.5
"""Between panels across: the next panel's tick labels."""
_TICKS_IN = 0.3
"""Under a panel that is not in the last row: its tick labels."""
_PANEL_TITLE = (0.07, 0.15)
"""A panel title's character (8 points, bold) wide and its line high, in inches."""


def _margins(fig: Figure, chart: Chart, rows: int, cols: int) -> int:
    """Fixed margins in inches instead of matplotlib's constrained layout, which measures
    every text on a draw of its own and took 40% of a chart's time. Returns how many
    characters of a panel's title fit on a line."""
    width, height = fig.get_size_inches()
    below = _XLABEL_IN if chart.x_label else 0.1  # under each row: tick labels, x label
    if chart.kind == "bars":
        cats = {str(x) for p in chart.panels for t in p.traces for x in t.x}
        if _rotated(cats):  # 30 degrees: half the label's length in height
            below += 0.2 + 0.5 * _CHAR_IN * max(len(c) for c in cats)
    left, right = _YLABEL_IN, 0.15
    panel_w = (width - left - right - (cols - 1) * _GAP_IN) / cols
    chars = max(int(panel_w / _PANEL_TITLE[0]), 12)
    titled = [p.title for p in chart.panels if p.title] if rows * cols > 1 else []
    lines = max((len(textwrap.wrap(t, chars)) for t in titled), default=0)
    title_h = lines * _PANEL_TITLE[1] + (0.05 if lines else 0)
    extra = max(below - _XLABEL_IN, 0.0) + title_h
    height += extra * rows  # the panels keep their height
    fig.set_size_inches(width, height)
    bottom = _LEGEND_IN + below
    top = _TITLE_IN + title_h
    gap_h = _TICKS_IN + max(below - _XLABEL_IN, 0.0) + title_h
    panel_h = (height - top - bottom - (rows - 1) * gap_h) / rows
    fig.subplots_adjust(
        left=left / width,
        right=1 - right / width,
        bottom=bottom / height,
        top=1 - top / height,
        wspace=_GAP_IN / panel_w,
        hspace=gap_h / panel_h,
    )
    return chars


_CHAR_IN = 0.06
"""The width of a tick label's character at 7.5 points, about."""


def _rotated(cats: Iterable[str]) -> bool:
    """Whether a bar chart's category labels are set at an angle: long or many."""
    cats = list(cats)
    return max((len(c) for c in cats), default=0) > 10 or len(cats) > 6


def _render_all(charts: Sequence[Chart], styles: Mapping[str, TargetStyle]) -> Iterator[str]:
    """The charts' SVGs in order, drawn on every CPU: matplotlib takes about half a
    second a chart and holds the GIL throughout, so threads would not help. Forked
    workers inherit the imported matplotlib and the charts."""
    workers = min(len(charts), os.cpu_count() or 1)
    if workers < 2:
        yield from (render_svg(ch, styles) for ch in charts)
        return
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
        yield from pool.map(render_svg, charts, [styles] * len(charts))


def _figure(chart: Chart, styles: Mapping[str, TargetStyle]) -> Figure:
    if chart.kind == "monitor":
        return matplotlib_figure(chart, styles)
    n = len(chart.panels)
    cols = min(n, 3 if chart.kind == "bars" else 4)
    rows = -(-n // cols)
    single = n == 1
    width = 9.0 if single else cols * 3.3
    height = 3.6 if single else rows * 2.5
    fig = Figure(figsize=(width, height + 0.7))
    axes = fig.subplots(rows, cols, squeeze=False)
    title_chars = _margins(fig, chart, rows, cols)
    handles: dict[str, Any] = {}
    order = list(styles)
    for i, panel in enumerate(chart.panels):
        ax = axes[i // cols][i % cols]
        xs = [float(x) for t in panel.traces for x in t.x if not isinstance(x, str)]
        span = (max(xs) - min(xs)) if xs else 0.0
        cats = list(dict.fromkeys(str(x) for t in panel.traces for x in t.x))
        for trace in panel.traces:
            style = styles[trace.target]
            k = order.index(trace.target)
            ys = [float("nan") if y is None else y for y in trace.y]
            errs = trace.err or (None,) * len(ys)
            lower = [
                0.0 if e is None or y is None else min(e, y)
                for e, y in zip(errs, trace.y, strict=True)
            ]
            upper = [0.0 if e is None else e for e in errs]
            if chart.kind == "bars":
                width_bar = 0.8 / max(len(panel.traces), 1)
                pos = [
                    cats.index(str(x))
                    + (panel.traces.index(trace) - (len(panel.traces) - 1) / 2) * width_bar
                    for x in trace.x
                ]
                h = ax.bar(pos, ys, width=width_bar * 0.95, color=style.color, label=trace.name)
                if any(upper):
                    ax.errorbar(
                        pos,
                        ys,
                        yerr=[lower, upper],
                        fmt="none",
                        ecolor="#333",
                        elinewidth=0.8,
                        capsize=2,
                    )
            else:
                x = [float(v) for v in trace.x]
                if chart.kind == "lines":
                    x = [dodge(v, k, len(order), log=chart.x_log, span=span) for v in x]
                h = ax.errorbar(
                    x,
                    ys,
                    yerr=[lower, upper] if any(upper) else None,
                    color=style.color,
                    marker=_MARKERS.get(style.symbol, "o"),
                    markersize=4,
                    linewidth=1.5,
                    linestyle=":" if trace.dash == "dot" else "-",
                    capsize=2,
                    label=trace.name,
                )
            handles.setdefault(trace.name, h)
        if chart.kind == "bars":
            ax.set_xticks(range(len(cats)))
            long = _rotated(cats)
            ax.set_xticklabels(
                cats, rotation=30 if long else 0, ha="right" if long else "center", fontsize=7.5
            )
        elif chart.kind == "lines" and xs:
            ticks = sorted(set(xs))
            if chart.x_log:
                ax.set_xscale("log", base=2)
            ax.set_xticks(ticks)
            ax.set_xticklabels([f"{t:g}" for t in ticks])
            ax.minorticks_off()
        ax.set_axisbelow(True)
        top = chart.y_top(panel)
        ax.set_ylim(0, top if top is not None else None)
        if any(w in chart.y_label for w in ("IOPS", "files/s", "tps")):
            ax.yaxis.set_major_formatter(EngFormatter(sep=""))
        if not single and panel.title:
            title = "\n".join(textwrap.wrap(panel.title, title_chars))
            ax.set_title(title, fontsize=8, fontweight="bold")
        if i % cols == 0:
            ax.set_ylabel(chart.y_label)
        if i // cols == rows - 1 and chart.x_label:
            ax.set_xlabel(chart.x_label)
    for j in range(n, rows * cols):
        axes[j // cols][j % cols].set_visible(False)
    fig.suptitle(
        chart.title, fontsize=11, fontweight="bold", y=1 - 0.1 / fig.get_size_inches()[1], va="top"
    )
    fig.legend(
        list(handles.values()),
        list(handles),
        loc="lower center",
        ncol=min(len(handles), 6),
        frameon=False,
    )
    return fig


def write_markdown_report(data: ReportData, charts: Sequence[Chart], out: Path) -> list[Path]:
    """Writes `out` and its images into `<stem>_files/` beside it (replacing an older
    one), each whole or not at all; returns the paths written. The caller checks that
    `out` can be written (`fslab.report.output.check_output`)."""
    folder = out.parent / image_dir_name(out)
    text = render_markdown_report(data, charts, image_dir_name(out))
    styles = target_styles(data.comparison.targets)
    written: list[Path] = []
    if charts:
        with staged_dir(folder) as tmp:
            for ch, svg in zip(charts, _render_all(charts, styles), strict=True):
                (tmp / f"{ch.id}.svg").write_text(svg, encoding="utf-8")
        written += [folder / f"{ch.id}.svg" for ch in charts]
    write_text(out, text)
    written.append(out)
    return written
