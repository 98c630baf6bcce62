"""A real PostgreSQL on a target, measured with pgbench.

One run: `initdb` a cluster inside the target's work directory (as the `postgres` user,
no TCP: a Unix socket in a private directory), start it, `pgbench -i -s SCALE`, then the
measured `pgbench -c CLIENTS -j JOBS -T DURATION` with a per-transaction log, stop the
server. The transaction log gives the latency percentiles; pgbench's own summary the
transactions per second.

The server is journaled (action `postgres`) before it starts, so `fslab cleanup` can stop
one a killed run left behind; `Server` stops it on every way out of a run. The journal's
undo of that action lives here and is registered with the journal on import
(`register_undo`), so the targets never import this module.

The study side of pgbench (its keys, scaling, the run step) is `fslab.kinds.pgbench`.
"""

from __future__ import annotations

import math
import os
import pwd
import re
import secrets
import shutil
import signal
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fslab.errors import FslabError, TargetError
from fslab.targets.journal import Journal, make_dir, register_undo, undo_refs
from fslab.targets.owner import Owned, prove

PG_USER = "postgres"
"""PostgreSQL refuses to run as root; the cluster and pgbench run as this user."""
_INSTALL_HINT = "install PostgreSQL: `apt-get install postgresql` (scripts/setup does)"
_TIMEOUT_S = 600.0


class AppError(FslabError):
    """An application workload could not run: a missing server, a failed start."""


@dataclass(frozen=True)
class PgTools:
    """Where PostgreSQL's server programs and pgbench are."""

    bindir: Path
    version: str

    def tool(self, name: str) -> str:
        return str(self.bindir / name)


def find_postgres() -> PgTools:
    """The newest PostgreSQL server installed (Debian keeps them in
    /usr/lib/postgresql/N/bin, off PATH), or `AppError` saying how to get one."""
    candidates: list[Path] = []
    if shutil.which("pg_config"):
        out = subprocess.run(
            ["pg_config", "--bindir"], capture_output=True, text=True, check=False
        ).stdout.strip()
        if out:
            candidates.append(Path(out))
    base = Path("/usr/lib/postgresql")
    if base.is_dir():
        versions = sorted(
            (p for p in base.iterdir() if p.name.isdigit()), key=lambda p: int(p.name)
        )
        candidates += [p / "bin" for p in reversed(versions)]
    for bindir in candidates:
        if all((bindir / t).is_file() for t in ("initdb", "pg_ctl", "postgres", "pgbench")):
            done = subprocess.run(
                [str(bindir / "postgres"), "--version"], capture_output=True, text=True,
                check=False,
            )  # fmt: skip
            return PgTools(bindir, done.stdout.strip() or "postgres (unknown version)")
    raise AppError("PostgreSQL is not installed (no initdb, pg_ctl, postgres, pgbench)",
                   hint=_INSTALL_HINT)  # fmt: skip


def pg_user() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(PG_USER)
    except KeyError:
        raise AppError(f"there is no `{PG_USER}` user to run PostgreSQL as",
                       hint=_INSTALL_HINT) from None  # fmt: skip


def unreachable_parent(path: Path, uid: int) -> Path | None:
    """The first directory above `path` that user `uid` cannot pass through (no x bit for
    it), or None. PostgreSQL runs as `postgres`: a data directory under a private tree
    (a 0700 home or a test's temp directory) cannot be reached."""
    p = path.resolve()
    for parent in [*reversed(p.parents), p]:
        if not parent.exists():
            break
        st = parent.stat()
        # the owner's x bit for its owner, the others' for everyone else (groups aside)
        if not st.st_mode & (0o100 if st.st_uid == uid else 0o001):
            return parent
    return None


def _as_pg(argv: Sequence[str]) -> list[str]:
    return ["runuser", "-u", PG_USER, "--", *argv]


def _run(argv: Sequence[str], what: str, timeout: float = _TIMEOUT_S) -> str:
    try:
        done = subprocess.run(
            list(argv), capture_output=True, text=True, check=False, timeout=timeout
        )
    except subprocess.TimeoutExpired as e:
        raise AppError(f"{what} took over {timeout:g} s and was stopped") from e
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        raise AppError(f"{what} failed (exit {done.returncode}): " + " / ".join(tail))
    return done.stdout


@dataclass
class Server:
    """A PostgreSQL cluster in `datadir`, listening only on a socket in `sockdir`."""

    tools: PgTools
    datadir: Path
    sockdir: Path
    settings: dict[str, str] = field(default_factory=dict)

    def initdb(self) -> None:
        # --no-sync: the cluster is thrown away after the run; its creation is not measured.
        _run(_as_pg([self.tools.tool("initdb"), "-D", str(self.datadir), "--no-sync",
                     "-A", "trust", "-U", PG_USER, "-E", "UTF8", "--locale=C"]),
             "initdb")  # fmt: skip

    def start(self) -> None:
        opts = {"listen_addresses": "''", "unix_socket_directories": f"'{self.sockdir}'",
                **self.settings}  # fmt: skip
        o = " ".join(f"-c {k}={v}" for k, v in opts.items())
        _run(_as_pg([self.tools.tool("pg_ctl"), "-D", str(self.datadir), "-w", "-t", "120",
                     "-l", str(self.sockdir / "server.log"), "-o", o, "start"]),
             "starting PostgreSQL")  # fmt: skip

    def pids(self) -> set[int]:
        """The postmaster's pid (its backends are its descendants), or none."""
        try:
            return {int((self.datadir / "postmaster.pid").read_text().split()[0])}
        except (OSError, ValueError, IndexError):
            return set()

    def stop(self) -> None:
        """Stops the server if it runs (fast shutdown, then immediate, then SIGKILL)."""
        stop_cluster(self.tools.tool("pg_ctl"), self.datadir)

    def log_tail(self) -> str:
        try:
            lines = (self.sockdir / "server.log").read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return " / ".join(lines[-5:])


def stop_cluster(pg_ctl: str, datadir: Path) -> None:
    """Stops the cluster in `datadir` if its postmaster still runs; safe to repeat."""
    pidfile = datadir / "postmaster.pid"
    if not pidfile.exists():
        return
    for mode in ("fast", "immediate"):
        subprocess.run(_as_pg([pg_ctl, "-D", str(datadir), "-m", mode, "-w", "-t", "60",
                               "stop"]), capture_output=True, check=False)  # fmt: skip
        if not pidfile.exists():
            return
    try:
        pid = int(pidfile.read_text().split()[0])
        if Path(f"/proc/{pid}/comm").read_text().strip() in ("postgres", "postmaster"):
            os.kill(pid, signal.SIGKILL)
            for _ in range(100):
                if not Path(f"/proc/{pid}").exists():
                    break
                time.sleep(0.05)
    except (OSError, ValueError, IndexError):
        pass


@dataclass(frozen=True)
class PgbenchResult:
    """One measured pgbench run."""

    tps: float
    transactions: int
    failed: int
    duration_s: float
    latencies_us: tuple[float, ...] = field(repr=False)
    output: str = field(repr=False)

    def latency_ns(self) -> dict[str, float]:
        """min, mean, stdev, max and percentiles (p50 ... p99.99) in ns, from the
        per-transaction log."""
        lat = sorted(self.latencies_us)
        if not lat:
            raise AppError("pgbench logged no transactions")

        def pct(q: float) -> float:
            # nearest rank, as the engine's HDR percentiles report a recorded value
            k = max(0, min(len(lat) - 1, math.ceil(q / 100 * len(lat)) - 1))
            return lat[k] * 1000.0

        return {
            "min": lat[0] * 1000.0,
            "mean": statistics.fmean(lat) * 1000.0,
            "stdev": (statistics.stdev(lat) if len(lat) > 1 else 0.0) * 1000.0,
            "max": lat[-1] * 1000.0,
            "p50": pct(50), "p90": pct(90), "p95": pct(95), "p99": pct(99),
            "p999": pct(99.9), "p9999": pct(99.99),
        }  # fmt: skip

    def as_dict(self) -> dict[str, Any]:
        return {"tps": self.tps, "transactions": self.transactions, "failed": self.failed,
                "duration_s": self.duration_s, "latency_ns": self.latency_ns(),
                "output": self.output}  # fmt: skip


_TPS = re.compile(r"^tps = ([\d.]+) \(without initial connection time\)", re.M)
_TXNS = re.compile(r"^number of transactions actually processed: (\d+)", re.M)
_FAILED = re.compile(r"^number of failed transactions: (\d+)", re.M)


def parse_output(text: str) -> tuple[float, int, int]:
    """(tps, transactions, failed) from pgbench's summary."""
    tps, txns = _TPS.search(text), _TXNS.search(text)
    if not tps or not txns:
        raise AppError("pgbench printed no summary: " + " / ".join(text.splitlines()[-5:]))
    failed = _FAILED.search(text)
    return float(tps.group(1)), int(txns.group(1)), int(failed.group(1)) if failed else 0


def parse_log(lines: Sequence[str]) -> list[float]:
    """Latencies (us) from pgbench's per-transaction log: `client_id transaction_no time
    script_no time_epoch time_us [...]`, `time` being the transaction's latency; failed
    transactions (`failed` or `skipped` in that column) are left out."""
    out: list[float] = []
    for line in lines:
        parts = line.split()
        if len(parts) >= 3 and parts[2].isdigit():
            out.append(float(parts[2]))
    return out


@dataclass(frozen=True)
class PgbenchSpec:
    """What one run does: `pgbench -i -s scale`, then clients/jobs for duration_s."""

    scale: int
    clients: int
    jobs: int
    duration_s: float
    builtin: str = "tpcb-like"
    settings: dict[str, str] = field(default_factory=dict)


@contextmanager
def cluster(workdir: Path, owner: Owned, journal: Journal, tools: PgTools,
            settings: dict[str, str]) -> Iterator[Server]:  # fmt: skip
    """An initialized, running cluster in `workdir/pgdata` (inside `owner`, the target's
    directory fslab made), stopped and removed after. Its socket directory in the system
    temp directory is fslab's own too (journaled, with a marker), so `fslab cleanup`
    removes it after a SIGKILL."""
    user = pg_user()
    blocked = unreachable_parent(workdir, user.pw_uid)
    if blocked is not None:
        raise TargetError(
            f"the `{PG_USER}` user cannot reach {workdir}: {blocked} is closed to others",
            hint="give a --workdir under a directory others may pass through, e.g. /var/tmp/fslab",
        )
    datadir = workdir / "pgdata"
    # Short: socket paths must be under 108 bytes, and a work directory may be deep.
    where = Path(tempfile.gettempdir()) / f"fslab-pg-{secrets.token_hex(6)}"
    sock, sock_ref = make_dir(journal, where, mode=0o700, recursive=True)
    sockdir = sock.path
    try:
        os.chown(sockdir, user.pw_uid, user.pw_gid)
        datadir.mkdir(mode=0o700)
        os.chown(datadir, user.pw_uid, user.pw_gid)
        server = Server(tools, datadir, sockdir, settings)
        server.initdb()
        entry = journal.record("postgres", str(datadir), owner.details())
        try:
            server.start()
            journal.done(entry)
            yield server
        finally:
            server.stop()
            journal.undone(entry)
    finally:
        shutil.rmtree(datadir, ignore_errors=True)
        undo_refs([sock_ref], journal)


def initialize(server: Server, scale: int) -> None:
    _run(_as_pg([server.tools.tool("pgbench"), "-i", "-q", "-s", str(scale), "-h",
                 str(server.sockdir), "-U", PG_USER, PG_USER]),
         f"pgbench -i -s {scale}")  # fmt: skip
    # The measured run starts from a checkpointed database, like every run of a point.
    _run(_as_pg([server.tools.tool("psql"), "-X", "-q", "-h", str(server.sockdir), "-U",
                 PG_USER, "-c", "CHECKPOINT", PG_USER]), "CHECKPOINT")  # fmt: skip


def run_pgbench(server: Server, spec: PgbenchSpec) -> PgbenchResult:
    """The measured run, with a per-transaction log in the server's private directory."""
    prefix = server.sockdir / "txlog"
    argv = _as_pg([server.tools.tool("pgbench"), "-h", str(server.sockdir), "-U", PG_USER,
                   "-c", str(spec.clients), "-j", str(spec.jobs),
                   "-T", str(max(1, round(spec.duration_s))), "-b", spec.builtin,
                   "-l", f"--log-prefix={prefix}", "-n", PG_USER])  # fmt: skip
    started = time.monotonic()
    out = _run(argv, "pgbench", timeout=spec.duration_s + _TIMEOUT_S)
    elapsed = time.monotonic() - started
    tps, txns, failed = parse_output(out)
    lines: list[str] = []
    for log in sorted(server.sockdir.glob("txlog*")):
        lines += log.read_text(errors="replace").splitlines()
    return PgbenchResult(tps=tps, transactions=txns, failed=failed, duration_s=elapsed,
                         latencies_us=tuple(parse_log(lines)), output=out)  # fmt: skip


def _undo_postgres(datadir: str, details: Mapping[str, Any]) -> bool:
    """The journal's undo of a `postgres` entry: stop the server of `datadir` if it still
    runs, once the machine proves the directory is fslab's."""
    if not (Path(datadir) / "postmaster.pid").exists():
        return True
    prove(datadir, details)
    # The program comes from this machine's PostgreSQL, never from the journal.
    stop_cluster(find_postgres().tool("pg_ctl"), Path(datadir))
    return True


register_undo("postgres", _undo_postgres)
