"""The ``Entity`` aggregate's events and factories: the graph's nodes and relations (L1).

The explicit TOPIC strings are what stored journals and the golden fixtures hold: they never
change, wherever the class is defined.
"""

from __future__ import annotations

from datetime import datetime

from eventsourcing.domain import Aggregate

from memory_es.events.building import after, created
from memory_es.ids import entity_uuid


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
        return created(cls, cls.Named, entity_uuid(entity_id), at, entity_id=entity_id,
                        name=name, type=type)

    @classmethod
    def related(cls, *, version: int, at: datetime, entity_id: str, to: str, relation: str,
                memory: str) -> Entity.Related:
        """The Related event following ``version``: ``memory`` states the relation."""
        return after(cls.Related, entity_uuid(entity_id), version, at, entity_id=entity_id,
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
        return after(cls.NamedAgain, entity_uuid(entity_id), version, at, entity_id=entity_id,
                     name=name, type=type)
