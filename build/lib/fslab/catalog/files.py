"""The files kind's read side: file-management operations (copy, delete, ...) run one
after the other (`fslab.kinds.files`), each its own measurement: `ios` counts files."""

from fslab.catalog import Entry
from fslab.metrics import BW, FILES_PER_S, LAT_MEAN, LAT_P99

ENTRY: Entry = Entry(
    "files",
    size_keys=("file_size",),
    count_keys=("threads",),
    metrics=(FILES_PER_S, BW, LAT_MEAN, LAT_P99),
    ops_apart=True,
    stored="reports",
    op_family="{op}",
)
