"""`fslab run STUDY`: run every point not yet done, store results, clean up."""

from __future__ import annotations

import contextlib
import signal
import subprocess
from pathlib import Path
from types import FrameType

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

from fslab import guard
from fslab.cli.cleanup import clean
from fslab.cli.console import console
from fslab.cli.plan import (
    device_option,
    force_option,
    only_option,
    results_option,
    scale_option,
    workdir_option,
)
from fslab.compare import disturbers_of
from fslab.errors import ExitStatus, FslabError
from fslab.hosts import (
    HostsError,
    launch_argv,
    launch_env,
    most_ranks,
    parse_hosts,
    plan_problems,
)
from fslab.mpi_rank import active
from fslab.procs import DIE_WITH_US
from fslab.report.format import disturbed_by
from fslab.run import Outcome, Runner
from fslab.run import Progress as RunProgress
from fslab.safe_text import safe_markup
from fslab.store.db import ResultsWriter
from fslab.store.lock import exclusive, waiting_for
from fslab.study.load import load_study
from fslab.study.plan import Plan
from fslab.study.preflight import Checked, checked_plan


def _log_lines(err: Console) -> RunProgress:
    counts = {"done": 0, "total": 0}
    text = {"label": ""}

    def start(total: int, done: int) -> None:
        counts.update(total=total, done=done)

    def point(label: str) -> None:
        text.update(label=safe_markup(label))

    def live(line: str) -> None:
        pass  # a log line per run, not per interval: see `advance`

    def advance(status: str, result: str) -> None:
        # What the run stored, never the last interval the engine reported while running.
        counts["done"] += 1
        err.print(
            f"[{counts['done']}/{counts['total']}] {text['label']}: {status}  "
            f"{safe_markup(result)}",
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
@click.option(
    "--wait", is_flag=True,
    help="If another fslab run or cleanup is using the results database, wait for it "
    "instead of stopping.",
)  # fmt: skip
@only_option
@click.option(
    "--hosts", metavar="HOST[:SLOTS],...",
    help="Run every point on all these hosts at once, SLOTS ranks each, over MPI "
    "(`localhost:2` on one machine; docs/multihost.md). Needs `pip install 'fslab[mpi]'`.",
)  # fmt: skip
def run(
    study: Path,
    scale: float,
    results: Path,
    workdir: Path | None,
    force: bool,
    devices: tuple[str, ...],
    wait: bool,
    only: tuple[tuple[str, str], ...],
    hosts: str | None,
) -> ExitStatus:
    """Run a study (resuming: finished runs are skipped) and store the results. One run
    per results database at a time."""
    confirmed = frozenset(devices)
    if hosts is None and active() is None:
        hosts = _study_hosts(study)
    if hosts is not None:
        args = [str(study), "--scale", repr(scale), "--results", str(results)]
        args += ["--workdir", str(workdir)] if workdir is not None else []
        args += ["--force"] if force else []
        args += [x for d in devices for x in ("--device", d)]
        args += ["--wait"] if wait else []
        args += [x for k, v in only for x in ("--where", f"{k}={v}")]
        return _launch(hosts, args, study, scale, results, force, confirmed, workdir, only)
    checked = checked_plan(
        study, scale, results=results, force=force, confirmed=confirmed, workdir=workdir,
        only=only,
    )  # fmt: skip
    if active() is None and (most := most_ranks(checked.plan)) > 1:
        raise HostsError(
            f"the study asks for `ranks = {most}` (clients per host): that needs a multi-host run",
            hint="run it with `--hosts HOST:SLOTS,...` (`--hosts localhost:"
            f"{most}` on this machine; docs/multihost.md)",
        )
    err = console(stderr=True)
    if wait and (holder := waiting_for(results)):
        err.print(f"waiting for {holder} to finish with {results}", markup=False)
    with exclusive(results, "run", wait=wait):
        taken = checked.taken()
        if taken is not None:
            raise taken
        return _run(checked, study, results, force, confirmed, err)


def _launch(
    hosts_text: str,
    args: list[str],
    study: Path,
    scale: float,
    results: Path,
    force: bool,
    confirmed: frozenset[str],
    workdir: Path | None,
    only: tuple[tuple[str, str], ...],
) -> ExitStatus:
    """`--hosts`: checks what can be checked here, then runs this same `fslab run` as
    rank 0 of `mpiexec` (`fslab.mpi_rank`), the other ranks beside it."""
    hosts = parse_hosts(hosts_text)
    checked = checked_plan(
        study, scale, results=results, force=force, confirmed=confirmed, workdir=workdir,
        only=only,
    )  # fmt: skip
    found = plan_problems(checked.plan, min(h.slots for h in hosts))
    if found:
        raise found[0]
    argv = launch_argv(hosts, args)
    console(stderr=True).print(
        f"fslab: {sum(h.slots for h in hosts)} ranks on {len(hosts)} host(s): "
        f"{' '.join(argv[:6])} ...",
        markup=False,
        soft_wrap=True,
    )
    code, stopped = _mpiexec(argv)
    if stopped:
        code = ExitStatus.INTERRUPTED
    if code != ExitStatus.OK and results.exists():
        # A rank that died took the others with it (Open MPI ends them all): what they
        # made on this host is in their journals, undone here as `fslab cleanup` would
        # (after the ranks' guards, which may be at it).
        err = console(stderr=True)
        err.print(f"fslab: the ranks ended with status {code}; cleaning up on this host",
                  markup=False)  # fmt: skip
        status, why = (
            ("interrupted", None) if stopped
            else ("failed", f"a rank ended the multi-host run (mpiexec status {code})")
        )  # fmt: skip
        db = ResultsWriter.open(results, create=False)
        try:
            with exclusive(results, "cleanup", wait=True):
                db.mark_stale_runs(status, why)
        finally:
            db.close()
        clean(results, err, wait=True)
    try:
        return ExitStatus(code)
    except ValueError:
        return ExitStatus.FAILED


def _mpiexec(argv: list[str]) -> tuple[int, bool]:
    """Runs the MPI job to its end: its status, and whether a signal stopped it.
    `mpiexec` dies with this process (it then ends every rank, whose guards undo what
    they made), and a SIGINT, SIGTERM or SIGHUP sent to this process alone reaches every
    rank the same way: Open MPI's launcher ends its job on SIGTERM."""
    proc = subprocess.Popen([*DIE_WITH_US, *argv], env=launch_env())
    stopped = False

    def forward(signum: int, _frame: FrameType | None) -> None:
        nonlocal stopped
        stopped = True
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)

    caught = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    old = {s: signal.signal(s, forward) for s in caught}
    try:
        code = proc.wait()  # a signal runs `forward` and the wait goes on (PEP 475)
        return code, stopped
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _study_hosts(study: Path) -> str | None:
    """The study's `[hosts]` as `--hosts` writes them, or None (a study that cannot be
    read is left to the checks that follow, which say why)."""
    try:
        spec, _ = load_study(study)
    except FslabError:
        return None
    if not spec.hosts:
        return None
    return ",".join(f"{name}:{slots}" for name, slots in spec.hosts.items())


def _run(
    checked: Checked,
    study: Path,
    results: Path,
    force: bool,
    confirmed: frozenset[str],
    err: Console,
) -> ExitStatus:
    plan, text, workdir = checked.plan, checked.text, checked.workdir
    db = ResultsWriter.open(results)
    if active() is not None:
        # Rank 0 of a multi-host run: whatever ends it, its guard undoes what it made.
        guard.start(results, rank_journal=False)
    try:
        # No `check_integrity` here: it reads the whole file (19 s cold for 1 GB);
        # damage a query meets is reported by the CLI (exit 2) like any other.
        db.mark_stale_runs()  # under the lock: no other run is live
        design = "blocked" if plan.blocked else None
        study_id = db.upsert_study(plan.study.name, str(study), text, design)
        bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            TextColumn("{task.fields[live]}"),
            console=err,
        )
        task = bar.add_task(safe_markup(plan.study.name), total=len(plan.runs()), live="")
        if err.is_terminal:
            hooks = RunProgress(
                start=lambda total, done: bar.update(task, total=total, completed=done),
                point=lambda label: bar.update(task, description=safe_markup(label), live=""),
                live=lambda line: bar.update(task, live=safe_markup(line)),
                advance=lambda status, result: bar.advance(task),
            )
        else:
            # A log (CI, a pipe): one line per run instead of a redrawn bar.
            hooks = _log_lines(err)
            bar.disable = True
        runner = Runner(plan, db, study_id, workdir, hooks,
                        force=force, confirmed=confirmed, made=checked.made)  # fmt: skip
        with bar:
            outcome = runner.run()
        for f in outcome.failures:
            err.print(f"failed: {safe_markup(f, newlines=True)}")
        err.print(
            f"{outcome.ok} runs ok, {outcome.failed} failed, {outcome.skipped} already done"
            f"{', interrupted' if outcome.interrupted else ''}; results in {safe_markup(results)}"
        )
        if outcome.disturbed:
            _disturbed_summary(err, outcome)
        if outcome.shared:
            n = len(outcome.shared)
            err.print(
                f"shared: {n} run{'s' if n != 1 else ''} shared the machine with other work "
                "that slowed each of their rounds alike, and count (a blocked design compares "
                f"a round's runs with each other): {disturbed_by(disturbers_of(outcome.shared))}",
                soft_wrap=True,
                markup=False,
            )
        if plan.study.adaptive and not outcome.interrupted:
            _adaptive_summary(err, plan, outcome)
        if outcome.interrupted:
            err.print("hint: run the same command again to resume")
            return ExitStatus.INTERRUPTED
        if outcome.failed:
            return ExitStatus.FAILED
        err.print(f"next: fslab compare --results {safe_markup(results)}")
        return ExitStatus.OK
    finally:
        db.close()


def _disturbed_summary(err: Console, outcome: Outcome) -> None:
    """Which runs other work disturbed, and who: they are not counted."""
    n = len(outcome.disturbed)
    who = disturbed_by(disturbers_of(outcome.disturbed))
    err.print(
        f"disturbed: {n} run{'s' if n != 1 else ''} shared the machine with other work, "
        f"{'are' if n != 1 else 'is'} not counted and {'were' if n != 1 else 'was'} measured "
        f"again as the repetitions allowed: "
        + (who if who else "memory pressure (no process to name)"),
        soft_wrap=True,
        markup=False,
    )
    err.print(
        "hint: stop that work while fslab measures; a run is disturbed when other processes "
        "use more of a CPU, or memory pressure stalls it longer, than docs/statistics.md "
        "says, over a second or more",
        soft_wrap=True,
        markup=False,
    )


UNDECIDED_SHOWN = 5
"""Undecided points named after an adaptive run; `fslab compare` shows them all."""


def _adaptive_summary(err: Console, plan: Plan, outcome: Outcome) -> None:
    """How the rounds ended: how many points settled, which stayed undecided and why."""
    st = plan.study
    family = (
        f", {outcome.by_family} of them by their family's pooled interval"
        if outcome.by_family
        else ""
    )
    bounded = (
        f", {outcome.bounded} bounded within ±{st.bound * 100:g}%"
        if outcome.bounded and st.bound is not None
        else ""
    )
    err.print(
        f"adaptive: {outcome.settled} of {len(plan.points)} points settled (decided{family}"
        f"{bounded}, or no verdict possible) after {st.repeat_min} to {outcome.rounds} rounds",
        soft_wrap=True,
    )
    if outcome.futile:
        shown = ", ".join(safe_markup(x) for x in outcome.futile[:UNDECIDED_SHOWN])
        more = len(outcome.futile) - UNDECIDED_SHOWN
        err.print(
            f"stopped early, undecided: {len(outcome.futile)} points ({shown}"
            + (f", {more} more" if more > 0 else "")
            + f"): at the noise seen, {st.repeat_max} runs (max) would likely not decide "
            + ("or bound " if st.bound is not None else "")
            + "them; `fslab compare` gives the bounds their runs set",
            soft_wrap=True,
        )
    if not outcome.undecided:
        return
    why = "the budget was spent" if outcome.budget_spent else f"{st.repeat_max} runs (max)"
    shown = ", ".join(safe_markup(x) for x in outcome.undecided[:UNDECIDED_SHOWN])
    more = len(outcome.undecided) - UNDECIDED_SHOWN
    err.print(
        f"undecided at {why}: {len(outcome.undecided)} points ({shown}"
        + (f", {more} more" if more > 0 else "")
        + "); `fslab compare` gives their intervals",
        soft_wrap=True,
    )


command = run
