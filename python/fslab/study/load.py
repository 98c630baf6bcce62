"""Reads a study file: TOML syntax, then the model, reporting every problem at once with
its line (when it can be found) and key path, and the closest key for a misspelt one.

A study read here remembers where each key was written, so checks made later (sizes,
the engine's view of a job, duplicate points) can name the line too: see `where`.
"""

from __future__ import annotations

import difflib
import json
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from fslab.errors import ExitStatus, FslabError
from fslab.safe_text import safe_text
from fslab.study.model import (
    FilesWorkloadSpec,
    LoopSpec,
    MailstoreWorkloadSpec,
    OltpWorkloadSpec,
    PgbenchWorkloadSpec,
    Study,
    TargetSpec,
    WorkloadSpec,
)


@dataclass(frozen=True)
class Problem:
    where: str
    """`study.toml:12: target[1].fs`: file, line when known, key path."""
    what: str
    hint: str | None = None
    refused: bool = False
    """The safety gate refused a device: the study may be right, the device is not for
    fslab to format (exit status 3 instead of 2)."""

    def __str__(self) -> str:
        return f"{self.where}: {self.what}" + (f"\n  hint: {self.hint}" if self.hint else "")


class StudyError(FslabError):
    """A study file with one or more problems; `problems` lists them all. Its exit status
    is REFUSED when the safety gate refused a device, else USAGE."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        n = len(problems)
        first = str(problems[0]) if n == 1 else "\n".join(f"{p}" for p in problems)
        super().__init__(
            first if n == 1 else f"{n} problems in the study:\n{first}",
            hint="`fslab plan STUDY` checks a study without touching anything",
        )
        refused = any(p.refused for p in problems)
        self.exit_status = ExitStatus.REFUSED if refused else ExitStatus.USAGE


def unique(problems: Iterable[Problem]) -> list[Problem]:
    """`problems` in order, each once: a `[defaults]` key is checked in every workload
    that takes it, and one bad value there is one problem."""
    return list(dict.fromkeys(problems))


_MODELS: dict[str, type[BaseModel]] = {
    "target": TargetSpec,
    "workload": WorkloadSpec,
    "block": WorkloadSpec,
    "files": FilesWorkloadSpec,
    "pgbench": PgbenchWorkloadSpec,
    "oltp": OltpWorkloadSpec,
    "mailstore": MailstoreWorkloadSpec,
    "loop": LoopSpec,
}
# Tags pydantic puts in an error's location to say which kind of workload it checked.
_TAGS = ("block", "files", "pgbench", "oltp", "mailstore")
WORKLOAD_KINDS = _TAGS
NAME_RULE = (
    "a name may hold letters, digits and `_ . + -`, start with a letter or digit, and "
    "have at most 64 characters"
)

LineIndex = dict[tuple[str, int, str], int]


def line_index(text: str) -> LineIndex:
    """(table, index, key) -> line number, by a plain scan (tomllib keeps no positions).

    `table` is `target` or `workload` for the `[[...]]` arrays (`index` counts them),
    `defaults` for `[defaults]`, "" for the top level. `key` "" is the table's header; a
    sub-table (`[target.loop]`) and a dotted key (`loop.size = ...`) are found as
    `loop` and `loop.size`."""
    index: LineIndex = {}
    table, prefix, counts = "", "", {"": 0}
    for no, line in enumerate(text.splitlines(), start=1):
        s = line.strip()
        header = re.match(r"^\[\[\s*([A-Za-z0-9_-]+)\s*\]\]", s)
        if header:
            table, prefix = header.group(1), ""
            counts[table] = counts.get(table, -1) + 1
            index.setdefault((table, counts[table], ""), no)
            continue
        sub = re.match(r"^\[\s*([A-Za-z0-9_.-]+)\s*\]", s)
        if sub:
            head, _, rest = sub.group(1).partition(".")
            if rest and head == table:
                # `[target.loop]` below a `[[target]]`: a key of that target.
                prefix = rest + "."
                index.setdefault((table, counts[table], rest), no)
            else:
                table, prefix = sub.group(1), ""
                counts.setdefault(table, 0)
                index.setdefault(("", 0, table), no)
            continue
        key = re.match(r"^([A-Za-z0-9_.-]+)\s*=", s)
        if key:
            name = prefix + re.sub(r"\s+", "", key.group(1))
            index.setdefault((table, counts.get(table, 0), name), no)
    return index


def _shown(value: Any) -> str:
    """A value as the study would spell it, for messages; control characters escaped
    here, since the message's own line breaks are kept when it is printed."""
    if isinstance(value, str):
        return safe_text(value)
    try:
        return safe_text(json.dumps(value, ensure_ascii=False))
    except (TypeError, ValueError):
        return safe_text(value)


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
                out += f" ({safe_text(name)})"
        elif not part.startswith(("function-", "literal", "str", "int", "list", "bool", "float")):
            out += ("." if out else "") + safe_text(part)
        if isinstance(node, dict) and isinstance(part, str):
            node = node.get(part)
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
    return out


class Locator:
    """Where a key path (`("workload", 0, "bs")`) is written in a study file: the line of
    the key, else of its table's header; a workload key it took from `[defaults]` is
    found there, as `defaults.<key>`."""

    def __init__(self, place: str, text: str, data: dict[str, Any], defaults: Iterable[str]):
        self.place = place
        self.lines = line_index(text)
        self.data = data
        self.defaults = frozenset(defaults)

    def line(self, loc: tuple[int | str, ...], key: str | None = None) -> tuple[int | None, str]:
        """(line or None, key path as people read it, names included). `key`: a key of
        the table `loc` names, whose line is the one to give (the path stays `loc`)."""
        if key is not None:
            line, _ = self.line((*loc, key))
            if line is not None:
                return line, _format_loc(loc, self.data)
        if len(loc) >= 2 and isinstance(loc[0], str) and isinstance(loc[1], int):
            table, idx, keys = loc[0], loc[1], [str(k) for k in loc[2:] if isinstance(k, str)]
            for n in range(len(keys), 0, -1):
                found = self.lines.get((table, idx, ".".join(keys[:n])))
                if found:
                    return found, _format_loc(loc, self.data)
            if table == "workload" and keys and keys[0] in self.defaults:
                line = self.lines.get(("defaults", 0, keys[0]))
                return line, safe_text(".".join(["defaults", *keys]))
            return self.lines.get((table, idx, "")), _format_loc(loc, self.data)
        key = str(loc[0]) if loc else ""
        return (self.lines.get(("", 0, key)) if key else None), _format_loc(loc, self.data)

    def __call__(self, loc: tuple[int | str, ...], key: str | None = None) -> str:
        line, path = self.line(loc, key)
        where = f"{self.place}:{line}" if line else self.place
        return f"{where}: {path}" if path else where


def where(study: Study, *loc: int | str, place: str | None = None) -> str:
    """`study.toml:12: workload[0] (w).bs`: the file, the line of the key (when the study
    was read from a file) and its path. `place` names the file for a study that was not
    (built in code)."""
    if study.locator is not None:
        return study.locator(loc)
    path = _format_loc(loc, study.model_dump(mode="json"))
    return f"{place}: {path}" if place else path


def _field_names(loc: tuple[int | str, ...]) -> list[str]:
    """The keys allowed at the place `loc` points into."""
    model: type[BaseModel] = Study
    for part in loc[:-1]:
        if isinstance(part, str) and part in _MODELS:
            model = _MODELS[part]
    return list(model.model_fields)


def _located_message(line: str) -> tuple[tuple[int | str, ...], str]:
    """A study-wide check says where with a prefix (`workload[1].name: ...`, see
    `Study._cross_references`): (key path, the rest)."""
    m = re.match(r"^(target|workload)\[(\d+)\](?:\.([A-Za-z_.]+))?: (.*)$", line)
    if not m:
        return (), line
    loc: tuple[int | str, ...] = (m.group(1), int(m.group(2)))
    if m.group(3):
        loc += tuple(m.group(3).split("."))
    return loc, m.group(4)


def _problems(err: Any, locate: Locator) -> list[Problem]:
    raw: tuple[int | str, ...] = tuple(err["loc"])
    # `workload[0].files.opps` -> `workload[0].opps`; the tag still picks the model.
    model_loc = raw
    loc = tuple(p for i, p in enumerate(raw) if not (i == 2 and p in _TAGS))
    msg = str(err["msg"]).removeprefix("Value error, ")
    kind = err["type"]
    got = err.get("input")
    ctx = err.get("ctx") or {}
    hint = None
    # A check of a whole table that names its key first (`` `bs` is an empty list``)
    # is about that key's line.
    named = re.match(r"^`([A-Za-z_][A-Za-z0-9_]*)`", msg) if kind == "value_error" else None
    key = named.group(1) if named and isinstance(got, dict) and named.group(1) in got else None
    if not loc and kind == "value_error":
        # One check of the whole study, one problem per line, each saying where.
        out: list[Problem] = []
        for line in msg.split("\n"):
            if line.startswith("  hint: ") and out:
                out[-1] = Problem(out[-1].where, out[-1].what, line.removeprefix("  hint: "))
                continue
            at, what = _located_message(line)
            out.append(Problem(locate(at), what))
        return out
    if kind == "extra_forbidden":
        bad = str(loc[-1])
        msg = f"unknown key `{bad}`"
        allowed = _field_names(model_loc)
        close = difflib.get_close_matches(bad, allowed, n=1, cutoff=0.6)
        hint = f"did you mean `{close[0]}`?" if close else f"allowed keys: {', '.join(allowed)}"
    elif kind == "missing":
        msg = "is required"
    elif kind == "literal_error":
        expected = ctx.get("expected", "")
        msg = f"`{_shown(got)}` is not allowed; allowed: {expected}"
        options = re.findall(r"'([^']+)'", expected)
        close = difflib.get_close_matches(str(got), options, n=1, cutoff=0.5)
        if close:
            hint = f"did you mean `{close[0]}`?"
    elif kind == "union_tag_invalid":
        loc = (*loc, "kind")
        tag = ctx.get("tag", got)
        msg = f"`{_shown(tag)}` is not a workload kind; allowed: {', '.join(WORKLOAD_KINDS)}"
        close = difflib.get_close_matches(str(tag), WORKLOAD_KINDS, n=1, cutoff=0.5)
        hint = f"did you mean `{close[0]}`?" if close else "leave `kind` out for a block workload"
    elif kind in ("string_pattern_mismatch", "string_too_long") and loc and loc[-1] == "name":
        msg = f"`{_shown(got)}` is not a usable name: {NAME_RULE}"
    elif kind == "list_type" and loc and isinstance(loc[-1], str):
        msg = "must be a list"
        if isinstance(got, str | int | float | bool):
            msg += f": write `{loc[-1]} = [{json.dumps(got, ensure_ascii=False)}]`"
    elif kind in ("int_parsing", "int_type", "int_from_float"):
        msg = f"`{_shown(got)}` is not a whole number"
    elif kind in ("bool_parsing", "bool_type"):
        msg = f"`{_shown(got)}` is not `true` or `false`"
    elif kind == "string_type":
        msg = f"`{_shown(got)}` is not text: write it in quotes"
    elif kind in ("greater_than_equal", "greater_than"):
        bound = f"at least {ctx['ge']}" if "ge" in ctx else f"above {ctx.get('gt')}"
        msg = f"`{_shown(got)}` is too small: it must be {bound}"
    elif kind in ("less_than_equal", "less_than"):
        bound = f"at most {ctx['le']}" if "le" in ctx else f"below {ctx.get('lt')}"
        msg = f"`{_shown(got)}` is too large: it must be {bound}"
    elif kind == "too_short" and ctx.get("min_length") == 1:
        msg = "is empty: give at least one"
    return [Problem(locate(loc, key), msg, hint)]


def parse_study(text: str, place: str) -> Study:
    """Checks `text` (TOML) and returns the study, or raises StudyError listing every problem."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        at = re.search(r"\(at line (\d+), column \d+\)$", str(e))
        raise StudyError(
            [Problem(f"{place}:{at.group(1)}" if at else place, f"not valid TOML: {e}")]
        ) from e
    defaults = data.pop("defaults", None)
    if isinstance(defaults, dict) and isinstance(data.get("workload"), list):
        # `[defaults]` holds workload keys shared by every workload; a workload's own win.
        data["workload"] = [
            {**defaults, **w} if isinstance(w, dict) else w for w in data["workload"]
        ]
    elif defaults is not None and not isinstance(defaults, dict):
        line = line_index(text).get(("", 0, "defaults"))
        raise StudyError(
            [Problem(f"{place}:{line}: defaults" if line else f"{place}: defaults",
                     "must be a table of workload keys", hint="write it as `[defaults]`")]
        )  # fmt: skip
    # Keys a workload only has because `[defaults]` gave them: those are found there.
    locate = Locator(place, text, data, defaults if isinstance(defaults, dict) else ())
    try:
        study = Study.model_validate(data)
    except ValidationError as e:
        problems = [p for err in e.errors() for p in _problems(err, locate)]
        raise StudyError(unique(problems)) from e
    study._locator = locate
    return study


def load_study(path: Path) -> tuple[Study, str]:
    """Reads and checks a study file; returns the study and its text."""
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise StudyError([Problem(str(path), f"cannot read the study: {e.strerror or e}")]) from e
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise StudyError(
            [
                Problem(
                    str(path),
                    f"not UTF-8 text (byte 0x{raw[e.start]:02x} at offset {e.start} cannot be "
                    "decoded)",
                    hint="a study is a TOML text file in UTF-8; check that this is the file "
                    "you meant, or convert it (`iconv -t UTF-8`)",
                )
            ]
        ) from e
    return parse_study(text, str(path)), text
