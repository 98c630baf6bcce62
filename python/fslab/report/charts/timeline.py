"""The monitoring view: what the machine did while each target ran a point.

SysGauge's picture of a file copy, per target side by side: a row per quantity (the
disks' transfer rate, their I/Os, the page cache, the memory left available), a column
per target with the same scales across a row, so that "btrfs wrote three times the bytes
and filled the cache" is seen at a glance; a files run's operations named along its time
axis. The telemetry sampled beside the run shows what the means hide (a burst of
writeback after a copy, a stall, the cache a scan filled).

One run per target, the representative one (`fslab.report.monitoring`), and a bounded
number of points per workload; a line holds at most `MAX_STEPS` steps, however long the
run, so a report's size does not grow with its runs' length either.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from fslab.catalog import entry
from fslab.report.charts.layout import (
    Ids,
    groups_by_workload,
    join_labels,
    point_label,
    varied_params,
)
from fslab.report.charts.model import Band, Chart, Panel, Section, Trace
from fslab.report.context import ReportData, RunTelemetry, key_of
from fslab.report.monitoring import monitored_groups
from fslab.units import format_bytes, short_count, short_number

MAX_STEPS = 150
"""Steps per line at most: longer runs are drawn as means over several intervals."""
MAX_COLUMNS = 4
"""Targets side by side in one chart; more are split over charts of as many each, on
the same scales."""

_MIB = float(1 << 20)
_GIB = float(1 << 30)


@dataclass
class _Run:
    """One target's run, its operations back to back: steps (intervals, or means over
    several) of the device rates, and memory levels at their ends."""

    bands: list[Band] = field(default_factory=list)
    starts: list[float] = field(default_factory=list)
    ends: list[float] = field(default_factory=list)
    ops: list[str] = field(default_factory=list)
    rates: dict[str, list[float]] = field(default_factory=dict)
    """read/write bytes per second, read/write IOPS, per step."""
    level_t: list[float] = field(default_factory=list)
    level_op: list[str] = field(default_factory=list)
    levels: dict[str, list[float | None]] = field(default_factory=dict)
    """cached, dirty and available bytes at the start of each op and each step's end."""
    interval_s: float = 0.0
    per_step: int = 1

    @property
    def end(self) -> float:
        return self.ends[-1] if self.ends else 0.0


_RATES = ("read_bytes_per_s", "write_bytes_per_s", "read_iops", "write_iops")
_LEVELS = ("cached_bytes", "dirty_bytes", "available_bytes")


def _members(doc: Mapping[str, Any]) -> list[str] | None:
    roles = doc.get("roles") or {}
    members = roles.get("members")
    return list(members) if members else None


def _interval_rates(p: Mapping[str, Any], doc: Mapping[str, Any]) -> dict[str, float]:
    """An interval's rates, summed over the target's own devices (`roles.members`: what
    its storage did, not the disk under a loop image)."""
    devices = p.get("devices") or {}
    roles = doc.get("roles") or {}
    names = _members(doc) or [n for n in devices if n not in (roles.get("backing") or [])]
    out = dict.fromkeys(_RATES, 0.0)
    for n in names:
        d = devices.get(n)
        if d:
            for k in _RATES:
                out[k] += float(d.get(k, 0) or 0)
    return out


def _level(source: Mapping[str, Any], key: str) -> float | None:
    v = source.get(key)
    return float(v) if isinstance(v, int | float) else None


def read_run(run: RunTelemetry) -> _Run:
    """The run's parts on one time axis, at most `MAX_STEPS` steps: each step the mean
    rate over `per_step` consecutive intervals of one operation (never across two)."""
    total = sum(len(doc.get("series") or ()) for _, doc in run.parts)
    per_step = max(1, math.ceil(total / MAX_STEPS))
    out = _Run(per_step=per_step)
    out.rates = {k: [] for k in _RATES}
    out.levels = {k: [] for k in _LEVELS}
    offset = 0.0
    for op, doc in run.parts:
        series = [p for p in doc.get("series") or () if isinstance(p, Mapping)]
        if not series:
            continue
        out.interval_s = out.interval_s or float(doc.get("interval_s") or 0.0)
        start = doc.get("start_memory")
        if isinstance(start, Mapping):
            out.level_t.append(offset)
            out.level_op.append(op)
            for k in _LEVELS:
                out.levels[k].append(_level(start, k))
        for i in range(0, len(series), per_step):
            chunk = series[i : i + per_step]
            first = chunk[0]
            t0 = offset + float(first.get("t_s", 0.0)) - float(first.get("dt_s", 0.0))
            t1 = offset + float(chunk[-1].get("t_s", 0.0))
            dt = sum(float(p.get("dt_s", 0.0)) for p in chunk)
            sums = dict.fromkeys(_RATES, 0.0)
            for p in chunk:
                r = _interval_rates(p, doc)
                for k in _RATES:
                    sums[k] += r[k] * float(p.get("dt_s", 0.0))
            out.starts.append(max(t0, out.end))
            out.ends.append(t1)
            out.ops.append(op)
            for k in _RATES:
                out.rates[k].append(sums[k] / dt if dt > 0 else 0.0)
            out.level_t.append(t1)
            out.level_op.append(op)
            for k in _LEVELS:
                out.levels[k].append(_level(chunk[-1], k))
        end = offset + float(series[-1].get("t_s", 0.0))
        if op:
            out.bands.append(Band(op, offset, end))
        offset = end
    return out


@dataclass(frozen=True)
class _Row:
    """One quantity: a row of panels."""

    title: str
    lines: tuple[tuple[str, str, Literal["solid", "dot"]], ...]
    """(key in `_Run.rates` or `_Run.levels`, what the line is, dash)."""
    step: bool
    """A rate over each step (drawn as steps) rather than a level at its end."""
    scale: float
    unit: str
    fmt: Callable[[float], str]


def _rows(runs: Sequence[_Run]) -> list[_Row]:
    """The quantities these runs have, each in a unit that suits its largest value."""
    rows: list[_Row] = []

    def high(keys: Sequence[str], levels: bool) -> float | None:
        vals = [
            v
            for r in runs
            for k in keys
            for v in (r.levels[k] if levels else r.rates[k])
            if v is not None
        ]
        return max(vals) if vals else None

    if high(("read_bytes_per_s", "write_bytes_per_s"), False) is not None:
        rows.append(
            _Row("Disk transfer rate", (("write_bytes_per_s", "written", "solid"),
                 ("read_bytes_per_s", "read", "dot")), True, _MIB, "MiB/s", short_number)
        )  # fmt: skip
        rows.append(
            _Row("Disk I/Os", (("write_iops", "writes", "solid"), ("read_iops", "reads", "dot")),
                 True, 1.0, "IOPS", short_count)
        )  # fmt: skip
    cache = high(("cached_bytes", "dirty_bytes"), True)
    if cache is not None:
        scale, unit = (_GIB, "GiB") if cache >= 2 * _GIB else (_MIB, "MiB")
        rows.append(
            _Row("Page cache", (("cached_bytes", "cached", "solid"), ("dirty_bytes", "dirty",
                 "dot")), False, scale, unit, short_number)
        )  # fmt: skip
    free = high(("available_bytes",), True)
    if free is not None:
        scale, unit = (_GIB, "GiB") if free >= 2 * _GIB else (_MIB, "MiB")
        rows.append(
            _Row("Memory available", (("available_bytes", "available", "solid"),), False,
                 scale, unit, short_number)
        )  # fmt: skip
    return rows


def _row_label(row: _Row) -> str:
    styles = [f"{'solid' if d == 'solid' else 'dotted'}: {what}" for _, what, d in row.lines]
    return f"{row.title} ({row.unit})" + (f" · {', '.join(styles)}" if len(styles) > 1 else "")


def _traces(target: str, run: _Run, row: _Row) -> list[Trace]:
    out: list[Trace] = []
    for key, what, dash in row.lines:
        if row.step:
            # the last step's value again at its end, so that the step is drawn whole
            ys: tuple[float | None, ...] = tuple(v / row.scale for v in run.rates[key])
            ys = (*ys, ys[-1])
            xs = (*run.starts, run.ends[-1])
            spans = [*zip(run.starts, run.ends, run.ops, strict=True)]
            where = [f"{op} · t={a:.1f}-{b:.1f} s" if op else f"t={a:.1f}-{b:.1f} s"
                     for a, b, op in (*spans, spans[-1])]  # fmt: skip
        else:
            ys = tuple(None if v is None else v / row.scale for v in run.levels[key])
            if all(y is None for y in ys):
                continue
            xs = tuple(run.level_t)
            where = [f"{op} · t={t:.1f} s" if op else f"t={t:.1f} s"
                     for t, op in zip(run.level_t, run.level_op, strict=True)]  # fmt: skip
        hover = tuple(
            f"{target} · {w}: " + ("-" if y is None else f"{row.fmt(y)} {row.unit} {what}")
            for w, y in zip(where, ys, strict=True)
        )
        out.append(
            Trace(target, tuple(round(x, 3) for x in xs), ys, hover=hover, variant=what,
                  dash=dash, shape="hv" if row.step else "linear")
        )  # fmt: skip
    return out


def _note(run: _Run, row: _Row) -> str:
    """What a panel's lines add up to: the bytes and I/Os the run moved, the most cache
    it held, the least memory it left (the figures SysGauge's report is read for)."""
    dts = [b - a for a, b in zip(run.starts, run.ends, strict=True)]
    if row.step:
        parts = []
        for key, what, _ in row.lines:
            total = sum(v * d for v, d in zip(run.rates[key], dts, strict=True))
            if total <= 0:
                continue
            amount = format_bytes(int(total)) if row.unit == "MiB/s" else short_count(total)
            parts.append(f"{amount} {what}")
        return ", ".join(parts)
    key, what, _ = row.lines[0]
    vals = [v for v in run.levels[key] if v is not None]
    if not vals:
        return ""
    if key == "available_bytes":
        return f"lowest {format_bytes(int(min(vals)))}"
    return f"peak {format_bytes(int(max(vals)))} {what}"


def timeline_charts(data: ReportData, ids: Ids) -> list[Chart]:
    c = data.comparison
    charts: list[Chart] = []
    watched = {id(g) for g in monitored_groups(c.groups)}
    for workload, groups in groups_by_workload(c.groups).items():
        shown = [g for g in groups if id(g) in watched and data.telemetry.get(key_of(g))]
        keys = varied_params(groups)
        for g in shown:
            tele = data.telemetry[key_of(g)]
            targets = [t for t in c.targets if t in tele]
            runs = {t: read_run(tele[t]) for t in targets}
            runs = {t: r for t, r in runs.items() if r.ends}
            if not runs:
                continue
            charts += _point_charts(workload, point_label(g, keys), runs, tele, ids,
                                    entry(g.kind).ops_apart)  # fmt: skip
    return charts


def _point_charts(
    workload: str,
    label: str,
    runs: Mapping[str, _Run],
    tele: Mapping[str, RunTelemetry],
    ids: Ids,
    ops_apart: bool,
) -> list[Chart]:
    rows = _rows(list(runs.values()))
    if not rows:
        return []
    x_top = max(r.end for r in runs.values())
    tops = {}
    for row in rows:
        vals = [
            v / row.scale
            for r in runs.values()
            for key, _, _ in row.lines
            for v in (r.rates[key] if row.step else r.levels[key])
            if v is not None
        ]
        high = max(vals, default=0.0)
        # room above the highest line for the panel's note
        tops[row.title] = high * 1.22 if high > 0 else 1.0
    targets = list(runs)
    n_parts = math.ceil(len(targets) / MAX_COLUMNS)
    per = math.ceil(len(targets) / n_parts)
    charts: list[Chart] = []
    for part in range(n_parts):
        cols = targets[part * per : (part + 1) * per]
        sub = f"targets {part * per + 1}-{part * per + len(cols)} of {len(targets)}"
        panels: list[Panel] = []
        for i, row in enumerate(rows):
            for t in cols:
                run, doc = runs[t], tele[t]
                title = ""
                if i == 0:
                    title = f"{t} · run {doc.rep + 1} of {doc.runs} · {run.end:.1f} s"
                panels.append(
                    Panel(title, tuple(_traces(t, run, row)), bands=tuple(run.bands),
                          y_label=_row_label(row), y_top=tops[row.title], note=_note(run, row))
                )  # fmt: skip
        title = join_labels(workload, label)
        charts.append(
            Chart(
                id=ids(workload, label, "monitor", sub if n_parts > 1 else ""),
                section=Section.TIMELINE,
                kind="monitor",
                title=f"{title}: disks, page cache and memory over time"
                + (f" ({sub})" if n_parts > 1 else ""),
                x_label="seconds",
                y_label="",
                panels=tuple(panels),
                caption=_caption(runs, ops_apart),
                columns=len(cols),
                x_top=x_top,
            )
        )
    return charts


def _caption(runs: Mapping[str, _Run], ops_apart: bool) -> str:
    """What the lines are, briefly: the section's introduction says the rest."""
    interval = max((r.interval_s for r in runs.values()), default=0.0)
    pers = {r.per_step for r in runs.values()}
    per = max(pers, default=1)
    step = (
        f"each step the mean over a sampling interval ({interval:g} s)"
        if per == 1
        else f"each step the mean over {'up to ' if len(pers) > 1 else ''}{per} sampling "
        f"intervals ({per * interval:g} s)"
    )
    ops = "; the operations in turn, shaded" if ops_apart else ""
    return f"Disk rates: {step}; memory: at each step's end{ops}."
