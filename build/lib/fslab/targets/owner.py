"""Proof that fslab made a directory: what lets `fslab cleanup` act on a journal entry.

A results database travels (`fslab bundle`) and anyone can write one, so its journal is
a record of what fslab did, never a script: an entry is acted on only when the machine
itself proves that fslab made what the entry names. The proof is a directory fslab
created (`mkdir` that fails if the directory exists: nothing is ever adopted) and in it,
at once, a marker file `.fslab-owner` holding a random token: written by fslab's user,
mode 0600 (no one else can read the token or replace the file). Every journal entry
carries the directory it lives under (`owner`) and that token; undo acts only when

- the owner is an absolute path without symlinks, a real directory, whose marker is a
  regular file of this user, not readable by others, holding exactly the entry's token;
- the entry's subject resolves (symlinks followed) to the owner or a path inside it.

A forged entry cannot name a token it never saw on this machine (the DB holds the
tokens of directories fslab made, and those directories hold only what fslab put
there). Owned directories: the work directory when fslab creates it, each target's
directory in it, a `dir` target's directory, PostgreSQL's socket directory.
"""

from __future__ import annotations

import hmac
import os
import secrets
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fslab.errors import TargetError

MARKER = ".fslab-owner"
_TOKEN_BYTES = 16


class NotOurs(TargetError):
    """A journal entry fslab cannot prove it made: reported and left alone."""


@dataclass(frozen=True)
class Owned:
    """A directory fslab makes (or made), and the token its marker holds."""

    path: Path
    """Absolute, symlinks of its parent resolved."""
    token: str

    @classmethod
    def new(cls, path: Path) -> Owned:
        """An owned directory to be made at `path` (not made yet: journal it first)."""
        parent = Path(os.path.realpath(path.parent))
        return cls(parent / path.name, secrets.token_hex(_TOKEN_BYTES))

    def details(self) -> dict[str, str]:
        """What a journal entry of something inside this directory carries."""
        return {"owner": str(self.path), "token": self.token}

    def create(self, mode: int = 0o755) -> None:
        """Makes the directory (never an existing one: `FileExistsError`) and its marker."""
        self.path.mkdir(mode)
        try:
            fd = os.open(
                self.path / MARKER,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                0o600,
            )
            try:
                os.write(fd, self.token.encode())
                os.fsync(fd)
            finally:
                os.close(fd)
        except BaseException:
            (self.path / MARKER).unlink(missing_ok=True)
            self.path.rmdir()
            raise

    def contents(self) -> list[str]:
        """What the directory holds besides the marker."""
        return sorted(p.name for p in self.path.iterdir() if p.name != MARKER)

    def remove(self) -> None:
        """Removes the marker and the (then empty) directory."""
        (self.path / MARKER).unlink(missing_ok=True)
        self.path.rmdir()


def _marker_token(owner: Path) -> str | None:
    """The token in `owner`'s marker if the marker is fslab's own, else None."""
    try:
        fd = os.open(owner / MARKER, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
            return None
        return os.read(fd, 256).decode("ascii", errors="replace")
    finally:
        os.close(fd)


def inside(path: str | Path, owner: Path) -> bool:
    """Whether `path`, symlinks resolved, is `owner` or lies inside it."""
    real = os.path.realpath(path)
    return real == str(owner) or real.startswith(str(owner).rstrip("/") + "/")


def prove(subject: str, details: Mapping[str, Any]) -> Owned:
    """The owned directory a journal entry lives under, once the machine proves it (see
    the module text); raises `NotOurs` saying why not."""
    owner, token = details.get("owner"), details.get("token")
    if not isinstance(owner, str) or not isinstance(token, str) or not owner or not token:
        raise NotOurs(f"{subject}: the entry names no directory fslab made")
    path = Path(owner)
    if not path.is_absolute() or os.path.realpath(path) != owner:
        raise NotOurs(f"{subject}: {owner} is not a plain absolute path (a symlink?)")
    try:
        st = path.lstat()
    except OSError:
        raise NotOurs(f"{subject}: the directory fslab made for it, {owner}, is gone") from None
    if not stat.S_ISDIR(st.st_mode):
        raise NotOurs(f"{subject}: {owner} is not a directory")
    found = _marker_token(path)
    if found is None or not hmac.compare_digest(found, token):
        raise NotOurs(f"{subject}: {owner} holds no fslab marker with this entry's token")
    if not inside(subject, path):
        raise NotOurs(f"{subject}: it lies outside {owner}, the directory fslab made for it")
    return Owned(path, token)
