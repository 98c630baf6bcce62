"""The shared words of the report (`fslab.report.format`): one mark per verdict, one slug,
one way to escape Markdown, one unit per axis, whatever renders them."""

from __future__ import annotations

from fslab.metrics import Direction, MetricKind, MetricSpec
from fslab.report.format import (
    MARKS,
    code,
    format_stat,
    mark,
    md,
    md_markup,
    ns_axis,
    param_column,
    slug,
)
from fslab.stats.decision import Decision, Judgement, NoVerdict


def test_every_verdict_has_a_mark_and_a_flagged_cell_says_so() -> None:
    assert set(MARKS) == {d for d in Decision if d is not Decision.NONE}
    assert len(set(MARKS.values())) == len(MARKS)
    assert mark(None) == ""
    assert mark(Judgement(1.2, 1.1, 1.3, Decision.BETTER)) == "better"
    assert mark(Judgement(0.9, 0.8, 1.1, Decision.INCONCLUSIVE, more_runs=3)) == "?"
    assert mark(Judgement(0.5, None, None, Decision.NONE, why=NoVerdict.SINGLE_RUN)) == ""
    flagged = Judgement(0.5, 0.4, 0.6, Decision.NONE, why=NoVerdict.FLAGGED, flags="cached")
    assert mark(flagged) == "!" and flagged.reason == "its runs are flagged (cached)"


def test_a_slug_is_lowercase_words_joined_by_dashes_and_never_empty() -> None:
    assert slug("cached: rw=read") == "cached-rw-read"
    assert slug("<script>") == "script"
    assert slug("!!!") == "chart"
    assert len(slug("x" * 100)) == 60


def test_a_parameter_named_like_a_column_gets_a_prefix() -> None:
    assert param_column("iodepth", {"target", "mean"}) == "iodepth"
    assert param_column("target", {"target", "mean"}) == "param_target"


def test_plain_text_is_escaped_for_markdown_and_markup_is_kept_for_compare() -> None:
    assert md("a|b `c` <d>") == "a\\|b \\`c\\` &lt;d&gt;"
    # `fslab compare --format md` writes its own code spans; only the pipe and control
    # characters are escaped there.
    assert md_markup("study `s` | x\x1b[31m") == "study `s` \\| x\\x1b[31m"
    assert code("a ` b") == "``a ` b``"


def test_text_says_us_and_chart_axes_say_micro_seconds() -> None:
    lat = MetricSpec("lat_mean_ns", "mean lat", "ns", Direction.LOWER, MetricKind.LATENCY)
    assert format_stat(lat, 85_300, 2_100) == "85.3us ± 2.1us"
    assert ns_axis([85_300, 90_000, 70_000]) == (1e3, "µs")
    assert ns_axis([500.0]) == (1.0, "ns")
    assert ns_axis([]) == (1e3, "µs")
