"""pgbench on a real PostgreSQL: parsing what pgbench prints and logs, the study keys, and
(as root) a run end to end on a loop target that leaves no server, mount or device."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import start_fslab

from fslab.apps.postgres import (
    AppError,
    PgbenchResult,
    find_postgres,
    parse_log,
    parse_output,
    unreachable_parent,
)
from fslab.study.load import StudyError, parse_study
from fslab.study.plan import expand

OUTPUT = """\
pgbench (15.14 (Debian 15.14-0+deb12u1))
transaction type: <builtin: TPC-B (sort of)>
scaling factor: 2
query mode: simple
number of clients: 4
number of threads: 2
maximum number of tries: 1
duration: 4 s
number of transactions actually processed: 4711
number of failed transactions: 0 (0.000%)
latency average = 3.395 ms
initial connection time = 9.876 ms
tps = 1178.186951 (without initial connection time)
"""


def test_pgbench_summary_is_parsed() -> None:
    assert parse_output(OUTPUT) == (1178.186951, 4711, 0)
    with pytest.raises(AppError, match="no summary"):
        parse_output("connection to server failed\n")


def test_transaction_log_gives_latency_percentiles() -> None:
    # client_id transaction_no time(us) script_no time_epoch time_us
    lines = [f"0 {i} {100 + i} 0 1700000000 {i}" for i in range(1, 101)]
    lines.append("1 7 failed 0 1700000000 5")
    lat = parse_log(lines)
    assert len(lat) == 100 and lat[0] == 101.0
    r = PgbenchResult(1.0, 100, 0, 1.0, tuple(lat), "")
    ns = r.latency_ns()
    assert ns["min"] == 101_000 and ns["max"] == 200_000
    assert ns["p50"] == 150_000 and ns["p99"] == 199_000  # nearest rank
    assert ns["mean"] == pytest.approx(150_500)


def test_a_private_directory_is_unreachable_for_others() -> None:
    # Not under pytest's tmp_path: that tree is itself closed to others.
    base = Path(tempfile.mkdtemp(prefix="fslab-reach-", dir="/var/tmp"))
    try:
        base.chmod(0o755)
        private = base / "private"
        (private / "inner").mkdir(parents=True)
        private.chmod(0o700)
        nobody = 65534
        assert unreachable_parent(private / "inner", nobody) == private
        private.chmod(0o755)
        assert unreachable_parent(private / "inner", nobody) is None
    finally:
        shutil.rmtree(base)


STUDY = """
name = "pg"

[[target]]
name = "ext4"
fs = "ext4"
loop = {{ size = "1GiB" }}

[[workload]]
kind = "pgbench"
{body}
"""


def test_pgbench_keys_sweep_and_scale() -> None:
    study = parse_study(STUDY.format(body='clients = [1, 4]\nscale = 10\nduration = "20s"'), "s")
    plan = expand(study, scale=0.1)
    assert [p.params["clients"] for p in plan.points] == [1, 4]
    assert {p.params["scale"] for p in plan.points} == {1}
    assert {p.params["duration"] for p in plan.points} == {2.0}
    assert plan.points[0].label() == "ext4 pgbench s1 c1 j1"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('builtin = "tpcc"', "not a pgbench builtin"),
        ("clients = 0", "not a count"),
        ("clients = 2\njobs = 4", "jobs` <= `clients"),
        ('shared_buffers = "1g"', "not a PostgreSQL size"),
        ("scales = 3", "scale"),
    ],
)
def test_bad_pgbench_keys(body: str, expected: str) -> None:
    with pytest.raises(StudyError) as e:
        parse_study(STUDY.format(body=body), "s.toml")
    text = " ".join(f"{p.what} {p.hint or ''}" for p in e.value.problems)
    assert expected in text, text


# -- as root: a real server -----------------------------------------------------------------


def _postgres_processes_under(root: Path) -> list[str]:
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True, check=True)
    return [line for line in out.stdout.splitlines() if str(root) in line and "postgres" in line]


@pytest.fixture
def pg_lab() -> Iterator[Path]:
    """A work tree the `postgres` user can reach (pytest's temp tree is private), removed
    afterwards with whatever a failing test left: server, mounts, loop devices."""
    if os.geteuid() != 0:
        pytest.skip("needs root (loop devices, mkfs, mount, runuser)")
    try:
        tools = find_postgres()
    except AppError as e:
        pytest.skip(f"{e.message} ({e.hint})")
    root = Path(tempfile.mkdtemp(prefix="fslab-pgtest-", dir="/var/tmp"))
    root.chmod(0o755)
    try:
        yield root
    finally:
        leaked = _postgres_processes_under(root)
        for pidfile in root.rglob("postmaster.pid"):
            argv = [tools.tool("pg_ctl"), "-D", str(pidfile.parent), "-m", "immediate", "stop"]
            subprocess.run(["runuser", "-u", "postgres", "--", *argv], check=False)
        mounts = [
            line.split()[1]
            for line in Path("/proc/mounts").read_text().splitlines()
            if line.split()[1].startswith(str(root))
        ]
        for mp in sorted(mounts, reverse=True):
            subprocess.run(["umount", "-l", mp], check=False)
        loops = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
        for line in loops.splitlines():
            if str(root) in line:
                subprocess.run(["losetup", "-d", line.split(":")[0]], check=False)
        shutil.rmtree(root, ignore_errors=True)
        assert not leaked and not mounts, f"left behind: {leaked} {mounts}"


@pytest.mark.root
@pytest.mark.slow
def test_pgbench_runs_end_to_end_and_leaves_nothing(pg_lab: Path) -> None:
    study = pg_lab / "pg.toml"
    study.write_text(STUDY.format(body='scale = 1\nclients = 2\njobs = 2\nduration = "2s"'))
    done = subprocess.run(
        [sys.executable, "-m", "fslab", "run", str(study), "--results", "r.db"],
        cwd=pg_lab, capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    con = sqlite3.connect(pg_lab / "r.db")
    try:
        ios, tps, p50, p99 = con.execute(
            "SELECT ios, iops, lat_p50_ns, lat_p99_ns FROM metric WHERE op = 'txn'"
        ).fetchone()
        written = con.execute(
            "SELECT value FROM run_metric WHERE name = 'written_bytes'"
        ).fetchone()[0]
        journal = con.execute("SELECT state FROM journal WHERE action = 'postgres'").fetchall()
    finally:
        con.close()
    assert ios > 0 and tps > 0 and 0 < p50 <= p99
    assert written > 0, "the database's writes reached the target's device"
    # One server a run (a disturbed run is measured again, with a server of its own).
    assert journal and set(journal) == {("undone",)}, "each server was journaled and stopped"
    assert not _postgres_processes_under(pg_lab)
    cmp = subprocess.run(
        [sys.executable, "-m", "fslab", "compare", "--results", "r.db"],
        cwd=pg_lab, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert cmp.returncode == 0 and "txn tps" in cmp.stdout, cmp.stderr


@pytest.mark.root
@pytest.mark.slow
def test_sigkill_during_pgbench_then_cleanup_leaves_nothing(pg_lab: Path) -> None:
    """Audit F16: the server's socket directory in the system temp directory is fslab's
    own (journaled, with a marker), so cleanup removes it with the rest."""
    study = pg_lab / "pg.toml"
    study.write_text(STUDY.format(body='scale = 1\nclients = 2\nduration = "60s"'))
    proc = start_fslab("run", str(study), "--results", "r.db", cwd=pg_lab)
    try:
        deadline = time.monotonic() + 120
        while not _measuring(proc.pid) and time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.2)
        assert _measuring(proc.pid), "the measured pgbench never started"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
    con = sqlite3.connect(pg_lab / "r.db")
    try:
        (sockdir,) = con.execute(
            "SELECT subject FROM journal WHERE action = 'mkdir' AND subject LIKE '%fslab-pg-%'"
        ).fetchone()
    finally:
        con.close()
    assert Path(sockdir).is_dir() and _postgres_processes_under(pg_lab), "the kill left them"
    done = subprocess.run(
        [sys.executable, "-m", "fslab", "cleanup", "--results", "r.db"],
        cwd=pg_lab, capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert not Path(sockdir).exists()
    assert not _postgres_processes_under(pg_lab)
    assert not (pg_lab / "fslab-work").exists()


def _measuring(pid: int) -> bool:
    """Whether a measured pgbench (not `pgbench -i`) runs in `pid`'s session."""
    out = subprocess.run(["ps", "-o", "sid=,args=", "-e"], capture_output=True, text=True)
    return any(
        line.split(None, 1)[0] == str(pid) and "pgbench -h" in line and " -i " not in line
        for line in out.stdout.splitlines()
        if line.strip()
    )


@pytest.mark.root
def test_plan_refuses_a_workdir_postgres_cannot_reach(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root")
    try:
        find_postgres()
    except AppError as e:
        pytest.skip(e.message)
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    study = private / "pg.toml"
    study.write_text(STUDY.format(body="scale = 1"))
    done = subprocess.run(
        [sys.executable, "-m", "fslab", "plan", str(study), "--results", str(private / "r.db")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert "cannot reach the work directory" in done.stderr and "--workdir" in done.stderr
    assert not (private / "fslab-work").exists()
