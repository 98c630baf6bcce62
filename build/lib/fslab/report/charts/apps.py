"""What an application model's charts show: the few numbers that tell an `oltp` or
`mailstore` workload.

An application model reports many operations and a verdict; its charts are chosen by
hand (`APP_CHARTS`) rather than by metric name. Kept apart from the chart builders, which
draw these entries as sweeps and bars with their own machinery.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from fslab.catalog import entry
from fslab.compare import Group, Row
from fslab.metrics import JETSTRESS_OP, TELEMETRY_OP, VERDICT_UNIT, MetricSpec
from fslab.report.charts.model import Unit, unit_for
from fslab.report.format import ns_axis
from fslab.report.verdicts import limits


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
            if entry(g.kind).jetstress
            for lim in limits(g)
            if self.op == JETSTRESS_OP and lim.metric == self.metric
        }
        text = self.note
        if len(found) == 1:
            value, default = next(iter(found))
            said = " (the default)." if default else "."
            text = sentences_of(text, f"The verdict's limit: under {value:g} ms{said}")
        return text


def sentences_of(*parts: str) -> str:
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


def app_unit(app: AppChart, metric: MetricSpec, values: Iterable[float]) -> Unit:
    if metric.unit == "ns":
        scale, suffix = ns_axis(values)
        return Unit(scale, f"{app.axis} ({suffix})")
    return Unit(unit_for(metric, values).scale, app.axis)


def app_row(group: Group, app: AppChart) -> Row | None:
    for r in group.rows:
        if r.op == app.op and r.metric.name == app.metric and r.metric.unit != VERDICT_UNIT:
            return r
    return None


def app_rows(group: Group, app: AppChart) -> list[Row]:
    row = app_row(group, app)
    return [row] if row is not None else []
