"""``memory-es curate audit`` (C14): the private, reviewed step before ``intentExpiry``.

``memory.recall.intentExpiry`` (M24, M25) reads stored lines differently, and nothing stored
says what an old date meant (M26: no marker, no reinterpretation). So before the switch is
turned on, an operator reviews every line whose meaning would change:

- ``dated``: a live line with a ``due=`` leaves the automatic block, even before its date;
- ``due_becomes_end``: a note's ``due=`` becomes an inclusive validity end in deliberate
  recall (a task's stays a deadline, an event's already is one), and ``ended_by_due`` when
  that end has already passed: recall would show the note ended;
- ``task_turned_note``: a note made from a task (capture's A19) whose date is a deadline;
- ``due_and_valid_to``: a line with both a ``due=`` and a ``valid_to``;
- ``closed``: a done line leaves the automatic block.

Each line shows its content (the operator's own view, never logged) and its last reviewed
decision (the review log, ``Root.Reviewed``); lines already decided are left out unless
``everything`` is asked for. Deciding is :mod:`memory_es.store.curation`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import Any, Final

import apsw
from eventsourcing.persistence import StoredEvent

from memory_es.errors import MemoryEsError
from memory_es.ids import REVIEW_UUID
from memory_es.indexread import optional_rows
from memory_es.journal import OpenedJournal
from memory_es.recall.rank.select import has_ended, host_zone
from memory_es.validity import parse_validity

FINDINGS: Final = ("dated", "due_becomes_end", "ended_by_due", "task_turned_note",
                   "due_and_valid_to", "closed")
EXPLAINED: Final = {
    "dated": "leaves the automatic block, even before its date (M24)",
    "due_becomes_end": "deliberate recall reads its due= as an inclusive end (M25)",
    "ended_by_due": "that end has passed: deliberate recall shows it ended",
    "task_turned_note": "a note made from a task: its due= was a deadline",
    "due_and_valid_to": "has both due= and valid_to: the earlier ends it",
    "closed": "done: leaves the automatic block (M24)",
}
DECISIONS: Final = ("keep", "drop", "undate", "retype")
RETYPE_KINDS: Final = ("note", "task", "event")
_LIVE: Final = ("open", "scheduled", "migrated", "done")


@dataclass(frozen=True)
class Reviewed:
    """The last decision recorded for a line, at its journal position."""

    decision: str
    kind: str | None
    replaced_by: str | None
    position: int

    def to_json(self) -> dict[str, Any]:
        return {"decision": self.decision, "kind": self.kind, "replacedBy": self.replaced_by,
                "position": self.position}


@dataclass(frozen=True)
class AuditLine:
    """One line intentExpiry would read differently, with why (:data:`FINDINGS` order)."""

    id: str
    text: str
    type: str
    status: str
    day: str
    source: str
    due_at: str | None
    valid_to: str | None
    findings: tuple[str, ...]
    reviewed: Reviewed | None

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "text": self.text, "type": self.type, "status": self.status,
                "day": self.day, "source": self.source, "dueAt": self.due_at,
                "validTo": self.valid_to, "findings": list(self.findings),
                "reviewed": None if self.reviewed is None else self.reviewed.to_json()}


@dataclass(frozen=True)
class CurateAudit:
    """The audit: the lines to review (day, then id), and how many were already decided."""

    lines: tuple[AuditLine, ...]
    decided: int
    everything: bool
    intent_expiry: bool

    def to_json(self) -> dict[str, Any]:
        return {"intentExpiry": self.intent_expiry, "everything": self.everything,
                "decided": self.decided, "lines": [line.to_json() for line in self.lines]}

    def render(self) -> str:
        """The text report: one block per line, its findings explained, then a summary."""
        out = [f"curate audit: {len(self.lines)} line(s)"
               + (f", {self.decided} of them already decided" if self.everything
                  else " to review" + (f" ({self.decided} more already decided: --all shows "
                                       "them)" if self.decided else ""))
               + (" (intentExpiry is on)" if self.intent_expiry else "")]
        for line in self.lines:
            dates = "".join(f"  {name}={value}" for name, value in
                            (("due", line.due_at), ("valid_to", line.valid_to)) if value)
            out.append(f"{line.id[:12]}  {line.day}  {line.type} [{line.status}]{dates}")
            out.append(f"  {line.text}")
            out.extend(f"  - {EXPLAINED[code]}" for code in line.findings)
            if line.reviewed is not None:
                kind = f" as {line.reviewed.kind}" if line.reviewed.kind else ""
                out.append(f"  reviewed: {line.reviewed.decision}{kind}")
        out.append("decide each with: memory-es curate decide ID keep|drop|undate|retype "
                   "[--as note|task|event]")
        return "\n".join(out)


def check_bujo(mode: str) -> None:
    """The audit and its decisions are BuJo's: intentExpiry reads nothing else (M33)."""
    if mode != "bujo":
        raise MemoryEsError(f"curate_bujo_only: intentExpiry is a BuJo read policy; this root "
                            f"is {mode}, which it never changes", code="curate_bujo_only")


def read_decisions(opened: OpenedJournal) -> dict[str, Reviewed]:
    """The review log's last decision per line (a later one replaces an earlier); a retype's
    new line carries the decision that made it."""
    mapper = opened.app.mapper
    out: dict[str, Reviewed] = {}
    for position, version, topic, state in opened.recorder.aggregate_rows(REVIEW_UUID):
        event: Any = mapper.to_domain_event(StoredEvent(REVIEW_UUID, version, topic, state))
        reviewed = Reviewed(event.decision, event.kind, event.replaced_by, position)
        out[event.memory_id] = reviewed
        if event.replaced_by is not None:  # a retyped copy was reviewed in the same decision
            out[event.replaced_by] = reviewed
    return out


def findings_of(kind: str, status: str, due_at: str | None, valid_to: str | None,
                from_task: bool, now: datetime, zone: tzinfo) -> tuple[str, ...]:
    """Why intentExpiry would read this live line differently (empty: it would not)."""
    found: list[str] = []
    if due_at is not None:
        found.append("dated")
        if kind == "note":
            found.append("due_becomes_end")
            end = parse_validity(due_at)
            if end is not None and has_ended(end, now, zone):
                found.append("ended_by_due")
            if from_task:
                found.append("task_turned_note")
        if valid_to is not None:
            found.append("due_and_valid_to")
    if status == "done":
        found.append("closed")
    return tuple(found)


def curate_audit(conn: apsw.Connection | None, decisions: Mapping[str, Reviewed], *,
                 now: datetime, tz: tzinfo | None, everything: bool = False,
                 intent_expiry: bool = False) -> CurateAudit:
    """The audit from an index (None: nothing projected yet) and the review log's last
    decision per line, judged at ``now`` in the host's zone ``tz`` (None: the process's)."""
    zone = host_zone(now, tz)
    rows = [] if conn is None else optional_rows(conn, (
        "SELECT m.id, m.text, m.kind, m.status, m.day, m.source, t.due_at, t.valid_to, "
        "COALESCE(mm.from_task, 0) FROM memories m "
        "LEFT JOIN memory_terms t ON t.rowid = m.rowid "
        "LEFT JOIN memory_meta mm ON mm.rowid = m.rowid "
        f"WHERE m.status IN {_LIVE} AND (t.due_at IS NOT NULL OR m.status = 'done') "
        "ORDER BY m.day, m.id"), ())
    lines: list[AuditLine] = []
    decided = 0
    for memory_id, text, kind, status, day, source, due_at, valid_to, from_task in rows:
        found = findings_of(kind, status, due_at, valid_to, bool(from_task), now, zone)
        reviewed = decisions.get(memory_id)
        if reviewed is not None:
            decided += 1
            if not everything:
                continue
        lines.append(AuditLine(memory_id, text, kind, status, day, source, due_at, valid_to,
                               found, reviewed))
    return CurateAudit(tuple(lines), decided, everything, intent_expiry)
