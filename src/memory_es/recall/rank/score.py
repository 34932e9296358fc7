"""Recall scoring: pure, no I/O, no clock (SPEC G3-G10, G31, DESIGN 9.4-9.5).

For one query over the bounded candidate pool (at most 50, G31), :func:`score_all` analyses the
query once (:func:`~memory_es.recall.rank.anchors.extract_anchors`) and scores each candidate in one
of two modes (``memory.recall.scoring``).

``"hybrid"`` (the default) joins lexical evidence to the cosine as a probabilistic OR, so a
strong lexical match can outrank a middling cosine, a strong cosine keeps the scale the floors
were measured on, and the joined part never exceeds 1:

   ``1 - (1 - semantic) * (1 - w * evidence) + anchor_bonus + rrf hint + salience * 0.005``

where ``evidence`` is the candidate's lexical evidence (the IDF-weighted share of the query's
terms it holds, 0..1, :mod:`~memory_es.recall.retrieve.lexical`), ``semantic`` as below (clamped to
0..1) but taken from ``evidence`` while the vector is missing (G10: an exact restatement then
scores 1, like a perfect cosine), and ``w`` the calibration's ``lexical_weight`` (chosen on a
dev split, see ``bench/recall_quality.py``).

A turn of a conversation (``Candidate.dialogue``: a host turn read with the turn before it) is
short and leans on its neighbours, so its own vector says less than a curated note's (with
USE, cosine alone finds the answer in the top 5 for 0.41 of conversational questions against
0.75-0.88 on notes) and its words say more. Its evidence weighs ``dialogue_weight`` instead,
raised as ``1 - (1 - evidence) ** dialogue_boost`` (a partial match counts more, a full match
still counts 1, so the cosine decides between turns that hold the same words). Both numbers
are fitted on the dev splits like the rest; the reference's are 1 and the lexical weight.

``"reference"`` is the reference's embedding-first formula, exactly:

   ``semantic + anchor_bonus + rrf hint + salience * 0.005``

* ``semantic`` is the stored vector's cosine, or 0 when the cosine is below the calibration's
  no-evidence cosine (0.5 for nomic-embed-text v1.5). A candidate still waiting for its vector
  (``cosine is None``, G10) uses lexical term overlap instead: the share of the query's distinct
  normalised terms present in the candidate's text, 0..1, used unscaled in the cosine's place
  (an exact textual restatement scores like a perfect cosine) and not thresholded.
* ``anchor_bonus``: see :func:`anchor_bonus` (DESIGN 9.5).
* ``rrf``: ``0.01 / (60 + rank)`` per retriever the candidate appears in; ranks are 1-based.
* ``salience`` (clamped to 0..1) times 0.005, so at most 0.005, plus 0.005 for a line that
  carries the insight marker (G8: both are small tie-breakers).

Threshold comparisons tolerate float noise of ``EPSILON`` (1e-9).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import date, datetime
from typing import Literal

from memory_es.recall.rank.anchors import (
    Anchors,
    candidate_anchor_tokens,
    distinct_words,
    extract_anchors,
    name_words,
)
from memory_es.recall.rank.turns import (
    TurnFeatures,
    TurnModel,
    turn_features,
    turn_parts,
)

NUMBER_BUDGET = 0.15  # G5: numbers, dates and numeric ids share up to 0.15
NAME_BUDGET = 0.08  # G5: names share up to 0.08
RRF_WEIGHT = 0.01  # DESIGN 9.5: 0.01 / (60 + rank)
RRF_K = 60
SALIENCE_WEIGHT = 0.005  # DESIGN 9.5: salience adds at most 0.005
INSIGHT_WEIGHT = 0.005  # G8: the insight marker, the same size of tie-breaker (our number)
MAX_CANDIDATES = 50  # G31: the deliberate pool is a bounded fifty-hit superset
EPSILON = 1e-9
DEFAULT_LEXICAL_WEIGHT = 0.5

Scoring = Literal["hybrid", "reference"]


@dataclass(frozen=True, slots=True)
class Calibration:
    """Per-embedding-model calibration (DESIGN 9.4): the five measured numbers."""

    no_evidence_cosine: float = 0.5  # G3
    recall_floor: float = 0.65  # G11, G17
    recall_tail: float = 0.15  # G11
    auto_floor: float = 0.62  # H3
    auto_window: float = 0.04  # H4
    lexical_weight: float = DEFAULT_LEXICAL_WEIGHT  # hybrid scoring's share of lexical evidence
    dialogue_weight: float = DEFAULT_LEXICAL_WEIGHT  # ... for a turn of a conversation
    dialogue_boost: float = 1.0  # a conversation turn's evidence e counts 1 - (1 - e) ** boost
    dialogue_support: float = 0.0  # a turn gains this share of its best neighbour's fused score
    echo_removal: float = 0.0  # share of the question axis out of a turn's cosine (echo.py)
    # a conversation turn's score as a linear model (turns.py); None: the formula above, with
    # dialogue_weight and dialogue_support (which a turn model replaces)
    turn_model: TurnModel | None = None


NOMIC_V15 = Calibration()
"""The reference's numbers, measured for nomic-embed-text v1.5 (H17)."""


@dataclass(frozen=True, slots=True)
class Fact:
    """A structured fact carried by a record: (subject, property, scope) -> value (G16)."""

    subject: str
    property: str
    scope: str
    value: str


@dataclass(frozen=True, slots=True)
class Source:
    """Where a record came from, for the host to map a hit back to its turn; never shown in
    model-facing text (H23). ``intake_id`` is the SHA-256 of the turn's run id."""

    session: str | None = None
    intake_id: str | None = None

    def to_json(self) -> dict[str, str | None]:
        return {"session": self.session, "intakeId": self.intake_id}


@dataclass(frozen=True, slots=True)
class Candidate:
    """One record in the candidate pool, as the retrievers and projections report it.

    ``valid_to`` / ``due_at`` / ``valid_from`` may be a ``date`` (date-only: closes after the host's
    local calendar day, G15) or a ``datetime`` (an instant; a naive one is read in the host zone).
    ``cosine`` is ``None`` while the record waits for its vector (G10, lexical fallback).
    ``lexical_rank`` / ``vector_rank`` are 1-based ranks in the FTS and vector retrievers.
    """

    id: str
    text: str
    type: str | None = None
    status: str | None = None
    created_at: datetime | None = None
    valid_from: date | datetime | None = None
    valid_to: date | datetime | None = None
    due_at: date | datetime | None = None
    superseded: bool = False
    superseded_by: str | None = None  # the id of the line that replaced this one (BuJo)
    entity_names: tuple[str, ...] = ()
    salience: float = 0.0
    insight: bool = False  # K14: the line carries the insight marker (a G8 tie-breaker)
    cosine: float | None = None
    lexical_rank: int | None = None
    vector_rank: int | None = None
    fact: Fact | None = None
    attribution: str | None = None  # H9: "you said" | "assistant noted" | "from a document"
    provenance_unknown: bool = False  # K7: no storable source conversation id
    evidence: float | None = None  # lexical evidence in this index (None: not computed)
    source: Source | None = None
    graph_hop: bool = False  # True: pulled in by one-hop graph expansion (L4)
    dialogue: bool = False  # a host turn of a known conversation, read with the turn before it
    neighbours: tuple[str, ...] = ()  # ids of the turns just before/after it, in the same pool
    axis: tuple[float, float] | None = None  # (query . question axis, line . axis), echo.py


@dataclass(frozen=True, slots=True)
class Scored:
    """A candidate with its score and the score's parts (for tests, diagnostics and explain)."""

    candidate: Candidate
    score: float
    semantic: float
    anchor: float
    rrf: float
    salience: float
    lexical: bool  # True when ``semantic`` came from term overlap (no vector)
    evidence: float = 0.0  # the lexical evidence fused in (hybrid scoring; 0 in reference)
    fused: float = 0.0  # the semantic part after fusion, before anchors and hints
    support: float = 0.0  # what the turn's neighbours add (hybrid scoring, dialogue_support)
    turn: tuple[tuple[str, float], ...] = ()  # a turn model's parts (turns.turn_parts)


def anchor_bonus(anchors: Anchors, candidate: Candidate) -> float:
    """DESIGN 9.5 / G5: per class, the budget is split equally over the query's anchors of that
    class; the candidate earns the share of each anchor it contains; the classes stack (max 0.23).

    A number/date/id anchor is contained when the same whole token (dates compared canonically)
    occurs in the candidate's text. A name anchor is contained when it is a word of the name of an
    entity associated with *this* candidate (its text alone does not count: shared words add
    nothing by themselves, G4).
    """
    bonus = 0.0
    if anchors.numbers_dates_ids:
        own = candidate_anchor_tokens(candidate.text)
        hits = sum(1 for a in anchors.numbers_dates_ids if a in own)
        bonus += NUMBER_BUDGET * hits / len(anchors.numbers_dates_ids)
    if anchors.names:
        own_names = name_words(candidate.entity_names)
        hits = sum(1 for a in anchors.names if a in own_names)
        bonus += NAME_BUDGET * hits / len(anchors.names)
    return bonus


def rrf(rank: int) -> float:
    """The RRF hint of one retriever: ``0.01 / (60 + rank)``, rank 1-based (DESIGN 9.5, G8)."""
    if rank < 1:
        raise ValueError(f"rank must be 1-based (>= 1), got {rank}")
    return RRF_WEIGHT / (RRF_K + rank)


def rrf_hint(candidate: Candidate) -> float:
    """Summed over the retrievers (FTS, vector) the candidate appears in."""
    return sum(rrf(r) for r in (candidate.lexical_rank, candidate.vector_rank) if r is not None)


def lexical_score(query: str, text: str) -> float:
    """Lexical term overlap (G10, Lite): the share of the query's distinct normalised words that
    occur as words in ``text``; 0.0 for a query without words."""
    q = distinct_words(query)
    if not q:
        return 0.0
    have = set(distinct_words(text))
    return sum(1 for t in q if t in have) / len(q)


def _overlap(terms: Sequence[str], text: str) -> float:
    if not terms:
        return 0.0
    have = set(distinct_words(text))
    return sum(1 for t in terms if t in have) / len(terms)


def without_echo(cosine: float, axis: tuple[float, float] | None, share: float) -> float:
    """``cosine`` with ``share`` of the question axis taken out of both sides (the formula is
    in :mod:`~memory_es.recall.rank.echo`)."""
    if axis is None or share <= 0.0:
        return cosine
    b = share * (2.0 - share)
    asked, stated = axis
    norms = (1.0 - b * asked * asked) * (1.0 - b * stated * stated)
    if norms <= 1e-6:  # a vector (all but) all axis: nothing is left to compare (float32 noise)
        return 0.0
    return min(1.0, max(-1.0, (cosine - b * asked * stated) / math.sqrt(norms)))


def score(candidate: Candidate, anchors: Anchors, calibration: Calibration = NOMIC_V15,
          scoring: Scoring = "reference") -> Scored:
    """One candidate's score (G3-G10, DESIGN 9.5); the module docstring gives both formulas."""
    lexical = candidate.cosine is None
    evidence = 0.0
    if scoring == "hybrid":
        evidence = (candidate.evidence if candidate.evidence is not None
                    else _overlap(anchors.terms, candidate.text))
    cosine = candidate.cosine
    if cosine is not None and scoring == "hybrid" and candidate.dialogue:
        cosine = without_echo(cosine, candidate.axis, calibration.echo_removal)
    if cosine is None:
        semantic = evidence if scoring == "hybrid" else _overlap(anchors.terms, candidate.text)
    elif cosine >= calibration.no_evidence_cosine - EPSILON:
        semantic = cosine
    else:
        semantic = 0.0
    bonus = anchor_bonus(anchors, candidate)
    hint = rrf_hint(candidate)
    sal = min(1.0, max(0.0, candidate.salience)) * SALIENCE_WEIGHT \
        + (INSIGHT_WEIGHT if candidate.insight else 0.0)
    base = semantic
    if scoring == "hybrid":
        weight, counted = calibration.lexical_weight, evidence
        if candidate.dialogue:
            weight = calibration.dialogue_weight
            counted = 1.0 - (1.0 - evidence) ** calibration.dialogue_boost
        base = 1.0 - (1.0 - min(1.0, max(0.0, semantic))) * (1.0 - weight * counted)
    return Scored(candidate=candidate, score=base + bonus + hint + sal, semantic=semantic,
                  anchor=bonus, rrf=hint, salience=sal, lexical=lexical, evidence=evidence,
                  fused=base)


def score_all(query: str, candidates: Sequence[Candidate],
              calibration: Calibration = NOMIC_V15, scoring: Scoring = "reference"
              ) -> list[Scored]:
    """Score a whole pool (at most 50, G31); name anchors come from the pool's entities (G6)."""
    if len(candidates) > MAX_CANDIDATES:
        raise ValueError(f"candidate pool holds {len(candidates)} > {MAX_CANDIDATES} (G31)")
    anchors = extract_anchors(query, (n for c in candidates for n in c.entity_names))
    scored = [score(c, anchors, calibration, scoring) for c in candidates]
    if scoring != "hybrid":
        return scored
    if calibration.turn_model is not None:
        return with_turn_model(scored, calibration.turn_model, calibration.dialogue_boost)
    if calibration.dialogue_support <= 0:
        return scored
    return with_support(scored, calibration.dialogue_support)


def turn_features_of(scored: Sequence[Scored], boost: float
                     ) -> list[tuple[Scored, TurnFeatures]]:
    """Each conversation turn of a scored pool with its turn-model features (its own
    semantic and evidence, its neighbours' in the pool); what scoring and the fit share."""
    own = {s.candidate.id: (min(1.0, max(0.0, s.semantic)), s.evidence) for s in scored}
    return [(s, turn_features(own[c.id][0], 1.0 - (1.0 - s.evidence) ** boost,
                              [own[n] for n in c.neighbours if n in own], c.text,
                              c.axis[1] if c.axis is not None else None))
            for s in scored if (c := s.candidate).dialogue]


def with_turn_model(scored: Sequence[Scored], model: TurnModel, boost: float) -> list[Scored]:
    """Each conversation turn's fused score from the turn model (:mod:`turns`); other lines
    keep theirs."""
    turned = {}
    for s, features in turn_features_of(scored, boost):
        parts = turn_parts(model, features)
        fused = math.fsum(parts.values())
        turned[s.candidate.id] = replace(s, score=s.score - s.fused + fused, fused=fused,
                                         turn=tuple(parts.items()))
    return [turned.get(s.candidate.id, s) for s in scored]


def with_support(scored: Sequence[Scored], weight: float) -> list[Scored]:
    """Each conversation turn plus ``weight`` times the best fused score among its neighbours
    in the pool: an answer often spans two turns ("Did she get the job?" / "Yes, at the
    museum."), and the turn beside a strong match is likelier to be part of it. One pass, so
    support never feeds on support."""
    fused = {s.candidate.id: s.fused for s in scored}
    out = []
    for s in scored:
        near = [fused[n] for n in s.candidate.neighbours if n in fused]
        if near:
            support = weight * max(near)
            s = replace(s, score=s.score + support, support=support)
        out.append(s)
    return out
