"""The operator's intake report (C1, C2): content-free counts and records, typed.

``IntakeView.report`` builds an ``IntakeReport``; ``to_json()`` is the ``inspect --json``
object. The closed sets an intake's state draws from are ``Literal`` types here, so the state
machine (``memory_es.intake.state``) and the report share one spelling of each.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

import msgspec

from memory_es.text import iso_ms

IntakeStatus = Literal["pending", "dead", "resolved"]
FailureCategory = Literal["model_timeout", "model_invalid_output", "model_unavailable",
                          "embedding_unavailable", "io_error", "internal", "integrity"]
ResolvedOutcome = Literal["projected", "captured", "empty", "operator_resolved"]
RetainedStage = Literal["extract", "review", "reconcile"]


def iso_ms_or_none(ts: datetime | None) -> str | None:
    """An event instant as the report writes it (:func:`memory_es.text.iso_ms`), or None."""
    return None if ts is None else iso_ms(ts)


class IntakeCounts(msgspec.Struct, frozen=True, kw_only=True):
    """Content-free counts: ``active`` is pending + dead; ``due`` + ``delayed`` is pending."""

    pending: int
    due: int
    delayed: int
    dead: int
    resolved: int
    active: int
    total: int
    transitions: int

    def to_json(self) -> dict[str, int]:
        return {"pending": self.pending, "due": self.due, "delayed": self.delayed,
                "dead": self.dead, "resolved": self.resolved, "active": self.active,
                "total": self.total, "transitions": self.transitions}


class IntakeRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One intake as an operator sees it at one instant: no summary, no capture text.

    ``attempts_left`` is what remains of the 16-attempt budget (0 unless pending);
    ``retained`` is the last retained capture stage, where a capture resumes.
    """

    id: str
    state: IntakeStatus
    due: bool
    attempts: int
    failures: int
    attempts_left: int
    revision: int
    position: int
    admitted_at: datetime
    next_due_at: datetime | None
    category: FailureCategory | None
    outcome: ResolvedOutcome | None
    reason_slug: str | None
    retained: RetainedStage | None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "state": self.state,
            "due": self.due,
            "attempts": self.attempts,
            "failures": self.failures,
            "attempts_left": self.attempts_left,
            "revision": self.revision,
            "position": self.position,
            "admitted_at": iso_ms_or_none(self.admitted_at),
            "next_due_at": iso_ms_or_none(self.next_due_at),
            "category": self.category,
            "outcome": self.outcome,
            "reason_slug": self.reason_slug,
            "retained": self.retained,
        }


ForgetKind = Literal["memory", "turn"]


class ForgetRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One ``Forgotten`` event as an operator sees it, content-free: which memory (its id) or
    turn (its intake id) was erased, when, why (the reason slug), and how much went with it
    (record keys destroyed, entities pruned, turns whose content was erased)."""

    position: int
    at: datetime
    kind: ForgetKind
    subject: str
    reason: str
    keys_destroyed: int
    entities_pruned: int = 0
    turns_erased: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"position": self.position, "at": iso_ms(self.at), "kind": self.kind,
                "subject": self.subject, "reason": self.reason,
                "keys_destroyed": self.keys_destroyed, "entities_pruned": self.entities_pruned,
                "turns_erased": self.turns_erased}


class ForgetLog(msgspec.Struct, frozen=True, kw_only=True):
    """How many forgets the journal records and the latest of them, newest first."""

    total: int
    recent: tuple[ForgetRecord, ...]

    def to_json(self) -> dict[str, Any]:
        return {"total": self.total, "recent": [r.to_json() for r in self.recent]}


class IntakeReport(msgspec.Struct, frozen=True, kw_only=True):
    """The ``inspect`` answer: counts, and records in admission order."""

    counts: IntakeCounts
    records: tuple[IntakeRecord, ...]
    vectors_pending: int | None = None  # live memories without a vector; None: never embeds
    worker: str | None = None  # "running", "stalled", "not_running"; None: not asked

    def to_json(self) -> dict[str, Any]:
        return {"counts": self.counts.to_json(),
                "records": [r.to_json() for r in self.records],
                "vectors_pending": self.vectors_pending, "worker": self.worker}
