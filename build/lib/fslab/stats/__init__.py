"""Statistics over repetitions: summaries with confidence intervals
(`fslab.stats.summary`), the decision rule that compares a target with the baseline
(`fslab.stats.decision`), and the warnings that make a measurement doubtful
(`fslab.stats.warnings`)."""

from fslab.stats.decision import Decision, Judgement, NoVerdict, decide
from fslab.stats.summary import ALPHA, CONFIDENCE, Summary, summarize

__all__ = [
    "ALPHA",
    "CONFIDENCE",
    "Decision",
    "Judgement",
    "NoVerdict",
    "Summary",
    "decide",
    "summarize",
]
