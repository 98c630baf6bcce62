"""The `fslab` command. This is the only place where exceptions become exit statuses and
`error: ...` / `hint: ...` lines on stderr; everything below it raises `FslabError`."""

from __future__ import annotations

import os
import sys
import traceback
from typing import Any

import click
from rich.console import Console
from rich.text import Text

from fslab import __version__
from fslab.cli import bundle as bundle_cli
from fslab.cli import cleanup as cleanup_cli
from fslab.cli import compare as compare_cli
from fslab.cli import export as export_cli
from fslab.cli import plan as plan_cli
from fslab.cli import report as report_cli
from fslab.cli import run as run_cli
from fslab.cli.job import job
from fslab.errors import EngineError, ExitStatus, FslabError
from fslab.study.load import StudyError

_EXIT_TABLE = "\b\nExit status:\n" + "\n".join(
    f"  {status.value:<4} {status.name.lower():<12} {doc}"
    for status, doc in (
        (ExitStatus.OK, "done"),
        (ExitStatus.FAILED, "the work failed (I/O error, engine crash)"),
        (ExitStatus.USAGE, "bad command line, study or job"),
        (ExitStatus.REFUSED, "the safety gate refused a device"),
        (ExitStatus.INTERRUPTED, "stopped by SIGINT/SIGTERM; what ran is still reported"),
    )
)


def _stderr() -> Console:
    # rich styles only terminals (FORCE_COLOR and TERM=dumb as usual). Its own NO_COLOR
    # support drops colours but keeps bold; a non-empty NO_COLOR here means no escapes.
    plain = bool(os.environ.get("NO_COLOR"))
    return Console(
        stderr=True, highlight=False, soft_wrap=True, color_system=None if plain else "auto"
    )


def print_error(message: str, hint: str | None = None) -> None:
    """`error: <message>`, then a blank line and `hint: <hint>` when there is one."""
    console = _stderr()
    console.print(Text.assemble(("error", "bold red"), ": ", message))
    if hint:
        console.print()
        console.print(Text.assemble(("hint", "bold cyan"), ": ", hint))


def _report(e: FslabError) -> None:
    if isinstance(e, StudyError):
        for p in e.problems:
            print_error(f"{p.where}: {p.what}", p.hint)
        return
    if isinstance(e, EngineError) and e.stderr:
        # The engine's own words, as it said them (already `error: ...` / `hint: ...`).
        sys.stderr.write(e.stderr if e.stderr.endswith("\n") else e.stderr + "\n")
        if e.verbatim:
            return
    print_error(e.message, e.hint)


class FslabGroup(click.Group):
    """A click group whose commands may return an `ExitStatus` and raise `FslabError`."""

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
        except KeyboardInterrupt:
            print_error("interrupted")
            ctx.exit(int(ExitStatus.INTERRUPTED))
        except Exception:
            traceback.print_exc()
            print_error(
                "this is a bug in fslab, please report it",
                hint="include the command line and the trace above",
            )
            ctx.exit(int(ExitStatus.FAILED))
        if isinstance(status, int) and status != ExitStatus.OK:
            ctx.exit(int(status))
        return status


@click.group(
    cls=FslabGroup, epilog=_EXIT_TABLE, context_settings={"help_option_names": ["-h", "--help"]}
)
@click.version_option(__version__, "-V", "--version", prog_name="fslab")
@click.option("--traceback", is_flag=True, help="Show the Python trace of an error.")
def main(traceback: bool) -> None:
    """fslab: a storage lab. Builds storage configurations, runs workloads on them with
    fslab-engine, and compares the results."""


main.add_command(job)
for _module in (plan_cli, run_cli, compare_cli, report_cli, export_cli, bundle_cli, cleanup_cli):
    main.add_command(_module.command)
