"""The journal is a record, not a script: a results database may come from anywhere, so
`fslab cleanup` and `fslab run` act only on what this machine proves fslab made. Every
test forges journal rows against sacrificial files, directories, loop devices, mounts and
a fake PostgreSQL it makes itself, and checks that none of them is touched; a control
with a valid proof shows the same rows would have been acted on. Needs root."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from conftest import fslab, sh

from fslab.store.db import ResultsWriter
from fslab.targets.owner import MARKER, Owned

pytestmark = pytest.mark.root


def digest(path: Path | str) -> str:
    with Path(path).open("rb") as f:
        return hashlib.sha256(f.read(4 << 20)).hexdigest()


@dataclass
class Victims:
    """Sacrificial things the test owns; fslab must leave every one of them as it is."""

    root: Path
    loops: list[str] = field(default_factory=list)
    mounts: list[Path] = field(default_factory=list)

    def file(self, name: str, text: str = "precious") -> Path:
        path = self.root / name
        path.write_text(text)
        return path

    def loop(self, name: str, size: int = 64 << 20) -> str:
        image = self.root / name
        with image.open("wb") as f:
            f.write(b"VICTIM" * 100_000)
            f.truncate(size)
        dev = sh("losetup", "--find", "--show", str(image)).strip()
        self.loops.append(dev)
        return dev

    def mount(self, name: str) -> tuple[str, Path]:
        dev = self.loop(f"{name}.img")
        sh("mkfs.ext4", "-q", dev)
        mnt = self.root / name
        mnt.mkdir()
        sh("mount", dev, str(mnt))
        self.mounts.append(mnt)
        (mnt / "precious").write_text("x")
        return dev, mnt

    def close(self) -> list[str]:
        leaked = []
        for mnt in reversed(self.mounts):
            if os.path.ismount(mnt):
                subprocess.run(["umount", str(mnt)], check=False)
            else:
                leaked.append(f"{mnt} was unmounted")
        for dev in self.loops:
            subprocess.run(["losetup", "-d", dev], check=False)
        return leaked


@pytest.fixture
def victims() -> Iterator[Victims]:
    if os.geteuid() != 0:
        pytest.skip("needs root (loop devices, mount)")
    # Not under /tmp/pytest-*: fslab refuses nothing there, which is the point.
    root = Path(os.path.realpath(tempfile.mkdtemp(prefix="fslab-victims-", dir="/var/tmp")))
    root.chmod(0o755)
    v = Victims(root)
    try:
        yield v
    finally:
        leaked = v.close()
        subprocess.run(["rm", "-rf", "--one-file-system", str(root)], check=False)
        assert not leaked, leaked


def empty_db(path: Path) -> Path:
    ResultsWriter.open(path).close()
    return path


def forge(db: Path, rows: list[tuple[str, str, dict[str, Any]]], run_id: int | None = None) -> None:
    con = sqlite3.connect(db)
    try:
        con.executemany(
            "INSERT INTO journal (run_id, action, subject, details, state, created_at)"
            " VALUES (?, ?, ?, ?, 'done', ?)",
            [(run_id, a, s, json.dumps(d), time.time()) for a, s, d in rows],
        )
        con.commit()
    finally:
        con.close()


def open_rows(db: Path) -> list[tuple[str, str]]:
    con = sqlite3.connect(db)
    try:
        return con.execute(
            "SELECT action, subject FROM journal WHERE state != 'undone' ORDER BY id"
        ).fetchall()
    finally:
        con.close()


def loop_backing(dev: str) -> str:
    return Path(f"/sys/block/{Path(dev).name}/loop/backing_file").read_text().strip()


def test_cleanup_leaves_alone_everything_a_forged_journal_names(victims: Victims) -> None:
    v = victims
    victim = v.file("victim.txt")
    vdir = v.root / "victim_dir"
    vdir.mkdir()
    (vdir / "inner.txt").write_text("inner")
    vloop = v.loop("vloop.img")
    vloop_before = digest(vloop)
    mdev, vmnt = v.mount("vmnt")
    # A stopped "server" whose pg_ctl, named in the DB, would leave a mark if run.
    pgfake = v.root / "pgfake"
    pgfake.mkdir()
    (pgfake / "postmaster.pid").write_text("1\n")
    pwned = v.root / "PWNED"
    evil = v.file("evil_pgctl.sh", f"#!/bin/sh\nid > {pwned}\n")
    evil.chmod(0o755)
    # A real directory fslab made (marker and token), to forge rows that name it.
    mine = Owned.new(v.root / "mine")
    mine.create()
    (mine.path / "link").symlink_to(victim)
    ours, wrong = mine.details(), {"owner": str(mine.path), "token": "0" * 32}
    guess = {"owner": str(v.root), "token": "f" * 32}

    rows: list[tuple[str, str, dict[str, Any]]] = [
        ("image", str(victim), {}),
        ("image", str(victim), guess),
        ("image", str(victim), wrong),
        ("image", str(victim), ours),  # proven owner, but the file lies outside it
        ("image", str(mine.path / "link"), ours),  # a symlink out of the owner
        ("image", str(mine.path / ".." / "victim.txt"), ours),
        ("mkdir", str(vdir), {"recursive": True}),
        ("mkdir", str(vdir), {"recursive": True, "owner": str(vdir), "token": "a" * 32}),
        ("mkdir", str(v.root), {"recursive": True, **guess}),
        ("mkdir", str(mine.path), {"recursive": True, **wrong}),
        ("loop", vloop, {"image": str(v.root / "vloop.img")}),
        ("loop", vloop, {"image": str(v.root / "vloop.img"), **ours}),
        ("mount", str(vmnt), {}),
        ("mount", str(vmnt), {"device": mdev}),
        ("mount", str(vmnt), {"device": mdev, **ours}),
        ("fscrypt_key", str(vmnt), {"identifier": "00" * 16, "device": mdev}),
        ("postgres", str(pgfake), {"pg_ctl": str(evil)}),
        ("postgres", str(pgfake), {"pg_ctl": str(evil), **ours}),
        ("rm", str(victim), ours),
    ]
    db = empty_db(v.root / "evil.db")
    forge(db, rows)

    done = fslab("cleanup", "--results", str(db), cwd=v.root)
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("left alone (not proven fslab's)") == len(rows), done.stderr
    assert f"0 side effects undone, {len(rows)} left" in done.stderr
    assert "Traceback" not in done.stderr

    assert victim.read_text() == "precious"
    assert (vdir / "inner.txt").read_text() == "inner"
    assert loop_backing(vloop) == str(v.root / "vloop.img") and digest(vloop) == vloop_before
    assert os.path.ismount(vmnt) and (vmnt / "precious").read_text() == "x"
    assert not pwned.exists(), "a program named in the database was run"
    assert (mine.path / MARKER).is_file() and (mine.path / "link").is_symlink()
    assert len(open_rows(db)) == len(rows), "rows fslab cannot prove stay as they were"


def test_a_valid_proof_is_needed_and_is_enough(victims: Victims) -> None:
    """The control: the same kind of row is acted on with a valid proof, and refused as
    soon as the marker is not fslab's own (another owner, readable by others)."""
    mine = Owned.new(victims.root / "mine")
    mine.create()
    inside = mine.path / "image.img"
    inside.write_bytes(b"x")
    db = empty_db(victims.root / "r.db")
    forge(db, [("image", str(inside), mine.details())])
    marker = mine.path / MARKER

    for spoil, undo_spoil in [
        (lambda: os.chown(marker, 65534, 65534), lambda: os.chown(marker, 0, 0)),
        (lambda: marker.chmod(0o644), lambda: marker.chmod(0o600)),
    ]:
        spoil()
        done = fslab("cleanup", "--results", str(db), cwd=victims.root)
        assert done.returncode == 1 and "no fslab marker" in done.stderr, done.stderr
        assert inside.exists()
        undo_spoil()

    done = fslab("cleanup", "--results", str(db), cwd=victims.root)
    assert done.returncode == 0, done.stderr
    assert "1 side effects undone, 0 left" in done.stderr
    assert not inside.exists() and open_rows(db) == []


STUDY = """
name = "own"
repeat = {repeat}

[[target]]
name = "ext4"
fs = "ext4"
loop = {{ size = "128MiB" }}

[[workload]]
rw = "randread"
file_size = "8MiB"
runtime = "0.5s"
"""


def test_run_never_undoes_rows_planted_for_its_next_run(victims: Victims) -> None:
    v = victims
    study = v.root / "s.toml"
    study.write_text(STUDY.format(repeat=1))
    first = fslab("run", str(study), "--results", "r.db", cwd=v.root)
    assert first.returncode == 0, first.stderr
    db = v.root / "r.db"
    con = sqlite3.connect(db)
    next_run = con.execute("SELECT max(id) FROM run").fetchone()[0] + 1
    con.close()

    victim = v.file("victim2.txt")
    vdir = v.root / "victim_dir2"
    vdir.mkdir()
    vloop = v.loop("vloop2.img")
    _, vmnt = v.mount("vmnt2")
    planted = [
        ("image", str(victim), {}),
        ("mkdir", str(vdir), {"recursive": True}),
        ("loop", vloop, {"image": str(v.root / "vloop2.img")}),
        ("mount", str(vmnt), {}),
    ]
    forge(db, planted, run_id=next_run)

    study.write_text(STUDY.format(repeat=2))
    second = fslab("run", str(study), "--results", "r.db", cwd=v.root)
    assert second.returncode == 0, second.stderr
    assert "1 runs ok, 0 failed, 1 already done" in second.stderr
    assert victim.read_text() == "precious" and vdir.is_dir()
    assert loop_backing(vloop) == str(v.root / "vloop2.img")
    assert os.path.ismount(vmnt) and (vmnt / "precious").read_text() == "x"
    assert sorted(open_rows(db)) == sorted((a, s) for a, s, _ in planted)
    assert not (v.root / "fslab-work").exists(), "the work directory fslab made is gone"
