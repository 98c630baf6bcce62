"""Making a target real (`provision`), saying beforehand what that will do
(`side_effects`), and taking it down again (`teardown`).

Every side effect is recorded in the journal before it happens. If provisioning fails
half-way (an exception, Ctrl-C) what was done is undone at once, newest first; if the
process dies (SIGKILL) the journal's open entries tell `fslab cleanup` what to undo.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import re
import secrets
import shlex
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from fslab.errors import FslabError, TargetError
from fslab.targets import fscrypt, fstoken, gate, layers, loop, mountopts, scheduler
from fslab.targets._proc import run
from fslab.targets.families import FAMILIES
from fslab.targets.fstoken import Made
from fslab.targets.journal import Journal, JournalRef, fs_uuid, make_dir, undo, undo_refs
from fslab.targets.mkfs import (
    label_for,
    loop_image_size,
    mkfs_argv,
    mount_options,
    name_argv,
    new_uuid,
)
from fslab.targets.mount import MountInfo, fuse_servers, mount, mount_containing, mounts_at
from fslab.targets.owner import MARKER, Owned
from fslab.targets.spec import TargetSpec
from fslab.targets.system import System, check
from fslab.units import format_bytes, parse_size

ENCRYPTED_DIR = "encrypted"
_ATTACH_TRIES = 5


@dataclass(frozen=True)
class Provisioned:
    """A target ready for workloads."""

    name: str
    workdir: Path
    """The directory jobs run in: inside the mount (the encrypted directory for
    fscrypt), or the directory fslab made inside a `dir` target."""
    mountpoint: Path | None
    devices: tuple[str, ...]
    images: tuple[Path, ...]
    effective: dict[str, Any] = field(hash=False)
    """What is really in effect: mkfs command, mount options, features, profiles, block
    sizes, tool versions, kernel, and the tools' raw output under `raw`."""
    entries: tuple[JournalRef, ...] = field(default=(), compare=False, repr=False)
    """The journal entries made, oldest first; `teardown` undoes them newest first."""
    owner: Owned | None = field(default=None, compare=False, repr=False)
    """The directory fslab made for the target: what runs in it (a database server)
    journals its side effects under it."""
    servers: tuple[int, ...] = field(default=(), compare=False, repr=False)
    """Processes that serve the file system (ntfs-3g's FUSE daemon): their CPU is the
    workload's, not a neighbour's."""


# --------------------------------------------------------------------------- layout


@dataclass(frozen=True)
class _Layout:
    kind: Literal["loop", "device", "dir"]
    base: Path | None
    images: tuple[Path, ...] = ()
    image_size: int = 0
    direct_io: bool = False
    devices: tuple[str, ...] = ()
    mountpoint: Path | None = None


def _layout(spec: TargetSpec, workdir: Path, scale: float) -> _Layout:
    if spec.dir is not None:
        return _Layout("dir", None)
    base = Path(os.path.realpath(workdir)) / spec.name
    mnt = base / "mnt"
    if spec.device is not None:
        return _Layout("device", base, devices=tuple(spec.device), mountpoint=mnt)
    lp = spec.effective_loop
    assert lp is not None
    images = tuple(
        base / (f"image{i}.img" if lp.count > 1 else "image.img") for i in range(lp.count)
    )
    return _Layout(
        "loop",
        base,
        images=images,
        image_size=loop_image_size(spec, scale),
        direct_io=lp.direct_io,
        devices=tuple(f"<loop{i}>" for i in range(lp.count)),
        mountpoint=mnt,
    )


def _mount_options(spec: TargetSpec, devices: tuple[str, ...]) -> list[str]:
    opts = mount_options(spec)
    if spec.fs == "btrfs" and len(devices) > 1:
        # Name every member: with no udev to run `btrfs device scan`, the kernel may not
        # know the others.
        opts = [f"device={d}" for d in devices] + opts
    return opts


def side_effects(spec: TargetSpec, workdir: Path, scale: float = 1.0) -> list[str]:
    """What `provision` will do for `spec`, in words, for `fslab plan`. Touches nothing."""
    lay = _layout(spec, workdir, scale)
    if lay.kind == "dir":
        return [
            f"create a directory {Path(str(spec.dir)) / f'fslab-{spec.name}-XXXXXXXX'} for "
            f"the workloads (with fslab's marker file {MARKER}), and delete it with "
            f"everything in it afterwards (nothing else in {spec.dir} is touched)"
        ]
    assert lay.base is not None and lay.mountpoint is not None and spec.fs is not None
    out = [f"create the directory {lay.base} (with fslab's marker file {MARKER})"]
    if lay.kind == "loop":
        dio = " --direct-io=on" if lay.direct_io else ""
        for img, dev in zip(lay.images, lay.devices, strict=True):
            out.append(f"create the sparse image {img} ({format_bytes(lay.image_size)})")
            out.append(f"attach it as a loop device: `losetup{dio} {dev} {img}`")
    else:
        for dev in lay.devices:
            size = gate.device_size(dev)
            out.append(
                f"FORMAT the device {dev}"
                + (f" ({format_bytes(size)})" if size is not None else "")
                + ", after the safety gate passes: everything on it is lost"
            )
    size = lay.image_size if lay.kind == "loop" else gate.device_size(lay.devices[0])
    fam = FAMILIES[spec.fs]
    fs_devices = lay.devices
    if spec.raid is not None:
        md = f"/dev/md/fslab-{spec.name}-<tag>"
        chunk = parse_size(spec.raid_chunk) if spec.raid_chunk is not None else None
        argv = layers.md_create_argv(md, spec.raid, lay.devices, chunk)
        out.append(f"make an md {spec.raid} of them: `{shlex.join(argv)}`")
        fs_devices = (md,)
        size = None
    elif spec.lvm is not None:
        vg = f"fslab-{spec.name}-<tag>"
        stripe = parse_size(spec.lvm_stripe) if spec.lvm_stripe is not None else None
        argvs = layers.lvm_create_argvs(vg, lay.devices, spec.lvm, stripe)
        out.append(
            f"make one {spec.lvm} LVM volume of them: "
            + ", ".join(f"`{shlex.join(a)}`" for a in argvs)
        )
        fs_devices = (f"/dev/{vg}/{layers.LV_NAME}",)
        size = None
    if spec.encryption == "dm-crypt":
        out += _luks_words(spec, lay.base, fs_devices)
        fs_devices = tuple(_mapping(spec.name, "<tag>", i) for i in range(len(fs_devices)))
        size = size - LUKS_HEADER_BYTES if size is not None else None
    argv = mkfs_argv(spec, fs_devices, size, uuid="<new uuid>")
    out.append(f"make the file system: `{shlex.join(argv)}`")
    for dev in fs_devices:
        if (named := name_argv(spec.fs, dev, "<new serial>")) is not None:
            out.append(f"name it: `{shlex.join(named)}`")
    if spec.scheduler is not None:
        now = [str(scheduler.read(d)[1]) for d in lay.devices] if lay.kind == "device" else []
        out.append(
            f"set the I/O scheduler of {', '.join(lay.devices)} to {spec.scheduler}"
            + (f" (now {', '.join(now)})" if now else "")
        )
    opts = _mount_options(spec, lay.devices)
    mount_cmd = ["mount", "-t", fam.mount_type, *(["-o", ",".join(opts)] if opts else [])]
    out.append(
        f"create {lay.mountpoint} and mount it there: "
        f"`{shlex.join([*mount_cmd, fs_devices[0], str(lay.mountpoint)])}`"
    )
    if spec.encryption == "fscrypt":
        out.append(
            f"add a random 512-bit key to the file system's keyring and encrypt "
            f"{lay.mountpoint / ENCRYPTED_DIR} with it (fscrypt v2 policy, AES-256-XTS "
            f"contents, AES-256-CTS names); the workloads run there"
        )
    undo_words = ["unmount", "remove the directories"]
    if spec.encryption == "dm-crypt":
        undo_words.insert(1, "close the LUKS mappings and delete the key")
    if spec.raid is not None:
        undo_words.insert(undo_words.index("remove the directories"), "stop the md array")
    if spec.lvm is not None:
        undo_words.insert(
            undo_words.index("remove the directories"), "deactivate and remove the volume group"
        )
    if spec.encryption == "fscrypt":
        undo_words.insert(0, "remove the key")
    if spec.scheduler is not None:
        undo_words.insert(undo_words.index("unmount") + 1, "put the I/O scheduler back")
    if lay.kind == "loop":
        undo_words[-1:-1] = ["detach the loop devices", "delete the images"]
    out.append(f"afterwards: {', '.join(undo_words)}")
    return out


# --------------------------------------------------------------------------- provision


class _Recorder:
    """A journal that passes each entry on and remembers it for teardown (`refs`)."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        self.refs: list[JournalRef] = []

    def record(self, action: str, subject: str, details: dict[str, Any]) -> int:
        entry = self.journal.record(action, subject, details)
        self.refs.append(JournalRef(entry, action, subject, dict(details)))
        return entry

    def done(self, entry: int) -> None:
        self.journal.done(entry)

    def undone(self, entry: int) -> None:
        """The step `entry` was reverted (or never happened): nothing left to tear down."""
        self.journal.undone(entry)
        self.refs = [r for r in self.refs if r.id != entry]

    @contextlib.contextmanager
    def step(self, action: str, subject: str, details: dict[str, Any]) -> Iterator[int]:
        """Journals the side effect done in the block; done when the block ends
        normally, left pending (and undone by the caller) when it raises."""
        entry = self.record(action, subject, details)
        yield entry
        self.done(entry)


def _fail(spec: TargetSpec, problems: list[str]) -> TargetError:
    if len(problems) == 1:
        return TargetError(problems[0])
    return TargetError(
        f"target `{spec.name}` cannot be provisioned here ({len(problems)} problems)",
        hint="\n".join(problems),
    )


def provision(
    spec: TargetSpec,
    workdir: Path,
    journal: Journal,
    scale: float = 1.0,
    *,
    force: bool = False,
    confirmed: Collection[str] = frozenset(),
    made: Made | None = None,
    system: System | None = None,
) -> Provisioned:
    """Makes the target `spec` under `workdir` (images, loop devices, mkfs, mount; or a
    directory inside a `dir` target) and returns where workloads run and what is in
    effect. `force`, `confirmed` and `made` (the file systems fslab made: `fstoken.Made`)
    are the safety gate's (device targets only)."""
    system = system or System.probe()
    made = made or {}
    if spec.device is not None and system.is_root:
        for dev in spec.device:  # the gate's refusal, as a SafetyError, comes first
            gate.check_device(dev, force=force, confirmed=confirmed, made=made, members=spec.device)
    problems = check(spec, system, scale)
    if problems:
        raise _fail(spec, problems)
    if spec.dir is None and not Path(workdir).is_dir():
        raise TargetError(
            f"the work directory {workdir} does not exist",
            hint="create it first (`fslab run` makes it, and removes it afterwards)",
        )
    rec = _Recorder(journal)
    try:
        if spec.dir is not None:
            return _provision_dir(spec, rec, system)
        lay = _layout(spec, workdir, scale)
        return _provision_fs(spec, lay, rec, system, force, confirmed, made)
    except BaseException as e:
        try:
            undo_refs(rec.refs, journal)
        except FslabError as again:
            if isinstance(e, FslabError):
                e.hint = "\n".join(
                    x for x in (e.hint, f"and undoing what was done failed: {again}") if x
                )
        raise


def teardown(p: Provisioned, journal: Journal) -> None:
    """Undoes everything `provision` did for `p`, newest first. On a failure (a mount
    still busy) it stops and raises `TargetError`; the remaining entries stay open in
    the journal for `fslab cleanup`."""
    undo_refs(p.entries, journal)


def _provision_dir(spec: TargetSpec, rec: _Recorder, system: System) -> Provisioned:
    parent = Path(os.path.realpath(str(spec.dir)))
    owned, _ = make_dir(rec, parent / f"fslab-{spec.name}-{secrets.token_hex(4)}", recursive=True)
    path = owned.path
    eff: dict[str, Any] = {"target": spec.name, "kind": "dir", "dir": str(parent)}
    eff |= _common(system)
    m = mount_containing(path)
    if m is not None:
        eff["fs"] = m.fstype
        eff["mount"] = _mount_record(m)
        if m.source.startswith("/dev/") and scheduler.queue_dir(m.source) is not None:
            eff["queue"] = [scheduler.facts(m.source)]
    st = os.statvfs(path)
    eff["statvfs"] = {"bsize": st.f_bsize, "frsize": st.f_frsize, "blocks": st.f_blocks}
    eff["block_size"] = st.f_bsize
    return Provisioned(spec.name, path, None, (), (), eff, tuple(rec.refs), owned)


def _attach(rec: _Recorder, image: Path, direct_io: bool, owned: Owned) -> str:
    """Attaches `image` to a free loop device. The device is chosen (`losetup --find`)
    and journaled before the attach, which is then made to exactly that device; if
    another program took it meanwhile, the next free one is tried."""
    last: TargetError | None = None
    for _ in range(_ATTACH_TRIES):
        dev = loop.next_free()
        details = {"image": str(image), "direct_io": direct_io, **owned.details()}
        entry = rec.record("loop", dev, details)
        try:
            loop.attach(dev, image, direct_io=direct_io)
        except TargetError as e:
            undo("loop", dev, details)
            rec.undone(entry)
            last = e
            continue
        rec.done(entry)
        return dev
    assert last is not None
    raise last


def _provision_fs(
    spec: TargetSpec,
    lay: _Layout,
    rec: _Recorder,
    system: System,
    force: bool,
    confirmed: Collection[str],
    made: Made,
) -> Provisioned:
    fs = spec.fs
    assert fs is not None and lay.base is not None and lay.mountpoint is not None
    owned, _ = make_dir(rec, lay.base)
    mine = owned.details()

    devices: list[str] = []
    if lay.kind == "loop":
        for image in lay.images:
            with rec.step("image", str(image), {"size": lay.image_size, **mine}):
                fd = os.open(image, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
                try:
                    os.ftruncate(fd, lay.image_size)
                finally:
                    os.close(fd)
            dev = _attach(rec, image, lay.direct_io, owned)
            devices.append(dev)
            if lay.direct_io and loop.direct_io(dev) is not True:
                holder = mount_containing(image)
                raise TargetError(
                    f"target `{spec.name}`: `loop.direct_io = true` is not in effect on "
                    f"{dev}: the loop driver cannot do direct I/O to {image}"
                    + (f" (on {holder.fstype})" if holder else ""),
                    hint="put the work directory on a disk file system (ext4, xfs), not "
                    "tmpfs or overlay, or set `loop.direct_io = false`",
                )
    else:
        devices = list(lay.devices)
        # The last look before formatting: nothing may have claimed it since `check`.
        for dev in devices:
            gate.check_device(dev, force=force, confirmed=confirmed, made=made, members=devices)

    size = lay.image_size if lay.kind == "loop" else gate.device_size(devices[0])
    physical = list(devices)
    # md or LVM: one device over all of them.
    spanned: dict[str, Any] | None = None
    if spec.raid is not None:
        devices, spanned = _create_md(spec, rec, physical, mine)
        size = gate.device_size(devices[0])
    elif spec.lvm is not None:
        devices, spanned = _create_lv(spec, rec, physical, mine)
        size = gate.device_size(devices[0])
    crypt: dict[str, Any] | None = None
    if spec.encryption == "dm-crypt":
        devices, crypt = _open_luks(spec, rec, devices, lay.base, mine)
        # LUKS2's header (16 MiB) comes off each device.
        size = size - LUKS_HEADER_BYTES if size is not None else None
    # fslab names the file system: the UUID is how cleanup knows a mount, and with the
    # token written into it below, how a later run knows a device holds the file system
    # fslab made (fstoken; a UUID or a label proves nothing alone).
    uuid = new_uuid(fs)
    argv = mkfs_argv(spec, devices, size, uuid=uuid)
    mkfs_details: dict[str, Any] = {"argv": argv, "uuid": uuid, "kind": lay.kind}
    token = None
    if lay.kind == "device":
        token, mkfs_details["token_sha256"] = fstoken.new()
    with rec.step("mkfs", ",".join(devices), mkfs_details):
        mkfs_out = run(argv)
        for dev in devices:
            if (named := name_argv(fs, dev, uuid)) is not None:
                run(named)
    for dev in devices:
        if (found := fs_uuid(dev)) is None or found.upper() != uuid.upper():
            raise TargetError(
                f"target `{spec.name}`: {dev} has the UUID {found} after mkfs, not {uuid} "
                f"as fslab asked",
                hint="leave the UUID to fslab: remove `-U`/`uuid=` from `mkfs_args`",
            )

    if spec.scheduler is not None:
        for dev in physical:
            _set_scheduler(rec, spec.scheduler, dev, {"uuid": uuid, **mine})

    mnt = lay.mountpoint
    with rec.step("mkdir", str(mnt), mine):
        mnt.mkdir()
    opts = _mount_options(spec, tuple(devices))
    where = {"device": devices[0], "devices": devices, "fstype": fs, "uuid": uuid, **mine}
    with rec.step("mount", str(mnt), where):
        mount_argv = mount(devices[0], mnt, FAMILIES[fs].mount_type, opts)
    if token is not None:
        fstoken.write(mnt, token)

    workdir = mnt
    encryption: dict[str, Any] | None = None
    if spec.encryption == "fscrypt":
        key = secrets.token_bytes(fscrypt.KEY_BYTES)
        identifier = _key_identifier(key)
        with rec.step("fscrypt_key", str(mnt), {"identifier": identifier, **where}):
            added = fscrypt.add_key(mnt, key)
        if added != identifier:
            fscrypt.remove_key(mnt, added)
            raise TargetError(
                f"the kernel named the fscrypt key {added}, fslab expected {identifier}"
            )
        workdir = mnt / ENCRYPTED_DIR
        workdir.mkdir()  # inside the new file system: it goes with it
        fscrypt.set_policy(workdir, identifier)
        encryption = {"kind": "fscrypt", "directory": str(workdir)}
        encryption |= fscrypt.get_policy(workdir) or {"error": "no policy in effect"}
        # /proc/crypto lists a cipher's driver only once the kernel has made an instance
        # of it (on a fresh boot, no xts(aes) yet): one encrypted file makes it.
        fscrypt.instantiate(workdir)
        for mode_key in ("contents", "filenames"):
            mode = encryption.get(f"{mode_key}_mode")
            if isinstance(mode, str) and (driver := fscrypt.cipher_driver(mode)):
                encryption[f"{mode_key}_driver"] = driver
        encryption["cpu_aes"] = fscrypt.uses_cpu_aes(encryption.get("contents_driver"))
        encryption["direct_io"] = (
            "buffered: ext4 does direct I/O on encrypted files only with `inlinecrypt` "
            "and blk-crypto"
            if system.config("BLK_INLINE_ENCRYPTION") is not True
            else "direct only when mounted with `inlinecrypt`"
        )

    eff: dict[str, Any] = {"target": spec.name, "kind": lay.kind, "fs": fs}
    eff |= _common(system)
    eff["label"] = label_for(fs, spec.name)
    eff["uuid"] = uuid
    eff["devices"] = devices
    if physical != devices:
        eff["physical_devices"] = physical
    eff["mkfs"] = {"argv": argv, "command": shlex.join(argv)}
    eff["mount_command"] = shlex.join(mount_argv)
    eff["queue"] = [scheduler.facts(d) for d in physical]
    if lay.kind == "loop":
        eff["loop"] = [loop.loop_info(d) for d in physical]
        eff["image_size"] = lay.image_size
    infos = mounts_at(mnt)
    if infos:
        eff["mount"] = _mount_record(infos[-1])
        seen = [*infos[-1].options, *infos[-1].super_options]
        eff["mount_settings"] = mountopts.in_effect(fs, seen)
    eff["raw"] = {"mkfs": (mkfs_out.stdout + mkfs_out.stderr).strip()}
    if fs == "ext4":
        _ext4_effective(devices[0], eff)
    elif fs == "xfs":
        _xfs_effective(mnt, eff)
    elif fs == "btrfs":
        _btrfs_effective(mnt, eff)
    else:
        _statvfs_effective(mnt, eff)
    if not FAMILIES[fs].direct_io:
        eff["direct_io"] = (
            f"not honoured: {FAMILIES[fs].title} takes O_DIRECT and serves the I/O through "
            f"the page cache; its numbers measure the Linux driver and the cache"
        )
    eff["encryption"] = encryption or crypt
    if spanned is not None:
        eff["md" if spec.raid is not None else "lvm"] = spanned
    images = lay.images if lay.kind == "loop" else ()
    servers = fuse_servers(mnt) if FAMILIES[fs].mount_tool is not None else ()
    return Provisioned(
        spec.name, workdir, mnt, tuple(devices), images, eff, tuple(rec.refs), owned, servers
    )


LUKS_HEADER_BYTES = 16 << 20
"""LUKS2's default header and key slots, at the start of each device."""


def _create_md(
    spec: TargetSpec, rec: _Recorder, devices: list[str], mine: dict[str, Any]
) -> tuple[list[str], dict[str, Any]]:
    """An md array of `spec.raid` over `devices` at /dev/md/fslab-<target>-<tag>; returns
    it (as the one device the next layer goes on) and what is in effect.

    Unverified: no kernel this project ran on had md (docs/study.md); the command lines
    are tested (`layers`), and `check` lets this run only where md and mdadm are."""
    assert spec.raid is not None
    md_device = f"/dev/md/fslab-{spec.name}-{secrets.token_hex(3)}"
    chunk = parse_size(spec.raid_chunk) if spec.raid_chunk is not None else None
    argv = layers.md_create_argv(md_device, spec.raid, devices, chunk)
    with rec.step("md_create", md_device, {"devices": devices, "argv": argv, **mine}):
        run(argv)
    detail = layers.parse_export(run(layers.md_detail_argv(md_device)).stdout)
    effective: dict[str, Any] = {
        "device": md_device,
        "level": detail.get("MD_LEVEL"),
        "devices": int(detail["MD_DEVICES"]) if "MD_DEVICES" in detail else None,
        "chunk_bytes": chunk,
        "uuid": detail.get("MD_UUID"),
        "metadata": detail.get("MD_METADATA"),
    }
    return [md_device], effective


def _create_lv(
    spec: TargetSpec, rec: _Recorder, devices: list[str], mine: dict[str, Any]
) -> tuple[list[str], dict[str, Any]]:
    """One LVM logical volume over all of `devices` (volume group
    fslab-<target>-<tag>); returns it and what is in effect. Unverified, as `_create_md`."""
    assert spec.lvm is not None
    vg = f"fslab-{spec.name}-{secrets.token_hex(3)}"
    stripe = parse_size(spec.lvm_stripe) if spec.lvm_stripe is not None else None
    argvs = layers.lvm_create_argvs(vg, devices, spec.lvm, stripe)
    with rec.step("lvm_create", vg, {"devices": devices, "argv": argvs, **mine}):
        for argv in argvs:
            run(argv)
    lv = f"/dev/{vg}/{layers.LV_NAME}"
    segs = run(["lvs", "--noheadings", "-o", "segtype,stripes,stripe_size", lv]).stdout.split()
    return [lv], {
        "device": lv,
        "layout": spec.lvm,
        "segment_type": segs[0] if segs else None,
        "stripes": int(segs[1]) if len(segs) > 1 and segs[1].isdigit() else None,
        "stripe_size": segs[2] if len(segs) > 2 else None,
    }


def _mapping(target: str, tag: str, i: int) -> str:
    """The device-mapper path of a target's `i`th LUKS device."""
    return f"/dev/mapper/fslab-{target}-{tag}-{i}"


def _luks_words(spec: TargetSpec, base: Path, devices: tuple[str, ...]) -> list[str]:
    key = base / "luks.key"
    out = [f"write a random 512-bit key to {key}"]
    for i, dev in enumerate(devices):
        name = _mapping(spec.name, "<tag>", i).removeprefix("/dev/mapper/")
        fmt = layers.luks_format_argv(dev, key, spec.crypt_sector_size)
        opened = layers.luks_open_argv(
            dev, name, key, workqueues=spec.crypt_workqueues is not False
        )
        out.append(f"make {dev} LUKS2: `{shlex.join(fmt)}`; open it: `{shlex.join(opened)}`")
    return out


def _open_luks(
    spec: TargetSpec, rec: _Recorder, devices: list[str], base: Path, mine: dict[str, Any]
) -> tuple[list[str], dict[str, Any]]:
    """LUKS2 on each device with one random key (a file in the target's directory, gone
    with it), each opened as /dev/mapper/fslab-<target>-<tag>-<i>; returns the mapped
    devices, which the file system goes on, and what is in effect.

    Unverified: no kernel this project ran on had device-mapper (docs/study.md); the
    command lines are tested (`layers`), and `check` lets this run only where the kernel
    and tools are there."""
    key = base / "luks.key"
    with rec.step("image", str(key), {"size": 64, **mine}):
        fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, secrets.token_bytes(64))
        finally:
            os.close(fd)
    tag = secrets.token_hex(3)
    workqueues = spec.crypt_workqueues is not False
    mapped: list[str] = []
    status = ""
    for i, dev in enumerate(devices):
        format_argv = layers.luks_format_argv(dev, key, spec.crypt_sector_size)
        with rec.step("mkfs", dev, {"argv": format_argv, "kind": "luks", **mine}):
            run(format_argv)
        luks_uuid = run(["cryptsetup", "luksUUID", dev]).stdout.strip()
        name = _mapping(spec.name, tag, i).removeprefix("/dev/mapper/")
        details = {"device": dev, "luks_uuid": luks_uuid, **mine}
        with rec.step("crypt_open", name, details):
            run(layers.luks_open_argv(dev, name, key, workqueues=workqueues))
        mapped.append(_mapping(spec.name, tag, i))
        status = run(["cryptsetup", "status", name]).stdout
    info = layers.parse_status(status)
    effective: dict[str, Any] = {
        "kind": "dm-crypt",
        "cipher": info.get("cipher"),
        "key_bits": int(info["keysize"].split()[0]) if "keysize" in info else None,
        "sector_size": int(info["sector size"]) if "sector size" in info else None,
        "workqueues": workqueues,
        "flags": info.get("flags"),
        "contents_mode": "AES-256-XTS",
        "contents_driver": fscrypt.cipher_driver("AES-256-XTS"),
        "mapped": mapped,
        "raw": status,
    }
    effective["cpu_aes"] = fscrypt.uses_cpu_aes(effective["contents_driver"])
    return mapped, effective


def _set_scheduler(rec: _Recorder, name: str, device: str, details: dict[str, Any]) -> None:
    """Puts I/O scheduler `name` on `device`, journaled with the one before so that
    teardown (or `fslab cleanup`) puts that back."""
    _, before = scheduler.read(device)
    if before is None:
        raise TargetError(f"{device} has no I/O scheduler in sysfs to set to {name}")
    if before == name:
        return
    with rec.step("scheduler", device, {"previous": before, "scheduler": name, **details}):
        scheduler.switch(device, name)


def _key_identifier(key: bytes) -> str:
    """The identifier the kernel gives a v2 fscrypt key: HKDF-SHA512 with an all-zero
    salt, info "fscrypt\\0" + context 1 (fs/crypto/hkdf.c), 16 bytes."""
    prk = hmac.new(bytes(64), key, hashlib.sha512).digest()  # HKDF-Extract
    info = b"fscrypt\0" + bytes([1])  # HKDF_CONTEXT_KEY_IDENTIFIER, no further info
    return hmac.new(prk, info + b"\x01", hashlib.sha512).digest()[:16].hex()  # T(1)


# --------------------------------------------------------------------------- effective


def _common(system: System) -> dict[str, Any]:
    return {
        "kernel": system.kernel,
        "page_size": system.page_size,
        "tools": system.tool_versions(),
    }


def _mount_record(m: MountInfo) -> dict[str, Any]:
    return {
        "source": m.source,
        "fstype": m.fstype,
        "mountpoint": m.mountpoint,
        "options": list(m.options),
        "super_options": list(m.super_options),
    }


def parse_colon_list(text: str) -> dict[str, str]:
    """`Key:   value` lines (tune2fs -l) -> dict."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip():
            out[key.strip()] = value.strip()
    return out


def _ext4_effective(device: str, eff: dict[str, Any]) -> None:
    text = run(["tune2fs", "-l", device]).stdout
    info = parse_colon_list(text)
    features = info.get("Filesystem features", "").split()
    block = int(info.get("Block size", "0") or 0)
    eff["raw"]["tune2fs -l"] = text
    eff["ext4"] = {
        "features": features,
        "block_size": block,
        "cluster_size": int(info["Cluster size"]) if "Cluster size" in info else block,
        "inode_size": int(info.get("Inode size", "0") or 0),
        "label": info.get("Filesystem volume name", ""),
        "checksum_type": info.get("Checksum type"),
    }
    eff["block_size"] = block
    eff["cluster_size"] = eff["ext4"]["cluster_size"]
    eff["metadata_checksums"] = "metadata_csum" in features
    eff["data_checksums"] = False


def _statvfs_effective(mnt: Path, eff: dict[str, Any]) -> None:
    """What every file system says of itself: its allocation unit (NTFS's and exFAT's
    cluster, f2fs's block) from statvfs, as the kernel or the FUSE driver reports it."""
    st = os.statvfs(mnt)
    eff["statvfs"] = {"bsize": st.f_bsize, "frsize": st.f_frsize, "blocks": st.f_blocks}
    eff["block_size"] = st.f_frsize
    eff["cluster_size"] = st.f_frsize
    eff["metadata_checksums"] = False
    eff["data_checksums"] = False


def parse_xfs_info(text: str) -> dict[str, dict[str, str]]:
    """xfs_info / mkfs.xfs output -> {section: {key: value}} (meta-data, data, naming,
    log, realtime)."""
    out: dict[str, dict[str, str]] = {}
    section = ""
    for line in text.splitlines():
        head, sep, rest = line.partition("=")
        if not sep:
            continue
        if head.strip():
            section = head.strip()
            first, _, rest = rest.partition(" ")
            out.setdefault(section, {})["_"] = first.strip()
        for key, value in re.findall(r"([\w-]+)=([^\s,]+)", rest):
            out.setdefault(section, {})[key] = value
    return out


def _xfs_effective(mnt: Path, eff: dict[str, Any]) -> None:
    text = run(["xfs_info", str(mnt)]).stdout
    info = parse_xfs_info(text)
    eff["raw"]["xfs_info"] = text
    eff["xfs"] = info
    data, meta = info.get("data", {}), info.get("meta-data", {})
    eff["block_size"] = int(data.get("bsize", "0"))
    eff["metadata_checksums"] = meta.get("crc") == "1"
    eff["data_checksums"] = False
    eff["reflink"] = meta.get("reflink") == "1"


def parse_btrfs_df(text: str) -> dict[str, list[str]]:
    """`btrfs filesystem df` -> {"data": ["raid1"], "metadata": [...], "system": [...]}."""
    out: dict[str, list[str]] = {}
    for m in re.finditer(r"^([\w+]+), ([\w]+):", text, re.MULTILINE):
        kind, profile = m.group(1).lower(), m.group(2).lower()
        out.setdefault(kind, [])
        if profile not in out[kind]:
            out[kind].append(profile)
    return out


def _btrfs_effective(mnt: Path, eff: dict[str, Any]) -> None:
    df = run(["btrfs", "filesystem", "df", str(mnt)]).stdout
    show = run(["btrfs", "filesystem", "show", str(mnt)]).stdout
    eff["raw"]["btrfs filesystem df"] = df
    eff["raw"]["btrfs filesystem show"] = show
    profiles = parse_btrfs_df(df)
    btrfs: dict[str, Any] = {"profiles": profiles}
    m = re.search(r"uuid:\s*([0-9a-f-]{36})", show)
    if m:
        btrfs["uuid"] = m.group(1)
        sysfs = Path("/sys/fs/btrfs") / m.group(1)
        for key in ("sectorsize", "nodesize", "checksum"):
            with contextlib.suppress(OSError):
                btrfs[key] = (sysfs / key).read_text().strip()
    t = re.search(r"Total devices (\d+)", show)
    btrfs["devices"] = int(t.group(1)) if t else None
    eff["btrfs"] = btrfs
    eff["data_profile"] = ",".join(profiles.get("data", profiles.get("data+metadata", [])))
    eff["metadata_profile"] = ",".join(profiles.get("metadata", profiles.get("data+metadata", [])))
    eff["block_size"] = int(btrfs.get("sectorsize", "0") or 0)
    opts = set(eff.get("mount", {}).get("super_options", []))
    eff["metadata_checksums"] = True
    eff["data_checksums"] = not ({"nodatasum", "nodatacow"} & opts)
    # As the kernel took it: `compress=zstd:3`, `compress-force=lzo` (none: absent).
    given = {k: v for k, _, v in (o.partition("=") for o in opts) if k.startswith("compress")}
    eff["compression"] = given.get("compress-force") or given.get("compress")
    eff["compression_force"] = "compress-force" in given if given else None
