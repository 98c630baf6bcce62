"""`fslab history --html`: the trend charts, one per point, in one self-contained HTML
file (plotly.js inlined once, as `fslab report` does: it opens offline). Names from the
database reach the page escaped: jinja2 autoescapes, plotly's labels are escaped, and
the chart data is JSON a `<script>` element cannot be closed by."""

from __future__ import annotations

import datetime as dt
from typing import Any

from plotly.offline import get_plotlyjs

from fslab import __version__
from fslab.report.charts import target_styles
from fslab.report.format import format_ratio, format_stat, stat_scale
from fslab.report.history import History, Series, against, sentence
from fslab.report.html import _esc, _script_json, template_environment
from fslab.stats.regression import MIN_CHANGE, Trend

REGRESSION_COLOR = "#b3261e"
IMPROVEMENT_COLOR = "#0a7d32"


def render_history_html(
    h: History, *, plotly_js: str | None = None, plotly_src: str | None = None
) -> str:
    """The whole page: the passes, the regressions, then a chart per point and op. With
    `plotly_src`, plotly.js is loaded from that relative address instead of inlined."""
    styles = target_styles(list(dict.fromkeys(s.target for s in h.series)))
    points: dict[tuple[str, str], list[Series]] = {}
    for s in h.series:
        points.setdefault((s.title, ""), []).append(s)
    charts = [
        {"id": f"trend-{i}", **_figure(h, key, members, styles)}
        for i, (key, members) in enumerate(points.items())
    ]
    template = template_environment().get_template("history.html.j2")
    return template.render(
        h=h,
        version=__version__,
        generated=dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        regressions=h.regressions(),
        charts=[(c["id"], c["title"]) for c in charts],
        charts_json=_script_json(charts),
        plotly_js="" if plotly_src else plotly_js if plotly_js is not None else get_plotlyjs(),
        plotly_src=plotly_src,
        styles=styles,
        min_change=f"{MIN_CHANGE:.0%}",
        stat=format_stat,
        sentence=sentence,
        against=against,
    )


def _figure(
    h: History, key: tuple[str, str], members: list[Series], styles: dict[str, Any]
) -> dict[str, Any]:
    """A line per target over the passes, each pass's interval as error bars, a regression
    marked by a red ring (an improvement green) with the band the passes before it
    predicted for it."""
    title = " ".join(x for x in key if x)
    labels = [p.label for p in h.passes]
    got = [v.mean for s in members for v in s.values if v is not None]
    scale, unit = stat_scale(members[0].metric, max(got) if got else 1.0)
    if unit in ("k", "M", "G"):
        scale, unit = 1.0, ""  # plotly's ticks say 40k themselves
    data: list[dict[str, Any]] = []
    shapes: list[dict[str, Any]] = []
    for s in members:
        style = styles[s.target]
        y = [v.mean / scale if v is not None else None for v in s.values]
        up = [(v.high - v.mean) / scale if v is not None and v.high else None for v in s.values]
        down = [(v.mean - v.low) / scale if v is not None and v.low else None for v in s.values]
        hover = [_hover(h, s, i) for i in range(len(s.values))]
        data.append({
            "type": "scatter", "mode": "lines+markers", "name": _esc(s.target),
            "x": labels, "y": y, "text": hover, "hoverinfo": "text",
            "line": {"color": style.color, "width": 1.5},
            "marker": {"color": style.color, "symbol": style.symbol, "size": 7},
            "error_y": {"type": "data", "array": up, "arrayminus": down, "visible": True,
                        "thickness": 1, "width": 3, "color": style.color},
        })  # fmt: skip
        for trend, color in ((Trend.REGRESSION, REGRESSION_COLOR),
                             (Trend.IMPROVEMENT, IMPROVEMENT_COLOR)):  # fmt: skip
            at = [i for i, c in enumerate(s.checks) if c.trend is trend]
            if not at:
                continue
            data.append({
                "type": "scatter", "mode": "markers", "showlegend": False,
                "name": _esc(f"{s.target} {trend.value}"), "hoverinfo": "skip",
                "x": [labels[i] for i in at], "y": [y[i] for i in at],
                "marker": {"size": 17, "color": "rgba(0,0,0,0)",
                           "line": {"color": color, "width": 2.5}},
            })  # fmt: skip
        last = s.checks[-1]
        value = s.values[-1]
        if last.low is not None and last.high is not None and value is not None and last.change:
            ref = value.mean / last.change / scale
            shapes.append({
                "type": "rect", "xref": "x", "yref": "y", "layer": "below", "line": {"width": 0},
                "x0": len(labels) - 1.4, "x1": len(labels) - 0.6,
                "y0": ref * last.low, "y1": ref * last.high,
                "fillcolor": style.color, "opacity": 0.12,
            })  # fmt: skip
    metric = members[0].metric
    return {
        "title": title,
        "data": data,
        "layout": {
            "height": 300,
            "margin": {"l": 60, "r": 20, "t": 36, "b": 70},
            "title": {
                "text": _esc(f"{title}: {metric.label}"),
                "font": {"size": 14},
                "x": 0,
                "xanchor": "left",
            },
            "xaxis": {"type": "category", "tickangle": -30, "automargin": True},
            "yaxis": {
                "title": {"text": _esc(f"{metric.label} ({unit})" if unit else metric.label)},
                "rangemode": "tozero",
            },
            "shapes": shapes,
            "legend": {"orientation": "h", "y": 1.12, "x": 1, "xanchor": "right"},
            "font": {"family": "system-ui, sans-serif", "size": 12},
            "plot_bgcolor": "#fff",
            "paper_bgcolor": "#fff",
        },
        "config": {"displaylogo": False, "responsive": True, "displayModeBar": False},
    }


def _hover(h: History, s: Series, i: int) -> str:
    v, c, p = s.values[i], s.checks[i], h.passes[i]
    if v is None:
        return _esc(f"{s.target} · {p.label}: not measured")
    parts = [f"{s.target} · {p.label} ({p.day})",
             f"{format_stat(s.metric, v.mean, None)} {s.metric.label}, {v.n} runs"]  # fmt: skip
    if v.low is not None and v.high is not None:
        parts.append(
            f"95%: {format_stat(s.metric, v.low, None)}-{format_stat(s.metric, v.high, None)}"
        )
    if c.change is not None and c.low is not None and c.high is not None:
        parts.append(f"{format_ratio(c.change)} of the {c.reference} passes before "
                     f"(they predict {c.low:.2f}-{c.high:.2f}x): {c.trend.value}")  # fmt: skip
    elif c.trend is Trend.SHORT:
        parts.append(f"{c.reference} passes before: too few to check")
    if v.flagged:
        parts.append(f"flagged: {v.flagged}")
    return "<br>".join(_esc(x) for x in parts)
