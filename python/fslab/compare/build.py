"""Making the comparison: `compare_results` turns a study's stored rows (`fslab.store.query`)
into a `Comparison`, a pure function of them; every cell's statistics and decisions at
once (numpy), rows planned once per group shape."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from fslab.catalog import entry
from fslab.compare.cells import (
    WHY,
    Planned,
    Stats,
)
from fslab.compare.model import (
    Comparison,
    Group,
    IntegrityCell,
    PlannedRows,
    Question,
    disturbers_of,
)
from fslab.compare.where import CompareError, canonical, filter_points, parse_where, pick_baseline
from fslab.metrics import (
    NOISE_METRIC,
    VERDICT_UNIT,
    Direction,
    MetricKind,
    MetricSpec,
    pseudo_metrics,
)
from fslab.params import (
    param_order,
    suggest,
)
from fslab.stats.decision import (
    EQUIVALENCE_MARGIN,
    NoVerdict,
)
from fslab.stats.disturbance import disturbed_runs
from fslab.stats.summary import ALPHA, CONFIDENCE
from fslab.stats.warnings import (
    NOISY_CV,
    OUTLIER_MIN_CHANGE,
    OUTLIER_Z,
    SUPPRESSING,
    RunFacts,
    StatWarning,
    noisy_warning,
    outlier_warning,
    run_warnings,
    sample_warnings,
)
from fslab.store.query import (
    DEFAULT_RESULTS,
    RUN_HINT,
    IntegrityRow,
    PointRow,
    ResultsError,
    StudyResults,
)

# Operations in the order people expect them; others follow in order of appearance.
_OP_ORDER = ("jetstress", "txn", "read", "write")


def compare_results(
    results: StudyResults,
    *,
    study: str,
    studies: tuple[str, ...] = (),
    db_path: Path = DEFAULT_RESULTS,
    baseline: str | None = None,
    where: Iterable[str | tuple[str, str]] = (),
    confidence: float = CONFIDENCE,
    alpha: float | None = None,
    margin: float | None = None,
) -> Comparison:
    """The comparison of one study's results (`fslab.store.query.study_results`): no
    database, no I/O. `alpha` of the verdicts: by default an adaptive study's level per
    look (`fslab.stats.sequential`), else `ALPHA`. Raises `ResultsError` or `CompareError`
    with a hint."""
    if alpha is None:
        alpha = results.level if results.level is not None else ALPHA
    if margin is None:
        margin = results.margin if results.margin is not None else EQUIVALENCE_MARGIN
    filters = parse_where(where)
    points = list(results.points)
    if not points:
        raise ResultsError(f"study `{study}` has no points yet", hint=RUN_HINT)
    targets = tuple(dict.fromkeys(p.target for p in points))
    # `target` is not a parameter: it picks the columns (the baseline among them).
    wanted_targets = [v for k, v in filters if k == "target"]
    if wanted_targets:
        for name in wanted_targets:
            if name not in targets:
                raise CompareError(
                    f"unknown --where target `{name}`: study `{study}` has no such target",
                    hint=suggest(name, targets, "targets"),
                )
        targets = tuple(t for t in targets if t in wanted_targets)
        points = [p for p in points if p.target in targets]
        filters = tuple((k, v) for k, v in filters if k != "target")
    base = pick_baseline(targets, baseline, study)
    questions = _questions(targets, results.questions, base)
    if len(questions) > 1:
        targets = tuple(t for q in questions for t in q.targets)
    else:
        questions = ()
    points = filter_points(points, filters)
    kept = {p.id for p in points}
    skipped: dict[str, int] = {}
    ok_runs: dict[int, str] = {}
    disturbed: list[RunFacts] = []
    shared: list[RunFacts] = []
    hit = _disturbed(results)
    for run in results.runs:
        if run.point_id not in kept:
            continue
        facts = results.facts.get(run.id)
        if run.status == "ok" and _never_steady(facts):
            # Its numbers are a window that never settled: no sample of the steady state.
            # Left out like a failed run (an adaptive study runs the point again).
            skipped[NOT_STEADY] = skipped.get(NOT_STEADY, 0) + 1
        elif run.status == "ok" and facts is not None and run.id in hit:
            # Other work shared the machine: a sample of something else. Left out too, and
            # measured again (`fslab.run`: an adaptive study's next round, or a re-run).
            skipped[DISTURBED] = skipped.get(DISTURBED, 0) + 1
            disturbed.append(facts)
        elif run.status == "ok":
            ok_runs[run.id] = run.point_id
            if facts is not None and facts.disturbed:
                shared.append(facts)
        else:
            skipped[run.status] = skipped.get(run.status, 0) + 1
    if not ok_runs:
        scope = " matching the filter" if filters else ""
        done = ", ".join(f"{n} {s}" for s, n in sorted(skipped.items()))
        raise ResultsError(
            f"study `{study}` has no completed runs{scope}" + (f" ({done})" if done else ""),
            hint="`fslab run STUDY.toml` runs the points still to do (it resumes)",
        )
    base_of = {t: q.baseline for q in questions for t in q.targets}
    columns = np.array([targets.index(base_of.get(t, base)) for t in targets], dtype=np.int64)
    integrity = _integrity_cells(results, kept)
    if integrity:
        # Their runs have no compared values: no group, no row (`fslab.metrics`).
        faulted = {c.point for c in integrity}
        ok_runs = {r: p for r, p in ok_runs.items() if p not in faulted}
    groups = _Grouping(points, targets, columns, ok_runs, results)
    return Comparison(
        db_path=db_path,
        study=study,
        studies=studies or (study,),
        targets=targets,
        baseline=base,
        where=filters,
        groups=groups.build(confidence, alpha, margin),
        skipped_runs=skipped,
        confidence=confidence,
        alpha=alpha,
        margin=margin,
        summary_metrics=results.summary,
        blocked=results.blocked,
        questions=questions,
        integrity=integrity,
        disturbers=disturbers_of(disturbed),
        shared=disturbers_of(shared),
        latency_limits=results.latency_limits,
    )


def _disturbed(results: StudyResults) -> set[int]:
    """The completed runs other work disturbed (`fslab.stats.disturbance`): in a blocked
    study judged against their block (the runs of their group and round, whatever the
    filters keep), else alone."""
    facts = results.facts
    if not results.blocked:
        return {r for r, f in facts.items() if f.disturbed}
    if not any(f.disturbed for f in facts.values()):
        return set()
    group = {p.id: (p.workload, canonical(p.params)) for p in results.points}
    runs: list[tuple[RunFacts, tuple[Any, ...] | None]] = []
    for r in results.runs:
        f = facts.get(r.id)
        if r.status == "ok" and f is not None:
            runs.append((f, (group[r.point_id], f.rep) if f.rep is not None else None))
    return {f.run_id for f in disturbed_runs(runs)}


def _integrity_cells(results: StudyResults, kept: set[str]) -> tuple[IntegrityCell, ...]:
    """One cell per integrity point kept (the filters and `--where target=`) that has
    completed runs, in plan order."""
    by_point: dict[str, list[IntegrityRow]] = {}
    for row in results.integrity:
        if row.point_id in kept:
            by_point.setdefault(row.point_id, []).append(row)
    return tuple(
        IntegrityCell(
            target=rows[0].target,
            workload=rows[0].workload,
            point=pid,
            fault=rows[0].fault,
            region=rows[0].region,
            params=_ordered(rows[0].params),
            outcomes=tuple(r.outcome for r in rows),
            runs=tuple(r.run_id for r in rows),
            errnos=tuple(r.errno for r in rows),
            repaired_by=tuple(r.repaired_by for r in rows),
        )
        for pid, rows in by_point.items()
    )


NOT_STEADY = "not steady"
"""How `skipped_runs` counts completed runs whose engine found no steady window."""
DISTURBED = "disturbed"
"""How `skipped_runs` counts completed runs other work disturbed (`RunFacts.disturbed`)."""


def _never_steady(facts: RunFacts | None) -> bool:
    return facts is not None and any(w[0] == "not_steady" for w in facts.engine_warnings)


def _questions(
    targets: tuple[str, ...], asked: Mapping[str, str], baseline: str
) -> tuple[Question, ...]:
    """The targets by question (their `question` key; "" for those without one), in order
    of first appearance, each in study order with its baseline first: `baseline` in its
    own question, the first target in the others."""
    by: dict[str, list[str]] = {}
    for t in targets:
        by.setdefault(asked.get(t, ""), []).append(t)
    out: list[Question] = []
    for name, members in by.items():
        if baseline in members:
            members = [baseline, *(t for t in members if t != baseline)]
        out.append(Question(name, tuple(members)))
    return tuple(out)


def _ordered(params: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple((k, params[k]) for k in param_order(tuple(params)))


class _Grouping:
    """The points of a comparison in groups, their runs' values in cells, and the rows."""

    def __init__(
        self,
        points: list[PointRow],
        targets: tuple[str, ...],
        base_of: npt.NDArray[np.int64],
        ok_runs: Mapping[int, str],
        results: StudyResults,
    ) -> None:
        self.targets, self.base_of, self.results = targets, base_of, results
        # (workload, params) -> group; dicts keep first-appearance order.
        keyed: dict[tuple[str, bytes], int] = {}
        self.group_points: list[list[PointRow]] = []
        point_cell: dict[str, tuple[int, int]] = {}
        t_of = {t: i for i, t in enumerate(targets)}
        for p in points:
            g = keyed.setdefault((p.workload, canonical(p.params)), len(keyed))
            if g == len(self.group_points):
                self.group_points.append([])
            self.group_points[g].append(p)
            point_cell[p.id] = (g, t_of[p.target])
        self.runs_of: dict[str, list[int]] = {}
        for run_id, point_id in sorted(ok_runs.items()):
            self.runs_of.setdefault(point_id, []).append(run_id)
        # Each completed run's group and target, in run order.
        ids = np.fromiter(ok_runs, dtype=np.int64, count=len(ok_runs))
        order = np.argsort(ids)
        self.run_ids = ids[order]
        cell = np.array([point_cell[p] for p in ok_runs.values()], dtype=np.int64)
        cell = cell.reshape(-1, 2)[order]
        self.run_group, self.run_target = cell[:, 0], cell[:, 1]

    def run_reps(self) -> npt.NDArray[np.int64]:
        """Each completed run's round or pass (in `run_ids` order; -1: none known), what a
        blocked design pairs by. Only a blocked study asks: it is a Python pass over the
        runs."""
        facts = self.results.facts
        return np.fromiter(
            (
                -1 if (f := facts.get(int(r))) is None or f.rep is None else f.rep
                for r in self.run_ids
            ),
            dtype=np.int64,
            count=len(self.run_ids),
        )

    def build(self, confidence: float, alpha: float, margin: float) -> tuple[Group, ...]:
        n_t = len(self.targets)
        keys: dict[tuple[str, str], int] = {}
        layout_of: dict[int, int] = {}
        layout_ops: list[tuple[str, ...]] = []
        for block in self.results.values:
            for key in block.keys:
                keys.setdefault(key, len(keys))
        n_k = max(1, len(keys))
        # One entry per stored value: its cell ((group * n_k + key) * n_t + target), its
        # value and its run.
        parts_c, parts_v, parts_r = [], [], []
        for li, block in enumerate(self.results.values):
            kid = np.array([keys[k] for k in block.keys], dtype=np.int64)
            layout_ops.append(tuple(dict.fromkeys(op for op, _ in block.keys)))
            pos = np.searchsorted(self.run_ids, block.runs)
            pos = np.minimum(pos, max(0, len(self.run_ids) - 1))
            keep = self.run_ids[pos] == block.runs if len(self.run_ids) else pos < 0
            if not keep.any():
                continue
            runs, at = block.runs[keep], pos[keep]
            layout_of.update(dict.fromkeys(runs.tolist(), li))
            data = block.data[keep]
            present = ~np.isnan(data)
            r_i, k_i = np.nonzero(present)
            g, t = self.run_group[at], self.run_target[at]
            parts_c.append((g[r_i] * n_k + kid[k_i]) * n_t + t[r_i])
            parts_v.append(data[present])
            parts_r.append(runs[r_i])
        if parts_v:
            cell_code = np.concatenate(parts_c)
            v_, r_ = np.concatenate(parts_v), np.concatenate(parts_r)
        else:
            cell_code = r_ = np.zeros(0, dtype=np.int64)
            v_ = np.zeros(0, dtype=np.float64)
        del parts_c, parts_v, parts_r
        order = np.lexsort((r_, cell_code))
        cell_code, v_, r_ = cell_code[order], v_[order], r_[order]
        del order
        cell_codes, cell_start, cell_count = np.unique(
            cell_code, return_index=True, return_counts=True
        )
        del cell_code
        row_codes, row_of_cell = np.unique(cell_codes // n_t, return_inverse=True)
        n_rows = len(row_codes)
        t_of_cell = cell_codes % n_t
        if len(v_):
            cell_mean = np.add.reduceat(v_, cell_start) / cell_count
            dev = v_ - np.repeat(cell_mean, cell_count)
            ss = np.add.reduceat(dev * dev, cell_start)
            del dev
            # Equal samples have their value as the mean and no spread, exactly (a sum
            # divided by n can be off in the last bit).
            low, high = np.minimum.reduceat(v_, cell_start), np.maximum.reduceat(v_, cell_start)
            flat = low == high
            cell_mean = np.where(flat, low, cell_mean)
            ss = np.where(flat, 0.0, ss)
            nonzero = np.add.reduceat((v_ != 0).astype(np.int64), cell_start)
        else:
            cell_mean = ss = np.zeros(0)
            nonzero = np.zeros(0, dtype=np.int64)
        with np.errstate(invalid="ignore", divide="ignore"):
            cell_var = np.where(cell_count >= 2, ss / (cell_count - 1), np.nan)
        row_nonzero = np.zeros(n_rows, dtype=np.int64)
        np.add.at(row_nonzero, row_of_cell, nonzero)

        def dense(values: npt.NDArray[Any], fill: Any, dtype: Any) -> npt.NDArray[Any]:
            out = np.full((n_rows, n_t), fill, dtype=dtype)
            out[row_of_cell, t_of_cell] = values
            return out

        stats = Stats(
            self.targets, self.base_of, confidence, alpha, margin, v_, r_,
            dense(cell_start, 0, np.int64), dense(cell_count, 0, np.int64),
            dense(cell_mean, np.nan, np.float64), dense(cell_var, np.nan, np.float64),
        )  # fmt: skip
        if self.results.blocked and len(r_):
            pos = np.minimum(np.searchsorted(self.run_ids, r_), len(self.run_ids) - 1)
            stats.reps = self.run_reps()[pos]

        # Each group's facts, and its shape: the rows it may have.
        metas: list[tuple[PointRow, dict[str, int], list[StatWarning], dict[str, float]]] = []
        shape_of: list[int] = []
        shapes: dict[tuple[str, tuple[str, ...]], int] = {}
        facts, limits = self.results.facts, self.results.limits
        for group_points in self.group_points:
            first = group_points[0]
            n_runs = dict.fromkeys(self.targets, 0)
            ops: dict[str, None] = {}
            warnings: list[StatWarning] = []
            judged_by: dict[str, float] = {}
            seen: set[int] = set()
            for p in group_points:
                ids = self.runs_of.get(p.id, [])
                known = [facts[r] for r in ids if r in facts]
                if known:
                    warnings += run_warnings(p.target, p.kind, p.params, known)
                n_runs[p.target] += len(ids)
                for run_id in ids:
                    if limits and (judged := limits.get(run_id)):
                        judged_by.update(judged)
                    layout = layout_of.get(run_id)
                    if layout is not None and layout not in seen:
                        seen.add(layout)
                        ops.update(dict.fromkeys(layout_ops[layout]))
            if not ops:
                shape_of.append(-1)
                continue
            shape_of.append(shapes.setdefault((first.kind, tuple(ops)), len(shapes)))
            metas.append((first, n_runs, warnings, judged_by))

        # Per shape at once: which planned rows each of its groups has.
        group_ids = np.arange(len(shape_of), dtype=np.int64)
        shape_arr = np.array(shape_of, dtype=np.int64)
        planned: list[tuple[list[Planned], npt.NDArray[np.int64]]] = []
        tested: list[npt.NDArray[np.int64]] = []
        direction: list[npt.NDArray[np.int8]] = []
        min_abs: list[npt.NDArray[np.float64]] = []
        whys: list[npt.NDArray[np.int8]] = []
        noise_r: list[npt.NDArray[np.int64]] = []
        noise_what: list[str] = []
        noise_w: list[npt.NDArray[np.int64]] = []
        code = {Direction.HIGHER: 1, Direction.LOWER: 0, Direction.NEITHER: -1}
        for (kind, ops_), s in shapes.items():
            plan = _row_plan(kind, ops_, keys)
            gs = group_ids[shape_arr == s]
            if not plan:
                planned.append((plan, np.full((len(gs), 0), -1, dtype=np.int64)))
                continue
            k = np.array([x[2] for x in plan], dtype=np.int64)
            want = gs[:, None] * n_k + k[None, :]
            pos = np.minimum(np.searchsorted(row_codes, want), max(0, n_rows - 1))
            found = row_codes[pos] == want if n_rows else np.zeros(want.shape, dtype=bool)
            verdict_col = np.array([x[3] for x in plan], dtype=bool)
            # All zero (bytes of a chmod): no row.
            found &= verdict_col[None, :] | (row_nonzero[pos] > 0)
            rows_of = np.where(found, pos, -1)
            planned.append((plan, rows_of))
            judged = found & ~verdict_col[None, :]
            cols = np.nonzero(judged)[1]
            tested.append(rows_of[judged])
            direction.append(np.array([code[x[1].direction] for x in plan], np.int8)[cols])
            min_abs.append(np.array([x[1].min_abs for x in plan], np.float64)[cols])
            whys.append(np.array([_why_not(x[1]) for x in plan], np.int8)[cols])
            for j, x in enumerate(plan):
                if x[4] is not None:
                    r = rows_of[:, j]
                    noise_r.append(r[r >= 0])
                    noise_w.append(np.full(int((r >= 0).sum()), len(noise_what), np.int64))
                    noise_what.append(x[4])
        if tested:
            stats.describe(
                np.concatenate(tested),
                np.concatenate(direction),
                np.concatenate(min_abs),
                np.concatenate(whys),
            )
        if noise_r:
            _noise(stats, np.concatenate(noise_r), np.concatenate(noise_w), noise_what)

        groups: list[Group] = []
        timed_of: dict[int, npt.NDArray[np.bool_]] = {}
        local = np.zeros(len(shape_of), dtype=np.int64)
        for s in range(len(shapes)):
            local[shape_arr == s] = np.arange(int((shape_arr == s).sum()))
        metas_it = iter(metas)
        for g, s in enumerate(shape_of):
            if s < 0:
                continue
            first, n_runs, warnings, judged_by = next(metas_it)
            plan, rows_of = planned[s]
            ids = rows_of[local[g]]
            cols = np.flatnonzero(ids >= 0)
            rows = PlannedRows(stats, plan, cols, ids[cols])
            flagged = _flagged(warnings)
            if flagged:
                timed = timed_of.get(s)
                if timed is None:
                    timed = timed_of[s] = np.array([x[1].timed for x in plan], dtype=bool)
                doubtful = ids[cols[timed[cols]]]
                for target, flags in flagged.items():
                    stats.flag(doubtful, self.targets.index(target), flags)
            groups.append(
                Group(
                    workload=first.workload,
                    kind=first.kind,
                    params=_ordered(first.params),
                    runs=n_runs,
                    rows=rows,
                    warnings=tuple(warnings),
                    limits=judged_by,
                    points={p.target: p.id for p in self.group_points[g]},
                )
            )
        return tuple(groups)


_JUDGED = (MetricKind.RATE, MetricKind.LATENCY, MetricKind.EFFICIENCY)
"""The sorts of metric the decision rule judges; work (bytes, counts) and shares of the
machine (CPU busy) are described, not judged: they grow with the work a run did."""


def _why_not(metric: MetricSpec) -> int:
    """The `WHY` code of why the decision rule does not judge this metric; 0 if it does."""
    if metric.direction is Direction.NEITHER:
        return WHY[NoVerdict.NO_DIRECTION]
    if metric.kind not in _JUDGED:
        return WHY[NoVerdict.WORK]
    return 0


def _flagged(warnings: Sequence[StatWarning]) -> dict[str, str]:
    """Target -> the kinds of its validity warnings (`cached, unsteady`), for the targets
    whose verdicts they suppress (`fslab.stats.warnings.SUPPRESSING`)."""
    out: dict[str, dict[str, None]] = {}
    for w in warnings:
        if w.kind in SUPPRESSING:
            out.setdefault(w.target, {})[w.kind.value] = None
    return {t: ", ".join(kinds) for t, kinds in out.items()}


def _row_plan(
    kind: str, ops: tuple[str, ...], keys: Mapping[tuple[str, str], int]
) -> list[Planned]:
    """The rows a group of this kind whose runs have these ops (in order of appearance)
    may have, in the order they are shown: ops as `_OP_ORDER` says, then as they
    appeared; each op's metrics in the catalog's order."""
    out: list[Planned] = []
    e = entry(kind)
    ordered = [o for o in _OP_ORDER if o in ops] + [o for o in ops if o not in _OP_ORDER]
    for op in ordered:
        pseudo = pseudo_metrics(op)
        for metric in pseudo if pseudo is not None else e.op_metrics(op):
            k = keys.get((op, metric.name))
            if k is None:
                continue
            what = None
            if metric.name == NOISE_METRIC and pseudo is None and e.is_headline_op(op):
                what = f"{op} {metric.label}" if e.ops_apart else metric.label
            out.append((op, metric, k, metric.unit == VERDICT_UNIT, what))
    return out


_BORDER = 1e-3
"""Relative margin around the noise and outlier thresholds inside which numpy's sums
(which may differ from exact ones in the last bits) do not decide: `sample_warnings` does."""


def _noise(
    stats: Stats,
    rows: npt.NDArray[np.int64],
    what_of: npt.NDArray[np.int64],
    what: Sequence[str],
) -> None:
    """Noise and outlier warnings on the cells of these rows (`what[what_of[i]]` names
    row i's metric for people), worked out for all cells at once; the few cells within
    `_BORDER` of a threshold are judged by `sample_warnings`, the one definition."""
    count, mean, stdev = stats.count[rows], stats.mean[rows], stats.stdev[rows]
    with np.errstate(invalid="ignore", divide="ignore"):
        cv = np.nan_to_num(np.where(mean != 0, stdev / np.abs(mean), 0.0))
    two = count >= 2
    noisy = two & (cv > NOISY_CV * (1 + _BORDER))
    border = two & ~noisy & (cv > NOISY_CV * (1 - _BORDER))
    found: dict[tuple[int, int], list[StatWarning]] = {}
    outliers: list[tuple[int, int, int, float, float, float, int]] = []
    for n in np.unique(count[count >= 3]).tolist():
        where = np.argwhere(count == n)
        starts = stats.start[rows[where[:, 0]], where[:, 1]]
        at = starts[:, None] + np.arange(n)[None, :]
        samples = stats.values[at]
        med = np.median(samples, axis=1, keepdims=True)
        mad = np.median(np.abs(samples - med), axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            z = np.where(mad > 0, 0.6745 * (samples - med) / mad, 0.0)
            off = np.abs(samples - med) / np.abs(med)  # inf or nan at a median of 0
        off = np.nan_to_num(off, nan=0.0, posinf=np.inf)
        far = (np.abs(z) > OUTLIER_Z * (1 + _BORDER)) & (off > OUTLIER_MIN_CHANGE * (1 + _BORDER))
        near = np.any(
            (np.abs(z) > OUTLIER_Z * (1 - _BORDER))
            & (off > OUTLIER_MIN_CHANGE * (1 - _BORDER))
            & ~far,
            axis=1,
        )
        border[where[near, 0], where[near, 1]] = True
        cells, i = np.nonzero(far & ~near[:, None])
        x, t = where[cells, 0], where[cells, 1]
        keep = ~border[x, t]
        cells, i, x, t = cells[keep], i[keep], x[keep], t[keep]
        outliers.extend(
            zip(
                x.tolist(), t.tolist(), i.tolist(), samples[cells, i].tolist(),
                med[cells, 0].tolist(), z[cells, i].tolist(), stats.runs[at[cells, i]].tolist(),
                strict=True,
            )
        )  # fmt: skip
    targets, row_l, what_l = stats.targets, rows.tolist(), [what[w] for w in what_of.tolist()]
    x, t = np.nonzero(noisy & ~border)
    for xi, ti, n, v in zip(
        x.tolist(), t.tolist(), count[x, t].tolist(), cv[x, t].tolist(), strict=True
    ):
        found[(xi, ti)] = [noisy_warning(targets[ti], what_l[xi], n, v)]
    n_of = count.tolist()
    for xi, ti, j, value, m, zz, run in outliers:
        w = outlier_warning(targets[ti], what_l[xi], j, n_of[xi][ti], value, m, zz, run)
        found.setdefault((xi, ti), []).append(w)
    for xi, ti in np.argwhere(border).tolist():
        row = row_l[xi]
        exact = sample_warnings(
            targets[ti], what_l[xi], stats.samples(row, ti), stats.sample_runs(row, ti)
        )
        if exact:
            found[(xi, ti)] = exact
    for (xi, ti), ws in found.items():
        row = row_l[xi]
        stats.noise[(row, ti)] = tuple(ws)
        stats.noisy_rows.add(row)
