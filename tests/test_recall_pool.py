"""Which fifty the candidate pool keeps (G31, G8): the two retrievers' ranks fused (RRF), so a
memory both rank moderately is kept ahead of the rows a single retriever ranks a little higher.

A real Journal root; the embedder gives each text the vector the test chose, so the vector
ranks are the test's own, and bm25 ranks the lexical rows by length (shorter first).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from memory_es import CompletedTurn, MemoryStore
from memory_es.config import parse_config
from memory_es.recall.rank.score import MAX_CANDIDATES
from memory_es.recall.retrieve.candidates import candidate_pool, fused_order
from memory_es.testing import WordBagEmbedder

DIM = 256
QUERY = "quartz"
FILLER = [f"pebble{n}" for n in range(70)]


def unit(axis: int, cosine: float) -> np.ndarray:
    """A unit vector at ``cosine`` to the query's axis (0), the rest on its own ``axis`` (> 0)."""
    v = np.zeros(DIM, dtype=np.float32)
    v[0], v[axis] = cosine, np.sqrt(max(0.0, 1.0 - cosine ** 2))
    return v


QUERY_VECTOR = np.eye(DIM, dtype=np.float32)[0]


class ChosenVectors(WordBagEmbedder):
    """The vectors the test chose for its texts (and the query's axis for the query)."""

    def __init__(self, chosen: dict[str, np.ndarray]) -> None:
        super().__init__(DIM)
        assert QUERY not in chosen
        self.chosen = {QUERY: QUERY_VECTOR, **chosen}

    def vector(self, text: str) -> np.ndarray:
        return self.chosen[text]


def test_fused_order_puts_rows_both_retrievers_rank_first() -> None:
    lexical = {10: 1, 11: 2, 12: 30}
    vector = {20: 1, 21: 2, 12: 30}
    # 12 is 30th in both: 2/90 beats 1/61; rows of one retriever alternate, ties by rowid
    assert fused_order(lexical, vector) == [12, 10, 20, 11, 21]
    assert fused_order(lexical, {}) == [10, 11, 12]  # lexical only: its own order
    assert fused_order({}, {}) == []


def test_the_pool_keeps_a_memory_both_retrievers_rank_thirtieth(tmp_path: Path) -> None:
    """Sixty notes only the words find (bm25 by length) and 110 only the vectors find
    (cosine 0.90 down to 0.57): taken in turn, their first 25 each would fill the fifty and
    leave out the note that is 31st by its vector and past 25th by its words; fused, it is
    kept near the top. The vector retriever offers its top 100: the note bm25 ranks first
    is 72nd by its vector, which counts for the choice, but it carries no vector rank (the
    RRF hint is over each retriever's top 50)."""
    lexical = [" ".join([QUERY, "stone", *FILLER[:n]]) for n in range(60)]
    nearby = [f"Nearby note {n}" for n in range(110)]
    target = " ".join([QUERY, "stone", *FILLER[:29], "target"])
    chosen = {text: unit(1, 0.0) for text in lexical}
    chosen.update({text: unit(10 + n, 0.9 - 0.003 * n) for n, text in enumerate(nearby)})
    chosen[target] = unit(9, 0.9 - 0.003 * 29.5)  # between the 30th and 31st nearby note
    chosen[lexical[0]] = unit(8, 0.9 - 0.003 * 69.5)  # past the 70th nearby note
    embedder = ChosenVectors(chosen)
    clock = [datetime(2026, 11, 1, tzinfo=UTC)]

    def tick() -> datetime:  # ten minutes apart: notes, not turns of one conversation
        clock[0] += timedelta(minutes=10)
        return clock[0]

    with MemoryStore.open(tmp_path / "root", parse_config({"mode": "journal",
                                                           "embeddings": {"dim": DIM}}),
                          background=False, embedder=embedder, clock=tick) as store:
        for n, text in enumerate([*lexical, *nearby, target]):
            assert store.persist_completed_turn(CompletedTurn(
                run_id=f"p{n}", outcome="success", answer=text)).status == "admitted"
        store.drain()
        while store.background.embed_pending():
            pass
        conn = store.projections.get().index.conn
        pool = candidate_pool(conn, QUERY, query_vector=QUERY_VECTOR,
                              matrix=store.vectors.matrix(embedder, conn))
    by_text = {c.text: c for c in pool}
    assert len(pool) == MAX_CANDIDATES
    assert [c.text for c in pool[:2]] == [lexical[0], target]
    assert by_text[target].vector_rank == 31
    assert by_text[target].lexical_rank is not None and by_text[target].lexical_rank > 25
    assert (by_text[lexical[0]].lexical_rank, by_text[lexical[0]].vector_rank) == (1, None)
    # the rest are each retriever's own best, taken in turn
    assert {by_text[t].lexical_rank for t in lexical[1:25]} == set(range(2, 26))
    assert {by_text[t].vector_rank for t in nearby[:24]} == set(range(1, 25))
