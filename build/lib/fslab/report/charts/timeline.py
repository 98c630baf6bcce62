"""Timelines: what the target's devices did over the course of a run.

The telemetry sampled beside a run shows what the means hide (checkpoint bursts, a
stall, writeback after the workload stopped); these charts draw it per sampling interval,
from the first completed repetition of each target, with each line's peak marked.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from fslab.catalog import entry
from fslab.report.charts.layout import (
    MAX_PANELS,
    MAX_POINT_CHARTS,
    Ids,
    common_label,
    groups_by_workload,
    join_labels,
    point_label,
    split_panels,
    varied_params,
)
from fslab.report.charts.model import Chart, Panel, Section, Trace
from fslab.report.context import ReportData, key_of
from fslab.units import short_count, short_number


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


def timeline_charts(data: ReportData, ids: Ids) -> list[Chart]:
    c = data.comparison
    charts: list[Chart] = []
    mib = float(1 << 20)
    for workload, groups in groups_by_workload(c.groups).items():
        groups = [g for g in groups if data.telemetry.get(key_of(g))]
        if not groups:
            continue
        # A large workload: its first points only (`per_point_note` says so).
        groups = groups[:MAX_PANELS] if len(groups) > MAX_POINT_CHARTS else groups
        keys = varied_params(groups)
        parts = split_panels(groups, len)
        for part in parts:
            sub = common_label(part, groups) if len(parts) > 1 else ""
            inner = [k for k in keys if k in varied_params(part)] if len(parts) > 1 else keys
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
                title = point_label(g, inner) or g.workload
                if iops_traces:
                    iops_panels.append(Panel(title, _notable_peaks(iops_traces)))
                if bytes_traces:
                    bytes_panels.append(Panel(title, _notable_peaks(bytes_traces)))
            caption = (
                "Summed over the target's own devices, per sampling interval, in the first "
                "completed repetition"
                + ("; the operations ran one after the other (hover names them)." if
                   entry(part[0].kind).ops_apart else ".")
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
                            title=join_labels(f"{workload}: {what} over time", sub),
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
        f"{target} · {join_labels(p[4], f't={p[0]:.1f}s')}: {fmt(v)} {what}"
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
