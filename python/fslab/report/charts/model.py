"""The charts of a report as plain data, and the units their values are drawn in.

Both renderers (plotly in `fslab.report.html`, matplotlib in `fslab.report.markdown`)
draw from these types alone, so they show the same figures. Every chart builder makes
them, and scales a metric's stored value (bytes, ns) into its axis unit with the helpers
here, so the same metric reads the same in every chart.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from fslab.compare import Row
from fslab.metrics import MetricSpec
from fslab.report.format import ns_axis

# Okabe & Ito's colour-blind safe palette (without its yellow, too pale on white), then
# Tableau's for studies with more targets.
PALETTE = (
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000",
    "#4E79A7", "#F28E2B", "#59A14F", "#B07AA1", "#9C755F", "#76B7B2", "#EDC948",
)  # fmt: skip
SYMBOLS = ("circle", "square", "diamond", "triangle-up", "x", "triangle-down", "cross", "star")
"""Marker shapes (plotly names), one per target alongside its colour."""


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
            Section.TIMELINE: "Monitoring: disks, page cache and memory over time",
            Section.AMPLIFICATION: "Write and space amplification",
        }[self]

    @property
    def intro(self) -> str:
        return {
            Section.SWEEP: "Each line is a target; each point the mean of its completed runs, "
            "with the 95% confidence interval as error bars.",
            Section.BARS: "Mean of the completed runs per target; error bars: 95% confidence "
            "interval (none with a single run).",
            Section.TIMELINE: "What the machine did while each target ran, from the "
            "telemetry sampled beside one run per target (of median runtime among its runs "
            "that no other work disturbed): a column per target, each row one quantity on one "
            "scale across the targets. Disk rates sum the target's own devices; memory is "
            "/proc/meminfo's (available: MemAvailable). A files run's operations ran one "
            "after the other, each from a dropped page cache: they are drawn back to back "
            "(the pauses between them left out) and named at the top.",
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
    shape: Literal["linear", "hv"] = "linear"
    """`hv`: each value holds until the next x (a rate over a sampling interval, drawn
    as the step it is), the last x closing the last step."""

    @property
    def name(self) -> str:
        return f"{self.target} {self.variant}" if self.variant else self.target


@dataclass(frozen=True)
class Band:
    """A named stretch of a time axis: one operation of a files run."""

    label: str
    start: float
    end: float


@dataclass(frozen=True)
class Panel:
    title: str
    traces: tuple[Trace, ...]
    bands: tuple[Band, ...] = ()
    """Stretches of the x axis to name and shade (a monitor chart's operations)."""
    y_label: str = ""
    """This panel's quantity, where a chart's rows differ (a monitor chart's)."""
    y_top: float | None = None
    """Where the y axis ends, set by the chart's builder (one scale across a row)."""
    note: str = ""
    """A few words drawn in the panel's corner (what the lines add up to)."""


@dataclass(frozen=True)
class Chart:
    id: str
    """Unique within a report, `[a-z0-9-]`: the HTML element's id and the SVG file's name."""
    section: Section
    kind: Literal["lines", "bars", "monitor"]
    title: str
    x_label: str
    y_label: str
    panels: tuple[Panel, ...]
    x_log: bool = False
    """Sweeps of iodepth or threads over powers of two: a log2 axis."""
    caption: str = ""
    columns: int = 0
    """Panels per row, where the builder decides it (a monitor chart: a column per
    target, a row per quantity); 0: the renderer's."""
    x_top: float | None = None
    """Where every panel's x axis ends (a monitor chart's: the longest run)."""

    def y_top(self, panel: Panel) -> float | None:
        """Where the panel's y axis should end: past the highest error bar, unless some
        error bar is far taller than the values (few runs, much noise); then at 1.5x the
        highest value, and that bar runs off the top (None: let the renderer decide).
        A panel's own `y_top` wins."""
        if panel.y_top is not None:
            return panel.y_top
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
class Unit:
    scale: float
    """Stored value / scale = the value drawn."""
    axis: str
    """The axis label, with its unit."""


def unit_for(metric: MetricSpec, values: Iterable[float]) -> Unit:
    if metric.unit == "bytes_per_s":
        return Unit(float(1 << 20), "MiB/s")
    if metric.unit == "bytes":
        return Unit(float(1 << 20), f"{metric.label}" if "MiB" in metric.label else "MiB")
    if metric.unit == "ratio":
        return Unit(1.0, f"{_METRIC_WORDS.get(metric.name, metric.label)} (x)")
    if metric.unit == "pct":
        return Unit(1.0, f"{metric.label} (%)")
    if metric.unit == "ns":
        scale, suffix = ns_axis(values)
        what = "mean latency" if metric.name == "lat_mean_ns" else "p99 latency"
        return Unit(scale, f"{what} ({suffix})")
    return Unit(1.0, metric.label)


_METRIC_WORDS = {
    "iops": "IOPS",
    "bw_bytes": "MiB/s",
    "lat_mean_ns": "mean latency",
    "lat_p99_ns": "p99 latency",
    "write_amplification": "write amplification",
    "space_amplification": "space amplification",
}


def words_of(metric: MetricSpec) -> str:
    if metric.name == "iops":
        return metric.label  # IOPS, or files/s for file operations
    return _METRIC_WORDS.get(metric.name, metric.label)


def value_in(row: Row, target: str, unit: Unit) -> tuple[float | None, float | None]:
    s = row.cell(target).summary
    if s is None:
        return None, None
    return s.mean / unit.scale, (s.ci_half / unit.scale if s.ci_half is not None else None)


def dodge(x: float, index: int, count: int, *, log: bool, span: float) -> float:
    """`x` moved a little sideways for the `index`th of `count` targets, so that their
    error bars at one x do not hide each other (a log axis moves by a factor)."""
    shift = (index - (count - 1) / 2) * 0.035
    return x * 2 ** (shift * 1.5) if log else x + shift * span
