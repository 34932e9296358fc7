"""What a question looks at (G3, G31, G22, L4-L5): the candidate pool over one index connection.

The pool is the FTS5 bm25 top 50 of live memories union the vector top 100, fused by their
ranks (RRF), at most 50 (G31),
each candidate carrying its entity names and structured fact; in BuJo one graph hop adds the
direct hits' neighbours (L4, G12). :mod:`~memory_es.recall.explicit` scores and selects it for
MemoryRecall; :mod:`~memory_es.recall.automatic` builds the automatic context from it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

import apsw
import numpy as np

from memory_es.indexread import optional_rows
from memory_es.recall.rank.echo import axis_dots
from memory_es.recall.rank.score import (
    MAX_CANDIDATES,
    RRF_K,
    Candidate,
    Fact,
    Source,
)
from memory_es.recall.retrieve.dialogue import (
    CONTEXT_DEPTH,
    TurnNeighbours,
    replies,
    turn_context,
    vector_ranks_in_context,
)
from memory_es.recall.retrieve.lexical import LexicalEvidence
from memory_es.validity import parse_validity
from memory_es.vectors.matrix import VectorMatrix
from memory_es.vocabulary import REMEMBER_SOURCE, TERMINAL_SQL
from projections.search import fts_query

RETRIEVER_DEPTH = MAX_CANDIDATES  # each retriever's top 50 carry its rank (the RRF hint)
# The vector retriever offers the rows it reads anyway (its nearest 100 and their next turns);
# those past 50 count in the pool's choice only where the words find them too (fused_order).
VECTOR_DEPTH = CONTEXT_DEPTH
ASSISTANT_NOTED = "assistant noted"  # J9: an enhanced Remember, never verified-owner


def _lexical_ranks(conn: apsw.Connection, query: str) -> dict[int, int]:
    """bm25 top 50 of live memories. The FTS query runs alone (a join would cost a row
    lookup per match); terminal rows are then dropped and the ranking refilled past them."""
    match = fts_query(query)
    if not match:
        return {}
    live: list[int] = []
    offset, page = 0, RETRIEVER_DEPTH * 2
    while len(live) < RETRIEVER_DEPTH:
        rowids = [r[0] for r in conn.execute(
            "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? "
            "ORDER BY bm25(memories_fts), rowid LIMIT ? OFFSET ?", (match, page, offset))]
        if not rowids:
            break
        marks = ",".join("?" * len(rowids))
        terminal = {r[0] for r in conn.execute(
            f"SELECT rowid FROM memories WHERE rowid IN ({marks}) "
            f"AND status IN {TERMINAL_SQL}", rowids)}
        live.extend(r for r in rowids if r not in terminal)
        offset += page
    return {rowid: rank for rank, rowid in enumerate(live[:RETRIEVER_DEPTH], start=1)}


def session_key(session: str | None) -> str | None:
    """A conversation id without its daily ``#YYYY-MM-DD`` bucket (H21)."""
    if session is None:
        return None
    base, sep, bucket = session.rpartition("#")
    if sep and len(bucket) == 10 and bucket[4] == "-" and bucket[7] == "-" \
            and bucket.replace("-", "").isdigit():
        return base
    return session


def candidate_pool(
    conn: apsw.Connection,
    query: str,
    *,
    query_vector: np.ndarray | None,
    matrix: VectorMatrix | None,
    exclude_session: str | None = None,
    evidence: LexicalEvidence | None = None,
) -> list[Candidate]:
    """FTS5 bm25 top 50 union vector top 100, by fused rank (:func:`fused_order`), at most
    50 (G31).

    ``exclude_session`` drops records of the current conversation before scoring (H21).
    ``evidence`` is the query's lexical evidence when the caller already has it.
    """
    if evidence is None:
        evidence = LexicalEvidence.for_query(conn, query)
    lexical = _lexical_ranks(conn, " ".join(evidence.retrieval_words(query)))
    vector_ranks: dict[int, int] = {}
    cosines: dict[int, float] = {}
    if query_vector is not None and matrix is not None:
        for rank, (rowid, cos) in enumerate(vector_ranks_in_context(
                conn, matrix, query_vector, VECTOR_DEPTH), start=1):
            vector_ranks[rowid] = rank
            cosines[rowid] = cos
    if query_vector is not None:  # degraded (no vectors): only what the words find
        for reply, rank in replies(conn, lexical).items():
            lexical.setdefault(reply, rank)
    excluded = session_key(exclude_session)
    pool = fused_order(lexical, vector_ranks)
    rows = {r[6]: r for r in conn.execute(  # the pool's rows in one query, not one each
        "SELECT id, text, kind, status, recorded_at, source_session, rowid, run_hash "
        f"FROM memories WHERE rowid IN ({','.join('?' * len(pool))})", pool)} if pool else {}
    chosen: list[Any] = []
    for rowid in pool:
        if len(chosen) >= MAX_CANDIDATES:
            break
        row = rows.get(rowid)
        if row is None:
            continue
        session = row[5]
        if excluded is not None and session not in (None, "unknown") \
                and session_key(session) == excluded:
            continue
        chosen.append(row)
    if query_vector is not None and matrix is not None:  # lexical hits that have a vector
        cosines.update(matrix.cosines(query_vector,
                                      [r[6] for r in chosen if r[6] not in cosines]))
    context = turn_context(conn, [row[6] for row in chosen])
    ids = {int(row[6]): str(row[0]) for row in chosen}
    axes = axis_dots(matrix, query_vector, [row[6] for row in chosen])
    candidates = [_candidate(row, cosines.get(row[6]), lexical.get(row[6]),
                             _retriever_rank(vector_ranks.get(row[6])), evidence, context, ids,
                             axes.get(row[6]))
                  for row in chosen]
    return with_entity_names(conn, candidates)


def fused_order(lexical: dict[int, int], vector: dict[int, int]) -> list[int]:
    """The retrievers' rows, best first, by reciprocal rank fusion of their ranks (k = 60,
    equal weights): a row both retrievers rank moderately comes before one only a single
    retriever ranks a little higher, so the fifty the pool keeps (G31) are the rows the two
    agree on, not the two lists taken in turn. The vector retriever offers its top
    :data:`VECTOR_DEPTH` (100), which it reads anyway.
    With every conversation of a set in one root (more turns than the pool can hold) the
    fifty hold an evidence turn for more questions (the first set's test split 0.779 ->
    0.808), and the evidence reaches the top 5 more often (test 0.693 -> 0.708, fresh
    conversations 0.762 -> 0.780); in a root per conversation and on curated notes the top 5
    hold what they held (within 0.01)."""
    def fused(rowid: int) -> float:
        return sum(1.0 / (RRF_K + ranks[rowid]) for ranks in (lexical, vector)
                   if rowid in ranks)
    return sorted(set(lexical) | set(vector), key=lambda r: (-fused(r), r))


def _retriever_rank(rank: int | None) -> int | None:
    """A vector rank as a retriever's top-50 rank (the RRF hint, G8: the reference's
    retrievers each offer 50), None past it."""
    return rank if rank is not None and rank <= RETRIEVER_DEPTH else None


def _candidate(row: Any, cosine: float | None, lexical_rank: int | None,
               vector_rank: int | None, evidence: LexicalEvidence,
               context: dict[int, TurnNeighbours] | None = None,
               ids: dict[int, str] | None = None,
               axis: tuple[float, float] | None = None) -> Candidate:
    """A pool row as a candidate; ``ids`` (rowid -> id of the pool's rows) names the
    neighbours that are in the same pool."""
    session = row[5]
    turn = context.get(row[6]) if context is not None else None
    before = turn.before_text if turn is not None else None
    return Candidate(
        id=row[0], text=row[1], type=row[2], status=row[3],
        created_at=datetime.fromisoformat(row[4].replace("Z", "+00:00")),
        cosine=cosine, lexical_rank=lexical_rank, vector_rank=vector_rank,
        provenance_unknown=session in (None, "unknown"),
        evidence=evidence.coverage(row[1] if before is None else f"{before}\n{row[1]}"),
        dialogue=turn is not None,
        neighbours=() if turn is None or ids is None else tuple(
            ids[r] for r in (turn.before, turn.after) if r is not None and r in ids),
        source=Source(session=session, intake_id=row[7]),
        axis=axis,
    )


def with_entity_names(conn: apsw.Connection, candidates: list[Candidate]) -> list[Candidate]:
    """Each candidate with the names of its associated entities (name anchors, G7) and its
    structured fact (conflicting evidence, G16)."""
    if not candidates:
        return candidates
    ids = [c.id for c in candidates]
    names: dict[str, list[str]] = {}
    for memory_id, name in optional_rows(
            conn, f"SELECT me.memory_id, e.name FROM memory_entities me JOIN entities e "
                  f"ON e.id = me.entity_id WHERE me.memory_id IN ({','.join('?' * len(ids))}) "
                  "ORDER BY me.memory_id, me.ord", ids):
        names.setdefault(memory_id, []).append(name)
    curated = line_fields(conn, ids)
    if not names and not curated:
        return candidates
    return [replace(c, entity_names=tuple(names.get(c.id, ())), **curated.get(c.id, {}))
            if c.id in names or c.id in curated else c for c in candidates]


def line_fields(conn: apsw.Connection, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """id -> the Candidate fields a curated line's metadata and terms add: salience (G8),
    the structured fact (G16), who stated it (H9), the line that replaced it, and its validity
    and insight marker."""
    out: dict[str, dict[str, Any]] = {}
    if not ids:
        return out
    for row in optional_rows(
            conn, "SELECT mm.id, mm.fact_subject, mm.fact_key, mm.scope, mm.fact_value, "
                  "mm.salience, m.source, mm.superseded_by "
                  "FROM memory_meta mm JOIN memories m ON m.id = mm.id "
                  f"WHERE mm.id IN ({','.join('?' * len(ids))})", list(ids)):
        out[row[0]] = {"salience": float(row[5]),  # G8: a small tie-breaker
                       "attribution": attribution_of(row[6], row[3]),
                       "superseded_by": row[7],
                       "fact": None if row[2] is None else Fact(
                           subject=row[1], property=row[2], scope=row[3], value=row[4])}
    for memory_id, fields in stated_terms(conn, ids).items():
        out.setdefault(memory_id, {}).update(fields)
    return out


def attribution_of(source: str, scope: str | None) -> str | None:
    """H9: who stated a curated line, from its host-bounded source: the owner's own words
    (a user line in the agent's scope) are ``you said``; an assistant line and an enhanced
    Remember are ``assistant noted``; a document's are ``from a document``. A tool line, or a
    user line from another scope (a peer), gets none."""
    if source == "user":
        return "you said" if scope == "agent" else None
    return {"assistant": ASSISTANT_NOTED, REMEMBER_SOURCE: ASSISTANT_NOTED,
            "document": "from a document"}.get(source)


def stated_terms(conn: apsw.Connection, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """id -> the Candidate fields a line's terms and markers add: its stored validity
    (G13-G15), its insight marker (K14, G8) and, for an enhanced Remember, ``assistant
    noted`` (J9)."""
    if not ids:
        return {}
    out: dict[str, dict[str, Any]] = {}
    for memory_id, valid_from, valid_to, due_at, insight, source in optional_rows(
            conn, "SELECT mt.id, mt.valid_from, mt.valid_to, mt.due_at, mt.insight, m.source "
                  "FROM memory_terms mt JOIN memories m ON m.id = mt.id "
                  f"WHERE mt.id IN ({','.join('?' * len(ids))})", list(ids)):
        fields: dict[str, Any] = {"valid_from": parse_validity(valid_from),
                                  "valid_to": parse_validity(valid_to),
                                  "due_at": parse_validity(due_at), "insight": bool(insight)}
        if source == REMEMBER_SOURCE:
            fields["attribution"] = ASSISTANT_NOTED
        out[memory_id] = fields
    return out


def expand_one_hop(conn: apsw.Connection, seeds: Sequence[Candidate], *, query: str,
                   query_vector: np.ndarray | None, matrix: VectorMatrix | None,
                   exclude: Sequence[str] = (), room: int = MAX_CANDIDATES,
                   evidence: LexicalEvidence | None = None) -> list[Candidate]:
    """L4: live memories that share an entity with a seed or name an entity directly related
    to one, at most ``room`` of them, never a seed or an ``exclude``d id.

    Deterministic: neighbours come in journal order. They carry no retriever rank, only their
    cosine when they have a vector and their lexical evidence.
    """
    if room <= 0 or not seeds:
        return []
    marks = ",".join("?" * len(seeds))
    seed_ids = [c.id for c in seeds]
    entities = {r[0] for r in optional_rows(
        conn, f"SELECT entity_id FROM memory_entities WHERE memory_id IN ({marks})", seed_ids)}
    if not entities:
        return []
    emarks = ",".join("?" * len(entities))
    elist = sorted(entities)
    related = {r[0] for r in optional_rows(
        conn, f"SELECT dst FROM relations WHERE src IN ({emarks}) UNION "
              f"SELECT src FROM relations WHERE dst IN ({emarks})", [*elist, *elist])}
    hop = sorted(entities | related)
    hmarks = ",".join("?" * len(hop))
    skip = sorted({*seed_ids, *exclude})
    smarks = ",".join("?" * len(skip))
    rows = optional_rows(
        conn, "SELECT m.id, m.text, m.kind, m.status, m.recorded_at, m.source_session, m.rowid, "
              "m.run_hash "
              f"FROM memories m WHERE m.id IN (SELECT memory_id FROM memory_entities "
              f"WHERE entity_id IN ({hmarks})) AND m.id NOT IN ({smarks}) "
              f"AND m.status NOT IN {TERMINAL_SQL} ORDER BY m.rowid LIMIT ?",
        [*hop, *skip, room])
    neighbours = []
    if evidence is None:
        evidence = LexicalEvidence.for_query(conn, query)
    cosines = matrix.cosines(query_vector, [row[6] for row in rows]) \
        if query_vector is not None and matrix is not None else {}
    axes = axis_dots(matrix, query_vector, [row[6] for row in rows])
    for row in rows:
        neighbours.append(replace(_candidate(row, cosines.get(row[6]), None, None, evidence,
                                             axis=axes.get(row[6])), graph_hop=True))
    return with_entity_names(conn, neighbours)
