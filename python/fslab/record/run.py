"""Running a program (or attaching to one) under a recorder, and turning what it did
under a directory into traces: the library half of `fslab record`.

Two recorders: eBPF (bpftrace on the system-call tracepoints; root, and far cheaper for
the program) and strace (any user; stops the program at every traced call). `auto`
takes eBPF where it can run."""

from __future__ import annotations

import contextlib
import os
import platform
import resource
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

from fslab.errors import ExitStatus, FslabError
from fslab.procs import DIE_WITH_US, handles_signals
from fslab.record import ebpf, iolog, strace

Via = Literal["auto", "ebpf", "strace"]
READY_S = 60.0
"""How long bpftrace may take to compile and attach its probes."""


class RecordUsageError(FslabError):
    """A command line `fslab record` cannot run: no command, no such directory."""

    exit_status = ExitStatus.USAGE


@dataclass
class Outcome:
    """What a recording did: the program's exit status (None for an attached process),
    the recording, the traces written and the recorder that made them."""

    status: int | None
    recording: iolog.Recording
    paths: list[Path]
    via: Literal["ebpf", "strace"]
    interrupted: bool = False


def record(
    command: Sequence[str],
    root: Path,
    out: Path,
    via: Via = "auto",
    pid: int | None = None,
    on_ready: Callable[[str], None] | None = None,
) -> Outcome:
    """Runs `command` (or attaches to process `pid` and its children until it exits or
    SIGINT), following its threads and children, and writes the traces of its I/O on
    files under `root` to `out`. `on_ready` hears, once the recorder is in place, what
    it is recording."""
    chosen = _check(command, root, out, via, pid)
    with tempfile.TemporaryDirectory(prefix="fslab-record-") as tmp:
        status: int | None
        if chosen == "strace":
            (status, rec), interrupted = _strace(command, root, Path(tmp)), False
        else:
            status, rec, interrupted = _ebpf(command, pid, root, Path(tmp), on_ready)
    return Outcome(status, rec, iolog.write(rec, out), chosen, interrupted)


def _check(
    command: Sequence[str], root: Path, out: Path, via: Via, pid: int | None
) -> Literal["ebpf", "strace"]:
    """The recorder to use, once the command line is known to be whole; nothing is
    run or made before."""
    if pid is not None and command:
        raise RecordUsageError(
            "record: both --pid and a command given", "record one: drop --pid or the command"
        )
    if pid is None and not command:
        raise RecordUsageError(
            "record: no command to run",
            "give it after `--`: fslab record -- CMD ARGS (or --pid PID to attach)",
        )
    if command and shutil.which(command[0]) is None:
        raise RecordUsageError(
            f"record: cannot run {command[0]}: not found",
            "give a program on PATH, or its path",
        )
    if pid is not None and not Path(f"/proc/{pid}").is_dir():
        raise RecordUsageError(f"record: --pid {pid}: no such process")
    if not root.is_dir():
        raise RecordUsageError(
            f"record: --dir {root} is not a directory",
            "give the directory the program's files are in",
        )
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        # Traces of an earlier, larger recording would stay beside the new ones, and a
        # replay of the directory would mix the two.
        raise RecordUsageError(
            f"record: --out {out} is not an empty directory",
            "give a new directory, or remove that one first",
        )
    why = ebpf.unavailable()
    if via == "ebpf" or (pid is not None and via == "auto"):
        if why is not None:
            raise RecordUsageError(
                f"record: cannot record through eBPF: {why}",
                "run as root with bpftrace installed (scripts/setup installs it), "
                "or record a command with --via strace",
            )
        return "ebpf"
    if pid is not None:
        raise RecordUsageError(
            "record: --pid needs the eBPF recorder", "drop --via strace, or run a command"
        )
    if via == "auto" and why is None:
        return "ebpf"
    if shutil.which("strace") is None:
        raise FslabError(
            "record: strace is not installed",
            "install it (`apt-get install strace`); scripts/setup does",
        )
    return "strace"


def _strace(command: Sequence[str], root: Path, tmp: Path) -> tuple[int, iolog.Recording]:
    log = tmp / "strace.out"
    argv = ["strace", "-f", "-qq", "-ttt", "-y", "-s", "0",
            "-e", "trace=" + ",".join(strace.SYSCALLS),
            "-o", str(log), "--", *command]  # fmt: skip
    try:
        status = subprocess.run(argv, check=False).returncode
    except FileNotFoundError as e:
        raise RecordUsageError(f"record: cannot run {command[0]}: {e.strerror}") from e
    with log.open(errors="replace") as f:
        return status, iolog.convert(strace.ios(strace.calls(f)), root)


class _Reader(threading.Thread):
    """Copies bpftrace's event lines to a file and follows which traced threads still
    live (a fork adds one, an exit removes it), so the recording can end when the last
    one has, as strace's does."""

    def __init__(self, stream: IO[str], sink: IO[str], live: set[int]) -> None:
        super().__init__(daemon=True)
        self.stream, self.sink, self.live = stream, sink, live
        self.gone: set[int] = set()
        self.lost = 0
        self.ended = False
        self.ready = threading.Event()
        self.finished = threading.Event()
        self.lock = threading.Lock()

    def run(self) -> None:
        try:
            for line in self.stream:
                self._take(line)
        finally:
            # bpftrace ended (or this thread failed): nothing more will come.
            self.ended = True
            self.ready.set()
            self.finished.set()

    def _take(self, line: str) -> None:
        if ebpf.EVENT.match(line):
            self.sink.write(line)
            kind = line[0]
            if kind in "FE":
                f = line.split()
                with self.lock:
                    if kind == "F" and int(f[4]) not in self.gone:
                        self.live.add(int(f[4]))
                    elif kind == "E":
                        self.live.discard(int(f[3]))
                        self.gone.add(int(f[3]))
        elif line.startswith("ready"):
            self.ready.set()
        elif line.startswith("end"):
            self.finished.set()
        elif m := ebpf.LOST.match(line):
            self.lost += int(m.group(1))

    def alive(self) -> bool:
        """Whether a traced thread may still run. An exit whose event did not come
        (lost, or its process no longer traced) is caught by /proc: a thread gone from
        it has ended."""
        if self.ended:
            return False
        with self.lock:
            self.live = {t for t in self.live if _running(t)}
            return bool(self.live)


def _running(tid: int) -> bool:
    try:
        stat = Path(f"/proc/{tid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def _processes(pid: int) -> list[int]:
    """`pid` and every process descended from it, as /proc shows them now."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError, ValueError):
            stat = (entry / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        todo += children.get(p, [])
    return found


def _known(pids: Sequence[int]) -> tuple[dict[int, dict[int, str]], dict[int, str], set[int]]:
    """Each attached process's open files and directory, and its threads, from /proc:
    what the recording cannot see being opened."""
    fds: dict[int, dict[int, str]] = {}
    cwds: dict[int, str] = {}
    threads: set[int] = set()
    for p in pids:
        with contextlib.suppress(OSError):
            cwds[p] = str(Path(f"/proc/{p}/cwd").readlink())
            threads |= {int(t.name) for t in Path(f"/proc/{p}/task").iterdir()}
            table = fds.setdefault(p, {})
            for fd in Path(f"/proc/{p}/fd").iterdir():
                with contextlib.suppress(OSError):
                    target = str(fd.readlink())
                    if target.startswith("/"):
                        table[int(fd.name)] = target
    return fds, cwds, threads


def _raise_memlock() -> None:
    # bpftrace warns when it cannot raise this itself; the kernel charges BPF memory
    # to the cgroup since 5.11, so the limit is only a formality.
    with contextlib.suppress(ValueError, OSError):
        inf = resource.RLIM_INFINITY
        resource.setrlimit(resource.RLIMIT_MEMLOCK, (inf, inf))


def _ebpf(
    command: Sequence[str],
    pid: int | None,
    root: Path,
    tmp: Path,
    on_ready: Callable[[str], None] | None,
) -> tuple[int | None, iolog.Recording, bool]:
    started: list[subprocess.Popen[bytes]] = []
    with _sigterm_as_interrupt(started):
        return _ebpf_recording(command, pid, root, tmp, on_ready, started)


@contextlib.contextmanager
def _sigterm_as_interrupt(started: list[subprocess.Popen[bytes]]) -> Iterator[None]:
    """SIGTERM ends the recording as Ctrl-C does (the traces are still written), after
    passing it on to the program, which a terminal's Ctrl-C reaches by itself."""
    if threading.current_thread() is not threading.main_thread() or not handles_signals():
        yield
        return

    def stop(signum: int, _frame: object) -> None:
        for running in started:
            if running.poll() is None:
                running.send_signal(signum)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _ebpf_recording(
    command: Sequence[str],
    pid: int | None,
    root: Path,
    tmp: Path,
    on_ready: Callable[[str], None] | None,
    started: list[subprocess.Popen[bytes]],
) -> tuple[int | None, iolog.Recording, bool]:
    gate_r: int | None = None
    gate_w: int | None = None
    child: subprocess.Popen[bytes] | None = None
    fds: dict[int, dict[int, str]] = {}
    cwds: dict[int, str] = {}
    if pid is None:
        # The program waits at a gate (a shell reading a pipe, then exec-ing it in
        # place, so its pid is the traced one) until the probes are attached.
        gate_r, gate_w = os.pipe()
        gate = f'read _ <&{gate_r} || exit 125; exec {gate_r}<&-; exec "$@"'
        child = subprocess.Popen(["sh", "-c", gate, "sh", *command], pass_fds=(gate_r,))
        started.append(child)
        os.close(gate_r)
        pids, live = [child.pid], {child.pid}
        cwd = str(Path.cwd())
    else:
        pids = _processes(pid)
        fds, cwds, live = _known(pids)
        cwd = cwds.get(pid, "/")
    events = tmp / "events"
    _raise_memlock()
    env = {**os.environ, "BPFTRACE_STRLEN": "200", "BPFTRACE_PERF_RB_PAGES": "1024",
           "BPFTRACE_MAP_KEYS_MAX": "65536"}  # fmt: skip
    err = (tmp / "bpftrace.err").open("w")
    tracer = subprocess.Popen(
        [*DIE_WITH_US, "bpftrace", "-B", "line", "-e", ebpf.script(pids, platform.machine())],
        stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL, text=True,
        errors="replace",
        env=env, start_new_session=True,
    )  # fmt: skip
    interrupted = False
    status: int | None = None
    sink = events.open("w")
    assert tracer.stdout is not None
    reader = _Reader(tracer.stdout, sink, live)
    reader.start()
    try:
        began = time.monotonic()
        # The reader sets `ready` at bpftrace's `ready` line, or when its output ends.
        while not reader.ready.wait(0.1):
            if tracer.poll() is not None or time.monotonic() > began + READY_S:
                break
        if reader.ended or not reader.ready.is_set():
            err.flush()
            said = (tmp / "bpftrace.err").read_text(errors="replace").strip()
            last = said.splitlines()[-1] if said else "no output"
            raise FslabError(
                f"record: bpftrace did not start: {last}",
                "record with --via strace, or check that this kernel loads eBPF "
                "programs (`bpftrace -e 'BEGIN { exit(); }'`)",
            )
        if on_ready is not None:
            took = f"probes attached in {time.monotonic() - began:.1f} s"
            others = f" and its {len(pids) - 1} child processes" if len(pids) > 1 else ""
            on_ready(
                f"{took}; running {command[0]}" if pid is None
                else f"{took}; recording pid {pid}{others} until it ends (or Ctrl-C)"
            )  # fmt: skip
        try:
            if child is not None:
                assert gate_w is not None
                os.write(gate_w, b"go\n")
                os.close(gate_w)
                gate_w = None
                status = child.wait()
            # As strace -f does: the recording ends when the program's last
            # process or thread has, children it left running included.
            while reader.alive():
                time.sleep(0.1)
        except KeyboardInterrupt:
            interrupted = True
            if child is not None:
                status = child.wait()
        # What the probes printed last is still on its way through the buffers;
        # bpftrace reads them before its END probe prints `end`.
        time.sleep(0.2)
        tracer.send_signal(signal.SIGINT)
        reader.finished.wait(timeout=60)
        with contextlib.suppress(subprocess.TimeoutExpired):
            tracer.wait(timeout=30)
    finally:
        err.close()
        if gate_w is not None:
            os.close(gate_w)
        if tracer.poll() is None:
            tracer.kill()
            tracer.wait()
        reader.join(timeout=10)
        tracer.stdout.close()
        sink.close()
        if child is not None and child.poll() is None:
            child.kill()
            child.wait()
    ordered = tmp / "events.sorted"
    # Each CPU's lines come through its own buffer: sorted by time, a descriptor is
    # opened before it is read. sort(1) keeps memory bounded for a long recording.
    subprocess.run(["sort", "-s", "-n", "-k2,2", "-T", str(tmp), "-o", str(ordered), str(events)],
                   check=True, env={**os.environ, "LC_ALL": "C"})  # fmt: skip
    with ordered.open(errors="replace") as f:
        rec = iolog.convert(ebpf.ios(f, cwd, fds, cwds), root)
    rec.lost = reader.lost
    return status, rec, interrupted
