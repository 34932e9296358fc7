"""The pending-vector queue (D6, D9, B25): which live memories of a generation lack a vector of
the configured identity, embedding them (cache first, at most 256 texts / 2 MiB in flight, in
batches of 32) and writing them back. The provider is called between these steps, without any
store lock held; until a memory has its vector, recall finds it lexically (D9).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import apsw
import numpy as np

from memory_es.embeddings import BATCH_SIZE, Embedder, EmbeddingError
from memory_es.ids import sha256_hex
from memory_es.indexread import optional_rows
from memory_es.vectors.cache import VectorCache, read_only_cache
from memory_es.vocabulary import TERMINAL_SQL

if TYPE_CHECKING:
    from memory_es.config import EmbeddingsConfig, MemoryConfig

log = logging.getLogger("memory_es")

MAX_IN_FLIGHT = 256  # D6: at most 256 texts ...
MAX_IN_FLIGHT_BYTES = 2 * 1024 * 1024  # ... and 2 MiB in flight


def embeddings_block(config: MemoryConfig) -> EmbeddingsConfig | None:
    """The embeddings block the index's vectors are made with, or None: Lite never embeds
    (D2), and a config without a ``memory.embeddings`` block has no provider."""
    return config.embeddings if config.mode != "lite" else None


@dataclass
class PendingTexts:
    """Memories of the active generation that wait for a vector of this identity."""

    rowids: list[int]
    texts: list[str]


def pending_texts(conn: apsw.Connection, identity: str, limit: int = MAX_IN_FLIGHT) -> PendingTexts:
    """Up to ``limit`` texts (and at most 2 MiB) lacking a vector for ``identity`` (D6).

    A changed identity drops every vector and queues every memory again (B25). Reads only the
    queue the projection keeps (``vector_pending``), never every memory.
    """
    row: Any = conn.execute("SELECT value FROM meta WHERE key = 'vector_identity'").fetchone()
    if row is None or row[0] != identity:
        with conn:
            conn.execute("DELETE FROM vectors WHERE identity != ?", (identity,))
            conn.execute("INSERT OR IGNORE INTO vector_pending SELECT m.rowid FROM memories m "
                         "LEFT JOIN vectors v ON v.rowid = m.rowid WHERE v.rowid IS NULL")
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('vector_identity', ?)", (identity,))
    rows = conn.execute(
        # CROSS JOIN: the few waiting rows first, each one memory looked up (without
        # statistics the planner would scan every memory instead: 34 ms at 100,000)
        "SELECT m.rowid, m.text FROM vector_pending p CROSS JOIN memories m ON m.rowid = p.rowid "
        f"WHERE m.status NOT IN {TERMINAL_SQL} ORDER BY p.rowid LIMIT ?", (limit,))
    pending = PendingTexts([], [])
    size = 0
    for rowid, text in rows:
        size += len(text.encode("utf-8"))
        if pending.rowids and size > MAX_IN_FLIGHT_BYTES:
            break
        pending.rowids.append(rowid)
        pending.texts.append(text)
    return pending


def embed_texts(embedder: Embedder, cache: VectorCache | None,
                texts: Sequence[str]) -> list[bytes]:
    """float32 vectors for ``texts``: cached ones reused, the rest embedded in batches of 32.

    Raises EmbeddingError when the provider fails; nothing is cached for a failed batch.
    """
    identity = embedder.identity.key
    shas = [sha256_hex(t) for t in texts]
    cached = cache.get_many(identity, shas) if cache is not None else {}
    missing = [i for i, sha in enumerate(shas) if sha not in cached]
    for start in range(0, len(missing), BATCH_SIZE):
        chunk = missing[start:start + BATCH_SIZE]
        vectors = embedder.embed([texts[i] for i in chunk])
        fresh = [(shas[i], vectors[n].astype(np.float32).tobytes()) for n, i in enumerate(chunk)]
        cached.update(fresh)
        if cache is not None:
            cache.put_many(identity, fresh)
    return [cached[sha] for sha in shas]


def vector_backlog(conn: apsw.Connection, identity: str) -> int:
    """Live memories that lack a vector of ``identity`` (recall finds them lexically until
    they have one, D9). A generation whose vectors belong to another identity has them all."""
    row: Any = conn.execute("SELECT value FROM meta WHERE key = 'vector_identity'").fetchone()
    if row is None or row[0] != identity:
        live: Any = conn.execute(
            f"SELECT count(*) FROM memories WHERE status NOT IN {TERMINAL_SQL}").fetchone()
        return int(live[0])
    waiting = optional_rows(
        conn, "SELECT count(*) FROM vector_pending p CROSS JOIN memories m ON m.rowid = p.rowid "
              f"WHERE m.status NOT IN {TERMINAL_SQL}", ())
    return int(waiting[0][0]) if waiting else 0


def fill_vectors(conn: apsw.Connection, embedder: Embedder, cache: VectorCache | None,
                 *, deadline: float | None = None) -> int:
    """Embed every live memory of ``conn`` that lacks a vector (cache first, B25), batch by
    batch, until none is left, the provider fails or ``deadline`` (monotonic) passes.

    Returns the backlog left (0 when complete). Raises ``EmbeddingError`` from the provider;
    what was stored before stays.
    """
    identity = embedder.identity.key
    while deadline is None or time.monotonic() < deadline:
        pending = pending_texts(conn, identity)
        if not pending.rowids:
            return 0
        store_vectors(conn, identity, pending.rowids,
                      embed_texts(embedder, cache, pending.texts))
    return vector_backlog(conn, identity)


def fill_read_only(root: Path, conn: apsw.Connection, embedder: Embedder) -> None:
    """Vectors for a read-only door's throwaway index (an as-of fold): the root's cache read
    only, the rest from the provider and kept nowhere; an outage leaves them lexical (D9)."""
    cache = read_only_cache(root)
    try:
        fill_vectors(conn, embedder, cache)
    except EmbeddingError as e:
        log.warning("memory_degraded: as-of recall without some vectors (code=%s)", e.code)
    finally:
        if cache is not None:
            cache.close()


def store_vectors(conn: apsw.Connection, identity: str, rowids: Sequence[int],
                  blobs: Sequence[bytes]) -> None:
    with conn:  # a row forgotten while its text was being embedded gets no vector
        conn.executemany("INSERT OR REPLACE INTO vectors SELECT ?, ?, ? WHERE EXISTS "
                         "(SELECT 1 FROM memories WHERE rowid = ?)",
                         [(r, identity, b, r) for r, b in zip(rowids, blobs, strict=True)])
        conn.executemany("DELETE FROM vector_pending WHERE rowid = ?", [(r,) for r in rowids])
