"""The engine's latency histograms decoded in the tests, to check the engine's
percentiles and merges against an independent implementation (Python's `hdrhistogram`;
the lab itself decodes no histogram, the engine merges them; `fslab import` encodes fio's
json+ latency bins with it)."""

from __future__ import annotations

import math
from typing import Any

from hdrh.histogram import HdrHistogram


def decode_hist(b64: str) -> Any:
    """A report's `hist` (HdrHistogram V2 + DEFLATE, base64) as an `HdrHistogram`.

    Its percentiles equal the engine's when read with `hist_percentile`; the package's
    own `get_value_at_percentile` rounds the rank differently and may land one bucket lower.
    """
    return HdrHistogram.decode(b64)


def hist_percentile(hist: Any, percentile: float) -> int:
    """The value at `percentile` (0-100) of a decoded histogram, ranked as the engine
    ranks it (Rust `hdrhistogram` and Java HdrHistogram: the rank is ceil(q x count)),
    so that the lab's percentiles of merged histograms agree with the engine's."""
    total = int(hist.get_total_count())
    if total == 0:
        return 0
    # 99.9 / 100 is 0.9990000000000001, not the 0.999 the engine ranks by: at a total
    # where 0.999 x total is whole, the rank would be one higher than the engine's.
    quantile = min(max(round(percentile / 100.0, 12), 0.0), 1.0)
    rank = max(math.ceil(quantile * total), 1)
    seen = 0
    for index in range(int(hist.counts_len)):
        seen += int(hist.get_count_at_index(index))
        if seen >= rank:
            value = hist.get_value_from_index(index)
            if quantile == 0.0:
                return int(hist.get_lowest_equivalent_value(value))
            return int(hist.get_highest_equivalent_value(value))
    return int(hist.get_max_value())
