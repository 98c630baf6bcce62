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

from fslab.engine import App


def app_metrics(app: App) -> dict[str, float]:
    """The run metrics of an engine report's `app` section."""
    out: dict[str, float] = {}
    if app.jetstress is not None:
        for key, value in app.jetstress.model_dump().items():
            if key.endswith("_lat_ms"):
                key, value = key.removesuffix("_ms") + "_ns", value * 1e6
            out[f"jetstress.{key}"] = float(value)
    if app.verdict is not None:
        out["verdict.pass"] = 1.0 if app.verdict.passed else 0.0
        for check in app.verdict.checks:
            out[f"verdict.{check.name}.pass"] = 1.0 if check.passed else 0.0
            out[f"verdict.{check.name}.max"] = check.max
    if app.cache.lookups:
        out["app.cache_hit_pct"] = 100.0 * app.cache.hit_ratio
    out["app.records_per_flush"] = app.commits.records_per_flush
    # The last checkpoint is the job's final flush, not part of the steady rhythm.
    checkpoints = [c for c in app.checkpoints if not c.last]
    out["app.checkpoints"] = float(len(checkpoints))
    if checkpoints:
        out["app.checkpoint_pages_max"] = float(max(c.pages for c in checkpoints))
        out["app.checkpoint_iops_peak"] = max(c.iops for c in checkpoints)
    return out
