"""The vector cache (D4, B25): ``embeddings/cache.db`` at the root, outside generations, keyed
by embedding identity + SHA-256 of the text, so rebuild and replay never re-embed unchanged text
and a changed identity re-embeds. A cache, never an authority: damaged, it is deleted and
filled again; health reports it (``vector_cache_damaged``, ``vector_cache_invalid``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path

import apsw
import msgspec
import numpy as np

from memory_es.errors import storage_kind
from memory_es.fsutil import make_private_dir
from memory_es.vocabulary import VECTOR_NORM_TOLERANCE
from projections.derived import connect_derived

log = logging.getLogger("memory_es")

CACHE_DIR = "embeddings"
CACHE_FILE = "cache.db"
CACHE_REL = f"{CACHE_DIR}/{CACHE_FILE}"
_SQLITE_SIDE = ("", "-wal", "-shm", "-journal")
_QUERY_CHUNK = 256  # hashes per lookup query: as many as are ever in flight (D6)


class VectorCache:
    """Vectors by (identity, sha256(text)): survive rebuilds, replays and generations.

    A cache, never an authority: a writable cache SQLite reports damaged (garbage bytes, a
    truncated file), on open or on any later read or write, is deleted with one warning
    naming it and started afresh (:func:`discard_cache`), so what it held is embedded again;
    a read-only one stops answering. Deleted, not set aside: a copy kept beside it would
    keep the vectors of texts a forget erased.

    One connection serves every thread of a store (the worker's embedding and a host's
    ``drain`` or recall): apsw refuses a connection used by two threads at once
    (``ThreadingViolationError``), so each call holds the cache's lock."""

    def __init__(self, root: Path, *, readonly: bool = False) -> None:
        self.root = Path(root)
        self.readonly = readonly
        self._lock = threading.RLock()
        if readonly:  # the read-only door writes nothing: what the cache lacks is not kept
            self.conn = apsw.Connection(str(root / CACHE_DIR / CACHE_FILE),
                                        flags=apsw.SQLITE_OPEN_READONLY
                                        | apsw.SQLITE_OPEN_NOFOLLOW)
            self.conn.setbusytimeout(5000)
            return
        try:
            self.conn = self._open()
        except apsw.Error as e:
            if storage_kind(e) != "corrupt":
                raise
            discard_cache(self.root, e)
            self.conn = self._open()

    def _open(self) -> apsw.Connection:
        directory = self.root / CACHE_DIR
        make_private_dir(directory)
        path = directory / CACHE_FILE
        conn = connect_derived(path, create=not os.path.lexists(path))
        try:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS vectors (identity TEXT NOT NULL, sha256 TEXT NOT "
                "NULL, vector BLOB NOT NULL, PRIMARY KEY (identity, sha256)) WITHOUT ROWID")
            conn.execute("SELECT identity, sha256, vector FROM vectors LIMIT 1").fetchall()
        except apsw.Error:
            conn.close()
            raise
        return conn

    def _damaged(self, error: apsw.Error) -> None:
        """A read or write found the file damaged: a writer deletes it and starts afresh."""
        if storage_kind(error) != "corrupt":
            raise error
        with contextlib.suppress(apsw.Error):
            self.conn.close()
        discard_cache(self.root, error)
        self.conn = self._open()

    def get_many(self, identity: str, shas: Sequence[str]) -> dict[str, bytes]:
        with self._lock:
            return self._checked_get_many(identity, shas)

    def _checked_get_many(self, identity: str, shas: Sequence[str]) -> dict[str, bytes]:
        """The cached vectors of these texts, one query per 256 (a rebuild reads a million).
        An entry that is not a vector this identity could have produced (wrong length, NaN
        or infinity, not unit length) is never returned, and a writer deletes it: the text
        is embedded again (a poisoned cache never refills an index)."""
        try:
            found = self._get_many(identity, shas)
        except apsw.Error as e:
            if self.readonly:
                if storage_kind(e) != "corrupt":
                    raise
                return {}  # the writer's next open replaces it; this reader embeds
            self._damaged(e)
            return {}
        dim = identity_dim(identity)
        bad = [sha for sha, blob in found.items() if not valid_vector(blob, dim)]
        if bad:
            log.warning("vector_cache_invalid: %d entries of %s are not unit vectors of "
                        "dimension %s; dropped, their texts are embedded again",
                        len(bad), CACHE_REL, dim)
            for sha in bad:
                del found[sha]
            if not self.readonly:
                try:
                    with self.conn:
                        self.conn.executemany(
                            "DELETE FROM vectors WHERE identity = ? AND sha256 = ?",
                            [(identity, sha) for sha in bad])
                except apsw.Error as e:
                    self._damaged(e)
        return found

    def _get_many(self, identity: str, shas: Sequence[str]) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        for start in range(0, len(shas), _QUERY_CHUNK):
            chunk = shas[start:start + _QUERY_CHUNK]
            marks = ",".join("?" * len(chunk))
            found.update((str(sha), bytes(blob)) for sha, blob in self.conn.execute(
                f"SELECT sha256, vector FROM vectors WHERE identity = ? AND sha256 IN ({marks})",
                (identity, *chunk)))
        return found

    def put_many(self, identity: str, items: Sequence[tuple[str, bytes]]) -> None:
        if self.readonly:
            return
        with self._lock:
            self._put_many(identity, items)

    def _put_many(self, identity: str, items: Sequence[tuple[str, bytes]]) -> None:
        for attempt in (1, 2):
            try:
                with self.conn:
                    self.conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)",
                                          [(identity, sha, blob) for sha, blob in items])
                return
            except apsw.Error as e:
                if attempt == 2:
                    raise
                self._damaged(e)

    def close(self) -> None:
        with self._lock:
            self.conn.close()


def identity_dim(identity: str) -> int | None:
    """The dimension an embedding identity (``[provider, model, dim]`` as JSON) names."""
    try:
        return int(msgspec.json.decode(identity)[2])
    except (msgspec.DecodeError, IndexError, KeyError, TypeError, ValueError):
        return None


NORM_TOLERANCE = VECTOR_NORM_TOLERANCE  # providers' rows are L2-normalised (normalise)


def valid_vector(blob: bytes, dim: int | None) -> bool:
    """Could an embedder have produced this blob: ``dim`` float32s (any width when None),
    all finite, of unit length within :data:`NORM_TOLERANCE`?"""
    if len(blob) % 4 or not blob or (dim is not None and len(blob) != 4 * dim):
        return False
    row = np.frombuffer(blob, dtype=np.float32).astype(np.float64)
    if not np.isfinite(row).all():
        return False
    return abs(float(np.sqrt(row @ row)) - 1.0) <= NORM_TOLERANCE


def discard_cache(root: Path, error: BaseException | str) -> None:
    """Delete a damaged vector cache (and its WAL, shared memory and rollback journal) with
    one warning naming it; the next writer embeds again what it held."""
    directory = Path(root) / CACHE_DIR
    for suffix in _SQLITE_SIDE:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(directory / (CACHE_FILE + suffix))
    why = error if isinstance(error, str) else type(error).__name__
    log.warning("vector_cache_damaged: %s could not be read (%s); deleted, its vectors are "
                "embedded again", CACHE_REL, why)


def cache_problem(root: Path) -> str | None:
    """Why the root's vector cache is damaged (content-free: an error name or SQLite's
    integrity check), or None when it is absent, whole, still empty (a writer creates the
    file, then its table), or cannot be read for another reason
    (a lock, permissions: not damage, and hygiene reports an unsafe path)."""
    path = Path(root) / CACHE_DIR / CACHE_FILE
    if not os.path.isfile(path):
        return None
    try:
        conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY
                               | apsw.SQLITE_OPEN_NOFOLLOW)
    except apsw.Error:
        return None
    try:
        conn.setbusytimeout(5000)
        if conn.execute("PRAGMA quick_check").fetchall() != [("ok",)]:
            return "integrity check failed"
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'vectors'").fetchall():
            conn.execute("SELECT identity, sha256, vector FROM vectors LIMIT 1").fetchall()
    except apsw.Error as e:
        return type(e).__name__ if storage_kind(e) == "corrupt" else None
    finally:
        conn.close()
    return None


def invalid_cache_entries(root: Path) -> int:
    """How many entries of the root's vector cache are not vectors an embedder could have
    produced (health ``--deep``: every blob is read)."""
    cache = read_only_cache(root)
    if cache is None:
        return 0
    bad = 0
    try:
        for identity, blob in cache.conn.execute("SELECT identity, vector FROM vectors"):
            if not valid_vector(bytes(blob), identity_dim(str(identity))):
                bad += 1
    except apsw.Error:
        return bad
    finally:
        cache.close()
    return bad


def read_only_cache(root: Path) -> VectorCache | None:
    """The root's vector cache opened read-only, or None when it is absent or unreadable (a
    reader then embeds what it needs and keeps nothing)."""
    if not os.path.isfile(root / CACHE_DIR / CACHE_FILE):
        return None
    try:
        cache = VectorCache(root, readonly=True)
        cache.conn.execute("SELECT 1 FROM vectors LIMIT 1").fetchall()
    except apsw.Error:
        return None
    return cache
