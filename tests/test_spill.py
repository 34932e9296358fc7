"""A long-lived writer's vector matrix in a mapped, unnamed file (issue 16 item 3,
``recall.spill``): the same answers as the matrix in RAM, its pages out of the resident set
after every whole pass, and no file left behind."""

from __future__ import annotations

from pathlib import Path

import apsw
import numpy as np
import pytest

from memory_es.vectors import spill
from memory_es.vectors.matrix import VectorMatrix


def rss_file_kb() -> int:
    """This process's resident file-backed pages (``RssFile`` in /proc/self/status)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssFile:"):
            return int(line.split()[1])
    raise AssertionError("no RssFile line")


def test_a_released_mapping_keeps_its_data_and_leaves_the_resident_set(tmp_path: Path) -> None:
    rows, dim = 200_000, 128  # 100 MB: above RELEASE_BYTES
    matrix = spill.allocate(rows, dim, tmp_path)
    assert spill.mapping_of(matrix) is not None and spill.mapping_of(matrix[5:9]) is not None
    before = rss_file_kb()
    rng = np.random.default_rng(1)
    block = rng.standard_normal((spill.CHUNK_ROWS, dim), dtype=np.float32)
    for start in range(0, rows, spill.CHUNK_ROWS):
        end = min(rows, start + spill.CHUNK_ROWS)
        matrix[start:end] = block[:end - start]
        spill.release(matrix, start, end)
    grown = rss_file_kb() - before
    assert grown < 40_000, f"{grown} KB of the 100 MB matrix still resident"  # one chunk: 32 MB
    query = block[:3]
    expected = np.concatenate([block, block, block, block[:rows - 3 * spill.CHUNK_ROWS]]) @ query.T
    assert np.allclose(spill.scores(matrix, query), expected, atol=1e-4)
    assert rss_file_kb() - before < 40_000  # an exact scan releases as it goes
    assert list(tmp_path.iterdir()) == []  # the file has no name


def test_ram_and_small_matrices_are_never_released(tmp_path: Path) -> None:
    ram = np.ones((10, 4), dtype=np.float32)
    assert spill.mapping_of(ram) is None
    spill.release(ram, 0, 10)  # a no-op, not an error
    small = spill.allocate(10, 4, tmp_path)
    small[:] = 2.0
    spill.release(small, 0, 10)
    assert float(small.sum()) == 80.0


def index_with_vectors(path: Path, rows: int, dim: int, seed: int) -> tuple[apsw.Connection,
                                                                         np.ndarray]:
    conn = apsw.Connection(str(path))
    conn.execute("CREATE TABLE memories (rowid INTEGER PRIMARY KEY, status TEXT)")
    conn.execute("CREATE TABLE vectors (rowid INTEGER PRIMARY KEY, identity TEXT, vector BLOB)")
    vectors = np.random.default_rng(seed).standard_normal((rows, dim), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    with conn:
        conn.executemany("INSERT INTO memories VALUES (?, 'open')", [(r,) for r in
                                                                     range(1, rows + 1)])
        conn.executemany("INSERT INTO vectors VALUES (?, 'id', ?)",
                         [(r + 1, v.tobytes()) for r, v in enumerate(vectors)])
    return conn, vectors


def test_a_spilled_matrix_answers_like_one_in_ram(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Every path over the mapped matrix, with chunks and the release threshold made small so
    that a few thousand rows take them all: load, growth copies, exact top-k, forget, and
    rows added later."""
    monkeypatch.setattr(spill, "CHUNK_ROWS", 1_024)
    monkeypatch.setattr(spill, "RELEASE_BYTES", 64 * 1024)
    monkeypatch.setattr("memory_es.vectors.ann.ANN_THRESHOLD", 10**9)  # exact answers only
    conn, vectors = index_with_vectors(tmp_path / "index.db", 5_000, 32, seed=7)
    generation = tmp_path / "gen"
    generation.mkdir()
    mapped = VectorMatrix(32, "id", approximate=True, ann_dir=generation)
    in_ram = VectorMatrix(32, "id")
    for matrix in (mapped, in_ram):
        matrix.refresh(conn, "id")
    assert spill.mapping_of(mapped._matrix) is not None
    assert spill.mapping_of(in_ram._matrix) is None
    queries = [vectors[n] + 0.01 for n in (3, 1_500, 4_999)]
    assert mapped.top_many(queries, 10) == in_ram.top_many(queries, 10)
    assert mapped.top(queries[1], 50) == in_ram.top(queries[1], 50)
    for matrix in (mapped, in_ram):
        matrix.forget([4, 1_501])
    assert mapped.top(queries[1], 10) == in_ram.top(queries[1], 10)
    assert 1_501 not in [r for r, _ in mapped.top(queries[1], 10)]
    more = np.random.default_rng(8).standard_normal((3_000, 32), dtype=np.float32)
    with conn:  # rows past the capacity: the mapped matrix grows by a chunked copy
        conn.executemany("INSERT INTO memories VALUES (?, 'open')",
                         [(r,) for r in range(5_001, 8_001)])
        conn.executemany("INSERT INTO vectors VALUES (?, 'id', ?)",
                         [(5_001 + n, v.tobytes()) for n, v in enumerate(more)])
    for matrix in (mapped, in_ram):
        matrix.refresh(conn, "id")
    late = [more[10], more[2_999]]
    assert mapped.top_many(late, 5) == in_ram.top_many(late, 5)
    assert np.array_equal(mapped.matrix, in_ram.matrix)
    assert list(generation.iterdir()) == []  # no file by name, ever
    mapped.close()


def test_cosines_find_their_rows_in_order_and_after_a_re_read(tmp_path: Path) -> None:
    """The lexical hits' cosines: by bisection while rows came in rowid order, by a pass once
    a re-read row broke the order; dead rows never answer; both agree with the matrix."""
    conn, vectors = index_with_vectors(tmp_path / "index.db", 300, 16, seed=3)
    matrix = VectorMatrix(16, "id")
    matrix.refresh(conn, "id")
    query = vectors[10]
    expected = {r: float(vectors[r - 1] @ query) for r in (5, 50, 300)}
    assert matrix._ordered
    assert matrix.cosines(query, [5, 50, 300, 301, 0, -1]) == pytest.approx(expected)
    matrix.forget([50])
    assert 50 not in matrix.cosines(query, [5, 50])
    matrix.refresh(conn, "id")  # row 50 still has its vector: read again, at the end
    assert not matrix._ordered
    assert matrix.cosines(query, [5, 50, 300, 301]) == pytest.approx(expected)
    assert matrix._live == 300


def test_a_few_scattered_rows_do_not_stay_resident(tmp_path: Path) -> None:
    """What a query does to a large mapped matrix: a hundred scattered rows, copied out. A
    file mapping faults in whole page-cache folios, so without the release each query left
    ~160 MB resident at 1M rows (measured); with it the resident set stays put."""
    rows, dim = 200_000, 128
    matrix = spill.allocate(rows, dim, tmp_path)
    for start in range(0, rows, spill.CHUNK_ROWS):
        end = min(rows, start + spill.CHUNK_ROWS)
        matrix[start:end] = 1.0
        spill.release(matrix, start, end)
    before = rss_file_kb()
    rng = np.random.default_rng(2)
    for _ in range(20):
        positions = rng.choice(rows, 100, replace=False)
        got = spill.gather(matrix, positions)
        assert got.shape == (100, dim) and float(got.sum()) == 100 * dim
    assert rss_file_kb() - before < 8_000
