"""The `fslab` command. This is the only place where exceptions become exit statuses and
`error: ...` / `hint: ...` lines on stderr; everything below it raises `FslabError`."""

from __future__ import annotations

import gc
import importlib
import os
import sqlite3
import sys
import traceback
from pathlib import Path
from typing import Any, NoReturn

import click
from rich.console import Console
from rich.text import Text

from fslab import __version__
from fslab.cli.console import console
from fslab.errors import EngineError, ExitStatus, FslabError
from fslab.safe_text import safe_text

# The subcommands, each a module of `fslab.cli` with a `command`, in the order `--help`
# lists them. A command's module is imported when it runs: `fslab compare` does not pay
# for the report's plotting libraries, nor `fslab plan` for the statistics.
_COMMANDS: dict[str, str] = {
    "job": "Run one engine job (a .toml or .json file, or - for stdin) and summarize it.",
    "plan": "Check a study and show its points, time estimate and side effects; touch nothing.",
    "run": "Run a study (resuming: finished runs are skipped) and store the results.",
    "compare": "Compare the targets of a study: one table per workload point, one column per "
    "target.",
    "report": "Write a report of a study: the conclusions the statistics support, charts, the "
    "comparison tables, each target's configuration, the machine and the method.",
    "export": "Export a study's results as one row per completed run and metric, with every "
    "parameter as a column (values in base units: bytes, ns, per second).",
    "bundle": "Bundle a study into one archive: the study file, the results database, the HTML "
    "and Markdown reports, the comparison and the per-run CSV, and a README.",
    "import": "Import results from another machine or database: a bundle (`fslab bundle`) or a "
    "results database, merged into this one with the environment each run ran in; or fio's "
    "own JSON output (`--output-format=json` or `json+`), or DiskSpd's XML results "
    "(`-Rxml`, from Windows), one run per file.",
    "history": "Follow a study across passes: its points' values pass by pass, and regressions.",
    "site": "Write a static HTML site of the studies in results databases, to browse offline.",
    "cleanup": "Unmount, detach and delete what fslab's journal says is still there, where this "
    "machine proves fslab made it; anything else is reported and left alone.",
    "record": "Record a program's file I/O under a directory as fio iologs, one per thread.",
    "doctor": "Show what this machine can and cannot do for fslab, and what fixes each gap.",
    "completion": "Print the shell completion script for bash, zsh or fish.",
}
"""Each command and the first sentence of its help, for `fslab --help` without importing
every command (numpy, scipy, pydantic: a second). tests/test_cli.py holds them to the
commands' own docstrings."""
_MODULES = {"import": "import_"}
"""A command whose module is not named as it is (`import` is Python's word)."""
_READERS = frozenset({"compare", "report", "export", "bundle", "history", "site"})
"""The commands that only read the results database and exit."""

_EXIT_TABLE = "\b\nExit status:\n" + "\n".join(
    f"  {status.value:<4} {status.name.lower():<12} {doc}"
    for status, doc in (
        (ExitStatus.OK, "done"),
        (ExitStatus.FAILED, "the work failed (I/O error, engine crash)"),
        (ExitStatus.USAGE, "bad command line, study, job or results database"),
        (ExitStatus.REFUSED, "the safety gate refused a device"),
        (ExitStatus.INTERRUPTED, "stopped by SIGINT/SIGTERM; what ran is still reported"),
    )
)


def _stderr() -> Console:
    return console(stderr=True, soft_wrap=True)


def print_error(message: str, hint: str | None = None) -> None:
    """`error: <message>`, then a blank line and `hint: <hint>` when there is one. Both
    are shown as they are (no rich markup) and terminal-safe: they quote names from
    studies and results databases."""
    console = _stderr()
    console.print(Text.assemble(("error", "bold red"), ": ", safe_text(message, newlines=True)))
    if hint:
        console.print()
        console.print(Text.assemble(("hint", "bold cyan"), ": ", safe_text(hint, newlines=True)))


def _report(e: FslabError) -> None:
    problems = getattr(e, "problems", None)
    if problems:
        # A study's problems (`StudyError`), each with its place and hint.
        for p in problems:
            print_error(f"{p.where}: {p.what}", p.hint)
        return
    if isinstance(e, EngineError) and e.stderr:
        # The engine's own words, as it said them (already `error: ...` / `hint: ...`).
        said = safe_text(e.stderr, newlines=True)
        sys.stderr.write(said if said.endswith("\n") else said + "\n")
        if e.verbatim:
            return
    print_error(e.message, e.hint)


# Where `FslabGroup.resolve_command` leaves (name, command, arguments) in `ctx.meta`.
_COMMAND = "fslab.command"
# SQLite's words for a file that is damaged, or is no database at all, past the header
# that `ResultsWriter.open` and the readers check when they open it.
_DAMAGED = ("SQLITE_CORRUPT", "SQLITE_NOTADB")


def _results_path(ctx: click.Context) -> Path | None:
    """The `--results` database of the command that ran, found by parsing its arguments
    again (`resolve_command` kept them): every command that reads one names its option
    `results`."""
    found = ctx.meta.get(_COMMAND)
    if found is None:
        return None
    name, cmd, args = found
    try:
        sub = cmd.make_context(name, list(args), parent=ctx, resilient_parsing=True)
    except click.ClickException:
        return None
    value = sub.params.get("results")
    if isinstance(value, tuple):  # compare takes several: which one is damaged is not known
        value = value[0] if len(value) == 1 else None
    return Path(value) if value is not None else None


def _damaged(ctx: click.Context, e: sqlite3.DatabaseError) -> None:
    from fslab.store.db import ResultsWriter

    db = _results_path(ctx)
    if db is not None:
        _report(ResultsWriter.damaged(db, str(e)))
    else:
        print_error(
            f"a results database is damaged ({e})",
            hint="pass `--results` with another database",
        )


def _bug(ctx: click.Context) -> NoReturn:
    """Called in an `except` block: the trace, and a request to report it."""
    traceback.print_exc()
    print_error(
        "this is a bug in fslab, please report it",
        hint="include the command line and the trace above",
    )
    ctx.exit(int(ExitStatus.FAILED))


class FslabGroup(click.Group):
    """A click group whose commands may return an `ExitStatus` and raise `FslabError`,
    and are imported when they are used."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*_COMMANDS, *(n for n in super().list_commands(ctx) if n not in _COMMANDS)]

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(map(len, names), default=0)
        rows: list[tuple[str, str]] = []
        for name in names:
            if name in _COMMANDS:
                # click's own shortening, on the sentence instead of the imported command.
                short = click.Command(name, help=_COMMANDS[name]).get_short_help_str(limit)
                rows.append((name, short))
            elif (cmd := self.get_command(ctx, name)) is not None and not cmd.hidden:
                rows.append((name, cmd.get_short_help_str(limit)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in _COMMANDS:
            module = _MODULES.get(cmd_name, cmd_name)
            command = importlib.import_module(f"fslab.cli.{module}").command
            assert isinstance(command, click.Command)
            return command
        return super().get_command(ctx, cmd_name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name, cmd, rest = super().resolve_command(ctx, args)
        ctx.meta[_COMMAND] = (name, cmd, tuple(rest))
        if name in _READERS:
            # These build a million small objects for a large study and free them at
            # exit: the cycle collector would walk them all again and again (twice the
            # time at 100,000 runs) and find nothing to free.
            gc.disable()
        return name, cmd, rest

    def invoke(self, ctx: click.Context) -> Any:
        show_traceback = bool(ctx.params.get("traceback"))
        try:
            status = super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except FslabError as e:
            if show_traceback:
                traceback.print_exc()
            _report(e)
            ctx.exit(int(e.exit_status))
        except sqlite3.DatabaseError as e:
            if getattr(e, "sqlite_errorname", None) not in _DAMAGED:
                _bug(ctx)
            if show_traceback:
                traceback.print_exc()
            _damaged(ctx, e)
            ctx.exit(int(ExitStatus.USAGE))
        except KeyboardInterrupt:
            print_error("interrupted")
            ctx.exit(int(ExitStatus.INTERRUPTED))
        except BrokenPipeError:
            # The reader went away (`fslab compare --format json | head`): nothing more
            # can reach it. Quietly, as `cat` would, and without Python's own complaint
            # when it flushes stdout at exit.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            ctx.exit(int(ExitStatus.FAILED))
        except Exception:
            _bug(ctx)
        if isinstance(status, int) and status != ExitStatus.OK:
            ctx.exit(int(status))
        return status


def _show_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """`fslab 0.1.0`, then the engine `fslab` would run: a result is only as traceable as
    the pair of them."""
    if not value or ctx.resilient_parsing:
        return
    from fslab.engine.find import find_engine
    from fslab.environment import version_line

    click.echo(f"fslab {__version__}")
    try:
        engine = find_engine()
    except EngineError as e:
        click.echo(f"fslab-engine: not found ({e.message})")
    else:
        said = version_line([str(engine), "--version"]) or "fslab-engine: does not run"
        click.echo(f"{said} at {engine}")
    ctx.exit()


@click.group(
    cls=FslabGroup, epilog=_EXIT_TABLE, context_settings={"help_option_names": ["-h", "--help"]}
)
@click.option(
    "-V",
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_show_version,
    help="Show fslab's version and the engine's (its version, commit and path), and exit.",
)
@click.option("--traceback", is_flag=True, help="Show the Python trace of an error.")
def main(traceback: bool) -> None:
    """fslab: a storage lab. Builds storage configurations, runs workloads on them with
    fslab-engine, and compares the results."""
