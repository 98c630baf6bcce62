"""A block device's I/O scheduler and what its queue says of itself, through sysfs.

`/sys/block/<disk>/queue/scheduler` lists the schedulers the kernel offers for the
device, the one in effect in brackets (`[none] mq-deadline kyber bfq`); writing a name
there switches it at once. A partition has no queue of its own: its disk's is the one
that schedules it. `rotational` is recorded beside it because btrfs turns its `ssd` mode
on only for non-rotational devices, so a loop device over an SSD's file says which
behaviour a run got.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from fslab.errors import TargetError
from fslab.targets.spec import SCHEDULERS

__all__ = [
    "MODULES",
    "SCHEDULERS",
    "facts",
    "offered_for_loop",
    "parse",
    "queue_dir",
    "read",
    "switch",
]

MODULES = {"mq-deadline": "mq-deadline", "kyber": "kyber-iosched", "bfq": "bfq"}
"""Each scheduler's kernel module, for the hint when one is not offered."""


def queue_dir(device: str) -> Path | None:
    """The sysfs queue directory that schedules `device` (its disk's, for a partition),
    or None when it has none (not a block device)."""
    name = Path(os.path.realpath(device)).name
    node = Path("/sys/class/block") / name
    if not node.exists():
        return None
    real = Path(os.path.realpath(node))
    if (real / "partition").exists():
        real = real.parent
    queue = real / "queue"
    return queue if queue.is_dir() else None


def parse(text: str) -> tuple[tuple[str, ...], str | None]:
    """`[none] mq-deadline kyber bfq` -> (the names offered, the one in effect)."""
    names, current = [], None
    for word in text.split():
        if word.startswith("[") and word.endswith("]"):
            word = word[1:-1]
            current = word
        names.append(word)
    return tuple(names), current


def read(device: str) -> tuple[tuple[str, ...], str | None]:
    """The schedulers offered for `device` and the one in effect; ((), None) when sysfs
    has no scheduler for it."""
    queue = queue_dir(device)
    try:
        return parse((queue / "scheduler").read_text()) if queue else ((), None)
    except OSError:
        return (), None


def offered_for_loop() -> tuple[str, ...]:
    """What the loop driver offers here (every loop device gets the same), read from the
    first loop device sysfs lists; () when there is none."""
    for node in sorted(Path("/sys/block").glob("loop*")):
        names, _ = read(f"/dev/{node.name}")
        if names:
            return names
    return ()


def switch(device: str, name: str) -> None:
    """Puts scheduler `name` in effect on `device`'s queue, and checks it took."""
    queue = queue_dir(device)
    if queue is None:
        raise TargetError(f"{device} has no I/O scheduler in sysfs")
    try:
        (queue / "scheduler").write_text(name)
    except OSError as e:
        raise TargetError(
            f"{device}: setting the I/O scheduler to {name} failed: {e.strerror}",
            hint=f"the kernel offers: {' '.join(read(device)[0]) or 'none'}",
        ) from e
    if (now := read(device)[1]) != name:
        raise TargetError(f"{device}: the I/O scheduler is {now} after setting {name}")


def facts(device: str) -> dict[str, object]:
    """The queue's facts for the record: scheduler in effect and offered, rotational."""
    names, current = read(device)
    out: dict[str, object] = {"device": device, "scheduler": current, "offered": list(names)}
    queue = queue_dir(device)
    if queue is not None:
        with contextlib.suppress(OSError):
            out["rotational"] = (queue / "rotational").read_text().strip() == "1"
    return out
