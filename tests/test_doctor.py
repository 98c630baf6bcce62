"""`fslab doctor`: what this machine can and cannot do for fslab, as a table and as a
versioned JSON document; its exit status; and that looking changes nothing."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from conftest import fslab_env, run_fslab

from fslab.cli import main
from fslab.doctor import CORE, SCHEMA_VERSION, SECTIONS, STATUSES, diagnose
from fslab.targets._proc import which
from fslab.targets.spec import TargetSpec
from fslab.targets.system import DOCTOR_HINT, TOOLS, System, keyed_check

FINDING_KEYS = {"section", "name", "status", "core", "detail", "affects", "fix", "packages"}


def _invoke(*args: str) -> Result:
    """`fslab doctor ARGS` in this process (so that a test may hide a tool from it)."""
    return CliRunner().invoke(main, ["doctor", *args], env={"NO_COLOR": "1"})


def _doc(result: Result) -> dict[str, Any]:
    doc = json.loads(result.stdout)
    assert isinstance(doc, dict)
    return doc


def _finding(doc: dict[str, Any], name: str) -> dict[str, Any]:
    (found,) = [f for f in doc["findings"] if f["name"] == name]
    assert isinstance(found, dict)
    return found


def _hide(monkeypatch: pytest.MonkeyPatch, *tools: str) -> None:
    """`System.probe` finds none of `tools`, as on a machine without their package."""

    def which_but(name: str) -> str | None:
        return None if name in tools else which(name)

    monkeypatch.setattr("fslab.targets.system.which", which_but)


def test_the_json_document_is_versioned_and_says_everything(tmp_path: Path) -> None:
    done = run_fslab("doctor", "--format", "json", "--workdir", tmp_path / "work")
    assert done.returncode in (0, 1), done.stderr
    doc = json.loads(done.stdout)
    assert doc["schema_version"] == SCHEMA_VERSION == 1
    assert {"fslab", "engine", "kernel", "machine", "root", "workdir", "ready", "core",
            "core_missing", "counts", "findings"} <= set(doc)  # fmt: skip
    assert doc["workdir"] == str(tmp_path / "work")
    assert doc["core"] == list(CORE)
    names = [f["name"] for f in doc["findings"]]
    assert len(names) == len(set(names)), names
    for f in doc["findings"]:
        assert set(f) == FINDING_KEYS, f
        assert f["status"] in STATUSES and f["section"] in SECTIONS, f
        assert f["detail"], f
        if f["status"] != "ok":
            assert f["affects"], f"{f['name']}: what is not ok says what it affects"
    for name in ("root", "loop driver", "losetup", "direct I/O", "ext4", "xfs", "btrfs",
                 "f2fs", "exfat", "ntfs", "ntfs3", "fscrypt", "dm-crypt", "device-mapper",
                 "md RAID", "LVM", "io_uring", "eBPF", "strace", "PostgreSQL", "MPI", "fio",
                 "Chromium", "fslab", "fslab-engine"):  # fmt: skip
        assert name in names, name
    assert sum(doc["counts"].values()) == len(names)
    assert doc["core_missing"] == [
        f["name"] for f in doc["findings"] if f["core"] and f["status"] == "missing"
    ]
    assert doc["ready"] is (not doc["core_missing"]) is (done.returncode == 0)
    assert {f["name"] for f in doc["findings"] if f["core"]} == set(CORE)


def test_ext4_is_ok_here_with_its_version() -> None:
    if which("mkfs.ext4") is None or "ext4" not in System.probe().filesystems:
        pytest.skip("this machine has no ext4 tools or no ext4 in its kernel")
    ext4 = _finding(_doc(_invoke("--format", "json")), "ext4")
    assert ext4["status"] == "ok" and ext4["core"] is True
    assert "mkfs.ext4 1." in ext4["detail"] and "e2fsprogs" in ext4["detail"]


def test_a_missing_tool_is_missing_with_the_package_that_brings_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _hide(monkeypatch, "mkfs.xfs", "xfs_info", "mdadm", "strace")
    doc = _doc(_invoke("--format", "json"))
    xfs = _finding(doc, "xfs")
    assert xfs["status"] == "missing" and xfs["core"] is False
    assert xfs["packages"] == [TOOLS["mkfs.xfs"][0]] == ["xfsprogs"]
    assert xfs["fix"] == "apt-get install xfsprogs"
    assert "`mkfs.xfs`" in xfs["detail"] and xfs["affects"] == '`fs = "xfs"` targets'
    # The features of a file system that is not there are not listed on their own.
    assert not [f for f in doc["findings"] if f["name"].startswith("xfs ")]
    assert _finding(doc, "md RAID")["packages"] == ["mdadm"]
    # xfs is not fslab's core: the machine is still ready for it.
    assert "xfs" not in doc["core_missing"]

    table = _invoke()
    assert "✗ xfs " in table.stdout and "fix: apt-get install xfsprogs" in table.stdout
    assert "\x1b[" not in table.stdout  # NO_COLOR, and not a terminal


def test_the_table_groups_sections_in_order_and_ends_with_a_verdict() -> None:
    done = _invoke()
    out = done.stdout
    assert out.startswith("fslab doctor: fslab ")
    at = [out.index(f"\n{s}\n") for s in SECTIONS]
    assert at == sorted(at)
    last = out.rstrip().splitlines()[-1]
    assert "ready" in out.rstrip().split("\n\n")[-1], last
    assert all(line == line.rstrip() for line in out.splitlines()), "no trailing blanks"


def test_exit_status_1_when_the_core_lacks_ext4_tools(monkeypatch: pytest.MonkeyPatch) -> None:
    _hide(monkeypatch, "mkfs.ext4")
    done = _invoke("--format", "json")
    assert done.exit_code == 1, done.output
    doc = _doc(done)
    assert "ext4" in doc["core_missing"] and doc["ready"] is False
    assert _finding(doc, "ext4")["fix"] == "apt-get install e2fsprogs"
    table = _invoke()
    assert table.exit_code == 1
    assert "not ready: fslab's core lacks " in table.stdout and "ext4" in table.stdout


def test_without_root_it_says_what_root_would_add(monkeypatch: pytest.MonkeyPatch) -> None:
    probe = System.probe
    monkeypatch.setattr(
        System, "probe", classmethod(lambda cls: dataclasses.replace(probe(), is_root=False))
    )
    done = _invoke("--format", "json")
    assert done.exit_code == 1, done.output
    root = _finding(_doc(done), "root")
    assert root["status"] == "missing" and "root" in _doc(done)["core_missing"]
    assert "sudo" in root["fix"] and "`dir`" in root["affects"] and "mkfs" in root["affects"]


def test_no_engine_is_a_missing_core_with_how_to_get_one(tmp_path: Path) -> None:
    done = run_fslab(
        "doctor", "--format", "json",
        env=fslab_env(FSLAB_ENGINE=str(tmp_path / "no-engine")),
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    doc = json.loads(done.stdout)
    engine = _finding(doc, "fslab-engine")
    assert engine["status"] == "missing" and "FSLAB_ENGINE" in engine["fix"]
    assert doc["engine"] == {"path": None, "version": None}
    assert "not tried" in _finding(doc, "io_uring")["detail"]


def test_a_bad_option_is_a_usage_error() -> None:
    done = run_fslab("doctor", "--format", "yaml")
    assert done.returncode == 2 and "yaml" in done.stderr


def _loops() -> str:
    return subprocess.run(["losetup", "-a"], capture_output=True, text=True, check=False).stdout


def _mounts() -> list[str]:
    return [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]


def test_looking_changes_nothing(tmp_path: Path) -> None:
    """No loop device attached, nothing mounted, every temporary file removed (those of
    the engine's jobs in $TMPDIR, the O_DIRECT probe's in the work directory's parent),
    the work directory not made; and quickly."""
    tmp, parent = tmp_path / "tmp", tmp_path / "parent"
    tmp.mkdir()
    parent.mkdir()
    loops, mounts = _loops(), _mounts()
    start = time.monotonic()
    done = run_fslab(
        "doctor", "--format", "json", "--workdir", parent / "work",
        env=fslab_env(TMPDIR=str(tmp)),
    )  # fmt: skip
    took = time.monotonic() - start
    assert done.returncode in (0, 1), done.stderr
    assert _finding(json.loads(done.stdout), "direct I/O")["detail"].find(str(parent)) >= 0
    assert _loops() == loops and _mounts() == mounts
    assert not list(tmp.iterdir()) and not list(parent.iterdir())
    assert took < 10, f"fslab doctor took {took:.1f}s"


@pytest.mark.root
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root")
def test_as_root_with_the_core_installed_it_exits_0() -> None:
    found = diagnose(Path("fslab-work"))
    if not found.system.has_loop or not found.system.has_tool("mkfs.ext4"):
        pytest.skip("this machine lacks loop devices or the ext4 tools")
    done = _invoke()
    assert done.exit_code == 0, done.output
    assert "ready: fslab's core is here" in done.stdout
    assert _finding(_doc(_invoke("--format", "json")), "root")["status"] == "ok"


def test_plan_points_at_doctor_for_what_this_machine_lacks(tmp_path: Path) -> None:
    bare = dataclasses.replace(
        System.probe(), is_root=False, filesystems=frozenset({"ext4"}),
        tools={**System.probe().tools, "mkfs.xfs": None},
    )  # fmt: skip
    target = TargetSpec.model_validate({"name": "x", "fs": "xfs", "loop": {"size": "100MiB"}})
    problems = keyed_check(target, bare)
    assert any(p.machine and "needs root" in p.message for p in problems), problems
    assert any(p.machine and "`mkfs.xfs` is not installed" in p.message for p in problems)
    assert any(p.machine and p.key == "fs" for p in problems)
    # What the study asked wrongly is the study's: no doctor for that.
    (small,) = [p for p in problems if p.key == "loop.size"]
    assert not small.machine

    if "f2fs" in System.probe().filesystems:
        return
    study = tmp_path / "s.toml"
    study.write_text(
        'name = "f"\n[[target]]\nname = "f2"\nfs = "f2fs"\nloop = { size = "1MiB" }\n\n'
        '[[workload]]\nrw = "read"\n'
    )
    done = run_fslab("plan", study)
    assert done.returncode == 2
    kernel = done.stderr.split("target[0] (f2).fs: ", 1)[1]
    assert kernel.split("\n\n", 1)[1].startswith(f"hint: {DOCTOR_HINT}")
    size = done.stderr.split("target[0] (f2).loop.size: ", 1)[1].split("error:", 1)[0]
    assert "fslab doctor" not in size


def test_io_uring_the_engine_cannot_use_is_limited_with_the_engines_words(
    tmp_path: Path,
) -> None:
    engine = tmp_path / "fslab-engine"
    engine.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = --version ]; then echo "fslab-engine 9.9.9"; exit 0; fi\n'
        'if grep -q io_uring; then echo "error: io_uring_setup: Operation not permitted" >&2;'
        " exit 1; fi\n"
        'echo "{}"\n'
    )
    engine.chmod(0o755)
    done = run_fslab("doctor", "--format", "json", env=fslab_env(FSLAB_ENGINE=str(engine)))
    doc = json.loads(done.stdout)
    assert doc["engine"] == {"path": str(engine), "version": "9.9.9"}
    assert _finding(doc, "fslab-engine")["status"] == "ok"
    uring = _finding(doc, "io_uring")
    assert uring["status"] == "limited"
    assert uring["detail"].endswith("backend failed: io_uring_setup: Operation not permitted")
    assert 'ioengine = "sync"' in uring["affects"] and uring["fix"]
