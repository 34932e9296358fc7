"""Which content fields a writer seals under per-record keys (crypto-shredding), with the
content-free value a reader gets once the key is destroyed. Everything else (ids, hashes, days,
statuses, labels, salience, models) is not content and stays readable."""

from __future__ import annotations

from typing import Any

from memory_es.events.entity import Entity
from memory_es.events.intake import Intake
from memory_es.events.memory import Memory

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
