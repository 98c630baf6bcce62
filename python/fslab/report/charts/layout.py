"""How a workload's groups are laid out into charts and panels, and what they are called.

Every kind of chart sorts a comparison's groups the same way (by workload, split when a
chart would hold too many panels, labelled by the parameters that vary) and gives each
chart an id unique in the report; sharing this keeps the sweeps, bars and monitoring
charts of one workload titled and split alike.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from fslab.catalog import entry
from fslab.compare import Group, Row
from fslab.metrics import TELEMETRY_OP, MetricSpec
from fslab.params import format_param, varying_keys
from fslab.report.format import format_ratio, format_stat, slug

MAX_PANELS = 16
"""More points than this in one chart are split by the first parameter that varies."""
MAX_POINT_CHARTS = MAX_PANELS
"""A workload of more points than this gets no per-point charts (bars, amplification):
the summary's overview shows every point's ratio, the sweeps its numbers on their axes,
the tables everything; its monitoring view draws a few points at most
(`fslab.report.monitoring`). So a report's chart count grows with its workloads and
metrics, never with its points."""


def per_point_note(workload: str, groups: Sequence[Group]) -> str | None:
    """What a report says about a workload too large for per-point charts; None if not."""
    if len(groups) <= MAX_POINT_CHARTS:
        return None
    return (
        f"`{workload}` has {len(groups)} points: no per-point bars; the summary's overview "
        "shows every point's ratio, the tables every number, and `fslab report --where "
        "KEY=VALUE` draws a part in full."
    )


# -- ids and labels --------------------------------------------------------------------------


class Ids:
    def __init__(self) -> None:
        self.seen: set[str] = set()

    def __call__(self, *parts: str) -> str:
        base = slug("-".join(p for p in parts if p))
        out, i = base, 2
        while out in self.seen:
            out, i = f"{base}-{i}", i + 1
        self.seen.add(out)
        return out


def groups_by_workload(groups: Iterable[Group]) -> dict[str, list[Group]]:
    out: dict[str, list[Group]] = {}
    for g in groups:
        out.setdefault(g.workload, []).append(g)
    return out


def varied_params(groups: Sequence[Group]) -> list[str]:
    """The parameters with more than one value among `groups`, in order of appearance."""
    return varying_keys(g.params for g in groups)


def point_label(group: Group, keys: Sequence[str]) -> str:
    params = dict(group.params)
    return " ".join(f"{k}={format_param(k, params[k])}" for k in keys if k in params)


def engine_rows(group: Group, metric: str) -> list[Row]:
    return [r for r in group.rows if r.metric.name == metric and not r.op.endswith(TELEMETRY_OP)]


def needs_op(groups: Sequence[Group]) -> bool:
    """Whether the operation must be named: files workloads, or several ops in one group."""
    return any(entry(g.kind).ops_apart or len(engine_ops(g)) > 1 for g in groups)


def engine_ops(group: Group) -> list[str]:
    return [op for op in group.ops if not op.endswith(TELEMETRY_OP)]


def join_labels(*parts: str) -> str:
    return " · ".join(p for p in parts if p)


def split_panels(
    groups: Sequence[Group], size: Callable[[Sequence[Group]], int], keep: str = ""
) -> list[list[Group]]:
    """`groups` as is when `size` of them is at most MAX_PANELS, else split by the values
    of the first parameter that varies, `keep` excepted (recursively)."""
    if size(groups) <= MAX_PANELS:
        return [list(groups)]
    keys = [k for k in varied_params(groups) if k != keep]
    if not keys:
        return [list(groups)]
    parts: dict[str, list[Group]] = {}
    for g in groups:
        parts.setdefault(repr(dict(g.params).get(keys[0])), []).append(g)
    if len(parts) == 1:
        return [list(groups)]
    return [piece for part in parts.values() for piece in split_panels(part, size, keep)]


def common_label(groups: Sequence[Group], within: Sequence[Group]) -> str:
    """What a split-off part has in common that the whole workload does not (its title)."""
    keys = [k for k in varied_params(within) if k not in varied_params(groups)]
    return point_label(groups[0], keys) if groups else ""


def stat_hover(metric: MetricSpec, target: str, where: str, row: Row) -> str:
    cell = row.cell(target)
    s = cell.summary
    if s is None:
        return ""
    text = f"{target} · {where}: {format_stat(metric, s.mean, s.ci_half)} (n={s.n})"
    vs = cell.vs
    if vs is not None and vs.ratio is not None:
        word = vs.decision.word if vs.decision.value else "no verdict"
        text += f", {format_ratio(vs.ratio)} of the baseline ({word})"
    return text


def metric_of(groups: Sequence[Group], name: str) -> MetricSpec | None:
    for g in groups:
        for r in g.rows:
            if r.metric.name == name and not r.op.endswith(TELEMETRY_OP):
                return r.metric
    return None
