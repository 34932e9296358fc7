"""Strict model contracts for the three capture calls (SPEC E6-E11, E20-E24, E39-E40; DESIGN 6).

Each stage accepts one exact, bounded JSON object and nothing else; its parser is
provider-neutral and authoritative (E10) and raises ``model_invalid_output`` (E8) for any
violation. :mod:`.common` holds the checks every contract shares; :mod:`.extraction`,
:mod:`.review` and :mod:`.reconcile` one contract each; :mod:`.migration` is ``migrate``'s (C12).
"""

from __future__ import annotations

from memory_es.capture.contracts.common import (
    MAX_COMPLETION_UTF16,
    check_safe_text,
    utf16_length,
)
from memory_es.capture.contracts.extraction import (
    INTENT_STATES,
    LABELS,
    MAX_ENTITIES,
    MAX_MEMORIES,
    MAX_RELATIONS,
    MEMORY_KINDS,
    SOURCES,
    ExtractedEntity,
    ExtractedFact,
    ExtractedMemory,
    ExtractionPlan,
    IntentExtractionPlan,
    IntentMemory,
    Relation,
    parse_extraction,
    retained_plan,
)
from memory_es.capture.contracts.migration import (
    MAX_NOTES,
    MigratedNote,
    MigrationPlan,
    migration_messages,
    parse_migration,
)
from memory_es.capture.contracts.reconcile import (
    ReconcileAdd,
    ReconcileDecision,
    ReconcileNoop,
    ReconcilePlan,
    ReconcileSupersede,
    ReconcileUpdate,
    parse_reconcile,
)
from memory_es.capture.contracts.review import DECISIONS, ReviewDecision, ReviewPlan, parse_review

__all__ = [
    "DECISIONS",
    "INTENT_STATES",
    "LABELS",
    "MAX_COMPLETION_UTF16",
    "MAX_ENTITIES",
    "MAX_MEMORIES",
    "MAX_NOTES",
    "MAX_RELATIONS",
    "MEMORY_KINDS",
    "SOURCES",
    "ExtractedEntity",
    "ExtractedFact",
    "ExtractedMemory",
    "ExtractionPlan",
    "IntentExtractionPlan",
    "IntentMemory",
    "MigratedNote",
    "MigrationPlan",
    "ReconcileAdd",
    "ReconcileDecision",
    "ReconcileNoop",
    "ReconcilePlan",
    "ReconcileSupersede",
    "ReconcileUpdate",
    "Relation",
    "ReviewDecision",
    "ReviewPlan",
    "check_safe_text",
    "migration_messages",
    "parse_extraction",
    "parse_migration",
    "parse_reconcile",
    "parse_review",
    "retained_plan",
    "utf16_length",
]
