"""Recording through eBPF: a bpftrace program on the kernel's raw system-call
tracepoints prints each open, descriptor change, read, write and sync of the traced
processes as one line (`script`), and `ios` follows descriptors to paths from those
lines.

Unlike strace, nothing stops the program at a call: the kernel runs the probe and goes
on (about 11-15 us a recorded call here, against strace's 140 us; docs/record.md). The
kernel also gives what strace cannot print: the descriptor's position after a `read` or
`write` (`file->f_pos`), so offsets need no following, and whether the descriptor is a
regular file, so pipes and sockets are never printed. What the kernel does not give a
tracepoint is a descriptor's path: `ios` keeps each process's descriptor table and
working directory from the lines (opens, `dup`s, `chdir`, `fork`s).

Each line is `<event> <ns> <tgid> <tid> ...`, `ns` from the kernel's monotonic clock
(a call's start for I/O, its return for opens and dups, so a descriptor exists before
it is used); the recorder sorts the lines by it, since each CPU's lines come through
their own buffer."""

from __future__ import annotations

import os
import platform
import re
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path

from fslab.record.iolog import Io

AT_FDCWD = -100
F_DUPFD, F_DUPFD_CLOEXEC = 0, 1030

SYSCALL_NUMBERS = {
    "x86_64": {
        "read": 0, "write": 1, "open": 2, "close": 3, "pread64": 17, "pwrite64": 18,
        "readv": 19, "writev": 20, "dup": 32, "dup2": 33, "fcntl": 72, "fsync": 74,
        "fdatasync": 75, "chdir": 80, "fchdir": 81, "creat": 85, "openat": 257,
        "dup3": 292, "preadv": 295, "pwritev": 296, "preadv2": 327, "pwritev2": 328,
        "openat2": 437,
        "truncate": 76, "ftruncate": 77, "fallocate": 285, "unlink": 87, "unlinkat": 263,
        "rename": 82, "renameat": 264, "renameat2": 316, "mkdir": 83, "mkdirat": 258,
        "rmdir": 84,
        "stat": 4, "fstat": 5, "lstat": 6, "newfstatat": 262, "statx": 332,
    },
    # The generic table (arm64 and the newer ports): no open, creat or dup2.
    "aarch64": {
        "dup": 23, "dup3": 24, "fcntl": 25, "chdir": 49, "fchdir": 50, "openat": 56,
        "close": 57, "read": 63, "write": 64, "readv": 65, "writev": 66, "pread64": 67,
        "pwrite64": 68, "preadv": 69, "pwritev": 70, "fsync": 82, "fdatasync": 83,
        "preadv2": 286, "pwritev2": 287, "openat2": 437,
        "truncate": 45, "ftruncate": 46, "fallocate": 47, "unlinkat": 35, "renameat": 38,
        "renameat2": 276, "mkdirat": 34, "newfstatat": 79, "fstat": 80, "statx": 291,
    },
}  # fmt: skip
"""The calls traced, by number: the probes sit on the two raw system-call tracepoints
rather than on one tracepoint per call, because bpftrace detaches a tracepoint in about
70 ms here (47 of them took 3.5 s to end, and longer on a busy machine)."""

# What the entry probe keeps of each call for the exit probe, by class: `a0` (a path's
# address or a descriptor), `a1` (a directory descriptor, or an offset: -1 for "at
# the position"), `a2` (open flags) and, for some, `a3`.
_ENTRY = {
    "open": ("O", "args->args[0]", "-100", "args->args[1]"),
    "openat": ("O", "args->args[1]", "args->args[0]", "args->args[2]"),
    "openat2": ("O", "args->args[1]", "args->args[0]", "0"),
    "creat": ("O", "args->args[0]", "-100", str(os.O_CREAT | os.O_WRONLY | os.O_TRUNC)),
    "chdir": ("K", "args->args[0]", "-100", "0"),
    "fchdir": ("k", "args->args[0]", "0", "0"),
    "dup": ("D", "args->args[0]", "0", "0"),
    "dup2": ("D", "args->args[0]", "0", "0"),
    "dup3": ("D", "args->args[0]", "0", "0"),
    "fcntl": ("D", "args->args[0]", "0", "0"),
    "read": ("R", "args->args[0]", "-1", "0"),
    "readv": ("R", "args->args[0]", "-1", "0"),
    "pread64": ("R", "args->args[0]", "(int64)args->args[3]", "0"),
    "preadv": ("R", "args->args[0]", "(int64)args->args[3]", "0"),
    # preadv2/pwritev2 take -1 to mean "at the position", which the exit's arithmetic
    # covers as it does for read/write.
    "preadv2": ("R", "args->args[0]", "(int64)args->args[3]", "0"),
    "write": ("W", "args->args[0]", "-1", "0"),
    "writev": ("W", "args->args[0]", "-1", "0"),
    "pwrite64": ("W", "args->args[0]", "(int64)args->args[3]", "0"),
    "pwritev": ("W", "args->args[0]", "(int64)args->args[3]", "0"),
    "pwritev2": ("W", "args->args[0]", "(int64)args->args[3]", "0"),
    "fsync": ("S", "args->args[0]", "0", "0"),
    "fdatasync": ("Y", "args->args[0]", "0", "0"),
    # Calls fio's iolog has no action for and fslab's superset of it has: a file's
    # size or allocation changed (T: a descriptor's, t: a path's; A: fallocate, whose
    # offset and length are `a2` and `a3`), and a name's unlink or rmdir (u, with
    # unlinkat's flags in `a2`), mkdir (d) or stat (s; a descriptor's fstat: m), and
    # rename (n: the old name's directory and address in `a1` and `a0`, the new one's in
    # `a2` and `a3`).
    "ftruncate": ("T", "args->args[0]", "(int64)args->args[1]", "0"),
    "truncate": ("t", "args->args[0]", "(int64)args->args[1]", "0"),
    "fallocate": ("A", "args->args[0]", "args->args[1]", "(int64)args->args[2]",
                  "(int64)args->args[3]"),
    "unlink": ("u", "args->args[0]", "-100", "0"),
    "unlinkat": ("u", "args->args[1]", "args->args[0]", "args->args[2]"),
    "rmdir": ("u", "args->args[0]", "-100", str(0x200)),
    "rename": ("n", "args->args[0]", "-100", "-100", "args->args[1]"),
    "renameat": ("n", "args->args[1]", "args->args[0]", "args->args[2]", "args->args[3]"),
    "renameat2": ("n", "args->args[1]", "args->args[0]", "args->args[2]", "args->args[3]"),
    "mkdir": ("d", "args->args[0]", "-100", "0"),
    "mkdirat": ("d", "args->args[1]", "args->args[0]", "0"),
    "stat": ("s", "args->args[0]", "-100", "0"),
    "lstat": ("s", "args->args[0]", "-100", "0"),
    "newfstatat": ("s", "args->args[1]", "args->args[0]", "0"),
    "statx": ("s", "args->args[1]", "args->args[0]", "0"),
    "fstat": ("m", "args->args[0]", "0", "0"),
}  # fmt: skip
AT_REMOVEDIR = 0x200
_CLASSES = "OKkDRWSYTtAundsm"

# The struct file behind descriptor `$fd` of the current process, and whether it is a
# regular file (S_IFREG): a read of a pipe or socket is not file I/O.
_FILE = "$f = *(curtask->files->fdt->fd + $fd);"
_REGULAR = "($f->f_inode->i_mode & 0xf000) == 0x8000"

# On return, by class: each prints its line (a call's start time `@at` for I/O, the
# return for opens and dups, so that a descriptor exists before its first use).
_EXIT = {
    # With the file's size on return (-1: not a regular file), so that a file a
    # creating or truncating open found empty starts empty in the replay too.
    "O": f"if ($ret >= 0) {{ $fd = $ret; {_FILE} $size = (int64)-1;"
         f" if ({_REGULAR}) {{ $size = $f->f_inode->i_size; }}"
         ' printf("O %llu %d %d %d %d %d %lld %s\\n", nsecs, pid, tid, $ret,'
         " @a1[tid], @a2[tid], $size, str(uptr(@a0[tid]))); }",
    "K": 'if ($ret == 0) { printf("K %llu %d %d -100 %s\\n", nsecs, pid, tid,'
         " str(uptr(@a0[tid]))); }",
    "k": 'if ($ret == 0) { printf("K %llu %d %d %d .\\n", nsecs, pid, tid, @a0[tid]); }',
    "D": 'if ($ret >= 0) { printf("D %llu %d %d %d %d\\n", nsecs, pid, tid, @a0[tid], $ret); }',
    "R": f"if ($ret > 0) {{ $fd = @a0[tid]; {_FILE} if ({_REGULAR}) {{ $off = @a1[tid];"
         " if ($off < 0) { $off = $f->f_pos - $ret; }"
         ' printf("R %llu %d %d %d %lld %lld\\n", @at[tid], pid, tid, $fd, $off, $ret); } }',
    "S": f"if ($ret == 0) {{ $fd = @a0[tid]; {_FILE} if ({_REGULAR}) {{"
         ' printf("S %llu %d %d %d\\n", @at[tid], pid, tid, $fd); } }',
}  # fmt: skip
_EXIT["T"] = (
    'if ($ret == 0) { printf("T %llu %d %d %d %lld\\n", nsecs, pid, tid, @a0[tid], @a1[tid]); }'
)
_EXIT["t"] = (
    'if ($ret == 0) { printf("t %llu %d %d -100 %lld %s\\n", nsecs, pid, tid, @a1[tid],'
    " str(uptr(@a0[tid]))); }"
)
_EXIT["A"] = (
    'if ($ret == 0) { printf("A %llu %d %d %d %d %lld %lld\\n", nsecs, pid, tid, @a0[tid],'
    " @a1[tid], @a2[tid], @a3[tid]); }"
)
for _c in "uds":
    _EXIT[_c] = (
        f'if ($ret == 0) {{ printf("M %llu %d %d {_c} %d %d %s\\n", nsecs, pid, tid, @a1[tid],'
        " @a2[tid], str(uptr(@a0[tid]))); }"
    )
_EXIT["m"] = 'if ($ret == 0) { printf("M %llu %d %d s %d 0 .\\n", nsecs, pid, tid, @a0[tid]); }'
# A rename's two names on two lines, one after the other (one line with both is over
# eBPF's 512-byte stack): `N` with the old name, `n` with the new, the same time.
_EXIT["n"] = (
    'if ($ret == 0) { printf("N %llu %d %d %d %s\\n", nsecs, pid, tid, @a1[tid],'
    ' str(uptr(@a0[tid]))); printf("n %llu %d %d %d %s\\n", nsecs, pid, tid, @a2[tid],'
    " str(uptr(@a3[tid]))); }"
)
_EXIT["W"] = _EXIT["R"].replace('printf("R', 'printf("W')
_EXIT["Y"] = _EXIT["S"].replace('printf("S', 'printf("Y')


def script(pids: Iterable[int], machine: str) -> str:
    """The bpftrace program that traces `pids` and every process and thread they start,
    for `machine`'s system-call numbers. It prints `ready` once its probes are attached
    and `end` last."""
    numbers = SYSCALL_NUMBERS[machine]
    begin = " ".join(f"@traced[{p}] = 1;" for p in pids)
    entry = []
    for cls in _CLASSES:
        calls = [c for c, e in _ENTRY.items() if e[0] == cls and c in numbers]
        for call in calls:
            _, a0, a1, a2, *rest = _ENTRY[call]
            when = f"$id == {numbers[call]}"
            if call == "fcntl":
                when += f" && (args->args[1] == {F_DUPFD} || args->args[1] == {F_DUPFD_CLOEXEC})"
            # Classes are kept +1 in `@call`'s low byte (a map reads 0 for "none"), the
            # call's number above it.
            a3 = f" @a3[tid] = {rest[0]};" if rest else ""
            entry.append(
                f"if ({when}) {{ @call[tid] = {_CLASSES.index(cls) + 1} + ($id << 8);"
                f" @a0[tid] = {a0};"
                f" @a1[tid] = {a1}; @a2[tid] = {a2};{a3} @at[tid] = nsecs; }}"
            )
    exits = " ".join(f"if ($cls == {i + 1}) {{ {_EXIT[cls]} }}" for i, cls in enumerate(_CLASSES))
    maps = ("traced", "call", "a0", "a1", "a2", "a3", "at")
    return "\n".join([
        f'BEGIN {{ {begin} printf("ready\\n"); }}',
        # A child is traced from its fork, before it first runs.
        "tracepoint:sched:sched_process_fork /@traced[pid]/ {"
        " @traced[args->child_pid] = 1;"
        ' printf("F %llu %d %d %d\\n", nsecs, pid, tid, args->child_pid); }',
        # A thread's own entry (set at its clone) goes too; a process's with its leader.
        "tracepoint:sched:sched_process_exit /@traced[pid]/ {"
        ' printf("E %llu %d %d\\n", nsecs, pid, tid); delete(@traced[tid]); }',
        "tracepoint:raw_syscalls:sys_enter /@traced[pid]/ { $id = args->id;"
        f' if ($id == {numbers["close"]}) {{'
        ' printf("C %llu %d %d %d\\n", nsecs, pid, tid, args->args[0]); }',
        *entry,
        "}",
        # The call's number is kept beside its class: an entry seen while the exit probe
        # was still being attached must not be taken for the next call's.
        "tracepoint:raw_syscalls:sys_exit /@call[tid]/ { $cls = @call[tid] & 0xff;"
        " if ((@call[tid] >> 8) != args->id) { $cls = 0; } $ret = args->ret;",
        exits,
        " delete(@call[tid]); delete(@a0[tid]); delete(@a1[tid]); delete(@a2[tid]);"
        " delete(@a3[tid]); delete(@at[tid]); }",
        # Maps are printed when bpftrace ends unless cleared.
        "END { " + " ".join(f"clear(@{m});" for m in maps) + ' printf("end\\n"); }',
    ]) + "\n"  # fmt: skip


EVENT = re.compile(r"^[FECOKDRWSYTtAMNn] \d+ ")
"""A line of the program's that is an event (not `ready`, `Attaching...`)."""
LOST = re.compile(r"^Lost (\d+) events")


_FALLOCATE = {0: "fallocate", 1: "fallocate", 3: "trim"}
"""fallocate's modes that replay: 0 and KEEP_SIZE allocate; PUNCH_HOLE|KEEP_SIZE frees,
as a trim does. The others (zero, collapse or insert a range) are only counted."""
_PATHS = {"u": "unlink", "d": "mkdir", "s": "stat"}


def unavailable() -> str | None:
    """Why eBPF cannot record here (None where it can)."""
    if platform.machine() not in SYSCALL_NUMBERS:
        return f"no system-call table for {platform.machine()} (only {', '.join(SYSCALL_NUMBERS)})"
    if shutil.which("bpftrace") is None:
        return "bpftrace is not installed"
    if os.geteuid() != 0:
        return "loading eBPF programs needs root"
    if not any(
        Path(d, "events/raw_syscalls/sys_enter").exists()
        for d in ("/sys/kernel/tracing", "/sys/kernel/debug/tracing")
    ):
        return "this kernel has no system-call tracepoints (raw_syscalls)"
    return None


def ios(
    lines: Iterable[str],
    cwd: str,
    fds: dict[int, dict[int, str]] | None = None,
    cwds: dict[int, str] | None = None,
) -> Iterator[Io]:
    """The reads, writes, syncs, size changes and path actions of the program's lines,
    sorted by time, each with its file's path. `cwd` is the traced program's working
    directory when it began; `fds` and `cwds`, each process's descriptors and directory
    known beforehand (when a running process is attached to)."""
    tables: dict[int, dict[int, str]] = {k: dict(v) for k, v in (fds or {}).items()}
    # Each descriptor's open flags, beside its path (unknown for one held before).
    flag_tables: dict[int, dict[int, int]] = {}
    dirs: dict[int, str] = dict(cwds or {})
    # A rename's old name, until the line with its new one (the next of its thread's).
    renamed: dict[int, str | None] = {}

    def resolve(tgid: int, dfd: int, path: str) -> str | None:
        if path.startswith("/"):
            return os.path.normpath(path)
        base = dirs.get(tgid, cwd) if dfd == AT_FDCWD else tables.get(tgid, {}).get(dfd)
        return None if base is None else os.path.normpath(f"{base}/{path}")

    for line in lines:
        text = line.rstrip("\n")
        f = text.split(" ", 7)
        kind, at_s, tgid, tid = f[0], int(f[1]) / 1e9, int(f[2]), int(f[3])
        table = tables.setdefault(tgid, {})
        flags = flag_tables.setdefault(tgid, {})
        if kind in "RW":
            fd, offset, n = int(f[4]), int(f[5]), int(f[6])
            action = "read" if kind == "R" else "write"
            yield Io(tid, at_s, table.get(fd), action, offset, n, flags.get(fd, 0))
        elif kind in "SY":
            yield Io(tid, at_s, table.get(int(f[4])), "sync" if kind == "S" else "datasync")
        elif kind == "O":
            size, path = f[7].split(" ", 1)
            fd, dfd, how = int(f[4]), int(f[5]), int(f[6])
            resolved = resolve(tgid, dfd, path)
            if resolved is None:
                table.pop(fd, None)
            else:
                table[fd] = resolved
                if size == "0" and how & (os.O_CREAT | os.O_TRUNC):
                    # Made or emptied here: the replay lays every file out first, so it
                    # empties it again at this moment, and the writes that follow
                    # allocate as the program's did.
                    yield Io(tid, at_s, resolved, "truncate", 0)
            flags[fd] = how
        elif kind == "T":
            yield Io(tid, at_s, table.get(int(f[4])), "truncate", int(f[5]))
        elif kind == "t":
            path = text.split(" ", 6)[6]
            yield Io(tid, at_s, resolve(tgid, int(f[4]), path), "truncate", int(f[5]))
        elif kind == "A":
            fd, mode, offset, n = int(f[4]), int(f[5]), int(f[6]), int(f[7])
            yield Io(tid, at_s, table.get(fd), _FALLOCATE.get(mode, "fallocate-other"), offset, n)
        elif kind == "M":
            what, dfd, how, path = f[4], int(f[5]), int(f[6]), f[7]
            action = "rmdir" if what == "u" and how & AT_REMOVEDIR else _PATHS[what]
            yield Io(tid, at_s, resolve(tgid, dfd, path), action)
        elif kind == "N":
            renamed[tid] = resolve(tgid, int(f[4]), text.split(" ", 5)[5])
        elif kind == "n" and tid in renamed:
            to = resolve(tgid, int(f[4]), text.split(" ", 5)[5])
            yield Io(tid, at_s, renamed.pop(tid), "rename", to=to)
        elif kind == "C":
            table.pop(int(f[4]), None)
            flags.pop(int(f[4]), None)
        elif kind == "D":
            old, new = int(f[4]), int(f[5])
            if old in table:
                table[new] = table[old]
            else:
                table.pop(new, None)
            flags[new] = flags.get(old, 0)
        elif kind == "K":
            resolved = resolve(tgid, int(f[4]), text.split(" ", 5)[5])
            if resolved is not None:
                dirs[tgid] = resolved
        elif kind == "F":
            # A new process starts with a copy of its parent's table and directory (a
            # new thread shares them: its lines name the same tgid, and this copy is
            # never looked up).
            child = int(f[4])
            tables[child] = dict(table)
            flag_tables[child] = dict(flags)
            if tgid in dirs:
                dirs[child] = dirs[tgid]
