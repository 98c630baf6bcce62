"""Mount options as named settings (a target's `mount = { atime = "noatime" }`): which
file systems take each, the words `mount -o` gets, and how to read back from
/proc/self/mountinfo what the kernel put in effect.

One row per setting in `SETTINGS`; the study model (`spec.MountSpec`) checks values and
file systems with it, `mkfs.mount_options` writes the words, `provision` records what
is in effect (`in_effect`), and the report shows it. Free text stays possible in
`mount_options`; giving a setting in both is refused (`args.mount_problems`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

KERNEL_FS = ("ext4", "xfs", "btrfs", "f2fs", "exfat", "ntfs3")


@dataclass(frozen=True)
class Setting:
    key: str
    filesystems: tuple[str, ...]
    words: Callable[[Any], list[str]]
    """The value -> the `mount -o` words."""
    read: Callable[[Collection[str], str], Any]
    """(options in effect, fs) -> the value in effect (None: not shown, the default)."""
    option_names: tuple[str, ...]
    """The raw options it speaks for: giving one in `mount_options` too is refused."""
    help: str


def _flag(on: str, off: str) -> Callable[[Any], list[str]]:
    return lambda v: [on if v else off]


def _value_of(opts: Collection[str], name: str) -> str | None:
    for o in opts:
        k, eq, v = o.partition("=")
        if k == name:
            return v if eq else ""
    return None


def _atime(opts: Collection[str], fs: str) -> str:
    return next((a for a in ("noatime", "relatime") if a in opts), "strictatime")


def _discard(opts: Collection[str], fs: str) -> bool | str:
    given = _value_of(opts, "discard")
    if given is None:
        return False
    return given or True


def _commit(opts: Collection[str], fs: str) -> int | None:
    v = _value_of(opts, "commit")
    # Not shown at the default: ext4 5 s, btrfs 30 s.
    return int(v) if v else {"ext4": 5, "btrfs": 30}.get(fs)


def _space_cache(opts: Collection[str], fs: str) -> str | bool:
    if "nospace_cache" in opts:
        return False
    return _value_of(opts, "space_cache") or True


SETTINGS: dict[str, Setting] = {
    s.key: s
    for s in (
        Setting(
            "atime", (*KERNEL_FS, "ntfs"), lambda v: [str(v)], _atime,
            ("noatime", "relatime", "strictatime", "atime", "norelatime"),
            "when reads update a file's access time: never (`noatime`), once a day or "
            "after a change (`relatime`, Linux's default) or on every read (`strictatime`)",
        ),
        Setting(
            "lazytime", KERNEL_FS, _flag("lazytime", "nolazytime"),
            lambda o, fs: "lazytime" in o, ("lazytime", "nolazytime"),
            "keep time stamp updates in memory (written within 24 h, or with the inode)",
        ),
        Setting(
            "discard", ("ext4", "xfs", "btrfs", "f2fs"),
            lambda v: ["discard=async" if v == "async" else "discard" if v else "nodiscard"],
            _discard, ("discard", "nodiscard"),
            "send freed blocks to the device as they are freed (`true`; btrfs also "
            "`\"async\"`, batched) or never (`false`: fstrim's job)",
        ),
        Setting(
            "commit_s", ("ext4", "btrfs"), lambda v: [f"commit={int(v)}"], _commit,
            ("commit",), "seconds between journal commits (ext4: 5, btrfs: 30)",
        ),
        Setting(
            "data", ("ext4",), lambda v: [f"data={v}"],
            # Not shown at the default (6.18).
            lambda o, fs: _value_of(o, "data") or "ordered", ("data",),
            "ext4's journalling of file data: `ordered` (the default), `writeback`, `journal`",
        ),
        Setting(
            "logbsize", ("xfs",), lambda v: [f"logbsize={int(v) // 1024}k"],
            lambda o, fs: _value_of(o, "logbsize"), ("logbsize",),
            "xfs's in-memory log buffer size: 16 KiB to 256 KiB",
        ),
        Setting(
            "ssd", ("btrfs",), _flag("ssd", "nossd"),
            lambda o, fs: "ssd" in o, ("ssd", "nossd", "ssd_spread", "nossd_spread"),
            "btrfs's allocation for non-rotational devices (on by itself only where the "
            "device says it does not spin; loop devices here say it does)",
        ),
        Setting(
            "space_cache", ("btrfs",),
            lambda v: ["nospace_cache"] if v is False else [f"space_cache={v}"],
            _space_cache, ("space_cache", "nospace_cache"),
            "btrfs's free space cache: `\"v2\"` (the free space tree, the default) or `false`",
        ),
        Setting(
            "autodefrag", ("btrfs",), _flag("autodefrag", "noautodefrag"),
            lambda o, fs: "autodefrag" in o, ("autodefrag", "noautodefrag"),
            "btrfs rewrites files that small random writes fragmented",
        ),
    )
}  # fmt: skip


def words(settings: dict[str, Any]) -> list[str]:
    """The `mount -o` words for the settings given (`{"atime": "noatime"}`), in
    `SETTINGS` order."""
    return [w for key, s in SETTINGS.items() if key in settings for w in s.words(settings[key])]


def in_effect(fs: str, options: Collection[str]) -> dict[str, Any]:
    """Every setting `fs` takes, as the kernel put it in effect (`options`: the mount's
    per-mount and super-block options together)."""
    return {key: s.read(options, fs) for key, s in SETTINGS.items() if fs in s.filesystems}


def label(key: str, value: Any) -> str:
    """`noatime`, `discard`, `nossd`, `commit30`: a setting's value as a short name, for
    target names."""
    if isinstance(value, bool):
        return key if value else f"no{key}"
    if key == "atime":
        return str(value)
    return f"{key.removesuffix('_s')}{value}"
