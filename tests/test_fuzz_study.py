"""Structured fuzzing of what reads a study (audit-reliability-2.md, "and keep it so").

The audit's mutation fuzzer flipped bits and inserted tokens, found nothing, and missed
what structure finds: device paths, special files, deep nesting, thousands of sections.
These properties generate studies with that structure (targets and workloads with every
kind's real keys and absurd or hostile values, fio job files with many sections,
stonewalls, deep expressions and includes of special files) and assert only what must
always hold:

- reading a study ends in a study or a `StudyError`, never another exception, and soon;
- `fslab plan` exits 0, 2 or 3 (the gate refused a device), without a trace, in bounded
  time and memory, and creates nothing beside the study.

A few examples run with the tests; `make fuzz` runs many (`FSLAB_FUZZ_EXAMPLES`). A
failing example is printed by hypothesis as the smallest study that fails.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import resource
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import fslab_env
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fslab.errors import FslabError
from fslab.kinds import KINDS
from fslab.study.load import parse_study
from fslab.study.plan import expand
from fslab.study.problems import StudyError
from fslab.targets.spec import TargetSpec

EXAMPLES = int(os.environ.get("FSLAB_FUZZ_EXAMPLES", "0"))
"""Examples per property: `make fuzz` sets thousands; the tests' own default is small."""

# -- values ------------------------------------------------------------------------------

UNITS = ["", "k", "K", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "MB", "s", "ms", "us", "%"]
SPECIAL_PATHS = [
    "/dev/zero", "/dev/urandom", "/dev/null", "/dev/loop0", "/dev/loop7", "/dev/sda",
    "/dev/disk/by-id/nothing", "/", "/etc", "/proc", "/proc/self/environ", "/sys/kernel",
    "..", "../../..", "sub/../../..", "fifo", "link", "dangling", "dir", "/tmp",
    "\x1b]0;TITLE\x07", "a\nb", "a:b", "",
]  # fmt: skip

sizes = st.one_of(
    st.builds(lambda n, u: f"{n}{u}", st.integers(-(2**70), 2**70), st.sampled_from(UNITS)),
    st.sampled_from(["1e400", "NaN", "inf", "256MB5", "0x10", "1.5KiB", "-0", " 4k", "4 k"]),
    st.integers(-(2**70), 2**70),
)
paths = st.sampled_from(SPECIAL_PATHS)
scalars = st.one_of(
    sizes,
    paths,
    st.booleans(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
)


@dataclass(frozen=True)
class Deep:
    """`leaf` inside `depth` lists and tables, one in another (written out as TOML only:
    as Python objects they would be too deep for hypothesis to print)."""

    depth: int
    leaf: Any

    def toml(self) -> str:
        out = toml_value(self.leaf)
        for i in range(self.depth):
            out = f"[{out}]" if i % 2 else f"{{k = {out}}}"
        return out


values = st.one_of(
    scalars,
    st.lists(scalars, max_size=6),
    st.dictionaries(st.sampled_from(["size", "count", "min", "max", "k"]), scalars, max_size=3),
    st.builds(Deep, st.integers(1, 1500), scalars),
)

# Every kind's real keys (so values reach the checks behind them), and some that are not.
WORKLOAD_KEYS = sorted(
    {k for kind in KINDS.values() for k in kind.spec.model_fields} | {"threads", "file_size"}
)
TARGET_KEYS = [*sorted(TargetSpec.model_fields), "loop.size", "nosuch"]


@st.composite
def targets(draw: st.DrawFn) -> dict[str, Any]:
    names = st.one_of(st.from_regex(r"[a-z][a-z0-9-]{0,8}", fullmatch=True), st.text(max_size=8))
    t: dict[str, Any] = {
        "name": draw(names),
        "fs": draw(st.sampled_from(["ext4", "xfs", "btrfs", "ntfs", 5])),
    }
    where = draw(st.sampled_from(["loop", "device", "dir", "none", "both"]))
    if where in ("loop", "both"):
        t["loop"] = {"size": draw(sizes)}
        if draw(st.booleans()):
            t["loop"]["count"] = draw(st.integers(-2, 40))
    if where in ("device", "both"):
        t["device"] = draw(st.lists(paths, min_size=1, max_size=3))
    if where == "dir":
        t["dir"] = draw(paths)
    if draw(st.booleans()):
        t["mkfs_args"] = draw(st.lists(st.one_of(
            paths, st.sampled_from(["-F/dev/loop0", "-f/dev/loop0", "-J", "device=/dev/sda",
                                    "-l", "logdev=/dev/sda", "--", "-L", "-qF./x"]),
        ), max_size=4))  # fmt: skip
    if draw(st.booleans()):
        t["mount_options"] = draw(st.lists(st.sampled_from(
            ["device=/dev/sda", "loop", "noatime", "compress=zstd", "ro", "helper=x"]
        ), max_size=3))  # fmt: skip
    for key in draw(st.lists(st.sampled_from(TARGET_KEYS), max_size=3)):
        t[key] = draw(values)
    return t


@st.composite
def workloads(draw: st.DrawFn) -> dict[str, Any]:
    w: dict[str, Any] = {}
    kind = draw(st.one_of(st.sampled_from(sorted(KINDS)), st.text(max_size=6), st.none()))
    if kind is not None:
        w["kind"] = kind
    if kind == "fio":
        w["job_file"] = draw(st.sampled_from(["job.fio", "fifo", "/dev/zero", "dir", "link",
                                              "/proc/self/environ", "nothing.fio"]))  # fmt: skip
    for key in draw(st.lists(st.sampled_from(WORKLOAD_KEYS), max_size=6)):
        w[key] = draw(values)
    return w


@st.composite
def studies(draw: st.DrawFn) -> dict[str, Any]:
    doc: dict[str, Any] = {"name": draw(st.text(max_size=10))}
    for key in draw(st.lists(st.sampled_from(["repeat", "budget", "seed", "reuse", "workdir",
                                              "description", "nosuch"]), max_size=3)):  # fmt: skip
        doc[key] = draw(values)
    doc["target"] = draw(st.lists(targets(), max_size=4))
    doc["workload"] = draw(st.lists(workloads(), max_size=4))
    if draw(st.integers(0, 9)) == 0:  # now and then, very many of them
        doc["target"] = doc["target"] * draw(st.integers(100, 2000))
    if draw(st.booleans()):
        doc["hosts"] = draw(st.dictionaries(st.sampled_from(["localhost", "a b", "h;x"]),
                                            st.integers(-1, 2000), max_size=2))  # fmt: skip
    if draw(st.booleans()):
        doc["defaults"] = draw(st.dictionaries(st.sampled_from(WORKLOAD_KEYS), values,
                                               max_size=3))  # fmt: skip
    return doc


def toml_value(v: Any) -> str:
    """TOML for `v`; values TOML cannot hold come out as text TOML refuses (also a case)."""
    if isinstance(v, Deep):
        return v.toml()
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return (
            "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
        )
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(map(toml_value, v)) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(type(v))


def toml_study(doc: dict[str, Any]) -> str:
    lines = [f"{json.dumps(k)} = {toml_value(v)}" for k, v in doc.items()
             if k not in ("target", "workload", "hosts", "defaults")]  # fmt: skip
    for table in ("hosts", "defaults"):
        if table in doc:
            lines.append(f"[{table}]")
            lines += [f"{json.dumps(k)} = {toml_value(v)}" for k, v in doc[table].items()]
    for array in ("target", "workload"):
        for item in doc.get(array, []):
            lines.append(f"[[{array}]]")
            lines += [f"{json.dumps(k)} = {toml_value(v)}" for k, v in item.items()]
    return "\n".join(lines) + "\n"


# -- fio job files -----------------------------------------------------------------------


@st.composite
def fio_files(draw: st.DrawFn) -> str:
    out = []
    if draw(st.booleans()):
        out.append("[global]\nioengine=psync\nsize=1m")
    sections = draw(st.one_of(st.integers(1, 6), st.integers(500, 5000)))
    dependency = draw(st.sampled_from(["", "stonewall", "wait_for=j{prev}"]))
    for i in range(sections):
        body = [f"[j{i}]", "rw=read"]
        if dependency and i:
            body.append(dependency.format(prev=i - 1))
        out.append("\n".join(body))
    extra = draw(st.lists(st.one_of(
        st.sampled_from(["include /dev/zero", "include fifo", "include job.fio", "include dir",
                         "include /proc/self/environ", "include nothing.fio",
                         "filename=/etc/passwd", "directory=../..", "bs=${NOSUCH}",
                         "size=(2^64)", "bs=(1/0)", "bs=(1.5)", "bs=(0-1)"]),
        st.integers(1, 40000).map(lambda n: "bs=" + "(" * n + "4096" + ")" * n),
        st.builds(lambda k, v: f"{k}={v}", st.sampled_from(["bs", "size", "iodepth", "numjobs",
                                                            "runtime", "rw"]), sizes),
    ), max_size=4))  # fmt: skip
    return "\n".join(out) + "\n" + "\n".join(extra) + "\n"


# -- the properties ----------------------------------------------------------------------


def _settings(default: int, **kw: Any) -> settings:
    return settings(
        max_examples=EXAMPLES or default,
        deadline=None,  # bounded by the time checks below, not hypothesis' per-example clock
        database=None,  # nothing written into the checkout
        # The fixture's special files serve every example; the job file is rewritten per example.
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.function_scoped_fixture,
        ],
        **kw,
    )


@pytest.mark.timeout(max(120, EXAMPLES // 10))
@_settings(60)
@given(studies(), st.sampled_from([1.0, 0.01, 1e-9, 1e9]))
def test_reading_a_study_ends_in_a_study_or_its_problems(doc: dict[str, Any], scale: float) -> None:
    text = toml_study(doc)
    try:
        study = parse_study(text, "fuzz.toml")
    except StudyError as e:
        assert e.problems, "a StudyError says what is wrong"
        return
    with contextlib.suppress(StudyError, FslabError):
        expand(study, scale)


@pytest.fixture
def fuzz_dir(tmp_path: Path) -> Iterator[Path]:
    """Special files a generated study may name: a FIFO, a link, a dangling link, a
    directory, and a job file (rewritten per example)."""
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "dir").mkdir()
    (tmp_path / "job.fio").write_text("[j]\nrw=read\nsize=1m\n")
    (tmp_path / "link").symlink_to("/dev/zero")
    (tmp_path / "dangling").symlink_to(tmp_path / "nothing-here")
    yield tmp_path


def _limit_memory() -> None:
    limit = 3 << 30  # far above what plan needs; a runaway read hits it and fails
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


PLAN_TIMEOUT_S = 60
# pytest-timeout's limit for a whole property: every example may take its full time.
WHOLE = pytest.mark.timeout(max(120, (EXAMPLES or 6) * PLAN_TIMEOUT_S))


@pytest.mark.slow
@WHOLE
@_settings(6)
@given(doc=studies(), job=fio_files())
def test_plan_of_any_study_exits_0_2_or_3_and_makes_nothing(
    fuzz_dir: Path, doc: dict[str, Any], job: str
) -> None:
    (fuzz_dir / "job.fio").write_text(job)
    study = fuzz_dir / "study.toml"
    study.write_text(toml_study(doc))
    before = sorted(p.name for p in fuzz_dir.iterdir())
    done = subprocess.run(
        [sys.executable, "-m", "fslab", "plan", "study.toml", "--results", "r.db"],
        cwd=fuzz_dir, env=fslab_env(), capture_output=True, text=True,
        timeout=PLAN_TIMEOUT_S, check=False, preexec_fn=_limit_memory,
    )  # fmt: skip
    assert done.returncode in (0, 2, 3), (done.returncode, done.stderr[-3000:])
    assert "Traceback" not in done.stderr and "bug in fslab" not in done.stderr, done.stderr
    assert sorted(p.name for p in fuzz_dir.iterdir()) == before, "plan made something"


@pytest.mark.slow
@pytest.mark.engine  # the engine reads the job file
@WHOLE
@_settings(6)
@given(job=fio_files())
def test_a_fio_kind_study_of_any_job_file_is_planned_or_refused(fuzz_dir: Path, job: str) -> None:
    """The same through `kind = "fio"` alone, so every example reaches the job file."""
    (fuzz_dir / "job.fio").write_text(job)
    study = fuzz_dir / "study.toml"
    study.write_text(
        'name = "f"\n[[target]]\nname = "d"\ndir = "dir"\n'
        '[[workload]]\nkind = "fio"\njob_file = "job.fio"\n'
    )
    before = sorted(p.name for p in fuzz_dir.iterdir())
    done = subprocess.run(
        [sys.executable, "-m", "fslab", "plan", "study.toml", "--results", "r.db"],
        cwd=fuzz_dir, env=fslab_env(), capture_output=True, text=True,
        timeout=PLAN_TIMEOUT_S, check=False, preexec_fn=_limit_memory,
    )  # fmt: skip
    assert done.returncode in (0, 2), (done.returncode, done.stderr[-3000:])
    assert "Traceback" not in done.stderr and "bug in fslab" not in done.stderr, done.stderr
    assert sorted(p.name for p in fuzz_dir.iterdir()) == before, "plan made something"
