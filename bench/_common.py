"""What bench/vs-fio and bench/vs-tools share: signals, running tools, loop devices, tables.

Not a script: the two import it from their own directory (`import _common`). Call
`set_prog` once, first, so that `log` names the script.
"""

from __future__ import annotations

import csv
import json
import os
import platform
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

REPO = Path(__file__).resolve().parent.parent
GIB = 1 << 30

_prog = "bench"


def set_prog(name: str) -> None:
    """The name `log` puts before every message (the script's name)."""
    global _prog
    _prog = name


def log(msg: str) -> None:
    # A closed stderr (`| head`) must not abort a run halfway, before its cleanup.
    with suppress(OSError):
        print(f"{_prog}: {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------
# Signals: SIGINT/SIGTERM become an exception so every `finally` runs.


class Interrupted(Exception):
    """Raised from the signal handler; carries the signal number."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"interrupted by {signal.Signals(signum).name}")
        self.signum = signum


def _on_signal(signum: int, _frame: FrameType | None) -> None:
    raise Interrupted(signum)


def install_signal_handlers() -> None:
    signal.signal(signal.SIGINT, _on_signal)
    signal.signal(signal.SIGTERM, _on_signal)


def ignore_signals() -> None:
    """Cleanup must not be cut short by a second Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


@contextmanager
def signals_deferred() -> Iterator[None]:
    """Holds SIGINT/SIGTERM until the block has finished and recorded what it made."""
    sigs = {signal.SIGINT, signal.SIGTERM}
    old = signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


class SetupError(Exception):
    pass


def run_and_clean_up(work: Callable[[], None], targets: LoopTargets) -> int:
    """Runs `work` with SIGINT/SIGTERM turned into `Interrupted`, then `targets.cleanup()`
    (uninterruptible). Returns 0, 128 + the signal, 2 (SetupError) or 3 (cleanup left
    something behind)."""
    install_signal_handlers()
    code = 0
    try:
        work()
    except Interrupted as e:
        log(f"{e}: cleaning up")
        code = 128 + e.signum
    except SetupError as e:
        log(f"error: {e}")
        code = 2
    finally:
        ignore_signals()
        targets.cleanup()
        for p in targets.problems:
            log(f"cleanup problem: {p}")
        if targets.problems:
            code = code or 3
    return code


# ---------------------------------------------------------------------------------------
# Running the tools


def parse_fio_json(text: str) -> dict[str, Any]:
    """fio can print warnings before (and junk after) its JSON: decode from the first `{`."""
    starts = [m.start() for m in re.finditer(r"^\{", text, flags=re.MULTILINE)]
    first = text.find("{")
    if first >= 0 and first not in starts:
        starts.append(first)
    decoder = json.JSONDecoder()
    for start in starts:
        try:
            doc, _ = decoder.raw_decode(text[start:])
        except json.JSONDecodeError:
            continue
        if isinstance(doc, dict):
            return doc
    raise ValueError("no JSON document in fio's output")


def tail(text: str, n: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else "..." + text[-n:]


def exit_text(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited {code}"


def stderr_gist(proc: subprocess.CompletedProcess[str]) -> str:
    """The panic line when there is one (a backtrace says little here), else the tail."""
    lines = proc.stderr.splitlines()
    for i, line in enumerate(lines):
        if "panicked at" in line:
            return tail(" ".join(lines[i : i + 2]))
    return tail(proc.stderr)


def fio_job(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The first job of fio's JSON report, or ValueError saying why there is none / it
    failed."""
    try:
        job: dict[str, Any] = parse_fio_json(proc.stdout)["jobs"][0]
    except (ValueError, KeyError, IndexError, TypeError) as e:
        raise ValueError(
            f"fio {exit_text(proc.returncode)}: {e}: {tail(proc.stderr + proc.stdout)}"
        ) from e
    if job.get("error", 0):
        raise ValueError(f"fio job error {job['error']}: {tail(proc.stderr)}")
    return job


def engine_doc(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The engine's report, or ValueError saying why there is none / it failed."""
    try:
        doc = json.loads(proc.stdout)
        if not isinstance(doc, dict):
            raise ValueError("not a JSON object")
    except ValueError as e:
        why = "printed no JSON" if not proc.stdout.strip() else f"printed bad JSON ({e})"
        raise ValueError(
            f"fslab-engine {exit_text(proc.returncode)}, {why}: {stderr_gist(proc)}"
        ) from e
    if doc.get("status") != "ok":
        errs = doc.get("errors") or tail(proc.stderr)
        raise ValueError(
            f"fslab-engine status {doc.get('status')!r} ({exit_text(proc.returncode)}): {errs}"
        )
    return doc


def run_proc(
    argv: Sequence[str],
    stdin: str | None = None,
    timeout: float = 120.0,
    cwd: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Runs a command in its own process group and waits for it.

    On a timeout or an interruption the whole group gets SIGTERM, then SIGKILL: fio forks
    a process per job, and killing only fio's main process would leave its jobs running
    (and the test file system busy).
    """
    proc = subprocess.Popen(
        list(argv),
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        cwd=cwd,
    )
    try:
        out, err = proc.communicate(stdin, timeout=timeout)
    except BaseException:
        stop_group(proc)
        raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def stop_group(proc: subprocess.Popen[str]) -> None:
    with signals_deferred():
        for sig, grace in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 10.0)):
            with suppress(ProcessLookupError):
                os.killpg(proc.pid, sig)
            try:
                proc.communicate(timeout=grace)
            except subprocess.TimeoutExpired:
                continue
            # The leader is gone; members it left behind still hold the group.
            with suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            return


def timed_run(
    argv: Sequence[str], stdin: str | None, timeout: float
) -> tuple[subprocess.CompletedProcess[str], float, float, float, float]:
    """The finished process, its wall seconds, the children's user and system CPU
    seconds (getrusage(RUSAGE_CHILDREN) delta) and the start as a Unix time."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.time()
    t0 = time.monotonic()
    proc = run_proc(argv, stdin, timeout)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (
        proc,
        wall,
        after.ru_utime - before.ru_utime,
        after.ru_stime - before.ru_stime,
        started,
    )


def run_cmd(argv: Sequence[str], timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    return run_proc(argv, None, timeout)


def must(argv: Sequence[str], timeout: float = 120.0) -> str:
    proc = run_cmd(argv, timeout)
    if proc.returncode != 0:
        raise SetupError(f"`{' '.join(argv)}` failed ({proc.returncode}): {tail(proc.stderr)}")
    return proc.stdout


def default_engine() -> str:
    env = os.environ.get("FSLAB_ENGINE")
    if env:
        return env
    for p in (REPO / ".venv/bin/fslab-engine", REPO / "target/release/fslab-engine"):
        if p.exists():
            return str(p)
    return str(REPO / "target/release/fslab-engine")


def find_engine(given: str | None) -> str | None:
    """`given` or the default engine binary; None (and says why) when it is not there."""
    engine = given or default_engine()
    if not (Path(engine).is_file() and os.access(engine, os.X_OK)):
        log(f"error: fslab-engine not found or not executable: {engine}")
        log(f"hint: run `cargo build --release` in {REPO}, or pass --engine PATH")
        return None
    return engine


# ---------------------------------------------------------------------------------------
# Mounts and loop devices


def mounted_at(path: Path) -> list[str]:
    """The sources mounted on `path` (several when stacked)."""
    want = str(path)
    found = []
    with Path("/proc/self/mounts").open(encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 2 and unescape_mount(parts[1]) == want:
                found.append(unescape_mount(parts[0]))
    return found


def mountpoints_of(source: str) -> list[Path]:
    found = []
    with Path("/proc/self/mounts").open(encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 2 and unescape_mount(parts[0]) == source:
                found.append(Path(unescape_mount(parts[1])))
    return found


def unescape_mount(s: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), s)


def fs_type(path: Path) -> str:
    """The file system type of the mount holding `path` (longest matching mount point)."""
    p = str(path.resolve())
    best, kind = "", "?"
    with Path("/proc/self/mounts").open(encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            if len(parts) < 3:
                continue
            mnt = unescape_mount(parts[1])
            inside = p == mnt or p.startswith(mnt.rstrip("/") + "/")
            if inside and len(mnt) >= len(best):
                best, kind = mnt, parts[2]
    return kind


def loop_backing_file(dev: str) -> Path:
    return Path("/sys/block") / Path(dev).name / "loop" / "backing_file"


def loop_attached(dev: str) -> bool:
    return loop_backing_file(dev).exists()


def loops_backed_by(image: Path) -> list[str]:
    """Every loop device whose backing file is `image` (from sysfs, no tools needed)."""
    found = []
    want = str(image.resolve())
    for bf in Path("/sys/block").glob("loop*/loop/backing_file"):
        try:
            backing = bf.read_text(encoding="utf-8").strip()
        except OSError:
            continue
        if backing.removesuffix(" (deleted)") == want:
            found.append("/dev/" + bf.parent.parent.name)
    return found


def loop_usable(workdir: Path, without_root: str) -> str | None:
    """Why a loop device file system cannot be made here (`without_root` when not root),
    or None."""
    if os.geteuid() != 0:
        return without_root
    missing = [t for t in ("losetup", "mkfs.ext4", "mount", "umount") if not shutil.which(t)]
    if missing:
        return f"missing {', '.join(missing)} (apt-get install util-linux e2fsprogs mount)"
    if not workdir.is_dir():
        return f"--workdir {workdir} is not a directory"
    return None


@dataclass
class LoopTargets:
    """A temp dir under `workdir_parent` with an image attached to a loop device and a
    mount point, and how to remove them; scripts subclass it for what else they make."""

    workdir_parent: Path
    workdir: Path | None = None
    image: Path | None = None
    mountpoint: Path | None = None
    loop_dev: str | None = None
    problems: list[str] = field(default_factory=list)

    def attach_image(self, prefix: str, size: int) -> str:
        """Makes the temp dir (named `prefix`...), an empty `mnt` and a `size`-byte image
        in it, and attaches the image to a loop device; returns the device."""
        with signals_deferred():
            self.workdir = Path(tempfile.mkdtemp(prefix=prefix, dir=self.workdir_parent))
        kind = fs_type(self.workdir)
        if kind in ("tmpfs", "ramfs"):
            log(f"warning: {self.workdir} is on {kind}, not on a disk (see --workdir)")
        if shutil.disk_usage(self.workdir).free < size + GIB // 2:
            raise SetupError(f"{self.workdir} has less than {(size + GIB // 2) / GIB:.1f} GiB free")
        self.image = self.workdir / "ext4.img"
        self.mountpoint = self.workdir / "mnt"
        self.mountpoint.mkdir()
        with self.image.open("wb") as f:
            f.truncate(size)
        with signals_deferred():
            out = must(["losetup", "--find", "--show", str(self.image)])
            self.loop_dev = out.strip()
        if not re.fullmatch(r"/dev/loop\d+", self.loop_dev):
            raise SetupError(f"losetup printed {self.loop_dev!r}, not a loop device")
        return self.loop_dev

    def mount_image(self) -> Path:
        """Mounts the loop device (with a file system on it by now); returns the mount point."""
        if self.loop_dev is None or self.mountpoint is None:
            raise SetupError("no loop device to mount")
        with signals_deferred():
            must(["mount", self.loop_dev, str(self.mountpoint)])
        return self.mountpoint

    def cleanup(self) -> None:
        """Idempotent; collects what it could not undo in `problems`."""
        if self.workdir is None:
            return
        mnt_busy = False
        if self.mountpoint is not None:
            mnt_busy = not self._unmount(self.mountpoint)
        devs = set(loops_backed_by(self.image)) if self.image is not None else set()
        if self.loop_dev is not None:
            devs.add(self.loop_dev)
        for dev in sorted(devs):
            self._detach(dev)
        if mnt_busy or any(loop_attached(d) for d in devs):
            self.problems.append(f"left {self.workdir} in place (still mounted or attached)")
            return
        shutil.rmtree(self.workdir, ignore_errors=True)
        if self.workdir.exists():
            self.problems.append(f"cannot remove {self.workdir}")
            return
        self.workdir = self.image = self.mountpoint = self.loop_dev = None

    def _unmount(self, mnt: Path) -> bool:
        for attempt in range(20):
            if not mounted_at(mnt):
                return True
            proc = run_cmd(["umount", str(mnt)], timeout=60)
            if proc.returncode != 0 and attempt in (4, 12):
                log(f"umount {mnt}: {tail(proc.stderr)} (retrying)")
            if mounted_at(mnt):
                time.sleep(0.5)
        if mounted_at(mnt):
            self.problems.append(f"{mnt} is still mounted (run `umount {mnt}`)")
            return False
        return True

    def _detach(self, dev: str) -> None:
        # `losetup -d` on a busy device only sets autoclear and still returns 0: check sysfs.
        for attempt in range(20):
            if not loop_attached(dev):
                return
            for mnt in mountpoints_of(dev):
                run_cmd(["umount", str(mnt)], timeout=60)
            proc = run_cmd(["losetup", "-d", dev], timeout=60)
            if proc.returncode != 0 and attempt in (4, 12):
                log(f"losetup -d {dev}: {tail(proc.stderr)} (retrying)")
            deadline = time.monotonic() + 0.5
            while loop_attached(dev) and time.monotonic() < deadline:
                time.sleep(0.05)
        if loop_attached(dev):
            self.problems.append(
                f"{dev} is still attached to {self.image} (busy?): check `losetup -a`, "
                f"then `losetup -d {dev}`"
            )


# ---------------------------------------------------------------------------------------
# Machine description


def first_line(argv: Sequence[str]) -> str:
    try:
        proc = run_cmd(argv, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"? ({e})"
    out = (proc.stdout or proc.stderr).strip().splitlines()
    return out[0].strip() if out else "?"


def cpu_model() -> str:
    try:
        with Path("/proc/cpuinfo").open(encoding="utf-8") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def machine_line() -> str:
    try:
        nproc = len(os.sched_getaffinity(0))
    except OSError:
        nproc = os.cpu_count() or 0
    return f"machine: nproc {nproc}, {cpu_model()}, kernel {platform.release()}"


# ---------------------------------------------------------------------------------------
# Numbers and tables


def fmt_rate(v: float) -> str:
    if v >= 1e6:
        return f"{v / 1e6:.2f}M"
    if v >= 1e3:
        return f"{v / 1e3:.1f}k"
    return f"{v:.0f}"


def fmt_ratio(v: float) -> str:
    return f"{v:.2f}"


def med(xs: Sequence[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def spread_cell(xs: Sequence[float], fmt: Callable[[float], str]) -> str:
    """The median [min-max], or the one value, or `-`."""
    if not xs:
        return "-"
    if len(xs) == 1:
        return fmt(xs[0])
    return f"{fmt(med(xs))} [{fmt(min(xs))}-{fmt(max(xs))}]"


def render_text(header: Sequence[str], right: set[int], rows: Sequence[Sequence[str]]) -> str:
    """A plain text table; the columns numbered in `right` are right-aligned."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    out = [line(header), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in rows]
    return "\n".join(out)


def render_markdown(header: Sequence[str], right: set[int], rows: Sequence[Sequence[str]]) -> str:
    align = ["---:" if i in right else "---" for i in range(len(header))]
    out = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def write_raw(path: str, samples: Sequence[object], fields: Sequence[str]) -> None:
    """Every sample's `fields` as a CSV row."""
    with Path(path).open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for x in samples:
            w.writerow({k: getattr(x, k) for k in fields})
