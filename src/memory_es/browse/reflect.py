"""``memory-es reflect`` (C13): the due-state report, read-only, no model.

For one civil day in the host's zone (G15) it lists, from one index connection:

- **due today** and **overdue**: open and scheduled lines whose ``due=`` falls on that day,
  or before it (a date-only due is that civil day; an instant is read in the zone);
- **scheduled** and **migrated**: the lines with those statuses, due or not;
- **validity ending soon** and **validity ended**: live lines whose ``valid_to`` (an inclusive
  civil end, or an instant) falls within the next ``soon`` days, or before the day.

Each section is in due (or validity) order, then recording order, then id. A day in the past
(``--as-of``) is read from the journal as it stood at the end of that day (the as-of fold), so
a line recorded later is not there.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import Any, Final

import apsw

from memory_es.bounds import describe
from memory_es.errors import InvalidArgumentError
from memory_es.indexread import optional_rows
from memory_es.validity import parse_validity
from memory_es.vocabulary import REFLECT_SOON_DAYS, REFLECT_SOON_MAX

SOON_DAYS: Final = REFLECT_SOON_DAYS
SOON_MAX: Final = REFLECT_SOON_MAX
SECTIONS: Final = ("due_today", "overdue", "scheduled", "migrated", "ending_soon", "ended")
TITLES: Final = {"due_today": "due today", "overdue": "overdue", "scheduled": "scheduled",
                 "migrated": "migrated", "ending_soon": "validity ends within {soon} days",
                 "ended": "validity ended"}
_OPEN: Final = ("open", "scheduled")  # what can be due
_LIVE: Final = ("open", "scheduled", "done", "migrated")
_DUE: Final = ("due_today", "overdue", "scheduled", "migrated")  # shown with "due", else "until"


@dataclass(frozen=True)
class DueLine:
    """One line of the report; ``when`` is its due or validity end as stored."""

    id: str
    text: str
    type: str
    status: str
    recorded: str
    when: str | None

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "text": self.text, "type": self.type, "status": self.status,
                "recordedAt": self.recorded, "when": self.when}


@dataclass(frozen=True)
class Reflection:
    """The report for ``day`` in ``zone``; ``sections`` in :data:`SECTIONS` order."""

    day: date
    zone: str
    soon: int
    as_of: bool
    sections: dict[str, tuple[DueLine, ...]]

    def to_json(self) -> dict[str, Any]:
        return {"day": self.day.isoformat(), "zone": self.zone, "soonDays": self.soon,
                "asOf": self.as_of,
                **{name: [line.to_json() for line in self.sections[name]]
                   for name in SECTIONS}}

    def render(self) -> str:
        """The text report: a heading per section with its count, one line per entry."""
        out = [f"reflect {self.day.isoformat()} ({self.zone})"
               + (", as the journal stood at the end of that day" if self.as_of else "")]
        for name in SECTIONS:
            lines = self.sections[name]
            out.append(f"{TITLES[name].format(soon=self.soon)} ({len(lines)})")
            out.extend(f"  {line.id[:12]}  [{line.status}] {line.text}"
                       + (f"  ({'due' if name in _DUE else 'until'} {line.when})"
                          if line.when else "") for line in lines)
        return "\n".join(out)



def civil_day(value: str, zone: tzinfo | None) -> date:
    """The civil day a stored due or validity value names in ``zone`` (None: the process's
    own zone, read at that instant, summer time included); a date is itself."""
    parsed = parse_validity(value)
    if isinstance(parsed, datetime):
        return parsed.astimezone(zone).date()
    assert parsed is not None
    return parsed


def reflect(conn: apsw.Connection | None, day: date, zone: tzinfo | None, zone_label: str,
            moment: datetime, *, soon: int = SOON_DAYS, as_of: bool = False) -> Reflection:
    """The report for ``day`` from an index (None: nothing was ever projected); ``moment``
    is the instant the report stands at (now, or the end of a day asked about), which an
    instant-valued validity end is compared with (G15: it ends when it passes)."""
    rows = [] if conn is None else optional_rows(conn, (
        "SELECT m.id, m.text, m.kind, m.status, m.recorded_at, t.due_at, t.valid_to "
        "FROM memories m JOIN memory_terms t ON t.rowid = m.rowid "
        f"WHERE m.status IN {_LIVE}"), ())
    rows += [] if conn is None else optional_rows(conn, (
        "SELECT m.id, m.text, m.kind, m.status, m.recorded_at, NULL, NULL FROM memories m "
        "WHERE m.status IN ('scheduled', 'migrated') AND NOT EXISTS "
        "(SELECT 1 FROM memory_terms t WHERE t.rowid = m.rowid)"), ())
    found: dict[str, list[tuple[date, DueLine]]] = {name: [] for name in SECTIONS}
    horizon = day + timedelta(days=soon)
    for memory_id, text, kind, status, recorded, due, valid_to in rows:
        line = DueLine(memory_id, text, kind, status, recorded, due)
        due_day = civil_day(due, zone) if due else None
        if status in _OPEN and due_day is not None and due_day <= day:
            found["due_today" if due_day == day else "overdue"].append((due_day, line))
        if status in ("scheduled", "migrated"):
            found[status].append((due_day or date.max, line))
        if valid_to:
            ends = DueLine(memory_id, text, kind, status, recorded, valid_to)
            parsed = parse_validity(valid_to)
            end_day = civil_day(valid_to, zone)
            ended = parsed <= moment if isinstance(parsed, datetime) else end_day < day
            if ended:
                found["ended"].append((end_day, ends))
            elif end_day <= horizon:
                found["ending_soon"].append((end_day, ends))
    sections = {name: tuple(line for _, line in sorted(
        entries, key=lambda e: (e[0], e[1].recorded, e[1].id))) for name, entries in found.items()}
    return Reflection(day, zone_label, soon, as_of, sections)


def check_day(value: object) -> date | None:
    """``--as-of``: an ISO civil date (None: today), or a one-line error."""
    if value is None or (isinstance(value, date) and not isinstance(value, datetime)):
        return value
    if isinstance(value, str):
        try:
            return date.fromisoformat(value)
        except ValueError:
            pass
    raise InvalidArgumentError(f"reflect: the day must be an ISO date YYYY-MM-DD, got "
                               f"{describe(value)}", code="invalid_argument")


def check_soon(value: object) -> int:
    """``--soon``: whole days from 0 to :data:`SOON_MAX`, or a one-line error."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= SOON_MAX:
        raise InvalidArgumentError(f"reflect: soon must be whole days from 0 to {SOON_MAX}, "
                                   f"got {describe(value)}", code="invalid_argument")
    return value


def zone_name(zone: tzinfo | None) -> str:
    """The IANA key of ``zone`` when it has one; the process's own zone as ``local (CET)``."""
    if zone is None:
        return f"local ({datetime.now().astimezone().tzname()})"
    return str(getattr(zone, "key", None) or datetime.now(zone).tzname())


def end_of(day: date, zone: tzinfo | None) -> datetime:
    """The last instant (UTC) of the civil ``day`` in ``zone`` (None: the process's own):
    the next day's first instant less a microsecond, so a day that ends in a summer-time
    change ends when it does."""
    midnight = datetime.combine(day + timedelta(days=1), time())
    start = midnight.astimezone() if zone is None else midnight.replace(tzinfo=zone)
    return start.astimezone(UTC) - timedelta(microseconds=1)
