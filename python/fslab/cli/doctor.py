"""`fslab doctor`: what this machine can and cannot do for fslab (`fslab.doctor`), as a
table for people or a versioned JSON document for programs, on stdout."""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import click
from rich.text import Text

from fslab import __version__
from fslab.cli.console import console
from fslab.doctor import CORE, SECTIONS, Diagnosis, diagnose
from fslab.errors import ExitStatus
from fslab.safe_text import safe_text
from fslab.targets.workdir import default_workdir

_MARKS = {"ok": ("✓", "green"), "limited": ("!", "yellow"), "missing": ("✗", "red")}
_ASCII_MARKS = {"ok": "+", "limited": "!", "missing": "x"}


@click.command("doctor")
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table",
    show_default=True,
    help="table for people; json for programs (`schema_version` 1: docs/doctor.md).",
)  # fmt: skip
@click.option(
    "--workdir", type=click.Path(path_type=Path), default=None,
    help="The work directory whose file system the direct I/O check tries (a temporary "
    "file in it, or in its nearest existing parent, removed at once). Default: "
    "fslab-work in the current directory, as `fslab plan` and `fslab run` use beside "
    "./fslab-results.db.",
)  # fmt: skip
def doctor(fmt: str, workdir: Path | None) -> ExitStatus:
    """Show what this machine can and cannot do for fslab, and what fixes each gap.

    One line per part fslab may use: root; loop devices and direct I/O; each file system
    (kernel support, mkfs tools and versions, large blocks, btrfs profiles); fscrypt and
    dm-crypt; md RAID, device-mapper and LVM; io_uring (the engine's backend tried on a
    small file); eBPF and strace for `fslab record`; PostgreSQL for pgbench; MPI for
    multi-host runs; fio, Chromium, rsync and fdupes for the tests and bench/. Each is
    ok (✓), limited (!: it works with less) or missing (✗), with what that affects and
    the Debian package or step that fixes it. Nothing is mounted or attached; the few
    temporary files are removed. Works without root, and says what root would add.

    \b
    Exit status:
      0  fslab's core is here: root, the loop driver, losetup, ext4 (kernel and
         e2fsprogs) and a fslab-engine that runs
      1  one of those is missing (the rest is information: a missing xfs is not an
         error)
      2  bad command line
    """
    found = diagnose(workdir if workdir is not None else default_workdir(Path("fslab-results.db")))
    if fmt == "json":
        click.echo(found.to_json())
    else:
        _table(found)
    return ExitStatus.OK if found.ready else ExitStatus.FAILED


def _unicode() -> bool:
    encoding = getattr(sys.stdout, "encoding", None) or "ascii"
    try:
        "✓✗".encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def _table(found: Diagnosis) -> None:
    """Sections in order, one finding a line: its mark, its name, what was found; for
    what is not ok, what it affects and its fix below. Wrapped to the terminal (80
    columns elsewhere), the names in one column across sections."""
    out = console(soft_wrap=True, markup=False)
    unicode = _unicode()
    system = found.system
    who = "as root" if system.is_root else f"not as root (uid {os.geteuid()})"
    out.print(Text(f"fslab doctor: fslab {__version__} on Linux {system.kernel}, {who}"))
    name_width = max(len(f.name) for f in found.findings)
    indent = 4 + name_width + 2
    width = max(out.width, indent + 30)
    for section in SECTIONS:
        rows = [f for f in found.findings if f.section == section]
        if not rows:
            continue
        out.print()
        out.print(Text(section, style="bold"))
        for f in rows:
            mark, colour = _MARKS[f.status]
            line = Text("  ")
            line.append(mark if unicode else _ASCII_MARKS[f.status], style=colour)
            line.append(f" {f.name:<{name_width}}  ")
            parts: list[tuple[str, str | None, str]] = [("", f.detail, "")]
            if f.status != "ok":
                parts += [("affects: ", f.affects, "dim"), ("fix: ", f.fix, "cyan")]
            first = True
            for label, words, style in parts:
                if not words:
                    continue
                wrapped = textwrap.wrap(
                    label + safe_text(words), width - indent, break_on_hyphens=False
                )
                for i, chunk in enumerate(wrapped):
                    if not first:
                        line.append("\n" + " " * indent)
                    first = False
                    if i == 0 and label:
                        line.append(label, style=style)
                        chunk = chunk[len(label) :]
                    line.append(chunk)
            out.print(line)
    out.print()
    out.print(_summary(found, width))


def _summary(found: Diagnosis, width: int) -> Text:
    counts = found.counts()
    tally = f"{counts['ok']} ok, {counts['limited']} limited, {counts['missing']} missing"
    if found.ready:
        word, style = "ready", "bold green"
        rest = (
            f": fslab's core is here ({', '.join(CORE)}); {tally}. What is missing or "
            "limited above only affects what its line says."
        )
    else:
        word, style = "not ready", "bold red"
        rest = f": fslab's core lacks {', '.join(found.core_missing)} (exit status 1); {tally}."
    wrapped = "\n".join(textwrap.wrap(word + rest, width, break_on_hyphens=False))
    return Text.assemble((word, style), wrapped[len(word) :])


command = doctor
