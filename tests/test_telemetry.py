"""The telemetry sampler: /proc parsers on fixed text, the CPU accounting and the derived
metrics on made-up readings, and the sampler itself on this machine: direct writes to
the repository's disk (no root) and to ext4 on a loop device (root), CPU burners that
are and are not the workload's, and the sampler's own cost.

Another agent may run benchmarks on this 2-core machine meanwhile: assertions on real
readings are bounds that only other activity could loosen in our favour (bytes written
are at least ours) or generous ones (a burner gets well over half a CPU).
"""

from __future__ import annotations

import itertools
import json
import math
import mmap
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from conftest import sh

from fslab.errors import ExitStatus, FslabError
from fslab.targets.loop import backing_file, detach, direct_io
from fslab.targets.mount import mount_containing, mounts_at, umount
from fslab.telemetry import (
    Sampler,
    Telemetry,
    TelemetryError,
    TelemetryUsageError,
    Thresholds,
    device_roles,
    devices_under,
    statvfs_used_bytes,
)
from fslab.telemetry.devices import DeviceRoles
from fslab.telemetry.procfs import (
    CpuTimes,
    DiskCounters,
    MemInfo,
    Pressure,
    PressureLine,
    ProcStat,
    parse_diskstats,
    parse_meminfo,
    parse_pid_stat,
    parse_pressure,
    parse_stat,
)
from fslab.telemetry.readings import (
    ProcSnapshot,
    Sample,
    classify,
    cpu_ticks_by_group,
    cpu_ticks_by_process,
    cpu_ticks_named,
)
from fslab.telemetry.series import SINCE_SLACK_S, judge_contamination, make_point

REPO = Path(__file__).resolve().parents[1]
MiB = 1 << 20
IS_ROOT = os.geteuid() == 0
F = TypeVar("F", bound=Callable[..., Any])


def needs_root(f: F) -> F:
    """Marks a test `root` and skips it, with the reason, for other users."""
    skip = pytest.mark.skipif(not IS_ROOT, reason="needs root: loop devices, mkfs, mount")
    return pytest.mark.root(skip(f))  # type: ignore[no-any-return]


# --------------------------------------------------------------------------- parsers

DISKSTATS = """\
 254       0 vda 1494522 305262 79344646 1658164 2465995 39757 164161808 5205839 0 231648 6880172 26399 20 102941096 14314 27794 1853
 254       1 vda1 1000 10 8000 50 2000 20 16000 60 1 70 110 0 0 0 0
   7       3 loop3 136678 34 3246152 136743 7172 15347 288120 2427 0 6564 139357
"""  # noqa: E501


def test_diskstats_reads_20_18_and_14_field_lines() -> None:
    d = parse_diskstats(DISKSTATS)
    assert list(d) == ["vda", "vda1", "loop3"]
    vda = d["vda"]
    assert (vda.reads, vda.sectors_read, vda.writes, vda.sectors_written) == (
        1494522,
        79344646,
        2465995,
        164161808,
    )
    assert vda.written_bytes == 164161808 * 512
    assert (vda.io_time_ms, vda.weighted_io_time_ms) == (231648, 6880172)
    assert (vda.discards, vda.sectors_discarded, vda.flushes, vda.flush_time_ms) == (
        26399,
        102941096,
        27794,
        1853,
    )
    assert d["vda1"].discards == 0 and d["vda1"].flushes is None
    old = d["loop3"]
    assert old.read_bytes == 3246152 * 512 and old.weighted_io_time_ms == 139357
    assert old.discards is None and old.flushes is None


def test_diskstats_keeps_only_the_named_devices_and_rejects_short_lines() -> None:
    assert list(parse_diskstats(DISKSTATS, {"loop3"})) == ["loop3"]
    with pytest.raises(TelemetryError, match="line 1: expected at least 14 fields, found 7"):
        parse_diskstats("   8 0 sda 1 2 3 4\n")


def test_stat_reads_the_aggregate_cpu_line_without_guest_time() -> None:
    text = (
        "cpu  179798 5 190521 411915 62627 3 18924 17638 900 0\n"
        "cpu0 74141 0 90771 226835 33847 0 6260 8767 0 0\n"
        "cpu1 105656 0 99749 185080 28779 0 12663 8870 0 0\n"
        "intr 1 2 3\nctxt 42\nbtime 1700000000\n"
    )
    s = parse_stat(text)
    assert s.cpu_count == 2
    t = s.times
    assert t == CpuTimes(179798, 5, 190521, 411915, 62627, 3, 18924, 17638)
    assert t.busy == 179798 + 5 + 190521 + 3 + 18924
    assert t.total == t.busy + 411915 + 62627 + 17638
    # Linux 2.4 printed four columns; the rest count as zero.
    assert parse_stat("cpu 1 2 3 4\n").times.steal == 0
    with pytest.raises(TelemetryError, match="no `cpu` line"):
        parse_stat("intr 1\n")


def test_meminfo_in_bytes_with_and_without_memavailable() -> None:
    text = (
        "MemTotal:       24684084 kB\nMemFree:        24374676 kB\n"
        "MemAvailable:   24282344 kB\nCached:            86676 kB\n"
        "Dirty:                40 kB\nWriteback:             8 kB\nHugePages_Total:       0\n"
    )
    assert parse_meminfo(text) == MemInfo(
        cached_bytes=86676 * 1024,
        dirty_bytes=40 * 1024,
        writeback_bytes=8 * 1024,
        available_bytes=24282344 * 1024,
    )
    old = text.replace("MemAvailable:   24282344 kB\n", "")
    assert parse_meminfo(old).available_bytes is None
    with pytest.raises(TelemetryError, match="no Dirty"):
        parse_meminfo(text.replace("Dirty:", "Dorty:"))


def test_pressure_some_and_full_lines() -> None:
    io = parse_pressure(
        "some avg10=47.09 avg60=46.84 avg300=36.36 total=630972096\n"
        "full avg10=27.23 avg60=24.75 avg300=17.24 total=387828756\n",
        "io",
    )
    assert io.some == PressureLine(47.09, 46.84, 36.36, 630972096)
    assert io.full is not None and io.full.total_us == 387828756
    cpu = parse_pressure("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", "cpu")
    assert cpu.full is None  # Linux < 5.13 prints no `full` line for cpu
    with pytest.raises(TelemetryError, match="/proc/pressure/memory: bad line"):
        parse_pressure("some avg10=x avg60=0 avg300=0 total=0\n", "memory")


def test_pid_stat_with_spaces_and_parentheses_in_the_command_name() -> None:
    line = (
        "4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 1 2 3 4 "
        "150 25 7 3 20 0 3 0 123456 1000 10 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 "
        "17 1 0 0 0 0 0\n"
    )
    p = parse_pid_stat(line)
    assert p == ProcStat(
        pid=4242,
        comm="my (odd) name",
        ppid=1,
        flags=4194560,
        utime=150,
        stime=25,
        cutime=7,
        cstime=3,
        starttime=123456,
    )
    assert p.cpu_ticks == 185 and not p.is_kthread
    kworker = line.replace("4194560", str(0x00208040))
    assert parse_pid_stat(kworker.encode()).is_kthread
    with pytest.raises(TelemetryError):
        parse_pid_stat("4242 (truncated S 1")


def test_pid_stat_of_this_process() -> None:
    p = parse_pid_stat(Path("/proc/self/stat").read_bytes())
    assert p.pid == os.getpid() and p.ppid == os.getppid()


# --------------------------------------------------------------------------- CPU accounting


def proc(pid: int, ppid: int, ticks: int, *, start: int = 0, child_ticks: int = 0) -> ProcStat:
    return ProcStat(pid, f"p{pid}", ppid, 0, ticks, 0, child_ticks, 0, start)


def snap(boot_ticks: int, *procs: ProcStat, workload: set[int] | None = None) -> ProcSnapshot:
    by_pid = {p.pid: p for p in procs}
    return ProcSnapshot(boot_ticks, by_pid, classify(by_pid, 100, workload or set()))


def test_cpu_accounting_counts_growth_newborns_and_reaped_children_once() -> None:
    prev = snap(
        1000,
        proc(1, 0, 50),
        proc(100, 1, 500),  # this process: never foreign
        proc(101, 100, 20),  # its child, reaped by it: lost, not taken back
        proc(200, 1, 10),  # a shell ...
        proc(201, 200, 30, start=990),  # ... with a child, seen once, then reaped
        proc(300, 1, 70, start=900),  # reaped by pid 1 at 75 ticks, its pid reused
    )
    cur = snap(
        1100,
        proc(1, 0, 52, child_ticks=75),
        proc(100, 1, 900, child_ticks=25),
        # The shell reaped 201 (40 ticks in all) and a child never seen (25 ticks).
        proc(200, 1, 12, child_ticks=40 + 25),
        proc(300, 1, 5, start=1050),  # a new process born in the interval
        proc(400, 1, 8, start=1099),
    )
    ticks = cpu_ticks_by_group(prev, cur)
    assert ticks["foreign"] == (
        (2 + 75 - 70)  # pid 1, and the last 5 ticks of the old 300
        + (2 + 65 - 30)  # the shell and its children, each tick once
        + (5 + 8)  # newborns: all their life was in the interval
    )
    assert ticks["self"] == 400 + 25
    assert ticks["workload"] == 0 and ticks["kernel"] == 0


def test_a_parent_is_not_named_for_the_cpu_its_reaped_child_was_named_for() -> None:
    """A shell that reaps a busy child gets the child's whole life in its children time;
    the scans named the child while it ran, so naming the shell for it all again would
    blame the wrong process (a test that kills its neighbour showed up as the culprit)."""
    prev = snap(1000, proc(1, 0, 0), proc(200, 1, 10), proc(201, 200, 30, start=990))
    cur = snap(1100, proc(1, 0, 0), proc(200, 1, 12, child_ticks=40))
    raw = cpu_ticks_by_process(prev, cur)
    assert raw[200] == 42  # its own 2 and the child's 40 of life
    assert cpu_ticks_named(prev, cur, raw)[200] == 12  # its own 2, the child's last 10


def test_this_process_named_as_the_workload_makes_its_children_the_workload() -> None:
    """The runner names itself: the engine it starts (and that engine's children) are the
    workload, not foreign CPU, while this process stays `self`."""
    procs = {p.pid: p for p in (proc(1, 0, 0), proc(100, 1, 0), proc(101, 100, 0),
                                proc(102, 101, 0), proc(200, 1, 0))}  # fmt: skip
    group = classify(procs, 100, {100})
    assert group == {1: "foreign", 100: "self", 101: "workload", 102: "workload", 200: "foreign"}


def test_cpu_accounting_puts_workload_descendants_and_kernel_threads_apart() -> None:
    kthread = ProcStat(2, "kthreadd", 0, 0x00200000, 0, 5, 0, 0, 0)
    kthread2 = ProcStat(2, "kthreadd", 0, 0x00200000, 0, 9, 0, 0, 0)
    # A kworker that exits: the kernel reaps it without adding to kthreadd's time, so
    # nothing of it may be taken back.
    kworker = ProcStat(3, "kworker/0:1", 2, 0x04208060, 0, 300, 0, 0, 0)
    prev = snap(
        1000,
        proc(1, 0, 0),
        kthread,
        kworker,
        proc(500, 1, 0),
        proc(501, 500, 0),
        workload={500},
    )
    cur = snap(
        1100,
        proc(1, 0, 0),
        kthread2,
        proc(500, 1, 3),
        proc(501, 500, 40),
        proc(502, 501, 7, start=1050),
        workload={500},
    )
    assert cur.group[502] == "workload"  # a grandchild of the named pid
    assert cpu_ticks_by_group(prev, cur) == {
        "self": 0,
        "workload": 3 + 40 + 7,
        "kernel": 4,
        "foreign": 0,
    }


# --------------------------------------------------------------------------- derived metrics


def counters(reads: int, read_mib: int, writes: int, written_mib: int) -> DiskCounters:
    return DiskCounters(
        reads, 0, read_mib * 2048, reads, writes, 0, written_mib * 2048, writes, 0, 0, 0
    )


def sample(
    t_s: float,
    disks: dict[str, DiskCounters],
    *,
    steal: int = 0,
    cached_mib: int = 100,
    dirty_mib: int = 0,
    memory_stall_us: int = 0,
    foreign_ticks: int = 0,
    cpu_stall_us: int | None = None,
) -> Sample:
    ticks = int(t_s * 100)
    psi = {"memory": Pressure(PressureLine(0, 0, 0, memory_stall_us), None)}
    if cpu_stall_us is not None:
        psi["cpu"] = Pressure(PressureLine(0, 0, 0, cpu_stall_us), None)
    return Sample(
        t_s=t_s,
        disks=disks,
        # 2 CPUs x 100 ticks a second: a quarter busy, steal taken from idle.
        cpu=CpuTimes(ticks // 2, 0, 0, 3 * ticks // 2 - steal, 0, 0, 0, steal),
        cpu_count=2,
        memory=MemInfo(cached_mib * MiB, dirty_mib * MiB, 0, 1000 * MiB),
        psi=psi,
        procs=snap(ticks, proc(1, 0, 0), proc(7, 1, foreign_ticks)),
    )


def made_up_telemetry() -> Telemetry:
    """Two member loop devices on a backing disk, a dm device above them; three intervals
    of 1 s and a last one of 0.05 s (stop() right after a scheduled sample)."""
    roles = DeviceRoles(members=("loop1", "loop2"), stacked=("dm-0",), backing=("vda",))
    readings = [
        (0, 0, 0, 0, 0),
        (100, 200, 4, 10, 0),  # loop1 writes 100 x 2 MiB ...
        (300, 600, 12, 20, 0),
        (300, 600, 12, 40, 0),
        (320, 610, 12, 40, 0),  # ... 20 I/Os in 50 ms: 400 IOPS, not a peak
    ]
    samples = []
    for i, (w1, mib1, r2, dirty, _) in enumerate(readings):
        t = i * 1.0 if i < 4 else 3.05
        samples.append(
            sample(
                t,
                {
                    "loop1": counters(0, 0, w1, mib1),
                    "loop2": counters(r2, r2, w1, mib1),  # mirrored writes
                    "dm-0": counters(r2, r2, w1, mib1),
                    "vda": counters(0, 0, 3 * w1, 3 * mib1 + 5),
                },
                dirty_mib=dirty,
                cached_mib=100 + 10 * i,
                steal=[0, 0, 30, 30, 30][i],  # 15% of 2 CPUs in the 2nd interval
                memory_stall_us=[0, 0, 0, 300_000, 300_000][i],  # 30% in the 3rd
                foreign_ticks=[0, 50, 55, 55, 55][i],  # 50% of a CPU in the 1st
            )
        )
    thresholds = Thresholds()
    series = [make_point(a, b, samples[0].t_s, thresholds) for a, b in itertools.pairwise(samples)]
    return Telemetry(
        interval_s=1.0,
        series=series,
        roles=roles,
        start_memory=samples[0].memory,
        cpu_count=2,
        thresholds=thresholds,
        sampler_cpu_s=0.0305,
        started_unix_s=1.7e9,
    )


def test_summary_derives_the_issue_metrics_from_the_series() -> None:
    t = made_up_telemetry()
    s = t.summary(
        workload_written_bytes=600 * MiB,
        space_used_before=10 * MiB,
        space_used_after=50 * MiB,
        logical_bytes=10 * MiB,
    )
    assert s["duration_s"] == pytest.approx(3.05) and s["intervals"] == 4
    # Summed over the members only: not the dm device above them, not the backing disk.
    assert s["write_ios"] == 640 and s["written_bytes"] == 1220 * MiB
    assert s["read_ios"] == 12 and s["read_bytes"] == 12 * MiB
    assert s["write_iops_avg"] == pytest.approx(640 / 3.05)
    assert s["write_iops_peak"] == pytest.approx(400.0)  # the 2nd interval, both members
    assert s["read_iops_peak"] == pytest.approx(8.0)
    assert s["write_io_size_bytes"] == pytest.approx(1220 * MiB / 640)
    assert s["read_io_size_bytes"] == MiB
    assert s["read_write_ratio"] == pytest.approx(12 / 640)
    assert s["write_latency_ms_avg"] == pytest.approx(1.0)  # write_time_ms = writes
    assert s["write_amplification"] == pytest.approx(1220 / 600)
    assert s["backing_written_bytes"] == 1830 * MiB and s["backing_read_bytes"] == 0
    assert s["device.dm-0.written_bytes"] == 610 * MiB
    assert s["device.loop1.iops_peak"] == pytest.approx(200.0)
    assert s["space_used_bytes"] == 40 * MiB and s["space_amplification"] == 4.0
    assert s["cached_growth_bytes"] == 40 * MiB and s["dirty_peak_bytes"] == 40 * MiB
    assert s["cpu_busy_pct_avg"] == pytest.approx(25.0, abs=0.5)
    assert s["cpu_steal_pct_peak"] == pytest.approx(15.0)
    assert s["foreign_cpu_pct_peak"] == pytest.approx(50.0)
    assert s["psi_memory_some_pct_peak"] == pytest.approx(30.0)
    # Steal is recorded but contaminates nothing (`series.CONTAMINATING`).
    assert s["contaminated"] == 1 and s["contaminated_intervals"] == 2
    assert s["contaminated_foreign_cpu_intervals"] == 1
    assert s["contaminated_steal_intervals"] == 1
    assert s["contaminated_memory_pressure_intervals"] == 1
    assert s["sampler_cpu_pct"] == pytest.approx(1.0)
    assert [p.reasons for p in t.series] == [
        ("foreign_cpu",),
        ("steal",),
        ("memory_pressure",),
        (),
    ]
    assert t.contamination() == [
        "CPU used by other processes above 10% of a CPU in 1 of 4 intervals (peak 50%)",
        "CPU steal time above 5% of CPU time in 1 of 4 intervals (peak 15%)",
        "memory pressure above 10% of the time stalled in 1 of 4 intervals (peak 30%)",
    ]
    assert all(isinstance(v, (int, float)) or v is None for v in s.values())


def test_the_measured_part_leaves_the_layout_out() -> None:
    """A run's measured part began 1 s in (its layout before, writing 100 x 2 MiB and
    dirtying 10 MiB): its figures are the three intervals after, with the memory at their
    start, and dirty memory's rise is counted from its lowest point so far."""
    whole = made_up_telemetry()
    t = whole.since(1.0)
    assert [p.t_s for p in t.series] == [2.0, 3.0, 3.05]
    assert t.duration_s == pytest.approx(2.05)
    assert t.start_memory.dirty_bytes == 10 * MiB
    s = t.summary(workload_written_bytes=400 * MiB)
    assert s["write_ios"] == 440 and s["written_bytes"] == 820 * MiB  # the layout's 200 out
    assert s["write_amplification"] == pytest.approx(820 / 400)
    assert s["dirty_peak_bytes"] == 40 * MiB and s["dirty_rise_bytes"] == 30 * MiB
    assert s["contaminated_foreign_cpu_intervals"] == 0  # that was during the layout
    # An interval that began a few ms early (the progress line came down a pipe) is kept;
    # a time past every interval's start, or before the first, leaves the whole run.
    assert whole.since(1.0 + SINCE_SLACK_S / 2).series == t.series
    assert whole.since(10.0) is whole and whole.since(0.0) is whole
    assert whole.summary()["dirty_rise_bytes"] == 40 * MiB


def test_foreign_cpu_disturbs_only_where_tasks_waited_for_a_cpu() -> None:
    """bench/neighbour: a neighbour on a whole CPU left a 1-thread job on 2 CPUs as it
    was (nobody waited for a CPU), and halved a 2-thread job (tasks waited half the
    time). Half a CPU of foreign work is a disturbance only with the wait."""
    th = Thresholds()

    def point(stall_us: int | None) -> tuple[str, ...]:
        a = sample(0.0, {}, cpu_stall_us=0 if stall_us is not None else None)
        b = sample(1.0, {}, foreign_ticks=50, cpu_stall_us=stall_us)
        return make_point(a, b, 0.0, th).reasons

    assert point(10_000) == ()  # 1% of the second waiting: the CPU was spare
    assert point(300_000) == ("foreign_cpu",)  # 30%: it took the workload's CPU
    assert point(None) == ("foreign_cpu",)  # no PSI: foreign CPU alone decides
    a = sample(0.0, {}, cpu_stall_us=0)
    spans = [make_point(a, sample(0.5 * i, {}, foreign_ticks=25 * i, cpu_stall_us=s), 0.0, th)
             for i, s in ((1, 10_000), (2, 20_000))]  # fmt: skip
    assert [p.reasons for p in judge_contamination(spans, th)] == [(), ()]


def test_the_foreign_processes_of_a_disturbed_interval_are_named() -> None:
    """Who disturbed a run: pid 7 (`p7`) used half a CPU in the first interval, the one
    the foreign CPU contaminated; it is named there, and in the run's disturbers, which
    survive the round trip through the stored data."""
    t = made_up_telemetry()
    assert t.series[0].foreign_top == (("p7", 7, pytest.approx(50.0)),)
    assert t.series[1].foreign_top == (("p7", 7, pytest.approx(5.0)),)
    assert t.series[2].foreign_top == ()
    assert t.disturbers() == [
        {"name": "p7", "pid": 7, "cpu_s": pytest.approx(0.5), "cpu_pct": pytest.approx(50.0)}
    ]
    data = t.to_dict()
    assert data["disturbers"] == t.disturbers()
    again = Telemetry.from_dict(json.loads(json.dumps(data)))
    assert again.series == t.series and again.disturbers() == t.disturbers()


def test_summary_without_baselines_leaves_ratios_empty() -> None:
    s = made_up_telemetry().summary()
    assert s["write_amplification"] is None
    assert s["space_amplification"] is None and s["space_used_bytes"] is None


def test_telemetry_round_trips_through_json() -> None:
    t = made_up_telemetry()
    assert Telemetry.from_dict(json.loads(json.dumps(t.to_dict()))) == t


# --------------------------------------------------------------------------- devices


def repo_disk() -> str:
    m = mount_containing(REPO)
    if m is None or not m.source.startswith("/dev/"):
        pytest.skip(f"the repository is not on a block device ({m.source if m else '?'})")
    return m.source


def test_devices_under_names_the_repository_disk() -> None:
    source = repo_disk()
    names = devices_under([source])
    assert names == [Path(os.path.realpath(source)).name]
    assert device_roles(names) == DeviceRoles(members=tuple(names), stacked=(), backing=())
    assert devices_under(names) == names  # kernel names are accepted as they are


@pytest.fixture
def fake_sysfs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A sysfs with dm-0 on loop1 and loop2, whose images are on partition vdz1 of disk
    vdz, and loop3 on a file of tmpfs: the stacks this kernel (no dm, no md) cannot
    make."""
    from fslab.telemetry import devices

    root = tmp_path / "sys"
    (root / "devices/vdz/vdz1").mkdir(parents=True)
    (root / "devices/vdz/vdz1/partition").write_text("1\n")
    block = root / "class/block"
    block.mkdir(parents=True)
    (block / "vdz").symlink_to(root / "devices/vdz")
    (block / "vdz1").symlink_to(root / "devices/vdz/vdz1")
    image = tmp_path / "image"
    image.write_bytes(b"")
    for loop, backing in (("loop1", image), ("loop2", image), ("loop3", "/dev/shm")):
        (block / loop / "loop").mkdir(parents=True)
        (block / loop / "loop/backing_file").write_text(f"{backing}\n")
    for slave in ("loop2", "loop1"):
        (block / "dm-0/slaves" / slave).mkdir(parents=True)
    st_dev = image.stat().st_dev
    (root / "dev/block").mkdir(parents=True)
    (root / f"dev/block/{os.major(st_dev)}:{os.minor(st_dev)}").symlink_to(
        root / "devices/vdz/vdz1"
    )
    monkeypatch.setattr(devices, "_SYS_CLASS_BLOCK", block)
    monkeypatch.setattr(devices, "_SYS_DEV_BLOCK", root / "dev/block")
    return root


def test_devices_under_follows_slaves_and_backing_files(fake_sysfs: Path) -> None:
    names = devices_under(["dm-0"])
    assert names == ["dm-0", "loop1", "loop2", "vdz"]  # the partition's whole disk
    assert device_roles(names) == DeviceRoles(
        members=("loop1", "loop2"), stacked=("dm-0",), backing=("vdz",)
    )
    # A loop device on tmpfs has no disk to name: skipped, not an error.
    assert devices_under(["loop3"]) == ["loop3"]
    assert device_roles(["loop3", "loop1"]).members == ("loop3", "loop1")


def test_unknown_devices_are_refused() -> None:
    with pytest.raises(TelemetryUsageError, match="not a block device the kernel knows"):
        devices_under(["nosuchdisk0"])
    with pytest.raises(TelemetryUsageError, match="not a block device"):
        Sampler(["/etc/hostname"])


def test_statvfs_used_bytes() -> None:
    assert statvfs_used_bytes(REPO, sync=True) > 0
    with pytest.raises(TelemetryError, match="cannot measure space used"):
        statvfs_used_bytes(REPO / "no" / "such" / "dir")


# --------------------------------------------------------------------------- the sampler


@pytest.mark.parametrize("interval_s", [0.05, 61.0, math.nan, math.inf, -1.0])
def test_interval_out_of_range_is_refused(interval_s: float) -> None:
    with pytest.raises(TelemetryUsageError, match="out of range") as e:
        Sampler([], interval_s=interval_s)
    assert isinstance(e.value, FslabError) and isinstance(e.value, ValueError)
    assert e.value.exit_status == ExitStatus.USAGE and e.value.hint == "choose 0.1 to 60 s"


def open_fds() -> set[str]:
    return {p.name for p in Path("/proc/self/fd").iterdir()}


def test_start_stop_lifecycle() -> None:
    fds = open_fds()
    s = Sampler([], interval_s=0.1)
    with pytest.raises(TelemetryUsageError, match="not been stopped"):
        _ = s.telemetry
    with pytest.raises(TelemetryUsageError, match="not started"):
        s.stop()
    s.start()
    assert s.running
    with pytest.raises(TelemetryUsageError, match="only once"):
        s.start()
    t = s.stop()
    assert s.stop() is t and s.telemetry is t  # stop() twice is safe
    assert not s.running
    assert not any(th.name == "fslab-telemetry" for th in threading.enumerate())
    assert len(t.series) >= 1  # first sample at start, last at stop
    assert open_fds() == fds, "the sampler's /proc files are closed"


def test_samples_follow_the_schedule_without_drift() -> None:
    with Sampler(repo_devices(), interval_s=0.1) as s:
        time.sleep(1.25)
    t = s.telemetry
    # Late samples skip a slot instead of shifting the schedule: every interval but the
    # last ends near a multiple of 0.1 s.
    assert 6 <= len(t.series) <= 14
    for p in t.series[:-1]:
        assert abs(p.t_s / 0.1 - round(p.t_s / 0.1)) < 0.5, p.t_s
    assert t.series[-1].t_s == pytest.approx(1.25, abs=0.2)


def repo_devices() -> list[str]:
    return devices_under([repo_disk()])


def write_direct(path: Path, n_bytes: int, chunk: int = MiB) -> None:
    """Writes `n_bytes` with O_DIRECT from a page-aligned buffer, then fsync."""
    buf = mmap.mmap(-1, chunk)
    buf.write(os.urandom(chunk))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_DIRECT, 0o600)
    try:
        for _ in range(n_bytes // chunk):
            assert os.write(fd, buf) == chunk
        os.fsync(fd)
    finally:
        os.close(fd)
        buf.close()


def read_direct(path: Path, chunk: int = MiB) -> int:
    buf = mmap.mmap(-1, chunk)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    total = 0
    try:
        while n := os.readv(fd, [buf]):
            total += n
    finally:
        os.close(fd)
        buf.close()
    return total


def test_direct_writes_reach_the_repository_disk(disk_dir: Path) -> None:
    n = 32 * MiB
    with Sampler(repo_devices(), interval_s=0.2) as s:
        write_direct(disk_dir / "data", n)
    summary = s.telemetry.summary(workload_written_bytes=n)
    # Other I/O on this disk can only add to ours.
    assert summary["written_bytes"] is not None and summary["written_bytes"] >= n
    assert summary["write_amplification"] is not None and summary["write_amplification"] >= 1


def test_a_mark_gives_a_short_measured_part_its_own_interval(disk_dir: Path) -> None:
    # A run shorter than one sampling interval: its layout (the direct writes) and its
    # measured part (none) would share one interval, and the layout would be charged to
    # the measured part (issue #33: a read run "wrote" 16 MiB).
    with Sampler(repo_devices(), interval_s=5.0) as s:
        write_direct(disk_dir / "data", 16 * MiB)
        time.sleep(0.2)  # more than `since`'s slack
        marked_unix_s = time.time()
        s.mark()
        time.sleep(0.1)
    t = s.telemetry
    measured = t.since(marked_unix_s - t.started_unix_s)
    assert measured is not t and len(measured.series) == 1
    whole, part = t.summary()["written_bytes"], measured.summary()["written_bytes"]
    assert whole is not None and whole >= 16 * MiB
    assert part is not None and part < 16 * MiB


# --------------------------------------------------------------------------- loop devices


class Loop:
    """A loop device over an image file, with ext4 mounted on it when asked."""

    def __init__(self, image: Path, size: int, *, dio: bool) -> None:
        self.image = image
        with image.open("wb") as f:
            f.truncate(size)
        argv = ["losetup", "--find", "--show"] + (["--direct-io=on"] if dio else [])
        self.device = sh(*argv, str(image)).strip()
        self.name = Path(self.device).name
        self.mountpoint: Path | None = None

    def mount_ext4(self, mountpoint: Path) -> Path:
        sh("mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", self.device)
        mountpoint.mkdir()
        sh("mount", "-t", "ext4", self.device, str(mountpoint))
        self.mountpoint = mountpoint
        return mountpoint

    def cleanup(self) -> None:
        if self.mountpoint is not None:
            umount(self.mountpoint)
            assert not mounts_at(self.mountpoint)
        detach(self.device, self.image)  # verified through sysfs
        assert backing_file(self.device) != str(self.image)
        self.image.unlink(missing_ok=True)


@pytest.fixture
def loops() -> Iterator[Callable[..., Loop]]:
    """Makes loop devices on request; unmounts, detaches (checked in sysfs) and removes
    the images afterwards, whatever happened."""
    made: list[Loop] = []
    dirs: list[Path] = []

    def make(*, on: Path = REPO, size: int = 256 * MiB, dio: bool = True) -> Loop:
        d = Path(tempfile.mkdtemp(prefix=".fslab-test-telemetry-", dir=on))
        dirs.append(d)
        loop = Loop(d / "image", size, dio=dio)
        made.append(loop)
        return loop

    try:
        yield make
    finally:
        errors = []
        for loop in reversed(made):
            try:
                loop.cleanup()
            except Exception as e:  # clean up the others anyway, then fail
                errors.append(e)
        for d in dirs:
            shutil.rmtree(d, ignore_errors=True)
        assert not errors, errors


@needs_root
def test_direct_writes_on_ext4_on_a_loop_device(loops: Callable[..., Loop]) -> None:
    loop = loops(dio=True)
    mnt = loop.mount_ext4(loop.image.parent / "mnt")
    names = devices_under([loop.device])
    roles = device_roles(names)
    assert roles.members == (loop.name,)
    # The disk holding the image: the repository's (its whole disk, for a partition).
    repo_name = devices_under([repo_disk()])[0]
    assert len(roles.backing) == 1 and repo_name.startswith(roles.backing[0])

    n = 64 * MiB
    before = statvfs_used_bytes(mnt, sync=True)
    with Sampler(names, interval_s=0.2) as s:
        write_direct(mnt / "data", n)
        assert read_direct(mnt / "data") == n
    after = statvfs_used_bytes(mnt, sync=True)
    summary = s.telemetry.summary(
        workload_written_bytes=n, space_used_before=before, space_used_after=after, logical_bytes=n
    )
    written = summary["written_bytes"]
    assert written is not None and written >= n
    # Large sequential direct writes on ext4: the data, plus a journal commit or two.
    wa = summary["write_amplification"]
    assert wa is not None and 0.9 <= wa <= 1.5, summary
    sa = summary["space_amplification"]
    assert sa is not None and 0.95 <= sa <= 1.2, summary
    read = summary["read_bytes"]
    assert read is not None and n <= read <= 1.5 * n, summary
    io_size = summary["write_io_size_bytes"]
    assert io_size is not None and io_size >= 64 * 1024, summary
    if direct_io(loop.device):
        # Direct I/O to the image file: the loop's traffic reaches the disk within the
        # run (the disk also carries everything else, so only a lower bound holds).
        backing = summary["backing_written_bytes"]
        assert backing is not None and backing >= n
        backing_read = summary["backing_read_bytes"]
        assert backing_read is not None and backing_read >= n


@needs_root
def test_a_loop_device_on_tmpfs_has_no_backing_disk(loops: Callable[..., Loop]) -> None:
    shm = Path("/dev/shm")
    if not shm.is_dir():
        pytest.skip("needs /dev/shm (tmpfs)")
    loop = loops(on=shm, size=16 * MiB, dio=False)
    assert devices_under([loop.device]) == [loop.name]


# --------------------------------------------------------------------------- CPU of others

BURN = [sys.executable, "-S", "-c", "while True: pass"]


def spawn(argv: list[str]) -> subprocess.Popen[bytes]:
    """A child in its own process group, so that it and its children can be killed."""
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL, start_new_session=True)


def kill(child: subprocess.Popen[bytes]) -> None:
    os.killpg(child.pid, signal.SIGKILL)
    child.wait(timeout=10)


def test_cpu_burners_outside_the_workload_are_foreign_and_contaminate_when_they_crowd() -> None:
    """One burner on a machine with a CPU to spare is foreign CPU and takes nobody's: no
    task waits for a CPU. One more burner than CPUs makes tasks wait: contaminated."""
    cpus = os.cpu_count() or 1
    psi = Path("/proc/pressure/cpu").exists()
    for n, crowded in ((1, cpus == 1 or not psi), (cpus + 1, True)):
        burners = [spawn(BURN) for _ in range(n)]
        try:
            time.sleep(0.2)  # past the interpreters' start-up
            with Sampler([], interval_s=0.2, workload_pids=set) as s:
                time.sleep(1.2)
        finally:
            for b in burners:
                kill(b)
        t = s.telemetry
        summary = t.summary()
        peak = summary["foreign_cpu_pct_peak"]
        assert peak is not None and peak > 50, summary
        assert summary["contaminated"] == int(crowded), (n, summary)
        if crowded:
            assert any("foreign_cpu" in p.reasons and p.contaminated for p in t.series)
            said = t.contamination()[0]
            assert said.startswith("CPU used by other processes above 10% of a CPU"), said


def test_a_cpu_burner_under_the_workload_is_the_workload() -> None:
    # The burner is the shell's child (`; :` keeps the shell from exec-ing it), and only
    # the shell is named: descendants count as the workload too.
    shell = spawn(["/bin/sh", "-c", f"{shlex.join(BURN)}; :"])
    try:
        time.sleep(0.2)
        with Sampler([], interval_s=0.2, workload_pids=lambda: {shell.pid}) as s:
            time.sleep(1.2)
    finally:
        kill(shell)
    summary = s.telemetry.summary()
    peak = summary["workload_cpu_pct_peak"]
    assert peak is not None and peak > 50, summary


def test_short_lived_foreign_processes_are_counted() -> None:
    # Each child lives ~50 ms, far less than an interval: no scan sees most of them, and
    # their CPU is found in the shell's reaped-children time.
    work = shlex.join([sys.executable, "-S", "-c", "sum(range(2_000_000))"])
    shell = spawn(["/bin/sh", "-c", f"while :; do {work}; done"])
    try:
        with Sampler([], interval_s=0.5) as s:
            time.sleep(1.6)
    finally:
        kill(shell)
    summary = s.telemetry.summary()
    avg = summary["foreign_cpu_pct_avg"]
    assert avg is not None and avg > 40, summary


def test_the_sampler_costs_little_at_100_ms() -> None:
    with Sampler(repo_devices(), interval_s=0.1) as s:
        time.sleep(2.0)
    cost = s.telemetry.summary()["sampler_cpu_pct"]
    assert cost is not None and cost < 5.0


def test_contamination_is_judged_over_a_second_not_a_100_ms_tick() -> None:
    """At 100 ms one tick of another process is 10% of a CPU: a lone tick in a second
    sampled finely is no contamination, a second of it is."""
    from dataclasses import replace

    from fslab.telemetry.series import judge_contamination

    (first, *_) = made_up_telemetry().series
    clean = replace(first, dt_s=0.1, foreign_cpu_pct=0.0, cpu_steal_pct=0.0, psi={})
    tick = replace(clean, foreign_cpu_pct=20.0)
    busy = replace(clean, foreign_cpu_pct=40.0)
    fine = [tick, *[clean] * 9, *[busy] * 10, *[clean] * 3]
    judged = judge_contamination(fine, Thresholds())
    assert [p.contaminated for p in judged] == [False] * 10 + [True] * 10 + [True] * 3, (
        "the second of 40% is contaminated; the last 0.3 s joins it"
    )
    assert judged[10].reasons == ("foreign_cpu",)
    # At 1 s intervals each interval is its own span, as before.
    coarse = [replace(p, dt_s=1.0) for p in (tick, clean, busy)]
    assert [p.contaminated for p in judge_contamination(coarse, Thresholds())] == [
        True, False, True,
    ]  # fmt: skip
