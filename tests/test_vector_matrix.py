"""The in-memory vector matrix and the vector cache read in bounded chunks (issue 16: a first
load of N vectors peaks at the matrix plus one chunk; a rebuild's cache reads are batched)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memory_es.vectors import matrix as matrix_module
from memory_es.vectors import pending
from memory_es.vectors.cache import VectorCache
from memory_es.vectors.matrix import VectorMatrix
from projections.replay import build_generation

DIM = 4
IDENTITY = "test/matrix/4"


def _vector(n: int) -> np.ndarray:
    v = np.array([1.0, n, n % 3, -n], dtype=np.float32)
    return v / np.linalg.norm(v)


def test_a_load_in_chunks_holds_every_live_row_in_order(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(matrix_module, "_LOAD_CHUNK", 3)
    conn = build_generation(tmp_path / "gen" / "memory.db", []).conn
    with conn:
        for rowid in range(1, 12):
            status = "dropped" if rowid == 5 else "open"
            conn.execute("INSERT INTO memories VALUES (?, ?, 'observation', ?, '2026-12-01', "
                         "'2026-12-01T09:00:00Z', ?, 'user', NULL, NULL, 'journal')",
                         (rowid, f"m{rowid}", f"text {rowid}", status))
            conn.execute("INSERT INTO vectors VALUES (?, ?, ?)",
                         (rowid, IDENTITY, _vector(rowid).tobytes()))
    matrix = VectorMatrix(DIM, IDENTITY)
    matrix.refresh(conn, IDENTITY)
    live = [r for r in range(1, 12) if r != 5]  # a terminal row never enters (G22)
    assert matrix.rowids.tolist() == live
    assert np.array_equal(matrix.matrix, np.stack([_vector(r) for r in live]))
    with conn:  # later rows arrive through the same chunked path
        for rowid in (12, 13, 14, 15):
            conn.execute("INSERT INTO memories VALUES (?, ?, 'observation', ?, '2026-12-01', "
                         "'2026-12-01T09:00:00Z', 'open', 'user', NULL, NULL, 'journal')",
                         (rowid, f"m{rowid}", f"text {rowid}"))
            conn.execute("INSERT INTO vectors VALUES (?, ?, ?)",
                         (rowid, IDENTITY, _vector(rowid).tobytes()))
    matrix.refresh(conn, IDENTITY)
    assert matrix.rowids.tolist() == [*live, 12, 13, 14, 15]
    assert matrix.top(_vector(13), 1)[0][0] == 13


def test_the_cache_answers_more_texts_than_one_query_holds(tmp_path: Path) -> None:
    cache = VectorCache(tmp_path)
    items = [(f"{n:064x}", _vector(n).tobytes()) for n in range(pending.MAX_IN_FLIGHT * 2 + 5)]
    cache.put_many(IDENTITY, items)
    wanted = [sha for sha, _ in items[::2]] + ["f" * 64]  # one never cached
    found = cache.get_many(IDENTITY, wanted)
    assert found == {sha: blob for sha, blob in items[::2]}
    assert cache.get_many("other/identity", wanted) == {}
    cache.close()
