"""ext4 native encryption (fscrypt), through the kernel's own ioctls.

fslab needs no user-space tool for it: a random 512-bit key is added to the file
system's keyring (`FS_IOC_ADD_ENCRYPTION_KEY`), and a v2 policy (AES-256-XTS for
contents, AES-256-CTS for names: the kernel's and the `fscrypt` tool's default) naming
that key is set on the empty workload directory. Keys in the file system keyring are
seen by every process (no session-keyring surprises as with `e4crypt`'s v1 policies),
and go away at unmount at the latest. The key is never stored: the data is unreadable
once the file system is unmounted, which is what a throw-away benchmark target wants.
"""

from __future__ import annotations

import errno
import fcntl
import os
import secrets
import struct
from pathlib import Path
from typing import Any

from fslab.errors import TargetError

# <linux/fscrypt.h>
_IOC_ADD_KEY = 0xC0506617  # _IOWR('f', 23, struct fscrypt_add_key_arg)  (80 bytes)
_IOC_REMOVE_KEY = 0xC0406618  # _IOWR('f', 24, struct fscrypt_remove_key_arg)  (64 bytes)
_IOC_SET_POLICY = 0x800C6613  # _IOR('f', 19, struct fscrypt_policy_v1)
_IOC_GET_POLICY_EX = 0xC0096616  # _IOWR('f', 22, __u8[9])
_KEY_SPEC_TYPE_IDENTIFIER = 2
_POLICY_V2 = 2
MODE_AES_256_XTS = 1
MODE_AES_256_CTS = 4
_FLAGS_PAD_32 = 0x03
_MODES = {1: "AES-256-XTS", 4: "AES-256-CTS", 9: "Adiantum", 10: "AES-256-HCTR2"}
KEY_BYTES = 64


def _open_dir(path: Path) -> int:
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)


def add_key(mountpoint: Path, raw: bytes | None = None) -> str:
    """Adds `raw` (default: a fresh random key) to the keyring of the file system mounted
    at `mountpoint`; returns the identifier (hex) the kernel gave it."""
    raw = raw if raw is not None else secrets.token_bytes(KEY_BYTES)
    # key_spec {u32 type, u32 reserved, u8 u[32]}, u32 raw_size, u32 key_id,
    # u32 reserved[8], u8 raw[]
    arg = bytearray(struct.pack("=II32sII32x", _KEY_SPEC_TYPE_IDENTIFIER, 0, b"", len(raw), 0))
    arg += raw
    fd = _open_dir(mountpoint)
    try:
        fcntl.ioctl(fd, _IOC_ADD_KEY, arg, True)
    except OSError as e:
        raise TargetError(
            f"cannot add an encryption key to {mountpoint}: {e.strerror}",
            hint="the file system must be ext4 made with `-O encrypt`, and the kernel "
            "must have CONFIG_FS_ENCRYPTION",
        ) from e
    finally:
        os.close(fd)
    return bytes(arg[8:24]).hex()


def set_policy(directory: Path, identifier: str) -> None:
    """Encrypts the empty `directory` with the key `identifier` (a v2 policy)."""
    policy = struct.pack(
        "=BBBBB3s16s",
        _POLICY_V2,
        MODE_AES_256_XTS,
        MODE_AES_256_CTS,
        _FLAGS_PAD_32,
        0,
        b"",
        bytes.fromhex(identifier),
    )
    fd = _open_dir(directory)
    try:
        fcntl.ioctl(fd, _IOC_SET_POLICY, policy)
    except OSError as e:
        raise TargetError(f"cannot encrypt {directory}: {e.strerror}") from e
    finally:
        os.close(fd)


def get_policy(directory: Path) -> dict[str, Any] | None:
    """The encryption policy of `directory`, or None when it is not encrypted."""
    arg = bytearray(struct.pack("=Q", 24) + bytes(24))
    fd = _open_dir(directory)
    try:
        fcntl.ioctl(fd, _IOC_GET_POLICY_EX, arg, True)
    except OSError as e:
        if e.errno in (errno.ENODATA, errno.ENOTTY, errno.EOPNOTSUPP):
            return None
        raise TargetError(f"cannot read the encryption policy of {directory}: {e.strerror}") from e
    finally:
        os.close(fd)
    version, contents, names, flags = arg[8], arg[9], arg[10], arg[11]
    out: dict[str, Any] = {
        "version": version,
        "contents_mode": _MODES.get(contents, str(contents)),
        "filenames_mode": _MODES.get(names, str(names)),
        "flags": flags,
    }
    if version == _POLICY_V2:
        out["key_identifier"] = bytes(arg[16:32]).hex()
    return out


def remove_key(mountpoint: Path, identifier: str) -> None:
    """Removes key `identifier` from the file system at `mountpoint`; a key that is
    already gone is fine."""
    # key_spec {u32 type, u32 reserved, u8 u[32]}, u32 removal_status_flags, u32 rsv[5]
    arg = bytearray(
        struct.pack("=II32sI20x", _KEY_SPEC_TYPE_IDENTIFIER, 0, bytes.fromhex(identifier), 0)
    )
    fd = _open_dir(mountpoint)
    try:
        fcntl.ioctl(fd, _IOC_REMOVE_KEY, arg, True)
    except OSError as e:
        if e.errno in (errno.ENOKEY, errno.ENOTTY, errno.EOPNOTSUPP):
            return
        raise TargetError(
            f"cannot remove the encryption key from {mountpoint}: {e.strerror}"
        ) from e
    finally:
        os.close(fd)


# The kernel's crypto API names for the policy's modes (fs/crypto/keysetup.c).
_CRYPTO_NAMES = {"AES-256-XTS": "xts(aes)", "AES-256-CTS": "cts(cbc(aes))"}


def instantiate(directory: Path) -> None:
    """Has the kernel set up the directory's ciphers, so /proc/crypto names their drivers
    (`cipher_driver`): a small file written, synced and removed. The per-file key is made
    when an encrypted file is created; its contents are encrypted at writeback."""
    probe = directory / ".fslab-cipher-probe"
    fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, bytes(4096))
        os.fsync(fd)
    finally:
        os.close(fd)
        probe.unlink()


def cipher_driver(mode: str, proc_crypto: str | None = None) -> str | None:
    """The driver the kernel picks for `mode` (`AES-256-XTS`): the highest-priority one
    /proc/crypto lists under its name (`xts(ecb(aes-fixed-time))` is portable C;
    `xts-aes-aesni` or `xts-aes-vaes-avx2` use the CPU's AES instructions). None when
    unknown. A study's encryption cost depends on it more than on anything else."""
    name = _CRYPTO_NAMES.get(mode)
    if name is None:
        return None
    if proc_crypto is None:
        try:
            proc_crypto = Path("/proc/crypto").read_text()
        except OSError:
            return None
    best: tuple[int, str] | None = None
    for block in proc_crypto.split("\n\n"):
        fields = {
            k.strip(): v.strip() for k, _, v in (ln.partition(":") for ln in block.splitlines())
        }
        if fields.get("name") != name or "driver" not in fields:
            continue
        priority = int(fields.get("priority", "0") or 0)
        if best is None or priority > best[0]:
            best = (priority, fields["driver"])
    return best[1] if best else None


def uses_cpu_aes(driver: str | None) -> bool | None:
    """Whether the driver uses the CPU's AES instructions (AES-NI, VAES, ARMv8 CE)."""
    if driver is None:
        return None
    return any(w in driver for w in ("aesni", "vaes", "-ce", "aes-arm64"))
