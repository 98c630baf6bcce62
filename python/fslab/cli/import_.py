"""`fslab import`: results from another machine or database, or fio's own JSON output,
merged into this one."""

from __future__ import annotations

from pathlib import Path

import click

from fslab.cli.options import results_db_option
from fslab.safe_text import safe_text
from fslab.store.db import ResultsWriter
from fslab.store.fio_json import FioJsonError, import_fio_json, is_fio_json, read_fio_json
from fslab.store.lock import exclusive
from fslab.store.merge import check_label, check_source, merge, source_database, source_studies

FIO_STUDY = "imported-fio"
"""The study fio JSON files go into without --into."""


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
    f"fio JSON: `{FIO_STUDY}`).",
)  # fmt: skip
@click.option(
    "--target", metavar="NAME",
    help="fio JSON: the target its runs were measured on (required for fio JSON).",
)  # fmt: skip
@click.option(
    "--describe", metavar="KEY=VALUE", multiple=True,
    help="fio JSON: what the target was (`fs=ext4`, `device=nvme0n1`), kept with it; repeat.",
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
    "--workload", metavar="NAME", default="fio", show_default=True,
    help="fio JSON: the workload's name (a study's fio workload's, to share its rows).",
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
    workload: str,
) -> None:
    """Import results from another machine or database: a bundle (`fslab bundle`) or a
    results database, merged into this one with the environment each run ran in; or fio's
    own JSON output (`--output-format=json` or `json+`), one run per file.

    Importing the same source twice adds nothing. The source's journal is never imported:
    `fslab cleanup` here never acts on the other machine's side effects. Imported runs pair
    by round only with runs of their own origin (docs/reports.md)."""
    if label is not None:
        check_label(label)
    described = _described(describe)
    fio = [s for s in sources if is_fio_json(s)]
    # Every source checked before the database is opened (or made): bad input touches
    # nothing.
    for source in sources:
        if source in fio:
            if target is None:
                raise FioJsonError(
                    f"{source}: fio's JSON output, and fslab does not know what it measured",
                    hint="name the target it ran on: `--target NAME` (and `--describe "
                    "fs=ext4` ...)",
                )
            read_fio_json(source, measure)
            continue
        check_source(source, results)
        with source_database(source) as path:
            source_studies(path, study, into)
    with exclusive(results, "import"):
        db = ResultsWriter.open(results)
        try:
            for source in sources:
                if source in fio:
                    assert target is not None
                    _, added = import_fio_json(
                        db, source, target=target, study=into or FIO_STUDY, workload=workload,
                        job_file=job_file, describe=described, measure=measure,
                    )  # fmt: skip
                    said = "1 run added" if added else "already here"
                    where = f"as target `{target}` in `{into or FIO_STUDY}`"
                    click.echo(safe_text(f"import: {source}: fio JSON {where}: {said}"), err=True)
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
