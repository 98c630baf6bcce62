"""`fslab bundle`: one archive that holds everything about a study, to attach to an
issue, send to a colleague or keep: the study file, the results database, the HTML and
Markdown reports, and the CSVs.

    <study>/README.md         what is inside and how to look at it again
    <study>/study.toml        the study file, as stored with the results
    <study>/results.db        the results database (a consistent copy, all its studies)
    <study>/report.html       the report, self-contained
    <study>/report.md         the report as Markdown, its images in report_files/
    <study>/summary.csv       the comparison (`fslab compare --format csv`)
    <study>/runs.csv          every run x metric (`fslab export --format csv`)

`.tar.gz` (default) or `.zip`, by the name given.
"""

from __future__ import annotations

import tarfile
import tempfile
import zipfile
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

from fslab import __version__
from fslab.report.charts import build_charts
from fslab.report.context import load_report
from fslab.report.export import plan_export, write_export_csv
from fslab.report.format import slug
from fslab.report.html import write_html
from fslab.report.markdown import write_markdown_report
from fslab.report.output import OutputError, staged
from fslab.report.render.csv import render_csv
from fslab.store.query import DEFAULT_RESULTS, open_readonly
from fslab.store.records import backup

FORMATS = {".tar.gz": "tar.gz", ".tgz": "tar.gz", ".zip": "zip"}


def archive_format(path: Path) -> str:
    """`tar.gz` or `zip`, from the file name; `OutputError` for anything else."""
    name = path.name.lower()
    for suffix, fmt in FORMATS.items():
        if name.endswith(suffix):
            return fmt
    raise OutputError(
        f"{path}: not an archive name fslab knows",
        hint="end it with `.tar.gz` (or `.tgz`) or `.zip`",
    )


def make_bundle(
    out: Path,
    db_path: Path | str = DEFAULT_RESULTS,
    study: str | None = None,
    baseline: str | None = None,
    where: Iterable[str | tuple[str, str]] = (),
    *,
    generated_at: datetime | None = None,
) -> list[str]:
    """Writes the archive `out` (whole or not at all); returns the names inside it.
    Raises `ResultsError`, `CompareError` or `OutputError` with hints."""
    fmt = archive_format(out)
    where = tuple(where)
    data = load_report(db_path, study, baseline, where, generated_at=generated_at)
    c = data.comparison
    charts = build_charts(data)
    top = slug(c.study)
    with tempfile.TemporaryDirectory(prefix="fslab-bundle-") as tmp:
        root = Path(tmp) / top
        root.mkdir()
        (root / "study.toml").write_text(data.study_toml, encoding="utf-8")
        _copy_db(Path(db_path), root / "results.db")
        write_html(root / "report.html", data, charts)
        write_markdown_report(data, charts, root / "report.md")
        (root / "summary.csv").write_text(render_csv(c), encoding="utf-8")
        with (root / "runs.csv").open("wb") as f:
            rows = write_export_csv(plan_export(db_path, c.study, where), f)
        (root / "README.md").write_text(_readme(c.study, c.baseline, rows), encoding="utf-8")
        files = sorted(p for p in root.rglob("*") if p.is_file())
        names = [str(p.relative_to(tmp)) for p in files]
        with staged(out) as part:
            if fmt == "zip":
                with zipfile.ZipFile(part, "w", compression=zipfile.ZIP_DEFLATED) as z:
                    for p, name in zip(files, names, strict=True):
                        z.write(p, name)
            else:
                with tarfile.open(part, "w:gz") as t:
                    t.add(root, arcname=top, filter=_plain)
    return names


def _plain(info: tarfile.TarInfo) -> tarfile.TarInfo:
    """Entries owned by nobody in particular (the archive leaves this machine)."""
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def _copy_db(src: Path, dst: Path) -> None:
    """A consistent copy of a database that may be in WAL mode and in use."""
    with open_readonly(src) as con:
        backup(con, dst)


def _readme(study: str, baseline: str, rows: int) -> str:
    return f"""# fslab bundle: {study}

Made by fslab {__version__}. Baseline: `{baseline}`.

| file | what |
|---|---|
| `report.html` | the report: open it in a browser (no network needed) |
| `report.md`, `report_files/` | the same as Markdown with SVG charts |
| `summary.csv` | the comparison, one row per point, target, operation and metric |
| `runs.csv` | every completed run x metric ({rows} rows), all parameters as columns |
| `study.toml` | the study file that produced these results |
| `results.db` | the results database (SQLite; see fslab's docs/results.md) |

Again from the database: `fslab compare --results results.db`, `fslab report --results
results.db -o report.html`. Run the study again: `fslab run study.toml`.
"""
