"""A `Comparison` for people and for programs: a rich table for the terminal, Markdown, and
tidy CSV and JSON (one row per group, target, operation and metric).

Human units are made here and only here: IOPS as `12.3k`, bandwidth in MiB/s, latencies in
the unit that fits (`ns`, `us`, `ms`, `s`). CSV and JSON keep the stored base units
(`bw_bytes` in bytes per second, latencies in ns) under the stored names.
"""

from __future__ import annotations

import csv
import io
import json
import math
from typing import Any

from rich import box
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from fslab.compare import VERDICT_UNIT, Cell, Comparison, MetricSpec, format_param
from fslab.compare import Group as CompareGroup
from fslab.safe_text import safe_text
from fslab.stats.summary import MIN_EFFECT_PCT, Difference, Verdict

JSON_SCHEMA_VERSION = 1
"""Version of the `render_json` document; bumped when a field changes meaning or goes."""

_MARKS = {Verdict.BETTER: "better", Verdict.WORSE: "worse", Verdict.SAME: "", Verdict.UNTESTED: "?",
          Verdict.DIFFERENT: "differs"}  # fmt: skip
_STYLES = {Verdict.BETTER: "bold green", Verdict.WORSE: "bold red", Verdict.UNTESTED: "dim",
           Verdict.DIFFERENT: "bold yellow"}  # fmt: skip
_PASS_STYLES = {True: "bold green", False: "bold red"}
_NONE = "—"


# -- numbers -------------------------------------------------------------------------------


def _sig3(value: float) -> str:
    """Three significant digits, no exponent, whole numbers kept whole: 0.0635, 1.37, 13.7,
    137, 1370."""
    if abs(value) >= 99.95 or value == 0:
        return f"{value:.0f}"
    rounded = float(f"{value:.3g}")  # first, so that 9.996 counts as 10.0
    return f"{rounded:.{2 - math.floor(math.log10(abs(rounded)))}f}"


def _scale(metric: MetricSpec, mean: float) -> tuple[float, str]:
    """The divisor and suffix that fit `mean` for this metric's unit."""
    if metric.unit in ("bytes_per_s", "bytes"):
        return float(1 << 20), ""
    if metric.unit == "ratio":
        return 1.0, "x"
    if metric.unit == "size":
        return (float(1 << 20), "MiB") if mean >= (1 << 20) else (1024.0, "KiB")
    if metric.unit == "pct":
        return 1.0, "%"
    if metric.unit == "ns":
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
    scale, suffix = _scale(metric, mean)

    def num(value: float) -> str:
        # Whole nanoseconds: the engine's resolution.
        return f"{value:.0f}" if suffix == "ns" else _sig3(value / scale)

    text = f"{num(mean)}{suffix}"
    if ci_half is not None:
        text += f" ± {num(ci_half)}{suffix}"
    return text


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
        return _NONE
    ok = passed(metric, cell)
    if ok is not None:
        good = sum(v >= 1.0 for v in cell.samples)
        return f"{'PASS' if ok else 'FAIL'} ({good}/{len(cell.samples)})"
    text = format_stat(metric, s.mean, s.ci_half)
    return text if s.n == runs else f"{text} (n={s.n})"


def format_delta(diff: Difference | None) -> str:
    """`+12.3%`: the change of the mean vs the baseline (`n/a` when the baseline's is 0)."""
    if diff is None:
        return _NONE
    if diff.delta_pct is None:
        return "n/a"
    # `+ 0.0` turns a rounded -0.0 into 0.0: no "-0.0%" for a change too small to show
    return f"{round(diff.delta_pct, 1) + 0.0:+.1f}%"


# -- words ---------------------------------------------------------------------------------


def group_title(comparison: Comparison, group: CompareGroup) -> str:
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


def warning_lines(group: CompareGroup) -> list[str]:
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


def _columns(comparison: Comparison) -> list[str]:
    """The headers after the label column: each target, and a Δ after each but the baseline."""
    cols: list[str] = []
    for t in comparison.targets:
        if t == comparison.baseline:
            cols.append(f"{t} (baseline)")
        else:
            cols += [t, "Δ"]
    return cols


def _row_cells(
    comparison: Comparison, group: CompareGroup, cells: dict[str, Cell], metric: MetricSpec
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


def _runs_cells(comparison: Comparison, group: CompareGroup) -> list[str]:
    out = []
    for t in comparison.targets:
        out.append(str(group.runs.get(t, 0)))
        if t != comparison.baseline:
            out.append("")
    return out


# -- terminal ------------------------------------------------------------------------------


def table_renderable(comparison: Comparison) -> RenderableType:
    """The header, one rich table per group, and the legend. Every name in it (study,
    targets, workloads, parameters, ops, warnings) comes from a results database, which
    may be someone else's: each is terminal-safe (`safe_text`), and rich reads no markup
    in it (`render_table`'s console has none, and the rest are `Text`)."""
    parts: list[RenderableType] = [Text(safe_text(header(comparison)), style="bold")]
    for i, group in enumerate(comparison.groups):
        table = Table(
            title=Text(safe_text(group_title(comparison, group))),
            title_justify="left",
            title_style="bold",
            box=box.SIMPLE_HEAD,
            pad_edge=False,
        )
        table.add_column("")
        for name in _columns(comparison):
            table.add_column(Text(safe_text(name)), justify="right", no_wrap=True)
        table.add_row("runs", *_runs_cells(comparison, group), end_section=True)
        ops = group.ops
        for row in group.rows:
            cells = {c.target: c for c in row.cells}
            rendered: list[RenderableType] = [Text(safe_text(f"{row.op} {row.metric.label}"))]
            for text, verdict, ok in _row_cells(comparison, group, cells, row.metric):
                mark = _MARKS[verdict] if verdict else ""
                if ok is not None:
                    rendered.append(Text(text, style=_PASS_STYLES[ok]))
                elif verdict and mark:
                    rendered.append(Text.assemble(text, " ", (mark, _STYLES[verdict])))
                else:
                    rendered.append(Text(text))
            last_of_op = row.metric.name == _last_metric(group, row.op).name
            table.add_row(*rendered, end_section=last_of_op and row.op != ops[-1])
        if i == 0:
            parts.append(Text(""))  # tables end with a blank line of their own
        parts.append(table)
        warned = warning_lines(group)
        if warned:
            lines = "\n".join(f"  ! {safe_text(line)}" for line in warned)
            parts.append(Text(lines + "\n", style="yellow"))
    hints = warning_hints(comparison)
    if hints:
        parts.append(Text("\n".join(f"hint: {safe_text(h)}" for h in hints), style="yellow"))
    parts.append(Text(safe_text(legend(comparison)), style="dim"))
    return Group(*parts)


def _last_metric(group: CompareGroup, op: str) -> MetricSpec:
    return [r.metric for r in group.rows if r.op == op][-1]


def render_table(comparison: Comparison, *, width: int | None = None, color: bool = False) -> str:
    """The terminal tables as text. `width` None sizes the text to the widest table (for a
    pipe or a file: no wrapping); `color` adds ANSI styles."""
    renderable = table_renderable(comparison)
    if width is None:
        probe = Console(width=100_000, color_system=None, file=io.StringIO())
        width = max(80, probe.measure(renderable).maximum)
    out = io.StringIO()
    console = Console(
        file=out,
        width=width,
        color_system="standard" if color else None,
        force_terminal=color,
        highlight=False,
        soft_wrap=False,
        emoji=False,
        markup=False,
    )
    console.print(renderable)
    return "\n".join(line.rstrip() for line in out.getvalue().splitlines()) + "\n"


# -- Markdown ------------------------------------------------------------------------------


def _md_escape(text: str) -> str:
    # Markdown goes to a terminal as often as to a file: control characters shown escaped.
    return safe_text(text).replace("|", "\\|")


def _md_cell(text: str, verdict: Verdict | None, ok: bool | None) -> str:
    if ok is not None:
        return f"**{text}**"
    mark = _MARKS[verdict] if verdict else ""
    if verdict in (Verdict.BETTER, Verdict.WORSE):
        return f"{text} **{mark}**"
    return f"{text} {mark}" if mark else text


def render_markdown(comparison: Comparison) -> str:
    """One Markdown section per group: a pipe table, numbers right-aligned, marks in bold."""
    lines = [_md_escape(header(comparison)), ""]
    cols = _columns(comparison)
    for group in comparison.groups:
        lines.append(f"### {_md_escape(group_title(comparison, group))}")
        lines.append("")
        lines.append("| | " + " | ".join(_md_escape(name) for name in cols) + " |")
        lines.append("|:---|" + "---:|" * len(cols))
        lines.append("| runs | " + " | ".join(_runs_cells(comparison, group)) + " |")
        for row in group.rows:
            cells = {c.target: c for c in row.cells}
            texts = [
                _md_cell(text, verdict, ok)
                for text, verdict, ok in _row_cells(comparison, group, cells, row.metric)
            ]
            label = f"{row.op} {row.metric.label}"
            lines.append(
                f"| {_md_escape(label)} | " + " | ".join(_md_escape(t) for t in texts) + " |"
            )
        lines.append("")
        warned = warning_lines(group)
        if warned:
            lines += [f"- ⚠ {_md_escape(w)}" for w in warned]
            lines.append("")
    hints = warning_hints(comparison)
    if hints:
        lines += [f"- hint: {_md_escape(h)}" for h in hints]
        lines.append("")
    lines.append(f"_{_md_escape(legend(comparison))}_")
    return "\n".join(lines) + "\n"


# -- CSV and JSON (tidy) -------------------------------------------------------------------

_FIXED = ("study", "workload", "kind", "target", "baseline", "op", "metric")
_VALUES = ("mean", "stdev", "ci_half", "n", "delta_pct", "p_value", "verdict")


def _param_column(key: str) -> str:
    return f"param_{key}" if key in _FIXED or key in _VALUES else key


def tidy_columns(comparison: Comparison) -> list[str]:
    """The CSV header: study, workload, kind, the parameters, target, baseline, op, metric,
    then the values."""
    params = [_param_column(k) for k in comparison.param_keys]
    return [*_FIXED[:3], *params, *_FIXED[3:], *_VALUES]


def tidy_rows(comparison: Comparison) -> list[dict[str, Any]]:
    """One row per (group, target, op, metric) that has data. Values in stored units;
    `verdict` is `baseline` on the baseline's rows; absent values are None."""
    rows: list[dict[str, Any]] = []
    keys = comparison.param_keys
    for group in comparison.groups:
        params = dict(group.params)
        for row in group.rows:
            for cell in row.cells:
                s = cell.summary
                if s is None:
                    continue
                d = cell.diff
                if cell.target == comparison.baseline:
                    verdict: str | None = "baseline"
                else:
                    verdict = d.verdict.value if d else None
                out: dict[str, Any] = {
                    "study": comparison.study,
                    "workload": group.workload,
                    "kind": group.kind,
                }
                out.update({_param_column(k): params.get(k) for k in keys})
                out.update(
                    target=cell.target,
                    baseline=comparison.baseline,
                    op=row.op,
                    metric=row.metric.name,
                    mean=s.mean,
                    stdev=s.stdev,
                    ci_half=s.ci_half,
                    n=s.n,
                    delta_pct=d.delta_pct if d else None,
                    p_value=d.p_value if d else None,
                    verdict=verdict,
                )
                rows.append(out)
    return rows


def render_csv(comparison: Comparison) -> str:
    """Tidy CSV with a header row; empty fields where a value is absent."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=tidy_columns(comparison), lineterminator="\n")
    writer.writeheader()
    for row in tidy_rows(comparison):
        writer.writerow(
            {
                k: "" if v is None else (json.dumps(v) if isinstance(v, list | dict | bool) else v)
                for k, v in row.items()
            }
        )
    return out.getvalue()


def render_json(comparison: Comparison) -> str:
    """A JSON document: what was compared, how, and the tidy `rows`."""
    doc = {
        "schema_version": JSON_SCHEMA_VERSION,
        "study": comparison.study,
        "baseline": comparison.baseline,
        "targets": list(comparison.targets),
        "where": [f"{k}={v}" for k, v in comparison.where],
        "confidence": comparison.confidence,
        "alpha": comparison.alpha,
        "method": (
            "mean ± ci_half: Student's t confidence interval over n runs; delta_pct: change "
            "of the mean vs the baseline; verdict: Welch's t-test (two-sided), better/worse "
            "when p_value < alpha (different for a metric without a better direction), same "
            "otherwise or when the change is under the minimum effect, untested when either "
            "side has n < 2"
        ),
        "skipped_runs": dict(comparison.skipped_runs),
        "rows": tidy_rows(comparison),
        "warnings": [
            {
                "workload": g.workload,
                "params": dict(g.params),
                "target": w.target,
                "kind": w.kind.value,
                "message": w.message,
                "hint": w.hint,
                "run_ids": list(w.runs),
            }
            for g in comparison.groups
            for w in g.all_warnings()
        ],
    }
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
