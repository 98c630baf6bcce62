"""Warnings about measurements that should not be trusted as they stand.

Each warning names what was seen and what to do about it. `fslab compare` and the reports
show the same warnings (one source: `fslab.compare` attaches them to the cells they concern).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, NamedTuple

from scipy import special as _special  # type: ignore[import-untyped]

from fslab.catalog import entry


class WarningKind(StrEnum):
    """What made a measurement doubtful."""

    NOISY = "noisy"
    """The repetitions spread more than `NOISY_CV` (coefficient of variation)."""
    OUTLIER = "outlier"
    """One repetition is far from the others (modified z-score above `OUTLIER_Z`)."""
    UNSTEADY = "unsteady"
    """The run's throughput was still drifting at its end, or (steady state on) the engine
    found no steady window before `runtime` ran out: no steady state."""
    SHORT = "short"
    """The run was too short for its numbers to mean much."""
    CACHED = "cached"
    """A buffered run whose working set fits in the page cache, or a run whose reads
    mostly never reached the device: it measured memory."""
    COMPRESSIBLE = "compressible"
    """The data written was compressible: a compressing layer would flatter it."""
    CORRUPT = "corrupt"
    """The engine read back data other than what it wrote (its `verify_failed`): the
    target did not work, so its speed is no answer."""
    STEAL = "steal"
    """The hypervisor took CPU time from the run (steal): noise, not a verdict's end."""
    ENGINE = "engine"
    """A warning of the engine's own (an ignored key, io_uring punting to workers, ...)."""


SUPPRESSING = frozenset({WarningKind.CACHED, WarningKind.UNSTEADY, WarningKind.CORRUPT})
"""The warnings that make a target's runs of a point unfit for a verdict: they measured
memory, a state still changing, or a target that returned wrong data
(`fslab.stats.decision`). A run other work disturbed
is not counted at all (`RunFacts.disturbed`)."""


@dataclass(frozen=True)
class StatWarning:
    """One warning about one target's measurements of a group (or one of its runs)."""

    kind: WarningKind
    target: str
    message: str
    """What was seen, for people: `noisy: CV 14% over 3 runs (IOPS)`."""
    hint: str
    """What to do next."""
    runs: tuple[int, ...] = ()
    """The runs (`run.id`) it concerns; empty when it concerns the samples as a whole."""


NOISY_CV = 0.10
"""Repetitions whose standard deviation exceeds 10% of their mean are called noisy. The
Phoronix Test Suite re-runs above 3.5%; on shared virtual machines 5-10% is common, so 10%
flags the points whose verdicts are weak, not every point of a VM."""
OUTLIER_Z = 3.5
"""Modified z-score `0.6745 (x - median) / MAD` above which a repetition is an outlier
(Iglewicz and Hoaglin, 1993: "How to Detect and Handle Outliers", the value they advise)."""
OUTLIER_MIN_CHANGE = 0.02
"""...and off the median by more than this share of it: the score is scale-free, so
where the others agree almost exactly (a replay paced by its trace: 408, 408, 407.8 IOPS)
a 0.05% step would score -4 and be called far."""
UNSTEADY_DRIFT = 0.20
"""A run whose IOPS trend (least-squares line over its measured intervals) moves by more
than 20% of its mean from start to end, with p < 0.05, never reached steady state."""
MIN_TREND_POINTS = 5
"""Intervals needed before a trend is judged (fewer: no verdict on steadiness)."""
SHORT_RUN_S = 5.0
"""Block runs shorter than this measure start-up more than the steady state."""


class RunFacts(NamedTuple):
    """What one completed run says about itself (engine warnings, telemetry, series).
    A named tuple: compare makes one per run, 100,000 for a large study."""

    run_id: int
    runtime_s: float | None = None
    engine_warnings: tuple[tuple[str, str | None, str, str | None], ...] = ()
    """(kind, op of a files run or None, message, hint) as the engine reported them."""
    intervals: int = 0
    contaminated_intervals: int = 0
    reasons: tuple[str, ...] = ()
    """Why contaminated: `foreign_cpu`, `steal`, `memory_pressure`."""
    trend: tuple[float, float] | None = None
    """(relative drift, p-value of the slope) of the run's IOPS over its measured (not ramp)
    intervals, by `trend()`, worked out when the run was stored; None when too short."""
    available_min_bytes: float | None = None
    """The least memory available during the run (MemAvailable)."""
    workload_read_bytes: float | None = None
    """What the engine read (block and application runs)."""
    device_read_bytes: float | None = None
    """What the target's devices read meanwhile (telemetry)."""
    disturbers: tuple[tuple[str, int, float, float], ...] = ()
    """Who disturbed the run: the foreign processes of its contaminated intervals, (name,
    pid, CPU seconds, % of one CPU there), most CPU first."""
    rep: int | None = None
    """The run's pass or round (`run.rep`): what a blocked design pairs its runs by."""
    foreign_cpu_pct: float | None = None
    """CPU other processes used over the whole run, % of one CPU (None: not watched):
    what a blocked design judges disturbance by (`fslab.stats.disturbance`)."""
    workload_write_bytes: float | None = None
    """What the engine wrote over the measured part (block and application runs)."""
    dirty_rise_bytes: float | None = None
    """The largest rise of dirty page-cache memory over the measured part (None: not
    told apart from the layout before it)."""

    @property
    def disturbed(self) -> bool:
        """Other work disturbed the run (foreign CPU or memory pressure over a second or
        more): it is measured again, not counted (`fslab.compare`)."""
        return self.contaminated_intervals > 0


UNCACHED_SHARE = 0.5
"""Reads reaching the devices at under this share of what the workload read: the page
cache (or a layer below that caches) served the rest."""
MIN_CACHE_CHECK_BYTES = 64 << 20
"""Reads fewer than this are not judged (read-ahead and metadata blur small counts)."""


DIRTY_RISE_BYTES = 32 << 20
"""Dirty memory rising this far while a run wrote with direct I/O: its writes went through
the page cache. Measured here: direct writes on ext4, xfs and btrfs (with and without data
checksums) raise it by 0-2 MiB; the mail store on ext4 + fscrypt, whose O_DIRECT the
kernel turns into buffered I/O, by about 250 MiB every few seconds (docs/statistics.md)."""


def modified_z_scores(samples: Sequence[float]) -> list[float] | None:
    """`0.6745 (x - median) / MAD` per sample; None when the MAD is 0 (more than half the
    samples equal: nothing can be called far from them) or n < 3."""
    if len(samples) < 3:
        return None
    med = statistics.median(samples)
    mad = statistics.median(abs(x - med) for x in samples)
    if mad == 0:
        return None
    return [0.6745 * (x - med) / mad for x in samples]


def noisy_warning(target: str, what: str, n: int, cv: float) -> StatWarning:
    """`what`'s `n` repetitions on `target` spread with coefficient of variation `cv`."""
    return StatWarning(
        WarningKind.NOISY,
        target,
        f"{what}: the {n} runs spread widely (CV {cv:.0%}, over {NOISY_CV:.0%})",
        "repeat more (`repeat = N`) or quiet the machine; verdicts here are weak",
    )


def outlier_warning(
    target: str, what: str, i: int, n: int, value: float, median: float, z: float, run: int | None
) -> StatWarning:
    """Repetition `i` (from 0) of `n`, of run `run`, is far from the median: modified z `z`."""
    return StatWarning(
        WarningKind.OUTLIER,
        target,
        f"{what}: run {i + 1} of {n} is an outlier ({value:.4g} against a "
        f"median of {median:.4g}; modified z {z:+.1f})",
        "look at that run's telemetry for what disturbed it; re-run the point",
        runs=(run,) if run is not None else (),
    )


def sample_warnings(
    target: str, what: str, samples: Sequence[float], runs: Sequence[int] = ()
) -> list[StatWarning]:
    """Noise and outliers in one target's repetitions of one metric (`what`, for people)."""
    out: list[StatWarning] = []
    n = len(samples)
    if n < 2:
        return out
    mean = math.fsum(samples) / n
    stdev = math.sqrt(math.fsum((x - mean) ** 2 for x in samples) / (n - 1))
    cv = stdev / abs(mean) if mean else 0.0
    if cv > NOISY_CV:
        out.append(noisy_warning(target, what, n, cv))
    z = modified_z_scores(samples)
    if z is not None:
        med = statistics.median(samples)
        for i, v in enumerate(z):
            if abs(v) > OUTLIER_Z and abs(samples[i] - med) > OUTLIER_MIN_CHANGE * abs(med):
                run = runs[i] if i < len(runs) else None
                out.append(outlier_warning(target, what, i, n, samples[i], med, v, run))
    return out


def trend(series: Sequence[tuple[float, float]]) -> tuple[float, float] | None:
    """(relative drift over the run, p-value of the slope) of a least-squares line through
    `series`; None with too few points or a zero mean."""
    if len(series) < MIN_TREND_POINTS:
        return None
    ts = [t for t, _ in series]
    ys = [y for _, y in series]
    mean = statistics.fmean(ys)
    if mean == 0 or max(ts) == min(ts):
        return None
    if statistics.pvariance(ys) == 0:
        return (0.0, 1.0)
    # Least squares, as scipy.stats.linregress: the slope, and the two-sided p of its
    # t statistic `r sqrt((n - 2) / (1 - r^2))` with n - 2 degrees of freedom.
    n = len(ts)
    mt = statistics.fmean(ts)
    sxx = sum((t - mt) ** 2 for t in ts)
    sxy = sum((t - mt) * (y - mean) for t, y in zip(ts, ys, strict=True))
    syy = sum((y - mean) ** 2 for y in ys)
    slope = sxy / sxx
    r = max(-1.0, min(1.0, sxy / math.sqrt(sxx * syy)))
    if abs(r) == 1.0:
        p = 0.0
    else:
        t_stat = r * math.sqrt((n - 2) / (1 - r * r))
        p = float(2 * _special.stdtr(n - 2, -abs(t_stat)))
    drift = slope * (max(ts) - min(ts)) / mean
    return drift, p


def run_warnings(
    target: str, kind: str, params: Mapping[str, Any], facts: Sequence[RunFacts]
) -> list[StatWarning]:
    """What one target's runs of one point say about themselves, one warning per kind."""
    e = entry(kind)
    if not (e.checks_short_run or e.checks_block_params) and all(_quiet(f) for f in facts):
        return []  # the common case, made cheap: a large study asks for every point
    out: list[StatWarning] = []
    n = len(facts)

    def runs_of(pred: Any) -> tuple[int, ...]:
        return tuple(f.run_id for f in facts if pred(f))

    def of_n(ids: tuple[int, ...]) -> str:
        return "the run" if n == 1 else f"{len(ids)} of {n} runs"

    # Engine warnings (the engine's own `short_run` and `not_steady` included), one per kind.
    engine: dict[str, tuple[str, str | None, dict[int, None], dict[str, None]]] = {}
    for f in facts:
        for k, op, message, hint in f.engine_warnings:
            said_so = engine.setdefault(k, (message, hint, {}, {}))
            said_so[2][f.run_id] = None
            if op:
                said_so[3][op] = None
    for k, (message, hint, run_set, op_set) in engine.items():
        ids_ = tuple(run_set)
        ops = f" ({', '.join(op_set)})" if op_set else ""
        if k == "short_run":
            said = f"{of_n(ids_)} measured under a second{ops}"
        else:
            said = f"{of_n(ids_)}{ops}: {message}"
        wk = _ENGINE_KINDS.get(k, WarningKind.ENGINE)
        out.append(StatWarning(wk, target, said, hint or "", runs=ids_))
    if e.checks_short_run and "short_run" not in engine:
        short = tuple(
            f.run_id
            for f in facts
            # A steady window of 5 rounds of 1 s is 5 s, give or take a float's last bit.
            if f.runtime_s is not None and f.runtime_s < SHORT_RUN_S - 1e-6
        )
        if short:
            out.append(
                StatWarning(
                    WarningKind.SHORT,
                    target,
                    f"{of_n(short)} measured under {SHORT_RUN_S:g} s",
                    "give the workload a longer `runtime` (and a `ramp_time`)",
                    runs=short,
                )
            )

    drifting = [
        (f.run_id, t[0])
        for f in facts
        if (t := f.trend) is not None and abs(t[0]) > UNSTEADY_DRIFT and t[1] < 0.05
    ]
    if drifting:
        ids = tuple(r for r, _ in drifting)
        worst = max((d for _, d in drifting), key=abs)
        out.append(
            StatWarning(
                WarningKind.UNSTEADY,
                target,
                f"{of_n(ids)} never reached steady state: IOPS drifted {worst:+.0%} from "
                "start to end",
                "add a `ramp_time` and a longer `runtime` (caches, write-back and SLC "
                "caches take time to settle)",
                runs=ids,
            )
        )

    stolen = tuple(f.run_id for f in facts if "steal" in f.reasons)
    if stolen:
        out.append(
            StatWarning(
                WarningKind.STEAL,
                target,
                f"{of_n(stolen)}: the hypervisor took over 5% of the CPU time (steal) for a "
                "second or more",
                "on a virtual machine the I/O path itself shows as steal (direct I/O to a "
                "virtual disk does), and other tenants add to it: noise the repetitions carry "
                "into the intervals (in random order, adaptive studies spread it over the "
                "targets); on a shared host, measure when it is quiet",
                runs=stolen,
            )
        )

    asked = params.get("direct")
    direct = asked if isinstance(asked, bool) else e.direct_unless_said
    served = [
        (f.run_id, f.device_read_bytes / f.workload_read_bytes)
        for f in facts
        if f.workload_read_bytes is not None
        and f.device_read_bytes is not None
        and f.workload_read_bytes >= MIN_CACHE_CHECK_BYTES
        and f.device_read_bytes < UNCACHED_SHARE * f.workload_read_bytes
    ]
    if served:
        ids = tuple(r for r, _ in served)
        most = max(share for _, share in served)
        out.append(
            StatWarning(
                WarningKind.CACHED,
                target,
                f"{of_n(ids)}: the devices (and any disk under a loop image) read "
                + ("under 1%" if most < 0.01 else f"at most {most:.0%}")
                + " of what the workload read; memory served the rest"
                + (", although the I/O was direct" if direct else ""),
                "direct I/O falls back to buffered I/O where a file system cannot do it "
                "(fscrypt without inline encryption; ntfs-3g and other FUSE file systems), "
                "and a loop device with "
                "`loop.direct_io = false` reads through the host's page cache: read these "
                "numbers as including the page cache, or make the data well larger than "
                "memory"
                if direct
                else "use `direct = true`, or data well larger than memory",
                runs=ids,
            )
        )

    piled = [f for f in facts if _piled_up(f)]
    if piled and direct:
        ids = tuple(f.run_id for f in piled)
        most = max(f.dirty_rise_bytes or 0.0 for f in piled)
        out.append(
            StatWarning(
                WarningKind.CACHED,
                target,
                f"{of_n(ids)}: dirty page-cache memory rose by up to {most / (1 << 20):.0f} MiB "
                "while the workload wrote with direct I/O: its writes went through the page "
                "cache (or another program's did at the same time)",
                "direct I/O falls back to buffered I/O where a file system cannot do it "
                "(fscrypt without inline encryption, btrfs with compression, for two): read "
                "these numbers as including the page cache; if another program was writing, "
                "run again when it is not",
                runs=ids,
            )
        )

    if e.checks_block_params:
        rw = str(params.get("rw", ""))
        size = params.get("file_size")
        # RWF_DONTCACHE reads keep no pages: the measured check above still applies.
        buffered = params.get("direct") is False and not params.get("uncached")
        reads = "read" in rw or rw in ("rw", "randrw")
        if buffered and reads and isinstance(size, int):
            fits = runs_of(
                lambda f: f.available_min_bytes is not None and size < f.available_min_bytes
            )
            if fits:
                out.append(
                    StatWarning(
                        WarningKind.CACHED,
                        target,
                        f"buffered reads of a {size / (1 << 30):.3g} GiB file with more memory "
                        f"available ({of_n(fits)}): the page cache may have served them",
                        "use `direct = true`, or a `file_size` well above the memory",
                        runs=fits,
                    )
                )
        writes = "write" in rw or rw in ("rw", "randrw")
        if writes and params.get("buffer_content") == "zeros":
            out.append(
                StatWarning(
                    WarningKind.COMPRESSIBLE,
                    target,
                    "the data written is zeros: compression, deduplication or thin "
                    "provisioning below would make it look faster than real data",
                    'leave `buffer_content` at its default ("random")',
                )
            )
    return out


def _piled_up(f: RunFacts) -> bool:
    """Whether dirty memory rose past `DIRTY_RISE_BYTES` while the run wrote at least
    `MIN_CACHE_CHECK_BYTES`."""
    return (
        f.dirty_rise_bytes is not None
        and f.workload_write_bytes is not None
        and f.workload_write_bytes >= MIN_CACHE_CHECK_BYTES
        and f.dirty_rise_bytes >= DIRTY_RISE_BYTES
    )


def _quiet(f: RunFacts) -> bool:
    """Whether none of the checks below that apply to every kind can fire for this run."""
    return (
        not _piled_up(f)
        and not f.engine_warnings
        and not f.reasons
        and (f.trend is None or abs(f.trend[0]) <= UNSTEADY_DRIFT or f.trend[1] >= 0.05)
        and (
            f.workload_read_bytes is None
            or f.device_read_bytes is None
            or f.workload_read_bytes < MIN_CACHE_CHECK_BYTES
            or f.device_read_bytes >= UNCACHED_SHARE * f.workload_read_bytes
        )
    )


_ENGINE_KINDS = {"short_run": WarningKind.SHORT, "not_steady": WarningKind.UNSTEADY,
                 "verify_failed": WarningKind.CORRUPT}  # fmt: skip
"""The engine's warnings that are one of the lab's kinds; the others are `engine`. A
`not_steady` run is `unsteady`: the engine judged it on its rounds (and the lab's own
trend is not worked out for such a run, `fslab.store.derive`)."""
