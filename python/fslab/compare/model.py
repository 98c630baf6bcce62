"""The comparison as the renderers read it: `Comparison` of `Group`s of `Row`s of `Cell`s,
the integrity cells, the questions and who disturbed runs; the `Row`s and their cells are
made from the arrays (`fslab.compare.cells.Stats`) when a renderer asks."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, cast, overload

import numpy as np
import numpy.typing as npt

from fslab.catalog import entry
from fslab.compare.cells import (
    Floats,
    Ints,
    Planned,
    Stats,
    numbers_of,
)
from fslab.compare.where import canonical
from fslab.integrity_words import OUTCOMES
from fslab.metrics import (
    JETSTRESS_OP,
    TELEMETRY_OP,
    MetricSpec,
)
from fslab.params import (
    MISSING,
)
from fslab.stats.decision import (
    EQUIVALENCE_MARGIN,
    MIN_PAIRS,
    Judgement,
    log_error,
)
from fslab.stats.summary import ALPHA, CONFIDENCE, Summary
from fslab.stats.warnings import (
    RunFacts,
    StatWarning,
)


@dataclass(frozen=True)
class Cell:
    """One target's repetitions of one metric. `summary` is None when no completed run of
    the target has this operation; `vs` (the decision rule against the baseline) is None
    for the baseline, a pass/fail row, and when either side has no data."""

    target: str
    samples: tuple[float, ...]
    summary: Summary | None
    vs: Judgement | None
    warnings: tuple[StatWarning, ...] = ()
    """What makes these numbers doubtful (noise, outliers, ...); see `fslab.stats.warnings`."""


class Row:
    """One operation's metric across the targets. Its numbers sit in the comparison's
    arrays (`numbers()`, per target); `cells` makes the cell objects on first use. (A
    plain class: a large study has a million rows, and a dataclass costs more to make.)"""

    __slots__ = ("_cells", "_i", "_stats", "metric", "op")

    def __init__(self, op: str, metric: MetricSpec, stats: Stats, i: int) -> None:
        self.op = op
        self.metric = metric
        self._stats = stats
        self._i = i
        self._cells: tuple[Cell, ...] | None = None

    def __repr__(self) -> str:
        return f"Row(op={self.op!r}, metric={self.metric.name!r})"

    @property
    def cells(self) -> tuple[Cell, ...]:
        if self._cells is None:
            self._cells = self._make_cells()
        return self._cells

    def _make_cells(self) -> tuple[Cell, ...]:
        st, r = self._stats, self._i
        # The row's numbers read at once: a summary of a large study makes 100,000 rows.
        counts, means = st.count[r].tolist(), st.mean[r].tolist()
        stdevs, halves = st.stdev[r].tolist(), st.ci_half[r].tolist()
        starts, values = st.start[r].tolist(), st.values
        judged: list[Judgement | None] | None = None
        out: list[Cell] = []
        for t, name in enumerate(st.targets):
            n = int(counts[t])
            if n == 0:
                out.append(Cell(target=name, samples=(), summary=None, vs=None))
                continue
            two = n >= 2
            summary = Summary(
                n=n,
                mean=means[t],
                stdev=stdevs[t] if two else None,
                ci_half=halves[t] if two else None,
                confidence=st.confidence,
            )
            vs = None
            if not st.is_base[t]:
                if judged is None:
                    judged = st.judgements(r)
                vs = judged[t]
            start = int(starts[t])
            out.append(
                Cell(
                    target=name,
                    samples=tuple(values[start : start + n].tolist()),
                    summary=summary,
                    vs=vs,
                    warnings=st.noise.get((r, t), ()),
                )
            )
        return tuple(out)

    def cell(self, target: str) -> Cell:
        for c in self.cells:
            if c.target == target:
                return c
        raise KeyError(target)

    def measured(self, target: str) -> bool:
        """Whether `target` has a completed run here (`cell(target).summary` is not
        None), without making the row's cells."""
        st = self._stats
        return bool(st.count[self._i, st.targets.index(target)] > 0)

    def vs(self, target: str) -> Judgement | None:
        """`cell(target).vs`, without making the row's cells: a summary reads the verdicts
        of a hundred thousand rows and nothing else of most of them."""
        if self._cells is not None:
            return self.cell(target).vs
        st = self._stats
        t = st.targets.index(target)
        if st.is_base[t] or st.count[self._i, t] == 0:
            return None
        return st.judgements(self._i)[t]

    @property
    def warnings(self) -> tuple[StatWarning, ...]:
        """The noise and outlier warnings of this row's cells, in target order."""
        st = self._stats
        if self._i not in st.noisy_rows:
            return ()
        return tuple(w for t in range(len(st.targets)) for w in st.noise.get((self._i, t), ()))


class PlannedRows(Sequence[Row]):
    """A group's rows as `_Grouping.build` planned them: the `Row` objects are made when
    someone asks for one; the JSON renderer reads the plan and the indices instead (a
    study of 100,000 runs has half a million rows)."""

    __slots__ = ("_made", "_some", "cols", "ids", "plan", "stats")

    def __init__(
        self,
        stats: Stats,
        plan: Sequence[Planned],
        cols: npt.NDArray[np.int64],
        ids: npt.NDArray[np.int64],
    ) -> None:
        self.stats, self.plan = stats, plan
        self.cols, self.ids = cols, ids
        """Row j is `plan[cols[j]]`, its numbers in row `ids[j]` of `stats`."""
        self._made: tuple[Row, ...] | None = None
        self._some: dict[int, Row] = {}
        """The rows `matching` made, by position: the same objects `_rows` then returns,
        so their cells are computed once."""

    def _rows(self) -> tuple[Row, ...]:
        if self._made is None:
            plan, stats, some = self.plan, self.stats, self._some
            self._made = tuple(
                some.get(k) or Row(plan[j][0], plan[j][1], stats, r)
                for k, (j, r) in enumerate(zip(self.cols.tolist(), self.ids.tolist(), strict=True))
            )
        return self._made

    def passing(self) -> Iterator[Row]:
        """The rows in order, those not made yet made for this pass only and not kept: a
        renderer that reads every row once (the report's tables) holds one group's at a
        time, not the study's half a million."""
        if self._made is not None:
            yield from self._made
            return
        plan, stats, some = self.plan, self.stats, self._some
        for k, (j, r) in enumerate(zip(self.cols.tolist(), self.ids.tolist(), strict=True)):
            yield some.get(k) or Row(plan[j][0], plan[j][1], stats, r)

    def ops(self) -> tuple[str, ...]:
        """The rows' operations in order, each once."""
        plan = self.plan
        return tuple(dict.fromkeys(plan[j][0] for j in self.cols.tolist()))

    def matching(
        self, keep: Callable[[str, MetricSpec], bool], memo: dict[int, frozenset[int]]
    ) -> Iterator[Row]:
        """The rows whose op and metric `keep` accepts, in order, without making the
        others: a summary reads a few of each group's rows. Groups of one kind share a
        plan: `memo` keeps which of its entries `keep` accepts, by plan, over one pass."""
        if self._made is not None:
            yield from (r for r in self._made if keep(r.op, r.metric))
            return
        plan, stats, some = self.plan, self.stats, self._some
        ok = memo.get(id(plan))
        if ok is None:
            ok = memo[id(plan)] = frozenset(j for j, p in enumerate(plan) if keep(p[0], p[1]))
        if not ok:
            return
        for k, j in enumerate(self.cols.tolist()):
            if j in ok:
                if (row := some.get(k)) is None:
                    row = some[k] = Row(plan[j][0], plan[j][1], stats, int(self.ids[k]))
                yield row

    def __len__(self) -> int:
        return len(self.ids)

    @overload
    def __getitem__(self, i: int) -> Row: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[Row]: ...
    def __getitem__(self, i: int | slice) -> Row | Sequence[Row]:
        return self._rows()[i]

    def __iter__(self) -> Iterator[Row]:
        return iter(self._rows())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence):
            return tuple(self) == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._rows())

    def __repr__(self) -> str:
        return repr(self._rows())

    def cell_warnings(self) -> list[StatWarning]:
        """The noise and outlier warnings of these rows' cells, in row and target order."""
        st = self.stats
        noisy = st.noisy_rows
        if not noisy:
            return []
        noise, n_t = st.noise, len(st.targets)
        return [
            w
            for r in self.ids.tolist()
            if r in noisy
            for t in range(n_t)
            for w in noise.get((r, t), ())
        ]


def each_row(rows: Sequence[Row]) -> Iterator[Row]:
    """A group's rows in order for one pass: of `PlannedRows`, without keeping those it
    makes (`PlannedRows.passing`)."""
    return rows.passing() if isinstance(rows, PlannedRows) else iter(rows)


def rows_matching(
    rows: Sequence[Row],
    keep: Callable[[str, MetricSpec], bool],
    memo: dict[int, frozenset[int]] | None = None,
) -> Iterator[Row]:
    """A group's rows whose op and metric `keep` accepts; of `PlannedRows`, without making
    the others. One `memo` over a pass through the groups with the same `keep` judges
    each plan once."""
    if isinstance(rows, PlannedRows):
        return rows.matching(keep, {} if memo is None else memo)
    return (r for r in rows if keep(r.op, r.metric))


def _indices(rows: Sequence[Row]) -> Ints:
    """The rows' positions in their comparison's arrays (`Stats`)."""
    return np.fromiter((r._i for r in rows), dtype=np.int64, count=len(rows))


def log_ratios(rows: Sequence[Row], target: str, other: str) -> tuple[Floats, Floats, Floats]:
    """Per row (of one comparison): the difference of the mean logs of `target`'s and
    `other`'s samples (the log of their ratio of geometric means), its standard error and
    Welch's df (`fslab.stats.decision.log_error`); NaN where a side has no positive
    samples, NaN error where a side has a single run. What a summary over many points
    combines (`fslab.stats.decision.combine`). In a blocked study, a target against its
    own baseline (either way round): the mean per-round log ratio, its error and n - 1
    df, as the cells' verdicts (`Stats.paired`), so a summary's lead of the baseline
    over a target is the target's own ratio turned over, over the same rounds; two other
    targets are compared as independent samples."""
    if not rows:
        empty = np.zeros(0)
        return empty, empty, empty
    st = rows[0]._stats
    idx = _indices(rows)
    a, b = st.targets.index(target), st.targets.index(other)
    mean_log, var_log = st.log_stats
    d = mean_log[idx, a] - mean_log[idx, b]
    se, df = log_error(st.count[idx, b], var_log[idx, b], st.count[idx, a], var_log[idx, a])
    paired, sign = (a, 1.0) if int(st.base_of[a]) == b else (b, -1.0)
    if a != b and int(st.base_of[paired]) == (b if paired == a else a):
        pairs, m_d, v_d = st.paired
        n = pairs[idx, paired]
        p = n >= MIN_PAIRS
        if p.any():
            with np.errstate(invalid="ignore", divide="ignore"):
                d = np.where(p, sign * m_d[idx, paired], d)
                p_se = np.sqrt(v_d[idx, paired] / n)
                se = np.where(p, p_se, se)
                df = np.where(p, np.where(p_se > 0, n - 1.0, np.inf), df)
    return d, se, df


def summaries(rows: Sequence[Row], target: str) -> tuple[Ints, Floats, Floats]:
    """Per row (of one comparison): `target`'s completed runs, their mean and standard
    deviation (NaN under two runs), as `cell(target).summary` holds them, without making
    the rows' cells."""
    if not rows:
        return np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0)
    st = rows[0]._stats
    idx = _indices(rows)
    t = st.targets.index(target)
    n = st.count[idx, t].astype(np.int64)
    return n, st.mean[idx, t], np.where(n >= 2, st.stdev[idx, t], np.nan)


NUMBERS = ("n", "mean", "stdev", "ci_half", "ratio", "ratio_low", "ratio_high", "verdict",
           "more_runs", "no_verdict")  # fmt: skip
"""The numbers `row_numbers` gives per row and target, in order: the summary (n, mean,
stdev, ci_half) and the decision rule against the baseline (the ratio of geometric means
target / baseline and its interval, the verdict: `baseline` for the baseline's cell, else
better / worse / equivalent / inconclusive or None; the repetitions per side that would
likely decide an inconclusive cell; why there is no verdict)."""


def row_numbers(rows: Sequence[Row]) -> tuple[list[list[Any]], ...]:
    """The `NUMBERS` of these rows (of one comparison), for the data renderers, each a
    list with one element per row holding one per target (NaN or None where there is
    none). One call per group: a large study has a million rows."""
    if not rows:
        return tuple([] for _ in NUMBERS)
    idx = _indices(rows)
    return numbers_of(rows[0]._stats, idx)


def planned_numbers(
    groups: Sequence[Group],
) -> tuple[list[tuple[str, MetricSpec, int, bool, str | None]], tuple[list[list[Any]], ...]] | None:
    """`row_numbers` of all these groups' rows at once, with each row's plan entry (op,
    metric, ...: one shared tuple per planned row, never a copy), without making the
    rows; None unless `_Grouping.build` made every group."""
    planned = [g.rows for g in groups]
    if not all(isinstance(r, PlannedRows) for r in planned):
        return None
    rows = cast(list[PlannedRows], planned)
    if not rows:
        return [], tuple([] for _ in NUMBERS)
    heads = [r.plan[j] for r in rows for j in r.cols.tolist()]
    idx = np.concatenate([r.ids for r in rows])
    return heads, numbers_of(rows[0].stats, idx)


@dataclass(frozen=True)
class Group:
    """One workload with one value per parameter, across the targets.

    `params` are the point's parameters as stored (sizes in bytes), in stored order;
    `runs` the number of completed repetitions per target (0 when none completed)."""

    workload: str
    kind: str
    params: tuple[tuple[str, Any], ...]
    runs: Mapping[str, int]
    rows: Sequence[Row]
    warnings: tuple[StatWarning, ...] = ()
    """Warnings about whole runs of the group (too short, unsteady, cached),
    per target; those about one metric's samples are on the cells."""
    limits: Mapping[str, float] = field(default_factory=dict)
    """The limits a verdict judged the runs by, as the engine stored them per run: its
    check (`db_read_lat_ms_mean`, ...) -> the maximum in ms. Empty without a verdict."""
    points: Mapping[str, str] = field(default_factory=dict)
    """Each target's point (`point.id`): what a repetition of the group runs again."""

    def headline_rows(self) -> tuple[Row, ...]:
        """The rows the group is judged by (`is_headline`)."""
        return tuple(r for r in self.rows if is_headline(self.kind, r))

    def all_warnings(self) -> tuple[StatWarning, ...]:
        """The group's warnings and its cells', each once, in order."""
        found = self.warnings_seen()
        return found if found is self.warnings else tuple(dict.fromkeys(found))

    def warnings_seen(self) -> tuple[StatWarning, ...]:
        """`all_warnings`, where one of them may come more than once: what counting by kind
        and target needs, without hashing each (a large study has a million)."""
        rows = self.rows
        if isinstance(rows, PlannedRows):
            cells = rows.cell_warnings()
        else:
            cells = [w for r in rows for w in r.warnings]
        return (*self.warnings, *cells) if cells else self.warnings

    def row(self, op: str, metric: str) -> Row:
        for r in self.rows:
            if r.op == op and r.metric.name == metric:
                return r
        raise KeyError((op, metric))

    @property
    def ops(self) -> tuple[str, ...]:
        rows = self.rows
        if isinstance(rows, PlannedRows):  # from the plan: no row made
            return rows.ops()
        return tuple(dict.fromkeys(r.op for r in rows))


@dataclass(frozen=True)
class IntegrityCell:
    """One target's completed runs of one integrity point (`kind = "integrity"`): what
    its file system did with the point's fault, run by run. Integrity points have no
    compared numbers (no `Group`); their outcomes are words (`fslab.integrity_words`)."""

    target: str
    workload: str
    point: str
    """The point's id."""
    fault: str
    region: str
    params: tuple[tuple[str, Any], ...]
    """The point's parameters as stored, in the order people read them (`faults` and
    `region` among them)."""
    outcomes: tuple[str, ...]
    """Each completed run's outcome, in run order."""
    runs: tuple[int, ...]
    """The runs' ids, in the same order."""
    errnos: tuple[int | None, ...] = ()
    repaired_by: tuple[str | None, ...] = ()

    def counts(self) -> dict[str, int]:
        """Runs per outcome, most first (ties in `OUTCOMES` order)."""
        tally: dict[str, int] = {}
        for o in self.outcomes:
            tally[o] = tally.get(o, 0) + 1
        rank = {o: i for i, o in enumerate(OUTCOMES)}
        return dict(sorted(tally.items(), key=lambda kv: (-kv[1], rank.get(kv[0], 99), kv[0])))


@dataclass(frozen=True)
class Question:
    """Targets compared with each other: those with one `question` key (`RAID layout`),
    or a study's targets when none has one (`name` is then empty). The first target is
    the baseline the others are compared with."""

    name: str
    targets: tuple[str, ...]

    @property
    def baseline(self) -> str:
        return self.targets[0]


@dataclass(frozen=True)
class Disturber:
    """A process that disturbed runs not counted (`DISTURBED`): named as the kernel names
    it (`comm`), with the pid of the run it disturbed most."""

    name: str
    pid: int
    runs: int
    """Disturbed runs it was named in."""
    cpu_pct: float
    """The most it used, % of one CPU over a disturbed run's contaminated intervals."""


def disturbers_of(facts: Iterable[RunFacts]) -> tuple[Disturber, ...]:
    """The processes named in these runs' facts, by name, most runs (then CPU) first."""
    by: dict[str, Disturber] = {}
    for f in facts:
        seen: set[str] = set()  # a run counts once per name, whatever pids it had
        for name, pid, _cpu_s, pct in f.disturbers:
            d = by.get(name)
            once = 0 if name in seen else 1
            seen.add(name)
            if d is None:
                by[name] = Disturber(name, pid, once, pct)
            else:
                top = pct > d.cpu_pct
                by[name] = Disturber(name, pid if top else d.pid, d.runs + once,
                                     max(pct, d.cpu_pct))  # fmt: skip
    return tuple(sorted(by.values(), key=lambda d: (-d.runs, -d.cpu_pct, d.name)))


@dataclass(frozen=True)
class Comparison:
    """A study's results, grouped and compared with the baseline target.

    `targets` are the columns, in study order (a question's together); `studies` every
    study in the database, most recent first; `skipped_runs` counts the runs not used, by
    status (failed, interrupted, running). Each target is compared with its question's
    baseline; `baseline` is the one asked for, else the first question's (a study without
    questions has one question)."""

    db_path: Path
    study: str
    studies: tuple[str, ...]
    targets: tuple[str, ...]
    baseline: str
    where: tuple[tuple[str, str], ...]
    groups: tuple[Group, ...]
    skipped_runs: Mapping[str, int] = field(default_factory=dict)
    confidence: float = CONFIDENCE
    alpha: float = ALPHA
    margin: float = EQUIVALENCE_MARGIN
    """The equivalence margin the verdicts used (the study's `margin`, else the default)."""
    summary_metrics: tuple[str, ...] = ()
    """The metrics the study's summary answers besides the headline (its `summary` key)."""
    blocked: bool = False
    """The study's runs were blocked: each target is judged against its baseline by the
    per-round log ratios (where two rounds or more pair up)."""
    questions: tuple[Question, ...] = ()
    """The study's questions, each with its baseline first; () means one, of every target."""
    integrity: tuple[IntegrityCell, ...] = ()
    """The integrity points' outcomes, one cell per point (a target's), in plan order."""
    disturbers: tuple[Disturber, ...] = ()
    """Who disturbed the runs not counted as `DISTURBED` (those the telemetry could name)."""
    shared: tuple[Disturber, ...] = ()
    """Who shared the machine with counted runs of a blocked study: alike across each of
    their rounds, which the rounds' ratios cancel (`fslab.stats.disturbance`)."""
    latency_limits: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Per workload with a `latency_limit`, that table as written (`fslab.compare.limit`
    answers it)."""

    @cached_property
    def _baseline_of(self) -> dict[str, str]:
        return {t: q.baseline for q in self.all_questions for t in q.targets}

    @property
    def all_questions(self) -> tuple[Question, ...]:
        """`questions`, or the one question of every target (baseline first)."""
        if self.questions:
            return self.questions
        rest = tuple(t for t in self.targets if t != self.baseline)
        return (Question("", (self.baseline, *rest)),)

    def baseline_of(self, target: str) -> str:
        """The baseline `target` is compared with (a baseline's is itself)."""
        return self._baseline_of.get(target, self.baseline)

    def is_baseline(self, target: str) -> bool:
        return self.baseline_of(target) == target

    @property
    def param_keys(self) -> tuple[str, ...]:
        """Every parameter name of the groups, in order of appearance."""
        return tuple(dict.fromkeys(k for g in self.groups for k, _ in g.params))

    def common_params(self) -> tuple[tuple[str, Any], ...]:
        """The parameters with one value in every group (said once, above the tables)."""
        if not self.groups:
            return ()
        first = self.groups[0].params
        return tuple(
            (k, v)
            for k, v in first
            if all(canonical(dict(g.params).get(k, MISSING)) == canonical(v) for g in self.groups)
        )

    def varying_params(self, group: Group) -> tuple[tuple[str, Any], ...]:
        """The group's parameters that are not common to all groups (its title)."""
        common = {k for k, _ in self.common_params()}
        return tuple((k, v) for k, v in group.params if k not in common)


HEADLINE_METRIC = "iops"
"""The metric a family is judged by: IOPS for block I/O, files/s for files ops, tps for
the application models (all stored as `iops`)."""


def is_headline(kind: str, row: Row) -> bool:
    """Whether `row` is one a point of `kind` is judged by: its headline metric, for each
    of the workload's own operations (block reads and writes, files ops), or transactions
    for the application models; not the devices' (telemetry) nor JetStress's verdict."""
    if row.metric.name != HEADLINE_METRIC or row.op.endswith(TELEMETRY_OP):
        return False
    e = entry(kind)
    return row.op == e.headline_op if e.headline_op is not None else row.op != JETSTRESS_OP
