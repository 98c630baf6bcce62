"""The safety gate through the real CLI: the refusal matrix of the reliability audit
(the project's reliability audit, section 1), each case through `fslab plan` and
`fslab run`, with and without `--force --device`. A refused device keeps its first 4 MiB
and signature, and nothing is created (no results database, no work directory). Needs
root (loop devices, mkfs, mount, swap)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import sh

pytestmark = pytest.mark.root

STUDY = """
name = "gate"
repeat = {repeat}

[[target]]
name = "dev"
fs = "{fs}"
device = {devices}

[[workload]]
name = "w"
rw = "randread"
file_size = "16MiB"
runtime = "0.5s"
"""


@dataclass
class Bench:
    """Devices a test makes, all released at the end (whatever happened)."""

    root: Path
    undo: list[Callable[[], None]] = field(default_factory=list)

    def device(self, name: str, size: int = 128 << 20, *, read_only: bool = False) -> str:
        image = self.root / f"{name}.img"
        with image.open("wb") as f:
            f.write(b"PATTERN!" * (512 << 10))  # 4 MiB the gate must not touch
            f.truncate(size)
        ro = ["--read-only"] if read_only else []
        dev = sh("losetup", "--find", "--show", *ro, str(image)).strip()
        self.undo.append(lambda: subprocess.run(["losetup", "-d", dev], check=False) and None)
        return dev

    def mount(self, dev: str, name: str) -> Path:
        mnt = self.root / name
        mnt.mkdir()
        sh("mount", dev, str(mnt))
        self.undo.append(lambda: subprocess.run(["umount", str(mnt)], check=False) and None)
        return mnt

    def study(self, devices: list[str], fs: str = "ext4", repeat: int = 1) -> Path:
        path = self.root / "study.toml"
        names = "[" + ", ".join(f'"{d}"' for d in devices) + "]"
        path.write_text(STUDY.format(fs=fs, devices=names, repeat=repeat))
        return path

    def fslab(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "fslab", *args], cwd=self.root, capture_output=True,
            text=True, check=False, timeout=300,
        )  # fmt: skip


@pytest.fixture
def bench() -> Iterator[Bench]:
    if os.geteuid() != 0:
        pytest.skip("needs root (loop devices, mkfs, mount, swap)")
    root = Path(os.path.realpath(tempfile.mkdtemp(prefix="fslab-test-gate-", dir="/var/tmp")))
    b = Bench(root)
    try:
        yield b
    finally:
        for fn in reversed(b.undo):
            fn()
        subprocess.run(["rm", "-rf", "--one-file-system", str(root)], check=False)


def state(dev: str) -> tuple[str, str]:
    """The first 4 MiB's hash and the signature: what a refusal must leave unchanged."""
    with Path(dev).open("rb") as f:
        head = hashlib.sha256(f.read(4 << 20)).hexdigest()
    probe = subprocess.run(["blkid", "-p", dev], capture_output=True, text=True, check=False)
    return head, probe.stdout.split(":", 1)[-1].strip()


def assert_refused(bench: Bench, study: Path, dev: str, words: str, *flags: str) -> None:
    before = state(dev)
    for cmd in ("plan", "run"):
        done = bench.fslab(cmd, str(study), "--results", "r.db", *flags)
        assert done.returncode == 3, (cmd, flags, done.stderr)
        assert words in done.stderr, (cmd, flags, done.stderr)
        assert "hint:" in done.stderr and "Traceback" not in done.stderr
        assert "`confirmed`" not in done.stderr and "--confirm " not in done.stderr
    assert state(dev) == before, "the refused device was written to"
    assert not (bench.root / "r.db").exists() and not (bench.root / "fslab-work").exists()


def test_a_mounted_device_and_its_alias_are_refused_even_forced(bench: Bench) -> None:
    dev = bench.device("a")
    sh("mkfs.ext4", "-q", "-L", "userdata", dev)
    mnt = bench.mount(dev, "mntA")
    # A mounted ext4 writes by itself (lazy init, superblock stats): frozen, only a write
    # from elsewhere could change the device.
    sh("fsfreeze", "--freeze", str(mnt))
    bench.undo.append(lambda: subprocess.run(["fsfreeze", "--unfreeze", str(mnt)]) and None)
    alias = bench.root / "aliasA"
    alias.symlink_to(dev)
    for path in (dev, str(alias)):
        study = bench.study([path])
        assert_refused(bench, study, dev, f"is mounted at {mnt}")
        assert_refused(bench, study, dev, f"umount {mnt}", "--force", "--device", path)


def test_the_second_member_of_a_mounted_btrfs_is_refused(bench: Bench) -> None:
    first, second = bench.device("c1"), bench.device("c2")
    sh("mkfs.btrfs", "-q", "-f", "-d", "raid1", "-m", "raid1", first, second)
    bench.mount(first, "mntC")
    study = bench.study([second], fs="btrfs")
    assert_refused(bench, study, second, "EBUSY", "--force", "--device", second)


def test_swap_is_refused(bench: Bench) -> None:
    dev = bench.device("d", 64 << 20)
    sh("mkswap", dev)
    sh("swapon", dev)
    bench.undo.append(lambda: subprocess.run(["swapoff", dev], check=False) and None)
    assert_refused(bench, bench.study([dev]), dev, f"swapoff {dev}", "--force", "--device", dev)


def test_a_device_another_program_holds_is_refused(bench: Bench) -> None:
    dev = bench.device("f", 64 << 20)
    fd = os.open(dev, os.O_RDONLY | os.O_EXCL)
    try:
        assert_refused(bench, bench.study([dev]), dev, "fuser -v", "--force", "--device", dev)
    finally:
        os.close(fd)


def test_missing_regular_and_read_only_devices_are_refused(bench: Bench) -> None:
    missing = str(bench.root / "nope")
    done = bench.fslab("plan", str(bench.study([missing])), "--results", "r.db")
    assert done.returncode == 3 and "does not exist" in done.stderr, done.stderr
    plain = bench.root / "F.img"
    plain.write_bytes(b"x" * 4096)
    done = bench.fslab("run", str(bench.study([str(plain)])), "--results", "r.db", "--force",
                       "--device", str(plain))  # fmt: skip
    assert done.returncode == 3 and "is not a block device" in done.stderr, done.stderr
    assert plain.read_bytes() == b"x" * 4096
    ro = bench.device("r", read_only=True)
    assert_refused(bench, bench.study([ro]), ro, "is read-only")


def test_data_needs_force_and_the_device_named_again(bench: Bench) -> None:
    dev = bench.device("e", 320 << 20)
    other = bench.device("other")
    sh("mkfs.xfs", "-q", "-L", "userxfs", dev)
    study = bench.study([dev])
    assert_refused(bench, study, dev, "`--force` is not given")
    assert_refused(bench, study, dev, "not named again with `--device`", "--force")
    assert_refused(bench, study, dev, f"--force --device {dev}", "--force", "--device", other)
    # Confirmed by an alias: the device is resolved, formatted and measured.
    alias = bench.root / "aliasE"
    alias.symlink_to(dev)
    done = bench.fslab("run", str(study), "--results", "r.db", "--force", "--device", str(alias))
    assert done.returncode == 0, done.stderr
    assert "TYPE=ext4" in sh("blkid", "-p", "-o", "export", dev)


def test_a_fslab_label_proves_nothing_but_the_uuid_fslab_made_does(bench: Bench) -> None:
    """Audit F2: a foreign file system labelled `fslab-*` was formatted without --force."""
    dev = bench.device("k")
    sh("mkfs.ext4", "-q", "-L", "fslab-mydata", dev)
    mnt = bench.mount(dev, "mntK")
    (mnt / "precious").write_text("x")
    sh("umount", str(mnt))
    study = bench.study([dev])
    words = "holds data fslab did not make (signatures: ext4 labelled 'fslab-mydata')"
    assert_refused(bench, study, dev, words)

    # A blank device is formatted for each run; the file system fslab made is its own
    # for the next run (its UUID is in this results database), not for another database.
    blank = bench.device("blank")
    study = bench.study([blank], repeat=2)
    done = bench.fslab("run", str(study), "--results", "r.db")
    assert done.returncode == 0, done.stderr
    assert "2 runs ok" in done.stderr
    assert "LABEL=fslab-dev" in sh("blkid", "-p", "-o", "export", blank)
    study = bench.study([blank], repeat=3)
    again = bench.fslab("run", str(study), "--results", "r.db")
    assert again.returncode == 0 and "1 runs ok" in again.stderr, again.stderr
    other_db = bench.fslab("plan", str(study), "--results", "other.db")
    assert other_db.returncode == 3 and "fslab did not make" in other_db.stderr
    assert not (bench.root / "other.db").exists()


def forge_mkfs_row(db: Path, dev: str, uuid: str, token_sha256: str | None) -> None:
    """What the audit's N1 attacker does: one journal row claiming fslab made `uuid`."""
    details: dict[str, str] = {"uuid": uuid, "kind": "device"}
    if token_sha256 is not None:
        details["token_sha256"] = token_sha256
    con = sqlite3.connect(db)
    with con:
        con.execute(
            "INSERT INTO journal (run_id, action, subject, details, state, created_at)"
            " VALUES (NULL, 'mkfs', ?, ?, 'undone', 0)",
            (dev, json.dumps(details)),
        )
    con.close()


@pytest.mark.parametrize("fs", ["ext4", "xfs", "btrfs"])
def test_a_forged_journal_row_does_not_make_a_device_fslabs_own(bench: Bench, fs: str) -> None:
    """Audit N1: the UUID of any file system is public, and a results database anyone can
    write. A row naming a foreign file system's UUID (with any token digest, or the digest
    of the device's own token file planted by a non-root user) made `run` format it
    without --force. The proof is now on the device: fslab's root-owned token file."""
    base = bench.device("base")
    study = bench.study([base])
    made = bench.fslab("run", str(study), "--results", "r.db")  # a real database to forge
    assert made.returncode == 0, made.stderr

    dev = bench.device("victim", 320 << 20)
    sh(f"mkfs.{fs}", *(["-q"] if fs == "ext4" else ["-q", "-f"]), "-L", "fslab-mydata", dev)
    mnt = bench.mount(dev, "mntV")
    (mnt / "precious").write_text("precious")
    # A non-root user with write access to the victim plants a token file of its own.
    planted = mnt / ".fslab-filesystem"
    planted.write_text("fslab file system token v1\nabc\n")
    os.chown(planted, 65534, 65534)
    sh("umount", str(mnt))
    uuid = sh("blkid", "-p", "-s", "UUID", "-o", "value", dev).strip()
    digest = hashlib.sha256(b"abc").hexdigest()
    shutil.copy(bench.root / "r.db", bench.root / "evil.db")
    for token in (None, "0" * 64, digest):
        forge_mkfs_row(bench.root / "evil.db", dev, uuid, token)
    victim = bench.study([dev], fs=fs)
    before = state(dev)
    for cmd in ("plan", "run"):
        done = bench.fslab(cmd, str(victim), "--results", "evil.db")
        assert done.returncode == 3, (cmd, done.stderr)
        assert "holds data fslab did not make" in done.stderr, done.stderr
        assert "--force --device" in done.stderr
    assert state(dev) == before, "the victim was written to"
    mnt = bench.mount(dev, "mntV2")
    assert (mnt / "precious").read_text() == "precious"
    mounts = Path("/proc/mounts").read_text().splitlines()
    assert sum(m.split()[0] == dev for m in mounts) == 1, "the token probe's mount is seen"


def test_the_token_fslab_wrote_is_what_proves_a_device_its_own(bench: Bench) -> None:
    """The file system fslab made holds its token: the next `fslab run` with the same
    database formats it again without --force; with the token file gone (or replaced by a
    link to it elsewhere), it is data fslab did not make."""
    dev = bench.device("t", 320 << 20)
    study = bench.study([dev])
    first = bench.fslab("run", str(study), "--results", "r.db")
    assert first.returncode == 0, first.stderr
    again = bench.fslab("run", str(bench.study([dev], repeat=2)), "--results", "r.db")
    assert again.returncode == 0 and "1 runs ok" in again.stderr, again.stderr

    mnt = bench.mount(dev, "mntT")
    token = mnt / ".fslab-filesystem"
    assert token.stat().st_uid == 0 and token.stat().st_mode & 0o777 == 0o400
    kept = bench.root / "kept-token"
    shutil.copy(token, kept)
    token.unlink()
    token.symlink_to(kept)
    sh("umount", str(mnt))
    third = bench.fslab("plan", str(bench.study([dev], repeat=3)), "--results", "r.db")
    assert third.returncode == 3 and "fslab did not make" in third.stderr, third.stderr


def test_a_device_named_twice_is_refused_by_plan(bench: Bench) -> None:
    dev = bench.device("dup")
    alias = bench.root / "aliasDup"
    alias.symlink_to(dev)
    study = bench.study([dev, str(alias)], fs="btrfs")
    before = state(dev)
    for cmd in ("plan", "run"):
        done = bench.fslab(cmd, str(study), "--results", "r.db")
        assert done.returncode == 2 and "names one device twice" in done.stderr, done.stderr
    assert state(dev) == before and not (bench.root / "r.db").exists()
