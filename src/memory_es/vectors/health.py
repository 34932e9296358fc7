"""What health reports of the index's vectors (N*, N12; content-free: counts and names only):
the vector cache damaged, or (``--deep``) holding entries no embedder could have produced; and
(``--deep``) a sample of stored vectors that are whole but not their text's embedding (a
poisoned cache refilled them). The read-only door calls these; they change nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import numpy as np

from memory_es.embeddings import Embedder, EmbeddingError
from memory_es.vectors.cache import CACHE_REL, cache_problem, invalid_cache_entries
from projections.findings import Finding

SAMPLE_VECTORS = 8  # health --deep re-embeds this many stored vectors' texts
SAMPLE_COSINE = 0.99  # ... and each must be at least this close to its fresh embedding


def cache_findings(root: Path, deep: bool) -> Iterator[Finding]:
    """The vector cache (a projection of the provider, not of events): damaged, or (``deep``)
    holding entries no embedder could have produced. Counts and names only (N12)."""
    why = cache_problem(root)
    if why is not None:
        yield Finding("vector_cache_damaged", CACHE_REL,
                      f"SQLite reports it damaged ({why}); a cache: the next writer open "
                      "deletes it and embeds again (or run memory-es rebuild)")
    elif deep and (bad := invalid_cache_entries(root)):
        yield Finding("vector_cache_invalid", CACHE_REL,
                      f"{bad} entries are not finite unit vectors of their dimension; the "
                      "next writer that reads them drops them and embeds again")


def sampled_rows(conn: apsw.Connection, identity: str) -> list[Any]:
    """(text, vector) of up to :data:`SAMPLE_VECTORS` stored vectors of ``identity``, spread
    over the index."""
    rowids = [int(r[0]) for r in conn.execute(
        "SELECT v.rowid FROM vectors v JOIN memories m ON m.rowid = v.rowid "
        "WHERE v.identity = ? ORDER BY v.rowid", (identity,))]
    picked = rowids[::max(1, len(rowids) // SAMPLE_VECTORS)][:SAMPLE_VECTORS]
    return [conn.execute(
        "SELECT m.text, v.vector FROM vectors v JOIN memories m ON m.rowid = v.rowid "
        "WHERE v.rowid = ?", (r,)).fetchone() for r in picked]


def sample_findings(rel: str, rows: list[Any], embedder: Embedder) -> Iterator[Finding]:
    """``vector_mismatch`` (at ``rel``, the index) when a sampled vector is not its text's
    embedding; a provider that does not answer samples nothing."""
    if not rows:
        return
    try:
        fresh = embedder.embed([str(text) for text, _ in rows])
    except EmbeddingError:
        return
    differ = 0
    for (_text, blob), vector in zip(rows, fresh, strict=True):
        stored = np.frombuffer(bytes(blob), dtype=np.float32)
        if stored.shape != vector.shape or not float(stored @ vector) >= SAMPLE_COSINE:
            differ += 1
    if differ:
        yield Finding("vector_mismatch", rel,
                      f"{differ} of {len(rows)} sampled vectors are not their text's "
                      "embedding; delete embeddings/cache.db, then run memory-es rebuild")
