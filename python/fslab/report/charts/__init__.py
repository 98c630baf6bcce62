"""The charts of a report as data, drawn by `fslab.report.html` (plotly, interactive) and
`fslab.report.markdown` (matplotlib, static SVG) alike.

A `Chart` is one figure: one or more `Panel`s (small multiples), each with one `Trace`
per target (one colour per target, the same in every chart, from `target_styles`).
Values are already in the unit of the axis label (`MiB/s`, `µs`, ...); the hover texts
are made here too, so both renderers show the same numbers.

Which charts a study gets depends on its data:

- **sweeps**: IOPS, MiB/s and latency against `iodepth` (or `threads` when only that is
  swept), one line per target, one panel per combination of the other parameters;
  files/s against `threads`, one panel per operation;
- **bars**: each workload's points side by side, grouped by target, with the 95% CI;
- an application model's workload (`oltp`, `mailstore`) gets, as sweeps and bars, the
  few numbers that tell it (`APP_CHARTS`): transactions per second, the JetStress set
  or the data reads and log writes, and the device IOPS peak (checkpoint bursts); never
  its verdict (the summary's table) nor the other operations' rates;
- **monitoring** (`timeline.py`): per point (a few per workload), a row per quantity
  over time (the disks' MiB/s and IOPS, the page cache, the memory available) and a
  column per target on the same scales, from the telemetry of a representative run; a
  files run's operations named along the time axis;
- **amplification**: write and space amplification, grouped by target.
"""

from __future__ import annotations

from fslab.report.charts.apps import APP_CHARTS, AppChart
from fslab.report.charts.bars import amplification_charts, bar_charts
from fslab.report.charts.layout import (
    MAX_PANELS,
    MAX_POINT_CHARTS,
    Ids,
    groups_by_workload,
    per_point_note,
)
from fslab.report.charts.model import (
    PALETTE,
    SYMBOLS,
    Chart,
    Panel,
    Section,
    TargetStyle,
    Trace,
    dodge,
    target_styles,
)
from fslab.report.charts.sweeps import sweep_charts
from fslab.report.charts.timeline import timeline_charts
from fslab.report.context import ReportData
from fslab.report.monitoring import monitor_note

__all__ = [
    "APP_CHARTS",
    "MAX_PANELS",
    "MAX_POINT_CHARTS",
    "PALETTE",
    "SYMBOLS",
    "AppChart",
    "Chart",
    "Panel",
    "Section",
    "TargetStyle",
    "Trace",
    "build_charts",
    "chart_notes",
    "dodge",
    "target_styles",
]


def build_charts(data: ReportData) -> tuple[Chart, ...]:
    """Every chart the study's data supports, in report order."""
    c = data.comparison
    ids = Ids()
    charts: list[Chart] = []
    charts += sweep_charts(c, ids)
    charts += bar_charts(c, ids)
    charts += timeline_charts(data, ids)
    charts += amplification_charts(c, ids)
    return tuple(ch for ch in charts if ch.points())


def chart_notes(data: ReportData) -> tuple[str, ...]:
    """What the charts leave out: per workload too large for per-point charts, and per
    workload whose monitoring view draws some of its points."""
    groups = data.comparison.groups
    notes = (per_point_note(w, gs) for w, gs in groups_by_workload(groups).items())
    return tuple(n for n in notes if n) + monitor_note(groups)
