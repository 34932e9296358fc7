"""The ``Memory`` aggregate's events and factories: one remembered line's life (DESIGN 4, E*,
J6-J10, K14, M17-M22).

The explicit TOPIC strings are what stored journals and the golden fixtures hold: they never
change, wherever the class is defined.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from eventsourcing.domain import Aggregate

from memory_es.events.building import after, created
from memory_es.ids import memory_uuid


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
        line's ``Captured`` in the same commit. None: a reviewed decision removed the date
        (``curate decide ... undate``, C14)."""

        TOPIC = "memory_es/Memory.DueStated"
        memory_id: str
        due_at: str | None

    @classmethod
    def due_stated(cls, *, version: int, at: datetime, memory_id: str,
                   due_at: str | None) -> Memory.DueStated:
        """The DueStated event following ``version``."""
        return after(cls.DueStated, memory_uuid(memory_id), version, at, memory_id=memory_id,
                     due_at=due_at)

    @classmethod
    def marked(cls, *, version: int, at: datetime, memory_id: str,
               insight: bool) -> Memory.Marked:
        """The Marked event following ``version``."""
        return after(cls.Marked, memory_uuid(memory_id), version, at, memory_id=memory_id,
                     insight=insight)

    @classmethod
    def remembered(
        cls, *, at: datetime, memory_id: str, text: str, day: str, session: str | None,
        tier: str, about: str | None, replaceable: bool, valid_from: str | None,
        valid_to: str | None, due_at: str | None,
    ) -> Memory.Remembered:
        """The Remembered event (version 1) stamped with the write's instant."""
        return created(
            cls, cls.Remembered, memory_uuid(memory_id), at, memory_id=memory_id, text=text,
            day=day, session=session, tier=tier, about=about, replaceable=replaceable,
            valid_from=valid_from, valid_to=valid_to, due_at=due_at)

    @classmethod
    def status_changed(cls, *, version: int, at: datetime, memory_id: str, status: str,
                       reason: str | None) -> Memory.StatusChanged:
        """The StatusChanged event following ``version``."""
        return after(cls.StatusChanged, memory_uuid(memory_id), version, at,
                     memory_id=memory_id, status=status, reason=reason)

    @classmethod
    def text_updated(cls, *, version: int, at: datetime, memory_id: str, text: str,
                     session: str | None, run_hash: str,
                     fact: dict[str, str] | None) -> Memory.TextUpdated:
        """The TextUpdated event following ``version`` (an UPDATE rewrites the line)."""
        return after(cls.TextUpdated, memory_uuid(memory_id), version, at, memory_id=memory_id,
                     text=text, session=session, run_hash=run_hash, fact=fact)

    @classmethod
    def superseded(cls, *, version: int, at: datetime, memory_id: str, by: str, status: str,
                   run_hash: str | None) -> Memory.Superseded:
        """The Superseded event following ``version``: ``by`` replaces the line."""
        return after(cls.Superseded, memory_uuid(memory_id), version, at, memory_id=memory_id,
                     by=by, status=status, run_hash=run_hash)

    @classmethod
    def threaded(cls, *, version: int, at: datetime, memory_id: str, to: str, weight: float,
                 run_hash: str) -> Memory.Threaded:
        """The Threaded event following ``version``: the line continues ``to``."""
        return after(cls.Threaded, memory_uuid(memory_id), version, at, memory_id=memory_id,
                     to=to, weight=weight, run_hash=run_hash)

    @classmethod
    def captured(
        cls, *, at: datetime, memory_id: str, kind: str, text: str, day: str, status: str,
        labels: list[str], entity_ids: list[str], scope: str, source: str, salience: float,
        from_task: bool, session: str | None, run_hash: str | None, tier: str,
        fact: dict[str, str] | None,
    ) -> Memory.Captured:
        """The Captured event (version 1) stamped with the intake's admission instant."""
        return created(
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
        return created(
            cls, cls.Recorded, memory_uuid(memory_id), at, memory_id=memory_id, kind=kind,
            text=text, day=day, status=status, source=source, session=session,
            run_hash=run_hash, tier=tier)

    class MigrationForgotten(Event):
        """Terminal (C12, F1): ``migrate`` replaced this Lite or Journal line with the BuJo
        notes ``into``, in the same commit. The line leaves recall as ``invalidated``; the
        event's instant is its terminal timestamp, replay-owned state the sidecar holds
        (authority ``migration``). Its text stays in the journal: nothing said is lost."""

        TOPIC = "memory_es/Memory.MigrationForgotten"
        memory_id: str
        into: list[str]

    @classmethod
    def migration_forgotten(cls, *, version: int, at: datetime, memory_id: str,
                            into: list[str]) -> Memory.MigrationForgotten:
        """The MigrationForgotten event following ``version``."""
        return after(cls.MigrationForgotten, memory_uuid(memory_id), version, at,
                     memory_id=memory_id, into=into)

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
        return after(cls.Forgotten, memory_uuid(memory_id), version, at, memory_id=memory_id,
                     reason=reason, key_ids=key_ids, keys_root=keys_root,
                     entity_ids=entity_ids, run_hashes=run_hashes)
