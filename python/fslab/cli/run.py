"""`fslab run STUDY`: run every point not yet done, store results, clean up."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from fslab.cli.plan import (
    checked_plan,
    device_option,
    force_option,
    results_option,
    scale_option,
    workdir_option,
)
from fslab.errors import ExitStatus
from fslab.run import Progress as RunProgress
from fslab.run import Runner
from fslab.store.db import Results


def _log_lines(err: Console) -> RunProgress:
    counts = {"done": 0, "total": 0}
    text = {"label": "", "live": ""}

    def start(total: int, done: int) -> None:
        counts.update(total=total, done=done)

    def point(label: str) -> None:
        text.update(label=label, live="")

    def live(line: str) -> None:
        text["live"] = line

    def advance(status: str) -> None:
        counts["done"] += 1
        err.print(
            f"[{counts['done']}/{counts['total']}] {text['label']}: {status}  {text['live']}",
            soft_wrap=True,
        )

    return RunProgress(start=start, point=point, live=live, advance=advance)


@click.command()
@click.argument("study", type=click.Path(path_type=Path))
@scale_option
@results_option
@workdir_option
@force_option
@device_option
def run(
    study: Path,
    scale: float,
    results: Path,
    workdir: Path | None,
    force: bool,
    devices: tuple[str, ...],
) -> ExitStatus:
    """Run a study (resuming: finished runs are skipped) and store the results."""
    confirmed = frozenset(devices)
    plan, text, workdir = checked_plan(
        study, scale, results=results, force=force, confirmed=confirmed, workdir=workdir
    )
    db = Results.open(results)
    try:
        db.mark_stale_runs()
        study_id = db.upsert_study(plan.study.name, str(study), text)
        err = Console(stderr=True, highlight=False)
        bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            TextColumn("{task.fields[live]}"),
            console=err,
        )
        task = bar.add_task(plan.study.name, total=len(plan.runs()), live="")
        if err.is_terminal:
            hooks = RunProgress(
                start=lambda total, done: bar.update(task, total=total, completed=done),
                point=lambda label: bar.update(task, description=label, live=""),
                live=lambda line: bar.update(task, live=line),
                advance=lambda status: bar.advance(task),
            )
        else:
            # A log (CI, a pipe): one line per run instead of a redrawn bar.
            hooks = _log_lines(err)
            bar.disable = True
        runner = Runner(plan, db, study_id, workdir, hooks,
                        force=force, confirmed=confirmed)  # fmt: skip
        with bar:
            outcome = runner.run()
        for f in outcome.failures:
            err.print(f"failed: {f}")
        err.print(
            f"{outcome.ok} runs ok, {outcome.failed} failed, {outcome.skipped} already done"
            f"{', interrupted' if outcome.interrupted else ''}; results in {results}"
        )
        if outcome.interrupted:
            err.print("hint: run the same command again to resume")
            return ExitStatus.INTERRUPTED
        if outcome.failed:
            return ExitStatus.FAILED
        err.print(f"next: fslab compare --results {results}")
        return ExitStatus.OK
    finally:
        db.close()


command = run
