"""Study files: parsing, every problem reported at once, expansion into points."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import fslab

from fslab.engine import find_engine
from fslab.kinds.files import FILES, source
from fslab.study.load import StudyError, load_study, parse_study
from fslab.study.plan import expand
from fslab.targets.system import System

EXAMPLES = sorted((Path(__file__).parent.parent / "examples").glob("*.toml"))

GOOD = """
name = "tiny"
repeat = 2

[[target]]
name = "ext4"
fs = "ext4"
loop = { size = "1GiB" }

[[target]]
name = "b1"
fs = "btrfs"
loop = { size = "1GiB", count = 2 }
profile = "raid1"

[[workload]]
rw = ["randread", "randwrite"]
bs = ["4k", "64KiB"]
iodepth = 4
file_size = "64m"
runtime = "2s"
"""


def problems(text: str) -> list[str]:
    with pytest.raises(StudyError) as e:
        parse_study(text, "s.toml")
    return [f"{p.where}: {p.what}" + (f" | {p.hint}" if p.hint else "") for p in e.value.problems]


def test_sweep_axes_make_the_cartesian_product() -> None:
    plan = expand(parse_study(GOOD, "s.toml"))
    assert len(plan.points) == 2 * 2 * 2  # targets x rw x bs
    assert len(plan.runs()) == 16
    p = plan.points[0]
    assert p.params["bs"] == 4096 and p.params["file_size"] == 64 << 20
    assert p.params["runtime"] == 2.0
    [job] = p.engine_jobs(Path("/mnt/x"))
    assert job["size"] == 64 << 20 and job["filename"] == "/mnt/x/fslab.dat"
    assert "file_size" not in job and job["iodepth"] == 4


def test_repetitions_are_interleaved() -> None:
    plan = expand(parse_study(GOOD, "s.toml"))
    reps = [rep for rep, _ in plan.runs()]
    assert reps[: len(plan.points)] == [0] * len(plan.points)


def test_a_round_runs_each_questions_targets_back_to_back() -> None:
    """The pairs a blocked design compares are a target and its question's baseline: they
    run together, the questions and the targets within each in a fresh order per round."""
    targets = "".join(
        f'[[target]]\nname = "{fs}-{i}"\nfs = "{fs}"\nquestion = "{fs}"\n'
        f'loop = {{ size = "1GiB" }}\n\n'
        for fs in ("ext4", "xfs", "btrfs") for i in range(3)
    )  # fmt: skip
    text = (f'name = "q"\nrepeat = {{ min = 3, max = 5 }}\n\n{targets}'
            '[[workload]]\nrw = ["randread", "randwrite"]\nruntime = "5s"\n')  # fmt: skip
    plan = expand(parse_study(text, "q.toml"))
    orders = set()
    for rnd in range(6):
        order = plan.round_order(rnd, list(plan.points))
        assert sorted(p.id for p in order) == sorted(p.id for p in plan.points)
        for block in (order[:9], order[9:]):
            assert len({p.group_key for p in block}) == 1
            runs = [p.target.name.split("-")[0] for p in block]
            # Three runs of one question, then three of the next: never interleaved.
            assert [runs[i] for i in (0, 3, 6)] == runs[::3] and len(set(runs[::3])) == 3
            assert all(len(set(runs[i : i + 3])) == 1 for i in (0, 3, 6)), runs
        orders.add(tuple(p.target.name for p in order))
    assert len(orders) > 1, "a fresh order per round"


def test_point_ids_are_stable_and_distinct() -> None:
    a = expand(parse_study(GOOD, "s.toml"))
    b = expand(parse_study(GOOD.replace("repeat = 2", "repeat = 3"), "s.toml"))
    assert [p.id for p in a.points] == [p.id for p in b.points]
    assert len({p.id for p in a.points}) == len(a.points)
    c = expand(parse_study(GOOD.replace('"2s"', '"3s"'), "s.toml"))
    assert not {p.id for p in a.points} & {p.id for p in c.points}
    # which question a target answers is how it is compared, not what is measured:
    # naming one keeps the finished runs
    asked = GOOD.replace('[[target]]\nname = "ext4"', '[[target]]\nname = "ext4"\nquestion = "fs"')
    assert asked != GOOD
    d = expand(parse_study(asked, "s.toml"))
    assert [p.id for p in a.points] == [p.id for p in d.points]
    assert d.points[0].target.question == "fs"


def test_scale_shrinks_sizes_and_times_with_floors() -> None:
    plan = expand(parse_study(GOOD, "s.toml"), scale=0.1)
    p = plan.points[0]
    assert p.params["file_size"] == 16 << 20  # floor
    assert p.params["runtime"] == 1.0  # floor


def test_unknown_key_gives_line_and_suggestion() -> None:
    text = GOOD.replace('fs = "ext4"', 'fss = "ext4"')
    got = problems(text)
    assert any("s.toml:7: target[0] (ext4).fss: unknown key `fss` | did you mean `fs`?" in g
               for g in got), got  # fmt: skip


def test_every_problem_is_reported_at_once() -> None:
    text = (
        GOOD.replace('profile = "raid1"', 'profile = "raid7"')
        .replace('rw = ["randread"', 'rww = ["randread"')
        .replace('name = "ext4"', 'name = "ext 4"')
    )
    got = problems(text)
    assert len(got) >= 3, got
    joined = "\n".join(got)
    assert "raid7" in joined and "rww" in joined and "name" in joined


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (('profile = "raid1"', 'profile = "raid5"\n'), None),
        (("count = 2", "count = 1"), "needs at least 2 devices"),
        (('fs = "ext4"', 'fs = "ntfs4"'), "`ntfs4` is not allowed"),
        (
            ('fs = "ext4"\n', 'fs = "ext4"\ncluster_size = "64k"\nprofile = "raid1"\n'),
            "btrfs settings",
        ),
        (('name = "b1"', 'name = "ext4"'), "must be unique"),
        (('loop = { size = "1GiB" }', 'loop = { size = "lots" }'), "is not a size"),
        (('bs = ["4k", "64KiB"]', "bs = []"), "empty list"),
        (('fs = "ext4"\n', 'fs = "xfs"\ncluster_size = "64k"\n'), "xfs has no `cluster_size`"),
        (('fs = "ext4"\nloop = { size = "1GiB" }', 'fs = "ext4"\ndir = "/tmp"'), "used as it is"),
        (('fs = "ext4"\n', 'dir = "/tmp"\n'), "not loop and dir"),
    ],
)
def test_malformed_targets(change: tuple[str, str], expected: str | None) -> None:
    text = GOOD.replace(*change)
    if expected is None:
        parse_study(text, "s.toml")  # raid5 on 2 devices is fine
        return
    assert any(expected in g for g in problems(text)), problems(text)


def test_bad_toml_is_one_clear_problem() -> None:
    got = problems("name = \n")
    assert len(got) == 1 and "not valid TOML" in got[0]


def test_missing_study_file() -> None:
    with pytest.raises(StudyError, match="cannot read the study"):
        load_study(Path("/nonexistent/study.toml"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_examples_parse_and_expand(path: Path) -> None:
    study, _ = load_study(path)
    plan = expand(study, scale=0.02)
    assert plan.points


def test_plan_refuses_a_bad_study_and_creates_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(GOOD.replace('fs = "ext4"', 'fss = "ext4"'))
    results = tmp_path / "r.db"
    for cmd in ("plan", "run"):
        done = subprocess.run(
            [sys.executable, "-m", "fslab", cmd, str(bad), "--results", str(results)],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert done.returncode == 2, done.stderr
        assert "did you mean `fs`?" in done.stderr
        assert done.stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.toml"]


@pytest.mark.root
def test_plan_shows_points_estimate_and_side_effects(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root: provisioning loop targets does")
    study = tmp_path / "s.toml"
    study.write_text(GOOD)
    done = fslab("plan", str(study), "--json", "--results", str(tmp_path / "r.db"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["runs"] == 16 and len(doc["points"]) == 8 and doc["estimate_s"] > 0
    effects = "\n".join(doc["side_effects"]["b1"])
    assert "mkfs.btrfs" in effects and "-d raid1" in effects
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.toml"], "plan touches nothing"


@pytest.mark.root
@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_each_example_passes_fslab_plan(path: Path, tmp_path: Path) -> None:
    """`fslab plan` on every example, as a user would start it: the study's checks of
    this machine (file systems, btrfs profiles, fscrypt, PostgreSQL) pass, the plan has
    points and an estimate, and nothing is created."""
    if os.geteuid() != 0:
        pytest.skip("needs root: provisioning loop targets does")
    study, _ = load_study(path)
    system = System.probe()
    layered = [t.name for t in study.target if t.raid or t.lvm or t.encryption == "dm-crypt"]
    if layered and not (system.has_md and system.has_device_mapper):
        # tests/test_families.py checks that plan refuses it here, naming what is missing.
        pytest.skip(f"{path.name} needs md and device-mapper, which this kernel lacks")
    # PostgreSQL's user must pass through the work directory: not pytest's (0700) tree
    work = Path("/var/tmp") / f"fslab-plan-test-{os.getpid()}-{path.stem}"
    done = fslab(
        "plan", str(path), "--scale", "0.02", "--json", "--results", str(tmp_path / "r.db"),
        "--workdir", str(work), cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["points"] and doc["runs"] >= len(doc["points"]) and doc["estimate_s"] > 0
    assert list(tmp_path.iterdir()) == [] and not work.exists(), "plan touches nothing"


@pytest.mark.root
def test_a_test_file_that_does_not_fit_is_refused_by_plan(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root: provisioning loop targets does")
    study = tmp_path / "s.toml"
    study.write_text(GOOD.replace('file_size = "64m"', 'file_size = "1GiB"'))
    done = fslab("plan", str(study), cwd=tmp_path)
    assert done.returncode == 2
    assert "target `b1`" in done.stderr and "does not fit" in done.stderr


COPY_BETWEEN = """
name = "between"

[[target]]
name = "src"
fs = "ext4"

[[target]]
name = "a"
fs = "ext4"

[[target]]
name = "b"
fs = "xfs"

[[workload]]
kind = "files"
source = "src"
set = "custom"
nr_files = 1000
size_buckets = [["4k", 6], ["1m", 1]]
ops = ["copy", "scan", "delete"]

[[workload]]
rw = "randread"
targets = ["b"]
"""


def test_a_source_target_feeds_the_others_and_workloads_pick_targets() -> None:
    plan = expand(parse_study(COPY_BETWEEN, "s.toml"))
    where = [(p.target.name, p.kind) for p in plan.points]
    # The files workload runs on every target but its source; the block one on `b` only.
    assert where == [("a", "files"), ("b", "files"), ("b", "block")]
    files = plan.points[0]
    assert source(files) == "src" and files.params["size_buckets"] == [[4096, 6], [1 << 20, 1]]
    jobs = dict(FILES.file_jobs(files, Path("/t/a"), Path("/t/src")))
    assert jobs["create"]["directory"] == "/t/src/set"
    assert jobs["copy"]["directory"] == "/t/src/set" and jobs["copy"]["dest"] == "/t/a/copy"
    assert jobs["scan"]["directory"] == "/t/a/copy" and jobs["delete"]["directory"] == "/t/a/copy"
    assert jobs["create"]["size_buckets"] == [[4096, 6], [1 << 20, 1]]
    assert "source" not in jobs["create"] and "file_size" not in jobs["create"]


def test_size_buckets_sweep_and_scale_by_count() -> None:
    text = COPY_BETWEEN.replace(
        'size_buckets = [["4k", 6], ["1m", 1]]',
        'size_buckets = [[["4k", 1]], [["64k", 1], ["1m", 1]]]',
    )
    plan = expand(parse_study(text, "s.toml"), scale=0.1)
    buckets = [p.params["size_buckets"] for p in plan.points if p.kind == "files"]
    assert buckets == [[[4096, 1]], [[65536, 1], [1 << 20, 1]]] * 2
    assert {p.params["nr_files"] for p in plan.points if p.kind == "files"} == {100}


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ('source = "src"', 'source = "nope"', "workload[0].source: no target `nope`"),
        ('targets = ["b"]', 'targets = ["c"]', "workload[1].targets: no target `c`"),
        ('ops = ["copy", "scan", "delete"]', 'ops = ["scan", "copy"]', "first op must be `copy`"),
        ('["1m", 1]]', '["1m", 0]]', "the weight of `1m` must be a number above 0"),
        ('["1m", 1]]', '["1q", 1]]', "`1q` is not a size"),
        ('["1m", 1]]', '"1m"]', "is not a [size, weight] pair"),
        ("nr_files = 1000", 'nr_files = 1000\nfile_size = "4k"', "cannot be combined"),
    ],
)
def test_bad_sources_targets_and_buckets(old: str, new: str, expected: str) -> None:
    assert old in COPY_BETWEEN
    found = problems(COPY_BETWEEN.replace(old, new, 1))
    assert any(expected in p for p in found), found


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_jobs_pass_the_engine_check_without_warnings(path: Path) -> None:
    """Each engine job the lab makes from an example is one the engine takes as meant: no
    key it would ignore (it warns about those)."""
    engine = find_engine()
    study, _ = load_study(path)
    plan = expand(study, scale=0.02)
    jobs = {
        json.dumps(job, sort_keys=True) for p in plan.points for job in p.engine_jobs(Path("/x"))
    }
    for job in sorted(jobs):
        done = subprocess.run(
            [str(engine), "check", "-"], input=job, capture_output=True, text=True, check=False
        )
        assert done.returncode == 0 and not done.stderr, f"{job}\n{done.stderr}"


def test_the_work_directory_is_the_flag_else_the_study_key_else_beside_results(
    tmp_path: Path,
) -> None:
    (tmp_path / "data").mkdir()
    study = tmp_path / "s.toml"
    study.write_text(
        f'name = "w"\nworkdir = "scratch"\n[[target]]\nname = "d"\ndir = "{tmp_path / "data"}"\n'
        '[[workload]]\nfile_size = "16MiB"\nruntime = "1s"\n'
    )

    def workdir(*extra: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "fslab", "plan", "--json", str(study), *extra],
            cwd=tmp_path, capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return str(json.loads(done.stdout)["workdir"])

    assert workdir() == str(tmp_path / "scratch")
    assert workdir("--workdir", str(tmp_path / "elsewhere")) == str(tmp_path / "elsewhere")
    study.write_text(study.read_text().replace('workdir = "scratch"\n', ""))
    assert workdir("--results", str(tmp_path / "r.db")) == str(tmp_path / "fslab-work")
    assert not (tmp_path / "scratch").exists(), "plan touches nothing"


@pytest.mark.parametrize(
    ("keys", "runtime_s"),
    [
        ('runtime = "30s"', 5.0),  # steady at full scale: one 5 x 1 s window stays
        ('runtime = "30s"\nramp_time = "2s"', 5.96),  # a 0.04 s ramp: judged from 1 s
        ('runtime = "30s"\nsteady_state = false', 1.0),  # no window to keep: the floor
        ('runtime = "30s"\nsteady_window = 3\nsteady_round = "2s"', 6.0),
        ('runtime = "3s"', 1.0),  # too short to be steady even at full scale
    ],
)
def test_scale_shrinks_a_steady_run_no_shorter_than_one_steady_window(
    keys: str, runtime_s: float
) -> None:
    """`--scale 0.02` of a 30 s run is 0.6 s: shorter than the steady window, a run that
    would stop once steady at full scale could never be steady, and would measure only its
    start. It keeps one window (with the ramp's partial interval); sizes still shrink."""
    text = GOOD.replace('runtime = "2s"', keys).replace('file_size = "64m"', 'file_size = "4g"')
    plan = expand(parse_study(text, "s.toml"), scale=0.02)
    assert {p.params["runtime"] for p in plan.points} == {runtime_s}
    # A run one window long is run whole: one chance at steadiness would lose most runs.
    assert all(p.params.get("steady_state") is not True for p in plan.points)
    assert {p.params["file_size"] for p in plan.points} == {81 << 20}
