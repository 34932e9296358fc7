"""The SQLite index projection (D2, D3, D5, D10): memory rows, FTS5 and the raw audit rows.

This module folds events into the tables ``projections.index_schema`` lays out.

Rows are keyed by the journal position of the event that created them, so a replay from
scratch produces the same rows as the live fold. Re-applying an event is a no-op, so a crash
between writing Markdown and committing the position converges on restart.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

from eventsourcing.domain import DomainEvent
from eventsourcing.utils import get_topic

from memory_es.events import Entity, Intake, Memory, Root
from memory_es.ids import text_key
from memory_es.text import iso_ms
from memory_es.vocabulary import TERMINAL_STATUSES
from projections.derived import connect_derived
from projections.forgetting import forget_rows
from projections.index_schema import (
    CAPTURE_DDL,
    DUMP_ORDER,
    DUMP_TABLES,
    PENDING_DDL,
    REPLAY_OWNED,
    SCHEMA,
    VECTORS_DDL,
    authority_digest,
    migration_digest,
    stored_session,
)


class IndexProjection:
    """Folds Memory.Recorded into ``memories`` (+ FTS) and BuJo Intake.Admitted into ``audit``.

    ``touched`` collects ('daily'|'audit', day) pairs changed since the last flush, so the
    Markdown projection rewrites only those days.
    """

    def __init__(self, path: Path, *, create: bool = False) -> None:
        self.path = path
        self.conn = connect_derived(path, create=create)
        if create:
            with self.conn:
                for ddl in SCHEMA:
                    self.conn.execute(ddl)
                self.conn.execute("INSERT INTO meta VALUES ('position', '0')")
        # Vectors are not events: filled from the embedding cache, never compared by health.
        self.conn.execute(VECTORS_DDL)
        if not self.conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'vector_pending'"
                                 ).fetchone():  # a generation from before the queue: fill it
            with self.conn:
                self.conn.execute(PENDING_DDL)
                self.conn.execute(
                    "INSERT INTO vector_pending SELECT m.rowid FROM memories m LEFT JOIN "
                    "vectors v ON v.rowid = m.rowid WHERE v.rowid IS NULL")
        self._upgrade_memory_meta()
        for ddl in CAPTURE_DDL:
            self.conn.execute(ddl)
        self.position = self._stored_position()
        self.touched: set[tuple[str, str]] = set()
        # Rows whose vector went stale (text updated) or left recall (invalidated), in order:
        # an in-memory vector matrix forgets them (and re-reads a re-embedded one).
        self.rewritten: list[int] = []
        self._in_txn = False

    def _stored_position(self) -> int:
        row: Any = self.conn.execute("SELECT value FROM meta WHERE key = 'position'").fetchone()
        return int(row[0])

    def _upgrade_memory_meta(self) -> None:
        """A generation written before structured facts gains their (empty) columns."""
        columns = {row[1] for row in self.conn.execute("PRAGMA table_info(memory_meta)")}
        if columns and "fact_subject" not in columns:
            with self.conn:
                for column in ("fact_subject", "fact_key", "fact_value"):
                    self.conn.execute(f"ALTER TABLE memory_meta ADD COLUMN {column} TEXT")

    def meta(self, key: str) -> str | None:
        row: Any = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        """Set a meta value; inside the open transaction, so it commits with the position."""
        self.begin()
        self.conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def committed_position(self) -> int:
        """The position the last flush committed (``position`` runs ahead while applying)."""
        return self._stored_position()

    def begin(self) -> None:
        if not self._in_txn:
            self.conn.execute("BEGIN IMMEDIATE")
            self._in_txn = True

    def apply(self, position: int, event: object) -> None:
        if position <= self.position:
            return
        self.begin()
        kind = type(event)
        handler = _HANDLERS.get(kind)
        if handler is None:  # first event of its class: resolved once, in _RULES order
            handler = _HANDLERS[kind] = next(
                (h for cls, h in _RULES if issubclass(kind, cls)), IndexProjection._other)
        handler(self, position, event)
        self.position = position

    def _admitted(self, position: int, e: Intake.Admitted) -> None:
        if e.tier == "bujo":
            self._audit(position, e)

    def _named(self, position: int, e: Entity.Named) -> None:
        self.conn.execute("INSERT OR IGNORE INTO entities VALUES (?, ?, ?, ?)",
                          (position, e.entity_id, e.name, e.type))
        self.touched.add(("graph", ""))

    def _related(self, position: int, e: Entity.Related) -> None:
        self.conn.execute("INSERT OR IGNORE INTO relations VALUES (?, ?, ?, ?, ?)",
                          (position, e.entity_id, e.relation, e.to, e.memory))
        self.touched.add(("graph", ""))

    def _other(self, position: int, event: object) -> None:
        """A forget, an entity named again, or an event the index does not hold."""
        if (removed := forget_rows(self.conn, position, event)) is not None:
            self.touched |= removed.touched
            self.rewritten.extend(removed.rowids)

    def _captured(self, position: int, e: Memory.Captured) -> None:
        self.conn.execute(
            "INSERT OR IGNORE INTO memories VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (position, e.memory_id, e.kind, e.text, e.day, iso_ms(e.timestamp), e.status,
             e.source, stored_session(e.session), e.run_hash, e.tier),
        )
        if not self.conn.changes():
            return
        self.conn.execute("INSERT INTO memories_fts (rowid, text) VALUES (?, ?)",
                          (position, e.text))
        if e.status not in TERMINAL_STATUSES:  # an abandoned intention is born dropped (M15)
            self.conn.execute("INSERT OR IGNORE INTO vector_pending VALUES (?)", (position,))
        fact = e.fact or {}
        self.conn.execute(
            "INSERT INTO memory_meta VALUES (?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, ?)",
            (position, e.memory_id, ",".join(e.labels), e.scope, e.salience, int(e.from_task),
             text_key(e.text), fact.get("subject"), fact.get("key"), fact.get("value")))
        for ord_, entity_id in enumerate(e.entity_ids):
            self.conn.execute("INSERT OR IGNORE INTO memory_entities VALUES (?, ?, ?)",
                              (e.memory_id, entity_id, ord_))
        self.touched.add(("daily", e.day))
        if e.entity_ids:
            self.touched.add(("graph", ""))

    def _row_of(self, memory_id: str) -> tuple[int, str, str] | None:
        """(rowid, id, day) of a memory, or None."""
        row: Any = self.conn.execute("SELECT rowid, id, day FROM memories WHERE id = ?",
                                     (memory_id,)).fetchone()
        return None if row is None else (row[0], row[1], row[2])

    def _text_updated(self, _position: int, e: Memory.TextUpdated) -> None:
        found = self._row_of(e.memory_id)
        if found is None:
            return
        rowid, _memory_id, day = found
        self.conn.execute("UPDATE memories SET text = ?, source_session = ? WHERE rowid = ?",
                          (e.text, stored_session(e.session), rowid))
        self.conn.execute("DELETE FROM memories_fts WHERE rowid = ?", (rowid,))
        self.conn.execute("INSERT INTO memories_fts (rowid, text) VALUES (?, ?)", (rowid, e.text))
        self.conn.execute("DELETE FROM vectors WHERE rowid = ?", (rowid,))
        self.conn.execute("INSERT OR IGNORE INTO vector_pending VALUES (?)", (rowid,))
        self.rewritten.append(rowid)
        self.conn.execute("UPDATE memory_meta SET text_key = ? WHERE rowid = ?",
                          (text_key(e.text), rowid))
        if e.fact is not None:  # the rewritten line states its fact anew (H20)
            self.conn.execute(
                "UPDATE memory_meta SET fact_subject = ?, fact_key = ?, fact_value = ? "
                "WHERE rowid = ?", (e.fact["subject"], e.fact["key"], e.fact["value"], rowid))
        self.touched.add(("daily", day))

    def _superseded(self, position: int, e: Memory.Superseded) -> None:
        found = self._row_of(e.memory_id)
        if found is None:
            return
        rowid, memory_id, day = found
        self.conn.execute("UPDATE memories SET status = ? WHERE rowid = ?", (e.status, rowid))
        if e.status != "superseded":  # invalidated is terminal: it leaves the vector matrix
            self.rewritten.append(rowid)
            self.conn.execute("DELETE FROM vector_pending WHERE rowid = ?", (rowid,))
        self.conn.execute("UPDATE memory_meta SET superseded_by = ? WHERE rowid = ?",
                          (e.by, rowid))
        self.conn.execute("INSERT OR IGNORE INTO lifecycle VALUES (?, ?, ?, ?, ?, ?)",
                          (position, memory_id, e.status, e.by, iso_ms(e.timestamp),
                           authority_digest(e.run_hash, e.by)))
        self.touched.add(("daily", day))
        self.touched.add(("sidecar", ""))

    def _migration_forgotten(self, position: int, e: Memory.MigrationForgotten) -> None:
        """A legacy line migrate replaced: terminal (out of recall and the vector matrix),
        its terminal timestamp a replay-owned lifecycle row (C12, F1)."""
        found = self._row_of(e.memory_id)
        if found is None:
            return
        rowid, memory_id, day = found
        self.conn.execute("UPDATE memories SET status = 'invalidated' WHERE rowid = ?",
                          (rowid,))
        self.rewritten.append(rowid)
        self.conn.execute("DELETE FROM vector_pending WHERE rowid = ?", (rowid,))
        self.conn.execute("INSERT OR IGNORE INTO lifecycle VALUES (?, ?, ?, ?, ?, ?)",
                          (position, memory_id, "invalidated", e.into[0] if e.into else "",
                           iso_ms(e.timestamp), migration_digest(memory_id)))
        self.touched.add(("daily", day))
        self.touched.add(("sidecar", ""))

    def _threaded(self, position: int, e: Memory.Threaded) -> None:
        found = self._row_of(e.memory_id)
        if found is None:
            return
        self.conn.execute("INSERT OR IGNORE INTO threads VALUES (?, ?, ?, ?, ?, ?)",
                          (position, found[1], e.to, e.weight, iso_ms(e.timestamp),
                           authority_digest(e.run_hash)))
        self.touched.add(("sidecar", ""))

    def _record(self, position: int, e: Memory.Recorded) -> None:
        self.conn.execute(
            "INSERT OR IGNORE INTO memories VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (position, e.memory_id, e.kind, e.text, e.day, iso_ms(e.timestamp), e.status,
             e.source, stored_session(e.session), e.run_hash, e.tier),
        )
        if self.conn.changes():
            self.conn.execute("INSERT INTO memories_fts (rowid, text) VALUES (?, ?)",
                              (position, e.text))
            self.conn.execute("INSERT OR IGNORE INTO vector_pending VALUES (?)", (position,))
            self.touched.add(("daily", e.day))

    def _remembered(self, position: int, e: Memory.Remembered) -> None:
        """An enhanced Remember: a curated note (memory_meta, so it can be superseded and
        rendered with its source), linked to the person it is about, with its terms."""
        self.conn.execute(
            "INSERT OR IGNORE INTO memories VALUES (?, ?, 'note', ?, ?, ?, 'open', 'remember', "
            "?, NULL, ?)", (position, e.memory_id, e.text, e.day, iso_ms(e.timestamp),
                            stored_session(e.session), e.tier))
        if not self.conn.changes():
            return
        self.conn.execute("INSERT INTO memories_fts (rowid, text) VALUES (?, ?)",
                          (position, e.text))
        self.conn.execute("INSERT OR IGNORE INTO vector_pending VALUES (?)", (position,))
        self.conn.execute(
            "INSERT INTO memory_meta VALUES (?, ?, '', 'agent', 0.0, 0, ?, NULL, NULL, NULL, "
            "NULL)", (position, e.memory_id, text_key(e.text)))
        self.conn.execute("INSERT INTO memory_terms VALUES (?, ?, ?, ?, ?, ?, ?, 0)",
                          (position, e.memory_id, e.about, int(e.replaceable), e.valid_from,
                           e.valid_to, e.due_at))
        if e.about is not None:
            self.conn.execute("INSERT OR IGNORE INTO memory_entities VALUES (?, ?, 0)",
                              (e.memory_id, e.about))
            self.touched.add(("graph", ""))
        self.touched.add(("daily", e.day))

    def _status_changed(self, _position: int, e: Memory.StatusChanged) -> None:
        found = self._row_of(e.memory_id)
        if found is None:
            return
        rowid, _memory_id, day = found
        self.conn.execute("UPDATE memories SET status = ? WHERE rowid = ?", (e.status, rowid))
        if e.status == "dropped":  # terminal: it leaves the vector matrix (G22)
            self.rewritten.append(rowid)
            self.conn.execute("DELETE FROM vector_pending WHERE rowid = ?", (rowid,))
        self.touched.add(("daily", day))

    def _marked(self, _position: int, e: Memory.Marked) -> None:
        self._set_term(e.memory_id, "insight", int(e.insight))

    def _due_stated(self, _position: int, e: Memory.DueStated) -> None:
        self._set_term(e.memory_id, "due_at", e.due_at)

    def _set_term(self, memory_id: str, column: Literal["insight", "due_at"],
                  value: object) -> None:
        """One ``memory_terms`` column of a stored line (its row made on first use): a
        Marked's insight, a DueStated's due date. ``column`` is ours, never input."""
        found = self._row_of(memory_id)
        if found is None:
            return
        rowid, memory_id, day = found
        self.conn.execute("INSERT OR IGNORE INTO memory_terms VALUES (?, ?, NULL, 0, NULL, "
                          "NULL, NULL, 0)", (rowid, memory_id))
        self.conn.execute(f"UPDATE memory_terms SET {column} = ? WHERE rowid = ?",
                          (value, rowid))
        self.touched.add(("daily", day))

    def _audit(self, position: int, e: Intake.Admitted) -> None:
        day = e.timestamp.date().isoformat()
        self.conn.execute(
            "INSERT OR IGNORE INTO audit VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (position, e.run_hash, day, iso_ms(e.timestamp), e.summary, e.trigger,
             e.speaker_kind, e.source_label, stored_session(e.session)),
        )
        if self.conn.changes():
            self.touched.add(("audit", day))

    @property
    def dirty(self) -> bool:
        """Is anything applied and not yet committed (rows, or files to render)?"""
        return self._in_txn or bool(self.touched)

    def flush(self) -> None:
        """Record the position and commit; the caller has written the Markdown first."""
        if self._in_txn:
            self.conn.execute("UPDATE meta SET value = ? WHERE key = 'position'",
                              (str(self.position),))
            self.conn.execute("COMMIT")
            self._in_txn = False
        self.touched = set()

    def rollback(self) -> None:
        if self._in_txn:
            # SQLite may have rolled back already (SQLITE_FULL, I/O errors): a second
            # ROLLBACK would raise "cannot rollback" and mask the real error.
            if not self.conn.getautocommit():
                self.conn.execute("ROLLBACK")
            self._in_txn = False
            self.position = self._stored_position()
            self.touched = set()

    # -- reads for the Markdown projection and health -----------------------------------------

    def holds_replay_state(self) -> bool:
        """Are there supersession or thread rows (the sidecar's state, F1)?"""
        return any(self.conn.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchone()
                   for table in REPLAY_OWNED)

    def day_rows(self, kind: str, day: str) -> list[tuple[Any, ...]]:
        """The rows one daily or audit file is rendered from, in file order."""
        if kind == "daily":
            sql = ("SELECT m.id, m.kind, m.text, m.recorded_at, m.status, m.source_session, "
                   "mm.labels, mm.scope, CASE WHEN mm.id IS NULL THEN NULL ELSE m.source END, "
                   "mm.superseded_by, mt.about, mt.replaceable, mt.valid_from, mt.valid_to, "
                   "mt.due_at, mt.insight FROM memories m LEFT JOIN memory_meta mm ON mm.id = m.id "
                   "LEFT JOIN memory_terms mt ON mt.id = m.id "
                   "WHERE m.day = ? ORDER BY m.recorded_at, m.id")
        else:
            sql = ("SELECT run_hash, summary, recorded_at, trigger, speaker_kind, source_label, "
                   "source_session FROM audit WHERE day = ? ORDER BY recorded_at, run_hash")
        return list(self.conn.execute(sql, (day,)))

    def days(self) -> Iterator[tuple[str, str]]:
        """Every (kind, day) that has at least one row."""
        for (day,) in self.conn.execute("SELECT DISTINCT day FROM memories ORDER BY day"):
            yield "daily", day
        for (day,) in self.conn.execute("SELECT DISTINCT day FROM audit ORDER BY day"):
            yield "audit", day

    def dump(self, table: str) -> Iterator[tuple[Any, ...]]:
        """Canonical row dump of one table, by rowid."""
        columns = ", ".join(DUMP_TABLES[table])
        order = DUMP_ORDER.get(table, "rowid")
        yield from self.conn.execute(f"SELECT {columns} FROM {table} ORDER BY {order}")

    def close(self) -> None:
        self.rollback()
        self.conn.close()


# The index's handler of each event class, in the order an event is tested against them (a
# subclass is handled as its first listed ancestor); a class listed nowhere goes to _other.
# Resolved per concrete class on its first event (_HANDLERS): one dict lookup per event in a
# rebuild instead of a chain of isinstance tests.
_RULES: tuple[tuple[type, Any], ...] = (
    (Memory.Recorded, IndexProjection._record),
    (Intake.Admitted, IndexProjection._admitted),
    (Memory.Captured, IndexProjection._captured),
    (Memory.TextUpdated, IndexProjection._text_updated),
    (Memory.Superseded, IndexProjection._superseded),
    (Memory.Threaded, IndexProjection._threaded),
    (Memory.Remembered, IndexProjection._remembered),
    (Memory.StatusChanged, IndexProjection._status_changed),
    (Memory.Marked, IndexProjection._marked),
    (Memory.DueStated, IndexProjection._due_stated),
    (Memory.MigrationForgotten, IndexProjection._migration_forgotten),
    (Entity.Named, IndexProjection._named),
    (Entity.Related, IndexProjection._related),
)
_HANDLERS: dict[type, Any] = {}
_HANDLERS[type(None)] = lambda _index, _position, _event: None  # a position nothing folds
_FORGETS = (Memory.Forgotten, Intake.Forgotten, Entity.NamedAgain)  # forget_rows' events


def _topics_passed_over() -> frozenset[str]:
    """The TOPIC of every event class the index does not fold (neither a listed class nor a
    subclass of one). A topic no class here knows (a newer version's event) is not in it:
    it is decoded, and fails as any stored event that does not decode."""
    folded = tuple(cls for cls, _ in _RULES) + _FORGETS
    return frozenset(get_topic(value) for aggregate in (Intake, Memory, Entity, Root)
                     for value in vars(aggregate).values()
                     if isinstance(value, type) and issubclass(value, DomainEvent)
                     and not issubclass(value, folded))


# What a rebuild and health's replay skip undecoded (memory_es.history.iter_events, index_only; the
# index position still advances past them), and the events first decoded without their sealed
# content and folded only when their screen passes.
INDEX_PASSES_OVER = _topics_passed_over()
INDEX_SCREENS: dict[str, Callable[[Any], bool]] = {
    Intake.Admitted.TOPIC: lambda admitted: admitted.tier == "bujo",  # see _admitted
}
