"""Recall scoring and selection: pure, no I/O, no clock (SPEC G1-G33, H1-H18, DESIGN 9.4-9.8).

Pipeline, for one query over the bounded candidate pool (at most 50, G31):

1. ``extract_anchors(query, entity_names)`` analyses the query once (G5-G7, G10, G32).
2. ``score(candidate, anchors, calibration)`` scores each candidate embedding-first (G3-G10):

   ``semantic + anchor_bonus + rrf hint + salience * 0.005``

   * ``semantic`` is the stored vector's cosine, or 0 when the cosine is below the calibration's
     no-evidence cosine (0.5 for nomic-embed-text v1.5). A candidate still waiting for its vector
     (``cosine is None``, G10) uses lexical term overlap instead: the share of the query's distinct
     normalised terms present in the candidate's text, 0..1, used unscaled in the cosine's place
     (an exact textual restatement scores like a perfect cosine) and not thresholded.
   * ``anchor_bonus``: see :func:`anchor_bonus` (DESIGN 9.5).
   * ``rrf``: ``0.01 / (60 + rank)`` per retriever the candidate appears in; ranks are 1-based.
   * ``salience`` (clamped to 0..1) times 0.005, so at most 0.005.

3. ``select`` applies G22 (terminal records out), the G11 tail cut and floor, and the G16/G17
   evidence notes; ``format_line`` renders the G23 text form.
4. ``auto_select`` / ``format_auto_line`` / ``render_auto_block`` build the automatic block
   (H1-H11); ``owner_text_gate`` is the H14 structural gate.

All threshold comparisons are inclusive and tolerate float noise of ``EPSILON`` (1e-9), so
"within 0.04" accepts a hit exactly 0.04 below the best even when binary floating point says
0.04000000000000004.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta, tzinfo
from typing import Any, Literal

from memory_es.vocabulary import TERMINAL_STATUSES

__all__ = [
    "AUTO_BLOCK_BUDGET_BYTES",
    "AUTO_HEADING",
    "AUTO_LINE_TEXT_CAP_BYTES",
    "AUTO_MAX_LINES",
    "BACKGROUND_HEADING",
    "CONFLICT_WINDOW",
    "MAX_CANDIDATES",
    "NAME_BUDGET",
    "NOMIC_V15",
    "NUMBER_BUDGET",
    "OWNER_TEXT_MIN_EXCLUSIVE",
    "RRF_K",
    "RRF_WEIGHT",
    "SALIENCE_WEIGHT",
    "Anchors",
    "Calibration",
    "Candidate",
    "Currentness",
    "Evidence",
    "Fact",
    "Hit",
    "Recall",
    "Scored",
    "anchor_bonus",
    "auto_select",
    "background_select",
    "candidate_anchor_tokens",
    "currentness",
    "ended_on",
    "extract_anchors",
    "format_auto_line",
    "format_background_line",
    "format_instant",
    "format_line",
    "format_recall",
    "lexical_score",
    "normalize",
    "owner_text_gate",
    "render_auto_block",
    "render_background",
    "rrf",
    "rrf_hint",
    "score",
    "score_all",
    "select",
]

Currentness = Literal["current", "superseded", "ended"]
Evidence = Literal["conflicting", "insufficient"]
SelectMode = Literal["explicit", "original-query", "degraded"]

NUMBER_BUDGET = 0.15  # G5: numbers, dates and numeric ids share up to 0.15
NAME_BUDGET = 0.08  # G5: names share up to 0.08
RRF_WEIGHT = 0.01  # DESIGN 9.5: 0.01 / (60 + rank)
RRF_K = 60
SALIENCE_WEIGHT = 0.005  # DESIGN 9.5: salience adds at most 0.005
MAX_CANDIDATES = 50  # G31: the deliberate pool is a bounded fifty-hit superset
CONFLICT_WINDOW = 8  # G16: conflicts are checked on the top 8 candidates before the tail cut
AUTO_MAX_LINES = 3  # H5
AUTO_LINE_TEXT_CAP_BYTES = 360  # H11: a line whose text is longer is left out, never cut
AUTO_BLOCK_BUDGET_BYTES = 1_500  # H11: 1.5 KB, KB = 1,000 bytes of UTF-8 (DESIGN 9.6)
OWNER_TEXT_MIN_EXCLUSIVE = 16  # H14: at most 16 code points suppresses the block
AUTO_HEADING = "## Memory (possibly relevant — may be unrelated; verify before relying)"  # H1
EPSILON = 1e-9

CONFLICTING_NOTE = "Conflicting values:"  # G16
INSUFFICIENT_NOTE = "Insufficient evidence:"  # G17


# --------------------------------------------------------------------------------------------
# Value objects


@dataclass(frozen=True, slots=True)
class Calibration:
    """Per-embedding-model calibration (DESIGN 9.4): the five measured numbers."""

    no_evidence_cosine: float = 0.5  # G3
    recall_floor: float = 0.65  # G11, G17
    recall_tail: float = 0.15  # G11
    auto_floor: float = 0.62  # H3
    auto_window: float = 0.04  # H4


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
    entity_names: tuple[str, ...] = ()
    salience: float = 0.0
    cosine: float | None = None
    lexical_rank: int | None = None
    vector_rank: int | None = None
    fact: Fact | None = None
    attribution: str | None = None  # H9: "you said" | "assistant noted" | "from a document"


@dataclass(frozen=True, slots=True)
class Anchors:
    """The query's analysis (G5-G7, G10).

    ``numbers_dates_ids``: distinct whole numbers, canonical ``YYYY-MM-DD`` dates and numeric ids.
    ``names``: distinct normalised query words of >= 3 letters that are a word of the name of an
    entity associated with some candidate in the pool. ``terms``: the distinct normalised query
    words, for lexical term overlap (G10).
    """

    numbers_dates_ids: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    terms: tuple[str, ...] = ()


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


@dataclass(frozen=True, slots=True)
class Hit:
    """One returned result (G25); optional fields are ``None`` when the backend lacks them."""

    id: str
    score: float
    text: str
    type: str | None
    status: str | None
    created_at: datetime | None
    valid_from: date | datetime | None
    valid_to: date | datetime | None
    due_at: date | datetime | None
    currentness: Currentness
    ended_on: date | datetime | None = None  # the past end behind ``ended`` (G14)
    attribution: str | None = None

    def structured(self, evidence: Evidence | None = None) -> dict[str, Any]:
        """The structured result item with the reference's camelCase keys (G25)."""
        item: dict[str, Any] = {"id": self.id, "score": self.score, "text": self.text}
        optional: dict[str, Any] = {
            "type": self.type,
            "status": self.status,
            "createdAt": None if self.created_at is None else format_instant(self.created_at),
            "validFrom": _fmt_when(self.valid_from),
            "validTo": _fmt_when(self.valid_to),
            "dueAt": _fmt_when(self.due_at),
        }
        item.update({k: v for k, v in optional.items() if v is not None})
        item["currentness"] = self.currentness
        if evidence is not None:
            item["evidence"] = evidence
        return item


@dataclass(frozen=True, slots=True)
class Recall:
    """A selected explicit result: hits in backend ranking order plus the evidence field (G16-G17).

    ``evidence`` holds one value; when both notes apply, ``conflicting`` wins the structured
    field and ``notes`` lists both (conflicting first).
    """

    hits: tuple[Hit, ...]
    evidence: Evidence | None = None
    notes: tuple[str, ...] = field(default=())


# --------------------------------------------------------------------------------------------
# Normalisation and tokens


def normalize(text: str) -> str:
    """Anchor-matching form (G7): NFKC, casefold, accents stripped (NFKD minus marks), then NFC."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    stripped = "".join(ch for ch in unicodedata.normalize("NFKD", folded)
                       if not unicodedata.combining(ch))
    return unicodedata.normalize("NFC", stripped)


# Dates: YYYY-MM-DD, YYYY/MM/DD (an ISO instant's date part counts, e.g. 1988-11-02T10:00) and
# DD.MM.YYYY. Not inside a longer dotted/dashed token.
_YMD = re.compile(
    r"(?<![\w./-])(\d{4})([-/])(\d{1,2})\2(\d{1,2})"
    r"(?:t\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:z|[+-]\d{2}:?\d{2})?)?"  # an instant's time part
    r"(?![./:-]\d)(?!\w)"
)
_DMY = re.compile(r"(?<![\w./-])(\d{1,2})\.(\d{1,2})\.(\d{4})(?![./-]\d)(?!\w)")
# A token: word characters joined by single . - / : (so "pr-1234", "v0.9", "12:30" stay whole).
_TOKEN = re.compile(r"\w+(?:[.\-/:]\w+)*")
_WORD = re.compile(r"\w+")


def _canon_date(year: str, month: str, day: str) -> str | None:
    try:
        return date(int(year), int(month), int(day)).isoformat()
    except ValueError:
        return None


def _number_tokens(normalized: str) -> dict[str, int]:
    """Dates (canonical), whole numbers and numeric ids in already-normalised text (G6), each
    with the position of its first occurrence."""
    found: dict[str, int] = {}
    spans: list[tuple[int, int]] = []
    for m in _YMD.finditer(normalized):
        canon = _canon_date(m.group(1), m.group(3), m.group(4))
        if canon is not None:
            found[canon] = min(found.get(canon, m.start()), m.start())
            spans.append(m.span())
    for m in _DMY.finditer(normalized):
        canon = _canon_date(m.group(3), m.group(2), m.group(1))
        if canon is not None:
            found[canon] = min(found.get(canon, m.start()), m.start())
            spans.append(m.span())
    masked = list(normalized)
    for start, end in spans:
        masked[start:end] = " " * (end - start)
    rest = "".join(masked)
    for m in _TOKEN.finditer(rest):
        tok = m.group()
        if any(ch.isdigit() for ch in tok):
            # a whole number ("0.9", "4521") or a numeric id ("pr-1234", "v0.9")
            found.setdefault(tok, m.start())
    return found


def candidate_anchor_tokens(text: str) -> frozenset[str]:
    """The numbers, canonical dates and numeric ids a candidate's text contains (G6)."""
    return frozenset(_number_tokens(normalize(text)))


def _letters(word: str) -> int:
    return sum(1 for ch in word if ch.isalpha())


def _name_words(names: Iterable[str]) -> set[str]:
    """Words of >= 3 letters in entity names, normalised (G6, G7)."""
    return {w for name in names for w in _WORD.findall(normalize(name)) if _letters(w) >= 3}


def _terms(text: str) -> list[str]:
    seen: dict[str, None] = {}
    for w in _WORD.findall(normalize(text)):
        seen.setdefault(w, None)
    return list(seen)


# --------------------------------------------------------------------------------------------
# Scoring


def extract_anchors(query: str, entity_names: Iterable[str] = ()) -> Anchors:
    """Analyse a query (G5-G7, G10, G32: no stop-word or question-word list).

    ``entity_names`` are the names of the entities associated with the pool's candidates; a query
    word of >= 3 letters that is a word of one of them is a name anchor. The query's name anchors
    are therefore the same for every candidate, so the 0.08 budget has one denominator per query.
    Orders are first-occurrence; all tuples are distinct.
    """
    normalized = normalize(query)
    positions = _number_tokens(normalized)
    ordered = sorted(positions, key=lambda tok: (positions[tok], tok))
    pool_words = _name_words(entity_names)
    terms = _terms(query)
    names = tuple(w for w in terms if _letters(w) >= 3 and w in pool_words)
    return Anchors(numbers_dates_ids=tuple(ordered), names=names, terms=tuple(terms))


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
        own_names = _name_words(candidate.entity_names)
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
    q = _terms(query)
    if not q:
        return 0.0
    have = set(_terms(text))
    return sum(1 for t in q if t in have) / len(q)


def _overlap(terms: Sequence[str], text: str) -> float:
    if not terms:
        return 0.0
    have = set(_terms(text))
    return sum(1 for t in terms if t in have) / len(terms)


def score(candidate: Candidate, anchors: Anchors, calibration: Calibration = NOMIC_V15) -> Scored:
    """Embedding-first score (G3-G10, DESIGN 9.5); see the module docstring for the formula."""
    lexical = candidate.cosine is None
    if candidate.cosine is None:
        semantic = _overlap(anchors.terms, candidate.text)
    elif candidate.cosine >= calibration.no_evidence_cosine - EPSILON:
        semantic = candidate.cosine
    else:
        semantic = 0.0
    bonus = anchor_bonus(anchors, candidate)
    hint = rrf_hint(candidate)
    sal = min(1.0, max(0.0, candidate.salience)) * SALIENCE_WEIGHT
    return Scored(candidate=candidate, score=semantic + bonus + hint + sal, semantic=semantic,
                  anchor=bonus, rrf=hint, salience=sal, lexical=lexical)


def score_all(query: str, candidates: Sequence[Candidate],
              calibration: Calibration = NOMIC_V15) -> list[Scored]:
    """Score a whole pool (at most 50, G31); name anchors come from the pool's entities (G6)."""
    if len(candidates) > MAX_CANDIDATES:
        raise ValueError(f"candidate pool holds {len(candidates)} > {MAX_CANDIDATES} (G31)")
    anchors = extract_anchors(query, (n for c in candidates for n in c.entity_names))
    return [score(c, anchors, calibration) for c in candidates]


# --------------------------------------------------------------------------------------------
# Currentness (G14, G15, H7)


def _local_tz(now: datetime, tz: tzinfo | None) -> tzinfo:
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    if tz is not None:
        return tz
    local = now.astimezone().tzinfo  # the host process timezone (G15)
    assert local is not None
    return local


def _has_ended(end: date | datetime, now: datetime, tz: tzinfo) -> bool:
    if isinstance(end, datetime):
        instant = end if end.tzinfo is not None else end.replace(tzinfo=tz)
        return instant < now  # an instant closes when it passes (G15)
    return end < now.astimezone(tz).date()  # date-only: closes after the local day (G15)


def ended_on(
    candidate: Candidate, now: datetime, tz: tzinfo | None = None
) -> date | datetime | None:
    """The earliest past structured end (``valid_to`` or ``due_at``), or None (G14)."""
    zone = _local_tz(now, tz)
    past = [e for e in (candidate.valid_to, candidate.due_at)
            if e is not None and _has_ended(e, now, zone)]
    if not past:
        return None
    return min(past, key=lambda e: _sort_instant(e, zone))


def _sort_instant(value: date | datetime, tz: tzinfo) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=tz)
    return datetime(value.year, value.month, value.day, tzinfo=tz) + timedelta(days=1)


def currentness(candidate: Candidate, now: datetime, tz: tzinfo | None = None) -> Currentness:
    """G14: superseded (flag, or status superseded/invalidated) > ended (past end) > current."""
    if candidate.superseded or candidate.status in ("superseded", "invalidated"):
        return "superseded"
    if ended_on(candidate, now, tz) is not None:
        return "ended"
    return "current"


def _hit(s: Scored, now: datetime, tz: tzinfo | None) -> Hit:
    c = s.candidate
    cur = currentness(c, now, tz)
    return Hit(id=c.id, score=s.score, text=c.text, type=c.type, status=c.status,
               created_at=c.created_at, valid_from=c.valid_from, valid_to=c.valid_to,
               due_at=c.due_at, currentness=cur,
               ended_on=ended_on(c, now, tz) if cur == "ended" else None,
               attribution=c.attribution)


# --------------------------------------------------------------------------------------------
# Explicit selection (G11, G16, G17, G19, G20, G22, G24)


def _live_ranked(scored: Iterable[Scored]) -> list[Scored]:
    live = [s for s in scored if s.candidate.status not in TERMINAL_STATUSES]
    return sorted(live, key=lambda s: (-s.score, s.candidate.id))


def _fact_norm(value: str) -> str:
    return " ".join(normalize(value).split())


def _has_conflict(ranked: Sequence[Scored], now: datetime, tz: tzinfo | None) -> bool:
    """G16/G33: among the top 8 live candidates (before the cut), two *current* structured facts
    with the same subject, property and scope give different values."""
    values: dict[tuple[str, str, str], set[str]] = {}
    for s in ranked[:CONFLICT_WINDOW]:
        f = s.candidate.fact
        if f is None or currentness(s.candidate, now, tz) != "current":
            continue
        key = (_fact_norm(f.subject), _fact_norm(f.property), _fact_norm(f.scope))
        values.setdefault(key, set()).add(_fact_norm(f.value))
    return any(len(v) > 1 for v in values.values())


def select(scored: Iterable[Scored], calibration: Calibration = NOMIC_V15, *, now: datetime,
           tz: tzinfo | None = None, mode: SelectMode = "explicit",
           fact_sheet_conflict: bool = False) -> Recall:
    """Choose the explicit MemoryRecall hits.

    * Terminal ``dropped`` / ``invalidated`` records are excluded (G22).
    * Ranked by score descending, then id (stable) (G24: the backend's ranking is kept).
    * ``mode="explicit"``: tail cut (G11): the best hit is always kept; others must score within
      ``recall_tail`` of the best, and, when the best clears ``recall_floor``, at least the floor.
    * ``mode="original-query"``: the list stays uncut, the notes are added (G19).
    * ``mode="degraded"`` (lexical-only, Lite): uncut, no notes (G20).
    * ``evidence``: ``conflicting`` when ``fact_sheet_conflict`` or the top-8 check finds differing
      current values (G16); ``insufficient`` when the best hit is below ``recall_floor`` (G17). An
      empty pool has no evidence note.
    """
    ranked = _live_ranked(scored)
    if not ranked:
        return Recall(hits=())
    best = ranked[0].score
    if mode == "explicit":
        floor_applies = best >= calibration.recall_floor - EPSILON
        kept = [ranked[0]] + [
            s for s in ranked[1:]
            if s.score >= best - calibration.recall_tail - EPSILON
            and (not floor_applies or s.score >= calibration.recall_floor - EPSILON)
        ]
    else:
        kept = ranked
    hits = tuple(_hit(s, now, tz) for s in kept)
    if mode == "degraded":
        return Recall(hits=hits)
    notes: list[str] = []
    if fact_sheet_conflict or _has_conflict(ranked, now, tz):
        notes.append(CONFLICTING_NOTE)
    if best < calibration.recall_floor - EPSILON:
        notes.append(INSUFFICIENT_NOTE)
    evidence: Evidence | None = None
    if CONFLICTING_NOTE in notes:
        evidence = "conflicting"
    elif notes:
        evidence = "insufficient"
    return Recall(hits=hits, evidence=evidence, notes=tuple(notes))


# --------------------------------------------------------------------------------------------
# Text forms (G13, G14, G23)


def format_instant(value: datetime) -> str:
    """ISO with milliseconds; UTC as ``Z``, any other offset preserved (G15, G23)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    text = value.isoformat(timespec="milliseconds")
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def _fmt_when(value: date | datetime | None) -> str | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return format_instant(value)
    return value.isoformat()


def format_line(hit: Hit) -> str:
    """G23 text form: ``0.800 [recorded 2026-07-06T12:00:00.000Z] [done] Ship the 0.9 release.``

    Parts, each only when it applies: score (3 decimals), ``[recorded <instant>]`` (G23),
    ``[<status>]`` for a status other than ``open`` (G23), ``[valid <from>..<to>]`` (G13),
    ``[superseded]`` / ``[ended <date>]`` (G14; current stays unmarked, and a ``[superseded]``
    status tag is not repeated), then the text.
    """
    parts = [f"{hit.score:.3f}"]
    if hit.created_at is not None:
        parts.append(f"[recorded {format_instant(hit.created_at)}]")
    if hit.status is not None and hit.status != "open":
        parts.append(f"[{hit.status}]")
    if hit.valid_from is not None or hit.valid_to is not None:
        parts.append(f"[valid {_fmt_when(hit.valid_from) or ''}..{_fmt_when(hit.valid_to) or ''}]")
    if hit.currentness == "superseded" and hit.status != "superseded":
        parts.append("[superseded]")
    elif hit.currentness == "ended":
        parts.append(f"[ended {_fmt_when(hit.ended_on)}]")
    parts.append(hit.text)
    return " ".join(parts)


def format_recall(recall: Recall) -> str:
    """The explicit result text: the evidence notes first (G16, G17), then one line per hit."""
    return "\n".join([*recall.notes, *(format_line(h) for h in recall.hits)])


# --------------------------------------------------------------------------------------------
# Automatic block (H1-H15)


def owner_text_gate(text: str) -> bool:
    """H14: True when the owner text may carry an automatic block, i.e. it has more than 16
    Unicode code points after NFC normalisation and trimming (at most 16 suppresses it)."""
    return len(unicodedata.normalize("NFC", text).strip()) > OWNER_TEXT_MIN_EXCLUSIVE


def _local_date(value: datetime, tz: tzinfo) -> date:
    return (value if value.tzinfo is not None else value.replace(tzinfo=UTC)).astimezone(tz).date()


def format_auto_line(hit: Hit, tz: tzinfo = UTC) -> str:
    """H6, H9, H10: ``- – <text> (recorded <date>; <currentness>[; <attribution>])``.

    The recorded value is date-only in ``tz``; an ended line says ``ended <date>``; a current task
    line says ``task/plan recorded <date>`` (H6). Attribution is shown when supplied (the caller
    supplies it only when every label agrees, H9).
    """
    labels: list[str] = []
    if hit.created_at is not None:
        verb = "task/plan recorded" if hit.type == "task" and hit.currentness == "current" \
            else "recorded"
        labels.append(f"{verb} {_local_date(hit.created_at, tz).isoformat()}")
    if hit.currentness == "ended":
        end = hit.ended_on
        shown = _local_date(end, tz) if isinstance(end, datetime) else end
        labels.append(f"ended {shown.isoformat()}" if shown is not None else "ended")
    else:
        labels.append(hit.currentness)
    if hit.attribution:
        labels.append(hit.attribution)
    return f"- – {hit.text} ({'; '.join(labels)})"


def _dedupe_key(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).split())  # DESIGN 9.3, case preserved


def auto_select(scored: Iterable[Scored], calibration: Calibration = NOMIC_V15, *,
                now: datetime, tz: tzinfo | None = None, degraded: bool = False,
                max_lines: int = AUTO_MAX_LINES,
                line_text_cap_bytes: int = AUTO_LINE_TEXT_CAP_BYTES,
                budget_bytes: int = AUTO_BLOCK_BUDGET_BYTES) -> tuple[Hit, ...]:
    """Choose the automatic block's lines (H2-H11, H15, DESIGN 9.6-9.7).

    1. Degraded / Lite (``degraded=True``) yields nothing (H15); terminal records are out (G22).
    2. The best live hit must reach ``auto_floor`` (0.62, H3); otherwise nothing.
    3. Eligible: hits within ``auto_window`` (0.04) of the best (H4). (Only the best must clear the
       floor; the reference gives the others the window alone.)
    4. Walk current lines first, then superseded/ended (each group by score), taking a line unless
       its text repeats a taken line's text (H5), its text is over 360 UTF-8 bytes (left out, never
       cut, H11), or its rendered line (plus newline) would overflow the 1,500-byte budget (H11);
       stop at 3 lines (H5).
    5. Return the chosen lines oldest first (by ``created_at``, unknown first, then id) (H8).

    The budget counts the rendered lines with their newlines, not the heading. With the default
    caps three lines cannot exceed it (3 x (360 + label overhead) < 1,500), so it is a guard.
    """
    if degraded:
        return ()
    ranked = _live_ranked(scored)
    if not ranked or ranked[0].score < calibration.auto_floor - EPSILON:
        return ()
    best = ranked[0].score
    zone = _local_tz(now, tz)
    eligible = [_hit(s, now, zone) for s in ranked
                if s.score >= best - calibration.auto_window - EPSILON]
    ordered = ([h for h in eligible if h.currentness == "current"]
               + [h for h in eligible if h.currentness != "current"])
    chosen: list[Hit] = []
    seen: set[str] = set()
    used = 0
    for h in ordered:
        if len(chosen) >= max_lines:
            break
        key = _dedupe_key(h.text)
        if key in seen:
            continue
        if len(h.text.encode("utf-8")) > line_text_cap_bytes:
            continue
        cost = len(format_auto_line(h, zone).encode("utf-8")) + 1
        if used + cost > budget_bytes:
            continue
        seen.add(key)
        used += cost
        chosen.append(h)
    epoch = datetime.min.replace(tzinfo=UTC)
    chosen.sort(key=lambda h: (h.created_at is not None,
                               _sort_instant(h.created_at, zone) if h.created_at else epoch,
                               h.id))
    return tuple(chosen)


def render_auto_block(hits: Sequence[Hit], tz: tzinfo = UTC) -> str:
    """The block text (H1, H10): heading, blank line, one line per hit; empty for no hits."""
    if not hits:
        return ""
    return "\n".join([AUTO_HEADING, "", *(format_auto_line(h, tz) for h in hits)])


# --------------------------------------------------------------------------------------------
# Labelled background (H19, H12, DESIGN 9.4)

BACKGROUND_HEADING = "## Background (your labelled preferences and lessons; may be unrelated)"
BACKGROUND_TOP = 5  # "ranks among the top retrieved hits": the top five live hits (our bound)
BACKGROUND_LEAD = 0.05  # DESIGN 9.4: "clearly leads" = at least 0.05 above the pool median
BACKGROUND_MAX_LINES = 3  # our bound, like the block (H5)
BACKGROUND_BUDGET_BYTES = 900  # block 1,500 + background 900 keeps the context under ~2.5 KB


def background_select(scored: Iterable[Scored], labelled: dict[str, str],
                      calibration: Calibration = NOMIC_V15, *, now: datetime,
                      tz: tzinfo | None = None, exclude: Iterable[str] = ()
                      ) -> tuple[tuple[str, Hit], ...]:
    """The labelled background lines (H19): ``(label, hit)`` for each labelled memory
    (``labelled``: id -> "preference" | "lesson", already restricted by the caller to the turn's
    scopes and to verified lessons) that ranks among the top live hits, reaches the automatic
    floor, and leads the pool median by at least 0.05. Opposite advice is kept together: no
    line suppresses another. Lines in ``exclude`` (already in the block) are not repeated."""
    ranked = _live_ranked(scored)
    if not ranked:
        return ()
    values = sorted(s.score for s in ranked)
    middle = len(values) // 2
    median = values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2
    zone = _local_tz(now, tz)
    skip = set(exclude)
    chosen: list[tuple[str, Hit]] = []
    used = 0
    for s in ranked[:BACKGROUND_TOP]:
        label = labelled.get(s.candidate.id)
        if label is None or s.candidate.id in skip:
            continue
        if s.score < calibration.auto_floor - EPSILON or s.score < median + BACKGROUND_LEAD:
            continue
        hit = _hit(s, now, zone)
        if len(hit.text.encode("utf-8")) > AUTO_LINE_TEXT_CAP_BYTES:
            continue
        cost = len(format_background_line(label, hit, zone).encode("utf-8")) + 1
        if used + cost > BACKGROUND_BUDGET_BYTES or len(chosen) >= BACKGROUND_MAX_LINES:
            continue
        used += cost
        chosen.append((label, hit))
    return tuple(chosen)


def format_background_line(label: str, hit: Hit, tz: tzinfo = UTC) -> str:
    """``- preference: <text> (recorded <date>; current)``."""
    recorded = (f"recorded {_local_date(hit.created_at, tz).isoformat()}; "
                if hit.created_at is not None else "")
    return f"- {label}: {hit.text} ({recorded}{hit.currentness})"


def render_background(lines: Sequence[tuple[str, Hit]], tz: tzinfo = UTC) -> str:
    if not lines:
        return ""
    return "\n".join([BACKGROUND_HEADING, "",
                      *(format_background_line(label, hit, tz) for label, hit in lines)])
