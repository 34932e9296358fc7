"""The SQLite index's schema (D2, D3, D5, F1, J7, K14): its tables, the columns health compares,
and the forms a row's values take.

Kept apart from the fold (``projections.sqlite_index``) so a reader of the layout (health's
comparison, the journal rewrite's check, the golden fixtures' dumps) reads it in one place.
The DDL is what every generation is created with: changing a statement changes the bytes of
every index built after it.
"""

from __future__ import annotations

from memory_es.ids import sha256_hex

SESSION_MAX_BYTES = 512  # K7: longer conversation ids are stored as "unknown"
UNKNOWN = "unknown"

# Porter stemming over unicode61: "appointments" meets "appointment"; an
# older generation keeps the tokenizer it was built with, and recall reads it from the schema.
FTS_DDL = ("CREATE VIRTUAL TABLE memories_fts USING fts5(text, "
           "tokenize='porter unicode61 remove_diacritics 2')")

SCHEMA = (
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
    FTS_DDL,
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
# Rows whose text still needs a vector (D4, D9): filled by the projection, emptied as vectors
# are stored, so finding the next batch never scans every memory.
PENDING_DDL = "CREATE TABLE IF NOT EXISTS vector_pending (rowid INTEGER PRIMARY KEY)"

# BuJo capture state (E*, L1, F1). Created on open, so older generations gain the (empty)
# tables. ``lifecycle`` and ``threads`` are replay-owned: the sidecar is their authority.
CAPTURE_DDL = (
    """CREATE TABLE IF NOT EXISTS memory_meta (
        rowid INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        labels TEXT NOT NULL,
        scope TEXT NOT NULL,
        salience REAL NOT NULL,
        from_task INTEGER NOT NULL,
        text_key TEXT NOT NULL,
        superseded_by TEXT,
        fact_subject TEXT,
        fact_key TEXT,
        fact_value TEXT)""",
    "CREATE INDEX IF NOT EXISTS memory_meta_by_key ON memory_meta (text_key)",
    # index.md exists only when the index holds BuJo rows: answered from this index, never a
    # scan of every line on each flush (consolidation.is_bujo)
    "CREATE INDEX IF NOT EXISTS memories_by_tier ON memories (tier)",
    "CREATE INDEX IF NOT EXISTS memory_meta_by_fact ON memory_meta (fact_subject, fact_key)",
    # A stored line with the same normal form as a new Journal observation or Remember
    # (search.same_text): candidates by length, compared in full; ids never hash the text
    "CREATE INDEX IF NOT EXISTS memories_by_length ON memories (length(text))",
    # A turn is read with the turn before it in its conversation, and a question's reply joins
    # the pool (recall.retrieve.candidates): neighbours by session in rowid order
    "CREATE INDEX IF NOT EXISTS memories_by_session ON memories (source_session, rowid)",
    # MemoryJournal reads a civil range by instant (browse.journal): without this a range scans
    # every memory
    "CREATE INDEX IF NOT EXISTS memories_by_instant ON memories (recorded_at, id)",
    """CREATE TABLE IF NOT EXISTS entities (
        rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, name TEXT NOT NULL,
        type TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS memory_entities (
        memory_id TEXT NOT NULL, entity_id TEXT NOT NULL, ord INTEGER NOT NULL,
        PRIMARY KEY (memory_id, entity_id)) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS memory_entities_by_entity ON memory_entities (entity_id)",
    """CREATE TABLE IF NOT EXISTS relations (
        rowid INTEGER PRIMARY KEY, src TEXT NOT NULL, relation TEXT NOT NULL,
        dst TEXT NOT NULL, memory TEXT NOT NULL, UNIQUE (src, relation, dst))""",
    """CREATE TABLE IF NOT EXISTS lifecycle (
        rowid INTEGER PRIMARY KEY, memory_id TEXT NOT NULL, status TEXT NOT NULL,
        by TEXT NOT NULL, at TEXT NOT NULL, authority TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS threads (
        rowid INTEGER PRIMARY KEY, src TEXT NOT NULL, dst TEXT NOT NULL,
        weight REAL NOT NULL, at TEXT NOT NULL, authority TEXT NOT NULL)""",
    # A line's stated terms and markers: the person an enhanced Remember is about, whether a
    # later scan may replace it, its validity as written (ISO date or instant) (J7, J10,
    # G13-G15), and the insight marker any line may carry (K14, H6).
    """CREATE TABLE IF NOT EXISTS memory_terms (
        rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, about TEXT,
        replaceable INTEGER NOT NULL, valid_from TEXT, valid_to TEXT, due_at TEXT,
        insight INTEGER NOT NULL)""",
)
REPLAY_OWNED = ("lifecycle", "threads")

# The tables health compares row by row, with the columns in a fixed order.
DUMP_TABLES = {
    "memories": ("rowid", "id", "kind", "text", "day", "recorded_at", "status", "source",
                 "source_session", "run_hash", "tier"),
    "memories_fts": ("rowid", "text"),
    "audit": ("rowid", "run_hash", "day", "recorded_at", "summary", "trigger", "speaker_kind",
              "source_label", "source_session"),
    "memory_meta": ("rowid", "id", "labels", "scope", "salience", "from_task", "text_key",
                    "superseded_by", "fact_subject", "fact_key", "fact_value"),
    "entities": ("rowid", "id", "name", "type"),
    "memory_entities": ("memory_id", "entity_id", "ord"),
    "relations": ("rowid", "src", "relation", "dst", "memory"),
    "lifecycle": ("rowid", "memory_id", "status", "by", "at", "authority"),
    "threads": ("rowid", "src", "dst", "weight", "at", "authority"),
    "memory_terms": ("rowid", "id", "about", "replaceable", "valid_from", "valid_to", "due_at",
                     "insight"),
}
# Tables without a rowid are dumped in key order.
DUMP_ORDER = {"memory_entities": "memory_id, entity_id"}


def authority_digest(run_hash: str | None, by: str = "") -> str:
    """The content-free authority of replay-owned state (F3): the capture that decided it, or
    (``run_hash`` None) the Remember that superseded the line with ``by`` (J8)."""
    return sha256_hex(f"capture:{run_hash}" if run_hash is not None else f"remember:{by}")


def migration_digest(memory_id: str) -> str:
    """The authority of a migration forget's terminal timestamp (C12, F1): the migration of
    that line."""
    return sha256_hex(f"migration:{memory_id}")


def stored_session(session: str | None) -> str | None:
    """K6/K7: the conversation id as stored; over 512 UTF-8 bytes it is 'unknown'."""
    if session is None:
        return None
    return session if len(session.encode("utf-8")) <= SESSION_MAX_BYTES else UNKNOWN
