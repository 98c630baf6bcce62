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

_SETPRIV = shutil.which("setpriv")

DIE_WITH_US: tuple[str, ...] = (_SETPRIV, "--pdeathsig", "TERM", "--") if _SETPRIV else ()
"""Put before a command line: the command gets SIGTERM when fslab dies."""
