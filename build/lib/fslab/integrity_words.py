"""The words of integrity studies (`kind = "integrity"`), in one place for the kind that
writes them (`fslab.kinds.integrity`) and every reader that shows them (compare, export,
the reports). The read path must not import the kinds (docs/architecture.md, "A workload
kind"), so the kind imports these from here.

One integrity run injects one fault into a target's loop image under a file written with
the engine's `verify`, reads the file back and names what the file system did: its
*outcome* (table `integrity`, docs/integrity.md).
"""

from __future__ import annotations

KIND = "integrity"
"""The workload kind whose runs have an `integrity` row and no compared metrics."""
OP = KIND
"""The operation its outcomes show under (`fslab compare --op integrity`, export's `op`)."""

FAULTS = ("bitflip", "zero_block", "random_block", "lost_write", "misdirected", "torn")
"""The fault models, in the order tables list them."""

REGIONS = ("data", "metadata")
"""Where a fault lands: the file's data blocks, or its inode (the btrfs tree leaf that
holds it); tables list data first."""

REGION_NAMES = {"metadata": "inode"}
"""How a table row names a region other than data, after the fault: `bitflip (inode)`."""

OUTCOMES = ("repaired", "detected", "silent_wrong", "silent_stale", "unaffected")
"""What the file system did, in the order tables and counts list them."""

OUTCOME_MEANING = {
    "repaired": "correct data came back and the file system reports a fix",
    "detected": "an error instead of wrong data",
    "silent_wrong": "wrong data without an error",
    "silent_stale": "an older write's data without an error",
    "unaffected": "correct data, nothing to report",
}
"""Each outcome in words (the legend under every integrity table)."""

SILENT = ("silent_wrong", "silent_stale")
"""The outcomes where the application got bad data and was not told."""

SEVERITY = ("silent_wrong", "silent_stale", "detected", "repaired", "unaffected")
"""Worst first: a fault whose repetitions disagree counts under its worst outcome in the
summary (a file system that returned wrong data once can return it)."""


REPAIRED_BY_WORDS = {"read": "on the read itself", "scrub": "by the scrub"}

OUTCOME_LEGEND = "; ".join(f"{o}: {m}" for o, m in OUTCOME_MEANING.items())
"""`repaired: correct data came back ...; detected: ...`: the legend in one line."""

EFFECTIVE_FACTS = (
    ("fs", "file system"),
    ("data_checksums", "data checksums"),
    ("metadata_checksums", "metadata checksums"),
    ("data_profile", "data profile"),
    ("metadata_profile", "metadata profile"),
)
"""The keys of a target's configuration in effect (`run.effective`) that explain its
integrity outcomes, and their labels."""
