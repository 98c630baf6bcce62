"""`kind = "diskspd"`: a workload written as a DiskSpd command line.

    [[workload]]
    name = "oltp-8k"
    kind = "diskspd"
    line = "-b8K -d30 -o8 -t8 -r -w0 -Sh -L"

The engine reads the line (`fslab-engine diskspd -Rpjson`, exactly as it would run it:
its switches mapped onto engine keys, Windows's own refused at the switch) and the
workload becomes the block workload those keys are, so it is planned, run, compared and
reported as any block workload, with its line kept beside its points (`diskspd`, never
passed to the engine). The target's file is fslab's: the line names none, and its `-c`
(else the workload's `file_size`) is the file's size. Any block key given beside the
line wins over the line's, and a list of values is a sweep axis as anywhere
(`iodepth = [1, 8, 32]` sweeps DiskSpd's `-o`).
"""

from __future__ import annotations

import json
import re
import subprocess
from functools import cache
from typing import Any

from fslab.engine.find import find_engine

KIND = "diskspd"
LINE_KEY = "line"
KEEP = ("name", "targets")
"""A DiskSpd workload's own keys that stay as they are."""
ENGINE_TO_BLOCK = {"numjobs": "threads", "size": "file_size"}
DROPPED = frozenset({"kind", "filename"})
"""The engine keys of the line's job a study's workload does not take: the kind is
block, and the file is the target's."""
PLACEHOLDER = "fslab-diskspd.dat"
_ERROR = re.compile(r"^error: diskspd (\S+): (.*)$")


class DiskspdLineError(ValueError):
    """A DiskSpd line the engine refused: (switch, what, hint) per problem."""

    def __init__(self, problems: list[tuple[str, str, str]]) -> None:
        super().__init__("; ".join(f"{s}: {w}" for s, w, _ in problems))
        self.problems = problems


def is_diskspd(workload: Any) -> bool:
    return isinstance(workload, dict) and workload.get("kind") == KIND


def expand(workload: dict[str, Any]) -> dict[str, Any]:
    """The block workload a DiskSpd workload is (see the module). Raises ValueError for a
    `line` that is not one string, `DiskspdLineError` for one the engine refuses."""
    line = workload.get(LINE_KEY)
    if not isinstance(line, str) or not line.strip():
        raise ValueError(
            "`line` must be one DiskSpd command line (a string): sweep with block keys "
            "beside it (`iodepth = [1, 8]`), or give each line its own workload"
        )
    keys = job_keys(line.strip())
    out: dict[str, Any] = {"kind": "block", "diskspd": line.strip()}
    for k, v in keys.items():
        if k in DROPPED:
            continue
        out[ENGINE_TO_BLOCK.get(k, k)] = v
    for k, v in workload.items():
        if k in (LINE_KEY, "kind"):
            continue
        out[ENGINE_TO_BLOCK.get(k, k)] = v
    return out


@cache
def job_keys(line: str) -> dict[str, Any]:
    """The engine job the line is (`fslab-engine diskspd -Rpjson LINE FILE`)."""
    if any(a.startswith("-R") for a in line.split()):
        raise DiskspdLineError(
            [("-R", "a study's line has no output switch", "leave -R out: fslab reads the run")]
        )
    exe = find_engine()
    done = subprocess.run(
        [str(exe), "diskspd", *line.split(), "-Rpjson", PLACEHOLDER],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode == 0:
        doc = json.loads(done.stdout)
        assert isinstance(doc, dict)
        return doc
    problems: list[tuple[str, str, str]] = []
    for text in done.stderr.splitlines():
        m = _ERROR.match(text)
        if m:
            problems.append((m.group(1), m.group(2), ""))
        elif text.startswith("  hint: ") and problems:
            s, w, _ = problems[-1]
            problems[-1] = (s, w, text.removeprefix("  hint: "))
    if not problems:
        problems.append(("line", done.stderr.strip() or f"the engine exited {done.returncode}",
                         "check the line"))  # fmt: skip
    raise DiskspdLineError(problems)
