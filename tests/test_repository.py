"""The repository stands on its own: no file of it points at a path outside it (a fresh
clone has nothing beside it), except the measurement history, which quotes what was
written when."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LOOKED_AT = ("python", "tests", "docs", "examples", "bench", "scripts", "engine/src")
KEPT_AS_WRITTEN = ("bench/runs",)


def test_no_file_points_outside_the_repository() -> None:
    outside = "../" + "shared"  # spelled so that this file does not match itself
    found = []
    for top in LOOKED_AT:
        for path in (REPO / top).rglob("*"):
            rel = path.relative_to(REPO).as_posix()
            if not path.is_file() or rel.startswith(KEPT_AS_WRITTEN) or "__pycache__" in rel:
                continue
            try:
                text = path.read_text()
            except (UnicodeDecodeError, OSError):
                continue
            lines = enumerate(text.splitlines(), 1)
            found += [f"{rel}:{i}" for i, line in lines if outside in line]
    for name in ("README.md", "Makefile", "pyproject.toml"):
        if outside in (REPO / name).read_text():
            found.append(name)
    assert not found, f"files that point outside the repository: {found}"
