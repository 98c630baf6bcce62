"""Shared fixtures. Every test runs the real `fslab-engine` (`make setup` builds it) and
the real `fslab` command in a subprocess, so exit statuses and streams are the real ones."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from fslab.engine import find_engine
from fslab.errors import EngineError
from fslab.store.db import ResultsWriter

REPO = Path(__file__).resolve().parents[1]


FAKE_ENGINE = REPO / "tests" / "fakes" / "fslab-engine"
"""Answers `run` with canned reports and `check` with "valid" (see the file): for the
lab's unit tests, `make test-unit`. Tests marked `engine` need the real one."""


def _is_fake(engine: Path) -> bool:
    return engine.resolve() == FAKE_ENGINE.resolve()


@pytest.fixture(scope="session", autouse=True)
def engine() -> Path:
    """The engine under test; the suite fails at once, with the reason, without one."""
    try:
        return find_engine()
    except EngineError as e:
        pytest.exit(f"{e.message}\nhint: {e.hint}", returncode=2)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """With the fake engine, the tests that need the real one are skipped, saying so."""
    try:
        fake = _is_fake(find_engine())
    except EngineError:
        return  # the `engine` fixture says what is missing
    if not fake:
        return
    skip = pytest.mark.skip(reason="needs the real fslab-engine (this run uses the fake)")
    for item in items:
        if item.get_closest_marker("engine"):
            item.add_marker(skip)


def fslab_command() -> list[str]:
    """`.venv/bin/fslab` (the installed entry point) beside this interpreter, else
    `python -m fslab`."""
    script = Path(sys.executable).parent / "fslab"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "fslab"]


def fslab_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("FORCE_COLOR", None)
    env["NO_COLOR"] = "1"
    env.update(extra)
    return env


def run_fslab(
    *args: str | Path,
    input: str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 30,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*fslab_command(), *map(str, args)],
        input=input,
        capture_output=True,
        text=True,
        env=dict(env) if env is not None else fslab_env(),
        timeout=timeout,
        check=False,
    )


def fslab(
    *args: str, cwd: Path, timeout: float = 600, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`fslab ARGS` run in `cwd` as a user would (this interpreter's `-m fslab`)."""
    return subprocess.run(
        [sys.executable, "-m", "fslab", *args], cwd=cwd, env=env or fslab_env(),
        capture_output=True, text=True, check=False, timeout=timeout,
    )  # fmt: skip


def start_fslab(*args: str, cwd: Path) -> subprocess.Popen[str]:
    """`fslab ARGS` started in the background in a session of its own (so a test can
    signal it, or its whole process group, as a terminal would)."""
    return subprocess.Popen(
        [sys.executable, "-m", "fslab", *args], cwd=cwd, env=fslab_env(),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip


def sh(*argv: str, input: str | None = None) -> str:
    """A system command that must succeed (losetup, mkfs, mount...); its stdout."""
    done = subprocess.run(
        argv, input=input, capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, f"{' '.join(argv)}: {done.stderr or done.stdout}"
    return done.stdout


def write_job(path: Path, job: Mapping[str, Any]) -> Path:
    """Writes `job` as TOML (a `.toml` path) or JSON (anything else); values are plain
    strings, integers and booleans."""
    if path.suffix == ".toml":
        path.write_text("".join(f"{k} = {json.dumps(v)}\n" for k, v in job.items()))
    else:
        path.write_text(json.dumps(dict(job)))
    return path


@pytest.fixture
def shm_file() -> Iterator[Path]:
    """A path on tmpfs (/dev/shm) for a job's file, removed afterwards whatever happens."""
    shm = Path("/dev/shm")
    if not shm.is_dir() or not os.access(shm, os.W_OK):
        pytest.skip("needs a writable /dev/shm (tmpfs)")
    path = shm / f"fslab-test-{uuid.uuid4().hex}.dat"
    try:
        yield path
    finally:
        path.unlink(missing_ok=True)


@pytest.fixture
def disk_dir() -> Iterator[Path]:
    """A fresh folder on the repository's own disk (not tmpfs: O_DIRECT must reach a real
    block device), removed afterwards whatever happens."""
    path = Path(tempfile.mkdtemp(prefix=".fslab-test-", dir=REPO))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def mounts_under(root: Path) -> list[str]:
    out = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        mp = line.split()[4].replace("\\040", " ")
        if mp.startswith(str(root)):
            out.append(mp)
    return out


def loops_under(root: Path) -> list[str]:
    out = []
    for backing in Path("/sys/block").glob("loop*/loop/backing_file"):
        if backing.read_text().strip().startswith(str(root)):
            out.append("/dev/" + backing.parent.parent.name)
    return out


@pytest.fixture
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A directory for the study, results and work tree; whatever a failing test left
    mounted or attached under it is removed afterwards, then the test fails on it."""
    if os.geteuid() != 0:
        pytest.skip("needs root (loop devices, mkfs, mount)")
    root = Path(str(tmp_path_factory.mktemp("lab", numbered=True))).resolve()
    yield root
    leaked = mounts_under(root) + loops_under(root)
    for mp in sorted(mounts_under(root), reverse=True):
        subprocess.run(["umount", "-l", mp], check=False)
    for dev in loops_under(root):
        subprocess.run(["losetup", "-d", dev], check=False)
    assert not leaked, f"left behind: {leaked}"


def undisturbed(path: Path) -> Path:
    """`path` migrated, with what its telemetry saw of other work forgotten. The file was
    written on a busy machine (31 of its 36 runs shared it with about one CPU of other
    work), whose runs compare now leaves out (`RunFacts.disturbed`); what compares them
    otherwise is what these tests are about."""
    ResultsWriter.open(path, create=False).close()
    con = sqlite3.connect(path)
    with con:
        con.execute("UPDATE run_fact SET contaminated_intervals = 0, reasons = ''")
    con.close()
    return path
