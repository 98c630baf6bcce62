"""The metric catalog: every number `fslab compare` compares, its unit, which direction is
better and what sort of number it is. Compare, the reports, export and the warnings read
it; nothing else names a compared metric or parses a stored metric name. Which metrics
each workload kind's operations have is the kind's catalog entry's (`fslab.catalog`).

Where a compared number comes from:
- an engine operation (`read`, `write`, `txn`, `copy`, `data_read`, ...): a column of the
  `metric` table, one row per run and operation;
- a run-level *pseudo-operation*: `device` (the telemetry sampler's summary of the target's
  devices; `copy device` for a files run's `copy` op), `jetstress` (the mailstore model's
  JetStress numbers and its PASS/FAIL verdict) and `app` (the application models' cache
  and commit numbers): rows of `run_metric` under dotted names (`written_bytes`,
  `copy.written_bytes`, `jetstress.cpu_pct`, `verdict.pass`, `app.cache_hit_pct`).

`fslab.catalog.compared(...)` turns one stored run into `(op, metric, value)` triples
once, when the run is stored (`fslab.store.derive`); `compare` never parses a stored name
again.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Direction(StrEnum):
    """Which way a metric improves."""

    HIGHER = "higher"
    """More is better: IOPS, bandwidth, transactions per second."""
    LOWER = "lower"
    """Less is better: latency, bytes written for the same work, CPU."""
    NEITHER = "neither"
    """No direction is better (a peak, an average I/O size, a read:write ratio): a
    significant difference is `different`."""


class MetricKind(StrEnum):
    """What sort of number a metric is, which decides how it may be compared."""

    RATE = "rate"
    """Work per second (IOPS, MiB/s, tps, files/s)."""
    LATENCY = "latency"
    """Time per operation (mean, percentiles)."""
    WORK = "work"
    """An amount done or caused during a run (bytes written, page cache growth, checkpoints):
    it grows with the run's length and its speed, so it compares fairly only per unit of
    work (issue #13)."""
    EFFICIENCY = "efficiency"
    """Work caused per unit of work done (write amplification: device bytes per byte
    written; a cache's hits per access): fair to compare whatever a run's length or speed,
    so judged like a rate."""
    RATIO = "ratio"
    """Another dimensionless or per-operation number (average size, a read:write mix, a
    CPU share that grows with the work done, a pass/fail verdict): described, not judged."""


@dataclass(frozen=True)
class MetricSpec:
    """One compared metric: its name (a `metric` column, or the name after the prefix in
    `run_metric`, and its name in CSV/JSON), its label for people, its unit, the direction
    that is an improvement and the sort of number it is."""

    name: str
    label: str
    unit: str
    """`count` (per second for rates), `bytes_per_s`, `ns`, `bytes`, `size`, `ratio`, `pct`
    or `verdict`."""
    direction: Direction
    kind: MetricKind
    min_abs: float = 0.0
    """Differences of the means below this (in `unit`) are never significant."""

    @property
    def timed(self) -> bool:
        """Whether the metric depends on time, which a validity warning (cached,
        unsteady) makes doubtful: every rate and latency, and CPU per op;
        not amplifications or a cache's hit rate, which count bytes and pages."""
        return self.kind is not MetricKind.EFFICIENCY or self.unit == "ns"

    @property
    def higher_is_better(self) -> bool | None:
        """True (higher), False (lower) or None (no direction is better)."""
        if self.direction is Direction.NEITHER:
            return None
        return self.direction is Direction.HIGHER


H, L, N = Direction.HIGHER, Direction.LOWER, Direction.NEITHER
RATE, LAT, WORK, RATIO = MetricKind.RATE, MetricKind.LATENCY, MetricKind.WORK, MetricKind.RATIO
EFF = MetricKind.EFFICIENCY
_MiB = float(1 << 20)

VERDICT_UNIT = "verdict"
"""A pass (1) or fail (0) per run: shown as `PASS (3/3)`, never tested for a difference."""

IOPS = MetricSpec("iops", "IOPS", "count", H, RATE)
BW = MetricSpec("bw_bytes", "MiB/s", "bytes_per_s", H, RATE)
LAT_MEAN = MetricSpec("lat_mean_ns", "lat mean", "ns", L, LAT)
LAT_P95 = MetricSpec("lat_p95_ns", "lat p95", "ns", L, LAT)
LAT_P99 = MetricSpec("lat_p99_ns", "lat p99", "ns", L, LAT)
FILES_PER_S = MetricSpec("iops", "files/s", "count", H, RATE)
TPS = MetricSpec("iops", "tps", "count", H, RATE)

METRICS: tuple[MetricSpec, ...] = (IOPS, BW, LAT_MEAN, LAT_P99)
"""A block operation's metrics, and the default of any engine operation (each kind's own
are in `fslab.catalog`)."""


# ------------------------------------------------------------------- pseudo-operations

JETSTRESS_OP = "jetstress"
JETSTRESS_METRICS: tuple[MetricSpec, ...] = (
    MetricSpec("verdict_pass", "verdict", VERDICT_UNIT, N, RATIO),
    MetricSpec("transactional_iops", "transactional IOPS", "count", H, RATE, min_abs=1.0),
    MetricSpec("db_reads_per_s", "DB reads/s", "count", H, RATE, min_abs=1.0),
    MetricSpec("db_writes_per_s", "DB writes/s", "count", H, RATE, min_abs=1.0),
    MetricSpec("db_read_lat_ns", "DB read lat", "ns", L, LAT),
    MetricSpec("db_write_lat_ns", "DB write lat", "ns", L, LAT),
    MetricSpec("db_read_avg_bytes", "DB read size", "size", N, RATIO, min_abs=512.0),
    MetricSpec("db_write_avg_bytes", "DB write size", "size", N, RATIO, min_abs=512.0),
    MetricSpec("log_writes_per_s", "log writes/s", "count", N, RATE, min_abs=1.0),
    MetricSpec("log_write_lat_ns", "log write lat", "ns", L, LAT),
    MetricSpec("log_write_avg_bytes", "log write size", "size", N, RATIO, min_abs=512.0),
    MetricSpec("cpu_pct", "CPU", "pct", L, RATIO, min_abs=1.0),
)
APP_OP = "app"
APP_METRICS: tuple[MetricSpec, ...] = (
    MetricSpec("cache_hit_pct", "cache hits", "pct", H, EFF, min_abs=1.0),
    MetricSpec("records_per_flush", "commits per log flush", "count", N, RATIO, min_abs=0.1),
    MetricSpec("checkpoints", "checkpoints", "count", N, WORK, min_abs=1.0),
    MetricSpec("checkpoint_iops_peak", "checkpoint IOPS peak", "count", N, RATE, min_abs=1.0),
)
CPU_SHARE = "workload_cpu_pct_avg"
CPU_PER_OP = "workload_cpu_ns_per_op"
"""The workload's CPU time per operation: its CPU share (percent of one CPU) over its
rate (IOPS of a block run's ops together, files/s of a files op, transactions/s of an
application), both averages over the run."""
TELEMETRY_OP = "device"
TELEMETRY_METRICS: tuple[MetricSpec, ...] = (
    MetricSpec("written_bytes", "MiB written", "bytes", L, WORK, min_abs=_MiB),
    MetricSpec("read_bytes", "MiB read", "bytes", L, WORK, min_abs=_MiB),
    MetricSpec("write_amplification", "write amp", "ratio", L, EFF, min_abs=0.01),
    MetricSpec("space_amplification", "space amp", "ratio", L, EFF, min_abs=0.01),
    # The seeds' OLTP finding was the peak IOPS of checkpoints; neither direction is better.
    MetricSpec("iops_avg", "IOPS avg", "count", N, RATE, min_abs=1.0),
    MetricSpec("iops_peak", "IOPS peak", "count", N, RATE, min_abs=1.0),
    MetricSpec("read_io_size_bytes", "avg read size", "size", N, RATIO, min_abs=512.0),
    MetricSpec("write_io_size_bytes", "avg write size", "size", N, RATIO, min_abs=512.0),
    MetricSpec("read_write_ratio", "reads:writes", "ratio", N, RATIO, min_abs=0.01),
    MetricSpec("cpu_busy_pct_avg", "CPU busy", "pct", L, RATIO, min_abs=1.0),
    # The seeds' CPU KPI was the workload's own (TPC-E, JetStress): the machine's share
    # includes the sampler, the kernel's workers and anything else.
    MetricSpec(CPU_SHARE, "workload CPU", "pct", L, RATIO, min_abs=1.0),
    # The share above grows with the work done; per operation it compares configurations
    # (`compared` works it out: CPU_PER_OP).
    MetricSpec(CPU_PER_OP, "workload CPU/op", "ns", L, EFF, min_abs=10.0),
    # The seeds' SysGauge finding: one file system's copy filled the page cache, another's not.
    MetricSpec("cached_growth_bytes", "page cache growth MiB", "bytes", L, WORK, min_abs=_MiB),
    MetricSpec("dirty_peak_bytes", "peak dirty MiB", "bytes", N, WORK, min_abs=_MiB),
)
RANKS_OP = "ranks"
RANKS_METRICS: tuple[MetricSpec, ...] = (
    # A multi-host run's evenness (`fslab.rank_merge`, stored as `ranks.*` run metrics): the
    # fastest rank's rate over the slowest's. 1 is even; a shared file system that
    # favours some clients shows here before it shows in the sum.
    MetricSpec("imbalance", "imbalance (fastest/slowest rank)", "ratio", L, EFF, min_abs=0.01),
)
PSEUDO_METRICS = {TELEMETRY_OP: TELEMETRY_METRICS, JETSTRESS_OP: JETSTRESS_METRICS,
                  APP_OP: APP_METRICS, RANKS_OP: RANKS_METRICS}  # fmt: skip
"""The run-level pseudo-operations' metrics."""
_PSEUDO_NAMES = {op: frozenset(m.name for m in ms) for op, ms in PSEUDO_METRICS.items()}


def pseudo_metrics(op: str) -> tuple[MetricSpec, ...] | None:
    """The metrics of a run-level pseudo-operation (`device`, `copy device`, `jetstress`,
    `app`), or None for an engine operation."""
    return PSEUDO_METRICS.get(op.rpartition(" ")[2])


def stored_name(full: str) -> tuple[str, str] | None:
    """(pseudo-op, metric) of a stored run metric, or None when it is not compared:
    `written_bytes` (block), `copy.written_bytes` (files), `jetstress.cpu_pct` and
    `verdict.pass` (mailstore), `app.cache_hit_pct`. Per-device keys such as
    `device.loop0.written_bytes` and per-check verdicts are not compared. The only parser
    of stored names; it runs when a run is stored, not when it is compared."""
    head, _, rest = full.partition(".")
    if full == "verdict.pass":
        return JETSTRESS_OP, "verdict_pass"
    if head in (JETSTRESS_OP, APP_OP, RANKS_OP) and "." not in rest:
        op, name = head, rest
    else:
        prefix, name = (head, rest) if rest else ("", head)
        if "." in name:
            return None
        op = f"{prefix} {TELEMETRY_OP}" if prefix else TELEMETRY_OP
    return (op, name) if name in _PSEUDO_NAMES[op.rpartition(" ")[2]] else None


NOISE_METRIC = "iops"
"""The rate whose spread over repetitions is judged (noisy, outlier)."""
