"""fio's own results (`fio --output-format=json`, or `json+` with its latency bins) as
runs of a target the user describes (`fslab import result.json --target NAME`): a team's
existing fio results in the same statistics and reports as fslab's.

**One run per file**, its jobs as one result, as fslab's `kind = "fio"` stores a job
file's run (`fslab.kinds.fio`: counts summed over the jobs, as fio's `group_reporting`):
per operation (read, write, trim) the I/Os and bytes summed, the rate over the file's
span (the jobs of one `groupid` run together, groups one after another: the span is the
sum of each group's longest job, a job's length its longest direction's `runtime`),
latency min and max over the jobs, the mean weighted by I/Os, the standard deviation
pooled. Percentiles come from the jobs' merged latency bins
where `json+` gave them (and the run's histogram is made from those bins); from a single
job's own percentiles otherwise; with several jobs and no bins, from the I/O-weighted mean
of theirs, which the run's `effective` says (a percentile of a mixture is not the mean of
the parts').

**Which latency.** fio reports percentiles of `clat` (completion: from submission to
completion) unless `lat_percentiles=1` asked for `lat` (issue to completion, what fslab's
engine measures). Where the file has `lat` percentiles they are taken, with `lat`'s mean;
else everything is `clat`'s, and the run's `effective.latency` says `clat`.

**The point.** The workload is named by `workload` (default `fio`, as a study's lone fio
workload is); with `job_file`, its parameters are fslab's for that job file (`job_file`
as given, and the hash of its text), so the imported runs sit in the same rows as a
study's runs of that file on other targets. Without it, the point's parameters are the
file's job options (with the global ones) in fslab's words where it has them.

The environment is what the file says of it: fio's version; the kernel, CPU and memory
are "unknown" (fio does not write them).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fslab.errors import ExitStatus, FslabError
from fslab.store.db import ResultsWriter
from fslab.store.imported import add_imported_run
from fslab.textfile import NotText, read_text
from fslab.units import parse_size

OPS = ("read", "write", "trim")
"""fio's directions, named as fslab's engine names its operations."""
PERCENTILES = {"p50": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0, "p999": 99.9,
               "p9999": 99.99}  # fmt: skip
"""The metric's percentiles, by the engine's names (all in fio's default list)."""
PARAM_WORDS = {"rw": "rw", "readwrite": "rw", "bs": "bs", "blocksize": "bs",
               "iodepth": "iodepth", "numjobs": "threads", "size": "file_size",
               "runtime": "runtime", "direct": "direct", "ioengine": "ioengine",
               "rwmixread": "rwmixread"}  # fmt: skip
"""fio's job options fslab names as its own parameters (the study's words)."""


class FioJsonError(FslabError):
    """A file that is not fio's JSON output, or a job in it fslab cannot take."""

    exit_status = ExitStatus.USAGE


def is_fio_json(path: Path) -> bool:
    """Whether the file looks like fio's JSON output (a `.json` name and `fio version`)."""
    if not path.name.lower().endswith(".json") or not path.is_file():
        return False
    with path.open("rb") as f:
        head = f.read(4096)
    return b'"fio version"' in head


@dataclass(frozen=True)
class OpResult:
    """One operation's result over the file's jobs: a `metric` row."""

    op: str
    ios: int
    bytes: int
    iops: float
    bw_bytes: float
    lat_ns: dict[str, float]
    """min, mean, stdev, max and the `PERCENTILES`, by the engine's names."""
    hist: str


@dataclass(frozen=True)
class FioResult:
    """What one fio JSON file holds, as one run."""

    fio_version: str
    started_at: float
    span_s: float
    jobs: tuple[str, ...]
    options: dict[str, Any]
    ops: tuple[OpResult, ...]
    latency: str
    """`lat` or `clat`: whose latency the numbers are."""
    percentiles_from: str
    """`bins`, `job` or `weighted mean of N jobs`."""


def read_fio_json(path: Path, measure: Sequence[str] = ()) -> FioResult:
    """The file as one run (of the jobs named `measure`, default all, as a study's fio
    workload's `measure`); `FioJsonError` naming what is wrong."""
    try:
        doc = json.loads(read_text(path))
    except (NotText, json.JSONDecodeError) as e:
        raise FioJsonError(
            f"{path}: not fio's JSON output ({e})",
            hint="write it with `fio --output-format=json` (or json+), one run per file",
        ) from e
    if not isinstance(doc, dict) or "fio version" not in doc or not doc.get("jobs"):
        raise FioJsonError(
            f"{path}: not fio's JSON output (no `fio version` and `jobs`)",
            hint="write it with `fio --output-format=json` (or json+)",
        )
    jobs = [j for j in doc["jobs"] if isinstance(j, dict)]
    if measure:
        names = {str(j.get("jobname")) for j in jobs}
        missing = [m for m in measure if m not in names]
        if missing:
            raise FioJsonError(
                f"{path}: no job {', '.join(missing)} in it",
                hint=f"its jobs are {', '.join(sorted(names))}",
            )
        jobs = [j for j in jobs if str(j.get("jobname")) in measure]
    failed = [str(j.get("jobname")) for j in jobs if j.get("error")]
    if failed:
        raise FioJsonError(
            f"{path}: job {', '.join(failed)} failed in fio (error "
            f"{jobs[0].get('error')}): no result to import",
            hint="import a run whose jobs completed",
        )
    by_group: dict[int, float] = {}
    for j in jobs:
        g = int(j.get("groupid", 0))
        by_group[g] = max(by_group.get(g, 0.0), _job_span_s(j))
    span = sum(by_group.values())
    if span <= 0:
        raise FioJsonError(f"{path}: its jobs ran for no time", hint="import a run that did I/O")
    lat_key = "lat_ns" if any(
        isinstance(j.get(op, {}).get("lat_ns", {}).get("percentile"), dict)
        for j in jobs for op in OPS
    ) else "clat_ns"  # fmt: skip
    results: list[OpResult] = []
    froms: set[str] = set()
    for op in OPS:
        parts = [j[op] for j in jobs if isinstance(j.get(op), dict) and j[op].get("total_ios")]
        if not parts:
            continue
        got, how = _op(op, parts, span, lat_key)
        results.append(got)
        froms.add(how)
    if not results:
        raise FioJsonError(f"{path}: its jobs did no I/O", hint="import a run that did I/O")
    options = dict(doc.get("global options") or {})
    for j in jobs:
        for k, v in (j.get("job options") or {}).items():
            options.setdefault(k, v)
    return FioResult(
        fio_version=str(doc["fio version"]),
        started_at=float(doc.get("timestamp_ms", 0)) / 1000 or float(doc.get("timestamp", 0)),
        span_s=span,
        jobs=tuple(str(j.get("jobname")) for j in jobs),
        options=options,
        ops=tuple(results),
        latency="lat" if lat_key == "lat_ns" else "clat",
        percentiles_from=", ".join(sorted(froms)),
    )


def _job_span_s(job: Mapping[str, Any]) -> float:
    """How long a job ran: its longest direction's `runtime` (ms). Not `job_runtime`, which
    `group_reporting` sums over the job's clones (4 clones of 5 s: 20 s)."""
    runtimes = [float(job[op].get("runtime", 0)) for op in OPS if isinstance(job.get(op), dict)]
    longest = max(runtimes, default=0.0)
    return (longest or float(job.get("job_runtime", 0))) / 1000


def _op(op: str, parts: Sequence[Mapping[str, Any]], span: float, key: str) -> tuple[OpResult, str]:
    ios = [int(p["total_ios"]) for p in parts]
    total = sum(ios)
    lats = [p.get(key) or {} for p in parts]
    mean = sum(float(la.get("mean", 0.0)) * n for la, n in zip(lats, ios, strict=True)) / total
    var = sum(n * (float(la.get("stddev", 0.0)) ** 2 + (float(la.get("mean", 0.0)) - mean) ** 2)
              for la, n in zip(lats, ios, strict=True)) / total  # fmt: skip
    bins: dict[int, int] = {}
    have_bins = all(isinstance(la.get("bins"), dict) and la["bins"] for la in lats)
    if have_bins:
        for la in lats:
            for value, count in la["bins"].items():
                bins[int(value)] = bins.get(int(value), 0) + int(count)
        pct = {col: _from_bins(bins, q) for col, q in PERCENTILES.items()}
        how = "bins"
    elif len(parts) == 1:
        pct = {col: _percentile(lats[0], q) for col, q in PERCENTILES.items()}
        how = "job"
    else:
        pct = {
            col: round(sum(_percentile(la, q) * n for la, n in zip(lats, ios, strict=True)) / total)
            for col, q in PERCENTILES.items()
        }
        how = f"weighted mean of {len(parts)} jobs"
    return OpResult(
        op=op, ios=total, bytes=sum(int(p.get("io_bytes", 0)) for p in parts),
        iops=total / span, bw_bytes=sum(int(p.get("io_bytes", 0)) for p in parts) / span,
        lat_ns={"min": min(float(la.get("min", 0)) for la in lats), "mean": mean,
                "stdev": math.sqrt(var), "max": max(float(la.get("max", 0)) for la in lats),
                **pct},
        hist=_hist(bins) if have_bins else "",
    ), how  # fmt: skip


def _percentile(lat: Mapping[str, Any], q: float) -> int:
    table = lat.get("percentile") or {}
    want = f"{q:.6f}"
    if want in table:
        return int(table[want])
    # The nearest listed percentile at or above q (fio's list may be the user's own).
    listed = sorted((float(k), int(v)) for k, v in table.items())
    above = [v for k, v in listed if k >= q]
    return above[0] if above else (listed[-1][1] if listed else 0)


def _from_bins(bins: Mapping[int, int], q: float) -> int:
    """The value at percentile q of fio's latency bins (rank ceil(q x count), as the
    engine ranks)."""
    total = sum(bins.values())
    rank = max(math.ceil(round(q / 100.0, 12) * total), 1)
    seen = 0
    for value in sorted(bins):
        seen += bins[value]
        if seen >= rank:
            return value
    return max(bins) if bins else 0


def _hist(bins: Mapping[int, int]) -> str:
    """fio's latency bins as the run's HDR histogram (3 significant digits, as the
    engine's), so reports that merge histograms can use the imported run's."""
    from hdrh.histogram import HdrHistogram  # type: ignore[import-untyped]

    top = max(bins) if bins else 1
    h = HdrHistogram(1, max(2, top * 2), 3)
    for value, count in bins.items():
        h.record_value(max(1, value), count)
    out = h.encode()
    return out.decode() if isinstance(out, bytes) else str(out)


def fio_params(result: FioResult, job_file: Path | None) -> dict[str, Any]:
    """The point's parameters (see the module)."""
    if job_file is not None:
        try:
            text = read_text(job_file)
        except (OSError, NotText) as e:
            raise FioJsonError(f"{job_file}: cannot read the job file ({e})") from e
        return {"job_file": str(job_file),
                "job_file_sha256": hashlib.sha256(text.encode()).hexdigest()[:16]}  # fmt: skip
    out: dict[str, Any] = {}
    for key, word in PARAM_WORDS.items():
        if key in result.options and word not in out:
            value = result.options[key]
            if word in ("bs", "file_size"):
                with contextlib.suppress(ValueError):
                    value = parse_size(str(value))
            elif word in ("iodepth", "threads", "direct", "rwmixread"):
                value = int(value) if str(value).isdigit() else value
            out[word] = value
    return out


def import_fio_json(
    dest: ResultsWriter,
    path: Path,
    *,
    target: str,
    study: str,
    workload: str = "fio",
    job_file: Path | None = None,
    describe: Mapping[str, str] | None = None,
    measure: Sequence[str] = (),
) -> tuple[str, bool]:
    """One fio JSON file as one run of `target`'s point in `study` (made if absent), of
    its jobs named `measure` (default all); returns (the point's id, whether a run was
    added: False when this file's run is already here)."""
    result = read_fio_json(path, measure)
    params = fio_params(result, job_file)
    spec = {"name": target, "imported": "fio", **dict(describe or {})}
    env = {"kernel": "unknown", "cpu_model": "unknown", "cores": 0, "mem_bytes": 0,
           "tools": {"fio": result.fio_version}}  # fmt: skip
    effective = {
        "imported": {"from": "fio JSON", "file": str(path), "fio": result.fio_version,
                     "jobs": list(result.jobs), "latency": result.latency,
                     "percentiles": result.percentiles_from, "options": result.options},
    }  # fmt: skip
    return add_imported_run(
        dest, path, study=study, target=target, workload=workload, kind="fio", spec=spec,
        params=params, env=env, effective=effective, started_at=result.started_at,
        span_s=result.span_s, ops=result.ops, what="fio", error=FioJsonError,
    )  # fmt: skip
