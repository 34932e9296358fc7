"""How a rebuildable SQLite file (an index generation, the vector cache) is opened.

Kept apart from the index projection so that a reader can open one without importing the event
classes the projection folds.
"""

from __future__ import annotations

import os
from pathlib import Path

import apsw

from memory_es.fsutil import create_private_file

IN_MEMORY = Path(":memory:")  # the throwaway projection of an as-of recall


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
