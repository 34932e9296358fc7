"""Vectors of the read path (D4, D6, D9, B25).

- ``VectorCache``: ``embeddings/cache.db`` at the root, outside generations, keyed by embedding
  identity + SHA-256 of the text, so rebuild and replay never re-embed unchanged text and a
  changed identity re-embeds (B25).
- The pending queue: :func:`pending_texts` lists memories of a generation that lack a vector
  (at most 256 texts / 2 MiB in flight, D6), :func:`embed_texts` embeds them in batches of 32,
  cache first, and :func:`store_vectors` writes them back. The provider call happens between
  these steps, without any store lock held.
- ``VectorMatrix``: the generation's vectors as one float32 matrix, searched exactly with numpy
  (a long-lived writer's rows in a mapped file, :mod:`.spill`), or through an ANN index past
  :data:`ann.ANN_THRESHOLD` rows.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw
import msgspec
import numpy as np

from memory_es.embeddings import BATCH_SIZE, Embedder
from memory_es.errors import storage_kind
from memory_es.fsutil import make_private_dir
from memory_es.ids import sha256_hex
from memory_es.recall import spill
from memory_es.recall.ann import AnnCache, ann_paths
from memory_es.vocabulary import TERMINAL_STATUSES, sql_list
from projections.compare import VECTOR_NORM_TOLERANCE
from projections.sqlite_index import connect_derived

log = logging.getLogger("memory_es")

CACHE_DIR = "embeddings"
CACHE_FILE = "cache.db"
CACHE_REL = f"{CACHE_DIR}/{CACHE_FILE}"
_SQLITE_SIDE = ("", "-wal", "-shm", "-journal")
MAX_IN_FLIGHT = 256  # D6: at most 256 texts ...
MAX_IN_FLIGHT_BYTES = 2 * 1024 * 1024  # ... and 2 MiB in flight
_LOAD_CHUNK = 8192  # vectors read per query when the matrix loads
# G22: terminal records never enter a retriever, so they cannot crowd live ones out of the pool
_TERMINAL_SQL = sql_list(TERMINAL_STATUSES)


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
        for start in range(0, len(shas), MAX_IN_FLIGHT):
            chunk = shas[start:start + MAX_IN_FLIGHT]
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
    integrity check), or None when it is absent, whole, or cannot be read for another reason
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
        checked = conn.execute("PRAGMA quick_check").fetchall()
        conn.execute("SELECT identity, sha256, vector FROM vectors LIMIT 1").fetchall()
    except apsw.Error as e:
        return type(e).__name__ if storage_kind(e) == "corrupt" else None
    finally:
        conn.close()
    if checked != [("ok",)]:
        return "integrity check failed"
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


@dataclass
class PendingTexts:
    """Memories of the active generation that wait for a vector of this identity."""

    rowids: list[int]
    texts: list[str]


def pending_texts(conn: apsw.Connection, identity: str, limit: int = MAX_IN_FLIGHT) -> PendingTexts:
    """Up to ``limit`` texts (and at most 2 MiB) lacking a vector for ``identity`` (D6).

    A changed identity drops every vector and queues every memory again (B25). Reads only the
    queue the projection keeps (``vector_pending``), never every memory.
    """
    row: Any = conn.execute("SELECT value FROM meta WHERE key = 'vector_identity'").fetchone()
    if row is None or row[0] != identity:
        with conn:
            conn.execute("DELETE FROM vectors WHERE identity != ?", (identity,))
            conn.execute("INSERT OR IGNORE INTO vector_pending SELECT m.rowid FROM memories m "
                         "LEFT JOIN vectors v ON v.rowid = m.rowid WHERE v.rowid IS NULL")
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('vector_identity', ?)", (identity,))
    rows = conn.execute(
        "SELECT m.rowid, m.text FROM vector_pending p JOIN memories m ON m.rowid = p.rowid "
        f"WHERE m.status NOT IN {_TERMINAL_SQL} ORDER BY p.rowid LIMIT ?", (limit,))
    pending = PendingTexts([], [])
    size = 0
    for rowid, text in rows:
        size += len(text.encode("utf-8"))
        if pending.rowids and size > MAX_IN_FLIGHT_BYTES:
            break
        pending.rowids.append(rowid)
        pending.texts.append(text)
    return pending


def embed_texts(embedder: Embedder, cache: VectorCache | None,
                texts: Sequence[str]) -> list[bytes]:
    """float32 vectors for ``texts``: cached ones reused, the rest embedded in batches of 32.

    Raises EmbeddingError when the provider fails; nothing is cached for a failed batch.
    """
    identity = embedder.identity.key
    shas = [sha256_hex(t) for t in texts]
    cached = cache.get_many(identity, shas) if cache is not None else {}
    missing = [i for i, sha in enumerate(shas) if sha not in cached]
    for start in range(0, len(missing), BATCH_SIZE):
        chunk = missing[start:start + BATCH_SIZE]
        vectors = embedder.embed([texts[i] for i in chunk])
        fresh = [(shas[i], vectors[n].astype(np.float32).tobytes()) for n, i in enumerate(chunk)]
        cached.update(fresh)
        if cache is not None:
            cache.put_many(identity, fresh)
    return [cached[sha] for sha in shas]


def vector_backlog(conn: apsw.Connection, identity: str) -> int:
    """Live memories that lack a vector of ``identity`` (recall finds them lexically until
    they have one, D9). A generation whose vectors belong to another identity has them all."""
    row: Any = conn.execute("SELECT value FROM meta WHERE key = 'vector_identity'").fetchone()
    if row is None or row[0] != identity:
        live: Any = conn.execute(
            f"SELECT count(*) FROM memories WHERE status NOT IN {_TERMINAL_SQL}").fetchone()
        return int(live[0])
    waiting = optional_rows(
        conn, "SELECT count(*) FROM vector_pending p JOIN memories m ON m.rowid = p.rowid "
              f"WHERE m.status NOT IN {_TERMINAL_SQL}", ())
    return int(waiting[0][0]) if waiting else 0


def fill_vectors(conn: apsw.Connection, embedder: Embedder, cache: VectorCache | None,
                 *, deadline: float | None = None) -> int:
    """Embed every live memory of ``conn`` that lacks a vector (cache first, B25), batch by
    batch, until none is left, the provider fails or ``deadline`` (monotonic) passes.

    Returns the backlog left (0 when complete). Raises ``EmbeddingError`` from the provider;
    what was stored before stays.
    """
    identity = embedder.identity.key
    while deadline is None or time.monotonic() < deadline:
        pending = pending_texts(conn, identity)
        if not pending.rowids:
            return 0
        store_vectors(conn, identity, pending.rowids,
                      embed_texts(embedder, cache, pending.texts))
    return vector_backlog(conn, identity)


def store_vectors(conn: apsw.Connection, identity: str, rowids: Sequence[int],
                  blobs: Sequence[bytes]) -> None:
    with conn:  # a row forgotten while its text was being embedded gets no vector
        conn.executemany("INSERT OR REPLACE INTO vectors SELECT ?, ?, ? WHERE EXISTS "
                         "(SELECT 1 FROM memories WHERE rowid = ?)",
                         [(r, identity, b, r) for r, b in zip(rowids, blobs, strict=True)])
        conn.executemany("DELETE FROM vector_pending WHERE rowid = ?", [(r,) for r in rowids])


class VectorMatrix:
    """The active generation's vectors in memory, refreshed incrementally by rowid."""

    def __init__(self, dim: int, identity: str = "", *, approximate: bool = False,
                 ann_dir: Path | None = None) -> None:
        """``approximate``: past :data:`ann.ANN_THRESHOLD` rows, search an ANN index once it
        is built (a long-lived writer; a one-shot reader searches exactly). ``ann_dir``: the
        generation directory that keeps the index between opens."""
        self.dim = dim
        self.identity = identity
        # a long-lived writer's rows live in a mapped file beside the generation (spill)
        self._spill_dir = ann_dir if approximate else None
        self._rowids = np.zeros(0, dtype=np.int64)
        # each position's row id, never marked dead: while rows come in rowid order (re-read
        # rows break it) the ids of a few rows are found by bisection, not a pass over all
        self._ids = np.zeros(0, dtype=np.int64)
        self._ordered = True
        self._live = 0  # positions not marked dead
        self._matrix = np.zeros((0, dim), dtype=np.float32)
        self._size = 0
        self._last = 0
        self._readd: set[int] = set()  # forgotten rows to read again once re-embedded
        self._ann = AnnCache(dim, ann_paths(ann_dir, identity) if ann_dir else None,
                             lambda: (self.rowids, self.matrix)) if approximate else None

    @property
    def approximate(self) -> bool:
        """Is an ANN index proposing rows now?"""
        return self._ann is not None and self._ann.ready

    def close(self) -> None:
        """Stop an index build; keep a grown index for the next open."""
        if self._ann is not None:
            self._ann.close()

    @property
    def rowids(self) -> np.ndarray:
        return self._rowids[:self._size]

    @property
    def matrix(self) -> np.ndarray:
        return self._matrix[:self._size]

    def forget(self, rowids: Sequence[int]) -> None:
        """Drop these rows (their vector went stale or they left recall); a row that gets a
        vector again is re-read by the next :meth:`refresh`."""
        gone = np.isin(self.rowids, np.asarray(rowids, dtype=np.int64))
        with self._guard():
            self._matrix[:self._size][gone] = 0.0
            self._rowids[:self._size][gone] = -1
            self._live -= int(np.count_nonzero(gone))
            if self._ann is not None and gone.any():
                self._ann.removed(np.nonzero(gone)[0])
        self._readd.update(int(r) for r in rowids)

    def refresh(self, conn: apsw.Connection, identity: str) -> None:
        # New rows in chunks into a matrix sized once: a first load of N vectors peaks at
        # the matrix plus one chunk, not at a list of every blob, their join and a doubling.
        if self._last == 0:
            count: Any = conn.execute("SELECT count(*) FROM vectors WHERE identity = ?",
                                      (identity,)).fetchone()
            self._reserve(int(count[0]))
        while True:
            rows = list(conn.execute(
                "SELECT v.rowid, v.vector FROM vectors v JOIN memories m ON m.rowid = v.rowid "
                f"WHERE v.identity = ? AND v.rowid > ? AND m.status NOT IN {_TERMINAL_SQL} "
                "ORDER BY v.rowid LIMIT ?", (identity, self._last, _LOAD_CHUNK)))
            self._append(rows)
            if rows:
                self._last = int(rows[-1][0])
            if len(rows) < _LOAD_CHUNK:
                break
        # A row below the high-water mark still waiting for its vector (a text rewritten before
        # this matrix existed, or since) is read once it has one.
        self._readd.update(r[0] for r in optional_rows(
            conn, "SELECT rowid FROM vector_pending WHERE rowid <= ?", (self._last,)))
        wanted = sorted(r for r in self._readd if r <= self._last)
        if not wanted:
            self._grown()
            return
        marks = ",".join("?" * len(wanted))
        back = list(conn.execute(
            "SELECT v.rowid, v.vector FROM vectors v JOIN memories m ON m.rowid = v.rowid "
            f"WHERE v.identity = ? AND v.rowid IN ({marks}) AND m.status NOT IN {_TERMINAL_SQL} "
            "ORDER BY v.rowid", (identity, *wanted)))
        self._readd.difference_update(r[0] for r in back)
        # a row that left recall for good is not waited for
        self._readd.difference_update(r[0] for r in conn.execute(
            f"SELECT rowid FROM memories WHERE rowid IN ({marks}) AND status IN {_TERMINAL_SQL}",
            wanted))
        self._append(back)
        self._grown()

    def _reserve(self, capacity: int) -> None:
        """Room for ``capacity`` rows without another copy."""
        if capacity <= len(self._rowids):
            return
        rowids = np.zeros(capacity, dtype=np.int64)
        ids = np.zeros(capacity, dtype=np.int64)
        matrix = spill.allocate(capacity, self.dim, self._spill_dir)
        rowids[:self._size] = self.rowids
        ids[:self._size] = self._ids[:self._size]
        spill.copy_rows(matrix, self._matrix, self._size)
        self._rowids, self._ids, self._matrix = rowids, ids, matrix

    def _grown(self) -> None:
        """Once a refresh is done (not per chunk: a first load's partial matrix is never what
        a saved index covers), the ANN index catches up or starts."""
        if self._ann is not None:
            with self._guard():
                self._ann.grown()

    def rows_removed(self) -> None:
        """Rows left the index by a path this matrix does not see (a forget): its ANN index
        is never saved again and no file of it stays."""
        if self._ann is not None:
            self._ann.mark_removed()

    def _guard(self) -> Any:
        return self._ann.lock if self._ann is not None else contextlib.nullcontext()

    def _append(self, rows: list[Any]) -> None:
        if not rows:
            return
        with self._guard():
            self._append_held(rows)

    def _append_held(self, rows: list[Any]) -> None:
        end = self._size + len(rows)
        if end > len(self._rowids):  # grow by doubling: appends stay amortised O(1)
            self._reserve(max(end, 2 * len(self._rowids), 64))
        added = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        if self._ordered and ((self._size and added[0] <= self._ids[self._size - 1])
                              or bool(np.any(np.diff(added) <= 0))):
            self._ordered = False  # a re-read row: positions are no longer in rowid order
        self._rowids[self._size:end] = added
        self._ids[self._size:end] = added
        self._live += len(rows)
        self._matrix[self._size:end] = np.frombuffer(
            b"".join(bytes(r[1]) for r in rows), dtype=np.float32).reshape(len(rows), self.dim)
        spill.release(self._matrix, self._size, end)
        self._size = end

    def top_many(self, queries: Sequence[np.ndarray], k: int) -> list[list[tuple[int, float]]]:
        """:meth:`top` for several queries with one pass over the matrix."""
        if not queries:
            return []
        if not self._size:
            return [[] for _ in queries]
        stacked = np.stack(queries).astype(np.float32)
        if (exact := self._proposed(stacked, k)) is not None:
            return exact
        sims = spill.scores(self.matrix, stacked)
        k = min(k, self._size)
        out = []
        for column in sims.T:
            best = np.argpartition(-column, k - 1)[:k]
            best = best[np.argsort(-column[best], kind="stable")]
            out.append([(int(self.rowids[i]), float(column[i])) for i in best
                        if self.rowids[i] >= 0])
        return out

    def top(self, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        """(rowid, cosine) of the ``k`` nearest rows; rows are L2-normalised, so dot = cosine."""
        if not len(self.rowids):
            return []
        if (exact := self._proposed(query.astype(np.float32)[None, :], k)) is not None:
            return exact[0]
        sims = spill.scores(self.matrix, query.astype(np.float32)[None, :])[:, 0]
        k = min(k, len(sims))
        best = np.argpartition(-sims, k - 1)[:k]
        best = best[np.argsort(-sims[best], kind="stable")]
        return [(int(self.rowids[i]), float(sims[i])) for i in best if self.rowids[i] >= 0]

    def _proposed(self, queries: np.ndarray, k: int) -> list[list[tuple[int, float]]] | None:
        """The ANN index's proposals for each query, scored exactly against the matrix and
        cut to ``k``; None when no index serves (search exactly)."""
        if self._ann is None:
            return None
        with self._guard():
            proposed = self._ann.search(queries, k)
            if proposed is None:
                return None
            rowids, matrix = self.rowids, self.matrix
            want = min(k, self._live)
            out = []
            for query, positions in zip(queries, proposed, strict=True):
                positions = positions[(positions < len(rowids))]
                positions = positions[rowids[positions] >= 0]
                if len(positions) < want:  # dead rows crowded the proposals: search exactly
                    return None
                sims = spill.gather(matrix, positions) @ query
                best = np.argsort(-sims, kind="stable")[:k]
                out.append([(int(rowids[positions[i]]), float(sims[i])) for i in best])
            return out

    def cosines(self, query: np.ndarray, rowids: Sequence[int]) -> dict[int, float]:
        """The cosines of those of these rows the matrix holds (the lexical hits): found by
        bisection while positions are in rowid order, else with one pass over the row ids
        (a pass costs ~4 ms a query at 1,000,000 rows, a scan per row ~1 ms at 100,000)."""
        if not rowids or not self._size:
            return {}
        wanted = np.asarray(rowids, dtype=np.int64)
        if self._ordered:  # bisection over the ids: a few rows cost no pass over a million
            ids = self._ids[:self._size]
            at = np.searchsorted(ids, wanted)
            at = at[at < self._size]
            hits = at[np.isin(ids[at], wanted) & (self.rowids[at] >= 0)]
        else:
            hits = np.nonzero(np.isin(self.rowids, wanted))[0]
        rows = spill.gather(self.matrix, hits)
        return {int(self.rowids[i]): float(row @ query) for i, row in zip(hits, rows,
                                                                         strict=True)}



def optional_rows(conn: apsw.Connection, sql: str, params: Sequence[Any]) -> list[Any]:
    """Reads of tables newer than some index generations (graph, vector queue): a generation
    from before them simply has no such rows."""
    try:
        return list(conn.execute(sql, params))
    except apsw.SQLError:
        return []
