"""The file systems fslab can make beyond ext4, xfs and btrfs (NTFS through ntfs-3g here;
ntfs3, f2fs and exFAT where a kernel has them), named mount settings, and target keys
swept like workload keys.

The command lines of every family are run for real on an image file (mkfs needs no
kernel support for that); what this kernel lacks is refused by `check` at the `fs` key.
Root tests make NTFS on a loop device through ntfs-3g and read back mount settings.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pydantic
import pytest
from conftest import run_fslab, sh
from test_targets import Lab, assert_gone, lab, needs_root, roundtrip, spec, system, use

from fslab.report.context import TargetInfo, target_facts
from fslab.study.load import parse_study
from fslab.study.problems import StudyError
from fslab.targets import System, check, side_effects, teardown, undo
from fslab.targets.args import _PRINT_ONLY, _TABLES, user_arg_problems
from fslab.targets.families import FAMILIES
from fslab.targets.journal import fs_uuid
from fslab.targets.layers import (
    dm_targets,
    luks_format_argv,
    luks_open_argv,
    lvm_create_argvs,
    md_create_argv,
    personalities,
    vg_members,
)
from fslab.targets.mkfs import mkfs_argv, mount_options, name_argv, new_uuid
from fslab.targets.mountopts import SETTINGS, in_effect
from fslab.targets.owner import NotOurs
from fslab.targets.system import NAME_TOOL, TOOLS

__all__ = ["lab", "system"]  # fixtures, used by name

MiB = 1 << 20


def test_every_family_has_what_planning_and_parsing_need() -> None:
    """A new row in FAMILIES without its tools, option table or limits fails here."""
    for name, f in FAMILIES.items():
        for tool in (f.mkfs, f.inspect, f.mount_tool, NAME_TOOL.get(f.uuid)):
            if tool is not None:
                assert tool in TOOLS, f"{name}: {tool} is not in system.TOOLS"
        assert name in _TABLES and name in _PRINT_ONLY, name
        assert f.min_device_bytes >= 16 * MiB and f.label_max >= 11
        for sizes in (f.block_sizes, f.cluster_sizes):
            assert sizes is None or sizes[0] < sizes[1]


@pytest.mark.parametrize(
    ("fs", "extra", "argv"),
    [
        ("ntfs", {"cluster_size": "64KiB"},
         ["mkntfs", "-F", "-f", "-q", "-L", "fslab-t", "-c", "65536", "IMG"]),
        ("ntfs3", {}, ["mkntfs", "-F", "-f", "-q", "-L", "fslab-t", "IMG"]),
        ("f2fs", {}, ["mkfs.f2fs", "-f", "-q", "-l", "fslab-t", "-U", "UUID", "--", "IMG"]),
        ("exfat", {"cluster_size": "128KiB"},
         ["mkfs.exfat", "-L", "fslab-t", "-c", "131072", "--", "IMG"]),
    ],
)  # fmt: skip
def test_mkfs_command_lines_make_the_file_system_asked_for(
    tmp_path: Path, fs: str, extra: dict[str, Any], argv: list[str]
) -> None:
    """Each family's command line, then run as it is on an image file: blkid finds the
    type, label and name fslab gave it."""
    f = FAMILIES[fs]
    if shutil.which(f.mkfs) is None:
        pytest.skip(f"{f.mkfs} is not installed ({f.package}; scripts/setup installs it)")
    image = tmp_path / "image.img"
    with image.open("wb") as out:
        out.truncate(f.min_device_bytes)
    target = spec(fs=fs, **extra)
    uuid = new_uuid(fs)
    got = mkfs_argv(target, [str(image)], f.min_device_bytes, uuid=uuid)
    assert got == [{"IMG": str(image), "UUID": uuid}.get(w, w) for w in argv]
    subprocess.run(got, check=True, capture_output=True)
    named = name_argv(fs, str(image), uuid)
    if named is not None:
        subprocess.run(named, check=True, capture_output=True)
    info = sh("blkid", "-p", "-o", "export", str(image))
    assert f"TYPE={f.blkid_type}" in info and "LABEL=fslab-t" in info, info
    assert fs_uuid(str(image)) == uuid
    if fs == "exfat":
        assert uuid[4] == "-" and len(uuid) == 9  # blkid's form of a 32-bit serial


def test_a_family_this_kernel_lacks_is_refused_at_fs_naming_what_is_missing(
    system: System,
) -> None:
    bare = dataclasses.replace(
        system, is_root=True, has_loop=True, filesystems=frozenset({"ext4", "xfs", "btrfs"})
    )
    for fs, config in [("f2fs", "CONFIG_F2FS_FS"), ("exfat", "CONFIG_EXFAT_FS"),
                       ("ntfs3", "CONFIG_NTFS3_FS"), ("ntfs", "CONFIG_FUSE_FS")]:  # fmt: skip
        problems = [m for m in check(spec(name="x", fs=fs), bare) if f"`fs = '{fs}'`" in m]
        assert len(problems) == 1, check(spec(name="x", fs=fs), bare)
        assert config in problems[0] and "has none" in problems[0], problems[0]
    has_all = dataclasses.replace(bare, filesystems=frozenset(f.kernel for f in FAMILIES.values()))
    for fs in FAMILIES:
        assert not [m for m in check(spec(fs=fs), has_all) if "`fs =" in m], fs


def test_plan_refuses_a_study_asking_for_a_family_the_kernel_lacks(tmp_path: Path) -> None:
    if "f2fs" in System.probe().filesystems:
        pytest.skip("this kernel has f2fs")
    study = tmp_path / "s.toml"
    study.write_text(
        'name = "f"\n[[target]]\nname = "f2"\nfs = "f2fs"\n\n[[workload]]\nrw = "read"\n'
    )
    proc = run_fslab("plan", study)
    assert proc.returncode == 2, proc.stderr
    assert f"{study}:4: target[0] (f2).fs: `fs = 'f2fs'` needs f2fs in the kernel" in proc.stderr
    assert "CONFIG_F2FS_FS" in proc.stderr
    assert "hint: `fslab doctor` lists what this machine has and lacks" in proc.stderr


def test_keys_a_family_does_not_have_are_refused() -> None:
    with pytest.raises(pydantic.ValidationError, match="xfs has no `cluster_size`"):
        spec(fs="xfs", cluster_size="64KiB")
    with pytest.raises(pydantic.ValidationError, match=r"ntfs has no `block_size`.*cluster_size"):
        spec(fs="ntfs", block_size="4KiB")
    with pytest.raises(pydantic.ValidationError, match="ntfs has no checksums"):
        spec(fs="ntfs", checksums=False)
    with pytest.raises(pydantic.ValidationError, match="ntfs uses one device; across several"):
        spec(fs="ntfs", loop={"count": 2})
    (why,) = check(spec(fs="ntfs", cluster_size="128KiB"), System.probe(), 1.0)[-1:]
    assert "power of two from 512B to 64KiB" in why
    # mkfs.f2fs's -c adds devices the gate never saw; mkntfs -n makes nothing.
    assert any(
        "adds devices" in p
        for p in user_arg_problems(spec(fs="f2fs", mkfs_args=["-c", "/dev/sdz"]))
    )
    assert any(
        "would only print" in p for p in user_arg_problems(spec(fs="ntfs", mkfs_args=["-n"]))
    )


# --------------------------------------------------------------------------- NTFS


@needs_root
def test_ntfs_through_ntfs3g_is_made_mounted_and_said_to_be_cached(lab: Lab) -> None:
    if shutil.which("mkntfs") is None or "fuseblk" not in System.probe().filesystems:
        pytest.skip("needs ntfs-3g and FUSE (scripts/setup installs ntfs-3g)")
    p = lab.provision(spec(name="n", fs="ntfs", cluster_size="64KiB", loop={"size": "64MiB"}))
    try:
        eff = p.effective
        assert eff["mount"]["fstype"] == "fuseblk"
        assert eff["cluster_size"] == 65536 and eff["block_size"] == 65536
        assert fs_uuid(p.devices[0]) == eff["uuid"] and len(eff["uuid"]) == 16
        assert "not honoured" in eff["direct_io"]
        # The FUSE daemon is the file system: its CPU is the workload's.
        assert p.servers and all(Path(f"/proc/{pid}").exists() for pid in p.servers)
        use(p)
        # A 1-byte file lives in its MFT record; a 100 KiB one takes two 64 KiB clusters.
        (p.workdir / "big").write_bytes(os.urandom(100 << 10))
        os.sync()
        assert (p.workdir / "big").stat().st_blocks * 512 == 128 << 10
        facts = dict(target_facts(TargetInfo("n", {}, eff)))
        assert facts["file system"] == "ntfs" and facts["cluster size"] == "64KiB"
    finally:
        teardown(p, lab.journal)
    assert_gone(p)


# --------------------------------------------------------------------------- mount settings


def test_mount_settings_become_mount_options_once_and_only_where_they_apply() -> None:
    target = spec(fs="ext4", mount={"atime": "noatime", "lazytime": True, "commit_s": 30,
                                    "data": "writeback", "discard": False})  # fmt: skip
    assert mount_options(target) == [
        "noatime",
        "lazytime",
        "nodiscard",
        "commit=30",
        "data=writeback",
    ]
    assert mount_options(spec(fs="xfs", mount={"logbsize": "256KiB"})) == ["logbsize=256k"]
    assert mount_options(spec(fs="btrfs", mount={"ssd": False, "space_cache": False})) == [
        "nossd", "nospace_cache"
    ]  # fmt: skip
    with pytest.raises(pydantic.ValidationError, match=r"`mount\.logbsize` is not a ext4 mount"):
        spec(fs="ext4", mount={"logbsize": "64KiB"})
    with pytest.raises(pydantic.ValidationError, match="no xfs log buffer size"):
        spec(fs="xfs", mount={"logbsize": "48KiB"})
    with pytest.raises(pydantic.ValidationError, match="a `dir` target is used as it is: mount"):
        spec(dir="/tmp", mount={"atime": "noatime"})
    twice = spec(fs="ext4", mount={"atime": "noatime"}, mount_options=["relatime"])
    (why,) = user_arg_problems(twice)
    assert "`mount_options` has 'relatime' and the target sets `mount.atime`" in why
    # Read back: what the kernel shows, the default where it shows nothing.
    assert in_effect("ext4", ["rw", "relatime"]) == {
        "atime": "relatime", "lazytime": False, "discard": False, "commit_s": 5,
        "data": "ordered",
    }  # fmt: skip
    assert in_effect("btrfs", ["rw", "discard=async", "ssd", "space_cache=v2"])["discard"] == (
        "async"
    )
    assert set(in_effect("ntfs", ["rw"])) == {"atime"}
    assert all(s.filesystems for s in SETTINGS.values())


@needs_root
@pytest.mark.parametrize(
    ("fs", "mount", "shown"),
    [
        ("ext4", {"atime": "noatime", "lazytime": True, "commit_s": 30, "data": "writeback"},
         {"atime": "noatime", "lazytime": True, "commit_s": 30, "data": "writeback"}),
        ("ext4", {"atime": "strictatime"}, {"atime": "strictatime", "commit_s": 5}),
        ("xfs", {"logbsize": "256KiB", "discard": True}, {"logbsize": "256k", "discard": True}),
        ("btrfs", {"ssd": True, "autodefrag": True, "discard": "async", "commit_s": 60},
         {"ssd": True, "autodefrag": True, "discard": "async", "commit_s": 60}),
    ],
    ids=["ext4-noatime", "ext4-strictatime", "xfs-logbsize", "btrfs-ssd"],
)  # fmt: skip
def test_mount_settings_are_in_effect_and_in_the_report(
    lab: Lab, fs: str, mount: dict[str, Any], shown: dict[str, Any]
) -> None:
    p = roundtrip(lab, spec(name="m", fs=fs, mount=mount))
    settings = p.effective["mount_settings"]
    assert {k: settings[k] for k in shown} == shown, settings
    facts = dict(target_facts(TargetInfo("m", {}, p.effective)))
    first = next(iter(shown))
    assert f"mount {first.removesuffix('_s').replace('_', ' ')}" in facts, facts


# --------------------------------------------------------------------------- target sweeps


SWEPT = """name = "atime"

[[target]]
name = "ext4"
fs = "ext4"
loop = { size = "1GiB" }
mount = [{ atime = "relatime" }, { atime = "noatime", lazytime = true }]
scheduler = ["none", "bfq"]

[[target]]
name = "nt"
fs = "ntfs"
cluster_size = ["4KiB", "64KiB"]

[[workload]]
rw = "read"
"""


def test_a_target_key_given_as_a_list_is_a_sweep_axis() -> None:
    study = parse_study(SWEPT, "s.toml")
    assert [t.name for t in study.target] == [
        "ext4-relatime-none", "ext4-relatime-bfq", "ext4-noatime-lazytime-none",
        "ext4-noatime-lazytime-bfq", "nt-4KiB", "nt-64KiB",
    ]  # fmt: skip
    assert study.target[3].mount is not None and study.target[3].mount.lazytime is True
    assert study.target[3].scheduler == "bfq"
    assert study.target[5].cluster_size == "64KiB"


def test_a_problem_in_a_swept_target_is_found_at_its_table() -> None:
    bad = SWEPT.replace('cluster_size = ["4KiB", "64KiB"]', 'block_size = ["4KiB", "64KiB"]')
    with pytest.raises(StudyError) as e:
        parse_study(bad, "s.toml")
    text = str(e.value)
    # Both expanded targets fail at the one table the file has (line 10), named by it.
    assert "s.toml:10: target[1] (nt-4KiB)" in text and "s.toml:10: target[1] (nt-64KiB)" in text
    assert "ntfs has no `block_size`" in text


def test_side_effects_of_ntfs_name_the_serial_step(tmp_path: Path) -> None:
    words = "\n".join(side_effects(spec(name="n", fs="ntfs", cluster_size="4KiB"), tmp_path))
    assert "`mkntfs -F -f -q -L fslab-n -c 4096 '<loop0>'`" in words
    assert "ntfslabel '--new-serial=<new serial>' '<loop0>'" in words
    assert "mount -t ntfs-3g" in words


# --------------------------------------------------------------------------- dm-crypt, md


def test_dm_crypt_and_md_command_lines(tmp_path: Path) -> None:
    key = tmp_path / "key"
    assert luks_format_argv("/dev/loop7", key, 4096) == [
        "cryptsetup", "luksFormat", "--batch-mode", "--type", "luks2", "--cipher",
        "aes-xts-plain64", "--key-size", "512", "--pbkdf", "pbkdf2",
        "--pbkdf-force-iterations", "1000", "--key-file", str(key), "--sector-size", "4096",
        "/dev/loop7",
    ]  # fmt: skip
    assert luks_open_argv("/dev/loop7", "fslab-x", key, workqueues=False)[-4:] == [
        "--perf-no_read_workqueue", "--perf-no_write_workqueue", "/dev/loop7", "fslab-x"
    ]  # fmt: skip
    assert "--perf-no_read_workqueue" not in luks_open_argv("/d", "n", key, workqueues=True)
    assert md_create_argv("/dev/md/fslab-r", "raid5", ["/dev/loop1", "/dev/loop2",
                                                       "/dev/loop3"], 64 << 10) == [
        "mdadm", "--create", "/dev/md/fslab-r", "--run", "--metadata=1.2", "--level=raid5",
        "--raid-devices=3", "--assume-clean", "--bitmap=none", "--chunk=64K",
        "/dev/loop1", "/dev/loop2", "/dev/loop3",
    ]  # fmt: skip
    assert personalities("Personalities : [raid1] [raid6] [raid5] [raid4]\nunused devices:") == {
        "raid1", "raid4", "raid5", "raid6"
    }  # fmt: skip
    assert dm_targets("crypt            v1.27.0\nlinear  v1.4.0\n") == {"crypt", "linear"}


def test_luks_format_makes_a_luks2_header_on_an_image(tmp_path: Path) -> None:
    """The format command as built, run for real on an image file (no device-mapper needed
    to write a header): cryptsetup reads back the cipher and sector size fslab asked for."""
    if shutil.which("cryptsetup") is None:
        pytest.skip("cryptsetup is not installed (cryptsetup-bin)")
    image = tmp_path / "image.img"
    with image.open("wb") as out:
        out.truncate(32 * MiB)
    key = tmp_path / "key"
    key.write_bytes(os.urandom(64))
    subprocess.run(luks_format_argv(str(image), key, 4096), check=True, capture_output=True)
    dump = sh("cryptsetup", "luksDump", str(image))
    assert "aes-xts-plain64" in dump and "sector: 4096" in dump and "Version:       \t2" in dump


def test_dm_crypt_and_md_are_refused_naming_what_the_machine_lacks(system: System) -> None:
    bare = dataclasses.replace(
        system, is_root=True, has_device_mapper=False, dm_crypt=False, has_md=False,
        md_personalities=frozenset(), tools={**system.tools, "cryptsetup": None, "mdadm": None},
    )  # fmt: skip
    (why,) = [m for m in check(spec(name="bl", fs="ext4", encryption="dm-crypt"), bare)]
    assert why.startswith('target `bl`: `encryption = "dm-crypt"` needs device-mapper')
    assert "CONFIG_DM_CRYPT" in why and "cryptsetup-bin" in why and "fscrypt" in why
    raid = spec(name="ss", fs="ext4", raid="raid5", raid_chunk="64KiB", loop={"count": 3})
    (why,) = check(raid, bare)
    assert "`raid = 'raid5'` needs md RAID (CONFIG_BLK_DEV_MD" in why and "mdadm" in why
    # Everything there but the level's personality; then everything: no refusal.
    some = dataclasses.replace(bare, has_md=True, md_personalities=frozenset({"raid1"}),
                               tools={**system.tools, "mdadm": "/sbin/mdadm"})  # fmt: skip
    (why,) = check(raid, some)
    assert "the raid5 personality (CONFIG_MD_RAID456, module raid456)" in why
    full = dataclasses.replace(
        some, md_personalities=frozenset({"raid5"}), has_device_mapper=True, dm_crypt=True,
        tools={**some.tools, "cryptsetup": "/sbin/cryptsetup"},
    )  # fmt: skip
    assert check(raid, full) == []
    assert check(spec(name="bl", fs="ext4", encryption="dm-crypt"), full) == []
    # md on real devices: its undo could not prove the members fslab's.
    (why,) = [m for m in check(spec(fs="ext4", raid="raid1", device=["/dev/null", "/dev/zero"]),
                                    full) if "`raid" in m]  # fmt: skip
    assert "built on loop devices only" in why
    with pytest.raises(pydantic.ValidationError, match="md raid6 needs at least 4 devices"):
        spec(fs="ext4", raid="raid6", loop={"count": 3})
    with pytest.raises(pydantic.ValidationError, match="btrfs spans devices itself"):
        spec(fs="btrfs", raid="raid1", loop={"count": 2})
    with pytest.raises(pydantic.ValidationError, match="are dm-crypt's"):
        spec(fs="ext4", crypt_workqueues=False)
    with pytest.raises(pydantic.ValidationError, match="set `raid`"):
        spec(fs="xfs", loop={"count": 2})


def test_btrfs_raid56_and_raid1c34_are_refused_where_the_kernel_lacks_them(
    system: System,
) -> None:
    """A kernel's btrfs says which profiles it makes in /sys/fs/btrfs/features; a btrfs
    not loaded yet is judged by the kernel's release (raid56 from 3.9, raid1c34 from 5.5)."""
    raid5 = spec(name="r5", fs="btrfs", profile="raid5", metadata_profile="raid1c3",
                 loop={"count": 3})  # fmt: skip
    old = dataclasses.replace(system, btrfs_features=frozenset({"raid1c34"}))
    (why,) = check(raid5, old)
    assert why.startswith("target `r5`: `profile = 'raid5'` needs btrfs's raid56 feature"), why
    assert "(/sys/fs/btrfs/features)" in why and "choose another profile" in why
    neither = dataclasses.replace(system, btrfs_features=frozenset())
    assert [m.split("`")[3] for m in check(raid5, neither)] == [
        "profile = 'raid5'", "metadata_profile = 'raid1c3'"]  # fmt: skip
    has = dataclasses.replace(system, btrfs_features=frozenset({"raid56", "raid1c34"}))
    assert check(raid5, has) == []
    # Not loaded: the release decides; raid1 is in every btrfs.
    unloaded = dataclasses.replace(system, btrfs_features=None, kernel="5.4.0-generic")
    (why,) = check(raid5, unloaded)
    assert "`metadata_profile = 'raid1c3'` needs btrfs's raid1c34 feature" in why
    assert "kernel (5.4.0-generic) lacks" in why
    assert check(raid5, dataclasses.replace(unloaded, kernel="6.1.0")) == []
    assert check(spec(fs="btrfs", profile="raid1", loop={"count": 2}), neither) == []


def test_plan_says_how_md_and_luks_are_stacked_and_undone(tmp_path: Path) -> None:
    """Storage Spaces + BitLocker as fslab builds it: md over the loop devices, LUKS2 over
    the array, the file system over the mapping; `fslab plan` says each command."""
    target = spec(name="ss", fs="ext4", raid="raid5", raid_chunk="64KiB", loop={"count": 3},
                  encryption="dm-crypt", crypt_sector_size=4096,
                  crypt_workqueues=False)  # fmt: skip
    words = "\n".join(side_effects(target, tmp_path))
    assert "make an md raid5 of them: `mdadm --create '/dev/md/fslab-ss-<tag>' --run" in words
    assert "--chunk=64K '<loop0>' '<loop1>' '<loop2>'`" in words
    assert "make /dev/md/fslab-ss-<tag> LUKS2: `cryptsetup luksFormat" in words
    assert "--sector-size 4096 '/dev/md/fslab-ss-<tag>'`" in words
    assert "--perf-no_read_workqueue --perf-no_write_workqueue" in words
    assert "mkfs.ext4" in words and "'/dev/mapper/fslab-ss-<tag>-0'`" in words
    assert "close the LUKS mappings and delete the key, stop the md array" in words
    assert not (tmp_path / "ss").exists()


def test_undo_of_md_and_luks_steps_acts_on_nothing_that_is_not_there() -> None:
    """After a crash: an array or mapping that is gone is done; a name fslab never gives
    is not fslab's. (No kernel here has md or device-mapper: their undo on a live array
    or mapping is unverified.)"""
    assert undo("md_create", "/dev/md/fslab-x-abc123", {"devices": ["/dev/loop0"]})
    assert undo("crypt_open", "fslab-x-abc123-0", {"device": "/dev/loop0"})
    with pytest.raises(NotOurs):
        undo("md_create", "/dev/md0", {"devices": ["/dev/sda"]})
    with pytest.raises(NotOurs):
        undo("crypt_open", "cryptroot", {"device": "/dev/sda2"})


def test_lvm_command_lines_checks_and_undo() -> None:
    assert lvm_create_argvs("fslab-s-1a2b3c", ["/dev/loop1", "/dev/loop2"], "striped",
                            64 << 10) == [
        ["pvcreate", "--yes", "/dev/loop1", "/dev/loop2"],
        ["vgcreate", "--yes", "fslab-s-1a2b3c", "/dev/loop1", "/dev/loop2"],
        ["lvcreate", "--yes", "--name", "data", "--extents", "100%FREE", "--stripes", "2",
         "--stripesize", "64k", "fslab-s-1a2b3c"],
    ]  # fmt: skip
    linear = lvm_create_argvs("v", ["/dev/loop1"], "linear", None)[-1]
    assert "--stripes" not in linear
    pvs = "  /dev/loop1 fslab-s-1a2b3c\n  /dev/loop2 fslab-s-1a2b3c\n  /dev/sda2  system\n"
    assert vg_members("fslab-s-1a2b3c", pvs) == ["/dev/loop1", "/dev/loop2"]
    with pytest.raises(pydantic.ValidationError, match="a `striped` LV needs at least 2"):
        spec(fs="xfs", lvm="striped")
    with pytest.raises(pydantic.ValidationError, match="`raid` \\(md\\) or `lvm`, not both"):
        spec(fs="xfs", lvm="linear", raid="raid1", loop={"count": 2})
    target = spec(name="lv", fs="xfs", lvm="striped", lvm_stripe="64KiB", loop={"count": 2})
    bare = dataclasses.replace(System.probe(), is_root=True, has_device_mapper=False)
    (why,) = [m for m in check(target, bare) if "`lvm" in m]
    assert "needs device-mapper (CONFIG_BLK_DEV_DM" in why
    assert undo("lvm_create", "fslab-lv-1a2b3c", {"devices": ["/dev/loop0"]})
    with pytest.raises(NotOurs):
        undo("lvm_create", "system", {"devices": ["/dev/sda2"]})


def test_the_storage_spaces_example_is_refused_here_naming_the_kernel_parts() -> None:
    """Where the kernel lacks md and device-mapper, `fslab plan` of the md + LUKS example
    refuses each target at its key, naming what is missing, and makes nothing."""
    system = System.probe()
    if system.has_md or system.has_device_mapper:
        pytest.skip("this kernel has md or device-mapper")
    example = Path(__file__).resolve().parents[1] / "examples" / "storage-spaces-bitlocker.toml"
    done = run_fslab("plan", example)
    assert done.returncode == 2, done.stderr
    assert "target[0] (ext4-raid5-dm-crypt).raid: `raid = 'raid5'` needs md RAID" in done.stderr
    assert '(ext4-raid0-dm-crypt).encryption: `encryption = "dm-crypt"` needs device-mapper' in (
        done.stderr
    )
    assert "target[1] (luks-sector4096-noworkqueues)" in done.stderr
