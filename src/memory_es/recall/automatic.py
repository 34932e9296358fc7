"""The automatic context (H1-H22): what a host puts before a turn unasked. Its "possibly
relevant" block of direct hits, the labelled background of the owner's preferences and
verified lessons (H19) and the card of each person the text names (H20), together under
~2.5 KB (H12). :meth:`memory_es.recall.engine.Recaller.auto_block` puts the owner profile
(M8) before it and says whether it was whole.

The pool comes from :mod:`memory_es.recall.retrieve.candidates`, read by module so the
retrievers stay one seam.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime, tzinfo

import apsw
import numpy as np

import memory_es.recall.retrieve.candidates as retrieval
from memory_es.indexread import optional_rows
from memory_es.recall.rank.policy import OFF, ReadPolicy, automatic_pool
from memory_es.recall.rank.render import render_auto_block, render_background
from memory_es.recall.rank.score import (
    NOMIC_V15,
    Calibration,
    Candidate,
    Scored,
    Scoring,
    score_all,
)
from memory_es.recall.rank.select import auto_select, background_select, host_zone
from memory_es.recall.sections.card import person_card
from memory_es.vectors.matrix import VectorMatrix

CONTEXT_BUDGET_BYTES = 2_500  # H12: the whole automatic context stays under about 2.5 KB


def auto_block(
    conn: apsw.Connection,
    text: str,
    *,
    now: datetime,
    query_vector: np.ndarray,
    matrix: VectorMatrix,
    session: str | None,
    calibration: Calibration = NOMIC_V15,
    lines: bool = True,
    scoring: Scoring = "hybrid",
    tz: tzinfo | None = None,
    reserved_bytes: int = 0,
    scored: Sequence[Scored] | None = None,
    policy: ReadPolicy = OFF,
    shown: Collection[str] = (),
) -> str:
    """The automatic context: the "possibly relevant" block (H1-H11, H21, H22: direct hits only),
    the labelled background of the owner's preferences and verified lessons (H19), and the card
    of each person the text names (H20), together under ~2.5 KB (H12). ``lines=False`` drops
    only the block (the short-owner-text gate, H14). ``reserved_bytes`` (the owner profile
    before it, M6) comes out of the card's share. ``policy``: intentExpiry keeps dated and
    closed lines out of all three (M24). ``shown``: ids the context already carries (the
    owner profile's entries), never repeated in the block or the background. ``scored`` is
    the turn's direct lookup when the caller already made it (G34: the same pool
    original-query mode reuses), scored again when ``policy`` or ``shown`` leave lines out
    (name anchors come from the pool)."""
    pool = ([s.candidate for s in scored] if scored is not None else
            retrieval.candidate_pool(conn, text, query_vector=query_vector, matrix=matrix,
                                     exclude_session=session))
    candidates = [c for c in automatic_pool(pool, policy) if c.id not in shown]
    if scored is None or len(candidates) != len(scored):
        scored = score_all(text, candidates, calibration, scoring)
    zone = host_zone(now, tz)  # G15: dates and ends in the host's zone
    hits = auto_select(scored, calibration, now=now, tz=zone) if lines else ()
    background = background_select(scored, labelled_background(conn, candidates), calibration,
                                   now=now, tz=zone, exclude=[h.id for h in hits])
    parts = [part for part in (render_auto_block(hits, zone),
                               render_background(background, zone)) if part]
    used = reserved_bytes + sum(len(part.encode("utf-8")) + 2 for part in parts)
    card = person_card(conn, text, now=now, tz=zone, budget_bytes=CONTEXT_BUDGET_BYTES - used,
                       intent_expiry=policy.intent_expiry)
    return "\n\n".join([*parts, card] if card else parts)


def labelled_background(conn: apsw.Connection, candidates: Sequence[Candidate]
                        ) -> dict[str, str]:
    """id -> label for pool memories that may join the labelled background (H19): the owner's
    own (scope ``agent``) preferences, and lessons the user or a document stated (verified:
    an assistant's lesson is not)."""
    ids = [c.id for c in candidates]
    if not ids:
        return {}
    out: dict[str, str] = {}
    for memory_id, labels, source in optional_rows(
            conn, f"SELECT m.id, mm.labels, m.source FROM memory_meta mm JOIN memories m "
                  f"ON m.id = mm.id WHERE mm.id IN ({','.join('?' * len(ids))}) "
                  "AND mm.scope = 'agent'", ids):
        kinds = labels.split(",")
        if "preference" in kinds:
            out[memory_id] = "preference"
        elif "lesson" in kinds and source in ("user", "document"):
            out[memory_id] = "lesson"
    return out
