"""Where `fslab-engine` is: `$FSLAB_ENGINE`, this interpreter's scripts directory, a
source checkout's `target/`, then `PATH`."""

from __future__ import annotations

import os
import shutil
import sysconfig
from collections.abc import Iterator
from pathlib import Path

from fslab.errors import EngineError

ENGINE_NAME = "fslab-engine"
ENGINE_ENV = "FSLAB_ENGINE"

# The repository root when running from a checkout (python/fslab/engine/find.py -> ../../../..).
_REPO = Path(__file__).resolve().parents[3]


def find_engine() -> Path:
    """Path of the `fslab-engine` binary.

    Looks in order at `$FSLAB_ENGINE`, this interpreter's scripts directory (a venv's
    `bin/`, where `make setup` installs it), `<repo>/target/release` and
    `<repo>/target/debug` of a source checkout, then `PATH`. `$FSLAB_ENGINE`, when set,
    is the only place looked at: naming an engine and silently getting another would
    make numbers lie.
    """
    named = os.environ.get(ENGINE_ENV)
    if named:
        path = Path(named).expanduser()
        if _is_executable(path):
            return path
        raise EngineError(
            f"${ENGINE_ENV} is `{named}`, which is not an executable file",
            hint=f"point ${ENGINE_ENV} at a built `{ENGINE_NAME}`, or unset it",
        )
    looked: list[str] = [f"${ENGINE_ENV} (not set)"]
    for folder in _candidate_dirs():
        path = folder / ENGINE_NAME
        if _is_executable(path):
            return path
        looked.append(str(folder))
    on_path = shutil.which(ENGINE_NAME)
    if on_path:
        return Path(on_path)
    looked.append("PATH")
    raise EngineError(
        f"cannot find `{ENGINE_NAME}`; looked in {', '.join(looked)}",
        hint=f"run `make setup` in the fslab repository, "
        f"or set ${ENGINE_ENV}=/path/to/{ENGINE_NAME}",
    )


def _candidate_dirs() -> Iterator[Path]:
    yield Path(sysconfig.get_path("scripts"))
    if (_REPO / "Cargo.toml").is_file():
        yield _REPO / "target" / "release"
        yield _REPO / "target" / "debug"


def _is_executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)
