"""The SQLite index projection (D2, D3, D5, D10): memory rows, FTS5 and the raw audit rows.

Rows are keyed by the journal position of the event that created them, so a replay from
scratch produces the same rows as the live fold. Re-applying an event is a no-op, so a crash
between writing Markdown and committing the position converges on restart.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import apsw

from memory_es.events import Intake, Memory
from memory_es.fsutil import create_private_file

SESSION_MAX_BYTES = 512  # K7: longer conversation ids are stored as "unknown"
UNKNOWN = "unknown"

_SCHEMA = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE memories (
        rowid INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        kind TEXT NOT NULL,
        text TEXT NOT NULL,
        day TEXT NOT NULL,
        recorded_at TEXT NOT NULL,
        status TEXT NOT NULL,
        source TEXT NOT NULL,
        source_session TEXT,
        run_hash TEXT,
        tier TEXT NOT NULL)""",
    "CREATE INDEX memories_by_day ON memories (day, recorded_at, id)",
    "CREATE VIRTUAL TABLE memories_fts USING fts5(text, tokenize='unicode61 remove_diacritics 2')",
    """CREATE TABLE audit (
        rowid INTEGER PRIMARY KEY,
        run_hash TEXT NOT NULL UNIQUE,
        day TEXT NOT NULL,
        recorded_at TEXT NOT NULL,
        summary TEXT NOT NULL,
        trigger TEXT NOT NULL,
        speaker_kind TEXT NOT NULL,
        source_label TEXT NOT NULL,
        source_session TEXT)""",
    "CREATE INDEX audit_by_day ON audit (day, recorded_at, run_hash)",
)

VECTORS_DDL = ("CREATE TABLE IF NOT EXISTS vectors (rowid INTEGER PRIMARY KEY, "
               "identity TEXT NOT NULL, vector BLOB NOT NULL)")

# The tables health compares row by row, with the columns in a fixed order.
DUMP_TABLES = {
    "memories": ("rowid", "id", "kind", "text", "day", "recorded_at", "status", "source",
                 "source_session", "run_hash", "tier"),
    "memories_fts": ("rowid", "text"),
    "audit": ("rowid", "run_hash", "day", "recorded_at", "summary", "trigger", "speaker_kind",
              "source_label", "source_session"),
}


def connect_derived(path: Path, *, create: bool = False) -> apsw.Connection:
    """A rebuildable SQLite file (index generation, vector cache): owner-only, never through
    a symlink, WAL with synchronous=NORMAL (the journal, not this file, is what must survive)."""
    if create:
        os.close(create_private_file(path))
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_NOFOLLOW)
    conn.setbusytimeout(5000)
    conn.execute("PRAGMA journal_mode=WAL").fetchall()
    conn.execute("PRAGMA synchronous=NORMAL")
    return conn


def iso_ms(ts: datetime) -> str:
    """UTC instant with milliseconds and a Z, the one timestamp form projections write."""
    return ts.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def stored_session(session: str | None) -> str | None:
    """K6/K7: the conversation id as stored; over 512 UTF-8 bytes it is 'unknown'."""
    if session is None:
        return None
    return session if len(session.encode("utf-8")) <= SESSION_MAX_BYTES else UNKNOWN


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
                for ddl in _SCHEMA:
                    self.conn.execute(ddl)
                self.conn.execute("INSERT INTO meta VALUES ('position', '0')")
        # Vectors are not events: filled from the embedding cache, never compared by health.
        self.conn.execute(VECTORS_DDL)
        self.position = self._stored_position()
        self.touched: set[tuple[str, str]] = set()
        self._in_txn = False

    def _stored_position(self) -> int:
        row: Any = self.conn.execute("SELECT value FROM meta WHERE key = 'position'").fetchone()
        return int(row[0])

    def begin(self) -> None:
        if not self._in_txn:
            self.conn.execute("BEGIN IMMEDIATE")
            self._in_txn = True

    def apply(self, position: int, event: object) -> None:
        if position <= self.position:
            return
        self.begin()
        if isinstance(event, Memory.Recorded):
            self._record(position, event)
        elif isinstance(event, Intake.Admitted) and event.tier == "bujo":
            self._audit(position, event)
        self.position = position

    def _record(self, position: int, e: Memory.Recorded) -> None:
        self.conn.execute(
            "INSERT OR IGNORE INTO memories VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (position, e.memory_id, e.kind, e.text, e.day, iso_ms(e.timestamp), e.status,
             e.source, stored_session(e.session), e.run_hash, e.tier),
        )
        if self.conn.changes():
            self.conn.execute("INSERT INTO memories_fts (rowid, text) VALUES (?, ?)",
                              (position, e.text))
            self.touched.add(("daily", e.day))

    def _audit(self, position: int, e: Intake.Admitted) -> None:
        day = e.timestamp.date().isoformat()
        self.conn.execute(
            "INSERT OR IGNORE INTO audit VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (position, e.run_hash, day, iso_ms(e.timestamp), e.summary, e.trigger,
             e.speaker_kind, e.source_label, stored_session(e.session)),
        )
        if self.conn.changes():
            self.touched.add(("audit", day))

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
            self.conn.execute("ROLLBACK")
            self._in_txn = False
            self.position = self._stored_position()
            self.touched = set()

    # -- reads for the Markdown projection and health -----------------------------------------

    def day_rows(self, kind: str, day: str) -> list[tuple[Any, ...]]:
        """The rows one daily or audit file is rendered from, in file order."""
        if kind == "daily":
            sql = ("SELECT id, kind, text, recorded_at, status, source_session FROM memories "
                   "WHERE day = ? ORDER BY recorded_at, id")
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
        yield from self.conn.execute(f"SELECT {columns} FROM {table} ORDER BY rowid")

    def close(self) -> None:
        self.rollback()
        self.conn.close()


def fts_query(text: str) -> str:
    """Each word as a quoted FTS5 string, OR-ed: user text can never be FTS5 syntax."""
    terms = ['"' + t.replace('"', '""') + '"' for t in text.split()]
    return " OR ".join(terms)


def fts_search(conn: apsw.Connection, query: str, limit: int) -> list[dict[str, Any]]:
    """Best bm25 matches: id, text, day, recorded_at, score (lower bm25 is better)."""
    match = fts_query(query)
    if not match:
        return []
    rows = conn.execute(
        "SELECT m.id, m.text, m.day, m.recorded_at, bm25(memories_fts) AS score "
        "FROM memories_fts JOIN memories m ON m.rowid = memories_fts.rowid "
        "WHERE memories_fts MATCH ? ORDER BY score, m.rowid LIMIT ?", (match, limit))
    return [{"id": r[0], "text": r[1], "day": r[2], "recorded_at": r[3], "bm25": r[4]}
            for r in rows]
