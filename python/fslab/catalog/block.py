"""The block kind's read side: one file's reads and writes (`fslab.kinds.block`)."""

from fslab.catalog import STEADY_DURATION_KEYS, Entry

ENTRY: Entry = Entry(
    "block",
    size_keys=(
        "bs",
        "file_size",
        "io_size",
        "blockalign",
        "offset",
        "offset_increment",
        "rate",
        "rate_min",
        "buffer_compress_chunk",
        "zonesize",
        "zonerange",
        "zoneskip",
    ),
    duration_keys=(
        "runtime",
        "ramp_time",
        "interval",
        "completion_spin",
        "thinktime",
        "thinktime_spin",
        "startdelay",
        *STEADY_DURATION_KEYS,
    ),
    count_keys=(
        "threads",
        "iodepth",
        "ranks",
        "number_ios",
        "seq_run",
        "rate_iops",
        "rate_iops_min",
        "thinktime_blocks",
    ),
    counts_bytes=True,
    checks_short_run=True,
    checks_block_params=True,
    direct_unless_said=True,
)
