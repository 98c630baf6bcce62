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
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from fslab.kinds import DEFAULT_KIND, KINDS, Kind
from fslab.safe_text import safe_text
from fslab.study import diskspd, target_sweep
from fslab.study.model import LoopSpec, Study, TargetSpec
from fslab.study.problems import KeyPath, Problem, StudyError, format_loc, unique, where
from fslab.textfile import NotText, read_text

__all__ = [
    "NAME_RULE",
    "WORKLOAD_KINDS",
    "Locator",
    "Problem",
    "StudyError",
    "line_index",
    "load_study",
    "parse_study",
    "unique",
    "where",
    "written",
]

_MODELS: dict[str, type[BaseModel]] = {
    "target": TargetSpec,
    "workload": KINDS[DEFAULT_KIND].spec,
    **{name: kind.spec for name, kind in KINDS.items()},
    "loop": LoopSpec,
}
# Tags pydantic puts in an error's location to say which kind of workload it checked.
_TAGS = tuple(KINDS)
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


class Locator:
    """Where a key path (`("workload", 0, "bs")`) is written in a study file: the line of
    the key, else of its table's header; a workload key it took from `[defaults]` is
    found there, as `defaults.<key>`."""

    def __init__(
        self,
        place: str,
        text: str,
        data: dict[str, Any],
        defaults: Iterable[str],
        target_origin: list[int] | None = None,
    ):
        self.place = place
        self.lines = line_index(text)
        self.data = data
        self.defaults = frozenset(defaults)
        self.target_origin = target_origin
        """For each target, the `[[target]]` table it came from (`target_sweep`)."""

    def written(self, loc: KeyPath) -> KeyPath:
        """`loc` with a workload key as the study spells it: a block workload's `threads`
        is `numjobs` where the study wrote `numjobs` (`Kind.aliases`)."""
        if len(loc) < 3 or loc[0] != "workload" or not isinstance(loc[1], int):
            return loc
        key = loc[2]
        workloads = self.data.get("workload")
        raw = workloads[loc[1]] if isinstance(workloads, list) and loc[1] < len(workloads) else None
        kind = _kind_named(raw)
        if not isinstance(raw, dict) or kind is None or not isinstance(key, str) or key in raw:
            return loc
        for other, ours in kind.aliases.items():
            if ours == key and other in raw:
                return (*loc[:2], other, *loc[3:])
        return loc

    def line(self, loc: KeyPath, key: str | None = None) -> tuple[int | None, str]:
        """(line or None, key path as people read it, names included). `key`: a key of
        the table `loc` names, whose line is the one to give (the path stays `loc`)."""
        loc = self.written(loc)
        if key is not None:
            key = str(self.written((*loc, key))[-1])
            line, _ = self.line((*loc, key))
            if line is not None:
                return line, format_loc(loc, self.data)
        if len(loc) >= 2 and isinstance(loc[0], str) and isinstance(loc[1], int):
            table, idx, keys = loc[0], loc[1], [str(k) for k in loc[2:] if isinstance(k, str)]
            if table == "target" and self.target_origin and idx < len(self.target_origin):
                idx = self.target_origin[idx]
            path = self._path(loc)
            for n in range(len(keys), 0, -1):
                found = self.lines.get((table, idx, ".".join(keys[:n])))
                if found:
                    return found, path
            if table == "workload" and keys and keys[0] in self.defaults:
                line = self.lines.get(("defaults", 0, keys[0]))
                return line, safe_text(".".join(["defaults", *keys]))
            return self.lines.get((table, idx, "")), path
        key = str(loc[0]) if loc else ""
        return (self.lines.get(("", 0, key)) if key else None), format_loc(loc, self.data)

    def _path(self, loc: KeyPath) -> str:
        """`format_loc`, a swept target named by its table in the file (`target[1]
        (ext4-noatime)`), not by its place among the expanded targets."""
        path = format_loc(loc, self.data)
        origin = self.target_origin
        if loc[0] == "target" and origin and isinstance(loc[1], int) and loc[1] < len(origin):
            path = path.replace(f"target[{loc[1]}]", f"target[{origin[loc[1]]}]", 1)
        return path

    def __call__(self, loc: KeyPath, key: str | None = None) -> str:
        line, path = self.line(loc, key)
        where = f"{self.place}:{line}" if line else self.place
        return f"{where}: {path}" if path else where


def _kind_named(raw: Any, default: Any = DEFAULT_KIND) -> Kind | None:
    """The kind a raw workload table names (the default when it names none), or None."""
    name = raw.get("kind", default) if isinstance(raw, dict) else None
    return KINDS.get(name) if isinstance(name, str) else None


def written(study: Study, i: int, key: str) -> str:
    """How the study spells workload `i`'s `key`: the key, or the other spelling its kind
    takes (`numjobs` for `threads`) when that is the one written; messages use it."""
    loc = study.locator
    if isinstance(loc, Locator):
        spelled = loc.written(("workload", i, key))
        return str(spelled[2])
    return key


def _allowed(loc: KeyPath) -> tuple[list[str], list[str]]:
    """The keys allowed at the place `loc` points into, and the spellings to suggest one
    from (a workload kind's keys, its other spellings included: `Kind.keys`)."""
    model: type[BaseModel] = Study
    kind: Kind | None = None
    for part in loc[:-1]:
        if isinstance(part, str) and part in _MODELS:
            model = _MODELS[part]
            kind = KINDS[DEFAULT_KIND] if part == "workload" else KINDS.get(part)
    listed = list(model.model_fields)
    return listed, kind.keys() if kind is not None else listed


def _located_message(line: str) -> tuple[KeyPath, str]:
    """A study-wide check says where with a prefix (`workload[1].name: ...`, see
    `Study._cross_references`): (key path, the rest)."""
    m = re.match(r"^(target|workload)\[(\d+)\](?:\.([A-Za-z_.]+))?: (.*)$", line)
    if not m:
        return (), line
    loc: KeyPath = (m.group(1), int(m.group(2)))
    if m.group(3):
        loc += tuple(m.group(3).split("."))
    return loc, m.group(4)


def _problems(err: Any, locate: Locator) -> list[Problem]:
    raw: KeyPath = tuple(err["loc"])
    # `workload[0].files.opps` -> `workload[0].opps`; the tag still picks the model.
    model_loc = raw
    loc = tuple(p for i, p in enumerate(raw) if not (i == 2 and p in _TAGS))
    msg = str(err["msg"]).removeprefix("Value error, ")
    error_type = err["type"]
    got = err.get("input")
    ctx = err.get("ctx") or {}
    hint = None
    # A check of a whole table that names its key first (`` `bs` is an empty list``)
    # is about that key's line.
    named = re.match(r"^`([A-Za-z_][A-Za-z0-9_]*)`", msg) if error_type == "value_error" else None
    key = named.group(1) if named and isinstance(got, dict) and named.group(1) in got else None
    if not loc and error_type == "value_error":
        # One check of the whole study, one problem per line, each saying where.
        out: list[Problem] = []
        for line in msg.split("\n"):
            if line.startswith("  hint: ") and out:
                out[-1] = Problem(out[-1].where, out[-1].what, line.removeprefix("  hint: "))
                continue
            at, what = _located_message(line)
            out.append(Problem(locate(at), what))
        return out
    if error_type == "extra_forbidden":
        bad = str(loc[-1])
        msg = f"unknown key `{bad}`"
        allowed, spellings = _allowed(model_loc)
        close = difflib.get_close_matches(bad, spellings, n=1, cutoff=0.6)
        hint = f"did you mean `{close[0]}`?" if close else f"allowed keys: {', '.join(allowed)}"
    elif error_type == "missing":
        msg = "is required"
    elif error_type == "literal_error":
        expected = ctx.get("expected", "")
        msg = f"`{_shown(got)}` is not allowed; allowed: {expected}"
        options = re.findall(r"'([^']+)'", expected)
        close = difflib.get_close_matches(str(got), options, n=1, cutoff=0.5)
        if close:
            hint = f"did you mean `{close[0]}`?"
    elif error_type == "union_tag_invalid":
        loc = (*loc, "kind")
        tag = ctx.get("tag", got)
        msg = f"`{_shown(tag)}` is not a workload kind; allowed: {', '.join(WORKLOAD_KINDS)}"
        close = difflib.get_close_matches(str(tag), WORKLOAD_KINDS, n=1, cutoff=0.5)
        hint = (
            f"did you mean `{close[0]}`?"
            if close
            else f"leave `kind` out for a {DEFAULT_KIND} workload"
        )
    elif error_type in ("string_pattern_mismatch", "string_too_long") and loc and loc[-1] == "name":
        msg = f"`{_shown(got)}` is not a usable name: {NAME_RULE}"
    elif error_type == "list_type" and loc and isinstance(loc[-1], str):
        msg = "must be a list"
        if isinstance(got, str | int | float | bool):
            msg += f": write `{loc[-1]} = [{json.dumps(got, ensure_ascii=False)}]`"
    elif error_type in ("int_parsing", "int_type", "int_from_float"):
        msg = f"`{_shown(got)}` is not a whole number"
    elif error_type in ("bool_parsing", "bool_type"):
        msg = f"`{_shown(got)}` is not `true` or `false`"
    elif error_type == "string_type":
        msg = f"`{_shown(got)}` is not text: write it in quotes"
    elif error_type in ("greater_than_equal", "greater_than"):
        bound = f"at least {ctx['ge']}" if "ge" in ctx else f"above {ctx.get('gt')}"
        msg = f"`{_shown(got)}` is too small: it must be {bound}"
    elif error_type in ("less_than_equal", "less_than"):
        bound = f"at most {ctx['le']}" if "le" in ctx else f"below {ctx.get('lt')}"
        msg = f"`{_shown(got)}` is too large: it must be {bound}"
    elif error_type == "too_short" and ctx.get("min_length") == 1:
        msg = "is empty: give at least one"
    return [Problem(locate(loc, key), msg, hint)]


def _defaults_for(workload: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    """The `[defaults]` a workload takes: not one it writes itself in another spelling
    (a workload's `numjobs` wins over a default `threads`, as its `threads` would)."""
    kind = _kind_named(workload, defaults.get("kind", DEFAULT_KIND))
    if kind is None:
        return defaults
    own = {kind.canonical(k) for k in workload}
    return {k: v for k, v in defaults.items() if k in workload or kind.canonical(k) not in own}


def parse_study(text: str, place: str) -> Study:
    """Checks `text` (TOML) and returns the study, or raises StudyError listing every problem."""
    try:
        return _parse_study(text, place)
    except RecursionError as e:
        # Python's TOML reader (and what walks its result) recurses once per level.
        raise StudyError(
            [
                Problem(
                    place,
                    "values nested too deeply (lists or tables inside one another, hundreds "
                    "of levels down)",
                    hint="a study's values are a few levels deep at most; check that this is "
                    "the file you meant",
                )
            ]
        ) from e


def _parse_study(text: str, place: str) -> Study:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        at = re.search(r"\(at line (\d+), column \d+\)$", str(e))
        raise StudyError(
            [Problem(f"{place}:{at.group(1)}" if at else place, f"not valid TOML: {e}")]
        ) from e
    # A DiskSpd line's keys are the workload's own: `[defaults]` fills only the rest.
    if isinstance(data.get("workload"), list) and any(map(diskspd.is_diskspd, data["workload"])):
        data["workload"] = _diskspd_workloads(data["workload"], text, place)
    defaults = data.pop("defaults", None)
    if isinstance(defaults, dict) and isinstance(data.get("workload"), list):
        # `[defaults]` holds workload keys shared by every workload; a workload's own win.
        data["workload"] = [
            {**_defaults_for(w, defaults), **w} if isinstance(w, dict) else w
            for w in data["workload"]
        ]
    elif defaults is not None and not isinstance(defaults, dict):
        line = line_index(text).get(("", 0, "defaults"))
        raise StudyError(
            [Problem(f"{place}:{line}: defaults" if line else f"{place}: defaults",
                     "must be a table of workload keys", hint="write it as `[defaults]`")]
        )  # fmt: skip
    origin: list[int] | None = None
    if isinstance(data.get("target"), list):
        data["target"], origin = target_sweep.expand(data["target"])
    # Keys a workload only has because `[defaults]` gave them: those are found there.
    locate = Locator(place, text, data, defaults if isinstance(defaults, dict) else (), origin)
    try:
        # Paths in a workload (a fio `job_file`) are found beside the study file.
        study = Study.model_validate(data, context={"study_dir": str(Path(place).parent)})
    except ValidationError as e:
        problems = [p for err in e.errors() for p in _problems(err, locate)]
        raise StudyError(unique(problems)) from e
    study._locator = locate
    return study


def _diskspd_workloads(workloads: list[Any], text: str, place: str) -> list[Any]:
    """The `kind = "diskspd"` workloads as the block workloads their lines are
    (`fslab.study.diskspd`), every refused switch a problem at its workload's `line`."""
    out: list[Any] = []
    problems: list[Problem] = []
    lines = line_index(text)
    for i, w in enumerate(workloads):
        if not diskspd.is_diskspd(w):
            out.append(w)
            continue
        no = lines.get(("workload", i, diskspd.LINE_KEY)) or lines.get(("workload", i, ""))
        at = f"{place}:{no}: workload[{i}].line" if no else f"{place}: workload[{i}].line"
        try:
            out.append(diskspd.expand(w))
        except diskspd.DiskspdLineError as e:
            problems += [
                Problem(at, f"{s}: {what}", hint=hint or None) for s, what, hint in e.problems
            ]
        except ValueError as e:
            problems.append(Problem(at, str(e)))
    if problems:
        raise StudyError(problems)
    return out


def load_study(path: Path) -> tuple[Study, str]:
    """Reads and checks a study file; returns the study and its text."""
    try:
        text = read_text(path, what="study")
    except NotText as e:
        raise StudyError([Problem(str(path), e.message, hint=e.hint)]) from e
    return parse_study(text, str(path)), text
