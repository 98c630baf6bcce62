"""Telemetry: what the machine did while a job ran (device I/O, CPU, page cache,
pressure) and whether something besides the workload spoiled the measurement.

`Sampler` records a `Telemetry` series beside a job; `devices_under` names the devices to
watch for a target; `statvfs_used_bytes` measures space for space amplification.
"""

from fslab.telemetry.devices import (
    DeviceRoles,
    device_roles,
    devices_under,
    statvfs_used_bytes,
)
from fslab.telemetry.procfs import TelemetryError, TelemetryUsageError
from fslab.telemetry.sampler import MAX_INTERVAL_S, MIN_INTERVAL_S, Sampler, interval_for
from fslab.telemetry.series import (
    DeviceInterval,
    PsiInterval,
    Telemetry,
    TelemetryPoint,
    Thresholds,
)

__all__ = [
    "MAX_INTERVAL_S",
    "MIN_INTERVAL_S",
    "DeviceInterval",
    "DeviceRoles",
    "PsiInterval",
    "Sampler",
    "Telemetry",
    "TelemetryError",
    "TelemetryPoint",
    "TelemetryUsageError",
    "Thresholds",
    "device_roles",
    "devices_under",
    "interval_for",
    "statvfs_used_bytes",
]
