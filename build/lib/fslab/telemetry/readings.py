"""Reading the machine at one moment: the /proc files behind each telemetry sample.

A sample must be cheap enough to take ten times a second beside a benchmark without
becoming part of what it measures, and it must say whose CPU time is whose; so the reader
keeps /proc files open and skips unchanged process lines, and every process is sorted into
a group (this process, the workload, kernel threads, foreign) whose CPU is summed apart.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from fslab.telemetry.procfs import (
    CpuTimes,
    DiskCounters,
    MemInfo,
    Pressure,
    ProcStat,
    TelemetryError,
    parse_diskstats,
    parse_meminfo,
    parse_pid_stat,
    parse_pressure,
    parse_stat,
)

PSI_RESOURCES = ("cpu", "io", "memory")

_PROC = Path("/proc")
_CLK_TCK = os.sysconf("SC_CLK_TCK")

ProcessGroup = Literal["self", "workload", "kernel", "foreign"]
GROUPS: tuple[ProcessGroup, ...] = ("self", "workload", "kernel", "foreign")


@dataclass(frozen=True, slots=True)
class ProcSnapshot:
    """Every process at one moment, each in a group whose CPU is summed apart."""

    boot_ticks: int
    """CLOCK_BOOTTIME in clock ticks when the scan began, comparable with `starttime`."""
    procs: Mapping[int, ProcStat]
    group: Mapping[int, ProcessGroup]


def classify(
    procs: Mapping[int, ProcStat], self_pid: int, workload: set[int]
) -> dict[int, ProcessGroup]:
    """Kernel threads, this process (all its threads), the workload (the given pids and
    all their descendants, so an engine's or a database's children count as the
    workload even when they are not named) and everything else: foreign."""
    children: dict[int, list[int]] = {}
    for p in procs.values():
        children.setdefault(p.ppid, []).append(p.pid)
    group: dict[int, ProcessGroup] = {}
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


def cpu_ticks_by_process(prev: ProcSnapshot, cur: ProcSnapshot) -> dict[int, int]:
    """CPU ticks each process present now used since `prev`: the growth of its own and
    its reaped children's time, or all of it for one born in between (a process that
    runs short commands is charged with them)."""
    out: dict[int, int] = {}
    for pid, p in cur.procs.items():
        q = prev.procs.get(pid)
        if q is not None and q.starttime == p.starttime:
            out[pid] = p.cpu_ticks - q.cpu_ticks
        elif p.starttime >= prev.boot_ticks:
            out[pid] = p.cpu_ticks
    return out


def cpu_ticks_named(
    prev: ProcSnapshot, cur: ProcSnapshot, by_process: Mapping[int, int]
) -> dict[int, int]:
    """CPU ticks each process present now used since `prev`, for naming who used CPU:
    `by_process` less, for a parent that reaped a child meanwhile, what the previous
    scans had already counted of that child (a parent's children time grows by a reaped
    child's whole life; the child was named while it ran)."""
    out = dict(by_process)
    for pid, q in prev.procs.items():
        now = cur.procs.get(pid)
        if (now is None or now.starttime != q.starttime) and q.ppid in out:
            out[q.ppid] = max(0, out[q.ppid] - q.cpu_ticks)
    return out


def cpu_ticks_by_group(
    prev: ProcSnapshot, cur: ProcSnapshot, by_process: Mapping[int, int] | None = None
) -> dict[ProcessGroup, int]:
    """CPU ticks each group used between two snapshots (`by_process`: the snapshots'
    `cpu_ticks_by_process`, when the caller has it already).

    A process seen in both adds the growth of its own and its reaped children's time; one
    born in between adds all of it. One that vanished was reaped: its parent's children
    time grew by its whole life, so what was already counted of it is taken back when
    the parent is in the same group. Hence short-lived processes (a compiler, a test's
    subprocess) are counted although no scan ever sees them. The rest is lost: the last
    moments of a process reaped by another group, or by a parent that ignores SIGCHLD
    (the kernel then adds nothing to the parent, as for every kernel thread: kthreadd
    ignores it); a group's sum never goes below zero.
    """
    ticks: dict[ProcessGroup, int] = dict.fromkeys(GROUPS, 0)
    if by_process is None:
        by_process = cpu_ticks_by_process(prev, cur)
    for pid, n in by_process.items():
        ticks[cur.group[pid]] += n
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
