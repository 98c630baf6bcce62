"""Integrity studies in every report: the faults x targets table, the words of its cells,
one sentence per target, the legend and the configuration facts that explain them. The
terminal, Markdown, CSV and JSON renderers of `fslab compare` and the HTML and Markdown
reports all read them from here, so a cell says the same everywhere.

An integrity point injects one fault and stores what the file system did, per run: its
outcome (`fslab.integrity_words`). A table row is one fault (of one region, workload and
value of any other swept axis), a column one target, a cell the outcome of its runs
(`detected`), with counts where repetitions disagree (`detected 2, silent_wrong 1`).
"""

from __future__ import annotations

import errno as errnos
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fslab.compare import Comparison, IntegrityCell
from fslab.integrity_words import (
    EFFECTIVE_FACTS,
    FAULTS,
    OUTCOME_LEGEND,
    REGION_NAMES,
    REGIONS,
    REPAIRED_BY_WORDS,
    SEVERITY,
    SILENT,
)
from fslab.params import format_param, varying_keys
from fslab.report.findings import Answer, Sentence, Span, answers
from fslab.report.format import NONE, format_range, format_ratio
from fslab.stats.decision import Decision

TITLE = "Integrity: what each target returned after each fault"
LEGEND = OUTCOME_LEGEND + "."
"""Under every integrity table: what the five words mean."""
_OWN_KEYS = ("faults", "region")
"""Parameters a row's fault and region already say."""
LISTED = 6
"""At most this many faults are named in a summary sentence's brackets."""


@dataclass(frozen=True)
class OutcomeCell:
    """A target's runs of one fault, as a table shows them."""

    cell: IntegrityCell | None
    """None: the target has no completed run of this fault."""

    @property
    def parts(self) -> tuple[tuple[str, int], ...]:
        """(outcome, runs), most first: one part where the repetitions agree."""
        return () if self.cell is None else tuple(self.cell.counts().items())

    @property
    def text(self) -> str:
        """`detected`; `detected 2, silent_wrong 1` where repetitions disagree; `—`."""
        parts = self.parts
        if not parts:
            return NONE
        if len(parts) == 1:
            return parts[0][0]
        return ", ".join(f"{o} {n}" for o, n in parts)

    @property
    def worst(self) -> str | None:
        """The worst outcome of its runs (`SEVERITY`): where the summary counts it."""
        if self.cell is None or not self.cell.outcomes:
            return None
        return min(self.cell.outcomes, key=_severity)

    @property
    def title(self) -> str:
        """Each run in words, for a tooltip: `run 12: detected, errno 5 (EIO)`."""
        c = self.cell
        if c is None:
            return "no completed run of this fault"
        lines = []
        for i, (run, o) in enumerate(zip(c.runs, c.outcomes, strict=True)):
            text = f"run {run}: {o}"
            e = c.errnos[i] if i < len(c.errnos) else None
            if e:
                text += f", errno {e} ({errnos.errorcode.get(e, '?')})"
            by = c.repaired_by[i] if i < len(c.repaired_by) else None
            if by:
                text += f", repaired {REPAIRED_BY_WORDS.get(by, by)}"
            lines.append(text)
        return "; ".join(lines)


def _severity(outcome: str) -> int:
    return SEVERITY.index(outcome) if outcome in SEVERITY else len(SEVERITY)


@dataclass(frozen=True)
class FaultRow:
    """One row: a fault of one region, workload and values of its other swept axes."""

    label: str
    """`bitflip`, `bitflip (inode)`, `torn blocks=4`, `bitflip · small` (the workload
    where two workloads' rows would read the same)."""
    workload: str
    fault: str
    region: str
    params: tuple[tuple[str, Any], ...]
    """The parameters its workload sweeps besides the fault and region (the label's)."""
    cells: tuple[OutcomeCell, ...]
    """One per target of the table, in its order."""
    section: int
    """Rows of one region, workload and values share a section (a rule between them)."""


@dataclass(frozen=True)
class IntegrityTable:
    targets: tuple[str, ...]
    rows: tuple[FaultRow, ...]
    workloads: tuple[tuple[str, str], ...]
    """Per workload, the parameters all its points share (`file_size=4MiB bs=4KiB ...`)."""
    title: str = TITLE
    legend: str = LEGEND

    def cell(self, label: str, target: str) -> OutcomeCell:
        """The cell of the row labelled `label` and this target."""
        row = next(r for r in self.rows if r.label == label)
        return row.cells[self.targets.index(target)]


def integrity_table(c: Comparison) -> IntegrityTable | None:
    """The comparison's integrity points as a table; None when it has none."""
    cells = c.integrity
    if not cells:
        return None
    targets = tuple(t for t in c.targets if any(x.target == t for x in cells))
    workloads = tuple(dict.fromkeys(x.workload for x in cells))
    varying = {
        w: [k for k in varying_keys(x.params for x in cells if x.workload == w)
            if k not in _OWN_KEYS]
        for w in workloads
    }  # fmt: skip
    # (workload, values of its varying keys, region, fault) -> each target's cell
    keyed: dict[tuple[str, tuple[tuple[str, str], ...], str, str], dict[str, IntegrityCell]] = {}
    values_order: dict[tuple[str, tuple[tuple[str, str], ...]], int] = {}
    shown: dict[tuple[str, tuple[tuple[str, str], ...]], tuple[tuple[str, Any], ...]] = {}
    for x in cells:
        p = dict(x.params)
        vals = tuple((k, format_param(k, p.get(k))) for k in varying[x.workload])
        values_order.setdefault((x.workload, vals), len(values_order))
        shown.setdefault((x.workload, vals), tuple((k, p.get(k)) for k in varying[x.workload]))
        keyed.setdefault((x.workload, vals, x.region, x.fault), {})[x.target] = x

    def order(key: tuple[str, tuple[tuple[str, str], ...], str, str]) -> tuple[int, ...]:
        w, vals, region, fault = key
        return (
            REGIONS.index(region) if region in REGIONS else len(REGIONS),
            workloads.index(w),
            values_order[(w, vals)],
            FAULTS.index(fault) if fault in FAULTS else len(FAULTS),
        )

    keys = sorted(keyed, key=order)
    base = {k: _base_label(k[3], k[2], k[1]) for k in keys}
    clash: dict[str, set[str]] = {}
    for k, label in base.items():
        clash.setdefault(label, set()).add(k[0])
    rows: list[FaultRow] = []
    sections: dict[tuple[int, ...], int] = {}
    for k in keys:
        w, vals, region, fault = k
        label = base[k] + (f" · {w}" if len(clash[base[k]]) > 1 else "")
        section = sections.setdefault(order(k)[:3], len(sections))
        by_target = keyed[k]
        rows.append(
            FaultRow(label, w, fault, region, shown[(w, vals)],
                     tuple(OutcomeCell(by_target.get(t)) for t in targets), section)
        )  # fmt: skip
    described = tuple((w, _common(cells, w, varying[w])) for w in workloads)
    return IntegrityTable(targets, tuple(rows), described)


def _base_label(fault: str, region: str, vals: Sequence[tuple[str, str]]) -> str:
    where = REGION_NAMES.get(region, region if region != "data" else "")
    label = f"{fault} ({where})" if where else fault
    return " ".join([label, *(f"{k}={v}" for k, v in vals)])


def _common(cells: Sequence[IntegrityCell], workload: str, varying: Sequence[str]) -> str:
    first = next(x for x in cells if x.workload == workload)
    skip = {*_OWN_KEYS, *varying}
    return " ".join(f"{k}={format_param(k, v)}" for k, v in first.params if k not in skip)


# -- the summary -----------------------------------------------------------------------------


@dataclass(frozen=True)
class IntegrityAnswer:
    """What one target did over the study's faults: each row counted under the worst
    outcome of its runs."""

    target: str
    faults: int
    """The rows (faults) the target ran."""
    by_outcome: Mapping[str, tuple[str, ...]]
    """Outcome -> the rows counted under it (a row whose runs disagree says so:
    `bitflip in 1 of 3 runs`): the silent ones first, then the others, most first."""
    repaired_by: Mapping[str, int]
    """Of the rows counted as repaired, how many what repaired (`read`, `scrub`)."""
    caught: bool = False
    """Whether any of its runs was detected or repaired (a row counted as silent may
    have been caught in another repetition)."""

    def count(self, outcome: str) -> int:
        return len(self.by_outcome.get(outcome, ()))

    def sentence(self) -> Sentence:
        """`ext4 returned corrupted data silently after 5 of 6 faults (bitflip, ...),
        stale data after 1 (lost_write); detected none`; `btrfs detected 6 of 6 faults`;
        `btrfs-raid1 repaired 5 of 6 faults on the read itself, detected 1 (torn)`."""
        spans: list[Span] = [Span(self.target, "target"), Span(" ")]
        first = True
        for outcome, rows in self.by_outcome.items():
            n = len(rows)
            of = f" of {self.faults} fault{'s' if self.faults != 1 else ''}" if first else ""
            if not first:
                spans.append(Span(", "))
            words, tail = _CLAUSES.get(outcome, (outcome, " "))
            if first or outcome not in SILENT:
                spans.append(Span(words, "strong" if outcome in SILENT else "plain"))
            else:  # "..., stale data after 1": the verb is the first clause's
                spans.append(Span(words.removeprefix("returned ").removesuffix(" silently"),
                                  "strong"))  # fmt: skip
            spans.append(Span(f"{tail}{n}{of}"))
            if outcome == "repaired":
                how = self._how()
                if how:
                    spans.append(Span(f" {how}"))
            if outcome in SILENT or (n < self.faults and 2 * n <= self.faults):
                spans.append(Span(f" ({_listed(rows)})"))
            first = False
        if any(self.count(o) for o in SILENT) and not self.caught:
            spans += [Span("; "), Span("detected none", "strong")]
        return tuple(spans)

    def _how(self) -> str:
        by = {k: v for k, v in self.repaired_by.items() if k in REPAIRED_BY_WORDS}
        if len(by) == 1:
            return REPAIRED_BY_WORDS[next(iter(by))]
        if len(by) > 1:
            return "(" + ", ".join(f"{n} {REPAIRED_BY_WORDS[k]}" for k, n in by.items()) + ")"
        return ""


_CLAUSES = {
    "silent_wrong": ("returned corrupted data silently", " after "),
    "silent_stale": ("returned stale data silently", " after "),
    "detected": ("detected", " "),
    "repaired": ("repaired", " "),
    "unaffected": ("was unaffected by", " "),
}
"""Per outcome: its words in a sentence and what comes before the count."""


def _listed(rows: Sequence[str]) -> str:
    if len(rows) <= LISTED:
        return ", ".join(rows)
    return ", ".join(rows[: LISTED - 1]) + f" and {len(rows) - LISTED + 1} more"


def integrity_answers(
    c: Comparison, table: IntegrityTable | None = None
) -> tuple[IntegrityAnswer, ...]:
    """One answer per target of the integrity table, in its order."""
    table = table if table is not None else integrity_table(c)
    if table is None:
        return ()
    out: list[IntegrityAnswer] = []
    for i, target in enumerate(table.targets):
        by: dict[str, list[str]] = {}
        repaired: dict[str, int] = {}
        ran = 0
        caught = False
        for row in table.rows:
            cell = row.cells[i]
            worst = cell.worst
            if worst is None or cell.cell is None:
                continue
            ran += 1
            runs = cell.cell.outcomes
            caught = caught or any(o in ("detected", "repaired") for o in runs)
            bad = sum(o == worst for o in runs)
            label = row.label + (f" in {bad} of {len(runs)} runs" if bad < len(runs) else "")
            by.setdefault(worst, []).append(label)
            if worst == "repaired":
                how = next((h for o, h in zip(runs, cell.cell.repaired_by, strict=False)
                            if o == "repaired" and h), None)  # fmt: skip
                if how:
                    repaired[how] = repaired.get(how, 0) + 1
        # The silent outcomes first (what the reader must not miss), then the most common.
        order = sorted(by, key=lambda o: (o not in SILENT, -len(by[o]) if o not in SILENT else 0,
                                          _severity(o)))  # fmt: skip
        out.append(IntegrityAnswer(target, ran, {o: tuple(by[o]) for o in order}, repaired,
                                   caught))  # fmt: skip
    return tuple(out)


def integrity_lines(c: Comparison) -> tuple[Sentence, ...]:
    """The summary: one sentence per target of the integrity table."""
    return tuple(a.sentence() for a in integrity_answers(c))


SPEED_SHOWN = 3
"""At most this many families' ratios in a target's line that puts both halves together."""


def trade_off_lines(c: Comparison) -> tuple[Sentence, ...]:
    """Where the study has performance results too: per target of the integrity table
    that has them, one line with both halves: `btrfs: 6 of 6 faults detected; speed:
    0.13x ext4's IOPS in random writes` (at most `SPEED_SHOWN` families, the summary's
    first). Empty without performance results."""
    table = integrity_table(c)
    if table is None or not c.groups:
        return ()
    found: tuple[Answer, ...] = answers(c)
    if not found:
        return ()
    out: list[Sentence] = []
    for a in integrity_answers(c, table):
        ratios: list[list[Span]] = []
        baseline_of = 0
        for ans in found:
            gap = next((t.gap for t in ans.targets if t.target == a.target), None)
            where = ans.family or ans.workload
            if gap is not None:
                # An undecided ratio is said as the bound its runs set, never as a finding.
                undecided = gap.verdict(ans.metric, ans.equivalence) is Decision.INCONCLUSIVE
                said = (
                    f"within {format_range(gap.low, gap.high)} of "
                    if undecided and gap.low is not None and gap.high is not None
                    else f"{format_ratio(gap.ratio)} "
                )
                ratios.append([Span(said), Span(ans.baseline, "target"),
                               Span(f"'s {ans.metric.label} in {where}")])  # fmt: skip
            elif a.target == ans.baseline:
                baseline_of += 1
        if not ratios and not baseline_of:
            continue
        spans: list[Span] = [Span(a.target, "target"), Span(f": {_short(a)}; "),
                             Span("speed:", "strong"), Span(" ")]  # fmt: skip
        if not ratios:
            spans.append(Span("the baseline the others are compared with"))
        for i, r in enumerate(ratios[:SPEED_SHOWN]):
            spans += [Span(", ")] * bool(i) + r
        if len(ratios) > SPEED_SHOWN:
            spans.append(Span(f" and {len(ratios) - SPEED_SHOWN} more (the summary)"))
        out.append(tuple(spans))
    return tuple(out)


def _short(a: IntegrityAnswer) -> str:
    """`5 of 8 faults corrupted silently, 1 stale silently, 2 detected`: an answer's
    counts in a few words."""
    words = {"silent_wrong": "corrupted silently", "silent_stale": "stale silently",
             "unaffected": "without effect"}  # fmt: skip
    parts = [f"{a.count(o)}" for o in SEVERITY if a.count(o)]
    named = [words.get(o, o) for o in SEVERITY if a.count(o)]
    if not parts:
        return "no fault ran"
    parts[0] += f" of {a.faults} fault{'s' if a.faults != 1 else ''}"
    return ", ".join(f"{n} {w}" for n, w in zip(parts, named, strict=True))


# -- what explains it ------------------------------------------------------------------------


def fact_columns() -> tuple[str, ...]:
    """The labels of `integrity_facts`' values."""
    return tuple(label for _, label in EFFECTIVE_FACTS)


def integrity_facts(
    targets: Sequence[str], effective: Mapping[str, Mapping[str, Any] | None]
) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Per target, the facts of its configuration in effect that explain its outcomes
    (`EFFECTIVE_FACTS`: file system, data and metadata checksums on or off, the btrfs
    profiles), `—` where it did not record one."""
    out = []
    for t in targets:
        eff = effective.get(t) or {}
        out.append((t, tuple(_fact(eff.get(key)) for key, _ in EFFECTIVE_FACTS)))
    return tuple(out)


def _fact(value: Any) -> str:
    if value is None or value == "":
        return NONE
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)
