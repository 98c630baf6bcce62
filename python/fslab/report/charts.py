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
- **timeline**: device IOPS and MiB/s over time from the telemetry (the first completed
  repetition of each target), its peak marked;
- **amplification**: write and space amplification, grouped by target.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from functools import partial
from typing import Any, Literal

from fslab.compare import (
    JETSTRESS_OP,
    TELEMETRY_OP,
    VERDICT_UNIT,
    Comparison,
    Group,
    MetricSpec,
    Row,
)
from fslab.params import format_param
from fslab.report.context import ReportData, key_of
from fslab.report.findings import limits
from fslab.report.format import format_stat, ns_axis, slug
from fslab.study.model import APP_KINDS
from fslab.units import short_count, short_number

# Okabe & Ito's colour-blind safe palette (without its yellow, too pale on white), then
# Tableau's for studies with more targets.
PALETTE = (
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000",
    "#4E79A7", "#F28E2B", "#59A14F", "#B07AA1", "#9C755F", "#76B7B2", "#EDC948",
)  # fmt: skip
SYMBOLS = ("circle", "square", "diamond", "triangle-up", "x", "triangle-down", "cross", "star")
"""Marker shapes (plotly names), one per target alongside its colour."""

MAX_PANELS = 16
"""More points than this in one chart are split by the first parameter that varies."""


class Section(StrEnum):
    SWEEP = "sweep"
    BARS = "bars"
    TIMELINE = "timeline"
    AMPLIFICATION = "amplification"

    @property
    def heading(self) -> str:
        return {
            Section.SWEEP: "Sweeps",
            Section.BARS: "Targets side by side",
            Section.TIMELINE: "Device activity over time",
            Section.AMPLIFICATION: "Write and space amplification",
        }[self]

    @property
    def intro(self) -> str:
        return {
            Section.SWEEP: "Each line is a target; each point the mean of its completed runs, "
            "with the 95% confidence interval as error bars.",
            Section.BARS: "Mean of the completed runs per target; error bars: 95% confidence "
            "interval (none with a single run).",
            Section.TIMELINE: "What the target's devices did, from the telemetry sampled "
            "beside the first completed run of each target; each line's peak is marked.",
            Section.AMPLIFICATION: "Write amplification: bytes the devices wrote per byte the "
            "workload wrote. Space amplification: space used per byte of data stored. "
            "1.0x is none; lower is better.",
        }[self]


@dataclass(frozen=True)
class TargetStyle:
    color: str
    symbol: str


def target_styles(targets: Sequence[str]) -> dict[str, TargetStyle]:
    """One colour and marker per target, by its position in the study."""
    return {
        t: TargetStyle(PALETTE[i % len(PALETTE)], SYMBOLS[i % len(SYMBOLS)])
        for i, t in enumerate(targets)
    }


@dataclass(frozen=True)
class Trace:
    """One target's values in one panel. `x` are numbers (sweeps, time) or category
    labels (bars); `y` None where the target has no value."""

    target: str
    x: tuple[float | str, ...]
    y: tuple[float | None, ...]
    err: tuple[float | None, ...] | None = None
    """Half-width of the 95% CI per value, in the unit of `y`."""
    hover: tuple[str, ...] = ()
    """Per value, the text people see on hover (plain text; renderers escape it)."""
    variant: str = ""
    """What this line is of the target's, when a target has several (`read`, `write`)."""
    dash: Literal["solid", "dot"] = "solid"
    peak: int | None = None
    """Index of the value to mark as this trace's peak."""

    @property
    def name(self) -> str:
        return f"{self.target} {self.variant}" if self.variant else self.target


@dataclass(frozen=True)
class Panel:
    title: str
    traces: tuple[Trace, ...]


@dataclass(frozen=True)
class Chart:
    id: str
    """Unique within a report, `[a-z0-9-]`: the HTML element's id and the SVG file's name."""
    section: Section
    kind: Literal["lines", "bars", "time"]
    title: str
    x_label: str
    y_label: str
    panels: tuple[Panel, ...]
    x_log: bool = False
    """Sweeps of iodepth or threads over powers of two: a log2 axis."""
    caption: str = ""

    def y_top(self, panel: Panel) -> float | None:
        """Where the panel's y axis should end: past the highest error bar, unless some
        error bar is far taller than the values (few runs, much noise); then at 1.5x the
        highest value, and that bar runs off the top (None: let the renderer decide)."""
        means = [y for t in panel.traces for y in t.y if y is not None]
        if not means or max(means) <= 0:
            return None
        tops = [
            y + (e or 0.0)
            for t in panel.traces
            for y, e in zip(t.y, t.err or (None,) * len(t.y), strict=True)
            if y is not None
        ]
        high = max(means)
        return min(max(tops), 1.5 * high) * 1.06

    def points(self) -> int:
        """How many values the chart draws (for tests and for empty-chart checks)."""
        return sum(1 for p in self.panels for t in p.traces for y in t.y if y is not None)


# -- units ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Unit:
    scale: float
    """Stored value / scale = the value drawn."""
    axis: str
    """The axis label, with its unit."""


def _unit(metric: MetricSpec, values: Iterable[float]) -> _Unit:
    if metric.unit == "bytes_per_s":
        return _Unit(float(1 << 20), "MiB/s")
    if metric.unit == "bytes":
        return _Unit(float(1 << 20), f"{metric.label}" if "MiB" in metric.label else "MiB")
    if metric.unit == "ratio":
        return _Unit(1.0, f"{_METRIC_WORDS.get(metric.name, metric.label)} (x)")
    if metric.unit == "pct":
        return _Unit(1.0, f"{metric.label} (%)")
    if metric.unit == "ns":
        scale, suffix = ns_axis(values)
        what = "mean latency" if metric.name == "lat_mean_ns" else "p99 latency"
        return _Unit(scale, f"{what} ({suffix})")
    return _Unit(1.0, metric.label)


_METRIC_WORDS = {
    "iops": "IOPS",
    "bw_bytes": "MiB/s",
    "lat_mean_ns": "mean latency",
    "lat_p99_ns": "p99 latency",
    "write_amplification": "write amplification",
    "space_amplification": "space amplification",
}


def _words(metric: MetricSpec) -> str:
    if metric.name == "iops":
        return metric.label  # IOPS, or files/s for file operations
    return _METRIC_WORDS.get(metric.name, metric.label)


# -- ids and labels --------------------------------------------------------------------------


class _Ids:
    def __init__(self) -> None:
        self.seen: set[str] = set()

    def __call__(self, *parts: str) -> str:
        base = slug("-".join(p for p in parts if p))
        out, i = base, 2
        while out in self.seen:
            out, i = f"{base}-{i}", i + 1
        self.seen.add(out)
        return out


def _by_workload(groups: Iterable[Group]) -> dict[str, list[Group]]:
    out: dict[str, list[Group]] = {}
    for g in groups:
        out.setdefault(g.workload, []).append(g)
    return out


def _varying(groups: Sequence[Group]) -> list[str]:
    """The parameters with more than one value among `groups`, in order of appearance."""
    values: dict[str, set[str]] = {}
    for g in groups:
        for k, v in g.params:
            values.setdefault(k, set()).add(repr(v))
    keys = list(dict.fromkeys(k for g in groups for k, _ in g.params))
    return [k for k in keys if len(values[k]) > 1 or any(k not in dict(g.params) for g in groups)]


def _label(group: Group, keys: Sequence[str]) -> str:
    params = dict(group.params)
    return " ".join(f"{k}={format_param(k, params[k])}" for k in keys if k in params)


def _engine_rows(group: Group, metric: str) -> list[Row]:
    return [r for r in group.rows if r.metric.name == metric and not r.op.endswith(TELEMETRY_OP)]


def _needs_op(groups: Sequence[Group]) -> bool:
    """Whether the operation must be named: files workloads, or several ops in one group."""
    return any(g.kind == "files" or len(_engine_ops(g)) > 1 for g in groups)


def _engine_ops(group: Group) -> list[str]:
    return [op for op in group.ops if not op.endswith(TELEMETRY_OP)]


def _join(*parts: str) -> str:
    return " · ".join(p for p in parts if p)


def _split(
    groups: Sequence[Group], size: Callable[[Sequence[Group]], int], keep: str = ""
) -> list[list[Group]]:
    """`groups` as is when `size` of them is at most MAX_PANELS, else split by the values
    of the first parameter that varies, `keep` excepted (recursively)."""
    if size(groups) <= MAX_PANELS:
        return [list(groups)]
    keys = [k for k in _varying(groups) if k != keep]
    if not keys:
        return [list(groups)]
    parts: dict[str, list[Group]] = {}
    for g in groups:
        parts.setdefault(repr(dict(g.params).get(keys[0])), []).append(g)
    if len(parts) == 1:
        return [list(groups)]
    return [piece for part in parts.values() for piece in _split(part, size, keep)]


def _common_label(groups: Sequence[Group], within: Sequence[Group]) -> str:
    """What a split-off part has in common that the whole workload does not (its title)."""
    keys = [k for k in _varying(within) if k not in _varying(groups)]
    return _label(groups[0], keys) if groups else ""


# -- the charts ----------------------------------------------------------------------------


def build_charts(data: ReportData) -> tuple[Chart, ...]:
    """Every chart the study's data supports, in report order."""
    c = data.comparison
    ids = _Ids()
    charts: list[Chart] = []
    charts += _sweeps(c, ids)
    charts += _bars(c, ids)
    charts += _timelines(data, ids)
    charts += _amplification(c, ids)
    return tuple(ch for ch in charts if ch.points())


def _stat_hover(metric: MetricSpec, target: str, where: str, row: Row) -> str:
    cell = row.cell(target)
    s = cell.summary
    if s is None:
        return ""
    text = f"{target} · {where}: {format_stat(metric, s.mean, s.ci_half)} (n={s.n})"
    if cell.diff is not None and cell.diff.delta_pct is not None:
        text += f", {cell.diff.delta_pct:+.1f}% vs baseline ({cell.diff.verdict.label})"
    return text


def _value(row: Row, target: str, unit: _Unit) -> tuple[float | None, float | None]:
    s = row.cell(target).summary
    if s is None:
        return None, None
    return s.mean / unit.scale, (s.ci_half / unit.scale if s.ci_half is not None else None)


def _sweep_axis(groups: Sequence[Group]) -> str | None:
    """The parameter drawn on the x axis: iodepth for block I/O, else threads."""
    varying = _varying(groups)
    files = groups[0].kind == "files"
    for key in ("threads",) if files else ("iodepth", "threads"):
        if key in varying and all(isinstance(dict(g.params).get(key), int | float) for g in groups):
            return key
    return None


_SWEEP_METRICS = {"files": ("iops",), "block": ("iops", "bw_bytes", "lat_mean_ns", "lat_p99_ns")}
_BAR_METRICS = {
    "files": ("iops", "bw_bytes", "lat_mean_ns"),
    "block": ("iops", "bw_bytes", "lat_mean_ns", "lat_p99_ns"),
}


def _metric_of(groups: Sequence[Group], name: str) -> MetricSpec | None:
    for g in groups:
        for r in g.rows:
            if r.metric.name == name and not r.op.endswith(TELEMETRY_OP):
                return r.metric
    return None


def _facets(groups: Sequence[Group], axis: str) -> dict[tuple[str, str], list[tuple[float, Group]]]:
    """(the other varying parameters, op) -> [(x, group)]: one panel each."""
    others = [k for k in _varying(groups) if k != axis]
    with_op = _needs_op(groups)
    facets: dict[tuple[str, str], list[tuple[float, Group]]] = {}
    for g in groups:
        at = float(dict(g.params)[axis])
        for op in _engine_ops(g):
            facets.setdefault((_label(g, others), op if with_op else ""), []).append((at, g))
    return facets


def _facet_count(groups: Sequence[Group], axis: str) -> int:
    return len(_facets(groups, axis))


def _sweeps(c: Comparison, ids: _Ids) -> list[Chart]:
    charts: list[Chart] = []
    for workload, every in _by_workload(c.groups).items():
        axis = _sweep_axis(every)
        if axis is None:
            continue
        if every[0].kind in APP_KINDS:
            charts += _app_sweeps(c, ids, workload, every, axis)
            continue
        parts = _split(every, partial(_facet_count, axis=axis), keep=axis)
        for part in parts:
            charts += _sweep_charts(c, ids, workload, part, every, axis, len(parts) > 1)
    return charts


def _sweep_charts(
    c: Comparison,
    ids: _Ids,
    workload: str,
    groups: Sequence[Group],
    every: Sequence[Group],
    axis: str,
    split: bool,
) -> list[Chart]:
    charts: list[Chart] = []
    sub = _common_label(groups, every) if split else ""
    facets = _facets(groups, axis)
    with_op = _needs_op(groups)
    xs = sorted({at for pts in facets.values() for at, _ in pts})
    log = min(xs) > 0 and max(xs) / min(xs) >= 8
    for name in _SWEEP_METRICS.get(groups[0].kind, _SWEEP_METRICS["block"]):
        metric = _metric_of(groups, name)
        if metric is None:
            continue
        values = [
            s.mean
            for g in groups
            for r in _engine_rows(g, name)
            for cell in r.cells
            if (s := cell.summary) is not None
        ]
        unit = _unit(metric, values)
        panels: list[Panel] = []
        for (label, op), pts in facets.items():
            points: list[tuple[float, Row]] = []
            for xv, g in sorted(pts, key=lambda p: p[0]):
                try:
                    points.append((xv, g.row(op or _engine_ops(g)[0], name)))
                except KeyError:
                    continue
            traces = _sweep_traces(c.targets, points, metric, unit, axis)
            if traces:
                panels.append(Panel(_join(label, op), tuple(traces)))
        charts.append(
            Chart(
                id=ids(workload, name, "vs", axis, sub),
                section=Section.SWEEP,
                kind="lines",
                title=_join(f"{workload}: {_words(metric)} vs {axis}", sub),
                x_label=axis,
                y_label=unit.axis,
                panels=tuple(panels),
                x_log=log,
                caption=f"Mean ± 95% CI of the completed runs; one panel per "
                f"{'operation and ' if with_op else ''}combination of the other parameters.",
            )
        )
    return charts


def _sweep_traces(
    targets: Sequence[str],
    points: Sequence[tuple[float, Row]],
    metric: MetricSpec,
    unit: _Unit,
    axis: str,
) -> list[Trace]:
    """One line per target through a sweep's points (x, the row there); none for a
    target without a value anywhere."""
    traces: list[Trace] = []
    for t in targets:
        x: list[float | str] = []
        y: list[float | None] = []
        err: list[float | None] = []
        hover: list[str] = []
        for xv, row in points:
            mean, ci = _value(row, t, unit)
            x.append(_num(xv))
            y.append(mean)
            err.append(ci)
            hover.append(_stat_hover(metric, t, f"{axis}={format_param(axis, _num(xv))}", row))
        if any(v is not None for v in y):
            traces.append(Trace(t, tuple(x), tuple(y), tuple(err), tuple(hover)))
    return traces


def _num(x: float) -> float:
    return int(x) if float(x).is_integer() else x


def _bars(c: Comparison, ids: _Ids) -> list[Chart]:
    charts: list[Chart] = []
    for workload, groups in _by_workload(c.groups).items():
        if groups[0].kind in APP_KINDS:
            charts += _app_bars(c, ids, workload, groups)
            continue
        files = groups[0].kind == "files"
        for name in _BAR_METRICS["files" if files else "block"]:
            metric = _metric_of(groups, name)
            if metric is None:
                continue
            charts += _bar_charts(
                c, ids, workload, groups, metric, Section.BARS, partial(_engine_rows, metric=name)
            )
    return charts


def _device_rows(group: Group, metric: str) -> list[Row]:
    return [r for r in group.rows if r.metric.name == metric and r.op.endswith(TELEMETRY_OP)]


def _amplification(c: Comparison, ids: _Ids) -> list[Chart]:
    charts: list[Chart] = []
    for workload, groups in _by_workload(c.groups).items():
        for name in ("write_amplification", "space_amplification"):
            metric = next((r.metric for g in groups for r in _device_rows(g, name)), None)
            if metric is None:
                continue
            charts += _bar_charts(
                c,
                ids,
                workload,
                groups,
                metric,
                Section.AMPLIFICATION,
                partial(_device_rows, metric=name),
            )
    return charts


def _op_label(row: Row) -> str:
    op = row.op
    if op.endswith(TELEMETRY_OP):
        op = op[: -len(TELEMETRY_OP)].strip()
    return op


def _bar_charts(
    c: Comparison,
    ids: _Ids,
    workload: str,
    groups: Sequence[Group],
    metric: MetricSpec,
    section: Section,
    rows_of: Callable[[Group], list[Row]],
    *,
    app: AppChart | None = None,
) -> list[Chart]:
    """Grouped bars: one panel per group for files workloads (a bar group per op), else
    one panel holding every (group, op) of the workload, split when there are too many.
    `app`: the one row per group of an application model's chart (its words, no op)."""
    files = groups[0].kind == "files"
    keys = _varying(groups)
    with_op = _needs_op(groups) and app is None
    values = [s.mean for g in groups for r in rows_of(g) for x in r.cells if (s := x.summary)]
    unit = _unit(metric, values) if app is None else _app_unit(app, metric, values)
    # panels of (category label, row)
    if files:
        parts = _split(groups, len)
    else:
        parts = _split(groups, lambda gs: sum(len(rows_of(g)) for g in gs))
    out: list[Chart] = []
    for part in parts:
        panels: list[tuple[str, list[tuple[str, Row]]]] = []
        if files:
            for g in part:
                panels.append((_label(g, keys), [(_op_label(r), r) for r in rows_of(g)]))
        else:
            inner = [k for k in keys if k in _varying(part)] if len(parts) > 1 else keys
            cats = [
                (_join(_label(g, inner), _op_label(r) if with_op else "") or g.workload, r)
                for g in part
                for r in rows_of(g)
            ]
            panels.append(("", cats))
        built: list[Panel] = []
        for title, cats in panels:
            traces: list[Trace] = []
            for t in c.targets:
                y, err, hover = [], [], []
                for label, row in cats:
                    mean, ci = _value(row, t, unit)
                    y.append(mean)
                    err.append(ci)
                    hover.append(_stat_hover(metric, t, label, row))
                if any(v is not None for v in y):
                    x = tuple(label for label, _ in cats)
                    traces.append(Trace(t, x, tuple(y), tuple(err), tuple(hover)))
            if traces:
                built.append(Panel(title, tuple(traces)))
        sub = _common_label(part, groups) if len(parts) > 1 else ""
        what = _words(metric) if app is None else app.title
        caption = "Mean ± 95% CI of the completed runs" + (
            "; one panel per point, a group of bars per operation." if files else "."
        )
        out.append(
            Chart(
                id=ids(workload, metric.name, sub) if app is None else
                ids(workload, app.op, metric.name, sub),
                section=section,
                kind="bars",
                title=_join(f"{workload}: {what}", sub),
                x_label="operation" if files else "",
                y_label=unit.axis,
                panels=tuple(built),
                caption=caption if app is None else _sentences(caption, app.caption(part)),
            )
        )  # fmt: skip
    return out


# -- application models --------------------------------------------------------------------


@dataclass(frozen=True)
class AppChart:
    """One number an application model's charts show: a row of its groups."""

    op: str
    metric: str
    title: str
    """What the chart shows, after the workload's name in its title."""
    axis: str
    """The y axis, without its unit (latencies get theirs from the values)."""
    note: str = ""
    """A sentence for the caption."""

    def caption(self, groups: Sequence[Group]) -> str:
        """The note, and the verdict's limit on this number when every group has the same."""
        found = {
            (lim.max_ms, lim.default)
            for g in groups
            if g.kind == "mailstore"
            for lim in limits(g)
            if self.op == JETSTRESS_OP and lim.metric == self.metric
        }
        text = self.note
        if len(found) == 1:
            value, default = next(iter(found))
            said = " (the default)." if default else "."
            text = _sentences(text, f"The verdict's limit: under {value:g} ms{said}")
        return text


def _sentences(*parts: str) -> str:
    return " ".join(p for p in parts if p)


_TPS = AppChart("txn", "iops", "transactions per second", "tps")
_DEVICE_PEAK = AppChart(
    TELEMETRY_OP,
    "iops_peak",
    "device IOPS peak",
    "device IOPS peak",
    note="The busiest sampling interval of the target's devices: checkpoints write in bursts.",
)
APP_CHARTS: Mapping[str, tuple[AppChart, ...]] = {
    "mailstore": (
        _TPS,
        AppChart(JETSTRESS_OP, "transactional_iops", "JetStress transactional IOPS",
                 "transactional IOPS", note="The database's reads and writes per second."),
        AppChart(JETSTRESS_OP, "db_read_lat_ns", "JetStress DB read latency",
                 "mean DB read latency"),
        AppChart(JETSTRESS_OP, "db_write_lat_ns", "JetStress DB write latency",
                 "mean DB write latency"),
        AppChart(JETSTRESS_OP, "log_write_lat_ns", "JetStress log write latency",
                 "mean log write latency"),
        _DEVICE_PEAK,
    ),
    "oltp": (
        _TPS,
        AppChart("data_read", "iops", "data file reads, IOPS", "data read IOPS"),
        AppChart("data_read", "lat_p99_ns", "data file reads, p99 latency",
                 "p99 data read latency"),
        AppChart("log_write", "lat_mean_ns", "log writes, mean latency",
                 "mean log write latency", note="Each commit waits for its log write."),
        AppChart("log_write", "lat_p99_ns", "log writes, p99 latency", "p99 log write latency"),
        _DEVICE_PEAK,
    ),
}  # fmt: skip
"""What the charts of an `oltp` or `mailstore` workload show, in order: not every
operation's rate by metric name (a mailstore's maintenance reads are no headline), and
never the verdict (a pass or fail per run: the summary's table)."""


def _app_unit(app: AppChart, metric: MetricSpec, values: Iterable[float]) -> _Unit:
    if metric.unit == "ns":
        scale, suffix = ns_axis(values)
        return _Unit(scale, f"{app.axis} ({suffix})")
    return _Unit(_unit(metric, values).scale, app.axis)


def _app_row(group: Group, app: AppChart) -> Row | None:
    for r in group.rows:
        if r.op == app.op and r.metric.name == app.metric and r.metric.unit != VERDICT_UNIT:
            return r
    return None


def _app_rows(group: Group, app: AppChart) -> list[Row]:
    row = _app_row(group, app)
    return [row] if row is not None else []


def _app_bars(c: Comparison, ids: _Ids, workload: str, groups: Sequence[Group]) -> list[Chart]:
    charts: list[Chart] = []
    for app in APP_CHARTS.get(groups[0].kind, ()):
        metric = next((r.metric for g in groups for r in _app_rows(g, app)), None)
        if metric is None:
            continue
        charts += _bar_charts(
            c, ids, workload, groups, metric, Section.BARS, partial(_app_rows, app=app), app=app
        )
    return charts


def _app_sweeps(
    c: Comparison, ids: _Ids, workload: str, every: Sequence[Group], axis: str
) -> list[Chart]:
    """One line chart per `APP_CHARTS` entry: the number against `axis`, a panel per
    combination of the other parameters that vary."""

    def panels_of(groups: Sequence[Group]) -> dict[str, list[Group]]:
        others = [k for k in _varying(groups) if k != axis]
        out: dict[str, list[Group]] = {}
        for g in groups:
            out.setdefault(_label(g, others), []).append(g)
        return out

    charts: list[Chart] = []
    parts = _split(every, lambda gs: len(panels_of(gs)), keep=axis)
    for part in parts:
        sub = _common_label(part, every) if len(parts) > 1 else ""
        facets = panels_of(part)
        xs = sorted({float(dict(g.params)[axis]) for g in part})
        log = min(xs) > 0 and max(xs) / min(xs) >= 8
        for app in APP_CHARTS.get(part[0].kind, ()):
            rows = {id(g): row for g in part if (row := _app_row(g, app)) is not None}
            if not rows:
                continue
            metric = next(iter(rows.values())).metric
            values = [s.mean for r in rows.values() for x in r.cells if (s := x.summary)]
            unit = _app_unit(app, metric, values)
            panels: list[Panel] = []
            for label, groups in facets.items():
                pts = sorted(
                    ((float(dict(g.params)[axis]), rows[id(g)]) for g in groups if id(g) in rows),
                    key=lambda p: p[0],
                )
                traces = _sweep_traces(c.targets, pts, metric, unit, axis)
                if traces:
                    panels.append(Panel(label, tuple(traces)))
            charts.append(
                Chart(
                    id=ids(workload, app.op, app.metric, "vs", axis, sub),
                    section=Section.SWEEP,
                    kind="lines",
                    title=_join(f"{workload}: {app.title} vs {axis}", sub),
                    x_label=axis,
                    y_label=unit.axis,
                    panels=tuple(panels),
                    x_log=log,
                    caption=_sentences(
                        "Mean ± 95% CI of the completed runs; one panel per combination of "
                        "the other parameters.",
                        app.caption(part),
                    ),
                )
            )
    return charts


# -- telemetry -----------------------------------------------------------------------------


def _members_series(doc: Mapping[str, Any]) -> list[tuple[float, float, float, float]]:
    """(t_s, IOPS, read B/s, written B/s) per interval, summed over the target's own
    devices (`roles.members`: what its storage did, not the disk under a loop image)."""
    roles = doc.get("roles") or {}
    members = roles.get("members") or []
    out: list[tuple[float, float, float, float]] = []
    for p in doc.get("series") or []:
        devices = p.get("devices") or {}
        names = members or [n for n in devices if n not in (roles.get("backing") or [])]
        iops = rbs = wbs = 0.0
        for n in names:
            d = devices.get(n)
            if d:
                iops += float(d.get("read_iops", 0)) + float(d.get("write_iops", 0))
                rbs += float(d.get("read_bytes_per_s", 0))
                wbs += float(d.get("write_bytes_per_s", 0))
        out.append((float(p.get("t_s", 0.0)), iops, rbs, wbs))
    return out


def _timelines(data: ReportData, ids: _Ids) -> list[Chart]:
    c = data.comparison
    charts: list[Chart] = []
    mib = float(1 << 20)
    for workload, groups in _by_workload(c.groups).items():
        groups = [g for g in groups if data.telemetry.get(key_of(g))]
        if not groups:
            continue
        keys = _varying(groups)
        parts = _split(groups, len)
        for part in parts:
            sub = _common_label(part, groups) if len(parts) > 1 else ""
            inner = [k for k in keys if k in _varying(part)] if len(parts) > 1 else keys
            iops_panels: list[Panel] = []
            bytes_panels: list[Panel] = []
            for g in part:
                runs = data.telemetry[key_of(g)]
                iops_traces: list[Trace] = []
                bytes_traces: list[Trace] = []
                for t in c.targets:
                    run = runs.get(t)
                    if run is None:
                        continue
                    pts: list[tuple[float, float, float, float, str]] = []
                    offset = 0.0
                    for op, doc in run.parts:
                        series = _members_series(doc)
                        pts += [(offset + ts, i, r, w, op) for ts, i, r, w in series]
                        offset += series[-1][0] if series else 0.0
                    if not pts:
                        continue
                    xs = tuple(round(p[0], 3) for p in pts)

                    iops = [p[1] for p in pts]
                    hover = _time_hover(t, pts, iops, "IOPS", short_count)
                    iops_traces.append(Trace(t, xs, tuple(iops), hover=hover, peak=_peak(iops)))
                    for variant, col, dash in (("write", 3, "solid"), ("read", 2, "dot")):
                        vals = [float(p[col]) / mib for p in pts]
                        if not any(vals):
                            continue
                        bytes_traces.append(
                            Trace(
                                t, xs, tuple(vals),
                                hover=_time_hover(t, pts, vals, f"MiB/s {variant}", short_number),
                                variant=variant, dash=dash,  # type: ignore[arg-type]
                                peak=_peak(vals),
                            )
                        )  # fmt: skip
                title = _label(g, inner) or g.workload
                if iops_traces:
                    iops_panels.append(Panel(title, _notable_peaks(iops_traces)))
                if bytes_traces:
                    bytes_panels.append(Panel(title, _notable_peaks(bytes_traces)))
            caption = (
                "Summed over the target's own devices, per sampling interval, in the first "
                "completed repetition"
                + ("; the operations ran one after the other (hover names them)." if
                   part[0].kind == "files" else ".")
            )  # fmt: skip
            for what, panels, axis in (
                ("device IOPS", iops_panels, "device IOPS"),
                ("device MiB/s", bytes_panels, "device MiB/s (solid: written, dotted: read)"),
            ):
                if panels:
                    charts.append(
                        Chart(
                            id=ids(workload, what, "time", sub),
                            section=Section.TIMELINE,
                            kind="time",
                            title=_join(f"{workload}: {what} over time", sub),
                            x_label="seconds",
                            y_label=axis,
                            panels=tuple(panels),
                            caption=caption,
                        )
                    )
    return charts


def _time_hover(
    target: str,
    pts: Sequence[tuple[float, float, float, float, str]],
    values: Sequence[float],
    what: str,
    fmt: Callable[[float], str],
) -> tuple[str, ...]:
    return tuple(
        f"{target} · {_join(p[4], f't={p[0]:.1f}s')}: {fmt(v)} {what}"
        for p, v in zip(pts, values, strict=True)
    )


def _notable_peaks(traces: Sequence[Trace]) -> tuple[Trace, ...]:
    """The traces, their peak marks kept only where the peak stands out in the panel
    (at least 5% of its highest value): a mark on a line near zero says nothing."""
    high = max((y for t in traces for y in t.y if y is not None), default=0.0)
    out = []
    for t in traces:
        peak = t.y[t.peak] if t.peak is not None else None
        if peak is not None and peak < 0.05 * high:
            t = replace(t, peak=None)
        out.append(t)
    return tuple(out)


def _peak(values: Sequence[float]) -> int | None:
    if not values or max(values) <= 0:
        return None
    return max(range(len(values)), key=lambda i: values[i])


def dodge(x: float, index: int, count: int, *, log: bool, span: float) -> float:
    """`x` moved a little sideways for the `index`th of `count` targets, so that their
    error bars at one x do not hide each other (a log axis moves by a factor)."""
    shift = (index - (count - 1) / 2) * 0.035
    return x * 2 ** (shift * 1.5) if log else x + shift * span
