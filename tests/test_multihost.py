"""Multi-host runs (`fslab run --hosts`, docs/multihost.md): the hosts' grammar, the
merge of the ranks' reports, and two ranks on this machine over MPI, with nothing left
running or mounted."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import fslab, fslab_env, loops_under, mounts_under, start_fslab
from hdr import decode_hist, hist_percentile

from fslab.engine import Report, SeriesPoint, judge_steady, run_job
from fslab.errors import EngineError, FslabError
from fslab.hosts import Host, parse_hosts
from fslab.mpi_rank import rebase_job
from fslab.rank_merge import RankReport, merge


def test_hosts_are_host_or_host_slots() -> None:
    assert parse_hosts("localhost:2") == [Host("localhost", 2)]
    assert parse_hosts("a, b:4") == [Host("a", 1), Host("b", 4)]
    for bad, words in [
        ("a:0", "whole number from 1 to 1024"),
        ("a:x", "whole number"),
        ("a,a:2", "named twice"),
        ("-x", "is not HOST or HOST:SLOTS"),
        ("", "is not HOST or HOST:SLOTS"),
    ]:
        with pytest.raises(FslabError, match=words):
            parse_hosts(bad)


def test_a_job_is_rebased_into_each_ranks_target() -> None:
    job = {"filename": "/w/ext4/mnt/fslab.dat", "directory": "/w/ext4/mnt", "rw": "/w/ext4/mntx"}
    got = rebase_job(job, Path("/w/ext4/mnt"), Path("/w/rank1/ext4/mnt"))
    assert got == {"filename": "/w/rank1/ext4/mnt/fslab.dat", "directory": "/w/rank1/ext4/mnt",
                   "rw": "/w/ext4/mntx"}  # fmt: skip


@pytest.mark.engine
def test_merged_counts_add_up_and_percentiles_come_from_the_summed_histogram(
    tmp_path: Path,
) -> None:
    reports = []
    for i, rw in enumerate(["randread", "randread", "randread"]):
        job = {"name": f"r{i}", "filename": str(tmp_path / f"f{i}"), "rw": rw, "bs": "4k",
               "size": "4m", "io_size": f"{1 + i}m", "ioengine": "sync"}  # fmt: skip
        reports.append(RankReport(i, f"h{i % 2}", run_job(job).report))
    agg, facts = merge(reports)
    (read,) = agg.results
    assert read.ios == sum(r.report.results[0].ios for r in reports) == 256 + 512 + 768
    assert read.bytes == read.ios * 4096
    total = decode_hist(reports[0].report.results[0].hist)
    for r in reports[1:]:
        total.add(decode_hist(r.report.results[0].hist))
    assert int(decode_hist(read.hist).get_total_count()) == read.ios
    assert read.lat_ns.p99 == hist_percentile(total, 99.0)
    assert read.lat_ns.max == max(r.report.results[0].lat_ns.max for r in reports)
    assert read.iops == pytest.approx(read.ios / facts.span_s)
    assert facts.ranks == 3 and facts.hosts == 2
    assert facts.first_done_s <= facts.last_done_s == pytest.approx(facts.span_s)


COUNTED = "SELECT MAX(id) FROM run GROUP BY point_id"
"""Each point's last run: the one that counted. A run other work disturbed (a CI
neighbour) is measured again, and its ranks stay stored beside the new run's."""

STUDY = """
name = "two ranks"

[[target]]
name = "shared"
dir = "{root}/shared"

[[target]]
name = "ext4"
fs = "ext4"
loop = {{ size = "256MiB" }}

[[workload]]
rw = "randread"
bs = "4k"
file_size = "16MiB"
runtime = "1s"
ioengine = "sync"
direct = false
"""


@pytest.mark.root
@pytest.mark.engine
def test_two_ranks_on_this_machine_add_up_and_leave_nothing(lab: Path) -> None:
    (lab / "shared").mkdir()
    study = lab / "s.toml"
    study.write_text(STUDY.format(root=lab))
    done = fslab("run", str(study), "--results", "r.db", "--hosts", "localhost:2", cwd=lab,
                 timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "2 ranks on 1 host(s)" in done.stderr
    con = sqlite3.connect(lab / "r.db")
    try:
        ranks = con.execute(
            "SELECT p.target, k.rank, k.ios, k.report FROM rank k JOIN run r ON r.id = k.run_id"
            f" JOIN point p ON p.id = r.point_id WHERE r.id IN ({COUNTED})"
            " ORDER BY p.target, k.rank"
        ).fetchall()
        totals = dict(con.execute(
            "SELECT p.target, m.ios FROM metric m JOIN run r ON r.id = m.run_id"
            f" JOIN point p ON p.id = r.point_id WHERE r.id IN ({COUNTED})"
        ).fetchall())  # fmt: skip
        skew = dict(con.execute(
            "SELECT p.target, m.value FROM run_metric m JOIN run r ON r.id = m.run_id"
            " JOIN point p ON p.id = r.point_id WHERE m.name = 'ranks.start_skew_s'"
            f" AND r.id IN ({COUNTED})"
        ).fetchall())  # fmt: skip
    finally:
        con.close()
    for target in ("ext4", "shared"):
        mine = [r for r in ranks if r[0] == target]
        assert [r[1] for r in mine] == [0, 1]
        assert totals[target] == sum(r[2] for r in mine) > 0
        reports = [Report.model_validate(json.loads(r[3])) for r in mine]
        # each rank ran in its own target: its own directory in the shared one, its own
        # loop device under its own work directory
        files = [str(r.job.filename) for r in reports]
        assert files[0] != files[1]
        if target == "shared":
            assert all(f.startswith(str(lab / "shared" / "fslab-shared-")) for f in files)
        else:
            assert "/rank1/" in files[1] and "/rank1/" not in files[0]
        assert skew[target] < 0.5, "the ranks started together after the barrier"
    assert not mounts_under(lab) and not loops_under(lab)
    assert sorted(p.name for p in lab.iterdir()) == ["r.db", "s.toml", "shared"]
    assert list((lab / "shared").iterdir()) == []
    shown = fslab("compare", "--results", "r.db", cwd=lab)
    assert shown.returncode == 0, shown.stderr
    assert "ranks imbalance (fastest/slowest rank)" in shown.stdout
    listed = fslab("compare", "--results", "r.db", "--ranks", cwd=lab)
    assert listed.returncode == 0, listed.stderr
    lines = [x.split() for x in listed.stdout.splitlines()]
    # per target: rank 0 on the point's line, rank 1 on the next; their shares add up
    assert sum(1 for x in lines if "%" in " ".join(x)) == 4, listed.stdout
    assert all(x[0] in ("shared", "ext4", "1", "0", "study", "point") for x in lines if x)
    # the other rank's engine is this run's load, not foreign work on the machine
    assert "contaminated" not in shown.stdout + shown.stderr
    left = subprocess.run(["pgrep", "-f", "fslab.mpi_rank"], capture_output=True, text=True)
    assert left.stdout.strip() == "", "no rank outlived the run"


def test_hosts_refuse_workloads_that_are_not_engine_jobs(tmp_path: Path) -> None:
    study = tmp_path / "s.toml"
    (tmp_path / "d").mkdir()
    study.write_text(
        f'name = "x"\n[[target]]\nname = "d"\ndir = "{tmp_path}/d"\n'
        '[[workload]]\nkind = "files"\nops = ["scan"]\nset = "small"\n'
    )
    done = fslab("run", str(study), "--results", str(tmp_path / "r.db"), "--hosts",
                 "localhost:2", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "files workloads are not engine jobs" in done.stderr


RANKS_STUDY = """
name = "ranks sweep"

[[target]]
name = "shared"
dir = "{root}/shared"

[[workload]]
rw = "randread"
bs = "4k"
file_size = "8MiB"
runtime = "1s"
ioengine = "sync"
direct = false
ranks = [1, 2]
"""


@pytest.mark.root
@pytest.mark.engine
def test_a_ranks_sweep_runs_that_many_clients_per_host(lab: Path) -> None:
    (lab / "shared").mkdir()
    study = lab / "s.toml"
    study.write_text(RANKS_STUDY.format(root=lab))
    alone = fslab("run", str(study), "--results", "r.db", cwd=lab)
    assert alone.returncode == 2, alone.stderr
    assert "`ranks = 2` (clients per host): that needs a multi-host run" in alone.stderr
    assert not (lab / "r.db").exists()
    few = fslab("run", str(study), "--results", "r.db", "--hosts", "localhost:1", cwd=lab)
    assert few.returncode == 2 and "and a host has 1 slot(s)" in few.stderr, few.stderr
    done = fslab("run", str(study), "--results", "r.db", "--hosts", "localhost:2", cwd=lab,
                 timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr
    con = sqlite3.connect(lab / "r.db")
    try:
        rows = con.execute(
            "SELECT json_extract(p.params, '$.ranks'), count(k.rank), sum(k.ios), m.ios"
            " FROM run r JOIN point p ON p.id = r.point_id JOIN rank k ON k.run_id = r.id"
            " JOIN metric m ON m.run_id = r.id GROUP BY r.id ORDER BY 1"
        ).fetchall()
    finally:
        con.close()
    assert [(n, k) for n, k, _, _ in rows] == [(1, 1), (2, 2)]
    assert all(s == m for _, _, s, m in rows), rows
    assert sorted(p.name for p in lab.iterdir()) == ["r.db", "s.toml", "shared"]


NS_STUDY = """
name = "two hosts"

[[target]]
name = "shared"
dir = "{root}/shared"

[[workload]]
rw = "randread"
bs = "4k"
file_size = "8MiB"
runtime = "1s"
ioengine = "sync"
direct = false
"""

NSRSH = """#!/bin/sh
# Stands in for ssh: `nsrsh HOST CMD...` runs CMD in the namespace HOST's address
# belongs to, with that namespace's own hostname (ranks with one hostname hang at their
# first barrier: MPI takes them for one host).
host=$1; shift
case "$host" in
{cases}
  *) echo "nsrsh: unknown host $host" >&2; exit 1 ;;
esac
exec ip netns exec "$ns" unshare --uts sh -c "hostname $ns; $*"
"""


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


@pytest.fixture
def two_hosts(lab: Path) -> Iterator[tuple[list[str], str]]:
    """Two network namespaces on a bridge, each a host with its own address and
    hostname, and `mpiexec` options that reach them through a launcher script instead of
    ssh. Everything made is removed afterwards, also when the test fails."""
    if shutil.which("ip") is None or shutil.which("unshare") is None:
        pytest.skip("needs `ip` (iproute2) and `unshare` (util-linux)")
    tag = f"{os.getpid() % 100000}"
    bridge, names = f"fslbr{tag}", [f"fslh{tag}a", f"fslh{tag}b"]
    addrs = ["10.213.0.11", "10.213.0.12"]
    made: list[tuple[str, ...]] = []
    try:
        try:
            _ip("link", "add", bridge, "type", "bridge")
        except subprocess.CalledProcessError as e:
            pytest.skip(f"cannot make a bridge here: {e.stderr.strip()}")
        made.append(("link", "del", bridge))
        _ip("addr", "add", "10.213.0.1/24", "dev", bridge)
        _ip("link", "set", bridge, "up")
        for i, (ns, addr) in enumerate(zip(names, addrs, strict=True)):
            _ip("netns", "add", ns)
            made.append(("netns", "del", ns))
            veth = f"fslv{tag}{i}"
            _ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
            made.append(("link", "del", veth))
            _ip("link", "set", veth, "master", bridge, "up")
            _ip("-n", ns, "addr", "add", f"{addr}/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
            _ip("-n", ns, "link", "set", "lo", "up")
        script = lab / "nsrsh"
        cases = "\n".join(f"  {a}) ns={n} ;;" for a, n in zip(addrs, names, strict=True))
        script.write_text(NSRSH.format(cases=cases))
        script.chmod(0o755)
        options = (
            f"--prtemca plm_ssh_agent {script} --prtemca oob_tcp_if_include 10.213.0.0/24 "
            "--mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include 10.213.0.0/24"
        )
        yield [f"{a}:1" for a in addrs], options
    finally:
        for cmd in reversed(made):
            subprocess.run(["ip", *cmd], check=False, capture_output=True)


@pytest.mark.root
@pytest.mark.engine
def test_two_network_namespaces_run_as_two_hosts(
    lab: Path, two_hosts: tuple[list[str], str]
) -> None:
    hosts, options = two_hosts
    study = lab / "s.toml"
    study.write_text(NS_STUDY.format(root=lab))
    (lab / "shared").mkdir()
    done = fslab("run", str(study), "--results", "r.db", "--hosts", ",".join(hosts), cwd=lab,
                 timeout=600, env=fslab_env(FSLAB_MPIEXEC_ARGS=options))  # fmt: skip
    assert done.returncode == 0, done.stderr
    con = sqlite3.connect(lab / "r.db")
    try:
        # The last run is the one that counted: a run other work disturbed (a CI
        # neighbour) is measured again, and its ranks stay stored beside the new ones.
        (run,) = con.execute("SELECT MAX(id) FROM run").fetchone()
        ranks = con.execute(
            "SELECT rank, host, ios FROM rank WHERE run_id = ? ORDER BY rank", (run,)
        ).fetchall()
        total = con.execute("SELECT ios FROM metric WHERE run_id = ?", (run,)).fetchone()[0]
        hosts_seen = con.execute(
            "SELECT value FROM run_metric WHERE name = 'ranks.hosts' AND run_id = ?", (run,)
        ).fetchone()[0]
    finally:
        con.close()
    tag = os.getpid() % 100000
    assert [r[1] for r in ranks] == [f"fslh{tag}a", f"fslh{tag}b"], "one rank per namespace"
    assert hosts_seen == 2 and total == sum(r[2] for r in ranks) > 0
    assert list((lab / "shared").iterdir()) == []


KILL_STUDY = """
name = "a rank dies"

[[target]]
name = "ext4"
fs = "ext4"
loop = { size = "256MiB" }

[[workload]]
rw = "randread"
bs = "4k"
file_size = "16MiB"
runtime = "30s"
steady_state = false
ioengine = "sync"
"""


def _rank_pids(rank: int) -> list[int]:
    """The `python -m fslab.mpi_rank` processes of MPI rank `rank`."""
    out = []
    found = subprocess.run(["pgrep", "-f", "fslab.mpi_rank"], capture_output=True, text=True)
    for pid in found.stdout.split():
        try:
            env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"OMPI_COMM_WORLD_RANK={rank}".encode() in env:
            out.append(int(pid))
    return out


@pytest.mark.root
@pytest.mark.engine
def test_a_killed_rank_fails_the_run_and_everything_is_undone(lab: Path) -> None:
    study = lab / "s.toml"
    study.write_text(KILL_STUDY)
    proc = start_fslab("run", str(study), "--results", "r.db", "--hosts", "localhost:2",
                       cwd=lab)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not any("/rank1/" in m for m in mounts_under(lab)):
            assert proc.poll() is None and time.monotonic() < deadline, "rank 1 never mounted"
            time.sleep(0.2)
        time.sleep(2)  # into the measured job
        victims = _rank_pids(1)
        assert victims, "rank 1 is running"
        for pid in victims:
            os.kill(pid, signal.SIGKILL)
        _, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode not in (0, None), err
    assert "cleaning up on this host" in err and "0 left" in err, err
    assert not mounts_under(lab) and not loops_under(lab)
    assert sorted(p.name for p in lab.iterdir()) == ["r.db", "s.toml"]
    con = sqlite3.connect(lab / "r.db")
    try:
        runs = con.execute("SELECT status, error FROM run").fetchall()
        open_entries = con.execute(
            "SELECT count(*) FROM journal WHERE state != 'undone'"
        ).fetchone()[0]
    finally:
        con.close()
    assert [r[0] for r in runs] == ["failed"] and "a rank ended" in runs[0][1]
    assert open_entries == 0
    assert not _rank_pids(0) and not _rank_pids(1), "no rank outlived the run"


def _guards() -> list[int]:
    found = subprocess.run(["pgrep", "-f", "fslab.guard"], capture_output=True, text=True)
    return [int(p) for p in found.stdout.split()]


def _until_nothing_is_left(lab: Path, within_s: float) -> float:
    """Seconds until no rank, engine, guard, mount or loop device of the run is left."""
    start = time.monotonic()
    while True:
        left = [*_rank_pids(0), *_rank_pids(1), *_guards()]
        if not left and not mounts_under(lab) and not loops_under(lab):
            return time.monotonic() - start
        assert time.monotonic() - start < within_s, (left, mounts_under(lab), loops_under(lab))
        time.sleep(0.2)


def _start_and_wait_for_rank1(lab: Path) -> subprocess.Popen[str]:
    study = lab / "s.toml"
    study.write_text(KILL_STUDY)
    proc = start_fslab("run", str(study), "--results", "r.db", "--hosts", "localhost:2",
                       cwd=lab)  # fmt: skip
    deadline = time.monotonic() + 120
    while not any("/rank1/" in m for m in mounts_under(lab)):
        assert proc.poll() is None and time.monotonic() < deadline, "rank 1 never mounted"
        time.sleep(0.2)
    time.sleep(2)  # into the measured job
    return proc


@pytest.mark.root
@pytest.mark.engine
def test_a_killed_launcher_takes_every_rank_and_its_target_with_it(lab: Path) -> None:
    """Audit N4: SIGKILL of `fslab run --hosts` left the MPI launcher, both ranks, both
    engines and both mounts running for the rest of the study."""
    proc = _start_and_wait_for_rank1(lab)
    try:
        proc.kill()
        proc.communicate(timeout=60)
        _until_nothing_is_left(lab, within_s=15)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert sorted(p.name for p in lab.iterdir()) == ["r.db", "s.toml"]
    con = sqlite3.connect(lab / "r.db")
    try:
        left = con.execute("SELECT count(*) FROM journal WHERE state != 'undone'").fetchone()[0]
    finally:
        con.close()
    assert left == 0
    after = fslab("cleanup", "--results", "r.db", cwd=lab)
    assert after.returncode == 0, after.stderr
    assert "0 side effects undone, 0 left" in after.stderr, "the guards left nothing to undo"
    # Rank 0 marks its run itself when its SIGTERM comes in time, else cleanup does.
    con = sqlite3.connect(lab / "r.db")
    try:
        runs = con.execute("SELECT status FROM run").fetchall()
    finally:
        con.close()
    assert runs == [("interrupted",)]


@pytest.mark.root
@pytest.mark.engine
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_to_the_launcher_alone_stops_every_rank(lab: Path, sig: int) -> None:
    """Audit N4: a SIGINT sent to the parent alone (not its group) was ignored and the
    study ran on."""
    proc = _start_and_wait_for_rank1(lab)
    try:
        os.kill(proc.pid, sig)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "cleaning up on this host" in err and "0 left" in err, err
    _until_nothing_is_left(lab, within_s=15)
    assert sorted(p.name for p in lab.iterdir()) == ["r.db", "s.toml"]
    con = sqlite3.connect(lab / "r.db")
    try:
        runs = con.execute("SELECT status FROM run").fetchall()
    finally:
        con.close()
    assert runs == [("interrupted",)]


def test_a_hosts_table_names_each_host_with_its_ranks(tmp_path: Path) -> None:
    study = tmp_path / "s.toml"
    study.write_text(
        f'name = "x"\n[hosts]\nlocalhost = 0\n[[target]]\nname = "d"\ndir = "{tmp_path}"\n'
        '[[workload]]\nrw = "read"\n'
    )
    done = fslab("plan", str(study), cwd=tmp_path)
    assert done.returncode == 2
    assert "s.toml:2: hosts: `localhost = 0`: the ranks on a host are 1 to 1024" in done.stderr


@pytest.mark.engine
def test_a_summed_series_is_judged_by_the_engines_rule(tmp_path: Path) -> None:
    def point(i: int, reads: int) -> SeriesPoint:
        op = {"ios": reads, "bytes": reads * 4096, "iops": reads, "bw_bytes": reads * 4096,
              "lat_mean_ns": 1000, "lat_p99_ns": 2000}  # fmt: skip
        return SeriesPoint.model_validate({"t_s": i + 1, "dur_s": 1, "ramp": False, "read": op})

    job = {"filename": str(tmp_path / "f"), "size": "1m", "runtime": "20s",
           "steady_state": True, "steady_window": 3}  # fmt: skip
    flat = judge_steady(job, [point(i, r) for i, r in enumerate([5000, 1000, 1010, 990, 1000])])
    assert flat.steady_state.attained and not flat.warnings
    assert (flat.steady_state.window_start_s, flat.steady_state.window_end_s) == (1.0, 4.0)
    # the results are not trimmed: they span the whole series
    assert (flat.steady_state.results_start_s, flat.steady_state.results_end_s) == (0.0, 5.0)
    rising = judge_steady(job, [point(i, 1000 * (i + 1)) for i in range(8)])
    assert not rising.steady_state.attained
    (w,) = rising.warnings
    assert w.kind == "not_steady" and "the results cover the whole run" in w.message
    with pytest.raises(EngineError, match="`steady_state`: is not set"):
        judge_steady({"filename": "/x", "size": "1m", "runtime": "5s"}, [point(0, 1)])


STEADY_STUDY = """
name = "steady on the sum"

[[target]]
name = "shared"
dir = "{root}/shared"

[[workload]]
rw = "randread"
bs = "4k"
file_size = "8MiB"
runtime = "4s"
ioengine = "sync"
direct = false
steady_state = true
steady_window = 3

[hosts]
localhost = 2
"""


@pytest.mark.root
@pytest.mark.engine
def test_a_study_with_a_hosts_table_runs_on_them_judged_steady_on_the_sum(lab: Path) -> None:
    (lab / "shared").mkdir()
    study = lab / "s.toml"
    study.write_text(STEADY_STUDY.format(root=lab))
    done = fslab("run", str(study), "--results", "r.db", cwd=lab, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "2 ranks on 1 host(s)" in done.stderr
    con = sqlite3.connect(lab / "r.db")
    try:
        (run,) = con.execute("SELECT MAX(id) FROM run").fetchone()
        assert con.execute("SELECT count(*) FROM rank WHERE run_id = ?", (run,)).fetchone()[0] == 2
        (doc,) = con.execute("SELECT engine_json FROM run WHERE id = ?", (run,)).fetchone()
        ranks = [
            json.loads(r)
            for (r,) in con.execute("SELECT report FROM rank WHERE run_id = ?", (run,))
        ]
    finally:
        con.close()
    agg = Report.model_validate(json.loads(doc))
    # each rank ran the whole runtime (the stonewall) without judging itself ...
    assert all(r["steady_state"] is None and r["runtime_s"] >= 3.9 for r in ranks)
    # ... and the sum was judged by the study's keys: the results are the whole span
    steady = agg.steady_state
    assert steady is not None and steady.limits.window == 3 and steady.rounds >= 3
    assert agg.runtime_s >= 3.9
    unsteady = [w for w in agg.warnings if w.kind == "not_steady"]
    assert steady.attained == (not unsteady), agg.warnings
    assert all(w.message.startswith("ranks summed: ") for w in unsteady)
