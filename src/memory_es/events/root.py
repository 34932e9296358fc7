"""The ``Root`` aggregate's events and factories: the configuration a root runs with (B26).

The explicit TOPIC strings are what stored journals and the golden fixtures hold: they never
change, wherever the class is defined.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from eventsourcing.domain import Aggregate

from memory_es.events.building import after, created
from memory_es.ids import MIGRATION_UUID, REVIEW_UUID, ROOT_UUID, import_uuid


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

    class Imported(Created):
        """The receipt of one ``import apply`` (C6), its own aggregate (``import_uuid``):
        content-free: the format, the source's digest, each admitted item as ``[intake id,
        the source's own id, the source's time]``, how many were already there, and each
        refused item's source id with its reason."""

        TOPIC = "memory_es/Root.Imported"
        format: str
        source_sha256: str
        admitted: list[list[str]]
        already: int
        refused: list[dict[str, str]]

    class Reviewed(Event):
        """One reviewed decision of ``curate audit`` (C14, M26), on the review log's own
        aggregate (``REVIEW_UUID``), in the commit of the lifecycle events it causes:
        content-free: the line, the decision (keep, drop, undate, retype), a retype's new
        kind and the line that replaced it. ``keep`` changes no line: nothing reads this
        record but the audit itself, so it is no intention marker (M26)."""

        TOPIC = "memory_es/Root.Reviewed"
        memory_id: str
        decision: str
        kind: str | None
        replaced_by: str | None

    class MigrationStarted(Event):
        """``migrate`` (C12, F4, F13) began turning a Lite or Journal root's ``lines`` into
        BuJo notes with ``model`` (``{"provider", "model"}``): the durable marker, on the
        migration's own aggregate (``MIGRATION_UUID``), until ``MigrationFinished`` retires
        it. While it stands, nothing else writes to the root (F13)."""

        TOPIC = "memory_es/Root.MigrationStarted"
        lines: int
        model: dict[str, str]

    class MigrationFinished(Event):
        """The marker retired (F4): every line ``migrated`` and the projection proved to
        match the journal first."""

        TOPIC = "memory_es/Root.MigrationFinished"
        migrated: int
        notes: int

    @classmethod
    def migration_started(cls, *, version: int, at: datetime, lines: int,
                          model: dict[str, str]) -> Root.MigrationStarted:
        """The migration marker, following ``version`` of the migration's aggregate."""
        return after(cls.MigrationStarted, MIGRATION_UUID, version, at, lines=lines,
                     model=model)

    @classmethod
    def migration_finished(cls, *, version: int, at: datetime, migrated: int,
                           notes: int) -> Root.MigrationFinished:
        """The marker's retirement, following ``version``."""
        return after(cls.MigrationFinished, MIGRATION_UUID, version, at, migrated=migrated,
                     notes=notes)

    @classmethod
    def reviewed(cls, *, version: int, at: datetime, memory_id: str, decision: str,
                 kind: str | None, replaced_by: str | None) -> Root.Reviewed:
        """A reviewed decision following ``version`` of the review log (0: its first)."""
        return after(cls.Reviewed, REVIEW_UUID, version, at, memory_id=memory_id,
                     decision=decision, kind=kind, replaced_by=replaced_by)

    @classmethod
    def configured(cls, *, at: datetime, tier: str, write_mode: str,
                   embeddings: dict[str, Any] | None, llm: dict[str, Any] | None
                   ) -> Root.Configured:
        """The first recorded configuration (version 1)."""
        return created(cls, cls.Configured, ROOT_UUID, at, tier=tier, write_mode=write_mode,
                        embeddings=embeddings, llm=llm)

    @classmethod
    def reconfigured(cls, *, version: int, at: datetime, tier: str, write_mode: str,
                     embeddings: dict[str, Any] | None, llm: dict[str, Any] | None
                     ) -> Root.Reconfigured:
        """A later configuration, following ``version``."""
        return after(cls.Reconfigured, ROOT_UUID, version, at, tier=tier,
                     write_mode=write_mode, embeddings=embeddings, llm=llm)

    @classmethod
    def imported(cls, *, at: datetime, import_id: str, format: str, source_sha256: str,
                 admitted: list[list[str]], already: int, refused: list[dict[str, str]]
                 ) -> Root.Imported:
        """An import's receipt, written after its items (version 1 of its own id)."""
        return created(cls, cls.Imported, import_uuid(import_id), at, format=format,
                       source_sha256=source_sha256, admitted=admitted, already=already,
                       refused=refused)
