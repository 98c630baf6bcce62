"""Warnings about doubtful measurements: noise, outliers, drift, short, cached, compressible
and contaminated runs; each must fire on a constructed case and stay quiet on a clean one."""

from __future__ import annotations

import pytest

from fslab.stats.warnings import (
    NOISY_CV,
    SUPPRESSING,
    RunFacts,
    WarningKind,
    modified_z_scores,
    run_warnings,
    sample_warnings,
    trend,
)

BLOCK = {"rw": "randread", "direct": True, "file_size": 1 << 30}


def kinds(ws: list) -> list[WarningKind]:  # type: ignore[type-arg]
    return [w.kind for w in ws]


def test_quiet_samples_give_no_warning() -> None:
    assert sample_warnings("ext4", "IOPS", [100, 101, 99, 100]) == []
    assert sample_warnings("ext4", "IOPS", [100]) == []


def test_spread_over_the_threshold_is_noisy() -> None:
    ws = sample_warnings("ext4", "IOPS", [100, 130, 75])
    assert kinds(ws) == [WarningKind.NOISY]
    assert "CV" in ws[0].message and ws[0].hint and ws[0].target == "ext4"
    # Just under the threshold: quiet.
    s = 100 * NOISY_CV * 0.9 / 2**0.5  # the stdev of two points is s * sqrt(2)
    assert sample_warnings("ext4", "IOPS", [100 - s, 100 + s]) == []


def test_one_far_repetition_is_an_outlier_and_names_its_run() -> None:
    samples = [100, 101, 99, 100, 102, 40]
    z = modified_z_scores(samples)
    assert z is not None and abs(z[-1]) > 3.5 and all(abs(v) < 3.5 for v in z[:-1])
    ws = sample_warnings("xfs", "IOPS", samples, runs=[1, 2, 3, 4, 5, 6])
    outliers = [w for w in ws if w.kind is WarningKind.OUTLIER]
    assert len(outliers) == 1 and outliers[0].runs == (6,)
    assert "run 6 of 6" in outliers[0].message


def test_a_step_of_a_fraction_of_a_percent_is_no_outlier_however_alike_the_rest() -> None:
    # A replay paced by its trace: runs within 0.05%, the last scores -14.
    samples = [408.0, 408.01, 408.02, 407.8]
    z = modified_z_scores(samples)
    assert z is not None and abs(z[-1]) > 3.5
    assert [
        w for w in sample_warnings("ext4", "IOPS", samples) if w.kind is WarningKind.OUTLIER
    ] == []
    # ... while a step of 5% at the same score is one
    far = [408.0, 408.01, 408.02, 387.6]
    assert [w.kind for w in sample_warnings("ext4", "IOPS", far)] == [WarningKind.OUTLIER]


def test_equal_majority_has_no_outlier_score() -> None:
    assert modified_z_scores([5, 5, 5, 9]) is None
    assert modified_z_scores([1, 2]) is None


def test_a_drifting_run_is_unsteady_and_a_flat_one_is_not() -> None:
    rising = tuple((float(t), 1000.0 + 100 * t) for t in range(10))
    flat = tuple((float(t), 1000.0 + (7 if t % 2 else -7)) for t in range(10))
    drift = trend(rising)
    assert drift is not None and drift[0] == pytest.approx(900 / 1450) and drift[1] < 0.05
    facts = [RunFacts(1, runtime_s=10, trend=trend(rising)), RunFacts(2, 10, trend=trend(flat))]
    ws = run_warnings("btrfs", "block", BLOCK, facts)
    assert kinds(ws) == [WarningKind.UNSTEADY]
    assert ws[0].runs == (1,) and "1 of 2 runs" in ws[0].message
    assert trend(rising[:3]) is None, "too few intervals to judge"


def test_short_stolen_cached_and_compressible_runs() -> None:
    facts = [
        RunFacts(1, runtime_s=2.0, intervals=4, reasons=("steal",), available_min_bytes=8 << 30),
        RunFacts(2, runtime_s=2.0, intervals=4, reasons=("steal",), available_min_bytes=8 << 30),
    ]  # fmt: skip
    params = {"rw": "randrw", "direct": False, "file_size": 1 << 30, "buffer_content": "zeros"}
    ws = {w.kind: w for w in run_warnings("ext4", "block", params, facts)}
    assert set(ws) == {
        WarningKind.SHORT, WarningKind.CACHED, WarningKind.COMPRESSIBLE, WarningKind.STEAL,
    }  # fmt: skip
    assert ws[WarningKind.STEAL].runs == (1, 2)
    assert ws[WarningKind.CACHED].runs == (1, 2)
    # Direct I/O of a file larger than the memory left, random data, long runs: quiet.
    clean = [RunFacts(3, runtime_s=30.0, intervals=30, available_min_bytes=512 << 20)]
    params = {"rw": "randrw", "direct": False, "file_size": 1 << 30}
    assert run_warnings("ext4", "block", params, clean) == []


def test_uncached_buffered_reads_are_judged_by_what_the_devices_read() -> None:
    """RWF_DONTCACHE keeps no pages: a file smaller than memory is no reason for doubt, but
    devices that read far less than the workload still are (a kernel that ignored it)."""
    params = {"rw": "randread", "direct": False, "uncached": True, "file_size": 1 << 30}
    fits = RunFacts(1, runtime_s=30.0, intervals=30, available_min_bytes=8 << 30,
                    workload_read_bytes=1 << 30, device_read_bytes=1 << 30)  # fmt: skip
    assert run_warnings("ext4", "block", params, [fits]) == []
    served = RunFacts(2, runtime_s=30.0, intervals=30, available_min_bytes=8 << 30,
                      workload_read_bytes=1 << 30, device_read_bytes=1 << 20)  # fmt: skip
    assert kinds(run_warnings("ext4", "block", params, [served])) == [WarningKind.CACHED]


def test_steal_is_told_for_every_kind() -> None:
    """A files run otherwise quiet, whose only fact is steal, still says so (the shortcut
    for quiet runs of other kinds must not hide it)."""
    facts = [RunFacts(1, runtime_s=30.0, intervals=30, reasons=("steal",))]
    assert kinds(run_warnings("ext4", "files", {}, facts)) == [WarningKind.STEAL]


def test_a_disturbed_run_is_one_with_contaminated_intervals() -> None:
    assert RunFacts(1, contaminated_intervals=2, reasons=("foreign_cpu",)).disturbed
    assert not RunFacts(2, reasons=("steal",)).disturbed


def test_direct_reads_the_devices_never_saw_are_cached() -> None:
    """fscrypt without inline encryption turns O_DIRECT into buffered I/O: the engine read
    gigabytes, the devices almost nothing. Measured, not predicted from the parameters."""
    gib = float(1 << 30)
    facts = [
        RunFacts(1, runtime_s=30.0, workload_read_bytes=gib, device_read_bytes=gib / 1000),
        RunFacts(2, runtime_s=30.0, workload_read_bytes=gib, device_read_bytes=gib),
    ]
    [w] = run_warnings("ext4-fscrypt", "mailstore", {"direct": True}, facts)
    assert w.kind == WarningKind.CACHED and w.runs == (1,)
    assert "under 1%" in w.message and "although the I/O was direct" in w.message
    assert "fscrypt" in w.hint
    # Reads that reached the devices, and reads too few to judge: quiet.
    fine = [RunFacts(3, workload_read_bytes=gib, device_read_bytes=0.6 * gib),
            RunFacts(4, workload_read_bytes=float(1 << 20), device_read_bytes=0.0)]  # fmt: skip
    assert run_warnings("ext4", "block", BLOCK, fine) == []


def test_direct_writes_that_piled_up_as_dirty_memory_are_cached() -> None:
    """The mail store on ext4 + fscrypt: O_DIRECT accepted, the writes buffered, dirty
    memory rising by ~250 MiB between flushes. Direct writes raise it by 0-2 MiB."""
    mib = float(1 << 20)
    facts = [
        RunFacts(1, runtime_s=10.0, workload_write_bytes=549 * mib, dirty_rise_bytes=251 * mib),
        RunFacts(2, runtime_s=10.0, workload_write_bytes=549 * mib, dirty_rise_bytes=2 * mib),
    ]
    [w] = run_warnings("ext4-fscrypt", "mailstore", {}, facts)
    assert w.kind == WarningKind.CACHED and w.kind in SUPPRESSING and w.runs == (1,)
    assert "rose by up to 251 MiB" in w.message and "fscrypt" in w.hint
    # Too little written to judge, not measured apart from the layout, or buffered on
    # purpose: quiet.
    quiet = [
        RunFacts(3, workload_write_bytes=16 * mib, dirty_rise_bytes=251 * mib),
        RunFacts(4, workload_write_bytes=549 * mib, dirty_rise_bytes=None),
    ]
    assert run_warnings("ext4", "mailstore", {}, quiet) == []
    assert run_warnings("ext4", "block", {**BLOCK, "direct": False}, facts[:1]) == []


def test_engine_warnings_are_grouped_by_kind_with_their_ops() -> None:
    facts = [
        RunFacts(1, engine_warnings=(("short_run", "create", "took 0.1 s", "use more files"),
                                     ("short_run", "scan", "took 0.01 s", "use more files"))),
        RunFacts(2, engine_warnings=(("short_run", "create", "took 0.2 s", "use more files"),)),
    ]  # fmt: skip
    ws = run_warnings("ext4", "files", {}, facts)
    assert kinds(ws) == [WarningKind.SHORT]
    assert ws[0].message == "2 of 2 runs measured under a second (create, scan)"
    assert ws[0].hint == "use more files" and ws[0].runs == (1, 2)


def test_the_engines_not_steady_is_unsteady_and_takes_the_verdict_away() -> None:
    said = "no steady state within `runtime` (10.000 s): over the last 5 rounds ..."
    facts = [
        RunFacts(1, runtime_s=5.0, engine_warnings=(("not_steady", None, said, "give more"),)),
        RunFacts(2, runtime_s=5.0),
    ]
    [w] = run_warnings("btrfs", "oltp", {}, facts)
    assert w.kind == WarningKind.UNSTEADY and w.kind in SUPPRESSING
    assert w.runs == (1,) and w.message == f"1 of 2 runs: {said}" and w.hint == "give more"
