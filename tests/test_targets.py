"""Storage targets on real loop devices, mkfs and mounts (root), the safety gate's refusal
matrix, and `check()` on this machine and on made-up ones (no root needed).

Every root test works inside the `lab` fixture, which undoes whatever the test made
(provisioned targets, loop devices, mounts, swap) even when the test fails, and then
checks that nothing under its directory is still attached or mounted.
"""

from __future__ import annotations

import dataclasses
import errno
import hashlib
import importlib
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pydantic
import pytest
from conftest import sh

from fslab.errors import SafetyError, TargetError
from fslab.report.context import TargetInfo, target_facts
from fslab.targets import (
    MemoryJournal,
    Provisioned,
    System,
    check,
    check_device,
    hold,
    provision,
    scheduler,
    side_effects,
    teardown,
    undo,
)
from fslab.targets.args import user_arg_problems
from fslab.targets.fscrypt import cipher_driver, uses_cpu_aes
from fslab.targets.gate import device_problems, refusals
from fslab.targets.journal import fs_uuid
from fslab.targets.loop import backing_file, loops_backed_by
from fslab.targets.mkfs import mount_options
from fslab.targets.mount import mounts_under
from fslab.targets.owner import NotOurs, Owned
from fslab.targets.spec import TargetSpec
from fslab.telemetry import statvfs_used_bytes

# The module (the package's `provision` attribute is the function of the same name).
provision_module = importlib.import_module("fslab.targets.provision")
IS_ROOT = os.geteuid() == 0
F = TypeVar("F", bound=Callable[..., Any])


def needs_root(f: F) -> F:
    """Marks a test `root` and skips it, with the reason, for other users."""
    skip = pytest.mark.skipif(not IS_ROOT, reason="needs root: loop devices, mkfs, mount")
    return pytest.mark.root(skip(f))  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def system() -> System:
    return System.probe()


def spec(**kw: Any) -> TargetSpec:
    kw.setdefault("name", "t")
    return TargetSpec.model_validate(kw)


# --------------------------------------------------------------------------- the lab


class LabJournal(MemoryJournal):
    """A memory journal whose entries the lab undoes in order with its other cleanups."""

    def __init__(self, order: list[int | Callable[[], None]]) -> None:
        super().__init__()
        self._order = order

    def record(self, action: str, subject: str, details: dict[str, Any]) -> int:
        entry = super().record(action, subject, details)
        self._order.append(entry)
        return entry


class Lab:
    """A scratch directory with loop devices, mounts and targets, all undone at the end.
    The directory is made as fslab makes its own (`Owned`), so that what the test makes
    by hand is undone by fslab's `undo` too."""

    def __init__(self, owned: Owned) -> None:
        self.owned = owned
        self.root = owned.path
        self.workdir = self.root / "work"
        self.workdir.mkdir()
        self._order: list[int | Callable[[], None]] = []
        self.journal = LabJournal(self._order)

    # Things tests make by hand (as a user would), journaled so they are undone too.

    def image(self, name: str, size: int = 128 << 20) -> Path:
        path = self.root / name
        self.journal.done(self.journal.record("image", str(path), self.owned.details()))
        with path.open("wb") as f:
            f.truncate(size)
        return path

    def loop(self, image: Path, *, partscan: bool = False) -> str:
        argv = ["losetup", "--find", "--show", *(["--partscan"] if partscan else []), str(image)]
        dev = sh(*argv).strip()
        details = {"image": str(image), **self.owned.details()}
        self.journal.done(self.journal.record("loop", dev, details))
        return dev

    def device(self, name: str, size: int = 128 << 20) -> str:
        return self.loop(self.image(name, size))

    def mount(self, device: str, name: str) -> Path:
        mnt = self.root / name
        self.journal.done(self.journal.record("mkdir", str(mnt), self.owned.details()))
        mnt.mkdir()
        details = {"device": device, "uuid": fs_uuid(device), **self.owned.details()}
        self.journal.done(self.journal.record("mount", str(mnt), details))
        sh("mount", device, str(mnt))
        return mnt

    def on_cleanup(self, fn: Callable[[], None]) -> None:
        self._order.append(fn)

    def provision(self, target: TargetSpec, scale: float = 1.0, **kw: Any) -> Provisioned:
        return provision(target, self.workdir, self.journal, scale, **kw)

    def close(self) -> None:
        failures: list[str] = []
        for item in reversed(self._order):
            try:
                if callable(item):
                    item()
                else:
                    entry = self.journal.entries[item - 1]
                    if entry.state != "undone":
                        undo(entry.action, entry.subject, entry.details)
                        self.journal.undone(entry.id)
            except Exception as e:
                failures.append(f"{item}: {e}")
        left_mounted = [m.mountpoint for m in mounts_under(self.root)]
        left_loops = [
            dev
            for dev in _all_loops()
            if (backing_file(dev) or "").startswith(str(self.root) + "/")
        ]
        if not left_mounted and not left_loops:
            shutil.rmtree(self.root, ignore_errors=True)
        assert not failures, failures
        assert not left_mounted, f"left mounted: {left_mounted}"
        assert not left_loops, f"left attached: {left_loops}"


def _all_loops() -> list[str]:
    return [f"/dev/{p.name}" for p in Path("/sys/block").glob("loop*")]


@pytest.fixture
def lab() -> Iterator[Lab]:
    tmp = Path(os.path.realpath(tempfile.mkdtemp(prefix="fslab-test-targets-")))
    owned = Owned.new(tmp / "lab")
    owned.create()
    lab = Lab(owned)
    try:
        yield lab
    finally:
        try:
            lab.close()
        finally:
            if not mounts_under(tmp):
                shutil.rmtree(tmp, ignore_errors=True)


def assert_gone(p: Provisioned) -> None:
    """Everything `p` made is undone."""
    for image in p.images:
        assert not image.exists(), image
        assert not loops_backed_by(image), image
    if p.mountpoint is not None:
        assert not mounts_under(p.mountpoint)
        assert not p.mountpoint.parent.exists()
    assert not p.workdir.exists()


def use(p: Provisioned) -> None:
    """Writes, syncs and reads back a file where jobs would run."""
    f = p.workdir / "probe.dat"
    data = os.urandom(256 << 10)
    f.write_bytes(data)
    os.sync()
    assert f.read_bytes() == data


def roundtrip(lab: Lab, target: TargetSpec, scale: float = 0.01) -> Provisioned:
    """Provisions `target`, uses it, tears it down and checks that nothing is left;
    returns it so the test can look at what was in effect."""
    p = lab.provision(target, scale)
    assert p.mountpoint is not None
    assert p.workdir.is_dir()
    use(p)
    teardown(p, lab.journal)
    assert_gone(p)
    assert all(e.state == "undone" for e in lab.journal.entries)
    return p


# --------------------------------------------------------------------------- ext4


@needs_root
@pytest.mark.parametrize(
    ("options", "block", "cluster", "csum"),
    [
        ({"block_size": "4KiB"}, 4096, 4096, True),
        ({"block_size": "1KiB"}, 1024, 1024, True),
        ({"cluster_size": "64KiB"}, 4096, 65536, True),
        ({"checksums": False}, 4096, 4096, False),
    ],
    ids=["4k", "1k", "bigalloc-64k", "no-metadata-csum"],
)
def test_ext4_options_are_in_effect(
    lab: Lab, options: dict[str, Any], block: int, cluster: int, csum: bool
) -> None:
    p = roundtrip(lab, spec(name="e4", fs="ext4", **options))
    eff = p.effective
    assert eff["block_size"] == block
    assert eff["cluster_size"] == cluster
    assert eff["metadata_checksums"] is csum
    assert ("bigalloc" in eff["ext4"]["features"]) is (cluster != block)
    assert eff["ext4"]["label"] == "fslab-e4"
    assert "lazy_itable_init=0" in eff["mkfs"]["command"]
    assert eff["mount"]["fstype"] == "ext4"
    assert eff["loop"][0]["backing_file"] == str(p.images[0])
    assert eff["image_size"] == 64 << 20  # scaled down to ext4's minimum
    assert "tune2fs -l" in eff["raw"]
    assert eff["tools"]["mkfs.ext4"] and eff["kernel"] == os.uname().release


@needs_root
def test_raw_mkfs_args_and_mount_options_are_passed_on(lab: Lab) -> None:
    target = spec(fs="ext4", mkfs_args=["-I", "128"], mount_options=["noatime"])
    p = roundtrip(lab, target)
    assert p.effective["ext4"]["inode_size"] == 128
    assert "noatime" in p.effective["mount"]["options"]


@needs_root
def test_loop_direct_io_is_in_effect(lab: Lab) -> None:
    p = lab.provision(spec(fs="ext4", loop={"size": "64MiB", "direct_io": True}))
    try:
        assert p.effective["loop"][0]["dio"] == "1"
    finally:
        teardown(p, lab.journal)
    assert_gone(p)


# --------------------------------------------------------------------------- I/O scheduler


def test_the_scheduler_line_of_sysfs_is_read_as_offered_and_in_effect() -> None:
    assert scheduler.parse("[none] mq-deadline kyber bfq\n") == (
        ("none", "mq-deadline", "kyber", "bfq"),
        "none",
    )
    assert scheduler.parse("none [bfq]") == (("none", "bfq"), "bfq")
    assert scheduler.parse("") == ((), None)


def test_a_scheduler_is_a_setting_of_devices_not_of_a_directory(tmp_path: Path) -> None:
    with pytest.raises(pydantic.ValidationError, match="scheduler cannot apply"):
        spec(dir=str(tmp_path), scheduler="bfq")
    with pytest.raises(pydantic.ValidationError, match="mq-deadline"):
        spec(fs="ext4", scheduler="cfq")  # the single-queue scheduler, gone since 5.0


def test_plan_refuses_a_scheduler_the_kernel_does_not_offer(
    system: System, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a kernel without the bfq module says of loop devices' queues."""
    monkeypatch.setattr(scheduler, "offered_for_loop", lambda: ("none", "mq-deadline"))
    (problem,) = [m for m in check(spec(fs="ext4", scheduler="bfq"), system) if "sched" in m]
    assert "offers loop devices none mq-deadline" in problem
    assert "`modprobe bfq`" in problem
    assert not [m for m in check(spec(fs="ext4", scheduler="mq-deadline"), system) if "sched" in m]


@needs_root
def test_the_scheduler_is_set_for_the_runs_and_put_back_after(lab: Lab) -> None:
    p = lab.provision(spec(fs="ext4", loop={"size": "64MiB"}, scheduler="kyber"))
    (dev,) = p.devices
    try:
        assert scheduler.read(dev)[1] == "kyber"
        (queue,) = p.effective["queue"]
        assert queue["scheduler"] == "kyber" and "bfq" in queue["offered"]
        assert isinstance(queue["rotational"], bool)
        (entry,) = [e for e in lab.journal.entries if e.action == "scheduler"]
        previous = entry.details["previous"]
        assert previous != "kyber" and entry.subject == dev
        facts = dict(target_facts(TargetInfo("t", {}, p.effective)))
        assert facts["I/O scheduler"] == "kyber"
    finally:
        teardown(p, lab.journal)
    assert_gone(p)
    # Put back before the loop device was detached: the next user of it gets the old one.
    assert scheduler.read(dev)[1] == previous


@needs_root
def test_the_schedulers_undo_touches_only_a_device_fslab_made(lab: Lab) -> None:
    """`fslab cleanup` after a crash puts the scheduler back on fslab's own device, and
    leaves another device's alone, whatever the journal says."""
    p = lab.provision(spec(fs="ext4", loop={"size": "64MiB"}, scheduler="kyber"))
    try:
        (entry,) = [e for e in lab.journal.entries if e.action == "scheduler"]
        other = lab.device("other.img", 64 << 20)
        before = scheduler.read(other)[1]
        scheduler.switch(other, "kyber")
        lab.on_cleanup(lambda: scheduler.switch(other, str(before)))
        with pytest.raises(NotOurs, match="leaving its I/O scheduler"):
            undo("scheduler", other, entry.details)
        assert scheduler.read(other)[1] == "kyber"
        # The real entry, as cleanup would undo it with the target still mounted.
        assert undo("scheduler", entry.subject, entry.details)
        assert scheduler.read(entry.subject)[1] == entry.details["previous"]
        assert undo("scheduler", entry.subject, entry.details), "again: nothing to do"
    finally:
        teardown(p, lab.journal)
    assert_gone(p)


# --------------------------------------------------------------------------- xfs


@needs_root
@pytest.mark.parametrize("block", [4096, 16384, 65536])
def test_xfs_block_size_and_crc(lab: Lab, system: System, block: int) -> None:
    target = spec(name="x", fs="xfs", block_size=block, checksums=True)
    if check(target, system):
        pytest.skip(f"not on this machine: {check(target, system)}")
    p = roundtrip(lab, target)
    assert p.effective["block_size"] == block
    assert p.effective["xfs"]["data"]["bsize"] == str(block)
    assert p.effective["metadata_checksums"] is True
    assert "-m crc=1" in p.effective["mkfs"]["command"]


@needs_root
def test_xfs_without_crc_is_v4(lab: Lab, system: System) -> None:
    target = spec(name="x", fs="xfs", checksums=False)
    problems = check(target, system)
    if system.config("XFS_SUPPORT_V4") is False:
        assert len(problems) == 1
        assert "`checksums = false` on xfs" in problems[0]
        assert "CONFIG_XFS_SUPPORT_V4" in problems[0]
        with pytest.raises(TargetError, match="V4"):
            lab.provision(target)
        assert not lab.workdir.exists() or not any(lab.workdir.iterdir())
        return
    p = roundtrip(lab, target)
    assert p.effective["metadata_checksums"] is False


# --------------------------------------------------------------------------- btrfs


@needs_root
@pytest.mark.parametrize(
    ("profile", "count", "metadata"),
    [
        ("single", 1, None),
        ("raid0", 2, None),
        ("raid1", 2, "raid1"),
        ("raid10", 4, "raid10"),
        ("raid5", 3, "raid1"),
    ],
)
def test_btrfs_profiles_across_loop_devices(
    lab: Lab, profile: str, count: int, metadata: str | None
) -> None:
    target = spec(
        name=f"b-{profile}",
        fs="btrfs",
        loop={"size": "1GiB", "count": count},
        profile=profile,
        metadata_profile=metadata,
    )
    p = roundtrip(lab, target)
    eff = p.effective
    assert eff["btrfs"]["profiles"]["data"] == [profile]
    if metadata:
        assert eff["btrfs"]["profiles"]["metadata"] == [metadata]
    assert eff["btrfs"]["devices"] == count
    assert len(p.devices) == len(p.images) == count
    assert eff["data_checksums"] is True
    assert eff["block_size"] == 4096


@needs_root
def test_btrfs_without_data_checksums_mounts_nodatasum(lab: Lab) -> None:
    p = roundtrip(lab, spec(name="b", fs="btrfs", checksums=False))
    assert "nodatasum" in p.effective["mount"]["super_options"]
    assert p.effective["data_checksums"] is False
    assert p.effective["metadata_checksums"] is True


def test_compression_is_btrfs_mount_option_named_once() -> None:
    assert mount_options(spec(fs="btrfs", compression="zstd:3")) == ["compress=zstd:3"]
    forced = spec(fs="btrfs", compression="lzo", compression_force=True)
    assert mount_options(forced) == ["compress-force=lzo"]
    with pytest.raises(pydantic.ValidationError, match="ext4 and xfs do not compress"):
        spec(fs="ext4", compression="zstd")
    with pytest.raises(pydantic.ValidationError, match="not a btrfs compression; use zstd"):
        spec(fs="btrfs", compression="zstd:16")
    with pytest.raises(pydantic.ValidationError, match="needs `compression`"):
        spec(fs="btrfs", compression_force=True)
    twice = spec(fs="btrfs", compression="zstd", mount_options=["noatime,compress=lzo"])
    assert any("give it once" in p for p in user_arg_problems(twice))


@needs_root
@pytest.mark.parametrize("force", [None, True])
def test_btrfs_compression_is_in_effect_and_shrinks_what_compresses(
    lab: Lab, force: bool | None
) -> None:
    """16 MiB of text-like data take far less than 16 MiB on zstd:3; the mount says so."""
    p = lab.provision(spec(name="z", fs="btrfs", compression="zstd:3", compression_force=force))
    try:
        option = "compress-force=zstd:3" if force else "compress=zstd:3"
        assert option in p.effective["mount"]["super_options"], p.effective["mount"]
        assert p.effective["compression"] == "zstd:3"
        assert p.effective["compression_force"] is bool(force)
        before = statvfs_used_bytes(p.workdir, sync=True)
        line = b"fslab compresses this line, and the next one is the same. 0123456789\n"
        (p.workdir / "text.dat").write_bytes(line * ((16 << 20) // len(line)))
        used = statvfs_used_bytes(p.workdir, sync=True) - before
        assert used < (16 << 20) // 4, f"{used} bytes on disk for 16 MiB"
    finally:
        teardown(p, lab.journal)
    assert_gone(p)


# --------------------------------------------------------------------------- fscrypt


@needs_root
def test_fscrypt_workdir_is_encrypted(lab: Lab, system: System) -> None:
    target = spec(name="enc", fs="ext4", encryption="fscrypt")
    if check(target, system):
        pytest.skip(f"not on this machine: {check(target, system)}")
    p = lab.provision(target, 0.01)
    try:
        assert p.mountpoint is not None
        assert p.workdir == p.mountpoint / "encrypted"
        assert "encrypt" in p.effective["ext4"]["features"]
        flags = sh("lsattr", "-d", str(p.workdir)).split()[0]
        assert "E" in flags, flags
        enc = p.effective["encryption"]
        assert enc["version"] == 2
        assert enc["contents_mode"] == "AES-256-XTS"
        # The driver doing the work, as the kernel picks it: what the cost depends on.
        assert enc["contents_driver"] == cipher_driver("AES-256-XTS") is not None
        facts = dict(target_facts(TargetInfo("enc", {}, p.effective)))
        assert facts["encryption"].startswith(f"fscrypt AES-256-XTS by {enc['contents_driver']}")
        use(p)
        # On the device, the file's name is not in clear text.
        assert "probe.dat" not in sh("debugfs", "-R", "ls -l /encrypted", p.devices[0])
    finally:
        teardown(p, lab.journal)
    assert_gone(p)


# --------------------------------------------------------------------------- dir


PROC_CRYPTO = """name         : xts(aes)
driver       : xts(ecb(aes-fixed-time))
module       : kernel
priority     : 101

name         : xts(aes)
driver       : xts-aes-vaes-avx2
module       : aesni_intel
priority     : 600

name         : cts(cbc(aes))
driver       : cts(cbc(ecb(aes-fixed-time)))
priority     : 101
"""


def test_the_aes_driver_the_kernel_picks_is_named() -> None:
    """The highest priority wins, as in the kernel's crypto API; it says whether the CPU's
    AES instructions do the work (portable C is several times slower)."""
    assert cipher_driver("AES-256-XTS", PROC_CRYPTO) == "xts-aes-vaes-avx2"
    assert uses_cpu_aes("xts-aes-vaes-avx2") is True
    assert cipher_driver("AES-256-CTS", PROC_CRYPTO) == "cts(cbc(ecb(aes-fixed-time)))"
    assert uses_cpu_aes("xts(ecb(aes-fixed-time))") is False
    assert cipher_driver("Adiantum", PROC_CRYPTO) is None


def test_dir_target_makes_and_removes_its_own_directory(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("user data")
    journal = MemoryJournal()
    p = provision(spec(name="d", dir=str(tmp_path)), tmp_path / "unused", journal)
    assert p.workdir.parent == tmp_path.resolve() and p.workdir.is_dir()
    assert p.mountpoint is None and p.devices == () and p.images == ()
    assert p.effective["kind"] == "dir" and p.effective["fs"]
    assert p.effective["mount"]["fstype"] == p.effective["fs"]
    (p.workdir / "sub").mkdir()
    (p.workdir / "sub" / "f").write_text("x")
    teardown(p, journal)
    assert not p.workdir.exists()
    assert (tmp_path / "keep.txt").read_text() == "user data"
    assert not (tmp_path / "unused").exists()


# --------------------------------------------------------------------------- check


def test_check_refuses_what_this_kernel_cannot_do(system: System) -> None:
    made_up = dataclasses.replace(system, has_device_mapper=False, is_root=True)
    (why,) = check(spec(name="raid5-md", fs="ext4", encryption="dm-crypt"), made_up)
    assert why.startswith('target `raid5-md`: `encryption = "dm-crypt"` needs device-mapper')
    assert "fscrypt" in why

    for fs, size, words in [
        ("ext4", "3000", "power of two"),
        ("ext4", "128KiB", "from 1KiB to 64KiB"),
        ("ext4", "8KiB", "up to the page size"),
        ("xfs", "256", "from 1KiB to 64KiB"),
        ("btrfs", "64KiB", "sector sizes"),
    ]:
        (why,) = check(spec(fs=fs, block_size=size), made_up)
        assert f"`block_size = '{size}'`" in why and words in why, why

    (why,) = check(spec(fs="ext4", cluster_size="4KiB"), made_up)
    assert "`cluster_size = '4KiB'` must be a power of two larger than the block size" in why
    (why,) = check(spec(fs="xfs", loop={"size": "100MiB"}), made_up)
    assert "below the 300MiB xfs needs" in why
    assert not check(spec(fs="xfs", loop={"size": "100MiB"}), made_up, 0.5)

    with pytest.raises(pydantic.ValidationError, match=r"xfs has no `cluster_size`.*block_size"):
        spec(fs="xfs", cluster_size="64KiB")


def test_check_names_missing_root_tools_and_kernel_parts(system: System) -> None:
    poor = dataclasses.replace(
        system,
        is_root=False,
        has_loop=False,
        filesystems=frozenset({"ext4"}),
        tools={**system.tools, "mkfs.xfs": None},
        ext4_encryption=False,
    )
    problems = check(spec(name="x", fs="xfs"), poor)
    text = "\n".join(problems)
    assert "needs root" in text
    assert "`fs = 'xfs'` needs xfs in the kernel (CONFIG_XFS_FS)" in text
    assert "`mkfs.xfs` is not installed; install xfsprogs" in text
    assert "loop devices are not available" in text
    (why,) = [p for p in check(spec(fs="ext4", encryption="fscrypt"), poor) if "fscrypt" in p]
    assert "CONFIG_FS_ENCRYPTION" in why
    (why,) = check(spec(name="d", dir="/nonexistent/fslab"), poor)
    assert why == "target `d`: `dir = '/nonexistent/fslab'` does not exist; create it first"


def test_side_effects_say_what_will_happen_and_touch_nothing(tmp_path: Path) -> None:
    work = tmp_path / "work"
    target = spec(
        name="r1", fs="btrfs", loop={"size": "4GiB", "count": 2}, profile="raid1", checksums=False
    )
    words = side_effects(target, work, 0.1)
    text = "\n".join(words)
    assert f"create the sparse image {work.resolve()}/r1/image0.img (410MiB)" in text
    assert "`mkfs.btrfs -f -L fslab-r1 -d raid1 -U '<new uuid>' -- '<loop0>' '<loop1>'`" in text
    assert "nodatasum" in text and f"{work.resolve()}/r1/mnt" in text
    assert "detach the loop devices" in text
    enc = "\n".join(side_effects(spec(name="e", fs="ext4", encryption="fscrypt"), work))
    assert "-O encrypt" in enc and "encrypt " + str(work.resolve() / "e/mnt/encrypted") in enc
    assert not work.exists()


# --------------------------------------------------------------------------- undo


@needs_root
def test_undo_is_idempotent_and_safe_on_what_is_gone(lab: Lab) -> None:
    p = lab.provision(spec(name="u", fs="ext4"), 0.01)
    entries = [e for e in lab.journal.entries if e.state == "done"]
    assert [e.action for e in entries] == ["mkdir", "image", "loop", "mkfs", "mkdir", "mount"]
    for e in reversed(entries):
        undo(e.action, e.subject, e.details)
        undo(e.action, e.subject, e.details)
        lab.journal.undone(e.id)
    assert_gone(p)
    # Never made at all: nothing to do, no error.
    ghost = lab.root / "ghost"
    undo("mount", str(ghost / "mnt"), {"device": "/dev/loop999"})
    undo("loop", "/dev/loop999", {"image": str(ghost / "image.img")})
    undo("image", str(ghost / "image.img"), {})
    undo("mkdir", str(ghost), {})
    undo("fscrypt_key", str(ghost), {"identifier": "00" * 16})


@needs_root
def test_undo_never_deletes_through_a_mount(lab: Lab) -> None:
    dev = lab.device("d.img")
    sh("mkfs.ext4", "-q", dev)
    mnt = lab.mount(dev, "m")
    (mnt / "precious").write_text("x")
    mine = lab.owned.details()
    with pytest.raises(TargetError, match="still mounted"):
        undo("mkdir", str(lab.root), {"recursive": True, **mine})
    with pytest.raises(TargetError, match="still uses it"):
        undo("image", str(lab.root / "d.img"), mine)
    with pytest.raises(TargetError, match="not from"):
        undo("mount", str(mnt), {"device": "/dev/loop999", **mine})
    assert (mnt / "precious").read_text() == "x"


@needs_root
def test_failure_half_way_undoes_what_was_done(lab: Lab, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(*args: Any, **kw: Any) -> list[str]:
        raise KeyboardInterrupt

    monkeypatch.setattr(provision_module, "mkfs_argv", interrupted)
    with pytest.raises(KeyboardInterrupt):
        lab.provision(spec(name="half", fs="btrfs", loop={"count": 2}), 0.01)
    actions = [e.action for e in lab.journal.entries]
    assert actions.count("loop") == 2 and "mkfs" not in actions
    assert all(e.state == "undone" for e in lab.journal.entries)
    assert not (lab.workdir / "half").exists() and lab.workdir.is_dir()


_KILLED = """
import importlib, json, os, signal, sys
from pathlib import Path
from fslab.targets.spec import TargetSpec
p = importlib.import_module("fslab.targets.provision")

log = open(sys.argv[1], "a")
n = 0
def write(*event):
    log.write(json.dumps(event) + "\\n"); log.flush(); os.fsync(log.fileno())
class FileJournal:
    def record(self, action, subject, details):
        global n
        n += 1
        write("record", n, action, subject, details)
        return n
    def done(self, i): write("done", i)
    def undone(self, i): write("undone", i)
def die(*args, **kw):
    os.kill(os.getpid(), signal.SIGKILL)
p.mkfs_argv = die
target = TargetSpec(name="killed", fs="ext4", loop={"size": "64MiB", "count": 1})
p.provision(target, Path(sys.argv[2]), FileJournal())
"""


@needs_root
def test_sigkill_half_way_leaves_a_journal_whose_undo_removes_everything(lab: Lab) -> None:
    log = lab.root / "journal.jsonl"
    proc = subprocess.run(
        [sys.executable, "-c", _KILLED, str(log), str(lab.workdir)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    entries: dict[int, dict[str, Any]] = {}
    for line in log.read_text().splitlines():
        event = json.loads(line)
        if event[0] == "record":
            entries[event[1]] = {"action": event[2], "subject": event[3], "details": event[4]}
        else:
            entries[event[1]]["state"] = event[0]
    # Provisioning undoes nothing itself when killed: it must all be in the journal.
    for e in entries.values():
        if e["action"] == "loop":
            lab.on_cleanup(lambda e=e: undo("loop", e["subject"], e["details"]))
    image = lab.workdir / "killed" / "image.img"
    actions = [e["action"] for e in entries.values()]
    # Another process taking the free loop device first makes provisioning try the next
    # one: then there are several `loop` entries, the last one done.
    assert actions[:2] == ["mkdir", "image"] and set(actions[2:]) == {"loop"}, actions
    assert list(entries.values())[-1].get("state") == "done"
    assert loops_backed_by(image) and image.exists()
    for _ in range(2):
        for e in reversed(entries.values()):
            undo(e["action"], e["subject"], e["details"])
    assert not loops_backed_by(image)
    assert not (lab.workdir / "killed").exists() and lab.workdir.is_dir()


# --------------------------------------------------------------------------- the gate


def first_mib(dev: str) -> str:
    with Path(dev).open("rb") as f:
        return hashlib.sha256(f.read(1 << 20)).hexdigest()


def refused(dev: str, *words: str, path: str | None = None) -> None:
    """The gate refuses `path` (default `dev`) even when forced and confirmed, saying
    `words`, and `dev` is untouched."""
    path = path or dev
    before = first_mib(dev)
    with pytest.raises(SafetyError) as caught:
        check_device(path, force=True, confirmed={path})
    for w in words:
        assert w in caught.value.message, caught.value.message
    assert caught.value.exit_status == 3
    assert first_mib(dev) == before


@needs_root
def test_gate_refuses_a_mounted_device_and_its_aliases(lab: Lab) -> None:
    dev = lab.device("a.img")
    sh("mkfs.ext4", "-q", "-L", "fslab-mine", dev)  # even fslab's own, once mounted
    mnt = lab.mount(dev, "m")
    refused(dev, f"mounted at {mnt}", "in use")
    alias = lab.root / "alias"
    alias.symlink_to(dev)
    refused(dev, f"mounted at {mnt}", f"(it is {dev})", path=str(alias))


@needs_root
def test_gate_refuses_the_second_member_of_a_mounted_btrfs(lab: Lab) -> None:
    first, second = lab.device("b1.img"), lab.device("b2.img")
    sh("mkfs.btrfs", "-q", "-f", "-d", "raid1", "-m", "raid1", first, second)
    lab.mount(first, "m")
    assert not mounts_under(second)  # names alone would not catch it
    refused(second, "in use", "EBUSY")


@needs_root
def test_gate_refuses_a_disk_whose_partition_is_mounted(lab: Lab) -> None:
    image = lab.image("p.img", 64 << 20)
    mbr = bytearray(512)
    sectors = (64 << 20) // 512
    mbr[446:462] = struct.pack(
        "<B3sB3sII", 0, b"\0\x02\0", 0x83, b"\xfe\xff\xff", 2048, sectors - 2048
    )
    mbr[510:512] = b"\x55\xaa"
    with image.open("r+b") as f:
        f.write(mbr)
    dev = lab.loop(image, partscan=True)
    part = dev + "p1"
    if not Path(part).exists() and shutil.which("addpart"):
        # This kernel reads no partition tables (no CONFIG_MSDOS_PARTITION): tell it
        # about the partition directly (BLKPG), as `partx`/`addpart` do.
        sh("addpart", dev, "1", "2048", str(sectors - 2048))
    for _ in range(50):
        if Path(part).exists():
            break
        time.sleep(0.05)
    else:
        pytest.skip(f"{part} did not appear (no partition support, no `addpart`?)")
    sh("mkfs.ext4", "-q", part)
    lab.mount(part, "m")
    refused(dev, f"has partition {Path(part).name} which is mounted")
    refused(part, "mounted at")


@needs_root
def test_gate_refuses_swap(lab: Lab) -> None:
    dev = lab.device("s.img", 64 << 20)
    sh("mkswap", dev)
    sh("swapon", dev)
    lab.on_cleanup(lambda: sh("swapoff", dev) if dev in Path("/proc/swaps").read_text() else "")
    refused(dev, "used as swap")


@needs_root
def test_gate_refuses_a_device_another_program_holds(lab: Lab) -> None:
    dev = lab.device("h.img", 64 << 20)
    fd = os.open(dev, os.O_RDONLY | os.O_EXCL)
    try:
        refused(dev, "in use", "EBUSY")
    finally:
        os.close(fd)
    with hold(dev) as held:
        assert held >= 0
        refused(dev, "in use")
        with pytest.raises(SafetyError, match="cannot hold"), hold(dev):
            pass
        with pytest.raises(OSError) as e:
            os.open(dev, os.O_RDONLY | os.O_EXCL)
        assert e.value.errno == errno.EBUSY
    check_device(dev, force=False, confirmed=set())  # free again


@needs_root
def test_gate_foreign_signature_needs_force_and_confirmation(lab: Lab) -> None:
    dev = lab.device("x.img", 320 << 20)
    sh("mkfs.xfs", "-q", "-L", "theirs", dev)
    before = first_mib(dev)
    for force, confirmed, words in [
        (False, {dev}, "`--force` is not given"),
        (True, set(), "not named again with `--device`"),
        (True, {"/dev/other"}, "not named again with `--device`"),
    ]:
        with pytest.raises(SafetyError) as caught:
            check_device(dev, force=force, confirmed=confirmed)
        assert "holds data fslab did not make (signatures: xfs labelled 'theirs')" in (
            caught.value.message
        )
        assert words in caught.value.message
        assert f"--force --device {dev}" in (caught.value.hint or "")
    assert first_mib(dev) == before
    check_device(dev, force=True, confirmed={dev})


@needs_root
def test_gate_accepts_empty_devices_and_file_systems_fslab_made_by_uuid(lab: Lab) -> None:
    dev = lab.device("f.img", 64 << 20)
    check_device(dev, force=False, confirmed=set())
    # A `fslab-` label proves nothing: anyone can write one.
    sh("mkfs.ext4", "-q", "-L", "fslab-mydata", dev)
    uuid = fs_uuid(dev)
    assert uuid
    with pytest.raises(SafetyError, match="holds data fslab did not make"):
        check_device(dev, force=False, confirmed=set())
    with pytest.raises(SafetyError, match="holds data fslab did not make"):
        check_device(dev, force=False, confirmed=set(), made={"0000-other-uuid": None})
    # A database's claim is checked on the device: this one holds no token.
    with pytest.raises(SafetyError, match="holds data fslab did not make"):
        check_device(dev, force=False, confirmed=set(), made={uuid: "0" * 64})
    # What this process made itself (no database between) is its own by UUID.
    check_device(dev, force=False, confirmed=set(), made={uuid: None})
    assert device_problems(str(lab.root / "f.img")) == ["is not a block device"]
    assert device_problems("/dev/nonexistent-fslab") == ["does not exist"]


@needs_root
def test_device_target_passes_the_gate_then_is_formatted(lab: Lab, system: System) -> None:
    dev = lab.device("t.img", 320 << 20)
    sh("mkfs.xfs", "-q", dev)  # somebody's data
    target = spec(name="dev", fs="ext4", device=[dev])
    assert not check(target, system)
    (why,) = refusals(dev)
    assert why.why.startswith("holds data fslab did not make (signatures: xfs)")
    with pytest.raises(SafetyError):
        lab.provision(target)
    with pytest.raises(SafetyError):
        lab.provision(target, force=True)
    assert "xfs" in sh("blkid", "-p", dev) and not any(lab.workdir.iterdir())

    p = lab.provision(target, force=True, confirmed={dev})
    assert p.effective["ext4"]["label"] == "fslab-dev" and p.images == ()
    (mkfs,) = [e for e in lab.journal.entries if e.action == "mkfs"]
    assert mkfs.details["kind"] == "device" and fs_uuid(dev) == mkfs.details["uuid"]
    use(p)
    teardown(p, lab.journal)
    assert backing_file(dev) == str(lab.root / "t.img")  # the device itself stays
    # The file system fslab made (its UUID recorded, its token on the device) needs no
    # force the next time; its label alone would not do, nor its UUID with another token.
    with pytest.raises(SafetyError):
        lab.provision(target)
    uuid = mkfs.details["uuid"]
    with pytest.raises(SafetyError):
        lab.provision(target, made={uuid: "0" * 64})
    p = lab.provision(target, made={uuid: mkfs.details["token_sha256"]})
    teardown(p, lab.journal)
    assert not mounts_under(lab.root)
