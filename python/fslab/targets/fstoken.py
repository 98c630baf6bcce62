"""Proof, on a device itself, that fslab made the file system on it.

The safety gate formats a device that holds a file system only when fslab made that
file system (or the user says `--force --device`). A file system's UUID cannot prove
that: it is public (`blkid`), and the results database that records it is untrusted
input (it travels in bundles, anyone can write one). So when fslab makes a file system
on a `device` target it also writes, as root, a file `.fslab-filesystem` into its root
holding a random token, and journals only the token's SHA-256. A device is fslab's own
when its file system holds that file, a regular root-owned file (never a link), whose
token hashes to what the database recorded for that file system's UUID. A file system
fslab did not make has no such file: no row forged into a database makes it one.

Reading the token needs the file system mounted. It is mounted read-only, without
replaying its journal or log (`noload` / `norecovery` / `rescue=nologreplay`: nothing
is written to the device), `nosuid,nodev,noexec`, in a private mount namespace of a
short-lived child (`unshare --mount`): no other process sees the mount, and it is gone
when the child ends, however it ends. It is tried only for a file system whose type
fslab makes and whose UUID the database lists.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from fslab.targets._proc import which
from fslab.targets.families import FAMILIES

NAME = ".fslab-filesystem"
_MAGIC = "fslab file system token v1"
_TOKEN_BYTES = 32
# blkid's type -> (mount's type, read-only options that replay nothing: the mount must
# not write to the device). NTFS is read through ntfs-3g, its first family.
_RO_MOUNT = {f.blkid_type: (f.mount_type, f.ro_options) for f in reversed(FAMILIES.values())}
_SAFE = "nosuid,nodev,noexec"
_TIMEOUT_S = 60.0

Made = Mapping[str, str | None]
"""File systems fslab made on `device` targets: UUID -> SHA-256 of the token in it, as a
results database recorded it; None for one this very process made (its memory is proof
enough: no database stands between)."""


def new() -> tuple[str, str]:
    """A fresh token and its digest (what the journal records)."""
    token = secrets.token_hex(_TOKEN_BYTES)
    return token, digest(token)


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def write(root: Path, token: str) -> None:
    """Writes the token file into the root of a file system fslab just made and mounted
    (never an existing file, never through a link), and syncs it to the device."""
    fd = os.open(
        root / NAME, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o400
    )
    try:
        os.write(fd, f"{_MAGIC}\n{token}\n".encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    dfd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


# The child: mount read-only on a directory only it sees, then show the file only when it
# is a regular file of root (lstat: a link is never followed), at most 4 KiB of it.
_READER = r"""
set -eu
mount -t "$1" -o "$2" "$3" "$4"
set -- $(stat -c '%u %F %s' -- "$4/$5" 2>/dev/null || echo none)
[ "$1" = 0 ] && [ "$2 $3" = "regular file" ] && [ "$4" -le 4096 ] || exit 3
exec head -c 4096 -- "$MNT/$NAME"
"""


def read(fstype: str, devices: Sequence[str]) -> str | None:
    """The digest of the token in the file system on `devices` (the first one, with the
    others as its btrfs members), or None when it holds no valid token file or cannot be
    mounted read-only."""
    mount_type, options = _RO_MOUNT.get(fstype, (fstype, None))
    unshare = which("unshare")
    if options is None or unshare is None or not devices:
        return None
    opts = ",".join([options, _SAFE, *(f"device={d}" for d in devices[1:] if fstype == "btrfs")])
    # /mnt is covered only inside the child's namespace.
    mnt = "/mnt"
    argv = [unshare, "--mount", "--propagation", "private", "--", "/bin/sh", "-c", _READER]
    argv += ["fslab-token", mount_type, opts, devices[0], mnt, NAME]
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL": "C", "MNT": mnt, "NAME": NAME}
    try:
        proc = subprocess.run(
            argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=_TIMEOUT_S,
            check=False, env=env,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    lines = proc.stdout.decode("ascii", "replace").split("\n")
    if len(lines) < 2 or lines[0] != _MAGIC or not lines[1]:
        return None
    return digest(lines[1])


def proven(fstype: str, uuid: str, devices: Sequence[str], made: Made) -> bool:
    """Whether the file system `uuid` on `devices` is one fslab made: this process made
    it, or it holds the token whose digest `made` recorded for it."""
    if uuid not in made:
        return False
    want = made[uuid]
    if want is None:
        return True
    found = read(fstype, devices)
    return found is not None and secrets.compare_digest(found, want)
