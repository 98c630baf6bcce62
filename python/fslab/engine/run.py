"""Running the engine: a job (`run_job`), its checks (`check_job`), a series judged for
steady state (`judge_steady`); its progress lines, its signals and its exit status."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, Literal, NamedTuple

from pydantic import ValidationError

from fslab.engine.find import ENGINE_ENV, ENGINE_NAME, find_engine
from fslab.engine.report import (
    Report,
    SeriesPoint,
    SteadyAnswer,
    field_path,
    malformed,
    problem_words,
)  # fmt: skip
from fslab.errors import EngineError, ExitStatus, JobError
from fslab.procs import DIE_WITH_US, handles_signals

# The engine's exit statuses (engine/src/main.rs).
EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_KILLED = 131

# `--progress=jsonl` lines are JSON objects (`fslab-engine schema progress`); nothing else
# the engine says on stderr starts with a brace.
_PROGRESS_PREFIX = "{"


@dataclass(frozen=True)
class EngineRun:
    """One run of the engine that produced a report (ok, failed or interrupted)."""

    report: Report
    document: Mapping[str, Any]
    """The report as the engine's parsed JSON."""
    stdout: str
    """The engine's JSON document exactly as printed."""
    stderr: str
    """What the engine said on stderr, less the progress lines."""
    exit_code: int
    """The engine's exit status: 0 ok, 1 failed, 130 interrupted."""


def run_job(
    job: Mapping[str, Any] | Path,
    *,
    progress_cb: Callable[[SeriesPoint], None] | None = None,
    engine: Path | None = None,
) -> EngineRun:
    """Runs one job in `fslab-engine` and returns its report.

    `job` is a job file (`.toml`, `.json`; `Path("-")` reads this process's stdin) or a
    mapping of job keys, sent to the engine as JSON on its stdin. With `progress_cb`, the
    engine reports each interval as it completes (`--progress=jsonl`), and the callback
    gets it as a `SeriesPoint`.

    A first SIGINT or SIGTERM to this process is passed to the engine, which winds down
    and reports what ran (exit 130); a second one stops it at once.

    Raises `JobError` when the engine refuses the job (exit 2, its messages in
    `stderr`), and `EngineError` when it cannot run or ends without a report.
    """
    exe = engine or find_engine()
    cmd = [str(exe), "run"]
    if progress_cb is not None:
        cmd.append("--progress=jsonl")
    stdin_data: bytes | None = None
    stdin: int | None = subprocess.DEVNULL
    if isinstance(job, Path):
        cmd.append(str(job))
        if str(job) == "-":
            stdin = None  # the engine reads ours
    else:
        cmd.append("-")
        stdin_data = json.dumps(dict(job)).encode()
        stdin = subprocess.PIPE
    code, stdout, stderr = run_engine(exe, cmd, stdin, stdin_data, progress_cb)
    return finish(exe, code, stdout, stderr)


def run_engine(
    exe: Path,
    cmd: list[str],
    stdin: int | None,
    stdin_data: bytes | None,
    progress_cb: Callable[[SeriesPoint], None] | None,
) -> tuple[int, str, str]:
    """Runs the engine command `cmd` to its end, signals passed on, the engine stopped
    with us: (exit status, stdout, stderr less progress lines)."""
    # The engine stops (SIGTERM: it winds down and reports) when fslab dies, even by
    # SIGKILL: an engine left running keeps its target busy (`fslab.procs`).
    cmd = [*DIE_WITH_US, *cmd]
    try:
        # Its own process group: a Ctrl-C at the terminal reaches only us, and we pass it
        # on once. Otherwise the engine would get it twice and take it as "stop now".
        proc = subprocess.Popen(
            cmd,
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            process_group=0,
        )
    except OSError as e:
        raise EngineError(
            f"cannot start `{exe}`: {e.strerror or e}",
            hint=f"check that it is a `{ENGINE_NAME}` built for this machine (`make setup`)",
        ) from e
    with proc, _forward_signals(proc):  # closing `proc` closes its pipes and reaps it
        try:
            stdout, stderr = _communicate(proc, stdin_data, progress_cb)
        except BaseException:
            proc.kill()  # e.g. the callback raised: leave no engine running on its own
            raise
    return proc.returncode, stdout, stderr


class JobProblem(NamedTuple):
    """One thing the engine's checks refuse in a job (`check --format json`)."""

    key: str | None
    """The job key at fault; None for the job as a whole (`missing target`, ...)."""
    message: str
    hint: str | None


def check_job(
    job: Mapping[str, Any], *, engine: Path | None = None, what: str = "a job"
) -> tuple[JobProblem, ...]:
    """The engine's own checks of a job, without running it (`check --format json`):
    nothing when the job is valid, else every problem at once.

    Raises `EngineError` when the engine cannot answer: it does not start, crashes, exits
    otherwise than 0 (valid) or 2 (refused), or answers something that is not a check.
    `what` names the job in that message (`the job of workload `w` (...)`)."""
    exe = engine or find_engine()
    try:
        done = subprocess.run(
            [str(exe), "check", "--format", "json", "-"],
            input=json.dumps(dict(job), sort_keys=True),
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError as e:
        raise EngineError(
            f"cannot start `{exe}`: {e.strerror or e}",
            hint=f"check that it is a `{ENGINE_NAME}` built for this machine (`make setup`)",
        ) from e
    if done.returncode == EXIT_OK:
        # An engine that says nothing (or anything but its check) about a job it accepts
        # is not one this lab can use: `run` would not read its report either.
        try:
            if json.loads(done.stdout).get("ok") is True:
                return ()
        except (ValueError, AttributeError):
            pass
        raise check_failed(exe, done, what)
    if done.returncode == EXIT_USAGE:
        try:
            answer = json.loads(done.stdout)
            return tuple(
                JobProblem(e["key"], str(e["message"]), e["hint"]) for e in answer["errors"]
            )
        except (ValueError, KeyError, TypeError):
            pass  # not the check document: the engine is not one this lab can use
    raise check_failed(exe, done, what)


def judge_steady(
    job: Mapping[str, Any], points: Sequence[SeriesPoint], *, engine: Path | None = None
) -> SteadyAnswer:
    """`points` (a finished series) judged by `job`'s steady-state keys with the engine's
    own rule (`fslab-engine steady`), as a live run of `job` would have been judged.

    Raises `EngineError` when the engine refuses (the job has no steady state, or the
    input is malformed) or cannot answer."""
    exe = engine or find_engine()
    doc = {"job": dict(job), "series": [p.model_dump(mode="json") for p in points]}
    out = _ask(exe, "steady", doc, "judge the series")
    try:
        return SteadyAnswer.model_validate_json(out)
    except ValidationError as e:
        err = e.errors()[0]
        raise malformed(field_path(err["loc"]), problem_words(err), err.get("input")) from e


MergeHow = Literal["jobs", "ranks"]
"""How the parts of a merge ran: `jobs` in one process on one clock (a fio job file's
jobs), `ranks` on several hosts after a common barrier (docs/engine.md, "Several reports
as one")."""


def merge_reports(
    how: MergeHow, parts: Sequence[tuple[str, Report | None]], *, engine: Path | None = None
) -> Report:
    """`parts` (a label for each part's warnings, its report or None when it ended without
    one) as one report, by the engine's one rule (`fslab-engine merge`): counts summed,
    latency histograms added, rates over the span, the worst status. The lab decodes no
    histogram itself.

    Raises `EngineError` when the engine refuses (no part has a report) or cannot answer."""
    exe = engine or find_engine()
    doc = {
        "how": how,
        "parts": [
            {"label": label, "report": None if r is None else r.model_dump(mode="json",
                                                                          by_alias=True)}
            for label, r in parts
        ],
    }  # fmt: skip
    return Report.from_json(json.loads(_ask(exe, "merge", doc, "merge the reports")))


def _ask(exe: Path, command: str, doc: Mapping[str, Any], what: str) -> str:
    """`fslab-engine COMMAND -` given `doc` as JSON on stdin: what it printed. Raises
    `EngineError` when it cannot start or does not answer (`what` it could not do)."""
    try:
        done = subprocess.run(
            [str(exe), command, "-"], input=json.dumps(doc), capture_output=True,
            text=True, check=False,
        )  # fmt: skip
    except OSError as e:
        raise EngineError(
            f"cannot start `{exe}`: {e.strerror or e}",
            hint=f"check that it is a `{ENGINE_NAME}` built for this machine (`make setup`)",
        ) from e
    if done.returncode != EXIT_OK:
        raise EngineError(
            f"{exe}: the engine could not {what} (exit {done.returncode}): "
            f"{done.stderr.strip()[-500:]}",
            hint=f"rebuild the engine (`make setup`): this lab needs `fslab-engine {command}`",
        )
    return done.stdout


def check_failed(exe: Path, done: subprocess.CompletedProcess[str], what: str) -> EngineError:
    rc = done.returncode
    if rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = "unknown"
        how = f"crashed (killed by signal {-rc} ({name}))"
    elif rc == EXIT_USAGE:
        how = "refused the job without the JSON answer `check --format json` gives"
    elif rc == EXIT_OK:
        how = "accepted the job without the JSON answer `check --format json` gives"
    else:
        how = f"exited with status {rc} (neither 0, ok, nor 2, job refused)"
    tail = [line for line in done.stderr.splitlines() if line.strip()][-5:]
    said = "; the last lines it wrote:\n" + "\n".join(f"  {line}" for line in tail) if tail else ""
    named = os.environ.get(ENGINE_ENV)
    return EngineError(
        f"{exe}: the engine {how} while checking {what}{said}",
        hint=(
            f"${ENGINE_ENV} is `{named}`: point it at a working `{ENGINE_NAME}` built for "
            "this machine (`make setup` builds one), or unset it"
            if named
            else "rebuild the engine (`make setup`) and try again"
        ),
    )


def _communicate(
    proc: subprocess.Popen[bytes],
    stdin_data: bytes | None,
    progress_cb: Callable[[SeriesPoint], None] | None,
) -> tuple[str, str]:
    """Feeds stdin, collects stdout in a thread, and reads stderr line by line here so
    progress lines reach the callback while the job runs."""
    assert proc.stdout is not None and proc.stderr is not None
    out_chunks: list[bytes] = []
    stdout_pipe = proc.stdout
    reader = threading.Thread(target=lambda: out_chunks.append(stdout_pipe.read()), daemon=True)
    reader.start()
    if proc.stdin is not None:
        # A job is small and the engine reads all of it before anything else; a broken
        # pipe means it exited early, and its stderr will say why.
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.write(stdin_data or b"")
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.close()
    said: list[str] = []
    for raw in proc.stderr:
        line = raw.decode(errors="replace").rstrip("\n")
        point = _progress(line) if progress_cb is not None else None
        if point is not None and progress_cb is not None:
            progress_cb(point)
        else:
            said.append(line)
    reader.join()
    proc.wait()
    stdout = b"".join(out_chunks).decode(errors="replace")
    stderr = "".join(f"{line}\n" for line in said)
    return stdout, stderr


def _progress(line: str) -> SeriesPoint | None:
    """The interval a `--progress=jsonl` line reports; None for any other line."""
    if not line.startswith(_PROGRESS_PREFIX):
        return None
    try:
        return SeriesPoint.model_validate(json.loads(line))
    except (ValueError, ValidationError):
        return None  # not a progress line after all: it is kept with the messages


@contextlib.contextmanager
def _forward_signals(proc: subprocess.Popen[bytes]) -> Iterator[None]:
    """While the engine runs, SIGINT and SIGTERM to us go to it instead (main thread only:
    Python handles signals there)."""
    if threading.current_thread() is not threading.main_thread() or not handles_signals():
        yield
        return

    def forward(signum: int, _frame: FrameType | None) -> None:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def finish(exe: Path, code: int, stdout: str, stderr: str) -> EngineRun:
    if code == EXIT_USAGE:
        first = next((ln for ln in stderr.splitlines() if ln.startswith("error: ")), "")
        raise JobError(
            first.removeprefix("error: ") or "the engine refused the job",
            stderr=stderr,
            verbatim=bool(stderr.strip()),
        )
    if code == EXIT_KILLED:
        raise EngineError(
            "the engine was stopped by a second signal, before it could report",
            stderr=stderr,
            exit_status=ExitStatus.INTERRUPTED,
        )
    if code < 0:
        name = _signal_name(-code)
        raise EngineError(
            f"`{ENGINE_NAME}` was killed by {name}, before it could report",
            hint=f"this is a bug in {ENGINE_NAME} unless something else killed it; "
            "please report it with the job and the engine's output above",
            stderr=stderr,
            exit_status=ExitStatus.INTERRUPTED
            if -code in (signal.SIGINT, signal.SIGTERM)
            else ExitStatus.FAILED,
        )
    if not stdout.strip():
        if code == EXIT_FAILED and stderr.strip():
            # The job did not start (the system refused something); the engine said why.
            raise EngineError(
                stderr.strip().splitlines()[0].removeprefix("error: "),
                stderr=stderr,
                verbatim=True,
            )
        raise EngineError(
            f"`{ENGINE_NAME}` exited with status {code} and printed no report",
            hint=f"run `{exe} run JOB` by hand to see what it does",
            stderr=stderr,
        )
    try:
        document = json.loads(stdout)
    except json.JSONDecodeError as e:
        raise EngineError(
            f"`{ENGINE_NAME}` printed a report that is not valid JSON: {e}",
            hint=f"this is a bug in {ENGINE_NAME}; please report it with the job",
            stderr=stderr,
        ) from e
    if not isinstance(document, dict):
        raise malformed("", "expected an object", document)
    report = Report.from_json(document)
    return EngineRun(report=report, document=document, stdout=stdout, stderr=stderr, exit_code=code)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
