"""Units as people write and read them: sizes and durations parsed, numbers formatted.

The engine and the store keep integers in base units (`lat_ns`, `bytes`, `runtime_s`); only
what people write is parsed and only what people read is converted, here and only here
(`fslab.report.format` builds the report's cells out of these).

Parsing follows the engine's `engine/src/units.rs`, the reference: a study's `bs = "4k"`
must mean what the engine's `bs = "4k"` means, and a text one refuses the other refuses.
Both read the same test vectors, `tests/data/units.json`. Sizes are binary whatever the
suffix (fio's `kb_base=1024`: `4k`, `4K`, `4KB`, `4KiB` are 4096 bytes); a bare number is
bytes, or seconds for a duration. One deliberate difference: this parser also takes
exbibytes (`e`, `eb`, `eib`), so that a size too large for what it is used for (a loop
device of `1EiB`) is reported as too large by the check that knows the limit, not as
"not a size".
"""

from __future__ import annotations

import math
import re

_KiB = 1024

# -- parsing ---------------------------------------------------------------------------------

_U64_MAX = (1 << 64) - 1
_TWO_TO_64 = float(1 << 64)

_SIZE_UNITS = {
    "": 1, "b": 1,
    "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10,
    "m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
    "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30,
    "t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40,
    "p": 1 << 50, "pb": 1 << 50, "pib": 1 << 50,
    "e": 1 << 60, "eb": 1 << 60, "eib": 1 << 60,  # not in the engine: see the module docstring
}  # fmt: skip
_SIZE_EXAMPLES = "write e.g. `4KiB`, `64k`, `8GiB`"

_NS_PER_UNIT = {"ns": 1.0, "us": 1e3, "ms": 1e6, "": 1e9, "s": 1e9, "m": 60e9, "min": 60e9,
                "h": 3600e9}  # fmt: skip
_DURATION_EXAMPLES = "write e.g. `500ms`, `30s`, `2m`"

# Rust's `str::trim` removes what Unicode calls White_Space; Python's `str.strip` also
# removes the separators U+001C..U+001F. The engine is the reference, so its set is spelled
# out.
_WHITE_SPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
_NUMBER = re.compile(r"[0-9.]*")
"""The number at the start: ASCII digits and dots, as the engine's `split_number` reads it
(`\\d` would also take other scripts' digits, which Rust's `is_ascii_digit` refuses)."""


def _split_number(text: str) -> tuple[str, str]:
    """`" 64 KiB "` -> `("64", "kib")`: the engine's `split_number`, suffix lowercased in
    ASCII only (`str.lower` would turn the Kelvin sign `K` into `k`)."""
    s = text.strip(_WHITE_SPACE)
    m = _NUMBER.match(s)
    end = m.end() if m else 0
    suffix = s[end:].strip(_WHITE_SPACE)
    return s[:end], "".join(chr(ord(c) + 32) if "A" <= c <= "Z" else c for c in suffix)


def _float(number: str) -> float | None:
    """`number` (digits and dots only) as Rust's `f64::from_str` reads it, or None:
    `1.5`, `1.`, `.5` yes; `.` and `1.2.3` no (Python's `float` agrees on these)."""
    try:
        return float(number)
    except ValueError:
        return None


def parse_size(value: str | int) -> int:
    """`4k`, `64KiB`, `1g`, `1.5GiB` or a byte count -> bytes (binary units, like the engine).

    An int is a byte count already (a negative one is refused). A text size must come out
    as whole bytes (`1.5k` yes, `0.3` no) and fit in 64 bits, as in the engine. Every unit
    up to EiB parses, so that a size too large for what it is used for is reported as too
    large by the check that knows the limit, not as "not a size"."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f"`{value}` is not a size ({_SIZE_EXAMPLES})")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"`{value}` is not a size: a size cannot be negative")
        return value
    stripped = value.strip(_WHITE_SPACE)
    if stripped.startswith("-") and _size_or_none(stripped[1:]) is not None:
        raise ValueError(f"`{value}` is not a size: a size cannot be negative")
    number, suffix = _split_number(value)
    mult = _SIZE_UNITS.get(suffix)
    if not number or mult is None:
        raise ValueError(f"`{value}` is not a size ({_SIZE_EXAMPLES})")
    if number.isdigit():
        n = int(number) * mult
    else:
        f = _float(number)
        if f is None:
            raise ValueError(f"`{value}` is not a size ({_SIZE_EXAMPLES})")
        scaled = f * mult
        if math.isfinite(scaled) and scaled < _TWO_TO_64 and scaled != int(scaled):
            raise ValueError(f"`{value}` is not a whole number of bytes")
        n = int(scaled) if math.isfinite(scaled) and scaled < _TWO_TO_64 else _U64_MAX + 1
    if n > _U64_MAX:
        raise ValueError(f"`{value}` is not a size: too large (16EiB at most)")
    return n


def _size_or_none(text: str) -> int | None:
    try:
        return parse_size(text)
    except ValueError:
        return None


def parse_duration(value: str | int | float) -> float:
    """`30s`, `500ms`, `2m`, `1h`, `100us` or a number of seconds -> seconds.

    A number passes through as seconds. A text is read as the engine reads it (units
    `ns`, `us`, `ms`, `s`, `m`/`min`, `h` in any case; whole nanoseconds, rounded), so
    `100us` is exactly what the engine runs, 0.0001 s."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"`{value}` is not a duration")
    if isinstance(value, int | float):
        return float(value)
    number, suffix = _split_number(value)
    per_unit = _NS_PER_UNIT.get(suffix)
    f = _float(number) if number else None
    if f is None or per_unit is None:
        raise ValueError(f"`{value}` is not a duration ({_DURATION_EXAMPLES})")
    ns = f * per_unit
    if not math.isfinite(ns) or ns >= _TWO_TO_64:
        raise ValueError(f"`{value}` is not a duration: too long")
    # Rust's `f64::round` rounds halves away from zero; Python's `round` to even.
    whole = math.floor(ns)
    if ns - whole >= 0.5:
        whole += 1
    return whole / 1e9


def parse_percent(value: str) -> float:
    """`5%`, `2.5%` -> 0.05, 0.025: a share written as a percentage (a bare number would
    leave 5 and 0.05 to guesswork)."""
    text = value.strip() if isinstance(value, str) else ""
    f = _float(text[:-1].strip()) if text.endswith("%") else None
    if f is None or not math.isfinite(f):
        raise ValueError(f"`{value}` is not a percentage; write it with `%`, e.g. `5%`")
    return f / 100


# -- formatting ------------------------------------------------------------------------------


def sig3(value: float) -> str:
    """Three significant digits, no exponent, whole numbers kept whole: 0.0635, 1.37, 13.7,
    137, 1370. Rounded before the digits are chosen, so 9.996 is `10.0`, not `10.00`."""
    if abs(value) >= 99.95 or value == 0:
        return f"{value:.0f}"
    rounded = float(f"{value:.3g}")
    return f"{rounded:.{2 - math.floor(math.log10(abs(rounded)))}f}"


def format_ns(ns: float) -> str:
    """A duration in nanoseconds in the unit that fits: `31ns`, `1.37us`, `2.36ms`, `1.50s`.

    Text says `us`, not `µs`: it goes to terminals, logs and grep, and fio says `usec`;
    only chart axes, which are typeset, say `µs` (`fslab.report.format.ns_axis`)."""
    if ns < 999.5:
        return f"{ns:.0f}ns"
    for unit, scale in (("us", 1e3), ("ms", 1e6)):
        if ns < scale * 999.5:
            return f"{sig3(ns / scale)}{unit}"
    return f"{sig3(ns / 1e9)}s"


def format_bytes(n: float) -> str:
    """A size in IEC units: exact for whole multiples (`4KiB`, `64MiB`) and for anything
    under a MiB (`1000B`, `4097B`, as a block size must be), else three digits (`1.50GiB`)."""
    units = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")
    i = 0
    while i < len(units) - 1 and n >= _KiB ** (i + 1):
        i += 1
    scaled = n / _KiB**i
    if scaled == int(scaled):
        return f"{int(scaled)}{units[i]}"
    if n < _KiB**2 and n == int(n):
        return f"{int(n)}B"
    return f"{sig3(scaled)}{units[i]}"


def format_rate(bytes_per_s: float) -> str:
    """A bandwidth as fio shows it: binary first, decimal in brackets, e.g.
    `2559MiB/s (2683MB/s)`."""
    return f"{_sig4(bytes_per_s / _KiB**2)}MiB/s ({_sig4(bytes_per_s / 1e6)}MB/s)"


def _sig4(value: float) -> str:
    if value >= 1000:
        return f"{value:.0f}"
    if value >= 100:
        return f"{value:.1f}"
    if value >= 10:
        return f"{value:.2f}"
    return f"{value:.3f}"


def format_count(n: float) -> str:
    """A count or rate as fio shows IOPS: `950`, `12.3k`, `8.20M`."""
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= scale * 0.9995:
            return f"{sig3(n / scale)}{unit}"
    return f"{n:.0f}"


def format_s(seconds: float) -> str:
    """Seconds for a summary line: `1.00s`, `12.3s`, `0.031s`."""
    if seconds < 1:
        return f"{seconds:.3f}s"
    return f"{sig3(seconds)}s"


def short_number(v: float) -> str:
    """A number for a chart's hover or label, where space is short: three significant
    digits without trailing zeros (`1.5`, `12.3`), whole from 100 (`1234`); `0` for
    anything not finite (a hover has no room to explain a NaN)."""
    if v == 0 or not math.isfinite(v):
        return "0"
    if abs(v) >= 100:
        return f"{v:.0f}"
    return f"{v:.3g}"


def short_count(v: float) -> str:
    """A count for a chart's hover or peak label: `950`, `12.3k`, `8.2M` (`short_number`
    after the suffix; unlike `format_count`, no trailing zeros: `1.5k`, not `1.50k`)."""
    for suffix, scale in (("M", 1e6), ("k", 1e3)):
        if abs(v) >= scale:
            return f"{short_number(v / scale)}{suffix}"
    return short_number(v)
