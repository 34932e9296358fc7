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

from memory_es.fsutil import check_private, create_private_file, make_private_dir

RUNTIME_DIR = ".runtime"
LOCK_FILE = "projection.lock"


@contextlib.contextmanager
def projection_lock(root: Path, *, shared: bool) -> Iterator[None]:
    """Hold the root's projection lock: ``shared`` for a reader (nothing is created: a root
    no writer ever projected has no lock and needs none), exclusive for a writer."""
    path = Path(root) / RUNTIME_DIR / LOCK_FILE
    fd = _open_shared(path) if shared else _open_exclusive(path)
    if fd is None:
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the flock


def _open_shared(path: Path) -> int | None:
    try:
        check_private(path, is_dir=False)
        return os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None


def _open_exclusive(path: Path) -> int:
    make_private_dir(path.parent)
    try:
        return create_private_file(path)
    except FileExistsError:
        check_private(path, is_dir=False)
        return os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
