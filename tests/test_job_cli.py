"""`fslab job`: one engine job from the command line, run as a user would run it."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import fslab_command, fslab_env, run_fslab, write_job

from fslab.units import format_bytes, format_count, format_ns, format_rate

NULL_JOB = {"ioengine": "null", "runtime": "300ms"}

pytestmark = pytest.mark.engine  # they run the real engine: what it measures and says


def test_null_job_prints_a_summary(tmp_path: Path) -> None:
    done = run_fslab("job", write_job(tmp_path / "null.toml", NULL_JOB))
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    head, read, cpu, *rest = done.stdout.splitlines()
    assert head.startswith("job: read bs=4KiB iodepth=1 numjobs=1 ioengine=null direct=0 ")
    assert re.search(r"runtime=0\.3\d\ds \[ok\]$", head), head
    assert re.fullmatch(
        r"  read:  IOPS=[\d.]+[kMG]? BW=[\d.]+MiB/s \([\d.]+MB/s\) ios=\d+ "
        r"lat mean=\S+ p50=\d+ns p99=\d+ns p99\.9=\S+ max=\S+",
        read,
    ), read
    assert re.fullmatch(r"  cpu:   usr=\S+s sys=\S+s \([\d.]+% of a core\) ctx=\d+/\d+", cpu), cpu
    # 300 ms is short: the engine says so, with advice.
    assert "warning: short_run: the measured part of the job took" in rest[0]
    assert rest[1].startswith("  hint: ")


def test_sync_randread_on_a_tmpfs_file(tmp_path: Path, shm_file: Path) -> None:
    job = {
        "filename": str(shm_file),
        "size": "16m",
        "rw": "randread",
        "bs": "8k",
        "ioengine": "sync",
        "runtime": "300ms",
    }
    done = run_fslab("job", write_job(tmp_path / "job.toml", job))
    assert done.returncode == 0, done.stderr
    head, read = done.stdout.splitlines()[:2]
    assert "randread bs=8KiB iodepth=1 numjobs=1 ioengine=sync direct=0" in head
    assert read.startswith("  read:  IOPS=")
    assert "write:" not in done.stdout
    assert shm_file.stat().st_size == 16 << 20


def test_io_uring_randwrite_direct_on_the_repositorys_disk(tmp_path: Path, disk_dir: Path) -> None:
    job = {
        "filename": str(disk_dir / "job.dat"),
        "size": "8m",
        "rw": "randwrite",
        "bs": "4k",
        "ioengine": "io_uring",
        "iodepth": 4,
        "direct": True,
        "runtime": "300ms",
    }
    done = run_fslab("job", "--json", write_job(tmp_path / "job.json", job))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["job"]["direct"] is True and report["job"]["ioengine"] == "io_uring"
    assert report["target"]["kind"] == "file"
    (write,) = report["results"]
    assert write["op"] == "write" and write["ios"] > 0
    assert write["bytes"] == write["ios"] * 4096


def test_json_prints_the_engines_document(tmp_path: Path, shm_file: Path) -> None:
    job = {
        "filename": str(shm_file),
        "size": "8m",
        "rw": "randrw",
        "rwmixread": 70,
        "bs": "16k",
        "ioengine": "sync",
        "runtime": "300ms",
    }
    done = run_fslab("job", "--json", write_job(tmp_path / "job.json", job))
    assert done.returncode == 0, done.stderr
    # One JSON document on one line, as the engine printed it.
    assert done.stdout.count("\n") == 1 and done.stdout.endswith("}\n")
    report: dict[str, Any] = json.loads(done.stdout)
    assert report["schema_version"] == 1
    assert report["status"] == "ok" and report["interrupted"] is False
    assert [r["op"] for r in report["results"]] == ["read", "write"]
    for result in report["results"]:
        assert result["ios"] > 0
        assert result["bytes"] == result["ios"] * report["job"]["bs"] == result["ios"] * 16384


@pytest.mark.parametrize("as_json", [False, True], ids=["summary", "json"])
@pytest.mark.parametrize(
    ("job", "says"),
    [
        pytest.param(
            {"rww": "read", "ioengine": "null"},
            ["error: ", "`rww`: unknown key", "hint: did you mean `rw`?"],
            id="unknown-key",
        ),
        pytest.param(
            {"iodepth": 0, "ioengine": "null"},
            ["error: ", "`iodepth`: 0 is out of range"],
            id="iodepth-0",
        ),
        pytest.param(
            {"direct": True, "bs": 1000, "filename": "{tmp}/job.dat"},
            ["error: ", "`bs`: 1000 is not a multiple of 512", "hint: "],
            id="direct-bs-1000",
        ),
        pytest.param(
            {"rw": "read"},
            ["error: ", "missing target", "hint: add `filename"],
            id="no-target",
        ),
    ],
)
def test_bad_job_exits_2_with_the_engines_message(
    tmp_path: Path, job: dict[str, Any], says: list[str], as_json: bool
) -> None:
    job = {k: v.format(tmp=tmp_path) if isinstance(v, str) else v for k, v in job.items()}
    path = write_job(tmp_path / "bad.toml", job)
    done = run_fslab("job", *(["--json"] if as_json else []), path)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith(f"error: {path}: ")
    for text in says:
        assert text in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "job.dat").exists()


def _app_job(tmp_path: Path, kind: str, **keys: Any) -> dict[str, Any]:
    """A small, short application-model job in a folder of `tmp_path`. Buffered (O_DIRECT
    is not everywhere), with a cache smaller than the data so that pages are read."""
    folder = tmp_path / kind
    folder.mkdir()
    return {
        "name": kind[:2],
        "kind": kind,
        "directory": str(folder),
        "runtime": "1s",
        "data_size": "8MiB",
        "log_size": "1MiB",
        "direct": False,
        **keys,
    }


def _line(stdout: str, label: str) -> str:
    """The one summary line labelled `label:`, its label and padding removed."""
    found = [ln for ln in stdout.splitlines() if ln.startswith(f"  {label}:")]
    assert len(found) == 1, stdout
    return found[0].removeprefix(f"  {label}:").lstrip()


MAILSTORE = {"ioengine": "sync", "numjobs": 2, "cache_size": "1MiB"}


def test_mailstore_job_summary_fits_the_model_and_passes_by_default(tmp_path: Path) -> None:
    job = _app_job(tmp_path, "mailstore", **MAILSTORE)
    done = run_fslab("job", write_job(tmp_path / "mailstore.toml", job))
    assert done.returncode == 0, done.stderr
    head = done.stdout.splitlines()[0]
    assert head.startswith(
        "ma: mailstore numjobs=2 data=8MiB cache=1MiB page=32KiB ioengine=sync direct=0 "
    ), head
    assert re.search(r" runtime=\S+s \[ok\]$", head), head
    assert " bs=" not in head and "iodepth" not in head and " read " not in head
    for op in ("data_read", "data_write", "log_write", "maintenance_read"):
        assert re.match(r"IOPS=\S+ BW=\S+ \(\S+\) ios=\d+ lat mean=", _line(done.stdout, op))
    # Transactions have a line of their own (no bandwidth: they move no bytes).
    assert re.fullmatch(r"[\d.]+[kM]?/s ios=\d+ lat mean=\S+ p50=.*", _line(done.stdout, "txn"))
    assert re.fullmatch(
        r"\d+ \(sync \d+, lazy \d+\), \d+ flushes, [\d.]+ records per flush, "
        r"sync lat mean=\S+ p99=\S+",
        _line(done.stdout, "commits"),
    )
    assert re.fullmatch(
        r"hit ratio [\d.]+% \(\d+ of \d+ page reads, 32 pages\)", _line(done.stdout, "cache")
    )
    assert re.fullmatch(r"\d+, max \d+ pages, peak \S+ IOPS", _line(done.stdout, "checkpoints"))
    assert re.fullmatch(
        r"PASS \(db read lat mean \S+ < 20\.0ms, log write lat mean \S+ < 10\.0ms\)",
        _line(done.stdout, "verdict"),
    )


def test_mailstore_verdict_fails_naming_the_check_over_its_threshold(tmp_path: Path) -> None:
    job = _app_job(tmp_path, "mailstore", **MAILSTORE, read_lat_ms_max=0.000001)
    done = run_fslab("job", write_job(tmp_path / "mailstore.toml", job))
    # A failed verdict is an answer, not a failed job.
    assert done.returncode == 0, done.stderr
    verdict = _line(done.stdout, "verdict")
    assert re.fullmatch(
        r"FAIL: db read lat mean \S+ >= 1ns \(passed: log write lat mean \S+ < 10\.0ms\)",
        verdict,
    ), verdict
    assert "PASS" not in done.stdout


def test_oltp_job_summary_says_oltp_not_a_block_size(tmp_path: Path) -> None:
    done = run_fslab("job", write_job(tmp_path / "oltp.toml", _app_job(tmp_path, "oltp")))
    assert done.returncode == 0, done.stderr
    head = done.stdout.splitlines()[0]
    assert head.startswith("ol: oltp numjobs=1 data=8MiB cache=0B page=8KiB ioengine=sync "), head
    assert " bs=" not in head and "iodepth" not in head
    assert _line(done.stdout, "cache") == "none (every page read is an I/O)"
    assert re.match(r"\d+ \(sync \d+\), ", _line(done.stdout, "commits"))
    assert "verdict:" not in done.stdout and "lazy" not in done.stdout


def test_files_job_summary_names_its_op(tmp_path: Path) -> None:
    tree, copy = tmp_path / "tree", tmp_path / "copy"
    create = {"name": "set", "kind": "files", "op": "create", "directory": str(tree)}
    create |= {"nr_files": 40, "file_size": "4k"}
    done = run_fslab("job", write_job(tmp_path / "create.toml", create))
    assert done.returncode == 0, done.stderr
    head, line = done.stdout.splitlines()[:2]
    assert re.fullmatch(
        r"set: files op=create nr_files=40 file_size=4KiB numjobs=1 runtime=\S+s \[ok\]", head
    ), head
    assert line.startswith("  create: IOPS=") and " ios=40 " in line
    job = {"name": "cp", "kind": "files", "op": "copy", "directory": str(tree), "dest": str(copy)}
    done = run_fslab("job", write_job(tmp_path / "copy.toml", {**job, "numjobs": 2}))
    assert done.returncode == 0, done.stderr
    head, line = done.stdout.splitlines()[:2]
    assert re.fullmatch(r"cp: files op=copy numjobs=2 runtime=\S+s \[ok\]", head), head
    assert line.startswith("  copy:  IOPS=") and " ios=40 " in line
    assert len(list(copy.rglob("f*"))) == 40


def test_job_on_stdin(tmp_path: Path) -> None:
    done = run_fslab("job", "--json", "-", input='ioengine = "null"\nruntime = "100ms"\n')
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["job"]["runtime"] == 0.1


def _start_and_interrupt(tmp_path: Path, *args: str) -> tuple[int, str, str]:
    """Starts `fslab job --progress` on a 30 s null job, waits for its first progress
    line (the engine is running), then sends one SIGINT to `fslab`."""
    job = write_job(
        tmp_path / "long.toml", {"ioengine": "null", "runtime": "30s", "interval": "200ms"}
    )
    proc = subprocess.Popen(
        [*fslab_command(), "job", "--progress", *args, str(job)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=fslab_env(),
    )
    with proc:
        assert proc.stderr is not None
        first = proc.stderr.readline()
        assert first.startswith("["), first
        time.sleep(0.5)
        started = time.monotonic()
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=20)
        assert time.monotonic() - started < 5, "the engine did not stop promptly"
        return proc.returncode, stdout, first + stderr


def test_interrupted_run_exits_130_with_the_json_of_what_ran(tmp_path: Path) -> None:
    code, stdout, stderr = _start_and_interrupt(tmp_path, "--json")
    assert code == 130, stderr
    report = json.loads(stdout)
    assert report["interrupted"] is True and report["status"] == "interrupted"
    assert 0.5 < report["runtime_s"] < 10
    assert report["results"][0]["ios"] > 0
    assert "interrupted" in stderr


def test_interrupted_run_exits_130_with_the_summary_of_what_ran(tmp_path: Path) -> None:
    code, stdout, stderr = _start_and_interrupt(tmp_path)
    assert code == 130, stderr
    head, read = stdout.splitlines()[:2]
    assert head.startswith("job: read ") and head.endswith("[interrupted]")
    assert read.startswith("  read:  IOPS=")


def test_missing_engine_is_an_error_with_a_hint(tmp_path: Path) -> None:
    job = write_job(tmp_path / "null.toml", NULL_JOB)
    missing = tmp_path / "nowhere" / "fslab-engine"
    done = run_fslab("job", job, env=fslab_env(FSLAB_ENGINE=str(missing)))
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr == (
        f"error: $FSLAB_ENGINE is `{missing}`, which is not an executable file\n"
        "\n"
        "hint: point $FSLAB_ENGINE at a built `fslab-engine`, or unset it\n"
    )


@pytest.mark.parametrize(("no_color", "coloured"), [("1", False), (None, True)])
def test_errors_are_coloured_unless_no_color(
    tmp_path: Path, no_color: str | None, coloured: bool
) -> None:
    env = fslab_env(FSLAB_ENGINE=str(tmp_path / "nowhere"), FORCE_COLOR="1")
    if no_color is None:
        del env["NO_COLOR"]
    done = run_fslab("job", write_job(tmp_path / "null.toml", NULL_JOB), env=env)
    assert done.returncode == 1
    assert ("\x1b[" in done.stderr) is coloured


def test_help_lists_the_exit_statuses() -> None:
    done = run_fslab("--help")
    assert done.returncode == 0
    for line in ("0    ok", "2    usage", "3    refused", "130  interrupted"):
        assert line in done.stdout
    assert "job" in done.stdout


def test_version() -> None:
    from fslab import __version__

    done = run_fslab("--version")
    assert done.returncode == 0
    first, engine = done.stdout.splitlines()
    assert first == f"fslab {__version__}"
    # the engine that would run, with its path: the pair a result depends on
    assert engine.startswith("fslab-engine ") and " at /" in engine, engine


@pytest.mark.parametrize(
    ("ns", "text"),
    [
        (31, "31ns"),
        (999.4, "999ns"),
        (999.6, "1.00us"),
        (1373, "1.37us"),
        (10607, "10.6us"),
        (2_357_247, "2.36ms"),
        (1.5e9, "1.50s"),
    ],
)
def test_latencies_read_in_the_unit_that_fits(ns: float, text: str) -> None:
    assert format_ns(ns) == text


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (512, "512B"),
        (1000, "1000B"),
        (4096, "4KiB"),
        (4097, "4097B"),
        (64 << 20, "64MiB"),
        (3 << 29, "1.50GiB"),
    ],
)
def test_sizes_are_exact_where_it_matters(n: int, text: str) -> None:
    assert format_bytes(n) == text


def test_rates_read_like_fio() -> None:
    assert format_rate(2560 * 2**20) == "2560MiB/s (2684MB/s)"
    assert format_count(654_997) == "655k"
