"""The telemetry sampler: what the machine did while a job ran.

A `Sampler` reads /proc/diskstats (the target's block devices and the disks under them),
/proc/stat, /proc/meminfo, /proc/pressure and every /proc/<pid>/stat in a daemon thread,
on a fixed monotonic schedule, and turns each pair of readings into one
`TelemetryPoint`. `stop()` returns a `Telemetry`: the series, and `summary()` with the
derived metrics (device IOPS and bytes, write and space amplification, CPU, page cache,
and whether something else on the machine spoiled the measurement)::

    devices = devices_under(["/dev/loop3"])          # loop3 and the disk holding its image
    with Sampler(devices, interval_s=1.0, workload_pids=lambda: {engine.pid}) as sampler:
        engine.wait()
    metrics = sampler.telemetry.summary(workload_written_bytes=report.written_bytes)
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import stat
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from fslab.telemetry.procfs import (
    SECTOR_BYTES,
    CpuTimes,
    DiskCounters,
    MemInfo,
    Pressure,
    ProcStat,
    TelemetryError,
    TelemetryUsageError,
    parse_diskstats,
    parse_meminfo,
    parse_pid_stat,
    parse_pressure,
    parse_stat,
)

MIN_INTERVAL_S = 0.1
MAX_INTERVAL_S = 60.0
PSI_RESOURCES = ("cpu", "io", "memory")

_PROC = Path("/proc")
_SYS_CLASS_BLOCK = Path("/sys/class/block")
_SYS_DEV_BLOCK = Path("/sys/dev/block")
_CLK_TCK = os.sysconf("SC_CLK_TCK")

Group = Literal["self", "workload", "kernel", "foreign"]
GROUPS: tuple[Group, ...] = ("self", "workload", "kernel", "foreign")


# --- which devices ----------------------------------------------------------------------


def kernel_name(device: str) -> str:
    """The kernel's name (`loop3`, `vda`, `dm-0`) of `device`: a name or a path to a block
    device node (`/dev/loop3`, `/dev/mapper/x`, `/dev/disk/by-id/...`)."""
    name: str | None = device
    if "/" in device:
        try:
            st = Path(device).stat()
        except OSError as e:
            raise TelemetryUsageError(f"{device}: {e.strerror}") from e
        if not stat.S_ISBLK(st.st_mode):
            raise TelemetryUsageError(f"{device}: not a block device")
        name = _name_of_devnum(st.st_rdev)
    if name is None or not (_SYS_CLASS_BLOCK / name).exists():
        raise TelemetryUsageError(
            f"{device}: not a block device the kernel knows",
            hint="name a device listed by `lsblk` (or in /proc/diskstats)",
        )
    return name


def _name_of_devnum(dev: int) -> str | None:
    path = _SYS_DEV_BLOCK / f"{os.major(dev)}:{os.minor(dev)}"
    return Path(os.path.realpath(path)).name if path.exists() else None


def _whole_disk(name: str) -> str:
    """The disk a partition is on (its parent in sysfs); any other device itself."""
    entry = _SYS_CLASS_BLOCK / name
    if (entry / "partition").exists():
        return Path(os.path.realpath(entry)).parent.name
    return name


def _slaves(name: str) -> list[str]:
    """The devices a dm or md device is built on."""
    try:
        return sorted(p.name for p in (_SYS_CLASS_BLOCK / name / "slaves").iterdir())
    except OSError:
        return []


def _mount_source_disk(st_dev: int) -> str | None:
    """The block device named as source of the mount whose device number is `st_dev`:
    btrfs gives its files an anonymous device number that sysfs does not know."""
    # Imported here: the targets package is heavier, and only this fallback needs it.
    from fslab.targets.mount import mountinfo

    for m in mountinfo():
        if m.rdev != st_dev or not m.source.startswith("/dev/"):
            continue
        try:
            st = Path(m.source).stat()
        except OSError:
            continue
        if stat.S_ISBLK(st.st_mode):
            return _name_of_devnum(st.st_rdev)
    return None


def backing_disk(name: str) -> str | None:
    """The whole disk holding the backing file of loop device `name`, or None: not a loop
    device, not attached, a deleted file, or a file on tmpfs, overlay or anything else
    without a block device."""
    try:
        text = (_SYS_CLASS_BLOCK / name / "loop" / "backing_file").read_text().rstrip("\n")
    except OSError:
        return None
    try:
        st_dev = Path(text.removesuffix(" (deleted)")).stat().st_dev
    except OSError:
        return None
    disk = _name_of_devnum(st_dev) or _mount_source_disk(st_dev)
    return _whole_disk(disk) if disk is not None else None


def _closure(start: Iterable[str], seen: set[str]) -> list[str]:
    """`start` and everything under it through dm/md slaves, in breadth-first order."""
    out: list[str] = []
    queue = [n for n in start if n not in seen]
    seen.update(queue)
    while queue:
        name = queue.pop(0)
        out.append(name)
        for s in _slaves(name):
            if s not in seen:
                seen.add(s)
                queue.append(s)
    return out


def devices_under(devices: Iterable[str]) -> list[str]:
    """The kernel names of the block devices to watch for a target on `devices` (every
    member of a multi-device file system): those devices, what they are built on (the
    slaves of a dm-crypt or md device), then the disks holding loop devices' backing
    files (themselves followed down, for an image on a loop-mounted file system). A
    backing file without a nameable disk (tmpfs) is skipped."""
    seen: set[str] = set()
    own = _closure([kernel_name(d) for d in devices], seen)
    backing: list[str] = []
    frontier = list(own)
    while frontier:
        disk = backing_disk(frontier.pop(0))
        if disk is not None and disk not in seen:
            found = _closure([disk], seen)
            backing += found
            frontier += found
    return own + backing


@dataclass(frozen=True, slots=True)
class DeviceRoles:
    """How the watched devices relate, for the sums of `Telemetry.summary`."""

    members: tuple[str, ...]
    """The bottom of the target's own stack (loop devices, disks): the summed I/O is
    what the target's storage did."""
    stacked: tuple[str, ...]
    """dm/md devices built on members: reported per device, not summed (their I/O is
    also the members' I/O)."""
    backing: tuple[str, ...]
    """Disks holding loop devices' backing files: reported apart, since they also carry
    the rest of the machine's I/O."""

    @property
    def all(self) -> tuple[str, ...]:
        return self.members + self.stacked + self.backing


def device_roles(names: Sequence[str]) -> DeviceRoles:
    """Sorts kernel names (as `devices_under` returns them) into their roles, from sysfs."""
    watched = set(names)
    backing: set[str] = set()
    frontier = list(names)
    while frontier:
        disk = backing_disk(frontier.pop(0))
        if disk is None:
            continue
        for n in _closure([disk], set()):
            if n in watched and n not in backing:
                backing.add(n)
                frontier.append(n)
    own = [n for n in names if n not in backing]
    stacked = {n for n in own if any(s in own for s in _slaves(n))}
    return DeviceRoles(
        members=tuple(n for n in own if n not in stacked),
        stacked=tuple(n for n in own if n in stacked),
        backing=tuple(n for n in names if n in backing),
    )


def statvfs_used_bytes(path: str | os.PathLike[str], *, sync: bool = False) -> int:
    """Space used on the file system holding `path`: (blocks - free blocks) x fragment
    size, file data and metadata alike. With `sync`, the file system is synced first
    (syncfs): btrfs updates its free space only when a transaction commits, and delayed
    allocation makes the count before writeback an estimate."""
    try:
        if sync:
            fd = os.open(path, os.O_RDONLY)
            try:
                libc = ctypes.CDLL(None, use_errno=True)
                if libc.syncfs(fd) != 0:
                    err = ctypes.get_errno()
                    raise OSError(err, os.strerror(err))
            finally:
                os.close(fd)
        st = os.statvfs(path)
    except OSError as e:
        raise TelemetryError(f"{os.fspath(path)}: cannot measure space used: {e}") from e
    return (st.f_blocks - st.f_bfree) * st.f_frsize


# --- readings ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ProcSnapshot:
    """Every process at one moment, each in a group whose CPU is summed apart."""

    boot_ticks: int
    """CLOCK_BOOTTIME in clock ticks when the scan began, comparable with `starttime`."""
    procs: Mapping[int, ProcStat]
    group: Mapping[int, Group]


def classify(procs: Mapping[int, ProcStat], self_pid: int, workload: set[int]) -> dict[int, Group]:
    """Kernel threads, this process (all its threads), the workload (the given pids and
    all their descendants, so an engine's or a database's children count as the
    workload even when they are not named) and everything else: foreign."""
    children: dict[int, list[int]] = {}
    for p in procs.values():
        children.setdefault(p.ppid, []).append(p.pid)
    group: dict[int, Group] = {}
    # This process named as the workload means its children (the engine it started):
    # it stays `self` itself.
    queue = [c for pid in workload if pid == self_pid for c in children.get(pid, [])]
    queue += [pid for pid in workload if pid in procs and pid != self_pid]
    while queue:
        pid = queue.pop()
        if pid not in group:
            group[pid] = "workload"
            queue += children.get(pid, [])
    for pid, p in procs.items():
        if p.is_kthread:
            group[pid] = "kernel"
        elif pid == self_pid:
            group[pid] = "self"
        else:
            group.setdefault(pid, "foreign")
    return group


def cpu_ticks_by_group(prev: ProcSnapshot, cur: ProcSnapshot) -> dict[Group, int]:
    """CPU ticks each group used between two snapshots.

    A process seen in both adds the growth of its own and its reaped children's time; one
    born in between adds all of it. One that vanished was reaped: its parent's children
    time grew by its whole life, so what was already counted of it is taken back when
    the parent is in the same group. Hence short-lived processes (a compiler, a test's
    subprocess) are counted although no scan ever sees them. The rest is lost: the last
    moments of a process reaped by another group, or by a parent that ignores SIGCHLD
    (the kernel then adds nothing to the parent, as for every kernel thread: kthreadd
    ignores it); a group's sum never goes below zero.
    """
    ticks: dict[Group, int] = dict.fromkeys(GROUPS, 0)
    for pid, p in cur.procs.items():
        q = prev.procs.get(pid)
        if q is not None and q.starttime == p.starttime:
            ticks[cur.group[pid]] += p.cpu_ticks - q.cpu_ticks
        elif p.starttime >= prev.boot_ticks:
            ticks[cur.group[pid]] += p.cpu_ticks
    for pid, q in prev.procs.items():
        now = cur.procs.get(pid)
        if now is not None and now.starttime == q.starttime:
            continue
        parent = cur.procs.get(q.ppid)
        parent_group = cur.group.get(q.ppid) if parent is not None else prev.group.get(q.ppid)
        group = prev.group[pid]
        if parent_group == group and group != "kernel":
            ticks[group] -= q.cpu_ticks
    return {g: max(t, 0) for g, t in ticks.items()}


@dataclass(frozen=True, slots=True)
class Sample:
    """One reading of everything, at monotonic time `t_s`."""

    t_s: float
    disks: Mapping[str, DiskCounters]
    cpu: CpuTimes
    cpu_count: int
    memory: MemInfo
    psi: Mapping[str, Pressure]
    procs: ProcSnapshot


_READ_CHUNK = 65536

# Files kept open by a ProcReader beyond which it opens and closes each time: a lab
# process must not run out of descriptors on a machine with thousands of processes.
MAX_OPEN_FILES = 512


def _pread_all(fd: int) -> bytes:
    """The whole of an open /proc file, read again from its start: procfs files show
    fresh contents at every read from offset 0, so they need not be opened again."""
    data = os.pread(fd, _READ_CHUNK, 0)
    if len(data) < _READ_CHUNK:
        return data
    chunks = [data]
    while chunk := os.pread(fd, _READ_CHUNK, _READ_CHUNK * len(chunks)):
        chunks.append(chunk)
    return b"".join(chunks)


class ProcReader:
    """Takes `Sample`s, cheaply enough for 10 a second: the /proc files stay open and are
    re-read with pread (opening one costs more than reading it), and a process whose
    stat line did not change since the last scan (most of them: they slept) is not
    parsed again. Close it when done."""

    def __init__(self, devices: Sequence[str], psi_resources: Sequence[str], self_pid: int) -> None:
        self.devices = tuple(devices)
        self.self_pid = self_pid
        self._fixed: dict[str, int] = {}
        self._psi = tuple(psi_resources)
        self._pid_fds: dict[str, int] = {}
        self._last: dict[str, tuple[bytes, ProcStat]] = {}
        try:
            for path in ("diskstats", "stat", "meminfo", *(f"pressure/{r}" for r in self._psi)):
                self._fixed[path] = os.open(f"/proc/{path}", os.O_RDONLY)
        except OSError as e:
            self.close()
            raise TelemetryError(f"cannot read /proc/{path}: {e.strerror}") from e

    def close(self) -> None:
        for fd in [*self._fixed.values(), *self._pid_fds.values()]:
            os.close(fd)
        self._fixed.clear()
        self._pid_fds.clear()
        self._last.clear()

    def __enter__(self) -> ProcReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _text(self, path: str) -> str:
        return _pread_all(self._fixed[path]).decode("ascii", "replace")

    def _stat_bytes(self, name: str) -> bytes | None:
        """/proc/<name>/stat, None when the process is gone. A kept descriptor of a
        process that ended fails (ESRCH), also when its pid was taken again since: the
        descriptor belongs to the old process; the new one is then opened afresh."""
        fd = self._pid_fds.get(name)
        if fd is not None:
            try:
                return os.pread(fd, 4096, 0)
            except OSError:
                del self._pid_fds[name]
                os.close(fd)
        try:
            fd = os.open(f"/proc/{name}/stat", os.O_RDONLY)
        except OSError:
            return None
        try:
            data = os.pread(fd, 4096, 0)
        except OSError:
            os.close(fd)
            return None
        if len(self._pid_fds) < MAX_OPEN_FILES:
            self._pid_fds[name] = fd
        else:
            os.close(fd)
        return data

    def processes(self) -> dict[int, ProcStat]:
        """/proc/<pid>/stat of every process. One that ends while it is read, or whose
        line cannot be parsed, is left out: its CPU goes uncounted rather than stop the
        sampler."""
        out: dict[int, ProcStat] = {}
        last: dict[str, tuple[bytes, ProcStat]] = {}
        # os.listdir: Path.iterdir would make a Path of each of hundreds of names.
        names = [n for n in os.listdir(_PROC) if n.isdigit()]  # noqa: PTH208
        for name in names:
            data = self._stat_bytes(name)
            if data is None:
                continue
            seen = self._last.get(name)
            if seen is not None and seen[0] == data:
                p = seen[1]
            else:
                try:
                    p = parse_pid_stat(data)
                except TelemetryError:
                    continue
            last[name] = (data, p)
            out[p.pid] = p
        alive = set(names)
        for name in [n for n in self._pid_fds if n not in alive]:
            os.close(self._pid_fds.pop(name))
        self._last = last
        return out

    def sample(self, workload: set[int]) -> Sample:
        t_s = time.monotonic()
        disks = parse_diskstats(self._text("diskstats"), self.devices)
        cpu = parse_stat(self._text("stat"))
        memory = parse_meminfo(self._text("meminfo"))
        psi = {r: parse_pressure(self._text(f"pressure/{r}"), r) for r in self._psi}
        boot_ticks = int(time.clock_gettime(time.CLOCK_BOOTTIME) * _CLK_TCK)
        procs = self.processes()
        return Sample(
            t_s=t_s,
            disks=disks,
            cpu=cpu.times,
            cpu_count=cpu.cpu_count,
            memory=memory,
            psi=psi,
            procs=ProcSnapshot(boot_ticks, procs, classify(procs, self.self_pid, workload)),
        )


# --- the series -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Thresholds:
    """When an interval counts as contaminated: something besides the workload took a
    share of the machine large enough to move the result (on this 2-core VM, foreign
    processes were seen to cut a result by 4x)."""

    foreign_cpu_pct: float = 10.0
    """CPU of processes not the workload's, % of one CPU. At 100 ms intervals the
    kernel's 10 ms tick makes one tick 10%: above 10% means at least two ticks."""
    steal_pct: float = 5.0
    """Time the hypervisor gave this VM's CPUs to others, % of all CPU time."""
    memory_pressure_pct: float = 10.0
    """Share of the interval some task waited for memory (PSI memory `some`)."""


def _rate(n: float, dt_s: float) -> float:
    return n / dt_s if dt_s > 0 else 0.0


@dataclass(frozen=True, slots=True)
class DeviceInterval:
    """What one block device did during one interval."""

    reads: int
    writes: int
    read_bytes: int
    written_bytes: int
    read_time_ms: int
    write_time_ms: int
    read_iops: float
    write_iops: float
    read_bytes_per_s: float
    write_bytes_per_s: float
    util_pct: float
    """Share of the interval with I/O in flight."""
    queue_depth: float
    """Average I/Os in flight."""

    @classmethod
    def between(cls, a: DiskCounters, b: DiskCounters, dt_s: float) -> DeviceInterval | None:
        """None when a counter went back: the device was removed and made again."""
        d = [
            b.reads - a.reads,
            b.writes - a.writes,
            b.sectors_read - a.sectors_read,
            b.sectors_written - a.sectors_written,
            b.read_time_ms - a.read_time_ms,
            b.write_time_ms - a.write_time_ms,
            b.io_time_ms - a.io_time_ms,
            b.weighted_io_time_ms - a.weighted_io_time_ms,
        ]
        if min(d) < 0:
            return None
        reads, writes, sectors_read, sectors_written, rt, wt, io_ms, weighted_ms = d
        return cls(
            reads=reads,
            writes=writes,
            read_bytes=sectors_read * SECTOR_BYTES,
            written_bytes=sectors_written * SECTOR_BYTES,
            read_time_ms=rt,
            write_time_ms=wt,
            read_iops=_rate(reads, dt_s),
            write_iops=_rate(writes, dt_s),
            read_bytes_per_s=_rate(sectors_read * SECTOR_BYTES, dt_s),
            write_bytes_per_s=_rate(sectors_written * SECTOR_BYTES, dt_s),
            util_pct=min(100.0, _rate(io_ms / 10, dt_s)),
            queue_depth=_rate(weighted_ms / 1000, dt_s),
        )


@dataclass(frozen=True, slots=True)
class PsiInterval:
    """Pressure on one resource: the kernel's 10 s averages at the end of the interval,
    and the stall time within the interval itself (exact, where avg10 lags by seconds)."""

    some_avg10: float
    some_stall_us: int
    some_pct: float
    full_avg10: float | None
    full_stall_us: int | None
    full_pct: float | None

    @classmethod
    def between(cls, a: Pressure, b: Pressure, dt_s: float) -> PsiInterval:
        some_us = max(0, b.some.total_us - a.some.total_us)
        full_us = (
            max(0, b.full.total_us - a.full.total_us)
            if a.full is not None and b.full is not None
            else None
        )
        return cls(
            some_avg10=b.some.avg10,
            some_stall_us=some_us,
            some_pct=_rate(some_us / 1e4, dt_s),
            full_avg10=b.full.avg10 if b.full is not None else None,
            full_stall_us=full_us,
            full_pct=_rate(full_us / 1e4, dt_s) if full_us is not None else None,
        )


@dataclass(frozen=True, slots=True)
class TelemetryPoint:
    """One interval. CPU busy/iowait/steal are % of all CPUs' time; the per-process
    figures (foreign, workload, kernel threads) are % of one CPU, as `top` shows them."""

    t_s: float
    """End of the interval, seconds after the first sample."""
    dt_s: float
    devices: Mapping[str, DeviceInterval]
    """Devices present at both ends of the interval."""
    cpu_busy_pct: float
    cpu_iowait_pct: float
    cpu_steal_pct: float
    foreign_cpu_pct: float
    workload_cpu_pct: float
    kernel_cpu_pct: float
    """Kernel threads: writeback, loop and dm-crypt workers, btrfs checksums; the
    workload's I/O or another's, it cannot be told apart."""
    cached_bytes: int
    dirty_bytes: int
    writeback_bytes: int
    available_bytes: int | None
    psi: Mapping[str, PsiInterval]
    """By resource (`cpu`, `io`, `memory`); empty without /proc/pressure."""
    contaminated: bool
    reasons: tuple[str, ...]
    """Why contaminated: `foreign_cpu`, `steal`, `memory_pressure`."""


def make_point(prev: Sample, cur: Sample, t0_s: float, thresholds: Thresholds) -> TelemetryPoint:
    dt_s = cur.t_s - prev.t_s
    devices: dict[str, DeviceInterval] = {}
    for name, b in cur.disks.items():
        a = prev.disks.get(name)
        d = DeviceInterval.between(a, b, dt_s) if a is not None else None
        if d is not None:
            devices[name] = d
    c0, c1 = prev.cpu, cur.cpu
    total = c1.total - c0.total

    def cpu_pct(ticks: int) -> float:
        return 100.0 * ticks / total if total > 0 else 0.0

    proc_dt_s = (cur.procs.boot_ticks - prev.procs.boot_ticks) / _CLK_TCK
    ticks = cpu_ticks_by_group(prev.procs, cur.procs)

    def one_cpu_pct(group: Group) -> float:
        # The scans' own tick-resolution clock, not t_s: their ticks are what is divided.
        return 100.0 * _rate(ticks[group] / _CLK_TCK, proc_dt_s or dt_s)

    psi = {r: PsiInterval.between(prev.psi[r], cur.psi[r], dt_s) for r in cur.psi}
    foreign = one_cpu_pct("foreign")
    steal = cpu_pct(c1.steal - c0.steal)
    reasons: list[str] = []
    if foreign > thresholds.foreign_cpu_pct:
        reasons.append("foreign_cpu")
    if steal > thresholds.steal_pct:
        reasons.append("steal")
    # The interval's own stall share, not avg10: that one would keep flagging intervals
    # for ten seconds and more after the pressure ended.
    if "memory" in psi and psi["memory"].some_pct > thresholds.memory_pressure_pct:
        reasons.append("memory_pressure")
    return TelemetryPoint(
        t_s=cur.t_s - t0_s,
        dt_s=dt_s,
        devices=devices,
        cpu_busy_pct=cpu_pct(c1.busy - c0.busy),
        cpu_iowait_pct=cpu_pct(c1.iowait - c0.iowait),
        cpu_steal_pct=steal,
        foreign_cpu_pct=foreign,
        workload_cpu_pct=one_cpu_pct("workload"),
        kernel_cpu_pct=one_cpu_pct("kernel"),
        cached_bytes=cur.memory.cached_bytes,
        dirty_bytes=cur.memory.dirty_bytes,
        writeback_bytes=cur.memory.writeback_bytes,
        available_bytes=cur.memory.available_bytes,
        psi=psi,
        contaminated=bool(reasons),
        reasons=tuple(reasons),
    )


def _device_value(p: TelemetryPoint, name: str, attr: str) -> float:
    """A figure of device `name` in interval `p`; 0 when the device was missing then."""
    d = p.devices.get(name)
    return float(getattr(d, attr)) if d is not None else 0.0


_REASON_TEXT = {
    "foreign_cpu": "CPU used by other processes",
    "steal": "CPU steal time",
    "memory_pressure": "memory pressure",
}

Summary = dict[str, float | int | None]


@dataclass(frozen=True)
class Telemetry:
    """What the machine did during one job: the series and its derived metrics."""

    interval_s: float
    series: list[TelemetryPoint]
    roles: DeviceRoles
    start_memory: MemInfo
    """/proc/meminfo at the first sample (the series holds the end of each interval)."""
    cpu_count: int
    thresholds: Thresholds
    sampler_cpu_s: float
    """CPU time the sampler itself used, on its thread and for the first and last sample."""
    started_unix_s: float

    @property
    def duration_s(self) -> float:
        return self.series[-1].t_s if self.series else 0.0

    def _peak_points(self) -> list[TelemetryPoint]:
        # The last interval ends at stop(), often just after a scheduled sample: a few
        # I/Os in a few milliseconds would make a peak rate no one saw. Peaks use the
        # intervals at least half the nominal length (all of them if none is).
        full = [p for p in self.series if p.dt_s >= self.interval_s / 2]
        return full or list(self.series)

    def _device_totals(self, names: Iterable[str]) -> dict[str, int]:
        """Counts over the whole run, summed over the devices `names`."""
        names = list(names)
        totals = dict.fromkeys(
            ("reads", "writes", "read_bytes", "written_bytes", "read_time_ms", "write_time_ms"),
            0,
        )
        for p in self.series:
            for n in names:
                d = p.devices.get(n)
                if d is not None:
                    for k in totals:
                        totals[k] += getattr(d, k)
        return totals

    def _peak(self, value: Callable[[TelemetryPoint], float]) -> float | None:
        points = self._peak_points()
        return max(value(p) for p in points) if points else None

    def _avg(self, value: Callable[[TelemetryPoint], float]) -> float | None:
        """Time-weighted mean over the intervals."""
        dt = sum(p.dt_s for p in self.series)
        return sum(value(p) * p.dt_s for p in self.series) / dt if dt > 0 else None

    def summary(
        self,
        workload_written_bytes: int | None = None,
        space_used_before: int | None = None,
        space_used_after: int | None = None,
        logical_bytes: int | None = None,
    ) -> Summary:
        """The derived metrics, flat, with units in the names. Device figures without a
        prefix are summed over the target's members (`roles.members`); `backing_*` over
        the disks holding loop images (which also carry the rest of the machine's I/O);
        `device.<name>.*` are per device. Rates are per second, averages are over the
        whole run, peaks are the highest interval (so they depend on `interval_s`).
        A metric that cannot be computed (nothing written, no baseline given) is None.
        """
        out: Summary = {
            "interval_s": self.interval_s,
            "duration_s": self.duration_s,
            "intervals": len(self.series),
        }
        duration = self.duration_s

        def members_sum(p: TelemetryPoint, attr: str) -> float:
            return sum(_device_value(p, n, attr) for n in self.roles.members)

        t = self._device_totals(self.roles.members)
        out["read_ios"] = t["reads"]
        out["write_ios"] = t["writes"]
        out["read_bytes"] = t["read_bytes"]
        out["written_bytes"] = t["written_bytes"]
        out["read_iops_avg"] = _rate(t["reads"], duration)
        out["write_iops_avg"] = _rate(t["writes"], duration)
        out["iops_avg"] = _rate(t["reads"] + t["writes"], duration)
        out["read_iops_peak"] = self._peak(lambda p: members_sum(p, "read_iops"))
        out["write_iops_peak"] = self._peak(lambda p: members_sum(p, "write_iops"))
        out["iops_peak"] = self._peak(
            lambda p: members_sum(p, "read_iops") + members_sum(p, "write_iops")
        )
        out["read_bytes_per_s_avg"] = _rate(t["read_bytes"], duration)
        out["write_bytes_per_s_avg"] = _rate(t["written_bytes"], duration)
        out["read_bytes_per_s_peak"] = self._peak(lambda p: members_sum(p, "read_bytes_per_s"))
        out["write_bytes_per_s_peak"] = self._peak(lambda p: members_sum(p, "write_bytes_per_s"))
        out["read_io_size_bytes"] = t["read_bytes"] / t["reads"] if t["reads"] else None
        out["write_io_size_bytes"] = t["written_bytes"] / t["writes"] if t["writes"] else None
        out["read_latency_ms_avg"] = t["read_time_ms"] / t["reads"] if t["reads"] else None
        out["write_latency_ms_avg"] = t["write_time_ms"] / t["writes"] if t["writes"] else None
        out["read_write_ratio"] = t["reads"] / t["writes"] if t["writes"] else None
        out["read_write_bytes_ratio"] = (
            t["read_bytes"] / t["written_bytes"] if t["written_bytes"] else None
        )
        out["write_amplification"] = (
            t["written_bytes"] / workload_written_bytes if workload_written_bytes else None
        )
        if self.roles.backing:
            b = self._device_totals(self.roles.backing)
            out["backing_read_bytes"] = b["read_bytes"]
            out["backing_written_bytes"] = b["written_bytes"]
        else:
            out["backing_read_bytes"] = out["backing_written_bytes"] = None
        for name in self.roles.all:
            d = self._device_totals([name])
            prefix = f"device.{name}."
            out[prefix + "read_ios"] = d["reads"]
            out[prefix + "write_ios"] = d["writes"]
            out[prefix + "read_bytes"] = d["read_bytes"]
            out[prefix + "written_bytes"] = d["written_bytes"]

            def iops(p: TelemetryPoint, n: str = name) -> float:
                return _device_value(p, n, "read_iops") + _device_value(p, n, "write_iops")

            def util(p: TelemetryPoint, n: str = name) -> float:
                return _device_value(p, n, "util_pct")

            out[prefix + "iops_peak"] = self._peak(iops)
            out[prefix + "util_pct_avg"] = self._avg(util)

        out["cpu_busy_pct_avg"] = self._avg(lambda p: p.cpu_busy_pct)
        out["cpu_busy_pct_peak"] = self._peak(lambda p: p.cpu_busy_pct)
        out["cpu_iowait_pct_avg"] = self._avg(lambda p: p.cpu_iowait_pct)
        out["cpu_steal_pct_avg"] = self._avg(lambda p: p.cpu_steal_pct)
        out["cpu_steal_pct_peak"] = self._peak(lambda p: p.cpu_steal_pct)
        out["foreign_cpu_pct_avg"] = self._avg(lambda p: p.foreign_cpu_pct)
        out["foreign_cpu_pct_peak"] = self._peak(lambda p: p.foreign_cpu_pct)
        out["workload_cpu_pct_avg"] = self._avg(lambda p: p.workload_cpu_pct)
        out["workload_cpu_pct_peak"] = self._peak(lambda p: p.workload_cpu_pct)
        out["kernel_cpu_pct_avg"] = self._avg(lambda p: p.kernel_cpu_pct)

        last = self.series[-1] if self.series else None
        start = self.start_memory
        out["cached_growth_bytes"] = last.cached_bytes - start.cached_bytes if last else None
        out["dirty_peak_bytes"] = max([start.dirty_bytes, *(p.dirty_bytes for p in self.series)])
        out["writeback_peak_bytes"] = max(
            [start.writeback_bytes, *(p.writeback_bytes for p in self.series)]
        )
        available = [
            a
            for a in [start.available_bytes, *(p.available_bytes for p in self.series)]
            if a is not None
        ]
        out["available_min_bytes"] = min(available) if available else None

        for r in PSI_RESOURCES:
            if last is None or r not in last.psi:
                continue

            def some(p: TelemetryPoint, r: str = r) -> float:
                return p.psi[r].some_pct if r in p.psi else 0.0

            def full(p: TelemetryPoint, r: str = r) -> float:
                return (p.psi[r].full_pct or 0.0) if r in p.psi else 0.0

            out[f"psi_{r}_some_pct_avg"] = self._avg(some)
            out[f"psi_{r}_some_pct_peak"] = self._peak(some)
            if last.psi[r].full_pct is not None:
                out[f"psi_{r}_full_pct_avg"] = self._avg(full)

        used: int | None = None
        if space_used_before is not None and space_used_after is not None:
            used = space_used_after - space_used_before
        out["space_used_bytes"] = used
        out["space_amplification"] = (
            used / logical_bytes if used is not None and logical_bytes else None
        )

        out["contaminated"] = int(any(p.contaminated for p in self.series))
        out["contaminated_intervals"] = sum(p.contaminated for p in self.series)
        for reason in _REASON_TEXT:
            out[f"contaminated_{reason}_intervals"] = sum(reason in p.reasons for p in self.series)
        out["sampler_cpu_pct"] = 100.0 * _rate(self.sampler_cpu_s, duration)
        return out

    def contamination(self) -> list[str]:
        """Why the run is contaminated, one line a reason, for people; empty when clean."""
        n = len(self.series)
        peaks: dict[str, tuple[Callable[[TelemetryPoint], float], float, str]] = {
            "foreign_cpu": (
                lambda p: p.foreign_cpu_pct,
                self.thresholds.foreign_cpu_pct,
                "of a CPU",
            ),
            "steal": (lambda p: p.cpu_steal_pct, self.thresholds.steal_pct, "of CPU time"),
            "memory_pressure": (
                lambda p: p.psi["memory"].some_pct if "memory" in p.psi else 0.0,
                self.thresholds.memory_pressure_pct,
                "of the time stalled",
            ),
        }
        out: list[str] = []
        for reason, (value, limit, unit) in peaks.items():
            hit = [p for p in self.series if reason in p.reasons]
            if hit:
                out.append(
                    f"{_REASON_TEXT[reason]} above {limit:g}% {unit} in {len(hit)} of {n} "
                    f"intervals (peak {max(value(p) for p in hit):.0f}%)"
                )
        return out

    def to_dict(self) -> dict[str, Any]:
        """Plain data (JSON-ready); `from_dict` reads it back."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Telemetry:
        def point(d: Mapping[str, Any]) -> TelemetryPoint:
            return TelemetryPoint(
                **{
                    **d,
                    "devices": {k: DeviceInterval(**v) for k, v in d["devices"].items()},
                    "psi": {k: PsiInterval(**v) for k, v in d["psi"].items()},
                    "reasons": tuple(d["reasons"]),
                }
            )

        roles = data["roles"]
        return cls(
            interval_s=data["interval_s"],
            series=[point(p) for p in data["series"]],
            roles=DeviceRoles(
                members=tuple(roles["members"]),
                stacked=tuple(roles["stacked"]),
                backing=tuple(roles["backing"]),
            ),
            start_memory=MemInfo(**data["start_memory"]),
            cpu_count=data["cpu_count"],
            thresholds=Thresholds(**data["thresholds"]),
            sampler_cpu_s=data["sampler_cpu_s"],
            started_unix_s=data["started_unix_s"],
        )


# --- the sampler ------------------------------------------------------------------------


class Sampler:
    """Samples telemetry in a daemon thread from `start()` to `stop()`, or over a `with`
    block (then read `telemetry`).

    `devices` are the block devices to watch (see `devices_under`); `workload_pids`, when
    given, is called at each sample for the pids of the workload (the engine; their
    descendants are included), whose CPU is then not foreign; it runs on the sampler's
    thread, so let it only read (a Popen's pid, a set replaced whole). The first sample
    is taken in `start()` before it returns and the last in `stop()`, so a job run
    between them is wholly inside the series; the ones in between follow a fixed
    schedule on the monotonic clock, skipping slots rather than drifting when a sample
    comes late.
    """

    def __init__(
        self,
        devices: list[str],
        interval_s: float = 1.0,
        workload_pids: Callable[[], set[int]] | None = None,
        *,
        thresholds: Thresholds | None = None,
    ) -> None:
        if not (math.isfinite(interval_s) and MIN_INTERVAL_S <= interval_s <= MAX_INTERVAL_S):
            raise TelemetryUsageError(
                f"telemetry interval {interval_s} s is out of range",
                hint=f"choose {MIN_INTERVAL_S:g} to {MAX_INTERVAL_S:g} s",
            )
        names = list(dict.fromkeys(kernel_name(d) for d in devices))
        self.interval_s = float(interval_s)
        self.roles = device_roles(names)
        self.thresholds = thresholds or Thresholds()
        self._workload_pids = workload_pids
        self._psi = [r for r in PSI_RESOURCES if (_PROC / "pressure" / r).exists()]
        self._self_pid = os.getpid()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._series: list[TelemetryPoint] = []
        self._reader: ProcReader | None = None
        self._first: Sample | None = None
        self._prev: Sample | None = None
        self._cpu_s = 0.0
        self._started_unix_s = 0.0
        self._result: Telemetry | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @property
    def telemetry(self) -> Telemetry:
        """The result, once stopped."""
        if self._result is None:
            raise TelemetryUsageError("the telemetry sampler has not been stopped yet")
        return self._result

    def _sample(self) -> None:
        """Takes one sample and appends the interval it closes; the caller's thread CPU
        time is added to the sampler's cost."""
        cpu0 = time.thread_time()
        assert self._reader is not None
        workload = self._workload_pids() if self._workload_pids is not None else set()
        s = self._reader.sample(workload)
        if self._prev is None:
            missing = [d for d in self.roles.all if d not in s.disks]
            if missing:
                raise TelemetryUsageError(
                    f"not in /proc/diskstats: {', '.join(missing)}",
                    hint="the kernel keeps no I/O counters for these devices",
                )
            self._first = s
        else:
            assert self._first is not None
            self._series.append(make_point(self._prev, s, self._first.t_s, self.thresholds))
        self._prev = s
        self._cpu_s += time.thread_time() - cpu0

    def _run(self) -> None:
        assert self._first is not None
        t0 = self._first.t_s
        k = 1
        try:
            while not self._stop.wait(max(0.0, t0 + k * self.interval_s - time.monotonic())):
                self._sample()
                # Next slot on the schedule after now: late samples skip, never drift.
                k = max(k + 1, math.floor((time.monotonic() - t0) / self.interval_s) + 1)
        except BaseException as e:  # re-raised by stop(), in the caller's thread
            self._error = e

    def start(self) -> Sampler:
        if self._thread is not None or self._result is not None:
            raise TelemetryUsageError("a telemetry sampler can be started only once")
        self._started_unix_s = time.time()
        self._reader = ProcReader(self.roles.all, self._psi, self._self_pid)
        try:
            self._sample()
        except BaseException:
            self._reader.close()
            raise
        self._thread = threading.Thread(target=self._run, name="fslab-telemetry", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> Telemetry:
        """Stops sampling after a last sample and returns the telemetry; again, returns
        the same. Raises `TelemetryError` when sampling failed."""
        if self._result is not None:
            return self._result
        if self._thread is None:
            raise TelemetryUsageError("the telemetry sampler was not started")
        self._stop.set()
        self._thread.join()
        assert self._reader is not None
        try:
            if self._error is None:
                self._sample()
        except BaseException as e:
            self._error = e
        finally:
            self._reader.close()
        if self._error is not None:
            err = self._error
            if isinstance(err, TelemetryError):
                raise err
            raise TelemetryError(f"telemetry sampling failed: {err!r}") from err
        assert self._first is not None
        self._result = Telemetry(
            interval_s=self.interval_s,
            series=list(self._series),
            roles=self.roles,
            start_memory=self._first.memory,
            cpu_count=self._first.cpu_count,
            thresholds=self.thresholds,
            sampler_cpu_s=self._cpu_s,
            started_unix_s=self._started_unix_s,
        )
        return self._result

    def __enter__(self) -> Sampler:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc is None:
            self.stop()
        else:
            # The block's own error matters more than one of the sampler's.
            with contextlib.suppress(TelemetryError):
                self.stop()
