"""The vector matrix (D4, G31): a generation's vectors of one identity as one float32 matrix,
refreshed incrementally by rowid, searched exactly with numpy (a long-lived writer's rows in a
mapped file, :mod:`memory_es.vectors.spill`), or through an ANN index
(:mod:`memory_es.vectors.ann`) past :data:`~memory_es.vectors.ann.ANN_THRESHOLD` rows.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import apsw
import numpy as np

from memory_es.indexread import optional_rows
from memory_es.vectors import spill
from memory_es.vectors.ann import AnnCache, ann_paths
from memory_es.vocabulary import TERMINAL_SQL

_LOAD_CHUNK = 8192  # vectors read per query when the matrix loads
_IN_CHUNK = 30_000  # rowids bound per IN list


class VectorMatrix:
    """The active generation's vectors in memory, refreshed incrementally by rowid."""

    def __init__(self, dim: int, identity: str = "", *, approximate: bool = False,
                 ann_dir: Path | None = None, saved_only: bool = False) -> None:
        """``approximate``: past :data:`ann.ANN_THRESHOLD` rows, search an ANN index once it
        is built (a long-lived writer; a one-shot reader searches exactly). ``ann_dir``: the
        generation directory that keeps the index between opens. ``saved_only`` (a
        long-lived reader): only the index saved there, when it covers these rows; nothing is
        written beside the generation."""
        self.dim = dim
        self.identity = identity
        # a long-lived writer's rows live in a mapped file beside the generation (spill)
        self._spill_dir = ann_dir if approximate and not saved_only else None
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
                             lambda: (self.rowids, self.matrix),
                             saved_only=saved_only) if approximate else None

    @property
    def approximate(self) -> bool:
        """Is an ANN index proposing rows now?"""
        return self._ann is not None and self._ann.ready

    def close(self) -> None:
        """Stop an index build; keep a grown index for the next open. The matrix searches
        exactly after this, and its memory goes as soon as nothing holds it (the index's
        reference back to it is dropped)."""
        if self._ann is not None:
            self._ann.close()
            self._ann = None

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
                f"WHERE v.identity = ? AND v.rowid > ? AND m.status NOT IN {TERMINAL_SQL} "
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
        # in parts: SQLite binds at most 32,766 values (every row waits after a model switch)
        for part in range(0, len(wanted), _IN_CHUNK):
            self._read_again(conn, identity, wanted[part:part + _IN_CHUNK])
        self._grown()

    def _read_again(self, conn: apsw.Connection, identity: str, wanted: list[int]) -> None:
        """The rows below the high-water mark that were waiting and now have a vector."""
        marks = ",".join("?" * len(wanted))
        back = list(conn.execute(
            "SELECT v.rowid, v.vector FROM vectors v JOIN memories m ON m.rowid = v.rowid "
            f"WHERE v.identity = ? AND v.rowid IN ({marks}) AND m.status NOT IN {TERMINAL_SQL} "
            "ORDER BY v.rowid", (identity, *wanted)))
        self._readd.difference_update(r[0] for r in back)
        # a row that left recall for good is not waited for
        self._readd.difference_update(r[0] for r in conn.execute(
            f"SELECT rowid FROM memories WHERE rowid IN ({marks}) AND status IN {TERMINAL_SQL}",
            wanted))
        self._append(back)

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
        """The cosines of those of these rows the matrix holds (the lexical hits)."""
        found, rows = self.vectors(rowids)
        return {rowid: float(row @ query) for rowid, row in zip(found, rows, strict=True)}

    def vectors(self, rowids: Sequence[int]) -> tuple[list[int], np.ndarray]:
        """Those of these rows the matrix holds, and their vectors: found by bisection while
        positions are in rowid order, else with one pass over the row ids (a pass costs ~4 ms
        a query at 1,000,000 rows, a scan per row ~1 ms at 100,000)."""
        if not rowids or not self._size:
            return [], np.zeros((0, self.dim), dtype=np.float32)
        wanted = np.asarray(rowids, dtype=np.int64)
        if self._ordered:  # bisection over the ids: a few rows cost no pass over a million
            ids = self._ids[:self._size]
            at = np.searchsorted(ids, wanted)
            inside = at < self._size
            at, wanted = at[inside], wanted[inside]
            # each wanted id against the id it bisected to (np.isin sorts both, and its first
            # call imports numpy.ma)
            hits = at[(ids[at] == wanted) & (self.rowids[at] >= 0)]
        else:
            hits = np.nonzero(np.isin(self.rowids, wanted))[0]
        return [int(r) for r in self.rowids[hits]], spill.gather(self.matrix, hits)
