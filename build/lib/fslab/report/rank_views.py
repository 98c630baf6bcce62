"""The ranks of multi-host runs (`fslab run --hosts`, docs/multihost.md) as every view
shows them: `fslab compare --ranks` (a terminal table), `fslab report --ranks` (a section
of the HTML and Markdown reports) and `fslab export --ranks` (a row per rank) all read
them from here, so a rank's numbers are the same everywhere.

Per rank: its rate over its own runtime, its share of its run's I/Os and when its
measured start came after the run's first rank's; per run, how even its ranks were as
`fslab.rank_merge` stored it (imbalance, start skew); per point, one sentence of that.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from fslab.params import format_param, varying_keys
from fslab.report.findings import Sentence, Span
from fslab.store.query import RankRow, ResultsError
from fslab.units import format_count

__all__ = [
    "INTRO", "RANK_COLUMNS", "RankLine", "RankedPoint", "RankedRun", "Ranks", "format_offset",
    "rank_cells", "rank_views", "ranks_sentence", "sentence_text",
]  # fmt: skip


class RankLine(NamedTuple):
    """One rank of a run (a tuple: a large study has hundreds of thousands, made fast)."""

    rank: int
    host: str
    status: str
    """The rank's engine report's: ok, failed or interrupted."""
    start_unix_s: float
    """Its measured start (after the ramp), by its host's clock."""
    runtime_s: float
    ios: int
    bytes: int
    iops: float | None
    """Its I/Os over its own runtime (the run's rates are over the span of all ranks);
    None where it ran for no time."""
    bw_bytes: float | None
    share: float | None
    """Its part of the run's I/Os, 0 to 1; None where the run did none."""
    start_offset_s: float
    """How long after the run's earliest measured start its own came."""


@dataclass(frozen=True)
class RankedRun:
    """One completed multi-host run and its ranks, in rank order."""

    run_id: int
    rep: int
    """0-based repetition."""
    ranks: tuple[RankLine, ...]
    imbalance: float | None
    """As stored (`ranks.imbalance`): the fastest rank's rate over the slowest's; None
    where a rank did no I/O."""
    start_skew_s: float | None
    """As stored (`ranks.start_skew_s`): the latest measured start minus the earliest."""

    @property
    def ios(self) -> int:
        return sum(r.ios for r in self.ranks)

    @property
    def hosts(self) -> int:
        return len({r.host for r in self.ranks})


@dataclass(frozen=True)
class RankedPoint:
    """One point (a target and a workload's parameters) and its multi-host runs."""

    point_id: str
    target: str
    workload: str
    params: Mapping[str, Any]
    title: str
    """The workload and the parameters that tell this point from the workload's others
    here (`block bs=16KiB`)."""
    runs: tuple[RankedRun, ...]


@dataclass(frozen=True)
class Ranks:
    """The multi-host runs of a study, point by point in plan order."""

    study: str
    points: tuple[RankedPoint, ...]

    @property
    def runs(self) -> int:
        return sum(len(p.runs) for p in self.points)

    def sentences(self) -> tuple[Sentence, ...]:
        return tuple(ranks_sentence(p) for p in self.points)


INTRO = (
    "The multi-host runs (`fslab run --hosts`) rank by rank. The numbers above are each "
    "run's aggregate: the ranks' I/Os summed, rates over the span from the earliest start to "
    "the latest end. Here a rank's rates are over its own runtime, its share is of its run's "
    "I/Os, and its start is after the run's earliest; imbalance is the fastest rank's rate "
    "over the slowest's (1.00x: even), start skew the latest start after the earliest."
)
"""What a report's section of ranks shows (HTML and Markdown)."""

NONE_HINT = (
    "`fslab run STUDY.toml --hosts HOST:SLOTS,...` runs each point on several ranks at "
    "once (docs/multihost.md); without --ranks this command shows the runs' aggregate"
)


def rank_views(
    study: str,
    rows: Iterable[RankRow],
    *,
    points: Collection[str] | None = None,
    filtered: bool = False,
) -> Ranks:
    """The ranks of `rows` (`fslab.store.query.rank_rows`, in its order) as views; only
    those of `points` (point ids) where given. `filtered`: whether a `--where` chose those
    points (the error says so). Raises `ResultsError` where no run is left: every command
    that was asked for the ranks says the same."""
    by_point: dict[str, dict[int, list[RankRow]]] = {}
    for r in rows:
        if points is None or r.point_id in points:
            by_point.setdefault(r.point_id, {}).setdefault(r.run_id, []).append(r)
    if not by_point:
        scope = " matching the filter" if filtered else ""
        raise ResultsError(f"study `{study}` has no completed multi-host runs{scope}",
                           hint=NONE_HINT)  # fmt: skip
    firsts = {pid: next(iter(runs.values()))[0] for pid, runs in by_point.items()}
    of_workload: dict[str, list[RankRow]] = {}
    for f in firsts.values():
        of_workload.setdefault(f.workload, []).append(f)
    varying = {w: varying_keys(list(f.params.items()) for f in fs) for w, fs in of_workload.items()}
    out: list[RankedPoint] = []
    for pid, runs in by_point.items():
        first = firsts[pid]
        shown = [f"{k}={format_param(k, first.params[k])}" for k in varying[first.workload]
                 if k in first.params]  # fmt: skip
        out.append(
            RankedPoint(
                point_id=pid,
                target=first.target,
                workload=first.workload,
                params=first.params,
                title=" ".join([first.workload, *shown]),
                runs=tuple(_run(ranks) for ranks in runs.values()),
            )
        )
    return Ranks(study, tuple(out))


def _run(rows: Sequence[RankRow]) -> RankedRun:
    total = sum(r.ios for r in rows)
    first = min(r.start_unix_s for r in rows)
    lines = tuple(
        RankLine(
            rank=r.rank,
            host=r.host,
            status=r.status,
            start_unix_s=r.start_unix_s,
            runtime_s=r.runtime_s,
            ios=r.ios,
            bytes=r.bytes,
            iops=r.ios / r.runtime_s if r.runtime_s > 0 else None,
            bw_bytes=r.bytes / r.runtime_s if r.runtime_s > 0 else None,
            share=r.ios / total if total else None,
            start_offset_s=r.start_unix_s - first,
        )
        for r in rows
    )
    head = rows[0]
    return RankedRun(head.run_id, head.rep, lines, head.run_imbalance, head.run_start_skew_s)


RANK_COLUMNS = ("rank", "host", "IOPS", "MiB/s", "share", "start")
"""The columns of a rank in every table of ranks (`rank_cells`), after its point's and
run's."""


def rank_cells(r: RankLine) -> tuple[str, ...]:
    """A rank's cells under `RANK_COLUMNS`: its rates over its own runtime, its share of
    its run's I/Os, its start after the run's first rank's (`-` where there is none)."""
    return (
        str(r.rank),
        r.host,
        "-" if r.iops is None else format_count(r.iops),
        "-" if r.bw_bytes is None else f"{r.bw_bytes / (1 << 20):.1f}",
        "-" if r.share is None else f"{r.share:.0%}",
        f"+{format_offset(r.start_offset_s)}",
    )


def format_offset(seconds: float) -> str:
    """A start offset or skew: `3.1 ms`, `1.25 s`."""
    return f"{seconds * 1e3:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def ranks_sentence(point: RankedPoint) -> Sentence:
    """`ext4` block bs=4KiB: 2 ranks on 1 host, imbalance 1.08x, start skew 3.1 ms; over
    several runs the range of the imbalance and the largest skew."""
    runs = point.runs
    ranks = sorted({len(r.ranks) for r in runs})
    hosts = sorted({r.hosts for r in runs})
    said = [
        (_plural(ranks[0], "rank") if len(ranks) == 1 else f"{ranks[0]} to {ranks[-1]} ranks")
        + " on "
        + (_plural(hosts[0], "host") if len(hosts) == 1 else f"{hosts[0]} to {hosts[-1]} hosts")
    ]
    several = len(runs) > 1
    if several:
        said.append(f"{len(runs)} runs")
    if ranks[-1] > 1:
        known = sorted(r.imbalance for r in runs if r.imbalance is not None)
        idle = len(runs) - len(known)
        if known:
            lo, hi = known[0], known[-1]
            text = f"imbalance {lo:.2f}x" + (f" to {hi:.2f}x" if f"{hi:.2f}" != f"{lo:.2f}" else "")
            if idle:
                text += f" (and {_plural(idle, 'run')} with a rank that did no I/O)"
        else:
            text = "a rank did no I/O" + (" in every run" if several else "")
        said.append(text)
        skews = [r.start_skew_s for r in runs if r.start_skew_s is not None]
        if skews:
            said.append(f"start skew {'up to ' if several else ''}{format_offset(max(skews))}")
    return (Span(point.target, "target"), Span(f" {point.title}: " + ", ".join(said)))


def sentence_text(sentence: Sentence) -> str:
    """A sentence as plain text (the terminal's)."""
    return "".join(s.text for s in sentence)
