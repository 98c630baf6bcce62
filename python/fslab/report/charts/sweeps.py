"""Sweep charts: a metric against `iodepth` or `threads`, one line per target.

A study that sweeps a parameter is read as curves, so these charts put it on the x axis
and give every combination of the other parameters its own panel; an application
model's sweeps draw its `APP_CHARTS` numbers the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from fslab.catalog import entry
from fslab.compare import Comparison, Group, Row
from fslab.metrics import MetricSpec
from fslab.params import format_param
from fslab.report.charts.apps import APP_CHARTS, app_row, app_unit, sentences_of
from fslab.report.charts.layout import (
    Ids,
    common_label,
    engine_ops,
    engine_rows,
    groups_by_workload,
    join_labels,
    metric_of,
    needs_op,
    point_label,
    split_panels,
    stat_hover,
    varied_params,
)
from fslab.report.charts.model import (
    Chart,
    Panel,
    Section,
    Trace,
    Unit,
    unit_for,
    value_in,
    words_of,
)


def _sweep_axis(groups: Sequence[Group], load: str | None = None) -> str | None:
    """The parameter drawn on the x axis: the load a `latency_limit` varies, else an
    offered rate (latency against offered load), else iodepth for block I/O, else
    threads."""
    varying = varied_params(groups)
    files = entry(groups[0].kind).ops_apart
    keys: tuple[str, ...] = ("threads",) if files else ("rate_iops", "rate", "iodepth", "threads")
    for key in (load, *keys) if load else keys:
        if key in varying and all(isinstance(dict(g.params).get(key), int | float) for g in groups):
            return key
    return None


_SWEEP_METRICS = {"files": ("iops",), "block": ("iops", "bw_bytes", "lat_mean_ns", "lat_p99_ns")}


def _facets(groups: Sequence[Group], axis: str) -> dict[tuple[str, str], list[tuple[float, Group]]]:
    """(the other varying parameters, op) -> [(x, group)]: one panel each."""
    others = [k for k in varied_params(groups) if k != axis]
    with_op = needs_op(groups)
    facets: dict[tuple[str, str], list[tuple[float, Group]]] = {}
    for g in groups:
        at = float(dict(g.params)[axis])
        for op in engine_ops(g):
            facets.setdefault((point_label(g, others), op if with_op else ""), []).append((at, g))
    return facets


def _facet_count(groups: Sequence[Group], axis: str) -> int:
    return len(_facets(groups, axis))


def sweep_charts(c: Comparison, ids: Ids) -> list[Chart]:
    charts: list[Chart] = []
    for workload, every in groups_by_workload(c.groups).items():
        limit = c.latency_limits.get(workload, {})
        axis = _sweep_axis(every, str(limit["vary"]) if "vary" in limit else None)
        if axis is None:
            continue
        if entry(every[0].kind).model:
            charts += _app_sweeps(c, ids, workload, every, axis)
            continue
        parts = split_panels(every, partial(_facet_count, axis=axis), keep=axis)
        for part in parts:
            charts += _sweep_charts(c, ids, workload, part, every, axis, len(parts) > 1)
    return charts


def _sweep_charts(
    c: Comparison,
    ids: Ids,
    workload: str,
    groups: Sequence[Group],
    every: Sequence[Group],
    axis: str,
    split: bool,
) -> list[Chart]:
    charts: list[Chart] = []
    sub = common_label(groups, every) if split else ""
    facets = _facets(groups, axis)
    with_op = needs_op(groups)
    xs = sorted({at for pts in facets.values() for at, _ in pts})
    log = min(xs) > 0 and max(xs) / min(xs) >= 8
    for name in _SWEEP_METRICS.get(groups[0].kind, _SWEEP_METRICS["block"]):
        metric = metric_of(groups, name)
        if metric is None:
            continue
        values = [
            s.mean
            for g in groups
            for r in engine_rows(g, name)
            for cell in r.cells
            if (s := cell.summary) is not None
        ]
        unit = unit_for(metric, values)
        panels: list[Panel] = []
        for (label, op), pts in facets.items():
            points: list[tuple[float, Row]] = []
            for xv, g in sorted(pts, key=lambda p: p[0]):
                try:
                    points.append((xv, g.row(op or engine_ops(g)[0], name)))
                except KeyError:
                    continue
            traces = _sweep_traces(c.targets, points, metric, unit, axis)
            if traces:
                panels.append(Panel(join_labels(label, op), tuple(traces)))
        charts.append(
            _sweep_chart(
                ids(workload, name, "vs", axis, sub),
                join_labels(f"{workload}: {words_of(metric)} vs {axis}", sub),
                axis, unit, panels, log,
                f"{_CAPTION}{'operation and ' if with_op else ''}{_CAPTION_END}",
            )
        )  # fmt: skip
    return charts


def _sweep_traces(
    targets: Sequence[str],
    points: Sequence[tuple[float, Row]],
    metric: MetricSpec,
    unit: Unit,
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
            mean, ci = value_in(row, t, unit)
            x.append(_num(xv))
            y.append(mean)
            err.append(ci)
            hover.append(stat_hover(metric, t, f"{axis}={format_param(axis, _num(xv))}", row))
        if any(v is not None for v in y):
            traces.append(Trace(t, tuple(x), tuple(y), tuple(err), tuple(hover)))
    return traces


def _num(x: float) -> float:
    return int(x) if float(x).is_integer() else x


def _app_sweeps(
    c: Comparison, ids: Ids, workload: str, every: Sequence[Group], axis: str
) -> list[Chart]:
    """One line chart per `APP_CHARTS` entry: the number against `axis`, a panel per
    combination of the other parameters that vary."""

    def panels_of(groups: Sequence[Group]) -> dict[str, list[Group]]:
        others = [k for k in varied_params(groups) if k != axis]
        out: dict[str, list[Group]] = {}
        for g in groups:
            out.setdefault(point_label(g, others), []).append(g)
        return out

    charts: list[Chart] = []
    parts = split_panels(every, lambda gs: len(panels_of(gs)), keep=axis)
    for part in parts:
        sub = common_label(part, every) if len(parts) > 1 else ""
        facets = panels_of(part)
        xs = sorted({float(dict(g.params)[axis]) for g in part})
        log = min(xs) > 0 and max(xs) / min(xs) >= 8
        for app in APP_CHARTS.get(part[0].kind, ()):
            rows = {id(g): row for g in part if (row := app_row(g, app)) is not None}
            if not rows:
                continue
            metric = next(iter(rows.values())).metric
            values = [s.mean for r in rows.values() for x in r.cells if (s := x.summary)]
            unit = app_unit(app, metric, values)
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
                _sweep_chart(
                    ids(workload, app.op, app.metric, "vs", axis, sub),
                    join_labels(f"{workload}: {app.title} vs {axis}", sub),
                    axis, unit, panels, log,
                    sentences_of(f"{_CAPTION}{_CAPTION_END}", app.caption(part)),
                )
            )  # fmt: skip
    return charts


_CAPTION = "Mean ± 95% CI of the completed runs; one panel per "
_CAPTION_END = "combination of the other parameters."


def _sweep_chart(
    chart_id: str, title: str, axis: str, unit: Unit, panels: Sequence[Panel], log: bool,
    caption: str,
) -> Chart:  # fmt: skip
    """A sweep: lines against the swept `axis`, one panel per other combination."""
    return Chart(
        id=chart_id, section=Section.SWEEP, kind="lines", title=title, x_label=axis,
        y_label=unit.axis, panels=tuple(panels), x_log=log, caption=caption,
    )  # fmt: skip
