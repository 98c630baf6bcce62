"""The fio kind's read side: a fio job file's measured jobs as one run
(`fslab.kinds.fio`). Its reads and writes are a block workload's, judged the same way:
what it read and wrote against the devices, and a run too short to mean anything. Its
keys (`rw`, `direct`, sizes) live in the job file, not in the point: the checks that read
a block point's keys do not apply, and its I/O counts as direct (for the check that direct
writes piled up in the page cache) only where the workload sets `direct = true`."""

from fslab.catalog import Entry

ENTRY: Entry = Entry(
    "fio",
    size_keys=("bs", "size", "io_size"),
    duration_keys=("runtime", "ramp_time"),
    count_keys=("numjobs", "iodepth"),
    op_family="{op}s",
    counts_bytes=True,
    checks_short_run=True,
)
