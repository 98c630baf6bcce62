"""A plain `pip install .` (no extras) in a fresh virtual environment runs and compares
block, fio and files points: a runtime dependency that only an extra brings fails here
(issue #34: a fio point needed `hdrhistogram`, then only in the `dev` and `mpi` extras,
so a plain install could not store one)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

STUDY = """
name = "plain install"
repeat = 2

[[target]]
name = "a"
dir = "{a}"

[[target]]
name = "b"
dir = "{b}"

[[workload]]
name = "reads"
rw = "randread"
bs = "4KiB"
file_size = "16MiB"
runtime = "1s"
direct = false

[[workload]]
name = "job-file"
kind = "fio"
job_file = "j.fio"

[[workload]]
name = "copies"
kind = "files"
ops = ["copy", "scan"]
nr_files = 20
file_size = "16KiB"
"""

JOB_FILE = """\\
[j]
rw=randwrite
bs=4k
size=8m
time_based
runtime=1
"""


@pytest.mark.engine
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_plain_install_runs_and_compares_block_fio_and_files_points(
    tmp_path: Path, engine: Path
) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    pip = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
         "--disable-pip-version-check", str(REPO)],
        capture_output=True, text=True, timeout=840, check=False,
    )  # fmt: skip
    assert pip.returncode == 0, pip.stderr[-3000:]
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
    (tmp_path / "j.fio").write_text(JOB_FILE)
    (tmp_path / "s.toml").write_text(STUDY.format(a=tmp_path / "a", b=tmp_path / "b"))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env |= {"FSLAB_ENGINE": str(engine), "NO_COLOR": "1"}
    fslab = str(venv / "bin" / "fslab")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([fslab, *args], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=300, check=False)  # fmt: skip

    done = run("run", "s.toml", "--results", "r.db")
    assert done.returncode == 0, done.stderr[-3000:]
    shown = run("compare", "--results", "r.db", "--format", "json")
    assert shown.returncode == 0, shown.stderr[-3000:]
    groups = json.loads(shown.stdout)["groups"]
    assert {g["kind"] for g in groups} == {"block", "fio", "files"}
    assert all(sum(g["runs"].values()) == 4 for g in groups), [g["runs"] for g in groups]
    # the package came from the venv, not from this checkout
    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import fslab; print(fslab.__file__)"],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert str(venv) in where.stdout
