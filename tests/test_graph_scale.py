"""One-hop graph expansion at scale (issue 12 item 8; L4, G12, G31).

With 50 or more vectored memories the candidate pool is full before expansion, so expanding
the pool itself never added a neighbour. Expansion now follows G12: the direct hits are cut
first, their one-hop neighbours then compete with them, and the final list is cut once more,
within the same limit. Built over 1,200 memories in a real index generation.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from memory_es.recall import recall
from memory_es.vectors.matrix import VectorMatrix
from projections.replay import build_generation

DIM = 8
NOW = datetime(2026, 12, 3, 12, tzinfo=UTC)
IDENTITY = "test/graph/8"


def unit(cos: float, axis: int) -> np.ndarray:
    """A unit vector with cosine ``cos`` to the query axis e0, the rest on ``axis``."""
    v = np.zeros(DIM, dtype=np.float32)
    v[0] = cos
    v[axis] = np.sqrt(1.0 - cos * cos)
    return v


def test_neighbours_compete_for_the_limit_when_the_pool_is_full(tmp_path: Path) -> None:
    index = build_generation(tmp_path / "gen" / "memory.db", [])
    conn = index.conn
    rng = np.random.default_rng(7)
    rows: list[tuple[str, str, np.ndarray]] = [
        ("seed", "Morgan works at Acme Robotics", unit(0.80, 1)),
        ("neighbour", "The Lyon office opened in spring", unit(0.85, 2)),
    ]
    # 49 lexical matches with no semantic evidence (facing away from the query, so that no
    # vector rank joins their lexical one) fill the lexical half of the pool ...
    rows += [(f"lex{n}", f"Morgan filed expense report {n}", unit(-0.5, 3)) for n in range(49)]
    # ... 40 close paraphrases outrank the neighbour by cosine and fill the vector half ...
    rows += [(f"vec{n}", f"Quarterly staffing paragraph {n}", unit(0.86 + n / 1000, 4))
             for n in range(40)]
    # ... and 1,110 unrelated memories sit far away.
    for n in range(1110):
        v = rng.normal(size=DIM).astype(np.float32)
        v[0] = -abs(v[0])
        rows.append((f"far{n}", f"Unrelated note number {n}", v / np.linalg.norm(v)))
    with conn:
        for rowid, (mid, text, vector) in enumerate(rows, start=1):
            conn.execute("INSERT INTO memories VALUES (?, ?, 'observation', ?, '2026-12-01', "
                         "'2026-12-01T09:00:00Z', 'open', 'user', NULL, NULL, 'bujo')",
                         (rowid, mid, text))
            conn.execute("INSERT INTO memories_fts (rowid, text) VALUES (?, ?)", (rowid, text))
            conn.execute("INSERT INTO vectors VALUES (?, ?, ?)",
                         (rowid, IDENTITY, vector.astype(np.float32).tobytes()))
        conn.execute("INSERT INTO entities VALUES (1, 'e-morgan', 'Morgan', 'person')")
        conn.execute("INSERT INTO entities VALUES (2, 'e-acme', 'Acme Robotics', 'org')")
        conn.execute("INSERT INTO memory_entities VALUES ('seed', 'e-morgan', 0)")
        conn.execute("INSERT INTO memory_entities VALUES ('neighbour', 'e-acme', 0)")
        conn.execute("INSERT INTO relations VALUES (1, 'e-morgan', 'works_at', 'e-acme', "
                     "'seed')")
    assert len(rows) >= 1000
    matrix = VectorMatrix(DIM, IDENTITY)
    matrix.refresh(conn, IDENTITY)
    query = unit(1.0, 1)

    def ids(expand: bool, limit: int = 50) -> list[str]:
        result = recall(conn, "Morgan", now=NOW, query_vector=query, matrix=matrix,
                        limit=limit, expand=expand)
        return [h.id for h in result.recall.hits]

    direct = ids(expand=False)
    assert "neighbour" not in direct  # outside the full pool: no retriever reaches it
    assert direct[0] == "seed"
    expanded = ids(expand=True)
    assert expanded[0] == "seed"
    assert "neighbour" in expanded  # one hop through Morgan -works_at-> Acme
    # it competes: ranked by its own score among the direct hits, after the closer ones
    assert expanded.index("neighbour") == 1 + sum(1 for m in expanded if m.startswith("vec"))
    assert len(ids(expand=True, limit=5)) == 5  # still within the limit (L4)
    assert "neighbour" not in ids(expand=True, limit=5)
    index.close()
