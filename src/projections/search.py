"""Lexical search over the index projection (C9): FTS5 bm25 matches as typed ``SearchHit``s,
and the exact-text lookup that makes repeated content converge (D5, J11).

A read of the ``memories`` and ``memories_fts`` tables the index projection maintains; user
text reaches FTS5 only through ``fts_query``, so it can never be FTS5 syntax.
"""

from __future__ import annotations

from typing import Any

import apsw
import msgspec

from memory_es.ids import name_key


def fts_query(text: str) -> str:
    """Each word as a quoted FTS5 string, OR-ed: user text can never be FTS5 syntax."""
    terms = ['"' + t.replace('"', '""') + '"' for t in text.split()]
    return " OR ".join(terms)


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


# The lines whose identity was once their text's hash: Journal observations and Remember
# notes (their stored text is the Journal normal form, ``text.journal_text``).
_SAME_TEXT_SQL = (
    "SELECT id FROM memories WHERE length(text) = length(?1) AND text = ?1 "
    "AND (source = 'remember' OR (source = 'host-summary' AND tier = 'journal')) "
    "ORDER BY rowid LIMIT 1")


def same_text(conn: apsw.Connection, normal: str) -> str | None:
    """The id of a stored Journal observation or Remember note whose text is ``normal`` (a
    Journal normal form), whatever its status; None when there is none. A forgotten line has
    no row, so the same text written after a forget is new."""
    row: Any = conn.execute(_SAME_TEXT_SQL, (normal,)).fetchone()
    return None if row is None else str(row[0])


def status_of(conn: apsw.Connection | None, memory_id: str) -> str | None:
    """A line's status in the index (None: no such line, or no index)."""
    if conn is None:
        return None
    row = conn.execute("SELECT status FROM memories WHERE id = ?", (memory_id,)).fetchone()
    return None if row is None else str(row[0])


def entities_by_name(conn: apsw.Connection, type_: str | None = None
                     ) -> dict[tuple[str, str], str]:
    """``ids.name_key`` -> id of each stored entity (of ``type_``, or all), the first by row
    when two share a name. Entities are few (people, projects, places), so names are folded
    here rather than kept folded in the index."""
    sql = "SELECT id, name, type FROM entities"
    rows = conn.execute(sql + " WHERE type = ? ORDER BY rowid" if type_ else
                        sql + " ORDER BY rowid", (type_,) if type_ else ())
    found: dict[tuple[str, str], str] = {}
    for entity_id, name, kind in rows:
        found.setdefault(name_key(name, kind), entity_id)
    return found
