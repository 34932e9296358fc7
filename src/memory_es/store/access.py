"""Access telemetry (G30, G9): when each memory was last delivered and how often.

Telemetry only: it never enters the journal, a projection, an export or MemoryJournal, and
never reaches ranking (G9): no read path opens this file. It lives in
``.runtime/access.db`` (runtime state, like the worker's snapshot: health skips ``.runtime``,
rebuild and replay never read it), one row per memory id with ``last_accessed_at`` (UTC ISO
with milliseconds) and ``access_count``. The writer counts delivered ids (once per logical
turn, :class:`~memory_es.host.turns.TurnLookups`); forgetting a memory deletes its row.
A telemetry failure is logged and swallowed: it must never fail a recall.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Final

import apsw

from memory_es.fsutil import make_private_dir
from memory_es.recall.rank.render import format_instant
from projections.consistency import RUNTIME_DIR
from projections.derived import connect_derived

log = logging.getLogger("memory_es")
ACCESS_FILE: Final = "access.db"
_SCHEMA: Final = ("CREATE TABLE IF NOT EXISTS access (memory_id TEXT PRIMARY KEY, "
                  "last_accessed_at TEXT NOT NULL, access_count INTEGER NOT NULL) "
                  "WITHOUT ROWID")


@dataclass(frozen=True, slots=True)
class AccessStat:
    """One memory's telemetry."""

    memory_id: str
    last_accessed_at: str
    access_count: int

    def to_json(self) -> dict[str, Any]:
        return {"lastAccessedAt": self.last_accessed_at, "accessCount": self.access_count}


def access_path(root: Path) -> Path:
    return root / RUNTIME_DIR / ACCESS_FILE


def _rows(conn: apsw.Connection, ids: Sequence[str]) -> dict[str, AccessStat]:
    out: dict[str, AccessStat] = {}
    unique = list(dict.fromkeys(ids))
    for start in range(0, len(unique), 500):
        chunk = unique[start:start + 500]
        for memory_id, last, count in conn.execute(
                "SELECT memory_id, last_accessed_at, access_count FROM access WHERE memory_id "
                f"IN ({','.join('?' * len(chunk))})", chunk):
            out[memory_id] = AccessStat(memory_id, last, int(count))
    return out


def read_access(root: Path, ids: Sequence[str]) -> dict[str, AccessStat]:
    """The read-only door's view: the file opened read-only, nothing when it is absent or
    unreadable (telemetry is never worth a failure)."""
    path = access_path(root)
    if not ids or not path.is_file():
        return {}
    try:
        conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY
                               | apsw.SQLITE_OPEN_NOFOLLOW)
        try:
            conn.setbusytimeout(2000)
            return _rows(conn, ids)
        finally:
            conn.close()
    except apsw.Error as e:
        log.warning("memory_access_unreadable: %s", type(e).__name__)
        return {}


class AccessLog:
    """The writer's telemetry file, opened on first use."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._conn: apsw.Connection | None = None
        self._lock = threading.Lock()  # host threads recall concurrently: one writer at a time

    def _connection(self) -> apsw.Connection:
        if self._conn is None:
            make_private_dir(self._root / RUNTIME_DIR)
            path = access_path(self._root)
            conn = connect_derived(path, create=not os.path.lexists(path))
            conn.execute("PRAGMA secure_delete=ON")  # a forgotten id leaves no residue
            conn.execute(_SCHEMA)
            self._conn = conn
        return self._conn

    def record(self, ids: Sequence[str], now: datetime) -> None:
        """Count one delivery of each id at ``now``."""
        if not ids:
            return
        stamp = format_instant(now)
        try:
            with self._lock:
                self._write(ids, stamp)
        except (apsw.Error, OSError) as e:
            log.warning("memory_access_not_recorded: %s", type(e).__name__)

    def _write(self, ids: Sequence[str], stamp: str) -> None:
        conn = self._connection()
        with conn:
            conn.executemany(
                "INSERT INTO access VALUES (?, ?, 1) ON CONFLICT (memory_id) DO UPDATE SET "
                "last_accessed_at = excluded.last_accessed_at, "
                "access_count = access_count + 1", [(i, stamp) for i in ids])

    def stats(self, ids: Sequence[str]) -> dict[str, AccessStat]:
        if not ids or (self._conn is None and not access_path(self._root).is_file()):
            return {}
        try:
            with self._lock:
                return _rows(self._connection(), ids)
        except (apsw.Error, OSError) as e:
            log.warning("memory_access_unreadable: %s", type(e).__name__)
            return {}

    def forget(self, ids: Sequence[str]) -> None:
        """A forgotten memory leaves no telemetry behind."""
        if not ids or (self._conn is None and not access_path(self._root).is_file()):
            return
        try:
            with self._lock:
                conn = self._connection()
                with conn:
                    conn.executemany("DELETE FROM access WHERE memory_id = ?",
                                     [(i,) for i in ids])
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        except (apsw.Error, OSError) as e:
            log.warning("memory_access_not_forgotten: %s", type(e).__name__)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
