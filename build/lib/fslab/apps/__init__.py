"""Real programs run on a target: PostgreSQL's server lifecycle (`postgres.py`). The
study side of such a workload is its kind in `fslab.kinds` (`kinds/pgbench.py`)."""
