"""Selection: which scored candidates recall returns (G11, G14-G22, G24, G33) and which lines
the automatic block and the labelled background carry (H2-H11, H14, H15, H19).

Pure, no I/O; ``now`` is the caller's instant. All threshold comparisons are inclusive and
tolerate float noise of ``EPSILON`` (1e-9), so "within 0.04" accepts a hit exactly 0.04 below
the best even when binary floating point says 0.04000000000000004.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence
from datetime import UTC, date, datetime, timedelta, tzinfo
from typing import Literal

from memory_es.recall.rank.anchors import normalize
from memory_es.recall.rank.render import (
    CONFLICTING_NOTE,
    INSUFFICIENT_NOTE,
    Currentness,
    Evidence,
    Hit,
    Recall,
    format_auto_line,
    format_background_line,
)
from memory_es.recall.rank.score import (
    EPSILON,
    NOMIC_V15,
    Calibration,
    Candidate,
    Scored,
    Scoring,
)
from memory_es.vocabulary import TERMINAL_STATUSES

SelectMode = Literal["explicit", "original-query", "degraded"]

CONFLICT_WINDOW = 8  # G16: conflicts are checked on the top 8 candidates before the tail cut
AUTO_MAX_LINES = 3  # H5
AUTO_LINE_TEXT_CAP_BYTES = 360  # H11: a line whose text is longer is left out, never cut
AUTO_BLOCK_BUDGET_BYTES = 1_500  # H11: 1.5 KB, KB = 1,000 bytes of UTF-8 (DESIGN 9.6)
OWNER_TEXT_MIN_EXCLUSIVE = 16  # H14: at most 16 code points suppresses the block
INSUFFICIENT_MAX_HITS = 3  # below the floor: a few lines with real evidence, never padding
BACKGROUND_TOP = 5  # "ranks among the top retrieved hits": the top five live hits (our bound)
BACKGROUND_LEAD = 0.05  # DESIGN 9.4: "clearly leads" = at least 0.05 above the pool median
BACKGROUND_MAX_LINES = 3  # our bound, like the block (H5)
BACKGROUND_BUDGET_BYTES = 900  # block 1,500 + background 900 keeps the context under ~2.5 KB


# --------------------------------------------------------------------------------------------
# Currentness (G14, G15, H7)


def host_zone(now: datetime, tz: tzinfo | None) -> tzinfo:
    """``tz``, or the host process's zone (G15: a daemon running in UTC uses UTC)."""
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    if tz is not None:
        return tz
    local = now.astimezone().tzinfo  # the host process timezone (G15)
    assert local is not None
    return local


def has_ended(end: date | datetime, now: datetime, tz: tzinfo) -> bool:
    if isinstance(end, datetime):
        instant = end if end.tzinfo is not None else end.replace(tzinfo=tz)
        return instant < now  # an instant closes when it passes (G15)
    return end < now.astimezone(tz).date()  # date-only: closes after the local day (G15)


def structured_ends(candidate: Candidate, *, note_due_ends: bool = False
                    ) -> tuple[date | datetime | None, ...]:
    """The ends currentness reads (G14, M25): ``valid_to``, and ``due_at`` for an event; with
    ``note_due_ends`` (``memory.recall.intentExpiry``) a note's ``due_at`` too, as an
    inclusive validity end. A task's ``due_at`` is a deadline, never an end."""
    due_ends = candidate.type == "event" or (note_due_ends and candidate.type == "note")
    return (candidate.valid_to, candidate.due_at) if due_ends else (candidate.valid_to,)


def ended_on(
    candidate: Candidate, now: datetime, tz: tzinfo | None = None, *,
    note_due_ends: bool = False,
) -> date | datetime | None:
    """The earliest past structured end (:func:`structured_ends`), or None (G14, M25)."""
    zone = host_zone(now, tz)
    past = [e for e in structured_ends(candidate, note_due_ends=note_due_ends)
            if e is not None and has_ended(e, now, zone)]
    if not past:
        return None
    return min(past, key=lambda e: _sort_instant(e, zone))


def _sort_instant(value: date | datetime, tz: tzinfo) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=tz)
    return datetime(value.year, value.month, value.day, tzinfo=tz) + timedelta(days=1)


def currentness(candidate: Candidate, now: datetime, tz: tzinfo | None = None, *,
                note_due_ends: bool = False) -> Currentness:
    """G14: superseded (flag, or status superseded/invalidated) > ended (past end) > current.
    A passed end never changes a status: a closed line keeps its prefix (M23, M25)."""
    if candidate.superseded or candidate.status in ("superseded", "invalidated"):
        return "superseded"
    if ended_on(candidate, now, tz, note_due_ends=note_due_ends) is not None:
        return "ended"
    return "current"


def _hit(s: Scored, now: datetime, tz: tzinfo | None, note_due_ends: bool = False) -> Hit:
    c = s.candidate
    cur = currentness(c, now, tz, note_due_ends=note_due_ends)
    return Hit(id=c.id, score=s.score, text=c.text, type=c.type, status=c.status,
               created_at=c.created_at, valid_from=c.valid_from, valid_to=c.valid_to,
               due_at=c.due_at, currentness=cur,
               ended_on=(ended_on(c, now, tz, note_due_ends=note_due_ends)
                         if cur == "ended" else None),
               attribution=c.attribution, provenance_unknown=c.provenance_unknown,
               source=c.source, insight=c.insight)


# --------------------------------------------------------------------------------------------
# Explicit selection (G11, G16, G17, G19, G20, G22, G24)


def _live_ranked(scored: Iterable[Scored]) -> list[Scored]:
    live = [s for s in scored if s.candidate.status not in TERMINAL_STATUSES]
    return sorted(live, key=ranking_order)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def ranking_order(s: Scored) -> tuple[float, tuple[int, int], str]:
    """Best score first; an exact tie goes to the line recorded first (the journal's order,
    not an id: ids carry no meaning; a line with no instant before any), then the id. The
    instant is compared as whole microseconds since the epoch: exact, and cheaper than the
    text of it (the sort runs on every recall and thousands of times in a calibration fit)."""
    created = s.candidate.created_at
    if created is None:
        return (-s.score, (0, 0), s.candidate.id)
    if created.tzinfo is None:  # read as the host's local time, as astimezone does
        created = created.astimezone(UTC)
    return (-s.score, (1, (created - _EPOCH) // _MICROSECOND), s.candidate.id)


def auto_best(scored: Iterable[Scored]) -> float | None:
    """The score the automatic block's floor is compared with: the best live hit's (H3)."""
    return max((s.score for s in scored if s.candidate.status not in TERMINAL_STATUSES),
               default=None)


def _fact_norm(value: str) -> str:
    return " ".join(normalize(value).split())


def _has_conflict(ranked: Sequence[Scored], now: datetime, tz: tzinfo | None,
                  note_due_ends: bool = False) -> bool:
    """G16/G33: among the top 8 live candidates (before the cut), two *current* structured facts
    with the same subject, property and scope give different values."""
    values: dict[tuple[str, str, str], set[str]] = {}
    for s in ranked[:CONFLICT_WINDOW]:
        f = s.candidate.fact
        if f is None or currentness(s.candidate, now, tz,
                                    note_due_ends=note_due_ends) != "current":
            continue
        key = (_fact_norm(f.subject), _fact_norm(f.property), _fact_norm(f.scope))
        values.setdefault(key, set()).add(_fact_norm(f.value))
    return any(len(v) > 1 for v in values.values())


NEAR_FLOOR_SHARE = 0.5  # below the floor, a line on its cosine alone needs half the floor


def carries_evidence(s: Scored, floor: float) -> bool:
    """Below the floor, what is worth showing: a line that holds a query term or an anchor, or
    whose score is at least half the floor. A cosine alone under that is what an unrelated
    question gets from any line (USE: "quantum zebra orchestra" meets a note about a dog at
    0.097 against a floor of 0.219)."""
    return s.evidence > EPSILON or s.anchor > EPSILON \
        or s.score >= NEAR_FLOOR_SHARE * floor - EPSILON


def successors_first(ranked: Sequence[Scored]) -> list[Scored]:
    """The ranking, except that a superseded line whose replacement is also in it moves to
    just after that replacement (following the chain), so the current line is read first and
    the old one stays, labelled superseded."""
    present = {s.candidate.id for s in ranked}
    later: dict[str, list[Scored]] = {}
    for s in ranked:
        successor = s.candidate.superseded_by
        if successor is not None and successor in present and successor != s.candidate.id:
            later.setdefault(successor, []).append(s)
    if not later:
        return list(ranked)
    moved = {s.candidate.id for group in later.values() for s in group}
    out: list[Scored] = []
    placed: set[str] = set()

    def place(s: Scored) -> None:
        if s.candidate.id in placed:
            return
        placed.add(s.candidate.id)
        out.append(s)
        for old in later.get(s.candidate.id, ()):
            place(old)

    for s in ranked:
        if s.candidate.id not in moved:
            place(s)
    for s in ranked:  # a cycle of replacements has no head: keep its lines in rank order
        place(s)
    return out


def kept_lines(scored: Iterable[Scored], calibration: Calibration = NOMIC_V15, *,
               mode: SelectMode = "explicit", scoring: Scoring = "reference"
               ) -> tuple[list[Scored], list[Scored]]:
    """The live lines ranked, and those :func:`select` returns, in its order (its docstring
    says which): what a caller that needs only the order (a calibration fit) reads without
    building a hit per line."""
    ranked = _live_ranked(scored)
    if not ranked:
        return ranked, ranked
    best = ranked[0].score
    if mode == "explicit":
        floor_applies = best >= calibration.recall_floor - EPSILON
        kept = [ranked[0]] + [
            s for s in ranked[1:]
            if s.score >= best - calibration.recall_tail - EPSILON
            and (not floor_applies or s.score >= calibration.recall_floor - EPSILON)
        ]
        if not floor_applies and scoring == "hybrid":  # no padding with unrelated lines
            kept = [s for s in kept
                    if carries_evidence(s, calibration.recall_floor)][:INSUFFICIENT_MAX_HITS]
    else:
        kept = ranked
    if scoring == "hybrid":
        kept = successors_first(kept)
    return ranked, kept


def select(scored: Iterable[Scored], calibration: Calibration = NOMIC_V15, *, now: datetime,
           tz: tzinfo | None = None, mode: SelectMode = "explicit",
           fact_sheet_conflict: bool = False, note_due_ends: bool = False,
           scoring: Scoring = "reference") -> Recall:
    """Choose the explicit MemoryRecall hits.

    * Terminal ``dropped`` / ``invalidated`` records are excluded (G22).
    * Ranked by score descending, then id (stable) (G24: the backend's ranking is kept).
    * ``mode="explicit"``: tail cut (G11): the best hit is always kept; others must score within
      ``recall_tail`` of the best, and, when the best clears ``recall_floor``, at least the floor.
      Under hybrid ``scoring``, below the floor at most ``INSUFFICIENT_MAX_HITS`` lines are
      kept, each carrying real evidence (:func:`carries_evidence`): an unrelated question gets
      few lines or none, not even a best hit scored 0; and a superseded line returned with the
      line that replaced it follows that line (:func:`successors_first`). The reference's
      scoring keeps G11 and G24 exactly: the best hit always, the backend's order.
    * ``mode="original-query"``: the list stays uncut, the notes are added (G19).
    * ``mode="degraded"`` (lexical-only, Lite): uncut, no notes (G20).
    * ``evidence``: ``conflicting`` when ``fact_sheet_conflict`` or the top-8 check finds differing
      current values (G16); ``insufficient`` when the best hit is below ``recall_floor`` (G17). An
      empty pool has no evidence note.
    * ``note_due_ends``: ``memory.recall.intentExpiry`` (M25, :func:`structured_ends`).
    """
    ranked, kept = kept_lines(scored, calibration, mode=mode, scoring=scoring)
    if not ranked:  # a conflicting fact sheet is evidence even without a hit (G16)
        return (Recall(hits=(), evidence="conflicting", notes=(CONFLICTING_NOTE,))
                if fact_sheet_conflict and mode != "degraded" else Recall(hits=()))
    tz = host_zone(now, tz)  # once: the host's zone is read from the system clock's rules
    best = ranked[0].score
    hits = tuple(_hit(s, now, tz, note_due_ends) for s in kept)
    if mode == "degraded":
        return Recall(hits=hits)
    notes: list[str] = []
    if fact_sheet_conflict or _has_conflict(ranked, now, tz, note_due_ends):
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
# Automatic block (H1-H15)


def owner_text_gate(text: str) -> bool:
    """H14: True when the owner text may carry an automatic block, i.e. it has more than 16
    Unicode code points after NFC normalisation and trimming (at most 16 suppresses it)."""
    return len(unicodedata.normalize("NFC", text).strip()) > OWNER_TEXT_MIN_EXCLUSIVE


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
    5. Return the chosen lines oldest first (by ``created_at``, unknown first; lines of one
       instant current first (H7), then by id) (H8).

    The budget counts the rendered lines with their newlines, not the heading. With the default
    caps three lines cannot exceed it (3 x (360 + label overhead) < 1,500), so it is a guard.
    """
    if degraded:
        return ()
    ranked = _live_ranked(scored)
    if not ranked or ranked[0].score < calibration.auto_floor - EPSILON:
        return ()
    best = ranked[0].score
    zone = host_zone(now, tz)
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
                               h.currentness != "current", h.id))
    return tuple(chosen)


# --------------------------------------------------------------------------------------------
# Labelled background (H19, H12, DESIGN 9.4)


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
    zone = host_zone(now, tz)
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
