"""Moved: the engine's application models' run metrics are `fslab.kinds.app.app_metrics`
(with the oltp and mailstore kinds). Re-exported here for older imports."""

from __future__ import annotations

from fslab.kinds.app import app_metrics

__all__ = ["app_metrics"]
