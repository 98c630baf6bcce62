"""The shared words of every report: how a statistic, a cell, a ratio, a verdict, a group and a
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
from collections.abc import Callable, Collection, Iterable, Sequence
from itertools import islice
from typing import TYPE_CHECKING

from fslab.compare import Cell, Comparison, Disturber, Group
from fslab.metrics import VERDICT_UNIT, MetricSpec
from fslab.params import format_param, varying_keys
from fslab.safe_text import safe_text
from fslab.stats.decision import Decision, Judgement, NoVerdict
from fslab.stats.summary import MIN_EFFECT_PCT
from fslab.units import sig3

if TYPE_CHECKING:
    from fslab.report.findings import Span

NONE = "—"
"""A cell with nothing to show (no run, no baseline to compare with)."""


def disturbed_by(disturbers: Iterable[Disturber], most: int = 3) -> str:
    """`chromium (pid 4242, up to 48% of a CPU, in 2 runs), cc1 (pid 77, 31%, 1 run)`:
    who disturbed runs, the first `most` of them."""
    ds = list(disturbers)
    said = []
    for i, d in enumerate(ds[:most]):
        share = f"up to {d.cpu_pct:.0f}% of a CPU" if i == 0 else f"{d.cpu_pct:.0f}%"
        runs = f"in {d.runs} run{'s' if d.runs != 1 else ''}"
        said.append(f"{safe_text(d.name)} (pid {d.pid}, {share}, {runs})")
    more = f" and {len(ds) - most} more" if len(ds) > most else ""
    return ", ".join(said) + more


def not_counted(c: Comparison) -> str | None:
    """`3 runs not counted (2 disturbed, 1 failed); disturbed by chromium (...)`: what a
    comparison left out and, where the telemetry named them, who disturbed its runs."""
    if not c.skipped_runs:
        return None
    total = sum(c.skipped_runs.values())
    detail = ", ".join(f"{n} {safe_text(s)}" for s, n in sorted(c.skipped_runs.items()))
    line = f"{total} run{'s' if total > 1 else ''} not counted ({detail})"
    if c.disturbers:
        line += f"; disturbed by {disturbed_by(c.disturbers)}"
    return line


def shared_note(c: Comparison) -> str | None:
    """`counted beside other work that slowed each of their rounds alike: busy-neighbour
    (pid 7, up to 48% of a CPU, in 59 runs) (...)`: runs a blocked study counts though
    other work shared the machine, and who it was."""
    if not c.shared:
        return None
    return (
        "counted beside other work that slowed each of their rounds alike: "
        f"{disturbed_by(c.shared)} (a blocked design compares a round's runs with each other)"
    )


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
    when there is no interval. The interval never shows more decimals than the mean
    (`4.00KiB ± 0.00KiB`, not `± 0.0000903KiB`), and one wider than the mean itself is
    said as such (`143k ± >100%`): a mean that uncertain is no result."""
    scale, suffix = stat_scale(metric, mean)

    tiny = 0 < abs(mean / scale) < 0.001

    def num(value: float) -> str:
        # Whole nanoseconds: the engine's resolution; tiny ratios with an exponent.
        if suffix == "ns":
            return f"{value:.0f}"
        return f"{value / scale:.2e}" if tiny and value else sig3(value / scale)

    text = f"{num(mean)}{suffix}"
    if ci_half is None:
        return text
    if mean > 0 and ci_half > mean:
        return f"{text} ± >100%"
    half = num(ci_half)
    shown = text[: len(text) - len(suffix)]
    decimals = len(shown.partition(".")[2])
    if suffix != "ns" and not tiny and len(half.partition(".")[2]) > decimals:
        half = f"{ci_half / scale:.{decimals}f}"
    return f"{text} ± {half}{suffix}"


def format_ratio(ratio: float) -> str:
    """A ratio to the baseline, three significant digits: `0.127x`, `1.02x`, `5.40x`,
    `78.1x`; under 0.01 as `<0.01x` (JSON and CSV keep the number)."""
    if ratio < 0.01:
        return "<0.01x"
    return f"{sig3(ratio)}x"


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


def format_range(low: float, high: float) -> str:
    """`0.91-1.06x`: an interval of ratios (a range of points reads `format_span`'s)."""
    return f"{format_ratio(low).removesuffix('x')}-{format_ratio(high)}"


def format_span(low: float, high: float) -> str:
    """`1.01x…4.00x`: the lowest and highest of several points' ratios, not an interval."""
    return f"{format_ratio(low)}…{format_ratio(high)}"


def format_vs(vs: Judgement | None) -> str:
    """The ratio cell after a target's value: `0.127x` (its mark is `mark`'s); an
    inconclusive one gives the interval instead, `0.91-1.06x`: the bound the runs set on
    the difference, where the middle of it would read as an answer."""
    if vs is None:
        return NONE
    if vs.ratio is None:
        return "n/a"
    if vs.decision is Decision.INCONCLUSIVE and vs.low is not None and vs.high is not None:
        return format_range(vs.low, vs.high)
    return format_ratio(vs.ratio)


MARKS = {
    Decision.BETTER: "better",
    Decision.WORSE: "worse",
    Decision.EQUIVALENT: "≈",
    Decision.INCONCLUSIVE: "?",
}
"""The mark after a ratio, in every table; `!` where validity warnings took the verdict
away. Short on purpose: a mark sits in a narrow column, and the legend says each."""
FLAGGED_MARK = "!"


def mark(vs: Judgement | None) -> str:
    """The mark after a ratio: the verdict's, `!` for a flagged cell, else nothing."""
    if vs is None:
        return ""
    if vs.why in (NoVerdict.FLAGGED, NoVerdict.BASELINE_FLAGGED):
        return FLAGGED_MARK
    return MARKS.get(vs.decision, "")


def vs_title(vs: Judgement | None, baseline: str) -> str:
    """A ratio cell's details for a tooltip: the interval, the verdict or why none."""
    if vs is None or vs.ratio is None:
        return "" if vs is None else f"vs {baseline}: no ratio ({vs.reason})"
    text = f"{format_ratio(vs.ratio)} of {baseline}"
    if vs.low is not None and vs.high is not None:
        text += f", interval {format_ratio(vs.low)} to {format_ratio(vs.high)}"
    if vs.decision is Decision.INCONCLUSIVE:
        more = vs.more_runs
        runs = "" if more is None else f": about {more} more run{'s' if more != 1 else ''} each"
        return f"{text}; inconclusive{runs}"
    if vs.decision is not Decision.NONE:
        return f"{text}; {vs.decision.word}"
    return f"{text}; no verdict: {vs.reason}"


def table_columns(comparison: Comparison) -> list[str]:
    """The headers after the label column: each target, and its ratio to the baseline
    after each but the baseline."""
    cols: list[str] = []
    for t in comparison.targets:
        if comparison.is_baseline(t):
            cols.append(f"{t} (baseline)")
        else:
            cols += [t, "ratio"]
    return cols


def row_cells(
    comparison: Comparison, group: Group, cells: dict[str, Cell], metric: MetricSpec
) -> list[tuple[str, Judgement | None, bool | None]]:
    """(text, judgement, passed) per column: a summary has no judgement, a ratio column
    its cell's; `passed` is a verdict cell's outcome (PASS/FAIL), else None."""
    out: list[tuple[str, Judgement | None, bool | None]] = []
    for t in comparison.targets:
        cell = cells[t]
        out.append((format_cell(metric, cell, group.runs.get(t, 0)), None, passed(metric, cell)))
        if not comparison.is_baseline(t):
            out.append((format_vs(cell.vs), cell.vs, None))
    return out


def runs_cells(comparison: Comparison, group: Group) -> list[str]:
    """The `runs` row: each target's run count, nothing under a ratio."""
    out = []
    for t in comparison.targets:
        out.append(str(group.runs.get(t, 0)))
        if not comparison.is_baseline(t):
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


def short_title(
    comparison: Comparison,
    group: Group,
    varying_of: dict[str, tuple[str, ...]] | None = None,
) -> str:
    """`rand4k rw=randread`: the workload and the parameters that vary among its own
    groups (a list of points names them so; `group_title` sets a group apart from every
    other workload's). `varying_of`: `varying_by_workload(comparison)`, for many calls."""
    if varying_of is None:
        varying_of = varying_by_workload(comparison)
    varying = varying_of.get(group.workload, ())
    shown = [f"{k}={format_param(k, v)}" for k, v in group.params if k in varying]
    return " ".join([group.workload, *shown])


def varying_by_workload(comparison: Comparison) -> dict[str, tuple[str, ...]]:
    """Per workload, the parameters that tell its groups apart."""
    by: dict[str, list[Group]] = {}
    for g in comparison.groups:
        by.setdefault(g.workload, []).append(g)
    return {w: tuple(varying_keys(g.params for g in gs)) for w, gs in by.items()}


def header(comparison: Comparison) -> str:
    """One line: the study, the baseline, the filter and the parameters every group shares
    (no baseline where only integrity points were compared: their outcomes are words)."""
    parts = [f"study `{comparison.study}`"]
    if comparison.groups or not comparison.integrity:
        parts.append(baselines_text(comparison))
    if comparison.where:
        parts.append("where " + " ".join(f"{k}={v}" for k, v in comparison.where))
    common = comparison.common_params()
    if common:
        parts.append(" ".join(f"{k}={format_param(k, v)}" for k, v in common))
    return " · ".join(parts)


def _quoted(name: str) -> str:
    return f"`{name}`"


def baselines_text(
    comparison: Comparison,
    quote: Callable[[str], str] = _quoted,
    plain: Callable[[str], str] = str,
) -> str:
    """`baseline `ext4``; with questions `baselines: RAID layout `btrfs-raid0`, cluster
    size `xfs-4k`` (a target name through `quote`, a question's through `plain`)."""
    if not comparison.questions:
        return f"baseline {quote(comparison.baseline)}"
    return "baselines: " + ", ".join(
        f"{plain(q.name or 'the rest')} {quote(q.baseline)}" for q in comparison.questions
    )


def against_text(comparison: Comparison, quote: Callable[[str], str] = _quoted) -> str:
    """What each target is compared with: `ext4` (through `quote`), or "its question's
    baseline" in a study with questions."""
    if not comparison.questions:
        return quote(comparison.baseline)
    return "its question's baseline"


def margin_text(margin: float) -> str:
    """`5%`, `2.5%`: an equivalence margin."""
    return f"{margin * 100:.3g}%"


def interval_level(alpha: float) -> str:
    """`95%`; `99.38%` for an adaptive study's level per look (`fslab.stats.sequential`)."""
    return f"{(1 - alpha) * 100:.4g}%"


def legend(comparison: Comparison) -> str:
    """The key to the cells and marks, one paragraph (a terminal wraps it)."""
    conf = interval_level(comparison.alpha)
    return (
        f"mean ± {comparison.confidence:.0%} CI half-width (Student's t) over n runs. "
        f"ratio: target / {against_text(comparison)}, geometric means, judged on its {conf} "
        + (
            "interval (paired by round: the rounds' ratios, Student's t on logs; Welch where "
            "fewer than two rounds pair up): better/worse"
            if comparison.blocked
            else "interval (Welch, on logs): better/worse"
        )
        + ": the interval excludes 1 and the change is "
        f"at least {MIN_EFFECT_PCT:g}%; ≈: equivalent, its {interval_level(2 * comparison.alpha)} "
        f"interval (two one-sided tests) lies within ±{margin_text(comparison.margin)} and is "
        "the one shown; ?: inconclusive, shown as its interval "
        "(0.91-1.06x: the runs bound the ratio so far, more runs needed); !: no verdict, the "
        "runs are flagged (see the warnings); no mark: no verdict (a single run, an amount "
        "of work, or no better direction)."
    )


def warning_summary(comparison: Comparison, *, points: int = 3) -> list[str]:
    """The study's warnings, one line per kind: which targets at how many points, and
    the first `points` points: `cached: ext4 at 2 points, xfs at 2 (rw=read, rw=randread)`.
    The details of each are in `--format json` and the HTML report."""
    # A kind's points by group: only the first `points` are named (a title is a format
    # of every parameter, and a large study warns at a hundred thousand points).
    by_kind: dict[str, tuple[dict[str, int], dict[int, Group], list[str]]] = {}
    for i, g in enumerate(comparison.groups):
        seen: set[tuple[str, str]] = set()
        for w in g.warnings_seen():
            targets, groups, example = by_kind.setdefault(w.kind.value, ({}, {}, []))
            if (w.kind.value, w.target) not in seen:
                seen.add((w.kind.value, w.target))
                targets[w.target] = targets.get(w.target, 0) + 1
            groups[i] = g
            if not example:
                example.append(w.message)
    out: list[str] = []
    varying_of = varying_by_workload(comparison) if by_kind else {}
    for kind, (targets, groups, example) in by_kind.items():
        counts = [f"{t} at {n} point{'s' if n != 1 else ''}" for t, n in targets.items()]
        first = islice(groups.values(), points)
        shown = list({short_title(comparison, g, varying_of): None for g in first})
        more = max(len(groups) - points, 0)
        where = ", ".join(shown) + (f" and {more} more" if more else "")
        line = f"{kind}: " + ", ".join(counts) + f" ({where})"
        if len(groups) == 1 and example:
            line += f": {example[0]}"
        out.append(line)
    return out


def warning_hints(comparison: Comparison) -> list[str]:
    """What to do about each kind of warning shown, once per kind."""
    hints: dict[str, str] = {}
    for g in comparison.groups:
        for w in g.warnings_seen():
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


def markdown_sentence(
    spans: Sequence[Span], text: Callable[[str], str] = md, name: Callable[[str], str] = code
) -> str:
    """A sentence in Markdown: targets through `name` (code), emphasis in bold, the rest
    through `text` (escaped)."""
    out: list[str] = []
    for s in spans:
        if s.style == "target":
            out.append(name(s.text))
        elif s.style == "strong":
            lead = " " if s.text.startswith(" ") else ""
            trail = " " if s.text.endswith(" ") else ""
            out.append(f"{lead}**{text(s.text.strip())}**{trail}")
        else:
            out.append(text(s.text))
    return "".join(out)


def limit_lines(comparison: Comparison) -> list[str]:
    """The answers to the study's `latency_limit`s, one line each (`fslab.compare.limit`)."""
    if not comparison.latency_limits:
        return []
    from fslab.compare.limit import latency_limits, sentences
    from fslab.metrics import IOPS, LAT_P99

    return sentences(
        latency_limits(comparison),
        lambda ns: format_stat(LAT_P99, ns, None),
        lambda rate: format_stat(IOPS, rate, None),
    )
