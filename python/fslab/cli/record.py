"""`fslab record -- CMD`: a program's file I/O under a directory, as fio iologs."""

from __future__ import annotations

from pathlib import Path

import click

from fslab.errors import ExitStatus
from fslab.record.run import record as record_command


@click.command(context_settings={"ignore_unknown_options": True})
@click.option(
    "--dir", "root", type=click.Path(file_okay=False, path_type=Path), default=Path(),
    show_default=True, help="Record the I/O on files under this directory only.",
)  # fmt: skip
@click.option(
    "--out", type=click.Path(file_okay=False, path_type=Path), default=Path("trace"),
    show_default=True, help="Write the traces (and replay.fio) here.",
)  # fmt: skip
@click.argument("command", nargs=-1, type=click.UNPROCESSED, required=True)
def record(root: Path, out: Path, command: tuple[str, ...]) -> ExitStatus | int:
    """Record a program's file I/O under a directory as fio iologs, one per thread.

    The program runs under strace; its reads, writes and syncs of files under --dir are
    written to --out as `trace.<n>.log` (fio's iolog, version 3: paths relative to
    --dir, offsets and sizes, no data), with `replay.fio`, a job file that replays them
    all with fio or `fslab-engine run --fio`. The exit status is the program's.
    """
    status, rec, paths = record_command(list(command), root, out)
    ios = sum(t.ios for t in rec.traces.values())
    nbytes = sum(t.bytes for t in rec.traces.values())
    click.echo(
        f"recorded {ios} I/Os ({nbytes} bytes) in {len(paths)} thread traces under {root}: {out}",
        err=True,
    )
    if rec.unknown_offset:
        click.echo(
            f"note: {rec.unknown_offset} reads or writes left out: their descriptor was "
            "opened before the recording began, so their offset is unknown",
            err=True,
        )
    for p in paths:
        click.echo(str(p))
    return status


command = record
