"""Integrity studies (`kind = "integrity"`): the parsers of the mapping tools, the
outcome rule, what plan refuses, and (root) the expected table of outcomes on real file
systems on loop devices (docs/integrity.md)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest
from conftest import fslab, loops_under, mounts_under, sh

from fslab.errors import TargetError
from fslab.kinds.integrity import classify, parse_scrub
from fslab.targets.extents import parse_filefrag, parse_map_logical, parse_xfs_bmap
from fslab.targets.inject import Write, inject, refusal
from fslab.targets.journal import MemoryJournal
from fslab.targets.owner import Owned
from fslab.targets.provision import Provisioned

FILEFRAG_1K = """Filesystem type is: ef53
File size of m1/f is 1048576 (1024 blocks of 1024 bytes)
 ext:     logical_offset:        physical_offset: length:   expected: flags:
   0:        0..     511:      16385..     16896:    512:
   1:      512..    1023:      20000..     20511:    512:      16897: last,eof
m1/f: 2 extents found
"""


def test_filefrag_extents_are_in_the_block_size_it_prints() -> None:
    bs, extents = parse_filefrag(FILEFRAG_1K)
    assert bs == 1024
    assert [(e.file_offset, e.address, e.length) for e in extents] == [
        (0, 16385 * 1024, 512 * 1024),
        (512 * 1024, 20000 * 1024, 512 * 1024),
    ]
    assert extents[1].flags == ("last", "eof")


def test_xfs_bmap_is_in_sectors_and_btrfs_names_each_mirror() -> None:
    (e,) = parse_xfs_bmap("m2/f:\n\t0: [0..2047]: 192..2239\n")
    assert (e.file_offset, e.address, e.length) == (0, 192 * 512, 2048 * 512)
    text = (
        "mirror 1 logical 88145920 physical 88145920 device /dev/loop2\n"
        "mirror 2 logical 88145920 physical 67174400 device /dev/loop3\n"
    )
    assert parse_map_logical(text) == [(1, 88145920, "/dev/loop2"), (2, 67174400, "/dev/loop3")]


def test_scrub_summaries() -> None:
    assert parse_scrub("Error summary:    no errors found") == {
        "errors": False, "corrected": 0, "uncorrectable": 0,
    }  # fmt: skip
    bad = "Error summary:    csum=1\n  Corrected:      0\n  Uncorrectable:  1\n"
    assert parse_scrub(bad) == {"errors": True, "corrected": 0, "uncorrectable": 1}
    assert parse_scrub(bad.replace("Corrected:      0", "Corrected:      1"))["corrected"] == 1


@pytest.mark.parametrize(
    ("detail", "outcome"),
    [
        ({"first_read": {"good": 10, "corrupt": 1}}, ("silent_wrong", None)),
        ({"first_read": {"good": 10, "misplaced": 1}}, ("silent_wrong", None)),
        ({"first_read": {"good": 10, "stale": 1}}, ("silent_stale", None)),
        # wrong data beside an error is still wrong data the application got
        ({"first_read": {"corrupt": 1, "unreadable": 1, "errno": 5}}, ("silent_wrong", None)),
        ({"first_read": {"good": 9, "unreadable": 1, "errno": 5}}, ("detected", None)),
        ({"first_read": {"errno": 74, "error": "open: Bad message"}}, ("detected", None)),
        ({"first_read": {"error": "mount: refused"}}, ("detected", None)),
        (
            {"first_read": {"good": 10},
             "kernel": ["BTRFS info (device loop3): read error corrected: ino 257 off 8192"]},
            ("repaired", "read"),
        ),
        (
            {"first_read": {"good": 9, "unreadable": 1, "errno": 5},
             "check": {"corrected": 1}, "second_read": {"good": 10}},
            ("repaired", "scrub"),
        ),
        (
            {"first_read": {"good": 10}, "device_stats": {"corruption_errs": 1}},
            ("repaired", "read"),
        ),
        ({"first_read": {"good": 10}, "check": {"errors": False}}, ("unaffected", None)),
        # the images show a repair the kernel did not (or, rate-limited, could not) say
        ({"first_read": {"good": 10}, "rewritten_after_read": 1}, ("repaired", "read")),
        (
            {"first_read": {"good": 10}, "rewritten_after_read": 0, "rewritten_after_check": 1},
            ("repaired", "scrub"),
        ),
        (
            {"first_read": {"good": 10},
             "kernel": ["BTRFS warning (device loop0): checksum verify failed on logical 1"]},
            ("repaired", "read"),
        ),
    ],
)  # fmt: skip
def test_the_outcome_is_what_the_first_read_returned(
    detail: dict[str, object], outcome: tuple[str, str | None]
) -> None:
    assert classify(detail) == outcome


STUDY_HEAD = """
name = "integrity"

[[target]]
name = "{name}"
{target}
"""


@pytest.mark.parametrize(
    ("target", "words"),
    [
        ('dir = "{root}/d"', "fslab injects faults only into loop images"),
        ('fs = "btrfs"\nloop = {{ size = "256MiB" }}\nmount_options = ["compress=zstd"]',
         "mounts with compression"),
        ('fs = "btrfs"\nloop = {{ size = "256MiB" }}\ncompression = "zstd"',
         "mounts with compression"),
        ('fs = "ntfs"\nloop = {{ size = "256MiB" }}', "maps a file's blocks on ext4, xfs"),
    ],
)  # fmt: skip
def test_plan_refuses_targets_fslab_cannot_inject_into(
    tmp_path: Path, target: str, words: str
) -> None:
    (tmp_path / "d").mkdir()
    study = tmp_path / "s.toml"
    study.write_text(
        STUDY_HEAD.format(name="t", target=target.format(root=tmp_path))
        + '\n[[workload]]\nkind = "integrity"\nfaults = "bitflip"\n'
    )
    done = fslab("plan", str(study), "--results", str(tmp_path / "r.db"), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert words in done.stderr
    assert not (tmp_path / "r.db").exists() and sorted(p.name for p in tmp_path.iterdir()) == [
        "d", "s.toml",
    ]  # fmt: skip


def test_a_metadata_hit_takes_only_the_faults_it_can_model(tmp_path: Path) -> None:
    study = tmp_path / "s.toml"
    study.write_text(
        STUDY_HEAD.format(name="t", target='fs = "ext4"\nloop = { size = "256MiB" }')
        + '\n[[workload]]\nkind = "integrity"\nregion = "metadata"\n'
        'faults = ["bitflip", "lost_write"]\n'
    )
    done = fslab("plan", str(study), cwd=tmp_path)
    assert done.returncode == 2
    assert "takes the faults bitflip, zero_block, random_block, not lost_write" in done.stderr


@pytest.mark.engine
@pytest.mark.parametrize(
    ("extra", "words"),
    [
        ('bs = "1"', "needs `bs` a multiple of 512, not 1"),
        ('bs = "1000"', "needs `bs` a multiple of 512, not 1000"),
        ("", "integrity workloads are not engine jobs"),
    ],
)
def test_plan_refuses_what_a_run_would(tmp_path: Path, extra: str, words: str) -> None:
    """Audit N11: plan passed an integrity `bs = "1"` and a `[hosts]` table that `run`
    then refused."""
    hosts = "" if extra else "[hosts]\nlocalhost = 2\n"
    study = tmp_path / "s.toml"
    study.write_text(
        STUDY_HEAD.format(name="t", target='fs = "ext4"\nloop = { size = "256MiB" }')
        + f'\n[[workload]]\nkind = "integrity"\nfaults = "bitflip"\n{extra}\n{hosts}'
    )
    done = fslab("plan", str(study), "--results", str(tmp_path / "r.db"), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert words in done.stderr, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.toml"]


# --------------------------------------------------------------------------- root

EXPECTED_STUDY = """
name = "integrity"

[[target]]
name = "ext4"
fs = "ext4"
loop = { size = "256MiB" }

[[target]]
name = "xfs"
fs = "xfs"
loop = { size = "512MiB" }

[[target]]
name = "btrfs"
fs = "btrfs"
loop = { size = "256MiB" }

[[target]]
name = "btrfs-nodatasum"
fs = "btrfs"
loop = { size = "256MiB" }
mount_options = ["nodatasum"]

[[target]]
name = "btrfs-raid1"
fs = "btrfs"
loop = { size = "256MiB", count = 2 }
profile = "raid1"
metadata_profile = "raid1"

[[workload]]
kind = "integrity"
name = "data"
faults = ["bitflip", "lost_write", "misdirected"]
file_size = "1MiB"

[[workload]]
kind = "integrity"
name = "inode"
region = "metadata"
faults = "bitflip"
file_size = "1MiB"
"""

# docs/integrity.md, "Expected on this VM".
EXPECTED = {
    ("ext4", "bitflip", "data"): "silent_wrong",
    ("ext4", "lost_write", "data"): "silent_stale",
    ("ext4", "misdirected", "data"): "silent_wrong",
    ("ext4", "bitflip", "metadata"): "detected",
    ("xfs", "bitflip", "data"): "silent_wrong",
    ("xfs", "lost_write", "data"): "silent_stale",
    ("xfs", "misdirected", "data"): "silent_wrong",
    ("xfs", "bitflip", "metadata"): "detected",
    ("btrfs", "bitflip", "data"): "detected",
    ("btrfs", "lost_write", "data"): "detected",
    ("btrfs", "misdirected", "data"): "detected",
    ("btrfs", "bitflip", "metadata"): "repaired",
    ("btrfs-nodatasum", "bitflip", "data"): "silent_wrong",
    ("btrfs-nodatasum", "lost_write", "data"): "silent_wrong",
    ("btrfs-nodatasum", "misdirected", "data"): "silent_wrong",
    ("btrfs-nodatasum", "bitflip", "metadata"): "repaired",
    ("btrfs-raid1", "bitflip", "data"): "repaired",
    ("btrfs-raid1", "lost_write", "data"): "repaired",
    ("btrfs-raid1", "misdirected", "data"): "repaired",
    ("btrfs-raid1", "bitflip", "metadata"): "repaired",
}


@pytest.mark.root
@pytest.mark.engine
def test_the_expected_table_on_real_file_systems(lab: Path) -> None:
    study = lab / "integrity.toml"
    study.write_text(EXPECTED_STUDY)
    done = fslab("run", str(study), "--results", "r.db", cwd=lab, timeout=900)
    assert done.returncode == 0, done.stderr
    assert not mounts_under(lab) and not loops_under(lab)
    assert not (lab / "fslab-work").exists(), "the work directory fslab made is gone"
    con = sqlite3.connect(lab / "r.db")
    try:
        rows = con.execute(
            "SELECT p.target, i.fault, i.region, i.outcome, i.detail FROM integrity i"
            " JOIN run r ON r.id = i.run_id JOIN point p ON p.id = r.point_id"
        ).fetchall()
        open_journal = con.execute(
            "SELECT count(*) FROM journal WHERE state != 'undone'"
        ).fetchone()[0]
        injected = con.execute("SELECT count(*) FROM journal WHERE action = 'inject'").fetchone()[0]
    finally:
        con.close()
    got = {(t, f, r): o for t, f, r, o, _ in rows}
    details = {(t, f, r): json.loads(d) for t, f, r, _, d in rows}
    wrong = {k: (got.get(k), v) for k, v in EXPECTED.items() if got.get(k) != v}
    assert not wrong, "\n".join(
        f"{k}: got {g}, expected {v}; detail {json.dumps(details.get(k), default=str)[:1500]}"
        for k, (g, v) in wrong.items()
    )
    assert open_journal == 0 and injected >= len(EXPECTED)
    # The engine's verify saw what the file systems returned, block by block.
    ext4 = details[("ext4", "lost_write", "data")]["first_read"]
    assert ext4["stale"] == 1 and ext4["corrupt"] == 0 and ext4["good"] == ext4["blocks_read"] - 1
    btrfs = details[("btrfs", "bitflip", "data")]["first_read"]
    assert btrfs["unreadable"] >= 1 and btrfs["errno"] == 5
    assert any("csum failed" in x for x in details[("btrfs", "bitflip", "data")]["kernel"])
    mis = details[("xfs", "misdirected", "data")]["first_read"]
    assert mis["misplaced"] == 1 and mis["stale"] == 1


@pytest.mark.root
def test_plan_says_what_an_integrity_run_writes_and_where(tmp_path: Path) -> None:
    study = tmp_path / "s.toml"
    study.write_text(
        STUDY_HEAD.format(name="e", target='fs = "ext4"\nloop = { size = "256MiB" }')
        + '\n[[workload]]\nkind = "integrity"\nfaults = ["bitflip", "torn"]\n'
    )
    done = fslab("plan", str(study), "--results", str(tmp_path / "r.db"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "workload integrity (integrity): 2 points" in done.stdout
    assert "integrity: on e, each run writes a verified test file, unmounts, writes its fault" in (
        done.stdout.replace("\n", " ")
    )
    assert not (tmp_path / "r.db").exists()


def _prov(tmp_path: Path, kind: str = "loop") -> tuple[Provisioned, Path]:
    owned = Owned.new(tmp_path / "t")
    owned.create()
    image = owned.path / "image.img"
    image.write_bytes(bytes(64 << 10))
    eff = {"kind": kind, "fs": "ext4"}
    images = (image,) if kind == "loop" else ()
    devices = ("/dev/fslab-test-no-such-loop",) if kind == "loop" else ()
    prov = Provisioned("t", owned.path / "mnt", owned.path / "mnt", devices, images, eff,
                       owner=owned)  # fmt: skip
    return prov, image


@pytest.mark.parametrize(
    ("image", "offset", "words"),
    [
        ("elsewhere.img", 0, "not an image fslab made for target `t`"),
        ("image.img", (64 << 10) - 2, "lie outside the image"),
        ("image.img", -1, "lie outside the image"),
    ],
)
def test_injection_writes_only_inside_the_targets_own_images(
    tmp_path: Path, image: str, offset: int, words: str
) -> None:
    prov, own = _prov(tmp_path)
    other = tmp_path / "elsewhere.img"
    other.write_bytes(bytes(8192))
    path = other if image == "elsewhere.img" else own
    journal = MemoryJournal()
    with pytest.raises(TargetError, match=words.replace("`", ".")):
        inject(prov, [Write(path, offset, b"\xff" * 4, "test")], journal)
    assert own.read_bytes() == bytes(64 << 10) and other.read_bytes() == bytes(8192)
    assert journal.entries == [], "nothing is journaled or written when refused"


def test_injection_is_refused_for_directory_targets_and_journaled_otherwise(
    tmp_path: Path,
) -> None:
    prov, _ = _prov(tmp_path, kind="dir")
    assert "never into a device or directory" in (refusal(prov) or "")
    with pytest.raises(TargetError, match="never into a device or directory"):
        inject(prov, [], MemoryJournal())
    (tmp_path / "loop").mkdir()
    prov, own = _prov(tmp_path / "loop")
    journal = MemoryJournal()
    # The image is proven by the open file: no loop device is backed by this one.
    with pytest.raises(TargetError, match="not the file the loop devices of target `t`"):
        inject(prov, [Write(own, 4096, b"\xff" * 4, "test")], journal)
    assert journal.entries == [] and own.read_bytes() == bytes(64 << 10)


@pytest.mark.root
def test_injection_writes_the_loop_devices_own_file_and_nothing_a_name_points_to(
    tmp_path: Path,
) -> None:
    """Audit 2b (code read): the image was opened by name, after the checks; a name
    swapped meanwhile (a link to another file, another file renamed into place) would
    have been written."""
    if os.geteuid() != 0:
        pytest.skip("needs root (a loop device)")
    owned = Owned.new(tmp_path / "t")
    owned.create()
    image = owned.path / "image.img"
    image.write_bytes(bytes(64 << 10))
    dev = sh("losetup", "--find", "--show", str(image)).strip()
    try:
        prov = Provisioned("t", owned.path / "mnt", owned.path / "mnt", (dev,), (image,),
                           {"kind": "loop", "fs": "ext4"}, owner=owned)  # fmt: skip
        journal = MemoryJournal()
        inject(prov, [Write(image, 4096, b"\xff" * 4, "test")], journal)
        assert [(e.action, e.state) for e in journal.entries] == [("inject", "done")]
        assert image.read_bytes()[4096:4100] == b"\xff" * 4

        victim = tmp_path / "victim"
        victim.write_bytes(bytes(64 << 10))
        kept = owned.path / "kept.img"
        image.rename(kept)  # the loop device keeps its file; the name is taken over
        for swap in ("link", "file"):
            if swap == "link":
                image.symlink_to(victim)
            else:
                image.write_bytes(bytes(64 << 10))
            with pytest.raises(TargetError):
                inject(prov, [Write(image, 0, b"\xff" * 4, "test")], MemoryJournal())
            image.unlink()
        assert victim.read_bytes() == bytes(64 << 10)
    finally:
        subprocess.run(["losetup", "-d", dev], check=False)


EDGE_STUDY = """
name = "integrity edges"

[[target]]
name = "ext4-1k"
fs = "ext4"
block_size = "1KiB"
loop = { size = "256MiB" }

[[target]]
name = "btrfs-raid1"
fs = "btrfs"
loop = { size = "256MiB", count = 2 }
profile = "raid1"
metadata_profile = "raid1"

[[workload]]
kind = "integrity"
faults = ["torn", "misdirected"]
mirrors = "all"
blocks = 3
file_size = "1MiB"
"""


@pytest.mark.root
@pytest.mark.engine
def test_small_fs_blocks_every_mirror_and_several_blocks(lab: Path) -> None:
    """A 4 KiB verified block over four 1 KiB ext4 blocks is mapped piece by piece (a
    torn block is new before its middle, old after it); hitting every raid1 copy leaves
    nothing to repair from; `blocks = 3` hits three blocks (three pairs when misdirected)."""
    study = lab / "edges.toml"
    study.write_text(EDGE_STUDY)
    done = fslab("run", str(study), "--results", "r.db", cwd=lab, timeout=600)
    assert done.returncode == 0, done.stderr
    con = sqlite3.connect(lab / "r.db")
    try:
        rows = con.execute(
            "SELECT p.target, i.fault, i.outcome, i.detail FROM integrity i"
            " JOIN run r ON r.id = i.run_id JOIN point p ON p.id = r.point_id"
        ).fetchall()
    finally:
        con.close()
    got = {(t, f): (o, json.loads(d)["first_read"]) for t, f, o, d in rows}
    torn_outcome, torn = got[("ext4-1k", "torn")]
    assert torn_outcome == "silent_wrong" and torn["corrupt"] == 3 and torn["good"] == 253
    mis_outcome, mis = got[("ext4-1k", "misdirected")]
    assert mis_outcome == "silent_wrong" and (mis["misplaced"], mis["stale"]) == (3, 3)
    for fault in ("torn", "misdirected"):
        outcome, read = got[("btrfs-raid1", fault)]
        assert outcome == "detected" and read["errno"] == 5 and read["unreadable"] >= 3
    assert not mounts_under(lab) and not loops_under(lab)
