"""The application models' read side (`fslab.kinds.app`): an OLTP database and a mail
store, judged by their transactions (op `txn`); their data file's reads and writes, the
log's writes and the mail store's maintenance reads have metrics of their own."""

from fslab.catalog import STEADY_DURATION_KEYS, Entry
from fslab.metrics import BW, IOPS, LAT_MEAN, LAT_P99, METRICS, TPS, MetricSpec

HEADLINE_OP = "txn"
"""An application's transactions: what it is judged by, and its CPU per op is per one."""

_OP_METRICS: dict[str, tuple[MetricSpec, ...]] = {
    HEADLINE_OP: (TPS, LAT_MEAN, LAT_P99),
    "data_read": (IOPS, LAT_MEAN, LAT_P99),
    "data_write": (IOPS, LAT_MEAN, LAT_P99),
    "log_write": METRICS,
    "maintenance_read": (BW, LAT_MEAN),
}
# The mailstore's data and log rates and means are in its JetStress rows: only the tail.
_MAILSTORE_OP_METRICS = {**_OP_METRICS, **dict.fromkeys(
    ("data_read", "data_write", "log_write"), (LAT_P99,))}  # fmt: skip

_SIZE_KEYS = ("data_size", "log_size", "page_size", "cache_size", "log_record_size")
_DURATION_KEYS = ("runtime", "ramp_time", "interval", "checkpoint_interval",
                  *STEADY_DURATION_KEYS)  # fmt: skip
_COUNT_KEYS = ("threads", "ranks")

OLTP: Entry = Entry(
    "oltp",
    size_keys=(*_SIZE_KEYS, "scan_size"),
    duration_keys=_DURATION_KEYS,
    count_keys=_COUNT_KEYS,
    per_op=_OP_METRICS,
    headline_op=HEADLINE_OP,
    model=True,
    counts_bytes=True,
    direct_unless_said=True,
)
MAILSTORE: Entry = Entry(
    "mailstore",
    size_keys=(*_SIZE_KEYS, "maintenance_rate"),
    duration_keys=_DURATION_KEYS,
    count_keys=_COUNT_KEYS,
    per_op=_MAILSTORE_OP_METRICS,
    headline_op=HEADLINE_OP,
    model=True,
    counts_bytes=True,
    direct_unless_said=True,
    jetstress=True,
)
