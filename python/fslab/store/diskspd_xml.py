"""DiskSpd's XML results (`diskspd ... -Rxml > result.xml`, on Windows) as runs of a target
the user describes (`fslab import result.xml --target "D: ReFS 64K mirror"`): a Windows
user's NTFS-against-ReFS measurements in fslab's statistics, verdicts and reports.

The layout is DiskSpd 2.2's (microsoft/diskspd, XmlResultParser.cpp, and the profile's
`Target::GetXml` in Common.cpp): `<Results>` holds `<System>` (computer name, DiskSpd's
version, `<RunTime>`), the `<Profile>` that ran, then one `<TimeSpan>` with the measured
`<TestTimeSeconds>`, `<CpuUtilization>`, with `-L` a `<Latency>` of percentiles (0, 1 to
99, 99.9 to 99.9999999, 100) in milliseconds, with `-D` an `<Iops>` series, and per
`<Thread>` and `<Target>` the bytes and I/O counts.

**One run per file** (one timespan): per operation (read, write) the I/Os and bytes summed
over threads and targets, the rate over `TestTimeSeconds`; latency from the timespan's
percentiles (min is percentile 0, max 100, p50...p99.99 as listed) and mean and standard
deviation from its averages. **DiskSpd writes no histogram**, only percentiles: a run
imported from XML has none, so merging its repetitions (ranks, several runs of a cell)
works from the percentiles, not from the latencies: fslab's percentile of several runs
is then the mean of their percentiles, which is approximate (a percentile of a mixture is
not the mean of the parts'), and the run's `effective` says so. Without `-L` the run has
no latency at all (0). With `-D`, the `<Iops>` buckets become the run's series.

**The point** is a block point in fslab's words, from the profile's first target:
`rw` (random or sequential, by `WriteRatio`), `rwmixread`, `bs`, `threads`, `iodepth`,
`file_size` (with `-c`), `runtime` and `ramp_time` (the timespan's duration and warm-up),
`direct` (`DisableOSCache`) and `sync = "dsync"` (`WriteThrough`): runs of the same
DiskSpd line on two targets meet in one row. The environment is what the file says: the
computer's name and DiskSpd's version (the kernel and CPU model are "Windows" and
"unknown"; `ProcCount` is its cores).
"""

from __future__ import annotations

import datetime as dt
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import defusedxml.ElementTree as safe_et  # type: ignore[import-untyped]

from fslab.errors import ExitStatus, FslabError
from fslab.store.db import ResultsWriter
from fslab.store.fio_json import OpResult
from fslab.store.imported import SeriesRow, add_imported_run
from fslab.textfile import NotText, read_text

PERCENTILES = {"p50": "50", "p90": "90", "p95": "95", "p99": "99", "p999": "99.9",
               "p9999": "99.99"}  # fmt: skip
"""The engine's percentile columns and DiskSpd's `<Percentile>` text for them."""
APPROXIMATE = (
    "DiskSpd's own percentiles (it writes no histogram): where runs are merged, their "
    "percentiles are averaged, which is approximate"
)


class DiskspdXmlError(FslabError):
    """A file that is not DiskSpd's XML output, or one fslab cannot take; nothing written."""

    exit_status = ExitStatus.USAGE


def is_diskspd_xml(path: Path) -> bool:
    """Whether the file looks like DiskSpd's XML results (it starts with `<Results>`)."""
    try:
        with path.open("rb") as f:
            head = f.read(256).lstrip(b"\xef\xbb\xbf \t\r\n")
    except OSError:
        return False
    return head.startswith(b"<Results>") or (head.startswith(b"<?xml") and b"<Results>" in head)


@dataclass(frozen=True)
class DiskspdResult:
    """What one DiskSpd XML file holds, as one run."""

    version: str
    computer: str
    cores: int
    started_at: float
    span_s: float
    params: dict[str, Any]
    ops: tuple[OpResult, ...]
    cpu_pct: float | None
    """The machine's average CPU use over the timespan, in % (DiskSpd's `<Average>`)."""
    latency: bool
    """Whether it measured latency (`-L`)."""
    series: tuple[SeriesRow, ...] = ()
    """With `-D`: the timespan's IOPS per bucket, reads and writes."""


def _text(e: ET.Element | None, path: str, default: str = "") -> str:
    found = e.find(path) if e is not None else None
    return (found.text or "").strip() if found is not None and found.text else default


def _num(e: ET.Element | None, path: str, default: float = 0.0) -> float:
    try:
        return float(_text(e, path) or default)
    except ValueError:
        return default


def read_diskspd_xml(path: Path) -> DiskspdResult:
    """The file as one run; `DiskspdXmlError` naming what is wrong."""
    try:
        root = safe_et.fromstring(read_text(path))
    except (NotText, ET.ParseError, ValueError) as e:
        raise DiskspdXmlError(
            f"{path}: not DiskSpd's XML output ({e})",
            hint="write it on Windows with `diskspd ... -Rxml > result.xml`, one run per file",
        ) from e
    if root.tag != "Results":
        raise DiskspdXmlError(
            f"{path}: not DiskSpd's XML output (its root is <{root.tag}>, not <Results>)",
            hint="write it with `diskspd ... -Rxml`",
        )
    spans = root.findall("TimeSpan")
    if len(spans) != 1:
        raise DiskspdXmlError(
            f"{path}: {len(spans)} timespans in it; fslab imports one run per file",
            hint="run each timespan of an XML profile (-X) as its own DiskSpd run",
        )
    span = spans[0]
    if span.find("Error") is not None:
        raise DiskspdXmlError(
            f"{path}: DiskSpd says: {_text(span, 'Error')}", hint="import a run that measured"
        )
    seconds = _num(span, "TestTimeSeconds")
    if seconds <= 0:
        raise DiskspdXmlError(f"{path}: no <TestTimeSeconds>", hint="import a run that measured")
    counts = {"read": [0, 0], "write": [0, 0]}
    for t in span.iter("Target"):
        for op, word in (("read", "Read"), ("write", "Write")):
            counts[op][0] += int(_num(t, f"{word}Count"))
            counts[op][1] += int(_num(t, f"{word}Bytes"))
    latency = span.find("Latency")
    ops = []
    for op, word in (("read", "Read"), ("write", "Write")):
        ios, nbytes = counts[op]
        if ios == 0:
            continue
        ops.append(
            OpResult(
                op=op,
                ios=ios,
                bytes=nbytes,
                iops=ios / seconds,
                bw_bytes=nbytes / seconds,
                lat_ns=_latency(latency, word),
                hist="",
            )
        )
    if not ops:
        raise DiskspdXmlError(f"{path}: its run did no I/O", hint="import a run that did I/O")
    system = root.find("System")
    cpu = span.find("CpuUtilization/Average")
    return DiskspdResult(
        version=_text(system, "Tool/Version", "unknown"),
        computer=_text(system, "ComputerName", "unknown"),
        cores=int(_num(span, "ProcCount")),
        started_at=_when(_text(system, "RunTime")),
        span_s=seconds,
        params=_params(root.find("Profile/TimeSpans/TimeSpan")),
        ops=tuple(ops),
        cpu_pct=_num(cpu, "UsagePercent") if cpu is not None else None,
        latency=latency is not None,
        series=_series(
            span.find("Iops"),
            int(_num(root, "Profile/TimeSpans/TimeSpan/Targets/Target/BlockSize", 65536)),
        ),
    )


def _series(iops: ET.Element | None, bs: int) -> tuple[SeriesRow, ...]:
    """`-D`'s buckets (`<Bucket SampleMillisecond= Read= Write= .../>`, each the I/Os per
    second of its bucket) as series rows, reads and writes; bytes at the block size."""
    out: list[SeriesRow] = []
    for b in iops.findall("Bucket") if iops is not None else ():
        try:
            t = float(b.get("SampleMillisecond", "")) / 1000
            for op, word in (("read", "Read"), ("write", "Write")):
                rate = float(b.get(word, "0"))
                if rate > 0:
                    lat = float(b.get(f"{word}AvgLatencyMilliseconds", "0")) * 1e6
                    out.append(SeriesRow(t, op, rate, rate * bs, lat))
        except ValueError:
            continue  # a bucket DiskSpd did not write: left out
    return tuple(out)


def _latency(latency: ET.Element | None, word: str) -> dict[str, float]:
    """One op's latencies in ns by the engine's names, from the timespan's `<Latency>`."""
    if latency is None:
        return {}
    at: dict[str, float] = {}
    for b in latency.findall("Bucket"):
        value = _text(b, f"{word}Milliseconds")
        if value:
            at[_text(b, "Percentile")] = float(value) * 1e6
    out = {"min": at.get("0", 0.0), "max": at.get("100", 0.0),
           "mean": _num(latency, f"Average{word}Milliseconds") * 1e6,
           "stdev": _num(latency, f"{word}LatencyStdev") * 1e6}  # fmt: skip
    for col, name in PERCENTILES.items():
        out[col] = at.get(name, 0.0)
    return out


def _when(text: str) -> float:
    """`2026/11/28 20:10:56 UTC` as unix seconds (0 where absent)."""
    try:
        return (
            dt.datetime.strptime(text, "%Y/%m/%d %H:%M:%S UTC").replace(tzinfo=dt.UTC).timestamp()
        )
    except ValueError:
        return 0.0


def _params(ts: ET.Element | None) -> dict[str, Any]:
    """The point's parameters in fslab's words (see the module)."""
    target = ts.find("Targets/Target") if ts is not None else None
    if ts is None or target is None:
        return {}
    write = int(_num(target, "WriteRatio"))
    random = target.find("Random") is not None
    pure = {(True, 0): "randread", (True, 100): "randwrite", (False, 0): "read",
            (False, 100): "write"}  # fmt: skip
    rw = pure.get((random, write), "randrw" if random else "readwrite")
    bs = int(_num(target, "BlockSize", 65536))
    out: dict[str, Any] = {"rw": rw, "bs": bs}
    if 0 < write < 100:
        out["rwmixread"] = 100 - write
    if random and int(_num(target, "Random", bs)) != bs:
        out["blockalign"] = int(_num(target, "Random"))
    pool = int(_num(ts, "ThreadCount"))
    out["threads"] = pool or int(_num(target, "ThreadsPerFile", 1))
    out["iodepth"] = int(_num(ts, "RequestCount")) if pool else int(_num(target, "RequestCount", 2))
    if target.find("FileSize") is not None:
        out["file_size"] = int(_num(target, "FileSize"))
    out["runtime"] = _num(ts, "Duration", 10)
    out["ramp_time"] = _num(ts, "Warmup", 5)
    out["direct"] = _text(target, "DisableOSCache") == "true"
    if _text(target, "WriteThrough") == "true":
        out["sync"] = "dsync"
    return out


def import_diskspd_xml(
    dest: ResultsWriter,
    path: Path,
    *,
    target: str,
    study: str,
    workload: str = "diskspd",
    describe: Mapping[str, str] | None = None,
) -> tuple[str, bool]:
    """One DiskSpd XML file as one run of `target`'s point in `study` (made if absent);
    returns (the point's id, whether a run was added: False when it is already here)."""
    result = read_diskspd_xml(path)
    spec = {"name": target, "imported": "diskspd", **dict(describe or {})}
    env = {"kernel": "Windows", "cpu_model": "unknown", "cores": result.cores, "mem_bytes": 0,
           "tools": {"diskspd": result.version, "computer": result.computer}}  # fmt: skip
    effective = {
        "imported": {"from": "DiskSpd XML", "file": str(path), "diskspd": result.version,
                     "computer": result.computer, "cpu_pct": result.cpu_pct,
                     "latency": "DiskSpd's (-L)" if result.latency else "not measured (no -L)",
                     "percentiles": APPROXIMATE},
    }  # fmt: skip
    return add_imported_run(
        dest, path, study=study, target=target, workload=workload, kind="block", spec=spec,
        params=result.params, env=env, effective=effective, started_at=result.started_at,
        span_s=result.span_s, ops=result.ops, what="DiskSpd", error=DiskspdXmlError,
        series=result.series,
    )  # fmt: skip
