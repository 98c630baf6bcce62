"""`fslab record -- CMD`: a program's file I/O under a directory, as fio iologs."""

from __future__ import annotations

from pathlib import Path

import click

from fslab.errors import ExitStatus
from fslab.record import ebpf
from fslab.record.run import record as record_command

VIA = {"ebpf": "eBPF", "strace": "strace"}


@click.command(context_settings={"ignore_unknown_options": True})
@click.option(
    "--dir", "root", type=click.Path(file_okay=False, path_type=Path), default=Path(),
    show_default=True, help="Record the I/O on files under this directory only.",
)  # fmt: skip
@click.option(
    "--out", type=click.Path(file_okay=False, path_type=Path), default=Path("trace"),
    show_default=True, help="Write the traces (and replay.fio) here.",
)  # fmt: skip
@click.option(
    "--via", type=click.Choice(["auto", "ebpf", "strace"]), default="auto", show_default=True,
    help="The recorder: eBPF (bpftrace, root; ~12 us a call) or strace (~140 us a call, "
    "any user). auto: eBPF where it can run.",
)  # fmt: skip
@click.option(
    "--pid", type=int, default=None,
    help="Attach to this running process (and its children) instead of running a command, "
    "until it exits or Ctrl-C (eBPF only).",
)  # fmt: skip
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def record(
    root: Path, out: Path, via: str, pid: int | None, command: tuple[str, ...]
) -> ExitStatus | int:
    """Record a program's file I/O under a directory as fio iologs, one per thread.

    The program runs under eBPF probes (or strace); its reads, writes and syncs (and,
    through eBPF, truncates, fallocates, and unlinks, renames, mkdirs, rmdirs and stats
    of names) of files under --dir are written to --out as
    `trace.<n>.log` (fio's iolog, version 3: paths relative to --dir, offsets and sizes,
    no data), with `replay.fio`, a job file that replays them all with fio or
    `fslab-engine run --fio`. The exit status is the program's.
    """

    def ready(what: str) -> None:
        click.echo(f"record: {what}", err=True)

    done = record_command(list(command), root, out, via, pid, ready)  # type: ignore[arg-type]
    rec = done.recording
    ios = sum(t.ios for t in rec.traces.values())
    nbytes = sum(t.bytes for t in rec.traces.values())
    paths = sum(t.paths for t in rec.traces.values())
    also = f" and {paths} path actions" if paths else ""
    click.echo(
        f"recorded {ios} I/Os ({nbytes} bytes){also} in {len(done.paths)} thread traces "
        f"under {root} through {VIA[done.via]}: {out}",
        err=True,
    )
    if via == "auto" and done.via == "strace":
        click.echo(
            f"note: recorded through strace, not eBPF ({ebpf.unavailable()}): the program "
            "ran slower under it (pgbench at 0.18x its speed alone, docs/record.md), and "
            "truncates, fallocates and path actions are not in the traces",
            err=True,
        )
    if rec.opened_before:
        click.echo(
            f"note: {rec.opened_before} reads, writes or syncs left out: their descriptor "
            "was opened before the recording began, so their file or offset is unknown",
            err=True,
        )
    if rec.counted:
        seen = ", ".join(f"{n} {name}" for name, n in sorted(rec.counted.items()))
        click.echo(
            f"note: also under {root}, not in the traces (no iolog action replays them): {seen}",
            err=True,
        )
    if rec.spaced:
        click.echo(
            f"note: {rec.spaced} calls on names with white space left out: an iolog line "
            "cannot hold such a name",
            err=True,
        )
    if rec.lost:
        click.echo(
            f"warning: the eBPF recorder lost {rec.lost} events (its buffers overflowed): "
            "the traces miss them\nhint: record a shorter run, or with --via strace",
            err=True,
        )
    for p in done.paths:
        click.echo(str(p))
    if done.interrupted:
        return ExitStatus.INTERRUPTED
    return done.status if done.status is not None else ExitStatus.OK


command = record
