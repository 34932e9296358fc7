"""One consistent view of the projections for a reader beside a live writer (N3, B24).

A projector's flush rewrites Markdown, ``graph.jsonl`` and the sidecar, then commits the index
position; a rebuild writes a whole generation and its files, then switches ``index/CURRENT``.
A reader that looked in between would see files of one position beside rows of another, and
health would report drift that is only work in flight. So writers take ``.runtime/projection.lock``
exclusively around each of those steps, and health takes it shared for as long as it reads
them: an flock on a file that holds nothing, released by the kernel if a process dies.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from memory_es.errors import UnsafePathError
from memory_es.fsutil import check_private, create_private_file, make_private_dir

RUNTIME_DIR = ".runtime"
LOCK_FILE = "projection.lock"


@contextlib.contextmanager
def projection_lock(root: Path, *, shared: bool) -> Iterator[bool]:
    """Hold the root's projection lock: ``shared`` for a reader, exclusive for a writer.
    Yields whether a lock is held: a reader creates nothing, so a root whose writer never made
    the lock file yields False (a writer makes it before its first index: ``ensure_lock``)."""
    path = Path(root) / RUNTIME_DIR / LOCK_FILE
    fd = _open_shared(path) if shared else _open_writable(path)
    if fd is None:
        yield False
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        yield True
    finally:
        os.close(fd)  # closing the descriptor releases the flock


def ensure_lock(root: Path) -> None:
    """Make the lock file before a writer creates any projection, so a reader that finds an
    index always finds the lock too."""
    fd = _open_writable(Path(root) / RUNTIME_DIR / LOCK_FILE)
    if fd is not None:
        os.close(fd)


def _open_writable(path: Path) -> int | None:
    """The lock file for a writer, made if absent; None when ``.runtime`` cannot hold it (not
    a directory, not ours: B21's case). Projection then goes on unlocked: the lock only spares
    a concurrent health run false drift, and the runtime directory is never worth a failed
    projection (health reports the unsafe path)."""
    try:
        return _open_exclusive(path)
    except (OSError, UnsafePathError):
        return None


def _open_shared(path: Path) -> int | None:
    """The lock file for reading, or None: absent, or not a safe file of ours (health reports
    that through its hygiene findings; it reads unlocked rather than trust such a file)."""
    try:
        check_private(path, is_dir=False)
        return os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except (OSError, UnsafePathError):
        return None


def _open_exclusive(path: Path) -> int:
    make_private_dir(path.parent)
    try:
        return create_private_file(path)
    except FileExistsError:
        check_private(path, is_dir=False)
        return os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
