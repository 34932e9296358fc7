"""The ``Intake`` aggregate's events and factories: one admitted turn's life (A3, B1-B7, C3,
E2, E17, E23).

The explicit TOPIC strings are what stored journals and the golden fixtures hold: they never
change, wherever the class is defined.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

from eventsourcing.domain import Aggregate

from memory_es.events.building import after, created
from memory_es.ids import intake_uuid

E = TypeVar("E")


def _following(event_class: Callable[..., E], *, run_hash: str, version: int, at: datetime,
               **fields: Any) -> E:
    """An Intake event following ``version`` (optimistic concurrency guards replays).

    Private: the typed factories (``Intake.resolved`` ...) are the only callers."""
    return after(event_class, intake_uuid(run_hash), version, at, **fields)


class Intake(Aggregate):
    """One admitted completed turn, keyed by sha256(run_id) (B2)."""

    TOPIC = "memory_es/Intake"

    class Event(Aggregate.Event):
        TOPIC = "memory_es/Intake.Event"

    class Created(Aggregate.Created, Event):
        TOPIC = "memory_es/Intake.Created"

    class Admitted(Created):
        """A successful turn was durably admitted (A3, A4, B1, B5).

        ``content_sha256`` covers the whole turn record and decides duplicate vs conflict
        (B3); it and ``content_bytes`` are sealed with the summary, so a forget leaves nothing
        that confirms a guessed turn. ``payload_*`` describe the capture text kept in the
        payloads table: for a sealed payload ``payload_sha256`` is ``SEALED_PAYLOAD`` and
        ``payload_bytes`` 0 (its AES-GCM tag is its integrity check, and no digest or length
        of the text is stored in the clear).
        """

        TOPIC = "memory_es/Intake.Admitted"
        run_hash: str
        content_sha256: str
        content_bytes: int
        payload_sha256: str | None
        payload_bytes: int
        summary: str
        write_mode: str
        tier: str
        speaker_kind: str
        source_label: str
        session: str | None
        trigger: str
        attachments: list[dict[str, Any]]

    class Resolved(Event):
        """The intake needs no more work (B32): projected, captured, empty or operator_resolved."""

        TOPIC = "memory_es/Intake.Resolved"
        outcome: str
        reason_slug: str | None
        memory_id: str | None

    class AttemptFailed(Event):
        """Attempt ``attempt`` failed with a content-free ``category``; retry at next_due_at."""

        TOPIC = "memory_es/Intake.AttemptFailed"
        attempt: int
        category: str
        next_due_at: datetime

    class DeadLettered(Event):
        """The attempt budget is spent (B7): the record waits for an operator."""

        TOPIC = "memory_es/Intake.DeadLettered"
        attempt: int
        category: str

    class RetryRequested(Event):
        """An operator granted a fresh attempt budget, due now (C3)."""

        TOPIC = "memory_es/Intake.RetryRequested"

    class ExtractionRetained(Event):
        """The extraction call's validated plan (E2, E17): a retry never asks for it again."""

        TOPIC = "memory_es/Intake.ExtractionRetained"
        plan: dict[str, Any]
        model: str

    class ReviewRetained(Event):
        """One review decision per listed plan line (E23): ``None`` for an unlisted line."""

        TOPIC = "memory_es/Intake.ReviewRetained"
        decisions: list[str | None]
        model: str

    class ReconcileRetained(Event):
        """The classifier's decisions with real target ids (E4, E17), before the commit."""

        TOPIC = "memory_es/Intake.ReconcileRetained"
        decisions: list[dict[str, Any]]
        model: str

    @classmethod
    def admitted(
        cls, *, at: datetime, run_hash: str, content_sha256: str, content_bytes: int,
        payload_sha256: str | None, payload_bytes: int, summary: str, write_mode: str,
        tier: str, speaker_kind: str, source_label: str, session: str | None, trigger: str,
        attachments: list[dict[str, Any]],
    ) -> Intake.Admitted:
        """The Admitted event (version 1) stamped by the caller's clock.

        Built directly rather than through the aggregate: admission is the hot path, and the
        event is all the journal needs.
        """
        return created(
            cls, cls.Admitted, intake_uuid(run_hash), at, run_hash=run_hash,
            content_sha256=content_sha256, content_bytes=content_bytes,
            payload_sha256=payload_sha256, payload_bytes=payload_bytes, summary=summary,
            write_mode=write_mode, tier=tier, speaker_kind=speaker_kind,
            source_label=source_label, session=session, trigger=trigger,
            attachments=attachments)

    @classmethod
    def resolved(
        cls, *, run_hash: str, version: int, at: datetime, outcome: str,
        memory_id: str | None = None, reason_slug: str | None = None,
    ) -> Intake.Resolved:
        """The Resolved event following ``version``."""
        return _following(cls.Resolved, run_hash=run_hash, version=version, at=at,
                          outcome=outcome, reason_slug=reason_slug, memory_id=memory_id)

    @classmethod
    def attempt_failed(
        cls, *, run_hash: str, version: int, at: datetime, attempt: int, category: str,
        next_due_at: datetime,
    ) -> Intake.AttemptFailed:
        """The AttemptFailed event following ``version``."""
        return _following(cls.AttemptFailed, run_hash=run_hash, version=version, at=at,
                          attempt=attempt, category=category, next_due_at=next_due_at)

    @classmethod
    def dead_lettered(
        cls, *, run_hash: str, version: int, at: datetime, attempt: int, category: str,
    ) -> Intake.DeadLettered:
        """The DeadLettered event following ``version``."""
        return _following(cls.DeadLettered, run_hash=run_hash, version=version, at=at,
                          attempt=attempt, category=category)

    @classmethod
    def retry_requested(
        cls, *, run_hash: str, version: int, at: datetime,
    ) -> Intake.RetryRequested:
        """The RetryRequested event following ``version``."""
        return _following(cls.RetryRequested, run_hash=run_hash, version=version, at=at)

    @classmethod
    def extraction_retained(
        cls, *, run_hash: str, version: int, at: datetime, plan: dict[str, Any], model: str,
    ) -> Intake.ExtractionRetained:
        """The ExtractionRetained event following ``version``."""
        return _following(cls.ExtractionRetained, run_hash=run_hash, version=version, at=at,
                          plan=plan, model=model)

    @classmethod
    def review_retained(
        cls, *, run_hash: str, version: int, at: datetime, decisions: list[str | None],
        model: str,
    ) -> Intake.ReviewRetained:
        """The ReviewRetained event following ``version``."""
        return _following(cls.ReviewRetained, run_hash=run_hash, version=version, at=at,
                          decisions=decisions, model=model)

    @classmethod
    def reconcile_retained(
        cls, *, run_hash: str, version: int, at: datetime, decisions: list[dict[str, Any]],
        model: str,
    ) -> Intake.ReconcileRetained:
        """The ReconcileRetained event following ``version``."""
        return _following(cls.ReconcileRetained, run_hash=run_hash, version=version, at=at,
                          decisions=decisions, model=model)

    class Forgotten(Event):
        """The turn's content was erased: ``key_ids`` are the record keys
        of its summary, payload and retained plans, destroyed after this commits. Content-free,
        never sealed; the audit line goes with it."""

        TOPIC = "memory_es/Intake.Forgotten"
        run_hash: str
        reason: str
        key_ids: list[int]
        keys_root: str  # the root id whose key store held them (ids are root-local)

    @classmethod
    def forgotten(cls, *, run_hash: str, version: int, at: datetime, reason: str,
                  key_ids: list[int], keys_root: str) -> Intake.Forgotten:
        """The Forgotten event following ``version``."""
        return after(cls.Forgotten, intake_uuid(run_hash), version, at, run_hash=run_hash,
                     reason=reason, key_ids=key_ids, keys_root=keys_root)
