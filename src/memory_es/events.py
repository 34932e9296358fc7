"""Domain events: the only authority (DESIGN 1, 4).

Every event class carries an explicit, stable TOPIC so that moving or renaming a module never
breaks a stored journal.

The aggregates (``Intake``, ``Memory``, ``Entity``) are namespaces for their event classes,
TOPICs and typed factories: no aggregate object is ever constructed or folded. The factories
build events directly (admission is the hot path and the event is all the journal needs), read
models fold the stream themselves (``IntakeView``, the projections), and the mapper decodes a
stored event by resolving its topic to the event class without calling any ``__init__``; so
the aggregates have no ``__init__`` and their events no ``apply``. They still subclass
``Aggregate`` because its ``__init_subclass__`` registers the TOPICs the mapper resolves.

Factories take explicit keyword parameters mirroring their event class's declared fields, so a
misspelt field is a type error, not a runtime surprise.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar
from uuid import UUID

from eventsourcing.domain import Aggregate

from memory_es.ids import ROOT_UUID, entity_uuid, intake_uuid, memory_uuid

E = TypeVar("E")


def _created(aggregate: type[Intake | Memory | Entity | Root], event_class: Callable[..., E],
             originator_id: UUID, at: datetime, **fields: Any) -> E:
    """An aggregate's first event, built directly (no aggregate object is ever needed).

    Private: the typed factories (``Intake.admitted`` ...) are the only callers."""
    return event_class(originator_id=originator_id, originator_version=aggregate.INITIAL_VERSION,
                       timestamp=at, originator_topic=aggregate.TOPIC, **fields)


def _following(event_class: Callable[..., E], *, run_hash: str, version: int, at: datetime,
               **fields: Any) -> E:
    """An Intake event following ``version`` (optimistic concurrency guards replays).

    Private: the typed factories (``Intake.resolved`` ...) are the only callers."""
    return _next(event_class, intake_uuid(run_hash), version, at, **fields)


def _next(event_class: Callable[..., E], originator_id: UUID, version: int, at: datetime,
          **fields: Any) -> E:
    """An event of ``originator_id`` following its ``version`` (private, like ``_created``)."""
    return event_class(originator_id=originator_id, originator_version=version + 1,
                       timestamp=at, **fields)


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
        return _created(
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
        return _next(cls.Forgotten, intake_uuid(run_hash), version, at, run_hash=run_hash,
                     reason=reason, key_ids=key_ids, keys_root=keys_root)


class Memory(Aggregate):
    """One remembered line: an observation, note, fact, task or event (DESIGN 4).

    ``memory_id`` is run-derived (Lite: sha256(run_hash ":" index)) or content-derived
    (Journal: sha256 of the normalised text), so replaying a commit is a no-op (E17).
    """

    TOPIC = "memory_es/Memory"

    class Event(Aggregate.Event):
        TOPIC = "memory_es/Memory.Event"

    class Created(Aggregate.Created, Event):
        TOPIC = "memory_es/Memory.Created"

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

    class Superseded(Event):
        """Lifecycle (E13, A21, F1): replaced by ``by``; ``status`` superseded, or invalidated
        for a task. Replay-owned state: the sidecar is its authority (F2)."""

        TOPIC = "memory_es/Memory.Superseded"
        memory_id: str
        by: str
        status: str
        run_hash: str | None  # None: a Remember's ``supersedes`` (J8), not a capture

    class Threaded(Event):
        """A thread edge from this note to ``to`` (A20, E42), weight kept in the sidecar (F3)."""

        TOPIC = "memory_es/Memory.Threaded"
        memory_id: str
        to: str
        weight: float
        run_hash: str

    class Remembered(Created):
        """An enhanced Remember (J6-J10, BuJo only): one assistant-noted fact (J9), optionally
        ``about`` an existing person, ``replaceable`` by a later scan, and stated with its
        validity (G13-G15): ``valid_from`` / ``valid_to`` / ``due_at`` are ISO dates
        (``YYYY-MM-DD``: inclusive civil days in the host's zone) or ISO instants with their
        offset, kept as written. A ``supersedes`` is a ``Superseded`` in the same commit."""

        TOPIC = "memory_es/Memory.Remembered"
        memory_id: str
        text: str
        day: str
        session: str | None
        tier: str
        about: str | None
        replaceable: bool
        valid_from: str | None
        valid_to: str | None
        due_at: str | None

    class StatusChanged(Event):
        """A lifecycle transition of a live line (K14, DESIGN 9.8): open, done, scheduled,
        migrated, or the terminal dropped; only the transitions in
        ``vocabulary.STATUS_TRANSITIONS`` are ever written."""

        TOPIC = "memory_es/Memory.StatusChanged"
        memory_id: str
        status: str
        reason: str | None

    class Marked(Event):
        """A line's insight marker set or cleared (K14, H6): BuJo's signifier for a realised
        idea or lesson, shown on the line, kept when it closes, a small tie-breaker (G8)."""

        TOPIC = "memory_es/Memory.Marked"
        memory_id: str
        insight: bool

    class DueStated(Event):
        """A captured intention's inclusive end (M17-M19, M22; intent lifecycle only): the
        line's ``due_at`` (``due=`` in Markdown, ``dueAt`` in recall), never a validity end;
        a civil date or its last millisecond with an offset, as written. It follows the
        line's ``Captured`` in the same commit."""

        TOPIC = "memory_es/Memory.DueStated"
        memory_id: str
        due_at: str

    @classmethod
    def due_stated(cls, *, version: int, at: datetime, memory_id: str,
                   due_at: str) -> Memory.DueStated:
        """The DueStated event following ``version``."""
        return _next(cls.DueStated, memory_uuid(memory_id), version, at, memory_id=memory_id,
                     due_at=due_at)

    @classmethod
    def marked(cls, *, version: int, at: datetime, memory_id: str,
               insight: bool) -> Memory.Marked:
        """The Marked event following ``version``."""
        return _next(cls.Marked, memory_uuid(memory_id), version, at, memory_id=memory_id,
                     insight=insight)

    @classmethod
    def remembered(
        cls, *, at: datetime, memory_id: str, text: str, day: str, session: str | None,
        tier: str, about: str | None, replaceable: bool, valid_from: str | None,
        valid_to: str | None, due_at: str | None,
    ) -> Memory.Remembered:
        """The Remembered event (version 1) stamped with the write's instant."""
        return _created(
            cls, cls.Remembered, memory_uuid(memory_id), at, memory_id=memory_id, text=text,
            day=day, session=session, tier=tier, about=about, replaceable=replaceable,
            valid_from=valid_from, valid_to=valid_to, due_at=due_at)

    @classmethod
    def status_changed(cls, *, version: int, at: datetime, memory_id: str, status: str,
                       reason: str | None) -> Memory.StatusChanged:
        """The StatusChanged event following ``version``."""
        return _next(cls.StatusChanged, memory_uuid(memory_id), version, at,
                     memory_id=memory_id, status=status, reason=reason)

    @classmethod
    def text_updated(cls, *, version: int, at: datetime, memory_id: str, text: str,
                     session: str | None, run_hash: str,
                     fact: dict[str, str] | None) -> Memory.TextUpdated:
        """The TextUpdated event following ``version`` (an UPDATE rewrites the line)."""
        return _next(cls.TextUpdated, memory_uuid(memory_id), version, at, memory_id=memory_id,
                     text=text, session=session, run_hash=run_hash, fact=fact)

    @classmethod
    def superseded(cls, *, version: int, at: datetime, memory_id: str, by: str, status: str,
                   run_hash: str | None) -> Memory.Superseded:
        """The Superseded event following ``version``: ``by`` replaces the line."""
        return _next(cls.Superseded, memory_uuid(memory_id), version, at, memory_id=memory_id,
                     by=by, status=status, run_hash=run_hash)

    @classmethod
    def threaded(cls, *, version: int, at: datetime, memory_id: str, to: str, weight: float,
                 run_hash: str) -> Memory.Threaded:
        """The Threaded event following ``version``: the line continues ``to``."""
        return _next(cls.Threaded, memory_uuid(memory_id), version, at, memory_id=memory_id,
                     to=to, weight=weight, run_hash=run_hash)

    @classmethod
    def captured(
        cls, *, at: datetime, memory_id: str, kind: str, text: str, day: str, status: str,
        labels: list[str], entity_ids: list[str], scope: str, source: str, salience: float,
        from_task: bool, session: str | None, run_hash: str | None, tier: str,
        fact: dict[str, str] | None,
    ) -> Memory.Captured:
        """The Captured event (version 1) stamped with the intake's admission instant."""
        return _created(
            cls, cls.Captured, memory_uuid(memory_id), at, memory_id=memory_id, kind=kind,
            text=text, day=day, status=status, labels=labels, entity_ids=entity_ids,
            scope=scope, source=source, salience=salience, from_task=from_task,
            session=session, run_hash=run_hash, tier=tier, fact=fact)

    @classmethod
    def recorded(
        cls, *, at: datetime, memory_id: str, kind: str, text: str, day: str, status: str,
        source: str, session: str | None, run_hash: str | None, tier: str,
    ) -> Memory.Recorded:
        """The Recorded event (version 1) stamped with the intake's admission instant."""
        return _created(
            cls, cls.Recorded, memory_uuid(memory_id), at, memory_id=memory_id, kind=kind,
            text=text, day=day, status=status, source=source, session=session,
            run_hash=run_hash, tier=tier)

    class Forgotten(Event):
        """Terminal: the memory's text was erased. ``key_ids`` are the record
        keys destroyed after this commits (its own events, the relations it states, entities
        only it named, and the content of the turns that support it: ``run_hashes``);
        ``entity_ids`` are the entities pruned with it. Content-free, never sealed."""

        TOPIC = "memory_es/Memory.Forgotten"
        memory_id: str
        reason: str
        key_ids: list[int]
        keys_root: str  # the root id whose key store held them: a replayed root (another
        # id, its own key ids) never destroys its own keys for a forget it only inherited
        entity_ids: list[str]
        run_hashes: list[str]

    @classmethod
    def forgotten(cls, *, version: int, at: datetime, memory_id: str, reason: str,
                  key_ids: list[int], keys_root: str, entity_ids: list[str],
                  run_hashes: list[str]) -> Memory.Forgotten:
        """The Forgotten event following ``version``."""
        return _next(cls.Forgotten, memory_uuid(memory_id), version, at, memory_id=memory_id,
                     reason=reason, key_ids=key_ids, keys_root=keys_root,
                     entity_ids=entity_ids, run_hashes=run_hashes)


class Entity(Aggregate):
    """A graph node (L1): a person, project, organisation or concept.

    ``entity_id`` is sha256 of the NFKC, case-folded, whitespace-collapsed name and the type,
    so the same name named in two turns is one node.
    """

    TOPIC = "memory_es/Entity"

    class Event(Aggregate.Event):
        TOPIC = "memory_es/Entity.Event"

    class Created(Aggregate.Created, Event):
        TOPIC = "memory_es/Entity.Created"

    class Named(Created):
        TOPIC = "memory_es/Entity.Named"
        entity_id: str
        name: str
        type: str

    class Related(Event):
        """A directed, lowercase relation to entity ``to``, stated by ``memory`` (L1)."""

        TOPIC = "memory_es/Entity.Related"
        entity_id: str
        to: str
        relation: str
        memory: str

    @classmethod
    def named(cls, *, at: datetime, entity_id: str, name: str, type: str) -> Entity.Named:
        """The Named event (version 1) of a new entity id."""
        return _created(cls, cls.Named, entity_uuid(entity_id), at, entity_id=entity_id,
                        name=name, type=type)

    @classmethod
    def related(cls, *, version: int, at: datetime, entity_id: str, to: str, relation: str,
                memory: str) -> Entity.Related:
        """The Related event following ``version``: ``memory`` states the relation."""
        return _next(cls.Related, entity_uuid(entity_id), version, at, entity_id=entity_id,
                     to=to, relation=relation, memory=memory)

    class NamedAgain(Event):
        """An entity a forget pruned is named by a later line: its first ``Named``
        is still in the journal (sealed, its key destroyed), so the new naming follows it."""

        TOPIC = "memory_es/Entity.NamedAgain"
        entity_id: str
        name: str
        type: str

    @classmethod
    def named_again(cls, *, version: int, at: datetime, entity_id: str, name: str,
                    type: str) -> Entity.NamedAgain:
        """The NamedAgain event following ``version``."""
        return _next(cls.NamedAgain, entity_uuid(entity_id), version, at, entity_id=entity_id,
                     name=name, type=type)


class Root(Aggregate):
    """The memory root itself (one per journal, id ``ROOT_UUID``): the configuration it was
    opened with, recorded on first open and on every change (B26), so later
    opens without a config use it and a change is never silent. ``embeddings`` and ``llm``
    hold only what names a model (provider, model, dim): never an endpoint or a key."""

    TOPIC = "memory_es/Root"

    class Event(Aggregate.Event):
        TOPIC = "memory_es/Root.Event"

    class Created(Aggregate.Created, Event):
        TOPIC = "memory_es/Root.Created"

    class Configured(Created):
        TOPIC = "memory_es/Root.Configured"
        tier: str
        write_mode: str
        embeddings: dict[str, Any] | None
        llm: dict[str, Any] | None

    class Reconfigured(Event):
        TOPIC = "memory_es/Root.Reconfigured"
        tier: str
        write_mode: str
        embeddings: dict[str, Any] | None
        llm: dict[str, Any] | None

    @classmethod
    def configured(cls, *, at: datetime, tier: str, write_mode: str,
                   embeddings: dict[str, Any] | None, llm: dict[str, Any] | None
                   ) -> Root.Configured:
        """The first recorded configuration (version 1)."""
        return _created(cls, cls.Configured, ROOT_UUID, at, tier=tier, write_mode=write_mode,
                        embeddings=embeddings, llm=llm)

    @classmethod
    def reconfigured(cls, *, version: int, at: datetime, tier: str, write_mode: str,
                     embeddings: dict[str, Any] | None, llm: dict[str, Any] | None
                     ) -> Root.Reconfigured:
        """A later configuration, following ``version``."""
        return _next(cls.Reconfigured, ROOT_UUID, version, at, tier=tier,
                     write_mode=write_mode, embeddings=embeddings, llm=llm)


ADMITTED_TOPIC = Intake.Admitted.TOPIC
RESOLVED_TOPIC = Intake.Resolved.TOPIC
RECORDED_TOPIC = Memory.Recorded.TOPIC


# Content fields a writer seals under per-record keys (crypto-shredding), with the
# content-free value a reader gets once the key is destroyed. Everything else (ids, hashes,
# days, statuses, labels, salience, models) is not content and stays readable.
SEALED_FIELDS: dict[str, dict[str, Any]] = {
    # the record's digest and size confirm a guessed turn: sealed with it, gone with its key
    Intake.Admitted.TOPIC: {"summary": "", "attachments": [], "content_sha256": "",
                            "content_bytes": 0},
    Intake.ExtractionRetained.TOPIC: {"plan": {}},
    Intake.ReviewRetained.TOPIC: {"decisions": []},
    Intake.ReconcileRetained.TOPIC: {"decisions": []},
    Memory.Recorded.TOPIC: {"text": ""},
    Memory.Captured.TOPIC: {"text": "", "fact": None},
    Memory.TextUpdated.TOPIC: {"text": "", "fact": None},
    Memory.Remembered.TOPIC: {"text": ""},
    Entity.Named.TOPIC: {"name": ""},
    Entity.NamedAgain.TOPIC: {"name": ""},
    Entity.Related.TOPIC: {"relation": ""},
}
FORGOTTEN_TOPICS = (Memory.Forgotten.TOPIC, Intake.Forgotten.TOPIC)
