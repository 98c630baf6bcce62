"""The rich consoles of the commands: one place that honours `NO_COLOR`."""

from __future__ import annotations

import os
from typing import Any

from rich.console import Console


def no_color() -> bool:
    """Whether the user asked for no colours (https://no-color.org: set and not empty)."""
    return bool(os.environ.get("NO_COLOR"))


def console(*, stderr: bool = False, **kwargs: Any) -> Console:
    """A console for people: rich styles only terminals (FORCE_COLOR and TERM=dumb as
    usual); its own NO_COLOR support drops colours but keeps bold, and a non-empty
    NO_COLOR here means no escapes at all."""
    kwargs.setdefault("highlight", False)
    if no_color():
        kwargs["color_system"] = None
    return Console(stderr=stderr, **kwargs)
