"""Warnings about measurements that should not be trusted as they stand.

Each warning names what was seen and what to do about it. `fslab compare` and the reports
show the same warnings (one source: `fslab.compare` attaches them to the cells they concern).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class WarningKind(StrEnum):
    """What made a measurement doubtful."""

    NOISY = "noisy"
    """The repetitions spread more than `NOISY_CV` (coefficient of variation)."""
    OUTLIER = "outlier"
    """One repetition is far from the others (modified z-score above `OUTLIER_Z`)."""
    UNSTEADY = "unsteady"
    """The run's throughput was still drifting at its end: no steady state."""
    SHORT = "short"
    """The run was too short for its numbers to mean much."""
    CACHED = "cached"
    """A buffered run whose working set fits in the page cache: it measured memory."""
    COMPRESSIBLE = "compressible"
    """The data written was compressible: a compressing layer would flatter it."""
    CONTAMINATED = "contaminated"
    """Other processes, CPU steal or pressure disturbed the run."""


@dataclass(frozen=True)
class StatWarning:
    """One warning about one target's measurements of a group (or one of its runs)."""

    kind: WarningKind
    target: str
    message: str
    """What was seen, for people: `noisy: CV 14% over 3 runs (IOPS)`."""
    hint: str
    """What to do next."""
