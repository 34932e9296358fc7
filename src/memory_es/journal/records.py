"""Per-record keys: the durable pool behind crypto-shredding.

Every content-bearing event is sealed under its own AES-GCM key. The keys live outside the
root, in the key store beside the chain key (``<store>/<root id>/records.db``): a copy of the
root never carries them, and destroying one makes its record unreadable everywhere at once.

Admission is fsync-bound, so a key is never made durable on its own: keys are reserved in
chunks of :data:`CHUNK` (one transaction, one fsync) and handed out from memory. A key that a
crash left reserved but unused is referenced by no committed event; the next writer deletes
it (:meth:`RecordKeys.collect_garbage`). A destroyed key leaves its id in ``destroyed``, so a
lookup tells "forgotten" from "lost" (``record_key_missing`` fails closed).
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import apsw

from memory_es.errors import IntegrityError
from memory_es.fsutil import crash_point
from memory_es.keystore import RECORDS_FILE, KeyStore, private_key_file

CHUNK = 256
KEY_BYTES = 32

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS keys (id INTEGER PRIMARY KEY, key BLOB NOT NULL)",
    "CREATE TABLE IF NOT EXISTS destroyed (id INTEGER PRIMARY KEY)",
)


class RecordKeys:
    """The record-key database of one root, opened lazily (a reader of a root that never
    sealed anything needs no file)."""

    def __init__(self, store: KeyStore, root_id: str, *, writable: bool) -> None:
        self._store = store
        self._root_id = root_id
        self.writable = writable
        self._conn: apsw.Connection | None = None
        self._lock = threading.Lock()  # the pool
        self._db_lock = threading.RLock()  # the connection
        self._refill = threading.Lock()  # one chunk reservation at a time
        self._pool: list[tuple[int, bytes]] = []

    @property
    def location(self) -> Path:
        return self._store.path / self._root_id / RECORDS_FILE

    def _db(self, *, create: bool = False) -> apsw.Connection | None:
        if self._conn is not None:
            return self._conn
        path = private_key_file(self._store, self._root_id, RECORDS_FILE,
                                create=create and self.writable)
        if path is None:
            return None
        flags = apsw.SQLITE_OPEN_READWRITE if self.writable else apsw.SQLITE_OPEN_READONLY
        conn = apsw.Connection(str(path), flags=flags | apsw.SQLITE_OPEN_NOFOLLOW)
        conn.setbusytimeout(5000)
        if self.writable:
            conn.execute("PRAGMA journal_mode=WAL").fetchall()
            conn.execute("PRAGMA secure_delete=ON")
            for ddl in _SCHEMA:
                conn.execute(ddl)
        elif not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'destroyed'"
                              ).fetchone():  # a writer made the file, not yet its tables
            conn.close()
            return None
        conn.execute("PRAGMA synchronous=FULL")
        self._conn = conn
        return conn

    def take(self) -> tuple[int, bytes]:
        """A fresh key (id, 32 bytes), durable before it is handed out.

        Below a quarter of a chunk left, one caller reserves the next chunk (its fsync)
        while the others go on taking what is left: admissions stall only on an empty pool.
        """
        while True:
            with self._lock:
                if len(self._pool) > CHUNK // 4:
                    return self._pool.pop()
                have = bool(self._pool)
            if self._refill.acquire(blocking=not have):
                try:
                    with self._lock:
                        low = len(self._pool) <= CHUNK // 4
                    if low:
                        chunk = self._reserve()
                        with self._lock:  # higher ids under the ones left: increasing order
                            self._pool = list(reversed(chunk)) + self._pool
                finally:
                    self._refill.release()
            with self._lock:
                if self._pool:
                    return self._pool.pop()

    def _reserve(self) -> list[tuple[int, bytes]]:
        with self._db_lock:
            conn = self._db(create=True)
            assert conn is not None
            with conn:
                row: Any = conn.execute(
                    "SELECT MAX(m) FROM (SELECT MAX(id) AS m FROM keys "
                    "UNION ALL SELECT MAX(id) FROM destroyed)").fetchone()
                start = int(row[0] or 0) + 1
                chunk = [(start + i, secrets.token_bytes(KEY_BYTES)) for i in range(CHUNK)]
                conn.executemany("INSERT INTO keys VALUES (?, ?)", chunk)
        return chunk

    def get(self, key_id: int) -> bytes | None:
        """The key, or None when it was destroyed; ``record_key_missing`` when it was never
        here (a lost or foreign key store: nothing is silently treated as forgotten)."""
        row: Any = None
        with self._db_lock:
            conn = self._db()
            if conn is not None:
                row = conn.execute("SELECT key FROM keys WHERE id = ?", (key_id,)).fetchone()
            if conn is not None and row is None:
                gone = conn.execute("SELECT 1 FROM destroyed WHERE id = ?",
                                    (key_id,)).fetchone()
                if gone is not None:
                    return None
        if row is None:
            raise IntegrityError(
                f"record_key_missing: {self.location}: no key {key_id} for a sealed record; "
                "restore the key store that holds this root's record keys",
                code="record_key_missing")
        return bytes(row[0])

    def present(self, key_ids: Iterable[int]) -> list[int]:
        """Which of ``key_ids`` still exist (a forget a crash interrupted)."""
        with self._db_lock:
            conn = self._db()
            if conn is None:
                return []
            return [i for i in key_ids
                    if conn.execute("SELECT 1 FROM keys WHERE id = ?", (i,)).fetchone()]

    def destroy(self, key_ids: Iterable[int], *, destroyed: bool = True) -> None:
        """Delete keys for good: secure_delete zeroes their pages, the checkpoint empties the
        WAL that still held them. ``destroyed`` false (garbage) leaves no id behind."""
        ids = sorted(set(key_ids))
        with self._db_lock:
            conn = self._db(create=True)
            assert conn is not None
            with conn:
                conn.executemany("DELETE FROM keys WHERE id = ?", [(i,) for i in ids])
                if destroyed:
                    conn.executemany("INSERT OR IGNORE INTO destroyed VALUES (?)",
                                     [(i,) for i in ids])
            crash_point("records.before_checkpoint")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()

    def collect_garbage(self, highest_referenced: int) -> int:
        """Delete keys reserved above the highest id the journal references (a crash left
        them unused); returns how many. Only a writer, before it hands out any key."""
        with self._lock:
            self._pool = []
        with self._db_lock:
            conn = self._db()
            if conn is None:
                return 0
            rows = conn.execute("SELECT id FROM keys WHERE id > ?",
                                (highest_referenced,)).fetchall()
        if rows:
            self.destroy([int(r[0]) for r in rows if r[0] is not None], destroyed=False)
        return len(rows)

    def export_all(self) -> tuple[list[tuple[int, bytes]], list[int]]:
        """Every key (id, key) and every destroyed id: ``migrate-journal`` moves them."""
        with self._db_lock:
            conn = self._db()
            if conn is None:
                return [], []
            keys = [(int(r[0]), bytes(r[1])) for r in conn.execute("SELECT id, key FROM keys")]
            gone = [int(r[0]) for r in conn.execute("SELECT id FROM destroyed")]
        return keys, gone

    def import_all(self, keys: list[tuple[int, bytes]], destroyed: list[int]) -> None:
        """Hold these keys under their own ids (and know these as destroyed); ids already
        here are kept as they are (a resumed migration)."""
        with self._db_lock:
            conn = self._db(create=True)
            assert conn is not None
            with conn:
                conn.executemany("INSERT OR IGNORE INTO keys VALUES (?, ?)", keys)
                conn.executemany("INSERT OR IGNORE INTO destroyed VALUES (?)",
                                 [(i,) for i in destroyed])

    def close(self) -> None:
        with self._db_lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
