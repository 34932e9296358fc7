"""A read-only door's vector matrix, kept between its reads (D4).

A one-shot reader reads every vector of the active generation for its question; a long-lived
reader (the web inspector, a host's read-only handle) would read them again for every one.
:class:`KeptMatrix` keeps the matrix and, on the next read, only catches up: it is reused while
the generation file, the journal position the index has folded and the embedding identity are
the ones it was loaded under, and read afresh otherwise. That key is sound because every change
to a row's stored vector other than a first one comes with a journal event (a rewritten text,
a status that leaves recall, a forget) or a new generation (a rebuild), and a first vector is
what :meth:`VectorMatrix.refresh` picks up incrementally (new rowids, and pending rows that got
theirs).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw

from memory_es.embeddings import Embedder
from memory_es.history import index_position
from memory_es.vectors.matrix import VectorMatrix

# file, device, inode, folded position, the index's vector identity, the embedder's identity
Key = tuple[str, int, int, int, str, str]


def _key(conn: apsw.Connection, identity: str) -> Key:
    """What the kept matrix was loaded under. The index's own vector identity is part of it:
    a writer switching models drops the other identity's vectors with no event of its own."""
    if not conn.filename:
        raise FileNotFoundError("an index in memory")
    stat = os.stat(conn.filename)
    row: Any = conn.execute("SELECT value FROM meta WHERE key = 'vector_identity'").fetchone()
    return (conn.filename, stat.st_dev, stat.st_ino, index_position(conn),
            "" if row is None else str(row[0]), identity)


@contextlib.contextmanager
def _snapshot(conn: apsw.Connection) -> Iterator[None]:
    """One read transaction around the key and the refresh (unless the caller holds one): a
    vector the worker stores meanwhile is then either read now or still waiting next time."""
    if not conn.getautocommit():
        yield
        return
    conn.execute("BEGIN")
    try:
        yield
    finally:
        conn.execute("COMMIT")


class KeptMatrix:
    """Callable as a door's ``matrix`` (``(embedder, conn) -> VectorMatrix``); hold
    :attr:`lock` around the read that uses the matrix, so another thread's catch-up never
    moves rows under a search."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._key: Key | None = None
        self._matrix: VectorMatrix | None = None

    def __call__(self, embedder: Embedder, conn: apsw.Connection) -> VectorMatrix:
        identity = embedder.identity
        with _snapshot(conn):  # the key and the rows it reads: one state of the index
            try:
                key = _key(conn, identity.key)
            except OSError:  # an index folded in memory for this read (a forget's), or a
                key = None  # generation a rebuild just removed: read it, keep nothing
            if key is None:
                matrix = VectorMatrix(identity.dim, identity.key)
                matrix.refresh(conn, identity.key)
                return matrix
            if self._matrix is None or key != self._key:
                self.clear()  # the old matrix's memory goes now, not at a later collection
                # the generation's saved ANN index when it covers these rows (a quiet root);
                # nothing is written beside it, and otherwise the search is exact
                self._matrix = VectorMatrix(identity.dim, identity.key, approximate=True,
                                            ann_dir=Path(conn.filename).parent,
                                            saved_only=True)
                self._key = key
            self._matrix.refresh(conn, identity.key)
            return self._matrix

    def clear(self) -> None:
        """Drop the matrix (its memory goes with it)."""
        if self._matrix is not None:
            self._matrix.close()
        self._matrix, self._key = None, None
