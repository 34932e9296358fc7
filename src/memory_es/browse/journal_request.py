"""What a MemoryJournal request may be (I2-I5, DESIGN 9.12): an inclusive civil date range of
at most 31 days in an explicit IANA zone (never a default, never the host's zone), a page
limit from 1 to 25 and an operator's optional filter, each checked with a one-line typed
error; and the half-open UTC interval between the range's local midnights (DST-correct) it
resolves to.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from functools import lru_cache
from typing import Any
from zoneinfo import ZoneInfo, available_timezones

from memory_es.browse.journal_page import Range
from memory_es.errors import MemoryEsError
from memory_es.vocabulary import JOURNAL_CURRENTNESS as FILTER_CURRENTNESS
from memory_es.vocabulary import JOURNAL_STATUSES as FILTER_STATUSES

MAX_RANGE_DAYS = 31  # inclusive civil days (DESIGN 9.12)
DEFAULT_LIMIT = 10
MAX_LIMIT = 25
RANGE_FIELDS = ("fromDate", "throughDate", "timeZone")
MIN_DATE = date(1, 1, 2)
MAX_DATE = date(9999, 12, 30)
CIVIL_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
# Names the zoneinfo search path resolves that are not a chosen IANA zone: they would
# silently guess the host zone (I4).
_HOST_ZONE_NAMES = frozenset({"localtime", "posixrules"})


def journal_error(code: str, message: str) -> MemoryEsError:
    """A MemoryJournal refusal: one line, its stable ``code``."""
    return MemoryEsError(message, code=code)


@lru_cache(maxsize=1)
def _iana_zones() -> frozenset[str]:
    return frozenset(available_timezones()) - _HOST_ZONE_NAMES


def resolve_zone(time_zone: object) -> ZoneInfo:
    """The explicit IANA zone; never a default, never the host zone (I4)."""
    if not isinstance(time_zone, str) or time_zone not in _iana_zones():
        raise journal_error("journal_invalid_zone", f"unknown IANA time zone {time_zone!r}")
    try:
        return ZoneInfo(time_zone)
    except (KeyError, ValueError, OSError) as e:
        raise journal_error("journal_invalid_zone", f"unknown IANA time zone {time_zone!r}") from e


def parse_civil_date(value: object, name: str) -> date:
    """A real calendar date written exactly YYYY-MM-DD."""
    if not isinstance(value, str) or not CIVIL_DATE.fullmatch(value):
        raise journal_error("journal_invalid_date",
                            f"{name} must be a YYYY-MM-DD date, got {value!r}")
    try:
        day = date.fromisoformat(value)
    except ValueError as e:
        raise journal_error("journal_invalid_date", f"{name} {value!r} is not a real date") from e
    if not MIN_DATE <= day <= MAX_DATE:  # the UTC interval of any zone stays representable
        raise journal_error("journal_invalid_date",
                     f"{name} {value!r} is out of range: dates from {MIN_DATE} to {MAX_DATE}")
    return day


def check_limit(limit: object) -> int:
    if limit is None:
        return DEFAULT_LIMIT
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise journal_error("journal_invalid_limit",
                     f"limit must be an integer from 1 to {MAX_LIMIT}, got {limit!r}")
    return limit


def local_midnight_utc(day: date, zone: ZoneInfo) -> datetime:
    """The UTC instant at which ``day`` starts in ``zone``.

    A midnight that a DST jump skips resolves (fold=0) to the transition instant, and an
    ambiguous midnight to its first occurrence: either way the day's first instant.
    """
    return datetime.combine(day, time(0), tzinfo=zone).astimezone(UTC)


def resolve_range(from_date: object, through_date: object, time_zone: object) -> Range:
    """Validate the three range fields (I2-I4) and resolve the UTC interval."""
    for name, value in zip(RANGE_FIELDS, (from_date, through_date, time_zone), strict=True):
        if value is None:
            raise journal_error("journal_missing_range",
                         f"{name} is required: fromDate, throughDate and timeZone are all "
                         "required (no default zone)")
    zone = resolve_zone(time_zone)
    start = parse_civil_date(from_date, "fromDate")
    end = parse_civil_date(through_date, "throughDate")
    if start > end:
        raise journal_error("journal_invalid_range",
                     f"fromDate {start} is after throughDate {end}")
    days = (end - start).days + 1
    if days > MAX_RANGE_DAYS:
        raise journal_error("journal_range_too_long",
                     f"range covers {days} civil days; at most {MAX_RANGE_DAYS} are allowed")
    assert isinstance(time_zone, str)
    return Range(start, end, time_zone, zone, local_midnight_utc(start, zone),
                 local_midnight_utc(end + timedelta(days=1), zone))


_FILTER_WORD = re.compile(r"[a-z][a-z0-9_-]{0,31}")
_SESSION = re.compile(r"[^\x00-\x1f\x7f]{1,256}")


@dataclass(frozen=True, slots=True)
class JournalFilter:
    """An operator's narrowing of a journal range, applied before the snapshot is cut, so its
    1,000 entries and its pages hold only matching memories: a ``status``, a memory ``type``
    (kind), the ``session`` a line came from (matched, never returned: I14) and a
    ``currentness`` at snapshot time. The agent's tool never takes one (its request stays I2's
    three fields and ``limit``); a cursor carries it under its MAC."""

    status: str | None = None
    type: str | None = None
    session: str | None = None
    currentness: str | None = None

    def __post_init__(self) -> None:
        _choose("status", self.status, FILTER_STATUSES)
        _choose("currentness", self.currentness, FILTER_CURRENTNESS)
        if self.type is not None and not (isinstance(self.type, str)
                                          and _FILTER_WORD.fullmatch(self.type)):
            raise journal_error("journal_invalid_filter", "type must be a memory kind such as "
                                f"observation, note, task or event, got {self.type!r}")
        if self.session is not None and not (isinstance(self.session, str)
                                             and _SESSION.fullmatch(self.session)
                                             and _encodes(self.session)):
            raise journal_error("journal_invalid_filter", "session must be a session id (1 "
                                "to 256 characters, no control characters), got "
                                f"{str(self.session)[:40]!r}")

    def __bool__(self) -> bool:
        return any(v is not None for v in (self.status, self.type, self.session,
                                           self.currentness))

    def to_json(self) -> dict[str, str]:
        """The set fields, as a cursor and a page's echo carry them."""
        return {k: v for k, v in (("status", self.status), ("type", self.type),
                                  ("session", self.session),
                                  ("currentness", self.currentness)) if v is not None}

    @classmethod
    def from_json(cls, data: Any) -> JournalFilter:
        if not isinstance(data, dict) or not set(data) <= {"status", "type", "session",
                                                           "currentness"}:
            raise journal_error("journal_invalid_filter", "a filter names only status, type, "
                                "session and currentness")
        return cls(**data)


def _encodes(text: str) -> bool:
    """UTF-8 can carry it (no lone surrogate): SQLite is given it as such."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _choose(name: str, value: object, allowed: tuple[str, ...]) -> None:
    if value is not None and value not in allowed:
        raise journal_error("journal_invalid_filter",
                            f"{name} must be one of {', '.join(allowed)}, got {value!r}")
