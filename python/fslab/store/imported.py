"""One run measured by another tool (fio's JSON, DiskSpd's XML), stored as a run of a
target the user describes: the study made if absent, the point if new, the run unless
the same file's run is already here (idempotent), with its own `origin`."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from fslab.errors import FslabError
from fslab.store.db import ResultsWriter, metric_row
from fslab.store.derive import derive


class OpRow(Protocol):
    """One operation's numbers (`fslab.store.fio_json.OpResult`)."""

    @property
    def op(self) -> str: ...
    @property
    def ios(self) -> int: ...
    @property
    def bytes(self) -> int: ...
    @property
    def iops(self) -> float: ...
    @property
    def bw_bytes(self) -> float: ...
    @property
    def lat_ns(self) -> dict[str, float]: ...
    @property
    def hist(self) -> str: ...


@dataclass(frozen=True)
class SeriesRow:
    """One interval of a run's rate over time (a `series` row; no p99: the tools that
    keep a series keep no percentiles per interval)."""

    t_s: float
    """The end of the interval, seconds from the measured start."""
    op: str
    iops: float
    bw_bytes: float
    lat_mean_ns: float


def add_imported_run(
    dest: ResultsWriter,
    path: Path,
    *,
    study: str,
    target: str,
    workload: str,
    kind: str,
    spec: Mapping[str, Any],
    params: Mapping[str, Any],
    env: Mapping[str, Any],
    effective: Mapping[str, Any],
    started_at: float,
    span_s: float,
    ops: Sequence[OpRow],
    what: str,
    error: type[FslabError],
    series: Sequence[SeriesRow] = (),
) -> tuple[str, bool]:
    """Stores the run (see the module); returns (its point's id, whether a run was added:
    False when this file's run is already here). `what` names the tool in the study's
    text (`fio`, `DiskSpd`); `error` is the importer's error type; `series`, the rate
    over time where the tool kept one (DiskSpd's `-D`)."""
    key = json.dumps({"target": spec, "kind": kind, "params": params}, sort_keys=True)
    pid = hashlib.sha256(key.encode()).hexdigest()[:16]
    env_id = dest.environment_id(dict(env))
    with dest.tx() as c:
        row = c.execute("SELECT id FROM study WHERE name = ?", (study,)).fetchone()
        sid = int(row[0]) if row else int(
            c.execute(
                "INSERT INTO study (name, path, toml, created_at) VALUES (?, ?, ?, ?)",
                (study, None, f'name = "{study}"\n# imported {what} results\n', time.time()),
            ).lastrowid or 0
        )  # fmt: skip
        have = c.execute("SELECT study_id FROM point WHERE id = ?", (pid,)).fetchone()
        if have is None:
            seq = c.execute(
                "SELECT coalesce(max(seq), -1) + 1 FROM point WHERE study_id = ?", (sid,)
            ).fetchone()[0]
            c.execute(
                "INSERT INTO point (id, study_id, seq, target, workload, kind, target_spec,"
                " params) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (pid, sid, seq, target, workload, kind, json.dumps(dict(spec), sort_keys=True),
                 json.dumps(dict(params), sort_keys=True)),
            )  # fmt: skip
        elif int(have[0]) != sid:
            raise error(
                f"{path}: its point ({target}, {workload}) belongs to another study here",
                hint="import it into that study with --into, or name another target",
            )
        if c.execute(
            "SELECT 1 FROM run WHERE point_id = ? AND abs(started_at - ?) < 1e-6",
            (pid, started_at),
        ).fetchone():
            return pid, False
        rep = c.execute(
            "SELECT coalesce(max(rep), -1) + 1 FROM run WHERE point_id = ?", (pid,)
        ).fetchone()[0]
        origin = c.execute(
            "INSERT INTO origin (label, source, imported_at) VALUES (NULL, ?, ?)",
            (str(path), time.time()),
        ).lastrowid
        run_id = int(
            c.execute(
                "INSERT INTO run (point_id, rep, status, started_at, ended_at, environment_id,"
                " effective, runtime_s, origin_id) VALUES (?, ?, 'ok', ?, ?, ?, ?, ?, ?)",
                (pid, rep, started_at, started_at + span_s, env_id,
                 json.dumps(dict(effective), sort_keys=True), span_s, origin),
            ).lastrowid or 0
        )  # fmt: skip
        for o in ops:
            metric_row(c, run_id, o.op, ios=o.ios, iops=o.iops, lat_ns=o.lat_ns,
                       bytes_=o.bytes, bw_bytes=o.bw_bytes, hist=o.hist)  # fmt: skip
        c.executemany(
            "INSERT INTO series VALUES (?, ?, ?, 0, ?, ?, ?, 0)",
            [(run_id, r.t_s, r.op, r.iops, r.bw_bytes, r.lat_mean_ns) for r in series],
        )
        derive(c, [run_id])
    return pid, True
