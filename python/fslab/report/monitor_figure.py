"""A monitor chart (`Chart.kind == "monitor"`, `fslab.report.charts.timeline`) drawn by
plotly for the HTML report and by matplotlib for the Markdown one.

Its grid is fixed by its data, not by the renderer: a column per target (the chart's
`columns`), a row per quantity; above the rows, when the run had operations, a strip
that names them, one operation to a line (a staircase: however short an operation, its
name has a line of its own, so no two names meet), their spans shaded down the column.
Kept apart from `html.py` and `markdown.py`: both grids are laid out here, in pixels,
the same way.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from fslab.report.charts.model import Band, Chart, Panel, TargetStyle

if TYPE_CHECKING:
    from matplotlib.figure import Figure

PAGE_PX = 1264
"""The width a report's chart is drawn at (its page's column), for what fits where."""
_CHAR_PX = 6.6
"""A character of 11 px text, about."""
_TOP_PX = 52
_BOTTOM_PX = 46
_LEFT_PX = 62
_RIGHT_PX = 16
_ROW_TITLE_PX = 26
_PANEL_PX = 130
_STRIP_LINE_PX = 14
_COL_GAP = 0.03
"""Between columns, a share of the plotting width."""
_SHADE = "rgba(0,0,0,0.055)"


def _rows(chart: Chart) -> list[list[Panel]]:
    cols = max(chart.columns, 1)
    return [list(chart.panels[i : i + cols]) for i in range(0, len(chart.panels), cols)]


def _bands(chart: Chart) -> list[tuple[Band, ...]]:
    """Each column's operations (those of its first row's panel)."""
    return [p.bands for p in _rows(chart)[0]]


def strip_lines(chart: Chart) -> int:
    return max((len(b) for b in _bands(chart)), default=0)


def height_px(chart: Chart) -> int:
    lines = strip_lines(chart)
    strip = lines * _STRIP_LINE_PX + 8 if lines else 0
    return _TOP_PX + strip + len(_rows(chart)) * (_ROW_TITLE_PX + _PANEL_PX) + _BOTTOM_PX


def _esc(text: str) -> str:
    return html.escape(text, quote=False)


def _finite(values: Sequence[float | str | None]) -> list[float | str | None]:
    """JSON has no NaN: a value that is not a number is a gap in the line."""
    return [None if isinstance(v, float) and not math.isfinite(v) else v for v in values]


def column_title(panel: Panel, chars: int) -> tuple[str, str]:
    """(bold part, the rest) of a column's title, cut to `chars` characters: the target
    first, then what run it is where room is left."""
    name, _, rest = panel.title.partition(" · ")
    if len(name) > chars:
        return name[: max(chars - 1, 1)] + "…", ""
    if len(name) + 3 + len(rest) > chars:
        return name, ""
    return name, rest


def label_side(band: Band, x_top: float) -> str:
    """Where an operation's name goes on its line: after its span where more of the axis
    is left there than before it, else before it."""
    return "right" if x_top - band.end >= band.start else "left"


def plotly_figure(chart: Chart, styles: Mapping[str, TargetStyle], font: str) -> dict[str, Any]:
    """The plotly figure (data, layout) of a monitor chart."""
    rows = _rows(chart)
    cols = max(chart.columns, 1)
    bands = _bands(chart)
    lines = strip_lines(chart)
    height = height_px(chart)
    plot_h = height - _TOP_PX - _BOTTOM_PX
    col_px = (PAGE_PX - _LEFT_PX - _RIGHT_PX) * (1 - _COL_GAP * (cols - 1)) / cols
    x_top = chart.x_top or 1.0
    layout: dict[str, Any] = {
        "height": height,
        "margin": {"l": _LEFT_PX, "r": _RIGHT_PX, "t": _TOP_PX, "b": _BOTTOM_PX},
        "font": {"family": font, "size": 11, "color": "#222"},
        "paper_bgcolor": "#fff",
        "plot_bgcolor": "#fbfbfb",
        "hovermode": "closest",
        "hoverlabel": {"namelength": -1},
        "showlegend": False,
        "annotations": [],
        "shapes": [],
    }
    notes: list[dict[str, Any]] = layout["annotations"]
    shapes: list[dict[str, Any]] = layout["shapes"]

    def frac(px_from_top: float) -> float:
        return 1 - px_from_top / plot_h

    def x_domain(c: int) -> tuple[float, float]:
        width = (1 - _COL_GAP * (cols - 1)) / cols
        x0 = c * (width + _COL_GAP)
        return x0, x0 + width

    strip_px = lines * _STRIP_LINE_PX + 8 if lines else 0
    data: list[dict[str, Any]] = []
    n = len(chart.panels)
    bottom = frac(plot_h)
    for r, row in enumerate(rows):
        top_px = strip_px + r * (_ROW_TITLE_PX + _PANEL_PX) + _ROW_TITLE_PX
        dom = [frac(top_px + _PANEL_PX), frac(top_px)]
        if row and row[0].y_label:
            notes.append(
                {
                    "text": _row_title(row[0].y_label),
                    "xref": "paper", "yref": "paper", "x": 0, "y": dom[1],
                    "xanchor": "left", "yanchor": "bottom", "showarrow": False,
                    "font": {"size": 12},
                }
            )  # fmt: skip
        for c, panel in enumerate(row):
            i = r * cols + c
            xa, ya = _axis("x", i), _axis("y", i)
            xr, yr = xa.replace("axis", ""), ya.replace("axis", "")
            last = r == len(rows) - 1
            layout[xa] = {
                "domain": list(x_domain(c)),
                "anchor": yr,
                "range": [0, x_top],
                "gridcolor": "#e4e4e4",
                "zeroline": False,
                "showticklabels": last,
                **({"matches": "x"} if i else {}),
                **({"title": {"text": _esc(chart.x_label), "font": {"size": 11}}} if last else {}),
            }
            first_y = _axis("y", r * cols).replace("axis", "")
            layout[ya] = {
                "domain": dom,
                "anchor": xr,
                "range": [0, chart.y_top(panel) or 1.0],
                "gridcolor": "#e4e4e4",
                "zerolinecolor": "#bbb",
                "showticklabels": c == 0,
                "automargin": True,
                **({"tickformat": "~s"} if "IOPS" in panel.y_label else {}),
                **({"matches": first_y} if c else {}),
            }
            if r == 0:
                bold, rest = column_title(panel, int(col_px / _CHAR_PX))
                x0, x1 = x_domain(c)
                notes.append(
                    {
                        "text": f"<b>{_esc(bold)}</b>" + (f" · {_esc(rest)}" if rest else ""),
                        "hovertext": _esc(panel.title),
                        "xref": "paper", "yref": "paper", "x": (x0 + x1) / 2, "y": 1,
                        "xanchor": "center", "yanchor": "bottom", "showarrow": False,
                        "font": {"size": 12},
                    }
                )  # fmt: skip
            if panel.note:
                notes.append(
                    {
                        "text": _esc(panel.note),
                        "xref": f"{xr} domain", "yref": f"{yr} domain", "x": 0.995, "y": 1,
                        "xanchor": "right", "yanchor": "top", "showarrow": False,
                        "font": {"size": 10, "color": "#444"},
                        "bgcolor": "rgba(255,255,255,0.85)",
                    }
                )  # fmt: skip
            for trace in panel.traces:
                style = styles[trace.target]
                name = _esc(trace.name)
                data.append(
                    {
                        "type": "scatter",
                        "mode": "lines",
                        "name": name,
                        "legendgroup": name,
                        "showlegend": False,
                        "xaxis": xr,
                        "yaxis": yr,
                        "x": _finite(trace.x),
                        "y": _finite(trace.y),
                        "line": {
                            "color": style.color,
                            "width": 1.8 if trace.dash == "dot" else 1.6,
                            "dash": trace.dash,
                            "shape": trace.shape,
                        },
                        "connectgaps": False,
                        "hovertext": [_esc(h) for h in trace.hover],
                        "hovertemplate": "%{hovertext}<extra></extra>",
                    }
                )
    for c in range(cols):
        if c >= len(bands) or not bands[c]:
            continue
        target = rows[0][c].traces[0].target if rows[0][c].traces else ""
        color = styles[target].color if target in styles else "#666"
        x_ref = _axis("x", c).replace("axis", "")
        for k, band in enumerate(bands[c]):
            if k % 2:
                shapes.append(
                    {
                        "type": "rect", "layer": "below", "xref": x_ref, "yref": "paper",
                        "x0": band.start, "x1": band.end, "y0": bottom, "y1": 1,
                        "fillcolor": _SHADE, "line": {"width": 0},
                    }
                )  # fmt: skip
        j = n + c
        xa, ya = _axis("x", j), _axis("y", j)
        xr, yr = xa.replace("axis", ""), ya.replace("axis", "")
        layout[xa] = {
            "domain": list(x_domain(c)), "anchor": yr, "range": [0, x_top], "matches": "x",
            "showticklabels": False, "showgrid": False, "zeroline": False,
        }  # fmt: skip
        layout[ya] = {
            "domain": [frac(strip_px - 4), 1], "anchor": xr,
            "range": [lines - 0.5, -0.5], "visible": False, "fixedrange": True,
        }  # fmt: skip
        for k, band in enumerate(bands[c]):
            shapes.append(
                {
                    "type": "rect", "xref": xr, "yref": yr, "x0": band.start, "x1": band.end,
                    "y0": k - 0.36, "y1": k + 0.36, "fillcolor": color,
                    "line": {"width": 1, "color": color},
                }
            )  # fmt: skip
            right = label_side(band, x_top) == "right"
            notes.append(
                {
                    "text": _esc(band.label),
                    "xref": xr, "yref": yr, "x": band.end if right else band.start, "y": k,
                    "xanchor": "left" if right else "right", "xshift": 3 if right else -3,
                    "yanchor": "middle", "showarrow": False, "font": {"size": 10.5},
                }
            )  # fmt: skip
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": _esc(f"{target} operations"),
                "legendgroup": _esc(str(target)),
                "showlegend": False,
                "xaxis": xr,
                "yaxis": yr,
                "x": [(b.start + b.end) / 2 for b in bands[c]],
                "y": list(range(len(bands[c]))),
                "marker": {"color": color, "size": 10, "opacity": 0},
                "hovertext": [
                    _esc(f"{b.label}: {b.start:.2f}-{b.end:.2f} s ({b.end - b.start:.2f} s)")
                    for b in bands[c]
                ],
                "hovertemplate": "%{hovertext}<extra></extra>",
            }
        )
    return {"data": data, "layout": layout}


def _row_title(label: str) -> str:
    """`Disk transfer rate (MiB/s) · solid: written, dotted: read` with its quantity bold."""
    head, _, rest = label.partition(" · ")
    what, _, unit = head.partition(" (")
    text = f"<b>{_esc(what)}</b>" + (f" ({_esc(unit)}" if unit else "")
    return text + (f"  <span style='color:#666'>{_esc(rest)}</span>" if rest else "")


def _axis(kind: str, i: int) -> str:
    return f"{kind}axis" + (str(i + 1) if i else "")


# -- matplotlib (the Markdown report's SVG) ------------------------------------------------


def matplotlib_figure(chart: Chart, styles: Mapping[str, TargetStyle]) -> Figure:
    """The same grid drawn by matplotlib, at the HTML's proportions."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import EngFormatter

    rows = _rows(chart)
    cols = max(chart.columns, 1)
    bands = _bands(chart)
    lines = strip_lines(chart)
    dpi = 100.0
    width_in = PAGE_PX / dpi * 0.85
    strip_px = lines * _STRIP_LINE_PX + 8 if lines else 0
    height_in = (height_px(chart) + 28) / dpi
    fig = Figure(figsize=(width_in, height_in))
    ratios = ([strip_px] if lines else []) + [_PANEL_PX] * len(rows)
    grid = fig.add_gridspec(
        len(ratios), cols, height_ratios=ratios,
        left=_LEFT_PX / dpi / width_in, right=1 - _RIGHT_PX / dpi / width_in,
        top=1 - (_TOP_PX + 28) / dpi / height_in, bottom=_BOTTOM_PX / dpi / height_in,
        wspace=0.1, hspace=_ROW_TITLE_PX / _PANEL_PX * 1.6,
    )  # fmt: skip
    x_top = chart.x_top or 1.0
    col_px = width_in * dpi / cols
    first = 1 if lines else 0
    axes: list[list[Any]] = []
    for r, row in enumerate(rows):
        axes.append([])
        for c, panel in enumerate(row):
            ax = fig.add_subplot(grid[first + r, c])
            axes[r].append(ax)
            for k, band in enumerate(bands[c] if c < len(bands) else ()):
                if k % 2:
                    ax.axvspan(band.start, band.end, color="black", alpha=0.055, lw=0)
            for trace in panel.traces:
                style = styles[trace.target]
                ys = [math.nan if y is None else y for y in trace.y]
                ax.plot(
                    [float(x) for x in trace.x], ys, color=style.color,
                    linewidth=1.1, linestyle=":" if trace.dash == "dot" else "-",
                    drawstyle="steps-post" if trace.shape == "hv" else "default",
                )  # fmt: skip
            ax.set_xlim(0, x_top)
            ax.set_ylim(0, chart.y_top(panel) or 1.0)
            ax.grid(True, color="#e4e4e4", linewidth=0.6)
            ax.set_axisbelow(True)
            ax.tick_params(labelsize=7)
            if "IOPS" in panel.y_label:
                ax.yaxis.set_major_formatter(EngFormatter(sep=""))
            if c:
                ax.tick_params(labelleft=False)
            if r < len(rows) - 1:
                ax.tick_params(labelbottom=False)
            elif chart.x_label:
                ax.set_xlabel(chart.x_label, fontsize=8)
            if panel.note:
                ax.text(
                    0.99, 0.97, panel.note, transform=ax.transAxes, ha="right", va="top",
                    fontsize=6.5, color="#444",
                    bbox={"facecolor": "white", "alpha": 0.85, "lw": 0, "pad": 1},
                )  # fmt: skip
            if c == 0 and panel.y_label:
                ax.set_title(panel.y_label, loc="left", fontsize=8, fontweight="bold")
            if r == 0 and not lines:
                bold, rest = column_title(panel, int(col_px / _CHAR_PX))
                ax.annotate(
                    bold + (f" · {rest}" if rest else ""), (0.5, 1.0), xycoords="axes fraction",
                    xytext=(0, 16), textcoords="offset points", ha="center", fontsize=8.5,
                    fontweight="bold",
                )  # fmt: skip
    if lines:
        for c in range(cols):
            col_bands = bands[c] if c < len(bands) else ()
            ax = fig.add_subplot(grid[0, c], sharex=axes[0][c])
            ax.set_ylim(lines - 0.5, -0.5)
            ax.axis("off")
            panel = rows[0][c]
            target = panel.traces[0].target if panel.traces else ""
            color = styles[target].color if target in styles else "#666"
            for k, band in enumerate(col_bands):
                ax.barh(k, max(band.end - band.start, x_top * 0.002), left=band.start,
                        height=0.72, color=color)  # fmt: skip
                right = label_side(band, x_top) == "right"
                ax.annotate(
                    band.label, (band.end if right else band.start, k),
                    xytext=(3 if right else -3, 0), textcoords="offset points",
                    ha="left" if right else "right", va="center", fontsize=6.5,
                )  # fmt: skip
            bold, rest = column_title(panel, int(col_px / _CHAR_PX))
            ax.set_title(bold + (f" · {rest}" if rest else ""), fontsize=8.5, fontweight="bold")
    fig.suptitle(chart.title, fontsize=10, fontweight="bold", y=1 - 0.08 / height_in, va="top")
    return fig
