"""`fslab run --hosts HOST[:SLOTS],...`: which hosts, how many ranks, and the `mpiexec`
command that starts them (docs/multihost.md).

MPI is an optional extra (`pip install 'fslab[mpi]'`: mpi4py and the Open MPI runtime
from PyPI); the engine stays MPI-free. `fslab run --hosts` re-runs itself under
`mpiexec` as `python -m fslab.mpi_rank`: rank 0 is the `fslab run` that owns the results
database, the others provision their own targets and run the same engine job in step.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from fslab.errors import ExitStatus, FslabError

if TYPE_CHECKING:
    from fslab.study.plan import Plan

_HOST = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
MPI_HINT = "install MPI support: `pip install 'fslab[mpi]'` (mpi4py and Open MPI from PyPI)"


class HostsError(FslabError):
    """`--hosts` that cannot run: a bad host list, no MPI, a study it cannot run (exit 2,
    before anything starts)."""

    exit_status = ExitStatus.USAGE


@dataclass(frozen=True)
class Host:
    name: str
    slots: int
    """Ranks on this host (clients of the storage under test)."""


def parse_hosts(text: str) -> list[Host]:
    """`localhost:2,node1:4` -> hosts; raises FslabError naming the bad entry."""
    out: list[Host] = []
    for raw in text.split(","):
        item = raw.strip()
        name, sep, slots = item.partition(":")
        if not _HOST.match(name):
            raise HostsError(
                f"--hosts: {item!r} is not HOST or HOST:SLOTS",
                hint="write e.g. `--hosts localhost:2` or `--hosts node1:4,node2:4`",
            )
        n = 1
        if sep:
            if not slots.isdigit() or not 1 <= int(slots) <= 1024:
                raise HostsError(
                    f"--hosts: {item!r}: the slots (ranks on that host) must be a whole "
                    "number from 1 to 1024",
                    hint="write e.g. `--hosts localhost:2`",
                )
            n = int(slots)
        if any(h.name == name for h in out):
            raise HostsError(
                f"--hosts: {name} is named twice",
                hint="give each host once, with all its ranks: `HOST:SLOTS`",
            )
        out.append(Host(name, n))
    return out


def most_ranks(plan: Plan) -> int:
    """The most ranks per host any point asks for (1 when none says)."""
    return max((int(str(p.params.get("ranks", 1))) for p in plan.points), default=1)


def plan_problems(plan: Plan, fewest_slots: int) -> list[HostsError]:
    """What keeps `plan` from running on hosts whose smallest has `fewest_slots` ranks:
    said by `fslab plan` (a study's `[hosts]`) and by `fslab run --hosts`, before anything
    starts."""
    from fslab.kinds.base import EngineJobKind

    out: list[HostsError] = []
    odd = sorted({p.kind for p in plan.points if not isinstance(p.kind_spec, EngineJobKind)})
    if odd:
        out.append(HostsError(
            f"a multi-host run runs engine jobs on every rank; {', '.join(odd)} workloads are "
            "not engine jobs (not yet multi-host)",
            hint="run those workloads in a study without hosts",
        ))  # fmt: skip
    most = most_ranks(plan)
    if most > fewest_slots:
        out.append(HostsError(
            f"the study asks for `ranks = {most}` per host, and a host has "
            f"{fewest_slots} slot(s)",
            hint=f"give every host at least {most} slots (`HOST:{most}`)",
        ))  # fmt: skip
    if plan.study.reuse:
        out.append(HostsError(
            "a multi-host run with `reuse = true` is not supported yet: each rank makes its "
            "target per run",
            hint="remove `reuse` for a multi-host run",
        ))  # fmt: skip
    return out


def mpiexec() -> str:
    """The `mpiexec` beside this Python (the PyPI runtime), else on PATH; FslabError with
    how to get MPI when there is none or mpi4py is missing."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        raise HostsError("--hosts needs MPI, and mpi4py is not installed", hint=MPI_HINT) from None
    here = Path(sys.executable).parent / "mpiexec"
    if here.is_file() and os.access(here, os.X_OK):
        return str(here)
    found = shutil.which("mpiexec")
    if found is None:
        raise HostsError("--hosts needs MPI, and no `mpiexec` was found", hint=MPI_HINT)
    return found


MPIEXEC_ARGS = "FSLAB_MPIEXEC_ARGS"
"""Environment variable: more `mpiexec` options, as a shell would split them (a
cluster's network interfaces, a launcher other than ssh; docs/multihost.md)."""


def launch_argv(hosts: list[Host], fslab_args: list[str]) -> list[str]:
    """`mpiexec` starting one `python -m fslab.mpi_rank` per slot, rank 0 on the first host;
    not bound to cores (the engine runs threads of its own; and more ranks than cores on
    one host is a way to load a shared file system)."""
    ranks = sum(h.slots for h in hosts)
    spec = ",".join(f"{h.name}:{h.slots}" for h in hosts)
    try:
        extra = shlex.split(os.environ.get(MPIEXEC_ARGS, ""))
    except ValueError as e:
        raise HostsError(
            f"{MPIEXEC_ARGS}: {e}", hint="quote it as a shell would (it is split by shlex)"
        ) from None
    return [mpiexec(), "-n", str(ranks), "--host", spec, "--bind-to", "none", *extra,
            sys.executable, "-m", "fslab.mpi_rank", *fslab_args]  # fmt: skip


def launch_env() -> dict[str, str]:
    """Open MPI refuses root unless told twice; fslab runs as root for loop devices."""
    env = dict(os.environ)
    if os.geteuid() == 0:
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    return env
