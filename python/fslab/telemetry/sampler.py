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
import math
import os
import threading
import time
from collections.abc import Callable
from types import TracebackType

from fslab.telemetry.devices import device_roles, kernel_name
from fslab.telemetry.procfs import TelemetryError, TelemetryUsageError
from fslab.telemetry.readings import _PROC, PSI_RESOURCES, ProcReader, Sample
from fslab.telemetry.series import (
    Telemetry,
    TelemetryPoint,
    Thresholds,
    judge_contamination,
    make_point,
)

MIN_INTERVAL_S = 0.1
MAX_INTERVAL_S = 60.0
SAMPLES_PER_RUN = 20
"""A run gets at least this many samples where `MIN_INTERVAL_S` allows: a peak over a
handful of samples is an average."""
DEFAULT_INTERVAL_S = 1.0


def interval_for(expected_s: float) -> float:
    """The sampling interval for a run expected to last `expected_s` (its shortest
    possible length: a steady-state run may stop early): `SAMPLES_PER_RUN` samples, no
    finer than `MIN_INTERVAL_S` (100 ms, for short runs), no coarser than 1 s."""
    if not (math.isfinite(expected_s) and expected_s > 0):
        return DEFAULT_INTERVAL_S
    return max(MIN_INTERVAL_S, min(DEFAULT_INTERVAL_S, round(expected_s / SAMPLES_PER_RUN, 2)))


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
        # `mark()` samples from the caller's thread; one sample at a time.
        self._lock = threading.Lock()
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
                with self._lock:
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

    def mark(self) -> None:
        """Takes a sample now, between the scheduled ones, so that an interval begins
        here: where a run's measured part begins (after the layout of its files), however
        short the run, `Telemetry.since` then has an interval to start from and leaves
        the layout out. A failure is kept for `stop()` to raise."""
        if not self.running:
            return
        try:
            with self._lock:
                self._sample()
        except BaseException as e:
            self._error = self._error or e
            self._stop.set()

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
            series=judge_contamination(self._series, self.thresholds),
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
