"""Bar charts: the targets side by side at each point, and write and space amplification.

Points that are not a sweep (or whose sweep is not enough) are compared as grouped bars
with their confidence intervals; amplification, a telemetry figure, is drawn the same way,
as are an application model's `APP_CHARTS` numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

from fslab.catalog import entry
from fslab.compare import Comparison, Group, Row
from fslab.metrics import TELEMETRY_OP, MetricSpec
from fslab.report.charts.apps import APP_CHARTS, AppChart, _app_rows, _app_unit, _sentences
from fslab.report.charts.layout import (
    MAX_POINT_CHARTS,
    _by_workload,
    _common_label,
    _engine_rows,
    _Ids,
    _join,
    _label,
    _metric_of,
    _needs_op,
    _split,
    _stat_hover,
    _varying,
)
from fslab.report.charts.model import Chart, Panel, Section, Trace, _unit, _value, _words

_BAR_METRICS = {
    "files": ("iops", "bw_bytes", "lat_mean_ns"),
    "block": ("iops", "bw_bytes", "lat_mean_ns", "lat_p99_ns"),
}


def _bars(c: Comparison, ids: _Ids) -> list[Chart]:
    charts: list[Chart] = []
    for workload, groups in _by_workload(c.groups).items():
        if len(groups) > MAX_POINT_CHARTS:
            continue
        if entry(groups[0].kind).model:
            charts += _app_bars(c, ids, workload, groups)
            continue
        files = entry(groups[0].kind).ops_apart
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
        if len(groups) > MAX_POINT_CHARTS:
            continue
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
    files = entry(groups[0].kind).ops_apart
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
