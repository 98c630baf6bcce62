"""Block layers between a target's devices and its file system that need kernel parts
this project's kernel lacks: md RAID (`raid = "raid5"`) or an LVM volume (`lvm =
"striped"`) over the loop devices, then dm-crypt (LUKS2, `encryption = "dm-crypt"`),
then the file system. The seed studies' Storage Spaces and BitLocker layouts map to them.

Here: the command lines (`mdadm --create` with level, chunk and devices; pvcreate,
vgcreate and lvcreate, linear or striped; LUKS2 format and open with the sector size and
the `--perf-no_read_workqueue`/`--perf-no_write_workqueue` flags), parsers for what the
tools and sysfs say, and what `fslab plan` checks (device-mapper and the dm-crypt
target, md and the level's personality, cryptsetup, mdadm, lvm2), each refusal naming
what is missing. `provision` runs them, journaled, and `journal` undoes them
(`md_create`, `lvm_create`, `crypt_open`). No machine this project ran on had
device-mapper or md, so that path has not been run once: the command lines and the
LUKS2 format are tested, the rest is not (docs/study.md says so).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

RaidLevel = Literal["raid0", "raid1", "raid4", "raid5", "raid6", "raid10"]
# Devices each md level needs at least (mdadm refuses fewer; raid1 and raid10 take 2).
RAID_MIN_DEVICES = {"raid0": 2, "raid1": 2, "raid4": 3, "raid5": 3, "raid6": 4, "raid10": 2}
CRYPT_SECTOR_SIZES = (512, 1024, 2048, 4096)
CRYPT_CIPHER = "aes-xts-plain64"
CRYPT_KEY_BITS = 512


def luks_format_argv(device: str, key_file: Path, sector_size: int | None) -> list[str]:
    """LUKS2 on `device` with a random key read from `key_file`: AES-256-XTS (a 512-bit
    XTS key), as BitLocker's XTS-AES-256 and the fscrypt targets use. The key is random
    and used once, so the slow password hashing a passphrase needs is turned down to
    PBKDF2's minimum: it costs seconds per target and protects nothing here."""
    argv = ["cryptsetup", "luksFormat", "--batch-mode", "--type", "luks2",
            "--cipher", CRYPT_CIPHER, "--key-size", str(CRYPT_KEY_BITS),
            "--pbkdf", "pbkdf2", "--pbkdf-force-iterations", "1000",
            "--key-file", str(key_file)]  # fmt: skip
    if sector_size is not None:
        argv += ["--sector-size", str(sector_size)]
    return [*argv, device]


def luks_open_argv(device: str, name: str, key_file: Path, *, workqueues: bool) -> list[str]:
    """Opens `device` as /dev/mapper/`name`. `workqueues = false` passes
    `--perf-no_read_workqueue --perf-no_write_workqueue` (cryptsetup 2.3.4+, Linux 5.9+):
    dm-crypt then encrypts in the submitting thread instead of queueing to kcryptd,
    which Cloudflare measured at twice the throughput on fast disks."""
    perf = [] if workqueues else ["--perf-no_read_workqueue", "--perf-no_write_workqueue"]
    return ["cryptsetup", "open", "--type", "luks2", "--key-file", str(key_file), *perf,
            device, name]  # fmt: skip


def luks_close_argv(name: str) -> list[str]:
    return ["cryptsetup", "close", name]


def md_create_argv(
    md_device: str, level: str, devices: Sequence[str], chunk_bytes: int | None
) -> list[str]:
    """`mdadm --create` of `level` over `devices` at `md_device` (`/dev/md/fslab-x`):
    no initial resync (the devices are new sparse images or wiped, so their parity is
    whatever mkfs writes: `--assume-clean`), no write-intent bitmap (it would add writes
    no Storage Spaces layout in the seeds had), metadata 1.2."""
    argv = ["mdadm", "--create", md_device, "--run", "--metadata=1.2", f"--level={level}",
            f"--raid-devices={len(devices)}", "--assume-clean", "--bitmap=none"]  # fmt: skip
    if chunk_bytes is not None and level != "raid1":
        argv.append(f"--chunk={chunk_bytes // 1024}K")
    return [*argv, *devices]


def md_stop_argv(md_device: str) -> list[str]:
    return ["mdadm", "--stop", md_device]


def personalities(mdstat: str) -> frozenset[str]:
    """The md personalities a kernel has loaded (`[raid1] [raid6] ...` on /proc/mdstat's
    first line)."""
    first = mdstat.splitlines()[0] if mdstat else ""
    if not first.startswith("Personalities"):
        return frozenset()
    return frozenset(w.strip("[]") for w in first.partition(":")[2].split())


def dm_targets(text: str) -> frozenset[str]:
    """Device-mapper targets `dmsetup targets` lists (`crypt  v1.24.0`)."""
    return frozenset(line.split()[0] for line in text.splitlines() if line.strip())


def parse_status(text: str) -> dict[str, str]:
    """`cryptsetup status NAME` as {key: value} (`cipher`, `keysize`, `sector size`,
    `flags`, `device`, ...)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip():
            out[key.strip()] = value.strip()
    return out


def mapping_slaves(name: str) -> list[str] | None:
    """The kernel names of the devices under the device-mapper device `name`
    (/sys/block/dm-N/slaves), or None when no such mapping exists."""
    for dm in Path("/sys/block").glob("dm-*"):
        try:
            if (dm / "dm" / "name").read_text().strip() == name:
                return sorted(p.name for p in (dm / "slaves").iterdir())
        except OSError:
            continue
    return None


def md_detail_argv(md_device: str) -> list[str]:
    return ["mdadm", "--detail", "--export", md_device]


def parse_export(text: str) -> dict[str, str]:
    """`mdadm --detail --export` / `--examine --export` (`MD_LEVEL=raid5` lines)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip():
            out[key.strip()] = value.strip().strip("'")
    return out


def md_slaves(md_device: str) -> list[str] | None:
    """The kernel names of an md array's members (/sys/block/mdN/slaves), or None when
    no such array is assembled."""
    try:
        real = Path(md_device).resolve(strict=True)
    except OSError:
        return None
    slaves = Path("/sys/block") / real.name / "slaves"
    try:
        return sorted(p.name for p in slaves.iterdir())
    except OSError:
        return None


# --------------------------------------------------------------------------- LVM

LvmLayout = Literal["linear", "striped"]
LV_NAME = "data"


def lvm_create_argvs(
    vg: str, devices: Sequence[str], layout: str, stripe_bytes: int | None
) -> list[list[str]]:
    """The commands that make one logical volume over all of `devices`: each a physical
    volume, one volume group `vg`, one LV of every extent (`/dev/<vg>/data`), linear
    (the devices one after another) or striped across them (`--stripes`, the stripe
    size `--stripesize`, LVM's `-I`, in KiB)."""
    lv = ["lvcreate", "--yes", "--name", LV_NAME, "--extents", "100%FREE"]
    if layout == "striped":
        lv += ["--stripes", str(len(devices))]
        if stripe_bytes is not None:
            lv += ["--stripesize", f"{stripe_bytes // 1024}k"]
    return [
        ["pvcreate", "--yes", *devices],
        ["vgcreate", "--yes", vg, *devices],
        [*lv, vg],
    ]


def lvm_remove_argvs(vg: str) -> list[list[str]]:
    """Deactivate, then remove, the volume group (its LV with it) and its PVs' labels are
    left to the images' deletion."""
    return [["vgchange", "--activate", "n", vg], ["vgremove", "--yes", "--force", vg]]


def vg_members(vg: str, pvs_output: str) -> list[str]:
    """The physical volumes of `vg` in `pvs --noheadings -o pv_name,vg_name` output."""
    out = []
    for line in pvs_output.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1] == vg:
            out.append(parts[0])
    return sorted(out)
