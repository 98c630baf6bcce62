"""The workload kinds as the read side knows them: one `Entry` per kind, what its runs
measure and how compare, the warnings, the store and the reports treat them.

The write side of a kind (its study keys, planning, running) is `fslab.kinds.<kind>`; its
read side is `fslab.catalog.<kind>`, and every module that reads results asks
`entry(kind)` instead of comparing a kind to a name (tests/test_kinds.py holds the two
registries to the same names and scans the lab for such comparisons). The catalog imports
only the metric specs (`fslab.metrics`) and the integrity words, so the read path never
imports the kinds, the study model or the engine.

Adding a kind: `fslab/kinds/<kind>.py` and `fslab/catalog/<kind>.py`, and a line in each
registry (docs/architecture.md, "A workload kind").
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from fslab.metrics import (
    CPU_PER_OP,
    CPU_SHARE,
    METRICS,
    PSEUDO_METRICS,
    TELEMETRY_OP,
    MetricSpec,
    stored_name,
)

STEADY_DURATION_KEYS = ("steady_round", "steady_measure")
"""The steady-state keys that are durations (seconds once planned)."""


@dataclass(frozen=True)
class Entry:
    """What the read side knows of one workload kind."""

    name: str
    size_keys: tuple[str, ...] = ()
    """Its keys whose values are sizes (bytes once planned: `8KiB`)..."""
    duration_keys: tuple[str, ...] = ()
    """... durations (seconds once planned: `30s`)..."""
    count_keys: tuple[str, ...] = ()
    """... and counts (whole numbers of at least 1)."""
    metrics: tuple[MetricSpec, ...] = METRICS
    """The metrics of each of its engine operations (`metric` rows)..."""
    per_op: Mapping[str, tuple[MetricSpec, ...]] = field(default_factory=dict)
    """... but for the operations that have their own."""
    compared: bool = True
    """False: its runs have no compared numbers, whatever they stored."""
    stored: str = "report"
    """What its runs store as `run.engine_json` (`run.engine_shape` names it): `report`,
    one engine report (a fio job file's measured jobs as one); `reports`, a list of them,
    one per op; `pgbench`, pgbench's own summary; `integrity`, what the fault did."""
    outcome_rows: bool = False
    """Its runs' result is a word in the `integrity` table (what the file system did
    with a fault), shown in tables of its own, never in a comparison's rows."""
    headline_op: str | None = None
    """The operation a point is judged by (an application's transactions), whose rate its
    CPU per op and its noise are per; None: every engine operation."""
    ops_apart: bool = False
    """Each operation is a measurement of its own, one after the other (a files run's
    copy, delete, ...): with its own device telemetry (`copy device`), named in labels
    and charts."""
    op_family: str = ""
    """How an operation of a point without `rw` names its family in a summary (`{op}`:
    a files op is its own; `{op}s`: a fio job file's reads); empty: no family."""
    model: bool = False
    """One of the engine's application models: bursty I/O judged by its transactions
    (their series is its trend), its own charts and summary words."""
    jetstress: bool = False
    """Its runs carry JetStress's numbers and PASS/FAIL limits (the mail store)."""
    counts_bytes: bool = False
    """What its workload read and wrote is set against what the devices did (the cache
    checks): one workload over the run's measured part, not a sequence of ops."""
    checks_short_run: bool = False
    """A run measured under a steady window (`SHORT_RUN_S`) is flagged even when the
    engine did not say so (a fixed-length job's report carries no `short_run`)."""
    checks_block_params: bool = False
    """The checks that read a block job's keys (buffered reads of a file that fits in
    memory, zeros written) apply."""
    direct_unless_said: bool = False
    """Its I/O is direct unless the point says `direct = false` (the cache checks then
    name a fallback to buffered I/O); False where something else decides (a fio job
    file's own `direct`), so only a point's `direct = true` says so."""

    def op_metrics(self, op: str) -> tuple[MetricSpec, ...]:
        """The metrics compared for one of its engine operations (none when not compared)."""
        if not self.compared:
            return ()
        return self.per_op.get(op, self.metrics)

    def is_headline_op(self, op: str) -> bool:
        """Whether an engine operation's rate stands for the point (its noise is judged)."""
        return self.headline_op is None or op == self.headline_op

    def family(self, op: str) -> str:
        """The summary family of an operation of a point without `rw`."""
        return self.op_family.format(op=op)


from fslab.catalog import app, block, files, fio, integrity, pgbench  # noqa: E402

APP_HEADLINE_OP = app.HEADLINE_OP

CATALOG: dict[str, Entry] = {e.name: e for e in (
    block.ENTRY, files.ENTRY, pgbench.ENTRY, app.OLTP, app.MAILSTORE, integrity.ENTRY,
    fio.ENTRY,
)}  # fmt: skip


SIZE_KEYS = tuple(dict.fromkeys(k for e in CATALOG.values() for k in e.size_keys))
"""Every kind's keys whose values are sizes (for `fslab.params.format_param`)."""
DURATION_KEYS = tuple(dict.fromkeys(k for e in CATALOG.values() for k in e.duration_keys))
"""Every kind's keys whose values are durations."""


def entry(kind: str) -> Entry:
    """The read side's entry of `kind`. A kind it lacks (a results database from a newer
    fslab) reads as plain engine operations, with none of the kind-specific checks."""
    got = CATALOG.get(kind)
    return got if got is not None else Entry(kind)


COLUMNS: tuple[str, ...] = tuple(
    dict.fromkeys(m.name for e in CATALOG.values() for m in e.metrics if e.compared)
)
"""The `metric` table's columns that are compared."""

METRIC_NAMES: frozenset[str] = frozenset(
    m.name
    for ms in (
        *(e.metrics for e in CATALOG.values()),
        *(ms for e in CATALOG.values() for ms in e.per_op.values()),
        *PSEUDO_METRICS.values(),
    )
    for m in ms
)
"""Every compared metric's name: what a study's `summary` key may name."""


def compared(
    kind: str,
    op_rows: Iterable[tuple[str, dict[str, float]]],
    run_metrics: Iterable[tuple[str, float]],
) -> Iterator[tuple[str, str, float]]:
    """Every compared `(op, metric, value)` of one run: from its `metric` rows (op, the
    columns by name) and its `run_metric` rows (name, value); none for a kind that is not
    compared, whatever it stored."""
    e = entry(kind)
    if not e.compared:
        return
    rate: dict[str, float] = {}
    for op, columns in op_rows:
        for m in e.op_metrics(op):
            if m.name in columns:
                yield op, m.name, float(columns[m.name])
        if e.is_headline_op(op):
            # The telemetry of a files op is its own (`copy device`); a block run's covers
            # all its ops; an application's is per transaction.
            pseudo = f"{op} {TELEMETRY_OP}" if e.ops_apart else TELEMETRY_OP
            rate[pseudo] = rate.get(pseudo, 0.0) + float(columns.get("iops") or 0.0)
    for full, value in run_metrics:
        named = stored_name(full)
        if named is not None:
            yield named[0], named[1], float(value)
            ops_per_s = rate.get(named[0], 0.0)
            if named[1] == CPU_SHARE and ops_per_s > 0:
                yield named[0], CPU_PER_OP, value / 100.0 * 1e9 / ops_per_s


__all__ = [
    "APP_HEADLINE_OP", "CATALOG", "COLUMNS", "DURATION_KEYS", "METRIC_NAMES", "SIZE_KEYS",
    "STEADY_DURATION_KEYS", "Entry", "compared", "entry",
]  # fmt: skip
