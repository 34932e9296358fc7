"""Deliberate MemoryRecall over one index connection (G11-G29, G34, M23): one direct lookup
(:class:`Lookup`: the bounded candidate pool, scored) and what recall makes of it: the hits
(cut, or uncut in original-query mode), one graph hop in BuJo, the guidance section and the
fact sheet.

A lookup is separate from its selection so a host's turn can reuse one (G34, G35): the
original question's automatic lookup, or an identical earlier tool query's, is selected again
without another retrieval or embedding request.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, tzinfo

import apsw
import numpy as np

import memory_es.recall.retrieve.candidates as retrieval  # by module: the retrievers stay one seam
from memory_es.errors import MemoryEsError
from memory_es.recall.asking import check_limit, check_query, has_content
from memory_es.recall.rank.policy import OFF, ReadPolicy, apply_recency
from memory_es.recall.rank.render import Recall
from memory_es.recall.rank.score import (
    MAX_CANDIDATES,
    NOMIC_V15,
    Calibration,
    Scored,
    Scoring,
    score_all,
)
from memory_es.recall.rank.select import SelectMode, host_zone, select
from memory_es.recall.retrieve.lexical import LexicalEvidence
from memory_es.recall.sections.card import mentioned_people
from memory_es.recall.sections.factsheet import FactSheet, fact_sheet
from memory_es.recall.sections.guidance import GuidanceKind, guidance_select, labelled_lines
from memory_es.recall.sections.result import RecallResult, explained
from memory_es.vectors.matrix import VectorMatrix


@dataclass(frozen=True)
class Lookup:
    """One direct lookup: the query as asked, its vector (None: lexical only) and its scored
    candidate pool (at most 50, G31), in pool order."""

    query: str
    query_vector: np.ndarray | None
    scored: tuple[Scored, ...]


def direct_lookup(conn: apsw.Connection, query: str, *, query_vector: np.ndarray | None,
                  matrix: VectorMatrix | None, calibration: Calibration, scoring: Scoring,
                  exclude_session: str | None = None) -> Lookup:
    """Retrieve and score ``query``'s pool once (the lookup a turn may share)."""
    if not has_content(query):
        return Lookup(query, query_vector, ())
    evidence = LexicalEvidence.for_query(conn, query)
    candidates = retrieval.candidate_pool(conn, query, query_vector=query_vector,
                                          matrix=matrix, exclude_session=exclude_session,
                                          evidence=evidence)
    return Lookup(query, query_vector,
                  tuple(score_all(query, candidates, calibration, scoring)))


def resolve_about(conn: apsw.Connection, about: str) -> tuple[str, str]:
    """(entity id, name) of the one person ``about`` names; ``recall_about_unknown`` when no
    person, or more than one, has that id or prefix (Lite and Journal keep no people)."""
    try:
        rows = list(conn.execute("SELECT id, name FROM entities WHERE type = 'person' AND "
                                 "id >= ? AND id < ? ORDER BY id LIMIT 2",
                                 (about, about + "g")))
    except apsw.SQLError:  # no graph tables in this generation
        rows = []
    if len(rows) != 1:
        raise MemoryEsError(f"recall_about_unknown: about {about!r} names "
                            f"{'no person' if not rows else 'more than one person'} in memory",
                            code="recall_about_unknown")
    return rows[0][0], rows[0][1]


def current_pool(conn: apsw.Connection, scored: Sequence[Scored]) -> list[Scored]:
    """A lookup read against the index as it is now: a line forgotten since is gone, a
    changed status or text is the current one (a turn's kept lookup never serves what a
    forget erased or a lifecycle move dropped, G22); scores stay the lookup's."""
    if not scored:
        return []
    ids = [s.candidate.id for s in scored]
    rows = {r[0]: (r[1], r[2]) for r in conn.execute(
        f"SELECT id, text, status FROM memories WHERE id IN ({','.join('?' * len(ids))})",
        ids)}
    out: list[Scored] = []
    for s in scored:
        row = rows.get(s.candidate.id)
        if row is None:
            continue
        if row != (s.candidate.text, s.candidate.status):
            s = replace(s, candidate=replace(s.candidate, text=row[0], status=row[1]))
        out.append(s)
    return out


def deliberate(conn: apsw.Connection, lookup: Lookup, *, now: datetime,
               matrix: VectorMatrix | None, calibration: Calibration = NOMIC_V15,
               scoring: Scoring = "hybrid", limit: int = 10, expand: bool = False,
               explain: bool = False, tz: tzinfo | None = None, original: bool = False,
               kind: GuidanceKind | None = None, about: str | None = None,
               policy: ReadPolicy = OFF) -> RecallResult:
    """Select ``lookup`` for MemoryRecall.

    * Hits: the tail cut (G11), or the whole list in original-query mode (``original``, G19);
      degraded (no vector) results are uncut and carry no notes (G20). In BuJo (``expand``)
      the direct hits' one-hop neighbours then compete in a second selection within the same
      limit (G12, G29), scored against the lookup's own query vector.
    * Fact sheets (G28, M23): of ``about``'s person, else of the people the query names;
      a conflicting current value on a sheet sets ``evidence: conflicting`` (G16).
    * Guidance (G26, G27): none for ``about`` requests or a degraded result.
    * ``policy``: intentExpiry makes a note's ``due_at`` an inclusive end (M25); recency
      reorders the returned hits only, after the limit, so the delivered set (and the access
      telemetry counted on it) is the one without it (M28, M31, M32).
    """
    due = policy.intent_expiry
    check_limit(limit)
    degraded = lookup.query_vector is None or matrix is None
    zone = host_zone(now, tz)
    people = ([resolve_about(conn, about)] if about is not None
              else mentioned_people(conn, lookup.query))
    sheets = tuple(s for s in (fact_sheet(conn, pid, name, now=now, tz=zone, note_due_ends=due)
                               for pid, name in people) if s.rows)
    mode: SelectMode = "degraded" if degraded else "original-query" if original else "explicit"
    conflict = any(s.conflicting for s in sheets)
    pool = current_pool(conn, lookup.scored)
    if not pool:
        return RecallResult(recall=select((), calibration, now=now, tz=zone, mode=mode,
                                          fact_sheet_conflict=conflict, note_due_ends=due,
                                          scoring=scoring),
                            degraded=degraded, fact_sheets=sheets, zone=zone)
    scored = list(pool)
    result = select(scored, calibration, now=now, tz=zone, mode=mode,
                    fact_sheet_conflict=conflict, note_due_ends=due, scoring=scoring)
    evidence: LexicalEvidence | None = None  # read when needed: a cost on a large index
    if expand:  # G12: direct hits are cut first; their neighbours then compete in a second cut
        kept = {h.id for h in result.hits}
        evidence = LexicalEvidence.for_query(conn, lookup.query)
        direct = [s for s in scored if s.candidate.id in kept]
        neighbours = retrieval.expand_one_hop(
            conn, [s.candidate for s in direct], query=lookup.query,
            query_vector=lookup.query_vector, matrix=matrix,
            exclude=[s.candidate.id for s in pool],
            room=MAX_CANDIDATES - len(direct), evidence=evidence)
        if neighbours:
            scored = score_all(lookup.query, [*(s.candidate for s in direct), *neighbours],
                               calibration, scoring)
            result = select(scored, calibration, now=now, tz=zone, mode=mode,
                            fact_sheet_conflict=conflict, note_due_ends=due, scoring=scoring)
    guidance = () if degraded or about is not None else guidance_select(
        pool, labelled_lines(conn, [s.candidate.id for s in pool]),
        calibration, kind=kind, now=now, tz=zone, note_due_ends=due)
    hits = apply_recency(conn, result.hits[:limit], now=now, calibration=calibration,
                         mode=mode, policy=policy)
    trimmed = Recall(hits=hits, evidence=result.evidence, notes=result.notes)
    out = (RecallResult(recall=trimmed, degraded=degraded) if not explain
           else explained(trimmed, scored,
                          evidence or LexicalEvidence.for_query(conn, lookup.query),
                          calibration, scoring, mode, degraded))
    return replace(out, guidance=guidance, fact_sheets=sheets, zone=zone)


def recall(conn: apsw.Connection, query: str, *, now: datetime,
           query_vector: np.ndarray | None, matrix: VectorMatrix | None,
           calibration: Calibration = NOMIC_V15, limit: int = 10, expand: bool = False,
           scoring: Scoring = "hybrid", explain: bool = False, tz: tzinfo | None = None,
           kind: GuidanceKind | None = None, about: str | None = None,
           policy: ReadPolicy = OFF) -> RecallResult:
    """Hybrid recall over one index connection (G*): one :func:`direct_lookup`, then
    :func:`deliberate`. ``query_vector`` None (Lite, no provider, provider down) gives a
    lexical-only result flagged ``degraded`` (G20), never an exception."""
    check_limit(limit)
    check_query(query)
    if not has_content(query):  # nothing to look for: never arbitrary memories scored 0
        return RecallResult(recall=Recall(hits=()),
                            degraded=query_vector is None or matrix is None)
    lookup = direct_lookup(conn, query, query_vector=query_vector, matrix=matrix,
                           calibration=calibration, scoring=scoring)
    return deliberate(conn, lookup, now=now, matrix=matrix, calibration=calibration,
                      scoring=scoring, limit=limit, expand=expand, explain=explain, tz=tz,
                      kind=kind, about=about, policy=policy)


__all__ = ["FactSheet", "Lookup", "current_pool", "deliberate", "direct_lookup",
           "recall", "resolve_about"]
