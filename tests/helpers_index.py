"""The active index generation of a root, for tests; not a test module.

Reading goes through ``projections.derived.open_active_index`` (read-only, the one way the
library opens it too). Tests that tamper with the index behind the library's back take its
path from :func:`active_index_path` and open it read-write themselves.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import apsw

from projections.derived import generation_path, open_active_index, read_current


def index_connection(root: Path) -> apsw.Connection:
    """The active index, opened read-only (the caller closes it); the root must have one."""
    conn = open_active_index(root)
    assert conn is not None, f"{root}: no active index generation"
    return conn


@contextmanager
def active_index(root: Path) -> Iterator[apsw.Connection]:
    """The active index, opened read-only for the ``with`` block."""
    conn = index_connection(root)
    try:
        yield conn
    finally:
        conn.close()


def index_rows(root: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every row ``sql`` selects from the active index, as tuples."""
    with active_index(root) as conn:
        return [tuple(row) for row in conn.execute(sql, params)]


def active_index_path(root: Path) -> Path:
    """The active generation's database file (to tamper with it read-write)."""
    generation = read_current(root)
    assert generation is not None, f"{root}: no active index generation"
    return generation_path(root, generation)


def journal_bytes(root: Path) -> bytes:
    """Every stored byte of a root's SQLite journal (the database, its WAL and catalog)."""
    return b"".join(p.read_bytes() for p in sorted(root.glob("journal.db*")))
