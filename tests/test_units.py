"""Units: the lab reads sizes and durations as the engine does, from the same vectors
(`tests/data/units.json`, also read by the engine's `cargo test`), and formats numbers for
people one way."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fslab.units import (
    format_bytes,
    format_count,
    format_ns,
    format_rate,
    format_s,
    parse_duration,
    parse_size,
    short_count,
    sig3,
)

VECTORS: dict[str, Any] = json.loads(
    (Path(__file__).parent / "data" / "units.json").read_text(encoding="utf-8")
)


def _rows(section: str) -> list[dict[str, Any]]:
    """A section's vectors, without its `about` line."""
    return [row for row in VECTORS[section] if "about" not in row]


def _id(row: dict[str, Any]) -> str:
    return repr(row.get("text", row))


@pytest.mark.parametrize("row", _rows("sizes") + _rows("sizes_lab_only"), ids=_id)
def test_sizes_mean_what_the_engine_says(row: dict[str, Any]) -> None:
    if row.get("error"):
        with pytest.raises(ValueError, match="is not a"):
            parse_size(row["text"])
    else:
        assert parse_size(row["text"]) == row["bytes"]


@pytest.mark.parametrize("row", _rows("durations"), ids=_id)
def test_durations_mean_what_the_engine_says(row: dict[str, Any]) -> None:
    if row.get("error"):
        with pytest.raises(ValueError, match="is not a duration"):
            parse_duration(row["text"])
    else:
        # Exactly: the engine rounds to whole nanoseconds, and so does the lab.
        assert parse_duration(row["text"]) == row["seconds"]


def test_a_size_must_be_whole_bytes_and_not_negative() -> None:
    with pytest.raises(ValueError, match=r"`0\.3` is not a whole number of bytes"):
        parse_size("0.3")
    with pytest.raises(ValueError, match="`-4k` is not a size: a size cannot be negative"):
        parse_size("-4k")
    with pytest.raises(ValueError, match="`-1` is not a size: a size cannot be negative"):
        parse_size(-1)
    with pytest.raises(ValueError, match=r"`4i` is not a size \(write e.g."):
        parse_size("4i")


def test_a_byte_count_passes_through_and_other_types_are_refused() -> None:
    assert parse_size(4096) == 4096
    assert parse_size(1 << 70) == 1 << 70  # the check that knows the limit says "too large"
    for bad in (True, 1.5, None):
        with pytest.raises(ValueError, match="is not a size"):
            parse_size(bad)  # type: ignore[arg-type]


def test_a_size_beyond_64_bits_is_too_large_not_malformed() -> None:
    with pytest.raises(ValueError, match="`16EiB` is not a size: too large"):
        parse_size("16EiB")


def test_units_are_read_in_any_case_as_the_engine_reads_them() -> None:
    assert parse_size("4KIB") == 4096
    assert parse_duration("30S") == 30.0
    assert parse_duration("2MIN") == 120.0
    assert parse_duration(" 500 ms ") == 0.5


def test_a_number_of_seconds_passes_through_and_a_bool_is_refused() -> None:
    assert parse_duration(10) == 10.0
    assert parse_duration(0.25) == 0.25
    with pytest.raises(ValueError, match="`True` is not a duration"):
        parse_duration(True)
    with pytest.raises(ValueError, match=r"`abc` is not a duration \(write e.g. `500ms`"):
        parse_duration("abc")


def test_a_duration_is_rounded_to_whole_nanoseconds_halves_away_from_zero() -> None:
    assert parse_duration("0.5ns") == 1e-9
    assert parse_duration("2.5ns") == 3e-9  # Python's round() would say 2


_FORMATS: dict[str, tuple[str, Callable[[Any], str]]] = {
    "format_bytes": ("bytes", format_bytes),
    "format_ns": ("ns", format_ns),
    "format_count": ("n", format_count),
    "format_rate": ("bytes_per_s", format_rate),
    "format_s": ("seconds", format_s),
    "sig3": ("value", sig3),
    "short_count": ("n", short_count),
}


@pytest.mark.parametrize(
    ("section", "row"),
    [(section, row) for section in _FORMATS for row in _rows(section)],
    ids=lambda x: x if isinstance(x, str) else repr(x["text"]),
)
def test_numbers_read_as_the_vectors_say(section: str, row: dict[str, Any]) -> None:
    key, fmt = _FORMATS[section]
    assert fmt(row[key]) == row["text"]


def test_every_formatting_section_of_the_vectors_is_tested() -> None:
    parsed = {"about", "sizes", "durations", "sizes_lab_only"}
    assert set(VECTORS) - parsed == set(_FORMATS)


def test_formatted_sizes_parse_back_to_the_same_bytes() -> None:
    for n in (512, 4096, 12288, 64 << 20, 3 << 29, 1 << 40):
        assert parse_size(format_bytes(n)) == n
