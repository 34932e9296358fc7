"""The backup file: one owner-only file holding a root's journal with everything that opens it.

Layout: a magic line, a header line of canonical JSON (readable without any secret: which
root, which position, which chain value, how the body is protected), then the body::

    memory-es-backup 1\\n
    {"backup_id": ..., "chain": <hex>, "created_at": ..., "format": "memory-es-backup",
     "position": N, "protection": {...}, "root_id": ..., "version": 1}\\n
    <body>

The body is the msgpack of :class:`Body` (the chain key, every row with its chain value,
payloads, record keys, the backups this root made). Protected by a passphrase (scrypt, then
AES-256-GCM), by a key file (HKDF-SHA256 of its bytes, then AES-256-GCM), or not at all (its
SHA-256 in the header: an unencrypted backup is only as private as the file's 0600 mode).
The header is the AEAD's associated data, so no header field can be changed without the body
failing to open. Every primitive is ``cryptography``'s; nothing here is a cipher.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import stat
from dataclasses import dataclass
from typing import Any, Final, Literal

import msgspec
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

from memory_es.errors import IntegrityError, MemoryEsError
from memory_es.keystore import valid_root_id

MAGIC: Final = b"memory-es-backup 1\n"
FORMAT: Final = "memory-es-backup"
VERSION: Final = 1
MAX_HEADER_BYTES: Final = 4096
# scrypt at 2**17 x 8: about 0.4 s and 128 MiB here, above the interactive setting, since a
# backup file can be attacked offline; the numbers are in the header (a later version may
# raise them), and a header asking for more than the bounds below is refused before any
# memory is spent on it (the header is authenticated only once the key is derived).
SCRYPT_N: Final = 2**17
SCRYPT_R: Final = 8
SCRYPT_P: Final = 1
MAX_SCRYPT_N: Final = 2**20
MAX_SCRYPT_R: Final = 16
MAX_SCRYPT_P: Final = 4
MIN_PASSPHRASE: Final = 8
MIN_KEY_FILE: Final = 32
_INFO: Final = b"memory-es backup v1"

Protection = Literal["passphrase", "key-file", "none"]


class BackupError(MemoryEsError):
    """A backup file that cannot be read as asked: malformed, locked, or its secret wrong."""


@dataclass(frozen=True)
class Secret:
    """What protects a backup: a passphrase, a key file's bytes, or nothing (``none``)."""

    kind: Protection
    value: bytes = b""

    @classmethod
    def from_file(cls, kind: Protection, path: str) -> Secret:
        """The passphrase on the first line of ``path`` or the key file's bytes; the file must
        be owner-only, like a config holding a DSN (its content is never in a message)."""
        try:  # O_NONBLOCK: a FIFO opens at once, then fails the regular-file check
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
        except OSError as e:
            raise BackupError(f"backup_secret_unreadable: cannot read {path}: "
                              f"{e.strerror or e}", code="backup_secret_unreadable") from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() \
                    or stat.S_IMODE(st.st_mode) & 0o077:
                raise BackupError(f"backup_secret_unsafe: {path} must be a regular file of "
                                  "yours with mode 0600 (no group or other access)",
                                  code="backup_secret_unsafe")
            data = os.read(fd, 1 << 16)
        finally:
            os.close(fd)
        if kind == "passphrase":
            data = data.split(b"\n", 1)[0].rstrip(b"\r")
            if len(data) < MIN_PASSPHRASE:
                raise BackupError(f"backup_secret_weak: the passphrase in {path} has fewer "
                                  f"than {MIN_PASSPHRASE} characters",
                                  code="backup_secret_weak")
        elif len(data) < MIN_KEY_FILE:
            raise BackupError(f"backup_secret_weak: the key file {path} holds fewer than "
                              f"{MIN_KEY_FILE} bytes (e.g. head -c 32 /dev/urandom > FILE)",
                              code="backup_secret_weak")
        return cls(kind, data)


NONE = Secret("none")


class Body(msgspec.Struct, frozen=True, array_like=True):
    """Everything a restore needs: the journal exactly as stored and the keys that open it."""

    chain_key: bytes
    keyed_from: int
    rows: list[tuple[int, str, int, str, bytes, bytes]]
    payloads: list[tuple[str, str, bytes]]
    record_keys: list[tuple[int, bytes]]
    destroyed: list[int]
    ledger: list[dict[str, Any]]


class Header(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    backup_id: str
    chain: str
    created_at: str
    format: str
    position: int
    protection: dict[str, Any]
    root_id: str
    version: int


def _canonical(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def _key(secret: Secret, protection: dict[str, Any]) -> bytes:
    salt = base64.b64decode(protection["salt"])
    if secret.kind == "passphrase":
        n, r, p = int(protection["n"]), int(protection["r"]), int(protection["p"])
        if not (2 <= n <= MAX_SCRYPT_N and 1 <= r <= MAX_SCRYPT_R and 1 <= p <= MAX_SCRYPT_P):
            raise ValueError(f"scrypt cost n={n} r={r} p={p} is out of bounds")
        return Scrypt(salt=salt, length=32, n=n, r=r, p=p).derive(secret.value)
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=salt, info=_INFO).derive(secret.value)


def seal(header: dict[str, Any], body: Body, secret: Secret) -> bytes:
    """The file's bytes: ``header`` (without ``protection``, added here) and ``body``."""
    plain = msgspec.msgpack.encode(body)
    protection: dict[str, Any] = {"kind": secret.kind}
    if secret.kind == "none":
        protection["sha256"] = hashlib.sha256(plain).hexdigest()
    else:
        protection |= {"cipher": "aes-256-gcm",
                       "nonce": base64.b64encode(os.urandom(12)).decode(),
                       "salt": base64.b64encode(os.urandom(16)).decode()}
        if secret.kind == "passphrase":
            protection |= {"kdf": "scrypt", "n": SCRYPT_N, "r": SCRYPT_R, "p": SCRYPT_P}
        else:
            protection["kdf"] = "hkdf-sha256"
    line = _canonical({**header, "format": FORMAT, "protection": protection,
                       "version": VERSION}) + b"\n"
    if secret.kind == "none":
        return MAGIC + line + plain
    nonce = base64.b64decode(protection["nonce"])
    return MAGIC + line + AESGCM(_key(secret, protection)).encrypt(nonce, plain, line)


def read_file(path: str | os.PathLike[str]) -> bytes:
    """A backup file's bytes: a regular file (a FIFO or a device is refused, never read
    without end) that starts with the magic line (anything else is not read further)."""
    where = os.fspath(path)
    try:
        fd = os.open(where, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as e:
        raise MemoryEsError(f"not_found: cannot read {where}: {e.strerror or e}",
                            code="not_found") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise BackupError(f"backup_malformed: {where} is not a regular file",
                              code="backup_malformed")
        with os.fdopen(os.dup(fd), "rb") as f:
            if f.read(len(MAGIC)) != MAGIC:
                raise BackupError(f"backup_malformed: {where}: not a memory-es backup",
                                  code="backup_malformed")
            return MAGIC + f.read()
    finally:
        os.close(fd)


def read_header(data: bytes, where: str) -> tuple[Header, bytes, bytes]:
    """(header, its line, the body's bytes) of a backup file's content."""
    if not data.startswith(MAGIC):
        raise BackupError(f"backup_malformed: {where}: not a memory-es backup",
                          code="backup_malformed")
    end = data.find(b"\n", len(MAGIC), len(MAGIC) + MAX_HEADER_BYTES)
    if end < 0:
        raise BackupError(f"backup_malformed: {where}: its header is cut short",
                          code="backup_malformed")
    line = data[len(MAGIC):end + 1]
    try:
        header = msgspec.json.decode(line, type=Header)
    except msgspec.DecodeError as e:
        raise BackupError(f"backup_malformed: {where}: header: {e}",
                          code="backup_malformed") from None
    if header.format != FORMAT or header.version != VERSION:
        raise BackupError(f"backup_malformed: {where}: format {header.format!r} version "
                          f"{header.version}, expected {FORMAT!r} {VERSION}",
                          code="backup_malformed")
    if not valid_root_id(header.root_id) or header.position < 0:
        raise BackupError(f"backup_malformed: {where}: its header names no root",
                          code="backup_malformed")
    return header, line, data[end + 1:]


def open_body(data: bytes, secret: Secret | None, where: str) -> tuple[Header, Body]:
    """The header and body of a backup file's content, opened with ``secret``."""
    header, line, raw = read_header(data, where)
    kind = header.protection.get("kind")
    if kind == "none":
        if secret is not None and secret.kind != "none":
            raise BackupError(f"backup_not_encrypted: {where} is not encrypted; leave out "
                              "--passphrase-file / --key-file", code="backup_not_encrypted")
        if not hmac.compare_digest(hashlib.sha256(raw).hexdigest(),
                                   str(header.protection.get("sha256", ""))):
            raise IntegrityError(f"{where}: the backup's body does not match its checksum",
                                 code="backup_corrupt")
        plain = raw
    else:
        if secret is None or secret.kind != kind:
            flag = "--passphrase-file" if kind == "passphrase" else "--key-file"
            raise BackupError(f"backup_secret_required: {where} is encrypted under a "
                              f"{kind}; give it with {flag}", code="backup_secret_required")
        try:
            nonce = base64.b64decode(header.protection["nonce"])
            plain = AESGCM(_key(secret, header.protection)).decrypt(nonce, raw, line)
        except InvalidTag:
            raise BackupError(f"backup_secret_wrong: the {kind} does not open {where} (or "
                              "the file was altered)", code="backup_secret_wrong") from None
        except (KeyError, ValueError, TypeError) as e:
            raise BackupError(f"backup_malformed: {where}: protection: {e}",
                              code="backup_malformed") from None
    try:
        body = msgspec.msgpack.decode(plain, type=Body)
    except msgspec.DecodeError as e:
        raise IntegrityError(f"{where}: the backup's body does not decode: {e}",
                             code="backup_corrupt") from None
    if len(body.chain_key) != 32 or any(len(k) != 32 for _, k in body.record_keys) \
            or not all(isinstance(e.get("backup_id"), str) for e in body.ledger):
        raise IntegrityError(f"{where}: the backup's keys or ledger are malformed",
                             code="backup_corrupt")
    return header, body
