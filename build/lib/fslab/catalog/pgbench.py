"""The pgbench kind's read side: a real PostgreSQL's transactions (op `txn`), tps and
latency from pgbench's per-transaction log (`fslab.kinds.pgbench`)."""

from fslab.catalog import Entry
from fslab.metrics import LAT_MEAN, LAT_P95, LAT_P99, TPS

ENTRY: Entry = Entry(
    "pgbench",
    duration_keys=("duration",),
    metrics=(TPS, LAT_MEAN, LAT_P95, LAT_P99),
    stored="pgbench",
)
