"""MemoryJournal's typed answers (I3, I10, I11, I13, I15): the range echo, entries, coverage
and page, each with ``to_json()`` giving the camelCase tool shape.

``memory_es.browse.journal`` builds them; the tool contract is ``JournalPage.to_json()``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Literal
from zoneinfo import ZoneInfo

import msgspec

from memory_es.text import iso_ms

StoppedBy = Literal["range_end", "entry_cap", "byte_cap"]


@dataclass(frozen=True)
class Range:
    """A validated request range and its half-open UTC interval."""

    from_date: date
    through_date: date
    zone_name: str
    zone: ZoneInfo
    from_utc: datetime
    to_utc: datetime

    @property
    def days(self) -> int:
        """Civil days in the range, both ends included."""
        return (self.through_date - self.from_date).days + 1

    def to_json(self) -> dict[str, Any]:
        """The range echo (I3): civil dates, zone, and the UTC interval ``[fromUtc, toUtc)``."""
        return {
            "fromDate": self.from_date.isoformat(),
            "throughDate": self.through_date.isoformat(),
            "timeZone": self.zone_name,
            "days": self.days,
            "fromUtc": iso_ms(self.from_utc),
            "toUtc": iso_ms(self.to_utc),
            "interval": "half-open [fromUtc, toUtc)",
        }

    def echo(self) -> dict[str, Any]:
        """The range echo: the same object as :meth:`to_json`."""
        return self.to_json()


class JournalEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One memory as the journal shows it: safe id, instant, local day and time, kind,
    status at snapshot time, canonical daily source (I13) and (capped, safe) text (I15)."""

    id: str
    recorded_at: str
    day: str
    time: str
    type: str
    status: str
    source: str
    text: str
    truncated: bool
    currentness: str = "current"  # G14 at snapshot time, in the request's zone (I13)
    valid_from: str | None = None  # the stored validity, as written (G13)
    valid_to: str | None = None
    due_at: str | None = None

    def to_json(self) -> dict[str, Any]:
        item: dict[str, Any] = {
            "id": self.id,
            "recordedAt": self.recorded_at,
            "day": self.day,
            "time": self.time,
            "type": self.type,
            "status": self.status,
            "currentness": self.currentness,
            "source": self.source,
            "text": self.text,
            "truncated": self.truncated,
        }
        for key, value in (("validFrom", self.valid_from), ("validTo", self.valid_to),
                           ("dueAt", self.due_at)):
            if value is not None:
                item[key] = value
        return item


class JournalCoverage(msgspec.Struct, frozen=True, kw_only=True):
    """Whether the range scan completed and why it stopped (I10), with the snapshot's size."""

    complete: bool
    stopped_by: StoppedBy
    entries: int
    bytes: int

    def to_json(self) -> dict[str, Any]:
        return {"complete": self.complete, "stoppedBy": self.stopped_by,
                "entries": self.entries, "bytes": self.bytes}


class JournalPage(msgspec.Struct, frozen=True, kw_only=True):
    """One page of a frozen snapshot: ``cursor`` continues it (None on the last page)."""

    range: Range
    limit: int
    offset: int
    entries: tuple[JournalEntry, ...]
    no_data: bool
    coverage: JournalCoverage
    cursor: str | None
    filters: dict[str, str] | None = None  # an operator's filter (JournalFilter), echoed

    def to_json(self) -> dict[str, Any]:
        page = {
            "range": self.range.to_json(),
            "limit": self.limit,
            "offset": self.offset,
            "entries": [e.to_json() for e in self.entries],
            "noData": self.no_data,
            "coverage": self.coverage.to_json(),
            "cursor": self.cursor,
            "untrusted": True,  # I15: returned content is historical evidence, not instruction
        }
        if self.filters:
            page["filter"] = self.filters
        return page
