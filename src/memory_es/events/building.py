"""How the typed factories build events directly (DESIGN 4).

No aggregate object is ever constructed or folded: admission is the hot path and the event is
all the journal needs, so each factory (``Intake.admitted``, ``Memory.captured`` ...) stamps the
originator's id, version and topic itself through these two functions. The aggregates' modules
are their only callers.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Protocol, TypeVar
from uuid import UUID

E = TypeVar("E")


class Origin(Protocol):
    """An aggregate class as a factory sees it: its explicit TOPIC and its first version."""

    TOPIC: str
    INITIAL_VERSION: int


def created(aggregate: type[Origin], event_class: Callable[..., E], originator_id: UUID,
            at: datetime, **fields: Any) -> E:
    """An aggregate's first event, built directly (no aggregate object is ever needed)."""
    return event_class(originator_id=originator_id, originator_version=aggregate.INITIAL_VERSION,
                       timestamp=at, originator_topic=aggregate.TOPIC, **fields)


def after(event_class: Callable[..., E], originator_id: UUID, version: int, at: datetime,
          **fields: Any) -> E:
    """An event of ``originator_id`` following its ``version`` (optimistic concurrency
    refuses a second event at the same version, so a replayed write is never doubled)."""
    return event_class(originator_id=originator_id, originator_version=version + 1,
                       timestamp=at, **fields)
