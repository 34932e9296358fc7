"""What recall hands back: result objects and their text forms (G13-G17, G23, G25, H1, H6,
H9, H10, H19).

A :class:`Hit` is one selected record, a :class:`Recall` the explicit result with its evidence
notes; the automatic block and the labelled background render as Markdown sections with fixed
headings.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, tzinfo
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from memory_es.recall.rank.score import Source

Currentness = Literal["current", "superseded", "ended"]
Evidence = Literal["conflicting", "insufficient"]

AUTO_HEADING = "## Memory (possibly relevant — may be unrelated; verify before relying)"  # H1
BACKGROUND_HEADING = "## Background (your labelled preferences and lessons; may be unrelated)"
CONFLICTING_NOTE = "Conflicting values:"  # G16
INSUFFICIENT_NOTE = "Insufficient evidence:"  # G17


@dataclass(frozen=True, slots=True)
class Hit:
    """One returned result (G25); optional fields are ``None`` when the backend lacks them.

    Attributes:
        id: the memory id, 64 hex characters (what ``show``, ``forget``, ``set_status``,
            ``mark``, ``access_stats`` and ``supersedes=`` take).
        score: the final score, 0 to 1 (higher is better).
        text: the stored line.
        type: ``observation``, ``note``, ``event``, ``task``... or None.
        status: ``open``, ``done``, ``scheduled``, ``migrated``, ``dropped``,
            ``superseded``, ``invalidated`` or None.
        created_at: when it was recorded (UTC).
        valid_from, valid_to, due_at: its stated validity and due date, or None.
        currentness: ``current``, ``superseded`` or ``ended``, as judged for this recall.
        source: the conversation and intake it came from (for the host only; never in text).
    """

    id: str
    """The memory id (64 hex): what show, forget, set_status and mark take."""
    score: float
    """The final score, 0 to 1."""
    text: str
    """The stored line."""
    type: str | None
    status: str | None
    created_at: datetime | None
    valid_from: date | datetime | None
    valid_to: date | datetime | None
    due_at: date | datetime | None
    currentness: Currentness
    ended_on: date | datetime | None = None  # the past end behind ``ended`` (G14)
    attribution: str | None = None
    provenance_unknown: bool = False  # K7: labelled ``source conversation unknown``
    source: Source | None = None  # for the host only: never in the text form (H23)
    insight: bool = False  # K14, H6: the insight marker, shown open or closed
    explanation: dict[str, Any] | None = None  # the score's parts, when asked (explain=True)

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
        if self.insight:
            item["insight"] = True
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
    ``[<status>]`` for a status other than ``open`` (G23), ``[insight]`` (K14),
    ``[valid <from>..<to>]`` (G13),
    ``[superseded]`` / ``[ended <date>]`` (G14; current stays unmarked, and a ``[superseded]``
    status tag is not repeated), then the text.
    """
    parts = [f"{hit.score:.3f}"]
    if hit.created_at is not None:
        parts.append(f"[recorded {format_instant(hit.created_at)}]")
    if hit.status is not None and hit.status != "open":
        parts.append(f"[{hit.status}]")
    if hit.insight:
        parts.append("[insight]")
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
    if hit.provenance_unknown:  # K7: independent of who stated it
        labels.append("source conversation unknown")
    if hit.insight:  # H6: kept when the line is closed too
        labels.append("insight")
    return f"- – {hit.text} ({'; '.join(labels)})"


def render_auto_block(hits: Sequence[Hit], tz: tzinfo = UTC) -> str:
    """The block text (H1, H10): heading, blank line, one line per hit; empty for no hits."""
    if not hits:
        return ""
    return "\n".join([AUTO_HEADING, "", *(format_auto_line(h, tz) for h in hits)])


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
