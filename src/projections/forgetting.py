"""What a forget removes from the index.

``Memory.Forgotten`` removes every row of the memory (memories, FTS, meta, terms, entity links,
relations it states, lifecycle and thread rows, its vector and its place in the embedding
queue), the entities only it named, and the audit lines of the turns whose content was erased
with it; ``Intake.Forgotten`` removes its turn's audit line. The graph and sidecar lengths are
dropped so the next flush rewrites those files whole (they otherwise only grow at their end),
and ``scrub_pending`` asks the writer to rebuild the FTS segments and VACUUM, so no token and
no free page keeps the text. The fold is the same live and in a replay from scratch, where the
forgotten events arrive as content-free tombstones and are removed here all the same.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import apsw

from memory_es.events import Entity, Intake, Memory
from memory_es.vocabulary import GRAPH_BYTES, SIDECAR_BYTES

SCRUB_PENDING = "scrub_pending"


@dataclass
class Removed:
    """What one forget event took out of the index: the files to render again and the
    vector rows an in-memory matrix must drop."""

    touched: set[tuple[str, str]] = field(default_factory=set)
    rowids: list[int] = field(default_factory=list)


def _in(values: Iterable[str]) -> tuple[str, list[str]]:
    items = sorted(set(values))
    return "(" + ",".join("?" * len(items)) + ")", items


def _audit(conn: apsw.Connection, run_hashes: Iterable[str], removed: Removed) -> None:
    marks, items = _in(run_hashes)
    if not items:
        return
    for (day,) in conn.execute(f"SELECT day FROM audit WHERE run_hash IN {marks}", items):
        removed.touched.add(("audit", day))
    conn.execute(f"DELETE FROM audit WHERE run_hash IN {marks}", items)


def _memory(conn: apsw.Connection, memory_id: str, entity_ids: list[str],
            removed: Removed) -> None:
    row: Any = conn.execute("SELECT rowid, day FROM memories WHERE id = ?",
                            (memory_id,)).fetchone()
    if row is not None:
        rowid, day = row
        removed.rowids.append(rowid)
        removed.touched.add(("daily", day))
        for table in ("memories_fts", "vectors", "vector_pending", "memories"):
            conn.execute(f"DELETE FROM {table} WHERE rowid = ?", (rowid,))
    conn.execute("DELETE FROM memory_meta WHERE id = ?", (memory_id,))
    conn.execute("DELETE FROM memory_terms WHERE id = ?", (memory_id,))
    conn.execute("DELETE FROM memory_entities WHERE memory_id = ?", (memory_id,))
    conn.execute("DELETE FROM relations WHERE memory = ?", (memory_id,))
    conn.execute("DELETE FROM lifecycle WHERE memory_id = ?", (memory_id,))
    conn.execute("DELETE FROM threads WHERE src = ? OR dst = ?", (memory_id, memory_id))
    marks, items = _in(entity_ids)
    if items:
        conn.execute(f"DELETE FROM entities WHERE id IN {marks}", items)
        conn.execute(f"DELETE FROM relations WHERE src IN {marks} OR dst IN {marks}",
                     [*items, *items])


def forget_rows(conn: apsw.Connection, position: int, event: object) -> Removed | None:
    """Apply a forget event inside the projection's open transaction (None: not one), or
    the naming again of an entity a forget pruned (its row returns, at this position)."""
    removed = Removed()
    if isinstance(event, Entity.NamedAgain):
        conn.execute("INSERT OR IGNORE INTO entities VALUES (?, ?, ?, ?)",
                     (position, event.entity_id, event.name, event.type))
        removed.touched.add(("graph", ""))
        return removed
    if isinstance(event, Memory.Forgotten):
        _memory(conn, event.memory_id, event.entity_ids, removed)
        _audit(conn, event.run_hashes, removed)
    elif isinstance(event, Intake.Forgotten):
        _audit(conn, [event.run_hash], removed)
    else:
        return None
    removed.touched.update({("graph", ""), ("sidecar", "")})
    conn.execute("DELETE FROM meta WHERE key IN (?, ?)", (GRAPH_BYTES, SIDECAR_BYTES))
    conn.execute("INSERT OR REPLACE INTO meta VALUES (?, '1')", (SCRUB_PENDING,))
    return removed


def scrub(conn: apsw.Connection) -> bool:
    """After a forget was projected (outside any transaction): merge the FTS segments so no
    deleted token survives in its shadow tables, VACUUM so no free page holds removed rows,
    and truncate the WAL that held the old pages. False when nothing was pending.

    A reader's open snapshot keeps the WAL from being truncated: the scrub then stays
    pending (health: ``forget_unscrubbed``), and the next writer open or forget tries again."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (SCRUB_PENDING,)).fetchone()
    if row is None:
        return False
    conn.execute("PRAGMA secure_delete=ON")
    with conn:
        conn.execute("INSERT INTO memories_fts (memories_fts) VALUES ('optimize')")
        conn.execute("DELETE FROM meta WHERE key = ?", (SCRUB_PENDING,))
    if not vacuum(conn):
        with conn:
            conn.execute("INSERT OR REPLACE INTO meta VALUES (?, 'reader')", (SCRUB_PENDING,))
    return True


def scrub_pending(conn: apsw.Connection) -> str | None:
    """Why a forget's scrub of this index is unfinished: ``"1"`` (a kill came between the
    projection and the scrub), ``"reader"`` (a reader's snapshot held the WAL), or None."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (SCRUB_PENDING,)).fetchone()
    return None if row is None else str(row[0])


def vacuum(conn: apsw.Connection) -> bool:
    """Rewrite the database without free pages, then empty its WAL; False when a reader's
    snapshot kept the WAL (its old frames stay until that reader closes)."""
    conn.execute("VACUUM")
    row: Any = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    return not row[0]  # (busy, WAL frames, frames checkpointed)
