"""`fslab plan` and `fslab run` with `--where`: a slice of a study (issue #33: a study
too long to run whole is run a piece at a time, the rest left for later)."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path

from conftest import fslab

STUDY = """
name = "slices"
repeat = 1

[[target]]
name = "a"
dir = "{root}/a"

[[target]]
name = "b"
dir = "{root}/b"

[[workload]]
name = "reads"
rw = "randread"
bs = ["4KiB", "64KiB"]
file_size = "4MiB"
runtime = "0.2s"
direct = false
ioengine = "sync"

[[workload]]
name = "writes"
rw = "randwrite"
file_size = "4MiB"
runtime = "0.2s"
direct = false
ioengine = "sync"
"""


def _study(tmp_path: Path) -> Path:
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
    path = tmp_path / "s.toml"
    path.write_text(STUDY.format(root=tmp_path))
    return path


def _plan(tmp_path: Path, *where: str) -> dict[str, object]:
    args = [x for w in where for x in ("--where", w)]
    done = fslab("plan", "s.toml", "--json", *args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    doc: dict[str, object] = json.loads(done.stdout)
    return doc


def test_plan_shows_the_slice_a_where_keeps(tmp_path: Path) -> None:
    _study(tmp_path)
    assert len(_plan(tmp_path)["points"]) == 6  # type: ignore[arg-type]
    doc = _plan(tmp_path, "workload=reads", "bs=64k")
    points = doc["points"]
    assert isinstance(points, list)
    assert [(p["target"], p["params"]["bs"]) for p in points] == [("a", 65536), ("b", 65536)]
    assert doc["where"] == ["workload=reads", "bs=64k"]
    # A key repeated is "any of these"; target picks targets.
    doc = _plan(tmp_path, "target=b", "workload=reads", "workload=writes")
    assert {p["target"] for p in doc["points"]} == {"b"}  # type: ignore[union-attr]
    assert len(doc["points"]) == 3  # type: ignore[arg-type]
    shown = fslab("plan", "s.toml", "--where", "target=a", cwd=tmp_path)
    assert "a slice of the study: the points `--where target=a` keeps" in shown.stdout


def test_a_where_that_keeps_nothing_or_names_no_key_is_refused(tmp_path: Path) -> None:
    _study(tmp_path)
    for args, said in [
        (["--where", "bz=4k"], "unknown --where key `bz`"),
        (["--where", "bs=8k"], "no point matches `bs=8k`"),
        (["--where", "nonsense"], "is not a filter"),
    ]:
        for cmd in ("plan", "run"):
            done = fslab(cmd, "s.toml", "--results", "r.db", *args, cwd=tmp_path)
            assert done.returncode == 2, (cmd, args, done.stderr)
            assert said in done.stderr, done.stderr
    unknown = fslab("plan", "s.toml", "--where", "bz=4k", cwd=tmp_path)
    assert "did you mean `bs`?" in unknown.stderr
    assert not (tmp_path / "r.db").exists()


def test_run_runs_a_slice_and_the_rest_later(tmp_path: Path) -> None:
    _study(tmp_path)
    first = fslab("run", "s.toml", "--results", "r.db", "--where", "workload=writes", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "2 runs ok, 0 failed, 0 already done" in first.stderr
    rest = fslab("run", "s.toml", "--results", "r.db", cwd=tmp_path)
    assert rest.returncode == 0, rest.stderr
    assert "4 runs ok, 0 failed, 2 already done" in rest.stderr
    con = sqlite3.connect(tmp_path / "r.db")
    try:
        n = con.execute("SELECT count(*) FROM run WHERE status = 'ok'").fetchone()[0]
    finally:
        con.close()
    assert n == 6


def test_a_slice_checks_and_makes_only_the_targets_it_runs(tmp_path: Path) -> None:
    """A target left out of the slice is neither checked (its problem does not stop the
    slice), nor shown in the plan's side effects, nor made."""
    path = _study(tmp_path)
    gone = f'[[target]]\nname = "gone"\ndir = "{tmp_path}/gone"\n\n'
    path.write_text(path.read_text().replace("[[workload]]", gone + "[[workload]]", 1))
    whole = fslab("plan", "s.toml", cwd=tmp_path)
    assert whole.returncode == 2 and "(gone).dir" in whole.stderr, whole.stderr
    doc = _plan(tmp_path, "target=a", "target=b")
    assert set(doc["side_effects"]) == {"a", "b"}, doc["side_effects"]  # type: ignore[arg-type]
    done = fslab("run", "s.toml", "--results", "r.db", "--where", "target=a", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "runs ok, 0 failed" in done.stderr, done.stderr
    with contextlib.closing(sqlite3.connect(tmp_path / "r.db")) as con:
        ran = {
            t
            for (t,) in con.execute(
                "SELECT DISTINCT target FROM point p JOIN run r ON r.point_id = p.id"
            )
        }
    assert ran == {"a"}, ran
    assert not (tmp_path / "gone").exists()
    assert not list((tmp_path / "b").iterdir()), "target b was not made"
    refused = fslab("plan", "s.toml", "--where", "target=gone", cwd=tmp_path)
    assert refused.returncode == 2 and "(gone).dir" in refused.stderr, refused.stderr
