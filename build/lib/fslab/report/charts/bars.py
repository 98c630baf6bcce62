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
from fslab.report.charts.apps import APP_CHARTS, AppChart, app_rows, app_unit, sentences_of
from fslab.report.charts.layout import (
    MAX_POINT_CHARTS,
    Ids,
    common_label,
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
from fslab.report.charts.model import Chart, Panel, Section, Trace, unit_for, value_in, words_of

_BAR_METRICS = {
    "files": ("iops", "bw_bytes", "lat_mean_ns"),
    "block": ("iops", "bw_bytes", "lat_mean_ns", "lat_p99_ns"),
}


def bar_charts(c: Comparison, ids: Ids) -> list[Chart]:
    charts: list[Chart] = []
    for workload, groups in groups_by_workload(c.groups).items():
        if len(groups) > MAX_POINT_CHARTS:
            continue
        if entry(groups[0].kind).model:
            charts += _app_bars(c, ids, workload, groups)
            continue
        files = entry(groups[0].kind).ops_apart
        for name in _BAR_METRICS["files" if files else "block"]:
            metric = metric_of(groups, name)
            if metric is None:
                continue
            charts += _bar_charts(
                c, ids, workload, groups, metric, Section.BARS, partial(engine_rows, metric=name)
            )
    return charts


def _device_rows(group: Group, metric: str) -> list[Row]:
    return [r for r in group.rows if r.metric.name == metric and r.op.endswith(TELEMETRY_OP)]


def amplification_charts(c: Comparison, ids: Ids) -> list[Chart]:
    charts: list[Chart] = []
    for workload, groups in groups_by_workload(c.groups).items():
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
    ids: Ids,
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
    keys = varied_params(groups)
    with_op = needs_op(groups) and app is None
    values = [s.mean for g in groups for r in rows_of(g) for x in r.cells if (s := x.summary)]
    unit = unit_for(metric, values) if app is None else app_unit(app, metric, values)
    # panels of (category label, row)
    if files:
        parts = split_panels(groups, len)
    else:
        parts = split_panels(groups, lambda gs: sum(len(rows_of(g)) for g in gs))
    out: list[Chart] = []
    for part in parts:
        panels: list[tuple[str, list[tuple[str, Row]]]] = []
        if files:
            for g in part:
                panels.append((point_label(g, keys), [(_op_label(r), r) for r in rows_of(g)]))
        else:
            inner = [k for k in keys if k in varied_params(part)] if len(parts) > 1 else keys
            cats = [
                (
                    join_labels(point_label(g, inner), _op_label(r) if with_op else "")
                    or g.workload,
                    r,
                )
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
                    mean, ci = value_in(row, t, unit)
                    y.append(mean)
                    err.append(ci)
                    hover.append(stat_hover(metric, t, label, row))
                if any(v is not None for v in y):
                    x = tuple(label for label, _ in cats)
                    traces.append(Trace(t, x, tuple(y), tuple(err), tuple(hover)))
            if traces:
                built.append(Panel(title, tuple(traces)))
        sub = common_label(part, groups) if len(parts) > 1 else ""
        what = words_of(metric) if app is None else app.title
        caption = "Mean ± 95% CI of the completed runs" + (
            "; one panel per point, a group of bars per operation." if files else "."
        )
        out.append(
            Chart(
                id=ids(workload, metric.name, sub) if app is None else
                ids(workload, app.op, metric.name, sub),
                section=section,
                kind="bars",
                title=join_labels(f"{workload}: {what}", sub),
                x_label="operation" if files else "",
                y_label=unit.axis,
                panels=tuple(built),
                caption=caption if app is None else sentences_of(caption, app.caption(part)),
            )
        )  # fmt: skip
    return out


def _app_bars(c: Comparison, ids: Ids, workload: str, groups: Sequence[Group]) -> list[Chart]:
    charts: list[Chart] = []
    for app in APP_CHARTS.get(groups[0].kind, ()):
        metric = next((r.metric for g in groups for r in app_rows(g, app)), None)
        if metric is None:
            continue
        charts += _bar_charts(
            c, ids, workload, groups, metric, Section.BARS, partial(app_rows, app=app), app=app
        )
    return charts
