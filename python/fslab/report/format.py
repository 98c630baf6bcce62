"""The shared words of every report: how a statistic, a cell, a Δ, a verdict, a group and a
name read, whatever renders them (`fslab compare`'s table, Markdown, CSV and JSON in
`fslab.report.render`, the HTML and Markdown reports, charts and findings).

A number means the same in the terminal, the HTML report and the Markdown report because
each of them formats it here: IOPS as `12.3k`, bandwidth in MiB/s, latencies in the unit
that fits (`ns`, `us`, `ms`, `s`). The digits come from `fslab.units`; this module adds
what a report knows about a metric (its unit, its verdict) and about a comparison (its
baseline, its groups). CSV and JSON keep the stored base units under the stored names.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable

from fslab.compare import VERDICT_UNIT, Cell, Comparison, Group, MetricSpec
from fslab.params import format_param
from fslab.safe_text import safe_text
from fslab.stats.summary import MIN_EFFECT_PCT, Difference, Verdict
from fslab.units import sig3

NONE = "—"
"""A cell with nothing to show (no run, no baseline to compare with)."""

# -- numbers -------------------------------------------------------------------------------


def stat_scale(metric: MetricSpec, mean: float) -> tuple[float, str]:
    """The divisor and suffix that fit `mean` for this metric's unit (a table cell's mean
    and its interval share them, so `85.3us ± 2.10us`, never `85.3us ± 2100ns`)."""
    if metric.unit in ("bytes_per_s", "bytes"):
        return float(1 << 20), ""
    if metric.unit == "ratio":
        return 1.0, "x"
    if metric.unit == "size":
        return (float(1 << 20), "MiB") if mean >= (1 << 20) else (1024.0, "KiB")
    if metric.unit == "pct":
        return 1.0, "%"
    if metric.unit == "ns":
        # As `fslab.units.format_ns`: whole ns below 999.5, then us, ms, s.
        for unit, scale in (("us", 1e3), ("ms", 1e6), ("s", 1e9)):
            if mean < scale * 999.5:
                return (1.0, "ns") if unit == "us" and mean < 999.5 else (scale, unit)
        return 1e9, "s"
    for suffix, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if mean >= scale * 0.9995:
            return scale, suffix
    return 1.0, ""


def format_stat(metric: MetricSpec, mean: float, ci_half: float | None) -> str:
    """`12.3k ± 0.40k` (IOPS), `481 ± 12.0` (MiB/s), `85.3us ± 2.10us`; the mean alone
    when there is no interval."""
    scale, suffix = stat_scale(metric, mean)

    def num(value: float) -> str:
        # Whole nanoseconds: the engine's resolution.
        return f"{value:.0f}" if suffix == "ns" else sig3(value / scale)

    text = f"{num(mean)}{suffix}"
    if ci_half is not None:
        text += f" ± {num(ci_half)}{suffix}"
    return text


def ns_axis(values: Iterable[float]) -> tuple[float, str]:
    """The divisor and unit of nanoseconds for a chart axis, fitted to the median of
    `values`. Axes say `µs`, where text says `us` (`fslab.units.format_ns`): an axis label
    is typeset, while text goes to terminals, logs and grep."""
    vals = sorted(v for v in values if v > 0)
    mid = vals[len(vals) // 2] if vals else 1e3
    return next(
        ((s, u) for s, u in ((1e9, "s"), (1e6, "ms"), (1e3, "µs")) if mid >= s), (1.0, "ns")
    )


# -- cells -----------------------------------------------------------------------------------


def passed(metric: MetricSpec, cell: Cell) -> bool | None:
    """A verdict cell's outcome: True when every run passed, False when any failed; None
    for other metrics and for no runs."""
    if metric.unit != VERDICT_UNIT or not cell.samples:
        return None
    return all(v >= 1.0 for v in cell.samples)


def format_cell(metric: MetricSpec, cell: Cell, runs: int) -> str:
    """A cell's summary, with its own n when it differs from the target's run count; a
    verdict as `PASS (3/3)` or `FAIL (1/3)`: runs that passed of those that ran."""
    s = cell.summary
    if s is None:
        return NONE
    ok = passed(metric, cell)
    if ok is not None:
        good = sum(v >= 1.0 for v in cell.samples)
        return f"{'PASS' if ok else 'FAIL'} ({good}/{len(cell.samples)})"
    text = format_stat(metric, s.mean, s.ci_half)
    return text if s.n == runs else f"{text} (n={s.n})"


def format_delta(diff: Difference | None) -> str:
    """`+12.3%`: the change of the mean vs the baseline (`n/a` when the baseline's is 0)."""
    if diff is None:
        return NONE
    if diff.delta_pct is None:
        return "n/a"
    # `+ 0.0` turns a rounded -0.0 into 0.0: no "-0.0%" for a change too small to show
    return f"{round(diff.delta_pct, 1) + 0.0:+.1f}%"


MARKS = {
    Verdict.BETTER: "better",
    Verdict.WORSE: "worse",
    Verdict.SAME: "",
    Verdict.UNTESTED: "?",
    Verdict.DIFFERENT: "differs",
}
"""The word after a Δ, in every table. Short on purpose, unlike `Verdict.label` (the
verdict in a sentence: "no significant difference", "n=1: not tested"): a mark sits in a
narrow column, and no mark at all is the common case."""


def mark(verdict: Verdict | None) -> str:
    """The mark after a Δ of this verdict; empty for none and for `same`."""
    return MARKS.get(verdict, verdict.value) if verdict else ""


def table_columns(comparison: Comparison) -> list[str]:
    """The headers after the label column: each target, and a Δ after each but the baseline."""
    cols: list[str] = []
    for t in comparison.targets:
        if t == comparison.baseline:
            cols.append(f"{t} (baseline)")
        else:
            cols += [t, "Δ"]
    return cols


def row_cells(
    comparison: Comparison, group: Group, cells: dict[str, Cell], metric: MetricSpec
) -> list[tuple[str, Verdict | None, bool | None]]:
    """(text, verdict, passed) per column: a summary has no verdict, a Δ column its
    cell's; `passed` is a verdict cell's outcome (PASS/FAIL), else None."""
    out: list[tuple[str, Verdict | None, bool | None]] = []
    for t in comparison.targets:
        cell = cells[t]
        out.append((format_cell(metric, cell, group.runs.get(t, 0)), None, passed(metric, cell)))
        if t != comparison.baseline:
            out.append((format_delta(cell.diff), cell.diff.verdict if cell.diff else None, None))
    return out


def runs_cells(comparison: Comparison, group: Group) -> list[str]:
    """The `runs` row: each target's run count, nothing under a Δ."""
    out = []
    for t in comparison.targets:
        out.append(str(group.runs.get(t, 0)))
        if t != comparison.baseline:
            out.append("")
    return out


# -- words -----------------------------------------------------------------------------------


def group_title(comparison: Comparison, group: Group) -> str:
    """`randrw: rw=randread bs=8KiB`: the workload and the parameters that tell this group
    apart from the others (the common ones are in the header)."""
    varying = comparison.varying_params(group)
    if not varying:
        return group.workload
    return f"{group.workload}: " + " ".join(f"{k}={format_param(k, v)}" for k, v in varying)


def header(comparison: Comparison) -> str:
    """One line: the study, the baseline, the filter and the parameters every group shares."""
    parts = [f"study `{comparison.study}`", f"baseline `{comparison.baseline}`"]
    if comparison.where:
        parts.append("where " + " ".join(f"{k}={v}" for k, v in comparison.where))
    common = comparison.common_params()
    if common:
        parts.append(" ".join(f"{k}={format_param(k, v)}" for k, v in common))
    return " · ".join(parts)


def legend(comparison: Comparison) -> str:
    """The one-line key to the cells and marks."""
    return (
        f"mean ± {comparison.confidence:.0%} CI half-width (Student's t) over n runs · "
        f"Δ: change of the mean vs `{comparison.baseline}`; better/worse: significant by "
        f"Welch's t-test, p < {comparison.alpha:g}, and at least {MIN_EFFECT_PCT:g}%; "
        "no mark: no significant difference; "
        "differs: significant, for a metric no direction of which is better; "
        "?: not tested (n < 2)"
    )


def warning_lines(group: Group) -> list[str]:
    """The group's warnings, one line each: `ext4: noisy: IOPS: the 3 runs spread ...`."""
    ordered = sorted(group.all_warnings(), key=lambda w: w.target)  # stable: kinds keep order
    return [f"{w.target}: {w.kind.value}: {w.message}" for w in ordered]


def warning_hints(comparison: Comparison) -> list[str]:
    """What to do about each kind of warning shown, once per kind."""
    hints: dict[str, str] = {}
    for g in comparison.groups:
        for w in g.all_warnings():
            if w.hint:
                hints.setdefault(w.kind.value, w.hint)
    return [f"{kind}: {hint}" for kind, hint in hints.items()]


# -- names -----------------------------------------------------------------------------------


def slug(text: str) -> str:
    """`cached: rw=read` -> `cached-rw-read`: a name for an id, an anchor or a file; never
    empty."""
    s = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return s[:60].rstrip("-") or "chart"


def param_column(key: str, reserved: Collection[str]) -> str:
    """A parameter's column in a tidy table: its name, or `param_<name>` where the name is
    one of the table's own columns (a parameter called `target` or `mean`)."""
    return f"param_{key}" if key in reserved else key


# -- Markdown --------------------------------------------------------------------------------

_MD_SPECIAL = re.compile(r"([\\`*_\[\]|#])")


def md(text: str) -> str:
    """Plain text for Markdown: its punctuation escaped, `<`, `>` and `&` as entities, a
    line break as a space. For names and sentences written into a Markdown document."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIAL.sub(r"\\\1", text).replace("\n", " ")


def md_markup(text: str) -> str:
    """Text that is Markdown already (`fslab compare`'s header, legend and warnings, whose
    backquoted names are meant as code), made safe for a pipe table that is as often read
    on a terminal as in a file: control characters shown escaped, `|` escaped. Unlike `md`
    it keeps the text's own markup, so it escapes nothing else."""
    return safe_text(text).replace("|", "\\|")


def code(text: str) -> str:
    """An inline code span that holds `text` as is (backticks included)."""
    runs = [len(m) for m in re.findall(r"`+", text)]
    fence = "`" * (max(runs, default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"
