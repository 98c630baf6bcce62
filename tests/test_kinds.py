"""Workload kinds as units (`fslab.kinds`): the registry, each kind's own keys in the study
reader's messages, the engine's refusals in the study's words and at their lines, fio's
`numjobs`/`size` in block workloads, a files point's typed `ops`, and the import layers
the registry makes possible (no cycle between the study, the targets and the apps)."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import fslab

from fslab.catalog import CATALOG, entry
from fslab.kinds import KINDS, kind_of
from fslab.kinds.block import BLOCK as BLOCK_KIND
from fslab.kinds.files import COPY_BYTES_PER_S, FILE_OP_S, FILES, ops
from fslab.study.load import StudyError, parse_study
from fslab.study.plan import expand

APP_STUDY = """name = "s"

[[target]]
name = "d"
dir = "/tmp"

[[workload]]
kind = "mailstore"
threads = 2
{mailstore}

[[workload]]
kind = "oltp"
name = "db"
{oltp}

[[workload]]
kind = "pgbench"
{pgbench}
"""


def problems(text: str) -> list[str]:
    with pytest.raises(StudyError) as e:
        parse_study(text, "s.toml")
    return [f"{p.where}: {p.what}" + (f" | {p.hint}" if p.hint else "") for p in e.value.problems]


def line_of(text: str, needle: str) -> int:
    return text[: text.index(needle)].count("\n") + 1


# -- the registry --------------------------------------------------------------------------


def test_the_registry_holds_every_kind_in_the_order_messages_list_them() -> None:
    assert list(KINDS) == ["block", "files", "pgbench", "oltp", "mailstore", "integrity", "fio"]
    for name, kind in KINDS.items():
        assert kind.name == name and kind_of(name) is kind
        assert "kind" in kind.spec.model_fields, f"{name}: its spec is tagged by `kind`"


def test_a_kind_no_module_registers_is_named_with_the_kinds_there_are() -> None:
    with pytest.raises(Exception, match="`ior` is not a workload kind; the kinds are block"):
        kind_of("ior")


# -- (a) unknown keys are judged by the workload's own kind --------------------------------


@pytest.mark.parametrize(
    ("where", "bad", "suggested"),
    [
        ("mailstore", "opmix = [40, 20, 5, 35]", "op_mix"),
        ("oltp", "txn_read = 3", "txn_reads"),
        ("pgbench", "client = 3", "clients"),
    ],
)
def test_an_unknown_key_is_suggested_from_its_own_kinds_keys_at_its_line(
    where: str, bad: str, suggested: str
) -> None:
    text = APP_STUDY.format(**{"mailstore": "", "oltp": "", "pgbench": "", where: bad})
    key = bad.split(" =")[0]
    [got] = problems(text)
    line = line_of(text, bad)
    assert got.startswith(f"s.toml:{line}: workload["), got
    assert f".{key}: unknown key `{key}` | did you mean `{suggested}`?" in got, got
    # The kind's tag (pydantic's `.mailstore.`) is no part of the key path.
    assert f".{where}." not in got, got


def test_an_unknown_mailstore_key_is_suggested_from_the_mailstore_keys() -> None:
    text = APP_STUDY.format(mailstore="opmix = [40, 20, 5, 35]", oltp="", pgbench="")
    assert problems(text) == [
        f"s.toml:{line_of(text, 'opmix')}: workload[0].opmix: unknown key `opmix` | "
        "did you mean `op_mix`?"
    ]


def test_an_unknown_oltp_key_far_from_any_lists_the_oltp_keys() -> None:
    text = APP_STUDY.format(mailstore="", oltp="zzz = 1", pgbench="")
    [got] = problems(text)
    allowed = got.split("allowed keys: ")[1].split(", ")
    assert "txn_reads" in allowed and "scan_size" in allowed
    assert "rw" not in allowed and "op_mix" not in allowed, "not the block or mailstore keys"


# -- (b) the engine's refusals, in the study's words and at their lines ----------------------

BLOCK = """name = "t"

[[target]]
name = "e"
dir = "{data}"

[[workload]]
{threads}
{file_size}
runtime = "1s"
"""


def refused(tmp_path: Path, text: str) -> list[str]:
    """`fslab plan` of `text`: refused (exit 2); its error lines."""
    (tmp_path / "data").mkdir(exist_ok=True)
    study = tmp_path / "t.toml"
    study.write_text(text.replace("{data}", str(tmp_path / "data")))
    done = fslab("plan", str(study), "--results", str(tmp_path / "r.db"), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    return [line for line in done.stderr.splitlines() if line.startswith("error: ")]


@pytest.mark.engine
def test_engine_refusals_name_the_keys_the_study_wrote_at_their_lines(tmp_path: Path) -> None:
    text = BLOCK.format(threads="threads = 5000", file_size='file_size = "1k"', data="{data}")
    said = "\n".join(refused(tmp_path, text))
    assert "numjobs" not in said and "`size`" not in said and ".size" not in said, said
    assert f"t.toml:{line_of(text, 'threads')}: workload[0].threads: 5000 is out of range" in said
    assert f"t.toml:{line_of(text, 'file_size')}: workload[0].file_size: 1024 is smaller" in said


@pytest.mark.engine
def test_engine_refusals_of_fio_words_name_the_fio_words(tmp_path: Path) -> None:
    text = BLOCK.format(threads="numjobs = 5000", file_size='size = "1k"', data="{data}")
    said = "\n".join(refused(tmp_path, text))
    assert f"t.toml:{line_of(text, 'numjobs')}: workload[0].numjobs: 5000 is out of range" in said
    assert f"t.toml:{line_of(text, 'size =')}: workload[0].size: 1024 is smaller than" in said
    assert "threads" not in said and "file_size" not in said, said


# -- (c) fio's `numjobs` and `size` in a block workload ---------------------------------------

FIO = """name = "f"

[[target]]
name = "e"
dir = "/tmp"

[[workload]]
rw = "randread"
{keys}
runtime = "2s"
"""


def test_a_block_workload_takes_fios_numjobs_and_size_as_threads_and_file_size() -> None:
    ours = expand(parse_study(FIO.format(keys='threads = [1, 4]\nfile_size = "64MiB"'), "s"))
    fio = expand(parse_study(FIO.format(keys='numjobs = [1, 4]\nsize = "64MiB"'), "s"))
    assert [p.params for p in fio.points] == [p.params for p in ours.points]
    assert fio.points[1].params["threads"] == 4 and fio.points[1].params["file_size"] == 64 << 20
    # One point, whichever the spelling: results of one are found by the other.
    assert [p.id for p in fio.points] == [p.id for p in ours.points]
    [job] = fio.points[1].engine_jobs(Path("/x"))
    assert job["numjobs"] == 4 and job["size"] == 64 << 20


def test_plan_shows_fio_words_as_the_study_words(tmp_path: Path) -> None:
    study = tmp_path / "f.toml"
    study.write_text(FIO.format(keys='numjobs = [1, 4]\nsize = "64MiB"'))
    done = fslab("plan", "--json", str(study), "--results", str(tmp_path / "r.db"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    params = [p["params"] for p in json.loads(done.stdout)["points"]]
    assert [p["threads"] for p in params] == [1, 4] and {p["file_size"] for p in params} == {
        64 << 20
    }
    assert not any("numjobs" in p or "size" in p for p in params)


@pytest.mark.parametrize(
    ("keys", "first", "second"),
    [
        ("threads = 2\nnumjobs = 2", "threads", "numjobs"),
        ('file_size = "1GiB"\nsize = "1GiB"', "file_size", "size"),
    ],
)
def test_a_key_written_both_ways_is_refused_naming_both(keys: str, first: str, second: str) -> None:
    text = FIO.format(keys=keys)
    [got] = problems(text)
    assert got.startswith(f"s.toml:{line_of(text, first)}: workload[0]: "), got
    assert f"`{first}` and `{second}` are one key" in got, got


def test_a_bad_fio_word_is_named_as_written_at_its_line() -> None:
    from fslab.study.check import param_problems

    text = FIO.format(keys="numjobs = 0")
    [p] = param_problems(parse_study(text, "s.toml"), "s.toml")
    assert (p.where, p.what) == (
        f"s.toml:{line_of(text, 'numjobs')}: workload[0].numjobs",
        "0 is not a count (1 or more)",
    )


def test_a_workloads_fio_word_wins_over_the_defaults_study_word() -> None:
    text = FIO.format(keys="numjobs = 4").replace(
        'name = "f"\n', 'name = "f"\n[defaults]\nthreads = 2\n'
    )
    [point] = expand(parse_study(text, "s.toml")).points
    assert point.params["threads"] == 4


def test_an_unknown_key_close_to_a_fio_word_suggests_it() -> None:
    got = problems(FIO.format(keys="numjob = 4"))
    assert any("did you mean `numjobs`?" in g for g in got), got


# -- (d) a files point's ops are a typed list ------------------------------------------------

FILES_STUDY = """name = "f"

[[target]]
name = "e"
dir = "/tmp"

[[workload]]
kind = "files"
set = "custom"
nr_files = 1000
file_size = "64KiB"
ops = {ops}
"""


def test_a_files_points_ops_are_the_workloads_list_in_order() -> None:
    [p] = expand(parse_study(FILES_STUDY.format(ops='["sync", "scan"]'), "s")).points
    assert ops(p) == ["sync", "scan"]
    assert [op for op, _ in FILES.file_jobs(p, Path("/t"))] == ["create", "mutate", "sync", "scan"]
    assert p.params["ops"] == "sync,scan", "stored as before: point ids do not change"


def test_a_files_workload_without_ops_is_estimated_as_creating_the_set_only() -> None:
    [p] = expand(parse_study(FILES_STUDY.format(ops="[]"), "s")).points
    assert [op for op, _ in FILES.file_jobs(p, Path("/t"))] == ["create"]
    create = 1000 * FILE_OP_S + 1000 * (64 << 10) / COPY_BYTES_PER_S
    assert p.estimate_s(fresh_target=False) == pytest.approx(0.5 + create)


# -- the read side: one catalog entry per kind, asked, never a kind's name compared -----------

LAB = Path(__file__).resolve().parent.parent / "python" / "fslab"
DATA = Path(__file__).resolve().parent / "data"
ENGINE_JOB_KINDS = {"report/job_summary.py": 2}
"""Where a kind may be compared outside the kind packages: the job summary describes an
engine report's own job (`j.kind`, the engine's kinds), not a workload kind."""


def test_the_catalog_and_the_registry_name_the_same_kinds() -> None:
    assert set(CATALOG) == set(KINDS)
    for name, kind in KINDS.items():
        e = entry(name)
        assert e.name == name
        # the key facts are the entry's: the read side formats what the write side plans
        assert (kind.size_keys, kind.duration_keys, kind.count_keys) == (
            e.size_keys, e.duration_keys, e.count_keys)  # fmt: skip


def test_reading_a_comparison_imports_neither_the_kinds_the_study_nor_the_engine(
    tmp_path: Path,
) -> None:
    db = tmp_path / "r.db"
    shutil.copy(DATA / "results-v2.db", db)
    assert fslab("compare", "--results", str(db), cwd=tmp_path).returncode == 0  # migrates it
    code = (
        "import sys\n"
        "from fslab.params import format_param\n"
        "from fslab.compare import build_comparison\n"
        "assert format_param('bs', 8192) == '8KiB' and format_param('runtime', 30.0) == '30s'\n"
        f"assert build_comparison({str(db)!r}).groups\n"
        "print(' '.join(m for m in sys.modules if m.startswith('fslab')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(done.stdout.split())
    assert "fslab.compare" in loaded and "fslab.catalog" in loaded
    assert not {m for m in loaded if m.startswith(("fslab.kinds", "fslab.study", "fslab.engine"))}


def test_a_kind_the_catalog_lacks_reads_as_plain_engine_operations() -> None:
    newer = entry("from-a-newer-fslab")
    assert newer.compared and not newer.checks_short_run and not newer.counts_bytes
    assert [m.name for m in newer.op_metrics("read")] == ["iops", "bw_bytes", "lat_mean_ns",
                                                           "lat_p99_ns"]  # fmt: skip


def _kind_comparisons(tree: ast.AST) -> list[int]:
    """Lines that compare something to a workload kind: a kind's name as a string, or a
    constant naming kinds (`INTEGRITY_KIND`, `APP_KINDS`)."""
    names = set(KINDS)

    def kindish(node: ast.expr) -> bool:
        if isinstance(node, ast.Constant) and node.value in names:
            return True
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            return any(kindish(e) for e in node.elts)
        ident = node.id if isinstance(node, ast.Name) else (
            node.attr if isinstance(node, ast.Attribute) else "")  # fmt: skip
        return ident.endswith("_KIND") or ident.endswith("KINDS")

    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Compare)
        and any(isinstance(op, ast.Eq | ast.NotEq | ast.In | ast.NotIn) for op in node.ops)
        and any(kindish(x) for x in (node.left, *node.comparators))
    ]


def test_no_module_outside_the_kind_packages_compares_a_kind() -> None:
    found: dict[str, list[int]] = {}
    for path in sorted(LAB.rglob("*.py")):
        rel = path.relative_to(LAB).as_posix()
        if rel.startswith(("kinds/", "catalog/")):
            continue
        lines = _kind_comparisons(ast.parse(path.read_text(), str(path)))
        if len(lines) > ENGINE_JOB_KINDS.get(rel, 0):
            found[rel] = lines
    assert not found, f"ask `fslab.catalog.entry(kind)` instead of comparing a kind: {found}"


def test_the_kind_scan_finds_what_it_looks_for() -> None:
    code = """
if p.kind == INTEGRITY_KIND: pass
if kind in ("oltp", "mailstore"): pass
if group.kind != "files": pass
if entry(kind).model: pass
if op == "txn": pass
"""
    assert _kind_comparisons(ast.parse(code)) == [2, 3, 4]


# -- layers: no import cycles ----------------------------------------------------------------


def _imported_by(module: str) -> set[str]:
    code = f"import sys, {module}; print(' '.join(m for m in sys.modules if m.startswith('fslab')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(done.stdout.split())


def test_the_targets_import_neither_the_study_nor_the_apps() -> None:
    loaded = _imported_by("fslab.targets")
    assert not {m for m in loaded if m.startswith(("fslab.study", "fslab.apps", "fslab.kinds"))}


@pytest.mark.parametrize(
    "module",
    ["fslab.kinds", "fslab.kinds.pgbench", "fslab.study.load", "fslab.study.check",
     "fslab.apps.postgres", "fslab.cleanup"],
)  # fmt: skip
def test_each_layer_imports_on_its_own_without_the_layers_above(module: str) -> None:
    loaded = _imported_by(module)  # raises when the module cannot be imported alone
    assert module in loaded
    assert not {m for m in loaded if m.startswith(("fslab.cli", "fslab.report"))}


def test_cleanup_knows_how_to_undo_a_postgres_server(tmp_path: Path) -> None:
    """The journal's `postgres` undo is the postgres module's, registered when cleanup
    loads it: a data directory with no server running is undone at once."""
    code = (
        "import fslab.cleanup; from fslab.targets.journal import undo; "
        f"print(undo('postgres', {str(tmp_path)!r}, {{}}))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.stdout.strip() == "True", done.stderr


@pytest.mark.parametrize(
    ("keys", "shortest", "interval"),
    [
        ('runtime = "2s"', 2.0, 0.1),  # too short to be steady: the runtime
        ('runtime = "3s"', 3.0, 0.15),
        ('runtime = "60s"', 5.0, 0.25),  # steady state may stop it after one window
        ('runtime = "60s"\nsteady_state = false', 60.0, 1.0),
        ('runtime = "60s"\nsteady_round = "2s"', 10.0, 0.5),
        ('runtime = "120s"\nnumber_ios = 512', 2.0, 0.1),  # a file written once: its work
    ],
)
def test_telemetry_samples_a_run_at_least_20_times(
    keys: str, shortest: float, interval: float
) -> None:
    from fslab.telemetry import interval_for

    text = FIO.replace('runtime = "2s"\n', "").format(keys=keys)
    (point,) = expand(parse_study(text, "s")).points
    assert BLOCK_KIND.shortest_s(point) == shortest
    assert interval_for(BLOCK_KIND.shortest_s(point)) == interval


def test_a_job_that_ends_after_a_count_of_ios_is_not_held_to_a_steady_window() -> None:
    """A file written once (`number_ios`) is measured by its work: a window it cannot
    fill would flag every run `not steady` and leave the study without a verdict."""
    text = FIO.replace('runtime = "2s"\n', "").format(keys='runtime = "120s"\nnumber_ios = 512')
    (point,) = expand(parse_study(text, "s")).points
    [job] = point.engine_jobs(Path("/x"))
    assert "steady_state" not in job and job["number_ios"] == 512
    timed = FIO.replace('runtime = "2s"\n', "").format(keys='runtime = "120s"')
    (point,) = expand(parse_study(timed, "s")).points
    assert point.engine_jobs(Path("/x"))[0]["steady_state"] is True


# -- (d) how an io_uring queue submits and waits: swept like any engine key ------------------


def test_a_block_workload_sweeps_submit_batches_and_completion_spin() -> None:
    keys = 'iodepth = 8\niodepth_batch_submit = [1, 8]\ncompletion_spin = ["0s", "50us"]'
    plan = expand(parse_study(FIO.format(keys=keys), "s"))
    got = {(p.params["iodepth_batch_submit"], p.params["completion_spin"]) for p in plan.points}
    assert got == {(1, 0.0), (8, 0.0), (1, 50e-6), (8, 50e-6)}
    [job] = plan.points[-1].engine_jobs(Path("/x"))
    assert (job["iodepth_batch_submit"], job["completion_spin"]) == (8, 50e-6)
    # Progress lines tell the points apart by the keys they differ in, as people write them.
    labels = [p.label() for p in plan.points]
    assert len(set(labels)) == 4, labels
    assert labels[-1].endswith("iodepth_batch_submit=8 completion_spin=50us"), labels


@pytest.mark.engine
def test_engine_refusals_of_queue_keys_name_the_study_lines(tmp_path: Path) -> None:
    text = BLOCK.format(
        threads='ioengine = "sync"\ncompletion_spin = "20us"',
        file_size="iodepth = 1\niodepth_batch_submit = 4",
        data="{data}",
    )
    said = "\n".join(refused(tmp_path, text))
    spin = line_of(text, "completion_spin")
    assert f"t.toml:{spin}: workload[0].completion_spin: only applies to" in said, said
    batch = line_of(text, "iodepth_batch_submit")
    assert f"t.toml:{batch}: workload[0].iodepth_batch_submit: 4" in said, said
