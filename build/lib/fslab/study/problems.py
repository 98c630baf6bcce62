"""What is wrong with a study, and where: `Problem` (file, line, key path; what; hint),
`StudyError` (every problem at once) and `where`, which names the place of a key path.

A leaf of `fslab.study`: the workload kinds (`fslab.kinds`) report their own problems with
these, and the study model imports the kinds, so this module imports neither.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fslab.errors import ExitStatus, FslabError
from fslab.safe_text import safe_text

if TYPE_CHECKING:
    from fslab.study.model import Study

KeyPath = tuple[int | str, ...]
"""A key path in a study: `("workload", 0, "bs")`."""
Locate = Callable[[KeyPath], str]


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


def format_loc(loc: KeyPath, data: dict[str, Any]) -> str:
    """A key path as people read it, with the names of the tables it passes
    (`workload[0] (w).bs`); pydantic's own parts (`function-after[...]`) left out."""
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


def where(study: Study, *loc: int | str, place: str | None = None) -> str:
    """`study.toml:12: workload[0] (w).bs`: the file, the line of the key (when the study
    was read from a file) and its path. `place` names the file for a study that was not
    (built in code)."""
    if study.locator is not None:
        return study.locator(loc)
    path = format_loc(loc, study.model_dump(mode="json"))
    return f"{place}: {path}" if place else path
