"""One engine report for people: a compact, fio-like summary (`fslab job`).

It reads the engine's report alone (no study, no database), so it says what the engine
says, in the units of `fslab.units`: a header that fits the job's kind, one line per
operation, and for an application model its transactions, commits, cache, checkpoints
and (mailstore) verdict. The engine's own JSON is `fslab job --json`.
"""

from __future__ import annotations

from collections.abc import Sequence

from fslab.catalog import APP_HEADLINE_OP, entry
from fslab.engine import (
    App,
    Check,
    Job,
    LatNs,
    Report,
    SeriesPoint,
    SteadyState,
    Verdict,
    Verify,
)
from fslab.units import format_bytes, format_count, format_ns, format_rate, format_s


def render_summary(report: Report) -> str:
    """A compact, fio-like summary of one report: a header that fits the job's kind, one
    line per op, and for an application model its transactions, commits, cache,
    checkpoints and (mailstore) verdict."""
    app = report.app
    # An application model's transactions get their own line, in words that fit them.
    results = [r for r in report.results if not (app is not None and r.op == "txn")]
    rows: list[tuple[str, str]] = []
    for r in results:
        bw = f" BW={format_rate(r.bw_bytes)}" if r.bytes else ""
        rows.append((r.op, f"IOPS={format_count(r.iops)}{bw} ios={r.ios} {_lat(r.lat_ns)}"))
    if report.fsync.count:
        rows.append(("fsync", f"count={report.fsync.count} {_lat(report.fsync.lat_ns)}"))
    if app is not None:
        rows.extend(_app_rows(report, app))
    if report.steady_state is not None:
        rows.append(("steady", _steady(report.steady_state)))
    if report.verify is not None:
        rows.append(("verify", _verify(report.verify)))
    cpu = report.cpu
    rows.append(
        (
            "cpu",
            f"usr={format_s(cpu.user_s)} sys={format_s(cpu.sys_s)} "
            f"({cpu.usage_pct:.1f}% of a core) ctx={cpu.ctx_voluntary}/{cpu.ctx_involuntary}",
        )
    )
    # Labels line up; block jobs keep fio's narrow column (`read:`, `write:`, `fsync:`).
    width = max(6, *(len(label) + 1 for label, _ in rows))
    lines = [_job_line(report)]
    if not report.results:
        lines.append("  (no I/O completed)")
    lines.extend(f"  {label + ':':<{width}} {text}" for label, text in rows)
    for e in report.errors:
        errno = f" (errno {e.errno})" if e.errno is not None else ""
        lines.append(f"error: {e.op} at offset {e.offset}, thread {e.thread}: {e.message}{errno}")
    for w in report.warnings:
        lines.append(f"warning: {w.kind}: {w.message}")
        if w.hint:
            lines.append(f"  hint: {w.hint}")
    return "\n".join(lines)


def _job_line(report: Report) -> str:
    j: Job = report.job
    parts = [f"{j.name}:"]
    if j.kind == "files":
        parts += [j.kind, f"op={j.op}"]
        if j.op == "create" and j.nr_files is not None:
            parts.append(f"nr_files={j.nr_files}")
            if j.file_size is not None:
                dist = "" if j.size_dist in (None, "fixed") else f" ({j.size_dist})"
                parts.append(f"file_size={format_bytes(j.file_size)}{dist}")
        parts.append(f"numjobs={j.numjobs}")
    elif j.kind == "block":
        parts += [
            j.rw,
            f"bs={format_bytes(j.bs)}",
            f"iodepth={j.iodepth}",
            f"numjobs={j.numjobs}",
            f"ioengine={j.ioengine}",
            f"direct={int(j.direct)}",
        ]
    else:  # an application model (oltp, mailstore): `rw`, `bs`, `iodepth` do not apply
        parts += [j.kind, f"numjobs={j.numjobs}"]
        for key, size in (("data", j.data_size), ("cache", j.cache_size), ("page", j.page_size)):
            if size is not None:
                parts.append(f"{key}={format_bytes(size)}")
        parts += [f"ioengine={j.ioengine}", f"direct={int(j.direct)}"]
    parts.append(f"runtime={format_s(report.runtime_s)}")
    if report.ramp_s:
        parts.append(f"ramp={format_s(report.ramp_s)}")
    status = report.status
    if report.interrupted and status != "interrupted":
        status = "interrupted"
    parts.append(f"[{status}]")
    return " ".join(parts)


def _app_rows(report: Report, app: App) -> list[tuple[str, str]]:
    """An application model's answers, one (label, text) per line."""
    txn = f"{format_count(app.txn_per_s)}/s ios={app.txn}"
    txn_op = report.result("txn")
    if txn_op is not None and txn_op.ios:
        txn += f" {_lat(txn_op.lat_ns)}"
    rows = [("txn", txn)]
    c = app.commits
    if c.count:
        kinds = f"sync {c.sync}, lazy {c.lazy}" if c.lazy else f"sync {c.sync}"
        commits = (
            f"{c.count} ({kinds}), {c.flushes} flushes, {c.records_per_flush:.2f} records per flush"
        )
        if c.sync:
            lat = c.sync_lat_ns
            commits += f", sync lat mean={format_ns(lat.mean)} p99={format_ns(lat.p99)}"
        rows.append(("commits", commits))
    cache = app.cache
    if cache.pages:
        rows.append(
            (
                "cache",
                f"hit ratio {cache.hit_ratio * 100:.1f}% ({cache.hits} of {cache.lookups} "
                f"page reads, {cache.pages} pages)",
            )
        )
    else:
        rows.append(("cache", "none (every page read is an I/O)"))
    points = app.checkpoints
    if points:
        rows.append(
            (
                "checkpoints",
                f"{len(points)}, max {max(p.pages for p in points)} pages, "
                f"peak {format_count(max(p.iops for p in points))} IOPS",
            )
        )
    else:
        rows.append(("checkpoints", "0"))
    if app.verdict is not None:
        rows.append(("verdict", _verdict(app.verdict)))
    return rows


def _verify(v: Verify) -> str:
    """`written=256 read=256: good=254 corrupt=1 stale=1`: the classes that occurred."""
    classes = ("good", "corrupt", "misplaced", "stale", "unreadable", "unwritten")
    counts = " ".join(f"{c}={getattr(v, c)}" for c in classes if getattr(v, c) or c == "good")
    return f"written={v.blocks_written} read={v.blocks_read}: {counts}"


def _steady(s: SteadyState) -> str:
    """`after 6 rounds; window 1.0-6.0 s: range 15.6% (limit 20%), drift 7.9% (limit 10%);
    results 1.0-6.0 s`, or `not attained` and what came closest."""
    lim = s.limits
    head = f"after {s.rounds} rounds" if s.attained else f"not attained ({s.rounds} rounds)"
    if s.window_start_s is None or s.window_end_s is None:
        head += f", a window needs {lim.window}"
    else:
        head += (
            f"; {'window' if s.attained else 'last window'} "
            f"{s.window_start_s:.1f}-{s.window_end_s:.1f} s: "
            f"range {s.range_pct or 0:.1f}% (limit {lim.range_pct:g}%), "
            f"drift {s.slope_pct or 0:.1f}% (limit {lim.slope_pct:g}%)"
        )
    return f"{head}; results {s.results_start_s:.1f}-{s.results_end_s:.1f} s"


def _verdict(verdict: Verdict) -> str:
    """`PASS (db read lat mean 143us < 20.0ms, ...)`, or `FAIL: ` and the failing checks
    first, each with its value and threshold."""
    failed = [_check(c) for c in verdict.checks if not c.passed]
    passed = [_check(c) for c in verdict.checks if c.passed]
    if verdict.passed:
        return f"PASS ({', '.join(passed)})" if passed else "PASS"
    text = f"FAIL: {', '.join(failed)}" if failed else "FAIL"
    return f"{text} (passed: {', '.join(passed)})" if passed else text


def _check(check: Check) -> str:
    """`db read lat mean 143us < 20.0ms`: a check's name in words, its value and max."""
    words = check.name.split("_")
    in_ms = "ms" in words
    name = " ".join(w for w in words if w != "ms")

    def value(v: float) -> str:
        return format_ns(v * 1e6) if in_ms else f"{v:g}"

    op = "<" if check.passed else ">="
    return f"{name} {value(check.value)} {op} {value(check.max)}"


def _lat(lat: LatNs) -> str:
    return (
        f"lat mean={format_ns(lat.mean)} p50={format_ns(lat.p50)} p99={format_ns(lat.p99)} "
        f"p99.9={format_ns(lat.p999)} max={format_ns(lat.max)}"
    )


def live_summary(point: SeriesPoint) -> str:
    """`read 52,000 IOPS 203 MiB/s` (`txn 9,120/s  read ...` for an application model,
    `files 3,100/s` for a files job): one interval of a running job, for its live line."""
    parts = [
        f"{name} {op.iops:,.0f}/s"
        for name, op in (("txn", point.txn), ("files", point.files))
        if op
    ]
    parts += [
        f"{name} {op.iops:,.0f} IOPS {op.bw_bytes / (1 << 20):.0f} MiB/s"
        for name, op in (("read", point.read), ("write", point.write), ("log", point.log))
        if op
    ]
    return "  ".join(parts)


def stored_summary(kind: str, rates: Sequence[tuple[str, float, float]]) -> str:
    """`read 52,000 IOPS 203 MiB/s`, `txn 9,120/s`, `copy 3,100 files/s`: what one run
    stored (its ops' rates over the whole measured time), for the run's log line."""
    parts: list[str] = []
    e = entry(kind)
    for op, iops, bw in rates:
        if op == APP_HEADLINE_OP:
            parts.append(f"{op} {iops:,.0f}/s")
        else:
            # The rate's own label: files/s of a files op, IOPS of the others.
            label = next((m.label for m in e.op_metrics(op) if m.name == "iops"), "IOPS")
            parts.append(f"{op} {iops:,.0f} {label} {bw / (1 << 20):.0f} MiB/s")
    return "  ".join(parts)


def progress_line(point: SeriesPoint) -> str:
    """`[    1.0s]  read 52,000 IOPS 203 MiB/s`: one interval, for `fslab job --progress`."""
    return f"[{point.t_s:7.1f}s]{' ramp' if point.ramp else ''}  {live_summary(point)}"
