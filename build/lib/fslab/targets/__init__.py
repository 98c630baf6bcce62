"""Storage targets: what a workload runs on, made real and taken down again.

The only package in fslab that runs mkfs, losetup, mount, wipefs or blkid.

- `System.probe()` / `check(spec, system, scale)`: can this target be made here? (no
  side effects)
- `side_effects(spec, workdir, scale)`: what making it will do, in words (`fslab plan`)
- `provision(spec, workdir, journal, scale)` -> `Provisioned`; `teardown(p, journal)`
- `Journal` (the protocol provisioning writes to before each side effect),
  `MemoryJournal`, and `undo(action, subject, details)` for `fslab cleanup`
- `gate.check_device` / `gate.hold`: the safety gate for user-named block devices
"""

from __future__ import annotations

from fslab.targets.gate import check_device, hold
from fslab.targets.journal import Journal, JournalEntry, JournalRef, MemoryJournal, undo
from fslab.targets.provision import Provisioned, provision, side_effects, teardown
from fslab.targets.system import System, check

__all__ = [
    "Journal",
    "JournalEntry",
    "JournalRef",
    "MemoryJournal",
    "Provisioned",
    "System",
    "check",
    "check_device",
    "hold",
    "provision",
    "side_effects",
    "teardown",
    "undo",
]
