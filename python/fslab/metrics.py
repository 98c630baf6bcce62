"""The metric catalog: every number `fslab compare` compares, its unit, which direction is
better and what sort of number it is. Compare, the reports, export and the warnings read
it; nothing else names a compared metric or parses a stored metric name.

Where a compared number comes from:
- an engine operation (`read`, `write`, `txn`, `copy`, `data_read`, ...): a column of the
  `metric` table, one row per run and operation;
- a run-level *pseudo-operation*: `device` (the telemetry sampler's summary of the target's
  devices; `copy device` for a files run's `copy` op), `jetstress` (the mailstore model's
  JetStress numbers and its PASS/FAIL verdict) and `app` (the application models' cache
  and commit numbers): rows of `run_metric` under dotted names (`written_bytes`,
  `copy.written_bytes`, `jetstress.cpu_pct`, `verdict.pass`, `app.cache_hit_pct`).

`compared(...)` turns one stored run into `(op, metric, value)` triples once, when the run
is stored (`fslab.store.derive`); `compare` never parses a stored name again.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import StrEnum

from fslab.integrity_words import KIND as INTEGRITY_KIND


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
"""A block operation's metrics."""
FILES_METRICS: tuple[MetricSpec, ...] = (FILES_PER_S, BW, LAT_MEAN, LAT_P99)
"""A files operation's: `ios` counts files there."""
PGBENCH_METRICS: tuple[MetricSpec, ...] = (TPS, LAT_MEAN, LAT_P95, LAT_P99)
"""pgbench's transactions (op `txn`): tps and latency from its per-transaction log."""

COLUMNS: tuple[str, ...] = tuple(
    dict.fromkeys(m.name for m in (*METRICS, *FILES_METRICS, *PGBENCH_METRICS))
)
"""The `metric` table's columns that are compared."""

# The application models' operations: transactions, then the data file's reads and
# writes, the log's writes and the mailstore's maintenance reads.
_APP_OP_METRICS: dict[str, tuple[MetricSpec, ...]] = {
    "txn": (TPS, LAT_MEAN, LAT_P99),
    "data_read": (IOPS, LAT_MEAN, LAT_P99),
    "data_write": (IOPS, LAT_MEAN, LAT_P99),
    "log_write": METRICS,
    "maintenance_read": (BW, LAT_MEAN),
}
# The mailstore's data and log rates and means are in its JetStress rows: only the tail.
_MAILSTORE_OP_METRICS = {**_APP_OP_METRICS, **dict.fromkeys(
    ("data_read", "data_write", "log_write"), (LAT_P99,))}  # fmt: skip
_KIND_METRICS = {"files": FILES_METRICS, "pgbench": PGBENCH_METRICS}
UNCOMPARED_KINDS = frozenset({INTEGRITY_KIND})
"""Kinds whose runs have no compared numbers: an integrity run's result is a word (what
the file system did with a fault: table `integrity`, `fslab.integrity_words`), shown in
tables of its own, never in a comparison's rows."""
APP_KINDS = ("oltp", "mailstore")
"""Workload kinds that are one of the engine's application models (here, on the read
path, so that compare and the reports need not import the kinds)."""
# The application models, whose operations each have their own metrics.
_MODEL_OP_METRICS = {"oltp": _APP_OP_METRICS, "mailstore": _MAILSTORE_OP_METRICS}


def op_metrics(kind: str, op: str) -> tuple[MetricSpec, ...]:
    """The metrics compared for an engine operation of a point of this workload kind
    (none for `UNCOMPARED_KINDS`)."""
    if kind in UNCOMPARED_KINDS:
        return ()
    per_op = _MODEL_OP_METRICS.get(kind)
    if per_op is not None:
        return per_op.get(op, METRICS)
    return _KIND_METRICS.get(kind, METRICS)


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
    # A multi-host run's evenness (`fslab.ranks`, stored as `ranks.*` run metrics): the
    # fastest rank's rate over the slowest's. 1 is even; a shared file system that
    # favours some clients shows here before it shows in the sum.
    MetricSpec("imbalance", "imbalance (fastest/slowest rank)", "ratio", L, EFF, min_abs=0.01),
)
_PSEUDO_OPS = {TELEMETRY_OP: TELEMETRY_METRICS, JETSTRESS_OP: JETSTRESS_METRICS,
               APP_OP: APP_METRICS, RANKS_OP: RANKS_METRICS}  # fmt: skip
_PSEUDO_NAMES = {op: frozenset(m.name for m in ms) for op, ms in _PSEUDO_OPS.items()}


METRIC_NAMES: frozenset[str] = frozenset(
    m.name
    for ms in (METRICS, FILES_METRICS, PGBENCH_METRICS, *_APP_OP_METRICS.values(),
               *_PSEUDO_OPS.values())
    for m in ms
)  # fmt: skip
"""Every compared metric's name: what a study's `summary` key may name."""


def pseudo_metrics(op: str) -> tuple[MetricSpec, ...] | None:
    """The metrics of a run-level pseudo-operation (`device`, `copy device`, `jetstress`,
    `app`), or None for an engine operation."""
    return _PSEUDO_OPS.get(op.rpartition(" ")[2])


def metric_of(kind: str, op: str, name: str) -> MetricSpec:
    """The catalog entry of one compared `(op, name)` of a point of this kind."""
    for m in pseudo_metrics(op) or op_metrics(kind, op):
        if m.name == name:
            return m
    raise KeyError((kind, op, name))


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


APP_HEADLINE_OP = "txn"
"""An application's transactions: what it is judged by, and its CPU per op is per one."""


def compared(
    kind: str,
    op_rows: Iterable[tuple[str, dict[str, float]]],
    run_metrics: Iterable[tuple[str, float]],
) -> Iterator[tuple[str, str, float]]:
    """Every compared `(op, metric, value)` of one run: from its `metric` rows (op, the
    columns by name) and its `run_metric` rows (name, value); none for a kind of
    `UNCOMPARED_KINDS`, whatever it stored."""
    if kind in UNCOMPARED_KINDS:
        return
    rate: dict[str, float] = {}
    for op, columns in op_rows:
        for m in op_metrics(kind, op):
            if m.name in columns:
                yield op, m.name, float(columns[m.name])
        if kind not in _MODEL_OP_METRICS or op == APP_HEADLINE_OP:
            # The telemetry of a files op is its own (`copy device`); a block run's covers
            # all its ops; an application's is per transaction.
            pseudo = f"{op} {TELEMETRY_OP}" if kind == "files" else TELEMETRY_OP
            rate[pseudo] = rate.get(pseudo, 0.0) + float(columns.get("iops") or 0.0)
    for full, value in run_metrics:
        named = stored_name(full)
        if named is not None:
            yield named[0], named[1], float(value)
            ops_per_s = rate.get(named[0], 0.0)
            if named[1] == CPU_SHARE and ops_per_s > 0:
                yield named[0], CPU_PER_OP, value / 100.0 * 1e9 / ops_per_s


NOISE_METRIC = "iops"
"""The rate whose spread over repetitions is judged (noisy, outlier)."""


def noise_op(kind: str, op: str) -> bool:
    """Whether the spread of this engine op's rate is worth a warning: an application
    model's transactions stand for its operations (their reads and writes follow them)."""
    return op == APP_HEADLINE_OP if kind in _MODEL_OP_METRICS else True
