"""The root's MemoryJournal cursor key (I6).

32 random bytes in ``.runtime/journal-cursor.key``: owner-only (0600 in a 0700 directory,
opened without following a symlink and refused when a symlink, foreign-owned, group/other
readable or hard-linked, B16/B17). It is runtime state, like the worker's snapshot: never an
event, never in a projection, an export or a replayed root, so a cursor from one root fails on
any other. It is made by the first call that must sign a cursor (a reader too: it is the one
file a read-only handle may create, and only in ``.runtime/``), published with a hard link so
two processes racing to make it agree on one key and no reader ever sees a partial file.
Deleting it retires every cursor issued so far (they fail ``journal_cursor_invalid``).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import time
from pathlib import Path

from memory_es.errors import MemoryEsError, UnsafePathError
from memory_es.fsutil import check_private, fsync_dir, make_private_dir, private_temp

RUNTIME_DIR = ".runtime"
KEY_FILE = "journal-cursor.key"
KEY_BYTES = 32
_LINK_WAIT = 0.5  # seconds a reader waits out another process publishing the key


def key_path(root: Path) -> Path:
    return root / RUNTIME_DIR / KEY_FILE


class RootCursorKey:
    """The cursor key of one root, read on first use and kept for the handle's life."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._key: bytes | None = None

    def __call__(self, create: bool) -> bytes | None:
        """The key; None when there is none and ``create`` is false (verifying a cursor
        never makes a key: no key, no cursor of this root)."""
        if self._key is None:
            self._key = _read(key_path(self._root)) or (_create(self._root) if create
                                                         else None)
        return self._key


def _read(path: Path) -> bytes | None:
    deadline = time.monotonic() + _LINK_WAIT
    while True:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        except OSError as e:  # ELOOP: a symlink where the key should be
            check_private(path, is_dir=False)
            raise UnsafePathError(f"{path}: cannot open the cursor key ({e.strerror})",
                                  code="unsafe_path") from e
        try:
            st = os.fstat(fd)
            if st.st_nlink == 2 and stat.S_ISREG(st.st_mode) and time.monotonic() < deadline:
                time.sleep(0.01)  # another process is between link and unlink (_create)
                continue
            check_private(path, is_dir=False)
            data = os.read(fd, KEY_BYTES + 1)
        finally:
            os.close(fd)
        if len(data) != KEY_BYTES:
            raise MemoryEsError(
                f"journal_unavailable: the cursor key {RUNTIME_DIR}/{KEY_FILE} is damaged "
                f"({len(data)} bytes, expected {KEY_BYTES}); delete it (cursors issued so far "
                "stop working)", code="journal_unavailable")
        return data


def _create(root: Path) -> bytes:
    """Publish a fresh key unless another process got there first; returns the key in use."""
    path = key_path(root)
    try:
        make_private_dir(root / RUNTIME_DIR)
        fd, tmp = private_temp(path)
        try:
            try:
                os.write(fd, secrets.token_bytes(KEY_BYTES))
                os.fsync(fd)
            finally:
                os.close(fd)
            with contextlib.suppress(FileExistsError):  # never replaces a key in use
                os.link(tmp, path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        fsync_dir(path.parent)
    except OSError as e:
        raise MemoryEsError(
            f"journal_unavailable: cannot create the cursor key {RUNTIME_DIR}/{KEY_FILE} "
            f"({e.strerror or type(e).__name__}); a cursor needs it", code="journal_unavailable"
        ) from e
    key = _read(path)
    if key is None:  # deleted between link and read: someone is retiring keys; refuse
        raise MemoryEsError("journal_unavailable: the cursor key vanished while it was made",
                            code="journal_unavailable")
    return key
