"""Running the system tools this package drives (mkfs.*, losetup, mount, blkid, ...).

Everything runs with `LC_ALL=C` so that the output parsed here does not depend on the
user's language, with stdin closed (no tool may wait for an answer), and with a timeout.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Sequence

from fslab.errors import TargetError

# mkfs on a large device can take a while (lazy_itable_init=0 writes every inode table).
DEFAULT_TIMEOUT = 600.0


# Where root's tools live; a user's PATH often lacks them.
_SBIN = ("/usr/local/sbin", "/usr/sbin", "/sbin")


def which(name: str) -> str | None:
    """Full path of the tool `name`, looking in PATH and then the sbin directories."""
    path = os.environ.get("PATH", os.defpath)
    return shutil.which(name, path=os.pathsep.join([path, *_SBIN]))


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["LC_ALL"] = "C"
    env.pop("LANGUAGE", None)
    return env


def run(
    argv: Sequence[str],
    *,
    check: bool = True,
    input: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> subprocess.CompletedProcess[str]:
    """Runs `argv`; with `check`, a failure (or a missing tool) raises `TargetError` with
    the tool's own words."""
    exe = which(argv[0]) or argv[0]
    try:
        proc = subprocess.run(
            [exe, *argv[1:]],
            input=input,
            stdin=None if input is not None else subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env=_env(),
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError as e:
        raise TargetError(
            f"`{argv[0]}` is not installed",
            hint="run `make setup` (it installs the system tools fslab drives)",
        ) from e
    except subprocess.TimeoutExpired as e:
        raise TargetError(f"`{shlex.join(argv)}` did not finish in {timeout:.0f}s") from e
    if check and proc.returncode != 0:
        said = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
        raise TargetError(
            f"`{shlex.join(argv)}` failed: {reason(said) or f'exit status {proc.returncode}'}",
            hint="\n".join(said[-6:]) if len(said) > 1 else None,
        )
    return proc


# Last lines that only point elsewhere (util-linux mount and others end with this one).
_POINTERS = re.compile(r"^\s*dmesg\(1\) may have more information", re.IGNORECASE)


def reason(said: Sequence[str]) -> str | None:
    """The line of a tool's output that says why it failed: the last one that is not
    just a pointer to somewhere else (mount's "dmesg(1) may have more information")."""
    lines = [line.strip() for line in said if line.strip() and not _POINTERS.match(line)]
    return lines[-1].rstrip(".") if lines else None
