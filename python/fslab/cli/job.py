"""`fslab job JOB`: one engine job, with a readable summary (or the engine's JSON)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from fslab.engine import Job, LatNs, Report, run_job
from fslab.errors import ExitStatus
from fslab.units import format_bytes, format_count, format_ns, format_rate, format_s


@click.command()
@click.argument("job_file", metavar="JOB", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--json", "as_json", is_flag=True, help="Print the engine's JSON report as is.")
@click.option("--progress", is_flag=True, help="Print one line per interval on stderr.")
def job(job_file: str, as_json: bool, progress: bool) -> ExitStatus | int:
    """Run one engine job (a .toml or .json file, or - for stdin) and summarize it.

    The exit status is the engine's: 0 ok, 1 failed, 2 bad job, 130 interrupted (the
    summary then covers the part that ran).
    """
    run = run_job(Path(job_file), progress_cb=_echo_progress if progress else None)
    if as_json:
        sys.stdout.write(run.stdout)
        sys.stdout.flush()
    else:
        click.echo(render_summary(run.report))
    # The engine's own diagnostics, as it said them; its warnings are in the summary.
    said = run.stderr.splitlines(keepends=True)
    if not as_json:
        said = [line for line in said if not line.startswith("warning: ")]
    if said:
        click.echo("".join(said), err=True, nl=False)
    return run.exit_code


def _echo_progress(line: str) -> None:
    click.echo(line, err=True)


def render_summary(report: Report) -> str:
    """A compact, fio-like summary of one report."""
    lines = [_job_line(report)]
    if not report.results:
        lines.append("  (no I/O completed)")
    for r in report.results:
        lines.append(
            f"  {r.op + ':':<6} IOPS={format_count(r.iops)} BW={format_rate(r.bw_bytes)} "
            f"ios={r.ios} {_lat(r.lat_ns)}"
        )
    if report.fsync.count:
        lines.append(f"  {'fsync:':<6} count={report.fsync.count} {_lat(report.fsync.lat_ns)}")
    cpu = report.cpu
    lines.append(
        f"  {'cpu:':<6} usr={format_s(cpu.user_s)} sys={format_s(cpu.sys_s)} "
        f"({cpu.usage_pct:.1f}% of a core) ctx={cpu.ctx_voluntary}/{cpu.ctx_involuntary}"
    )
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
    parts = [
        f"{j.name}:",
        j.rw,
        f"bs={format_bytes(j.bs)}",
        f"iodepth={j.iodepth}",
        f"numjobs={j.numjobs}",
        f"ioengine={j.ioengine}",
        f"direct={int(j.direct)}",
        f"runtime={format_s(report.runtime_s)}",
    ]
    if report.ramp_s:
        parts.append(f"ramp={format_s(report.ramp_s)}")
    status = report.status
    if report.interrupted and status != "interrupted":
        status = "interrupted"
    parts.append(f"[{status}]")
    return " ".join(parts)


def _lat(lat: LatNs) -> str:
    return (
        f"lat mean={format_ns(lat.mean)} p50={format_ns(lat.p50)} p99={format_ns(lat.p99)} "
        f"p99.9={format_ns(lat.p999)} max={format_ns(lat.max)}"
    )
