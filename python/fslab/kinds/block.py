"""`kind = "block"` (the default): fio-like I/O on one test file, the engine's block job
(engine/src/lib.rs). A sweep over rw x bs x threads x iodepth x file size.

Keys are the engine's job keys (fio's names) except two that read better in a study:
`threads` (the engine's `numjobs`) and `file_size` (the engine's `size`). A study may also
write fio's `numjobs` and `size` (users come from fio): they are read as `threads` and
`file_size`, and shown that way by `fslab plan`; errors name the key as written.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, model_validator

from fslab.catalog.block import ENTRY
from fslab.kinds.base import EngineJobKind, scale_sizes_and_times
from fslab.params import format_param
from fslab.study.workload import (
    NAME_PATTERN,
    Param,
    Scalar,
    SteadySpec,
    Value,
)

if TYPE_CHECKING:
    from fslab.study.model import Study
    from fslab.study.plan import Point
    from fslab.targets.spec import TargetSpec

FIO_WORDS = {"numjobs": "threads", "size": "file_size"}
LABELLED = frozenset({"rw", "bs", "iodepth", "threads", "ranks", "file_size", "targets"})
"""Keys a point's label shows in its own words (`QD32`, `x4`, `1G file`)."""
"""fio's names a block workload also takes -> the study's word."""


class BlockWorkloadSpec(SteadySpec):
    """A block workload; each list-valued key is a sweep axis."""

    kind: Literal["block"] = "block"
    name: str | None = Field(None, pattern=NAME_PATTERN, max_length=64)
    # The targets this workload runs on (default: all); a filter, not a sweep axis.
    targets: list[str] | None = Field(None, min_length=1)
    rw: Param = "randread"
    bs: Param | None = "4KiB"
    """Left out when a `bssplit` or `bsrange` gives the sizes (unless the study sets it)."""
    threads: Param = 1
    iodepth: Param = 1
    file_size: Param = "1GiB"
    runtime: Param = "10s"
    ramp_time: Param = "0s"
    direct: Param = True
    ioengine: Param = "io_uring"
    rwmixread: Param | None = None
    io_size: Param | None = None
    fsync: Param | None = None
    end_fsync: Param | None = None
    iodepth_batch_submit: Param | None = None
    iodepth_batch_complete_min: Param | None = None
    completion_spin: Param | None = None
    buffer_content: Param | None = None
    randseed: Param | None = None
    interval: Param | None = None
    # The user's workload (docs/job-keys.md): sizes, skew, regions, pace and data.
    bssplit: Param | None = None
    bsrange: Param | None = None
    blockalign: Param | None = None
    random_distribution: Param | None = None
    norandommap: Param | None = None
    offset: Param | None = None
    offset_increment: Param | None = None
    number_ios: Param | None = None
    seq_skip: Param | None = None
    seq_run: Param | None = None
    rate: Param | None = None
    rate_iops: Param | None = None
    rate_min: Param | None = None
    rate_iops_min: Param | None = None
    rate_process: Param | None = None
    thinktime: Param | None = None
    thinktime_spin: Param | None = None
    thinktime_blocks: Param | None = None
    startdelay: Param | None = None
    buffer_compress_percentage: Param | None = None
    buffer_compress_chunk: Param | None = None
    dedupe_percentage: Param | None = None
    buffer_pattern: Param | None = None
    refill_buffers: Param | None = None
    invalidate: Param | None = None
    fadvise_hint: Param | None = None
    uncached: Param | None = None
    """Buffered I/O that leaves no pages behind (RWF_DONTCACHE, Linux 6.14+; fio's
    `uncached`): with `direct = false`, what fscrypt or a FUSE file system cannot serve
    direct is still read from and written to the device."""
    zonesize: Param | None = None
    zonerange: Param | None = None
    zoneskip: Param | None = None
    prio: Param | None = None
    prioclass: Param | None = None
    sync: Param | None = None
    """`dsync` (O_DSYNC: each write durable before it completes, DiskSpd's write-through,
    `-Sw`) or `sync` (O_SYNC); default none."""
    diskspd: str | None = None
    """The DiskSpd command line the workload was written as (`kind = "diskspd"`,
    `fslab.study.diskspd`): shown with its points, never passed to the engine."""

    @model_validator(mode="before")
    @classmethod
    def _fio_words(cls, data: Any) -> Any:
        """fio's `numjobs` and `size` read as `threads` and `file_size`; one key written
        both ways is refused (which would win is a guess)."""
        if not isinstance(data, dict):
            return data
        both = [(fio, ours) for fio, ours in FIO_WORDS.items() if fio in data and ours in data]
        if both:
            raise ValueError(
                "; ".join(
                    f"`{ours}` and `{fio}` are one key (`{fio}` is fio's name for it): "
                    f"give one of them"
                    for fio, ours in both
                )
            )
        out = {FIO_WORDS.get(k, k): v for k, v in data.items()}
        if ("bssplit" in out or "bsrange" in out) and "bs" not in out:
            out["bs"] = None
        return out


def human_size(v: Scalar | None) -> str:
    """`4K`, `1M`: a block size as labels write it."""
    if not isinstance(v, int) or isinstance(v, bool):
        return ""
    for unit, mult in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if v >= mult and v % mult == 0:
            return f"{v // mult}{unit}"
    return str(v)


class BlockKind(EngineJobKind):
    name = "block"
    spec = BlockWorkloadSpec
    aliases = FIO_WORDS
    engine_keys: Mapping[str, str] = {"threads": "numjobs", "file_size": "size"}
    size_keys = ENTRY.size_keys
    duration_keys = ENTRY.duration_keys
    count_keys = ENTRY.count_keys
    footprint_what = "file_size"
    footprint_key = "file_size"
    layout_keys = ("file_size",)

    def scale(self, params: dict[str, Value], scale: float) -> dict[str, Value]:
        if scale == 1.0:
            return params
        return self.keep_window(params, scale_sizes_and_times(params, scale))

    def label(self, point: Point) -> str:
        """`ext4 rand randread 4K QD32 x4 1G file`: the file's size too, so the points of
        a sweep over file sizes tell apart in progress lines and lists."""
        p = point.params
        parts = [str(p.get("rw", "")), human_size(p.get("bs")), f"QD{p.get('iodepth', 1)}"]
        if p.get("threads", 1) != 1:
            parts.append(f"x{p['threads']}")
        if "ranks" in p:
            parts.append(f"{p['ranks']} ranks/host")
        if size := human_size(p.get("file_size")):
            parts.append(f"{size} file")
        # Any other swept key, so that points differing only there tell apart.
        spec = point.workload_spec
        parts += [
            f"{k}={format_param(k, p[k])}"
            for k in type(spec).model_fields
            if k not in LABELLED and k in p and isinstance(getattr(spec, k), list)
        ]
        return f"{point.target.name} {point.workload} " + " ".join(x for x in parts if x)

    def job(self, point: Point, directory: Path) -> dict[str, Any]:
        """One test file, `fslab.dat`, inside `directory`."""
        return {"name": "fslab", "filename": str(directory / "fslab.dat"),
                **self.engine_params(point)}  # fmt: skip

    def footprints(self, study: Study, point: Point) -> list[tuple[TargetSpec, int | None]]:
        size = point.params.get("file_size")
        return [(point.target, size if isinstance(size, int) else None)]


BLOCK = BlockKind()
