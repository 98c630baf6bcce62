"""Results databases of integrity studies (`kind = "integrity"`), written through the
real store (`ResultsWriter`): points with the kind's parameters, runs finished `ok` with a
detail document and no metrics, one `integrity` row each, as the kind stores them.

`make_integrity_db`: four targets, six data faults and two inode hits:
- ext4 returns corrupted data silently after five data faults and stale data after the
  lost write; its inode checksum detects both inode hits (EBADMSG);
- xfs as ext4, but its bit flip ran three times and disagreed (detected twice, silent
  once); no inode hits;
- btrfs detects every data fault (EIO) and repairs both inode hits on the read (DUP);
- btrfs-raid1 repairs five data faults on the read and detects the torn write; the scrub
  repairs both inode hits.

`add_integrity_points` adds such points to an existing study (a block study: both halves
in one report)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from fslab.store.db import ResultsWriter

STUDY = "integrity fixture"
TARGETS = ("ext4", "xfs", "btrfs", "btrfs-raid1")
DATA_FAULTS = ("bitflip", "zero_block", "random_block", "lost_write", "misdirected", "torn")
INODE_FAULTS = ("bitflip", "zero_block")
EIO, EBADMSG = 5, 74

Outcome = tuple[str, int | None, str | None]
"""(outcome, errno, repaired_by) of one run."""

SILENT: Outcome = ("silent_wrong", None, None)
STALE: Outcome = ("silent_stale", None, None)
EIO_DETECTED: Outcome = ("detected", EIO, None)
BADMSG: Outcome = ("detected", EBADMSG, None)
READ_REPAIR: Outcome = ("repaired", None, "read")
SCRUB_REPAIR: Outcome = ("repaired", EIO, "scrub")


def _ext4_like(bitflip: Sequence[Outcome]) -> dict[str, list[Outcome]]:
    out = {f: [SILENT] for f in DATA_FAULTS}
    out["bitflip"] = list(bitflip)
    out["lost_write"] = [STALE]
    return out


# Per target: (region, fault) -> each repetition's outcome.
OUTCOMES: dict[str, dict[tuple[str, str], list[Outcome]]] = {
    "ext4": {
        **{("data", f): o for f, o in _ext4_like([SILENT]).items()},
        **{("metadata", f): [BADMSG] for f in INODE_FAULTS},
    },
    "xfs": {("data", f): o for f, o in _ext4_like([EIO_DETECTED, SILENT, EIO_DETECTED]).items()},
    "btrfs": {
        **{("data", f): [EIO_DETECTED] for f in DATA_FAULTS},
        **{("metadata", f): [READ_REPAIR] for f in INODE_FAULTS},
    },
    "btrfs-raid1": {
        **{("data", f): [READ_REPAIR] for f in DATA_FAULTS if f != "torn"},
        ("data", "torn"): [EIO_DETECTED],
        **{("metadata", f): [SCRUB_REPAIR] for f in INODE_FAULTS},
    },
}

EFFECTIVE = {
    "ext4": {"fs": "ext4", "data_checksums": False, "metadata_checksums": True},
    "xfs": {"fs": "xfs", "data_checksums": False, "metadata_checksums": True},
    "btrfs": {
        "fs": "btrfs", "data_checksums": True, "metadata_checksums": True,
        "data_profile": "single", "metadata_profile": "dup",
    },
    "btrfs-raid1": {
        "fs": "btrfs", "data_checksums": True, "metadata_checksums": True,
        "data_profile": "raid1", "metadata_profile": "raid1",
    },
}  # fmt: skip

STUDY_TOML = f'''name = "{STUDY}"

[[target]]
name = "ext4"
fs = "ext4"
loop = {{ size = "256MiB" }}

[[workload]]
kind = "integrity"
name = "data"
faults = {json.dumps(list(DATA_FAULTS))}
file_size = "4MiB"
blocks = 2

[[workload]]
kind = "integrity"
name = "inode"
region = "metadata"
faults = {json.dumps(list(INODE_FAULTS))}
file_size = "4MiB"
'''


def params(fault: str, region: str = "data", **more: Any) -> dict[str, Any]:
    """An integrity point's parameters as the planner stores them (bytes, one fault)."""
    return {
        "faults": fault, "region": region, "file_size": 4 << 20, "bs": 4096,
        "blocks": 2 if region == "data" else 1, "mirrors": "one", "seed": 1, "scrub": True,
    } | more  # fmt: skip


class IntegrityWriter:
    """Writes integrity points and runs into a study through `ResultsWriter`."""

    def __init__(self, results: ResultsWriter, study_id: int, prefix: str = "i") -> None:
        self.db = results
        self.study_id = study_id
        self.prefix = prefix
        row = results.con.execute(
            "SELECT coalesce(max(seq) + 1, 0) FROM point WHERE study_id = ?", (study_id,)
        ).fetchone()
        self.seq = int(row[0])
        env = {"kernel": "6.1.0-test", "cpu_model": "Test CPU", "cores": 2,
               "mem_bytes": 8 << 30, "tools": {"btrfs": "btrfs-progs v6.2"}}  # fmt: skip
        self.env_id = results.environment_id(env)
        self.clock = 1_700_100_000.0

    def point(
        self, target: str, workload: str, p: Mapping[str, Any], effective: Mapping[str, Any]
    ) -> str:
        pid = f"{self.prefix}{self.seq:03d}"
        spec = {"name": target, "fs": effective.get("fs", "ext4")}
        self.db.add_point(pid, self.study_id, self.seq, target, workload, "integrity", spec, p)
        self.seq += 1
        return pid

    def run(
        self, pid: str, rep: int, p: Mapping[str, Any], outcome: Outcome,
        effective: Mapping[str, Any],
    ) -> int:  # fmt: skip
        word, errno, repaired_by = outcome
        run_id = self.db.start_run(pid, rep, self.env_id)
        self.db.set_effective(run_id, effective)
        detail = {
            "fault": p["faults"], "region": p["region"], "fs": effective.get("fs"),
            "first_read": {"errno": errno} if errno else {"good": 1024},
            "kernel": [], "outcome": word,
        }  # fmt: skip
        self.db.add_integrity(
            run_id, fault=str(p["faults"]), region=str(p["region"]), outcome=word,
            errno=errno, repaired_by=repaired_by, detail=detail,
        )  # fmt: skip
        self.db.finish_run(run_id, "ok", engine_json=json.dumps(detail), runtime_s=2.5)
        # fixed times: the same input gives the same bytes out
        self.clock += 10
        self.db.con.execute(
            "UPDATE run SET started_at = ?, ended_at = ? WHERE id = ?",
            (self.clock, self.clock + 2.5, run_id),
        )
        return run_id


def add_integrity_points(
    results: ResultsWriter,
    study_id: int,
    targets: Sequence[str] = TARGETS,
    effective: Mapping[str, Mapping[str, Any]] = EFFECTIVE,
    outcomes: Mapping[str, Mapping[tuple[str, str], list[Outcome]]] = OUTCOMES,
    prefix: str = "i",
) -> IntegrityWriter:
    """The data and inode workloads' points of `targets` (each target's outcomes from
    `outcomes`, under the name of `TARGETS` at the same index) in this study."""
    w = IntegrityWriter(results, study_id, prefix)
    for workload, region, faults in (("data", "data", DATA_FAULTS),
                                     ("inode", "metadata", INODE_FAULTS)):  # fmt: skip
        for name, model in zip(targets, TARGETS, strict=False):
            reps = outcomes[model]
            eff = effective[model]
            for fault in faults:
                if (region, fault) not in reps:
                    continue
                p = params(fault, region)
                pid = w.point(name, workload, p, eff)
                for rep, o in enumerate(reps[(region, fault)]):
                    w.run(pid, rep, p, o, eff)
    return w


def make_integrity_db(path: Path) -> Path:
    """An integrity-only study (see the module docstring) at `path`."""
    results = ResultsWriter.open(path)
    try:
        sid = results.upsert_study(STUDY, "examples/integrity.toml", STUDY_TOML)
        results.con.execute("UPDATE study SET created_at = 1700000000.0")
        add_integrity_points(results, sid)
    finally:
        results.close()
    return path
