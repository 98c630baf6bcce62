"""Writing a fault into a loop image: the one place fslab writes bytes the file system
did not write itself.

Safe by construction (docs/integrity.md): an injection writes only

- into an image file of the `Provisioned` target it is given, which `provision` created
  for this run inside a directory fslab owns (`owner.prove` checks the marker again);
- at offsets inside that image, computed from a file the study wrote (`extents`);
- while the target's file system is not mounted anywhere (mounted, the kernel would
  overwrite the fault from its cache, or cache the old bytes over it);

and is journaled first (action `inject`, with the bytes it replaced), like every side
effect. `device` and `dir` targets have no image: they are refused, and `fslab plan`
says so before anything runs. Undoing an injection is nothing to do: the image it
damaged is deleted with its target.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fslab.errors import TargetError
from fslab.targets import loop
from fslab.targets._proc import run
from fslab.targets.journal import Journal
from fslab.targets.mount import mountinfo, same_device
from fslab.targets.owner import inside, prove
from fslab.targets.provision import Provisioned


@dataclass(frozen=True)
class Write:
    """`data` written at `offset` of `image`, and why (for the journal and the report)."""

    image: Path
    offset: int
    data: bytes
    what: str


def refusal(prov: Provisioned) -> str | None:
    """Why faults cannot be injected into `prov` at all, or None."""
    kind = prov.effective.get("kind")
    if kind != "loop" or not prov.images:
        return (
            f"target `{prov.name}` is a {kind} target: fslab injects faults only into the "
            f"loop images it made for a run, never into a device or directory"
        )
    if prov.owner is None:
        return f"target `{prov.name}`: no directory fslab owns holds its images"
    return None


def _check(prov: Provisioned, writes: Sequence[Write]) -> None:
    why = refusal(prov)
    if why:
        raise TargetError(why, hint="give the integrity workload loop targets (`loop = {...}`)")
    assert prov.owner is not None
    owned = prove(str(prov.owner.path), prov.owner.details())
    for dev in prov.devices:
        for m in mountinfo():
            if same_device(m.source, dev):
                raise TargetError(
                    f"not injecting into {prov.name}: {dev} is mounted at {m.mountpoint}",
                    hint="this is a bug in fslab: faults go in only while unmounted",
                )
    for w in writes:
        if w.image not in prov.images or not inside(str(w.image), owned.path):
            raise TargetError(
                f"not injecting into {w.image}: not an image fslab made for target "
                f"`{prov.name}` ({', '.join(map(str, prov.images))})",
                hint="this is a bug in fslab: nothing was written",
            )
        size = w.image.stat().st_size
        if w.offset < 0 or w.offset + len(w.data) > size:
            raise TargetError(
                f"not injecting into {w.image}: bytes {w.offset}..{w.offset + len(w.data)} "
                f"lie outside the image ({size} bytes)",
                hint="this is a bug in fslab: nothing was written",
            )


def _open_image(prov: Provisioned, w: Write) -> int:
    """The image opened for the write, proven by the open file itself (no race with a
    name swapped since the checks): never through a link, a regular file, the very file
    one of the target's loop devices is backed by, the write inside it."""
    fd = os.open(w.image, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        backed = {loop.backing_identity(d) for d in prov.devices}
        if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) not in backed:
            raise TargetError(
                f"not injecting into {w.image}: it is not the file the loop devices of "
                f"target `{prov.name}` are backed by",
                hint="something replaced the image while the target was unmounted; nothing "
                "was written",
            )
        if w.offset + len(w.data) > st.st_size:
            raise TargetError(
                f"not injecting into {w.image}: bytes {w.offset}..{w.offset + len(w.data)} "
                f"lie outside the image ({st.st_size} bytes)",
                hint="this is a bug in fslab: nothing was written",
            )
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_at(image: Path, offset: int, length: int) -> bytes:
    """The image's bytes, as the loop device would read them."""
    fd = os.open(image, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return os.pread(fd, length, offset)
    finally:
        os.close(fd)


def inject(prov: Provisioned, writes: Sequence[Write], journal: Journal) -> list[dict[str, Any]]:
    """Writes `writes` into `prov`'s images (checked first, all or nothing, journaled),
    flushes the loop devices' caches so the next mount reads them; returns what was done
    (image, offset, length, what, and digests of the bytes before and after)."""
    _check(prov, writes)
    assert prov.owner is not None
    done: list[dict[str, Any]] = []
    for w in writes:
        before = read_at(w.image, w.offset, len(w.data))
        record = {
            "image": str(w.image),
            "offset": w.offset,
            "length": len(w.data),
            "what": w.what,
            "before_sha256": hashlib.sha256(before).hexdigest(),
            "after_sha256": hashlib.sha256(w.data).hexdigest(),
        }
        fd = _open_image(prov, w)
        try:
            entry = journal.record("inject", str(w.image), {**record, **prov.owner.details()})
            os.pwrite(fd, w.data, w.offset)
            os.fsync(fd)
        finally:
            os.close(fd)
        journal.done(entry)
        done.append(record)
    for dev in prov.devices:
        # The loop device's own page cache may still hold the old bytes of blocks the
        # file system read as metadata.
        run(["blockdev", "--flushbufs", dev])
    return done
