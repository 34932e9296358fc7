"""The integrity catalog: the journal's high-water mark, kept outside the database (DESIGN 3).

An owner-only sibling file records the last committed ``(position, chain)``. It holds two
checksummed slots, written alternately, so a torn write of one slot always leaves the other
(older) slot valid. Older is safe: journal-ahead is the recoverable direction.
"""

from __future__ import annotations

import contextlib
import os
import struct
import time
import zlib
from pathlib import Path

from memory_es.errors import IntegrityError
from memory_es.fsutil import (
    crash_armed,
    crash_point,
    create_private_file,
    fsync_dir,
    open_private_file,
)
from memory_es.journal.chain import GENESIS

CATALOG_SYNC_INTERVAL = 1.0

_SLOT = struct.Struct("<4sQ32sI")
_SLOT_MAGIC = b"MESC"
_SLOT_SIZE = 64


def _pack_slot(position: int, chain: bytes) -> bytes:
    body = _SLOT_MAGIC + struct.pack("<Q", position) + chain
    return (body + struct.pack("<I", zlib.crc32(body))).ljust(_SLOT_SIZE, b"\0")


def _unpack_slot(raw: bytes) -> tuple[int, bytes] | None:
    if len(raw) < _SLOT.size:
        return None
    magic, position, chain, crc = _SLOT.unpack_from(raw)
    if magic != _SLOT_MAGIC or zlib.crc32(raw[: _SLOT.size - 4]) != crc:
        return None
    return position, chain


class Catalog:
    """The owner-only ``(position, chain)`` record of the last committed journal transaction.

    Each commit rewrites one slot in place; the file is fsynced at most once per
    CATALOG_SYNC_INTERVAL and on close. A crash (even power loss) can therefore only leave the
    catalog *behind* the journal, which open() recovers after verifying the suffix chain.
    """

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd = fd
        self._next_slot = 0
        self._last_sync = time.monotonic()
        self._dirty = False

    @classmethod
    def create(cls, path: Path) -> Catalog:
        fd = create_private_file(path)
        os.pwrite(fd, _pack_slot(0, GENESIS) + bytes(_SLOT_SIZE), 0)
        os.fsync(fd)
        fsync_dir(path.parent)
        return cls(path, fd)

    @classmethod
    def open(cls, path: Path, *, writable: bool) -> Catalog:
        fd = open_private_file(path, os.O_RDWR if writable else os.O_RDONLY)
        catalog = cls(path, fd)
        catalog.read()  # validates, and points the next write at the older slot
        return catalog

    def read(self) -> tuple[int, bytes]:
        raw = os.pread(self._fd, 2 * _SLOT_SIZE, 0)
        slots = [_unpack_slot(raw[i * _SLOT_SIZE : (i + 1) * _SLOT_SIZE]) for i in (0, 1)]
        valid = [(s, i) for i, s in enumerate(slots) if s is not None]
        if not valid:
            raise IntegrityError(
                f"{self.path}: integrity catalog is corrupt (no valid slot)", code="catalog_corrupt"
            )
        (position, chain), index = max(valid, key=lambda v: v[0][0])
        self._next_slot = 1 - index
        return position, chain

    def write(self, position: int, chain: bytes) -> None:
        data = _pack_slot(position, chain)
        offset = self._next_slot * _SLOT_SIZE
        if crash_armed("catalog.torn_write"):
            os.pwrite(self._fd, data[:20], offset)
            crash_point("catalog.torn_write")
        os.pwrite(self._fd, data, offset)
        self._next_slot = 1 - self._next_slot
        self._dirty = True
        crash_point("catalog.after_write")
        if time.monotonic() - self._last_sync >= CATALOG_SYNC_INTERVAL:
            self.sync()

    def sync(self) -> None:
        if self._dirty:
            os.fdatasync(self._fd)
            self._dirty = False
        self._last_sync = time.monotonic()

    def close(self) -> None:
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                self.sync()
            os.close(self._fd)
            self._fd = -1
