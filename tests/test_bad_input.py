"""Malformed input, as users and accidents write it: each row of the reliability audit's
"3. Malformed input" matrices (the project's reliability audit: studies 01-52 and
engine jobs j01-j15) run through the real `fslab` command. Each must be refused with
its exit status, say what is wrong and where (the line, when the key has one), show no
Python trace, and leave nothing behind: no results database, no work directory, no
loop device. Then the faults found beside them: a crashing engine (F12), a damaged
results database (F13) and names that would drive the terminal (F15)."""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO, run_fslab, write_job
from report_fixture import make_fixture_db

IS_ROOT = os.geteuid() == 0

# Line numbers below are found from the text (`at`), so a case names the line it means.
BASE = """name = "s"

[[target]]
name = "e"
fs = "ext4"
loop = { size = "256MiB" }

[[workload]]
name = "w"
file_size = "16MiB"
runtime = "1s"
"""
# A `dir` target needs no root: the cases about workloads and names use it, so that
# they check the same thing with or without root.
DIR = BASE.replace('fs = "ext4"\nloop = { size = "256MiB" }', 'dir = "{data}"')


def edit(old: str, new: str, base: str = DIR) -> str:
    assert old in base, old
    return base.replace(old, new, 1)


def workload(*lines: str, base: str = DIR) -> str:
    """`base` with `lines` added to its (last) workload."""
    return base + "".join(f"{line}\n" for line in lines)


@dataclass(frozen=True)
class Case:
    id: str
    study: str
    says: tuple[str, ...]
    at: str | None = None
    """Text of the line the message must name (`s.toml:LINE:`)."""
    status: int = 2
    run: bool = False
    """Also through `fslab run`: the cases the audit found broken, and a few others."""
    root: bool = False
    """Only root gets past the checks that run before the one this case is about."""
    engine: bool = False
    """The engine's check refuses it (the lab has no rule of its own for it)."""


CASES = [
    Case("01-toml-syntax", 'name = "s\n', ("not valid TOML",), at='name = "s'),
    Case("02-repeat-three", edit('name = "s"\n', 'name = "s"\nrepeat = "three"\n'),
         ("repeat: `three` is not a number of runs from 1 to 100", "min = 3, max = 10"),
         at="repeat"),
    Case("03-fs-4", edit('fs = "ext4"', "fs = 4", BASE), ("`4` is not allowed",), at="fs = 4"),
    Case("04-loop-size-negative", edit('"256MiB"', '"-1GiB"', BASE),
         ("loop.size", "is not a size"), at="loop ="),
    Case("05-loop-size-0", edit('"256MiB"', '"0"', BASE), ("below the 64MiB ext4 needs",)),
    Case("06-loop-size-100PiB", edit('"256MiB"', '"100PiB"', BASE), ("100PiB",), root=True),
    Case("07-file-size-0", edit('"16MiB"', '"0"'), ("file_size: 0 is smaller than `bs`",),
         engine=True,
         at="file_size"),
    Case("08-file-size-negative", edit('"16MiB"', '"-16MiB"'),
         ("file_size: `-16MiB` is not a size: a size cannot be negative",), at="file_size",
         run=True),
    Case("09-file-size-1EiB", edit('file_size = "16MiB"', 'file_size = "1EiB"', BASE),
         ("does not fit",), root=True),
    Case("10-fs-zfs", edit('"ext4"', '"zfs"', BASE), ("`zfs` is not allowed", "did you mean `xfs`"),
         at="fs ="),
    Case("11-unknown-top-key", edit('name = "s"\n', 'name = "s"\ncolour = "red"\n'),
         ("colour: unknown key `colour`",), at="colour", run=True),
    Case("12-target-fss", edit('fs = "ext4"', 'fss = "ext4"', BASE), ("did you mean `fs`",),
         at="fss"),
    Case("13-loop-cnt", edit('"256MiB" }', '"256MiB", cnt = 2 }', BASE),
         ("loop.cnt: unknown key", "did you mean `count`"), at="loop ="),
    Case("14-workload-rww", workload('rww = "read"'), ("did you mean `rw`",), at="rww"),
    Case("15-defaults-iodepht", edit('name = "s"\n', 'name = "s"\n\n[defaults]\niodepht = 4\n'),
         ("defaults.iodepht: unknown key", "did you mean `iodepth`"), at="iodepht", run=True),
    Case("16-bs-empty", workload("bs = []"), ("`bs` is an empty list",), at="bs = []"),
    Case("17-duplicate-target-names",
         edit("[[workload]]", '[[target]]\nname = "e"  # again\ndir = "{data}"\n\n[[workload]]'),
         ("target[1] (e).name: `e` is already the name of target[0]",), at="# again"),
    Case("18-name-dot-dot", edit('name = "e"', 'name = "../evil"'),
         ("is not a usable name", "letters, digits"), at="../evil"),
    Case("19-name-shell", edit('name = "e"', 'name = "x; touch PWNED"'),
         ("is not a usable name",), at="PWNED", run=True),
    Case("20-name-newline", edit('name = "e"', 'name = "a\\nb"'),
         ("`a\\nb` is not a usable name",), at="a\\nb"),
    Case("21-name-script", edit('name = "e"', 'name = "<script>"'),
         ("is not a usable name",), at="<script>"),
    Case("22-name-non-ascii", edit('name = "e"', 'name = "ëxt4"'),
         ("is not a usable name",), at="ëxt4"),
    Case("23-no-workload", DIR.split("[[workload]]")[0], ("workload: is required",)),
    Case("24-targets-nope", workload('targets = ["nope"]'),
         ("targets: no target `nope`; the targets are e",), at="targets", run=True),
    Case("25-raid5-one-device", edit('fs = "ext4"', 'fs = "btrfs"\nprofile = "raid5"', BASE),
         ("raid5` needs at least 2 devices",), at="[[target]]"),
    Case("26-cluster-48KiB", edit("loop =", 'cluster_size = "48KiB"\nloop =', BASE),
         ("must be a power of two",)),
    Case("27-runtime-abc", edit('"1s"', '"abc"'), ("runtime: `abc` is not a duration",),
         at="runtime"),
    Case("28-repeat-0", edit('name = "s"\n', 'name = "s"\nrepeat = 0\n'),
         ("repeat: `0` is too small: it must be at least 1",), at="repeat"),
    Case("29-repeat-million", edit('name = "s"\n', 'name = "s"\nrepeat = 1000000\n'),
         ("repeat: `1000000` is too large: it must be at most 100",), at="repeat"),
    Case("30-iodepth-0", workload("iodepth = 0"), ("iodepth: 0 is not a count",), at="iodepth"),
    Case("31-bs-3000", workload('bs = "3000"'), ("bs: 3000 is not a multiple of 512",),
         at="bs =", engine=True),
    Case("32-rw-randomread", workload('rw = "randomread"'),
         ("rw: `randomread` is not allowed", "did you mean `randread`"), at="rw =", run=True,
         engine=True),
    Case("33-empty-file", "", ("name: is required", "target: is required",
                               "workload: is required")),
    Case("35-no-target", DIR.replace('[[target]]\nname = "e"\ndir = "{data}"\n', ""),
         ("target: is required",)),
    Case("36-target-without-name", edit('name = "e"\n', ""), ("target[0].name: is required",),
         at="[[target]]"),
    Case("37-loop-count-0", edit('"256MiB" }', '"256MiB", count = 0 }', BASE),
         ("loop.count: `0` is too small",), at="loop ="),
    Case("38-loop-count-1000", edit('"256MiB" }', '"256MiB", count = 1000 }', BASE),
         ("loop.count: `1000` is too large",), at="loop ="),
    Case("39-duplicate-workload-names", workload("", "[[workload]]", 'name = "w"',
                                                 'runtime = "2s"'),
         ("workload[1] (w).name: `w` is already the name of workload[0]",),
         at='name = "w"\nruntime = "2s"', run=True),
    Case("40-block-size-3KiB", edit("loop =", 'block_size = "3KiB"\nloop =', BASE),
         ("power of two",)),
    Case("41-mkfs-args-string", edit("loop =", 'mkfs_args = "-O ^has_journal"\nloop =', BASE),
         ('must be a list: write `mkfs_args = ["-O ^has_journal"]`',), at="mkfs_args"),
    Case("42-threads-negative", workload("threads = -1"),
         ("threads: -1 is not a count (1 or more)",), at="threads", run=True),
    Case("43-dir-and-fs", edit('dir = "{data}"', 'dir = "{data}"\nfs = "ext4"'),
         ("a `dir` target is used as it is: fs cannot apply",), at="[[target]]"),
    Case("44-workdir-5", edit('name = "s"\n', 'name = "s"\nworkdir = 5\n'),
         ("workdir: `5` is not text",), at="workdir"),
    Case("45-kind-nosuch", workload('kind = "nosuch"'),
         ("kind: `nosuch` is not a workload kind; allowed: block, files, pgbench, oltp, "
          "mailstore",), at="kind", run=True),
    Case("45b-kind-misspelt", workload('kind = "fils"'), ("did you mean `files`",), at="kind"),
    Case("46-files-op-explode", workload('kind = "files"', 'ops = ["copy", "explode"]',
                                         base=DIR.replace('file_size = "16MiB"\n', "")),
         ("`explode` is not allowed",), at="ops"),
    Case("47-runtime-negative", edit('"1s"', '"-5s"'), ("`-5s` is not a duration",),
         at="runtime"),
    Case("48-name-list", edit('name = "s"', 'name = ["a"]'), ('name: `["a"]` is not text',),
         at='name = ["a"]'),
    Case("49-size-256MB5", edit('"256MiB"', '"256MB5"', BASE), ("`256MB5` is not a size",),
         at="loop ="),
    Case("repeat-min-over-max", edit('name = "s"\n', 'name = "s"\nrepeat = { min = 5, max = 3 }\n'),
         ("repeat: `min` (5) is more than `max` (3)",), at="repeat"),
    Case("repeat-min-1", edit('name = "s"\n', 'name = "s"\nrepeat = { min = 1 }\n'),
         ("repeat: min: Input should be greater than or equal to 2",), at="repeat"),
    Case("budget-soon", edit('name = "s"\n', 'name = "s"\nbudget = "soon"\n'),
         ("budget: `soon` is not a duration",), at="budget"),
    Case("margin-bare", edit('name = "s"\n', 'name = "s"\nmargin = "5"\n'),
         ("margin: `5` is not a percentage; write it with `%`",), at="margin"),
    Case("margin-80", edit('name = "s"\n', 'name = "s"\nmargin = "80%"\n'),
         ("margin: `80%` is out of range: an equivalence margin is 0.1% to 50%",),
         at="margin"),
    Case("repeat-bound-80", edit('name = "s"\n', 'name = "s"\nrepeat = { bound = "80%" }\n'),
         ("repeat: bound: `80%` is out of range: a bound is 0.5% to 50%",), at="repeat"),
    Case("repeat-bound-bare", edit('name = "s"\n', 'name = "s"\nrepeat = { bound = "10" }\n'),
         ("`10` is not a percentage; write it with `%`",), at="repeat"),
    # Beyond the matrix: what the fixes of F11 and F18 promise.
    Case("device-string", edit("loop =", 'device = "/dev/loop7"\nloop =', BASE).replace(
        'loop = { size = "256MiB" }\n', ""),
         ('must be a list: write `device = ["/dev/loop7"]`',), at="device"),
    Case("same-points-two-names", workload("", "[[workload]]", 'name = "w2"',
                                           'file_size = "16MiB"', 'runtime = "1s"'),
         ("workload[1] (w2): runs the same points as workload[0] (`w`)",),
         at='[[workload]]\nname = "w2"', run=True),
    Case("same-value-twice", workload('bs = ["4k", "4KiB"]'),
         ("bs: lists one value twice (`4k` and `4KiB`)",), at="bs ="),
]  # fmt: skip


def _line(text: str, at: str) -> int:
    return text[: text.index(at)].count("\n") + 1


def _our_loops(folder: Path) -> list[str]:
    """Loop devices backed by a file under `folder` (other tests may hold their own)."""
    if not IS_ROOT or shutil.which("losetup") is None:
        return []
    done = subprocess.run(["losetup", "-a"], capture_output=True, text=True, check=False)
    return [line for line in done.stdout.splitlines() if str(folder) in line]


def _refused(args: list[str | Path], tmp: Path, status: int) -> str:
    """Runs `fslab ARGS` and checks it was refused cleanly; returns stderr."""
    done = run_fslab(*args, "--results", tmp / "r.db")
    assert done.returncode == status, done.stderr
    assert done.stdout == ""
    assert done.stderr.startswith("error: "), done.stderr
    assert "Traceback" not in done.stderr and "this is a bug" not in done.stderr
    return done.stderr


def _prepare(tmp_path: Path, text: str) -> tuple[Path, set[str]]:
    data = tmp_path / "data"
    data.mkdir()
    study = tmp_path / "s.toml"
    study.write_text(text.replace("{data}", str(data)))
    return study, {"s.toml", "data"}


@pytest.mark.parametrize(
    "case", [pytest.param(c, id=c.id, marks=pytest.mark.engine if c.engine else ()) for c in CASES]
)
def test_a_malformed_study_is_refused_saying_where_and_nothing_is_made(
    case: Case, tmp_path: Path
) -> None:
    if case.root and not IS_ROOT:
        pytest.skip("needs root: without it the plan stops at `making a file system needs root`")
    study, before = _prepare(tmp_path, case.study)
    commands = ["plan", "run"] if case.run else ["plan"]
    for command in commands:
        said = _refused([command, study], tmp_path, case.status)
        for words in case.says:
            assert words in said, f"{command}: {said}"
        if case.at is not None:
            line = _line(study.read_text(), case.at.replace("{data}", str(tmp_path / "data")))
            assert f"{study}:{line}: " in said, f"{command}: {said}"
    assert {p.name for p in tmp_path.iterdir()} == before
    assert list((tmp_path / "data").iterdir()) == []
    assert _our_loops(tmp_path) == []


def test_an_unknown_key_in_defaults_is_reported_once_at_defaults(tmp_path: Path) -> None:
    text = DIR.replace('name = "s"\n', 'name = "s"\n\n[defaults]\niodepht = 4\n') + (
        '\n[[workload]]\nname = "w2"\nbs = "8k"\n'
    )
    study, _ = _prepare(tmp_path, text)
    said = _refused(["plan", study], tmp_path, 2)
    assert said.count("iodepht") == 2, said  # the problem, and its hint names nothing else
    assert f"{study}:4: defaults.iodepht: unknown key `iodepht`" in said
    assert "workload[" not in said


@pytest.mark.parametrize(
    ("kind", "text"),
    [("binary", None), ("latin-1", 'name = "caf\xe9"\n'.encode("latin-1"))],
    ids=["binary", "latin-1"],
)
def test_a_study_that_is_not_utf8_is_refused_as_such(
    tmp_path: Path, kind: str, text: bytes | None
) -> None:
    """Case 34 (F9): it was a UnicodeDecodeError and "this is a bug"."""
    study = tmp_path / "x.toml"
    study.write_bytes(text if text is not None else bytes(range(128, 256)) * 2)
    for command in ("plan", "run"):
        said = _refused([command, study], tmp_path, 2)
        assert said.startswith(f"error: {study}: not UTF-8 text (byte 0x"), said
        assert "hint: a study is a text file in UTF-8" in said
    assert [p.name for p in tmp_path.iterdir()] == ["x.toml"]


@pytest.mark.parametrize("kind", ["51-nonexistent", "52-directory"])
def test_a_study_path_that_is_no_file_is_refused(tmp_path: Path, kind: str) -> None:
    study = tmp_path / "study.toml"
    if kind == "52-directory":
        study.mkdir()
    for command in ("plan", "run"):
        said = _refused([command, study], tmp_path, 2)
        why = "a directory, not a study" if kind == "52-directory" else "cannot read the study"
        assert f"error: {study}: {why}" in said
    assert {p.name for p in tmp_path.iterdir()} <= {"study.toml"}


@pytest.mark.parametrize(
    ("old", "new", "at"),
    [
        ('"256MiB"', '"0"', "loop ="),
        ("loop =", 'cluster_size = "48KiB"\nloop =', "cluster_size"),
        ("loop =", 'block_size = "3KiB"\nloop =', "block_size"),
        ('file_size = "16MiB"', 'file_size = "1EiB"', "file_size"),
    ],
    ids=["05-loop-size-0", "26-cluster-48KiB", "40-block-size-3KiB", "09-file-size-1EiB"],
)
def test_target_problems_name_the_line_of_their_key(
    tmp_path: Path, old: str, new: str, at: str
) -> None:
    if not IS_ROOT:
        pytest.skip("needs root: without it the plan stops at `making a file system needs root`")
    study, _ = _prepare(tmp_path, edit(old, new, BASE))
    said = _refused(["plan", study], tmp_path, 2)
    assert f"{study}:{_line(study.read_text(), at)}: " in said, said


# -- a crashing engine (F12) --------------------------------------------------------------


@pytest.mark.parametrize(
    ("script", "says"),
    [
        (
            'echo "thread main panicked" >&2\nkill -SEGV $$',
            "crashed (killed by signal 11 (SIGSEGV))",
        ),
        (
            'echo "out of sorts" >&2\nexit 1',
            "exited with status 1 (neither 0, ok, nor 2, job refused)",
        ),
        (
            'echo "not JSON at all"\necho "garbage on stderr" >&2\nexit 0',
            "accepted the job without the JSON answer `check --format json` gives",
        ),
    ],
    ids=["sigsegv", "exit-1", "garbage-exit-0"],
)
def test_an_engine_that_crashes_while_checking_is_no_study_problem(
    tmp_path: Path, script: str, says: str
) -> None:
    engine = tmp_path / "engine.sh"
    engine.write_text(f"#!/bin/sh\n{script}\n")
    engine.chmod(0o755)
    study, before = _prepare(tmp_path, DIR)
    env = {**os.environ, "NO_COLOR": "1", "FSLAB_ENGINE": str(engine)}
    for command in ("plan", "run"):
        done = run_fslab(command, study, "--results", tmp_path / "r.db", env=env)
        assert done.returncode == 1, done.stderr
        first = done.stderr.splitlines()[0]
        assert first.startswith(f"error: {engine}: the engine {says} while checking the job")
        assert "workload `w`" in first
        said = re.search(r'echo "([^"]+)" >&2', script)
        assert said is not None and said.group(1) in done.stderr
        assert f"hint: $FSLAB_ENGINE is `{engine}`" in done.stderr
        assert "Traceback" not in done.stderr
    assert {p.name for p in tmp_path.iterdir()} == before | {"engine.sh"}


# -- a damaged results database (F13) -----------------------------------------------------


@pytest.fixture(scope="module")
def fixture_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_fixture_db(tmp_path_factory.mktemp("db") / "r.db")


def _damaged(fixture_db: Path, tmp_path: Path) -> Path:
    """A copy with pages 3 to 6 zeroed: its header reads, its tables do not."""
    db = tmp_path / "damaged.db"
    shutil.copy(fixture_db, db)
    with db.open("r+b") as f:
        f.seek(3 * 4096)
        f.write(bytes(4 * 4096))
    return db


@pytest.mark.parametrize(
    "args",
    [["compare"], ["report", "-o", "{tmp}/r.html"], ["export"], ["cleanup"], ["run", "{study}"]],
    ids=["compare", "report", "export", "cleanup", "run"],
)
def test_a_database_damaged_in_the_middle_is_named_with_a_way_out(
    fixture_db: Path, tmp_path: Path, args: list[str]
) -> None:
    db = _damaged(fixture_db, tmp_path)
    study, _ = _prepare(tmp_path, DIR)
    argv = [a.format(tmp=tmp_path, study=study) for a in args]
    done = run_fslab(*argv, "--results", db)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"error: {db}: the results database is damaged ("), done.stderr
    assert f'hint: recover what it still holds with `sqlite3 {db} ".recover"' in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "r.html").exists() and not (tmp_path / "fslab-work").exists()


def test_integrity_check_names_the_damage(fixture_db: Path, tmp_path: Path) -> None:
    from fslab.store.db import ResultsWriter, StoreError

    good = ResultsWriter.open(fixture_db)
    try:
        good.check_integrity()
    finally:
        good.close()
    db = ResultsWriter.open(_damaged(fixture_db, tmp_path))
    try:
        with pytest.raises(StoreError, match="the results database is damaged") as e:
            db.check_integrity()
    finally:
        db.close()
    assert e.value.exit_status == 2
    assert "\n" not in e.value.message


def test_an_empty_file_is_no_results_database_to_clean_up(tmp_path: Path) -> None:
    """F13: `cleanup` used to write an empty database into it and exit 0."""
    db = tmp_path / "empty.db"
    db.touch()
    done = run_fslab("cleanup", "--results", db)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"error: {db}: not a results database (the file is empty)")
    assert db.stat().st_size == 0


# -- names that would drive the terminal (F15) --------------------------------------------

HOSTILE = "\x1b]0;TITLE\x07\x1b[31mRED [bold]x"


def test_plan_shows_control_characters_in_names_escaped(tmp_path: Path) -> None:
    text = DIR.replace('name = "s"', 'name = "\\u001b]0;TITLE\\u0007\\u001b[31mRED [bold]x"')
    text = text.replace('runtime = "1s"', 'runtime = "1s"\nbs = ["4k", "8k"]')
    study, _ = _prepare(tmp_path, text)
    done = run_fslab("plan", study, "--results", tmp_path / "r.db")
    assert done.returncode == 0, done.stderr
    out = done.stdout + done.stderr
    assert "\x1b" not in out and "\x07" not in out
    # The title may wrap, at a space.
    assert "\\x1b]0;TITLE\\x07\\x1b[31mRED" in done.stdout and "[bold]x:" in done.stdout


def test_compare_shows_control_characters_from_a_database_escaped(
    fixture_db: Path, tmp_path: Path
) -> None:
    db = tmp_path / "hostile.db"
    shutil.copy(fixture_db, db)
    con = sqlite3.connect(db)
    with con:
        con.execute("UPDATE study SET name = ?", (HOSTILE,))
        con.execute("UPDATE point SET target = ? WHERE target = 'xfs'", (f"x{HOSTILE}",))
        con.execute("UPDATE point SET workload = ? || workload", ("\x9b",))
    con.close()
    for fmt in ("table", "md"):
        done = run_fslab("compare", "--results", db, "--format", fmt)
        assert done.returncode == 0, done.stderr
        out = done.stdout + done.stderr
        assert not any(c in out for c in "\x1b\x07\x9b"), fmt
        assert "\\x1b[31mRED [bold]x" in done.stdout


def test_an_error_quoting_a_name_shows_its_control_characters_escaped(tmp_path: Path) -> None:
    study, _ = _prepare(tmp_path, edit('name = "e"', 'name = "e\\u001b[2J\\u009b"'))
    said = _refused(["plan", study], tmp_path, 2)
    assert "\x1b" not in said and "\x9b" not in said
    assert "`e\\x1b[2J\\x9b` is not a usable name" in said


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("\x1b]0;T\x07", "\\x1b]0;T\\x07"),
        ("a\tb\rc\nd", "a\\tb\\rc\\nd"),
        ("\x7f\x9b\x00", "\\x7f\\x9b\\x00"),
        ("abc\u202edcb", "abc\\u202edcb"),
        ("ext4 ëxt4 — ±", "ext4 ëxt4 — ±"),
    ],
    ids=["osc", "c0-whitespace", "del-c1-nul", "bidi-override", "printable"],
)
def test_safe_text_shows_every_control_character_escaped(text: str, shown: str) -> None:
    from fslab.safe_text import safe_text

    assert safe_text(text) == shown


def test_safe_text_keeps_line_breaks_only_when_asked() -> None:
    from fslab.safe_text import safe_markup, safe_text

    assert safe_text("a\nb\x1b", newlines=True) == "a\nb\\x1b"
    assert safe_markup("[bold]x\x1b") == "\\[bold]x\\x1b"


def test_a_refusal_by_the_safety_gate_makes_the_exit_status_3() -> None:
    from fslab.errors import ExitStatus
    from fslab.study.load import Problem, StudyError

    bad = Problem("s.toml: target[0] (d)", "`fs` is not allowed")
    gate = Problem("s.toml: target[0] (d)", "`device` '/dev/sdb' is mounted", refused=True)
    assert StudyError([bad]).exit_status is ExitStatus.USAGE
    assert StudyError([bad, gate]).exit_status is ExitStatus.REFUSED
    assert "3    refused      the safety gate refused a device" in run_fslab("--help").stdout


# -- engine jobs (the audit's j01-j15) ----------------------------------------------------

JOBS = [
    ("j01-toml-syntax", 'rw = "read\n', "TOML parse error at line 1"),
    ("j02-unknown-key", 'rww = "read"\nioengine = "null"\n', "did you mean `rw`?"),
    ("j03-bs-0", 'bs = 0\nioengine = "null"\n', "`bs`: 0 is out of range"),
    ("j04-iodepth-100000", 'iodepth = 100000\nioengine = "null"\n', "100000 is out of range"),
    ("j05-size-true", 'size = true\nfilename = "{tmp}/f"\n', "true is not a size"),
    ("j06-missing-dir", 'filename = "{tmp}/no/such/f"\nsize = "1MiB"\n', "does not exist"),
    ("j07-runtime-abc", 'runtime = "abc"\nioengine = "null"\n', "is not a duration"),
    ("j09-filename-is-a-dir", 'filename = "{tmp}"\nsize = "1MiB"\n', "is a directory"),
    ("j10-libaio", 'ioengine = "libaio"\n', "`libaio` is not allowed"),
    ("j11-no-filename", 'rw = "read"\n', "missing target"),
    ("j12-size-1e", 'size = "1e"\nfilename = "{tmp}/f"\n', "is not a size"),
    ("j13-truncated-json", '{"rw": "read",\n', "not valid JSON"),
    ("j14-binary", None, "cannot read the job: it is not UTF-8 text (byte 0x80 at offset 0)"),
    ("j15-new-file-no-size", 'filename = "{tmp}/new.dat"\n', "`size`: is required"),
]


@pytest.mark.engine
@pytest.mark.parametrize(("name", "job", "says"), JOBS, ids=[j[0] for j in JOBS])
def test_a_malformed_engine_job_is_refused_by_the_engine(
    tmp_path: Path, name: str, job: str | None, says: str
) -> None:
    path = tmp_path / ("job.json" if "json" in name else "job.toml")
    if job is None:
        path.write_bytes(bytes(range(128, 256)))
    else:
        path.write_text(job.replace("{tmp}", str(tmp_path)))
    done = run_fslab("job", path)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert says in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


@pytest.mark.parametrize(
    ("job", "says"),
    [('rww = "read"\nioengine = "null"\n', "did you mean `rw`?"), ('{"rw": "read",', "JSON")],
    ids=["j02-unknown-key", "j13-truncated-json"],
)
@pytest.mark.engine
def test_a_malformed_engine_job_on_stdin_is_refused(job: str, says: str) -> None:
    done = run_fslab("job", "-", input=job)
    assert done.returncode == 2, done.stderr
    assert done.stdout == "" and says in done.stderr and "<stdin>" in done.stderr


@pytest.mark.root
def test_j08_a_job_writing_a_block_device_without_the_flag_is_refused(tmp_path: Path) -> None:
    if not IS_ROOT or shutil.which("losetup") is None:
        pytest.skip("needs root and losetup: a loop device stands in for a disk")
    image = tmp_path / "disk.img"
    image.write_bytes(b"PATTERN!" * (1 << 17))
    dev = subprocess.run(
        ["losetup", "--find", "--show", str(image)], capture_output=True, text=True, check=True
    ).stdout.strip()
    try:
        job = write_job(tmp_path / "job.toml", {"filename": dev, "rw": "write", "size": "1MiB"})
        done = run_fslab("job", job)
        assert done.returncode == 2, done.stderr
        assert "allow_device_write" in done.stderr and "hint: " in done.stderr
    finally:
        subprocess.run(["losetup", "-d", dev], check=False)
    assert image.read_bytes() == b"PATTERN!" * (1 << 17)


def test_the_repository_examples_are_not_refused() -> None:
    """The other side of every case above: a real study passes the same checks."""
    example = REPO / "examples" / "fs-block-sweep.toml"
    if not example.exists():
        pytest.skip("no example study")
    from fslab.study.load import load_study
    from fslab.study.plan import expand

    study, _ = load_study(example)
    assert expand(study, scale=0.02).points
