"""A study as written: targets x workloads, typed and checked (pydantic, all errors at once).

Sizes are kept as the user wrote them (`"8GiB"`) and parsed with `parse_size`; the
resolved byte counts live in the plan. Workload keys are the engine's job keys (fio's
names), except two that read better in a study: `threads` (the engine's `numjobs`) and
`file_size` (the engine's `size`). Any workload parameter given as a list is a sweep axis.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    PrivateAttr,
    Tag,
    field_validator,
    model_validator,
)

from fslab.safe_text import safe_text

FS_KINDS = ("ext4", "xfs", "btrfs")
BTRFS_PROFILES = (
    "single",
    "dup",
    "raid0",
    "raid1",
    "raid1c3",
    "raid1c4",
    "raid10",
    "raid5",
    "raid6",
)
# Devices each btrfs profile needs at least (mkfs.btrfs refuses fewer).
BTRFS_MIN_DEVICES = {
    "single": 1, "dup": 1, "raid0": 2, "raid1": 2, "raid1c3": 3, "raid1c4": 4,
    "raid10": 2, "raid5": 2, "raid6": 3,
}  # fmt: skip
ENCRYPTIONS = ("fscrypt", "dm-crypt")
APP_KINDS = ("oltp", "mailstore")
"""Workload kinds that are one of the engine's application models."""

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgtpe]?)(i?b?)\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50,
          "e": 1 << 60}  # fmt: skip
_SIZE_EXAMPLES = "write e.g. `4KiB`, `64k`, `8GiB`"


def parse_size(value: str | int) -> int:
    """`4k`, `64KiB`, `1g`, `1.5GiB` or a byte count -> bytes (binary units, like the engine).

    Every unit up to EiB parses, so that a size too large for what it is used for is
    reported as too large by the check that knows the limit, not as "not a size"."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f"`{value}` is not a size ({_SIZE_EXAMPLES})")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"`{value}` is not a size: a size cannot be negative")
        return value
    if value.strip().startswith("-") and _SIZE_RE.match(value.strip()[1:]):
        raise ValueError(f"`{value}` is not a size: a size cannot be negative")
    m = _SIZE_RE.match(value)
    if not m:
        raise ValueError(f"`{value}` is not a size ({_SIZE_EXAMPLES})")
    number, unit, _ = m.groups()
    n = float(number) * _UNITS[unit.lower()]
    if n != int(n):
        raise ValueError(f"`{value}` is not a whole number of bytes")
    return int(n)


Size = Annotated[str | int, Field(description="bytes, or a string such as `4KiB`, `8GiB`")]


def _check_size(v: str | int | None) -> str | int | None:
    if v is not None:
        parse_size(v)
    return v


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LoopSpec(Strict):
    """Image files in the work directory, attached as loop devices."""

    size: Size = "4GiB"
    count: int = Field(1, ge=1, le=16)
    # The loop driver's own direct I/O to its backing file (`losetup --direct-io=on`):
    # I/O then reaches the backing disk instead of stopping in the page cache.
    direct_io: bool = False

    _size = field_validator("size")(_check_size)


class TargetSpec(Strict):
    """Where workloads run: a provisioned file system, an existing directory, or devices."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$", max_length=64)
    fs: Literal["ext4", "xfs", "btrfs"] | None = None
    loop: LoopSpec | None = None
    dir: str | None = None
    device: list[str] | None = None
    block_size: Size | None = None
    cluster_size: Size | None = None
    checksums: bool | None = None
    profile: str | None = None
    metadata_profile: str | None = None
    encryption: Literal["fscrypt", "dm-crypt"] | None = None
    mkfs_args: list[str] = []
    mount_options: list[str] = []

    _sizes = field_validator("block_size", "cluster_size")(_check_size)

    @field_validator("profile", "metadata_profile")
    @classmethod
    def _profile(cls, v: str | None) -> str | None:
        if v is not None and v not in BTRFS_PROFILES:
            raise ValueError(f"`{v}` is not a btrfs profile; allowed: {', '.join(BTRFS_PROFILES)}")
        return v

    @model_validator(mode="after")
    def _combinations(self) -> TargetSpec:
        places = [k for k in ("loop", "dir", "device") if getattr(self, k) is not None]
        if len(places) > 1:
            raise ValueError(f"give one of `loop`, `dir`, `device`, not {' and '.join(places)}")
        if self.dir is not None:
            extra = [
                k
                for k in ("fs", "block_size", "cluster_size", "checksums", "profile",
                          "metadata_profile", "encryption")
                if getattr(self, k) is not None
            ] + [k for k in ("mkfs_args", "mount_options") if getattr(self, k)]  # fmt: skip
            if extra:
                raise ValueError(
                    f"a `dir` target is used as it is: {', '.join(extra)} cannot apply to it"
                )
        elif self.fs is None:
            raise ValueError("needs `fs` (ext4, xfs, btrfs), or `dir` for an existing directory")
        fs = self.fs
        if (self.profile or self.metadata_profile) and fs != "btrfs":
            raise ValueError("`profile` and `metadata_profile` are btrfs settings")
        if self.cluster_size is not None and fs != "ext4":
            raise ValueError(
                "`cluster_size` is ext4's bigalloc; for xfs and btrfs use `block_size`"
            )
        if self.encryption == "fscrypt" and fs != "ext4":
            raise ValueError('`encryption = "fscrypt"` is supported on ext4 here')
        devices = self.device_count
        for key in ("profile", "metadata_profile"):
            p = getattr(self, key)
            if p is not None and devices < BTRFS_MIN_DEVICES[p]:
                raise ValueError(
                    f"btrfs {key} `{p}` needs at least {BTRFS_MIN_DEVICES[p]} devices, "
                    f"the target has {devices} (set `loop.count`)"
                )
        if devices > 1 and fs != "btrfs":
            raise ValueError(
                f"{fs} uses one device; several devices need btrfs (md RAID is not supported yet)"
            )
        return self

    @property
    def device_count(self) -> int:
        if self.device is not None:
            return len(self.device)
        return self.loop.count if self.loop is not None else 1

    @property
    def effective_loop(self) -> LoopSpec | None:
        """The loop devices to make: the spec's, or the default when nothing else is given."""
        if self.dir is not None or self.device is not None:
            return None
        return self.loop or LoopSpec.model_validate({})


Scalar = str | int | float | bool
Param = Scalar | list[Scalar]
Value = Scalar | list[Any]
"""A point's parameter value: a scalar, or a structured one such as `size_buckets`."""


class SweepSpec(Strict):
    """A workload whose list-valued keys are sweep axes; `name`, `kind` and `targets`
    are not, and a key in `STRUCTURED` holds a list as one value (a list of those is
    the sweep)."""

    NOT_AXES: ClassVar[frozenset[str]] = frozenset({"kind", "name", "targets"})
    STRUCTURED: ClassVar[dict[str, Callable[[list[Any]], list[list[Any]]]]] = {}

    def params(self) -> dict[str, list[Any]]:
        """Every parameter as a list of values (a sweep axis of length 1 when scalar);
        unset ones (None) are left to the engine's defaults."""
        out: dict[str, list[Any]] = {}
        for key, value in self.model_dump(exclude=set(self.NOT_AXES)).items():
            if value is None:
                continue
            if key in self.STRUCTURED:
                out[key] = list(self.STRUCTURED[key](value))
            else:
                out[key] = list(value) if isinstance(value, list) else [value]
        return out

    @model_validator(mode="before")
    @classmethod
    def _no_empty_axes(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for k, v in data.items():
                if isinstance(v, list) and not v and k not in cls.NOT_AXES:
                    raise ValueError(f"`{k}` is an empty list: a sweep axis needs a value")
        return data


def bucket_sweep(v: list[Any]) -> list[list[Any]]:
    """`size_buckets` as a list of values: `[[s, w], ...]` is one, a list of those a sweep."""
    if v and isinstance(v[0], list) and v[0] and isinstance(v[0][0], list):
        return v
    return [v]


def mix_sweep(v: list[Any]) -> list[list[Any]]:
    """`op_mix` as a list of values: `[40, 20, 5, 35]` is one, a list of those a sweep."""
    if v and all(isinstance(x, list) for x in v):
        return v
    return [v]


class WorkloadSpec(SweepSpec):
    """A block workload; each list-valued key is a sweep axis."""

    kind: Literal["block"] = "block"
    name: str | None = Field(None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$", max_length=64)
    # The targets this workload runs on (default: all); a filter, not a sweep axis.
    targets: list[str] | None = Field(None, min_length=1)
    rw: Param = "randread"
    bs: Param = "4KiB"
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
    iodepth_batch_complete_min: Param | None = None
    buffer_content: Param | None = None
    randseed: Param | None = None
    interval: Param | None = None


FileOp = Literal["copy", "sync", "scan", "dupes", "touch", "chmod", "xattr", "stat", "delete"]
# The named file sets of the file-management study (DiskBoss in ../shared/seeds):
# (number of files, size of each).
FILE_SETS = {
    "small": (250_000, "16KiB"),
    "medium": (50_000, "64KiB"),
    "large": (1_000, "4MiB"),
    "huge": (32, "1GiB"),
}


class FilesWorkloadSpec(SweepSpec):
    """File management on a generated file set: `create` (generating it, measured), then
    each of `ops` in order on the same set. `ops` is a sequence, not a sweep axis;
    `threads` and the set's keys may be lists (sweep axes)."""

    NOT_AXES = SweepSpec.NOT_AXES | {"ops"}
    STRUCTURED = {"size_buckets": bucket_sweep}

    kind: Literal["files"]
    name: str | None = Field(None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$", max_length=64)
    targets: list[str] | None = Field(None, min_length=1)
    # A target that holds the set: it is created (and mutated) there, and `copy`/`sync`
    # copy it into the point's target, where the other ops then run on the copy.
    source: str | None = None
    set: Param = "small"
    ops: list[FileOp] = ["copy", "sync", "scan", "dupes", "touch", "chmod", "delete"]
    threads: Param = 1
    nr_files: Param | None = None
    file_size: Param | None = None
    size_dist: Param | None = None
    size_sigma: Param | None = None
    files_per_dir: Param | None = None
    dup_share: Param = 0.05
    mutate_share: Param = 0.1
    mode: Param | None = None
    randseed: Param | None = None
    # `[[size, weight], ...]` is one value; a list of such lists is a sweep axis.
    size_buckets: list[Any] | None = None

    @field_validator("size_buckets")
    @classmethod
    def _buckets(cls, v: list[Any] | None) -> list[Any] | None:
        if v is None:
            return v
        for buckets in bucket_sweep(v):
            if not buckets:
                raise ValueError('is empty; write e.g. `[["16k", 7], ["1m", 3]]`')
            for pair in buckets:
                if not (isinstance(pair, list) and len(pair) == 2):
                    raise ValueError(
                        f"`{pair}` is not a [size, weight] pair; write e.g. "
                        '`[["16k", 7], ["1m", 3]]`'
                    )
                size, weight = pair
                parse_size(size)
                if isinstance(weight, bool) or not isinstance(weight, int | float) or weight <= 0:
                    raise ValueError(f"the weight of `{size}` must be a number above 0")
        return v

    @field_validator("set")
    @classmethod
    def _set(cls, v: Param) -> Param:
        for name in v if isinstance(v, list) else [v]:
            if name not in (*FILE_SETS, "custom"):
                raise ValueError(
                    f"`{name}` is not a file set; allowed: {', '.join(FILE_SETS)}, custom"
                )
        return v

    @field_validator("ops")
    @classmethod
    def _ops_once(cls, v: list[str]) -> list[str]:
        twice = sorted({op for op in v if v.count(op) > 1})
        if twice:
            raise ValueError(f"each op runs once per set; repeated: {', '.join(twice)}")
        return v

    @model_validator(mode="after")
    def _custom(self) -> FilesWorkloadSpec:
        sets = self.set if isinstance(self.set, list) else [self.set]
        if self.size_buckets is not None:
            if set(sets) != {"custom"}:
                raise ValueError('`size_buckets` describe a custom set: write `set = "custom"`')
            for key in ("file_size", "size_dist", "size_sigma"):
                if getattr(self, key) is not None:
                    raise ValueError(f"`{key}` cannot be combined with `size_buckets`")
            if self.nr_files is None:
                raise ValueError("a `custom` set needs `nr_files`")
        elif "custom" in sets and (self.nr_files is None or self.file_size is None):
            raise ValueError("a `custom` set needs `nr_files` and `file_size` (or `size_buckets`)")
        if self.source is not None and (not self.ops or self.ops[0] not in ("copy", "sync")):
            raise ValueError(
                "with `source`, the first op must be `copy` or `sync`: it brings the set to "
                "the target the other ops measure"
            )
        return self


PGBENCH_BUILTINS = ("tpcb-like", "simple-update", "select-only")


class PgbenchWorkloadSpec(SweepSpec):
    """A real PostgreSQL on the target, driven by pgbench: `pgbench -i -s scale`, then
    `clients` connections on `jobs` threads for `duration`. Lists are sweep axes."""

    kind: Literal["pgbench"]
    name: str | None = Field(None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$", max_length=64)
    targets: list[str] | None = Field(None, min_length=1)
    scale: Param = 10
    clients: Param = 4
    jobs: Param = 1
    duration: Param = "30s"
    builtin: Param = "tpcb-like"
    shared_buffers: Param = "128MB"
    synchronous_commit: Param = True

    @field_validator("scale", "clients", "jobs")
    @classmethod
    def _counts(cls, v: Param) -> Param:
        for x in v if isinstance(v, list) else [v]:
            if isinstance(x, bool) or not isinstance(x, int) or not 1 <= x <= 100_000:
                raise ValueError(f"`{x}` is not a count from 1 to 100000")
        return v

    @field_validator("builtin")
    @classmethod
    def _builtin(cls, v: Param) -> Param:
        for x in v if isinstance(v, list) else [v]:
            if x not in PGBENCH_BUILTINS:
                raise ValueError(
                    f"`{x}` is not a pgbench builtin; allowed: {', '.join(PGBENCH_BUILTINS)}"
                )
        return v

    @field_validator("shared_buffers")
    @classmethod
    def _pg_size(cls, v: Param) -> Param:
        for x in v if isinstance(v, list) else [v]:
            if not isinstance(x, str) or not re.fullmatch(r"\d+(kB|MB|GB)", x):
                raise ValueError(f"`{x}` is not a PostgreSQL size (write e.g. `128MB`)")
        return v

    @model_validator(mode="after")
    def _jobs_le_clients(self) -> PgbenchWorkloadSpec:
        clients = self.clients if isinstance(self.clients, list) else [self.clients]
        jobs = self.jobs if isinstance(self.jobs, list) else [self.jobs]
        if max(int(j) for j in jobs) > min(int(c) for c in clients):
            raise ValueError("pgbench needs `jobs` <= `clients` (each thread drives clients)")
        return self


class AppWorkloadSpec(SweepSpec):
    """An application I/O model in the engine (`kind = "oltp"` or `"mailstore"`): a data
    file and a log file under the target, `threads` users, sync I/O. Keys are the engine's
    (docs/job-keys.md) but `threads` and `runtime`; unset ones take the engine's default.
    Lists are sweep axes."""

    name: str | None = Field(None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$", max_length=64)
    targets: list[str] | None = Field(None, min_length=1)
    threads: Param = 8
    runtime: Param = "30s"
    ramp_time: Param = "0s"
    data_size: Param = "1GiB"
    log_size: Param = "64MiB"
    page_size: Param | None = None
    cache_size: Param | None = None
    checkpoint_interval: Param | None = None
    log_record_size: Param | None = None
    direct: Param | None = None
    randseed: Param | None = None
    interval: Param | None = None


class OltpWorkloadSpec(AppWorkloadSpec):
    """A database's I/O (TPC-E-like): 8 KiB page reads and updates, a log appended and
    fsynced per commit, checkpoints that flush dirty pages in bursts, read-ahead scans."""

    kind: Literal["oltp"]
    txn_reads: Param | None = None
    txn_writes: Param | None = None
    scan_share: Param | None = None
    scan_size: Param | None = None


class MailstoreWorkloadSpec(AppWorkloadSpec):
    """An Exchange-like mail store's I/O (JetStress): 32 KiB pages behind a buffer cache,
    an insert/delete/replace/read mix, lazy commits, background maintenance; each run
    gets a PASS/FAIL verdict against `read_lat_ms_max` and `log_lat_ms_max`."""

    STRUCTURED = {"op_mix": mix_sweep}

    kind: Literal["mailstore"]
    threads: Param = 12
    cache_size: Param | None = "64MiB"
    # `[insert, delete, replace, read]` is one value; a list of such lists is a sweep.
    op_mix: list[Any] | None = None
    lazy_commit_share: Param | None = None
    maintenance_rate: Param | None = None
    read_lat_ms_max: Param | None = None
    log_lat_ms_max: Param | None = None

    @field_validator("op_mix")
    @classmethod
    def _mix(cls, v: list[Any] | None) -> list[Any] | None:
        if v is None:
            return v
        for mix in mix_sweep(v):
            if (
                len(mix) != 4
                or any(isinstance(x, bool) or not isinstance(x, int | float) or x < 0 for x in mix)
                or not sum(mix) > 0
            ):
                raise ValueError(
                    f"`{mix}` is not an op mix: write four weights [insert, delete, replace, "
                    "read], e.g. `[40, 20, 5, 35]`"
                )
        return v


def _closest(name: str, names: list[str]) -> str:
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.5)
    return f"did you mean `{close[0]}`?" if close else "name one of the targets, or add it"


AnySpec = (
    WorkloadSpec | FilesWorkloadSpec | PgbenchWorkloadSpec | OltpWorkloadSpec
    | MailstoreWorkloadSpec
)  # fmt: skip
AnyWorkload = Annotated[
    Annotated[WorkloadSpec, Tag("block")]
    | Annotated[FilesWorkloadSpec, Tag("files")]
    | Annotated[PgbenchWorkloadSpec, Tag("pgbench")]
    | Annotated[OltpWorkloadSpec, Tag("oltp")]
    | Annotated[MailstoreWorkloadSpec, Tag("mailstore")],
    Discriminator(lambda d: d.get("kind", "block") if isinstance(d, dict) else d.kind),
]


class Study(Strict):
    name: str
    description: str | None = None
    repeat: int = Field(1, ge=1, le=100)
    # A fresh file system for every run (the default), or one per target kept for all.
    reuse: bool = False
    workdir: str | None = None
    target: list[TargetSpec] = Field(min_length=1)
    workload: list[AnyWorkload] = Field(min_length=1)

    # Where each key is written, for messages: set by `fslab.study.load.parse_study`
    # (a key path such as ("workload", 0, "bs") -> `study.toml:12: workload[0] (w).bs`).
    _locator: Callable[[tuple[int | str, ...]], str] | None = PrivateAttr(default=None)

    @property
    def locator(self) -> Callable[[tuple[int | str, ...]], str] | None:
        return self._locator

    @model_validator(mode="after")
    def _cross_references(self) -> Study:
        """Names that must be unique and names that must exist. Every problem is one line
        that starts with its key path (`workload[1].name: ...`), a hint on the line after
        it (`  hint: ...`): `fslab.study.load` turns each into a located problem."""
        problems: list[str] = []
        targets: dict[str, int] = {}
        for i, t in enumerate(self.target):
            if t.name in targets:
                problems += [
                    f"target[{i}].name: `{t.name}` is already the name of target[{targets[t.name]}]"
                    "; target names must be unique",
                    "  hint: rename one of them",
                ]
            targets.setdefault(t.name, i)
        names = list(targets)
        workloads: dict[str, int] = {}
        for i, w in enumerate(self.workload):
            if w.name is not None:
                if w.name in workloads:
                    problems += [
                        f"workload[{i}].name: `{w.name}` is already the name of "
                        f"workload[{workloads[w.name]}]; workload names must be unique "
                        "(the runs of one would replace the other's)",
                        "  hint: rename one of them",
                    ]
                workloads.setdefault(w.name, i)
            for name in w.targets or []:
                if name not in targets:
                    problems += [
                        f"workload[{i}].targets: no target `{safe_text(name)}`; the targets are "
                        f"{', '.join(names)}",
                        f"  hint: {_closest(name, names)}",
                    ]
            source = getattr(w, "source", None)
            if source is None:
                continue
            if source not in targets:
                problems += [
                    f"workload[{i}].source: no target `{safe_text(source)}`; the targets are "
                    f"{', '.join(names)}",
                    f"  hint: {_closest(source, names)}",
                ]
            elif source in (w.targets or []):
                problems.append(
                    f"workload[{i}].source: `{source}` cannot be both the source and a target"
                )
        if problems:
            raise ValueError("\n".join(problems))
        return self

    def targets_of(self, w: AnySpec) -> list[TargetSpec]:
        """The targets a workload runs on: its `targets`, else every target that is not
        some workload's `source` (a source disk is not a column unless named)."""
        if w.targets:
            return [t for t in self.target if t.name in w.targets]
        sources = {getattr(x, "source", None) for x in self.workload}
        return [t for t in self.target if t.name not in sources]

    def target_named(self, name: str) -> TargetSpec:
        return next(t for t in self.target if t.name == name)
