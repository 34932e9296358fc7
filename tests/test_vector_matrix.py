"""The in-memory vector matrix and the vector cache read in bounded chunks (issue 16: a first
load of N vectors peaks at the matrix plus one chunk; a rebuild's cache reads are batched)."""

from __future__ import annotations

from pathlib import Path

import apsw
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
        for rowid in range(1, 12):  # 7-9: a whole chunk of rows that left recall
            status = {5: "dropped", 7: "invalidated", 8: "dropped", 9: "invalidated"}.get(
                rowid, "open")
            conn.execute("INSERT INTO memories VALUES (?, ?, 'observation', ?, '2026-12-01', "
                         "'2026-12-01T09:00:00Z', ?, 'user', NULL, NULL, 'journal')",
                         (rowid, f"m{rowid}", f"text {rowid}", status))
            conn.execute("INSERT INTO vectors VALUES (?, ?, ?)",
                         (rowid, IDENTITY, _vector(rowid).tobytes()))
        conn.execute("INSERT INTO vectors VALUES (20, ?, ?)",  # a vector with no memory row
                     (IDENTITY, _vector(20).tobytes()))
    matrix = VectorMatrix(DIM, IDENTITY)
    matrix.refresh(conn, IDENTITY)
    live = [1, 2, 3, 4, 6, 10, 11]  # a terminal row never enters (G22), nor an orphan vector
    assert matrix.rowids.tolist() == live
    assert np.array_equal(matrix.matrix, np.stack([_vector(r) for r in live]))
    # by id: a row that left recall (5) or was never stored (99) is not found, and is never
    # answered with the row it bisects to
    found, rows = matrix.vectors([5, 6, 99])
    assert found == [6] and np.array_equal(rows, _vector(6)[None])
    assert matrix.cosines(_vector(6), [4, 5]) == {4: pytest.approx(float(_vector(4) @ _vector(6)))}
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


def test_a_reader_maps_the_index_it_reads(tmp_path: Path) -> None:
    """The read-only door reads the active generation through a mapping (a cold search loads
    every vector, one row to a page), and a file that is no database still fails at its first
    query, not at the pragma."""
    from memory_es import CompletedTurn, MemoryStore
    from memory_es.config import parse_config
    from projections.derived import (
        READER_MMAP_BYTES,
        generation_path,
        open_active_index,
        read_current,
    )

    root = tmp_path / "root"
    with MemoryStore.open(root, parse_config({"mode": "lite"}), background=False) as store:
        store.persist_completed_turn(CompletedTurn(run_id="r1", outcome="success",
                                                   answer="The dentist is on Tuesday."))
        store.drain()
    conn = open_active_index(root)
    assert conn is not None
    assert conn.execute("PRAGMA mmap_size").fetchone() == (READER_MMAP_BYTES,)
    assert conn.execute("SELECT text FROM memories").fetchall() == [
        ("The dentist is on Tuesday.",)]
    conn.close()
    generation = read_current(root)
    assert generation is not None
    generation_path(root, generation).write_bytes(b"\x00" * 8192)
    broken = open_active_index(root)
    assert broken is not None
    with pytest.raises(apsw.Error):
        broken.execute("SELECT count(*) FROM memories").fetchall()
