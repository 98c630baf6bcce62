"""`fslab report`: one self-contained HTML file. CSS, the chart data and plotly.js (once)
are inlined, so the file opens offline, from a mail or an archive, years later.

Everything from the database (target and workload names, parameters, the study file)
reaches the page escaped: the template is rendered by jinja2 with autoescape, chart texts
are escaped before plotly sees them (plotly reads a few HTML tags in labels), and the
chart data is embedded as JSON with `<`, `>` and `&` written as `\\u003c`... so that
nothing in it can close its `<script>` element.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from importlib.resources import files
from pathlib import Path
from typing import Any

import jinja2
import markupsafe
from markupsafe import Markup
from plotly.offline import get_plotlyjs

from fslab import __version__
from fslab.compare import Comparison, Group
from fslab.integrity_words import OUTCOME_MEANING
from fslab.params import format_param
from fslab.report.charts import (
    Chart,
    Panel,
    Section,
    TargetStyle,
    Trace,
    chart_notes,
    dodge,
    target_styles,
)
from fslab.report.context import ReportData, methodology, target_facts
from fslab.report.findings import GRID_LEGEND, Grid, GridCell, Span, summary
from fslab.report.format import (
    FLAGGED_MARK,
    format_vs,
    interval_level,
    legend,
    limit_lines,
    mark,
    not_counted,
    shared_note,
    vs_title,
    warning_summary,
)
from fslab.report.integrity import (
    OutcomeCell,
    fact_columns,
    integrity_facts,
    integrity_lines,
    integrity_table,
    trade_off_lines,
)
from fslab.report.monitor_figure import plotly_figure
from fslab.report.output import staged
from fslab.report.rank_views import INTRO as RANKS_INTRO
from fslab.report.rank_views import RANK_COLUMNS, rank_cells
from fslab.report.tables import TableCell, TableView, is_compact, table_views
from fslab.report.verdicts import verdict_headlines, verdicts
from fslab.stats.decision import Decision, Judgement
from fslab.stats.warnings import StatWarning

_COLUMNS = 4
"""Small multiples per row."""
_PANEL_HEIGHT = 250
RANKS_OPEN = 50
"""Up to this many multi-host runs, the table of their ranks is unfolded."""
_FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, 'DejaVu Sans', sans-serif"


def _esc(text: str) -> str:
    """Text for plotly: its labels understand `<b>`, `<br>`, `<a>` and entities, so names
    are escaped and read back as the same characters."""
    return html.escape(text, quote=False)


def _clean(values: Sequence[float | str | None]) -> list[Any]:
    return [None if isinstance(v, float) and not math.isfinite(v) else v for v in values]


def _axis_name(kind: str, i: int) -> str:
    """`xaxis`, `xaxis2`, ... for the layout; `x`, `x2`, ... for traces."""
    return f"{kind}axis" + (str(i + 1) if i else "")


def figure(chart: Chart, styles: Mapping[str, TargetStyle]) -> dict[str, Any]:
    """A plotly figure (data, layout, config) for `chart`: a grid of small multiples with a
    shared legend, one colour and marker per target (a monitor chart: its own grid)."""
    config = {
        "displaylogo": False,
        "responsive": True,
        "toImageButtonOptions": {"format": "svg", "filename": chart.id},
        "modeBarButtonsToRemove": ["select2d", "lasso2d"],
    }
    if chart.kind == "monitor":
        return {**plotly_figure(chart, styles, _FONT), "config": config}
    n = len(chart.panels)
    cols = min(n, _COLUMNS if chart.kind != "bars" or n > 1 else 1)
    if chart.kind == "bars" and n > 1:
        cols = min(n, 3)
    rows = math.ceil(n / cols)
    gap_x, gap_y = 0.06 if cols > 1 else 0.0, 0.5 / max(rows, 1) * 0.28
    height = 120 + rows * (_PANEL_HEIGHT if n > 1 else 380)
    if chart.kind == "bars" and n == 1:
        labels = max((len(str(x)) for t in chart.panels[0].traces for x in t.x), default=0)
        height += min(160, labels * 4)
    layout: dict[str, Any] = {
        "height": height,
        "margin": {"l": 70, "r": 20, "t": 40, "b": 60},
        "font": {"family": _FONT, "size": 12, "color": "#222"},
        "paper_bgcolor": "#fff",
        "plot_bgcolor": "#fbfbfb",
        "hovermode": "closest",
        "hoverlabel": {"namelength": -1},
        "legend": {
            "orientation": "h",
            "y": 1.0,
            "yanchor": "bottom",
            "x": 0,
            "traceorder": "normal",
        },
        "annotations": [],
        "showlegend": True,
    }
    if chart.kind == "bars":
        layout.update(barmode="group", bargap=0.25, bargroupgap=0.05)
    data: list[dict[str, Any]] = []
    shown: set[str] = set()
    for i, panel in enumerate(chart.panels):
        r, c = divmod(i, cols)
        x0 = c / cols + (gap_x / 2 if c else 0)
        x1 = (c + 1) / cols - (gap_x / 2 if c < cols - 1 else 0)
        top = 1 - r / rows - (gap_y if n > 1 else 0)
        bottom = 1 - (r + 1) / rows + (gap_y if r < rows - 1 else 0)
        xa, ya = _axis_name("x", i), _axis_name("y", i)
        x_ref, y_ref = xa.replace("axis", ""), ya.replace("axis", "")
        layout[xa] = _x_axis(chart, panel, (x0, x1), y_ref, last_row=r == rows - 1)
        y_top = chart.y_top(panel)
        layout[ya] = {
            **({"range": [0, y_top]} if y_top is not None else {}),
            "domain": [bottom, top],
            "anchor": x_ref,
            "rangemode": "tozero",
            "gridcolor": "#e4e4e4",
            "zerolinecolor": "#bbb",
            "automargin": True,
            **({"tickformat": "~s"} if _si(chart) else {}),
            **({"title": {"text": _esc(chart.y_label), "font": {"size": 12}}} if c == 0 else {}),
        }
        if n > 1 and panel.title:
            layout["annotations"].append(
                {
                    "text": f"<b>{_esc(panel.title)}</b>",
                    "xref": "paper",
                    "yref": "paper",
                    "x": (x0 + x1) / 2,
                    "y": top,
                    "xanchor": "center",
                    "yanchor": "bottom",
                    "showarrow": False,
                    "font": {"size": 11},
                }
            )
        xs = [float(x) for t in panel.traces for x in t.x if not isinstance(x, str)]
        span = (max(xs) - min(xs)) if xs else 0.0
        for trace in panel.traces:
            x = list(trace.x)
            if chart.kind == "lines":
                k = list(styles).index(trace.target)
                x = [dodge(float(v), k, len(styles), log=chart.x_log, span=span) for v in trace.x]
            legend_key = trace.name
            data += _traces(
                chart, trace, x, styles[trace.target], x_ref, y_ref, legend_key not in shown
            )
            shown.add(legend_key)
    return {"data": data, "layout": layout, "config": config}


def _si(chart: Chart) -> bool:
    return any(w in chart.y_label for w in ("IOPS", "files/s", "tps"))


def _x_axis(
    chart: Chart, panel: Panel, domain: tuple[float, float], y_ref: str, *, last_row: bool
) -> dict[str, Any]:
    axis: dict[str, Any] = {
        "domain": list(domain),
        "anchor": y_ref,
        "gridcolor": "#e4e4e4",
        "automargin": True,
    }
    if chart.kind == "bars":
        axis["type"] = "category"
    elif chart.kind == "lines":
        xs = sorted({float(x) for t in panel.traces for x in t.x if not isinstance(x, str)})
        if chart.x_log:
            axis.update(type="log", tickvals=xs, ticktext=[f"{x:g}" for x in xs])
        else:
            axis.update(tickvals=xs)
    if last_row and chart.x_label:
        axis["title"] = {"text": _esc(chart.x_label), "font": {"size": 12}}
    return axis


def _traces(
    chart: Chart,
    trace: Trace,
    x: Sequence[float | str],
    style: TargetStyle,
    x_ref: str,
    y_ref: str,
    legend: bool,
) -> list[dict[str, Any]]:
    name = _esc(trace.name)
    common: dict[str, Any] = {
        "name": name,
        "legendgroup": name,
        "showlegend": legend,
        "xaxis": x_ref,
        "yaxis": y_ref,
        "x": _clean(list(x)),
        "y": _clean(list(trace.y)),
        # hovertext, not text: a bar would print its text inside itself
        "hovertext": [_esc(h) for h in trace.hover],
        "hovertemplate": "%{hovertext}<extra></extra>",
    }
    if trace.err is not None and any(e is not None for e in trace.err):
        common["error_y"] = {
            "type": "data",
            "array": [0 if e is None else e for e in trace.err],
            # down to zero at most: these quantities are never negative
            "arrayminus": [
                0 if e is None or y is None else min(e, y)
                for e, y in zip(trace.err, trace.y, strict=True)
            ],
            "visible": True,
            "thickness": 1.2,
            "width": 3,
            "color": style.color,
        }
    if chart.kind == "bars":
        out = {
            **common,
            "type": "bar",
            "marker": {"color": style.color, "line": {"width": 0}},
            "offsetgroup": name,
        }
        return [out]
    line: dict[str, Any] = {
        **common,
        "type": "scatter",
        "mode": "lines+markers",
        "line": {"color": style.color, "width": 2, "dash": trace.dash},
        "marker": {
            "color": style.color,
            "symbol": style.symbol,
            "size": 7,
        },
        "connectgaps": False,
    }
    return [line]


def _script_json(value: Any) -> str:
    """JSON that is safe inside a `<script>` element whatever strings it holds."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def template_environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FunctionLoader(template_source),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["param"] = lambda kv: f"{kv[0]}={format_param(kv[0], kv[1])}"
    env.filters["code"] = code_spans
    env.filters["kinds_by_target"] = kinds_by_target
    env.globals["table_body"] = table_body
    return env


def table_body(t: TableView) -> Markup:
    """A comparison table's rows, `<tr>` by `<tr>`: made here rather than in the
    template, since a large study's tables have millions of cells and jinja's loop costs
    several times this per cell. A cell shows its `title` (n, the intervals) on hover
    where it has one (none in a compact report); every text is escaped as the template
    would."""
    out: list[str] = []
    for i, row in enumerate(t.rows):
        out.append('<tr class="runs">' if i == 0 else "<tr>")
        for cell in row:
            cls, m = _cell_class(cell), mark(cell.verdict)
            out.append(
                "<td"
                + (f' class="{_escaped(cls)}"' if cls else "")
                + (f' title="{_escaped(cell.title)}"' if cell.title else "")
                + f">{_escaped(cell.text)}"
                + (f'<span class="mark">{_escaped(m)}</span>' if m else "")
                + "</td>"
            )
        out.append("</tr>\n")
    return Markup("".join(out))


# What jinja's autoescape (markupsafe.escape) makes of these characters, character for
# character: a table's millions of cells are escaped here at a third of its cost (it
# makes a Markup object of each).
_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "'": "&#39;", '"': "&#34;"})


def _escaped(text: str) -> str:
    return text.translate(_ESCAPES)


def kinds_by_target(warnings: Sequence[StatWarning]) -> str:
    """`ext4: noisy, outlier · xfs: cached`: a table's warnings in one line."""
    by: dict[str, dict[str, None]] = {}
    for w in warnings:
        by.setdefault(w.target, {})[w.kind.value] = None
    return " · ".join(f"{t}: {', '.join(kinds)}" for t, kinds in by.items())


_TICKED = re.compile(r"`([^`]+)`")


def code_spans(text: str) -> markupsafe.Markup:
    """Text for HTML, escaped, its `backticked` words as <code> (hints and the legend are
    written for the terminal, where backticks mark a key or a command)."""
    escaped = str(markupsafe.escape(text))
    return markupsafe.Markup(_TICKED.sub(r"<code>\1</code>", escaped))


def template_source(name: str) -> str:
    return files("fslab.report").joinpath("templates", name).read_text(encoding="utf-8")


def summary_context(
    c: Comparison, point_href: Callable[[Group], str], *, compact: bool
) -> dict[str, Any]:
    """What `report_summary.html.j2` reads: the verdicts and the answers, each point
    linked by `point_href` (an anchor in the report, a page of `fslab site`)."""
    found = summary(c)
    return {
        "styles": target_styles(c.targets),
        "answers": found,
        "is_grid": lambda item: isinstance(item, Grid),
        "grid_class": _grid_class,
        "grid_legend": GRID_LEGEND if any(isinstance(i, Grid) for i in found) else "",
        "format_vs": format_vs,
        "vs_title": vs_title,
        "interval_level": interval_level,
        "verdicts": (rows := verdicts(c)),
        "verdict_lines": verdict_headlines(c, rows),
        "spans": spans_html,
        "verdict_class": _verdict_class,
        "mark": mark,
        "compact": compact,
        "point_href": point_href,
    }


def render_html(
    data: ReportData,
    charts: Sequence[Chart],
    *,
    plotly_js: str | None = None,
    plotly_src: str | None = None,
    site_links: Sequence[tuple[str, str]] = (),
) -> str:
    """The whole report as one HTML document (`html_parts`, joined)."""
    parts = html_parts(data, charts, plotly_js=plotly_js, plotly_src=plotly_src,
                       site_links=site_links)  # fmt: skip
    return "".join(parts)


def write_html(path: Path, data: ReportData, charts: Sequence[Chart]) -> None:
    """The report into `path`, whole or not at all, written as it is made: a study of
    100,000 runs makes a 90 MB page, which is never held in memory at once."""
    with staged(path) as tmp, tmp.open("w", encoding="utf-8") as f:
        f.writelines(html_parts(data, charts))


def html_parts(
    data: ReportData,
    charts: Sequence[Chart],
    *,
    plotly_js: str | None = None,
    plotly_src: str | None = None,
    site_links: Sequence[tuple[str, str]] = (),
) -> Iterator[str]:
    """The whole report as one HTML document, in the pieces the template makes it in.
    `plotly_js` defaults to the plotly.js that ships with the `plotly` package (inlined
    once); with `plotly_src`, the page loads it from that relative address instead
    (`fslab site` writes it once for every page), and `site_links` (label, address) lead
    back to the site's other pages."""
    c = data.comparison
    sections = [
        (s, [ch for ch in charts if ch.section is s])
        for s in Section
        if any(ch.section is s for ch in charts)
    ]
    compact = is_compact(c)
    tables = table_views(c, titles=not compact)
    anchors = {id(v.group): v.anchor for v in tables}
    found = summary_context(c, lambda g: "#" + anchors[id(g)], compact=compact)
    styles = found["styles"]
    specs = [{"id": f"chart-{ch.id}", **figure(ch, styles)} for ch in charts]
    warnings = [(v, w) for v in tables for w in v.warnings]
    # A study of many points can carry hundreds: first how many of each kind per target.
    by_kind: dict[str, tuple[str, dict[str, int]]] = {}
    for _, w in warnings:
        _, counts = by_kind.setdefault(w.kind.value, (w.hint, {}))
        counts[w.target] = counts.get(w.target, 0) + 1
    integrity = integrity_table(c)
    template = template_environment().get_template("report.html.j2")
    return template.generate(
        **found,
        c=c,
        data=data,
        not_counted=not_counted(c),
        shared=shared_note(c),
        version=__version__,
        generated=data.generated_at.strftime("%Y-%m-%d %H:%M UTC"),
        chart_notes=chart_notes(data),
        sections=sections,
        tables=tables,
        warning_summary=warning_summary(c),
        limit_lines=limit_lines(c),
        anchor=lambda g: anchors[id(g)],
        warnings=warnings,
        warning_kinds=by_kind,
        legend=legend(c),
        facts=target_facts,
        methodology=methodology(c),
        charts_json=_script_json(specs),
        plotly_js="" if plotly_src else plotly_js if plotly_js is not None else get_plotlyjs(),
        plotly_src=plotly_src,
        site_links=site_links,
        common=[f"{k}={format_param(k, v)}" for k, v in c.common_params()],
        json_pretty=lambda v: json.dumps(v, indent=2, sort_keys=True, ensure_ascii=False),
        points=len(c.groups) + (len(integrity.rows) if integrity else 0),
        integrity=integrity,
        integrity_lines=integrity_lines(c),
        trade_off=trade_off_lines(c),
        integrity_facts=integrity_facts(
            integrity.targets if integrity else (), {t.name: t.effective for t in data.targets}
        ),
        fact_columns=fact_columns(),
        outcome_meaning=list(OUTCOME_MEANING.items()),
        outcome_html=_outcome_html,
        outcome_class=_outcome_class,
        ranks=data.ranks,
        ranks_open=RANKS_OPEN,
        ranks_intro=RANKS_INTRO,
        rank_columns=RANK_COLUMNS,
        rank_cells=rank_cells,
    )


def _outcome_class(cell: OutcomeCell) -> str:
    """An integrity cell's class: its worst outcome's (`o-silent_wrong`), or none."""
    worst = cell.worst
    return f"outcome o-{worst}" if worst else "outcome"


def _outcome_html(cell: OutcomeCell) -> Markup:
    """An integrity cell's text, each outcome of a disagreeing cell in its colour."""
    parts = cell.parts
    if len(parts) < 2:
        return Markup(html.escape(cell.text))
    return Markup(", ").join(
        Markup('<span class="o-{}">{} {}</span>').format(o, o, n) for o, n in parts
    )


def _cell_class(cell: TableCell) -> str:
    """A comparison table cell's classes: its kind (a value cell needs none), its
    verdict's, PASS/FAIL's; empty for a plain value (most cells of a large report)."""
    if cell.kind == "value" and cell.verdict is None and cell.passed is None:
        return ""
    outcome = {True: "pass", False: "fail", None: ""}[cell.passed]
    parts = [cell.kind if cell.kind != "value" else "", _verdict_class(cell.verdict), outcome]
    return " ".join(p for p in parts if p)


def _grid_class(cell: GridCell | None) -> str:
    if cell is None:
        return ""
    if cell.flagged:
        return "v-flagged"
    return f"v-{cell.decision.word}" if cell.decision is not None else ""


def _verdict_class(vs: Judgement | None) -> str:
    if vs is None:
        return ""
    if mark(vs) == FLAGGED_MARK:
        return "v-flagged"
    return f"v-{vs.decision.word}" if vs.decision is not Decision.NONE else ""


def spans_html(spans: Sequence[Span], styles: Mapping[str, TargetStyle]) -> Any:
    """A sentence as HTML (a `Markup`: escaped here, not again by the template)."""
    parts: list[str] = []
    for s in spans:
        text = html.escape(s.text)
        if s.style == "target":
            color = styles[s.text].color if s.text in styles else "#222"
            parts.append(f'<span class="target" style="--c:{color}">{text}</span>')
        elif s.style == "strong":
            parts.append(f"<strong>{text}</strong>")
        else:
            parts.append(text)
    return Markup("".join(parts))
