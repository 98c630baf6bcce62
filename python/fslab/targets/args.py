"""What a study's raw `mkfs_args` and `mount_options` may say.

fslab passes both on as they are: `mkfs_args` after its own mkfs options and before the
`--` that ends the options, then the target's devices; `mount_options` joined into one
`-o`. That alone does not make them safe. mkfs.btrfs takes every word that is not an
option as one more device to format; mke2fs and mkfs.xfs have options that put a
journal, log or realtime section on another device; mount takes `device=` and
`logdev=` the same way. None of those devices went through the safety gate
(`gate.py`). So the words are parsed here with each tool's own option table and
refused, before anything is made, wherever they could make a tool write to anything
but the target's own devices.

The option tables come from the tools' sources:

- mke2fs (e2fsprogs misc/mke2fs.c): getopt "b:cd:e:g:i:jl:m:no:qr:s:t:vC:DE:FG:I:J:KL:M:
  N:O:R:ST:U:Vz:", no long options.
- mkfs.xfs (xfsprogs mkfs/xfs_mkfs.c): getopt "b:c:d:i:l:L:m:n:KNp:qr:s:CfV" and
  `--unsupported`.
- mkfs.btrfs (btrfs-progs mkfs/main.c): getopt "A:b:fl:n:s:m:d:L:R:O:r:U:VvMKqu:" and the
  long options in `_BTRFS_LONG` (6.2 and the newer `--subvol`, `--compress`, ...).
- mkntfs (ntfs-3g 2022.10), mkfs.f2fs (f2fs-tools 1.15) and mkfs.exfat (exfatprogs 1.2):
  the getopt strings and long names their binaries hold. mkfs.f2fs's `-c` adds devices.

As getopt does, an option that takes a value takes the rest of its word, or else the
next word whatever it looks like; any other word that is not an option is an operand
(GNU getopt moves operands to the end), which mkfs takes as a device. An option fslab
does not know is passed on, since mkfs refuses it before it opens a device, but a word
right after it is refused: it could be that option's value or a device.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from fslab.targets.families import FAMILIES
from fslab.targets.mountopts import SETTINGS
from fslab.targets.spec import TargetSpec
from fslab.units import parse_size

TOOL = {n: f.mkfs for n, f in FAMILIES.items()}


@dataclass(frozen=True)
class Option:
    """One option as the tool will read it."""

    name: str
    """`-L`, or `--checksum` for a long option without a short form."""
    value: str | None
    words: tuple[str, ...]
    """The words of `mkfs_args` it came from."""

    def written(self) -> str:
        return " ".join(self.words)


@dataclass(frozen=True)
class _Table:
    with_value: frozenset[str]
    flags: frozenset[str]
    long: Mapping[str, tuple[str, bool]]
    """long name -> (the option's name, whether it takes a value)"""


def _getopt(optstring: str, long: Mapping[str, tuple[str, bool]] | None = None) -> _Table:
    with_value = set(re.findall(r"([A-Za-z]):", optstring))
    flags = set(re.findall(r"[A-Za-z]", optstring)) - with_value
    return _Table(frozenset(with_value), frozenset(flags), long or {})


_BTRFS_LONG: dict[str, tuple[str, bool]] = {
    "alloc-start": ("-A", True),
    "byte-count": ("-b", True),
    "checksum": ("--checksum", True),
    "csum": ("--checksum", True),
    "data": ("-d", True),
    "device-uuid": ("--device-uuid", True),
    "features": ("-O", True),
    "force": ("-f", False),
    "help": ("--help", False),
    "inode-flags": ("--inode-flags", True),
    "label": ("-L", True),
    "leafsize": ("-l", True),
    "metadata": ("-m", True),
    "mixed": ("-M", False),
    "nodesize": ("-n", True),
    "nodiscard": ("-K", False),
    "num-global-roots": ("--num-global-roots", True),
    "param": ("--param", True),
    "quiet": ("-q", False),
    "reflink": ("--reflink", False),
    "rootdir": ("-r", True),
    "runtime-features": ("-R", True),
    "sectorsize": ("-s", True),
    "shrink": ("--shrink", False),
    "compress": ("--compress", True),
    "subvol": ("-u", True),
    "uuid": ("-U", True),
    "verbose": ("-v", False),
    "version": ("-V", False),
}

_MKNTFS_LONG: dict[str, tuple[str, bool]] = {
    "cluster-size": ("-c", True), "debug": ("--debug", False),
    "enable-compression": ("-C", False), "fast": ("-f", False), "force": ("-F", False),
    "heads": ("-H", True), "help": ("-h", False), "label": ("-L", True),
    "license": ("-l", False), "mft-zone-multiplier": ("-z", True), "no-action": ("-n", False),
    "no-indexing": ("-I", False), "partition-start": ("-p", True), "quick": ("-Q", False),
    "quiet": ("-q", False), "sector-size": ("-s", True), "sectors-per-track": ("-S", True),
    "verbose": ("-v", False), "version": ("-V", False), "with-uuid": ("-U", False),
    "zero-time": ("-T", False),
}  # fmt: skip
_EXFAT_LONG: dict[str, tuple[str, bool]] = {
    "volume-label": ("-L", True), "cluster-size": ("-c", True),
    "boundary-align": ("-b", True), "pack-bitmap": ("--pack-bitmap", False),
    "full-format": ("-f", False), "version": ("-V", False), "verbose": ("-v", False),
    "help": ("-h", False),
}  # fmt: skip
_MKNTFS = _getopt("c:CfFhH:IlL:np:qQs:S:TUvVz:", _MKNTFS_LONG)
_TABLES = {
    "ext4": _getopt("b:cd:e:g:i:jl:m:no:qr:s:t:vC:DE:FG:I:J:KL:M:N:O:R:ST:U:Vz:"),
    "xfs": _getopt("b:c:d:i:l:L:m:n:KNp:qr:s:CfV", {"unsupported": ("--unsupported", False)}),
    "btrfs": _getopt("A:b:fl:n:s:m:d:L:R:O:r:U:VvMKqu:", _BTRFS_LONG),
    "ntfs": _MKNTFS,
    "ntfs3": _MKNTFS,
    "f2fs": _getopt("qa:c:C:d:e:E:g:hil:mo:O:rR:s:S:z:t:T:U:Vfw:"),
    "exfat": _getopt("n:L:c:b:fVvh", _EXFAT_LONG),
}

# Options that make mkfs print something and exit without making a file system; the
# mount that follows would then fail, or mount whatever was there before.
_PRINT_ONLY = {
    "ext4": {"-V": "its version", "-n": "what it would do"},
    "xfs": {"-V": "its version", "-N": "the geometry it would use"},
    "btrfs": {"-V": "its version", "--help": "its usage"},
    "ntfs": {"-V": "its version", "-h": "its usage", "-l": "its licence",
             "-n": "what it would do"},
    "ntfs3": {"-V": "its version", "-h": "its usage", "-l": "its licence",
              "-n": "what it would do"},
    "f2fs": {"-V": "its version", "-h": "its usage"},
    "exfat": {"-V": "its version", "-h": "its usage"},
}  # fmt: skip

# Mount options that name a device or file for mount or the kernel to use besides the
# target's own device, or that make mount run a program.
_UNCHECKED = "on another device, one the safety gate never checked"
_MOUNT_REFUSED = {
    "device": "names one more device for the file system, one the safety gate never checked",
    "logdev": f"puts the xfs log {_UNCHECKED}",
    "rtdev": f"puts the xfs realtime section {_UNCHECKED}",
    "journal_dev": f"puts the ext4 journal {_UNCHECKED}",
    "journal_path": f"puts the ext4 journal {_UNCHECKED}",
    "loop": "makes mount set up a loop device of its own on a path fslab never checked",
    "helper": "makes mount run a helper program",
    "uhelper": "makes umount run a helper program",
}

_PARTS = re.compile(r"[,=:]")


def parse_mkfs_args(fs: str, args: Sequence[str]) -> tuple[list[Option], list[str]]:
    """`args` read with `fs`'s mkfs option table, as getopt reads them: the options, and
    what is wrong with the words that are not options (each a sentence after
    "`mkfs_args` ")."""
    table = _TABLES[fs]
    tool = TOOL[fs]
    options: list[Option] = []
    problems: list[str] = []
    unknown: str | None = None  # the unknown option just before this word, if any
    i = 0
    while i < len(args):
        word = args[i]
        after_unknown, unknown = unknown, None
        i += 1
        if word == "--":
            problems.append(
                f"has `--`: {tool} takes every word after it as a device to format; remove "
                f"it (fslab ends the options with its own `--`, before the target's devices)"
            )
        elif word.startswith("--"):
            name, eq, attached = word[2:].partition("=")
            known = _long(table, name)
            if known is None:
                options.append(Option(word, attached if eq else None, (word,)))
                unknown = None if eq else word
                continue
            opt, takes_value = known
            if not takes_value or eq:
                options.append(Option(opt, attached if eq else None, (word,)))
            elif i < len(args):
                options.append(Option(opt, args[i], (word, args[i])))
                i += 1
            else:
                problems.append(_missing(word))
        elif word.startswith("-") and word != "-":
            for j, c in enumerate(word[1:], start=1):
                if c in table.flags:
                    options.append(Option(f"-{c}", None, (word,)))
                    continue
                rest = word[j + 1 :]
                if not c.isascii() or not c.isalpha():
                    # No tool has such an option: getopt stops with its usage text, and
                    # what follows (`-F/dev/loop3`) reads as a device glued to a flag.
                    before = f" after `{word[:j]}`" if j > 1 else ""
                    problems.append(
                        f"has {word!r}: getopt reads the characters{before} as more options, "
                        f"and {c!r} is none of {tool}'s; remove it, or write each option as "
                        f"a word of its own (fslab passes the target's own devices)"
                    )
                    break
                if c not in table.with_value:
                    # As getopt would, mkfs stops at it; what follows may be its value.
                    options.append(Option(f"-{c}", rest or None, (word,)))
                    unknown = None if rest else f"-{c}"
                elif rest:
                    options.append(Option(f"-{c}", rest, (word,)))
                elif i < len(args):
                    options.append(Option(f"-{c}", args[i], (word, args[i])))
                    i += 1
                else:
                    problems.append(_missing(word))
                break
        elif after_unknown is not None:
            sep = "=" if after_unknown.startswith("--") else ""
            same_word = f"{after_unknown}{sep}{word}"
            problems.append(
                f"has {word!r} after {after_unknown!r}, an option fslab does not know for "
                f"{tool}: it cannot tell whether {word!r} is that option's value or one more "
                f"device to format; write the value in the same word (`{same_word}`) or "
                f"remove it"
            )
        else:
            what = "a device to format" + (" or a block count" if fs == "ext4" else "")
            problems.append(
                f"has {word!r}, which is neither an option nor an option's value, so {tool} "
                f"would take it as {what}; remove it (fslab passes the target's own devices, "
                f"and `loop.size` sets the size)"
            )
    return options, problems


def _long(table: _Table, name: str) -> tuple[str, bool] | None:
    """A long option by its name or, as getopt_long takes them, a prefix of just one."""
    if name in table.long:
        return table.long[name]
    found = {table.long[n] for n in table.long if n.startswith(name)} if name else set()
    return found.pop() if len(found) == 1 else None


def _missing(word: str) -> str:
    return (
        f"ends with {word!r}, which takes a value: mkfs would take fslab's `--` as that "
        f"value; give the value after it, or remove it"
    )


def suboptions(value: str) -> list[tuple[str, str | None]]:
    """`key=value,flag,...` (mke2fs -E/-J, mkfs.xfs -d/-l/...) as (key, value) pairs."""
    out: list[tuple[str, str | None]] = []
    for item in value.split(","):
        key, eq, val = item.partition("=")
        out.append((key.strip().lower(), val if eq else None))
    return out


def _option_problem(fs: str, o: Option) -> str | None:
    """Why the tool must not be given `o`, or None."""
    tool = TOOL[fs]
    said = f"`{o.written()}`"
    prints = _PRINT_ONLY[fs].get(o.name)
    if prints is not None:
        return f"has {said}: {tool} would only print {prints} and make no file system; remove it"
    if fs == "btrfs" and o.name in ("-O", "-R") and "list-all" in (o.value or ""):
        return f"has {said}: {tool} would only list features and make no file system; remove it"
    subs = suboptions(o.value or "")
    if (fs != "xfs" and o.name == "-U") or (
        fs == "xfs" and o.name == "-m" and any(k == "uuid" for k, _ in subs)
    ):
        return (
            f"has {said}: fslab names each file system it makes with a UUID of its own, "
            f"which is how it later knows the file system is its own; remove it"
        )
    if fs == "ext4" and o.name == "-J" and any(k == "device" for k, _ in subs):
        return (
            f"has {said}, which puts the journal on another device, one the safety gate "
            f"never checked; remove `device=` (fslab makes file systems with an internal "
            f"journal)"
        )
    if fs == "f2fs" and o.name == "-c":
        return (
            f"has {said}, which adds devices to the f2fs file system, ones the safety gate "
            f"never checked; remove it (fslab makes f2fs on the target's one device)"
        )
    if fs == "ext4" and o.name == "-z":
        return (
            f"has {said}, which makes mke2fs write an undo file, outside fslab's work "
            f"directory; remove it"
        )
    if fs == "xfs" and o.name == "-c":
        return (
            f"has {said}, which makes mkfs.xfs read options from a file, and such a file can "
            f"name other devices; write those options in `mkfs_args` instead"
        )
    if fs == "xfs" and o.name in ("-d", "-l", "-r"):
        section = {"-d": "data section", "-l": "log", "-r": "realtime section"}[o.name]
        for key, _ in subs:
            if key in ("logdev", "rtdev"):
                return (
                    f"has {said}, which puts the xfs {section} on another device, one the "
                    f"safety gate never checked; remove `{key}=` (fslab makes file systems "
                    f"with an internal log and no realtime section)"
                )
            if key == "name":
                return (
                    f"has {said}, which names the device or file mkfs.xfs writes the "
                    f"{section} to; remove `name=` (fslab passes the target's devices itself)"
                )
            if key == "file":
                return (
                    f"has {said}, which makes mkfs.xfs write the {section} to a regular file, "
                    f"creating it if need be; remove `file`"
                )
    return None


def block_device(word: str) -> str | None:
    """Why `word` names a block device (it is one, symlinks followed, or a path under
    /dev/), or None."""
    try:
        st = Path(word).stat()
    except (OSError, ValueError):
        st = None
    if st is not None and stat.S_ISBLK(st.st_mode):
        real = os.path.realpath(word)
        return "a block device" + (f" (it is {real})" if real != word else "")
    if word.startswith("/dev/"):
        return "a path under /dev/"
    return None


def _devices_in(word: str) -> list[tuple[str, str]]:
    """(part, why) for `word` and each of its `,` `=` `:` separated parts that names a
    block device."""
    out: list[tuple[str, str]] = []
    for part in dict.fromkeys([word, *_PARTS.split(word)]):
        why = block_device(part) if part else None
        if why is not None:
            out.append((part, why))
    return out


def _device_problem(key: str, written: str, part: str, why: str) -> str:
    said = f"{part!r}, {why}" if part == written else f"{written!r}, and {part!r} is {why}"
    return (
        f"`{key}` has {said}: fslab writes only to the target's own devices (`loop`, or "
        f"`device` after the safety gate), never to a device named in `{key}`; remove it"
    )


def mkfs_problems(spec: TargetSpec) -> list[str]:
    """What is wrong with `spec.mkfs_args` (sentences naming `mkfs_args`)."""
    if spec.fs is None or not spec.mkfs_args:
        return []
    options, problems = parse_mkfs_args(spec.fs, spec.mkfs_args)
    out = [f"`mkfs_args` {p}" for p in problems]
    seen: set[str] = set()
    for o in options:
        why = _option_problem(spec.fs, o)
        if why is not None:
            out.append(f"`mkfs_args` {why}")
            continue
        # The option's words and its value: one written in the same word as its option,
        # `-L/dev/sdb`, too. (Words that are no option's are refused above already.)
        for word in [*o.words, *([o.value] if o.value else [])]:
            for part, why in _devices_in(word):
                if part not in seen:
                    seen.add(part)
                    out.append(_device_problem("mkfs_args", o.written(), part, why))
    return out


def mount_problems(spec: TargetSpec) -> list[str]:
    """What is wrong with `spec.mount_options` (sentences naming `mount_options`)."""
    out: list[str] = []
    for option in spec.mount_options:
        for item in option.split(","):
            key = item.partition("=")[0].strip().strip("\"'").lower()
            if key in _MOUNT_REFUSED:
                out.append(f"`mount_options` has {item!r}, which {_MOUNT_REFUSED[key]}; remove it")
                continue
            named = next(
                (k for k in (spec.mount.given() if spec.mount else ())
                 if key in SETTINGS[k].option_names),
                None,
            )  # fmt: skip
            if named is not None:
                out.append(
                    f"`mount_options` has {item!r} and the target sets `mount.{named}`; "
                    f"give it once (`mount.{named}`, which the report names)"
                )
                continue
            if spec.compression is not None and key in ("compress", "compress-force"):
                out.append(
                    f"`mount_options` has {item!r} and the target sets `compression`; "
                    f"give it once (`compression`, which the report names)"
                )
                continue
            out += [
                _device_problem("mount_options", item, part, why) for part, why in _devices_in(item)
            ]
    return out


def user_arg_problems(spec: TargetSpec) -> list[str]:
    """Every reason `spec.mkfs_args` and `spec.mount_options` cannot be passed on, as
    sentences naming the key, the value, why, and what to do; empty when they can."""
    who = f"target `{spec.name}`"
    problems = mkfs_problems(spec) + mount_problems(spec)
    return [f"{who}: {p}" for p in dict.fromkeys(problems)]


def has_option(spec: TargetSpec, name: str) -> bool:
    """Whether `spec.mkfs_args` gives the option `name` (`-T`), however it is written."""
    if spec.fs is None or not spec.mkfs_args:
        return False
    return any(o.name == name for o in parse_mkfs_args(spec.fs, spec.mkfs_args)[0])


_TOOL_SIZE = re.compile(r"^(\d+)([a-z]?)$", re.IGNORECASE)


def _tool_size(value: str, fs: str, block: int) -> int | None:
    """A size as mkfs.btrfs (`160m`; `b` is bytes) or mkfs.xfs (`1g`; `b` is blocks,
    `s` sectors) reads it; None when it is not one fslab can read."""
    m = _TOOL_SIZE.match(value.strip())
    if not m:
        return None
    number, suffix = int(m.group(1)), m.group(2).lower()
    if suffix == "b":
        return number * (block if fs == "xfs" else 1)
    if suffix == "s" and fs == "xfs":
        return number * 512
    try:
        return parse_size(f"{number}{suffix}")
    except ValueError:
        return None


def mkfs_size(spec: TargetSpec, block: int = 4096) -> int | None:
    """The size per device that `mkfs_args` gives the file system (btrfs `-b` or
    `--byte-count`, xfs `-d size=`; the last one counts), or None."""
    if spec.fs not in ("btrfs", "xfs") or not spec.mkfs_args:
        return None
    size: int | None = None
    for o in parse_mkfs_args(spec.fs, spec.mkfs_args)[0]:
        if spec.fs == "btrfs" and o.name == "-b" and o.value:
            size = _tool_size(o.value, "btrfs", block) or size
        elif spec.fs == "xfs" and o.name == "-d":
            for key, val in suboptions(o.value or ""):
                if key == "size" and val:
                    size = _tool_size(val, "xfs", block) or size
    return size
