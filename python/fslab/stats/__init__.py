"""Statistics over repetitions: summaries with confidence intervals, and comparisons that
call a difference a difference only when it is significant. See `fslab.stats.summary`."""

from fslab.stats.summary import (
    ALPHA,
    CONFIDENCE,
    Difference,
    Summary,
    Verdict,
    compare_samples,
    summarize,
)

__all__ = [
    "ALPHA",
    "CONFIDENCE",
    "Difference",
    "Summary",
    "Verdict",
    "compare_samples",
    "summarize",
]
