"""A study's parameters as the results store them (sizes in bytes, durations in
seconds): how they read for people (`format_param`) and how a `--where KEY=VALUE` filter
matches them (`param_matches`). Compare, export, the reports and `fslab plan` share these."""

from __future__ import annotations

import difflib
import functools
import math
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any, TypeVar

from fslab.catalog import DURATION_KEYS, SIZE_KEYS
from fslab.units import format_bytes, parse_duration, parse_size

# The study's words first, in the order people read a job; others follow as stored.
_ORDER = (
    "rw", "rwmixread", "bs", "threads", "iodepth", "file_size", "io_size", "runtime", "ramp_time",
)  # fmt: skip


@functools.cache
def param_order(keys: tuple[str, ...]) -> tuple[str, ...]:
    """These parameter names in the order people read a job (`rw`, `bs`, `threads`, ...),
    others after them as given."""
    first = [k for k in _ORDER if k in keys]
    return (*first, *(k for k in keys if k not in first))


_SIZES = frozenset(SIZE_KEYS)
_DURATIONS = frozenset(DURATION_KEYS)


def _is_size_key(key: str) -> bool:
    return key in _SIZES or key.endswith("_size")


def format_param(key: str, value: Any) -> str:
    """A parameter value for people: sizes as `8KiB`, durations as `10s`, booleans as
    `true`, lists with commas (the plan stores sizes in bytes, durations in seconds)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if key == "size_buckets" and isinstance(value, list):
        return " ".join(f"{format_bytes(int(s))}:{w:g}" for s, w in value)
    if isinstance(value, int) and _is_size_key(key):
        return format_bytes(value)
    if isinstance(value, int | float) and key in _DURATIONS:
        # Below a millisecond (a `completion_spin`), microseconds read better than 5e-05s.
        return f"{value * 1e6:g}us" if 0 < value < 1e-3 else f"{value:g}s"
    if isinstance(value, list):
        return ",".join(format_param(key, v) for v in value)
    return str(value)


def param_matches(key: str, stored: Any, wanted: str) -> bool:
    """Whether the stored value of parameter `key` equals a `--where` value.

    Sizes are compared in bytes when both sides read as sizes (`8k`, `8KiB` and `8192` are
    one value); durations in seconds (`runtime=30s` matches a stored 30.0); booleans accept
    `true/false/1/0/yes/no`; anything else compares as text."""
    if isinstance(stored, bool):
        truthy, falsy = ("true", "1", "yes", "on"), ("false", "0", "no", "off")
        return wanted.lower() in (truthy if stored else falsy)
    a, b = _as_size(stored), _as_size(wanted)
    if a is not None and b is not None:
        return a == b
    if key in _DURATIONS and isinstance(stored, int | float):
        try:
            return math.isclose(parse_duration(wanted), stored, rel_tol=1e-9)
        except ValueError:
            return False
    if isinstance(stored, float):
        try:
            return float(wanted) == stored
        except ValueError:
            return False
    if isinstance(stored, list):
        return ",".join(map(str, stored)) == wanted
    return str(stored) == wanted


def _as_size(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, str | int):
        return None
    try:
        return parse_size(value)
    except ValueError:
        return None


def varying_keys(
    param_sets: Iterable[Sequence[tuple[str, Any]]], *, among: Collection[str] | None = None
) -> list[str]:
    """The parameters that tell these points apart, in order of appearance: those with
    more than one value among them, and those some of them lack (the swept axes of a
    workload, the words of a point's title); of the keys `among` only, where given (a
    subset of points varies at most where the whole set does)."""
    # One pass, counting the sets each key is in (a family's points can be 100,000). A
    # value is told apart with its type (1, 1.0 and True are one key of a set); repr only
    # for what cannot be a key (lists) and NaN (never equal to itself).
    values: dict[str, set[Any]] = {}
    seen: dict[str, int] = {}
    n = 0
    for params in param_sets:
        n += 1
        for k, v in params:  # a point's keys are unique: no dict made
            if among is not None and k not in among:
                continue
            if (vs := values.get(k)) is None:
                vs = values[k] = set()
            vs.add((v.__class__, v) if v.__class__ in _SCALARS and v == v else repr(v))
            seen[k] = seen.get(k, 0) + 1
    return [k for k, vs in values.items() if len(vs) > 1 or seen[k] < n]


_SCALARS = frozenset({str, int, float, bool, type(None)})


_T = TypeVar("_T")

MISSING: Any = object()
"""What a selection's `value` returns for a key an item does not have."""


class WhereError(ValueError):
    """A `--where` that names no key the items have, or that no item matches: `message`
    and a `hint` (what there is)."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


def suggest(name: str, choices: Sequence[str], what: str) -> str:
    """`did you mean `x`? the parameters are: ...`: a hint for an unknown name."""
    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.5)
    listed = ", ".join(f"`{c}`" for c in choices)
    if close:
        return f"did you mean `{close[0]}`? {what}: {listed}"
    return f"{what}: {listed}"


def select(
    items: Sequence[_T],
    filters: Sequence[tuple[str, str]],
    keys: Sequence[str],
    value: Callable[[_T, str], Any],
) -> list[_T]:
    """The items every filter matches: one of the values given for a key (repeating a
    key is "or", different keys "and"), by `param_matches`. `keys` are the keys the items
    have, `value(item, key)` an item's value (`MISSING` when it has none). Raises
    `WhereError` for a key none has, or when nothing matches (saying what there is)."""
    if not filters:
        return list(items)
    wanted: dict[str, list[str]] = {}
    for key, v in filters:
        if key not in keys:
            raise WhereError(
                f"unknown --where key `{key}`: no point has this parameter",
                suggest(key, keys, "the parameters are"),
            )
        wanted.setdefault(key, []).append(v)
    kept = [
        it
        for it in items
        if all(
            value(it, k) is not MISSING and any(param_matches(k, value(it, k), v) for v in vs)
            for k, vs in wanted.items()
        )
    ]
    if not kept:
        present = "; ".join(
            f"`{k}` is "
            + ", ".join(
                dict.fromkeys(
                    format_param(k, value(it, k)) for it in items if value(it, k) is not MISSING
                )
            )
            for k in wanted
        )
        expr = " ".join(f"{k}={v}" for k, v in filters)
        raise WhereError(f"no point matches `{expr}`", f"in this study {present}")
    return kept
