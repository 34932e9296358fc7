"""Domain events: the only authority (DESIGN 1, 4).

Every event class carries an explicit, stable TOPIC so that moving or renaming a module never
breaks a stored journal. Aggregates are plain state folded from their events; they hold no
business rules beyond applying what the event says.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID, uuid5

from eventsourcing.domain import Aggregate

# Namespace of every run-derived aggregate id. Never change it: ids are stored in journals.
NAMESPACE = UUID("6d2c4c55-2f0b-5a0e-9b7e-6d656d6f7279")


def created(aggregate: Any, event_class: type[Any], originator_id: UUID,
            at: datetime, fields: dict[str, Any]) -> Any:
    """An aggregate's first event, built directly (no aggregate object is ever needed)."""
    return event_class(originator_id=originator_id, originator_version=aggregate.INITIAL_VERSION,
                       timestamp=at, originator_topic=aggregate.TOPIC, **fields)


def intake_uuid(run_hash: str) -> UUID:
    """Aggregate id of the intake for a run: uuid5 of its 64-hex run hash."""
    return uuid5(NAMESPACE, f"intake:{run_hash}")


class Intake(Aggregate):
    """One admitted completed turn, keyed by sha256(run_id) (B2)."""

    TOPIC = "memory_es/Intake"

    class Created(Aggregate.Created):
        TOPIC = "memory_es/Intake.Created"

    class Event(Aggregate.Event):
        TOPIC = "memory_es/Intake.Event"

    class Admitted(Created):
        """A successful turn was durably admitted (A3, A4, B1, B5).

        ``content_sha256`` covers the whole turn record and decides duplicate vs conflict
        (B3); ``payload_*`` describe the capture text kept in the payloads table.
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

    def __init__(
        self,
        run_hash: str,
        content_sha256: str,
        content_bytes: int,
        payload_sha256: str | None,
        payload_bytes: int,
        summary: str,
        write_mode: str,
        tier: str,
        speaker_kind: str,
        source_label: str,
        session: str | None,
        trigger: str,
        attachments: list[dict[str, Any]],
    ) -> None:
        self.run_hash = run_hash
        self.content_sha256 = content_sha256
        self.content_bytes = content_bytes
        self.payload_sha256 = payload_sha256
        self.payload_bytes = payload_bytes
        self.summary = summary
        self.write_mode = write_mode
        self.tier = tier
        self.speaker_kind = speaker_kind
        self.source_label = source_label
        self.session = session
        self.trigger = trigger
        self.attachments = attachments

    class Resolved(Aggregate.Event):
        """The intake needs no more work (B32): projected, captured, empty or operator_resolved."""

        TOPIC = "memory_es/Intake.Resolved"
        outcome: str
        reason_slug: str | None
        memory_id: str | None

        def apply(self, aggregate: Any) -> None:
            aggregate.outcome = self.outcome

    class AttemptFailed(Aggregate.Event):
        """Attempt ``attempt`` failed with a content-free ``category``; retry at next_due_at."""

        TOPIC = "memory_es/Intake.AttemptFailed"
        attempt: int
        category: str
        next_due_at: datetime

    class DeadLettered(Aggregate.Event):
        """The attempt budget is spent (B7): the record waits for an operator."""

        TOPIC = "memory_es/Intake.DeadLettered"
        attempt: int
        category: str

    class RetryRequested(Aggregate.Event):
        """An operator granted a fresh attempt budget, due now (C3)."""

        TOPIC = "memory_es/Intake.RetryRequested"

    class ExtractionRetained(Aggregate.Event):
        """The extraction call's validated plan (E2, E17): a retry never asks for it again."""

        TOPIC = "memory_es/Intake.ExtractionRetained"
        plan: dict[str, Any]
        model: str

    class ReviewRetained(Aggregate.Event):
        """One review decision per listed plan line (E23): ``None`` for an unlisted line."""

        TOPIC = "memory_es/Intake.ReviewRetained"
        decisions: list[str | None]
        model: str

    class ReconcileRetained(Aggregate.Event):
        """The classifier's decisions with real target ids (E4, E17), before the commit."""

        TOPIC = "memory_es/Intake.ReconcileRetained"
        decisions: list[dict[str, Any]]
        model: str

    @classmethod
    def admitted(cls, *, at: datetime, **fields: Any) -> Intake.Admitted:
        """The Admitted event (version 1) stamped by the caller's clock.

        Built directly rather than through the aggregate: admission is the hot path, and the
        event is all the journal needs.
        """
        event: Intake.Admitted = created(cls, cls.Admitted, intake_uuid(fields["run_hash"]),
                                         at, fields)
        return event


    @classmethod
    def resolved(
        cls, *, run_hash: str, version: int, at: datetime, outcome: str,
        memory_id: str | None = None, reason_slug: str | None = None,
    ) -> Intake.Resolved:
        """The Resolved event following ``version``."""
        event: Intake.Resolved = intake_event(
            cls.Resolved, run_hash=run_hash, version=version, at=at, outcome=outcome,
            reason_slug=reason_slug, memory_id=memory_id)
        return event


def memory_uuid(memory_id: str) -> UUID:
    """Aggregate id of a memory: uuid5 of its 64-hex memory id."""
    return uuid5(NAMESPACE, f"memory:{memory_id}")


class Memory(Aggregate):
    """One remembered line: an observation, note, fact, task or event (DESIGN 4).

    ``memory_id`` is run-derived (Lite: sha256(run_hash ":" index)) or content-derived
    (Journal: sha256 of the normalised text), so replaying a commit is a no-op (E17).
    """

    TOPIC = "memory_es/Memory"

    class Created(Aggregate.Created):
        TOPIC = "memory_es/Memory.Created"

    class Event(Aggregate.Event):
        TOPIC = "memory_es/Memory.Event"

    class Recorded(Created):
        """A memory line came into being. ``day`` and ``timestamp`` come from its intake."""

        TOPIC = "memory_es/Memory.Recorded"
        memory_id: str
        kind: str
        text: str
        day: str
        status: str
        source: str
        session: str | None
        run_hash: str | None
        tier: str

    def __init__(
        self, memory_id: str, kind: str, text: str, day: str, status: str, source: str,
        session: str | None, run_hash: str | None, tier: str,
    ) -> None:
        self.memory_id = memory_id
        self.kind = kind
        self.text = text
        self.day = day
        self.status = status
        self.source = source
        self.session = session
        self.run_hash = run_hash
        self.tier = tier

    class Captured(Created):
        """A curated BuJo line (E2, E39-E41, A19): ``kind`` is note or event (a task line the
        extractor typed becomes a note with ``from_task``), ``source`` is host-bounded, and
        ``entity_ids`` names only the entities extracted for this line (E26)."""

        TOPIC = "memory_es/Memory.Captured"
        class_version = 2  # v2 added ``fact``
        memory_id: str
        kind: str
        text: str
        day: str
        status: str
        labels: list[str]
        entity_ids: list[str]
        scope: str
        source: str
        salience: float
        from_task: bool
        session: str | None
        run_hash: str | None
        tier: str
        fact: dict[str, str] | None  # {subject: entity id, key, value} (H20, E29)

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            state["fact"] = None

    class TextUpdated(Event):
        """Reconcile UPDATE (E12, K3): complete replacement text, stamped with its session."""

        TOPIC = "memory_es/Memory.TextUpdated"
        class_version = 2  # v2 added ``fact``
        memory_id: str
        text: str
        session: str | None
        run_hash: str
        fact: dict[str, str] | None  # the updated line's structured fact; None: unchanged

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            state["fact"] = None

        def apply(self, aggregate: Any) -> None:
            aggregate.text = self.text

    class Superseded(Event):
        """Lifecycle (E13, A21, F1): replaced by ``by``; ``status`` superseded, or invalidated
        for a task. Replay-owned state: the sidecar is its authority (F2)."""

        TOPIC = "memory_es/Memory.Superseded"
        memory_id: str
        by: str
        status: str
        run_hash: str

        def apply(self, aggregate: Any) -> None:
            aggregate.status = self.status

    class Threaded(Event):
        """A thread edge from this note to ``to`` (A20, E42), weight kept in the sidecar (F3)."""

        TOPIC = "memory_es/Memory.Threaded"
        memory_id: str
        to: str
        weight: float
        run_hash: str

    @classmethod
    def captured(cls, *, at: datetime, **fields: Any) -> Memory.Captured:
        """The Captured event (version 1) stamped with the intake's admission instant."""
        event: Memory.Captured = created(cls, cls.Captured, memory_uuid(fields["memory_id"]),
                                         at, fields)
        return event

    @classmethod
    def recorded(cls, *, at: datetime, **fields: Any) -> Memory.Recorded:
        """The Recorded event (version 1) stamped with the intake's admission instant."""
        event: Memory.Recorded = created(cls, cls.Recorded, memory_uuid(fields["memory_id"]),
                                         at, fields)
        return event


def entity_uuid(entity_id: str) -> UUID:
    """Aggregate id of an entity: uuid5 of its 64-hex content-derived id."""
    return uuid5(NAMESPACE, f"entity:{entity_id}")


class Entity(Aggregate):
    """A graph node (L1): a person, project, organisation or concept.

    ``entity_id`` is sha256 of the NFKC, case-folded, whitespace-collapsed name and the type,
    so the same name named in two turns is one node.
    """

    TOPIC = "memory_es/Entity"

    class Created(Aggregate.Created):
        TOPIC = "memory_es/Entity.Created"

    class Event(Aggregate.Event):
        TOPIC = "memory_es/Entity.Event"

    class Named(Created):
        TOPIC = "memory_es/Entity.Named"
        entity_id: str
        name: str
        type: str

    def __init__(self, entity_id: str, name: str, type: str) -> None:
        self.entity_id = entity_id
        self.name = name
        self.type = type

    class Related(Event):
        """A directed, lowercase relation to entity ``to``, stated by ``memory`` (L1)."""

        TOPIC = "memory_es/Entity.Related"
        entity_id: str
        to: str
        relation: str
        memory: str

    @classmethod
    def named(cls, *, at: datetime, **fields: Any) -> Entity.Named:
        """The Named event (version 1) of a content-derived entity id."""
        event: Entity.Named = created(cls, cls.Named, entity_uuid(fields["entity_id"]), at,
                                      fields)
        return event


def intake_event(cls: type[Any], *, run_hash: str, version: int, at: datetime,
                 **fields: Any) -> Any:
    """An Intake event following ``version`` (optimistic concurrency guards replays)."""
    return cls(originator_id=intake_uuid(run_hash), originator_version=version + 1,
               timestamp=at, **fields)


ADMITTED_TOPIC = Intake.Admitted.TOPIC
RESOLVED_TOPIC = Intake.Resolved.TOPIC
RECORDED_TOPIC = Memory.Recorded.TOPIC
