"""`fslab import`: results from another machine or database, or fio's own JSON output,
merged into this one."""

from __future__ import annotations

from pathlib import Path

import click

from fslab.cli.options import results_db_option
from fslab.safe_text import safe_text
from fslab.store.db import ResultsWriter
from fslab.store.diskspd_xml import import_diskspd_xml, is_diskspd_xml, read_diskspd_xml
from fslab.store.fio_json import FioJsonError, import_fio_json, is_fio_json, read_fio_json
from fslab.store.lock import exclusive
from fslab.store.merge import check_label, check_source, merge, source_database, source_studies

FIO_STUDY = "imported-fio"
"""The study fio JSON files go into without --into."""
DISKSPD_STUDY = "imported-diskspd"
"""The study DiskSpd XML files go into without --into."""


@click.command("import")
@click.argument("sources", nargs=-1, required=True, metavar="SOURCE...",
                type=click.Path(dir_okay=True, path_type=Path))  # fmt: skip
@results_db_option
@click.option(
    "--as", "label", metavar="LABEL",
    help="Name the imported targets TARGET@LABEL (`ext4@old`), beside this database's own "
    "`ext4`: the same configuration from another machine or day, compared with it. Without "
    "it, targets keep their names, and a point measured in both is refused.",
)  # fmt: skip
@click.option("--study", metavar="NAME", help="Import only this study of the source.")
@click.option(
    "--into", metavar="NAME",
    help="Merge into this study here (default: the study of the same name, made if absent; "
    f"fio JSON: `{FIO_STUDY}`; DiskSpd XML: `{DISKSPD_STUDY}`).",
)  # fmt: skip
@click.option(
    "--target", metavar="NAME",
    help="fio JSON, DiskSpd XML: the target its runs were measured on (required for them).",
)  # fmt: skip
@click.option(
    "--describe", metavar="KEY=VALUE", multiple=True,
    help="fio JSON, DiskSpd XML: what the target was (`fs=ext4`, `fs=ReFS`, "
    "`cluster=64K`), kept with it; repeat.",
)  # fmt: skip
@click.option(
    "--job-file", type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="fio JSON: the job file it ran, as a study names it: its runs then share the rows "
    "of a study's `kind = \"fio\"` runs of that file.",
)  # fmt: skip
@click.option(
    "--measure", metavar="JOB", multiple=True,
    help="fio JSON: only these jobs make the result (a study's fio `measure`); repeat.",
)  # fmt: skip
@click.option(
    "--workload", metavar="NAME", default=None,
    help="fio JSON, DiskSpd XML: the workload's name (a study's workload's, to share its "
    "rows); default `fio`, `diskspd`.",
)  # fmt: skip
def import_(
    sources: tuple[Path, ...],
    results: Path,
    label: str | None,
    study: str | None,
    into: str | None,
    target: str | None,
    describe: tuple[str, ...],
    job_file: Path | None,
    measure: tuple[str, ...],
    workload: str | None,
) -> None:
    """Import results from another machine or database: a bundle (`fslab bundle`) or a
    results database, merged into this one with the environment each run ran in; or fio's
    own JSON output (`--output-format=json` or `json+`), or DiskSpd's XML results
    (`-Rxml`, from Windows), one run per file.

    Importing the same source twice adds nothing. The source's journal is never imported:
    `fslab cleanup` here never acts on the other machine's side effects. Imported runs pair
    by round only with runs of their own origin (docs/reports.md)."""
    if label is not None:
        check_label(label)
    described = _described(describe)
    fio = [s for s in sources if is_fio_json(s)]
    xml = [s for s in sources if s not in fio and is_diskspd_xml(s)]
    # Every source checked before the database is opened (or made): bad input touches
    # nothing.
    for source in sources:
        if source in fio or source in xml:
            if target is None:
                tool = "fio's JSON output" if source in fio else "DiskSpd's XML results"
                raise FioJsonError(
                    f"{source}: {tool}, and fslab does not know what it measured",
                    hint="name the target it ran on: `--target NAME` (and `--describe "
                    "fs=ext4` ...)",
                )
            if source in fio:
                read_fio_json(source, measure)
            else:
                read_diskspd_xml(source)
            continue
        check_source(source, results)
        with source_database(source) as path:
            source_studies(path, study, into)
    with exclusive(results, "import"):
        db = ResultsWriter.open(results)
        try:
            for source in sources:
                if source in fio or source in xml:
                    assert target is not None
                    if source in fio:
                        name, tool = into or FIO_STUDY, "fio JSON"
                        _, added = import_fio_json(
                            db, source, target=target, study=name, workload=workload or "fio",
                            job_file=job_file, describe=described, measure=measure,
                        )  # fmt: skip
                    else:
                        name, tool = into or DISKSPD_STUDY, "DiskSpd XML"
                        _, added = import_diskspd_xml(
                            db, source, target=target, study=name,
                            workload=workload or "diskspd", describe=described,
                        )  # fmt: skip
                    said = "1 run added" if added else "already here"
                    where = f"as target `{target}` in `{name}`"
                    click.echo(safe_text(f"import: {source}: {tool} {where}: {said}"), err=True)
                    continue
                with source_database(source) as path:
                    got = merge(db, path, label=label, study=study, into=into)
                for s in got.studies:
                    made = " (new here)" if s.created else ""
                    targets = ", ".join(s.targets)
                    click.echo(
                        safe_text(
                            f"import: {source}: study `{s.source}` into `{s.into}`{made}: "
                            f"{s.runs} runs added, {s.already} already here; targets {targets}"
                        ),
                        err=True,
                    )
        finally:
            db.close()


def _described(pairs: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise FioJsonError(
                f"--describe {pair!r}: not KEY=VALUE", hint="e.g. `--describe fs=ext4`"
            )
        out[key.strip()] = value.strip()
    return out


command = import_
