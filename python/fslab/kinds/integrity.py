"""`kind = "integrity"`: what a file system does when its disk lies.

One point is one fault on one target. Its run step writes a test file with the engine's
`verify` (each block carries its offset, a write generation and a crc32c), maps the
file's blocks (or its inode) to the loop images (`fslab.targets.extents`), unmounts,
writes the fault into the images (`fslab.targets.inject`: only fslab's own images, only
while unmounted, journaled), mounts again from a cold cache and reads the file back with
`verify`; then it runs the file system's own check (`btrfs scrub`, read-only `e2fsck -n`,
`xfs_repair -n`) and reads once more. What the first read returned, what the kernel
logged and what the check said make the outcome (`classify`):

- `repaired`: correct data came back and the file system reports a fix;
- `detected`: an error instead of wrong data (EIO, EBADMSG, EUCLEAN, a refused mount);
- `silent_wrong`: wrong data, no error; `silent_stale`: an older write's data, no error;
- `unaffected`: correct data and nothing to report.

docs/integrity.md lists the faults, the recipes and what this VM's kernels do.
"""

from __future__ import annotations

import errno as errnos
import hashlib
import json
import os
import random
import re
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, field_validator, model_validator

from fslab.catalog.integrity import ENTRY
from fslab.engine import run_job
from fslab.environment import drop_caches
from fslab.errors import EngineError, FslabError, JobError, TargetError
from fslab.integrity_words import FAULTS, KIND, REGIONS
from fslab.kinds.base import Kind, RunContext, RunStatus
from fslab.study.problems import Problem, where
from fslab.study.workload import NAME_PATTERN, Param, SweepSpec, Value
from fslab.targets._proc import run as run_tool
from fslab.targets._proc import which
from fslab.targets.extents import Place, file_extents, inode_places, places
from fslab.targets.inject import Write, inject, read_at
from fslab.targets.journal import Journal, undo
from fslab.targets.mount import _about, _kmsg_open, _kmsg_read, mount, mounts_at, umount
from fslab.targets.system import DOCTOR_HINT

if TYPE_CHECKING:
    from fslab.study.model import Study
    from fslab.study.plan import Plan, Point
    from fslab.targets.provision import Provisioned
    from fslab.targets.spec import TargetSpec

METADATA_FAULTS = ("bitflip", "zero_block", "random_block")
"""Faults a metadata hit takes (an inode's earlier bytes are not kept to put back)."""
NEEDS_REWRITE = ("lost_write", "misdirected", "torn")
"""Faults that put back a block's earlier content: the file is written twice."""
TOOLS = {
    "ext4": ("filefrag", "debugfs", "dumpe2fs", "e2fsck"),
    "xfs": ("xfs_bmap", "xfs_db", "xfs_repair"),
    "btrfs": ("filefrag", "btrfs", "btrfs-map-logical"),
}
DATA_FILE = "fslab-integrity.dat"
# What the kernel says on every mount and unmount: not about the fault.
_CHATTER = re.compile(
    r"mount|device label|checking UUID tree|using \S+ \S+ checksum|disk space caching|"
    r"enabling|turning on|has skinny extents|Quota mode|flagging fs with big metadata",
    re.I,
)
ALIASES = {"fault": "faults", "size": "file_size"}
"""Other spellings a workload may use -> the study's word (fio's `size`)."""
# Kernel lines that say a file system fixed a bad block from a good copy, or found a bad
# copy (and, the data being good, read another).
_FIXED = re.compile(
    r"read error corrected|fixed up error|repair(ed)? .*(ok|succeeded)|corrected", re.I
)
_NOTICED = re.compile(r"csum failed|checksum verify failed|checksum error|bad tree block", re.I)


def _one_of(allowed: Sequence[str], what: str):  # type: ignore[no-untyped-def]
    def check(v: Param) -> Param:
        for x in v if isinstance(v, list) else [v]:
            if x not in allowed:
                raise ValueError(f"`{x}` is not {what}; allowed: {', '.join(allowed)}")
        return v

    return check


class IntegrityWorkloadSpec(SweepSpec):
    """Faults injected under a file written with the engine's `verify`; lists are sweep
    axes (`faults` above all)."""

    kind: Literal["integrity"]  # integrity_words.KIND
    name: str | None = Field(None, pattern=NAME_PATTERN, max_length=64)
    targets: list[str] | None = Field(None, min_length=1)
    faults: Param = Field(default_factory=lambda: list[str | int | float | bool](FAULTS))
    region: Param = "data"
    file_size: Param = "4MiB"
    bs: Param = "4KiB"
    blocks: Param = 1
    mirrors: Param = "one"
    seed: Param = 1
    scrub: Param = True

    _faults = field_validator("faults")(_one_of(FAULTS, "a fault"))
    _region = field_validator("region")(_one_of(REGIONS, "a region"))
    _mirrors = field_validator("mirrors")(_one_of(("one", "all"), "`one` or `all`"))

    @model_validator(mode="after")
    def _metadata_faults(self) -> IntegrityWorkloadSpec:
        regions = self.region if isinstance(self.region, list) else [self.region]
        faults = self.faults if isinstance(self.faults, list) else [self.faults]
        odd = [str(f) for f in faults if f not in METADATA_FAULTS]
        if "metadata" in regions and odd:
            raise ValueError(
                f'`region = "metadata"` takes the faults {", ".join(METADATA_FAULTS)}, '
                f"not {', '.join(odd)} (an inode's earlier bytes are not kept to put back); "
                "give the metadata hits a workload of their own"
            )
        return self


class IntegrityKind(Kind):
    name = KIND
    spec = IntegrityWorkloadSpec
    aliases = ALIASES
    size_keys = ENTRY.size_keys
    count_keys = ENTRY.count_keys
    footprint_what = "file_size"
    footprint_key = "file_size"

    def normalize(self, key: str, value: Value) -> Value:
        value = super().normalize(key, value)
        if key == "seed" and (isinstance(value, bool) or not isinstance(value, int)):
            raise ValueError(f"{value!r} is not a whole number")
        return value

    def label(self, point: Point) -> str:
        """`btrfs-raid1 integrity bitflip data x1`."""
        p = point.params
        mirrors = " all mirrors" if p.get("mirrors") == "all" else ""
        return (f"{point.target.name} {point.workload} {p.get('faults')} {p.get('region')} "
                f"x{p.get('blocks')}{mirrors}")  # fmt: skip

    def engine_jobs(self, point: Point, directory: Path) -> list[dict[str, Any]]:
        """The test file's write and read back, for the engine to check at plan time (a
        trial runs them itself, between its other steps)."""
        p = point.params
        bs, size = int(str(p["bs"])), int(str(p["file_size"]))
        state = directory / "verify.state"
        return [verify_job(rw, directory / DATA_FILE, bs, size, state) for rw in ("write", "read")]

    def estimate_s(self, point: Point) -> float:
        size = int(point.params.get("file_size", 0) or 0)
        return 4.0 + 3 * size / (200 << 20)

    def footprints(self, study: Study, point: Point) -> list[tuple[TargetSpec, int | None]]:
        size = point.params.get("file_size")
        return [(point.target, size if isinstance(size, int) else None)]

    def machine_problems(self, plan: Plan, place: str, workdir: Path) -> list[Problem]:
        """Loop targets only (faults go into fslab's own images), made afresh per run,
        unencrypted and uncompressed; the mapping tools of each file system; root."""
        study = plan.study
        out: list[Problem] = []
        seen: set[tuple[int, str]] = set()
        for wi, w in enumerate(study.workload):
            if w.kind != self.name:
                continue
            names = w.targets or [t.name for t in study.target]
            for t in study.target:
                if t.name not in names or (wi, t.name) in seen:
                    continue
                seen.add((wi, t.name))
                at = where(study, "workload", wi, place=place)
                why = _target_refusal(t)
                if why:
                    out.append(Problem(at, why, hint="give the integrity workload loop "
                                       "targets (`loop = { size = \"256MiB\" }`), or `targets = "
                                       "[...]` without this one"))  # fmt: skip
                    continue
                missing = [x for x in TOOLS.get(str(t.fs), ()) if which(x) is None]
                if missing:
                    out.append(Problem(at, f"target `{t.name}` needs {', '.join(missing)} to "
                                       "map the file's blocks and check the file system",
                                       hint="install e2fsprogs, xfsprogs and btrfs-progs "
                                       f"(scripts/setup does); {DOCTOR_HINT}"))  # fmt: skip
            if study.reuse:
                out.append(Problem(where(study, "reuse", place=place),
                                   "integrity workloads damage their file system: each run "
                                   "needs a fresh one, and `reuse = true` keeps targets",
                                   hint="remove `reuse`, or run the integrity workload in a "
                                   "study of its own"))  # fmt: skip
        if any(w.kind == self.name for w in study.workload) and os.geteuid() != 0:
            out.append(Problem(place, "integrity workloads unmount, inject and mount again: "
                               "they need root", hint="run fslab as root (sudo)"))  # fmt: skip
        return out

    def plan_notes(self, points: list[Point]) -> list[str]:
        targets = ", ".join(dict.fromkeys(p.target.name for p in points))
        return [
            f"integrity: on {targets}, each run writes a verified test file, unmounts, writes "
            "its fault into the target's own loop images (only those fslab made for the run, "
            "journaled, never while mounted), mounts and reads back, then checks the file "
            "system (btrfs scrub, e2fsck -n, xfs_repair -n): the images are deleted after it"
        ]

    def run(self, ctx: RunContext, run_id: int, point: Point, prov: Provisioned) -> RunStatus:
        start = time.monotonic()
        ctx.db.set_effective(run_id, prov.effective)
        trial = Trial(ctx, run_id, point, prov)
        detail = trial.run()
        outcome, repaired_by = classify(detail)
        detail["outcome"] = outcome
        ctx.db.add_integrity(
            run_id,
            fault=str(point.params["faults"]),
            region=str(point.params["region"]),
            outcome=outcome,
            errno=first_errno(detail),
            repaired_by=repaired_by,
            detail=detail,
        )
        ctx.db.finish_run(
            run_id, "ok", engine_json=json.dumps(detail, default=str),
            runtime_s=time.monotonic() - start,
        )  # fmt: skip
        return "ok", None


def verify_job(rw: str, data: Path, bs: int, size: int, state: Path) -> dict[str, Any]:
    """The engine job that writes (`rw = "write"`) or reads back the test file with
    `verify`: what a trial runs, and what `fslab plan` has the engine check."""
    job: dict[str, Any] = {
        "kind": "block", "name": "integrity", "filename": str(data), "rw": rw,
        "bs": bs, "size": size, "io_size": size, "ioengine": "sync",
        "direct": False, "verify": True, "verify_state": str(state),
    }  # fmt: skip
    if rw == "write":
        job["end_fsync"] = True
    return job


def _target_refusal(t: TargetSpec) -> str | None:
    if t.loop is None or t.fs is None:
        what = "a device" if t.device else "a directory"
        return (f"target `{t.name}` is {what}: fslab injects faults only into loop images "
                "it made itself, never into a device or directory it did not create")  # fmt: skip
    if t.encryption:
        return (f"target `{t.name}` is encrypted: integrity runs on encrypted targets are "
                "not supported yet")  # fmt: skip
    if t.fs not in TOOLS:
        return (f"target `{t.name}` is {t.fs}: fslab maps a file's blocks on ext4, xfs and "
                "btrfs only, so it cannot aim a fault at this file system")  # fmt: skip
    if t.compression or any("compress" in o for o in t.mount_options):
        return (f"target `{t.name}` mounts with compression: a compressed extent's bytes "
                "in the image are not the file's: a fault there tests something else")  # fmt: skip
    return None


# --------------------------------------------------------------------------- the trial


class Trial:
    """One integrity run: write, map, unmount, inject, mount, read, check, read."""

    def __init__(self, ctx: RunContext, run_id: int, point: Point, prov: Provisioned) -> None:
        self.ctx, self.point, self.prov = ctx, point, prov
        self.journal: Journal = ctx.db.journal(run_id)
        p = point.params
        self.fault, self.region = str(p["faults"]), str(p["region"])
        self.bs, self.size = int(str(p["bs"])), int(str(p["file_size"]))
        self.blocks = int(str(p["blocks"]))
        self.all_mirrors = p.get("mirrors") == "all"
        self.rng = random.Random(f"{p.get('seed', 1)}:{self.fault}:{self.region}")
        self.fs = str(prov.effective["fs"])
        assert prov.mountpoint is not None and prov.owner is not None
        self.mnt = prov.mountpoint
        self.data = prov.workdir / DATA_FILE
        self.scratch: list[tuple[int, Path]] = []

    # -- files of fslab's own beside the images, journaled like them ---------------------

    def _scratch(self, name: str) -> Path:
        assert self.prov.owner is not None
        path = self.prov.owner.path / name
        entry = self.journal.record("image", str(path), self.prov.owner.details())
        self.scratch.append((entry, path))
        return path

    @contextmanager
    def _cleaned(self) -> Iterator[None]:
        try:
            yield
        finally:
            assert self.prov.owner is not None
            for entry, path in reversed(self.scratch):
                undo("image", str(path), self.prov.owner.details())
                self.journal.undone(entry)

    # -- the steps ------------------------------------------------------------------------

    def _job(self, rw: str, state: Path) -> dict[str, Any]:
        return verify_job(rw, self.data, self.bs, self.size, state)

    def _write(self, state: Path) -> dict[str, Any]:
        result = run_job(self._job("write", state), engine=self.ctx.engine)
        if result.exit_code != 0 or result.report.verify is None:
            raise FslabError(
                f"writing the test file failed: {result.stderr.strip() or result.report.status}"
            )
        return {"blocks_written": result.report.verify.blocks_written}

    def _read(self, state: Path) -> dict[str, Any]:
        """The file read back with `verify`: block counts, or the error that stopped it."""
        try:
            fd = os.open(self.data, os.O_RDONLY | os.O_CLOEXEC)
            os.close(fd)
        except OSError as e:
            return {"errno": e.errno, "error": f"open: {e.strerror} ({_errname(e.errno)})"}
        try:
            result = run_job(self._job("read", state), engine=self.ctx.engine)
        except (JobError, EngineError) as e:
            return {"errno": _errno_in(str(e)), "error": str(e)}
        v = result.report.verify
        out: dict[str, Any] = {"exit_code": result.exit_code}
        if v is not None:
            out |= {k: getattr(v, k) for k in ("blocks_read", "good", "corrupt", "misplaced",
                                               "stale", "unreadable", "unwritten")}  # fmt: skip
            out["bad"] = [b.model_dump() for b in v.bad]
            errs = [b.errno for b in v.bad if b.errno]
            if errs:
                out["errno"] = errs[0]
        if result.exit_code != 0:
            out["error"] = result.stderr.strip()[-500:] or result.report.status
            for err in result.report.errors:
                if err.errno:
                    out.setdefault("errno", err.errno)
        return out

    def _mount(self) -> str | None:
        """Mounts the target again as it was made; the failure, if it will not."""
        argv = str(self.prov.effective["mount_command"]).split()
        opts = argv[argv.index("-o") + 1].split(",") if "-o" in argv else []
        try:
            mount(self.prov.devices[0], self.mnt, self.fs, opts)
        except TargetError as e:
            return e.message
        return None

    def _check(self, mounted: bool) -> dict[str, Any]:
        """The file system's own look: btrfs scrub (mounted; it repairs from a good
        copy), e2fsck -n / xfs_repair -n / btrfs check --readonly (unmounted; they only
        look). Mounts again afterwards where it can."""
        dev = self.prov.devices[0]
        if self.fs == "btrfs" and mounted:
            proc = run_tool(["btrfs", "scrub", "start", "-B", str(self.mnt)], check=False)
            text = proc.stdout + proc.stderr
            return {"tool": "btrfs scrub", "exit_code": proc.returncode, **parse_scrub(text),
                    "output": text.strip()[-2000:]}  # fmt: skip
        umount(self.mnt)
        argv = {
            "ext4": ["e2fsck", "-fn", dev],
            "xfs": ["xfs_repair", "-n", dev],
            "btrfs": ["btrfs", "check", "--readonly", dev],
        }[self.fs]
        proc = run_tool(argv, check=False)
        out = {"tool": " ".join(argv[:-1]), "exit_code": proc.returncode,
               "errors": proc.returncode != 0, "corrected": 0,
               "output": (proc.stdout + proc.stderr).strip()[-2000:]}  # fmt: skip
        failed = self._mount()
        if failed:
            out["mount_error"] = failed
        return out

    def _device_stats(self) -> dict[str, int]:
        if self.fs != "btrfs":
            return {}
        proc = run_tool(["btrfs", "device", "stats", str(self.mnt)], check=False)
        totals: dict[str, int] = {}
        for m in re.finditer(r"\]\.(\w+)\s+(\d+)", proc.stdout):
            totals[m.group(1)] = totals.get(m.group(1), 0) + int(m.group(2))
        return totals

    def run(self) -> dict[str, Any]:
        detail: dict[str, Any] = {"fault": self.fault, "region": self.region, "fs": self.fs,
                                  "bs": self.bs, "file_size": self.size, "blocks": self.blocks,
                                  "mirrors": "all" if self.all_mirrors else "one"}  # fmt: skip
        with self._cleaned():
            state = self._scratch("verify.state")
            self.ctx.live(f"write {self.size >> 10} KiB with verify")
            detail["write"] = self._write(state)
            before: dict[Path, Path] = {}
            if self.fault in NEEDS_REWRITE:
                os.sync()
                for i, img in enumerate(self.prov.images):
                    before[img] = self._scratch(f"before-{i}.img")
                    # what each place held before the rewrite (sparse: the image mostly is)
                    run_tool(["cp", "--sparse=always", str(img), str(before[img])])
                detail["rewrite"] = self._write(state)
            # An access time after the last write: `relatime` then leaves the inode alone
            # when the file is read back. Otherwise the read itself rewrites the inode
            # (copy-on-write moves a btrfs leaf elsewhere), and a fault in the copy no one
            # read is thrown away unseen: which mirror a read picks would decide it.
            st = self.data.stat()
            os.utime(self.data, ns=(st.st_mtime_ns + 10**9, st.st_mtime_ns))
            extents = file_extents(self.data, self.fs)
            ino = st.st_ino
            rel = "/" + str(self.data.relative_to(self.mnt))
            kmsg = _kmsg_open()
            try:
                umount(self.mnt)
                writes = self._fault_writes(extents, ino, rel, before)
                detail["injected"] = inject(self.prov, writes, self.journal)
                drop_caches()
                failed = self._mount()
                if failed:
                    detail["first_read"] = {"error": f"mount: {failed}", "errno": _errno_in(failed)}
                else:
                    self.ctx.live(f"read back after {self.fault}")
                    detail["first_read"] = self._read(state)
                    detail["rewritten_after_read"] = _rewritten(detail["injected"])
                if self.point.params.get("scrub", True):
                    detail["check"] = self._check(mounted=not failed)
                    detail["rewritten_after_check"] = _rewritten(detail["injected"])
                    if "mount_error" not in detail["check"]:
                        drop_caches()
                        detail["second_read"] = self._read(state)
                if mounts_at(self.mnt):
                    detail["device_stats"] = self._device_stats()
            finally:
                lines = _kmsg_read(kmsg) if kmsg is not None else []
                if kmsg is not None:
                    os.close(kmsg)
            ours = [x for d in self.prov.devices for x in _about(lines, d, self.fs)
                    if not _CHATTER.search(x)]  # fmt: skip
            detail["kernel"] = list(dict.fromkeys(ours))[:50]
        return detail

    # -- the faults -----------------------------------------------------------------------

    def _copies(self, ps: list[Place]) -> list[Place]:
        return ps if self.all_mirrors else [p for p in ps if p.mirror == 1]

    def _fault_writes(
        self, extents: Any, ino: int, rel: str, before: dict[Path, Path]
    ) -> list[Write]:
        devs, imgs = self.prov.devices, self.prov.images
        if self.region == "metadata":
            targets = self._copies(inode_places(self.fs, ino, rel, devs, imgs))
            return [self._damage(p, f"inode {ino}") for p in targets]
        nblocks = self.size // self.bs
        want = self.blocks * (2 if self.fault == "misdirected" else 1)
        chosen = self.rng.sample(range(nblocks), k=min(want, nblocks))

        def at(block: int) -> list[Place]:
            return places(extents, block * self.bs, self.bs, self.fs, devs, imgs)

        writes: list[Write] = []
        if self.fault == "misdirected":
            for a, b in zip(chosen[0::2], chosen[1::2], strict=False):
                a_places, b_places = at(a), at(b)
                content = b"".join(read_at(p.image, p.offset, p.length)
                                   for p in a_places if p.mirror == 1)  # fmt: skip
                for p in self._copies(a_places):  # the write meant for A never reached A...
                    old = read_at(before[p.image], p.offset, p.length)
                    writes.append(Write(p.image, p.offset, old, f"block {a}: lost (misdirected)"))
                for p in self._copies(b_places):  # ...it overwrote B
                    lo = p.file_offset - b * self.bs
                    writes.append(Write(p.image, p.offset, content[lo:lo + p.length],
                                        f"block {b}: block {a}'s data"))  # fmt: skip
            return writes
        for block in chosen:
            for p in self._copies(at(block)):
                writes.append(self._block_fault(p, block, before))
        return writes

    def _damage(self, p: Place, what: str) -> Write:
        """bitflip / zero_block / random_block on one place."""
        if self.fault == "bitflip":
            data = bytearray(read_at(p.image, p.offset, p.length))
            byte, bit = self.rng.randrange(p.length), self.rng.randrange(8)
            data[byte] ^= 1 << bit
            return Write(
                p.image, p.offset, bytes(data), f"{what}: bit {bit} of byte {byte} flipped"
            )
        if self.fault == "zero_block":
            return Write(p.image, p.offset, bytes(p.length), f"{what}: zeroed")
        return Write(p.image, p.offset, self.rng.randbytes(p.length), f"{what}: random bytes")

    def _block_fault(self, p: Place, block: int, before: dict[Path, Path]) -> Write:
        what = f"block {block} (file offset {block * self.bs}, mirror {p.mirror})"
        if self.fault in METADATA_FAULTS:
            return self._damage(p, what)
        old = read_at(before[p.image], p.offset, p.length)
        if self.fault == "lost_write":
            return Write(p.image, p.offset, old, f"{what}: the rewrite lost")
        # torn: the first half of the block new, the rest as it was before the rewrite
        new = read_at(p.image, p.offset, p.length)
        half = block * self.bs + self.bs // 2 - p.file_offset
        cut = max(0, min(p.length, half))
        return Write(p.image, p.offset, new[:cut] + old[cut:], f"{what}: torn after half")


# --------------------------------------------------------------------------- outcome


def parse_scrub(text: str) -> dict[str, Any]:
    """`btrfs scrub start -B`'s summary: errors found, corrected, uncorrectable."""
    if re.search(r"no errors found", text):
        return {"errors": False, "corrected": 0, "uncorrectable": 0}
    corrected = re.search(r"Corrected:\s*(\d+)", text)
    uncorrectable = re.search(r"Uncorrectable:\s*(\d+)", text)
    return {
        "errors": bool(re.search(r"Error summary:(?!\s*no errors)", text)) or
        bool(re.search(r"errors? (detected|found)", text, re.I)),
        "corrected": int(corrected.group(1)) if corrected else 0,
        "uncorrectable": int(uncorrectable.group(1)) if uncorrectable else 0,
    }  # fmt: skip


def _read_state(r: dict[str, Any] | None) -> str:
    """What a read returned: `good`, `wrong` (corrupt or misplaced data without an
    error), `stale`, `error` (an error instead of data), or `none` (not read)."""
    if not r:
        return "none"
    if r.get("corrupt") or r.get("misplaced"):
        return "wrong"
    if r.get("stale"):
        return "stale"
    if r.get("unreadable") or r.get("errno") or r.get("error"):
        return "error"
    return "good"


def _rewritten(injected: list[dict[str, Any]]) -> int:
    """How many injected places no longer hold the fault: the file system wrote a good
    copy over them (the proof of a repair that needs no kernel message, which the kernel
    rate-limits). Synced first: a repair is written through the loop device."""
    os.sync()
    changed = 0
    for w in injected:
        now = read_at(Path(w["image"]), int(w["offset"]), int(w["length"]))
        changed += hashlib.sha256(now).hexdigest() != w["after_sha256"]
    return changed


def classify(detail: dict[str, Any]) -> tuple[str, str | None]:
    """The outcome of a trial, and what repaired it (`read`, `scrub`) if anything did.
    Wrong data returned without an error is silent whatever else happened to other
    blocks: the application got it. A repair is seen in the images themselves (a fault
    the file system overwrote with a good copy), in scrub's `Corrected`, in btrfs's
    corruption counters, or in the kernel's words; the images are the sure sign (the
    kernel rate-limits its messages, and counts no metadata repair)."""
    first = _read_state(detail.get("first_read"))
    second = _read_state(detail.get("second_read"))
    check = detail.get("check") or {}
    by_read = detail.get("rewritten_after_read", 0) > 0
    by_check = check.get("corrected", 0) > 0 or (
        detail.get("rewritten_after_check", 0) > detail.get("rewritten_after_read", 0)
    )
    if first == "wrong":
        return "silent_wrong", None
    if first == "stale":
        return "silent_stale", None
    if first == "error":
        if second == "good" and by_check:
            return "repaired", "scrub"
        return "detected", None
    stats = detail.get("device_stats") or {}
    words = any(_FIXED.search(x) or _NOTICED.search(x) for x in detail.get("kernel", []))
    if by_read:
        return "repaired", "read"
    if by_check:
        return "repaired", "scrub"
    if words or stats.get("corruption_errs", 0) > 0:
        return "repaired", "read"
    return "unaffected", None


def first_errno(detail: dict[str, Any]) -> int | None:
    for key in ("first_read", "second_read"):
        e = (detail.get(key) or {}).get("errno")
        if isinstance(e, int):
            return e
    return None


def _errname(code: int | None) -> str:
    return errnos.errorcode.get(code or 0, "?")


def _errno_in(text: str) -> int | None:
    """The errno a message names (`Input/output error`, `(os error 5)`)."""
    m = re.search(r"os error (\d+)", text)
    if m:
        return int(m.group(1))
    for code in (errnos.EIO, errnos.EBADMSG, errnos.EUCLEAN, errnos.ENOENT):
        if os.strerror(code).lower() in text.lower():
            return code
    return None


INTEGRITY = IntegrityKind()
