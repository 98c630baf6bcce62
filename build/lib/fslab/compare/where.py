"""Choosing points and a baseline: `--where KEY=VALUE` parsed and applied to a study's
points, a parameter value in canonical form, the baseline a user named (or the first
target)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from fslab.errors import ExitStatus, FslabError
from fslab.params import (
    MISSING,
    WhereError,
    param_order,
    select,
    suggest,
)
from fslab.store.query import (
    PointRow,
)


class CompareError(FslabError):
    """The comparison asked for cannot be made as asked: an unknown study, baseline or
    `--where` key, or a filter that matches nothing."""

    exit_status = ExitStatus.USAGE


def parse_where(exprs: Iterable[str | tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """`["bs=8k", "rw=randread"]` -> `(("bs", "8k"), ("rw", "randread"))`."""
    out: list[tuple[str, str]] = []
    for e in exprs:
        if isinstance(e, tuple):
            key, value = e
        else:
            key, sep, value = e.partition("=")
            if not sep:
                raise CompareError(
                    f"`{e}` is not a filter", hint="write `--where KEY=VALUE`, e.g. `--where bs=8k`"
                )
        key, value = key.strip(), value.strip()
        if not key:
            raise CompareError(
                f"`{e}` is not a filter", hint="write `--where KEY=VALUE`, e.g. `--where bs=8k`"
            )
        out.append((key, value))
    return tuple(out)


def filter_points(points: list[PointRow], filters: tuple[tuple[str, str], ...]) -> list[PointRow]:
    # `workload` is not a parameter but names what people filter by first.
    keys = ("workload", *param_order(tuple(dict.fromkeys(k for p in points for k in p.params))))

    def value(p: PointRow, k: str) -> Any:
        return p.workload if k == "workload" else p.params.get(k, MISSING)

    try:
        return select(points, filters, keys, value)
    except WhereError as e:
        raise CompareError(e.message, hint=e.hint) from e


def canonical(value: Any) -> bytes:
    if value is MISSING:
        return b"\0missing"
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)


def pick_baseline(targets: tuple[str, ...], wanted: str | None, study: str) -> str:
    if wanted is None:
        return targets[0]
    if wanted in targets:
        return wanted
    raise CompareError(
        f"unknown baseline `{wanted}`: study `{study}` has no such target",
        hint=suggest(wanted, targets, "targets"),
    )
