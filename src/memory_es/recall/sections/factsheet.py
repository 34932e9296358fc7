"""The explicit fact sheet (G28, M23, G16): the structured facts of the person a deliberate
recall names, current and history, from the same rows as the automatic person card (H20).

A row is one stored line whose structured fact is about the person and that the user stated
or a document gave (the card's attribution rule; terminal lines are left out, G22). Its
currentness combines the label's own validity (the line's ``valid_from`` / ``valid_to``) with
its source note's currentness (superseded, or a past end: an event's ``due_at``, a note's
only under ``memory.recall.intentExpiry``, G14, M25): a superseded source is
``superseded``, a passed end ``ended``, a validity start still ahead ``ended`` too (not yet
current). Rows that are not current stay on the sheet as history (M23); judging an end is a
read, so it never changes a status. Two or more distinct current values for one key make
the sheet ``conflicting`` (G16: the result's evidence note).

Keys drop the ``other:`` namespace and read as words; values that arrive as JSON (a quoted
string, a list, an object) read as text (G28), on the sheet and on the card alike.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from datetime import date, datetime, tzinfo
from typing import Any, Final

import apsw

from memory_es.indexread import optional_rows
from memory_es.recall.rank.render import Currentness, format_instant
from memory_es.recall.rank.score import Candidate
from memory_es.recall.rank.select import currentness, ended_on, host_zone
from memory_es.text import fold
from memory_es.validity import parse_validity
from memory_es.vocabulary import TERMINAL_SQL

OTHER_NAMESPACE: Final = "other:"
SHEET_MAX_ROWS: Final = 24  # our bound: current rows first
ATTRIBUTION: Final = {"user": "you said", "document": "from a document"}
BIRTH_KEYS: Final = frozenset({"birth_date", "birthday", "date_of_birth", "born"})
_ISO_DATE: Final = re.compile(r"(\d{4})-(\d{2})-(\d{2})")


def bare_key(key: str) -> str:
    """The key without the ``other:`` namespace (G28): ``other:birth_date`` -> ``birth_date``."""
    return key[len(OTHER_NAMESPACE):] if key.startswith(OTHER_NAMESPACE) else key


def key_text(key: str) -> str:
    """``other:home_town`` -> ``home town`` (G28)."""
    return bare_key(key).replace("_", " ").strip()


def value_text(value: str) -> str:
    """A fact value as text, never JSON (G28): a JSON string is its text, a list its items
    joined by ", ", an object its ``key: value`` pairs joined by "; ". Anything that does not
    start like JSON text (a bare number or date) is kept as written."""
    stripped = value.strip()
    if not stripped or stripped[0] not in "\"[{":
        return stripped
    try:
        decoded = json.loads(stripped)
    except ValueError:
        return stripped
    return _plain(decoded)


def _plain(value: Any) -> str:
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, list):
        return ", ".join(t for t in (_plain(v) for v in value) if t)
    if isinstance(value, dict):
        return "; ".join(f"{key_text(str(k))}: {_plain(v)}" for k, v in value.items())
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def age_on(value: str, today: date) -> int | None:
    """The age for an ISO birth date value, or None."""
    born = _ISO_DATE.fullmatch(value.strip())
    if born is None:
        return None
    try:
        birth = date(int(born[1]), int(born[2]), int(born[3]))
    except ValueError:
        return None
    return today.year - birth.year - ((today.month, today.day) < (birth.month, birth.day))


@dataclass(frozen=True, slots=True)
class FactRow:
    """One fact of the sheet: display key and value, whose words, when, and its currentness."""

    memory_id: str
    key: str
    value: str
    attribution: str
    recorded_at: datetime
    currentness: Currentness
    ended_on: date | datetime | None = None
    age: int | None = None
    conflicting: bool = False  # another current row gives this key a different value

    def line(self, tz: tzinfo) -> str:
        notes = [f"{self.attribution}, recorded {self.recorded_at.astimezone(tz).date()}"]
        if self.age is not None and self.currentness == "current":
            notes.insert(0, f"age {self.age}")
        if self.currentness == "superseded":
            notes.insert(0, "history: superseded")
        elif self.currentness == "ended":
            end = self.ended_on
            shown = (end.astimezone(tz).date() if isinstance(end, datetime) else end)
            notes.insert(0, "history: ended" + (f" {shown}" if shown is not None else ""))
        elif self.conflicting:
            notes.insert(0, "conflicting")
        return f"- {self.key}: {self.value} ({'; '.join(notes)})"

    def to_json(self) -> dict[str, Any]:
        item: dict[str, Any] = {"id": self.memory_id, "key": self.key, "value": self.value,
                                "attribution": self.attribution,
                                "createdAt": format_instant(self.recorded_at),
                                "currentness": self.currentness,
                                "history": self.currentness != "current"}
        if self.ended_on is not None:
            item["endedOn"] = (format_instant(self.ended_on)
                               if isinstance(self.ended_on, datetime)
                               else self.ended_on.isoformat())
        if self.age is not None:
            item["age"] = self.age
        if self.conflicting:
            item["conflicting"] = True
        return item


@dataclass(frozen=True, slots=True)
class FactSheet:
    """One person's facts: current rows first (by key, recording order), then history."""

    entity_id: str
    name: str
    rows: tuple[FactRow, ...]

    @property
    def conflicting(self) -> bool:
        return any(r.conflicting for r in self.rows)

    def text(self, tz: tzinfo) -> str:
        return "\n".join([f"Fact sheet: {self.name}", *(r.line(tz) for r in self.rows)])

    def to_json(self) -> dict[str, Any]:
        return {"entity": self.entity_id, "name": self.name, "conflicting": self.conflicting,
                "rows": [r.to_json() for r in self.rows]}


def fact_sheet(conn: apsw.Connection, entity_id: str, name: str, *, now: datetime,
               tz: tzinfo | None = None, note_due_ends: bool = False) -> FactSheet:
    """The sheet of one person (module docstring); ``now`` is the caller's instant.
    ``note_due_ends``: ``memory.recall.intentExpiry`` (a note's ``due_at`` ends it, M25)."""
    zone = host_zone(now, tz)
    rows: list[FactRow] = []
    for memory_id, key, value, source, recorded, status, superseded_by, valid_from, \
            valid_to, due_at, kind in optional_rows(
                conn, "SELECT m.id, mm.fact_key, mm.fact_value, m.source, m.recorded_at, "
                      "m.status, mm.superseded_by, mt.valid_from, mt.valid_to, mt.due_at, "
                      "m.kind "
                      "FROM memory_meta mm JOIN memories m ON m.id = mm.id "
                      "LEFT JOIN memory_terms mt ON mt.id = mm.id "
                      "WHERE mm.fact_subject = ? AND mm.fact_key IS NOT NULL "
                      f"AND m.status NOT IN {TERMINAL_SQL} "
                      "AND m.source IN ('user', 'document') ORDER BY m.rowid", (entity_id,)):
        start = parse_validity(valid_from)
        candidate = Candidate(id=memory_id, text="", type=kind, status=status,
                              superseded=superseded_by is not None,
                              valid_to=parse_validity(valid_to), due_at=parse_validity(due_at))
        state = currentness(candidate, now, zone, note_due_ends=note_due_ends)
        ended: date | datetime | None = None
        if state == "ended":
            ended = ended_on(candidate, now, zone, note_due_ends=note_due_ends)
        elif state == "current" and start is not None and _ahead(start, now, zone):
            state = "ended"  # not yet current: history until it starts (label validity)
        shown = value_text(value or "")
        rows.append(FactRow(
            memory_id=memory_id, key=key_text(key), value=shown,
            attribution=ATTRIBUTION[source],
            recorded_at=datetime.fromisoformat(recorded.replace("Z", "+00:00")),
            currentness=state, ended_on=ended,
            age=(age_on(shown, now.astimezone(zone).date())
                 if bare_key(key) in BIRTH_KEYS else None)))
    values: dict[str, set[str]] = {}
    for r in rows:
        if r.currentness == "current":
            values.setdefault(fold(r.key), set()).add(fold(r.value))
    clashing = {k for k, v in values.items() if len(v) > 1}
    marked = [replace(r, conflicting=True)
              if r.currentness == "current" and fold(r.key) in clashing else r for r in rows]
    current = [r for r in marked if r.currentness == "current"]
    history = [r for r in marked if r.currentness != "current"]
    current.sort(key=lambda r: fold(r.key))  # stable: recording order within a key
    return FactSheet(entity_id=entity_id, name=name,
                     rows=tuple([*current, *history][:SHEET_MAX_ROWS]))


def _ahead(start: date | datetime, now: datetime, tz: tzinfo) -> bool:
    if isinstance(start, datetime):
        return (start if start.tzinfo is not None else start.replace(tzinfo=tz)) > now
    return start > now.astimezone(tz).date()
