"""Reads a study file: TOML syntax, then the model, reporting every problem at once with
its line (when it can be found) and key path, and the closest key for a misspelt one."""

from __future__ import annotations

import difflib
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from fslab.errors import ExitStatus, FslabError
from fslab.study.model import FilesWorkloadSpec, LoopSpec, Study, TargetSpec, WorkloadSpec


@dataclass(frozen=True)
class Problem:
    where: str
    """`study.toml:12: target[1].fs`: file, line when known, key path."""
    what: str
    hint: str | None = None

    def __str__(self) -> str:
        return f"{self.where}: {self.what}" + (f"\n  hint: {self.hint}" if self.hint else "")


class StudyError(FslabError):
    """A study file with one or more problems; `problems` lists them all."""

    exit_status = ExitStatus.USAGE

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        n = len(problems)
        first = str(problems[0]) if n == 1 else "\n".join(f"{p}" for p in problems)
        super().__init__(
            first if n == 1 else f"{n} problems in the study:\n{first}",
            hint="`fslab plan STUDY` checks a study without touching anything",
        )


_MODELS: dict[str, type[BaseModel]] = {
    "target": TargetSpec,
    "workload": WorkloadSpec,
    "block": WorkloadSpec,
    "files": FilesWorkloadSpec,
    "loop": LoopSpec,
}
# Tags pydantic puts in an error's location to say which kind of workload it checked.
_TAGS = ("block", "files")


def _line_index(text: str) -> dict[tuple[str, int, str], int]:
    """(table, index, key) -> line number, for `[[target]]`/`[[workload]]` arrays and the
    top level (table ""), by a plain scan: tomllib keeps no positions."""
    index: dict[tuple[str, int, str], int] = {}
    table, counts = "", {"": 0}
    for no, line in enumerate(text.splitlines(), start=1):
        s = line.strip()
        header = re.match(r"^\[\[\s*([A-Za-z0-9_-]+)\s*\]\]", s)
        if header:
            table = header.group(1)
            counts[table] = counts.get(table, -1) + 1
            index.setdefault((table, counts[table], ""), no)
            continue
        if re.match(r"^\[\s*([A-Za-z0-9_.-]+)\s*\]", s):
            table = s.strip("[] ")
            counts.setdefault(table, 0)
            continue
        key = re.match(r"^([A-Za-z0-9_-]+)\s*=", s)
        if key:
            index.setdefault((table, counts.get(table, 0), key.group(1)), no)
    return index


def _field_names(loc: tuple[int | str, ...]) -> list[str]:
    """The keys allowed at the place `loc` points into."""
    model: type[BaseModel] = Study
    for part in loc[:-1]:
        if isinstance(part, str) and part in _MODELS:
            model = _MODELS[part]
    return list(model.model_fields)


def _format_loc(loc: tuple[int | str, ...], data: dict[str, Any]) -> str:
    out = ""
    node: Any = data
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
            name = (
                node[part].get("name")
                if isinstance(node, list) and part < len(node) and isinstance(node[part], dict)
                else None
            )
            if isinstance(name, str):
                out += f" ({name})"
        elif not part.startswith(("function-", "literal", "str", "int", "list", "bool", "float")):
            out += ("." if out else "") + part
        if isinstance(node, dict) and isinstance(part, str):
            node = node.get(part)
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
    return out


def _problem(
    err: Any, data: dict[str, Any], place: str, lines: dict[tuple[str, int, str], int]
) -> Problem:
    raw: tuple[int | str, ...] = tuple(err["loc"])
    # `workload[0].files.opps` -> `workload[0].opps`; the tag still picks the model.
    model_loc = raw
    loc = tuple(p for i, p in enumerate(raw) if not (i == 2 and p in _TAGS))
    table, idx, key = "", 0, ""
    if len(loc) >= 2 and isinstance(loc[0], str) and isinstance(loc[1], int):
        table, idx = loc[0], loc[1]
        key = str(loc[2]) if len(loc) > 2 else ""
    elif loc:
        key = str(loc[0])
    line = lines.get((table, idx, key)) or lines.get((table, idx, ""))
    where = f"{place}:{line}" if line else place
    path = _format_loc(loc, data)
    if path:
        where += f": {path}"
    msg = str(err["msg"]).removeprefix("Value error, ")
    hint = None
    if err["type"] == "extra_forbidden":
        bad = str(loc[-1])
        msg = f"unknown key `{bad}`"
        allowed = _field_names(model_loc)
        close = difflib.get_close_matches(bad, allowed, n=1, cutoff=0.6)
        hint = f"did you mean `{close[0]}`?" if close else f"allowed keys: {', '.join(allowed)}"
    elif err["type"] == "missing":
        msg = "is required"
    elif err["type"] == "literal_error":
        got = err.get("input")
        expected = err.get("ctx", {}).get("expected", "")
        msg = f"`{got}` is not allowed; allowed: {expected}"
        options = re.findall(r"'([^']+)'", expected)
        close = difflib.get_close_matches(str(got), options, n=1, cutoff=0.5)
        if close:
            hint = f"did you mean `{close[0]}`?"
    return Problem(where, msg, hint)


def parse_study(text: str, place: str) -> Study:
    """Checks `text` (TOML) and returns the study, or raises StudyError listing every problem."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise StudyError([Problem(place, f"not valid TOML: {e}")]) from e
    defaults = data.pop("defaults", None)
    if isinstance(defaults, dict) and isinstance(data.get("workload"), list):
        # `[defaults]` holds workload keys shared by every workload; a workload's own win.
        data["workload"] = [
            {**defaults, **w} if isinstance(w, dict) else w for w in data["workload"]
        ]
    elif defaults is not None and not isinstance(defaults, dict):
        raise StudyError([Problem(f"{place}: defaults", "must be a table of workload keys")])
    try:
        return Study.model_validate(data)
    except ValidationError as e:
        lines = _line_index(text)
        problems = [_problem(err, data, place, lines) for err in e.errors()]
        raise StudyError(problems) from e


def load_study(path: Path) -> tuple[Study, str]:
    """Reads and checks a study file; returns the study and its text."""
    try:
        text = path.read_text()
    except OSError as e:
        raise StudyError([Problem(str(path), f"cannot read the study: {e.strerror or e}")]) from e
    return parse_study(text, str(path)), text
