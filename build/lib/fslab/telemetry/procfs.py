"""Parsers for the /proc files the telemetry sampler reads.

Each parser takes the file's text, so that it can be tested on fixed strings, and returns
the kernel's cumulative counters unchanged: the sampler subtracts two readings. The
formats are those of Documentation/admin-guide/iostats.rst, filesystems/proc.rst and
accounting/psi.rst in the kernel tree.
"""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass

from fslab.errors import ExitStatus, FslabError

SECTOR_BYTES = 512
"""/proc/diskstats counts 512-byte sectors whatever the device's own sector size."""

_KTHREAD_FLAG = 0x00200000
"""PF_KTHREAD in include/linux/sched.h: the process is a kernel thread."""


class TelemetryError(FslabError):
    """Telemetry could not be read: a /proc file the sampler needs is missing or not in a
    format it knows, or the sampling thread failed."""


class TelemetryUsageError(TelemetryError, ValueError):
    """A sampler asked for something impossible: an interval out of range, a device the
    kernel does not know."""

    exit_status = ExitStatus.USAGE


@dataclass(frozen=True, slots=True)
class DiskCounters:
    """One line of /proc/diskstats: cumulative since the device appeared.

    The discard fields came with Linux 4.18 and the flush fields with 5.5; they are None
    on kernels that do not print them.
    """

    reads: int
    reads_merged: int
    sectors_read: int
    read_time_ms: int
    writes: int
    writes_merged: int
    sectors_written: int
    write_time_ms: int
    in_flight: int
    """Not cumulative: I/Os in flight at the moment of reading."""
    io_time_ms: int
    """Time the device had at least one I/O in flight (its utilisation)."""
    weighted_io_time_ms: int
    """Sum over I/Os of the time each was in flight (average queue depth x time)."""
    discards: int | None = None
    discards_merged: int | None = None
    sectors_discarded: int | None = None
    discard_time_ms: int | None = None
    flushes: int | None = None
    flush_time_ms: int | None = None

    @property
    def read_bytes(self) -> int:
        return self.sectors_read * SECTOR_BYTES

    @property
    def written_bytes(self) -> int:
        return self.sectors_written * SECTOR_BYTES


def parse_diskstats(text: str, names: Container[str] | None = None) -> dict[str, DiskCounters]:
    """Counters by kernel name (`vda`, `loop3`, `dm-0`), of the devices in `names` only
    when given.

    Lines have 14 fields (Linux < 4.18), 18 (discards) or 20 (flushes); fields a newer
    kernel may add after those are ignored.
    """
    out: dict[str, DiskCounters] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        fields = line.split()
        if not fields or (names is not None and len(fields) > 2 and fields[2] not in names):
            continue
        if len(fields) < 14:
            raise TelemetryError(
                f"/proc/diskstats: line {lineno}: expected at least 14 fields, found {len(fields)}"
            )
        try:
            n = [int(f) for f in fields[3:20]]
        except ValueError as e:
            raise TelemetryError(f"/proc/diskstats: line {lineno}: {e}") from e
        extra: list[int | None] = [*n[11:], *([None] * (17 - len(n)))]
        out[fields[2]] = DiskCounters(*n[:11], *extra)
    return out


@dataclass(frozen=True, slots=True)
class CpuTimes:
    """The aggregate `cpu` line of /proc/stat, in clock ticks (USER_HZ), all CPUs summed.

    guest and guest_nice are left out: the kernel already counts them in user and nice.
    """

    user: int
    nice: int
    system: int
    idle: int
    iowait: int
    irq: int
    softirq: int
    steal: int

    @property
    def busy(self) -> int:
        """Ticks spent running something. Steal is not busy: the hypervisor ran another
        guest then, and iowait is idle time with I/O outstanding."""
        return self.user + self.nice + self.system + self.irq + self.softirq

    @property
    def total(self) -> int:
        return self.busy + self.idle + self.iowait + self.steal


@dataclass(frozen=True, slots=True)
class CpuStat:
    times: CpuTimes
    cpu_count: int
    """CPUs online: the number of `cpuN` lines."""


def parse_stat(text: str) -> CpuStat:
    """The `cpu` line and the number of `cpuN` lines of /proc/stat."""
    times: CpuTimes | None = None
    count = 0
    for line in text.splitlines():
        if not line.startswith("cpu"):
            continue
        name, *values = line.split()
        if name == "cpu":
            try:
                ticks = [int(v) for v in values[:8]]
            except ValueError as e:
                raise TelemetryError(f"/proc/stat: cpu line: {e}") from e
            if len(ticks) < 4:
                raise TelemetryError(
                    f"/proc/stat: cpu line: expected at least 4 fields, found {len(ticks)}"
                )
            # iowait, irq, softirq and steal came one by one in Linux 2.5/2.6.
            times = CpuTimes(*ticks, *([0] * (8 - len(ticks))))
        else:
            count += 1
    if times is None:
        raise TelemetryError("/proc/stat: no `cpu` line")
    return CpuStat(times=times, cpu_count=max(count, 1))


@dataclass(frozen=True, slots=True)
class MemInfo:
    """The page-cache and memory figures of /proc/meminfo, in bytes."""

    cached_bytes: int
    dirty_bytes: int
    writeback_bytes: int
    available_bytes: int | None
    """MemAvailable (Linux >= 3.14), None before."""


def parse_meminfo_fields(text: str) -> dict[str, int]:
    """Every `Key: value [kB]` line; values with a kB unit are turned into bytes, the
    others (HugePages_Total, ...) are counts and stay as they are."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        key, sep, rest = line.partition(":")
        if not sep:
            continue
        value, *unit = rest.split()
        try:
            n = int(value)
        except ValueError as e:
            raise TelemetryError(f"/proc/meminfo: {key}: {e}") from e
        out[key.strip()] = n * 1024 if unit == ["kB"] else n
    return out


def parse_meminfo(text: str) -> MemInfo:
    fields = parse_meminfo_fields(text)
    missing = [k for k in ("Cached", "Dirty", "Writeback") if k not in fields]
    if missing:
        raise TelemetryError(f"/proc/meminfo: no {', '.join(missing)}")
    return MemInfo(
        cached_bytes=fields["Cached"],
        dirty_bytes=fields["Dirty"],
        writeback_bytes=fields["Writeback"],
        available_bytes=fields.get("MemAvailable"),
    )


@dataclass(frozen=True, slots=True)
class PressureLine:
    """One line of a /proc/pressure file: share of time (%) that some (or all) non-idle
    tasks were stalled on the resource, averaged over 10/60/300 s, and the cumulative
    stall time."""

    avg10: float
    avg60: float
    avg300: float
    total_us: int


@dataclass(frozen=True, slots=True)
class Pressure:
    some: PressureLine
    full: PressureLine | None
    """Absent for `cpu` before Linux 5.13 (and meaningless there at system level)."""


def parse_pressure(text: str, name: str = "pressure") -> Pressure:
    """/proc/pressure/{cpu,io,memory}; `name` only labels errors."""
    lines: dict[str, PressureLine] = {}
    for line in text.splitlines():
        kind, *pairs = line.split()
        if not pairs:
            continue
        try:
            values = dict(p.split("=", 1) for p in pairs)
            lines[kind] = PressureLine(
                avg10=float(values["avg10"]),
                avg60=float(values["avg60"]),
                avg300=float(values["avg300"]),
                total_us=int(values["total"]),
            )
        except (KeyError, ValueError) as e:
            raise TelemetryError(f"/proc/pressure/{name}: bad line {line!r}") from e
    if "some" not in lines:
        raise TelemetryError(f"/proc/pressure/{name}: no `some` line")
    return Pressure(some=lines["some"], full=lines.get("full"))


@dataclass(frozen=True, slots=True)
class ProcStat:
    """What the sampler needs of /proc/<pid>/stat (proc(5)); times in clock ticks, for
    all threads of the process together."""

    pid: int
    comm: str
    ppid: int
    flags: int
    utime: int
    stime: int
    cutime: int
    """CPU of the children this process has waited for, with their own waited-for
    children: it grows when a child is reaped, by that child's whole life."""
    cstime: int
    starttime: int
    """Ticks after boot; with `pid` it names the process (pids are reused)."""

    @property
    def is_kthread(self) -> bool:
        return bool(self.flags & _KTHREAD_FLAG)

    @property
    def cpu_ticks(self) -> int:
        """Own CPU plus that of reaped children."""
        return self.utime + self.stime + self.cutime + self.cstime


def parse_pid_stat(data: str | bytes) -> ProcStat:
    """One /proc/<pid>/stat. The command name is between the first `(` and the *last*
    `)`: it may itself hold spaces and parentheses."""
    raw = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
    head, sep, tail = raw.rpartition(b")")
    pid_text, _, comm = head.partition(b" (")
    rest = tail.split()
    if not sep or len(rest) < 20:
        raise TelemetryError(f"/proc/<pid>/stat: cannot parse {raw[:80]!r}")
    try:
        # `rest[0]` is field 3 (state) of proc(5); field k is rest[k - 3].
        return ProcStat(
            pid=int(pid_text),
            comm=comm.decode("utf-8", "replace"),
            ppid=int(rest[1]),
            flags=int(rest[6]),
            utime=int(rest[11]),
            stime=int(rest[12]),
            cutime=int(rest[13]),
            cstime=int(rest[14]),
            starttime=int(rest[19]),
        )
    except ValueError as e:
        raise TelemetryError(f"/proc/<pid>/stat: cannot parse {raw[:80]!r}") from e
