"""The engine's application models (`kind = "oltp"`, `"mailstore"`) in the lab: which of
their numbers are kept per run besides the per-operation results (`metric` table).

Stored in `run_metric` under these names:
- `jetstress.<key>`: the mailstore's JetStress set (`transactional_iops`,
  `db_read_lat_ns`, ...), as the engine computed it (latencies turned from ms to ns,
  the store's unit);
- `verdict.pass` (1 or 0) and `verdict.<check>.pass`: the mailstore's verdict against its
  thresholds, with `verdict.<check>.max` the threshold it was judged by;
- `app.<key>`: what explains the numbers: the cache's hit ratio, log records per flush,
  checkpoints and their peak rate.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def app_metrics(app: Mapping[str, Any]) -> dict[str, float]:
    """The run metrics of an engine report's `app` section (empty for other jobs)."""
    out: dict[str, float] = {}
    for key, value in (app.get("jetstress") or {}).items():
        if _number(value):
            if key.endswith("_lat_ms"):
                key, value = key.removesuffix("_ms") + "_ns", value * 1e6
            out[f"jetstress.{key}"] = float(value)
    verdict = app.get("verdict")
    if isinstance(verdict, Mapping):
        out["verdict.pass"] = 1.0 if verdict.get("pass") else 0.0
        for check in verdict.get("checks") or []:
            name = check.get("name")
            if isinstance(name, str):
                out[f"verdict.{name}.pass"] = 1.0 if check.get("pass") else 0.0
                if _number(check.get("max")):
                    out[f"verdict.{name}.max"] = float(check["max"])
    cache = app.get("cache") or {}
    if _number(cache.get("hit_ratio")) and cache.get("lookups"):
        out["app.cache_hit_pct"] = 100.0 * float(cache["hit_ratio"])
    commits = app.get("commits") or {}
    if _number(commits.get("records_per_flush")):
        out["app.records_per_flush"] = float(commits["records_per_flush"])
    # The last checkpoint is the job's final flush, not part of the steady rhythm.
    checkpoints = [c for c in app.get("checkpoints") or [] if not c.get("last")]
    out["app.checkpoints"] = float(len(checkpoints))
    if checkpoints:
        out["app.checkpoint_pages_max"] = float(max(c.get("pages", 0) for c in checkpoints))
        out["app.checkpoint_iops_peak"] = float(max(c.get("iops", 0.0) for c in checkpoints))
    return out
