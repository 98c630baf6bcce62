"""`fslab site`: a static HTML site over one or more results databases (or bundles), to
browse offline, like `asv publish`: an index of the studies with their summaries, a page
per study (its summary, every point, and the whole `fslab report` page where the study is
small enough to draw), a page per point (its comparison table and each target's runs),
and the history of a study found in several sources.

Every link is relative and plotly.js is written once beside the pages, so the folder
opens from `file://` with no network. Names from the databases reach the pages escaped,
as in `fslab report` (jinja2 autoescapes; the report's own page escapes its chart data).

A study of 100,000 runs has some 17,000 points: its point pages are rendered by one
compiled template from what one read of the database gave (no chart, no per-page query),
and its study page lists the points instead of drawing them (`FULL_REPORT_RUNS`).
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from markupsafe import Markup
from plotly.offline import get_plotlyjs

from fslab import __version__
from fslab.compare import Comparison, Group, build_comparison
from fslab.errors import ExitStatus, FslabError
from fslab.report.charts import build_charts
from fslab.report.context import Environment, environments_of, load_report
from fslab.report.findings import Answer, Grid
from fslab.report.format import format_stat, slug
from fslab.report.history import history
from fslab.report.history_html import render_history_html
from fslab.report.html import (
    render_html,
    spans_html,
    summary_context,
    template_environment,
    template_source,
)
from fslab.report.integrity import integrity_lines, integrity_table
from fslab.report.output import check_parent, staged_dir
from fslab.report.tables import is_compact, table_views
from fslab.report.verdicts import failed_verdicts
from fslab.stats.warnings import RunFacts
from fslab.store.merge import results_view, source_label
from fslab.store.query import (
    id_span,
    open_readonly,
    run_facts,
    run_values,
    studies,
    study_runs,
)

MARKER = ".fslab-site"
"""The file that says `fslab site` made a folder: only such a folder is written over."""
PLOTLY = "plotly.min.js"
STYLE = "site.css"
FULL_REPORT_RUNS = 2_000
FULL_REPORT_POINTS = 500
"""Up to this many runs and points, a study's page links the whole `fslab report` page
(charts included); above, the browser would wait on thousands of charts, and the study
page lists its points instead."""
INDEX_LINES = 8
"""The summary lines the index shows per study; its page has them all."""


class SiteError(FslabError):
    """The site cannot be written where asked; nothing was."""

    exit_status = ExitStatus.USAGE


@dataclass(frozen=True)
class RunLine:
    """One run of a point, as its page lists it."""

    run_id: int
    rep: int
    status: str
    started: str
    duration_s: float | None
    values: tuple[str, ...]
    """The point's headline values, in the order of the page's columns."""
    flags: str
    """Why the run is doubtful or was not counted: disturbed, the engine's warnings, its
    error."""


@dataclass(frozen=True)
class StudyEntry:
    """A study of one source, as the index shows it."""

    name: str
    source: str
    href: str
    began: str = "-"
    machine: str = "-"
    points: int = 0
    runs: int = 0
    targets: tuple[str, ...] = ()
    lines: tuple[Markup, ...] = ()
    more_lines: int = 0
    problem: str = ""
    """Why it could not be compared (no completed run, ...): the page is not made."""
    history: str = ""


@dataclass(frozen=True)
class StudyGroup:
    """A study's passes as the index shows them: the latest in full, the others listed
    (a nightly study's index stays one entry, however many nights it ran)."""

    name: str
    latest: StudyEntry
    earlier: tuple[StudyEntry, ...]
    """The other passes, latest first."""


def study_groups(entries: Sequence[StudyEntry]) -> list[StudyGroup]:
    """The entries by study name, in order of first appearance, each latest first."""
    by: dict[str, list[StudyEntry]] = {}
    for e in entries:
        by.setdefault(e.name, []).append(e)
    out = []
    for name, mine in by.items():
        # A study that could not be compared has no start: it sorts last.
        ordered = sorted(mine, key=lambda e: (e.began != "-", e.began), reverse=True)
        out.append(StudyGroup(name, ordered[0], tuple(ordered[1:])))
    return out


@dataclass
class Site:
    """What was written: for the command's message."""

    studies: list[StudyEntry] = field(default_factory=list)
    pages: int = 0
    histories: int = 0


def check_site_dir(out: Path) -> Path:
    """`out` if a site may be written there: a new folder in an existing one, an empty
    folder, or a site `fslab site` made before (replaced whole). Raises `SiteError`, or
    `OutputError` where its parent folder is missing or not writable."""
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise SiteError(f"{out}: not a folder", hint="give a new folder with -o")
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).is_file():
        raise SiteError(
            f"{out}: a folder that is not empty and was not made by `fslab site`",
            hint="give a new or empty folder with -o (a site made before is replaced whole)",
        )
    check_parent(out.absolute())
    return out


def build_site(sources: Sequence[Path], out: Path, *, plotly_js: str | None = None) -> Site:
    """Writes the site of every study in `sources` into `out` (see the module); a failure
    leaves `out` as it was. Raises `FslabError`s with hints."""
    check_site_dir(out)
    site = Site()
    with staged_dir(out) as tmp:
        env = template_environment()
        taken: set[str] = set()
        passes: dict[str, list[Path]] = {}
        labelled: set[str] = set()
        labels: set[str] = set()
        for source in sources:
            label = source_label(source, labels)
            labels.add(label)
            with results_view([source]) as (db, _, _):
                with open_readonly(db) as con:
                    names = [s.name for s in studies(con)]
                    imported = con.execute(
                        "SELECT 1 FROM origin WHERE label IS NOT NULL LIMIT 1"
                    ).fetchone()
                for name in names:
                    passes.setdefault(name, []).append(source)
                    if imported:
                        labelled.add(name)
                    page = _unique(slug(name), taken)
                    entry, pages = _study(env, db, name, label, tmp / page)
                    site.studies.append(entry)
                    site.pages += pages
        if not site.studies:
            raise SiteError(
                "no study in " + ", ".join(str(s) for s in sources),
                hint="give the results databases `fslab run` wrote (or bundles)",
            )
        trends: dict[str, str] = {}
        for name, found in passes.items():
            href = _history(name, found, name in labelled, tmp, taken)
            if href:
                trends[name] = href
                site.histories += 1
        site.studies = [replace(e, history=trends.get(e.name, "")) for e in site.studies]
        (tmp / PLOTLY).write_text(
            plotly_js if plotly_js is not None else get_plotlyjs(), encoding="utf-8"
        )
        (tmp / STYLE).write_text(_style(), encoding="utf-8")
        _write(
            tmp / "index.html",
            env.get_template("site_index.html.j2").render(
                **_common(""),
                studies=site.studies,
                groups=study_groups(site.studies),
                sources=[str(s) for s in sources],
            ),
        )
        site.pages += 1 + site.histories
        (tmp / MARKER).write_text(f"fslab {__version__}\n", encoding="utf-8")
    return site


def _unique(name: str, taken: set[str]) -> str:
    page, i = name, 2
    while page in taken:
        page, i = f"{name}-{i}", i + 1
    taken.add(page)
    return page


def _write(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")


def _style() -> str:
    """The report's own style sheet, and the few rules the site's pages add."""
    return template_source("report.css.j2") + _SITE_CSS


_SITE_CSS = """
nav.crumbs { font-size: 14px; margin-bottom: 6px; }
nav.crumbs a { color: var(--accent); text-decoration: none; }
section.study { margin: 26px 0; }
section.study h2 a { color: inherit; }
table.points td.label, table.runs td.label { white-space: normal; }
.problem { color: var(--worse); }
"""


def _common(root: str) -> dict[str, Any]:
    return {
        "root": root,
        "version": __version__,
        "generated": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }


def _when(t: float | None) -> str:
    if t is None:
        return "-"
    return dt.datetime.fromtimestamp(t, tz=dt.UTC).strftime("%Y-%m-%d %H:%M")


def _study(env: Any, db: Path, name: str, source: str, folder: Path) -> tuple[StudyEntry, int]:
    """The study's page and its points' pages in `folder`: what the index says of it,
    and how many pages were written."""
    href = f"{folder.name}/index.html"
    try:
        c = build_comparison(db, study=name)
    except FslabError as e:
        return StudyEntry(name, source, "", problem=e.message), 0
    runs = sum(n for g in c.groups for n in g.runs.values())
    folder.mkdir()
    (folder / "points").mkdir()
    compact = is_compact(c)
    tables = table_views(c, titles=not compact)
    with open_readonly(db) as con:
        places = _run_places(con, c.study)
        environments = environments_of(con, places.environment_runs)
        lines = _run_lines(con, c.study, places)
    integrity = integrity_table(c)
    full = runs <= FULL_REPORT_RUNS and len(c.groups) <= FULL_REPORT_POINTS
    if full:
        data = load_report(db, study=name)
        _write(
            folder / "report.html",
            render_html(
                data,
                build_charts(data),
                plotly_src=f"../{PLOTLY}",
                site_links=(("« all studies", "../index.html"), ("« this study", "index.html")),
            ),
        )
    numbers = {id(g): i for i, g in enumerate(c.groups, 1)}
    found = summary_context(c, lambda g: f"points/{numbers[id(g)]}.html", compact=compact)
    machine = _machine(environments)
    said = _summary_lines(c, found["answers"], found["styles"])
    common = _common("../")
    _write(
        folder / "index.html",
        env.get_template("site_study.html.j2").render(
            **common,
            **found,
            c=c,
            source=source,
            began=_when(places.began),
            machine=machine,
            environments=environments,
            runs=runs,
            full=full,
            tables=tables,
            integrity=integrity,
            integrity_lines=integrity_lines(c),
        ),
    )
    point = env.get_template("site_point.html.j2")
    page_common = {**_common("../../"), **found, "c": c}
    for i, view in enumerate(tables, 1):
        _write(
            folder / "points" / f"{i}.html",
            point.render(
                **page_common,
                t=view,
                n=i,
                last=len(tables),
                runs=_point_runs(view.group, c, lines),
                columns=[f"{op} {m.label}" for op, m in _headline(view.group)],
            ),
        )
    return StudyEntry(
        name=c.study,
        source=source,
        href=href,
        began=_when(places.began),
        machine=machine,
        points=len(c.groups) + (len(integrity.rows) if integrity else 0),
        runs=runs,
        targets=c.targets,
        lines=tuple(said[:INDEX_LINES]),
        more_lines=max(0, len(said) - INDEX_LINES),
    ), 1 + full + len(tables)


def _machine(environments: Sequence[Environment]) -> str:
    if not environments:
        return "-"
    e = environments[0]
    more = f" (+{len(environments) - 1} other)" if len(environments) > 1 else ""
    return f"{e.cpu_model}, {e.cores} cores, kernel {e.kernel}{more}"


def _summary_lines(
    c: Comparison, found: Sequence[Answer | Grid], styles: Mapping[str, Any]
) -> list[Markup]:
    """The summary's headlines: each family's answer, each verdict, each integrity line."""
    out: list[Markup] = []
    for item in found:
        listed = [row.answer for row in item.rows] if isinstance(item, Grid) else [item]
        for a in listed:
            out.append(Markup("<b>{}</b>: ").format(a.title) + spans_html(a.headline(), styles))
    for v in failed_verdicts(c)[1]:
        out.append(Markup("<b>{}</b>: ").format(v.row.title) + spans_html(v.sentence(), styles))
    out += [spans_html(line, styles) for line in integrity_lines(c)]
    return out


@dataclass(frozen=True)
class _Places:
    """The study's runs as its point pages list them, from one read of `run`."""

    by_point: Mapping[str, list[tuple[int, int, str, float, float | None]]]
    """Per point, its runs: (id, rep, status, started_at, ended_at), by id."""
    environment_runs: Mapping[int, int]
    began: float | None


def _run_places(con: sqlite3.Connection, study: str) -> _Places:
    (study_id,) = con.execute("SELECT id FROM study WHERE name = ?", (study,)).fetchone()
    listed = study_runs(con, study_id)
    status = {r.id: (r.point_id, r.status) for r in listed}
    # A range of the primary key, as the comparison reads its runs (`id_span`): a join
    # to `point` per run costs 20 times as much. The columns before `effective` only:
    # the engine's report after them spans overflow pages.
    by_point: dict[str, list[tuple[int, int, str, float, float | None]]] = {}
    env_runs: dict[int, int] = {}
    began: float | None = None
    for run_id, rep, started, ended, env_id in con.execute(
        "SELECT id, rep, started_at, ended_at, environment_id FROM run"
        " WHERE id BETWEEN ? AND ? ORDER BY id",
        id_span(set(status)),
    ):
        if run_id not in status:
            continue
        point_id, state = status[run_id]
        by_point.setdefault(point_id, []).append((run_id, rep, state, started, ended))
        if env_id is not None and state == "ok":
            env_runs[env_id] = env_runs.get(env_id, 0) + 1
        began = started if began is None else min(began, started)
    return _Places(by_point, env_runs, began)


@dataclass(frozen=True)
class _Lines:
    places: _Places
    values: Mapping[int, Mapping[tuple[str, str], float]]
    facts: Mapping[int, RunFacts]
    errors: Mapping[int, str]


def _run_lines(con: sqlite3.Connection, study: str, places: _Places) -> _Lines:
    """Each run's compared values, facts, and the error of each run that failed."""
    ok = {r[0] for runs in places.by_point.values() for r in runs if r[2] == "ok"}
    values: dict[int, dict[tuple[str, str], float]] = {}
    for block in run_values(con, ok):
        for run_id, row in zip(block.runs.tolist(), block.data.tolist(), strict=True):
            values[run_id] = dict(zip(block.keys, row, strict=True))
    facts, _ = run_facts(con, ok)
    # Through the index on run(point_id, status): only the failed runs' rows are read.
    errors = {
        int(run_id): str(error or "")
        for run_id, error in con.execute(
            "SELECT run.id, run.error FROM study JOIN point ON point.study_id = study.id"
            " JOIN run INDEXED BY run_point ON run.point_id = point.id"
            " WHERE study.name = ? AND run.status != 'ok'",
            (study,),
        )
    }
    return _Lines(places, values, facts, errors)


def _headline(group: Group) -> list[tuple[str, Any]]:
    return [(r.op, r.metric) for r in group.headline_rows()]


def _point_runs(group: Group, c: Comparison, lines: _Lines) -> list[tuple[str, list[RunLine]]]:
    """Per target of the point, its runs (any status), in the order they ran."""
    heads = _headline(group)
    out: list[tuple[str, list[RunLine]]] = []
    for target in c.targets:
        point_id = group.points.get(target)
        if point_id is None:
            continue
        listed: list[RunLine] = []
        for run_id, rep, status, started, ended in lines.places.by_point.get(point_id, ()):
            got = lines.values.get(run_id, {})
            shown = tuple(
                format_stat(m, got[(op, m.name)], None) if (op, m.name) in got else "-"
                for op, m in heads
            )
            listed.append(RunLine(run_id, rep, status, _when(started),
                                  None if ended is None else ended - started, shown,
                                  _flags(lines, run_id)))  # fmt: skip
        out.append((target, listed))
    return out


def _flags(lines: _Lines, run_id: int) -> str:
    parts: list[str] = []
    error = lines.errors.get(run_id)
    if error:
        parts.append(error.splitlines()[0][:200])
    f = lines.facts.get(run_id)
    if f is not None:
        if f.disturbed:
            parts.append(
                "disturbed, not counted" + (f" ({', '.join(f.reasons)})" if f.reasons else "")
            )
        parts += list(dict.fromkeys(w[0] for w in f.engine_warnings))
    return "; ".join(parts)


def _history(name: str, sources: Sequence[Path], labelled: bool, tmp: Path, taken: set[str]) -> str:
    """The history page of a study found in several sources (or imported into one under
    labels): its address, or "" where it has fewer than two passes."""
    if len(sources) < 2 and not labelled:
        return ""
    h = history(sources, name)
    if len(h.passes) < 2:
        return ""
    page = _unique(f"history-{slug(name)}", taken) + ".html"
    _write(tmp / page, render_history_html(h, plotly_src=PLOTLY))
    return page
