"""Child processes that do not outlive fslab.

A child left running after fslab is killed keeps its work going with no one to stop it:
an engine keeps its target busy, so nothing could unmount it; an `mpiexec` keeps a whole
multi-host study running. Such children are started through util-linux's `setpriv
--pdeathsig TERM`, which sets PR_SET_PDEATHSIG and execs the program: the kernel sends
it SIGTERM when the thread that started it dies, even by SIGKILL, and no Python code
runs between fork and exec in this process, which has threads (the telemetry sampler).
"""

from __future__ import annotations

import shutil
import signal

_SETPRIV = shutil.which("setpriv")

DIE_WITH_US: tuple[str, ...] = (_SETPRIV, "--pdeathsig", "TERM", "--") if _SETPRIV else ()
"""Put before a command line: the command gets SIGTERM when fslab dies."""


_GUARDED = False


def end_at_once_on_signals() -> None:
    """For a process whose guard undoes what it made (a rank of a multi-host run,
    `fslab.guard`): SIGINT and SIGTERM end it at once, as the kernel's default action
    does, and no handler fslab would install later takes them (`handles_signals`).
    A teardown of its own would race Open MPI, which SIGKILLs a rank a moment after
    SIGTERM: killed between a marker's removal and its directory's, it would leave what
    no later undo can prove is fslab's. The guard is never killed that way."""
    global _GUARDED
    _GUARDED = True
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)


def handles_signals() -> bool:
    """Whether this process stops gracefully on SIGINT and SIGTERM (it has no guard)."""
    return not _GUARDED
