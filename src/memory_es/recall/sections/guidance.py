"""Explicit recall's "Preferences & lessons" guidance section (G26, G27).

A labelled line is *eligible* when it ranks in the effective query's top 8 retrieved (live,
direct, before the tail cut) candidates and clears the automatic background floor
(``calibration.auto_floor``, the floor :func:`~memory_es.recall.rank.select.background_select`
holds the labelled background to). An explicit ``kind`` keeps only that label and lifts the
floor, never the top-8 window. Lines are ordered by scope precedence, then score; at most 6.

Scopes. The reference names ``user:<sender>``, conversation and ``agent`` scopes; this engine
stores two (``memory_meta.scope``, decided by ``capture.rules.turn_facts``): ``peer`` (a line a
non-owner human stated in their own turn: the reference's ``user:<sender>`` scope) and
``agent`` (the owner's turns and non-human triggers). So precedence is ``peer`` / ``user*``
(0), ``conversation*`` (1, no line has it yet), ``agent`` (2), anything else last (3).

Which labels count: a ``preference`` label in any scope (capture keeps it only on lines the
model sources to the user, E20), and a *verified* lesson (stated by the user or a document;
an assistant's lesson is not verified, as in the labelled background, H19).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import Any, Final, Literal

import apsw

from memory_es.errors import InvalidArgumentError
from memory_es.indexread import optional_rows
from memory_es.recall.rank.render import Currentness, format_instant
from memory_es.recall.rank.score import EPSILON, Calibration, Scored
from memory_es.recall.rank.select import currentness, host_zone, ranking_order
from memory_es.vocabulary import TERMINAL_STATUSES

GuidanceKind = Literal["preference", "lesson"]
GUIDANCE_KINDS: Final = ("preference", "lesson")
GUIDANCE_WINDOW: Final = 8  # G26: the effective query's top 8 retrieved candidates
GUIDANCE_MAX_LINES: Final = 6  # G26
GUIDANCE_HEADING: Final = "Preferences & lessons:"
VERIFIED_LESSON_SOURCES: Final = frozenset({"user", "document"})


def check_kind(kind: object) -> GuidanceKind | None:
    """``kind`` is None, ``"preference"`` or ``"lesson"``; anything else is a caller's
    mistake (``recall_invalid_kind``, one line)."""
    if kind is None:
        return None
    if kind == "preference":
        return "preference"
    if kind == "lesson":
        return "lesson"
    raise InvalidArgumentError(f"recall_invalid_kind: kind must be \"preference\" or "
                               f"\"lesson\", got {kind!r}", code="recall_invalid_kind")


def scope_rank(scope: str) -> int:
    """G26 precedence: user (this engine's ``peer``), then conversation, then agent."""
    if scope == "peer" or scope == "user" or scope.startswith("user:"):
        return 0
    if scope == "conversation" or scope.startswith("conversation:"):
        return 1
    if scope == "agent":
        return 2
    return 3


@dataclass(frozen=True, slots=True)
class GuidanceLine:
    """One shown preference or lesson line."""

    id: str
    label: GuidanceKind
    scope: str
    score: float
    text: str
    created_at: datetime | None
    currentness: Currentness

    def line(self, tz: tzinfo) -> str:
        recorded = ("" if self.created_at is None
                    else f"recorded {self.created_at.astimezone(tz).date().isoformat()}; ")
        return f"- {self.label}: {self.text} ({recorded}{self.currentness})"

    def to_json(self) -> dict[str, Any]:
        item: dict[str, Any] = {"id": self.id, "kind": self.label, "scope": self.scope,
                                "score": self.score, "text": self.text,
                                "currentness": self.currentness}
        if self.created_at is not None:
            item["createdAt"] = format_instant(self.created_at)
        return item


def labelled_lines(conn: apsw.Connection, ids: Sequence[str]
                   ) -> dict[str, tuple[GuidanceKind, str]]:
    """id -> (label, scope) for the lines among ``ids`` that may be guidance (module doc)."""
    if not ids:
        return {}
    out: dict[str, tuple[GuidanceKind, str]] = {}
    for memory_id, labels, scope, source in optional_rows(
            conn, "SELECT m.id, mm.labels, mm.scope, m.source FROM memory_meta mm JOIN "
                  f"memories m ON m.id = mm.id WHERE mm.id IN ({','.join('?' * len(ids))})",
            list(ids)):
        kinds = labels.split(",")
        if "preference" in kinds:
            out[memory_id] = ("preference", scope)
        elif "lesson" in kinds and source in VERIFIED_LESSON_SOURCES:
            out[memory_id] = ("lesson", scope)
    return out


def guidance_select(scored: Iterable[Scored], labelled: dict[str, tuple[GuidanceKind, str]],
                    calibration: Calibration, *, kind: GuidanceKind | None, now: datetime,
                    tz: tzinfo | None = None, note_due_ends: bool = False
                    ) -> tuple[GuidanceLine, ...]:
    """The guidance lines (G26, G27): of the top 8 live candidates by score, the labelled ones
    (``kind`` only, when given) that clear ``auto_floor`` (any score with an explicit
    ``kind``), ordered by scope precedence then score (then id), at most 6."""
    live = sorted((s for s in scored if s.candidate.status not in TERMINAL_STATUSES),
                  key=ranking_order)
    zone = host_zone(now, tz)
    chosen: list[GuidanceLine] = []
    for s in live[:GUIDANCE_WINDOW]:
        found = labelled.get(s.candidate.id)
        if found is None or (kind is not None and found[0] != kind):
            continue
        if kind is None and s.score < calibration.auto_floor - EPSILON:
            continue
        c = s.candidate
        chosen.append(GuidanceLine(id=c.id, label=found[0], scope=found[1], score=s.score,
                                   text=c.text, created_at=c.created_at,
                                   currentness=currentness(c, now, zone,
                                                           note_due_ends=note_due_ends)))
    chosen.sort(key=lambda g: (scope_rank(g.scope), -g.score, g.id))
    return tuple(chosen[:GUIDANCE_MAX_LINES])


def render_guidance(lines: Sequence[GuidanceLine], tz: tzinfo) -> str:
    """The text section; "" (omitted) without lines (G27)."""
    if not lines:
        return ""
    return "\n".join([GUIDANCE_HEADING, *(g.line(tz) for g in lines)])
