"""Everything a report shows, read once from the results database: the `Comparison`
(`fslab.compare`, which owns the statistics) and what a report adds around it: the study
file, the machine, each target's configuration as written and as in effect, and the
telemetry series of one run per target of the points the monitoring view draws.

Read-only, like `fslab compare`, through `fslab.store.query`: the database is never changed.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fslab.compare import Comparison, Group, build_comparison
from fslab.report.format import interval_level, margin_text
from fslab.report.monitoring import Candidate, monitored_groups, representative
from fslab.report.rank_views import Ranks, rank_views
from fslab.stats.summary import ALPHA, MIN_EFFECT_PCT
from fslab.store.query import DEFAULT_RESULTS, open_readonly, rank_rows
from fslab.store.records import (
    completed_run_places,
    environment,
    point_specs,
    run_times,
    study_file,
    telemetry_documents,
)
from fslab.units import format_bytes

GroupKey = tuple[str, str]
"""(workload, canonical JSON of its parameters): which points make one group."""


def group_key(workload: str, params: Iterable[tuple[str, Any]] | Mapping[str, Any]) -> GroupKey:
    """The key that ties a `Group` to its points (one per target) in the database."""
    items = dict(params.items() if isinstance(params, Mapping) else params)
    items.pop("target", None)
    return (workload, json.dumps(items, sort_keys=True))


def key_of(group: Group) -> GroupKey:
    return group_key(group.workload, group.params)


@dataclass(frozen=True)
class Environment:
    """One machine state the study's runs ran on (table `environment`)."""

    kernel: str
    cpu_model: str
    cores: int
    mem_bytes: int
    tools: Mapping[str, str | None]
    runs: int
    """How many of the compared runs ran on it."""


@dataclass(frozen=True)
class TargetInfo:
    """A target as the study wrote it and, from its first completed run, as it was made."""

    name: str
    spec: Mapping[str, Any]
    effective: Mapping[str, Any] | None


@dataclass(frozen=True)
class RunTelemetry:
    """The telemetry series of one run: for a block run the sampler's document, for a
    files run one document per operation, in the order they ran."""

    run_id: int
    rep: int
    """0-based repetition."""
    kind: str
    parts: tuple[tuple[str, Mapping[str, Any]], ...]
    """(operation, `Telemetry.to_dict()` document); the operation is "" for a block run."""
    runs: int = 1
    """How many completed runs of its point and target it was chosen from."""
    runtime_s: float | None = None


@dataclass(frozen=True)
class ReportData:
    """A comparison and its surroundings: what `render_html` and `render_markdown` read."""

    comparison: Comparison
    study_path: str | None
    study_toml: str
    environments: tuple[Environment, ...]
    targets: tuple[TargetInfo, ...]
    telemetry: Mapping[GroupKey, Mapping[str, RunTelemetry]] = field(default_factory=dict)
    """Per group the monitoring view draws (`monitored_groups`) and target, the
    telemetry of its representative run (`representative`), where stored."""
    ranks: Ranks | None = None
    """The ranks of the multi-host runs compared, where asked for (`--ranks`)."""
    generated_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    sources: tuple[str, ...] = ()
    """Where several results databases were compared as one (`fslab report --results A
    --results B`): per other database, what matched the first's and how the machines
    differ (`fslab.store.merge.Side.note`)."""

    def target(self, name: str) -> TargetInfo:
        for t in self.targets:
            if t.name == name:
                return t
        raise KeyError(name)


def load_report(
    db_path: Path | str = DEFAULT_RESULTS,
    study: str | None = None,
    baseline: str | None = None,
    where: Iterable[str | tuple[str, str]] = (),
    *,
    ranks: bool = False,
    generated_at: datetime | None = None,
) -> ReportData:
    """The comparison of `study` (see `build_comparison`, which raises `ResultsError` or
    `CompareError` with a hint) and the rest of what a report shows; with `ranks`, each
    rank of its multi-host runs too (`ResultsError` where it has none)."""
    comparison = build_comparison(db_path, study=study, baseline=baseline, where=where)
    with open_readonly(Path(db_path)) as con:
        study_row = study_file(con, comparison.study)
        wanted = {key_of(g) for g in comparison.groups}
        watched = {key_of(g) for g in monitored_groups(comparison.groups)}
        faulted = {cell.point for cell in comparison.integrity}
        # (point id) -> (group key, target, kind); only the points of compared groups and
        # the integrity points compared
        points: dict[str, tuple[GroupKey, str, str]] = {}
        specs: dict[str, Mapping[str, Any]] = {}
        for p in point_specs(con, study_row.id):
            specs.setdefault(p.target, _json_object(p.target_spec))
            key = group_key(p.workload, _json_object(p.params))
            if key in wanted or p.id in faulted:
                points[p.id] = (key, p.target, p.kind)
        effective: dict[str, Mapping[str, Any]] = {}
        candidates: dict[tuple[GroupKey, str], list[tuple[int, int, str]]] = {}
        env_runs: dict[int, int] = {}
        for run in completed_run_places(con, study_row.id):
            if run.point_id not in points:
                continue
            key, target, kind = points[run.point_id]
            if run.effective and target not in effective:
                effective[target] = _json_object(run.effective)
            if key in watched:
                candidates.setdefault((key, target), []).append((run.id, run.rep, kind))
            if run.environment_id is not None:
                env_runs[run.environment_id] = env_runs.get(run.environment_id, 0) + 1
        environments = environments_of(con, env_runs)
        telemetry = _telemetry(con, candidates)
        ranked = None
        if ranks:
            ranked = rank_views(comparison.study, rank_rows(con, study_row.id), points=points,
                                filtered=bool(comparison.where))  # fmt: skip

    targets = tuple(
        TargetInfo(name=t, spec=specs.get(t, {}), effective=effective.get(t))
        for t in comparison.targets
    )
    return ReportData(
        comparison=comparison,
        study_path=study_row.path,
        study_toml=study_row.toml,
        environments=environments,
        targets=targets,
        telemetry=telemetry,
        ranks=ranked,
        generated_at=generated_at or datetime.now(UTC),
    )


def _json_object(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def environments_of(
    con: sqlite3.Connection, env_runs: Mapping[int, int]
) -> tuple[Environment, ...]:
    """The machines of these runs (environment id -> how many ran there), most runs first."""
    out: list[Environment] = []
    for env_id, n in sorted(env_runs.items(), key=lambda kv: (-kv[1], kv[0])):
        row = environment(con, env_id)
        if row is None:
            continue
        out.append(
            Environment(
                kernel=row.kernel,
                cpu_model=row.cpu_model,
                cores=row.cores,
                mem_bytes=row.mem_bytes,
                tools={
                    str(k): (None if v is None else str(v))
                    for k, v in _json_object(row.tools).items()
                },
                runs=n,
            )
        )
    return tuple(out)


def _telemetry(
    con: sqlite3.Connection, candidates: Mapping[tuple[GroupKey, str], list[tuple[int, int, str]]]
) -> dict[GroupKey, dict[str, RunTelemetry]]:
    """The representative run's telemetry per group and target of `candidates` (their
    completed runs: id, repetition, kind)."""
    times = run_times(con, (run_id for runs in candidates.values() for run_id, _, _ in runs))
    by_run: dict[int, tuple[GroupKey, str, int, str, int, float | None]] = {}
    for (key, target), runs in candidates.items():
        kinds = {run_id: kind for run_id, _, kind in runs}
        chosen = representative(
            [
                Candidate(
                    run_id,
                    rep,
                    times[run_id].runtime_s if run_id in times else None,
                    run_id in times and times[run_id].contaminated_intervals > 0,
                )
                for run_id, rep, _ in runs
            ]
        )
        by_run[chosen.run_id] = (
            key, target, chosen.rep, kinds[chosen.run_id], len(runs), chosen.runtime_s
        )  # fmt: skip
    out: dict[GroupKey, dict[str, RunTelemetry]] = {}
    for run_id, data in telemetry_documents(con, by_run):
        key, target, rep, kind, n, runtime = by_run[run_id]
        doc = _json_object(data)
        if not doc:
            continue
        if "series" in doc:
            parts: tuple[tuple[str, Mapping[str, Any]], ...] = (("", doc),)
        else:  # a files run: one document per operation, in the order they ran
            parts = tuple((op, d) for op, d in doc.items() if isinstance(d, dict) and "series" in d)
        if parts:
            out.setdefault(key, {})[target] = RunTelemetry(run_id, rep, kind, parts, n, runtime)
    return out


# -- words shared by the HTML and Markdown reports -----------------------------------------

_FACTS = (
    ("fs", "file system"),
    ("kind", "storage"),
    ("devices", "devices"),
    ("image_size", "image size"),
    ("block_size", "block size"),
    ("cluster_size", "cluster size"),
    ("profile", "data profile"),
    ("data_profile", "data profile"),
    ("metadata_profile", "metadata profile"),
    ("data_checksums", "data checksums"),
    ("metadata_checksums", "metadata checksums"),
    ("encryption", "encryption"),
    ("compression", "compression"),
    ("compression_force", "compression forced"),
    ("direct_io", "direct I/O"),
    ("mkfs", "mkfs"),
    ("mount_command", "mount"),
    ("mount", "mount options in effect"),
    ("kernel", "kernel"),
)
# Long tool output and per-run details: shown whole in the effective JSON, not as facts.
_NOT_FACTS = {"raw", "loop", "caches", "label", "page_size", "queue", "mount_settings"}


def _fact_text(key: str, value: Any) -> str | None:
    if value is None:
        return None
    if key == "mkfs" and isinstance(value, Mapping):
        return str(value.get("command") or " ".join(map(str, value.get("argv", []))))
    if key == "mount" and isinstance(value, Mapping):
        return ",".join(map(str, value.get("options", [])))
    if key == "encryption" and isinstance(value, Mapping):
        driver = value.get("contents_driver")
        aes = value.get("cpu_aes")
        how = (
            f" by {driver}" + ("" if aes is None else " (CPU AES instructions)" if aes
                               else " (no CPU AES instructions: portable code)")
            if driver else ""
        )  # fmt: skip
        extra = [
            f"{value['sector_size']} B sectors" if value.get("sector_size") else "",
            "" if value.get("workqueues") is not False else "no workqueues",
        ]
        more = ", ".join(x for x in extra if x)
        text = f"{value.get('kind', '?')} {value.get('contents_mode', '')}{how}".strip()
        return f"{text}, {more}" if more else text
    if key in ("image_size", "block_size", "cluster_size") and isinstance(value, int):
        return format_bytes(value)
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, list):
        return ", ".join(map(str, value))
    if isinstance(value, Mapping):
        return None
    return str(value)


def _mount_setting_text(key: str, value: Any) -> str | None:
    """A named mount setting in effect (`mountopts.in_effect`) as the report says it."""
    if value is None:
        return None
    if key == "commit_s":
        return f"{value} s"
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


def target_facts(info: TargetInfo) -> list[tuple[str, str]]:
    """The target's configuration in effect, as (label, value), most telling first: file
    system, sizes, checksums, the mkfs and mount commands, then the file system's own
    figures (`ext4 features`, ...)."""
    eff = info.effective or {}
    out: list[tuple[str, str]] = []
    for key, label in _FACTS:
        text = _fact_text(key, eff.get(key))
        if text:
            out.append((label, text))
    known = {k for k, _ in _FACTS} | _NOT_FACTS
    for key, value in eff.items():
        if key in known:
            continue
        if isinstance(value, Mapping):
            for sub, v in value.items():
                text = _fact_text(sub, v)
                if text:
                    out.append((f"{key} {sub.replace('_', ' ')}", text))
        else:
            text = _fact_text(key, value)
            if text:
                out.append((key.replace("_", " "), text))
    settings = eff.get("mount_settings")
    if isinstance(settings, Mapping):
        for key, value in settings.items():
            text = _mount_setting_text(key, value)
            if text:
                out.append((f"mount {key.removesuffix('_s').replace('_', ' ')}", text))
    loops = eff.get("loop")
    if isinstance(loops, list) and loops:
        dio = {str(x.get("dio")) for x in loops if isinstance(x, Mapping)}
        out.append(
            ("loop direct I/O", "on: the host's page cache bypassed")
            if dio == {"1"}
            else ("loop direct I/O", "off: the results include the host's page cache")
        )
    queues = [q for q in eff.get("queue") or () if isinstance(q, Mapping)]
    if queues:
        out.append(
            ("I/O scheduler", ", ".join(dict.fromkeys(str(q.get("scheduler")) for q in queues)))
        )
        spin = {bool(q["rotational"]) for q in queues if q.get("rotational") is not None}
        if spin:
            out.append(("rotational", ", ".join("yes" if r else "no" for r in sorted(spin))))
    caches = eff.get("caches")
    if isinstance(caches, Mapping) and "dropped" in caches:
        out.append(("page cache dropped before runs", "yes" if caches["dropped"] else "no"))
    return out


def methodology(c: Comparison) -> tuple[str, ...]:
    """How the numbers were made and judged, one paragraph each (plain text)."""
    adaptive = (
        (
            "The study repeated its points adaptively: every point its minimum number of "
            "times, then more rounds (in random order) of the points whose comparisons were "
            "still undecided, with a look after each; each look, and every verdict here, "
            f"uses a {interval_level(c.alpha)} interval (set by simulation for all the looks "
            "planned), so identical targets are called different at most 5% of the time. "
            "Points that "
            "stayed inconclusive reached the maximum or the study's time budget.",
        )
        if c.alpha < ALPHA
        else ()
    )
    return (
        "Each target is made fresh from its study entry (image files on loop devices "
        "unless the study names devices or directories; the loop devices do direct I/O, "
        "bypassing the host's page cache, where a target's facts do not say otherwise), "
        "the page cache is dropped before each "
        "run, and fslab-engine runs the workload while a sampler records what the devices, "
        "CPUs and page cache did. Every run of every point is stored; only completed runs "
        "count here.",
        f"A value is the mean over a point's completed runs (n), with the half-width of its "
        f"{c.confidence:.0%} confidence interval from Student's t distribution; one run gives "
        "no interval.",
        _compared_with(c)
        + "by its ratio: the "
        + (
            "mean of its per-round ratios to the baseline (a blocked design: a group's "
            "targets ran back to back in each round, and the ratio within a round cancels "
            "the machine's drift between rounds), with Student's interval on their logs "
            if c.blocked
            else "geometric mean of its runs over the baseline's, with Welch's interval on "
            "log values "
        )
        + f"({interval_level(c.alpha)}). Better or worse when the interval excludes 1 and the "
        f"change is at least {MIN_EFFECT_PCT:g}%; equivalent when it lies within ±"
        f"{margin_text(c.margin)}; otherwise inconclusive, with the runs per side that would "
        "likely decide it. No verdict for a single run, for amounts of work (bytes, counts, "
        "CPU shares: compare those per unit of work, as write amplification does), or for "
        "runs flagged as served from the cache or unsteady; runs other work disturbed are "
        "not counted.",
        "The summary gathers, per workload and sweep family (one `rw` and operation), the "
        "geometric mean of a target's ratios over the points with its interval, and how many "
        "points were better, worse, equivalent or inconclusive; the best target is named with "
        "its margin over the next best, decided only where that margin's interval excludes 1. "
        "Each point is judged on its own, with no correction for multiple comparisons: in "
        f"a table of 40 cells about {40 * c.alpha:.0f} can be marked by chance alone when "
        "nothing differs.",
        "Write amplification is bytes the target's devices wrote per byte the workload wrote; "
        "space amplification is the space used on the file system per byte of data stored "
        "(from statvfs before and after). Device figures sum the target's own devices, not "
        "the disk under a loop image.",
        *adaptive,
    )


def _compared_with(c: Comparison) -> str:
    if not c.questions:
        return f"Each target is compared with the baseline `{c.baseline}` "
    firsts = ", ".join(f"{q.name} `{q.baseline}`" for q in c.questions)
    return f"Each target is compared with its question's baseline (its first target: {firsts}) "
