"""Text from studies, results databases and tools, made safe to show on a terminal.

A name, a description or anything read from a results database someone else made can
hold control characters: ESC starts sequences that recolour the terminal, set its title
(OSC) or worse; a bare CR or BS hides what comes before it. Everything fslab prints of
such text goes through `safe_text` first, which shows those characters escaped, the way
Python writes them (`\\x1b`, `\\x07`, `\\u202e`), so they are visible and inert.
"""

from __future__ import annotations

import unicodedata

from rich.markup import escape

# Bidirectional overrides and isolates reorder what is shown ("Trojan Source",
# CVE-2021-42574) and line/paragraph separators break lines on some terminals: they are
# shown escaped too, although they are not control characters.
_INVISIBLE = frozenset("\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
                       "\u2028\u2029")  # fmt: skip


_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escaped(ch: str) -> str:
    code = ord(ch)
    if ch in _SHORT:
        return _SHORT[ch]
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}"


def _unsafe(ch: str) -> bool:
    # Cc is C0 (0x00-0x1f), DEL (0x7f) and C1 (0x80-0x9f): C1's 0x9b is a one-byte CSI.
    return unicodedata.category(ch) == "Cc" or ch in _INVISIBLE


def safe_text(text: object, *, newlines: bool = False) -> str:
    """`text` (any object, as `str()` gives it) with every control character shown escaped:
    C0, DEL and C1 controls, bidirectional overrides, line separators. With `newlines`
    a `\\n` stays a line break (for multi-line messages), else it is shown as `\\n`."""
    s = str(text)
    if not any(_unsafe(ch) for ch in s):
        return s
    return "".join(ch if (newlines and ch == "\n") or not _unsafe(ch) else _escaped(ch) for ch in s)


def safe_markup(text: object, *, newlines: bool = False) -> str:
    """`safe_text`, then escaped for rich markup, for text put inside a string that rich
    reads as markup: a name such as `[bold]x` is then printed as it is, not as bold `x`."""
    return escape(safe_text(text, newlines=newlines))
