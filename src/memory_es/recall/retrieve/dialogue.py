"""A conversation's structure in the index (G3-G10, D12): which memories are turns the host
reported, the turn before and after each, and vector retrieval that reads a turn with the one
before it. A reply ("Coastal flooding models.") says little alone; read with what it answers
("what's her research on?") it says what the question asks for.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import apsw
import numpy as np

from memory_es.vectors.matrix import VectorMatrix
from memory_es.vocabulary import TERMINAL_SQL

REPLY_DEPTH = 20  # the lexical hits whose next turn joins the pool


# A host turn that came without a conversation id still belongs to one when the host turn
# beside it (also without one) was recorded within this many minutes: an exchange's turns
# follow each other in minutes, while a note recorded on its own has no turn to be read with.
SESSIONLESS_TURN_GAP_MINUTES = 5


def _turn(alias: str) -> str:
    """SQL: the row ``alias`` is a turn the host reported (a Journal observation), in a known
    conversation or in none (``source_session`` NULL; an id too long to keep, ``unknown``,
    is nobody's). Curated lines of one capture share a session but are not a dialogue. The
    unary ``+`` keeps the planner on ``memories_by_session``: by ``memories_by_tier`` a
    neighbour lookup walked every Journal row before it (17 ms a recall at 100,000)."""
    return (f"+{alias}.source = 'host-summary' AND +{alias}.tier = 'journal' "
            f"AND {alias}.source_session IS NOT 'unknown'")


def _near(turn: str, other: str) -> str:
    """SQL: ``other`` (a neighbour of ``turn`` in its conversation) counts as one: always in a
    known conversation, within :data:`SESSIONLESS_TURN_GAP_MINUTES` of it in none."""
    return (f"({turn}.source_session IS NOT NULL OR round(abs(julianday({turn}.recorded_at) "
            f"- julianday({other}.recorded_at)) * 86400) <= {SESSIONLESS_TURN_GAP_MINUTES * 60})")


def next_turns(conn: apsw.Connection, rowids: Sequence[int]) -> dict[int, int]:
    """rowid -> the rowid of the live turn that follows it in its conversation, for those of
    ``rowids`` that are turns and have one."""
    if not rowids:
        return {}
    return {int(hit): int(reply) for hit, reply in conn.execute(replies_sql(len(rowids)),
                                                                 list(rowids))
            if reply is not None}


def replies(conn: apsw.Connection, lexical: dict[int, int]) -> dict[int, int]:
    """rowid -> pool rank for the live turn that follows each of the top ``REPLY_DEPTH``
    lexical hits in its conversation: a question's words find the question, and its answer is
    the next turn. A reply rides its question's rank in the pool's order."""
    top = sorted(lexical, key=lambda r: (lexical[r], r))[:REPLY_DEPTH]
    found = next_turns(conn, top)
    out: dict[int, int] = {}
    for hit in top:
        if hit in found:
            out.setdefault(found[hit], lexical[hit])
    return out


# The nearest rows whose next turns are read with them. At 50 (the pool's own depth) the
# pairs crowded out rows they did not beat: the fresh conversations fell to 0.758 any@5.
CONTEXT_DEPTH = 100


def vector_ranks_in_context(conn: apsw.Connection, matrix: VectorMatrix,
                            query_vector: np.ndarray, depth: int
                            ) -> list[tuple[int, float]]:
    """The ``depth`` nearest rows, each turn read with the turn before it: (rowid, cosine),
    ranked by the larger of the row's own cosine and its pair's, the cosine of the sum of
    both turns' vectors, but carrying its own (which scoring uses).

    A reply's vector alone hardly meets the question; the sum with the question it answers
    does. The pairs are the next turns of the :data:`CONTEXT_DEPTH` nearest rows (a pair
    whose earlier turn is far from the query is rarely near it), so the cost is one index
    step per row, whatever the matrix holds. On the conversational sets (one root each, then
    all in one) the evidence reaches the top 5 more often: the fresh set 0.767 -> 0.776 and
    0.740 -> 0.762, the first set 0.770 and 0.693 either way, with R@1 and MRR up; curated
    notes are no turns and rank as before."""
    nearest = matrix.top(query_vector, max(depth, CONTEXT_DEPTH))
    following = next_turns(conn, [rowid for rowid, _ in nearest])
    own = dict(nearest)
    rank = dict(own)
    if following:
        found, rows = matrix.vectors(sorted({*following, *following.values()}))
        vector = dict(zip(found, rows, strict=True))
        for before, after in following.items():
            if before not in vector or after not in vector:  # waiting for its vector
                continue
            own.setdefault(after, float(vector[after] @ query_vector))
            summed = vector[before] + vector[after]
            norm = float(np.linalg.norm(summed))
            paired = float(summed @ query_vector) / norm if norm > 1e-6 else -1.0
            rank[after] = max(rank.get(after, own[after]), paired)
    best = sorted(rank, key=lambda r: -rank[r])[:depth]  # stable: ties keep the nearest order
    return [(r, own[r]) for r in best]


@dataclass(frozen=True, slots=True)
class TurnNeighbours:
    """Where a host turn sits in its conversation: the text of the live turn just before it
    (None for a conversation's first turn) and the rowids of the live turns on either side."""

    before_text: str | None
    before: int | None
    after: int | None


def turn_context(conn: apsw.Connection, rowids: Sequence[int]) -> dict[int, TurnNeighbours]:
    """rowid -> its neighbours, for the rows that are turns of a known conversation: a reply
    ("Coastal flooding models.") is read with what it answers ("what's her research on"), and
    an answer that spans two turns is supported by the other (``dialogue_support``)."""
    if not rowids:
        return {}
    return {int(rowid): TurnNeighbours(None if text is None else str(text),
                                       None if before is None else int(before),
                                       None if after is None else int(after))
            for rowid, before, text, after in conn.execute(
                turn_context_sql(len(rowids)), list(rowids))}


def _next_turn(alias: str) -> str:
    """SQL: the rowid of the live turn after the row ``alias`` in its conversation."""
    return (f"(SELECT r.rowid FROM memories r WHERE r.source_session IS {alias}.source_session "
            f"AND r.rowid > {alias}.rowid AND {_turn('r')} AND r.status NOT IN {TERMINAL_SQL} "
            "ORDER BY r.rowid LIMIT 1)")


def replies_sql(count: int) -> str:
    """For ``count`` rowids: each host turn's rowid and the rowid of the live turn after it
    (NULL when there is none, or it came too long after a turn of no conversation)."""
    return (f"SELECT h.rowid, n.rowid FROM memories h LEFT JOIN memories n "
            f"ON n.rowid = {_next_turn('h')} AND {_near('h', 'n')} "
            f"WHERE h.rowid IN ({','.join('?' * count)}) AND {_turn('h')}")


def turn_context_sql(count: int) -> str:
    """For ``count`` rowids: each host turn's rowid, the rowid and text of the live turn
    before it, and the rowid of the live turn after it. A turn of no conversation is one
    only beside another (:func:`_near`): a lone one is a note, scored as notes are."""
    return ("SELECT m.rowid, p.rowid, p.text, n.rowid FROM memories m "
            "LEFT JOIN memories p ON p.rowid = (SELECT b.rowid FROM memories b "
            "WHERE b.source_session IS m.source_session AND b.rowid < m.rowid "
            f"AND {_turn('b')} AND b.status NOT IN {TERMINAL_SQL} "
            f"ORDER BY b.rowid DESC LIMIT 1) AND {_near('m', 'p')} "
            f"LEFT JOIN memories n ON n.rowid = {_next_turn('m')} AND {_near('m', 'n')} "
            f"WHERE m.rowid IN ({','.join('?' * count)}) AND {_turn('m')} "
            "AND (m.source_session IS NOT NULL OR p.rowid IS NOT NULL OR n.rowid IS NOT NULL)")
