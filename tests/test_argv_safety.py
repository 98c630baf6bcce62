"""What a study passes to the system tools reaches no device but the target's own, and
what `plan` knows about sizes before anything is made.

- `mkfs_args` and `mount_options` cannot name another device (audit F1): parsed with
  each mkfs's option table, refused by `plan` and `run` with exit 2, and the devices
  follow a `--` in the mkfs command.
- A loop image the work directory's file system cannot hold is refused by `plan` (F10).
- A workload too large for a `dir` target's free space, or for the size `mkfs_args`
  gives a file system, is refused by `plan` (F17).
- A failed mount says why, not "dmesg(1) may have more information" (F18).

The root tests work in a scratch directory that the `scratch` fixture clears whatever
happens: it unmounts and detaches everything backed by or mounted under it, then fails
the test if anything was left.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from conftest import fslab, sh

from fslab.errors import TargetError
from fslab.study.check import capacity_bytes, capacity_problems, max_file_bytes
from fslab.study.load import parse_study
from fslab.study.model import TargetSpec
from fslab.study.plan import expand
from fslab.targets import MemoryJournal, provision
from fslab.targets._proc import reason
from fslab.targets.args import user_arg_problems
from fslab.targets.mkfs import mkfs_argv
from fslab.targets.mount import mount_containing, mounts_under

IS_ROOT = os.geteuid() == 0
F = TypeVar("F", bound=Callable[..., Any])
MiB = 1 << 20


def needs_root(f: F) -> F:
    """Marks a test `root` and skips it, with the reason, for other users."""
    skip = pytest.mark.skipif(not IS_ROOT, reason="needs root: loop devices, mkfs, mount")
    return pytest.mark.root(skip(f))  # type: ignore[no-any-return]


def spec(**kw: Any) -> TargetSpec:
    kw.setdefault("name", "t")
    return TargetSpec.model_validate(kw)


# --------------------------------------------------------------------------- the parser


@pytest.mark.parametrize(
    ("fs", "args"),
    [
        ("ext4", ["-L", "name"]),
        ("ext4", ["-Lname", "-qF"]),
        ("ext4", ["-E", "lazy_itable_init=1"]),
        ("ext4", ["-I", "128", "-i", "65536"]),
        ("ext4", ["-qFT", "news"]),
        ("ext4", ["-J", "size=64"]),
        ("ext4", ["-Xvalue"]),  # unknown to fslab, its value in the same word: mkfs decides
        ("xfs", ["-d", "size=1g,agcount=4", "-l", "size=64m"]),
        ("xfs", ["-i", "size=512", "-m", "finobt=0", "-K"]),
        ("btrfs", ["-b", "160m"]),
        ("btrfs", ["--byte-count=160m", "--nodesize", "16k"]),
        ("btrfs", ["--byte", "160m"]),  # getopt_long takes a unique prefix
        ("btrfs", ["-O", "no-holes", "--csum", "xxhash", "-M"]),
        ("btrfs", ["--nosuch"]),
    ],
)
def test_mkfs_args_fslab_can_read_are_passed_on(fs: str, args: list[str]) -> None:
    assert user_arg_problems(spec(fs=fs, mkfs_args=args)) == []


@pytest.mark.parametrize(
    ("fs", "args", "said"),
    [
        ("btrfs", ["/dev/loop7"], "would take it as a device to format"),
        ("btrfs", ["-L", "x", "other.img"], "would take it as a device to format"),
        ("ext4", ["1024"], "a device to format or a block count"),
        ("xfs", ["-f", "img"], "would take it as a device to format"),
        ("ext4", ["-L"], "ends with '-L', which takes a value"),
        ("btrfs", ["--label"], "ends with '--label', which takes a value"),
        ("ext4", ["--"], "has `--`"),
        ("ext4", ["-X", "foo"], "in the same word (`-Xfoo`)"),
        ("btrfs", ["--nosuch", "x"], "in the same word (`--nosuch=x`)"),
        ("ext4", ["-J", "device=/dev/loop7"], "puts the journal on another device"),
        ("ext4", ["-Jdevice=LABEL=journal"], "puts the journal on another device"),
        ("ext4", ["-z", "undo.e2undo"], "write an undo file"),
        ("ext4", ["-U", "clear"], "with a UUID of its own"),
        ("btrfs", ["--uuid", "0d9b0d3e-7c3a-4d43-9e6b-1c2f4e5a6b7c"], "with a UUID of its own"),
        ("xfs", ["-m", "crc=1,uuid=0d9b0d3e-7c3a-4d43-9e6b-1c2f4e5a6b7c"], "UUID of its own"),
        ("xfs", ["-l", "logdev=/dev/loop7"], "puts the xfs log on another device"),
        ("xfs", ["-r", "rtdev=/dev/loop7,size=1g"], "puts the xfs realtime section"),
        ("xfs", ["-d", "name=/tmp/x.img"], "remove `name=`"),
        ("xfs", ["-d", "file,size=1g"], "to a regular file"),
        ("xfs", ["-c", "options=/etc/xfs.conf"], "read options from a file"),
        ("ext4", ["-L", "/dev/sdz"], "a path under /dev/"),
        ("ext4", ["-L/dev/sdz"], "a path under /dev/"),
        ("btrfs", ["--rootdir=/dev/shm"], "a path under /dev/"),
        ("ext4", ["-V"], "only print its version"),
        ("xfs", ["-N"], "only print the geometry"),
        ("btrfs", ["-O", "list-all"], "only list features"),
        # Audit N12: a device glued to a flag passed plan; mkfs then printed its usage.
        ("ext4", ["-F/dev/loop7"], "'/' is none of mkfs.ext4's"),
        ("xfs", ["-f/dev/loop7"], "'/' is none of mkfs.xfs's"),
        ("btrfs", ["-f/dev/loop7"], "'/' is none of mkfs.btrfs's"),
        ("ext4", ["-qF./img"], "the characters after `-qF` as more options"),
    ],
)
def test_mkfs_args_that_could_reach_another_device_are_refused(
    fs: str, args: list[str], said: str
) -> None:
    problems = user_arg_problems(spec(fs=fs, mkfs_args=args))
    assert any(said in p for p in problems), problems
    for p in problems:
        # The key, the value, and what to do.
        assert p.startswith("target `t`: `mkfs_args` "), p
        assert any(a in p for a in args), p
        assert "remove" in p or "instead" in p or "in the same word" in p, p


def test_a_positional_device_is_reported_once() -> None:
    assert len(user_arg_problems(spec(fs="btrfs", mkfs_args=["/dev/loop7"]))) == 1


@pytest.mark.parametrize(
    "options", [["noatime"], ["data=writeback", "commit=30"], ["noatime,nodiratime"]]
)
def test_mount_options_are_passed_on(options: list[str]) -> None:
    assert user_arg_problems(spec(fs="ext4", mount_options=options)) == []


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (["device=/dev/loop7"], "names one more device"),
        (["noatime,device=/dev/loop7"], "names one more device"),
        (["logdev=/dev/sdz"], "puts the xfs log"),
        (["rtdev=/dev/sdz"], "realtime section"),
        (["journal_path=/dev/sdz"], "ext4 journal"),
        (["journal_dev=2049"], "ext4 journal"),
        (["loop"], "loop device of its own"),
        (["loop=/dev/loop3"], "loop device of its own"),
        (["helper=udisks2"], "run a helper program"),
        (["uhelper=udisks2"], "run a helper program"),
        (["context=/dev/sdz"], "a path under /dev/"),
    ],
)
def test_mount_options_that_name_a_device_are_refused(options: list[str], said: str) -> None:
    problems = user_arg_problems(spec(fs="btrfs", mount_options=options))
    assert len(problems) == 1, problems
    assert problems[0].startswith("target `t`: `mount_options` has "), problems
    assert said in problems[0] and problems[0].endswith("remove it"), problems


def _any_block_device() -> str | None:
    for entry in sorted(Path("/sys/block").glob("*")):
        dev = f"/dev/{entry.name}"
        try:
            if stat.S_ISBLK(Path(dev).stat().st_mode):
                return dev
        except OSError:
            continue
    return None


def test_a_symlink_to_a_block_device_is_refused_by_what_it_points_to(tmp_path: Path) -> None:
    dev = _any_block_device()
    if dev is None:
        pytest.skip("no block device on this machine")
    alias = tmp_path / "innocent-name"
    alias.symlink_to(dev)
    for target in (
        spec(fs="btrfs", mkfs_args=["-r", str(alias)]),
        spec(fs="ext4", mount_options=[f"x-anything={alias}"]),
    ):
        problems = user_arg_problems(target)
        assert len(problems) == 1, problems
        assert f"a block device (it is {os.path.realpath(dev)})" in problems[0], problems


# --------------------------------------------------------------------------- mkfs_argv


@pytest.mark.parametrize(("fs", "devices"), [("ext4", 1), ("xfs", 1), ("btrfs", 2)])
def test_mkfs_argv_puts_the_devices_after_a_double_dash(fs: str, devices: int) -> None:
    target = spec(
        fs=fs, mkfs_args=["-L", "mine"], loop={"size": "512MiB", "count": devices}, **(
            {"profile": "raid1"} if devices > 1 else {}
        )
    )  # fmt: skip
    names = [f"/dev/fake{i}" for i in range(devices)]
    argv = mkfs_argv(target, names, 512 * MiB)
    assert argv[-devices - 3 :] == ["-L", "mine", "--", *names]
    assert argv.count("--") == 1


def test_mkfs_argv_refuses_what_plan_refuses() -> None:
    with pytest.raises(ValueError, match="neither an option nor an option's value"):
        mkfs_argv(spec(fs="btrfs", mkfs_args=["/dev/loop7"]), ["/dev/fake0"])
    with pytest.raises(ValueError, match="names one more device"):
        mkfs_argv(spec(fs="btrfs", mount_options=["device=/dev/loop7"]), ["/dev/fake0"])


def test_a_usage_type_written_in_one_word_is_seen() -> None:
    argv = mkfs_argv(spec(fs="ext4", mkfs_args=["-Tnews"]), ["/dev/fake0"], 64 * MiB)
    assert "default" not in argv  # fslab's `-T default` for small images stays out


def test_a_failed_tool_is_reported_by_its_reason_not_a_pointer_to_dmesg() -> None:
    said = [
        "mount: /mnt: wrong fs type, bad option, bad superblock on /dev/loop3, missing "
        "codepage or helper program, or other error.",
        "       dmesg(1) may have more information after failed mount system call.",
    ]
    assert reason(said) == said[0].rstrip(".")
    assert reason(["   ", ""]) is None


# --------------------------------------------------------------------------- capacity


def plan_of(text: str, scale: float = 1.0) -> Any:
    return expand(parse_study(text, "s.toml"), scale)


def study_text(target: str, workload: str = 'file_size = "16MiB"') -> str:
    return f"""
name = "s"
[[target]]
name = "t"
{target}
[[workload]]
name = "w"
rw = "randread"
runtime = "1s"
{workload}
"""


def test_capacity_is_the_size_mkfs_args_give() -> None:
    loop = {"size": "1GiB"}
    assert capacity_bytes(spec(fs="btrfs", loop=loop, mkfs_args=["-b", "160m"]), 1.0) == 160 * MiB
    assert capacity_bytes(spec(fs="btrfs", loop=loop, mkfs_args=["--byte-count=2g"]), 1.0) == (
        1024 * MiB  # no larger than the image
    )
    xfs = spec(fs="xfs", loop=loop, mkfs_args=["-d", "agcount=4,size=400m"])
    assert capacity_bytes(xfs, 1.0) == 400 * MiB


def test_a_workload_larger_than_the_mkfs_args_size_is_refused(tmp_path: Path) -> None:
    target = 'fs = "btrfs"\nloop = { size = "1GiB" }\nmkfs_args = ["-b", "160m"]'
    problems = capacity_problems(
        plan_of(study_text(target, 'file_size = "100MiB"')), "s.toml", tmp_path
    )
    assert len(problems) == 1, problems
    said = str(problems[0])
    assert "160MiB (the size its `mkfs_args` give it)" in said
    assert "a larger size in `mkfs_args`" in said
    # Without the size option the same workload fits the 1 GiB image.
    plan = plan_of(study_text('fs = "btrfs"\nloop = { size = "1GiB" }', 'file_size = "100MiB"'))
    assert capacity_problems(plan, "s.toml", tmp_path) == []


def test_a_dir_target_is_checked_against_its_free_space(tmp_path: Path) -> None:
    target = f'dir = "{tmp_path}"'
    problems = capacity_problems(plan_of(study_text(target, 'file_size = "1PiB"')), "s.toml")
    assert len(problems) == 1, problems
    assert f"{tmp_path} has" in problems[0].what and " free, and a test file" in problems[0].what
    assert capacity_problems(plan_of(study_text(target)), "s.toml") == []


def test_an_absurd_loop_size_is_refused_before_anything_is_made(tmp_path: Path) -> None:
    workdir = tmp_path / "not" / "made" / "yet"
    plan = plan_of(study_text('fs = "ext4"\nloop = { size = "100PiB" }'))
    problems = capacity_problems(plan, "s.toml", workdir)
    assert problems, "100 PiB passed"
    said = "\n".join(map(str, problems))
    assert "`loop.size" in said, said
    assert not (tmp_path / "not").exists()
    # An ordinary size passes.
    plan = plan_of(study_text('fs = "ext4"\nloop = { size = "256MiB" }'))
    assert capacity_problems(plan, "s.toml", workdir) == []


def test_the_largest_file_of_ext4_is_16tib_with_4k_blocks(tmp_path: Path) -> None:
    m = mount_containing(tmp_path)
    if m is None or m.fstype != "ext4" or os.statvfs(tmp_path).f_bsize != 4096:
        pytest.skip("the temporary directory is not on an ext4 with 4 KiB blocks")
    assert max_file_bytes(tmp_path) == (16 << 40) - 4096


# --------------------------------------------------------------------------- as root


class Scratch:
    """A directory for sacrificial devices, mounts and studies, all undone at the end."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.loops: list[str] = []
        self.mounts: list[Path] = []

    def device(self, name: str, size: int = 256 * MiB) -> str:
        """A loop device over a sparse image whose first MiB holds a pattern."""
        image = self.root / name
        with image.open("wb") as f:
            f.write((b"FSLAB-SACRIFICIAL-" * 60000)[:MiB])
            f.truncate(size)
        dev = sh("losetup", "--find", "--show", str(image)).strip()
        self.loops.append(dev)
        return dev

    def mount(self, device: str, name: str) -> Path:
        mnt = self.root / name
        mnt.mkdir()
        sh("mount", device, str(mnt))
        self.mounts.append(mnt)
        return mnt

    def close(self) -> None:
        failures = []
        for mnt in reversed(self.mounts):
            done = subprocess.run(["umount", str(mnt)], capture_output=True, check=False)
            if done.returncode != 0:
                failures.append(f"umount {mnt}: {done.stderr!r}")
        for dev in reversed(self.loops):
            subprocess.run(["losetup", "-d", dev], capture_output=True, check=False)
        # Whatever else a failing test made here (fslab's own loops and mounts).
        left_mounted = [m.mountpoint for m in mounts_under(self.root)]
        for mp in sorted(left_mounted, reverse=True):
            subprocess.run(["umount", "-l", mp], capture_output=True, check=False)
        left_loops = _loops_under(self.root)
        for dev in left_loops:
            subprocess.run(["losetup", "-d", dev], capture_output=True, check=False)
        shutil.rmtree(self.root, ignore_errors=True)
        assert not failures, failures
        assert not left_mounted, f"left mounted: {left_mounted}"
        assert not left_loops, f"left attached: {left_loops}"


def _loops_under(root: Path) -> list[str]:
    out = []
    for backing in Path("/sys/block").glob("loop*/loop/backing_file"):
        if backing.read_text().strip().startswith(f"{root}/"):
            out.append(f"/dev/{backing.parent.parent.name}")
    return out


@pytest.fixture
def scratch() -> Iterator[Scratch]:
    root = Path(os.path.realpath(tempfile.mkdtemp(prefix="fslab-test-argv-")))
    s = Scratch(root)
    try:
        yield s
    finally:
        s.close()


def first_mib(dev: str) -> str:
    with Path(dev).open("rb") as f:
        return hashlib.sha256(f.read(MiB)).hexdigest()


def refused_by_plan_and_run(case: Path, study: str, said: str) -> None:
    """`plan` and `run` both exit 2 naming `said`, with no traceback, and leave nothing
    but the study in `case`."""
    case.mkdir()
    (case / "study.toml").write_text(study)
    for command in ("plan", "run"):
        done = fslab(command, "study.toml", "--results", "r.db", cwd=case)
        assert done.returncode == 2, (command, done.returncode, done.stderr)
        assert said in done.stderr, (command, done.stderr)
        assert "Traceback" not in done.stderr, done.stderr
        assert sorted(p.name for p in case.iterdir()) == ["study.toml"], command


F1_CASES = {
    "btrfs-positional": ('fs = "btrfs"', 'mkfs_args = ["{dev}"]', "`mkfs_args`"),
    "btrfs-alias": ('fs = "btrfs"', 'mkfs_args = ["{alias}"]', "`mkfs_args`"),
    "xfs-logdev": ('fs = "xfs"', 'mkfs_args = ["-l", "logdev={dev}"]', "log on another device"),
    "ext4-journal": ('fs = "ext4"', 'mkfs_args = ["-J", "device={dev}"]', "journal on another"),
    "mount-device": ('fs = "btrfs"', 'mount_options = ["device={dev}"]', "`mount_options`"),
    "ext4-glued": ('fs = "ext4"', 'mkfs_args = ["-F{dev}"]', "is none of mkfs.ext4's"),
    "xfs-glued": ('fs = "xfs"', 'mkfs_args = ["-f{dev}"]', "is none of mkfs.xfs's"),
}


@needs_root
@pytest.mark.parametrize("case", list(F1_CASES))
def test_no_device_reaches_mkfs_or_mount_through_the_study(scratch: Scratch, case: str) -> None:
    fs, line, said = F1_CASES[case]
    victim = scratch.device("victim.img")
    alias = scratch.root / "alias"
    alias.symlink_to(victim)
    before = first_mib(victim)
    study = f"""
name = "f1"
[[target]]
name = "t"
{fs}
loop = {{ size = "512MiB" }}
{line.format(dev=victim, alias=alias)}
[[workload]]
name = "w"
file_size = "16MiB"
runtime = "1s"
"""
    refused_by_plan_and_run(scratch.root / case, study, said)
    assert first_mib(victim) == before
    assert _loops_under(scratch.root) == [victim]


@needs_root
def test_plan_and_run_refuse_an_absurd_loop_size(scratch: Scratch) -> None:
    study = study_text('fs = "ext4"\nloop = { size = "100PiB" }')
    refused_by_plan_and_run(scratch.root / "huge", study, "`loop.size")


@needs_root
def test_plan_refuses_a_workload_larger_than_a_dir_targets_free_space(scratch: Scratch) -> None:
    dev = scratch.device("small.img", 64 * MiB)
    sh("mkfs.ext4", "-q", "-F", dev)
    mnt = scratch.mount(dev, "small")
    refused_by_plan_and_run(
        scratch.root / "big",
        study_text(f'dir = "{mnt}"', 'file_size = "200MiB"'),
        f"{mnt} has",
    )
    fits = scratch.root / "fits"
    fits.mkdir()
    (fits / "study.toml").write_text(study_text(f'dir = "{mnt}"'))
    done = fslab("plan", "study.toml", "--results", "r.db", cwd=fits)
    assert done.returncode == 0, done.stderr


@needs_root
def test_plan_refuses_a_workload_larger_than_the_mkfs_args_size(scratch: Scratch) -> None:
    target = 'fs = "btrfs"\nloop = { size = "1GiB" }\nmkfs_args = ["-b", "160m"]'
    refused_by_plan_and_run(
        scratch.root / "btrfs",
        study_text(target, 'file_size = "100MiB"'),
        "(the size its `mkfs_args` give it)",
    )


@needs_root
def test_a_failed_mount_says_why(scratch: Scratch) -> None:
    journal = MemoryJournal()
    target = spec(fs="ext4", loop={"size": "64MiB"}, mount_options=["nosuchoption"])
    (scratch.root / "work").mkdir()
    with pytest.raises(TargetError) as failed:
        provision(target, scratch.root / "work", journal)
    message = failed.value.message
    assert "dmesg(1) may have more" not in message
    assert "wrong fs type, bad option" in message or "Unknown parameter" in message, message
    if Path("/dev/kmsg").exists():
        assert "Unknown parameter 'nosuchoption'" in message, message
    assert all(e.state == "undone" for e in journal.entries), journal.entries
    assert not (scratch.root / "work" / "t").exists()
