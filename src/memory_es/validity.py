"""Validity values (G13-G15, K14): when a stated fact holds, as the journal keeps them.

A value is either an ISO date (``YYYY-MM-DD``: a civil day, inclusive, which closes only after
the host's local calendar day, G15) or an ISO instant *with* its offset
(``2026-12-03T18:00:00+01:00`` or ``...Z``: closes when the instant passes; the offset is kept
as written). A naive instant is refused rather than guessed: no time zone is ever invented.
The journal stores the value exactly as checked here, so replay never reads the clock or the
environment; the host's zone is applied only when a reader asks "has it ended?".
"""

from __future__ import annotations

import re
from datetime import date, datetime, tzinfo
from typing import Final
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from memory_es.errors import InvalidArgumentError

_DATE: Final = re.compile(r"\d{4}-\d{2}-\d{2}")
_INSTANT_MAX: Final = 40  # characters: the longest ISO instant with an offset we accept
Validity = date | datetime


def parse_validity(value: str | None) -> Validity | None:
    """A stored value back as a ``date`` or an offset-aware ``datetime`` (None stays None)."""
    if value is None:
        return None
    if _DATE.fullmatch(value):
        return date.fromisoformat(value)
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def check_validity(name: str, value: object) -> str | None:
    """``value`` as the journal stores it, or a one-line ``InvalidArgumentError`` naming
    ``name``: an ISO date, or an ISO instant with its offset. ``date``/aware ``datetime``
    objects are accepted and written in ISO form."""
    if value is None:
        return None
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise _invalid(name, value, "an instant needs its UTC offset")
        return value.isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if not isinstance(value, str) or len(value) > _INSTANT_MAX:
        raise _invalid(name, value)
    try:
        parsed = parse_validity(value)
    except ValueError:
        raise _invalid(name, value) from None
    if isinstance(parsed, datetime) and parsed.tzinfo is None:
        raise _invalid(name, value, "an instant needs its UTC offset")
    return value


def check_interval(valid_from: str | None, valid_to: str | None) -> None:
    """A validity interval that ends before it starts is refused (both ends compared as the
    earliest instant each could mean, so a date and an instant on one day never clash)."""
    start, end = parse_validity(valid_from), parse_validity(valid_to)
    if start is None or end is None:
        return
    if _day(start) > _day(end):
        raise InvalidArgumentError(f"valid_to {valid_to} is before valid_from {valid_from}",
                                   code="invalid_validity")


def _day(value: Validity) -> date:
    return value.date() if isinstance(value, datetime) else value


def _invalid(name: str, value: object, why: str | None = None) -> InvalidArgumentError:
    shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
    detail = why or "expected an ISO date (2026-12-31) or an instant with its offset " \
                    "(2026-12-31T18:00:00+01:00, 2026-12-31T17:00:00Z)"
    return InvalidArgumentError(f"{name} {shown}: {detail}", code="invalid_validity")


def host_time_zone(value: object) -> tzinfo | None:
    """The host's zone a store reads validity in (G15): an IANA name or a ``tzinfo``; None is
    the process's own zone, decided at each read (a UTC daemon uses UTC)."""
    if value is None or isinstance(value, tzinfo):
        return value
    if isinstance(value, str) and 0 < len(value) <= 64:
        try:
            return ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            pass
    shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
    raise InvalidArgumentError(f"time_zone {shown} is not an IANA zone name "
                               "(Europe/Warsaw, UTC) or a tzinfo", code="invalid_time_zone")
