"""The results of one study side by side: per workload point-group, one row per operation
and metric, one column per target, each cell a summary of the repetitions and, for targets
other than the baseline, its difference with the baseline (`fslab.stats.summary` says how).

A *group* is one workload with one value per sweep axis (`rw`, `bs`, `threads`, ...), run on
every target: the same job across file systems, which is what a column comparison means.

The package, by responsibility:
- `model`: the comparison the renderers read (`Comparison`, `Group`, `Row`, `Cell`, ...);
- `cells`: the arrays its numbers sit in (`Stats`) and the numbers the data renderers read;
- `build`: `compare_results`, the comparison itself, a pure function of a study's stored
  rows; its statistics run over all cells at once (numpy), so a study of 100,000 runs
  compares in seconds, and the cells of a row are made when a renderer asks for them;
- `select`: which study, baseline and points (`build_comparison`, `--where`).

The names below are the package's own; metric specs come from `fslab.metrics`, the
results database's names from `fslab.store.query`.
"""

from __future__ import annotations

from fslab.compare.build import DISTURBED, NOT_STEADY, compare_results
from fslab.compare.model import (
    HEADLINE_METRIC,
    NUMBERS,
    Cell,
    Comparison,
    Disturber,
    Group,
    IntegrityCell,
    Question,
    Row,
    disturbers_of,
    each_row,
    is_headline,
    log_ratios,
    planned_numbers,
    row_numbers,
    rows_matching,
    summaries,
)
from fslab.compare.select import build_comparison, build_ranks, keep_ops
from fslab.compare.where import CompareError, parse_where

__all__ = [
    "DISTURBED", "HEADLINE_METRIC", "NOT_STEADY", "NUMBERS", "Cell", "CompareError",
    "Comparison", "Disturber", "Group", "IntegrityCell", "Question", "Row",
    "build_comparison", "build_ranks", "compare_results", "disturbers_of", "each_row",
    "is_headline", "keep_ops", "log_ratios", "parse_where", "planned_numbers", "row_numbers",
    "rows_matching", "summaries",
]  # fmt: skip
