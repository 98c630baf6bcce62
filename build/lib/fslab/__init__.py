"""fslab: a storage lab. Builds storage configurations, runs workloads on them with
`fslab-engine`, and compares the results."""

__version__ = "0.1.0"
