"""The ``Root`` aggregate's events and factories: the configuration a root runs with (B26).

The explicit TOPIC strings are what stored journals and the golden fixtures hold: they never
change, wherever the class is defined.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from eventsourcing.domain import Aggregate

from memory_es.events.building import after, created
from memory_es.ids import ROOT_UUID


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
        return created(cls, cls.Configured, ROOT_UUID, at, tier=tier, write_mode=write_mode,
                        embeddings=embeddings, llm=llm)

    @classmethod
    def reconfigured(cls, *, version: int, at: datetime, tier: str, write_mode: str,
                     embeddings: dict[str, Any] | None, llm: dict[str, Any] | None
                     ) -> Root.Reconfigured:
        """A later configuration, following ``version``."""
        return after(cls.Reconfigured, ROOT_UUID, version, at, tier=tier,
                     write_mode=write_mode, embeddings=embeddings, llm=llm)
