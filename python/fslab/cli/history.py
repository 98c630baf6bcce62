"""`fslab history`: a study run again and again, point by point: each pass's value, the
trend, and whether the latest pass regressed. The table (or JSON) goes to stdout; notes
and `--fail-on` to stderr."""

from __future__ import annotations

import io
import shutil
import sys
from pathlib import Path

import click
import orjson
from rich.console import Console
from rich.table import Table

from fslab.cli.options import exit_on_findings, results_dbs_option, study_option, where_option
from fslab.report.format import format_stat
from fslab.report.history import History, Series, against, as_json, history, sentence
from fslab.report.render.terminal import DEFAULT_WIDTH
from fslab.safe_text import safe_text
from fslab.stats.regression import ALPHA, MIN_CHANGE, MIN_REFERENCE, WINDOW, Trend

SPARKS = "▁▂▃▄▅▆▇█"
TREND_PASSES = 24
"""The last this many passes drawn in a series' trend."""


@click.command("history")
@click.argument(
    "sources", nargs=-1, metavar="[DB]...", type=click.Path(dir_okay=False, path_type=Path)
)
@results_dbs_option
@study_option("follow")
@where_option
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table",
    show_default=True, help="table for people; json (every pass and series, with each "
    "pass's check).",
)  # fmt: skip
@click.option(
    "--html", "html", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE",
    help="Also write the trend charts, one per point, as one self-contained HTML file.",
)  # fmt: skip
@click.option(
    "--window", type=click.IntRange(MIN_REFERENCE, 1000), default=WINDOW, show_default=True,
    help="Check each pass against at most this many passes before it.",
)  # fmt: skip
@click.option(
    "--alpha", type=click.FloatRange(0.0001, 0.2), default=ALPHA, show_default=True,
    help="Each check's false-alarm rate where passes vary as before (two-sided).",
)  # fmt: skip
@click.option(
    "--fail-on", "fail_on", type=click.Choice(["regression"]), default=None,
    help="Exit 1 (after the output) when some point's latest pass is a regression, naming "
    "each on stderr: a nightly check for CI.",
)  # fmt: skip
@click.pass_context
def history_command(
    ctx: click.Context,
    sources: tuple[Path, ...],
    results: tuple[Path, ...],
    study: str | None,
    where: tuple[str, ...],
    fmt: str,
    html: Path | None,
    window: int,
    alpha: float,
    fail_on: str | None,
) -> None:
    """Follow a study across passes: its points' values pass by pass, and regressions.

    A pass is one run of the whole study: give each night's results database (or bundle),
    as arguments (`fslab history nights/*.db`) or with --results, in any order (they are
    ordered by when they ran), or one database into which `fslab import --as LABEL`
    brought them. Each point's
    headline value per pass is the geometric mean of its counted runs. The latest pass is
    checked against up to --window passes before it: outside their prediction interval
    on logs (Student's t, at --alpha) and at least 5% off their geometric mean, it is a
    regression or an improvement (docs/statistics.md, "History"). A change of kernel or
    tools between passes is named; after a change of the engine's major.minor, passes are
    checked only against the ones since.
    """
    given = ctx.get_parameter_source("results") is not click.core.ParameterSource.DEFAULT
    h = history((*sources, *results) if given or not sources else sources, study, where,
                alpha=alpha, window=window)  # fmt: skip
    if fmt == "json":
        sys.stdout.buffer.write(orjson.dumps(as_json(h), option=orjson.OPT_SERIALIZE_NUMPY))
        sys.stdout.buffer.write(b"\n")
        sys.stdout.buffer.flush()
    else:
        width = shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns
        click.echo(render_table(h, width), nl=False)
    if html is not None:
        from fslab.report.history_html import render_history_html

        html.write_text(render_history_html(h), encoding="utf-8")
        click.echo(f"wrote {safe_text(html)}", err=True)
    _fail_on(h, fail_on)


def render_table(h: History, width: int) -> str:
    """The passes (when each began, what changed), then a row per series: its trend over
    the last passes, the latest value, its change against the passes before it and its
    change with the day's factor out (`!`: outside what the passes before predict),
    and the verdict; then a sentence per regression."""
    console = Console(width=width, highlight=False, markup=False, record=True,
                      file=io.StringIO())  # fmt: skip
    first, last = h.passes[0], h.passes[-1]
    console.print(safe_text(
        f"study `{h.study}`: {len(h.passes)} passes, {first.day} to {last.day} UTC; each "
        f"pass checked against up to {h.window} before it (alpha {h.alpha:g}, at least "
        f"{MIN_CHANGE:.0%} off)"
    ))  # fmt: skip
    for p in h.passes:
        if p.changes:
            console.print(safe_text(f"  {p.label} ({p.day}): " + "; ".join(p.changes)
                                    + ("" if p.comparable else ": a new era, not checked "
                                       "against the passes before it")))  # fmt: skip
    console.print()
    table = Table(box=None, pad_edge=False)
    for col, justify in (("point", "left"), ("target", "left"), ("trend", "left"),
                         ("latest", "right"), ("vs before", "right"), ("day out", "right"),
                         ("verdict", "left")):  # fmt: skip
        table.add_column(col, justify=justify, overflow="fold",  # type: ignore[arg-type]
                         no_wrap=col not in ("point", "target"))  # fmt: skip
    # The trend takes what the other columns leave, from 8 to `TREND_PASSES` passes.
    passes = max(8, min(TREND_PASSES, width - 70))
    for s in h.series:
        table.add_row(*(safe_text(x) for x in _row(s, passes)))
    console.print(table)
    regressions = h.regressions()
    console.print()
    if regressions:
        console.print(f"{len(regressions)} regression(s) in the latest pass ({last.label}):")
        for s in regressions:
            console.print(safe_text(f"  {sentence(s)}"))
    else:
        console.print(f"no regression in the latest pass ({safe_text(last.label)})")
    return console.export_text()


def _row(s: Series, passes: int) -> tuple[str, ...]:
    latest = s.latest_value()
    value = format_stat(s.metric, latest.mean, None) if latest is not None else "-"
    if s.trend is Trend.SHORT:
        verdict = f"short ({s.latest.reference} before)"
    elif s.trend is Trend.NONE:
        verdict = "not in it"
    else:
        verdict = s.trend.value
    return (s.title, s.target, spark(s, passes), value, against(s.latest),
            against(s.latest_relative), verdict)  # fmt: skip


def spark(s: Series, passes: int = TREND_PASSES) -> str:
    """The series' last `passes` values as block characters, low to high (a blank where
    a pass did not measure it)."""
    values = [v.mean if v is not None else None for v in s.values[-passes:]]
    got = [v for v in values if v is not None]
    if not got:
        return ""
    lo, hi = min(got), max(got)
    span = hi - lo
    out = []
    for v in values:
        if v is None:
            out.append(" ")
        elif span <= 0:
            out.append(SPARKS[len(SPARKS) // 2])
        else:
            out.append(SPARKS[min(len(SPARKS) - 1, int((v - lo) / span * len(SPARKS)))])
    return "".join(out)


def _fail_on(h: History, fail_on: str | None) -> None:
    if fail_on is None:
        return
    found = [sentence(s) for s in h.regressions()]
    exit_on_findings(
        "regression", found, "no regression in the latest pass", "regression(s) in the latest pass"
    )


command = history_command
