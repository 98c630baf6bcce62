"""A fio job file run by the engine (`fslab-engine run --fio`, docs/fio.md): its check
and its run, every job's report."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fslab.engine.find import ENGINE_NAME, find_engine
from fslab.engine.report import Report
from fslab.engine.run import EXIT_KILLED, EXIT_OK, EXIT_USAGE, check_failed, finish, run_engine
from fslab.errors import EngineError


@dataclass(frozen=True)
class FioJobRun:
    """One job of a fio job file, as `fslab-engine run FILE.fio` reported it."""

    name: str
    place: str
    """Where its section starts (`file:line`)."""
    phase: int
    group: int
    report: Report | None
    error: str | None


@dataclass(frozen=True)
class FioRun:
    """A fio job file run by the engine (docs/fio.md): every job's report."""

    jobs: tuple[FioJobRun, ...]
    document: Mapping[str, Any]
    stdout: str
    stderr: str
    exit_code: int


def fio_args(within: Path | None, sets: Mapping[str, Any]) -> list[str]:
    """The engine's options that move a job file's files into `within` and set `sets` on
    every job."""
    out = ["--fio"]
    if within is not None:
        out += ["--within", str(within)]
    for key, value in sets.items():
        shown = json.dumps(value) if isinstance(value, bool) else str(value)
        out += ["--set", f"{key}={shown}"]
    return out


def check_fio(
    job_file: Path,
    *,
    within: Path | None = None,
    sets: Mapping[str, Any] | None = None,
    engine: Path | None = None,
) -> dict[str, Any]:
    """The engine's view of a fio job file (`check --format json`): `{"ok", "problems",
    "plan"}`, every problem at once. Raises `EngineError` when the engine cannot answer."""
    exe = engine or find_engine()
    cmd = [str(exe), "check", "--format", "json", *fio_args(within, sets or {}), str(job_file)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    except OSError as e:
        raise EngineError(
            f"cannot start `{exe}`: {e.strerror or e}",
            hint=f"check that it is a `{ENGINE_NAME}` built for this machine (`make setup`)",
        ) from e
    try:
        answer: dict[str, Any] = json.loads(done.stdout)
    except ValueError:
        answer = {}
    if done.returncode not in (EXIT_OK, EXIT_USAGE) or "ok" not in answer:
        raise check_failed(exe, done, f"the fio job file {job_file}")
    return answer


def run_fio(
    job_file: Path,
    *,
    within: Path | None = None,
    sets: Mapping[str, Any] | None = None,
    engine: Path | None = None,
) -> FioRun:
    """Runs the fio job file `job_file` in the engine, its files inside `within`, with
    `sets` on every job. Raises `JobError` when the engine refuses the file (every
    problem in its stderr) and `EngineError` when it cannot run or ends without a report."""
    exe = engine or find_engine()
    cmd = [str(exe), "run", *fio_args(within, sets or {}), str(job_file)]
    code, stdout, stderr = run_engine(exe, cmd, subprocess.DEVNULL, None, None)
    if code in (EXIT_USAGE, EXIT_KILLED) or code < 0 or not stdout.strip():
        finish(exe, code, stdout, stderr)  # raises the matching error
    try:
        document = json.loads(stdout)
        jobs = tuple(
            FioJobRun(
                name=str(j["name"]), place=str(j["place"]), phase=int(j["phase"]),
                group=int(j["group"]),
                report=Report.from_json(j["report"]) if j.get("report") else None,
                error=j.get("error"),
            )
            for j in document["jobs"]
        )  # fmt: skip
    except (ValueError, KeyError, TypeError) as e:
        raise EngineError(
            f"`{ENGINE_NAME}` printed a job-file report this lab cannot read: {e}",
            hint="rebuild both with `make setup`",
            stderr=stderr,
        ) from e
    return FioRun(jobs=jobs, document=document, stdout=stdout, stderr=stderr, exit_code=code)
