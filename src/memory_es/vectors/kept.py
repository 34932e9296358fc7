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

import os
import threading

import apsw

from memory_es.embeddings import Embedder
from memory_es.history import index_position
from memory_es.vectors.matrix import VectorMatrix

Key = tuple[str, int, int, int, str]  # file, device, inode, folded position, identity


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
        if not conn.filename:  # an index folded in memory for this read (a forget's): no file
            matrix = VectorMatrix(identity.dim, identity.key)  # to key it by, so never kept
            matrix.refresh(conn, identity.key)
            return matrix
        stat = os.stat(conn.filename)
        key = (conn.filename, stat.st_dev, stat.st_ino, index_position(conn), identity.key)
        if self._matrix is None or key != self._key:
            self._matrix = VectorMatrix(identity.dim, identity.key)  # the key names the axis
            self._key = key
        self._matrix.refresh(conn, identity.key)
        return self._matrix

    def clear(self) -> None:
        """Drop the matrix (its memory goes with it)."""
        self._matrix, self._key = None, None
