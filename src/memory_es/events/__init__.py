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
"""

from __future__ import annotations

from typing import Any

from memory_es.events.entity import Entity
from memory_es.events.intake import Intake
from memory_es.events.memory import Memory
from memory_es.events.root import Root

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
]

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
