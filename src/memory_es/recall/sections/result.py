"""What recall hands back (G25, G20): :class:`RecallResult`, its degraded reasons, and the
``explain=True`` view of every score."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from datetime import UTC, tzinfo
from typing import Any, Literal

from memory_es.recall.rank.render import Recall, format_recall
from memory_es.recall.rank.score import EPSILON, Calibration, Scored, Scoring
from memory_es.recall.rank.select import SelectMode
from memory_es.recall.retrieve.lexical import LexicalEvidence
from memory_es.recall.sections.factsheet import FactSheet
from memory_es.recall.sections.guidance import GuidanceLine, render_guidance
from memory_es.text import truncate

DegradedReason = Literal["lexical_only", "provider_unavailable", "vectors_pending",
                         "no_index", "index_unreadable"]


@dataclass(frozen=True)
class RecallResult:
    """What an agent gets back: hits, the evidence flag, and whether the semantic side was
    whole. ``degraded`` is True with a ``reason`` when it was not: ``lexical_only`` (Lite or
    no embeddings block), ``provider_unavailable`` (the query could not be embedded),
    ``vectors_pending`` (``vectors_pending`` live memories still lack a vector and are found
    lexically only, D9), ``no_index`` (nothing was ever projected) or ``index_unreadable``
    (the active index cannot be read: no hits until ``memory-es rebuild``; the journal, and
    so every admitted turn, is intact).

    A hit's id: ``result.recall.hits[0].id`` (64 hex characters; what ``show``, ``forget``,
    ``set_status`` and ``mark`` take), with ``.text``, ``.score``, ``.status``,
    ``.created_at`` beside it (:class:`~memory_es.recall.rank.render.Hit`); ``delivered()`` lists
    every id the result shows, ``text`` is the rendered form, ``to_json()`` the structured one.

    Attributes:
        recall: the ranked hits (``recall.hits``, best first, each a ``Hit`` with ``id``,
            ``text``, ``score``...) and the evidence flag (``recall.evidence``:
            ``insufficient`` or ``conflicting``; ``recall.notes``).
        degraded: True when the semantic side was not whole (see ``reason``).
        reason: why it was degraded (the codes above), or None.
        vectors_pending: live memories still without a vector, found lexically only.
        explanation: the query's side of ``explain=True`` (scoring, formula, term weights,
            calibration); each hit's parts are on ``hit.explanation``. None otherwise.
        as_of: an as-of recall's instant (ISO, UTC), or None for a recall of now.
        position: an as-of recall's last journal position recorded by then (0: nothing yet).
        guidance: the "Preferences & lessons" lines (G26, G27), each with its memory ``id``.
        fact_sheets: the named people's fact sheets (G28, M23); their rows carry
            ``memory_id``.
        zone: the host time zone the dates of guidance and fact sheets are read in.
    """

    recall: Recall
    """The hits (``recall.hits[i].id``, ``.text``, ``.score``) and the evidence flag."""
    degraded: bool
    """True when the semantic side was not whole; ``reason`` says why."""
    reason: DegradedReason | None = None
    """``lexical_only``, ``provider_unavailable``, ``vectors_pending``, ``no_index``,
    ``index_unreadable``, or None when not degraded."""
    vectors_pending: int = 0
    """Live memories still waiting for a vector (found lexically only)."""
    explanation: dict[str, Any] | None = None
    """The query's side of ``explain=True``; each hit's parts are on ``hit.explanation``."""
    # An as-of recall: the instant asked about (UTC) and the last journal
    # position the store had recorded then (0: nothing yet).
    as_of: str | None = None
    """The instant an as-of recall answered for (ISO, UTC), or None."""
    position: int | None = None
    """The last journal position recorded by ``as_of`` (0: nothing yet), or None."""
    # Additive (G18): the "Preferences & lessons" lines (G26, G27) and the fact sheets of the
    # people the query (or ``about``) names (G28, M23); ``zone`` is the host zone their dates
    # read in.
    guidance: tuple[GuidanceLine, ...] = ()
    """The "Preferences & lessons" lines (G26, G27), each with its memory ``id``."""
    fact_sheets: tuple[FactSheet, ...] = ()
    """The named people's fact sheets (G28, M23); each row has its ``memory_id``."""
    zone: tzinfo | None = None
    """The host zone the guidance and fact-sheet dates are read in (None: UTC)."""

    @property
    def text(self) -> str:
        """The notes and hits as before (G18), then the guidance section and the fact
        sheets, each after a blank line, when there are any."""
        zone = self.zone or UTC
        parts = [format_recall(self.recall), render_guidance(self.guidance, zone),
                 *(sheet.text(zone) for sheet in self.fact_sheets)]
        return "\n\n".join(part for part in parts if part)

    @property
    def empty(self) -> bool:
        """Nothing to show: no hit, no guidance line, no fact sheet."""
        return not (self.recall.hits or self.guidance or self.fact_sheets)

    def delivered(self) -> tuple[str, ...]:
        """The memory ids this result shows (G30): hits, guidance lines, fact-sheet rows."""
        ids = [h.id for h in self.recall.hits] + [g.id for g in self.guidance] + [
            r.memory_id for sheet in self.fact_sheets for r in sheet.rows]
        return tuple(dict.fromkeys(ids))

    def to_json(self, *, sources: bool = True) -> dict[str, Any]:
        """The JSON result. Each hit carries its ``source`` (conversation and intake id) for
        the host; ``sources=False`` leaves them out for a model-facing surface (H23)."""
        results = []
        for hit in self.recall.hits:
            item = hit.structured()
            if sources and hit.source is not None:
                item["source"] = hit.source.to_json()
            if hit.explanation is not None:
                item["explain"] = hit.explanation
            results.append(item)
        body: dict[str, Any] = {
            "degraded": self.degraded, "reason": self.reason,
            "vectors_pending": self.vectors_pending, "evidence": self.recall.evidence,
            "notes": list(self.recall.notes), "results": results}
        if self.guidance:  # additive (G18): a result without them keeps its previous shape
            body["guidance"] = [g.to_json() for g in self.guidance]
        if self.fact_sheets:
            body["factSheets"] = [sheet.to_json() for sheet in self.fact_sheets]
        if self.explanation is not None:
            body["explain"] = self.explanation
        if self.as_of is not None:
            body["asOf"] = {"instant": self.as_of, "position": self.position}
        return body


@dataclass(frozen=True)
class AutoContext:
    """The automatic "possibly relevant" block for one turn and whether it was whole, so a
    host can warn instead (H15): ``degraded`` with ``reason`` ``lexical_only`` or
    ``provider_unavailable`` means no block could be made; ``vectors_pending`` means the block
    was made from the memories that have vectors while ``vectors_pending`` still wait."""

    text: str
    degraded: bool = False
    reason: DegradedReason | None = None
    vectors_pending: int = 0
    profile: str = ""  # the owner profile part of ``text`` (M3-M8), "" when off or empty

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "degraded": self.degraded, "reason": self.reason,
                "vectors_pending": self.vectors_pending, "profile": self.profile}


TURN_MODEL_FORMULA = (
    "; with a turnModel, a conversation turn's fused score is instead the sum of its "
    "turnModel parts: semantic + evidence * boosted lexicalEvidence + neighbourCosine * its "
    "neighbours' best semantic + neighbourEvidence * their best lexicalEvidence + (length * "
    "log(1 + words) + asking * its questionAxis projection) * its relevance (the larger of "
    "its semantic and boosted lexicalEvidence) + offset (no neighbourSupport)")


def explained(trimmed: Recall, scored: Sequence[Scored], evidence: LexicalEvidence,
              calibration: Calibration, scoring: Scoring, mode: SelectMode,
              degraded: bool) -> RecallResult:
    """``explain=True``: each hit with its score's parts and the cut it passed, and the
    query's term weights and thresholds, so a user sees why a line ranks where it does."""
    by_id = {s.candidate.id: s for s in scored}
    # the best by base score: recency (M28) may have moved another hit first
    best = max((h.score for h in trimmed.hits), default=0.0)
    top = min(trimmed.hits, key=lambda h: (-h.score, h.id)).id if trimmed.hits else None
    floor_applies = best >= calibration.recall_floor - EPSILON
    hits = []
    for hit in trimmed.hits:
        s = by_id[hit.id]
        c = s.candidate
        if mode == "degraded":
            cut = "uncut: lexical-only results are never cut (G20)"
        elif mode == "original-query":
            cut = "uncut: original-query mode keeps the turn's lookup whole (G19)"
        elif hit.id == top:
            cut = "best hit: always kept (G11)"
        else:
            cut = (f"within the tail: {s.score:.4f} >= best {best:.4f} - "
                   f"{calibration.recall_tail:.4f}")
            if floor_applies:
                cut += f", and >= the floor {calibration.recall_floor:.4f}"
        echo = (scoring == "hybrid" and c.dialogue and c.axis is not None
                and calibration.echo_removal > 0)
        hits.append(replace(hit, explanation={
            "cosine": c.cosine, "semantic": s.semantic, "semanticFrom": (
                "lexical evidence (no vector yet, G10)" if s.lexical else
                ("cosine without the question axis" if echo else "cosine") if s.semantic else
                "nothing: cosine below the no-evidence cosine"),
            "lexicalEvidence": s.evidence, "anchorBonus": s.anchor, "rrfHint": s.rrf,
            "salience": s.salience, "lexicalRank": c.lexical_rank, "vectorRank": c.vector_rank,
            "graphHop": c.graph_hop, "dialogue": c.dialogue,
            "neighbourSupport": s.support, "questionAxis": c.axis if echo else None,
            "turnModel": dict(s.turn) if s.turn else None,
            "cut": cut,
            "tieBreak": "equal scores rank by memory id"}))
    formula = ("1 - (1 - semantic) * (1 - lexicalWeight * lexicalEvidence) + anchorBonus + "
               "rrfHint + salience; a conversation turn (dialogue) weighs "
               "dialogueWeight * (1 - (1 - lexicalEvidence) ** dialogueBoost) and gains "
               "neighbourSupport = dialogueSupport * its best neighbour's fused score; the "
               "cosine with echoRemoval of the model's questionAxis taken out"
               + (TURN_MODEL_FORMULA if calibration.turn_model is not None else "")
               if scoring == "hybrid"
               else "semantic + anchorBonus + rrfHint + salience")
    terms = evidence.explain() if scoring == "hybrid" else {}
    return RecallResult(
        recall=replace(trimmed, hits=tuple(hits)), degraded=degraded,
        explanation={"scoring": scoring, "formula": formula, "termWeights": terms,
                     "calibration": asdict(calibration), "evidenceNote": trimmed.evidence})


EXPLAIN_TEXT_WIDTH = 60  # characters of a hit's text above its score parts, '…' when cut


def _shown(value: Any) -> Any:
    """A part as the text form prints it: floats to four places, a turn model's parts as
    ``(semantic=0.41, evidence=0.2, ...)``."""
    if isinstance(value, float):
        return round(value, 4)
    if isinstance(value, dict):
        return "(" + ", ".join(f"{k}={_shown(v)}" for k, v in value.items()) + ")"
    return value


def explanation_lines(result: RecallResult) -> list[str]:
    """``explain=True`` as text (``memory-es search --explain``)."""
    query = result.explanation or {}
    lines = [f"scoring {query.get('scoring')}: {query.get('formula')}"]
    weights = query.get("termWeights") or {}
    if weights:
        lines.append("term weights: " + ", ".join(f"{t}={w}" for t, w in weights.items()))
    for hit in result.recall.hits:
        parts = hit.explanation or {}
        shown = {k: _shown(v) for k, v in parts.items()
                 if k not in ("cut", "tieBreak", "semanticFrom")
                 and not (k == "turnModel" and v is None)}
        lines.append(f"{hit.score:.3f} {truncate(hit.text, EXPLAIN_TEXT_WIDTH)}")
        lines.append("    " + " ".join(f"{k}={v}" for k, v in shown.items()))
        lines.append(f"    semantic from {parts.get('semanticFrom')}; {parts.get('cut')}")
    return lines
