"""Vector upkeep for a writable store: the embedder, the vector cache and the in-memory matrix.

The provider is always called with no lock held; an outage pauses embedding for a while and
recall meanwhile finds those memories lexically (D9). Lite never embeds (D2, N14).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import apsw
import numpy as np

from memory_es.config import MemoryConfig
from memory_es.embeddings import Embedder, EmbeddingError, make_embedder
from memory_es.errors import MemoryEsError
from memory_es.store.admission import GroupCommit
from memory_es.store.projecting import LiveProjections
from memory_es.vectors.ann import discard_all
from memory_es.vectors.cache import VectorCache
from memory_es.vectors.matrix import VectorMatrix
from memory_es.vectors.pending import (
    embed_texts,
    fill_vectors,
    pending_texts,
    store_vectors,
    vector_backlog,
)
from projections.derived import open_active_index
from projections.sqlite_index import IndexProjection

log = logging.getLogger("memory_es")
EMBED_RETRY_SECONDS = 30.0  # after a provider outage, try again this much later


class Vectors:
    """Embeds what the index queues, keeps the matrix current and answers nearest-neighbour
    reads for capture."""

    def __init__(self, config: MemoryConfig, root: Path, embedder: Embedder | None,
                 journal: GroupCommit, projections: LiveProjections) -> None:
        self._config = config
        self._root = root
        self._embedder = embedder
        self._journal = journal
        self._projections = projections
        self._cache: VectorCache | None = None
        self._matrix: VectorMatrix | None = None
        self._matrix_rewrites = 0  # entries of the index's ``rewritten`` the matrix has seen
        self._pause_until = 0.0  # monotonic instant before which the provider is not asked
        self._create = threading.Lock()

    def embedder(self) -> Embedder | None:
        """The embedder for this tier, created on first use; None for Lite."""
        if self._config.mode == "lite":
            return None
        with self._create:  # the worker and the host's thread both ask first: create once
            if self._embedder is None and self._config.embeddings is not None:
                self._embedder = make_embedder(self._config.embeddings)
            if self._embedder is not None and self._cache is None:
                self._cache = VectorCache(self._root)
        return self._embedder

    @property
    def paused(self) -> bool:
        """True while a recent provider outage holds embedding back."""
        return time.monotonic() < self._pause_until

    def embed_pending(self) -> int:
        """Embed memories that lack a vector (batches of 32, at most 256 / 2 MiB in flight);
        returns how many were embedded."""
        embedder = self.embedder()
        if embedder is None or self.paused:
            return 0
        identity = embedder.identity.key
        with self._projections.hold():
            pending = pending_texts(self._projections.get().index.conn, identity)
        if not pending.rowids:
            return 0
        try:
            blobs = embed_texts(embedder, self._cache, pending.texts)
        except EmbeddingError as e:
            self._pause_until = time.monotonic() + EMBED_RETRY_SECONDS
            log.warning("memory_degraded: embedding unavailable (code=%s); lexical recall "
                        "until the provider answers", e.code)
            return 0
        with self._projections.hold():
            conn = self._projections.get().index.conn
            self._purge_forgotten(conn, pending.rowids, pending.texts)
            store_vectors(conn, identity, pending.rowids, blobs)
            self.matrix(embedder, conn)
        return len(pending.rowids)

    def _purge_forgotten(self, conn: apsw.Connection, rowids: Sequence[int],
                         texts: Sequence[str]) -> None:
        """A forget that landed while these texts were embedding (no hold is kept across the
        provider call) erased some of them: their vectors, just cached, go too."""
        from memory_es.ids import sha256_hex
        from memory_es.store.forgetting import purge_vector_cache

        present = {r[0] for r in conn.execute(
            f"SELECT rowid FROM memories WHERE rowid IN ({','.join('?' * len(rowids))})",
            list(rowids))} if rowids else set()
        gone = [sha256_hex(text) for rowid, text in zip(rowids, texts, strict=True)
                if rowid not in present]
        if gone:
            purge_vector_cache(self._root, gone)

    def fill(self, index: IndexProjection) -> None:
        """Vectors for a new generation before it is activated (D10, C8): from the cache
        (no provider call for unchanged text, B25), the rest from the provider. An outage
        leaves those to the worker; recall meanwhile finds them lexically (D9)."""
        embedder = self.embedder()
        if embedder is None:
            return
        try:
            fill_vectors(index.conn, embedder, self._cache)
        except EmbeddingError as e:
            log.warning("memory_degraded: rebuild without some vectors (code=%s)", e.code)

    def embed_all(self, deadline: float | None) -> int:
        """Embed until nothing waits, the provider fails or ``deadline`` (monotonic) passes;
        returns how many were embedded (``drain``: every path leaves recall complete)."""
        done = 0
        while deadline is None or time.monotonic() < deadline:
            embedded = self.embed_pending()
            if not embedded:
                break
            done += embedded
        return done

    def backlog(self) -> int | None:
        """Live memories still waiting for a vector of this store's identity; None when this
        tier or config never embeds."""
        embedder = self.embedder()
        if embedder is None:
            return None
        with self._journal.exclusive():
            return vector_backlog(self._projections.get().index.conn, embedder.identity.key)

    def backlog_nowait(self) -> int | None:
        """:meth:`backlog` read through its own read-only connection to the active index,
        without holding the journal (the snapshot publisher must never stall admission);
        None when this store never embeds or the index cannot be read."""
        embedder = self.embedder()
        if embedder is None:
            return None
        try:
            conn = open_active_index(self._root)
        except (MemoryEsError, apsw.Error, OSError):
            return None
        if conn is None:
            return 0
        try:
            return vector_backlog(conn, embedder.identity.key)
        except apsw.Error:
            return None
        finally:
            conn.close()

    def matrix(self, embedder: Embedder, conn: Any) -> VectorMatrix:
        """The in-memory matrix for this identity (a new identity starts a new one), told which
        rows went stale since it last looked (text updates, invalidations), then refreshed.
        The caller holds the journal."""
        index = self._projections.get().index
        rewritten = index.rewritten
        if self._matrix is None or self._matrix.identity != embedder.identity.key \
                or self._matrix_rewrites > len(rewritten):
            self.forget_matrix()
            # a long-lived writer: past the threshold an ANN index, kept beside the generation
            self._matrix = VectorMatrix(embedder.identity.dim, embedder.identity.key,
                                        approximate=True, ann_dir=index.path.parent)
            self._matrix_rewrites = len(rewritten)
        if self._matrix_rewrites < len(rewritten):
            self._matrix.forget(rewritten[self._matrix_rewrites:])
            self._matrix_rewrites = len(rewritten)
        self._matrix.refresh(conn, embedder.identity.key)
        return self._matrix

    def rows_removed(self) -> None:
        """A forget removed rows: the live ANN index is never saved again and no ANN file of
        the generation keeps their vectors."""
        if self._matrix is not None:
            self._matrix.rows_removed()
        discard_all(self._projections.get().index.path.parent)

    def forget_matrix(self) -> None:
        """A rebuilt index has new row ids: the matrix starts over."""
        if self._matrix is not None:
            self._matrix.close()
        self._matrix = None

    def candidates(self, texts: Sequence[str]) -> list[Any] | None:
        """Vectors for capture's candidate texts, after embedding every stored line that lacks
        one; None while the provider is unavailable (the capture retries, DESIGN 9.10)."""
        embedder = self.embedder()
        if embedder is None:
            return None
        while self.embed_pending():
            pass  # cheap when nothing waits: the projection keeps the queue
        if self.paused:
            return None
        if not texts:
            return []
        try:
            return [np.frombuffer(blob, dtype=np.float32)
                    for blob in embed_texts(embedder, self._cache, list(texts))]
        except EmbeddingError as e:
            log.warning("memory_degraded: capture waits for embeddings (code=%s)", e.code)
            return None

    def nearest(self, vectors: list[Any], k: int) -> list[list[tuple[int, float]]]:
        """The k nearest stored rows for each vector (capture's reconcile offer)."""
        embedder = self.embedder()
        assert embedder is not None
        with self._journal.exclusive():
            matrix = self.matrix(embedder, self._projections.get().index.conn)
            return matrix.top_many(vectors, k)

    def close(self) -> None:
        self.forget_matrix()  # stops an index build, keeps a grown index for the next open
        if self._cache is not None:
            self._cache.close()
