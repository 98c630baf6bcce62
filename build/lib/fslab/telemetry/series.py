"""The telemetry series: what happened between samples, and what it adds up to.

Two readings become one `TelemetryPoint` (rates, shares of CPU, stall time, and whether
something besides the workload spoiled the interval); a `Telemetry` holds the series of a
job and derives its metrics. Kept apart from the reading of /proc so a series stored with
a result can be read back and summed again without the machine it came from.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from fslab.telemetry.devices import DeviceRoles
from fslab.telemetry.procfs import SECTOR_BYTES, DiskCounters, MemInfo, Pressure
from fslab.telemetry.readings import (
    _CLK_TCK,
    PSI_RESOURCES,
    ProcessGroup,
    Sample,
    cpu_ticks_by_group,
    cpu_ticks_by_process,
    cpu_ticks_named,
)


@dataclass(frozen=True, slots=True)
class Thresholds:
    """When an interval counts as contaminated: something besides the workload took a
    share of the machine large enough to move the result.

    Foreign CPU disturbs a run only where it takes CPU the workload wanted: measured on
    this 2-CPU VM (bench/neighbour, docs/statistics.md), a neighbour busy on a whole CPU
    left a 1-thread job's rate where it was (0.99-1.05x: the other CPU was free, and no
    task waited for one), while beside a 2-thread job, which needs both, it took the rate
    down to 0.46-0.53x; at 40% of a CPU 0.78x, at 10% 0.87-1.03x. What tells the two
    apart is CPU pressure (PSI `some`: the share of time some task waited for a CPU):
    0.1-0.4% beside the 1-thread job whatever the neighbour, 9%, 34% and 50% beside the
    2-thread one at 10%, 40% and 100%. So foreign CPU counts where both are high."""

    foreign_cpu_pct: float = 10.0
    """CPU of processes not the workload's, % of one CPU, over a second or more
    (`judge_contamination`)."""
    cpu_pressure_pct: float = 5.0
    """Share of the time some task waited for a CPU (PSI cpu `some`) above which foreign
    CPU took CPU from the workload (a 2-3% cut at most below it, within the noise of a
    repetition); without PSI, foreign CPU alone decides."""
    steal_pct: float = 5.0
    """Time the hypervisor gave this VM's CPUs to others, % of all CPU time."""
    memory_pressure_pct: float = 10.0
    """Share of the interval some task waited for memory (PSI memory `some`)."""


def _rate(n: float, dt_s: float) -> float:
    return n / dt_s if dt_s > 0 else 0.0


@dataclass(frozen=True, slots=True)
class DeviceInterval:
    """What one block device did during one interval."""

    reads: int
    writes: int
    read_bytes: int
    written_bytes: int
    read_time_ms: int
    write_time_ms: int
    read_iops: float
    write_iops: float
    read_bytes_per_s: float
    write_bytes_per_s: float
    util_pct: float
    """Share of the interval with I/O in flight."""
    queue_depth: float
    """Average I/Os in flight."""

    @classmethod
    def between(cls, a: DiskCounters, b: DiskCounters, dt_s: float) -> DeviceInterval | None:
        """None when a counter went back: the device was removed and made again."""
        d = [
            b.reads - a.reads,
            b.writes - a.writes,
            b.sectors_read - a.sectors_read,
            b.sectors_written - a.sectors_written,
            b.read_time_ms - a.read_time_ms,
            b.write_time_ms - a.write_time_ms,
            b.io_time_ms - a.io_time_ms,
            b.weighted_io_time_ms - a.weighted_io_time_ms,
        ]
        if min(d) < 0:
            return None
        reads, writes, sectors_read, sectors_written, rt, wt, io_ms, weighted_ms = d
        return cls(
            reads=reads,
            writes=writes,
            read_bytes=sectors_read * SECTOR_BYTES,
            written_bytes=sectors_written * SECTOR_BYTES,
            read_time_ms=rt,
            write_time_ms=wt,
            read_iops=_rate(reads, dt_s),
            write_iops=_rate(writes, dt_s),
            read_bytes_per_s=_rate(sectors_read * SECTOR_BYTES, dt_s),
            write_bytes_per_s=_rate(sectors_written * SECTOR_BYTES, dt_s),
            util_pct=min(100.0, _rate(io_ms / 10, dt_s)),
            queue_depth=_rate(weighted_ms / 1000, dt_s),
        )


@dataclass(frozen=True, slots=True)
class PsiInterval:
    """Pressure on one resource: the kernel's 10 s averages at the end of the interval,
    and the stall time within the interval itself (exact, where avg10 lags by seconds)."""

    some_avg10: float
    some_stall_us: int
    some_pct: float
    full_avg10: float | None
    full_stall_us: int | None
    full_pct: float | None

    @classmethod
    def between(cls, a: Pressure, b: Pressure, dt_s: float) -> PsiInterval:
        some_us = max(0, b.some.total_us - a.some.total_us)
        full_us = (
            max(0, b.full.total_us - a.full.total_us)
            if a.full is not None and b.full is not None
            else None
        )
        return cls(
            some_avg10=b.some.avg10,
            some_stall_us=some_us,
            some_pct=_rate(some_us / 1e4, dt_s),
            full_avg10=b.full.avg10 if b.full is not None else None,
            full_stall_us=full_us,
            full_pct=_rate(full_us / 1e4, dt_s) if full_us is not None else None,
        )


@dataclass(frozen=True, slots=True)
class TelemetryPoint:
    """One interval. CPU busy/iowait/steal are % of all CPUs' time; the per-process
    figures (foreign, workload, kernel threads) are % of one CPU, as `top` shows them."""

    t_s: float
    """End of the interval, seconds after the first sample."""
    dt_s: float
    devices: Mapping[str, DeviceInterval]
    """Devices present at both ends of the interval."""
    cpu_busy_pct: float
    cpu_iowait_pct: float
    cpu_steal_pct: float
    foreign_cpu_pct: float
    workload_cpu_pct: float
    kernel_cpu_pct: float
    """Kernel threads: writeback, loop and dm-crypt workers, btrfs checksums; the
    workload's I/O or another's, it cannot be told apart."""
    cached_bytes: int
    dirty_bytes: int
    writeback_bytes: int
    available_bytes: int | None
    psi: Mapping[str, PsiInterval]
    """By resource (`cpu`, `io`, `memory`); empty without /proc/pressure."""
    contaminated: bool
    reasons: tuple[str, ...]
    """Why contaminated: `foreign_cpu`, `steal`, `memory_pressure`."""
    foreign_top: tuple[tuple[str, int, float], ...] = ()
    """The foreign processes that used the most CPU in the interval, most first: (name,
    pid, % of one CPU), at most `FOREIGN_TOP` of them (older series: none)."""


FOREIGN_TOP = 3
"""Foreign processes named per interval: who disturbed a run is among the first few."""


CONTAMINATING = frozenset({"foreign_cpu", "memory_pressure"})
"""The reasons that make an interval contaminated. CPU steal is recorded (its own
warning) but does not: on a virtual machine the workload's own direct I/O to a virtual
disk shows as steal (7-17% on this project's VM, 0% idle), every run would be flagged,
and steal by other tenants is noise that repetitions in random order carry into the
intervals, not a bias of one target."""


def _foreign(foreign_pct: float, waited_pct: float, thresholds: Thresholds) -> bool:
    """Whether foreign CPU took CPU from the workload: there was enough of it, and tasks
    waited for a CPU (`waited_pct`: 100 where the kernel has no PSI to say)."""
    return foreign_pct > thresholds.foreign_cpu_pct and waited_pct > thresholds.cpu_pressure_pct


def _contaminating(reasons: Iterable[str]) -> bool:
    return any(r in CONTAMINATING for r in reasons)


JUDGED_OVER_S = 1.0
"""Contamination is judged over spans of at least this long: at 100 ms intervals one
scheduler tick of a kworker, or of the hypervisor, is 10% of a CPU, and a run sampled
that finely would be flagged for noise a second-long look averages away."""


def judge_contamination(
    points: Sequence[TelemetryPoint], thresholds: Thresholds, over_s: float = JUDGED_OVER_S
) -> list[TelemetryPoint]:
    """The points with `contaminated` and `reasons` judged over consecutive spans of at
    least `over_s` (time-weighted means of each span's foreign CPU, steal and memory
    stall; a short last span joins the one before), each point taking its span's."""
    full = over_s * (1 - 1e-9)  # ten intervals of 0.1 s sum to 0.9999999999999999
    spans: list[list[TelemetryPoint]] = []
    for p in points:
        if not spans or sum(q.dt_s for q in spans[-1]) >= full:
            spans.append([])
        spans[-1].append(p)
    if len(spans) > 1 and sum(q.dt_s for q in spans[-1]) < full:
        last = spans.pop()
        spans[-1] += last
    out: list[TelemetryPoint] = []
    for span in spans:
        dt = sum(q.dt_s for q in span)

        def mean(value: Callable[[TelemetryPoint], float], span: list[TelemetryPoint] = span,
                 dt: float = dt) -> float:  # fmt: skip
            return sum(value(q) * q.dt_s for q in span) / dt if dt > 0 else 0.0

        reasons: list[str] = []
        waited = mean(lambda q: q.psi["cpu"].some_pct if "cpu" in q.psi else 100.0)
        if _foreign(mean(lambda q: q.foreign_cpu_pct), waited, thresholds):
            reasons.append("foreign_cpu")
        if mean(lambda q: q.cpu_steal_pct) > thresholds.steal_pct:
            reasons.append("steal")
        stall = mean(lambda q: q.psi["memory"].some_pct if "memory" in q.psi else 0.0)
        if stall > thresholds.memory_pressure_pct:
            reasons.append("memory_pressure")
        dirty = _contaminating(reasons)
        out += [replace(q, contaminated=dirty, reasons=tuple(reasons)) for q in span]
    return out


def make_point(prev: Sample, cur: Sample, t0_s: float, thresholds: Thresholds) -> TelemetryPoint:
    dt_s = cur.t_s - prev.t_s
    devices: dict[str, DeviceInterval] = {}
    for name, b in cur.disks.items():
        a = prev.disks.get(name)
        d = DeviceInterval.between(a, b, dt_s) if a is not None else None
        if d is not None:
            devices[name] = d
    c0, c1 = prev.cpu, cur.cpu
    total = c1.total - c0.total

    def cpu_pct(ticks: int) -> float:
        return 100.0 * ticks / total if total > 0 else 0.0

    proc_dt_s = (cur.procs.boot_ticks - prev.procs.boot_ticks) / _CLK_TCK
    by_process = cpu_ticks_by_process(prev.procs, cur.procs)
    ticks = cpu_ticks_by_group(prev.procs, cur.procs, by_process)

    def pct(n: int) -> float:
        # The scans' own tick-resolution clock, not t_s: their ticks are what is divided.
        return 100.0 * _rate(n / _CLK_TCK, proc_dt_s or dt_s)

    def one_cpu_pct(group: ProcessGroup) -> float:
        return pct(ticks[group])

    named = cpu_ticks_named(prev.procs, cur.procs, by_process)
    others = [pid for pid, n in named.items() if n > 0 and cur.procs.group[pid] == "foreign"]
    top = sorted(others, key=lambda pid: -named[pid])[:FOREIGN_TOP]
    # No process used more than every CPU did in the interval: a parent charged at once for
    # a child it reaped (whose life spanned earlier intervals, unseen) would read 600%.
    busy = pct(c1.busy - c0.busy)
    foreign_top = tuple((cur.procs.procs[pid].comm, pid, min(pct(named[pid]), busy)) for pid in top)

    psi = {r: PsiInterval.between(prev.psi[r], cur.psi[r], dt_s) for r in cur.psi}
    foreign = one_cpu_pct("foreign")
    steal = cpu_pct(c1.steal - c0.steal)
    reasons: list[str] = []
    waited = psi["cpu"].some_pct if "cpu" in psi else 100.0
    if _foreign(foreign, waited, thresholds):
        reasons.append("foreign_cpu")
    if steal > thresholds.steal_pct:
        reasons.append("steal")
    # The interval's own stall share, not avg10: that one would keep flagging intervals
    # for ten seconds and more after the pressure ended.
    if "memory" in psi and psi["memory"].some_pct > thresholds.memory_pressure_pct:
        reasons.append("memory_pressure")
    return TelemetryPoint(
        t_s=cur.t_s - t0_s,
        dt_s=dt_s,
        devices=devices,
        cpu_busy_pct=cpu_pct(c1.busy - c0.busy),
        cpu_iowait_pct=cpu_pct(c1.iowait - c0.iowait),
        cpu_steal_pct=steal,
        foreign_cpu_pct=foreign,
        workload_cpu_pct=one_cpu_pct("workload"),
        kernel_cpu_pct=one_cpu_pct("kernel"),
        cached_bytes=cur.memory.cached_bytes,
        dirty_bytes=cur.memory.dirty_bytes,
        writeback_bytes=cur.memory.writeback_bytes,
        available_bytes=cur.memory.available_bytes,
        psi=psi,
        contaminated=_contaminating(reasons),
        reasons=tuple(reasons),
        foreign_top=foreign_top,
    )


def _device_value(p: TelemetryPoint, name: str, attr: str) -> float:
    """A figure of device `name` in interval `p`; 0 when the device was missing then."""
    d = p.devices.get(name)
    return float(getattr(d, attr)) if d is not None else 0.0


_REASON_TEXT = {
    "foreign_cpu": "CPU used by other processes",
    "steal": "CPU steal time",
    "memory_pressure": "memory pressure",
}

TelemetrySummary = dict[str, float | int | None]

SINCE_SLACK_S = 0.05
"""`Telemetry.since` keeps an interval that began this little before the time asked (or a
quarter of the sampling interval, if less): the time a run's measured part began is read
from the engine's progress lines, a pipe away. An interval that began earlier holds the
layout's writes (fsynced just before the start) and is left out, measured writes and all:
the devices' figures then miss up to one interval of the run, and write amplification
sets them against the workload's writes over the same span (`fslab.run.Watch.summary`)."""


@dataclass(frozen=True)
class Telemetry:
    """What the machine did during one job: the series and its derived metrics."""

    interval_s: float
    series: list[TelemetryPoint]
    roles: DeviceRoles
    start_memory: MemInfo
    """/proc/meminfo at the first sample (the series holds the end of each interval)."""
    cpu_count: int
    thresholds: Thresholds
    sampler_cpu_s: float
    """CPU time the sampler itself used, on its thread and for the first and last sample."""
    started_unix_s: float

    @property
    def duration_s(self) -> float:
        """From the start of the first interval to the end of the last."""
        if not self.series:
            return 0.0
        return self.series[-1].t_s - (self.series[0].t_s - self.series[0].dt_s)

    def since(self, from_s: float) -> Telemetry:
        """The intervals that began at or after `from_s` seconds (a run's measured part:
        the engine's layout of its files and its ramp left out, whose writes and dirty
        pages are not the workload's), with the memory at their start; the whole run
        where no interval did."""
        slack = min(SINCE_SLACK_S, self.interval_s / 4)
        kept = [p for p in self.series if p.t_s - p.dt_s >= from_s - slack]
        if not kept or len(kept) == len(self.series):
            return self
        before = self.series[len(self.series) - len(kept) - 1]
        start = MemInfo(before.cached_bytes, before.dirty_bytes, before.writeback_bytes,
                        before.available_bytes)  # fmt: skip
        return replace(self, series=kept, start_memory=start)

    def dirty_rise_bytes(self) -> int:
        """The largest rise of dirty page-cache memory within the series (from its lowest
        point so far): buffered writes pile up there, direct writes do not."""
        low = self.start_memory.dirty_bytes
        rise = 0
        for p in self.series:
            low = min(low, p.dirty_bytes)
            rise = max(rise, p.dirty_bytes - low)
        return rise

    def _peak_points(self) -> list[TelemetryPoint]:
        # The last interval ends at stop(), often just after a scheduled sample: a few
        # I/Os in a few milliseconds would make a peak rate no one saw. Peaks use the
        # intervals at least half the nominal length (all of them if none is).
        full = [p for p in self.series if p.dt_s >= self.interval_s / 2]
        return full or list(self.series)

    def _device_totals(self, names: Iterable[str]) -> dict[str, int]:
        """Counts over the whole run, summed over the devices `names`."""
        names = list(names)
        totals = dict.fromkeys(
            ("reads", "writes", "read_bytes", "written_bytes", "read_time_ms", "write_time_ms"),
            0,
        )
        for p in self.series:
            for n in names:
                d = p.devices.get(n)
                if d is not None:
                    for k in totals:
                        totals[k] += getattr(d, k)
        return totals

    def _peak(self, value: Callable[[TelemetryPoint], float]) -> float | None:
        points = self._peak_points()
        return max(value(p) for p in points) if points else None

    def _avg(self, value: Callable[[TelemetryPoint], float]) -> float | None:
        """Time-weighted mean over the intervals."""
        dt = sum(p.dt_s for p in self.series)
        return sum(value(p) * p.dt_s for p in self.series) / dt if dt > 0 else None

    def summary(
        self,
        workload_written_bytes: int | None = None,
        space_used_before: int | None = None,
        space_used_after: int | None = None,
        logical_bytes: int | None = None,
    ) -> TelemetrySummary:
        """The derived metrics, flat, with units in the names. Device figures without a
        prefix are summed over the target's members (`roles.members`); `backing_*` over
        the disks holding loop images (which also carry the rest of the machine's I/O);
        `device.<name>.*` are per device. Rates are per second, averages are over the
        whole run, peaks are the highest interval (so they depend on `interval_s`).
        A metric that cannot be computed (nothing written, no baseline given) is None.
        """
        out: TelemetrySummary = {
            "interval_s": self.interval_s,
            "duration_s": self.duration_s,
            "intervals": len(self.series),
        }
        duration = self.duration_s

        def members_sum(p: TelemetryPoint, attr: str) -> float:
            return sum(_device_value(p, n, attr) for n in self.roles.members)

        t = self._device_totals(self.roles.members)
        out["read_ios"] = t["reads"]
        out["write_ios"] = t["writes"]
        out["read_bytes"] = t["read_bytes"]
        out["written_bytes"] = t["written_bytes"]
        out["read_iops_avg"] = _rate(t["reads"], duration)
        out["write_iops_avg"] = _rate(t["writes"], duration)
        out["iops_avg"] = _rate(t["reads"] + t["writes"], duration)
        out["read_iops_peak"] = self._peak(lambda p: members_sum(p, "read_iops"))
        out["write_iops_peak"] = self._peak(lambda p: members_sum(p, "write_iops"))
        out["iops_peak"] = self._peak(
            lambda p: members_sum(p, "read_iops") + members_sum(p, "write_iops")
        )
        out["read_bytes_per_s_avg"] = _rate(t["read_bytes"], duration)
        out["write_bytes_per_s_avg"] = _rate(t["written_bytes"], duration)
        out["read_bytes_per_s_peak"] = self._peak(lambda p: members_sum(p, "read_bytes_per_s"))
        out["write_bytes_per_s_peak"] = self._peak(lambda p: members_sum(p, "write_bytes_per_s"))
        out["read_io_size_bytes"] = t["read_bytes"] / t["reads"] if t["reads"] else None
        out["write_io_size_bytes"] = t["written_bytes"] / t["writes"] if t["writes"] else None
        out["read_latency_ms_avg"] = t["read_time_ms"] / t["reads"] if t["reads"] else None
        out["write_latency_ms_avg"] = t["write_time_ms"] / t["writes"] if t["writes"] else None
        out["read_write_ratio"] = t["reads"] / t["writes"] if t["writes"] else None
        out["read_write_bytes_ratio"] = (
            t["read_bytes"] / t["written_bytes"] if t["written_bytes"] else None
        )
        out["write_amplification"] = (
            t["written_bytes"] / workload_written_bytes if workload_written_bytes else None
        )
        if self.roles.backing:
            b = self._device_totals(self.roles.backing)
            out["backing_read_bytes"] = b["read_bytes"]
            out["backing_written_bytes"] = b["written_bytes"]
        else:
            out["backing_read_bytes"] = out["backing_written_bytes"] = None
        for name in self.roles.all:
            d = self._device_totals([name])
            prefix = f"device.{name}."
            out[prefix + "read_ios"] = d["reads"]
            out[prefix + "write_ios"] = d["writes"]
            out[prefix + "read_bytes"] = d["read_bytes"]
            out[prefix + "written_bytes"] = d["written_bytes"]

            def iops(p: TelemetryPoint, n: str = name) -> float:
                return _device_value(p, n, "read_iops") + _device_value(p, n, "write_iops")

            def util(p: TelemetryPoint, n: str = name) -> float:
                return _device_value(p, n, "util_pct")

            out[prefix + "iops_peak"] = self._peak(iops)
            out[prefix + "util_pct_avg"] = self._avg(util)

        out["cpu_busy_pct_avg"] = self._avg(lambda p: p.cpu_busy_pct)
        out["cpu_busy_pct_peak"] = self._peak(lambda p: p.cpu_busy_pct)
        out["cpu_iowait_pct_avg"] = self._avg(lambda p: p.cpu_iowait_pct)
        out["cpu_steal_pct_avg"] = self._avg(lambda p: p.cpu_steal_pct)
        out["cpu_steal_pct_peak"] = self._peak(lambda p: p.cpu_steal_pct)
        out["foreign_cpu_pct_avg"] = self._avg(lambda p: p.foreign_cpu_pct)
        out["foreign_cpu_pct_peak"] = self._peak(lambda p: p.foreign_cpu_pct)
        out["workload_cpu_pct_avg"] = self._avg(lambda p: p.workload_cpu_pct)
        out["workload_cpu_pct_peak"] = self._peak(lambda p: p.workload_cpu_pct)
        out["kernel_cpu_pct_avg"] = self._avg(lambda p: p.kernel_cpu_pct)

        last = self.series[-1] if self.series else None
        start = self.start_memory
        out["cached_growth_bytes"] = last.cached_bytes - start.cached_bytes if last else None
        # The run's own: what was dirty when it began (its layout, the machine's) is not.
        dirty = [p.dirty_bytes for p in self.series] or [start.dirty_bytes]
        out["dirty_peak_bytes"] = max(dirty)
        out["dirty_rise_bytes"] = self.dirty_rise_bytes()
        out["writeback_peak_bytes"] = max(
            [start.writeback_bytes, *(p.writeback_bytes for p in self.series)]
        )
        available = [
            a
            for a in [start.available_bytes, *(p.available_bytes for p in self.series)]
            if a is not None
        ]
        out["available_min_bytes"] = min(available) if available else None

        for r in PSI_RESOURCES:
            if last is None or r not in last.psi:
                continue

            def some(p: TelemetryPoint, r: str = r) -> float:
                return p.psi[r].some_pct if r in p.psi else 0.0

            def full(p: TelemetryPoint, r: str = r) -> float:
                return (p.psi[r].full_pct or 0.0) if r in p.psi else 0.0

            out[f"psi_{r}_some_pct_avg"] = self._avg(some)
            out[f"psi_{r}_some_pct_peak"] = self._peak(some)
            if last.psi[r].full_pct is not None:
                out[f"psi_{r}_full_pct_avg"] = self._avg(full)

        used: int | None = None
        if space_used_before is not None and space_used_after is not None:
            used = space_used_after - space_used_before
        out["space_used_bytes"] = used
        out["space_amplification"] = (
            used / logical_bytes if used is not None and logical_bytes else None
        )

        out["contaminated"] = int(any(p.contaminated for p in self.series))
        out["contaminated_intervals"] = sum(p.contaminated for p in self.series)
        for reason in _REASON_TEXT:
            out[f"contaminated_{reason}_intervals"] = sum(reason in p.reasons for p in self.series)
        out["sampler_cpu_pct"] = 100.0 * _rate(self.sampler_cpu_s, duration)
        return out

    def contamination(self) -> list[str]:
        """Why the run is contaminated, one line a reason, for people; empty when clean."""
        n = len(self.series)
        peaks: dict[str, tuple[Callable[[TelemetryPoint], float], float, str]] = {
            "foreign_cpu": (
                lambda p: p.foreign_cpu_pct,
                self.thresholds.foreign_cpu_pct,
                "of a CPU",
            ),
            "steal": (lambda p: p.cpu_steal_pct, self.thresholds.steal_pct, "of CPU time"),
            "memory_pressure": (
                lambda p: p.psi["memory"].some_pct if "memory" in p.psi else 0.0,
                self.thresholds.memory_pressure_pct,
                "of the time stalled",
            ),
        }
        out: list[str] = []
        for reason, (value, limit, unit) in peaks.items():
            hit = [p for p in self.series if reason in p.reasons]
            if hit:
                out.append(
                    f"{_REASON_TEXT[reason]} above {limit:g}% {unit} in {len(hit)} of {n} "
                    f"intervals (peak {max(value(p) for p in hit):.0f}%)"
                )
        return out

    def disturbers(self) -> list[dict[str, Any]]:
        """Who disturbed the run: the foreign processes named in its intervals contaminated
        by foreign CPU, by the CPU they used there, most first (at most `FOREIGN_TOP`, and
        none that used under a quarter of the threshold there): `name`, `pid`, `cpu_s` and
        `cpu_pct` (% of one CPU over those intervals)."""
        hit = [p for p in self.series if "foreign_cpu" in p.reasons]
        span = sum(p.dt_s for p in hit)
        used: dict[tuple[str, int], float] = {}
        for p in hit:
            for name, pid, share in p.foreign_top:
                used[(name, pid)] = used.get((name, pid), 0.0) + share / 100.0 * p.dt_s
        # A process using a sliver of a CPU there (a shell, a monitor) did not disturb it.
        least = self.thresholds.foreign_cpu_pct / 4
        shares = [
            ((name, pid), cpu_s, 100.0 * _rate(cpu_s, span)) for (name, pid), cpu_s in used.items()
        ]
        top = sorted((x for x in shares if x[2] >= least), key=lambda x: -x[1])[:FOREIGN_TOP]
        return [
            {"name": name, "pid": pid, "cpu_s": cpu_s, "cpu_pct": pct}
            for (name, pid), cpu_s, pct in top
        ]

    def to_dict(self) -> dict[str, Any]:
        """Plain data (JSON-ready); `from_dict` reads it back (`disturbers` is derived)."""
        return {**asdict(self), "disturbers": self.disturbers()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Telemetry:
        def point(d: Mapping[str, Any]) -> TelemetryPoint:
            return TelemetryPoint(
                **{
                    **d,
                    "devices": {k: DeviceInterval(**v) for k, v in d["devices"].items()},
                    "psi": {k: PsiInterval(**v) for k, v in d["psi"].items()},
                    "reasons": tuple(d["reasons"]),
                    "foreign_top": tuple(tuple(x) for x in d.get("foreign_top", ())),
                }
            )

        roles = data["roles"]
        return cls(
            interval_s=data["interval_s"],
            series=[point(p) for p in data["series"]],
            roles=DeviceRoles(
                members=tuple(roles["members"]),
                stacked=tuple(roles["stacked"]),
                backing=tuple(roles["backing"]),
            ),
            start_memory=MemInfo(**data["start_memory"]),
            cpu_count=data["cpu_count"],
            thresholds=Thresholds(**data["thresholds"]),
            sampler_cpu_s=data["sampler_cpu_s"],
            started_unix_s=data["started_unix_s"],
        )
