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

One module per aggregate (``intake``, ``memory``, ``entity``, ``root``; ``building`` holds what
their factories share); this package is the face every importer uses: ``from memory_es.events
import Intake``. The topics are explicit, so where a class is defined never changes one.

The face resolves each aggregate on first use (PEP 562): a reader that decodes only the root's
recorded configuration imports ``root`` alone, not the sixty-odd event classes of the others
(building them is most of what importing the events costs). Every topic still resolves when a
stored event is decoded: importing this package hands :mod:`memory_es.topics` (through which
the journal's mapper resolves) :func:`load_all`, called for a topic no imported class has
registered. The topics a reader
only filters rows by are spelt out here, so a filter imports no class (the classes carry the
same strings; tests/test_events_face.py holds them equal).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Final

from memory_es.lazy import lazy_face
from memory_es.topics import resolve_missing_with

if TYPE_CHECKING:
    from memory_es.events.entity import Entity
    from memory_es.events.intake import Intake
    from memory_es.events.memory import Memory
    from memory_es.events.root import Root
    from memory_es.events.sealed import SEALED_FIELDS

__all__ = [
    "ADMITTED_TOPIC",
    "FORGOTTEN_TOPICS",
    "RECORDED_TOPIC",
    "RESOLVED_TOPIC",
    "SEALED_FIELDS",
    "Entity",
    "Intake",
    "Memory",
    "Root",
    "load_all",
]

ADMITTED_TOPIC: Final = "memory_es/Intake.Admitted"
RESOLVED_TOPIC: Final = "memory_es/Intake.Resolved"
RECORDED_TOPIC: Final = "memory_es/Memory.Recorded"
FORGOTTEN_TOPICS: Final = ("memory_es/Memory.Forgotten", "memory_es/Intake.Forgotten")

# public name -> the module that defines it
_FACE: Final = {
    "Entity": "memory_es.events.entity",
    "Intake": "memory_es.events.intake",
    "Memory": "memory_es.events.memory",
    "Root": "memory_es.events.root",
    "SEALED_FIELDS": "memory_es.events.sealed",
}


__getattr__, __dir__ = lazy_face(__name__, _FACE)


def load_all() -> None:
    """Import every aggregate's module: each class registers its topic as it is built."""
    for module in sorted(set(_FACE.values())):
        importlib.import_module(module)


resolve_missing_with(load_all)
