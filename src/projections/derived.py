"""Where the index's generations are and how a rebuildable SQLite file (an index generation,
the vector cache) is opened.

Kept apart from the projection and rebuild (:mod:`projections.replay`) so that a reader finds
and opens the active generation without importing the event classes and renderers they use.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import apsw

from memory_es.errors import IndexUnavailableError, MemoryEsError, UnsafePathError, io_problem
from memory_es.fsutil import check_private, create_private_file

IN_MEMORY = Path(":memory:")  # the throwaway projection of an as-of recall
INDEX_DIR = "index"
CURRENT_FILE = "CURRENT"
INDEX_DB = "memory.db"


def connect_derived(path: Path, *, create: bool = False) -> apsw.Connection:
    """A rebuildable SQLite file (index generation, vector cache): owner-only, never through
    a symlink, WAL with synchronous=NORMAL (the journal, not this file, is what must survive).
    :data:`IN_MEMORY` is a private in-memory database (an as-of fold: nothing touches disk)."""
    if path == IN_MEMORY:
        return apsw.Connection(":memory:")
    if create:
        os.close(create_private_file(path))
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_NOFOLLOW)
    conn.setbusytimeout(5000)
    conn.execute("PRAGMA journal_mode=WAL").fetchall()
    conn.execute("PRAGMA synchronous=NORMAL")
    return conn


def read_current(root: Path) -> int | None:
    """The active generation number, or None when no index was ever activated."""
    path = root / INDEX_DIR / CURRENT_FILE
    if not os.path.lexists(path):
        return None
    check_private(path, is_dir=False)
    text = path.read_text("ascii", errors="replace").strip()
    if not text.startswith("gen-") or not text[4:].isdigit():
        raise MemoryEsError(f"{path}: not a generation pointer; run memory-es rebuild",
                            code="index_pointer_invalid")
    return int(text[4:])


def generation_path(root: Path, generation: int) -> Path:
    return root / INDEX_DIR / f"gen-{generation}" / INDEX_DB


def unreadable(db: Path, error: BaseException) -> IndexUnavailableError:
    """The one error for an index generation SQLite cannot open: ``io_error`` when the disk
    is full or failing (a rebuild would not help), else ``index_unreadable``."""
    problem = io_problem(error)
    if problem is not None:
        return IndexUnavailableError(
            f"{db}: cannot open the index ({problem}); it catches up once the disk can be "
            "written again", code="io_error")
    return IndexUnavailableError(
        f"{db}: index unreadable ({type(error).__name__}); run memory-es rebuild",
        code="index_unreadable")


def check_index_files(db: Path, *, writer: bool) -> None:
    """The generation's file and SQLite's ``-wal`` / ``-shm`` beside it are regular files,
    never a symlink SQLite would follow, else :class:`IndexUnavailableError`. A ``writer``
    (which writes them) also needs them private: ours, 0600, one link (B16, B17); a reader
    leaves those rules to health's hygiene findings."""
    if not os.path.lexists(db):
        raise IndexUnavailableError(
            f"{db}: active index generation is missing; run memory-es rebuild",
            code="index_missing")
    for path in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue
        try:
            if writer:
                check_private(path, is_dir=False)
            elif not stat.S_ISREG(st.st_mode):
                raise UnsafePathError(f"{path}: is not a regular file", code="not_a_regular_file")
        except UnsafePathError as e:
            raise IndexUnavailableError(f"{e}; run memory-es rebuild",
                                        code="index_unreadable") from e


READER_MMAP_BYTES = 1 << 30  # address space, not memory: pages stay the OS's page cache


def open_active_index(root: Path) -> apsw.Connection | None:
    """The active generation's index, opened read-only; None when none was ever activated.
    A generation that is missing or not a regular file raises :class:`IndexUnavailableError`;
    one SQLite cannot parse raises ``apsw.Error`` at its first query (opening reads nothing,
    so a call refused after this leaves the root as it was)."""
    generation = read_current(root)
    if generation is None:
        return None
    db = generation_path(root, generation)
    check_index_files(db, writer=False)
    try:
        conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY
                               | apsw.SQLITE_OPEN_NOFOLLOW)
        # A writer opening or closing the same generation briefly holds WAL recovery or a
        # checkpoint: a reader waits for it (as the writer's own connections do) instead of
        # raising BusyError into the host (found by tests/test_open_close_cycles.py).
        conn.setbusytimeout(5000)
        # Pages read through a mapping, not a read() each: a cold reader loads every vector
        # of the generation (one 2 KiB row to a page) in about half the time. The pragma
        # reads nothing either; SQLite maps only what the file holds at each transaction.
        conn.execute(f"PRAGMA mmap_size={READER_MMAP_BYTES}").fetchall()
    except (apsw.Error, OSError) as e:
        raise unreadable(db, e) from e
    return conn
