"""The block kind's read side: one file's reads and writes (`fslab.kinds.block`)."""

from fslab.catalog import STEADY_DURATION_KEYS, Entry

ENTRY: Entry = Entry(
    "block",
    size_keys=("bs", "file_size", "io_size"),
    duration_keys=("runtime", "ramp_time", "interval", "completion_spin", *STEADY_DURATION_KEYS),
    count_keys=("threads", "iodepth", "ranks"),
    counts_bytes=True,
    checks_short_run=True,
    checks_block_params=True,
    direct_unless_said=True,
)
