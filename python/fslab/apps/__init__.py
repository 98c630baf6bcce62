"""Application workloads: real programs (PostgreSQL with pgbench) run on a target."""
