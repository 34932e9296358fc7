"""Lexical search over the index projection (C9): FTS5 bm25 matches as typed ``SearchHit``s.

A read of the ``memories`` and ``memories_fts`` tables the index projection maintains; user
text reaches FTS5 only through ``fts_query``, so it can never be FTS5 syntax.
"""

from __future__ import annotations

from typing import Any

import apsw
import msgspec

from projections.sqlite_index import fts_query


class SearchHit(msgspec.Struct, frozen=True, kw_only=True):
    """One lexical match: the stored line and its bm25 score (lower is better)."""

    id: str
    text: str
    day: str
    recorded_at: str
    bm25: float

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "text": self.text, "day": self.day,
                "recorded_at": self.recorded_at, "bm25": self.bm25}


def fts_search(conn: apsw.Connection, query: str, limit: int) -> list[SearchHit]:
    """The best ``limit`` bm25 matches, best first (ties by row)."""
    match = fts_query(query)
    if not match:
        return []
    rows = conn.execute(
        "SELECT m.id, m.text, m.day, m.recorded_at, bm25(memories_fts) AS score "
        "FROM memories_fts JOIN memories m ON m.rowid = memories_fts.rowid "
        "WHERE memories_fts MATCH ? ORDER BY score, m.rowid LIMIT ?", (match, limit))
    return [SearchHit(id=r[0], text=r[1], day=r[2], recorded_at=r[3], bm25=r[4])
            for r in rows]
