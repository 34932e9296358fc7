"""The note lifecycle (K14, DESIGN 9.8): a line's status and its insight marker change as
journal events.

``set_status`` writes one ``Memory.StatusChanged`` for a transition that
``vocabulary.STATUS_TRANSITIONS`` allows (open, done, scheduled and migrated between
themselves; any of them to the terminal ``dropped``), committed and projected under one hold
of the journal, so recall, the automatic block, MemoryJournal and the daily Markdown show it
when the call returns. Setting the status a line already has is ``unchanged`` and writes
nothing. Superseded, invalidated and dropped lines never change again: supersession and
forget are their own events.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from memory_es.bounds import check_slug, describe
from memory_es.browse.inventory import resolve_id
from memory_es.errors import InvalidArgumentError, MemoryEsError
from memory_es.events import Memory
from memory_es.ids import memory_uuid
from memory_es.journal import OpenedJournal
from memory_es.store.admission import GroupCommit
from memory_es.store.projecting import LiveProjections
from memory_es.vocabulary import STATUS_TRANSITIONS

SETTABLE_STATUSES = ("open", "done", "scheduled", "migrated", "dropped")


@dataclass(frozen=True)
class StatusResult:
    """``changed`` (a StatusChanged was written) or ``unchanged`` (it already had it)."""

    outcome: Literal["changed", "unchanged"]
    memory_id: str
    previous: str
    status: str

    def to_json(self) -> dict[str, Any]:
        return {"outcome": self.outcome, "id": self.memory_id, "previous": self.previous,
                "status": self.status}


def check_status_change(status: object, reason: object) -> tuple[str, str | None]:
    """The requested status and reason slug, or a one-line usage error naming the bad one."""
    if not isinstance(status, str) or status not in SETTABLE_STATUSES:
        raise InvalidArgumentError(f"status must be one of {', '.join(SETTABLE_STATUSES)}, "
                                   f"got {describe(status)}", code="invalid_status")
    return status, None if reason is None else check_slug(reason)


def set_status(opened: OpenedJournal, journal: GroupCommit, projections: LiveProjections,
               memory_id: str, status: str, *, reason: str | None,
               now: datetime) -> StatusResult:
    """Move one line to ``status`` if the lifecycle allows it (``status_transition_refused``
    otherwise), projected before returning."""
    status, reason = check_status_change(status, reason)
    with journal.exclusive():
        projections.catch_up()
        conn = projections.get().index.conn
        full = resolve_id(conn, memory_id)
        row: Any = conn.execute("SELECT status FROM memories WHERE id = ?", (full,)).fetchone()
        previous = str(row[0])
        if previous == status:
            return StatusResult("unchanged", full, previous, status)
        if status not in STATUS_TRANSITIONS.get(previous, frozenset()):
            allowed = sorted(STATUS_TRANSITIONS.get(previous, frozenset()))
            raise MemoryEsError(
                f"status_transition_refused: {full[:16]}... is {previous}; it can move to "
                f"{', '.join(allowed) if allowed else 'nothing (it is history)'}",
                code="status_transition_refused")
        version = len(opened.recorder.aggregate_rows(memory_uuid(full)))
        journal.commit_held([Memory.status_changed(version=version, at=now, memory_id=full,
                                                   status=status, reason=reason)])
        projections.catch_up()
    return StatusResult("changed", full, previous, status)


@dataclass(frozen=True)
class MarkResult:
    """``changed`` (a Marked was written) or ``unchanged`` (the line already had it)."""

    outcome: Literal["changed", "unchanged"]
    memory_id: str
    insight: bool

    def to_json(self) -> dict[str, Any]:
        return {"outcome": self.outcome, "id": self.memory_id, "insight": self.insight}


def set_insight(opened: OpenedJournal, journal: GroupCommit, projections: LiveProjections,
                memory_id: str, insight: bool, *, now: datetime) -> MarkResult:
    """Set or clear a stored line's insight marker (K14, H6), as a ``Memory.Marked`` event
    projected before returning; any stored line, open or closed, may carry it."""
    if not isinstance(insight, bool):
        raise InvalidArgumentError(f"insight must be true or false, got {describe(insight)}")
    with journal.exclusive():
        projections.catch_up()
        conn = projections.get().index.conn
        full = resolve_id(conn, memory_id)
        row: Any = conn.execute("SELECT insight FROM memory_terms WHERE id = ?",
                                (full,)).fetchone()
        if bool(row[0] if row is not None else 0) == insight:
            return MarkResult("unchanged", full, insight)
        version = len(opened.recorder.aggregate_rows(memory_uuid(full)))
        journal.commit_held([Memory.marked(version=version, at=now, memory_id=full,
                                           insight=insight)])
        projections.catch_up()
    return MarkResult("changed", full, insight)
