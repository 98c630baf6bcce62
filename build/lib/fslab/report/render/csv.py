"""`fslab compare --format csv`: the tidy rows (`fslab.report.render.tidy`) as CSV."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from fslab.compare import Comparison
from fslab.report.render.tidy import tidy_columns, tidy_rows


def csv_text(columns: Sequence[str], rows: Iterable[Mapping[str, Any]]) -> str:
    """CSV with a header row: an absent value is an empty field, and a list, a dict or a
    bool is written as JSON (`[4096, 1]`, `true`), so that it reads back as one value in
    any language."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(columns), lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow(
            {
                k: "" if v is None else (json.dumps(v) if isinstance(v, list | dict | bool) else v)
                for k, v in row.items()
            }
        )
    return out.getvalue()


def render_csv(comparison: Comparison) -> str:
    """Tidy CSV with a header row; empty fields where a value is absent."""
    return csv_text(tidy_columns(comparison), tidy_rows(comparison))
