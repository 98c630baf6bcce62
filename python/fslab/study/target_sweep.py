"""A target key given as a list is a sweep axis, as a workload's is: one target per value
(per combination, with several), named after its values.

    [[target]]
    name = "ext4"
    fs = "ext4"
    mount = [{ atime = "relatime" }, { atime = "noatime" }, { atime = "strictatime" }]

makes the targets `ext4-relatime`, `ext4-noatime` and `ext4-strictatime`, in that order;
the first is the others' baseline, as the first of any question's targets is. Keys whose
value is a list already (`device`, `mkfs_args`, `mount_options`) are no axes.

This runs on the study as read from TOML, before it is checked: every expanded target is
then checked as if written out, and `origin` keeps which table of the file each came
from, so that a problem is reported at that table's line.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from fslab.targets import mountopts

SWEEPABLE = (
    "fs", "block_size", "cluster_size", "checksums", "profile", "metadata_profile",
    "encryption", "compression", "compression_force", "scheduler", "mount",
    "crypt_sector_size", "crypt_workqueues", "raid", "raid_chunk", "lvm", "lvm_stripe",
)  # fmt: skip
"""Target keys that take a list of values as a sweep axis; names take the values in the
order the keys are written."""

_NOT_IN_NAMES = re.compile(r"[^A-Za-z0-9_.+-]")


def value_label(key: str, value: Any) -> str:
    """`noatime`, `zstd3`, `4KiB`, `nochecksums`, `noatime-lazytime`: a value as a part of
    a target name."""
    if isinstance(value, dict):
        parts = [mountopts.label(k, v) for k, v in value.items()]
        text = "-".join(parts) or "defaults"
    elif isinstance(value, bool):
        text = mountopts.label(_BOOL_WORDS.get(key, key.replace("_", "-")), value)
    else:
        text = _PREFIX.get(key, "") + str(value)
    return _NOT_IN_NAMES.sub("", text) or key


# Values that need their key to be read in a name (`ext4-sector4096`, not `ext4-4096`).
_PREFIX = {"crypt_sector_size": "sector", "raid_chunk": "chunk", "lvm_stripe": "stripe"}
# Booleans whose key reads badly in a name (`ext4-noworkqueues`, `btrfs-zstd-forced`).
_BOOL_WORDS = {"crypt_workqueues": "workqueues", "compression_force": "forced"}


def expand(targets: list[Any]) -> tuple[list[Any], list[int]]:
    """The targets with every sweep axis expanded, and for each the index of the table it
    came from. A list that is empty is left for the model to refuse."""
    out: list[Any] = []
    origin: list[int] = []
    for i, t in enumerate(targets):
        axes = (
            [(k, v) for k, v in t.items() if k in SWEEPABLE and isinstance(v, list) and v]
            if isinstance(t, dict)
            else []
        )
        if not axes:
            out.append(t)
            origin.append(i)
            continue
        keys = [k for k, _ in axes]
        for combo in itertools.product(*(values for _, values in axes)):
            labels = [value_label(k, v) for k, v in zip(keys, combo, strict=True)]
            name = t.get("name")
            named = "-".join([name, *labels]) if isinstance(name, str) else name
            out.append({**t, **dict(zip(keys, combo, strict=True)), "name": named})
            origin.append(i)
    return out, origin
