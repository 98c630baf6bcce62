"""Numbers for people: the engine and the store keep integers in base units (`lat_ns`,
`bytes`); only what people read is converted, here."""

from __future__ import annotations

_KiB = 1024


def _sig3(value: float) -> str:
    """Three significant digits, no exponent: 1.37, 13.7, 137, 1370."""
    if value >= 100 or value == 0:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def format_ns(ns: float) -> str:
    """A duration in nanoseconds in the unit that fits: `31ns`, `1.37us`, `2.36ms`, `1.50s`."""
    if ns < 999.5:
        return f"{ns:.0f}ns"
    for unit, scale in (("us", 1e3), ("ms", 1e6)):
        if ns < scale * 999.5:
            return f"{_sig3(ns / scale)}{unit}"
    return f"{_sig3(ns / 1e9)}s"


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
    return f"{_sig3(scaled)}{units[i]}"


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
            return f"{_sig3(n / scale)}{unit}"
    return f"{n:.0f}"


def format_s(seconds: float) -> str:
    """Seconds for a summary line: `1.00s`, `12.3s`, `0.031s`."""
    if seconds < 1:
        return f"{seconds:.3f}s"
    return f"{_sig3(seconds)}s"
